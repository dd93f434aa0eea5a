package host_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/host/hosttest"
	"github.com/certlife/certlife/certificate/localca"
	"github.com/certlife/certlife/keys"
)

// recorder is an issuer that passes answers to another (or leaves
// requests pending when there is none) and records what it is told.
type recorder struct {
	inner certificate.Issuer
	mu    sync.Mutex
	// forgotten lists Forget's namespace/name, in order.
	forgotten []string
	answered  int
}

func (r *recorder) Answer(ctx context.Context, req *certificate.CertificateRequest, now time.Time) (time.Time, error) {
	r.mu.Lock()
	r.answered++
	r.mu.Unlock()
	if r.inner == nil {
		certificate.SetPending(req, "waiting for a CA that never answers", now)
		return now.Add(time.Minute), nil
	}
	return r.inner.Answer(ctx, req, now)
}

func (r *recorder) Forget(_ context.Context, namespace, name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forgotten = append(r.forgotten, namespace+"/"+name)
	return nil
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.answered
}

func (r *recorder) forgot() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.forgotten...)
}

func newCA(t testing.TB, now time.Time) *localca.CA {
	ca, err := localca.NewRoot(rand.Reader, "certlife test CA", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, now.Add(-time.Hour), 10*365*24*time.Hour)
	require.NoError(t, err)
	return ca
}

type fixture struct {
	clk   *testingclock.FakeClock
	store host.Store
	loop  *host.Loop
	iss   *recorder
	evs   []host.Event
}

func newFixture(t *testing.T, store func(clk *testingclock.FakeClock) host.Store, inner certificate.Issuer) *fixture {
	f := &fixture{clk: testingclock.NewFakeClock(t0), iss: &recorder{inner: inner}}
	if store == nil {
		store = func(clk *testingclock.FakeClock) host.Store { return host.NewMemoryStore(clk) }
	}
	f.store = store(f.clk)
	var err error
	f.loop, err = host.New(host.Config{Store: f.store, Clock: f.clk,
		Issuers: map[certificate.IssuerRef]certificate.Issuer{{Name: "ca"}: f.iss},
		Observe: func(e host.Event) { f.evs = append(f.evs, e) }})
	require.NoError(t, err)
	return f
}

func (f *fixture) create(t *testing.T, c *certificate.Certificate) {
	_, err := f.store.Certificates().Create(context.Background(), c)
	require.NoError(t, err)
}

func (f *fixture) cert(t *testing.T, name string) *certificate.Certificate {
	c, err := f.store.Certificates().Get(context.Background(), "default", name)
	require.NoError(t, err)
	return c
}

func revision(c *certificate.Certificate) int {
	if c.Status.Revision == nil {
		return 0
	}
	return *c.Status.Revision
}

func ready(c *certificate.Certificate) bool {
	r := c.Status.Condition(certificate.ConditionReady)
	return r != nil && r.Status == certificate.StatusTrue
}

func TestLoopIssuesRenewsAndKeepsHistory(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil, newCA(t, t0).Issuer(nil))
	c := newCert("default", "web", "web-tls")
	c.Spec.Duration = &certificate.Duration{Duration: 30 * 24 * time.Hour}
	f.create(t, c)

	require.NoError(t, hosttest.Advance(ctx, f.loop, f.clk, t0.Add(time.Minute), hosttest.AdvanceOptions{}))
	got := f.cert(t, "web")
	require.True(t, ready(got), "Ready after the first issuance: %+v", got.Status.Conditions)
	assert.Equal(t, 1, revision(got))
	sec, err := f.store.Secrets().Get(ctx, "default", "web-tls")
	require.NoError(t, err)
	p, err := keys.ParseSecretData(sec.Data)
	require.NoError(t, err)
	assert.True(t, p.KeyMatches)
	assert.Equal(t, []string{"web.example"}, p.Leaf.DNSNames)
	assert.Equal(t, got.UID, sec.OwnerUID)
	assertNoNextKeys(t, f.store, got.UID)

	// Renewal is due when a third of the lifetime remains: day 20.
	require.NoError(t, hosttest.Advance(ctx, f.loop, f.clk, t0.Add(21*24*time.Hour), hosttest.AdvanceOptions{}))
	got = f.cert(t, "web")
	require.True(t, ready(got))
	assert.Equal(t, 2, revision(got), "renewed once")
	reqs, err := f.store.Requests().List(ctx, host.ListOptions{OwnerUID: got.UID})
	require.NoError(t, err)
	assert.Equal(t, []string{"web-2"}, names(reqs), "one request kept: the revision history limit")
	assert.Equal(t, []string{"default/web-1"}, f.iss.forgot(), "the issuer is told of the request the history removed")
	assertNoNextKeys(t, f.store, got.UID)
}

