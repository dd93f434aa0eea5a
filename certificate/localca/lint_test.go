package localca_test

import (
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zx509 "github.com/zmap/zcrypto/x509"
	"github.com/zmap/zlint/v3"
	"github.com/zmap/zlint/v3/lint"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/localca"
	"github.com/certlife/certlife/keys"
)

// rfcLints are zlint's lints of the RFCs a certificate the local CA
// issues must meet: RFC 5280 (the profile), RFC 3279 and RFC 5480 (RSA
// and ECDSA keys and their usages), RFC 8813 (ECDSA key usages), RFC 5891
// (internationalised names). The CA/Browser Forum's and root programs'
// lints are left out: a local CA is no public CA.
func rfcLints(t *testing.T) lint.Registry {
	t.Helper()
	reg, err := lint.GlobalRegistry().Filter(lint.FilterOptions{IncludeSources: lint.SourceList{
		lint.RFC5280, lint.RFC3279, lint.RFC5480, lint.RFC8813, lint.RFC5891}})
	require.NoError(t, err)
	return reg
}

// lintFindings runs the RFC lints over a certificate and returns the
// lints that find a warning, an error or worse, sorted, each with its
// details.
func lintFindings(t *testing.T, reg lint.Registry, der []byte) []string {
	t.Helper()
	c, err := zx509.ParseCertificate(der)
	require.NoError(t, err, "zcrypto reads the certificate")
	var out []string
	for name, r := range zlint.LintCertificateEx(c, reg).Results {
		if r.Status >= lint.Warn {
			f := name + " (" + r.Status.String() + ")"
			if r.Details != "" {
				f += ": " + r.Details
			}
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

// The specs users write, as certificates of the local CA (signed by a
// root, or by a CA with name constraints) or self-signed: every one is
// valid, issued, verified by crypto/x509 for every name it carries, and
// passes the RFC lints CAs run (zlint), but for what its spec asks in so
// many words (a name constraint that is not critical).
func TestIssuedCertificatesPassTheRFCLints(t *testing.T) {
	reg := rfcLints(t)
	rsa := &keys.KeySpec{Algorithm: keys.AlgorithmRSA, Size: 2048}
	rsa3072 := &keys.KeySpec{Algorithm: keys.AlgorithmRSA, Size: 3072}
	p256 := &keys.KeySpec{Algorithm: keys.AlgorithmECDSA, Size: 256}
	p384 := &keys.KeySpec{Algorithm: keys.AlgorithmECDSA, Size: 384}
	ed := &keys.KeySpec{Algorithm: keys.AlgorithmEd25519}
	long := strings.Repeat("l", 60) + ".example.com" // 72 characters
	us := func(u ...keys.Usage) []keys.Usage { return u }
	corp := &keys.NameConstraints{Critical: true, Permitted: &keys.NameConstraintItem{
		DNSDomains: []string{"corp.example"}, IPRanges: []string{"10.0.0.0/8"}, EmailAddresses: []string{"corp.example"}, URIDomains: []string{".corp.example"}}}

	type issuer int
	const (
		byRoot issuer = iota
		byConstrainedCA
		selfSigned
	)
	tests := map[string]struct {
		spec certificate.Spec
		by   issuer
		// accepted are the lints the spec itself asks to fail.
		accepted []string
	}{
		"RSA leaf, default usages":                 {spec: certificate.Spec{DNSNames: []string{"web.example"}, PrivateKey: rsa}},
		"RSA 3072 leaf, default usages":            {spec: certificate.Spec{DNSNames: []string{"web.example"}, PrivateKey: rsa3072}},
		"ECDSA P-256 leaf, default usages":         {spec: certificate.Spec{DNSNames: []string{"web.example"}, PrivateKey: p256}},
		"ECDSA P-384 leaf, default usages":         {spec: certificate.Spec{DNSNames: []string{"web.example"}, PrivateKey: p384}},
		"Ed25519 leaf, default usages":             {spec: certificate.Spec{DNSNames: []string{"web.example"}, PrivateKey: ed}},
		"RSA leaf, a common name and DNS names":    {spec: certificate.Spec{CommonName: "web.example", DNSNames: []string{"web.example", "www.web.example"}, PrivateKey: rsa}},
		"ECDSA leaf, server auth":                  {spec: certificate.Spec{DNSNames: []string{"web.example"}, PrivateKey: p256, Usages: us(keys.UsageServerAuth)}},
		"ECDSA leaf, digital signature and mTLS":   {spec: certificate.Spec{DNSNames: []string{"mtls.example"}, PrivateKey: p256, Usages: us(keys.UsageDigitalSignature, keys.UsageServerAuth, keys.UsageClientAuth)}},
		"RSA leaf, the reference's usual usages":   {spec: certificate.Spec{DNSNames: []string{"web.example"}, PrivateKey: rsa, Usages: us(keys.UsageDigitalSignature, keys.UsageKeyEncipherment, keys.UsageServerAuth)}},
		"Ed25519 leaf, client auth":                {spec: certificate.Spec{CommonName: "client", EmailAddresses: []string{"client@web.example"}, PrivateKey: ed, Usages: us(keys.UsageDigitalSignature, keys.UsageClientAuth)}},
		"RSA leaf, code signing":                   {spec: certificate.Spec{CommonName: "Build signer", PrivateKey: rsa, Usages: us(keys.UsageDigitalSignature, keys.UsageCodeSigning)}},
		"ECDSA leaf, email protection":             {spec: certificate.Spec{EmailAddresses: []string{"ops@web.example"}, PrivateKey: p256, Usages: us(keys.UsageDigitalSignature, keys.UsageEmailProtection)}},
		"a wildcard":                               {spec: certificate.Spec{DNSNames: []string{"*.web.example", "web.example"}, PrivateKey: p256}},
		"IP addresses only":                        {spec: certificate.Spec{IPAddresses: []string{"10.0.0.1", "2001:db8::1"}, PrivateKey: p256}},
		"an email address only":                    {spec: certificate.Spec{EmailAddresses: []string{"ops@web.example"}, PrivateKey: rsa}},
		"a SPIFFE URI only":                        {spec: certificate.Spec{URIs: []string{"spiffe://cluster.local/ns/app/sa/web"}, PrivateKey: p256, Usages: us(keys.UsageServerAuth, keys.UsageClientAuth)}},
		"a DNS name longer than a common name":     {spec: certificate.Spec{DNSNames: []string{long}, PrivateKey: p256}},
		"another name and a DNS name":              {spec: certificate.Spec{DNSNames: []string{"app.example"}, OtherNames: []keys.OtherName{{OID: "1.3.6.1.4.1.311.20.2.3", UTF8Value: "app@corp.example"}}, PrivateKey: p256}},
		"a full subject":                           {spec: certificate.Spec{CommonName: "web.example", DNSNames: []string{"web.example"}, Subject: fullSubject, PrivateKey: rsa}},
		"an organization of exactly 64":            {spec: certificate.Spec{DNSNames: []string{"web.example"}, Subject: &keys.Subject{Organizations: []string{strings.Repeat("o", 64)}}, PrivateKey: p256}},
		"a literal subject with domain components": {spec: certificate.Spec{LiteralSubject: "CN=app,OU=web,DC=corp,DC=example", DNSNames: []string{"app.corp.example"}, PrivateKey: p256}},
		"a short duration":                         {spec: certificate.Spec{DNSNames: []string{"web.example"}, PrivateKey: p256, Duration: &certificate.Duration{Duration: time.Hour}}},
		"RSA CA, no usages":                        {spec: certificate.Spec{CommonName: "sub CA", IsCA: true, PrivateKey: rsa}},
		"ECDSA CA, no usages":                      {spec: certificate.Spec{CommonName: "sub CA", IsCA: true, PrivateKey: p256}},
		"Ed25519 CA, no usages":                    {spec: certificate.Spec{CommonName: "sub CA", IsCA: true, PrivateKey: ed}},
		"ECDSA CA, cert sign":                      {spec: certificate.Spec{CommonName: "sub CA", IsCA: true, PrivateKey: p256, Usages: us(keys.UsageCertSign)}},
		"RSA CA, cert sign and CRL sign":           {spec: certificate.Spec{CommonName: "sub CA", IsCA: true, PrivateKey: rsa, Usages: us(keys.UsageCertSign, keys.UsageCRLSign)}},
		"a CA named by its DNS name only":          {spec: certificate.Spec{DNSNames: []string{"ca.example"}, IsCA: true, PrivateKey: p256}},
		"a CA with critical name constraints":      {spec: certificate.Spec{CommonName: "corp CA", IsCA: true, PrivateKey: p256, NameConstraints: corp}},
		"a CA with name constraints, not critical as asked": {spec: certificate.Spec{CommonName: "corp CA", IsCA: true, PrivateKey: p256,
			NameConstraints: &keys.NameConstraints{Excluded: &keys.NameConstraintItem{DNSDomains: []string{"secret.example"}}}},
			accepted: []string{"e_ext_name_constraints_not_critical"}},
		"under name constraints, names within them": {by: byConstrainedCA, spec: certificate.Spec{DNSNames: []string{"app.corp.example"}, IPAddresses: []string{"10.1.2.3"},
			EmailAddresses: []string{"ops@corp.example"}, URIs: []string{"spiffe://id.corp.example/app"}, PrivateKey: p256}},
		"under name constraints, an RSA leaf":  {by: byConstrainedCA, spec: certificate.Spec{DNSNames: []string{"db.corp.example"}, PrivateKey: rsa}},
		"self-signed RSA leaf":                 {by: selfSigned, spec: certificate.Spec{DNSNames: []string{"web.example"}, PrivateKey: rsa}},
		"self-signed ECDSA leaf":               {by: selfSigned, spec: certificate.Spec{DNSNames: []string{"web.example"}, PrivateKey: p256}},
		"self-signed Ed25519 leaf":             {by: selfSigned, spec: certificate.Spec{DNSNames: []string{"web.example"}, PrivateKey: ed}},
		"self-signed, IP address only":         {by: selfSigned, spec: certificate.Spec{IPAddresses: []string{"192.168.1.10"}, PrivateKey: p256}},
		"self-signed, email address only":      {by: selfSigned, spec: certificate.Spec{EmailAddresses: []string{"ops@web.example"}, PrivateKey: p256}},
		"self-signed, URI only":                {by: selfSigned, spec: certificate.Spec{URIs: []string{"spiffe://cluster.local/ns/app/sa/web"}, PrivateKey: ed}},
		"self-signed, a long DNS name only":    {by: selfSigned, spec: certificate.Spec{DNSNames: []string{long}, PrivateKey: rsa}},
		"self-signed RSA CA, no usages":        {by: selfSigned, spec: certificate.Spec{CommonName: "root CA", IsCA: true, PrivateKey: rsa}},
		"self-signed ECDSA CA, no usages":      {by: selfSigned, spec: certificate.Spec{CommonName: "root CA", IsCA: true, PrivateKey: p256}},
		"self-signed CA named by its DNS name": {by: selfSigned, spec: certificate.Spec{DNSNames: []string{"ca.example"}, IsCA: true, PrivateKey: ed}},
		"self-signed, a full subject":          {by: selfSigned, spec: certificate.Spec{CommonName: "web.example", DNSNames: []string{"web.example"}, Subject: fullSubject, PrivateKey: p256}},
	}

	root, err := localca.NewRoot(rand.Reader, "certlife test root", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, now.Add(-time.Hour), 5*365*24*time.Hour)
	require.NoError(t, err)
	assert.Empty(t, lintFindings(t, reg, root.Certificate().Raw), "NewRoot's own certificate")
	constrained, constrainedCert := constrainedCA(t, root, corp)
	assert.Empty(t, lintFindings(t, reg, constrainedCert.Raw), "the constrained CA's certificate")

	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			spec := tc.spec
			spec.SecretName, spec.IssuerRef = "web-tls", certificate.IssuerRef{Name: "ca"}
			require.NoError(t, certificate.Validate(&spec), "a valid spec")
			key, err := keys.Generate(rand.Reader, spec.KeySpec())
			require.NoError(t, err)
			csr, err := keys.BuildCSR(rand.Reader, spec.Template(), key)
			require.NoError(t, err)
			r := &certificate.CertificateRequest{ObjectMeta: certificate.ObjectMeta{Name: "web-1"},
				Spec: certificate.RequestSpec{Request: csr, IsCA: spec.IsCA, Usages: spec.Usages, Duration: spec.Duration}}
			at := now.Add(time.Minute)
			roots, inters := x509.NewCertPool(), x509.NewCertPool()
			switch tc.by {
			case byRoot:
				require.NoError(t, root.Issue(rand.Reader, r, at))
				roots.AddCert(root.Certificate())
			case byConstrainedCA:
				require.NoError(t, constrained.Issue(rand.Reader, r, at))
				roots.AddCert(root.Certificate())
				inters.AddCert(constrainedCert)
			case selfSigned:
				require.NoError(t, localca.SelfSign(rand.Reader, r, key, at))
			}
			require.Equal(t, certificate.StatusTrue, readyOf(r).Status, readyOf(r).Message)
			leaf := leafOf(t, r)
			if tc.by == selfSigned {
				roots.AddCert(leaf)
			}

			// crypto/x509: the chain verifies for every name.
			opts := x509.VerifyOptions{Roots: roots, Intermediates: inters, CurrentTime: at.Add(time.Minute), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}
			_, err = leaf.Verify(opts)
			require.NoError(t, err)
			for _, n := range leaf.DNSNames {
				assert.NoError(t, leaf.VerifyHostname(strings.Replace(n, "*", "x", 1)))
			}
			for _, ip := range leaf.IPAddresses {
				assert.NoError(t, leaf.VerifyHostname(ip.String()))
			}
			assert.Empty(t, keys.CompareCertificateNames(leaf, spec.Template()), "the certificate matches what was asked")
			assert.NotEmpty(t, leaf.RawIssuer, "an issuer")
			assert.NotEqual(t, []byte{0x30, 0}, leaf.RawIssuer, "an issuer that is not empty (RFC 5280 §4.1.2.4)")

			// RFC 5280 §4.2.1.2: a subject key identifier on every
			// certificate; §4.2.1.1: an authority key identifier, which a
			// self-signed certificate names its own key with.
			assert.NotEmpty(t, leaf.SubjectKeyId, "a subject key identifier")
			assert.NotEmpty(t, leaf.AuthorityKeyId, "an authority key identifier")
			if tc.by == selfSigned {
				assert.Equal(t, leaf.SubjectKeyId, leaf.AuthorityKeyId)
			} else {
				assert.NotEqual(t, leaf.SubjectKeyId, leaf.AuthorityKeyId)
			}
			// The default usages follow the key and CA-ness.
			if len(spec.Usages) == 0 {
				want, _, err := keys.X509Usages(nil, spec.IsCA, key.Public())
				require.NoError(t, err)
				assert.Equal(t, want, leaf.KeyUsage)
			}
			if leaf.PublicKeyAlgorithm != x509.RSA {
				assert.Zero(t, leaf.KeyUsage&(x509.KeyUsageKeyEncipherment|x509.KeyUsageDataEncipherment), "no key encipherment for a key that cannot encipher (RFC 8813 §3)")
			}

			findings := lintFindings(t, reg, leaf.Raw)
			findings = slices.DeleteFunc(findings, func(f string) bool {
				return slices.ContainsFunc(tc.accepted, func(a string) bool { return strings.HasPrefix(f, a+" ") })
			})
			assert.Empty(t, findings, "RFC lints")
		})
	}
}

var fullSubject = &keys.Subject{Organizations: []string{"Example AS"}, OrganizationalUnits: []string{"Platform"}, Countries: []string{"NO"},
	Localities: []string{"Oslo"}, Provinces: []string{"Oslo"}, StreetAddresses: []string{"Karl Johans gate 1"}, PostalCodes: []string{"0154"}, SerialNumber: "NO-123456789"}

// constrainedCA is a CA the root signs with name constraints nc, and its
// certificate.
func constrainedCA(t testing.TB, root *localca.CA, nc *keys.NameConstraints) (*localca.CA, *x509.Certificate) {
	t.Helper()
	r, key := request(t, keys.RequestTemplate{CommonName: "corp CA", IsCA: true, NameConstraints: nc}, nil)
	require.NoError(t, root.Issue(rand.Reader, r, now))
	require.Equal(t, certificate.StatusTrue, readyOf(r).Status, readyOf(r).Message)
	keyPEM, err := keys.EncodePrivateKey(key, keys.EncodingPKCS8)
	require.NoError(t, err)
	block, _ := pem.Decode(r.Status.Certificate)
	ca, err := localca.FromPEM(pem.EncodeToMemory(block), keyPEM)
	require.NoError(t, err)
	return ca, ca.Certificate()
}
