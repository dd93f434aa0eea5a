package host_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/acmeclient/acmetest"
	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
)

// The replicas test, in one process: three Loops over one MemoryStore,
// each with an identity and an ACME issuer of its own, the issuers'
// state store shared (acmeclient.MemoryStore standing in for the
// database the replicas of a service share) and one ACME account; every
// replica's solver is the one HTTP-01 handler Pebble validates against,
// as a handler over a shared PresentationStore would be. Pebble runs on
// the real clock; the replicas on one fake clock, moved no faster than
// real time while an order waits on Pebble (replicaEnv.run).

type replica struct {
	id     string
	loop   *host.Loop
	client *acmeclient.Client
	dead   bool
}

// newOrders counts, between the ACME clients and Pebble, the newOrder
// requests sent and the orders Pebble created (201 Created): a request
// that met a bad nonce or a 5xx is sent again by the ACME library, and
// only the last makes an order. lost counts the requests whose answer
// never came (the order may or may not have been made).
type newOrders struct {
	base    http.RoundTripper
	mu      sync.Mutex
	sent    int
	created int
	lost    int
}

func (n *newOrders) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := n.base.RoundTrip(r)
	if wireKind(r.URL.Path) == "newOrder" {
		n.mu.Lock()
		n.sent++
		switch {
		case err != nil:
			n.lost++
		case resp.StatusCode == http.StatusCreated:
			n.created++
		}
		n.mu.Unlock()
	}
	return resp, err
}

func (n *newOrders) count() (sent, created int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.sent, n.created
}

type replicaEnv struct {
	t     *testing.T
	clk   *testingclock.FakeClock
	srv   *acmetest.Server
	wire  *newOrders
	store *host.MemoryStore
	acme  *acmeclient.MemoryStore
	reps  []*replica

	mu sync.Mutex
	// orders counts the CreateOrder actions by order (one per request).
	orders map[string]int
	// handed is, per request, each time a replica handed it to its
	// issuer while it was unanswered: the replica and the time.
	handed map[string][]handing
	// held are the passes that found a request held by another.
	held []host.Event
	// made are the requests made, by name, with their UIDs.
	made map[string]map[string]bool
}

type handing struct {
	replica string
	at      time.Time
}

func newReplicaEnv(t *testing.T, n int) *replicaEnv {
	// Pebble asks for a second's wait after each challenge is accepted,
	// so that every order is in flight across more than one pass.
	srv, err := acmetest.Start(acmetest.Options{RetryAfterAuthz: 1})
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	e := &replicaEnv{t: t, clk: testingclock.NewFakeClock(time.Now().Truncate(time.Second)), srv: srv,
		orders: map[string]int{}, handed: map[string][]handing{}, made: map[string]map[string]bool{}}
	e.store, e.acme = host.NewMemoryStore(e.clk), acmeclient.NewMemoryStore()
	e.store.Watch(func(ch host.Change) {
		if ch.Kind == host.KindRequest && !ch.Deleted {
			e.mu.Lock()
			if e.made[ch.Name] == nil {
				e.made[ch.Name] = map[string]bool{}
			}
			e.made[ch.Name][ch.Meta.UID] = true
			e.mu.Unlock()
		}
	})
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	base := srv.ClientConfig(key).HTTPClient.Transport
	e.wire = &newOrders{base: base}
	for i := range n {
		id := fmt.Sprintf("replica-%d", i)
		cfg := srv.ClientConfig(key) // one account for every replica
		hc := *cfg.HTTPClient
		hc.Transport, hc.Timeout = e.wire, 5*time.Second
		cfg.HTTPClient, cfg.Clock = &hc, e.clk
		client, err := acmeclient.New(cfg)
		require.NoError(t, err)
		iss, err := acmeclient.NewIssuer(acmeclient.IssuerConfig{Client: client, Store: e.acme, Solvers: srv.Solvers(),
			Account: acmeclient.AccountOptions{AgreeToTerms: true}, Profile: "default", Trace: e.trace})
		require.NoError(t, err)
		loop, err := host.New(host.Config{Store: e.store, Clock: e.clk, Identity: id,
			Issuers: map[certificate.IssuerRef]certificate.Issuer{{Name: "pebble"}: iss},
			Observe: func(ev host.Event) { e.observe(id, ev) }})
		require.NoError(t, err)
		e.reps = append(e.reps, &replica{id: id, loop: loop, client: client})
	}
	return e
}

