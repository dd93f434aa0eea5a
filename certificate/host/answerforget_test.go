package host_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
)

// lagging is a store whose reads of a request lag its updates and
// deletes: after one, Get and List give the request as it was before and
// the watch holds the write's event back, until catchUp, as an
// informer's cache does for a moment after its own write.
type lagging struct {
	*host.MemoryStore
	mu       sync.Mutex
	stale    map[string]*certificate.CertificateRequest
	held     []host.Change
	watchers []func(host.Change)
}

func newLagging(clk *testingclock.FakeClock) *lagging {
	s := &lagging{MemoryStore: host.NewMemoryStore(clk), stale: map[string]*certificate.CertificateRequest{}}
	s.MemoryStore.Watch(func(ch host.Change) {
		s.mu.Lock()
		if ch.Kind == host.KindRequest && s.stale[ch.Namespace+"/"+ch.Name] != nil {
			s.held = append(s.held, ch)
			s.mu.Unlock()
			return
		}
		ws := s.watchers
		s.mu.Unlock()
		for _, w := range ws {
			w(ch)
		}
	})
	return s
}

func (s *lagging) Authoritative() bool { return false }

func (s *lagging) Watch(f func(host.Change)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watchers = append(s.watchers, f)
}

func (s *lagging) Requests() host.Collection[*certificate.CertificateRequest] {
	return laggingRequests{s.MemoryStore.Requests(), s}
}

// catchUp shows every write and sends the events held back.
func (s *lagging) catchUp() {
	s.mu.Lock()
	held, ws := s.held, s.watchers
	s.held, s.stale = nil, map[string]*certificate.CertificateRequest{}
	s.mu.Unlock()
	for _, ch := range held {
		for _, w := range ws {
			w(ch)
		}
	}
}

type laggingRequests struct {
	host.Collection[*certificate.CertificateRequest]
	s *lagging
}

// was is the request as reads show it while they lag, nil when they do
// not; a copy the caller may change.
func (c laggingRequests) was(namespace, name string) *certificate.CertificateRequest {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	old := c.s.stale[namespace+"/"+name]
	if old == nil {
		return nil
	}
	cp := *old
	cp.Status.Conditions = slices.Clone(old.Status.Conditions)
	return &cp
}

func (c laggingRequests) Get(ctx context.Context, namespace, name string) (*certificate.CertificateRequest, error) {
	if old := c.was(namespace, name); old != nil {
		return old, nil
	}
	return c.Collection.Get(ctx, namespace, name)
}

func (c laggingRequests) List(ctx context.Context, o host.ListOptions) ([]*certificate.CertificateRequest, error) {
	list, err := c.Collection.List(ctx, o)
	if err != nil {
		return nil, err
	}
	var out []*certificate.CertificateRequest
	seen := map[string]bool{}
	for _, r := range list {
		if old := c.was(r.Namespace, r.Name); old != nil {
			r = old
		}
		seen[r.Namespace+"/"+r.Name] = true
		out = append(out, r)
	}
	c.s.mu.Lock()
	var gone []*certificate.CertificateRequest
	for _, r := range c.s.stale {
		if !seen[r.Namespace+"/"+r.Name] && o.Matches(r) {
			gone = append(gone, r)
		}
	}
	c.s.mu.Unlock()
	for _, r := range gone {
		out = append(out, c.was(r.Namespace, r.Name))
	}
	return out, nil
}

// lagBehind makes reads of namespace/name show it as it is now until
// catchUp.
func (c laggingRequests) lagBehind(ctx context.Context, namespace, name string) {
	before, err := c.Collection.Get(ctx, namespace, name)
	if err != nil {
		return
	}
	c.s.mu.Lock()
	if c.s.stale[namespace+"/"+name] == nil {
		c.s.stale[namespace+"/"+name] = before
	}
	c.s.mu.Unlock()
}

func (c laggingRequests) Update(ctx context.Context, r *certificate.CertificateRequest) (*certificate.CertificateRequest, error) {
	c.lagBehind(ctx, r.Namespace, r.Name)
	return c.Collection.Update(ctx, r)
}

func (c laggingRequests) Delete(ctx context.Context, namespace, name string) error {
	c.lagBehind(ctx, namespace, name)
	return c.Collection.Delete(ctx, namespace, name)
}

// requestMade passes over the certificate default/web until it has made
// its request, default/web-1.
func requestMade(t *testing.T, loop *host.Loop, store host.Store) {
	t.Helper()
	ctx := context.Background()
	for range 5 { // trigger, key, request
		ev, _ := loop.Pass(ctx, "default", "web")
		require.NoError(t, ev.Err)
	}
	_, err := store.Requests().Get(ctx, "default", "web-1")
	require.NoError(t, err, "the passes made the request")
}

