package keys

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// csrDER signs a request for tmpl with key, as x509 writes it.
func csrDER(t testing.TB, tmpl *x509.CertificateRequest, key crypto.Signer) []byte {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	require.NoError(t, err)
	return der
}

// sanExtension is a subject alternative name extension (RFC 5280
// §4.2.1.6) holding one GeneralName of the given tag with raw contents,
// whatever they are.
func sanExtension(t testing.TB, tag int, contents string) pkix.Extension {
	t.Helper()
	v, err := asn1.Marshal([]asn1.RawValue{{Class: asn1.ClassContextSpecific, Tag: tag, Bytes: []byte(contents)}})
	require.NoError(t, err)
	return pkix.Extension{Id: asn1.ObjectIdentifier{2, 5, 29, 17}, Value: v}
}

func csrPEM(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// ParseCSR reads a request with crypto/x509 and checks its signature (RFC
// 2986 §4.2: the signature covers the request info and proves possession
// of the key it names). Its errors name what is wrong and never quote the
// request's bytes.
func TestParseCSR(t *testing.T) {
	key := mustKey(t, KeySpec{Algorithm: AlgorithmECDSA})
	good := csrDER(t, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "a.example"}, DNSNames: []string{"a.example"}}, key)
	badSignature := append([]byte{}, good...)
	badSignature[len(badSignature)-1] ^= 0x01

	tests := map[string]struct {
		pem     []byte
		err     string   // empty: parses
		secrets []string // text the error must not quote
	}{
		"a request x509 writes":                             {pem: csrPEM("CERTIFICATE REQUEST", good)},
		"the PEM type some tools still write (RFC 7468 §7)": {pem: csrPEM("NEW CERTIFICATE REQUEST", good)},
		"no PEM block":                                      {pem: []byte("garbage"), err: "keys: request: no PEM block found"},
		"a PEM block of another type": {
			pem: csrPEM("CERTIFICATE", good),
			err: `keys: request: PEM block type "CERTIFICATE" is not a certificate request`,
		},
		"DER that is no request": {pem: csrPEM("CERTIFICATE REQUEST", []byte{0x30, 0x03, 0x02, 0x01}), err: "keys: request: asn1: syntax error: data truncated"},
		"a signature that does not verify": {
			pem: csrPEM("CERTIFICATE REQUEST", badSignature),
			err: "keys: request signature: x509: ECDSA verification failure",
		},
		"a URI that does not parse (x509 quotes it)": {
			pem: csrPEM("CERTIFICATE REQUEST", csrDER(t, &x509.CertificateRequest{
				ExtraExtensions: []pkix.Extension{sanExtension(t, 6, "http://secret host/")},
			}, key)),
			err:     "keys: request: x509: a URI subject alternative name is not a valid URI",
			secrets: []string{"secret"},
		},
		"a DNS name above ASCII": {
			pem: csrPEM("CERTIFICATE REQUEST", csrDER(t, &x509.CertificateRequest{
				ExtraExtensions: []pkix.Extension{sanExtension(t, 2, "hemmelig-ä")},
			}, key)),
			err:     "keys: request: x509: SAN dNSName is malformed",
			secrets: []string{"hemmelig"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			csr, err := ParseCSR(tc.pem)
			if tc.err == "" {
				require.NoError(t, err)
				want, err := x509.ParseCertificateRequest(good)
				require.NoError(t, err)
				assert.Equal(t, want.Raw, csr.Raw)
				assert.Equal(t, []string{"a.example"}, csr.DNSNames)
				assert.True(t, PublicKeysEqual(csr.PublicKey, key), "the request's key")
				return
			}
			require.EqualError(t, err, tc.err)
			assert.Nil(t, csr)
			for _, s := range tc.secrets {
				assert.NotContains(t, err.Error(), s, "the error quotes the request")
			}
		})
	}
}

