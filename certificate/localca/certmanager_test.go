package localca_test

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/localca"
	"github.com/certlife/certlife/keys"
)

var (
	upn      = keys.OtherName{OID: "1.3.6.1.4.1.311.20.2.3", UTF8Value: "web@corp.example"}
	corpOnly = &keys.NameConstraints{Critical: true,
		Permitted: &keys.NameConstraintItem{DNSDomains: []string{"corp.example"}, IPRanges: []string{"10.0.0.0/8"}},
		Excluded:  &keys.NameConstraintItem{DNSDomains: []string{"secret.corp.example"}}}
)

// extensionValue is the value of the certificate's extension of that OID,
// nil when it has none.
func extensionValue(c *x509.Certificate, oid string) []byte {
	for _, e := range c.Extensions {
		if e.Id.String() == oid {
			return e.Value
		}
	}
	return nil
}

// What the CSR carries reaches the certificate: a literal subject byte
// for byte (RFC 4514), the subject alternative names with their other
// names (RFC 5280 §4.2.1.6), critical when the subject is empty, and a
// CA's name constraints (RFC 5280 §4.2.1.10), which crypto/x509 then
// enforces below the CA, and the CA itself refuses to break.
func TestIssueCarriesWhatTheCSRAsks(t *testing.T) {
	root, err := localca.NewRoot(rand.Reader, "root", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, now.Add(-time.Hour), 365*24*time.Hour)
	require.NoError(t, err)

	t.Run("a literal subject and other names", func(t *testing.T) {
		tmpl := keys.RequestTemplate{LiteralSubject: "CN=app+UID=a1,OU=web,DC=corp,DC=example", DNSNames: []string{"app.corp.example"}, OtherNames: []keys.OtherName{upn}}
		r, _ := request(t, tmpl, nil)
		require.NoError(t, root.Issue(rand.Reader, r, now))
		leaf := leafOf(t, r)
		csr, err := keys.ParseCSR(r.Spec.Request)
		require.NoError(t, err)
		assert.Equal(t, csr.RawSubject, leaf.RawSubject)
		assert.Equal(t, extensionValue(&x509.Certificate{Extensions: csr.Extensions}, "2.5.29.17"), extensionValue(leaf, "2.5.29.17"), "the names as the CSR has them")
		assert.Equal(t, []string{"app.corp.example"}, leaf.DNSNames)
		assert.Empty(t, keys.CompareCertificateNames(leaf, tmpl))
	})

	t.Run("only other names: the names extension is critical", func(t *testing.T) {
		r, _ := request(t, keys.RequestTemplate{OtherNames: []keys.OtherName{upn}}, nil)
		require.NoError(t, root.Issue(rand.Reader, r, now))
		leaf := leafOf(t, r)
		var san *pkix.Extension
		for i, e := range leaf.Extensions {
			if e.Id.String() == "2.5.29.17" {
				san = &leaf.Extensions[i]
			}
		}
		require.NotNil(t, san, "the other name is in the certificate")
		assert.True(t, san.Critical)
		assert.Equal(t, []byte{0x30, 0}, leaf.RawSubject, "an empty subject")
	})

	t.Run("a CA's name constraints, enforced below it", func(t *testing.T) {
		r, key := request(t, keys.RequestTemplate{CommonName: "corp CA", IsCA: true, NameConstraints: corpOnly}, nil)
		require.NoError(t, root.Issue(rand.Reader, r, now))
		caCert := leafOf(t, r)
		assert.True(t, caCert.PermittedDNSDomainsCritical)
		assert.Equal(t, []string{"corp.example"}, caCert.PermittedDNSDomains)
		assert.Equal(t, "10.0.0.0/8", caCert.PermittedIPRanges[0].String())
		assert.Equal(t, []string{"secret.corp.example"}, caCert.ExcludedDNSDomains)

		keyPEM, err := keys.EncodePrivateKey(key, keys.EncodingPKCS8)
		require.NoError(t, err)
		corp, err := localca.FromPEM(r.Status.Certificate, keyPEM)
		require.NoError(t, err, "a CA with name constraints reads back as a CA")
		roots, inters := x509.NewCertPool(), x509.NewCertPool()
		roots.AddCert(root.Certificate())
		inters.AddCert(caCert)
		for name, ok := range map[string]bool{"app.corp.example": true, "app.other.example": false, "db.secret.corp.example": false} {
			lr, _ := request(t, keys.RequestTemplate{DNSNames: []string{name}, Usages: []keys.Usage{keys.UsageServerAuth}}, nil)
			require.NoError(t, corp.Issue(rand.Reader, lr, now.Add(time.Minute)))
			if ok {
				_, err := leafOf(t, lr).Verify(x509.VerifyOptions{Roots: roots, Intermediates: inters, CurrentTime: now.Add(2 * time.Minute), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
				assert.NoError(t, err, name)
			} else {
				// crypto/x509 would refuse it: the CA does not sign it.
				c := lr.Condition(certificate.RequestConditionInvalidRequest)
				require.NotNil(t, c, name)
				assert.Contains(t, c.Message, `DNS name "`+name+`"`)
				assert.Empty(t, lr.Status.Certificate, name)
			}
		}
	})

	t.Run("name constraints in the CSR of a request that is not for a CA are invalid", func(t *testing.T) {
		r, _ := request(t, keys.RequestTemplate{CommonName: "corp CA", IsCA: true, NameConstraints: corpOnly}, func(r *certificate.CertificateRequest) { r.Spec.IsCA = false })
		require.NoError(t, root.Issue(rand.Reader, r, now))
		c := r.Condition(certificate.RequestConditionInvalidRequest)
		require.NotNil(t, c)
		assert.Contains(t, c.Message, "the CSR asks for name constraints, which only a CA certificate may carry (RFC 5280 §4.2.1.10)")
		assert.Empty(t, r.Status.Certificate)
	})
}

// A CA's options put the CRL distribution points (RFC 5280 §4.2.1.13),
// OCSP servers and issuing certificate URLs (§4.2.2.1) into every
// certificate it signs, as cert-manager's CA issuer's fields do; the
// SelfSigned issuer takes them too. Unusable options are refused where
// they are given, naming the option.
func TestOptionsGoIntoEveryCertificate(t *testing.T) {
	opts := []localca.Option{
		localca.CRLDistributionPoints("http://crl.corp.example/ca.crl"),
		localca.OCSPServers("http://ocsp.corp.example"),
		localca.IssuingCertificateURLs("http://corp.example/ca.crt", "http://mirror.corp.example/ca.crt"),
	}
	check := func(t *testing.T, leaf *x509.Certificate) {
		assert.Equal(t, []string{"http://crl.corp.example/ca.crl"}, leaf.CRLDistributionPoints)
		assert.Equal(t, []string{"http://ocsp.corp.example"}, leaf.OCSPServer)
		assert.Equal(t, []string{"http://corp.example/ca.crt", "http://mirror.corp.example/ca.crt"}, leaf.IssuingCertificateURL)
	}
	web := keys.RequestTemplate{DNSNames: []string{"web.example"}}

	t.Run("a root made with them", func(t *testing.T) {
		root, err := localca.NewRoot(rand.Reader, "root", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, now.Add(-time.Hour), 24*time.Hour, opts...)
		require.NoError(t, err)
		assert.Empty(t, root.Certificate().CRLDistributionPoints, "the root itself carries none")
		r, _ := request(t, web, nil)
		_, err = root.Issuer(rand.Reader).Answer(context.Background(), r, now)
		require.NoError(t, err)
		check(t, leafOf(t, r))
	})

	t.Run("a CA read from a secret", func(t *testing.T) {
		root, err := localca.NewRoot(rand.Reader, "root", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, now.Add(-time.Hour), 24*time.Hour)
		require.NoError(t, err)
		r, _ := request(t, web, nil)
		iss := localca.FromSecret(secrets{"certs/ca": caSecret(t, root)}.get, "certs", "ca", rand.Reader, opts...)
		_, err = iss.Answer(context.Background(), r, now)
		require.NoError(t, err)
		check(t, leafOf(t, r))
	})

	t.Run("self-signed", func(t *testing.T) {
		r, key := request(t, web, nil)
		require.NoError(t, localca.SelfSign(rand.Reader, r, key, now, opts...))
		check(t, leafOf(t, r))
	})

	bad := []localca.Option{localca.CRLDistributionPoints("crl.corp.example"), localca.OCSPServers("http://ø.example")}
	const want = `localca: invalid option: crlDistributionPoints[0]: "crl.corp.example" is not an absolute URL in ASCII` + "\n" +
		`localca: invalid option: ocspServers[0]: "http://ø.example" is not an absolute URL in ASCII`

	t.Run("unusable options", func(t *testing.T) {
		err := localca.ValidateOptions(bad...)
		require.ErrorIs(t, err, localca.ErrInvalidOption)
		assert.EqualError(t, err, want)
		_, err = localca.NewRoot(rand.Reader, "root", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, now, time.Hour, bad...)
		assert.ErrorIs(t, err, localca.ErrInvalidOption)

		r, key := request(t, web, nil)
		assert.ErrorIs(t, localca.SelfSign(rand.Reader, r, key, now, bad...), localca.ErrInvalidOption)
		assert.False(t, certificate.Answered(r), "the request is not the one at fault")

		root, err := localca.NewRoot(rand.Reader, "root", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, now.Add(-time.Hour), 24*time.Hour)
		require.NoError(t, err)
		for name, iss := range map[string]certificate.Issuer{
			"FromSecret": localca.FromSecret(secrets{"certs/ca": caSecret(t, root)}.get, "certs", "ca", rand.Reader, bad...),
			"SelfSigned": localca.SelfSigned(secrets{}.get, rand.Reader, bad...),
		} {
			r, _ := request(t, web, nil)
			again, err := iss.Answer(context.Background(), r, now)
			require.NoError(t, err, name)
			assert.Equal(t, now.Add(localca.NotReadyRecheck), again, name)
			assert.Equal(t, certificate.RequestReasonPending, readyOf(r).Reason, name)
			assert.Equal(t, "the issuer is not ready: "+want, readyOf(r).Message, name)
		}
	})
}

// A temporary certificate (keys.TemporaryCertificate) does not chain to
// any CA a host runs.
func TestTemporaryCertificateIsNotTrusted(t *testing.T) {
	root, err := localca.NewRoot(rand.Reader, "root", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, now.Add(-time.Hour), 24*time.Hour)
	require.NoError(t, err)
	key, err := keys.Generate(rand.Reader, keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
	require.NoError(t, err)
	p, err := keys.TemporaryCertificate(rand.Reader, key, keys.RequestTemplate{DNSNames: []string{"web.example"}}, now, now.Add(time.Hour))
	require.NoError(t, err)
	b, _ := pem.Decode(p)
	leaf, err := x509.ParseCertificate(b.Bytes)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(root.Certificate())
	_, err = leaf.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now.Add(time.Minute)})
	assert.Error(t, err)
}
