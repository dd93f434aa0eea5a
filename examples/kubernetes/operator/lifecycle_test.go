package operator_test

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"slices"
	"strings"
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
	"github.com/certlife/certlife/certificate/localca"
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
	assert.Equal(t, float64(crt.Status.NotAfter.Unix()), op.metric("certlife_certificate_expiration_timestamp_seconds", h.ns, "web"))
	assert.Equal(t, float64(crt.Status.RenewalTime.Unix()), op.metric("certlife_certificate_renewal_timestamp_seconds", h.ns, "web"))
	assert.Equal(t, float64(1), op.metric("certlife_certificate_ready_status", h.ns, "web", "True"))
	assert.Equal(t, float64(0), op.metric("certlife_certificate_ready_status", h.ns, "web", "False"))
	assert.Equal(t, float64(1), op.metric("certlife_certificate_issuances_total", h.ns, "Issuer", "ca"))

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

// Deleting a Ready certificate's Secret right after its issuance
// re-issues it at once: the cache misses the Secret, the API server
// confirms it is gone (certificate.Snapshot.SecretAbsenceConfirmed), so
// certlife's cache grace (5 minutes after the request) does not hold it
// back. From the deletion on, the certificate is never Ready=True until
// revision 2: Ready says DoesNotExist, and the Event says why it was
// issued again.
func TestSecretDeletedReissuesAtOnce(t *testing.T) {
	h := newHarness(t)
	h.caIssuer("ca")
	op := h.start()
	h.create(h.certificate("web", "ca"))
	h.waitReady("web", 1)
	h.settle(op)

	versions := h.watchCertificate("web")
	s, err := h.secret("web-tls")
	require.NoError(t, err)
	require.NoError(t, k8s.Delete(h.ctx, s))
	crt := h.waitReady("web", 2) // within a minute: no cache grace
	s2, err := h.secret("web-tls")
	require.NoError(t, err)
	assert.NotEqual(t, s.UID, s2.UID, "a new secret")
	_, err = tls.X509KeyPair(s2.Data[keys.SecretCertificate], s2.Data[keys.SecretPrivateKey])
	assert.NoError(t, err)
	assert.Equal(t, crt.UID, s2.OwnerReferences[0].UID)

	h.eventually("the watch to reach revision 2", func() bool {
		return slices.ContainsFunc(versions(), func(v v1alpha1.Certificate) bool {
			return v.Status.Revision != nil && *v.Status.Revision == 2
		})
	})
	missing := 0
	for _, v := range versions() {
		if v.Status.Revision == nil || *v.Status.Revision != 1 {
			continue
		}
		missing++
		ready := condition(v.Status.Conditions, certificate.ConditionReady)
		require.NotNil(t, ready)
		assert.Equal(t, metav1.ConditionFalse, ready.Status, "not Ready while the secret is missing (resourceVersion %s)", v.ResourceVersion)
		assert.Equal(t, certificate.ReasonDoesNotExist, ready.Reason)
		assert.Contains(t, ready.Message, "secret web-tls does not exist")
	}
	assert.Positive(t, missing, "the status said the secret was missing before revision 2")
	h.eventually("an Event saying why it re-issued", func() bool {
		return slices.ContainsFunc(h.eventNotes("web", certificate.ReasonIssued), func(n string) bool {
			return strings.Contains(n, "issued revision 2") && strings.Contains(n, "issued because DoesNotExist: secret web-tls does not exist")
		})
	})
}

// Changing the spec re-issues with a new revision and a new request.
func TestSpecChangeReissues(t *testing.T) {
	h := newHarness(t)
	h.caIssuer("ca")
	h.start()
	h.create(h.certificate("web", "ca"))
	h.waitReady("web", 1)

	crt := h.get("web")
	crt.Spec.DNSNames = []string{"web.example", "www.example"}
	require.NoError(t, k8s.Update(h.ctx, crt))
	h.waitReady("web", 2)

	s, err := h.secret("web-tls")
	require.NoError(t, err)
	pair, err := tls.X509KeyPair(s.Data[keys.SecretCertificate], s.Data[keys.SecretPrivateKey])
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	require.NoError(t, err)
	assert.Equal(t, []string{"web.example", "www.example"}, leaf.DNSNames)
	names := []string{}
	for _, r := range h.requests() {
		names = append(names, r.Name)
	}
	assert.Equal(t, []string{"web-2"}, names, "revision 2's request; revision 1's is beyond the history limit")
	h.eventually("an Event saying why it re-issued", func() bool {
		return slices.ContainsFunc(h.eventNotes("web", certificate.ReasonIssued), func(n string) bool {
			return strings.Contains(n, "issued revision 2") && strings.Contains(n, "issued because "+certificate.ReasonRequestChanged)
		})
	})
}

