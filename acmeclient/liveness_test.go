package acmeclient_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/acmeclient/acmetest"
	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/order"
)

// settle steps a request on the fake clock until it is answered, and
// returns the answering step's result.
func (e *faultEnv) settle(t *testing.T, r *certificate.CertificateRequest) acmeclient.Result {
	t.Helper()
	ctx := timeout(t)
	for {
		res, err := e.issuer.Step(ctx, r)
		require.NoError(t, err)
		if res.Answered {
			return res
		}
		require.NoError(t, e.clock.wait(ctx, res.RequeueAt), "%s: %s", res.Reason, res.Message)
	}
}

// stepUntil steps a request on the fake clock until its state satisfies
// done.
func (e *faultEnv) stepUntil(t *testing.T, r *certificate.CertificateRequest, done func(*acmeclient.State) bool) {
	t.Helper()
	ctx := timeout(t)
	for {
		res, err := e.issuer.Step(ctx, r)
		require.NoError(t, err)
		require.False(t, res.Answered, "answered: %s", res.Message)
		st, err := e.store.Get(ctx, acmeclient.RequestRef{}, acmeclient.OrderName(r))
		require.NoError(t, err)
		if st != nil && done(st) {
			return
		}
		require.NoError(t, e.clock.wait(ctx, res.RequeueAt))
	}
}

// stuckToken is a presenter that cannot take one token down.
type stuckToken struct {
	acmeclient.Presenter
	token atomic.Value // string
}

func (s *stuckToken) CleanUp(ctx context.Context, p acmeclient.Presentation) error {
	if tok, _ := s.token.Load().(string); tok != "" && tok == p.Token {
		return errors.New("the web server's API is down")
	}
	return s.Presenter.CleanUp(ctx, p)
}

// firstTokenBlocked is a self-check that never passes for the first
// token it is asked about and passes for every other.
type firstTokenBlocked struct {
	mu    sync.Mutex
	first string
}

func (f *firstTokenBlocked) Check(_ context.Context, p acmeclient.Presentation) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.first == "" {
		f.first = p.Token
	}
	if p.Token == f.first {
		return errors.New("not served yet")
	}
	return nil
}

func challengeInFlight(st *acmeclient.State) bool {
	return len(st.Challenges) == 1 && st.Challenges[0].Status.Processing && st.Challenges[0].Status.Presented
}

func (e *faultEnv) reasons() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ev := range e.events {
		out = append(out, ev.Reason)
	}
	return out
}