func assertNoNextKeys(t *testing.T, s host.Store, uid string) {
	t.Helper()
	owned, err := s.Secrets().List(context.Background(), host.ListOptions{OwnerUID: uid})
	require.NoError(t, err)
	for _, o := range owned {
		assert.NotEqual(t, "true", o.Labels[certificate.LabelNextPrivateKey], "next private key %s left behind", o.Name)
	}
}

func TestLoopTellsTheIssuerOfADeletedRequest(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil, nil) // the issuer never answers
	f.create(t, newCert("default", "web", "web-tls"))
	require.NoError(t, hosttest.Advance(ctx, f.loop, f.clk, t0.Add(time.Second), hosttest.AdvanceOptions{}))
	_, err := f.store.Requests().Get(ctx, "default", "web-1")
	require.NoError(t, err, "the request is made")

	// The spec changes mid-issuance: the request no longer matches, is
	// deleted, and its issuer is told.
	c := f.cert(t, "web")
	c.Spec.DNSNames = []string{"www.example"}
	_, err = f.store.Certificates().Update(ctx, c)
	require.NoError(t, err)
	require.NoError(t, hosttest.Advance(ctx, f.loop, f.clk, t0.Add(time.Minute), hosttest.AdvanceOptions{}))
	assert.Equal(t, []string{"default/web-1"}, f.iss.forgot())
	r, err := f.store.Requests().Get(ctx, "default", "web-1")
	require.NoError(t, err, "a replacement is made")
	csr, err := keys.ParseCSR(r.Spec.Request)
	require.NoError(t, err)
	assert.Equal(t, []string{"www.example"}, csr.DNSNames)
}

func TestLoopRemovesWhatADeletedCertificateOwned(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil, nil)
	f.create(t, newCert("default", "web", "web-tls"))
	require.NoError(t, hosttest.Advance(ctx, f.loop, f.clk, t0.Add(time.Second), hosttest.AdvanceOptions{}))
	uid := f.cert(t, "web").UID
	require.NoError(t, f.store.Certificates().Delete(ctx, "default", "web"))
	require.NoError(t, hosttest.Advance(ctx, f.loop, f.clk, t0.Add(2*time.Second), hosttest.AdvanceOptions{}))
	reqs, err := f.store.Requests().List(ctx, host.ListOptions{OwnerUID: uid})
	require.NoError(t, err)
	assert.Empty(t, reqs)
	assertNoNextKeys(t, f.store, uid)
	assert.Equal(t, []string{"default/web-1"}, f.iss.forgot())
}

func TestLoopRemovesOrphansWhenItStarts(t *testing.T) {
	ctx := context.Background()
	clk := testingclock.NewFakeClock(t0)
	store := host.NewMemoryStore(clk)
	// What a certificate deleted while no loop ran left behind.
	_, err := store.Requests().Create(ctx, &certificate.CertificateRequest{ObjectMeta: certificate.ObjectMeta{Namespace: "default", Name: "gone-1", OwnerUID: "uid-gone"},
		Spec: certificate.RequestSpec{IssuerRef: certificate.IssuerRef{Name: "ca"}}})
	require.NoError(t, err)
	_, err = store.Secrets().Create(ctx, &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Namespace: "default", Name: "gone-key", OwnerUID: "uid-gone",
		Labels: map[string]string{certificate.LabelNextPrivateKey: "true"}}})
	require.NoError(t, err)
	_, err = store.Secrets().Create(ctx, &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Namespace: "default", Name: "gone-tls", OwnerUID: "uid-gone"}})
	require.NoError(t, err)
	iss := &recorder{}
	loop, err := host.New(host.Config{Store: store, Clock: clk, Issuers: map[certificate.IssuerRef]certificate.Issuer{{Name: "ca"}: iss}})
	require.NoError(t, err)
	_, err = loop.Step(ctx)
	require.NoError(t, err)
	_, err = store.Requests().Get(ctx, "default", "gone-1")
	assert.ErrorIs(t, err, host.ErrNotFound)
	_, err = store.Secrets().Get(ctx, "default", "gone-key")
	assert.ErrorIs(t, err, host.ErrNotFound)
	_, err = store.Secrets().Get(ctx, "default", "gone-tls")
	assert.NoError(t, err, "the certificate's own secret stays, as a deleted Kubernetes Certificate's does")
	assert.Equal(t, []string{"default/gone-1"}, iss.forgot())
}

