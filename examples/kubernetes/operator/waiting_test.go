package operator_test

import (
	"crypto/rand"
	"slices"
	"strings"
	"testing"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/localca"
	"github.com/certlife/certlife/keys"

	"github.com/certlife/certlife/examples/kubernetes/operator"
)

// A certificate whose issuer cannot sign yet says why where users look —
// the Issuing and Ready conditions (`kubectl describe certificate`) carry
// its request's reason, and a Warning Event IssuerNotReady says it — and
// nothing fails: the request stays Pending, no failed attempt is
// recorded, no backoff. Once the issuer is fixed, the same request is
// answered at its next recheck (localca.NotReadyRecheck), an hour before
// any backoff would have allowed it.
func TestIssuerNotReadyWaitsAndSaysWhy(t *testing.T) {
	tests := map[string]struct {
		// before makes the broken issuer, fix mends it.
		before, fix func(h *harness)
		// want begins what the request, Issuing, Ready and the Event
		// say.
		want func(h *harness) string
	}{
		"the CA Secret does not exist yet": {
			before: func(h *harness) { h.issuer("ca", "ca-ca") },
			fix:    func(h *harness) { h.caSecret("ca-ca") },
			want: func(h *harness) string {
				return "the issuer is not ready: the CA secret " + h.ns + "/ca-ca cannot be read: it does not exist"
			},
		},
		"the CA Secret holds a certificate that is not a CA": {
			before: func(h *harness) {
				h.notCASecret("ca-ca")
				h.issuer("ca", "ca-ca")
			},
			fix: func(h *harness) {
				require.NoError(h.t, k8s.Delete(h.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ca-ca", Namespace: h.ns}}))
				h.caSecret("ca-ca")
			},
			want: func(h *harness) string {
				return "the issuer is not ready: the CA secret " + h.ns + "/ca-ca does not hold a usable CA: localca: the certificate is not a CA: CN=leaf"
			},
		},
		"the Issuer does not exist yet": {
			before: func(*harness) {},
			fix:    func(h *harness) { h.caIssuer("ca") },
			want:   func(*harness) string { return "the issuer is not ready: Issuer ca does not exist" },
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			tc.before(h)
			op := h.start()
			h.create(h.certificate("web", "ca"))
			want := tc.want(h)

			h.eventually("the request Pending with the reason", func() bool {
				reqs := h.requests()
				if len(reqs) != 1 {
					return false
				}
				c := condition(reqs[0].Status.Conditions, certificate.RequestConditionReady)
				return c != nil && c.Status == cmmeta.ConditionFalse && c.Reason == certificate.RequestReasonPending && strings.HasPrefix(c.Message, want)
			})
			var crt *cmapi.Certificate
			h.eventually("Issuing and Ready to carry the request's reason", func() bool {
				crt = h.get("web")
				issuing := condition(crt.Status.Conditions, certificate.ConditionIssuing)
				ready := condition(crt.Status.Conditions, certificate.ConditionReady)
				return issuing != nil && strings.Contains(issuing.Message, want) && ready != nil && strings.Contains(ready.Message, want)
			})
			issuing := condition(crt.Status.Conditions, certificate.ConditionIssuing)
			assert.Equal(t, cmmeta.ConditionTrue, issuing.Status)
			assert.Equal(t, certificate.ReasonDoesNotExist, issuing.Reason, "why it is issued stays the reason")
			assert.True(t, strings.HasPrefix(issuing.Message, "secret web-tls does not exist; request web-1 is waiting for the issuer: "+want), "Issuing: %s", issuing.Message)
			ready := condition(crt.Status.Conditions, certificate.ConditionReady)
			assert.Equal(t, cmmeta.ConditionFalse, ready.Status)
			assert.Equal(t, certificate.ReasonDoesNotExist, ready.Reason)
			h.eventually("a Warning Event on the certificate saying why", func() bool {
				return slices.ContainsFunc(h.eventNotesOfType("web", corev1.EventTypeWarning, operator.ReasonIssuerNotReady), func(n string) bool {
					return strings.HasPrefix(n, "request web-1 is waiting: "+want)
				})
			})
			h.settle(op)
			crt = h.get("web")
			assert.Nil(t, crt.Status.FailedIssuanceAttempts, "no failed attempt")
			assert.Nil(t, crt.Status.LastFailureTime, "no failure, no backoff")

			tc.fix(h)
			h.clock.Step(localca.NotReadyRecheck) // the request's recheck
			crt = h.waitReady("web", 1)
			assert.Nil(t, crt.Status.FailedIssuanceAttempts, "issued with no failed attempt recorded")
			assert.Nil(t, crt.Status.LastFailureTime)
			assert.Equal(t, []string{"web-1"}, requestNames(h), "the request that waited is the one answered")
			h.eventually("the Issued Event, saying why it was issued", func() bool {
				return slices.Contains(h.eventNotes("web", certificate.ReasonIssued), issuedNote(crt))
			})
		})
	}
}

// A certificate whose issuerRef no controller serves (another API group,
// which this operator leaves to that group's issuer) says so on its
// Issuing and Ready conditions once certificate.Config.IssuerGrace has
// passed with no issuer touching the request, with a Warning Event
// IssuerNotAnswering; nothing fails, and an issuer that comes up late
// still answers the same request.
func TestIssuerRefNobodyServes(t *testing.T) {
	h := newHarness(t)
	const grace = 3 * time.Second
	h.start(func(_ *manager.Options, o *operator.Options) { o.Config.IssuerGrace = grace })
	h.create(h.certificate("web", "vault", func(s *cmapi.CertificateSpec) {
		s.IssuerRef.Group = "issuers.example.com"
	}))

	want := "no issuer has answered request web-1 for issuerRef "
	var crt *cmapi.Certificate
	h.eventually("Issuing to say that no issuer answers", func() bool {
		crt = h.get("web")
		c := condition(crt.Status.Conditions, certificate.ConditionIssuing)
		return c != nil && strings.Contains(c.Message, want)
	})
	issuing := condition(crt.Status.Conditions, certificate.ConditionIssuing)
	t.Logf("Issuing: %s: %s", issuing.Reason, issuing.Message)
	assert.Equal(t, cmmeta.ConditionTrue, issuing.Status)
	assert.Contains(t, issuing.Message, "issuers.example.com")
	assert.Contains(t, issuing.Message, "vault")
	assert.Contains(t, issuing.Message, "is an issuer for it running?")
	ready := condition(crt.Status.Conditions, certificate.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, cmmeta.ConditionFalse, ready.Status)
	assert.Contains(t, ready.Message, issuing.Message, "Ready says it too")
	reqs := h.requests()
	require.Len(t, reqs, 1)
	require.Len(t, reqs[0].Status.Conditions, 1, "the operator approves another group's request and leaves it to that group's issuer")
	assert.Equal(t, cmapi.CertificateRequestConditionApproved, reqs[0].Status.Conditions[0].Type)
	created := reqs[0].Annotations[certificate.AnnotationCreatedAt]
	require.NotEmpty(t, created)
	at, err := time.Parse(time.RFC3339Nano, created)
	require.NoError(t, err)
	assert.Contains(t, issuing.Message, "since "+at.UTC().Format(time.RFC3339)+":", "unanswered since the request was made")
	h.eventually("a Warning Event on the certificate saying so", func() bool {
		return slices.ContainsFunc(h.eventNotesOfType("web", corev1.EventTypeWarning, certificate.ReasonIssuerNotAnswering), func(n string) bool { return strings.Contains(n, want) })
	})
	assert.Nil(t, crt.Status.FailedIssuanceAttempts, "not a failure")
	assert.Nil(t, crt.Status.LastFailureTime)

	// The issuer comes up late, and answers the request that waited.
	ca, err := localca.NewRoot(rand.Reader, "vault", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, h.clock.Now().Add(-time.Hour), 24*time.Hour)
	require.NoError(t, err)
	req := &reqs[0]
	core := operator.RequestToCore(req)
	require.NoError(t, ca.Issue(rand.Reader, core, h.clock.Now()))
	operator.RequestStatusFromCore(req, core.Status)
	require.NoError(t, k8s.Status().Update(h.ctx, req))
	crt = h.waitReady("web", 1)
	assert.Nil(t, crt.Status.FailedIssuanceAttempts)
	h.eventually("the Issued Event, saying why it was issued", func() bool {
		return slices.Contains(h.eventNotes("web", certificate.ReasonIssued), issuedNote(crt))
	})
}

// issuedNote is the note of the Event of a first issuance because the
// Secret did not exist: why it was issued, not what the issuer said while
// the request waited.
func issuedNote(crt *cmapi.Certificate) string {
	return "issued revision 1 from request web-1, valid until " + crt.Status.NotAfter.UTC().Format(time.RFC3339) +
		"; issued because " + certificate.ReasonDoesNotExist + ": secret web-tls does not exist"
}

// issuer makes a CA Issuer signing with the Secret secretName, which the
// test makes (or not) itself.
func (h *harness) issuer(name, secretName string) {
	h.t.Helper()
	h.create(&cmapi.Issuer{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{CA: &cmapi.CAIssuer{SecretName: secretName}}}})
}

// notCASecret makes a Secret holding a leaf certificate and its key where
// a CA should be.
func (h *harness) notCASecret(name string) {
	h.t.Helper()
	root, err := localca.NewRoot(rand.Reader, "root", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, h.clock.Now().Add(-time.Hour), 24*time.Hour)
	require.NoError(h.t, err)
	leafKey, err := keys.Generate(rand.Reader, keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
	require.NoError(h.t, err)
	leafPEM, err := keys.EncodePrivateKey(leafKey, keys.EncodingPKCS8)
	require.NoError(h.t, err)
	csr, err := keys.BuildCSR(rand.Reader, keys.RequestTemplate{CommonName: "leaf"}, leafKey)
	require.NoError(h.t, err)
	cr := &certificate.CertificateRequest{ObjectMeta: certificate.ObjectMeta{Name: "leaf"}, Spec: certificate.RequestSpec{Request: csr}}
	require.NoError(h.t, root.Issue(rand.Reader, cr, h.clock.Now()))
	require.True(h.t, certificate.Answered(cr))
	h.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{
		keys.SecretCertificate: cr.Status.Certificate, keys.SecretPrivateKey: leafPEM}})
}
