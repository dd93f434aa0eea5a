package plugin

import (
	"regexp"
	"strings"
	"testing"
	"time"

	cmacme "github.com/cert-manager/cert-manager/pkg/apis/acme/v1"
	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/renewal"
)

const day = 24 * time.Hour

// pending is an ACME issuer's answer while its order runs.
func pending(order string) cmapi.CertificateRequestCondition {
	return cmapi.CertificateRequestCondition{Type: cmapi.CertificateRequestConditionReady, Status: cmmeta.ConditionFalse,
		Reason: cmapi.CertificateRequestReasonPending, Message: "Waiting on certificate issuance from order " + order + ": \"pending\""}
}

// TestStatus puts a Certificate in each state on the API server and
// compares `kubectl certlife status` at t0 with testdata/<state>.golden.
func TestStatus(t *testing.T) {
	for _, tc := range []struct {
		state string
		// setup leaves the certificate "web" in the state, at times before
		// t0.
		setup func(e *env)
		// want are words the output must hold, beside the golden file:
		// what the state is about.
		want []string
	}{{
		state: "ready",
		setup: func(e *env) {
			e.newCertificate("web", nil)
			e.issued("web", t0.Add(-30*day))
		},
		want: []string{"True (Ready)", "Renewal time:", "2026-04-01T12:00:00Z (in 30d)", "a third of the 90d lifetime", "Up to date. Renews at 2026-04-01T12:00:00Z (in 30d)", "Actions now:     none"},
	}, {
		state: "renewal-due",
		setup: func(e *env) {
			e.newCertificate("web", func(c *cmapi.Certificate) { c.Spec.RenewBefore = &metav1.Duration{Duration: 40 * day} })
			e.issued("web", t0.Add(-51*day))
		},
		want: []string{"spec.renewBefore 40d before notAfter", "Due now:", "yes (RenewalDue)", "An issuance starts now (Renewing)", "Issuing=True (Renewing)"},
	}, {
		state: "issuing-pending-request",
		setup: func(e *env) {
			e.newCertificate("web", nil)
			e.issued("web", t0.Add(-61*day))
			e.settle("web", t0.Add(-10*time.Minute))
			e.answer(e.request("web", 2), t0.Add(-9*time.Minute), []cmapi.CertificateRequestCondition{approved, {
				Type: cmapi.CertificateRequestConditionReady, Status: cmmeta.ConditionFalse, Reason: cmapi.CertificateRequestReasonPending,
				Message: "Signing the certificate: waiting for the CA secret"}}, nil)
			e.settle("web", t0.Add(-9*time.Minute))
		},
		want: []string{"Request web-2 (revision 2, the next)", "approved, the issuer is working on it", "An issuance runs (Renewing)"},
	}, {
		state: "issuing-acme-challenge-pending",
		setup: func(e *env) {
			e.newCertificate("web", func(c *cmapi.Certificate) { c.Spec.IssuerRef.Name = "letsencrypt" })
			e.settle("web", t0.Add(-10*time.Minute))
			req := e.request("web", 1)
			e.answer(req, t0.Add(-9*time.Minute), []cmapi.CertificateRequestCondition{approved, pending("web-1-3349181212")}, nil)
			e.acmeOrder(req, "web-1-3349181212", cmacme.Pending, []cmacme.Challenge{{
				ObjectMeta: metav1.ObjectMeta{Name: "web-1-3349181212-1592355456"},
				Spec:       cmacme.ChallengeSpec{Type: cmacme.ACMEChallengeTypeHTTP01, DNSName: "web.example.com", Token: "tok"},
				Status: cmacme.ChallengeStatus{Processing: true, Presented: true, State: cmacme.Pending,
					Reason: "Waiting for HTTP-01 challenge propagation: wrong status code '404', expected '200'"},
			}})
			e.settle("web", t0.Add(-9*time.Minute))
		},
		want: []string{"Order web-1-3349181212: pending", "HTTP-01 for web.example.com, pending (presented, processing)", "wrong status code '404'", "DoesNotExist"},
	}, {
		state: "failed-with-backoff",
		setup: func(e *env) {
			e.newCertificate("web", nil)
			e.issued("web", t0.Add(-61*day))
			// The renewal fails twice: the second attempt an hour after
			// the first failure, and the backoff doubles.
			e.settle("web", t0.Add(-3*time.Hour))
			e.answer(e.request("web", 2), t0.Add(-3*time.Hour), []cmapi.CertificateRequestCondition{approved, failed()}, nil)
			e.settle("web", t0.Add(-3*time.Hour))
			e.settle("web", t0.Add(-2*time.Hour+time.Minute))
			e.answer(e.request("web", 2), t0.Add(-time.Hour), []cmapi.CertificateRequestCondition{approved, failed()}, nil)
			e.settle("web", t0.Add(-time.Hour))
		},
		want: []string{"Failed attempts:", "2 in a row", "held back until then", "the backoff holds it back until 2026-03-02T13:00:00Z (in 1h)"},
	}, {
		state: "denied",
		setup: func(e *env) {
			e.newCertificate("web", nil)
			e.settle("web", t0.Add(-10*time.Minute))
			e.answer(e.request("web", 1), t0.Add(-5*time.Minute), []cmapi.CertificateRequestCondition{{
				Type: cmapi.CertificateRequestConditionDenied, Status: cmmeta.ConditionTrue, Reason: "policy.cert-manager.io",
				Message: "example.com is not an allowed domain"}}, nil)
			e.settle("web", t0.Add(-5*time.Minute))
		},
		want: []string{"Denied", "example.com is not an allowed domain", "backoff"},
	}, {
		state: "secret-missing",
		setup: func(e *env) {
			e.newCertificate("web", nil)
			e.issued("web", t0.Add(-30*day))
			e.delete(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "web-tls"}})
		},
		want: []string{"does not exist", "An issuance starts now (DoesNotExist)"},
	}, {
		state: "secret-mismatched-key",
		setup: func(e *env) {
			e.newCertificate("web", nil)
			e.issued("web", t0.Add(-30*day))
			e.replaceKey("web-tls", "someone else's")
		},
		want: []string{"MISMATCH", "InvalidKeyPair"},
	}, {
		state: "not-ready-invalid-spec",
		setup: func(e *env) {
			e.newCertificate("web", func(c *cmapi.Certificate) { c.Spec.RenewBefore = &metav1.Duration{Duration: 100 * day} })
			e.settle("web", t0.Add(-time.Minute))
		},
		want: []string{"InvalidSpec", "spec.renewBefore", "Nothing is issued until the spec is corrected."},
	}, {
		state: "not-served",
		setup: func(e *env) {
			e.newCertificate("web", func(c *cmapi.Certificate) { c.Spec.SignatureAlgorithm = cmapi.ECDSAWithSHA384 })
		},
		want: []string{"not run: the operator refuses", "spec.signatureAlgorithm"},
	}, {
		state: "renewal-disabled",
		setup: func(e *env) {
			e.newCertificate("web", func(c *cmapi.Certificate) {
				c.Spec.Renewal = &cmapi.CertificateRenewal{Policy: cmapi.CertificateRenewalPolicyDisabled}
			})
			e.issued("web", t0.Add(-70*day))
		},
		want: []string{"Disabled (never renews on its own", "Renewal is disabled", "RenewalDisabled"},
	}, {
		state: "ari-window",
		setup: func(e *env) {
			e.newCertificate("web", nil)
			e.issued("web", t0.Add(-30*day))
			e.setARI("web", t0.Add(10*day), t0.Add(12*day))
		},
		want: []string{"ARI window:", "ACME renewal information"},
	}} {
		t.Run(tc.state, func(t *testing.T) {
			e := newEnv(t, "st-"+tc.state)
			tc.setup(e)
			out, errOut, code := e.run(t0, "status", "web")
			if code != 0 {
				t.Fatalf("exit code %d: %s", code, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("the output does not say %q", w)
				}
			}
			noKeyMaterial(t, e, out)
			golden(t, "status-"+tc.state, []byte(normalize(t, e, out)))
		})
	}
}