// flaky fails the first n creates of secrets, and hides that the store
// reports its writes when unwatched is set.
type flaky struct {
	host.Store
	mu sync.Mutex
	n  int
}

func (s *flaky) Secrets() host.Collection[*certificate.Secret] {
	return flakySecrets{s.Store.Secrets(), s}
}

type flakySecrets struct {
	host.Collection[*certificate.Secret]
	s *flaky
}

func (c flakySecrets) Create(ctx context.Context, sec *certificate.Secret) (*certificate.Secret, error) {
	c.s.mu.Lock()
	fail := c.s.n > 0
	c.s.n--
	c.s.mu.Unlock()
	if fail {
		return nil, errors.New("the disk is full")
	}
	return c.Collection.Create(ctx, sec)
}

func TestLoopRetriesAFailingStoreWithGrowingDelays(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, func(clk *testingclock.FakeClock) host.Store { return &flaky{Store: host.NewMemoryStore(clk), n: 3} }, newCA(t, t0).Issuer(nil))
	f.create(t, newCert("default", "web", "web-tls"))
	require.NoError(t, hosttest.Advance(ctx, f.loop, f.clk, t0.Add(time.Minute), hosttest.AdvanceOptions{}))
	assert.True(t, ready(f.cert(t, "web")))
	var delays []time.Duration
	for _, e := range f.evs {
		if e.Err != nil {
			assert.ErrorContains(t, e.Err, "the disk is full")
			delays = append(delays, e.Next.Sub(e.Time))
		}
	}
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}, delays)
}

// unwatched hides that a store reports its writes.
type unwatched struct{ host.Store }

func TestLoopWithAStoreThatDoesNotReportWrites(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, func(clk *testingclock.FakeClock) host.Store { return unwatched{host.NewMemoryStore(clk)} }, newCA(t, t0).Issuer(nil))
	f.create(t, newCert("default", "web", "web-tls"))
	require.NoError(t, hosttest.Advance(ctx, f.loop, f.clk, t0.Add(time.Minute), hosttest.AdvanceOptions{}))
	assert.True(t, ready(f.cert(t, "web")), "the loop's own writes queue what they concern")

	// A change behind the loop's back is seen at Notify…
	c := f.cert(t, "web")
	c.Spec.DNSNames = []string{"www.example"}
	_, err := f.store.Certificates().Update(ctx, c)
	require.NoError(t, err)
	f.loop.Notify(host.KindCertificate, "default", "web")
	require.NoError(t, hosttest.Advance(ctx, f.loop, f.clk, t0.Add(2*time.Minute), hosttest.AdvanceOptions{}))
	assert.Equal(t, 2, revision(f.cert(t, "web")))

	// …or at the hourly resync.
	c = f.cert(t, "web")
	c.Spec.DNSNames = []string{"web.example"}
	_, err = f.store.Certificates().Update(ctx, c)
	require.NoError(t, err)
	require.NoError(t, hosttest.Advance(ctx, f.loop, f.clk, t0.Add(30*time.Minute), hosttest.AdvanceOptions{}))
	assert.Equal(t, 2, revision(f.cert(t, "web")), "not yet")
	require.NoError(t, hosttest.Advance(ctx, f.loop, f.clk, t0.Add(61*time.Minute), hosttest.AdvanceOptions{}))
	assert.Equal(t, 3, revision(f.cert(t, "web")))
}

