package localca_test

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/localca"
	"github.com/certlife/certlife/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func request(t testing.TB, tmpl keys.RequestTemplate, mutate func(*certificate.CertificateRequest)) (*certificate.CertificateRequest, crypto.Signer) {
	t.Helper()
	key, err := keys.Generate(rand.Reader, keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
	require.NoError(t, err)
	csr, err := keys.BuildCSR(rand.Reader, tmpl, key)
	require.NoError(t, err)
	r := &certificate.CertificateRequest{ObjectMeta: certificate.ObjectMeta{Name: "web-1"},
		Spec: certificate.RequestSpec{Request: csr, Usages: tmpl.Usages, IsCA: tmpl.IsCA}}
	if mutate != nil {
		mutate(r)
	}
	return r, key
}

func leafOf(t *testing.T, r *certificate.CertificateRequest) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(r.Status.Certificate)
	require.NotNil(t, block, "no certificate in %+v", r.Status)
	c, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	return c
}

func readyOf(r *certificate.CertificateRequest) *certificate.Condition {
	return r.Condition(certificate.RequestConditionReady)
}

func TestIssueHonoursTheRequest(t *testing.T) {
	root, err := localca.NewRoot(rand.Reader, "test root", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, now.Add(-time.Hour), 365*24*time.Hour)
	require.NoError(t, err)
	web := keys.RequestTemplate{CommonName: "web.example", DNSNames: []string{"web.example"}, IPAddresses: []string{"10.0.0.1"}}
	tests := map[string]struct {
		tmpl     keys.RequestTemplate
		mutate   func(*certificate.CertificateRequest)
		notAfter time.Time
		ku       x509.KeyUsage
		eku      []x509.ExtKeyUsage
		isCA     bool
	}{
		// The request's key is ECDSA: no key encipherment (RFC 8813 §3).
		"the default duration and usages": {tmpl: web, notAfter: now.Add(certificate.DefaultDuration),
			ku: x509.KeyUsageDigitalSignature},
		"a duration of two days": {tmpl: web, mutate: func(r *certificate.CertificateRequest) {
			r.Spec.Duration = &certificate.Duration{Duration: 48 * time.Hour}
		},
			notAfter: now.Add(48 * time.Hour), ku: x509.KeyUsageDigitalSignature},
		"a duration past the CA's expiry is cut to it": {tmpl: web, mutate: func(r *certificate.CertificateRequest) {
			r.Spec.Duration = &certificate.Duration{Duration: 3 * 365 * 24 * time.Hour}
		}, notAfter: root.Certificate().NotAfter, ku: x509.KeyUsageDigitalSignature},
		"server and client auth": {tmpl: keys.RequestTemplate{DNSNames: []string{"mtls.example"}, Usages: []keys.Usage{keys.UsageDigitalSignature, keys.UsageServerAuth, keys.UsageClientAuth}},
			notAfter: now.Add(certificate.DefaultDuration), ku: x509.KeyUsageDigitalSignature, eku: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}},
		"an intermediate CA": {tmpl: keys.RequestTemplate{CommonName: "intermediate", IsCA: true, Usages: []keys.Usage{keys.UsageCertSign, keys.UsageCRLSign}},
			notAfter: now.Add(certificate.DefaultDuration), ku: x509.KeyUsageCertSign | x509.KeyUsageCRLSign, isCA: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r, key := request(t, tc.tmpl, tc.mutate)
			require.NoError(t, root.Issue(rand.Reader, r, now))
			require.Equal(t, certificate.StatusTrue, readyOf(r).Status, readyOf(r).Message)
			leaf := leafOf(t, r)
			assert.True(t, keys.PublicKeysEqual(leaf.PublicKey, key.Public()))
			assert.Equal(t, now, leaf.NotBefore)
			assert.Equal(t, tc.notAfter.Truncate(time.Second), leaf.NotAfter)
			assert.Equal(t, tc.ku, leaf.KeyUsage)
			assert.Equal(t, tc.eku, leaf.ExtKeyUsage)
			assert.Equal(t, tc.isCA, leaf.IsCA)
			assert.Equal(t, root.CertificatePEM(), r.Status.CA)
			assert.NoError(t, leaf.CheckSignatureFrom(root.Certificate()))
			csr, _ := keys.ParseCSR(r.Spec.Request)
			assert.Empty(t, keys.CompareCSR(csr, tc.tmpl), "the request still matches its template")
			assert.Empty(t, keys.CompareCertificateNames(leaf, tc.tmpl), "the certificate carries the request's names")
			pool := x509.NewCertPool()
			pool.AddCert(root.Certificate())
			if !tc.isCA && tc.eku != nil {
				_, err := leaf.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now.Add(time.Minute), KeyUsages: tc.eku})
				assert.NoError(t, err)
			}
		})
	}
}

