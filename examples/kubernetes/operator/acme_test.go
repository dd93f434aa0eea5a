package operator_test

import (
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	cmacme "github.com/cert-manager/cert-manager/pkg/apis/acme/v1"
	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/certlife/certlife/acmeclient/acmetest"
	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/keys"

	"github.com/certlife/certlife/examples/kubernetes/operator"
)

// pebble starts Pebble in process for a test: the ACME server, its DNS
// (every name is 127.0.0.1) and the port it validates HTTP-01 on.
func pebble(t *testing.T) *acmetest.Server {
	t.Helper()
	srv, err := acmetest.Start(acmetest.Options{})
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	return srv
}

// withACME points an operator's ACME at Pebble: cs answers on the port
// Pebble validates HTTP-01 against, and the self-checks resolve names as
// Pebble does.
func withACME(srv *acmetest.Server, cs *operator.ChallengeServer) func(*manager.Options, *operator.Options) {
	return func(_ *manager.Options, o *operator.Options) {
		srv.SetHTTP01Handler(cs)
		checks := srv.Solvers()
		o.ACME = operator.ACMEOptions{ChallengeServer: cs, HTTP01Check: checks.HTTP01Check, DNS01Check: checks.DNS01Check}
	}
}

// acmeIssuer makes an ACME Issuer on Pebble, with an HTTP-01 solver, and
// waits until its account is registered.
func (h *harness) acmeIssuer(name string, srv *acmetest.Server) *cmapi.Issuer {
	h.t.Helper()
	h.create(&cmapi.Issuer{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{ACME: &cmacme.ACMEIssuer{
		Server: srv.DirectoryURL, Email: "ops@example.com", CABundle: srv.CABundle(),
		PrivateKey: secretKey(name+"-account", ""),
		Solvers:    []cmacme.ACMEChallengeSolver{{HTTP01: &cmacme.ACMEChallengeSolverHTTP01{}}},
	}}}})
	var iss cmapi.Issuer
	h.eventually("the ACME issuer to be Ready", func() bool {
		if err := k8s.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: name}, &iss); err != nil {
			return false
		}
		c := condition(iss.Status.Conditions, "Ready")
		return c != nil && c.Status == cmmeta.ConditionTrue
	})
	return &iss
}

func secretKey(name, key string) cmmeta.SecretKeySelector {
	return cmmeta.SecretKeySelector{LocalObjectReference: cmmeta.LocalObjectReference{Name: name}, Key: key}
}

func (h *harness) orders() []cmacme.Order {
	h.t.Helper()
	var l cmacme.OrderList
	require.NoError(h.t, k8s.List(h.ctx, &l, client.InNamespace(h.ns)))
	return l.Items
}

func (h *harness) challenges() []cmacme.Challenge {
	h.t.Helper()
	var l cmacme.ChallengeList
	require.NoError(h.t, k8s.List(h.ctx, &l, client.InNamespace(h.ns)))
	return l.Items
}

// leafOf parses a Secret's certificate and checks its key.
func (h *harness) leafOf(secret string) *x509.Certificate {
	h.t.Helper()
	s, err := h.secret(secret)
	require.NoError(h.t, err)
	pair, err := tls.X509KeyPair(s.Data[keys.SecretCertificate], s.Data[keys.SecretPrivateKey])
	require.NoError(h.t, err, "tls.key is the key of tls.crt")
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	require.NoError(h.t, err)
	return leaf
}

