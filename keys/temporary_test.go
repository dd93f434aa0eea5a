package keys

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A temporary certificate is for the key and names asked, valid when
// asked, issued by the throwaway issuer, and told apart from issued
// certificates; the reference operator's temporary certificates are told
// apart too.
func TestTemporaryCertificate(t *testing.T) {
	key := mustKey(t, KeySpec{Algorithm: AlgorithmECDSA})
	nb := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tmpl := RequestTemplate{LiteralSubject: "CN=app,O=acme", DNSNames: []string{"app.example"}, IPAddresses: []string{"10.0.0.1"}, OtherNames: []OtherName{upn},
		Usages: []Usage{UsageDigitalSignature, UsageServerAuth}}
	p, err := TemporaryCertificate(rand.Reader, key, tmpl, nb, nb.Add(90*24*time.Hour))
	require.NoError(t, err)
	block, rest := pem.Decode(p)
	require.NotNil(t, block)
	assert.Empty(t, rest, "one certificate, no chain")
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	assert.True(t, PublicKeysEqual(cert.PublicKey, key.Public()))
	assert.Equal(t, TemporaryIssuerName, cert.Issuer.CommonName)
	assert.True(t, IsTemporaryCertificate(cert))
	assert.Equal(t, nb, cert.NotBefore)
	assert.Equal(t, nb.Add(90*24*time.Hour), cert.NotAfter)
	assert.Empty(t, CompareCertificateNames(cert, tmpl))
	assert.Equal(t, []string{"1.3.6.1.4.1.311.20.2.3=user@corp.example"}, otherNamesIn(cert.Extensions))
	assert.Equal(t, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, cert.ExtKeyUsage)
	pool := x509.NewCertPool()
	_, err = cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: nb.Add(time.Hour)})
	assert.Error(t, err, "no client trusts a temporary certificate")

	_, err = TemporaryCertificate(rand.Reader, key, tmpl, nb, nb)
	assert.ErrorContains(t, err, "is never valid")
	_, err = TemporaryCertificate(rand.Reader, key, RequestTemplate{LiteralSubject: "X=y"}, nb, nb.Add(time.Hour))
	assert.ErrorIs(t, err, ErrTemplate)

	// signed is a leaf with the subject serial number serial, signed by an
	// issuer of that name.
	signed := func(issuer, serial string) *x509.Certificate {
		leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "web.example", SerialNumber: serial}, NotBefore: nb, NotAfter: nb.Add(time.Hour)}
		der, err := x509.CreateCertificate(rand.Reader, leaf, &x509.Certificate{Subject: pkix.Name{CommonName: issuer}}, key.Public(), key)
		require.NoError(t, err)
		c, err := x509.ParseCertificate(der)
		require.NoError(t, err)
		return c
	}
	assert.True(t, IsTemporaryCertificate(signed("cert-manager.local", "1234567890")), "the reference operator's")
	assert.False(t, IsTemporaryCertificate(signed("cert-manager.local", "")), "a CA named so, without the reference's serial")
	assert.False(t, IsTemporaryCertificate(signed("corp CA", "1234567890")))
	assert.False(t, IsTemporaryCertificate(nil))
}