// requestUsages reads the usage extensions of a request as RFC 5280 writes
// them (§4.2.1.3 key usage, §4.2.1.12 extended key usage, §4.2.1.9 basic
// constraints); an extension it cannot read counts as absent.
func TestRequestUsages(t *testing.T) {
	var (
		ku  = asn1.ObjectIdentifier{2, 5, 29, 15}
		eku = asn1.ObjectIdentifier{2, 5, 29, 37}
		bc  = asn1.ObjectIdentifier{2, 5, 29, 19}
		// digitalSignature (bit 0) and keyEncipherment (bit 2), 5 unused bits.
		kuDefaults = []byte{0x03, 0x02, 0x05, 0xa0}
		// serverAuth, clientAuth.
		ekuServerClient = []byte{0x30, 0x14, 0x06, 0x08, 0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x01, 0x06, 0x08, 0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x02}
	)
	type want struct {
		KU   x509.KeyUsage
		EKU  []string
		IsCA bool
	}
	tests := map[string]struct {
		exts []pkix.Extension
		want want
	}{
		"no extensions": {},
		"the default usages": {exts: []pkix.Extension{{Id: ku, Value: kuDefaults}},
			want: want{KU: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment}},
		"server and client auth": {exts: []pkix.Extension{{Id: eku, Value: ekuServerClient}},
			want: want{EKU: []string{"1.3.6.1.5.5.7.3.1", "1.3.6.1.5.5.7.3.2"}}},
		"an extended usage certlife does not name is kept as its OID": {exts: []pkix.Extension{{Id: eku, Value: []byte{0x30, 0x05, 0x06, 0x03, 0x2a, 0x03, 0x04}}},
			want: want{EKU: []string{"1.2.3.4"}}},
		"a CA":                              {exts: []pkix.Extension{{Id: bc, Value: []byte{0x30, 0x03, 0x01, 0x01, 0xff}}}, want: want{IsCA: true}},
		"basic constraints without cA":      {exts: []pkix.Extension{{Id: bc, Value: []byte{0x30, 0x00}}}},
		"an unreadable key usage is absent": {exts: []pkix.Extension{{Id: ku, Value: []byte{0x03}}, {Id: eku, Value: ekuServerClient}}, want: want{EKU: []string{"1.3.6.1.5.5.7.3.1", "1.3.6.1.5.5.7.3.2"}}},
		"an unreadable extended usage is absent": {exts: []pkix.Extension{{Id: ku, Value: kuDefaults}, {Id: eku, Value: []byte{0x30, 0x02, 0x06}}},
			want: want{KU: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment}},
		"unreadable basic constraints are absent": {exts: []pkix.Extension{{Id: bc, Value: []byte{0x01, 0x01, 0xff}}}},
		"other extensions are not read":           {exts: []pkix.Extension{{Id: asn1.ObjectIdentifier{2, 5, 29, 14}, Value: kuDefaults}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var got want
			got.KU, got.EKU, got.IsCA = requestUsages(&x509.CertificateRequest{Extensions: tc.exts})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("requestUsages (-want +got):\n%s", diff)
			}
		})
	}
}

// DefaultUsages cannot be changed by a caller: what it returns is a copy.
func TestDefaultUsagesIsACopy(t *testing.T) {
	d := DefaultUsages()
	d[0] = UsageCertSign
	require.Equal(t, []Usage{UsageDigitalSignature, UsageKeyEncipherment}, DefaultUsages())
	f := DefaultUsagesFor(mustKey(t, KeySpec{Algorithm: AlgorithmECDSA}).Public(), true)
	f[0] = UsageKeyEncipherment
	require.Equal(t, []Usage{UsageDigitalSignature, UsageCertSign, UsageCRLSign}, DefaultUsagesFor(nil, true))
}

// FuzzParseCSR: whatever the bytes, ParseCSR does not panic; a request it
// accepts carries a signature by the key it names (RFC 2986 §4.2) and can
// be compared with a template; a request it rejects gets an error that
// says it is about a request and does not quote a URI.
func FuzzParseCSR(f *testing.F) {
	tmpl := RequestTemplate{CommonName: "a.example", DNSNames: []string{"a.example", "www.a.example"},
		IPAddresses: []string{"10.0.0.1"}, URIs: []string{"spiffe://c/ns/a"}, EmailAddresses: []string{"ops@a.example"},
		Subject: &Subject{Organizations: []string{"certlife"}}, Usages: []Usage{UsageServerAuth, UsageCertSign}, IsCA: true}
	for _, spec := range []KeySpec{{Algorithm: AlgorithmECDSA}, {Algorithm: AlgorithmEd25519}, {}} {
		p, err := BuildCSR(rand.Reader, tmpl, mustKey(f, spec))
		require.NoError(f, err)
		f.Add(p)
		block, _ := pem.Decode(p)
		// Mutations of the DER: cut short, one byte changed.
		for i := 0; i < len(block.Bytes); i += 41 {
			f.Add(csrPEM("CERTIFICATE REQUEST", block.Bytes[:i]))
			m := append([]byte{}, block.Bytes...)
			m[i] ^= 0x01
			f.Add(csrPEM("CERTIFICATE REQUEST", m))
		}
	}
	f.Add([]byte("junk"))
	f.Fuzz(func(t *testing.T, in []byte) {
		csr, err := ParseCSR(in)
		if err != nil {
			if csr != nil {
				t.Fatal("a request and an error")
			}
			if !strings.HasPrefix(err.Error(), "keys: request") || strings.Contains(err.Error(), "cannot parse URI") {
				t.Fatalf("error %q", err)
			}
			return
		}
		if err := csr.CheckSignature(); err != nil {
			t.Fatalf("an accepted request's signature does not verify: %v", err)
		}
		for _, d := range CompareCSR(csr, tmpl) {
			if d.Field == "" {
				t.Fatalf("a difference without a field: %v", d)
			}
		}
	})
}