func TestLoopRunsOnTheRealClock(t *testing.T) {
	store := host.NewMemoryStore(nil)
	loop, err := host.New(host.Config{Store: store,
		Issuers: map[certificate.IssuerRef]certificate.Issuer{{Name: "ca"}: newCA(t, time.Now()).Issuer(nil)}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- loop.Run(ctx) }()
	_, err = store.Certificates().Create(context.Background(), newCert("default", "web", "web-tls"))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		c, err := store.Certificates().Get(context.Background(), "default", "web")
		return err == nil && ready(c)
	}, 10*time.Second, 10*time.Millisecond)
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
}

func TestNewRefusesBadConfig(t *testing.T) {
	_, err := host.New(host.Config{})
	assert.ErrorContains(t, err, "Config.Store is required")
	_, err = host.New(host.Config{Store: host.NewMemoryStore(nil), Issuers: map[certificate.IssuerRef]certificate.Issuer{{Name: "ca"}: nil}})
	assert.ErrorContains(t, err, "Issuers[Issuer certlife.dev/ca]")
	_, err = host.New(host.Config{Store: host.NewMemoryStore(nil), Certificate: certificate.Config{SecretInUseRecheck: -1}})
	assert.ErrorContains(t, err, "secretInUseRecheck")
}

// failer answers every request with a failure.
type failer struct{}

func (failer) Answer(_ context.Context, r *certificate.CertificateRequest, now time.Time) (time.Time, error) {
	certificate.SetFailed(r, "the CA is down", now, time.Time{})
	return time.Time{}, nil
}

func (failer) Forget(context.Context, string, string) error { return nil }

func TestLoopFollowsItsOwnStatusWritesWithoutAWatcher(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, func(clk *testingclock.FakeClock) host.Store { return unwatched{host.NewMemoryStore(clk)} }, failer{})
	f.create(t, newCert("default", "web", "web-tls"))
	require.NoError(t, hosttest.Advance(ctx, f.loop, f.clk, t0.Add(time.Second), hosttest.AdvanceOptions{}))
	c := f.cert(t, "web")
	iss := c.Status.Condition(certificate.ConditionIssuing)
	require.NotNil(t, iss)
	assert.Equal(t, certificate.StatusFalse, iss.Status, "the failure is recorded")
	// The pass after the failure's status write removes the next key: the
	// loop follows its own write although the store reports none.
	assertNoNextKeys(t, f.store, c.UID)
	next, ok := f.loop.Next()
	require.True(t, ok)
	assert.Equal(t, t0.Add(time.Hour), next, "the backoff's next attempt")
}

// A host with a queue of its own (as a Kubernetes workqueue is) calls
// the Reconciler's Certificate and Request when its queue says; no Loop.
func TestReconcilerForAHostWithItsOwnQueue(t *testing.T) {
	ctx := context.Background()
	clk := testingclock.NewFakeClock(t0)
	store := unwatched{host.NewMemoryStore(clk)}
	rec, err := host.NewReconciler(host.Config{Store: store, Clock: clk,
		Issuers: map[certificate.IssuerRef]certificate.Issuer{{Name: "ca"}: newCA(t, t0).Issuer(nil)}})
	require.NoError(t, err)
	_, err = store.Certificates().Create(ctx, newCert("default", "web", "web-tls"))
	require.NoError(t, err)

	// The host's own queue: what is due, by kind and name.
	type key struct {
		kind host.Kind
		name string
	}
	due := map[key]time.Time{{host.KindCertificate, "web"}: t0}
	for pass := 0; pass < 20 && len(due) > 0; pass++ {
		for k, at := range due {
			if at.After(clk.Now()) {
				continue
			}
			delete(due, k)
			var ev host.Event
			var err error
			if k.kind == host.KindCertificate {
				ev, err = rec.Certificate(ctx, "default", k.name)
				for _, a := range ev.Done {
					if cr, ok := a.(certificate.CreateRequest); ok {
						due[key{host.KindRequest, cr.Request.Name}] = clk.Now()
					}
				}
			} else {
				ev, err = rec.Request(ctx, "default", k.name)
				due[key{host.KindCertificate, "web"}] = clk.Now() // its owner: the request changed
			}
			require.NoError(t, err)
			if !ev.Next.IsZero() {
				due[k] = ev.Next
			}
		}
	}
	c, err := store.Certificates().Get(ctx, "default", "web")
	require.NoError(t, err)
	assert.True(t, ready(c), "%+v", c.Status.Conditions)
	assert.Equal(t, 1, revision(c))
	ev, err := rec.Certificate(ctx, "default", "gone")
	assert.NoError(t, err)
	assert.Nil(t, ev.Result, "a certificate that is not there: nothing to do")
}

