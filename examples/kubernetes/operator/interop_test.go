package operator_test

import (
	"crypto"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/localca"
	"github.com/certlife/certlife/keys"

	"github.com/certlife/certlife/examples/kubernetes/operator"
)

// The tests in this file run certlife's operator beside code nobody here
// wrote: the reference operator's (cert-manager v1.21.2) own issuers and
// CA CertificateRequest controllers, started from its module
// (referenceCA). The operator leaves CA issuers to them
// (Options.DisabledIssuerTypes) and only approves the requests its
// Certificate controller makes, as the reference operator's approver
// does; the reference controller answers them through the
// cert-manager.io/v1 CertificateRequest contract every external issuer
// implements: the Approved condition before signing, then Ready True
// (Issued) with status.certificate and status.ca, or Ready False with
// reason Pending (still working) or Failed (final, with
// status.failureTime).

// leaveCA runs the operator with its CA issuer left to another
// controller.
func leaveCA(_ *manager.Options, o *operator.Options) {
	o.DisabledIssuerTypes = []string{"ca"}
}

// The reference CA controller's words, as cert-manager v1.21.2 writes
// them.
const (
	// The Issuer's Ready reason from its issuers controller (certlife's
	// says "Ready").
	referenceIssuerVerified = "KeyPairVerified"
	// The Ready message of a request it signed.
	referenceIssued = "Certificate fetched from issuer successfully"
	// The field manager of its status writes: its user agent's first word.
	referenceManager = "cert-manager-certificaterequests-issuer-ca"
)

// A Certificate through a CA Issuer that only the reference operator's CA
// controller answers goes Ready with a certificate the CA signed and a
// key that is the certificate's; certlife's operator approves the request
// and writes nothing else of its status. A renewal (Issuing=True set by
// hand, as `cmctl renew` does) gets a new revision, signed by the same
// controller.
func TestReferenceCAControllerSignsAndRenews(t *testing.T) {
	h := newHarness(t)
	ca := h.caIssuer("ca")
	h.referenceCA()
	op := h.start(leaveCA)
	h.eventually("the reference issuers controller to mark the Issuer Ready", func() bool {
		c := h.issuerCondition("ca")
		return c != nil && c.Status == cmmeta.ConditionTrue && c.Reason == referenceIssuerVerified
	})
	h.settle(op)
	ok, _ := op.writes.take()
	assert.Empty(t, ok, "the operator writes nothing to an Issuer it leaves to another controller")
	// The types it does not leave, it still serves.
	h.create(&cmapi.Issuer{ObjectMeta: metav1.ObjectMeta{Name: "self"}, Spec: cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{SelfSigned: &cmapi.SelfSignedIssuer{}}}})
	h.eventually("the operator to mark the selfSigned Issuer Ready", func() bool {
		c := h.issuerCondition("self")
		return c != nil && c.Status == cmmeta.ConditionTrue && c.Reason == operator.ReasonIssuerReady
	})
	h.settle(op)
	op.writes.take()

	h.create(h.certificate("web", "ca"))
	h.waitReady("web", 1)
	first := h.signedByReference("web-1", ca)
	h.settle(op)
	ok, failed := op.writes.take()
	t.Logf("the operator's writes for the first issuance: %v (failed: %v)", ok, failed)
	assert.Equal(t, 1, ok["update/status CertificateRequest"], "the operator's only write to the request's status is its approval")

	crt := h.get("web")
	crt.Status.Conditions = append(crt.Status.Conditions, cmapi.CertificateCondition{Type: cmapi.CertificateConditionIssuing, Status: cmmeta.ConditionTrue,
		Reason: certificate.ReasonManualTrigger, Message: "by hand", LastTransitionTime: &metav1.Time{Time: h.clock.Now()}})
	require.NoError(t, k8s.Status().Update(h.ctx, crt))
	h.waitReady("web", 2)
	second := h.signedByReference("web-2", ca)
	assert.NotEqual(t, first.SerialNumber, second.SerialNumber, "the renewal is a new certificate")
	assert.False(t, second.PublicKey.(interface{ Equal(crypto.PublicKey) bool }).Equal(first.PublicKey),
		"for a new key (rotationPolicy Always, the reference operator's default)")
	h.settle(op)
	ok, _ = op.writes.take()
	assert.Equal(t, 1, ok["update/status CertificateRequest"], "the operator's only write to the renewal request's status is its approval")
}

