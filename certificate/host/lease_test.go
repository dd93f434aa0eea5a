package host_test

import (
	"context"
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

// scripted is an issuer whose answer a test sets; it counts its calls
// by replica (the Reconciler's identity, taken from the context).
type scripted struct {
	mu     sync.Mutex
	answer func(r *certificate.CertificateRequest, now time.Time) time.Time
	calls  int
}

func (s *scripted) Answer(_ context.Context, r *certificate.CertificateRequest, now time.Time) (time.Time, error) {
	s.mu.Lock()
	s.calls++
	answer := s.answer
	s.mu.Unlock()
	if answer == nil {
		certificate.SetPending(r, "ordering", now)
		return now.Add(5 * time.Second), nil
	}
	return answer(r, now), nil
}

func (s *scripted) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// replicaSet is several Reconcilers over one MemoryStore, each with an
// identity and an issuer of its own, on one fake clock.
type replicaSet struct {
	clk   *testingclock.FakeClock
	store *host.MemoryStore
	rs    []*host.Reconciler
	iss   []*scripted
	mu    sync.Mutex
	held  []host.Event // the passes Observe saw over requests another held
}

func newReplicaSet(t *testing.T, n int, leaseFor time.Duration) *replicaSet {
	s := &replicaSet{clk: testingclock.NewFakeClock(t0)}
	s.store = host.NewMemoryStore(s.clk)
	for i := range n {
		iss := &scripted{}
		r, err := host.NewReconciler(host.Config{Store: hosttest.CheckReadOnly(t, s.store), Clock: s.clk, Identity: "replica-" + string(rune('a'+i)),
			LeaseDuration: leaseFor, Issuers: map[certificate.IssuerRef]certificate.Issuer{{Name: "ca"}: iss},
			Observe: func(ev host.Event) {
				if ev.Held != nil {
					s.mu.Lock()
					s.held = append(s.held, ev)
					s.mu.Unlock()
				}
			}})
		require.NoError(t, err)
		s.rs, s.iss = append(s.rs, r), append(s.iss, iss)
	}
	return s
}

func (s *replicaSet) request(t *testing.T, name string) *certificate.CertificateRequest {
	made, err := s.store.Requests().Create(context.Background(), &certificate.CertificateRequest{
		ObjectMeta: certificate.ObjectMeta{Namespace: "default", Name: name, UID: "uid-" + name},
		Spec:       certificate.RequestSpec{IssuerRef: certificate.IssuerRef{Name: "ca"}, Request: []byte("csr")},
	})
	require.NoError(t, err)
	return made
}

// holder is who holds the lease of the request now: whoever the store
// refuses a newcomer for, or "" when it gives the newcomer the lease
// (which it then releases).
func (s *replicaSet) holder(t *testing.T, req *certificate.CertificateRequest) host.Lease {
	ctx := context.Background()
	key := host.LeaseKey(host.KindRequest, req.Namespace, req.Name, req.UID)
	got, err := s.store.Lease(ctx, key, "newcomer", s.clk.Now(), s.clk.Now().Add(time.Second))
	require.NoError(t, err)
	if got.Holder == "newcomer" {
		require.NoError(t, s.store.Release(ctx, key, "newcomer"))
		return host.Lease{}
	}
	return got
}

// Over a Leaser store, one replica at a time hands a request to its
// issuer; the others say who holds it until when and look again just
// after; once the holder stops renewing (it died), another takes the
// request over after the lease's deadline, and the one that stopped,
// back, finds it lost and leaves it alone; the answer releases the lease.
func TestReplicasHandARequestToTheirIssuerOneAtATime(t *testing.T) {
	ctx := context.Background()
	s := newReplicaSet(t, 3, 2*time.Minute)
	a, b, c := s.rs[0], s.rs[1], s.rs[2]
	req := s.request(t, "web-1")

	ev, err := a.Request(ctx, "default", "web-1")
	require.NoError(t, err)
	require.Nil(t, ev.Held)
	require.Equal(t, 1, s.iss[0].count(), "the first replica hands the request to its issuer")
	assert.Equal(t, host.Lease{Key: host.LeaseKey(host.KindRequest, "default", "web-1", req.UID), Holder: "replica-a", Until: t0.Add(2 * time.Minute)}, s.holder(t, req))

	for i, r := range []*host.Reconciler{b, c} {
		ev, err := r.Request(ctx, "default", "web-1")
		require.NoError(t, err, "a request another replica holds is no error")
		require.NotNil(t, ev.Held, "replica %d says the request is held", i+1)
		assert.Equal(t, "replica-a", ev.Held.Holder)
		assert.Equal(t, t0.Add(2*time.Minute+time.Second), ev.Next, "looked at again just after the lease expires")
		assert.Contains(t, ev.Held.String(), "held by replica-a until "+t0.Add(2*time.Minute).Format(time.RFC3339))
		assert.Nil(t, ev.Request, "nothing handed to the issuer")
		assert.Zero(t, s.iss[i+1].count())
	}
	assert.Len(t, s.held, 2, "Observe sees each pass over a held request")

	// The holder renews on every pass.
	s.clk.Step(5 * time.Second)
	_, err = a.Request(ctx, "default", "web-1")
	require.NoError(t, err)
	assert.Equal(t, t0.Add(5*time.Second+2*time.Minute), s.holder(t, req).Until)

	// It dies: nobody renews. Just before the deadline, nobody else may.
	s.clk.Step(2*time.Minute - time.Millisecond)
	ev, err = b.Request(ctx, "default", "web-1")
	require.NoError(t, err)
	require.NotNil(t, ev.Held)
	assert.Zero(t, s.iss[1].count())
	// At the deadline, b takes it over.
	s.clk.Step(time.Millisecond)
	ev, err = b.Request(ctx, "default", "web-1")
	require.NoError(t, err)
	require.Nil(t, ev.Held)
	assert.Equal(t, 1, s.iss[1].count(), "taken over at the deadline")
	assert.Equal(t, "replica-b", s.holder(t, req).Holder)

	// a comes back: its lease is lost, and it stops working on it.
	ev, err = a.Request(ctx, "default", "web-1")
	require.NoError(t, err)
	require.NotNil(t, ev.Held)
	assert.Equal(t, "replica-b", ev.Held.Holder)
	assert.Equal(t, 2, s.iss[0].count(), "a lost lease is not worked on")

	// b's issuer answers: the lease is released at once.
	s.iss[1].answer = func(r *certificate.CertificateRequest, now time.Time) time.Time {
		certificate.SetFailed(r, "the CA said no", now, time.Time{})
		return time.Time{}
	}
	s.clk.Step(5 * time.Second)
	_, err = b.Request(ctx, "default", "web-1")
	require.NoError(t, err)
	assert.Equal(t, host.Lease{}, s.holder(t, req), "released when answered")
	ev, err = c.Request(ctx, "default", "web-1")
	require.NoError(t, err)
	assert.Nil(t, ev.Held, "an answered request is nothing to do")
	assert.Zero(t, s.iss[2].count())
}

// A request deleted while a replica holds it: the lease is released when
// the holder finds it gone.
func TestALeaseIsReleasedWhenItsRequestIsDeleted(t *testing.T) {
	ctx := context.Background()
	s := newReplicaSet(t, 1, 0)
	req := s.request(t, "web-1")
	_, err := s.rs[0].Request(ctx, "default", "web-1")
	require.NoError(t, err)
	require.Equal(t, "replica-a", s.holder(t, req).Holder)
	assert.Equal(t, t0.Add(host.DefaultLeaseDuration), s.holder(t, req).Until, "LeaseDuration zero is the default")
	require.NoError(t, s.store.Requests().Delete(ctx, "default", "web-1"))
	_, err = s.rs[0].Request(ctx, "default", "web-1")
	require.NoError(t, err)
	assert.Equal(t, host.Lease{}, s.holder(t, req))
}

// A request another replica deleted while this one holds it: told of the
// deletion (Forget, as a host with a watch is), the holder releases the
// lease and keeps no record of it.
func TestForgetReleasesTheLeaseOfADeletedRequest(t *testing.T) {
	ctx := context.Background()
	s := newReplicaSet(t, 1, 0)
	req := s.request(t, "web-1")
	_, err := s.rs[0].Request(ctx, "default", "web-1")
	require.NoError(t, err)
	require.Equal(t, "replica-a", s.holder(t, req).Holder)
	require.NoError(t, s.store.Requests().Delete(ctx, "default", "web-1"))
	require.NoError(t, s.rs[0].Forget(ctx, certificate.IssuerRef{Name: "ca"}, "default", "web-1"))
	assert.Equal(t, host.Lease{}, s.holder(t, req), "released when forgotten")
}

// A holder whose issuer asks to be called again after its lease would
// end comes back to renew the lease halfway through it, rather than
// take a lease as long as the wait: nobody takes over a request whose
// holder lives, and a holder that dies holds the request up for one
// LeaseDuration at most.
func TestALeaseNeverOutlastsItsHolderByMoreThanItsDuration(t *testing.T) {
	ctx := context.Background()
	s := newReplicaSet(t, 2, 2*time.Minute)
	req := s.request(t, "web-1")
	s.iss[0].answer = func(r *certificate.CertificateRequest, now time.Time) time.Time {
		certificate.SetPending(r, "the CA asked us to wait an hour", now)
		return now.Add(time.Hour)
	}
	ev, err := s.rs[0].Request(ctx, "default", "web-1")
	require.NoError(t, err)
	assert.Equal(t, t0.Add(2*time.Minute), s.holder(t, req).Until, "one lease, not an hour's")
	assert.Equal(t, t0.Add(time.Minute), ev.Next, "back halfway through the lease to renew it")
	ev, err = s.rs[1].Request(ctx, "default", "web-1")
	require.NoError(t, err)
	require.NotNil(t, ev.Held)
	assert.Equal(t, t0.Add(2*time.Minute+time.Second), ev.Next)

	// The holder renews on time, again and again: the other never gets
	// the request while it lives.
	for i := 1; i <= 3; i++ {
		s.clk.SetTime(t0.Add(time.Duration(i) * time.Minute))
		ev, err = s.rs[0].Request(ctx, "default", "web-1")
		require.NoError(t, err)
		require.Nil(t, ev.Held)
		assert.Equal(t, s.clk.Now().Add(time.Minute), ev.Next)
		assert.Equal(t, s.clk.Now().Add(2*time.Minute), s.holder(t, req).Until)
		s.clk.SetTime(t0.Add(time.Duration(i)*time.Minute + 30*time.Second))
		ev, err = s.rs[1].Request(ctx, "default", "web-1")
		require.NoError(t, err)
		require.NotNil(t, ev.Held, "renewed at %d min", i)
	}
	assert.Equal(t, 4, s.iss[0].count(), "each renewal called the issuer early, as a write would")
	assert.Zero(t, s.iss[1].count())

	// It dies after its last renewal at 3 min: the other takes the
	// request over one lease later, not an hour.
	s.clk.SetTime(t0.Add(5*time.Minute + time.Second))
	ev, err = s.rs[1].Request(ctx, "default", "web-1")
	require.NoError(t, err)
	require.Nil(t, ev.Held)
	assert.Equal(t, 1, s.iss[1].count())
	assert.Equal(t, "replica-b", s.holder(t, req).Holder)
}

// An issuer call that outlasts the lease is reported: another replica
// may have taken the request over meanwhile.
func TestAnIssuerCallThatOutlastsItsLeaseIsReported(t *testing.T) {
	ctx := context.Background()
	s := newReplicaSet(t, 2, time.Minute)
	req := s.request(t, "web-1")
	s.iss[0].answer = func(r *certificate.CertificateRequest, now time.Time) time.Time {
		s.clk.Step(90 * time.Second) // a slow call
		_, err := s.rs[1].Request(ctx, "default", "web-1")
		require.NoError(t, err)
		certificate.SetPending(r, "ordering", now)
		return s.clk.Now().Add(5 * time.Second)
	}
	ev, err := s.rs[0].Request(ctx, "default", "web-1")
	require.ErrorIs(t, err, host.ErrConflict, "the answer is not written over the new holder's")
	require.Error(t, ev.Warning)
	assert.Contains(t, ev.Warning.Error(), "held by replica-b")
	assert.Contains(t, ev.Warning.Error(), "Config.LeaseDuration 1m0s must exceed the issuer's longest call")
	assert.Equal(t, "replica-b", s.holder(t, req).Holder)
}

func TestLeaseConfig(t *testing.T) {
	st := host.NewMemoryStore(nil)
	_, err := host.NewReconciler(host.Config{Store: st, LeaseDuration: -time.Second})
	require.ErrorContains(t, err, "Config.LeaseDuration is -1s")
	r1, err := host.NewReconciler(host.Config{Store: st})
	require.NoError(t, err)
	r2, err := host.NewReconciler(host.Config{Store: st})
	require.NoError(t, err)
	assert.NotEmpty(t, r1.Identity())
	assert.NotEqual(t, r1.Identity(), r2.Identity(), "no two Reconcilers share a made identity")
	r3, err := host.NewReconciler(host.Config{Store: st, Identity: "web-2"})
	require.NoError(t, err)
	assert.Equal(t, "web-2", r3.Identity())
}

// Certificates need no lease: two Reconcilers that decide the same
// certificate at the same moments, over and over, through renewal after
// renewal, make one request per revision — the request's name is the
// revision's, and every write names the version it read.
func TestTwoReconcilersDecidingOneCertificateMakeOneRequestPerRevision(t *testing.T) {
	ctx := context.Background()
	clk := testingclock.NewFakeClock(t0)
	store := host.NewMemoryStore(clk)
	var mu sync.Mutex
	made := map[string]map[string]bool{} // request name → UIDs
	store.Watch(func(ch host.Change) {
		if ch.Kind == host.KindRequest && !ch.Deleted {
			mu.Lock()
			if made[ch.Name] == nil {
				made[ch.Name] = map[string]bool{}
			}
			made[ch.Name][ch.Meta.UID] = true
			mu.Unlock()
		}
	})
	ca := newCA(t, t0).Issuer(nil)
	var rs []*host.Reconciler
	for _, id := range []string{"replica-a", "replica-b"} {
		r, err := host.NewReconciler(host.Config{Store: store, Clock: clk, Identity: id,
			Issuers: map[certificate.IssuerRef]certificate.Issuer{{Name: "ca"}: ca}})
		require.NoError(t, err)
		rs = append(rs, r)
	}
	_, err := store.Certificates().Create(ctx, newCert("default", "web", "web-tls"))
	require.NoError(t, err)

	const revisions = 8
	conflicts := 0
	for pass := 0; ; pass++ {
		require.Less(t, pass, 400, "not at revision %d after %d rounds", revisions, pass)
		c, err := store.Certificates().Get(ctx, "default", "web")
		require.NoError(t, err)
		if revision(c) >= revisions && ready(c) {
			break
		}
		if ready(c) && c.Status.Condition(certificate.ConditionIssuing) == nil {
			// Renew by hand: the manual trigger.
			c.Status.Conditions = append(c.Status.Conditions, certificate.Condition{Type: certificate.ConditionIssuing,
				Status: certificate.StatusTrue, Reason: certificate.ReasonManualTrigger, LastTransitionTime: clk.Now()})
			_, err = store.Certificates().Update(ctx, c)
			require.NoError(t, err)
		}
		// Both decide at once, then both hand the requests to the issuer
		// at once (the lease lets one through).
		errs := make([]error, len(rs))
		var wg sync.WaitGroup
		for i, r := range rs {
			wg.Go(func() { _, errs[i] = r.Certificate(ctx, "default", "web") })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				require.ErrorIs(t, err, host.ErrConflict, "the only error of deciding at once is a conflict")
				conflicts++
			}
		}
		reqs, err := store.Requests().List(ctx, host.ListOptions{Namespace: "default"})
		require.NoError(t, err)
		for _, req := range reqs {
			for _, r := range rs {
				wg.Go(func() {
					_, err := r.Request(ctx, "default", req.Name)
					assert.NoError(t, err)
				})
			}
		}
		wg.Wait()
		clk.Step(time.Second)
	}
	mu.Lock()
	defer mu.Unlock()
	assert.GreaterOrEqual(t, len(made), revisions, "a request per revision")
	for name, uids := range made {
		assert.Len(t, uids, 1, "request %s was made %d times", name, len(uids))
	}
	t.Logf("%d revisions, %d requests made, %d passes met a conflict", revisions, len(made), conflicts)
}

