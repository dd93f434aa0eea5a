package localca_test

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/localca"
	"github.com/certlife/certlife/keys"
)

// caWithPathLen is a root CA whose basic constraints carry pathLen
// (−1: none).
func caWithPathLen(t *testing.T, pathLen int) *localca.CA {
	t.Helper()
	key, err := keys.Generate(rand.Reader, keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "root"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(5, 0, 0),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
		MaxPathLen: pathLen, MaxPathLenZero: pathLen == 0}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	ca, err := localca.New(cert, key)
	require.NoError(t, err)
	return ca
}

// A local CA signs only what its policy allows (RFC 5280 §4.2.1.9): under
// a CA whose path length constraint is 0 an isCA request is answered
// invalid, naming the constraint, while a leaf is signed; a CA signed
// under a constraint of n gets n−1, so it refuses in its turn what a
// validator would refuse, and the chain it signs verifies.
func TestACASignsNoCAItsPathLengthForbids(t *testing.T) {
	ca := keys.RequestTemplate{CommonName: "sub CA", IsCA: true, Usages: []keys.Usage{keys.UsageCertSign}}
	leaf := keys.RequestTemplate{DNSNames: []string{"web.example"}, Usages: []keys.Usage{keys.UsageServerAuth}}
	tests := map[string]struct {
		pathLen int
		tmpl    keys.RequestTemplate
		// invalid: the message the request is answered invalid with
		invalid string
		// childPathLen is the issued CA's MaxPathLen (−1: none)
		childPathLen int
	}{
		"an isCA request under pathLen 0 is refused":        {pathLen: 0, tmpl: ca, invalid: "the CA CN=root may sign no further CA: its path length constraint is 0 (RFC 5280 §4.2.1.9)"},
		"a leaf under pathLen 0 is signed":                  {pathLen: 0, tmpl: leaf},
		"an isCA request under pathLen 1 gets pathLen 0":    {pathLen: 1, tmpl: ca, childPathLen: 0},
		"an isCA request under pathLen 3 gets pathLen 2":    {pathLen: 3, tmpl: ca, childPathLen: 2},
		"an isCA request under no constraint gets none":     {pathLen: -1, tmpl: ca, childPathLen: -1},
		"a leaf under pathLen 1 has no basic constraint cA": {pathLen: 1, tmpl: leaf},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			root := caWithPathLen(t, tc.pathLen)
			r, _ := request(t, tc.tmpl, nil)
			require.NoError(t, root.Issue(rand.Reader, r, now))
			if tc.invalid != "" {
				c := r.Condition(certificate.RequestConditionInvalidRequest)
				require.NotNil(t, c, "signed: %+v", readyOf(r))
				assert.Equal(t, certificate.StatusTrue, c.Status)
				assert.Contains(t, c.Message, tc.invalid)
				assert.Empty(t, r.Status.Certificate)
				return
			}
			require.Equal(t, certificate.StatusTrue, readyOf(r).Status, readyOf(r).Message)
			got := leafOf(t, r)
			assert.Equal(t, tc.tmpl.IsCA, got.IsCA)
			if tc.tmpl.IsCA {
				assert.Equal(t, tc.childPathLen, got.MaxPathLen)
				assert.Equal(t, tc.childPathLen == 0, got.MaxPathLenZero)
			}
		})
	}

	t.Run("the chain a CA with pathLen 0 signs verifies, and it refuses a further CA", func(t *testing.T) {
		root := caWithPathLen(t, 1)
		r, key := request(t, ca, nil)
		require.NoError(t, root.Issue(rand.Reader, r, now))
		keyPEM, err := keys.EncodePrivateKey(key, keys.EncodingPKCS8)
		require.NoError(t, err)
		sub, err := localca.FromPEM(r.Status.Certificate, keyPEM)
		require.NoError(t, err)

		further, _ := request(t, ca, nil)
		require.NoError(t, sub.Issue(rand.Reader, further, now))
		require.NotNil(t, further.Condition(certificate.RequestConditionInvalidRequest), "a CA below pathLen 0 was signed")

		web, _ := request(t, leaf, nil)
		require.NoError(t, sub.Issue(rand.Reader, web, now))
		roots, inter := x509.NewCertPool(), x509.NewCertPool()
		roots.AddCert(root.Certificate())
		inter.AddCert(sub.Certificate())
		_, err = leafOf(t, web).Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: now.Add(time.Minute),
			DNSName: "web.example", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		require.NoError(t, err)
	})
}