// When the reference CA controller cannot sign, it says so on the request
// as it does for its own operator, and certlife's Certificate carries its
// words: a request it leaves Pending (the Issuer not Ready: its CA Secret
// missing, or holding a certificate that is not a CA) waits with no
// failure and is signed once the Secret is fixed; a request it marks
// Failed (the CA Secret's key is not its certificate's, so signing
// fails) counts a failed attempt, the Certificate backs off 1h (certlife's
// default, as the reference operator's) and says until when, nothing is
// tried before then, and after it a new request for the same revision is
// signed.
func TestReferenceCAControllerFailures(t *testing.T) {
	for name, tc := range map[string]struct {
		// broken makes the CA Secret as broken as the case says (or not
		// at all).
		broken func(h *harness, secret string)
		// reason and message: the Ready condition the reference
		// controller gives the request (the message's beginning).
		reason, message string
	}{
		"the CA Secret does not exist: the request is Pending until it does": {
			broken: func(*harness, string) {},
			reason: cmapi.CertificateRequestReasonPending, message: "Referenced issuer does not have a Ready status condition",
		},
		"the CA Secret holds a certificate that is not a CA: the request is Pending until it holds one": {
			broken: (*harness).notCASecret,
			reason: cmapi.CertificateRequestReasonPending, message: "Referenced issuer does not have a Ready status condition",
		},
		"the CA Secret holds another CA's key: the request Failed, the certificate backs off": {
			broken: (*harness).mismatchedCASecret,
			reason: cmapi.CertificateRequestReasonFailed, message: "Error signing certificate: ",
		},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			tc.broken(h, "ca-secret")
			h.issuer("ca", "ca-secret")
			h.referenceCA()
			op := h.start(leaveCA)
			h.create(h.certificate("web", "ca"))

			var req *cmapi.CertificateRequest
			h.eventually("the reference controller's answer on the request", func() bool {
				req = &cmapi.CertificateRequest{}
				if k8s.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "web-1"}, req) != nil {
					return false
				}
				c := condition(req.Status.Conditions, certificate.RequestConditionReady)
				return c != nil && c.Reason == tc.reason
			})
			ready := condition(req.Status.Conditions, certificate.RequestConditionReady)
			t.Logf("request web-1: Ready %s %s: %s", ready.Status, ready.Reason, ready.Message)
			assert.Equal(t, cmmeta.ConditionFalse, ready.Status)
			assert.True(t, strings.HasPrefix(ready.Message, tc.message), "the reference controller's message: %s", ready.Message)
			assertApprovedByOperator(t, req)
			first := req.UID

			if tc.reason == cmapi.CertificateRequestReasonPending {
				var crt *cmapi.Certificate
				h.eventually("Issuing to quote the request's reason", func() bool {
					crt = h.get("web")
					c := condition(crt.Status.Conditions, certificate.ConditionIssuing)
					return c != nil && strings.Contains(c.Message, "request web-1 is waiting for the issuer: "+ready.Message)
				})
				issuing := condition(crt.Status.Conditions, certificate.ConditionIssuing)
				assert.Equal(t, cmmeta.ConditionTrue, issuing.Status, "still issuing")
				notReady := condition(crt.Status.Conditions, certificate.ConditionReady)
				require.NotNil(t, notReady)
				assert.Equal(t, cmmeta.ConditionFalse, notReady.Status)
				assert.Contains(t, notReady.Message, ready.Message, "Ready says it too")
				assert.Nil(t, crt.Status.FailedIssuanceAttempts, "waiting is not a failure")
				assert.Nil(t, crt.Status.LastFailureTime)

				ca := h.putCASecret("ca-secret")
				crt = h.waitReady("web", 1)
				assert.Nil(t, crt.Status.FailedIssuanceAttempts)
				assert.Equal(t, first, h.signedByReference("web-1", ca).requestUID, "the request that waited is the one signed")
				return
			}

			var crt *cmapi.Certificate
			h.eventually("the failure in status, the issuance over", func() bool {
				crt = h.get("web")
				return crt.Status.LastFailureTime != nil && crt.Status.NextPrivateKeySecretName == nil
			})
			issuing := condition(crt.Status.Conditions, certificate.ConditionIssuing)
			require.NotNil(t, issuing)
			t.Logf("Issuing %s %s: %s", issuing.Status, issuing.Reason, issuing.Message)
			assert.Equal(t, cmmeta.ConditionFalse, issuing.Status)
			assert.Equal(t, certificate.ReasonFailed, issuing.Reason)
			assert.Contains(t, issuing.Message, ready.Message, "the reference controller's words")
			require.NotNil(t, crt.Status.FailedIssuanceAttempts)
			assert.Equal(t, 1, *crt.Status.FailedIssuanceAttempts)
			require.NotNil(t, req.Status.FailureTime, "the reference controller sets failureTime on a Failed request")
			assert.WithinDuration(t, req.Status.FailureTime.Time, crt.Status.LastFailureTime.Time, time.Second, "the failure is the request's")
			next := crt.Status.LastFailureTime.Add(time.Hour)
			assert.Contains(t, issuing.Message, "next attempt at "+next.UTC().Format(time.RFC3339))
			notReady := condition(crt.Status.Conditions, certificate.ConditionReady)
			require.NotNil(t, notReady)
			assert.Equal(t, cmmeta.ConditionFalse, notReady.Status)

			// Fixed; nothing is tried before the backoff ends.
			ca := h.putCASecret("ca-secret")
			h.clock.SetTime(next.Add(-time.Minute))
			h.settle(op)
			assert.Equal(t, first, h.request("web-1").UID, "no new attempt during the backoff")
			assert.Nil(t, h.get("web").Status.Revision)

			h.clock.SetTime(next.Add(time.Second))
			crt = h.waitReady("web", 1)
			assert.Nil(t, crt.Status.LastFailureTime, "the failure is cleared")
			assert.Nil(t, crt.Status.FailedIssuanceAttempts)
			assert.NotEqual(t, first, h.signedByReference("web-1", ca).requestUID, "a new request for the same revision")
		})
	}
}