func (e *replicaEnv) trace(ev acmeclient.Event) {
	for _, a := range ev.Actions {
		if strings.HasPrefix(a, "CreateOrder{") {
			e.mu.Lock()
			e.orders[ev.Resource]++
			e.mu.Unlock()
		}
	}
}

func (e *replicaEnv) observe(id string, ev host.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ev.Held != nil {
		e.held = append(e.held, ev)
	}
	if ev.Kind == host.KindRequest && ev.Request != nil {
		e.handed[ev.Name] = append(e.handed[ev.Name], handing{id, ev.Time})
	}
}

func (e *replicaEnv) create(name string) {
	_, err := e.store.Certificates().Create(context.Background(), &certificate.Certificate{
		ObjectMeta: certificate.ObjectMeta{Namespace: "default", Name: name},
		Spec: certificate.Spec{SecretName: name + "-tls", DNSNames: []string{name + ".example"},
			IssuerRef: certificate.IssuerRef{Name: "pebble"}},
	})
	require.NoError(e.t, err)
}

func (e *replicaEnv) certs() []*certificate.Certificate {
	cs, err := e.store.Certificates().List(context.Background(), host.ListOptions{})
	require.NoError(e.t, err)
	return cs
}

// allAt: every certificate is Ready at revision rev at least, and not
// issuing.
func (e *replicaEnv) allAt(rev int) func() bool {
	return func() bool {
		for _, c := range e.certs() {
			if !ready(c) || revision(c) < rev || c.Status.Condition(certificate.ConditionIssuing) != nil {
				return false
			}
		}
		return true
	}
}

// issuing reports a request no issuer has answered yet.
func (e *replicaEnv) issuing() bool {
	reqs, err := e.store.Requests().List(context.Background(), host.ListOptions{})
	require.NoError(e.t, err)
	for _, r := range reqs {
		if !certificate.Answered(r) {
			return true
		}
	}
	return false
}

// run steps every live replica's loop on the fake clock until done
// holds, moving the clock to the earliest time one of them is due, no
// faster than real time across the short waits of an order in flight
// (Pebble validates on its own clock); it fails when more than bound of
// fake time passes first.
func (e *replicaEnv) run(what string, bound time.Duration, done func() bool) time.Duration {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	from := e.clk.Now()
	for steps := 0; ; steps++ {
		require.Less(e.t, steps, 100000, "%s: the replicas are still busy", what)
		// Each round starts with the next replica, so that no one is
		// always first to see what another wrote.
		for i := range e.reps {
			r := e.reps[(steps+i)%len(e.reps)]
			if !r.dead {
				_, err := r.loop.Step(ctx)
				require.NoError(e.t, err, "%s: %s stopped", what, r.id)
			}
		}
		if done() {
			return e.clk.Now().Sub(from)
		}
		var next time.Time
		for _, r := range e.reps {
			if n, ok := r.loop.Next(); ok && !r.dead && (next.IsZero() || n.Before(next)) {
				next = n
			}
		}
		require.False(e.t, next.IsZero(), "%s: nothing is queued and it is not done", what)
		require.False(e.t, next.After(from.Add(bound)), "%s: not done within %v: the next thing is due at +%v", what, bound, next.Sub(from))
		if now := e.clk.Now(); next.After(now) {
			if pause := next.Sub(now); pause <= 5*time.Second && e.issuing() {
				select {
				case <-ctx.Done():
					e.t.Fatalf("%s: more than 90 s of real time", what)
				case <-time.After(pause):
				}
			}
			e.clk.SetTime(next)
		}
	}
}