// A state whose request is gone never wedges its name. The scheduler
// runs one challenge per name and type at a time; a request deleted
// mid-order — its challenge accepted, the CA still validating (a
// validation sleep) — held that name for good before. Without Forget
// (the host forgot, or crashed between deleting and telling), the state
// holds it only until it is StaleAfter past its requeue time: then it is
// removed, its token taken down, and a new request for the name issues.
// With Forget, the presentation goes at once and the new request issues
// without waiting.
func TestAnOrphanedStateNeverWedgesItsName(t *testing.T) {
	tests := map[string]struct {
		forget bool
		// cleanUpFails: taking the old token down fails, so its state is
		// kept to try again — and still holds no slot
		cleanUpFails bool
		// most is the longest the new request's challenge waits to start,
		// on the fake clock
		most time.Duration
	}{
		"the host deleted the request without Forget":                     {most: 15*time.Minute + 10*time.Second},
		"the host deleted the request without Forget, and clean-up fails": {cleanUpFails: true, most: 15*time.Minute + 10*time.Second},
		"the host deleted the request and called Forget":                  {forget: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			stuck := &stuckToken{Presenter: nil}
			e := newFaultEnvWith(t, acmetest.Options{}, func(c *acmeclient.IssuerConfig) {
				stuck.Presenter = c.Solvers.HTTP01
				c.Solvers.HTTP01 = stuck
				// a-1's challenge stays in flight however soon Pebble
				// would validate it: its self-check never passes.
				c.Solvers.HTTP01Check = &firstTokenBlocked{}
			})
			ctx := timeout(t)
			old, _ := newRequest(t, "a-1", "a.example")
			e.stepUntil(t, old, challengeInFlight)
			require.Equal(t, 1, e.srv.HTTP01Handler().Presented())
			if tc.cleanUpFails {
				st, err := e.store.Get(ctx, acmeclient.RequestRef{}, acmeclient.OrderName(old))
				require.NoError(t, err)
				stuck.token.Store(st.Challenges[0].Spec.Token)
			}
			if tc.forget {
				require.NoError(t, e.issuer.Forget(ctx, old.Namespace, old.Name))
				assert.Zero(t, e.srv.HTTP01Handler().Presented(), "the deleted request's token is still served")
				st, err := e.store.Get(ctx, acmeclient.RequestRef{}, acmeclient.OrderName(old))
				require.NoError(t, err)
				assert.Nil(t, st, "the deleted request's state is kept")
			}

			start := e.clock.Now()
			renamed, key := newRequest(t, "a-2", "a.example")
			if !tc.forget {
				// It waits, saying for what, and when it looks again; the
				// host never steps a-1 again.
				for _, at := range []time.Duration{0, 14 * time.Minute} {
					require.NoError(t, e.clock.wait(ctx, start.Add(at)))
					res, err := e.issuer.Step(ctx, renamed)
					require.NoError(t, err)
					assert.Contains(t, res.Message, "waits for another request's (default/a-1) to finish")
					assert.Equal(t, e.clock.Now().Add(time.Second), res.RequeueAt)
				}
			}
			e.stepUntil(t, renamed, func(st *acmeclient.State) bool { return len(st.Challenges) == 1 && st.Challenges[0].Status.Processing })
			assert.LessOrEqual(t, e.clock.Now().Sub(start), tc.most, "the new request's challenge started after")
			res := e.settle(t, renamed)
			if !assert.Equal(t, order.ReasonDone, res.Reason, res.Message) {
				e.logEvents(t)
			}
			leafOf(t, e.srv, renamed, key, "a.example")

			st, err := e.store.Get(ctx, acmeclient.RequestRef{}, acmeclient.OrderName(old))
			require.NoError(t, err)
			if tc.cleanUpFails {
				assert.NotNil(t, st, "removed although its token could not be taken down")
				assert.Equal(t, 1, e.srv.HTTP01Handler().Presented(), "the old token")
				return
			}
			assert.Nil(t, st, "the orphaned state outlived its request")
			assert.Zero(t, e.srv.HTTP01Handler().Presented(), "a token is still served")
			if !tc.forget {
				assert.Contains(t, e.reasons(), "Removed", "the removal leaves a trace")
			}
		})
	}
}

// A restarted issuer reads its store once and gives every state it finds
// StaleAfter from then: a state the old process left is kept that long
// (its request may be stepped yet), then removed with its presentation.
func TestAStateLeftBeforeARestartGoesStaleAfterIt(t *testing.T) {
	e := newFaultEnvWith(t, acmetest.Options{}, func(c *acmeclient.IssuerConfig) { c.Solvers.HTTP01Check = notYet{} })
	ctx := timeout(t)
	left, _ := newRequest(t, "left", "left.example")
	e.stepUntil(t, left, challengeInFlight)
	require.NoError(t, e.clock.wait(ctx, e.clock.Now().Add(time.Hour))) // the host is down an hour

	restarted, err := acmeclient.NewIssuer(acmeclient.IssuerConfig{Client: e.client, Store: e.store, Solvers: e.srv.Solvers()})
	require.NoError(t, err)
	first := e.clock.Now()
	next, err := restarted.Sweep(ctx, e.clock.Now())
	require.NoError(t, err)
	assert.WithinDuration(t, first.Add(15*time.Minute), next, 0, "the next removal is StaleAfter after the restart")
	st, err := e.store.Get(ctx, acmeclient.RequestRef{}, acmeclient.OrderName(left))
	require.NoError(t, err)
	require.NotNil(t, st, "removed at once after the restart")

	require.NoError(t, e.clock.wait(ctx, next))
	next, err = restarted.Sweep(ctx, e.clock.Now())
	require.NoError(t, err)
	assert.Zero(t, next, "nothing left to remove")
	st, err = e.store.Get(ctx, acmeclient.RequestRef{}, acmeclient.OrderName(left))
	require.NoError(t, err)
	assert.Nil(t, st)
	assert.Zero(t, e.srv.HTTP01Handler().Presented(), "its token is still served")
}