var oidSubjectAltName = asn1.ObjectIdentifier{2, 5, 29, 17}

func sanCritical(c *x509.Certificate) (present, critical bool) {
	for _, e := range c.Extensions {
		if e.Id.Equal(oidSubjectAltName) {
			return true, e.Critical
		}
	}
	return false, false
}

// No certificate has an empty issuer or subject where RFC 5280 requires
// one. A self-signed certificate's issuer is its subject, which must not
// be empty (§4.1.2.4), and a CA's subject must name it (§4.1.2.6): a
// request without a subject gets one derived from its names — the common
// name of its first DNS name that fits one (64 characters), else of its
// first IP address; else the emailAddress attribute of its first email
// address; else the UID attribute of its first DNS name, else URI — which
// the stages count among its names, so the certificate still matches what
// was asked. A leaf a CA signs may keep an empty subject beside its names,
// in a critical extension (§4.1.2.6); one with no name at all is invalid.
func TestNoCertificateWithoutASubjectWhereOneIsRequired(t *testing.T) {
	long := strings.Repeat("a", 60) + ".example" // 68 characters
	parent, err := localca.NewRoot(rand.Reader, "root", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, now.Add(-time.Hour), 365*24*time.Hour)
	require.NoError(t, err)
	tests := map[string]struct {
		tmpl     keys.RequestTemplate
		selfSign bool
		// subject is the issued certificate's, "" for an empty one; invalid
		// is the message of a request answered invalid.
		subject string
		invalid string
	}{
		"self-signed without a subject: its first DNS name": {
			tmpl: keys.RequestTemplate{DNSNames: []string{"web.example", "www.web.example"}}, selfSign: true, subject: "CN=web.example"},
		"self-signed, a first DNS name too long for a common name: the next": {
			tmpl: keys.RequestTemplate{DNSNames: []string{long, "short.example"}}, selfSign: true, subject: "CN=short.example"},
		"self-signed with a subject of its own keeps it": {
			tmpl: keys.RequestTemplate{DNSNames: []string{"web.example"}, Subject: &keys.Subject{Organizations: []string{"Example"}}}, selfSign: true, subject: "O=Example"},
		"self-signed with only IP addresses: the first, as the common name": {
			tmpl: keys.RequestTemplate{IPAddresses: []string{"10.0.0.1", "2001:db8::1"}}, selfSign: true, subject: "CN=10.0.0.1"},
		"self-signed with an IPv6 address: its textual form": {
			tmpl: keys.RequestTemplate{IPAddresses: []string{"2001:0db8:0:0::1"}}, selfSign: true, subject: "CN=2001:db8::1"},
		"self-signed with a long DNS name and an IP address: the IP address": {
			tmpl: keys.RequestTemplate{DNSNames: []string{long}, IPAddresses: []string{"10.0.0.1"}}, selfSign: true, subject: "CN=10.0.0.1"},
		"self-signed with only an email address: the emailAddress attribute": {
			tmpl: keys.RequestTemplate{EmailAddresses: []string{"ops@example.com"}}, selfSign: true, subject: "emailAddress=ops@example.com"},
		"self-signed with only a URI: the UID attribute": {
			tmpl: keys.RequestTemplate{URIs: []string{"spiffe://cluster.local/ns/app/sa/web"}}, selfSign: true, subject: "UID=spiffe://cluster.local/ns/app/sa/web"},
		"self-signed with only a DNS name too long for a common name: the UID attribute": {
			tmpl: keys.RequestTemplate{DNSNames: []string{long}}, selfSign: true, subject: "UID=" + long},
		"self-signed with a URI and an email address: the email address": {
			tmpl: keys.RequestTemplate{URIs: []string{"spiffe://cluster.local/a"}, EmailAddresses: []string{"a@example.com"}}, selfSign: true,
			subject: "emailAddress=a@example.com"},
		"self-signed with only another name is invalid": {
			tmpl: keys.RequestTemplate{OtherNames: []keys.OtherName{{OID: "1.3.6.1.4.1.311.20.2.3", UTF8Value: "user@corp.example"}}}, selfSign: true,
			invalid: "a self-signed certificate's issuer is its subject, which must not be empty (RFC 5280 §4.1.2.4); set spec.commonName or spec.subject"},
		"a CA a CA signs, without a subject: its first DNS name": {
			tmpl: keys.RequestTemplate{DNSNames: []string{"ca.example"}, IsCA: true}, subject: "CN=ca.example"},
		"a CA a CA signs, with only a URI: the UID attribute": {
			tmpl: keys.RequestTemplate{URIs: []string{"spiffe://cluster.local/ca"}, IsCA: true}, subject: "UID=spiffe://cluster.local/ca"},
		"a leaf a CA signs keeps its empty subject, its names critical": {
			tmpl: keys.RequestTemplate{DNSNames: []string{"web.example"}}, subject: ""},
		"a leaf a CA signs with only an IP address keeps its empty subject": {
			tmpl: keys.RequestTemplate{IPAddresses: []string{"10.0.0.1"}}, subject: ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r, key := request(t, tc.tmpl, nil)
			if tc.selfSign {
				require.NoError(t, localca.SelfSign(rand.Reader, r, key, now))
			} else {
				require.NoError(t, parent.Issue(rand.Reader, r, now))
			}
			if tc.invalid != "" {
				c := r.Condition(certificate.RequestConditionInvalidRequest)
				require.NotNil(t, c, "signed: %+v", readyOf(r))
				assert.Contains(t, c.Message, tc.invalid)
				assert.Empty(t, r.Status.Certificate)
				return
			}
			require.Equal(t, certificate.StatusTrue, readyOf(r).Status, readyOf(r).Message)
			got := leafOf(t, r)
			assert.Equal(t, tc.subject, subjectString(t, got))
			assert.NotEmpty(t, got.Issuer.String(), "an empty issuer (RFC 5280 §4.1.2.4)")
			if tc.selfSign {
				assert.Equal(t, got.RawSubject, got.RawIssuer, "a self-signed certificate's issuer is its subject")
				assert.NoError(t, got.CheckSignature(got.SignatureAlgorithm, got.RawTBSCertificate, got.Signature), "signed by its own key")
				// It verifies as its own root, for every name it carries.
				roots := x509.NewCertPool()
				roots.AddCert(got)
				_, err := got.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now.Add(time.Minute), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
				assert.NoError(t, err)
				for _, ip := range got.IPAddresses {
					assert.NoError(t, got.VerifyHostname(ip.String()))
				}
			}
			if tc.subject == "" {
				present, critical := sanCritical(got)
				assert.True(t, present && critical, "an empty subject beside a SAN extension that is not critical (RFC 5280 §4.1.2.6)")
			}
			assert.Empty(t, keys.CompareCertificateNames(got, tc.tmpl), "the certificate no longer matches what was asked: a re-issue loop")
		})
	}
	// keys.BuildCSR refuses to build such a CSR; another host's may not.
	t.Run("a leaf a CA signs with neither a subject nor a name is invalid", func(t *testing.T) {
		key, err := keys.Generate(rand.Reader, keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
		require.NoError(t, err)
		der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
		require.NoError(t, err)
		r := &certificate.CertificateRequest{ObjectMeta: certificate.ObjectMeta{Name: "nameless-1"},
			Spec: certificate.RequestSpec{Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})}}
		require.NoError(t, parent.Issue(rand.Reader, r, now))
		c := r.Condition(certificate.RequestConditionInvalidRequest)
		require.NotNil(t, c, "signed: %+v", readyOf(r))
		assert.Contains(t, c.Message, "the request has neither a subject nor a name")
		assert.Empty(t, r.Status.Certificate)
	})
}

