package operator_test

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/localca"
	"github.com/certlife/certlife/keys"

	"github.com/certlife/certlife/examples/kubernetes/operator"
)

// A Certificate from a CA Issuer becomes Ready with a real Secret whose
// key is the certificate's, signed by the CA; the writes it took are the
// ones counted, per first issuance and per renewal.
func TestCAIssuerFirstIssuanceAndRenewal(t *testing.T) {
	h := newHarness(t)
	ca := h.caIssuer("ca")
	op := h.start()
	h.eventually("the issuer to be Ready", func() bool { return issuerReady(h, "ca") })
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
	assert.Empty(t, s.OwnerReferences, "the certificate does not own its secret, as the reference operator's does not by default")
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
	for k, v := range map[string]string{
		cmapi.CertificateNameKey: "web", cmapi.IssuerNameAnnotationKey: "ca", cmapi.IssuerKindAnnotationKey: "Issuer",
		cmapi.IssuerGroupAnnotationKey: "cert-manager.io", cmapi.CommonNameAnnotationKey: "", cmapi.AltNamesAnnotationKey: "web.example",
		cmapi.IPSANAnnotationKey: "", cmapi.URISANAnnotationKey: "", cmapi.EmailsAnnotationKey: "",
	} {
		assert.Equal(t, v, s.Annotations[k], "the reference operator's annotation %s", k)
	}
	for k := range s.Annotations {
		assert.False(t, strings.HasPrefix(k, "certlife.dev/"), "certlife's own annotation %s on the secret", k)
	}
	assert.Equal(t, float64(crt.Status.NotAfter.Unix()), op.metric("certlife_certificate_expiration_timestamp_seconds", h.ns, "web"))
	assert.Equal(t, float64(crt.Status.RenewalTime.Unix()), op.metric("certlife_certificate_renewal_timestamp_seconds", h.ns, "web"))
	assert.Equal(t, float64(1), op.metric("certlife_certificate_ready_status", h.ns, "web", "True"))
	assert.Equal(t, float64(0), op.metric("certlife_certificate_ready_status", h.ns, "web", "False"))
	assert.Equal(t, float64(1), op.metric("certlife_certificate_issuances_total", h.ns, "Issuer", "ca"))

	reqs := h.requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "web-1", reqs[0].Name)
	assert.Equal(t, "1", reqs[0].Annotations[cmapi.CertificateRequestRevisionAnnotationKey])
	assert.Equal(t, "web", reqs[0].Annotations[cmapi.CertificateNameKey])
	assert.NotEmpty(t, reqs[0].Annotations[cmapi.CertificateRequestPrivateKeyAnnotationKey])
	approved := condition(reqs[0].Status.Conditions, string(cmapi.CertificateRequestConditionApproved))
	require.NotNil(t, approved, "the request is approved")
	assert.Equal(t, cmmeta.ConditionTrue, approved.Status)
	assert.Equal(t, operator.ReasonApproved, approved.Reason)
	assert.Equal(t, operator.MessageApproved, approved.Message)
	var nextKeys corev1.SecretList
	require.NoError(t, k8s.List(h.ctx, &nextKeys, client.InNamespace(h.ns), client.MatchingLabels{cmapi.IsNextPrivateKeySecretLabelKey: "true"}))
	assert.Empty(t, nextKeys.Items, "the next private key is deleted after issuance")

	// The minimum the design needs: the next key made (1), Issuing and
	// its name recorded (1), the request made (1) and approved and
	// answered (1: the operator approves the requests of its own issuers
	// in the write that answers them), the secret written (1), the
	// revision recorded (1), the next key deleted (1). certlife clears
	// status.nextPrivateKeySecretName in the pass after the key is gone:
	// one status write more.
	assert.Empty(t, cmp.Diff(map[string]int{
		"create Secret":                    2,
		"delete Secret":                    1,
		"create CertificateRequest":        1,
		"update/status CertificateRequest": 1,
		"update/status Certificate":        3,
	}, first), "writes for a first issuance (-want +got)")
	assert.LessOrEqual(t, sum(first), 8, "at most 8 API writes per issuance, without Events")

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
		"patch Secret":                     1,
		"delete Secret":                    1,
		"create CertificateRequest":        1,
		"delete CertificateRequest":        1,
		"update/status CertificateRequest": 1,
		"update/status Certificate":        3,
	}, renewal), "writes for a renewal (-want +got)")
	assert.Equal(t, 9, sum(renewal), "8 per issuance and the revision history's delete of the last request")
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

	before := h.get("web")
	b, _ := json.Marshal(before)
	t.Logf("before: %s", b)
	versions := h.watchCertificate("web")
	s, err := h.secret("web-tls")
	require.NoError(t, err)
	require.NoError(t, k8s.Delete(h.ctx, s))
	h.waitReady("web", 2) // within a minute: no cache grace
	s2, err := h.secret("web-tls")
	require.NoError(t, err)
	assert.NotEqual(t, s.UID, s2.UID, "a new secret")
	_, err = tls.X509KeyPair(s2.Data[keys.SecretCertificate], s2.Data[keys.SecretPrivateKey])
	assert.NoError(t, err)

	h.eventually("the watch to reach revision 2", func() bool {
		return slices.ContainsFunc(versions(), func(v cmapi.Certificate) bool {
			return v.Status.Revision != nil && *v.Status.Revision == 2
		})
	})
	missing := 0
	for _, v := range versions() {
		r := condition(v.Status.Conditions, certificate.ConditionReady)
		b, _ := json.Marshal(v)
		t.Logf("version %s: %s (%s)", v.ResourceVersion, b, r.Message)
		if v.Status.Revision == nil || *v.Status.Revision != 1 {
			continue
		}
		missing++
		ready := condition(v.Status.Conditions, certificate.ConditionReady)
		require.NotNil(t, ready)
		assert.Equal(t, cmmeta.ConditionFalse, ready.Status, "not Ready while the secret is missing (resourceVersion %s)", v.ResourceVersion)
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

	h.edit("web", func(c *cmapi.Certificate) { c.Spec.DNSNames = []string{"web.example", "www.example"} })
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
// Issuing condition says until when; fixed, it issues once the backoff
// has passed, not before. The issuer is an external one (another API
// group), played by the test through the issuer contract, as any external
// issuer answers.
func TestFailingIssuerBacksOff(t *testing.T) {
	h := newHarness(t)
	op := h.start()
	h.create(h.certificate("web", "vault", func(s *cmapi.CertificateSpec) { s.IssuerRef.Group = "issuers.example.com" }))
	h.answer("web-1", func(r *certificate.CertificateRequest) {
		certificate.SetFailed(r, "the vault is sealed", h.clock.Now(), time.Time{})
	})

	var crt *cmapi.Certificate
	h.eventually("the failure in status, the issuance over", func() bool {
		crt = h.get("web")
		return crt.Status.LastFailureTime != nil && crt.Status.NextPrivateKeySecretName == nil
	})
	issuing := condition(crt.Status.Conditions, certificate.ConditionIssuing)
	require.NotNil(t, issuing)
	assert.Equal(t, cmmeta.ConditionFalse, issuing.Status)
	assert.Equal(t, certificate.ReasonFailed, issuing.Reason)
	assert.Contains(t, issuing.Message, "the vault is sealed")
	assert.Equal(t, 1, *crt.Status.FailedIssuanceAttempts)
	// 1h after the first failure (backoff.Policy's default, no jitter).
	next := crt.Status.LastFailureTime.Add(time.Hour)
	assert.Contains(t, issuing.Message, "next attempt at "+next.UTC().Format(time.RFC3339))
	ready := condition(crt.Status.Conditions, certificate.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, cmmeta.ConditionFalse, ready.Status)
	assert.Equal(t, float64(1), op.metric("certlife_certificate_issuance_failures_total", h.ns, "Issuer", "vault", certificate.ReasonFailed))

	// The issuer is fixed; nothing happens before the backoff ends.
	h.clock.SetTime(next.Add(-time.Minute))
	h.settle(op)
	assert.Equal(t, []string{"web-1"}, requestNames(h), "no new attempt during the backoff")
	assert.Nil(t, h.get("web").Status.Revision)

	h.clock.SetTime(next.Add(time.Second))
	ca, err := localca.NewRoot(rand.Reader, "vault", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, h.clock.Now().Add(-time.Hour), 24*time.Hour)
	require.NoError(t, err)
	h.answer("web-1", func(r *certificate.CertificateRequest) { require.NoError(t, ca.Issue(rand.Reader, r, h.clock.Now())) })
	crt = h.waitReady("web", 1)
	assert.Nil(t, crt.Status.LastFailureTime, "the failure is cleared")
	assert.Nil(t, crt.Status.FailedIssuanceAttempts)
}

// sum is the number of writes counted.
func sum(writes map[string]int) int {
	n := 0
	for _, v := range writes {
		n += v
	}
	return n
}

// byResource adds up writes by resource (the kind after the verb).
func byResource(writes map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range writes {
		out[k[strings.LastIndex(k, " ")+1:]] += v
	}
	return out
}

// answer plays an external issuer: it waits for the request name to be
// approved and not yet answered (as cert-manager's external-issuer
// contract has issuers do), answers it with answer, and writes its
// status.
func (h *harness) answer(name string, answer func(*certificate.CertificateRequest)) {
	h.t.Helper()
	var req *cmapi.CertificateRequest
	h.eventually("request "+name+", approved and unanswered", func() bool {
		for _, r := range h.requests() {
			if a := condition(r.Status.Conditions, operator.ConditionApproved); r.Name == name && a != nil && a.Status == cmmeta.ConditionTrue &&
				condition(r.Status.Conditions, certificate.RequestConditionReady) == nil {
				req = &r
				return true
			}
		}
		return false
	})
	core := operator.RequestToCore(req)
	answer(core)
	operator.RequestStatusFromCore(req, core.Status)
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
// clock the work queue measures the deferral's RequeueAfter with. The
// window is cert-manager's: a cron expression and a duration.
func TestRenewalWindowDefersThenRenews(t *testing.T) {
	h := newHarness(t)
	h.caIssuer("ca")
	op := h.start()
	// Renewal falls due at two thirds of 90 days; the window opens two
	// days later, 05:00–07:00 UTC.
	due := h.clock.Now().Add(60 * 24 * time.Hour)
	day := int(due.Add(48 * time.Hour).Weekday())
	h.create(h.certificate("web", "ca", func(s *cmapi.CertificateSpec) {
		s.Renewal = &cmapi.CertificateRenewal{Policy: cmapi.CertificateRenewalPolicyRenewBefore, Windows: []cmapi.CertificateRenewalWindows{
			{Cron: fmt.Sprintf("0 5 * * %d", day), WindowDuration: &metav1.Duration{Duration: 2 * time.Hour}}}}
	}))
	crt := h.waitReady("web", 1)
	renewAt := crt.Status.RenewalTime.Time
	windowOpens := time.Date(renewAt.Year(), renewAt.Month(), renewAt.Day()+2, 5, 0, 0, 0, time.UTC)

	h.clock.SetTime(renewAt.Add(time.Minute))
	h.eventually("RenewalDeferred", func() bool {
		c := condition(h.get("web").Status.Conditions, "RenewalDeferred")
		return c != nil && c.Status == cmmeta.ConditionTrue
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
	assert.JSONEq(t, `{"policy":"Scheduled","windows":{"valid":"True"}}`, crt.Annotations[operator.AnnotationRenewalStatus],
		"the renewal status cert-manager's status has no field for")
	assert.False(t, crt.Status.NotBefore.Time.Before(windowOpens), "renewed inside the window")
}

// An invalid Certificate shows InvalidSpec in status, with every field
// error certificate.Validate finds, and nothing is issued: cert-manager's
// CRDs leave these checks to its webhook, which this operator does not
// run. A field this operator does not serve is refused the same way,
// named.
func TestInvalidCertificate(t *testing.T) {
	h := newHarness(t)
	h.caIssuer("ca")
	op := h.start()

	tests := map[string]struct {
		spec func(*cmapi.Certificate)
		want []string
	}{
		"renewBefore and renewBeforePercentage together": {
			spec: func(c *cmapi.Certificate) {
				c.Spec.RenewBefore = &metav1.Duration{Duration: time.Hour}
				c.Spec.RenewBeforePercentage = new(int32(20))
			},
			want: []string{"spec.renewBeforePercentage: may not be set together with spec.renewBefore"},
		},
		"a duration under an hour": {
			spec: func(c *cmapi.Certificate) { c.Spec.Duration = &metav1.Duration{Duration: 30 * time.Minute} },
			want: []string{"spec.duration: 30m0s is under the minimum of 1h0m0s"},
		},
		"no name at all": {
			spec: func(c *cmapi.Certificate) { c.Spec.DNSNames = nil },
			want: []string{"spec: names nothing"},
		},
		"an ECDSA key of 2048 bits": {
			spec: func(c *cmapi.Certificate) {
				c.Spec.PrivateKey = &cmapi.CertificatePrivateKey{Algorithm: cmapi.ECDSAKeyAlgorithm, Size: 2048}
			},
			want: []string{"spec.privateKey:"},
		},
		"a usage of cert-manager's that certlife does not know": {
			spec: func(c *cmapi.Certificate) { c.Spec.Usages = []cmapi.KeyUsage{cmapi.UsageSMIME} },
			want: []string{`spec.usages[0]: "s/mime" is not a known usage`},
		},
		"renewBefore that leaves under 10 minutes before renewal is due": {
			spec: func(c *cmapi.Certificate) {
				c.Spec.Duration = &metav1.Duration{Duration: time.Hour}
				c.Spec.RenewBefore = &metav1.Duration{Duration: 59*time.Minute + 58*time.Second}
			},
			want: []string{"spec.renewBefore: 59m58s leaves 2s of the duration 1h0m0s before renewal is due"},
		},
		"a DNS name with an underscore and a time zone that does not exist": {
			spec: func(c *cmapi.Certificate) {
				c.Spec.DNSNames = []string{"bad_name.example"}
				c.Spec.Renewal = &cmapi.CertificateRenewal{Windows: []cmapi.CertificateRenewalWindows{
					{Cron: "0 5 * * *", WindowDuration: &metav1.Duration{Duration: 2 * time.Hour}, Timezone: "Mars/Olympus_Mons"}}}
			},
			want: []string{`spec.dnsNames[0]: "bad_name.example" is not a valid DNS name`, "Mars/Olympus_Mons"},
		},
		"fields this operator does not serve": {
			spec: func(c *cmapi.Certificate) {
				c.Spec.SignatureAlgorithm = cmapi.ECDSAWithSHA384
				c.Spec.Renewal = &cmapi.CertificateRenewal{Windows: []cmapi.CertificateRenewalWindows{
					{Cron: "*/15 5 * * *", WindowDuration: &metav1.Duration{Duration: 2 * time.Hour}}}}
			},
			want: []string{"spec.signatureAlgorithm: is not served by this operator yet", `spec.renewal.windows[0].cron: "*/15 5 * * *" is not served`},
		},
	}
	names := map[string]string{}
	i := 0
	for name, tc := range tests {
		crt := h.certificate(fmt.Sprintf("invalid%d", i), "ca", func(*cmapi.CertificateSpec) {})
		tc.spec(crt)
		h.create(crt)
		names[name] = crt.Name
		i++
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var ready *cmapi.CertificateCondition
			h.eventually("InvalidSpec", func() bool {
				ready = condition(h.get(names[name]).Status.Conditions, certificate.ConditionReady)
				return ready != nil
			})
			assert.Equal(t, cmmeta.ConditionFalse, ready.Status)
			assert.Equal(t, certificate.ReasonInvalidSpec, ready.Reason)
			assert.True(t, strings.HasPrefix(ready.Message, "the spec is invalid: "), ready.Message)
			for _, w := range tc.want {
				assert.Contains(t, ready.Message, w)
			}
		})
	}
	h.settle(op)
	assert.Empty(t, h.requests(), "nothing is requested for an invalid spec")
	var secrets corev1.SecretList
	require.NoError(t, k8s.List(h.ctx, &secrets, client.InNamespace(h.ns)))
	assert.Len(t, secrets.Items, 1, "only the CA's secret: nothing is written")

	// Fixed, the certificate is issued.
	crt := h.edit(names["fields this operator does not serve"], func(c *cmapi.Certificate) {
		c.Spec.SignatureAlgorithm = ""
		c.Spec.Renewal = nil
	})
	h.waitReady(crt.Name, 1)
}

// A SelfSigned issuer signs each certificate with its own next private
// key, read from the Secret the request names.
func TestSelfSignedIssuer(t *testing.T) {
	h := newHarness(t)
	h.create(&cmapi.Issuer{ObjectMeta: metav1.ObjectMeta{Name: "self"}, Spec: cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{SelfSigned: &cmapi.SelfSignedIssuer{}}}})
	h.start()
	h.create(h.certificate("root", "self", func(s *cmapi.CertificateSpec) {
		s.IsCA = true
		s.CommonName = "test root"
		s.Usages = []cmapi.KeyUsage{cmapi.UsageCertSign, cmapi.UsageDigitalSignature}
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
	h.create(&cmapi.Issuer{ObjectMeta: metav1.ObjectMeta{Name: "root"}, Spec: cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{CA: &cmapi.CAIssuer{SecretName: "root-tls"}}}})
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
// renewal time says (as `cmctl renew` does).
func TestManualTrigger(t *testing.T) {
	h := newHarness(t)
	h.caIssuer("ca")
	h.start()
	h.create(h.certificate("web", "ca"))
	crt := h.waitReady("web", 1)

	crt.Status.Conditions = append(crt.Status.Conditions, cmapi.CertificateCondition{Type: cmapi.CertificateConditionIssuing, Status: cmmeta.ConditionTrue,
		Reason: certificate.ReasonManualTrigger, Message: "by hand", LastTransitionTime: &metav1.Time{Time: h.clock.Now()}})
	require.NoError(t, k8s.Status().Update(h.ctx, crt))
	crt = h.waitReady("web", 2)
	assert.True(t, crt.Status.RenewalTime.After(h.clock.Now().Add(50*24*time.Hour)), "renewed long before its renewal time")
}

// A ClusterIssuer signs for any namespace with a CA Secret from the
// cluster resource namespace.
func TestClusterIssuer(t *testing.T) {
	h := newHarness(t) // the operator's cluster resource namespace is the test's
	h.caSecret("cluster-ca")
	require.NoError(t, k8s.Create(h.ctx, &cmapi.ClusterIssuer{ObjectMeta: metav1.ObjectMeta{Name: h.ns},
		Spec: cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{CA: &cmapi.CAIssuer{SecretName: "cluster-ca"}}}}))
	t.Cleanup(func() { _ = k8s.Delete(h.ctx, &cmapi.ClusterIssuer{ObjectMeta: metav1.ObjectMeta{Name: h.ns}}) })
	h.start()
	h.create(h.certificate("web", h.ns, func(s *cmapi.CertificateSpec) { s.IssuerRef.Kind = cmapi.ClusterIssuerKind }))
	h.waitReady("web", 1)
	s, err := h.secret("web-tls")
	require.NoError(t, err)
	assert.Equal(t, "ClusterIssuer", s.Annotations[cmapi.IssuerKindAnnotationKey])
}

// Deleting a Certificate keeps its Secret, as the reference operator does
// by default; its requests and next private keys go. With
// EnableCertificateOwnerRef (--enable-certificate-owner-ref) the
// Certificate owns its Secret, so the garbage collector deletes the
// Secret with it (envtest runs no garbage collector: the test checks the
// owner reference that makes it so).
func TestDeletedCertificateKeepsItsSecret(t *testing.T) {
	h := newHarness(t)
	h.caIssuer("ca")
	op := h.start()
	h.create(h.certificate("web", "ca"))
	h.waitReady("web", 1)
	require.NoError(t, k8s.Delete(h.ctx, h.get("web")))
	h.eventually("its requests to go", func() bool { return len(h.requests()) == 0 })
	h.settle(op)
	s, err := h.secret("web-tls")
	require.NoError(t, err, "the secret stays")
	assert.Empty(t, s.OwnerReferences, "nothing owns it: no garbage collector takes it")
	op.stop()

	h.start(func(_ *manager.Options, o *operator.Options) { o.EnableCertificateOwnerRef = true })
	h.create(h.certificate("owned", "ca"))
	crt := h.waitReady("owned", 1)
	s, err = h.secret("owned-tls")
	require.NoError(t, err)
	require.Len(t, s.OwnerReferences, 1)
	ref := s.OwnerReferences[0]
	assert.Equal(t, crt.UID, ref.UID, "the certificate owns its secret")
	assert.Equal(t, "cert-manager.io/v1", ref.APIVersion)
	assert.Equal(t, "Certificate", ref.Kind)
	assert.True(t, ref.Controller != nil && *ref.Controller)
}