// An answered state goes once it is KeepAnswered old, without waiting for
// another order to be scheduled: any later step removes it, even one of
// an answered request, and Sweep says when the next removal is due.
func TestAnsweredStatesGoOnTheirOwn(t *testing.T) {
	e := newFaultEnvWith(t, acmetest.Options{}, func(c *acmeclient.IssuerConfig) { c.KeepAnswered = time.Minute })
	ctx := timeout(t)
	r, _ := newRequest(t, "done", "done.example")
	require.NoError(t, e.run(t, r))
	st, err := e.store.Get(ctx, acmeclient.RequestRef{}, acmeclient.OrderName(r))
	require.NoError(t, err)
	require.NotNil(t, st)
	require.NotNil(t, st.AnsweredAt)

	next, err := e.issuer.Sweep(ctx, e.clock.Now())
	require.NoError(t, err)
	assert.WithinDuration(t, st.AnsweredAt.Add(time.Minute), next, 0)
	require.NoError(t, e.clock.wait(ctx, next))

	res, err := e.issuer.Step(ctx, r) // answered: nothing to schedule
	require.NoError(t, err)
	assert.True(t, res.Answered)
	st, err = e.store.Get(ctx, acmeclient.RequestRef{}, acmeclient.OrderName(r))
	require.NoError(t, err)
	assert.Nil(t, st, "an answered state older than KeepAnswered is kept")
}

// The issuer reads its store whole once, when it is first used; steps
// schedule from what it keeps in memory.
func TestStepsDoNotListTheStore(t *testing.T) {
	store := &countingStore{MemoryStore: acmeclient.NewMemoryStore()}
	e := newEnv(t, acmetest.Options{}, func(c *acmeclient.IssuerConfig) { c.Store = store; c.Scheduler.MaxInFlight = 1 })
	ctx := timeout(t)
	for _, n := range []string{"one", "two", "three"} {
		r, key := newRequest(t, n, n+".example")
		drive(t, ctx, e.issuer, r)
		leafOf(t, e.srv, r, key, n+".example")
	}
	assert.Equal(t, int32(1), store.lists.Load(), "List calls")
	assert.Greater(t, store.gets.Load(), int32(3), "Get calls: one per step")
}

type countingStore struct {
	*acmeclient.MemoryStore
	lists, gets atomic.Int32
	// failGets, failLists and failPuts fail that many calls first.
	failGets, failLists, failPuts atomic.Int32
}

func (s *countingStore) Put(ctx context.Context, key string, st *acmeclient.State) error {
	if s.failPuts.Add(-1) >= 0 {
		return errors.New("etcd: leader changed")
	}
	return s.MemoryStore.Put(ctx, key, st)
}

func (s *countingStore) Get(ctx context.Context, req acmeclient.RequestRef, key string) (*acmeclient.State, error) {
	s.gets.Add(1)
	if s.failGets.Add(-1) >= 0 {
		return nil, errors.New("etcd: leader changed")
	}
	return s.MemoryStore.Get(ctx, req, key)
}