// checkIssued checks every certificate's secret: a chain to Pebble's
// root for the certificate's name.
func (e *replicaEnv) checkIssued() {
	ctx := context.Background()
	for _, c := range e.certs() {
		sec, err := e.store.Secrets().Get(ctx, c.Namespace, c.Spec.SecretName)
		require.NoError(e.t, err)
		var certs []*x509.Certificate
		for rest := sec.Data["tls.crt"]; ; {
			var b *pem.Block
			if b, rest = pem.Decode(rest); b == nil {
				break
			}
			crt, err := x509.ParseCertificate(b.Bytes)
			require.NoError(e.t, err)
			certs = append(certs, crt)
		}
		require.NotEmpty(e.t, certs, "certificate %s has a chain", c.Name)
		inter := x509.NewCertPool()
		for _, crt := range certs[1:] {
			inter.AddCert(crt)
		}
		_, err = certs[0].Verify(x509.VerifyOptions{DNSName: c.Spec.DNSNames[0], Roots: e.srv.RootPool(), Intermediates: inter,
			CurrentTime: certs[0].NotBefore.Add(time.Minute)})
		assert.NoError(e.t, err, "certificate %s", c.Name)
	}
}

// checkOneOrderPerRevision: one request per revision (its name), and
// one order per request — one newOrder on the wire for each, and no
// order created twice. It returns how many requests were made.
func (e *replicaEnv) checkOneOrderPerRevision() int {
	e.t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	for name, uids := range e.made {
		assert.Len(e.t, uids, 1, "request %s was made %d times", name, len(uids))
	}
	for order, n := range e.orders {
		assert.Equal(e.t, 1, n, "%s was created %d times", order, n)
	}
	assert.Len(e.t, e.orders, len(e.made), "an order per request (per revision)")
	sent, created := e.wire.count()
	badNonces := 0
	for _, r := range e.reps {
		badNonces += r.client.Transport().Counts().BadNonces
	}
	assert.Equal(e.t, len(e.made), created, "an order created at the CA per request (per revision); %d newOrder requests sent, %d bad nonces met", sent, badNonces)
	e.wire.mu.Lock()
	assert.Zero(e.t, e.wire.lost, "newOrder requests whose answer never came: the count of orders is unsure")
	e.wire.mu.Unlock()
	return len(e.made)
}

// orderOf is the name of the order of the request name.
func orderOf(e *replicaEnv, name string) string {
	req, err := e.store.Requests().Get(context.Background(), "default", name)
	if err != nil {
		return ""
	}
	return acmeclient.OrderName(req)
}