// subjectString is a certificate's subject as "TYPE=value,..." in
// encoding order, naming the UID and emailAddress attributes pkix does not
// know, and checking the string type each one's syntax requires.
func subjectString(t *testing.T, c *x509.Certificate) string {
	t.Helper()
	var raw []asn1.RawValue
	rest, err := asn1.Unmarshal(c.RawSubject, &raw)
	require.NoError(t, err)
	require.Empty(t, rest)
	var parts []string
	for _, set := range raw {
		var atvs []struct {
			Type  asn1.ObjectIdentifier
			Value asn1.RawValue
		}
		_, err := asn1.UnmarshalWithParams(set.FullBytes, &atvs, "set")
		require.NoError(t, err)
		for _, atv := range atvs {
			name := atv.Type.String()
			switch {
			case atv.Type.Equal(asn1.ObjectIdentifier{2, 5, 4, 3}):
				name = "CN"
			case atv.Type.Equal(asn1.ObjectIdentifier{2, 5, 4, 10}):
				name = "O"
			case atv.Type.Equal(asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 1}):
				name = "UID"
			case atv.Type.Equal(asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}):
				name = "emailAddress"
				assert.Equal(t, asn1.TagIA5String, atv.Value.Tag, "emailAddress is an IA5String (RFC 5280 appendix A)")
			}
			parts = append(parts, name+"="+string(atv.Value.Bytes))
		}
	}
	return strings.Join(parts, ",")
}