// A Certificate from an ACME Issuer becomes Ready through Pebble: the
// account key is made and the account registered, one Order and one
// Challenge per name are kept as resources, HTTP-01 is answered by the
// operator's challenge server, the certificate chains to Pebble's root.
// A renewal names the certificate it replaces (RFC 9773), and Pebble
// marks the old one replaced.
func TestACMEIssuerIssuesAndRenews(t *testing.T) {
	srv := pebble(t)
	h := newHarness(t)
	cs := operator.NewChallengeServer()
	op := h.start(withACME(srv, cs))
	iss := h.acmeIssuer("le", srv)
	require.NotNil(t, iss.Status.ACME)
	assert.NotEmpty(t, iss.Status.ACME.URI, "the account URL is in status")
	acct, err := h.secret("le-account")
	require.NoError(t, err, "the account key Secret is made")
	key, err := keys.DecodePrivateKey(acct.Data["tls.key"])
	require.NoError(t, err)
	assert.IsType(t, &rsa.PrivateKey{}, key, "an RSA account key, as cert-manager requires of the accounts it uses")
	assert.NotEmpty(t, iss.Status.ACME.LastPrivateKeyHash)
	h.settle(op)
	op.writes.take()

	h.create(h.certificate("web", "le", func(s *cmapi.CertificateSpec) { s.DNSNames = []string{"web.example", "www.web.example"} }))
	h.waitReady("web", 1)
	h.settle(op)
	first, failed := op.writes.take()
	t.Logf("writes for a first ACME issuance: %v (failed: %v)", first, failed)
	// The certificate's side as with any issuer (the Certificate's
	// status twice more while the order waits and is finalised, the
	// request's twice more as it goes Pending); the ACME state, an Order
	// and a Challenge per name, each written as it changes (measured:
	// 52 in all for two names).
	res := byResource(first)
	assert.LessOrEqual(t, res["Secret"]+res["CertificateRequest"]+res["Certificate"], 12, "the certificate's side: %v", res)
	assert.LessOrEqual(t, sum(first), 52, "writes for a first ACME issuance of two names: %v", res)
	leaf := h.leafOf("web-tls")
	assert.ElementsMatch(t, []string{"web.example", "www.web.example"}, leaf.DNSNames)
	_, err = leaf.Verify(x509.VerifyOptions{Roots: srv.RootPool(), Intermediates: intermediates(t, h, "web-tls"), CurrentTime: time.Now()})
	assert.NoError(t, err, "the certificate chains to Pebble's root")

	orders := h.orders()
	require.Len(t, orders, 1, "one order for one request")
	o := orders[0]
	assert.Equal(t, cmacme.Valid, o.Status.State)
	assert.NotEmpty(t, o.Status.URL)
	assert.NotEmpty(t, o.Status.FinalizeURL)
	assert.Len(t, o.Status.Authorizations, 2)
	assert.NotEmpty(t, o.Status.Certificate)
	assert.ElementsMatch(t, []string{"web.example", "www.web.example"}, o.Spec.DNSNames)
	assert.NotEmpty(t, o.Spec.Request)
	assert.NotNil(t, operator.OrderToCore(&o).AnsweredAt, "the order records the answer")
	assert.Equal(t, "web-1", metav1.GetControllerOf(&o).Name, "the request owns its order")
	assert.Equal(t, 2, first["create Challenge"], "a challenge per name")
	assert.Equal(t, 2, first["delete Challenge"], "the challenges are cleaned up and deleted once the order is done")
	assert.Empty(t, h.challenges())
	assert.Equal(t, float64(1), op.metric("certlife_acme_requests_total", h.ns, "Issuer", "le", "newOrder"))
	assert.Equal(t, float64(1), op.metric("certlife_acme_requests_total", h.ns, "Issuer", "le", "finalize"))
	acmeCounts := map[string]float64{}
	for _, k := range []string{"directory", "nonce", "account", "newOrder", "authorization", "challenge", "finalize", "order", "certificate", "renewalInfo", "other"} {
		if v := op.metric("certlife_acme_requests_total", h.ns, "Issuer", "le", k); v > 0 {
			acmeCounts[k] = v
		}
	}
	t.Logf("ACME requests, account registration and first issuance: %v", acmeCounts)
	assert.Equal(t, float64(1), op.metric("certlife_issuer_answers_total", h.ns, "Issuer", "le", certificate.RequestReasonIssued))
	assert.Equal(t, 0, cs.Presented(), "no token is served once the order is done")
	// The renewal information Pebble gave, where cert-manager writes it.
	ari := h.get("web").Status.ACME
	require.NotNil(t, ari, "status.acme")
	require.NotNil(t, ari.ARI, "status.acme.ari")
	require.NotNil(t, ari.ARI.SuggestedWindow, "status.acme.ari.suggestedWindow")
	assert.True(t, ari.ARI.SuggestedWindow.Start.Before(ari.ARI.SuggestedWindow.End), "the window: %v", ari.ARI.SuggestedWindow)
	assert.True(t, leaf.NotBefore.Before(ari.ARI.SuggestedWindow.Start.Time) && ari.ARI.SuggestedWindow.End.Time.Before(leaf.NotAfter),
		"the window %v lies within the certificate's validity", ari.ARI.SuggestedWindow)
	require.NotNil(t, ari.ARI.LastChecked)
	require.NotNil(t, ari.ARI.NextCheck)
	assert.True(t, ari.ARI.NextCheck.After(ari.ARI.LastChecked.Time), "next check %v after the last %v", ari.ARI.NextCheck, ari.ARI.LastChecked)
	assert.Empty(t, ari.ARI.LastError)

	// Renewal, by hand: the new order names the certificate it replaces.
	crt := h.get("web")
	crt.Status.Conditions = append(crt.Status.Conditions, cmapi.CertificateCondition{Type: cmapi.CertificateConditionIssuing, Status: cmmeta.ConditionTrue,
		Reason: certificate.ReasonManualTrigger, Message: "by hand", LastTransitionTime: &metav1.Time{Time: h.clock.Now()}})
	require.NoError(t, k8s.Status().Update(h.ctx, crt))
	h.waitReady("web", 2)
	h.settle(op)
	renewal, failed := op.writes.take()
	t.Logf("writes for an ACME renewal: %v (failed: %v)", renewal, failed)
	// As the first, and the revision history's delete of the last request
	// and its order, the target Secret patched instead of created.
	assert.LessOrEqual(t, sum(renewal), 55, "writes for an ACME renewal of two names: %v", byResource(renewal))
	var renewed *cmacme.Order
	for _, o := range h.orders() {
		if metav1.GetControllerOf(&o).Name == "web-2" {
			renewed = &o
		}
	}
	require.NotNil(t, renewed, "the renewal has its own order")
	assert.NotEmpty(t, renewed.Spec.Replaces, "the renewal's order names the certificate it replaces")
	replaced, err := srv.Replaced(leaf)
	require.NoError(t, err)
	assert.True(t, replaced, "Pebble marked the first certificate replaced")
	assert.NotEqual(t, leaf.SerialNumber, h.leafOf("web-tls").SerialNumber)
}

