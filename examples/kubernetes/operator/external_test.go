package operator_test

import (
	"crypto/rand"
	"strings"
	"testing"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/localca"
	"github.com/certlife/certlife/keys"

	"github.com/certlife/certlife/examples/kubernetes/operator"
)

// externalGroup is the API group of an issuer the operator does not
// serve, played by the tests as cert-manager's external-issuer contract
// says such an issuer answers.
const externalGroup = "issuers.example.com"

// externalRequest waits for the request name of an external issuer and
// returns it as the API server has it.
func (h *harness) externalRequest(name string, approvedFirst bool) *cmapi.CertificateRequest {
	h.t.Helper()
	var req *cmapi.CertificateRequest
	h.eventually("request "+name, func() bool {
		for _, r := range h.requests() {
			if r.Name != name {
				continue
			}
			if a := condition(r.Status.Conditions, operator.ConditionApproved); approvedFirst && (a == nil || a.Status != cmmeta.ConditionTrue) {
				return false
			}
			req = &r
			return true
		}
		return false
	})
	return req
}

// A request for an issuer of another group is approved as the reference
// operator's approver approves it (reason cert-manager.io, its message),
// then left to that group's controller; each answer cert-manager's
// external-issuer contract allows, written in cert-manager's fields, is
// read by the Certificate as the reference operator reads it: Ready
// (reason Issued) with status.certificate and status.ca issues; Ready
// False reason Failed with status.failureTime, or InvalidRequest, fails
// the issuance (backoff); Ready False reason Pending keeps it waiting,
// saying why.
func TestExternalIssuerAnswers(t *testing.T) {
	h := newHarness(t)
	op := h.start()
	ca, err := localca.NewRoot(rand.Reader, "external CA", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, h.clock.Now().Add(-time.Hour), 24*time.Hour)
	require.NoError(t, err)

	type want struct {
		ready   cmmeta.ConditionStatus
		issuing string // the Issuing condition's reason; "" for the trigger's (still issuing)
		failed  bool
		message string
	}
	tests := map[string]struct {
		answer func(r *cmapi.CertificateRequest, now *metav1.Time)
		want   want
	}{
		"Issued, with status.certificate and status.ca": {
			answer: func(r *cmapi.CertificateRequest, now *metav1.Time) {
				core := operator.RequestToCore(r)
				require.NoError(t, ca.Issue(rand.Reader, core, now.Time))
				r.Status.Certificate, r.Status.CA = core.Status.Certificate, ca.CertificatePEM()
				r.Status.Conditions = append(r.Status.Conditions, cmapi.CertificateRequestCondition{Type: cmapi.CertificateRequestConditionReady,
					Status: cmmeta.ConditionTrue, Reason: cmapi.CertificateRequestReasonIssued, Message: "Certificate fetched from issuer successfully", LastTransitionTime: now})
			},
			want: want{ready: cmmeta.ConditionTrue},
		},
		"Failed, with status.failureTime": {
			answer: func(r *cmapi.CertificateRequest, now *metav1.Time) {
				r.Status.FailureTime = now
				r.Status.Conditions = append(r.Status.Conditions, cmapi.CertificateRequestCondition{Type: cmapi.CertificateRequestConditionReady,
					Status: cmmeta.ConditionFalse, Reason: cmapi.CertificateRequestReasonFailed, Message: "the vault is sealed", LastTransitionTime: now})
			},
			want: want{ready: cmmeta.ConditionFalse, issuing: certificate.ReasonFailed, failed: true, message: "the vault is sealed"},
		},
		"InvalidRequest, which the issuer can never sign": {
			answer: func(r *cmapi.CertificateRequest, now *metav1.Time) {
				r.Status.FailureTime = now
				r.Status.Conditions = append(r.Status.Conditions,
					cmapi.CertificateRequestCondition{Type: cmapi.CertificateRequestConditionInvalidRequest, Status: cmmeta.ConditionTrue,
						Reason: "BadDomain", Message: "this vault signs no .example names", LastTransitionTime: now},
					cmapi.CertificateRequestCondition{Type: cmapi.CertificateRequestConditionReady, Status: cmmeta.ConditionFalse,
						Reason: cmapi.CertificateRequestReasonFailed, Message: "this vault signs no .example names", LastTransitionTime: now})
			},
			want: want{ready: cmmeta.ConditionFalse, issuing: certificate.ReasonInvalidRequest, failed: true, message: "this vault signs no .example names"},
		},
		"Pending, still working": {
			answer: func(r *cmapi.CertificateRequest, now *metav1.Time) {
				r.Status.Conditions = append(r.Status.Conditions, cmapi.CertificateRequestCondition{Type: cmapi.CertificateRequestConditionReady,
					Status: cmmeta.ConditionFalse, Reason: cmapi.CertificateRequestReasonPending, Message: "waiting for a human to sign", LastTransitionTime: now})
			},
			want: want{ready: cmmeta.ConditionFalse, message: "waiting for a human to sign"},
		},
	}
	names := map[string]string{}
	i := 0
	for name := range tests {
		names[name] = "ext" + string(rune('a'+i))
		i++
		h.create(h.certificate(names[name], "vault", func(s *cmapi.CertificateSpec) {
			s.IssuerRef.Kind, s.IssuerRef.Group = "VaultIssuer", externalGroup
		}))
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			crtName := names[name]
			req := h.externalRequest(crtName+"-1", true)
			approved := condition(req.Status.Conditions, operator.ConditionApproved)
			assert.Equal(t, "cert-manager.io", approved.Reason, "the reference operator's approver's reason")
			assert.Equal(t, "Certificate request has been approved by cert-manager.io", approved.Message)
			assert.Len(t, req.Status.Conditions, 1, "approved, and left to its issuer")
			now := &metav1.Time{Time: h.clock.Now().Truncate(time.Second)}
			tc.answer(req, now)
			require.NoError(t, k8s.Status().Update(h.ctx, req))

			var crt *cmapi.Certificate
			h.eventually("the Certificate to read the answer", func() bool {
				crt = h.get(crtName)
				ready := condition(crt.Status.Conditions, certificate.ConditionReady)
				if tc.want.ready == cmmeta.ConditionTrue {
					return isReady(crt, 1)
				}
				issuing := condition(crt.Status.Conditions, certificate.ConditionIssuing)
				if ready == nil || issuing == nil {
					return false
				}
				if tc.want.issuing == "" {
					return strings.Contains(issuing.Message, tc.want.message)
				}
				return issuing.Reason == tc.want.issuing && (!tc.want.failed || crt.Status.LastFailureTime != nil)
			})
			if tc.want.ready == cmmeta.ConditionTrue {
				s, err := h.secret(crtName + "-tls")
				require.NoError(t, err)
				assert.Equal(t, string(ca.CertificatePEM()), string(s.Data["ca.crt"]), "ca.crt is status.ca")
				assert.Equal(t, string(req.Status.Certificate), string(s.Data[keys.SecretCertificate]), "tls.crt is status.certificate")
				assert.Equal(t, externalGroup, s.Annotations[cmapi.IssuerGroupAnnotationKey])
				assert.Equal(t, "VaultIssuer", s.Annotations[cmapi.IssuerKindAnnotationKey])
				return
			}
			issuing := condition(crt.Status.Conditions, certificate.ConditionIssuing)
			assert.Contains(t, issuing.Message, tc.want.message, "the issuer's words reach the Certificate")
			assert.Equal(t, tc.want.ready, condition(crt.Status.Conditions, certificate.ConditionReady).Status)
			if tc.want.failed {
				assert.Equal(t, cmmeta.ConditionFalse, issuing.Status, "the issuance is over")
				require.NotNil(t, crt.Status.FailedIssuanceAttempts)
				assert.Equal(t, 1, *crt.Status.FailedIssuanceAttempts)
				return
			}
			assert.Equal(t, cmmeta.ConditionTrue, issuing.Status, "the issuance goes on")
			assert.Nil(t, crt.Status.LastFailureTime, "not a failure")
		})
	}
	h.settle(op)
	ok, _ := op.writes.take()
	assert.Equal(t, len(tests), ok["update/status CertificateRequest"], "the operator wrote only the approvals of the external requests: %v", ok)
}