// A local CA signs no name outside its own name constraints (RFC 5280
// §4.2.1.10): crypto/x509 would refuse every such certificate, so the
// request is answered invalid, naming the name and the constraint —
// permitted and excluded, for DNS names, IP addresses, URIs and email
// addresses — while the names within them are signed and verify.
func TestACASignsNoNameItsNameConstraintsForbid(t *testing.T) {
	root, err := localca.NewRoot(rand.Reader, "root", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, now.Add(-time.Hour), 365*24*time.Hour)
	require.NoError(t, err)
	nc := &keys.NameConstraints{Critical: true,
		Permitted: &keys.NameConstraintItem{DNSDomains: []string{"corp.example"}, IPRanges: []string{"10.0.0.0/8", "2001:db8::/32"},
			EmailAddresses: []string{"corp.example"}, URIDomains: []string{".corp.example"}},
		Excluded: &keys.NameConstraintItem{DNSDomains: []string{"secret.corp.example"}, IPRanges: []string{"10.9.0.0/16"},
			EmailAddresses: []string{"ceo@corp.example"}, URIDomains: []string{"hidden.corp.example"}}}
	ca, caCert := constrainedCA(t, root, nc)
	tests := map[string]struct {
		tmpl keys.RequestTemplate
		// invalid is what the refusal must say ("" when it is signed).
		invalid []string
	}{
		"names within every constraint are signed": {tmpl: keys.RequestTemplate{DNSNames: []string{"app.corp.example", "corp.example"},
			IPAddresses: []string{"10.1.2.3", "2001:db8::5"}, EmailAddresses: []string{"ops@corp.example"}, URIs: []string{"spiffe://id.corp.example/app"}}},
		"a DNS name outside the permitted domains": {tmpl: keys.RequestTemplate{DNSNames: []string{"app.corp.example", "app.other.example"}},
			invalid: []string{`DNS name "app.other.example" is not permitted by any constraint`, "permitted DNS domains corp.example"}},
		"a DNS name in an excluded domain": {tmpl: keys.RequestTemplate{DNSNames: []string{"db.secret.corp.example"}},
			invalid: []string{`DNS name "db.secret.corp.example" is excluded by constraint "secret.corp.example"`}},
		"a wildcard over an excluded domain": {tmpl: keys.RequestTemplate{DNSNames: []string{"*.secret.corp.example"}},
			invalid: []string{`DNS name "*.secret.corp.example" is excluded`}},
		"an IP address outside the permitted ranges": {tmpl: keys.RequestTemplate{DNSNames: []string{"app.corp.example"}, IPAddresses: []string{"192.168.1.1"}},
			invalid: []string{`IP address "192.168.1.1" is not permitted by any constraint`, "permitted IP ranges 10.0.0.0/8, 2001:db8::/32"}},
		"an IP address in an excluded range": {tmpl: keys.RequestTemplate{IPAddresses: []string{"10.9.1.1"}},
			invalid: []string{`IP address "10.9.1.1" is excluded by constraint "10.9.0.0/16"`}},
		"an email address outside the permitted hosts": {tmpl: keys.RequestTemplate{EmailAddresses: []string{"ops@other.example"}},
			invalid: []string{`email address "ops@other.example" is not permitted by any constraint`, "permitted email addresses corp.example"}},
		"an excluded email address": {tmpl: keys.RequestTemplate{EmailAddresses: []string{"ceo@corp.example"}},
			invalid: []string{`email address "ceo@corp.example" is excluded by constraint "ceo@corp.example"`}},
		"a URI outside the permitted domains": {tmpl: keys.RequestTemplate{URIs: []string{"spiffe://other.example/app"}},
			invalid: []string{`URI "spiffe://other.example/app" is not permitted by any constraint`, "permitted URI domains .corp.example"}},
		"a URI in an excluded domain": {tmpl: keys.RequestTemplate{URIs: []string{"https://hidden.corp.example/x"}},
			invalid: []string{`URI "https://hidden.corp.example/x" is excluded by constraint "hidden.corp.example"`}},
		"a sub-CA for a name outside them": {tmpl: keys.RequestTemplate{DNSNames: []string{"ca.other.example"}, IsCA: true},
			invalid: []string{`DNS name "ca.other.example" is not permitted`}},
	}
	roots, inters := x509.NewCertPool(), x509.NewCertPool()
	roots.AddCert(root.Certificate())
	inters.AddCert(caCert)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r, _ := request(t, tc.tmpl, nil)
			require.NoError(t, ca.Issue(rand.Reader, r, now.Add(time.Minute)))
			if tc.invalid == nil {
				require.Equal(t, certificate.StatusTrue, readyOf(r).Status, readyOf(r).Message)
				_, err := leafOf(t, r).Verify(x509.VerifyOptions{Roots: roots, Intermediates: inters, CurrentTime: now.Add(2 * time.Minute),
					KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
				assert.NoError(t, err)
				return
			}
			c := r.Condition(certificate.RequestConditionInvalidRequest)
			require.NotNil(t, c, "signed a certificate crypto/x509 refuses: %+v", readyOf(r))
			assert.Contains(t, c.Message, "the CA CN=corp CA may not certify a name the request asks")
			assert.Contains(t, c.Message, "RFC 5280 §4.2.1.10")
			for _, want := range tc.invalid {
				assert.Contains(t, c.Message, want)
			}
			assert.Empty(t, r.Status.Certificate)
		})
	}
}