// A host whose issuers come and go gives them through Config.IssuerFor:
// the loop asks it for each request's issuer, answers through the one it
// gives, tells it of a deleted request, and leaves a request alone when
// it gives none.
func TestLoopAsksIssuerForTheIssuersItDoesNotHold(t *testing.T) {
	ctx := context.Background()
	clk := testingclock.NewFakeClock(t0)
	store := host.NewMemoryStore(clk)
	iss := &recorder{inner: newCA(t, t0).Issuer(nil)}
	var asked []certificate.IssuerRef
	var mu sync.Mutex
	loop, err := host.New(host.Config{Store: store, Clock: clk, IssuerFor: func(ref certificate.IssuerRef) certificate.Issuer {
		mu.Lock()
		asked = append(asked, ref)
		mu.Unlock()
		if ref.Name == "ca" {
			return iss
		}
		return nil
	}})
	require.NoError(t, err)
	_, err = store.Certificates().Create(ctx, newCert("default", "web", "web-tls"))
	require.NoError(t, err)
	other := newCert("default", "other", "other-tls")
	other.Spec.IssuerRef = certificate.IssuerRef{Name: "vault", Group: "issuers.example.com"}
	_, err = store.Certificates().Create(ctx, other)
	require.NoError(t, err)
	require.NoError(t, hosttest.Advance(ctx, loop, clk, t0.Add(time.Minute), hosttest.AdvanceOptions{}))

	c, err := store.Certificates().Get(ctx, "default", "web")
	require.NoError(t, err)
	assert.True(t, ready(c), "answered by the issuer IssuerFor gave")
	assert.Contains(t, asked, certificate.IssuerRef{Name: "ca", Kind: certificate.DefaultIssuerKind, Group: certificate.DefaultIssuerGroup}, "asked with the defaults filled")
	r, err := store.Requests().Get(ctx, "default", "other-1")
	require.NoError(t, err)
	assert.Empty(t, r.Status.Conditions, "a request of an issuer IssuerFor does not give is left alone")

	require.NoError(t, store.Requests().Delete(ctx, "default", "web-1"))
	require.NoError(t, hosttest.Advance(ctx, loop, clk, t0.Add(2*time.Minute), hosttest.AdvanceOptions{}))
	assert.Contains(t, iss.forgot(), "default/web-1", "the issuer IssuerFor gave is told of its request's deletion")
}

// nonAuthoritative is a store whose reads may lag (it is not
// Authoritative), and whose secrets' Get confirms a miss at the source of
// truth when confirm is set.
type nonAuthoritative struct {
	host.Store
	confirm bool
}

func (s nonAuthoritative) Secrets() host.Collection[*certificate.Secret] {
	return confirmingSecrets{s.Store.Secrets(), s.confirm}
}

type confirmingSecrets struct {
	host.Collection[*certificate.Secret]
	confirm bool
}

func (c confirmingSecrets) Get(ctx context.Context, namespace, name string) (*certificate.Secret, error) {
	s, err := c.Collection.Get(ctx, namespace, name)
	if errors.Is(err, host.ErrNotFound) && c.confirm {
		err = fmt.Errorf("%w (%w)", err, host.ErrAbsenceConfirmed)
	}
	return s, err
}