// With the operator's approver off (approver-policy decides), an
// external issuer's request waits for approval; one an approver denies
// (Denied True) fails the issuance as the reference operator reads it,
// and the operator writes nothing on the request.
func TestExternalRequestDenied(t *testing.T) {
	h := newHarness(t)
	op := h.start(func(_ *manager.Options, o *operator.Options) { o.DisableApprover = true })
	h.create(h.certificate("web", "vault", func(s *cmapi.CertificateSpec) { s.IssuerRef.Kind, s.IssuerRef.Group = "VaultIssuer", externalGroup }))
	req := h.externalRequest("web-1", false)
	h.settle(op)
	req = h.externalRequest("web-1", false)
	assert.Empty(t, req.Status.Conditions, "not approved: the approver is off")

	now := &metav1.Time{Time: h.clock.Now().Truncate(time.Second)}
	req.Status.Conditions = append(req.Status.Conditions, cmapi.CertificateRequestCondition{Type: cmapi.CertificateRequestConditionDenied,
		Status: cmmeta.ConditionTrue, Reason: "policy.cert-manager.io", Message: "no policy allows web.example", LastTransitionTime: now})
	require.NoError(t, k8s.Status().Update(h.ctx, req))
	var crt *cmapi.Certificate
	h.eventually("the denial in the Certificate's status", func() bool {
		crt = h.get("web")
		c := condition(crt.Status.Conditions, certificate.ConditionIssuing)
		return c != nil && c.Reason == certificate.ReasonDenied && crt.Status.LastFailureTime != nil
	})
	issuing := condition(crt.Status.Conditions, certificate.ConditionIssuing)
	assert.Equal(t, cmmeta.ConditionFalse, issuing.Status)
	assert.Contains(t, issuing.Message, "no policy allows web.example")
	assert.Equal(t, cmmeta.ConditionFalse, condition(crt.Status.Conditions, certificate.ConditionReady).Status)
	h.settle(op)
	ok, _ := op.writes.take()
	assert.Zero(t, ok["update/status CertificateRequest"], "the operator wrote nothing on the request: %v", ok)
}
