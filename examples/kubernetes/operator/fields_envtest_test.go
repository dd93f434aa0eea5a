package operator_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/asn1"
	"testing"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/keys"
)

// A Certificate written for the reference operator with a literal
// subject and other names, from a CA Issuer that publishes CRL
// distribution points, OCSP servers and issuing-certificate URLs, is
// issued with each of them: the subject encoded as written and in the
// order written, the other name in the subject alternative names (RFC
// 5280 §4.2.1.6), the CRL distribution points (§4.2.1.13) and the
// authority information access (§4.2.2.1) as the issuer says.
func TestCertManagerFieldsReachTheCertificate(t *testing.T) {
	const (
		literal = "CN=web,OU=ops+OU=web,O=Example,C=NO"
		upn     = "1.3.6.1.4.1.311.20.2.3"
	)
	h := newHarness(t)
	h.caSecret("ca-ca")
	h.create(&cmapi.Issuer{ObjectMeta: metav1.ObjectMeta{Name: "ca"}, Spec: cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{CA: &cmapi.CAIssuer{
		SecretName:             "ca-ca",
		CRLDistributionPoints:  []string{"http://crl.example/ca.crl"},
		OCSPServers:            []string{"http://ocsp.example"},
		IssuingCertificateURLs: []string{"http://ca.example/ca.crt"},
	}}}})
	h.start()
	h.create(h.certificate("web", "ca", func(s *cmapi.CertificateSpec) {
		s.LiteralSubject = literal
		s.OtherNames = []cmapi.OtherName{{OID: upn, UTF8Value: "web@corp.example"}}
	}))
	h.waitReady("web", 1)

	leaf := h.leafOf("web-tls")
	rdns, err := keys.ParseLiteralSubject(literal)
	require.NoError(t, err)
	want, err := asn1.Marshal(rdns)
	require.NoError(t, err)
	assert.Equal(t, want, leaf.RawSubject, "the subject is the literal subject, as written")
	assert.Equal(t, "web", leaf.Subject.CommonName)
	assert.Equal(t, []string{"web.example"}, leaf.DNSNames)
	assert.Equal(t, map[string]string{upn: "web@corp.example"}, otherNames(t, leaf))
	assert.Equal(t, []string{"http://crl.example/ca.crl"}, leaf.CRLDistributionPoints)
	assert.Equal(t, []string{"http://ocsp.example"}, leaf.OCSPServer)
	assert.Equal(t, []string{"http://ca.example/ca.crt"}, leaf.IssuingCertificateURL)
}

// otherNames reads the otherName entries (OID → UTF8String value) of a
// certificate's subject alternative names (RFC 5280 §4.2.1.6:
// otherName [0] { type-id OID, value [0] EXPLICIT ANY }).
func otherNames(t *testing.T, c *x509.Certificate) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, ext := range c.Extensions {
		if !ext.Id.Equal(asn1.ObjectIdentifier{2, 5, 29, 17}) {
			continue
		}
		var names []asn1.RawValue
		_, err := asn1.Unmarshal(ext.Value, &names)
		require.NoError(t, err)
		for _, n := range names {
			if n.Class != asn1.ClassContextSpecific || n.Tag != 0 {
				continue
			}
			var on struct {
				ID    asn1.ObjectIdentifier
				Value asn1.RawValue `asn1:"explicit,tag:0"`
			}
			_, err := asn1.UnmarshalWithParams(n.FullBytes, &on, "tag:0")
			require.NoError(t, err)
			var v string
			_, err = asn1.UnmarshalWithParams(on.Value.Bytes, &v, "utf8")
			require.NoError(t, err)
			out[on.ID.String()] = v
		}
	}
	return out
}

// With the reference operator's annotation
// cert-manager.io/issue-temporary-certificate: "true", a Certificate
// whose issuer cannot sign yet gets a temporary certificate in its Secret
// for the next private key, signed by no CA it names, and is not Ready
// meanwhile; once the issuer can sign, the issued certificate replaces it
// for the same key, and the Certificate is Ready.
func TestTemporaryCertificateWhileTheIssuerWaits(t *testing.T) {
	h := newHarness(t)
	h.issuer("ca", "ca-ca") // its CA Secret comes later
	h.start()
	crt := h.certificate("web", "ca")
	crt.Annotations = map[string]string{cmapi.IssueTemporaryCertificateAnnotation: "true"}
	h.create(crt)

	var tmp *x509.Certificate
	var tmpKey []byte
	h.eventually("a temporary certificate in the Secret", func() bool {
		s, err := h.secret("web-tls")
		if err != nil || len(s.Data[keys.SecretCertificate]) == 0 {
			return false
		}
		pair, err := tls.X509KeyPair(s.Data[keys.SecretCertificate], s.Data[keys.SecretPrivateKey])
		require.NoError(t, err, "tls.key is the key of the temporary tls.crt")
		tmp, err = x509.ParseCertificate(pair.Certificate[0])
		require.NoError(t, err)
		tmpKey = s.Data[keys.SecretPrivateKey]
		return true
	})
	assert.True(t, keys.IsTemporaryCertificate(tmp), "a temporary certificate: %s", tmp.Issuer)
	assert.Equal(t, []string{"web.example"}, tmp.DNSNames)
	c := h.get("web")
	ready := condition(c.Status.Conditions, certificate.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, cmmeta.ConditionFalse, ready.Status, "not Ready on a temporary certificate: %s", ready.Message)
	issuing := condition(c.Status.Conditions, certificate.ConditionIssuing)
	require.NotNil(t, issuing)
	assert.Equal(t, cmmeta.ConditionTrue, issuing.Status, "the issuance goes on")

	ca := h.caSecret("ca-ca")
	h.waitReady("web", 1)
	leaf := h.leafOf("web-tls")
	assert.False(t, keys.IsTemporaryCertificate(leaf))
	assert.Equal(t, ca.Certificate().Subject.String(), leaf.Issuer.String(), "issued by the CA")
	assert.Equal(t, tmp.PublicKey, leaf.PublicKey, "for the key of the temporary certificate")
	s, err := h.secret("web-tls")
	require.NoError(t, err)
	assert.Equal(t, tmpKey, s.Data[keys.SecretPrivateKey], "the key was not rewritten")
}