// A failing issuer fails the request; the certificate backs off and its
// status says until when; fixed, it issues once the backoff has passed,
// not before. The issuer is an external one (another API group), played
// by the test through the issuer contract, as any external issuer answers.
func TestFailingIssuerBacksOff(t *testing.T) {
	h := newHarness(t)
	op := h.start()
	h.create(h.certificate("web", "vault", func(s *v1alpha1.CertificateSpec) { s.IssuerRef.Group = "issuers.example.com" }))
	h.answer("web-1", func(r *certificate.CertificateRequest) {
		certificate.SetFailed(r, "the vault is sealed", h.clock.Now(), time.Time{})
	})

	var crt *v1alpha1.Certificate
	h.eventually("the backoff in status", func() bool {
		crt = h.get("web")
		return crt.Status.Backoff != nil && crt.Status.NextPrivateKeySecretName == ""
	})
	issuing := condition(crt.Status.Conditions, certificate.ConditionIssuing)
	require.NotNil(t, issuing)
	assert.Equal(t, metav1.ConditionFalse, issuing.Status)
	assert.Equal(t, certificate.ReasonFailed, issuing.Reason)
	assert.Contains(t, issuing.Message, "the vault is sealed")
	require.NotNil(t, crt.Status.LastFailureTime)
	assert.Equal(t, 1, *crt.Status.FailedIssuanceAttempts)
	// 1h after the first failure (backoff.Policy's default, no jitter).
	assert.Equal(t, crt.Status.LastFailureTime.Add(time.Hour), crt.Status.Backoff.NextAttemptTime.Time)
	assert.Contains(t, crt.Status.Backoff.Message, "next attempt at "+crt.Status.Backoff.NextAttemptTime.UTC().Format(time.RFC3339))
	ready := condition(crt.Status.Conditions, certificate.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, metav1.ConditionFalse, ready.Status)
	assert.Equal(t, float64(1), op.metric("certlife_certificate_issuance_failures_total", h.ns, "Issuer", "vault", certificate.ReasonFailed))

	// The issuer is fixed; nothing happens before the backoff ends.
	h.clock.SetTime(crt.Status.Backoff.NextAttemptTime.Add(-time.Minute))
	h.settle(op)
	assert.Equal(t, []string{"web-1"}, requestNames(h), "no new attempt during the backoff")
	assert.Nil(t, h.get("web").Status.Revision)

	h.clock.SetTime(crt.Status.Backoff.NextAttemptTime.Add(time.Second))
	ca, err := localca.NewRoot(rand.Reader, "vault", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, h.clock.Now().Add(-time.Hour), 24*time.Hour)
	require.NoError(t, err)
	h.answer("web-1", func(r *certificate.CertificateRequest) { require.NoError(t, ca.Issue(rand.Reader, r, h.clock.Now())) })
	crt = h.waitReady("web", 1)
	assert.Nil(t, crt.Status.Backoff, "the backoff is cleared")
	assert.Nil(t, crt.Status.LastFailureTime)
}

// answer plays an external issuer: it waits for the request name that no
// issuer has touched yet, answers it with answer, and writes its status.
func (h *harness) answer(name string, answer func(*certificate.CertificateRequest)) {
	h.t.Helper()
	var req *v1alpha1.CertificateRequest
	h.eventually("request "+name+", unanswered", func() bool {
		for _, r := range h.requests() {
			if r.Name == name && len(r.Status.Conditions) == 0 {
				req = &r
				return true
			}
		}
		return false
	})
	core := operator.RequestToCore(req)
	answer(core)
	req.Status = operator.RequestStatusFromCore(core.Status)
	require.NoError(h.t, k8s.Status().Update(h.ctx, req))
}

func requestNames(h *harness) []string {
	names := []string{}
	for _, r := range h.requests() {
		names = append(names, r.Name)
	}
	return names
}