// A store that is not Authoritative but confirmed a secret's absence at
// its source of truth (ErrAbsenceConfirmed) gets the secret issued again
// at once; without the confirmation the decision takes the miss for a
// lagging cache, for the cache grace after the request.
func TestLoopTrustsAConfirmedAbsence(t *testing.T) {
	for name, tc := range map[string]struct {
		confirm bool
		want    int
	}{
		"a confirmed miss re-issues at once":            {confirm: true, want: 2},
		"an unconfirmed miss waits for the cache grace": {confirm: false, want: 1},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t, func(clk *testingclock.FakeClock) host.Store {
				return nonAuthoritative{host.NewMemoryStore(clk), tc.confirm}
			}, newCA(t, t0).Issuer(nil))
			f.create(t, newCert("default", "web", "web-tls"))
			require.NoError(t, hosttest.Advance(ctx, f.loop, f.clk, t0.Add(time.Minute), hosttest.AdvanceOptions{}))
			require.Equal(t, 1, revision(f.cert(t, "web")))
			require.NoError(t, f.store.Secrets().Delete(ctx, "default", "web-tls"))
			f.loop.Notify(host.KindSecret, "default", "web-tls")
			require.NoError(t, hosttest.Advance(ctx, f.loop, f.clk, t0.Add(2*time.Minute), hosttest.AdvanceOptions{}))
			assert.Equal(t, tc.want, revision(f.cert(t, "web")))
		})
	}
}

// A host that drives the loop with Pass and Answer gets from each the
// time its own queue should look again: after an issuance, the renewal
// time, not a time an earlier pass already served; a certificate that is
// gone is not looked at again.
func TestPassNextIsThisPasssNext(t *testing.T) {
	ctx := context.Background()
	clk := testingclock.NewFakeClock(t0)
	store := host.NewMemoryStore(clk)
	loop, err := host.New(host.Config{Store: store, Clock: clk,
		Issuers: map[certificate.IssuerRef]certificate.Issuer{{Name: "ca"}: newCA(t, t0).Issuer(nil)}})
	require.NoError(t, err)
	_, err = store.Certificates().Create(ctx, newCert("default", "web", "web-tls"))
	require.NoError(t, err)
	rec := loop.Reconciler()
	var ev host.Event
	for range 10 {
		ev, err = rec.Certificate(ctx, "default", "web")
		require.NoError(t, err)
		_, err = rec.Request(ctx, "default", "web-1")
		require.NoError(t, err)
		clk.Step(time.Second)
	}
	c, err := store.Certificates().Get(ctx, "default", "web")
	require.NoError(t, err)
	require.True(t, ready(c))
	require.NotNil(t, c.Status.RenewalTime)
	assert.Empty(t, ev.Done, "a Ready certificate's pass does nothing")
	assert.True(t, ev.Next.Equal(*c.Status.RenewalTime), "Next is the renewal time %v, not %v", c.Status.RenewalTime, ev.Next)

	require.NoError(t, store.Certificates().Delete(ctx, "default", "web"))
	ev, err = rec.Certificate(ctx, "default", "web")
	assert.NoError(t, err)
	assert.Nil(t, ev.Result)
	assert.True(t, ev.Next.IsZero(), "a certificate that is gone is not looked at again")
}

// racingSecrets is a store in which a user makes secret name by hand
// between a decision that found no such secret and the loop's write of
// it: just before the loop's create of it, which follows its read of the
// next private key once the request is issued.
type racingSecrets struct {
	*host.MemoryStore
	name string
	made *certificate.Secret
	// armed: the last read was of a next private key, with the request
	// issued.
	armed bool
}

func (s *racingSecrets) Secrets() host.Collection[*certificate.Secret] { return racingCollection{s} }

type racingCollection struct{ s *racingSecrets }

func (c racingCollection) Get(ctx context.Context, namespace, name string) (*certificate.Secret, error) {
	c.s.armed = false
	if strings.HasPrefix(name, "web-next-key-") {
		reqs, err := c.s.MemoryStore.Requests().List(ctx, host.ListOptions{Namespace: namespace})
		if err != nil {
			return nil, err
		}
		for _, r := range reqs {
			ready := r.Condition(certificate.RequestConditionReady)
			c.s.armed = c.s.armed || ready != nil && ready.Status == certificate.StatusTrue
		}
	}
	return c.s.MemoryStore.Secrets().Get(ctx, namespace, name)
}