// nextKeyName matches the hash suffix of a next private key's name,
// which hashes the Certificate's UID, the API server's choice.
var nextKeyName = regexp.MustCompile(`-next-key-(\d+)-[0-9a-f]{8}`)

// normalize replaces in a status output what depends on the
// Certificate's UID, which the API server assigns: the hash in next
// private keys' names, and the point chosen in an ARI window (checked to
// be in the window first).
func normalize(t *testing.T, e *env, out string) string {
	t.Helper()
	out = nextKeyName.ReplaceAllString(out, "-next-key-$1-<hash>")
	g, err := gather(e.ctx, e.c, e.ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	if g.snap.ARI == nil {
		return out
	}
	res := g.decide(t0, DefaultConfig())
	if res.Renewal == nil || res.Renewal.Source != renewal.SourceARI {
		t.Fatalf("the renewal time does not come from the ARI window: %+v", res.Renewal)
	}
	p := res.Renewal.RenewalTime
	if p.Before(g.snap.ARI.Start) || !p.Before(g.snap.ARI.End) {
		t.Fatalf("the point %s is outside the ARI window %s to %s", p, g.snap.ARI.Start, g.snap.ARI.End)
	}
	out = strings.ReplaceAll(out, stamp(p, t0), "<point in the ARI window>")
	return strings.ReplaceAll(out, p.UTC().Format(time.RFC3339), "<point in the ARI window>")
}

// noKeyMaterial fails when out holds a PEM private key, or any 16
// characters of the base64 of a private key in the env's namespace.
func noKeyMaterial(t *testing.T, e *env, out string) {
	t.Helper()
	if strings.Contains(out, "PRIVATE KEY") {
		t.Errorf("the output holds a PEM private key")
	}
	var secrets corev1.SecretList
	if err := e.c.List(e.ctx, &secrets, client.InNamespace(e.ns)); err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		for _, line := range strings.Split(string(s.Data[keys.SecretPrivateKey]), "\n") {
			if strings.HasPrefix(line, "-----") {
				continue
			}
			for i := 0; i+16 <= len(line); i += 8 {
				if strings.Contains(out, line[i:i+16]) {
					t.Errorf("the output holds part of the private key of secret %s", s.Name)
					return
				}
			}
		}
	}
}