func (s *countingStore) List(ctx context.Context) (map[string]*acmeclient.State, error) {
	s.lists.Add(1)
	if s.failLists.Add(-1) >= 0 {
		return nil, errors.New("etcd: leader changed")
	}
	return s.MemoryStore.List(ctx)
}

// A transient error of the issuer's own store — reading or writing — is
// recorded on the request (Pending, with the error), as well as returned;
// the request is then issued.
func TestAStoreErrorIsRecordedOnTheRequest(t *testing.T) {
	tests := map[string]func(*countingStore){
		"reading the request's state fails": func(s *countingStore) { s.failGets.Store(1) },
		"listing the store at first use fails": func(s *countingStore) {
			s.failLists.Store(1)
			s.failGets.Store(-1 << 30)
		},
		"writing the request's state fails": func(s *countingStore) {
			s.failPuts.Store(1)
			s.failGets.Store(-1 << 30)
		},
	}
	for name, fail := range tests {
		t.Run(name, func(t *testing.T) {
			store := &countingStore{MemoryStore: acmeclient.NewMemoryStore()}
			store.failGets.Store(-1 << 30)
			store.failPuts.Store(-1 << 30)
			fail(store)
			e := newEnv(t, acmetest.Options{}, func(c *acmeclient.IssuerConfig) { c.Store = store })
			ctx := timeout(t)
			r, key := newRequest(t, "web-1", "store.example")
			res, err := e.issuer.Step(ctx, r)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "etcd: leader changed")
			assert.True(t, res.Changed, "the request's status changed")
			assert.False(t, res.RequeueAt.IsZero())
			ready := r.Condition(certificate.RequestConditionReady)
			require.NotNil(t, ready)
			assert.Equal(t, certificate.RequestReasonPending, ready.Reason)
			assert.Contains(t, ready.Message, "etcd: leader changed")
			drive(t, ctx, e.issuer, r)
			leafOf(t, e.srv, r, key, "store.example")
		})
	}
}

// RFC 9773 §5: a server may refuse an order that names, in replaces, a
// certificate it shares no identifier with — Pebble does ("at least one
// identifier … must match"), as a server error. A renewal that renamed
// its certificate is ordered again without replaces in the same step, and
// issues; the refusal is recorded, so a retry after another failure does
// not send replaces again.
func TestARenamedRenewalIssues(t *testing.T) {
	e := newFaultEnv(t)
	old, _ := newRequest(t, "web-1", "old.example")
	require.NoError(t, e.run(t, old))
	leaf := leafOfChain(t, old.Status.Certificate)

	t.Run("the order without replaces is made in the same step", func(t *testing.T) {
		e.front.setScript(nil)
		r, key := newRequest(t, "web-2", "new.example")
		markRenewal(t, r, leaf)
		require.NoError(t, e.run(t, r))
		leafOf(t, e.srv, r, key, "new.example")
		assert.Equal(t, []string{"newOrder", "newOrder", "authorization", "challenge", "finalize", "order", "certificate"}, kinds(e.front.requests()),
			"one refused newOrder with replaces, then one without")
		st, err := e.store.Get(context.Background(), acmeclient.RequestRef{}, acmeclient.OrderName(r))
		require.NoError(t, err)
		assert.Contains(t, st.Order.Status.ReplacesRefused, "at least one identifier")
		assert.NotEmpty(t, st.Order.Spec.Replaces, "the spec is unchanged")
	})
	t.Run("a retry after the order without replaces failed does not send replaces again", func(t *testing.T) {
		e.front.setScript(func(kind string, n, _ int, _ time.Time) *fault {
			if kind == "newOrder" && n == 2 {
				f := problem(503, "serverInternal", "the database is restarting")
				return &f
			}
			return nil
		})
		r, key := newRequest(t, "web-3", "other.example")
		markRenewal(t, r, leaf)
		require.NoError(t, e.run(t, r))
		leafOf(t, e.srv, r, key, "other.example")
		log := e.front.requests()
		n := 0
		for _, s := range log {
			if s.Kind == "newOrder" {
				n++
			}
		}
		assert.Equal(t, 3, n, "newOrders: refused with replaces, failed without, made without: %v", kinds(log))
	})
}