// afterGet is a MemoryStore whose request reads call then once, after
// reading.
type afterGet struct {
	*host.MemoryStore
	then func()
}

func (s *afterGet) Requests() host.Collection[*certificate.CertificateRequest] {
	return afterGetColl{s.MemoryStore.Requests(), s}
}

type afterGetColl struct {
	host.Collection[*certificate.CertificateRequest]
	s *afterGet
}

func (c afterGetColl) Get(ctx context.Context, ns, name string) (*certificate.CertificateRequest, error) {
	r, err := c.Collection.Get(ctx, ns, name)
	if then := c.s.then; then != nil {
		c.s.then = nil
		then()
	}
	return r, err
}

// A replica that read a request before another answered it and released
// its lease does not hand it to its issuer when it then takes the lease:
// a lease taken anew is followed by a fresh read.
func TestALeaseTakenAnewIsFollowedByAFreshRead(t *testing.T) {
	ctx := context.Background()
	clk := testingclock.NewFakeClock(t0)
	store := &afterGet{MemoryStore: host.NewMemoryStore(clk)}
	answering := &scripted{answer: func(r *certificate.CertificateRequest, now time.Time) time.Time {
		certificate.SetFailed(r, "the CA said no", now, time.Time{})
		return time.Time{}
	}}
	late := &scripted{}
	newR := func(id string, iss certificate.Issuer) *host.Reconciler {
		r, err := host.NewReconciler(host.Config{Store: store, Clock: clk, Identity: id,
			Issuers: map[certificate.IssuerRef]certificate.Issuer{{Name: "ca"}: iss}})
		require.NoError(t, err)
		return r
	}
	a, b := newR("replica-a", answering), newR("replica-b", late)
	_, err := store.MemoryStore.Requests().Create(ctx, &certificate.CertificateRequest{
		ObjectMeta: certificate.ObjectMeta{Namespace: "default", Name: "web-1"},
		Spec:       certificate.RequestSpec{IssuerRef: certificate.IssuerRef{Name: "ca"}, Request: []byte("csr")},
	})
	require.NoError(t, err)
	store.then = func() {
		// b has read the request unanswered; a answers it now.
		_, err := a.Request(ctx, "default", "web-1")
		require.NoError(t, err)
	}
	ev, err := b.Request(ctx, "default", "web-1")
	require.NoError(t, err)
	assert.Equal(t, 1, answering.count())
	assert.Zero(t, late.count(), "the request answered meanwhile is not handed to the issuer again")
	assert.Nil(t, ev.Request)
	got, err := store.MemoryStore.Lease(ctx, host.LeaseKey(host.KindRequest, "default", "web-1", "uid-00000001"), "newcomer", t0, t0.Add(time.Minute))
	require.NoError(t, err)
	assert.Equal(t, "newcomer", got.Holder, "b released the lease it took")
}
