package simca

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stdlibLeaf is what x509.CreateCertificate writes for the leaf Sign
// would issue with serial.
func stdlibLeaf(t testing.TB, ca *CA, csr *x509.CertificateRequest, pub any, opts Options, serial int64) []byte {
	t.Helper()
	saved := ca.serial
	ca.serial = serial
	defer func() { ca.serial = saved }()
	der, err := x509.CreateCertificate(rand.Reader, ca.template(csr, pub, opts), ca.Cert, pub, ca.key)
	require.NoError(t, err, "CreateCertificate")
	return der
}

func fastLeaf(t testing.TB, ca *CA, csr *x509.CertificateRequest, pub any, opts Options, serial int64) ([]byte, error) {
	t.Helper()
	spki, err := marshalSPKI(pub)
	require.NoError(t, err, "marshalSPKI")
	return ca.encodeLeaf(&leaf{serial: serial, rawSubject: csr.RawSubject, spki: spki,
		notBefore: opts.NotBefore, notAfter: opts.NotAfter,
		dnsNames: csr.DNSNames, emails: csr.EmailAddresses, ips: csr.IPAddresses, uris: csr.URIs})
}

func csrFor(t testing.TB, tmpl *x509.CertificateRequest, key any) *x509.CertificateRequest {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	require.NoError(t, err, "CreateCertificateRequest")
	csr, err := x509.ParseCertificateRequest(der)
	require.NoError(t, err)
	return csr
}

// Ed25519 signatures are deterministic, so the encoder's output must equal
// CreateCertificate's byte for byte.
func TestLeafEncoderMatchesCreateCertificate(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ca, err := NewEd25519(rand.Reader, "leaf root", start)
	require.NoError(t, err)
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	u, _ := url.Parse("spiffe://example.org/ns/a/sa/b")
	cases := []struct {
		name string
		tmpl *x509.CertificateRequest
		key  any
		nb   time.Time
		d    time.Duration
	}{
		{"one DNS name, empty subject", &x509.CertificateRequest{DNSNames: []string{"a.example"}}, edKey, start, 90 * 24 * time.Hour},
		{"subject and every name kind", &x509.CertificateRequest{
			Subject:  pkix.Name{CommonName: "a.example", Organization: []string{"Org"}, Country: []string{"NZ"}},
			DNSNames: []string{"a.example", "*.b.example"}, EmailAddresses: []string{"x@example.org"},
			IPAddresses: []net.IP{net.ParseIP("192.0.2.1"), net.ParseIP("2001:db8::1")}, URIs: []*url.URL{u},
		}, ecKey, start.Add(123456789 * time.Millisecond), 6 * 24 * time.Hour},
		{"no names at all", &x509.CertificateRequest{Subject: pkix.Name{CommonName: "only cn"}}, edKey, start, time.Hour},
		{"GeneralizedTime after 2049", &x509.CertificateRequest{DNSNames: []string{"late.example"}}, edKey,
			time.Date(2049, 12, 31, 23, 0, 0, 0, time.UTC), 48 * time.Hour},
		{"not UTC", &x509.CertificateRequest{DNSNames: []string{"zone.example"}}, edKey,
			start.In(time.FixedZone("x", 13*3600)), 24 * time.Hour},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			csr := csrFor(t, c.tmpl, c.key)
			opts := Options{NotBefore: c.nb, NotAfter: c.nb.Add(c.d)}
			for _, serial := range []int64{2, 127, 128, 255, 1 << 40} {
				got, err := fastLeaf(t, ca, csr, csr.PublicKey, opts, serial)
				require.NoError(t, err, "encodeLeaf")
				want := stdlibLeaf(t, ca, csr, csr.PublicKey, opts, serial)
				require.Equal(t, want, got, "serial %d: encoder and CreateCertificate differ", serial)
			}
		})
	}
}