func leafOfChain(t *testing.T, chain []byte) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(chain)
	require.NotNil(t, b)
	c, err := x509.ParseCertificate(b.Bytes)
	require.NoError(t, err)
	return c
}

// A cancelled context (shutdown, lost leadership) is not a failed
// attempt: a call cut short leaves the order's and the challenge's
// status as it was — no failure recorded, no attempt counted — and Step
// returns ctx.Err(). Stepped again, the request is issued.
func TestACancelledContextIsNotAFailedAttempt(t *testing.T) {
	for _, kind := range []string{"newOrder", "challenge", "finalize", "certificate"} {
		t.Run("cancelled during "+kind, func(t *testing.T) {
			e := newFaultEnv(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			e.front.setScript(func(k string, n, _ int, _ time.Time) *fault {
				if k == kind && n == 1 {
					time.AfterFunc(50*time.Millisecond, cancel) // while the request hangs
					return &fault{Hang: true}
				}
				return nil
			})
			r, key := newRequest(t, "web-1", "cancel.example")
			var err error
			for {
				var res acmeclient.Result
				res, err = e.issuer.Step(ctx, r)
				if err != nil {
					assert.False(t, res.RequeueAt.IsZero(), "no time to step again")
					break
				}
				require.False(t, res.Answered, "answered before the cancel: %s", res.Message)
				require.NoError(t, e.clock.wait(context.Background(), res.RequeueAt))
			}
			require.ErrorIs(t, err, context.Canceled)
			st, err := e.store.Get(context.Background(), acmeclient.RequestRef{}, acmeclient.OrderName(r))
			require.NoError(t, err)
			if st != nil {
				assert.Zero(t, st.Order.Status.FailedAttempts, "the order counted an attempt: %s", st.Order.Status.LastError)
				assert.Empty(t, st.Order.Status.LastError)
				for _, c := range st.Challenges {
					assert.Zero(t, c.Status.FailedAttempts, "the challenge counted an attempt: %s", c.Status.LastError)
					assert.Empty(t, c.Status.LastError)
				}
			}
			require.NoError(t, e.run(t, r))
			leafOf(t, e.srv, r, key, "cancel.example")
		})
	}
}

// selfSignedPEM is a PEM certificate for names, with a new key: not the
// CSR's.
func selfSignedPEM(t *testing.T, names ...string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	require.NoError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// The certificate is checked before it is handed over (RFC 8555 §7.4.2:
// the chain is for the CSR the order was finalized with): one that does
// not decode, or is for another key, is ordered again once — a new order,
// as the reference operator deletes and re-orders — and a second bad one
// fails the request with what was wrong.
func TestABadCertificateIsOrderedAgainOnceThenFails(t *testing.T) {
	garbage := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("not DER")}))
	tests := map[string]struct {
		body  func(t *testing.T) string
		times int // how many downloads are bad; 0: every one
		// issued, or else words of the failure
		issued bool
		words  []string
	}{
		"a certificate for another key, once: ordered again and issued": {
			body: func(t *testing.T) string { return selfSignedPEM(t, "bad.example") }, times: 1, issued: true,
		},
		"a chain that does not decode, once: ordered again and issued": {
			body: func(*testing.T) string { return garbage }, times: 1, issued: true,
		},
		"a certificate for another key every time: failed after the second order, naming the key": {
			body:  func(t *testing.T) string { return selfSignedPEM(t, "bad.example") },
			words: []string{"another public key than the CSR's", "second order in a row"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := newFaultEnv(t)
			body := tc.body(t)
			e.front.setScript(func(kind string, n, _ int, _ time.Time) *fault {
				if kind == "certificate" && (tc.times == 0 || n <= tc.times) {
					return &fault{Status: 200, Body: body, ContentType: "application/pem-certificate-chain"}
				}
				return nil
			})
			r, key := newRequest(t, "web-1", "bad.example")
			res := e.settle(t, r)
			newOrders := 0
			for _, s := range e.front.requests() {
				if s.Kind == "newOrder" {
					newOrders++
				}
			}
			assert.Equal(t, 2, newOrders, "orders: %v", kinds(e.front.requests()))
			assert.Contains(t, e.reasons(), order.ReasonBadCertificate)
			if tc.issued {
				leafOf(t, e.srv, r, key, "bad.example")
				return
			}
			assert.Equal(t, order.ReasonFailed, res.Reason)
			ready := r.Condition(certificate.RequestConditionReady)
			require.NotNil(t, ready)
			assert.Equal(t, certificate.RequestReasonFailed, ready.Reason)
			for _, w := range tc.words {
				assert.Contains(t, ready.Message, w)
			}
			assert.Empty(t, r.Status.Certificate, "a bad certificate handed over")
		})
	}
}