func intermediates(t *testing.T, h *harness, secret string) *x509.CertPool {
	s, err := h.secret(secret)
	require.NoError(t, err)
	pair, err := tls.X509KeyPair(s.Data[keys.SecretCertificate], s.Data[keys.SecretPrivateKey])
	require.NoError(t, err)
	pool := x509.NewCertPool()
	for _, der := range pair.Certificate[1:] {
		c, err := x509.ParseCertificate(der)
		require.NoError(t, err)
		pool.AddCert(c)
	}
	return pool
}

// gate answers HTTP-01 with its handler only when open: closed, the CA
// and the self-check find nothing.
type gate struct {
	open atomic.Bool
	next http.Handler
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !g.open.Load() {
		http.NotFound(w, r)
		return
	}
	g.next.ServeHTTP(w, r)
}

// An operator stopped in the middle of an order, and started again with
// nothing in memory, resumes the same order from its Order and Challenge
// resources: no second order at the CA, the token presented again.
func TestACMERestartResumesTheSameOrder(t *testing.T) {
	srv := pebble(t)
	h := newHarness(t)
	cs1 := operator.NewChallengeServer()
	g := &gate{next: cs1}
	op1 := h.start(withACME(srv, cs1), func(*manager.Options, *operator.Options) { srv.SetHTTP01Handler(g) })
	h.acmeIssuer("le", srv)
	h.create(h.certificate("web", "le"))
	h.eventually("the challenge to be presented and waiting for its self-check", func() bool {
		chs := h.challenges()
		if len(chs) != 1 {
			return false
		}
		st := operator.ChallengeToCore(&chs[0]).Status
		return chs[0].Status.Presented && st.SelfCheckAt != nil && !st.SelfCheckPassed
	})
	before := h.orders()
	require.Len(t, before, 1)
	require.NotEmpty(t, before[0].Status.URL, "the order exists at the CA")
	assert.Equal(t, float64(1), op1.metric("certlife_acme_requests_total", h.ns, "Issuer", "le", "newOrder"))
	op1.stop()

	cs2 := operator.NewChallengeServer()
	g2 := &gate{next: cs2}
	g2.open.Store(true)
	op2 := h.start(withACME(srv, cs2), func(*manager.Options, *operator.Options) { srv.SetHTTP01Handler(g2) })
	h.clock.Step(time.Minute) // past the self-check's retry
	h.waitReady("web", 1)
	after := h.orders()
	require.Len(t, after, 1, "still one order")
	assert.Equal(t, before[0].UID, after[0].UID)
	assert.Equal(t, before[0].Status.URL, after[0].Status.URL, "the same order at the CA")
	assert.Equal(t, float64(0), op2.metric("certlife_acme_requests_total", h.ns, "Issuer", "le", "newOrder"), "the restarted operator made no new order")
}

