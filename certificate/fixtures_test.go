package certificate

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/certlife/certlife/keys"
	"github.com/stretchr/testify/require"
)

var (
	t0     = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	serial atomic.Int64
)

// fixture is a self-contained CA and key pair factory for tests.
type fixture struct {
	t      testing.TB
	caCert *x509.Certificate
	caKey  *ecdsa.PrivateKey
	caPEM  []byte
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: t0.AddDate(-1, 0, 0), NotAfter: t0.AddDate(10, 0, 0),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	require.NoError(t, err)
	cert, _ := x509.ParseCertificate(der)
	return &fixture{t: t, caCert: cert, caKey: key, caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

func (f *fixture) key(spec keys.KeySpec) crypto.Signer {
	f.t.Helper()
	k, err := keys.Generate(rand.Reader, spec)
	require.NoError(f.t, err)
	return k
}

// sign issues a leaf for the template's names and pub, valid nb..na.
func (f *fixture) sign(pub crypto.PublicKey, tmpl keys.RequestTemplate, nb, na time.Time) []byte {
	f.t.Helper()
	c := &x509.Certificate{
		SerialNumber: big.NewInt(serial.Add(1) + 100), Subject: pkix.Name{CommonName: tmpl.CommonName},
		DNSNames: tmpl.DNSNames, NotBefore: nb, NotAfter: na,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, c, f.caCert, pub, f.caKey)
	require.NoError(f.t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func (f *fixture) csr(key crypto.Signer, tmpl keys.RequestTemplate) []byte {
	f.t.Helper()
	b, err := keys.BuildCSR(rand.Reader, tmpl, key)
	require.NoError(f.t, err)
	return b
}

func testCertificate() *Certificate {
	return &Certificate{
		ObjectMeta: ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web", Generation: 1, CreationTimestamp: t0.AddDate(0, -1, 0)},
		Spec: Spec{
			SecretName: "web-tls", CommonName: "web.example", DNSNames: []string{"web.example", "www.web.example"},
			IssuerRef:  IssuerRef{Name: "ca"},
			PrivateKey: &keys.KeySpec{Algorithm: keys.AlgorithmECDSA},
		},
	}
}

// healthy returns a snapshot of a certificate issued at revision 1 from a
// matching request, valid for 90 days from issuedAt.
func (f *fixture) healthy(issuedAt time.Time) (*Snapshot, crypto.Signer) {
	return f.healthyKey(issuedAt, *testCertificate().Spec.PrivateKey)
}

// healthyKey is healthy for a certificate whose private key is of spec.
func (f *fixture) healthyKey(issuedAt time.Time, spec keys.KeySpec) (*Snapshot, crypto.Signer) {
	c := testCertificate()
	c.Spec.PrivateKey = &spec
	key := f.key(*c.Spec.PrivateKey)
	tmpl := c.Spec.Template()
	chain := f.sign(key.Public(), tmpl, issuedAt, issuedAt.Add(90*24*time.Hour))
	keyPEM, _ := keys.EncodePrivateKey(key, keys.EncodingPKCS1)
	rev := 1
	c.Status.Revision = &rev
	c.Status.Conditions = []Condition{{Type: ConditionReady, Status: StatusTrue, Reason: "Ready", LastTransitionTime: issuedAt}}
	leaf, err := firstCertificate(chain)
	require.NoError(f.t, err)
	labels, annotations := secretMetadata(c, leaf)
	secret := &Secret{
		ObjectMeta: ObjectMeta{Name: "web-tls", Namespace: "default", ResourceVersion: "7", Labels: labels, Annotations: annotations},
		Data:       map[string][]byte{keys.SecretCertificate: chain, keys.SecretPrivateKey: keyPEM, keys.SecretCA: f.caPEM},
	}
	req := f.request(c, 1, key)
	req.Status.Certificate, req.Status.CA = chain, f.caPEM
	req.Status.Conditions = []Condition{{Type: RequestConditionReady, Status: StatusTrue, Reason: RequestReasonIssued}}
	return &Snapshot{Certificate: c, Secret: secret, Requests: []*CertificateRequest{req}}, key
}

func (f *fixture) request(c *Certificate, revision int, key crypto.Signer) *CertificateRequest {
	return &CertificateRequest{
		ObjectMeta: ObjectMeta{Name: RequestName(c.Name, revision), Namespace: c.Namespace, OwnerUID: c.UID,
			Annotations: map[string]string{AnnotationRevision: strconv.Itoa(revision), AnnotationCertificateName: c.Name}},
		Spec: RequestSpec{Request: f.csr(key, c.Spec.Template()), IssuerRef: c.Spec.IssuerRef, Duration: c.Spec.Duration, IsCA: c.Spec.IsCA, Usages: c.Spec.Usages},
	}
}

func ptr[T any](v T) *T { return &v }