func TestReplicasOrderEachRevisionOnceAndTakeOverADeadReplicasOrder(t *testing.T) {
	const certs = 5
	e := newReplicaEnv(t, 3)
	for i := range certs {
		e.create(fmt.Sprintf("web%d", i))
	}
	took := e.run("first issuance", 10*time.Minute, e.allAt(1))
	e.checkIssued()
	require.Equal(t, certs, e.checkOneOrderPerRevision())
	workers := map[string]bool{}
	e.mu.Lock()
	for _, hs := range e.handed {
		for _, h := range hs {
			workers[h.replica] = true
		}
	}
	heldSeen := len(e.held)
	e.mu.Unlock()
	assert.Positive(t, heldSeen, "the replicas found requests held by each other")

	// Every certificate renewed by hand; a replica is killed (its loop
	// stopped, never told) as soon as it has handed a request to its
	// issuer and the order is created.
	ctx := context.Background()
	for _, c := range e.certs() {
		c.Status.Conditions = append(c.Status.Conditions, certificate.Condition{Type: certificate.ConditionIssuing,
			Status: certificate.StatusTrue, Reason: certificate.ReasonManualTrigger, LastTransitionTime: e.clk.Now()})
		_, err := e.store.Certificates().Update(ctx, c)
		require.NoError(t, err)
	}
	var victim *replica
	var killed string
	var killedAt time.Time
	e.run("a replica mid-order", 10*time.Minute, func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		for name, hs := range e.handed {
			last := hs[len(hs)-1]
			if !strings.HasSuffix(name, "-2") || e.orders["order/"+orderOf(e, name)] == 0 {
				continue
			}
			req, err := e.store.Requests().Get(ctx, "default", name)
			if err == nil && !certificate.Answered(req) {
				killed, killedAt = name, last.at
				for _, r := range e.reps {
					if r.id == last.replica {
						victim = r
					}
				}
				return true
			}
		}
		return false
	})
	victim.dead = true
	e.run("renewal after the kill", 10*time.Minute, e.allAt(2))
	e.checkIssued()
	require.Equal(t, 2*certs, e.checkOneOrderPerRevision())

	// The dead replica's request was taken over once its lease expired,
	// and not before.
	e.mu.Lock()
	var takeover handing
	for _, h := range e.handed[killed] {
		if h.replica != victim.id {
			takeover = h
			break
		}
	}
	var heldMessages []string
	for _, ev := range e.held {
		if ev.Name == killed {
			heldMessages = append(heldMessages, ev.Held.String())
		}
	}
	e.mu.Unlock()
	require.NotEmpty(t, takeover.replica, "request %s was taken over", killed)
	waited := takeover.at.Sub(killedAt)
	assert.GreaterOrEqual(t, waited, host.DefaultLeaseDuration, "taken over only once the lease expired")
	assert.LessOrEqual(t, waited, host.DefaultLeaseDuration+5*time.Second, "taken over as soon as the lease expired")
	require.NotEmpty(t, heldMessages, "the others said who held it")
	assert.Contains(t, heldMessages[0], "held by "+victim.id+" until")
	assert.Zero(t, e.srv.HTTP01Handler().Presented(), "no token left presented")
	sent, created := e.wire.count()
	t.Logf("3 replicas, %d certificates, 2 revisions each: %d orders (%d newOrder requests sent), 1 per revision; first issuance in %v of fake time, replicas at work: %d; "+
		"request %s of killed %s taken over by %s %v after its last pass (lease %v); %d passes found a request held by another",
		certs, created, sent, took.Round(100*time.Millisecond), len(workers), killed, victim.id, takeover.replica, waited, host.DefaultLeaseDuration, len(e.held))
}

// Replicas each ask the CA for a certificate's renewal window on their
// own schedule: one started later asks when it first looks, so its next
// check differs from the one the status records. The status's record is
// rewritten when it is due, not whenever two replicas' next checks
// differ: otherwise every pass of one would overwrite the other's record,
// and every write would bring the other's pass, with no end.
func TestReplicasDoNotOverwriteEachOthersRenewalInfo(t *testing.T) {
	ctx := context.Background()
	e := newReplicaEnv(t, 2)
	e.reps[1].dead = true // started later
	e.create("web")
	e.run("first issuance", 10*time.Minute, e.allAt(1))
	// settle steps the live replicas through everything due until
	// nothing is, and says how many rounds that took.
	settle := func() (rounds int) {
		for busy := true; busy && rounds < 200; rounds++ {
			busy = false
			for _, r := range e.reps {
				if n, ok := r.loop.Next(); ok && !r.dead && !n.After(e.clk.Now()) {
					_, err := r.loop.Step(ctx)
					require.NoError(t, err)
					busy = true
				}
			}
		}
		return rounds
	}
	settle()
	first := e.certs()[0].Status.RenewalInfo
	require.NotNil(t, first, "the first replica recorded the CA's renewal window")
	require.NotNil(t, first.NextCheck)

	var writes int
	e.store.Watch(func(ch host.Change) {
		if ch.Kind == host.KindCertificate && !ch.Deleted {
			e.mu.Lock()
			writes++
			e.mu.Unlock()
		}
	})
	e.clk.Step(90 * time.Second)
	e.reps[1].dead = false
	// Both replicas look at everything that is due, over and over, until
	// neither has anything due: a fight over the record never ends.
	rounds := settle()
	e.mu.Lock()
	require.Less(t, rounds, 200, "the replicas are still writing the certificate after %d rounds (%d writes)", rounds, writes)
	defer e.mu.Unlock()
	assert.Zero(t, writes, "the record was not due: nothing to write")
	assert.Equal(t, first, e.certs()[0].Status.RenewalInfo, "the first replica's record stands")
	assert.Equal(t, 1, e.reps[1].client.Transport().Counts().ByKind[acmeclient.KindRenewalInfo], "the second replica asked the CA itself")
}