// A renewal that falls due outside the renewal windows is deferred, and
// status says until when; it renews when the window opens, on the fake
// clock the work queue measures the deferral's RequeueAfter with.
func TestRenewalWindowDefersThenRenews(t *testing.T) {
	h := newHarness(t)
	h.caIssuer("ca")
	op := h.start()
	// Renewal falls due at two thirds of 90 days; the window opens two
	// days later, 05:00–07:00 UTC.
	due := h.clock.Now().Add(60 * 24 * time.Hour)
	day := due.Add(48 * time.Hour).Weekday().String()
	h.create(h.certificate("web", "ca", func(s *v1alpha1.CertificateSpec) {
		s.Renewal = &v1alpha1.RenewalSpec{Policy: "Scheduled", Windows: []v1alpha1.RenewalWindow{{DaysOfWeek: []string{day}, Start: "05:00", End: "07:00"}}}
	}))
	crt := h.waitReady("web", 1)
	renewAt := crt.Status.RenewalTime.Time
	windowOpens := time.Date(renewAt.Year(), renewAt.Month(), renewAt.Day()+2, 5, 0, 0, 0, time.UTC)

	h.clock.SetTime(renewAt.Add(time.Minute))
	h.eventually("RenewalDeferred", func() bool {
		c := condition(h.get("web").Status.Conditions, "RenewalDeferred")
		return c != nil && c.Status == metav1.ConditionTrue
	})
	crt = h.get("web")
	deferred := condition(crt.Status.Conditions, "RenewalDeferred")
	assert.Contains(t, deferred.Message, "opens at "+windowOpens.Format(time.RFC3339))
	assert.Equal(t, 1, *crt.Status.Revision, "not renewed outside the window")
	assert.Equal(t, float64(1), op.metric("certlife_certificate_renewals_deferred_total", h.ns, "Issuer", "ca"))

	h.clock.SetTime(windowOpens.Add(-time.Minute))
	h.settle(op)
	assert.Equal(t, 1, *h.get("web").Status.Revision, "not renewed before the window opens")

	h.clock.SetTime(windowOpens.Add(time.Second)) // the deferral's RequeueAfter fires
	crt = h.waitReady("web", 2)
	assert.Nil(t, condition(crt.Status.Conditions, "RenewalDeferred"))
	require.NotNil(t, crt.Status.Renewal)
	assert.Equal(t, "Scheduled", crt.Status.Renewal.Policy)
	assert.False(t, crt.Status.NotBefore.Time.Before(windowOpens), "renewed inside the window")
}