func TestLeafEncoderFallsBack(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	edCA, _ := NewEd25519(rand.Reader, "leaf root", start)
	ecCA, _ := New(rand.Reader, "ec root", start)
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	opts := Options{NotBefore: start, NotAfter: start.Add(time.Hour)}
	plain := csrFor(t, &x509.CertificateRequest{DNSNames: []string{"a.example"}}, key)
	sameSubject := csrFor(t, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "leaf root"}}, key)
	cases := []struct {
		name string
		ca   *CA
		csr  *x509.CertificateRequest
		opts Options
	}{
		{"ECDSA root", ecCA, plain, opts},
		{"subject equals the root's", edCA, sameSubject, opts},
		{"before 1950", edCA, plain, Options{NotBefore: time.Date(1949, 1, 1, 0, 0, 0, 0, time.UTC), NotAfter: start}},
	}
	for _, c := range cases {
		_, err := fastLeaf(t, c.ca, c.csr, c.csr.PublicKey, c.opts, 5)
		assert.Same(t, errLeafNotFastPathed, err, "%s: encodeLeaf = %v, want errLeafNotFastPathed", c.name, err)
		// Sign still issues it, through CreateCertificate.
		_, err = c.ca.Sign(rand.Reader, c.csr, c.opts)
		assert.NoError(t, err, "%s: Sign", c.name)
	}
}

// Sign's two paths give the same certificate: the default (encoder) and
// Stdlib.
func TestSignStdlibAndEncoderAgree(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ca, _ := NewEd25519(rand.Reader, "root", start)
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	csr := csrFor(t, &x509.CertificateRequest{DNSNames: []string{"a.example"}}, key)
	opts := Options{NotBefore: start, NotAfter: start.Add(time.Hour)}
	fast, err := ca.Sign(rand.Reader, csr, opts)
	require.NoError(t, err)
	ca.serial-- // the same serial again
	ca.Stdlib = true
	slow, err := ca.Sign(rand.Reader, csr, opts)
	require.NoError(t, err)
	require.Equal(t, fast, slow, "Sign's paths differ")
	block, _ := pem.Decode(fast)
	leaf, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	require.NoError(t, leaf.CheckSignatureFrom(ca.Cert), "leaf signature")
}

// FuzzLeafEncoder holds the encoder to CreateCertificate for any names,
// subject, serial and validity the request can carry.
func FuzzLeafEncoder(f *testing.F) {
	f.Add("a.example", "", "", "", []byte{192, 0, 2, 1}, int64(2), int64(1767225600), int64(3600))
	f.Add("a.example,b.example", "cn", "x@y.z", "https://u.example/p", []byte{}, int64(1<<62), int64(2524608000), int64(86400))
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ca, err := NewEd25519(rand.Reader, "fuzz root", start)
	require.NoError(f, err)
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	f.Fuzz(func(t *testing.T, dns, cn, email, uri string, ip []byte, serial, notBefore, seconds int64) {
		tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn}}
		if dns != "" {
			tmpl.DNSNames = strings.Split(dns, ",")
		}
		if email != "" {
			tmpl.EmailAddresses = []string{email}
		}
		if uri != "" {
			u, err := url.Parse(uri)
			if err != nil {
				return
			}
			tmpl.URIs = []*url.URL{u}
		}
		if len(ip) == 4 || len(ip) == 16 {
			tmpl.IPAddresses = []net.IP{ip}
		}
		der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
		if err != nil {
			return // not a request anyone can send
		}
		csr, err := x509.ParseCertificateRequest(der)
		if err != nil {
			return
		}
		if serial <= 0 || seconds <= 0 || notBefore < -1<<40 || notBefore > 1<<40 || seconds > 1<<40 {
			return
		}
		opts := Options{NotBefore: time.Unix(notBefore, 0), NotAfter: time.Unix(notBefore+seconds, 0)}
		got, err := fastLeaf(t, ca, csr, csr.PublicKey, opts, serial)
		if err == errLeafNotFastPathed {
			return
		}
		saved := ca.serial
		ca.serial = serial
		want, werr := x509.CreateCertificate(rand.Reader, ca.template(csr, csr.PublicKey, opts), ca.Cert, csr.PublicKey, ca.key)
		ca.serial = saved
		if (err != nil) != (werr != nil) {
			t.Fatalf("encoder error %v, CreateCertificate error %v", err, werr)
		}
		if err == nil && !bytes.Equal(got, want) {
			t.Fatalf("encoder and CreateCertificate differ:\n got %x\nwant %x", got, want)
		}
	})
}