func (c racingCollection) List(ctx context.Context, o host.ListOptions) ([]*certificate.Secret, error) {
	return c.s.MemoryStore.Secrets().List(ctx, o)
}

func (c racingCollection) Create(ctx context.Context, obj *certificate.Secret) (*certificate.Secret, error) {
	inner := c.s.MemoryStore.Secrets()
	if obj.Name == c.s.name && c.s.made == nil && c.s.armed {
		made, err := inner.Create(ctx, &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Namespace: obj.Namespace, Name: obj.Name},
			Data: map[string][]byte{keys.SecretPrivateKey: []byte("the user's own key"), keys.SecretCertificate: []byte("the user's own certificate")}})
		if err != nil {
			return nil, err
		}
		c.s.made = made
	}
	c.s.armed = false
	return inner.Create(ctx, obj)
}

func (c racingCollection) Update(ctx context.Context, obj *certificate.Secret) (*certificate.Secret, error) {
	return c.s.MemoryStore.Secrets().Update(ctx, obj)
}

func (c racingCollection) Delete(ctx context.Context, namespace, name string) error {
	return c.s.MemoryStore.Secrets().Delete(ctx, namespace, name)
}

// A secret made by someone else after the decision that found none, and
// before the loop writes it, is never written blindly: the write is a
// conflict, and the next decision, which reads the secret, leaves what
// the user put in it alone (certificate.ReasonSecretNotOwned).
func TestLoopNeverWritesASecretItDidNotSee(t *testing.T) {
	ctx := context.Background()
	var race *racingSecrets
	f := newFixture(t, func(clk *testingclock.FakeClock) host.Store {
		race = &racingSecrets{MemoryStore: host.NewMemoryStore(clk), name: "web-tls"}
		return race
	}, newCA(t, t0).Issuer(nil))
	f.create(t, newCert("default", "web", "web-tls"))
	require.NoError(t, hosttest.Advance(ctx, f.loop, f.clk, t0.Add(time.Minute), hosttest.AdvanceOptions{}))

	require.NotNil(t, race.made, "the user's secret was never made: the loop wrote no secret")
	sec, err := race.MemoryStore.Secrets().Get(ctx, "default", "web-tls")
	require.NoError(t, err)
	assert.Equal(t, race.made.ResourceVersion, sec.ResourceVersion, "the user's secret was written over")
	assert.Equal(t, race.made.Data, sec.Data)
	conflicts := 0
	for _, e := range f.evs {
		if e.Err != nil && errors.Is(e.Err, host.ErrConflict) && strings.Contains(e.Err.Error(), "the decision found none") {
			conflicts++
		}
	}
	assert.Equal(t, 1, conflicts, "the write of a secret the decision did not see ends in one conflict")
	got := f.cert(t, "web")
	r := got.Status.Condition(certificate.ConditionReady)
	require.NotNil(t, r)
	assert.Equal(t, certificate.StatusFalse, r.Status)
	assert.Equal(t, certificate.ReasonSecretNotOwned, r.Reason, r.Message)
}