// The loop deletes a request, telling its issuer first — its certificate
// is gone, or its spec changed: an answer from reads that still show the
// request does not start again the work the issuer was told to drop.
func TestLoopDoesNotAnswerARequestItDeleted(t *testing.T) {
	for name, goAway := range map[string]func(t *testing.T, store host.Store){
		"the certificate is deleted": func(t *testing.T, store host.Store) {
			require.NoError(t, store.Certificates().Delete(context.Background(), "default", "web"))
		},
		"the certificate's spec changed": func(t *testing.T, store host.Store) {
			c, err := store.Certificates().Get(context.Background(), "default", "web")
			require.NoError(t, err)
			c.Spec.DNSNames = []string{"other.example"}
			_, err = store.Certificates().Update(context.Background(), c)
			require.NoError(t, err)
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			clk := testingclock.NewFakeClock(t0)
			store := newLagging(clk)
			iss := &recorder{}
			loop, err := host.New(host.Config{Store: store, Clock: clk,
				Issuers: map[certificate.IssuerRef]certificate.Issuer{{Name: "ca"}: iss}})
			require.NoError(t, err)
			_, err = store.Certificates().Create(ctx, newCert("default", "web", "web-tls"))
			require.NoError(t, err)
			requestMade(t, loop, store)
			ev, ok := loop.Answer(ctx, "default", "web-1")
			require.True(t, ok)
			require.NoError(t, ev.Err)
			require.Equal(t, 1, iss.count())

			goAway(t, store)
			ev, _ = loop.Pass(ctx, "default", "web") // deletes the request
			require.NoError(t, ev.Err)
			require.Equal(t, []string{"default/web-1"}, iss.forgot())

			_, ok = loop.Answer(ctx, "default", "web-1")
			assert.False(t, ok, "nothing to do for a request on its way out")
			assert.Equal(t, 1, iss.count(), "the issuer was asked again about a request it was told to forget")
		})
	}
}

// deleteOnGet: the first Get of web-1 once armed returns it and then
// someone else deletes it (the watcher is told synchronously).
type deleteOnGet struct {
	*host.MemoryStore
	armed bool
}

func (s *deleteOnGet) Requests() host.Collection[*certificate.CertificateRequest] {
	return delReqs{s.MemoryStore.Requests(), s}
}

type delReqs struct {
	host.Collection[*certificate.CertificateRequest]
	s *deleteOnGet
}

func (c delReqs) Get(ctx context.Context, ns, name string) (*certificate.CertificateRequest, error) {
	r, err := c.Collection.Get(ctx, ns, name)
	if c.s.armed && err == nil {
		c.s.armed = false
		_ = c.Collection.Delete(ctx, ns, name)
	}
	return r, err
}

// Someone else deletes a request just after its first answer read it: the
// issuer, which the answer set to work, is told to forget it once the
// answer ends.
func TestLoopTellsTheIssuerOfADeletionDuringTheFirstAnswer(t *testing.T) {
	ctx := context.Background()
	clk := testingclock.NewFakeClock(t0)
	store := &deleteOnGet{MemoryStore: host.NewMemoryStore(clk)}
	iss := &recorder{}
	loop, err := host.New(host.Config{Store: store, Clock: clk,
		Issuers: map[certificate.IssuerRef]certificate.Issuer{{Name: "ca"}: iss}})
	require.NoError(t, err)
	_, err = store.Certificates().Create(ctx, newCert("default", "web", "web-tls"))
	require.NoError(t, err)
	requestMade(t, loop, store)
	store.armed = true
	loop.Answer(ctx, "default", "web-1")
	for range 3 {
		loop.Answer(ctx, "default", "web-1")
	}
	assert.Equal(t, 1, iss.count())
	assert.Eventually(t, func() bool { return slices.Contains(iss.forgot(), "default/web-1") }, 5*time.Second, time.Millisecond,
		"the issuer started work on the request and was never told it is gone")
}

// Someone else deletes a request while the loop answers it: the store's
// watch (here called within the deleter's Delete) is not held up until
// the answer ends, and the issuer is told once it has.
func TestLoopDoesNotHoldUpTheWatchWhileAnAnswerIsUnderWay(t *testing.T) {
	ctx := context.Background()
	clk := testingclock.NewFakeClock(t0)
	store := host.NewMemoryStore(clk)
	rec := &recorder{}
	gate := &gateIssuer{inner: rec, started: make(chan struct{}, 1), release: make(chan struct{})}
	loop, err := host.New(host.Config{Store: store, Clock: clk,
		Issuers: map[certificate.IssuerRef]certificate.Issuer{{Name: "ca"}: gate}})
	require.NoError(t, err)
	_, err = store.Certificates().Create(ctx, newCert("default", "web", "web-tls"))
	require.NoError(t, err)
	requestMade(t, loop, store)
	ev, ok := loop.Answer(ctx, "default", "web-1") // not gated: sets refs
	require.True(t, ok, "%v", ev.Err)
	gate.mu.Lock()
	gate.on = true
	gate.mu.Unlock()
	go loop.Answer(ctx, "default", "web-1")
	<-gate.started
	deleted := make(chan struct{})
	go func() { _ = store.Requests().Delete(ctx, "default", "web-1"); close(deleted) }()
	select {
	case <-deleted:
	case <-time.After(10 * time.Second):
		t.Fatal("the deletion's watch event waited for the answer under way")
	}
	assert.Empty(t, rec.forgot(), "not told while the answer is under way")
	close(gate.release)
	assert.Eventually(t, func() bool { return slices.Contains(rec.forgot(), "default/web-1") }, 5*time.Second, time.Millisecond,
		"told once the answer ended")
}

type gateIssuer struct {
	inner            certificate.Issuer
	mu               sync.Mutex
	on               bool
	started, release chan struct{}
}

func (g *gateIssuer) Answer(ctx context.Context, r *certificate.CertificateRequest, now time.Time) (time.Time, error) {
	g.mu.Lock()
	on := g.on
	g.mu.Unlock()
	if on {
		g.started <- struct{}{}
		<-g.release
	}
	return g.inner.Answer(ctx, r, now)
}

func (g *gateIssuer) Forget(ctx context.Context, ns, name string) error {
	if f, ok := g.inner.(certificate.Forgetter); ok {
		return f.Forget(ctx, ns, name)
	}
	return nil
}