// A Retry-After never parks an order: one longer than an hour (the
// order's bound, order.Config.MaxRetryAfter) fails the order at once, with
// that Retry-After recorded on the request, so that the certificate's
// backoff — which keeps retries inside the certificate's lifetime — takes
// over (RFC 9110 §10.2.3, RFC 8555 §6.6).
func TestALongRetryAfterFailsTheRequestWithIt(t *testing.T) {
	tests := map[string]struct {
		opts   acmetest.Options
		script func(kind string, n, _ int, _ time.Time) *fault
		// the request's Retry-After after the start, at least and at
		// most; words of its failure
		least, most time.Duration
		words       []string
	}{
		"two hours on newOrder": {
			script: func(kind string, _, _ int, _ time.Time) *fault {
				if kind == "newOrder" {
					f := problem(503, "serverInternal", "maintenance")
					f.RetryAfter = "7200"
					return &f
				}
				return nil
			},
			least: 2 * time.Hour, most: 2*time.Hour + time.Minute, words: []string{"the order to wait until", "maintenance"},
		},
		"an HTTP date decades away, clamped": {
			script: func(kind string, _, _ int, _ time.Time) *fault {
				if kind == "newOrder" {
					f := problem(503, "serverInternal", "maintenance")
					f.RetryAfter = "Fri, 01 Jan 2100 00:00:00 GMT"
					return &f
				}
				return nil
			},
			least: time.Hour, most: 10*365*24*time.Hour + time.Minute, words: []string{"the order to wait until"},
		},
		"two hours on a challenge's accept": {
			script: func(kind string, _, _ int, _ time.Time) *fault {
				if kind == "challenge" {
					f := problem(503, "serverInternal", "validation backlog")
					f.RetryAfter = "7200"
					return &f
				}
				return nil
			},
			least: 2 * time.Hour, most: 2*time.Hour + time.Minute, words: []string{"the challenge for retry.example to wait until"},
		},
		"two hours to poll an order the CA is processing (Pebble's Retry-After, RFC 8555 §7.4)": {
			opts:  acmetest.Options{RetryAfterOrder: 7200},
			least: 2*time.Hour - time.Minute, // Pebble sends an HTTP date on its own clock, half the time
			most:  2*time.Hour + time.Minute, words: []string{"the order to wait until"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := newFaultEnvWith(t, tc.opts, nil)
			e.front.setScript(tc.script)
			start := e.clock.Now()
			r, _ := newRequest(t, "web-1", "retry.example")
			res := e.settle(t, r)
			assert.Equal(t, order.ReasonFailed, res.Reason, res.Message)
			assert.Less(t, e.clock.Now().Sub(start), time.Minute, "the request waited before it failed")
			ready := r.Condition(certificate.RequestConditionReady)
			require.NotNil(t, ready)
			assert.Equal(t, certificate.RequestReasonFailed, ready.Reason)
			for _, w := range tc.words {
				assert.Contains(t, ready.Message, w)
			}
			require.NotNil(t, r.Status.RetryAfter, "the Retry-After reaches the request")
			assert.GreaterOrEqual(t, r.Status.RetryAfter.Sub(start), tc.least)
			assert.LessOrEqual(t, r.Status.RetryAfter.Sub(start), tc.most)
		})
	}
}