func failed() cmapi.CertificateRequestCondition {
	return cmapi.CertificateRequestCondition{Type: cmapi.CertificateRequestConditionReady, Status: cmmeta.ConditionFalse,
		Reason: cmapi.CertificateRequestReasonFailed, Message: "the CA is unavailable: 503 Service Unavailable"}
}

// replaceKey puts another key in a Secret's tls.key.
func (e *env) replaceKey(secret, keyName string) {
	e.t.Helper()
	var s corev1.Secret
	if err := e.c.Get(e.ctx, types.NamespacedName{Namespace: e.ns, Name: secret}, &s); err != nil {
		e.t.Fatal(err)
	}
	pemKey, err := keys.EncodePrivateKey(testKey(e.t, keyName), keys.EncodingPKCS8)
	if err != nil {
		e.t.Fatal(err)
	}
	s.Data[keys.SecretPrivateKey] = pemKey
	if err := e.c.Update(e.ctx, &s); err != nil {
		e.t.Fatal(err)
	}
}

// acmeOrder makes an Order controlled by the request, in state, and its
// Challenges controlled by the Order, as an ACME issuer keeps them.
func (e *env) acmeOrder(req *cmapi.CertificateRequest, name string, state cmacme.State, chs []cmacme.Challenge) {
	e.t.Helper()
	ctrl := true
	o := &cmacme.Order{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: cmapi.SchemeGroupVersion.String(), Kind: cmapi.CertificateRequestKind, Name: req.Name, UID: req.UID, Controller: &ctrl}}},
		Spec: cmacme.OrderSpec{Request: req.Spec.Request, IssuerRef: req.Spec.IssuerRef, DNSNames: []string{"web.example.com"}},
	}
	e.create(o)
	o.Status = cmacme.OrderStatus{URL: "https://acme.example/order/1", State: state}
	if err := e.c.Status().Update(e.ctx, o); err != nil {
		e.t.Fatal(err)
	}
	for _, ch := range chs {
		ch.Namespace = e.ns
		ch.OwnerReferences = []metav1.OwnerReference{{APIVersion: cmacme.SchemeGroupVersion.String(), Kind: "Order", Name: o.Name, UID: o.UID, Controller: &ctrl}}
		ch.Spec.IssuerRef = req.Spec.IssuerRef
		ch.Spec.URL, ch.Spec.AuthorizationURL = "https://acme.example/chall/1", "https://acme.example/authz/1"
		ch.Spec.Solver = cmacme.ACMEChallengeSolver{HTTP01: &cmacme.ACMEChallengeSolverHTTP01{}}
		st := ch.Status
		e.create(&ch)
		ch.Status = st
		if err := e.c.Status().Update(e.ctx, &ch); err != nil {
			e.t.Fatal(err)
		}
	}
}

// setARI records a CA's suggested renewal window in the status, as
// cert-manager does with ARI on.
func (e *env) setARI(name string, start, end time.Time) {
	e.t.Helper()
	var c cmapi.Certificate
	if err := e.c.Get(e.ctx, types.NamespacedName{Namespace: e.ns, Name: name}, &c); err != nil {
		e.t.Fatal(err)
	}
	c.Status.ACME = &cmapi.CertificateACMEStatus{ARI: &cmapi.CertificateACMEARIStatus{
		SuggestedWindow: &cmapi.ACMERenewalWindow{Start: &metav1.Time{Time: start}, End: &metav1.Time{Time: end}},
		ExplanationURL:  "https://acme.example/docs/ari",
		LastChecked:     &metav1.Time{Time: t0.Add(-time.Hour)}, NextCheck: &metav1.Time{Time: t0.Add(5 * time.Hour)},
	}}
	if err := e.c.Status().Update(e.ctx, &c); err != nil {
		e.t.Fatal(err)
	}
}
