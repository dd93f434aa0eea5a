package host_test

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/host/hosttest"
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
func requestMade(t *testing.T, r *host.Reconciler, store host.Store) {
	t.Helper()
	ctx := context.Background()
	for range 5 { // trigger, key, request
		_, err := r.Certificate(ctx, "default", "web")
		require.NoError(t, err)
	}
	_, err := store.Requests().Get(ctx, "default", "web-1")
	require.NoError(t, err, "the passes made the request")
}

// The reconciler deletes a request and then tells its issuer — its
// certificate is gone, or its spec changed: an answer from reads that
// still show the request (a lagging store) does not start again the work
// the issuer was told to drop, since the reconciler reads its own writes.
func TestReconcilerDoesNotAnswerARequestItDeleted(t *testing.T) {
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
			r, err := host.NewReconciler(host.Config{Store: store, Clock: clk,
				Issuers: map[certificate.IssuerRef]certificate.Issuer{{Name: "ca"}: iss}})
			require.NoError(t, err)
			_, err = store.Certificates().Create(ctx, newCert("default", "web", "web-tls"))
			require.NoError(t, err)
			requestMade(t, r, store)
			ev, err := r.Request(ctx, "default", "web-1")
			require.NoError(t, err)
			require.NotNil(t, ev.Request)
			require.Equal(t, 1, iss.count())

			goAway(t, store)
			if name == "the certificate is deleted" {
				// What it owned goes, as a Loop does on the deletion's
				// event.
				c, err := store.MemoryStore.Requests().Get(ctx, "default", "web-1")
				require.NoError(t, err)
				require.NoError(t, r.RemoveOwned(ctx, "default", c.OwnerUID))
			} else {
				_, err = r.Certificate(ctx, "default", "web") // deletes the request
				require.NoError(t, err)
			}
			require.Contains(t, iss.forgot(), "default/web-1")
			_, err = store.Requests().Get(ctx, "default", "web-1")
			require.NoError(t, err, "the lagging store still shows the request")

			ev, err = r.Request(ctx, "default", "web-1")
			require.NoError(t, err)
			assert.Nil(t, ev.Request, "nothing to do for a request that is gone")
			assert.Equal(t, 1, iss.count(), "the issuer was asked again about a request it was told to forget")
		})
	}
}

// keeper is an issuer that keeps state for each request it answers
// until it is told to forget it.
type keeper struct {
	mu      sync.Mutex
	kept    map[string]bool
	forgets int
	// during, when set, runs in the middle of an answer.
	during func()
}

func (k *keeper) Answer(_ context.Context, r *certificate.CertificateRequest, now time.Time) (time.Time, error) {
	k.mu.Lock()
	during := k.during
	k.during = nil
	k.mu.Unlock()
	if during != nil {
		during()
	}
	k.mu.Lock()
	k.kept[r.Namespace+"/"+r.Name] = true
	k.mu.Unlock()
	certificate.SetPending(r, "ordering", now)
	return now.Add(time.Second), nil
}

func (k *keeper) Forget(_ context.Context, namespace, name string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.kept, namespace+"/"+name)
	k.forgets++
	return nil
}

func (k *keeper) keeps() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Sorted(maps.Keys(k.kept))
}

// A request deleted while an answer of it is under way — by the
// reconciler's own certificate pass on another worker, or by someone
// else — leaves nothing behind in its issuer, whatever the order: the
// deletion tells the issuer after it deletes, and an answer whose write
// finds the request gone tells it again.
func TestNothingOutlivesARequestDeletedDuringItsAnswer(t *testing.T) {
	for name, del := range map[string]func(t *testing.T, r *host.Reconciler, store host.Store){
		"deleted by its certificate's pass": func(t *testing.T, r *host.Reconciler, store host.Store) {
			c, err := store.Certificates().Get(context.Background(), "default", "web")
			require.NoError(t, err)
			c.Spec.DNSNames = []string{"other.example"}
			_, err = store.Certificates().Update(context.Background(), c)
			require.NoError(t, err)
			_, err = r.Certificate(context.Background(), "default", "web")
			require.NoError(t, err)
		},
		"deleted by someone else": func(t *testing.T, r *host.Reconciler, store host.Store) {
			require.NoError(t, store.Requests().Delete(context.Background(), "default", "web-1"))
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			clk := testingclock.NewFakeClock(t0)
			store := host.NewMemoryStore(clk)
			iss := &keeper{kept: map[string]bool{}}
			r, err := host.NewReconciler(host.Config{Store: store, Clock: clk,
				Issuers: map[certificate.IssuerRef]certificate.Issuer{{Name: "ca"}: iss}})
			require.NoError(t, err)
			_, err = store.Certificates().Create(ctx, newCert("default", "web", "web-tls"))
			require.NoError(t, err)
			requestMade(t, r, store)
			iss.during = func() { del(t, r, store) }
			ev, err := r.Request(ctx, "default", "web-1")
			require.NoError(t, err)
			assert.True(t, ev.Next.IsZero(), "nothing to look at again for a request that is gone")
			_, err = store.Requests().Get(ctx, "default", "web-1")
			require.ErrorIs(t, err, host.ErrNotFound)
			assert.Empty(t, iss.keeps(), "the issuer keeps state for a request that is gone")
		})
	}
}

// A Loop that sees a request deleted by someone else tells the issuers
// that keep state, at once.
func TestLoopTellsTheIssuerOfADeletionBySomeoneElse(t *testing.T) {
	ctx := context.Background()
	clk := testingclock.NewFakeClock(t0)
	store := host.NewMemoryStore(clk)
	iss := &keeper{kept: map[string]bool{}}
	loop, err := host.New(host.Config{Store: store, Clock: clk,
		Issuers: map[certificate.IssuerRef]certificate.Issuer{{Name: "ca"}: iss}})
	require.NoError(t, err)
	_, err = store.Requests().Create(ctx, &certificate.CertificateRequest{
		ObjectMeta: certificate.ObjectMeta{Namespace: "default", Name: "by-hand"},
		Spec:       certificate.RequestSpec{IssuerRef: certificate.IssuerRef{Name: "ca"}}})
	require.NoError(t, err)
	_, err = hosttest.Settle(ctx, loop, 20)
	require.NoError(t, err)
	require.Equal(t, []string{"default/by-hand"}, iss.keeps())
	require.NoError(t, store.Requests().Delete(ctx, "default", "by-hand"))
	_, err = loop.Step(ctx)
	require.NoError(t, err)
	assert.Empty(t, iss.keeps())
}