// Answer is the issuer contract (certificate.Issuer): it steps the
// request, records what the order is doing on it (Pending, with the
// order's reason) and says when to call again, zero once answered.
func TestAnswerRecordsWhatTheOrderIsDoing(t *testing.T) {
	e := newFaultEnv(t)
	var iss certificate.Issuer = e.issuer
	ctx := timeout(t)
	r, key := newRequest(t, "web-1", "answer.example")
	var pending []string
	for {
		next, err := iss.Answer(ctx, r, e.clock.Now())
		require.NoError(t, err)
		if next.IsZero() {
			break
		}
		ready := r.Condition(certificate.RequestConditionReady)
		require.NotNil(t, ready)
		require.Equal(t, certificate.RequestReasonPending, ready.Reason)
		if len(pending) == 0 || pending[len(pending)-1] != ready.Message {
			pending = append(pending, ready.Message)
		}
		require.NoError(t, e.clock.wait(ctx, next))
	}
	leafOf(t, e.srv, r, key, "answer.example")
	require.NotEmpty(t, pending)
	for _, m := range pending {
		reason, _, ok := strings.Cut(m, ": ")
		assert.True(t, ok && reason != "", "a pending message without the order's reason: %q", m)
	}
}

// A request the host steps late — its queue lagged past StaleAfter — keeps
// its order: its own step never takes its state for abandoned.
func TestARequestSteppedLateKeepsItsOrder(t *testing.T) {
	e := newFaultEnvWith(t, acmetest.Options{}, func(c *acmeclient.IssuerConfig) {
		c.Solvers.HTTP01Check = notYet{}
		c.Challenge.SelfCheckTimeout = 2 * time.Hour // the hour's wait is the host's lag, not the self-check's
	})
	ctx := timeout(t)
	r, _ := newRequest(t, "late", "late.example")
	e.stepUntil(t, r, challengeInFlight)
	before, err := e.store.Get(ctx, acmeclient.RequestRef{}, acmeclient.OrderName(r))
	require.NoError(t, err)
	require.NoError(t, e.clock.wait(ctx, e.clock.Now().Add(time.Hour)))
	_, err = e.issuer.Step(ctx, r)
	require.NoError(t, err)
	after, err := e.store.Get(ctx, acmeclient.RequestRef{}, acmeclient.OrderName(r))
	require.NoError(t, err)
	require.NotNil(t, after, "the state was removed")
	assert.Equal(t, before.Order.Status.URL, after.Order.Status.URL, "another order")
	assert.NotContains(t, e.reasons(), "Removed")
	assert.Equal(t, 1, e.srv.HTTP01Handler().Presented(), "the token was taken down")
}

// A state whose order expired with no step since goes at the expiry, even
// when StaleAfter is longer: nothing about it can succeed (RFC 8555
// §7.1.3, an order's expires).
func TestAStateWhoseOrderExpiredGoes(t *testing.T) {
	e := newFaultEnvWith(t, acmetest.Options{}, func(c *acmeclient.IssuerConfig) {
		c.Solvers.HTTP01Check = notYet{}
		c.StaleAfter = 30 * 24 * time.Hour
	})
	ctx := timeout(t)
	r, _ := newRequest(t, "expiring", "expiring.example")
	e.stepUntil(t, r, challengeInFlight)
	st, err := e.store.Get(ctx, acmeclient.RequestRef{}, acmeclient.OrderName(r))
	require.NoError(t, err)
	require.NotNil(t, st.Order.Status.Expires, "Pebble gives the order's expiry")
	expires := *st.Order.Status.Expires

	next, err := e.issuer.Sweep(ctx, e.clock.Now())
	require.NoError(t, err)
	assert.WithinDuration(t, expires, next, 0, "the next removal is at the order's expiry")
	require.NoError(t, e.clock.wait(ctx, expires))
	_, err = e.issuer.Sweep(ctx, e.clock.Now())
	require.NoError(t, err)
	st, err = e.store.Get(ctx, acmeclient.RequestRef{}, acmeclient.OrderName(r))
	require.NoError(t, err)
	assert.Nil(t, st, "a state whose order expired is kept")
	assert.Zero(t, e.srv.HTTP01Handler().Presented(), "its token is still served")
}