// signed is a certificate the reference controller signed.
type signed struct {
	*x509.Certificate
	requestUID types.UID
}

// signedByReference checks that the request name was signed by the
// reference CA controller — its Ready condition and status written by
// that controller's field manager — and that the certificate's Secret
// holds what it signed: a leaf whose key is tls.key, chaining to ca,
// with ca.crt the CA.
func (h *harness) signedByReference(name string, ca *localca.CA) signed {
	h.t.Helper()
	t := h.t
	req := h.request(name)
	ready := condition(req.Status.Conditions, certificate.RequestConditionReady)
	require.NotNil(t, ready, "request %s is answered", name)
	assert.Equal(t, cmmeta.ConditionTrue, ready.Status)
	assert.Equal(t, cmapi.CertificateRequestReasonIssued, ready.Reason)
	assert.Equal(t, referenceIssued, ready.Message, "the reference controller's words")
	assertApprovedByOperator(t, req)
	var managers []string
	for _, f := range req.ManagedFields {
		if f.Subresource == "status" {
			managers = append(managers, f.Manager)
		}
	}
	assert.Contains(t, managers, referenceManager, "the reference controller wrote the request's status")

	secret := strings.TrimSuffix(name, name[strings.LastIndex(name, "-"):]) + "-tls"
	s, err := h.secret(secret)
	require.NoError(t, err)
	pair, err := tls.X509KeyPair(s.Data[keys.SecretCertificate], s.Data[keys.SecretPrivateKey])
	require.NoError(t, err, "tls.key is the key of tls.crt")
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	require.NoError(t, err)
	issued, _ := pem.Decode(req.Status.Certificate)
	require.NotNil(t, issued)
	assert.Equal(t, issued.Bytes, leaf.Raw, "the Secret holds the certificate the request was answered with")
	roots := x509.NewCertPool()
	roots.AddCert(ca.Certificate())
	_, err = leaf.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: time.Now()})
	assert.NoError(t, err, "the certificate chains to the CA")
	block, _ := pem.Decode(s.Data[keys.SecretCA])
	require.NotNil(t, block)
	assert.Equal(t, ca.Certificate().Raw, block.Bytes, "ca.crt is the CA (the request's status.ca)")
	return signed{Certificate: leaf, requestUID: req.UID}
}