// A request deleted while its order waits takes its order and challenges
// with it, and what they presented stops being served.
func TestACMEDeletedRequestCleansUp(t *testing.T) {
	srv := pebble(t)
	h := newHarness(t)
	cs := operator.NewChallengeServer()
	g := &gate{next: cs}
	h.start(withACME(srv, cs), func(*manager.Options, *operator.Options) { srv.SetHTTP01Handler(g) })
	h.acmeIssuer("le", srv)
	h.create(h.certificate("web", "le"))
	h.eventually("the challenge to be presented", func() bool {
		chs := h.challenges()
		return len(chs) == 1 && chs[0].Status.Presented
	})
	require.Equal(t, 1, cs.Presented())
	// A spec change replaces the request mid-order.
	h.edit("web", func(c *cmapi.Certificate) { c.Spec.DNSNames = []string{"web2.example"} })
	g.open.Store(true)
	h.waitReady("web", 1)
	leaf := h.leafOf("web-tls")
	assert.Equal(t, []string{"web2.example"}, leaf.DNSNames)
	h.eventually("the old order to be gone", func() bool {
		for _, o := range h.orders() {
			if len(o.Spec.DNSNames) > 0 && o.Spec.DNSNames[0] == "web.example" {
				return false
			}
		}
		return true
	})
	for _, c := range h.challenges() {
		assert.Equal(t, "web2.example", c.Spec.DNSName, "the old order's challenges are gone")
	}
	assert.Equal(t, 0, cs.Presented(), "the old token is no longer served")
}

// A ClusterIssuer on a CA that requires an external account binding and
// offers profiles: the account is bound with the key ID and MAC key from
// a Secret in the cluster resource namespace, and the certificate comes
// from the profile asked for (Pebble's "shortlived": 6 days).
func TestACMEClusterIssuerWithEABAndProfile(t *testing.T) {
	const keyID, mac = "kid-1", "zWNDZM6eQGHWpSRTPal5eIUYFTu7EajVIoguysqZ9wG44nMEtx3MUAsUDkMTQ12W"
	srv, err := acmetest.Start(acmetest.Options{RequireEAB: true, EAB: map[string]string{keyID: mac}})
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	h := newHarness(t) // the operator's cluster resource namespace is the test's
	h.start(withACME(srv, operator.NewChallengeServer()))
	h.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "eab"}, Data: map[string][]byte{"mac": []byte(mac)}})
	name := h.ns + "-le"
	require.NoError(t, k8s.Create(h.ctx, &cmapi.ClusterIssuer{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{ACME: &cmacme.ACMEIssuer{
		Server: srv.DirectoryURL, CABundle: srv.CABundle(), Profile: "shortlived",
		PrivateKey:             secretKey("le-account", "tls.key"),
		ExternalAccountBinding: &cmacme.ACMEExternalAccountBinding{KeyID: keyID, Key: secretKey("eab", "mac")},
		Solvers:                []cmacme.ACMEChallengeSolver{{HTTP01: &cmacme.ACMEChallengeSolverHTTP01{}}},
	}}}}))
	t.Cleanup(func() { _ = k8s.Delete(h.ctx, &cmapi.ClusterIssuer{ObjectMeta: metav1.ObjectMeta{Name: name}}) })
	h.eventually("the ClusterIssuer's account to be registered", func() bool {
		var iss cmapi.ClusterIssuer
		if err := k8s.Get(h.ctx, client.ObjectKey{Name: name}, &iss); err != nil {
			return false
		}
		c := condition(iss.Status.Conditions, "Ready")
		return c != nil && c.Status == cmmeta.ConditionTrue && iss.Status.ACME != nil && iss.Status.ACME.URI != ""
	})
	h.create(h.certificate("web", name, func(s *cmapi.CertificateSpec) { s.IssuerRef.Kind = cmapi.ClusterIssuerKind }))
	h.waitReady("web", 1)
	leaf := h.leafOf("web-tls")
	assert.InDelta(t, (6 * 24 * time.Hour).Hours(), leaf.NotAfter.Sub(leaf.NotBefore).Hours(), 1, "the shortlived profile's validity")
	orders := h.orders()
	require.Len(t, orders, 1)
	assert.Equal(t, "shortlived", orders[0].Spec.Profile)
	assert.Equal(t, "ClusterIssuer", orders[0].Spec.IssuerRef.Kind)
}