// A self-signed certificate asked for by names alone gets a subject
// derived from them (RFC 5280 §4.1.2.4: its issuer, which is its subject,
// must not be empty) — its first DNS name that fits a common name, else
// its first IP address as the common name, else its first email address
// as emailAddress, else its long DNS name or URI as UID — and still
// matches what it asks: Ready once, and no issuance again.
func TestLoopSelfSignsACertificateWithoutACommonName(t *testing.T) {
	long := strings.Repeat("a", 61) + ".example" // 69 characters
	tests := map[string]struct {
		names   func(*certificate.Spec)
		subject string
	}{
		"DNS names":                 {names: func(s *certificate.Spec) {}, subject: "CN=web.example"},
		"an IP address only":        {names: func(s *certificate.Spec) { s.DNSNames, s.IPAddresses = nil, []string{"10.0.0.7"} }, subject: "CN=10.0.0.7"},
		"an email address only":     {names: func(s *certificate.Spec) { s.DNSNames, s.EmailAddresses = nil, []string{"ops@web.example"} }, subject: "1.2.840.113549.1.9.1=#0c0f6f7073407765622e6578616d706c65"},
		"a URI only":                {names: func(s *certificate.Spec) { s.DNSNames, s.URIs = nil, []string{"spiffe://cluster.local/web"} }, subject: "0.9.2342.19200300.100.1.1=#131a7370696666653a2f2f636c75737465722e6c6f63616c2f776562"},
		"a long DNS name only":      {names: func(s *certificate.Spec) { s.DNSNames = []string{long} }, subject: "0.9.2342.19200300.100.1.1=#1345" + fmt.Sprintf("%x", long)},
		"a long DNS name and an IP": {names: func(s *certificate.Spec) { s.DNSNames, s.IPAddresses = []string{long}, []string{"2001:db8::7"} }, subject: "CN=2001:db8::7"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			var store *host.MemoryStore
			f := newFixture(t, func(clk *testingclock.FakeClock) host.Store {
				store = host.NewMemoryStore(clk)
				return store
			}, nil)
			f.iss.inner = localca.SelfSigned(store.Secrets().Get, nil)
			c := newCert("default", "web", "web-tls")
			tc.names(&c.Spec)
			require.NoError(t, certificate.Validate(&c.Spec))
			f.create(t, c)
			require.NoError(t, hosttest.Advance(ctx, f.loop, f.clk, t0.Add(time.Hour), hosttest.AdvanceOptions{}))
			got := f.cert(t, "web")
			require.True(t, ready(got), "%+v", got.Status.Conditions)
			assert.Equal(t, 1, revision(got), "issued again: the certificate does not match what it asks")
			sec, err := store.Secrets().Get(ctx, "default", "web-tls")
			require.NoError(t, err)
			p, err := keys.ParseSecretData(sec.Data)
			require.NoError(t, err)
			assert.Equal(t, tc.subject, p.Leaf.Subject.String())
			assert.Equal(t, p.Leaf.RawSubject, p.Leaf.RawIssuer)
			assert.NotEqual(t, []byte{0x30, 0}, p.Leaf.RawIssuer, "an empty issuer")
		})
	}
}

// twoAnswers leaves a request pending and asks to be called again at
// once, then hands it to the issuer it wraps.
type twoAnswers struct {
	inner certificate.Issuer
	calls int
}

func (i *twoAnswers) Answer(ctx context.Context, r *certificate.CertificateRequest, now time.Time) (time.Time, error) {
	i.calls++
	if i.calls == 1 {
		certificate.SetPending(r, "checking the request first", now)
		return now, nil
	}
	return i.inner.Answer(ctx, r, now)
}

// An issuer that answers a request in two writes, the second at once,
// over a store whose reads lag the first: the second answer reads the
// first (read-your-writes) and writes over the version the first made,
// which the store accepts; nothing waits for the store to catch up.
func TestReconcilerAnswersOnItsOwnLastAnswer(t *testing.T) {
	ctx := context.Background()
	clk := testingclock.NewFakeClock(t0)
	store := newLagging(clk)
	iss := &twoAnswers{inner: newCA(t, t0).Issuer(nil)}
	loop, err := host.New(host.Config{Store: store, Clock: clk,
		Issuers: map[certificate.IssuerRef]certificate.Issuer{{Name: "ca"}: iss}})
	require.NoError(t, err)
	_, err = store.Certificates().Create(ctx, newCert("default", "web", "web-tls"))
	require.NoError(t, err)
	requestMade(t, loop.Reconciler(), store)

	ev, err := loop.Reconciler().Request(ctx, "default", "web-1")
	require.NoError(t, err)
	require.NotNil(t, ev.Request)
	require.Equal(t, t0, ev.Next, "the issuer asked to be called again at once")

	ev, err = loop.Reconciler().Request(ctx, "default", "web-1")
	require.NoError(t, err, "no write over the version the first answer replaced")
	require.NotNil(t, ev.Request, "the first answer is read back although the store lags")
	assert.Equal(t, 2, iss.calls)
	r, err := store.MemoryStore.Requests().Get(ctx, "default", "web-1")
	require.NoError(t, err)
	assert.Equal(t, certificate.RequestReasonIssued, r.Condition(certificate.RequestConditionReady).Reason)
}