// assertApprovedByOperator checks that the operator's approver approved
// the request, as the reference operator's approver words it.
func assertApprovedByOperator(t testing.TB, req *cmapi.CertificateRequest) {
	t.Helper()
	a := condition(req.Status.Conditions, operator.ConditionApproved)
	require.NotNil(t, a, "request %s is approved", req.Name)
	assert.Equal(t, cmmeta.ConditionTrue, a.Status)
	assert.Equal(t, operator.ReasonApproved, a.Reason)
	assert.Equal(t, operator.MessageApproved, a.Message)
}

// request reads the CertificateRequest name.
func (h *harness) request(name string) *cmapi.CertificateRequest {
	h.t.Helper()
	var r cmapi.CertificateRequest
	require.NoError(h.t, k8s.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: name}, &r))
	return &r
}

// issuerCondition is the Ready condition of the Issuer name, nil if it
// has none.
func (h *harness) issuerCondition(name string) *cmapi.IssuerCondition {
	var iss cmapi.Issuer
	if err := k8s.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: name}, &iss); err != nil {
		return nil
	}
	return condition(iss.Status.Conditions, string(cmapi.IssuerConditionReady))
}

// mismatchedCASecret makes a Secret holding a CA certificate and the key
// of another CA.
func (h *harness) mismatchedCASecret(name string) {
	h.t.Helper()
	var roots [2]*localca.CA
	for i := range roots {
		ca, err := localca.NewRoot(rand.Reader, "test CA "+name, keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, h.clock.Now().Add(-time.Hour), 24*time.Hour)
		require.NoError(h.t, err)
		roots[i] = ca
	}
	keyPEM, err := roots[1].KeyPEM()
	require.NoError(h.t, err)
	h.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{keys.SecretCertificate: roots[0].CertificatePEM(), keys.SecretPrivateKey: keyPEM}})
}

// putCASecret makes the Secret name hold a new CA key pair, whether it
// exists or not.
func (h *harness) putCASecret(name string) *localca.CA {
	h.t.Helper()
	err := k8s.Delete(h.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns}})
	if !apierrors.IsNotFound(err) {
		require.NoError(h.t, err)
	}
	return h.caSecret(name)
}

// The issuer types the operator can leave to another controller are the
// ones it serves, named as the reference operator names them; any other
// name is refused, naming the option and the value.
func TestDisabledIssuerTypes(t *testing.T) {
	apiServer(t)
	for name, tc := range map[string]struct {
		types []string
		err   string
	}{
		"every type it serves may be left":     {types: []string{"ca", "selfsigned", "acme"}},
		"none left is the default":             {},
		"a type it does not serve is refused":  {types: []string{"ca", "vault"}, err: `options.disabledIssuerTypes: "vault" is not an issuer type`},
		"the spec field's spelling is refused": {types: []string{"selfSigned"}, err: `options.disabledIssuerTypes: "selfSigned" is not an issuer type`},
		"an empty name is refused":             {types: []string{""}, err: `options.disabledIssuerTypes: "" is not an issuer type`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := operator.NewManager(restConfig, manager.Options{Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
				Controller: config.Controller{SkipNameValidation: new(true)}}, operator.Options{DisabledIssuerTypes: tc.types})
			if tc.err == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}
