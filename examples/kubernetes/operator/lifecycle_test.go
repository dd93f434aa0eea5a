package operator_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/keys"

	"github.com/certlife/certlife/examples/kubernetes/api/v1alpha1"
	"github.com/certlife/certlife/examples/kubernetes/operator"
)

// A Certificate from a CA Issuer becomes Ready with a real Secret whose
// key is the certificate's, signed by the CA; the writes it took are the
// ones counted, per first issuance and per renewal.
func TestCAIssuerFirstIssuanceAndRenewal(t *testing.T) {
	h := newHarness(t)
	ca := h.caIssuer("ca")
	op := h.start()
	h.eventually("the issuer to be Ready", func() bool {
		var iss v1alpha1.Issuer
		if err := k8s.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "ca"}, &iss); err != nil {
			return false
		}
		c := condition(iss.Status.Conditions, "Ready")
		return c != nil && c.Status == metav1.ConditionTrue
	})
	h.settle(op)
	op.writes.take()

	h.create(h.certificate("web", "ca"))
	crt := h.waitReady("web", 1)
	h.settle(op)
	first, failed := op.writes.take()
	t.Logf("writes for the first issuance: %v (failed: %v)", first, failed)

	s, err := h.secret("web-tls")
	require.NoError(t, err)
	assert.Equal(t, corev1.SecretTypeTLS, s.Type)
	assert.Equal(t, "true", s.Labels[operator.LabelManaged], "the target secret carries the managed label")
	require.Len(t, s.OwnerReferences, 1)
	assert.Equal(t, crt.UID, s.OwnerReferences[0].UID, "the certificate owns its secret")
	pair, err := tls.X509KeyPair(s.Data[keys.SecretCertificate], s.Data[keys.SecretPrivateKey])
	require.NoError(t, err, "tls.key is the key of tls.crt")
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	require.NoError(t, err)
	assert.Equal(t, []string{"web.example"}, leaf.DNSNames)
	roots := x509.NewCertPool()
	roots.AddCert(ca.Certificate())
	_, err = leaf.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: h.clock.Now()})
	assert.NoError(t, err, "the certificate chains to the CA")
	block, _ := pem.Decode(s.Data[keys.SecretCA])
	require.NotNil(t, block)
	assert.Equal(t, ca.Certificate().Raw, block.Bytes, "ca.crt is the CA")
	assert.Equal(t, "web.example", s.Annotations[certificate.AnnotationAltNames])

	reqs := h.requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "web-1", reqs[0].Name)
	assert.Equal(t, "1", reqs[0].Annotations[certificate.AnnotationRevision])
	var nextKeys corev1.SecretList
	require.NoError(t, k8s.List(h.ctx, &nextKeys, client.InNamespace(h.ns), client.MatchingLabels{certificate.LabelNextPrivateKey: "true"}))
	assert.Empty(t, nextKeys.Items, "the next private key is deleted after issuance")

	// The minimum the design needs: the next key made (1), Issuing and
	// its name recorded (1), the request made (1) and answered (1), the
	// secret written (1), the revision recorded (1), the next key deleted
	// (1). certlife clears status.nextPrivateKeySecretName in the pass
	// after the key is gone: one status write more.
	assert.Empty(t, cmp.Diff(map[string]int{
		"create Secret":                    2,
		"delete Secret":                    1,
		"create CertificateRequest":        1,
		"update/status CertificateRequest": 1,
		"update/status Certificate":        3,
	}, first), "writes for a first issuance (-want +got)")

	// Renewal: at two thirds of the lifetime (the default), on the fake
	// clock the work queue measures RequeueAfter with.
	renewAt := crt.Status.RenewalTime.Time
	h.clock.SetTime(renewAt.Add(time.Second))
	crt = h.waitReady("web", 2)
	h.settle(op)
	renewal, failed := op.writes.take()
	t.Logf("writes for a renewal: %v (failed: %v)", renewal, failed)
	assert.Empty(t, cmp.Diff(map[string]int{
		"create Secret":                    1,
		"update Secret":                    1,
		"delete Secret":                    1,
		"create CertificateRequest":        1,
		"delete CertificateRequest":        1,
		"update/status CertificateRequest": 1,
		"update/status Certificate":        3,
	}, renewal), "writes for a renewal (-want +got)")
	reqs = h.requests()
	require.Len(t, reqs, 1, "the revision history keeps one request")
	assert.Equal(t, "web-2", reqs[0].Name)
	s2, err := h.secret("web-tls")
	require.NoError(t, err)
	assert.NotEqual(t, s.Data[keys.SecretPrivateKey], s2.Data[keys.SecretPrivateKey], "the key rotates on renewal")
	assert.True(t, crt.Status.NotBefore.After(renewAt.Add(-time.Second)), "the renewed certificate starts at the renewal")
}

var (
	_ = apierrors.IsNotFound
	_ = time.Second
)