// RFC 5280 §4.2.1.3: a key that signs certificates belongs to a CA. A
// request for "cert sign" that is not for a CA is answered invalid, as
// certificate.Validate refuses the spec.
func TestACASignsNoCertSignForALeaf(t *testing.T) {
	root, err := localca.NewRoot(rand.Reader, "root", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, now.Add(-time.Hour), 365*24*time.Hour)
	require.NoError(t, err)
	r, key := request(t, keys.RequestTemplate{DNSNames: []string{"web.example"}, Usages: []keys.Usage{keys.UsageDigitalSignature, keys.UsageCertSign}}, nil)
	require.NoError(t, root.Issue(rand.Reader, r, now))
	c := r.Condition(certificate.RequestConditionInvalidRequest)
	require.NotNil(t, c, "signed: %+v", readyOf(r))
	assert.Contains(t, c.Message, `the usage "cert sign" and is not for a CA`)
	assert.Empty(t, r.Status.Certificate)

	r, _ = request(t, keys.RequestTemplate{DNSNames: []string{"web.example"}, Usages: []keys.Usage{keys.UsageCertSign}}, nil)
	require.NoError(t, localca.SelfSign(rand.Reader, r, key, now))
	require.NotNil(t, r.Condition(certificate.RequestConditionInvalidRequest), "self-signed: %+v", readyOf(r))
}