// An ACME issuer whose server cannot be reached says so in its Ready
// condition, and its requests wait Pending, saying why.
func TestACMEUnreachableServer(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.create(&cmapi.Issuer{ObjectMeta: metav1.ObjectMeta{Name: "down"}, Spec: cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{ACME: &cmacme.ACMEIssuer{
		Server:     "https://127.0.0.1:1/directory",
		PrivateKey: secretKey("down-account", "tls.key"),
		Solvers:    []cmacme.ACMEChallengeSolver{{HTTP01: &cmacme.ACMEChallengeSolverHTTP01{}}},
	}}}})
	var msg string
	h.eventually("the issuer to say the server cannot be reached", func() bool {
		var iss cmapi.Issuer
		if err := k8s.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "down"}, &iss); err != nil {
			return false
		}
		c := condition(iss.Status.Conditions, "Ready")
		if c == nil {
			return false
		}
		msg = c.Message
		return c.Status == cmmeta.ConditionFalse && c.Reason == operator.ReasonACMEAccountFailed
	})
	assert.Contains(t, msg, "https://127.0.0.1:1/directory")
	h.create(h.certificate("web", "down"))
	h.eventually("the request to wait Pending with the reason", func() bool {
		for _, r := range h.requests() {
			for _, c := range r.Status.Conditions {
				if c.Type == cmapi.CertificateRequestConditionReady && c.Reason == certificate.RequestReasonPending && c.Message != "" && c.Message != "waiting for the ACME order "+r.Name {
					msg = c.Message
					return true
				}
			}
		}
		return false
	})
	t.Logf("the request says: %s", msg)
	assert.Empty(t, h.orders(), "no order without an account")
}

// Two replicas with leader election, and the CA's HTTP-01 requests going
// only to the replica that does not lead (as a Service may route them):
// it answers them from the Challenges in its cache, and the leader's
// order completes.
func TestACMEHTTP01AnsweredByEveryReplica(t *testing.T) {
	srv := pebble(t)
	h := newHarness(t)
	elect := h.elect
	leader := operator.NewChallengeServer()
	a := h.start(withACME(srv, leader), elect)
	<-a.mgr.Elected()
	follower := operator.NewChallengeServer()
	b := h.start(withACME(srv, follower), elect) // the CA now reaches only the follower
	h.acmeIssuer("le", srv)
	h.create(h.certificate("web", "le"))
	deadline := time.Now().Add(time.Minute)
	for !h.isReady("web", 1) {
		require.True(t, time.Now().Before(deadline), "timed out waiting for web Ready")
		h.clock.Step(time.Second) // the self-check's retries, should the follower's cache lag
		time.Sleep(100 * time.Millisecond)
	}
	assert.Zero(t, b.writes.total(), "the follower wrote nothing")
	assert.Zero(t, follower.Presented(), "the follower presented nothing itself")
	select {
	case <-b.mgr.Elected():
		t.Fatal("both replicas lead")
	default:
	}
}