// Replicas share one store: an issuer does not remove as stale a state
// that another issuer (another replica) wrote since it last saw it; that
// replica is at work on the order, and removing its state would make it
// order again.
func TestAStateAnotherReplicaStepsIsNotStale(t *testing.T) {
	e := newFaultEnvWith(t, acmetest.Options{}, func(c *acmeclient.IssuerConfig) { c.Solvers.HTTP01Check = notYet{} })
	ctx := timeout(t)
	r, _ := newRequest(t, "shared", "shared.example")
	e.stepUntil(t, r, challengeInFlight) // replica A starts the order
	other, err := acmeclient.NewIssuer(acmeclient.IssuerConfig{Client: e.client, Store: e.store, Solvers: e.srv.Solvers(),
		Account: acmeclient.AccountOptions{AgreeToTerms: true}})
	require.NoError(t, err)
	key := acmeclient.OrderName(r)
	before, err := e.store.Get(ctx, acmeclient.RequestRef{}, key)
	require.NoError(t, err)
	require.NotNil(t, before.SteppedAt)

	// Replica B carries on with it ten minutes later, and again every
	// ten minutes; A, which stepped it no more, sweeps all the while.
	for range 3 {
		require.NoError(t, e.clock.wait(ctx, e.clock.Now().Add(10*time.Minute)))
		_, err := other.Step(ctx, r)
		require.NoError(t, err)
		st, err := e.store.Get(ctx, acmeclient.RequestRef{}, key)
		require.NoError(t, err)
		require.NotNil(t, st, "B's state is gone after its step")
		require.True(t, st.SteppedAt.After(*before.SteppedAt), "B's step wrote no SteppedAt")
		_, err = e.issuer.Sweep(ctx, e.clock.Now().Add(6*time.Minute))
		require.NoError(t, err)
		st, err = e.store.Get(ctx, acmeclient.RequestRef{}, key)
		require.NoError(t, err)
		require.NotNil(t, st, "A removed the state B is at work on")
	}
	assert.Equal(t, map[string]int{"shared.example": 1}, e.srv.OrdersCreated(), "one order")

	// Once nobody steps it, it goes: A keeps it for the grace of
	// another replica's waits (1 h 15 min) past B's last write, then
	// StaleAfter, and sweeps it then.
	last, err := e.store.Get(ctx, acmeclient.RequestRef{}, key)
	require.NoError(t, err)
	deadline := last.SteppedAt.Add(time.Hour + 15*time.Minute + 15*time.Minute)
	for range 3 {
		next, err := e.issuer.Sweep(ctx, e.clock.Now())
		require.NoError(t, err)
		if next.IsZero() {
			break
		}
		require.False(t, next.After(deadline), "the next sweep is due at %v, after %v", next, deadline)
		require.NoError(t, e.clock.wait(ctx, next))
	}
	st, err := e.store.Get(ctx, acmeclient.RequestRef{}, key)
	require.NoError(t, err)
	assert.Nil(t, st, "a state nobody steps is kept for ever")
	assert.False(t, e.clock.Now().After(deadline), "removed at %v, after %v", e.clock.Now(), deadline)
}