// An invalid Certificate is refused by the schema where a schema can say
// so, and otherwise shows InvalidSpec in status, with nothing issued.
func TestInvalidCertificate(t *testing.T) {
	h := newHarness(t)
	h.caIssuer("ca")
	op := h.start()

	tests := map[string]struct {
		spec func(*v1alpha1.CertificateSpec)
		want string
	}{
		"renewBefore and renewBeforePercentage together": {
			spec: func(s *v1alpha1.CertificateSpec) {
				s.RenewBefore = &metav1.Duration{Duration: time.Hour}
				s.RenewBeforePercentage = new(int32(20))
			},
			want: "set renewBefore or renewBeforePercentage, not both",
		},
		"a duration under an hour": {
			spec: func(s *v1alpha1.CertificateSpec) { s.Duration = &metav1.Duration{Duration: 30 * time.Minute} },
			want: "must be at least 1h",
		},
		"no name at all": {
			spec: func(s *v1alpha1.CertificateSpec) { s.DNSNames = nil },
			want: "name at least one of",
		},
		"an ECDSA key of 2048 bits": {
			spec: func(s *v1alpha1.CertificateSpec) { s.PrivateKey = &v1alpha1.PrivateKey{Algorithm: "ECDSA", Size: 2048} },
			want: "an ECDSA size is 256, 384 or 521",
		},
		"an unknown usage": {
			spec: func(s *v1alpha1.CertificateSpec) { s.Usages = []v1alpha1.KeyUsage{"everything"} },
			want: "Unsupported value: \"everything\"",
		},
		"renewBefore beyond the duration": {
			spec: func(s *v1alpha1.CertificateSpec) {
				s.Duration = &metav1.Duration{Duration: 2 * time.Hour}
				s.RenewBefore = &metav1.Duration{Duration: 3 * time.Hour}
			},
			want: "renewBefore must be less than the duration",
		},
		"renewBefore that leaves under 10 minutes before renewal is due": {
			spec: func(s *v1alpha1.CertificateSpec) {
				s.Duration = &metav1.Duration{Duration: time.Hour}
				s.RenewBefore = &metav1.Duration{Duration: 59*time.Minute + 58*time.Second}
			},
			want: "renewBefore must leave at least 10m of the duration (2160h when unset) before renewal is due",
		},
		"renewBefore that leaves under 10 minutes of the default duration": {
			spec: func(s *v1alpha1.CertificateSpec) {
				s.RenewBefore = &metav1.Duration{Duration: 2160*time.Hour - 9*time.Minute}
			},
			want: "renewBefore must leave at least 10m of the duration (2160h when unset) before renewal is due",
		},
		"renewBeforePercentage that leaves under 10 minutes before renewal is due": {
			spec: func(s *v1alpha1.CertificateSpec) {
				s.Duration = &metav1.Duration{Duration: time.Hour}
				s.RenewBeforePercentage = new(int32(84)) // 9m36s left
			},
			want: "renewBeforePercentage must leave at least 10m of the duration (2160h when unset) before renewal is due",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := k8s.Create(h.ctx, h.certificate("refused", "ca", tc.spec))
			require.True(t, apierrors.IsInvalid(err), "want the schema to refuse it, got %v", err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}

	// What the schema leaves to certificate.Validate: a DNS name with an
	// underscore, a time zone that does not exist.
	h.create(h.certificate("invalid", "ca", func(s *v1alpha1.CertificateSpec) {
		s.DNSNames = []string{"bad_name.example"}
		s.Renewal = &v1alpha1.RenewalSpec{Policy: "Scheduled", Windows: []v1alpha1.RenewalWindow{{Start: "05:00", End: "07:00", TimeZone: "Mars/Olympus_Mons"}}}
	}))
	var ready *metav1.Condition
	h.eventually("InvalidSpec", func() bool {
		ready = condition(h.get("invalid").Status.Conditions, certificate.ConditionReady)
		return ready != nil
	})
	assert.Equal(t, metav1.ConditionFalse, ready.Status)
	assert.Equal(t, certificate.ReasonInvalidSpec, ready.Reason)
	assert.Contains(t, ready.Message, `spec.dnsNames[0]: "bad_name.example" is not a valid DNS name`)
	assert.Contains(t, ready.Message, "Mars/Olympus_Mons")
	h.settle(op)
	assert.Empty(t, h.requests(), "nothing is requested for an invalid spec")
	_, err := h.secret("invalid-tls")
	assert.True(t, apierrors.IsNotFound(err))
}

// A SelfSigned issuer signs each certificate with its own next private
// key, read from the Secret the request names.
func TestSelfSignedIssuer(t *testing.T) {
	h := newHarness(t)
	h.create(&v1alpha1.Issuer{ObjectMeta: metav1.ObjectMeta{Name: "self"}, Spec: v1alpha1.IssuerSpec{SelfSigned: &v1alpha1.SelfSignedIssuer{}}})
	h.start()
	h.create(h.certificate("root", "self", func(s *v1alpha1.CertificateSpec) {
		s.IsCA = true
		s.CommonName = "test root"
		s.Usages = []v1alpha1.KeyUsage{"cert sign", "digital signature"}
	}))
	h.waitReady("root", 1)
	s, err := h.secret("root-tls")
	require.NoError(t, err)
	pair, err := tls.X509KeyPair(s.Data[keys.SecretCertificate], s.Data[keys.SecretPrivateKey])
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	require.NoError(t, err)
	assert.True(t, leaf.IsCA)
	assert.NoError(t, leaf.CheckSignatureFrom(leaf), "self-signed")

	// The root is a CA for a CA Issuer: its Secret is the operator's, so
	// the issuer reads it from the cache.
	h.create(&v1alpha1.Issuer{ObjectMeta: metav1.ObjectMeta{Name: "root"}, Spec: v1alpha1.IssuerSpec{CA: &v1alpha1.CAIssuer{SecretName: "root-tls"}}})
	h.create(h.certificate("web", "root"))
	h.waitReady("web", 1)
	ws, err := h.secret("web-tls")
	require.NoError(t, err)
	wpair, err := tls.X509KeyPair(ws.Data[keys.SecretCertificate], ws.Data[keys.SecretPrivateKey])
	require.NoError(t, err)
	wleaf, err := x509.ParseCertificate(wpair.Certificate[0])
	require.NoError(t, err)
	assert.NoError(t, wleaf.CheckSignatureFrom(leaf), "signed by the self-signed root")
}

// Issuing=True set by hand on the status renews at once, whatever the
// renewal time says.
func TestManualTrigger(t *testing.T) {
	h := newHarness(t)
	h.caIssuer("ca")
	h.start()
	h.create(h.certificate("web", "ca"))
	crt := h.waitReady("web", 1)

	crt.Status.Conditions = append(crt.Status.Conditions, metav1.Condition{Type: certificate.ConditionIssuing, Status: metav1.ConditionTrue,
		Reason: certificate.ReasonManualTrigger, Message: "by hand", LastTransitionTime: metav1.NewTime(h.clock.Now())})
	require.NoError(t, k8s.Status().Update(h.ctx, crt))
	crt = h.waitReady("web", 2)
	assert.True(t, crt.Status.RenewalTime.After(h.clock.Now().Add(50*24*time.Hour)), "renewed long before its renewal time")
}

// A ClusterIssuer signs for any namespace with a CA Secret from the
// cluster resource namespace.
func TestClusterIssuer(t *testing.T) {
	h := newHarness(t) // the operator's cluster resource namespace is the test's
	h.caSecret("cluster-ca")
	require.NoError(t, k8s.Create(h.ctx, &v1alpha1.ClusterIssuer{ObjectMeta: metav1.ObjectMeta{Name: h.ns},
		Spec: v1alpha1.IssuerSpec{CA: &v1alpha1.CAIssuer{SecretName: "cluster-ca"}}}))
	t.Cleanup(func() { _ = k8s.Delete(h.ctx, &v1alpha1.ClusterIssuer{ObjectMeta: metav1.ObjectMeta{Name: h.ns}}) })
	h.start()
	h.create(h.certificate("web", h.ns, func(s *v1alpha1.CertificateSpec) { s.IssuerRef.Kind = "ClusterIssuer" }))
	h.waitReady("web", 1)
	s, err := h.secret("web-tls")
	require.NoError(t, err)
	assert.Equal(t, "ClusterIssuer", s.Annotations[certificate.AnnotationIssuerKind])
}

// The schema refuses a renewal that leaves a certificate less than
// certificate.MinTimeBeforeRenewal before it is due exactly when
// certificate.Validate does, on both sides of the boundary: a user hears
// it from `kubectl apply`, and nothing the library accepts is refused.
func TestSchemaAgreesOnTimeBeforeRenewal(t *testing.T) {
	h := newHarness(t)
	tests := map[string]struct {
		duration    time.Duration // 0: unset (2160h)
		renewBefore time.Duration
		percentage  int32
	}{
		"1h renewing 50m before expiry leaves exactly 10m":         {duration: time.Hour, renewBefore: 50 * time.Minute},
		"1h renewing 50m1s before expiry leaves 9m59s":             {duration: time.Hour, renewBefore: 50*time.Minute + time.Second},
		"1h renewing 59m58s before expiry leaves 2s":               {duration: time.Hour, renewBefore: 59*time.Minute + 58*time.Second},
		"the default duration renewing 2159h50m before leaves 10m": {renewBefore: 2159*time.Hour + 50*time.Minute},
		"the default duration renewing 2159h51m before leaves 9m":  {renewBefore: 2159*time.Hour + 51*time.Minute},
		"1h renewing at 83% left leaves 10m12s":                    {duration: time.Hour, percentage: 83},
		"1h renewing at 84% left leaves 9m36s":                     {duration: time.Hour, percentage: 84},
		"2h renewing at 91% left leaves 10m48s":                    {duration: 2 * time.Hour, percentage: 91},
		"2h renewing at 92% left leaves 9m36s":                     {duration: 2 * time.Hour, percentage: 92},
		"the default duration renewing at 99% left leaves 21h36m":  {percentage: 99},
		"1h30m renewing at 89% left leaves 9m54s":                  {duration: 90 * time.Minute, percentage: 89},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			crt := h.certificate("renewal", "ca", func(s *v1alpha1.CertificateSpec) {
				if tc.duration != 0 {
					s.Duration = &metav1.Duration{Duration: tc.duration}
				}
				if tc.renewBefore != 0 {
					s.RenewBefore = &metav1.Duration{Duration: tc.renewBefore}
				}
				if tc.percentage != 0 {
					s.RenewBeforePercentage = new(tc.percentage)
				}
			})
			crt.UID = "uid" // for the conversion; the dry run ignores it
			libErr := certificate.Validate(&operator.CertificateToCore(crt, operator.Passwords{}).Spec)
			crt.UID = ""
			schemaErr := k8s.Create(h.ctx, crt, client.DryRunAll)
			if libErr == nil {
				assert.NoError(t, schemaErr, "certificate.Validate accepts it")
				return
			}
			assert.Contains(t, libErr.Error(), "before renewal is due", "the library's reason")
			require.Error(t, schemaErr, "certificate.Validate refuses it: %v", libErr)
			assert.True(t, apierrors.IsInvalid(schemaErr), "%v", schemaErr)
			assert.Contains(t, schemaErr.Error(), "before renewal is due")
		})
	}
}