// A CA below a root puts itself in the chain after the leaf.
func TestIssueFromAnIntermediateChainsToIt(t *testing.T) {
	root, err := localca.NewRoot(rand.Reader, "root", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, now.Add(-time.Hour), 365*24*time.Hour)
	require.NoError(t, err)
	ir, ikey := request(t, keys.RequestTemplate{CommonName: "intermediate", IsCA: true}, nil)
	require.NoError(t, root.Issue(rand.Reader, ir, now))
	ikeyPEM, err := keys.EncodePrivateKey(ikey, keys.EncodingPKCS8)
	require.NoError(t, err)
	inter, err := localca.FromPEM(ir.Status.Certificate, ikeyPEM)
	require.NoError(t, err)

	r, _ := request(t, keys.RequestTemplate{DNSNames: []string{"web.example"}, Usages: []keys.Usage{keys.UsageServerAuth}}, nil)
	require.NoError(t, inter.Issue(rand.Reader, r, now.Add(time.Minute)))
	var certs []*x509.Certificate
	rest := r.Status.Certificate
	for {
		b, more := pem.Decode(rest)
		if b == nil {
			break
		}
		c, err := x509.ParseCertificate(b.Bytes)
		require.NoError(t, err)
		certs, rest = append(certs, c), more
	}
	require.Len(t, certs, 2, "leaf, then the intermediate")
	pool, inters := x509.NewCertPool(), x509.NewCertPool()
	pool.AddCert(root.Certificate())
	inters.AddCert(certs[1])
	_, err = certs[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inters, CurrentTime: now.Add(2 * time.Minute), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	assert.NoError(t, err)
}

func TestIssueRefusesWhatItCannotSign(t *testing.T) {
	root, err := localca.NewRoot(rand.Reader, "root", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, now.Add(-2*time.Hour), time.Hour)
	require.NoError(t, err)
	web := keys.RequestTemplate{DNSNames: []string{"web.example"}}
	tests := map[string]struct {
		ca     *localca.CA
		mutate func(*certificate.CertificateRequest)
		when   time.Time
		cond   string
		msg    string
	}{
		"a CSR that does not parse is invalid": {mutate: func(r *certificate.CertificateRequest) { r.Spec.Request = []byte("garbage") },
			cond: certificate.RequestConditionInvalidRequest, msg: "the CSR cannot be used"},
		"an unknown usage is invalid": {mutate: func(r *certificate.CertificateRequest) { r.Spec.Usages = []keys.Usage{"teleport"} },
			cond: certificate.RequestConditionInvalidRequest, msg: `"teleport" is not a known usage`},
		"an expired CA fails": {when: now, cond: certificate.RequestConditionReady, msg: "the CA certificate CN=root expired at"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r, _ := request(t, web, tc.mutate)
			when := tc.when
			if when.IsZero() {
				when = now.Add(-time.Hour)
			}
			require.NoError(t, root.Issue(rand.Reader, r, when))
			assert.True(t, certificate.Answered(r))
			assert.Empty(t, r.Status.Certificate)
			c := r.Condition(tc.cond)
			require.NotNil(t, c)
			assert.Contains(t, c.Message, tc.msg)
			assert.Equal(t, certificate.StatusFalse, readyOf(r).Status)
			require.NotNil(t, r.Status.FailureTime)
		})
	}
	t.Run("an answered request is left alone", func(t *testing.T) {
		r, _ := request(t, web, nil)
		certificate.SetDenied(r, "no", now)
		before := r.Status
		require.NoError(t, root.Issue(rand.Reader, r, now.Add(-time.Hour)))
		assert.Equal(t, before, r.Status)
	})
}

func TestSelfSign(t *testing.T) {
	r, key := request(t, keys.RequestTemplate{CommonName: "selfie", DNSNames: []string{"selfie.example"}}, nil)
	require.NoError(t, localca.SelfSign(rand.Reader, r, key, now))
	leaf := leafOf(t, r)
	assert.NoError(t, leaf.CheckSignature(leaf.SignatureAlgorithm, leaf.RawTBSCertificate, leaf.Signature), "signed by its own key")
	assert.Equal(t, r.Status.Certificate, r.Status.CA)

	other, _ := request(t, keys.RequestTemplate{CommonName: "selfie"}, nil)
	require.NoError(t, localca.SelfSign(rand.Reader, other, key, now))
	assert.Contains(t, other.Condition(certificate.RequestConditionInvalidRequest).Message, "not the CSR's")
}

func TestNewRefusesWhatIsNotACA(t *testing.T) {
	root, err := localca.NewRoot(rand.Reader, "root", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, now, time.Hour)
	require.NoError(t, err)
	r, key := request(t, keys.RequestTemplate{CommonName: "leaf"}, nil)
	require.NoError(t, root.Issue(rand.Reader, r, now))
	leaf := leafOf(t, r)
	_, err = localca.New(leaf, key)
	assert.ErrorIs(t, err, localca.ErrNotCA)
	_, err = localca.New(root.Certificate(), key)
	assert.ErrorIs(t, err, localca.ErrKeyMismatch)
	_, err = localca.FromPEM([]byte("x"), []byte("y"))
	assert.ErrorContains(t, err, "not a PEM CERTIFICATE")
}