// Name constraints that are not critical, as a request may ask, are kept
// as asked; the issued request's Ready message says RFC 5280 requires
// them critical (§4.2.1.10), and critical ones say nothing.
func TestNonCriticalNameConstraintsAreKeptWithANote(t *testing.T) {
	root, err := localca.NewRoot(rand.Reader, "root", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, now.Add(-time.Hour), 365*24*time.Hour)
	require.NoError(t, err)
	for _, critical := range []bool{false, true} {
		nc := &keys.NameConstraints{Critical: critical, Permitted: &keys.NameConstraintItem{DNSDomains: []string{"corp.example"}}}
		r, _ := request(t, keys.RequestTemplate{CommonName: "corp CA", IsCA: true, NameConstraints: nc}, nil)
		require.NoError(t, root.Issue(rand.Reader, r, now))
		require.Equal(t, certificate.StatusTrue, readyOf(r).Status, readyOf(r).Message)
		assert.Equal(t, critical, leafOf(t, r).PermittedDNSDomainsCritical)
		if critical {
			assert.Equal(t, "certificate issued", readyOf(r).Message)
		} else {
			assert.Contains(t, readyOf(r).Message, "certificate issued; note: its name constraints are not critical, as the request asks")
			assert.Contains(t, readyOf(r).Message, "RFC 5280 §4.2.1.10 requires them critical")
		}
	}
}

// RFC 5280 §4.2.1.1: every certificate a CA signs names the CA's key in an
// authority key identifier, even under a CA certificate that carries no
// subject key identifier of its own (made by other tools); and every
// certificate carries its own subject key identifier (§4.2.1.2).
func TestKeyIdentifiersUnderACAWithoutOne(t *testing.T) {
	root, err := localca.NewRoot(rand.Reader, "root", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, now.Add(-time.Hour), 365*24*time.Hour)
	require.NoError(t, err)
	keyPEM, err := root.KeyPEM()
	require.NoError(t, err)
	key, err := keys.DecodePrivateKey(keyPEM)
	require.NoError(t, err)
	withID := root.Certificate().SubjectKeyId
	require.NotEmpty(t, withID)
	bare := *root.Certificate()
	bare.SubjectKeyId = nil
	ca, err := localca.New(&bare, key)
	require.NoError(t, err)
	for name, ca := range map[string]*localca.CA{"a CA with a subject key identifier": root, "a CA without one": ca} {
		t.Run(name, func(t *testing.T) {
			r, _ := request(t, keys.RequestTemplate{DNSNames: []string{"web.example"}}, nil)
			require.NoError(t, ca.Issue(rand.Reader, r, now))
			leaf := leafOf(t, r)
			assert.Equal(t, withID, leaf.AuthorityKeyId, "the CA's key, as crypto/x509 identifies it")
			assert.NotEmpty(t, leaf.SubjectKeyId)
			assert.NotEqual(t, leaf.AuthorityKeyId, leaf.SubjectKeyId)
		})
	}
}
