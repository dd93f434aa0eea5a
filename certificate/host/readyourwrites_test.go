package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/host/hosttest"
)

// lag is how a lagStore shows one write to its reads and its watch.
type lag int

const (
	// lagBefore: reads show the write, and its event is sent, before the
	// write returns (an informer that is quicker than the write's reply).
	lagBefore lag = iota
	// lagAfter: shown, and the event sent, at the next pump.
	lagAfter
	// lagFolded: shown at the next pump, folded into the object's later
	// writes: one event for the newest version only.
	lagFolded
	// lagNever: never sent; reads show it only after a relist.
	lagNever
	lagKinds
)

func (l lag) String() string {
	return [...]string{"before the write returns", "after the write returns", "folded into a later version", "never (relist)"}[l]
}

// lagStore is a Store whose reads and watch lag behind its writes as a
// lag function says, write by write. The truth is a MemoryStore; reads
// come from a view of it that pump and relist bring up to date.
type lagStore struct {
	truth *host.MemoryStore
	next  func() lag

	mu       sync.Mutex
	view     map[string][]byte // kind/namespace/name → the object as reads show it
	pending  []lagged
	watchers []func(host.Change)
	// seq numbers the writes; shown is, per object, the newest write
	// reads show: they never go back to an older one, as an informer's
	// cache does not.
	seq   int
	shown map[string]int
	// onEvent, when set, is called by a watch registered before
	// ReadYourWrites's.
	onEvent func(host.Change)
}

type lagged struct {
	k      string
	ch     host.Change
	data   []byte
	folded bool
	seq    int
}

func newLagStore(clk *testingclock.FakeClock, next func() lag) *lagStore {
	s := &lagStore{truth: host.NewMemoryStore(clk), next: next, view: map[string][]byte{}, shown: map[string]int{}}
	s.truth.Watch(s.wrote)
	return s
}

func lagKey(kind host.Kind, namespace, name string) string {
	return string(kind) + "/" + namespace + "/" + name
}

// wrote is the truth's watch: called within each write, before it
// returns.
func (s *lagStore) wrote(ch host.Change) {
	k := lagKey(ch.Kind, ch.Namespace, ch.Name)
	var data []byte
	if !ch.Deleted {
		data = s.read(ch.Kind, ch.Namespace, ch.Name)
	}
	s.mu.Lock()
	s.seq++
	l := lagged{k: k, ch: ch, data: data, seq: s.seq}
	s.mu.Unlock()
	switch s.next() {
	case lagBefore:
		s.show(l)
	case lagAfter:
		s.mu.Lock()
		s.pending = append(s.pending, l)
		s.mu.Unlock()
	case lagFolded:
		l.folded = true
		s.mu.Lock()
		s.pending = append(s.pending, l)
		s.mu.Unlock()
	case lagNever:
	}
}

func (s *lagStore) read(kind host.Kind, namespace, name string) []byte {
	var obj any
	var err error
	ctx := context.Background()
	switch kind {
	case host.KindCertificate:
		obj, err = s.truth.Certificates().Get(ctx, namespace, name)
	case host.KindSecret:
		obj, err = s.truth.Secrets().Get(ctx, namespace, name)
	case host.KindRequest:
		obj, err = s.truth.Requests().Get(ctx, namespace, name)
	}
	if err != nil {
		panic(err)
	}
	b, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	return b
}

// show makes reads show l and sends its event, unless reads show a
// newer write of its object already.
func (s *lagStore) show(l lagged) {
	s.mu.Lock()
	if l.seq <= s.shown[l.k] {
		s.mu.Unlock()
		return
	}
	s.shown[l.k] = l.seq
	if l.ch.Deleted {
		delete(s.view, l.k)
	} else {
		s.view[l.k] = l.data
	}
	ws := s.watchers
	s.mu.Unlock()
	for _, w := range ws {
		w(l.ch)
	}
}

// pump shows what waits, in write order; of a folded write, only the
// newest version of its object.
func (s *lagStore) pump() {
	s.mu.Lock()
	ps := s.pending
	s.pending = nil
	s.mu.Unlock()
	for i, l := range ps {
		if l.folded && later(ps[i+1:], l.k) {
			continue
		}
		s.show(l)
	}
}

func later(ps []lagged, k string) bool {
	for _, l := range ps {
		if l.k == k {
			return true
		}
	}
	return false
}

// relist makes reads show the truth, sending no events, as a relist of
// an informer whose watch dropped them does.
func (s *lagStore) relist() {
	ctx := context.Background()
	view := map[string][]byte{}
	certs, _ := s.truth.Certificates().List(ctx, host.ListOptions{})
	for _, c := range certs {
		view[lagKey(host.KindCertificate, c.Namespace, c.Name)], _ = json.Marshal(c)
	}
	secs, _ := s.truth.Secrets().List(ctx, host.ListOptions{})
	for _, c := range secs {
		view[lagKey(host.KindSecret, c.Namespace, c.Name)], _ = json.Marshal(c)
	}
	reqs, _ := s.truth.Requests().List(ctx, host.ListOptions{})
	for _, c := range reqs {
		view[lagKey(host.KindRequest, c.Namespace, c.Name)], _ = json.Marshal(c)
	}
	s.mu.Lock()
	s.view = view
	s.pending = nil
	for k := range s.shown {
		s.shown[k] = s.seq
	}
	for k := range view {
		s.shown[k] = s.seq
	}
	s.mu.Unlock()
}

func (s *lagStore) Watch(f func(host.Change)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watchers = append(s.watchers, f)
}

func (s *lagStore) Certificates() host.Collection[*certificate.Certificate] {
	return lagCollection[*certificate.Certificate]{s, s.truth.Certificates(), host.KindCertificate}
}

func (s *lagStore) Secrets() host.Collection[*certificate.Secret] {
	return lagCollection[*certificate.Secret]{s, s.truth.Secrets(), host.KindSecret}
}

func (s *lagStore) Requests() host.Collection[*certificate.CertificateRequest] {
	return lagCollection[*certificate.CertificateRequest]{s, s.truth.Requests(), host.KindRequest}
}

// lagCollection reads from the view and writes to the truth.
type lagCollection[T host.Object] struct {
	s    *lagStore
	c    host.Collection[T]
	kind host.Kind
}

func decodeAs[T host.Object](b []byte) T {
	var obj T
	switch any(obj).(type) {
	case *certificate.Certificate:
		obj = any(new(certificate.Certificate)).(T)
	case *certificate.Secret:
		obj = any(new(certificate.Secret)).(T)
	case *certificate.CertificateRequest:
		obj = any(new(certificate.CertificateRequest)).(T)
	}
	if err := json.Unmarshal(b, obj); err != nil {
		panic(err)
	}
	return obj
}

func (c lagCollection[T]) Get(_ context.Context, namespace, name string) (T, error) {
	c.s.mu.Lock()
	b, ok := c.s.view[lagKey(c.kind, namespace, name)]
	c.s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%s %s/%s: %w", c.kind, namespace, name, host.ErrNotFound)
	}
	return decodeAs[T](b), nil
}

func (c lagCollection[T]) List(_ context.Context, opts host.ListOptions) ([]T, error) {
	c.s.mu.Lock()
	var bs [][]byte
	for k, b := range c.s.view {
		if len(k) > len(c.kind) && k[:len(c.kind)+1] == string(c.kind)+"/" {
			bs = append(bs, b)
		}
	}
	c.s.mu.Unlock()
	var out []T
	for _, b := range bs {
		if obj := decodeAs[T](b); opts.Matches(obj) {
			out = append(out, obj)
		}
	}
	return out, nil
}

func (c lagCollection[T]) Create(ctx context.Context, obj T) (T, error) { return c.c.Create(ctx, obj) }
func (c lagCollection[T]) Update(ctx context.Context, obj T) (T, error) { return c.c.Update(ctx, obj) }
func (c lagCollection[T]) Delete(ctx context.Context, namespace, name string) error {
	return c.c.Delete(ctx, namespace, name)
}

// rv is a MemoryStore's resource version as a number; they only grow.
func rv(t testing.TB, s string) int {
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

// FuzzReadYourWrites: whatever the store behind does with each write —
// shows it before the write returns, after, folded into a later version,
// or never until a relist — and whatever another writer does meanwhile,
// a read through ReadYourWrites never shows less than the last write made
// through it: not a version it replaced, not an object it deleted, not
// "not found" for one it created.
func FuzzReadYourWrites(f *testing.F) {
	f.Add([]byte{0x00, 0x11, 0x22, 0x33, 0x04, 0x15, 0x26, 0x37, 0x48, 0x59})
	f.Add([]byte{0x03, 0x13, 0x23, 0x33, 0x43, 0x53, 0x63, 0x73})
	f.Add([]byte{0x02, 0x12, 0x52, 0x22, 0x62, 0x32, 0x72, 0x42})
	f.Add([]byte{0x81, 0x01, 0x11, 0x21, 0x01, 0x11, 0x31, 0x51, 0x21, 0x61})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 200 {
			ops = ops[:200]
		}
		ctx := context.Background()
		var mode lag
		s := newLagStore(testingclock.NewFakeClock(t0), func() lag { return mode })
		ryw := host.NewReadYourWrites(s)
		if len(ops) > 0 && ops[0]&0x80 != 0 {
			// Keep the objects of at most one or two writes: the others
			// are let go, and reads of them must still not show the past.
			ryw.MaxPending = 1 + int(ops[0]&1)
		}
		names := []string{"a", "b", "c"}
		// floor is, per name, the least version a read may show after
		// the last write through ryw; deleted: that write was a
		// deletion, so "not found", or a version made after it, is
		// what a read may show.
		type floor struct {
			rv      int
			deleted bool
			// gone: another writer deleted it since
			gone bool
			// blind: the deletion through ryw came after another
			// writer's write of the name that ryw had not made itself
			// since: it may have deleted an object ryw never saw (a
			// Delete names no version), which a read may show until the
			// watch reports the deletion (see ReadYourWrites).
			blind bool
		}
		floors := map[string]floor{}
		// other: another writer wrote the name since ryw last did.
		other := map[string]bool{}
		last := 0 // the newest version any write made
		for _, op := range ops {
			mode = lag(op&0x0f) % lagKinds
			name := names[int(op>>4)%len(names)]
			switch (op >> 4) % 8 {
			case 0, 1, 2: // create or update through ryw
				cur, err := ryw.Secrets().Get(ctx, "ns", name)
				var made *certificate.Secret
				switch {
				case errors.Is(err, host.ErrNotFound):
					made, err = ryw.Secrets().Create(ctx, &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Namespace: "ns", Name: name}})
				case err == nil:
					cur.Data = map[string][]byte{"n": []byte{op}}
					made, err = ryw.Secrets().Update(ctx, cur)
				}
				if errors.Is(err, host.ErrConflict) || errors.Is(err, host.ErrAlreadyExists) || errors.Is(err, host.ErrNotFound) {
					continue // another writer got there first: the read was stale, the write refused
				}
				require.NoError(t, err)
				last = rv(t, made.ResourceVersion)
				floors[name] = floor{rv: last}
				other[name] = false
			case 3: // delete through ryw
				err := ryw.Secrets().Delete(ctx, "ns", name)
				if err != nil && !errors.Is(err, host.ErrNotFound) {
					require.NoError(t, err)
				}
				floors[name] = floor{rv: last, deleted: true, blind: other[name]}
			case 4: // another writer, straight to the store behind
				other[name] = true
				cur, err := s.truth.Secrets().Get(ctx, "ns", name)
				var made *certificate.Secret
				if errors.Is(err, host.ErrNotFound) {
					made, err = s.truth.Secrets().Create(ctx, &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Namespace: "ns", Name: name}})
				} else if err == nil {
					cur.Data = map[string][]byte{"other": []byte{op}}
					made, err = s.truth.Secrets().Update(ctx, cur)
				}
				require.NoError(t, err)
				last = rv(t, made.ResourceVersion)
			case 5:
				s.pump()
			case 6:
				s.relist()
			case 7: // another writer deletes
				other[name] = true
				if s.truth.Secrets().Delete(ctx, "ns", name) == nil {
					if fl, ok := floors[name]; ok {
						fl.gone = true
						floors[name] = fl
					}
				}
			}
			for n, fl := range floors {
				got, err := ryw.Secrets().Get(ctx, "ns", n)
				switch {
				case errors.Is(err, host.ErrNotFound):
					// Not found is what the last write made, or another
					// writer's deletion since; never a create's lag.
					require.True(t, fl.deleted || fl.gone, "%s: not found after a write through ReadYourWrites made version %d", n, fl.rv)
				case errors.Is(err, host.ErrConflict):
					// The store reads a version an update was refused at:
					// ReadYourWrites says so rather than show it.
				case err != nil:
					require.NoError(t, err)
				case fl.deleted && fl.blind:
					// It may show what the deletion removed unseen.
				case fl.deleted:
					require.Greater(t, rv(t, got.ResourceVersion), fl.rv, "%s: shows a version from before its deletion", n)
				default:
					require.GreaterOrEqual(t, rv(t, got.ResourceVersion), fl.rv, "%s: shows a version older than the last write", n)
				}
				list, err := ryw.Secrets().List(ctx, host.ListOptions{Namespace: "ns"})
				if errors.Is(err, host.ErrConflict) {
					continue // the list lags behind a write whose copy went: it says so
				}
				require.NoError(t, err)
				for _, obj := range list {
					if fl := floors[obj.Name]; obj.Name == n && fl.deleted && fl.blind {
						continue
					} else if obj.Name == n && fl.deleted {
						require.Greater(t, rv(t, obj.ResourceVersion), fl.rv, "%s: listed from before its deletion", n)
					} else if obj.Name == n {
						require.GreaterOrEqual(t, rv(t, obj.ResourceVersion), fl.rv, "%s: listed older than the last write", n)
					}
				}
			}
		}
	})
}

// Over a store whose reads and watch lag in each of the ways a real one
// can, a Loop brings certificates to Ready without the clock moving at
// all: nothing waits for the store to catch up with the loop's own
// writes. (The loop this replaced waited up to a minute for a write's
// watch event that never came, or that arrived before the write
// returned.)
func TestLoopDoesNotWaitForALaggingStore(t *testing.T) {
	for mode := lag(0); mode < lagKinds; mode++ {
		t.Run(mode.String(), func(t *testing.T) {
			ctx := context.Background()
			clk := testingclock.NewFakeClock(t0)
			s := newLagStore(clk, func() lag { return mode })
			loop, err := host.New(host.Config{Store: hosttest.CheckReadOnly(t, s), Clock: clk,
				Issuers: map[certificate.IssuerRef]certificate.Issuer{{Name: "ca"}: newCA(t, t0).Issuer(nil)}})
			require.NoError(t, err)
			names := []string{"api", "db", "web"}
			for _, n := range names {
				_, err := s.Certificates().Create(ctx, newCert("default", n, n+"-tls"))
				require.NoError(t, err)
			}
			s.relist() // the user's creates are seen: the loop's lists find them
			allReady := func() bool {
				for _, n := range names {
					c, err := s.truth.Certificates().Get(ctx, "default", n)
					if err != nil || !ready(c) {
						return false
					}
				}
				return true
			}
			for i := 0; i < 50 && !allReady(); i++ {
				_, err := hosttest.Settle(ctx, loop, 100)
				require.NoError(t, err)
				s.pump()
			}
			require.Equal(t, t0, clk.Now(), "the clock never moved")
			for _, n := range names {
				c, err := s.truth.Certificates().Get(ctx, "default", n)
				require.NoError(t, err)
				require.True(t, ready(c), "%s is not Ready at once: %+v", n, c.Status.Conditions)
				require.Equal(t, 1, revision(c))
			}
		})
	}
}

// With room for one object only, ReadYourWrites lets the older writes'
// objects go, but a read the store answers from before them still does
// not show the past: it fails with ErrConflict until the store catches
// up, and then shows the write.
func TestReadYourWritesLetsObjectsGoButNeverShowsThePast(t *testing.T) {
	ctx := context.Background()
	s := newLagStore(testingclock.NewFakeClock(t0), func() lag { return lagAfter })
	ryw := host.NewReadYourWrites(s)
	ryw.MaxPending = 1
	a, err := ryw.Secrets().Create(ctx, &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Namespace: "ns", Name: "a", OwnerUID: "u"}})
	require.NoError(t, err)
	_, err = ryw.Secrets().Create(ctx, &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Namespace: "ns", Name: "b", OwnerUID: "u"}})
	require.NoError(t, err)

	_, err = ryw.Secrets().Get(ctx, "ns", "a")
	require.ErrorIs(t, err, host.ErrConflict, "a's object went: its create is not shown as 'not found'")
	require.ErrorContains(t, err, "ns/a")
	_, err = ryw.Secrets().List(ctx, host.ListOptions{Namespace: "ns", OwnerUID: "u"})
	require.ErrorIs(t, err, host.ErrConflict, "a list without a is from before its create")
	b, err := ryw.Secrets().Get(ctx, "ns", "b")
	require.NoError(t, err, "b's object is kept")
	require.Equal(t, "b", b.Name)

	s.pump() // the store shows both
	got, err := ryw.Secrets().Get(ctx, "ns", "a")
	require.NoError(t, err)
	require.Equal(t, a.ResourceVersion, got.ResourceVersion)
	list, err := ryw.Secrets().List(ctx, host.ListOptions{Namespace: "ns", OwnerUID: "u"})
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Zero(t, ryw.Pending(), "the watch showed every write")
}

// syncingStore is a MemoryStore that says it has not synced until told.
type syncingStore struct {
	*host.MemoryStore
	synced bool
}

func (s *syncingStore) HasSynced() bool { return s.synced }

// A Loop over a store that has not synced lists nothing and decides
// nothing, says why, and asks again a second later; the Reconciler's
// passes fail with ErrNotSynced. Once the store has synced, the next
// Step lists it and issues.
func TestLoopWaitsForTheStoreToSync(t *testing.T) {
	ctx := context.Background()
	clk := testingclock.NewFakeClock(t0)
	st := &syncingStore{MemoryStore: host.NewMemoryStore(clk)}
	_, err := st.Certificates().Create(ctx, newCert("default", "web", "web-tls"))
	require.NoError(t, err)
	var events []host.Event
	loop, err := host.New(host.Config{Store: st, Clock: clk, Observe: func(ev host.Event) { events = append(events, ev) },
		Issuers: map[certificate.IssuerRef]certificate.Issuer{{Name: "ca"}: newCA(t, t0).Issuer(nil)}})
	require.NoError(t, err)

	n, err := loop.Step(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "nothing is looked at before the store syncs")
	require.Len(t, events, 1)
	require.ErrorIs(t, events[0].Warning, host.ErrNotSynced)
	next, ok := loop.Next()
	require.True(t, ok)
	require.Equal(t, t0.Add(time.Second), next, "it asks again a second later")
	_, err = loop.Reconciler().Certificate(ctx, "default", "web")
	require.ErrorIs(t, err, host.ErrNotSynced)
	require.ErrorContains(t, err, "default/web")
	c, err := st.Certificates().Get(ctx, "default", "web")
	require.NoError(t, err)
	require.Empty(t, c.Status.Conditions, "nothing was written")

	st.synced = true
	_, err = hosttest.Settle(ctx, loop, 100)
	require.NoError(t, err)
	c, err = st.Certificates().Get(ctx, "default", "web")
	require.NoError(t, err)
	require.True(t, ready(c), "%+v", c.Status.Conditions)
	require.True(t, loop.Reconciler().HasSynced())
}

// A name deleted through ReadYourWrites and made again reads as the new
// object as soon as the store behind shows it, even before the watch
// reports the deletion — whoever made it again, and however the store
// shows it: a host that reads because a watch of its own reported the
// create (the way a request controller answers a new request) must not
// be told "not found" and wait for an event that will not come.
func TestReadYourWritesShowsAnObjectMadeAgainAfterItsDeletion(t *testing.T) {
	ctx := context.Background()
	for name, tc := range map[string]struct {
		// again makes the name again after the deletion, whose event
		// the store behind has not sent yet, and reads it as the case
		// says, returning what the read got.
		again func(t *testing.T, s *lagStore, ryw *host.ReadYourWrites, mode *lag) (*certificate.Secret, *certificate.Secret, error)
	}{
		"made again through it, read on the create's own event before the create returns": {
			again: func(t *testing.T, s *lagStore, ryw *host.ReadYourWrites, mode *lag) (made, got *certificate.Secret, err error) {
				*mode = lagBefore
				s.onEvent = func(ch host.Change) {
					if !ch.Deleted && got == nil && err == nil {
						got, err = ryw.Secrets().Get(ctx, "ns", "x")
						require.NotNil(t, got, "read within the create's event: %v", err)
					}
				}
				made, cerr := ryw.Secrets().Create(ctx, &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Namespace: "ns", Name: "x"}})
				require.NoError(t, cerr)
				return made, got, err
			},
		},
		"made again by another writer, its event before the deletion's": {
			again: func(t *testing.T, s *lagStore, ryw *host.ReadYourWrites, mode *lag) (*certificate.Secret, *certificate.Secret, error) {
				*mode = lagBefore
				made, err := s.truth.Secrets().Create(ctx, &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Namespace: "ns", Name: "x"}})
				require.NoError(t, err)
				got, err := ryw.Secrets().Get(ctx, "ns", "x")
				return made, got, err
			},
		},
		"made again by another writer, shown by a relist that sends no events": {
			again: func(t *testing.T, s *lagStore, ryw *host.ReadYourWrites, mode *lag) (*certificate.Secret, *certificate.Secret, error) {
				*mode = lagNever
				made, err := s.truth.Secrets().Create(ctx, &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Namespace: "ns", Name: "x"}})
				require.NoError(t, err)
				s.relist()
				got, err := ryw.Secrets().Get(ctx, "ns", "x")
				return made, got, err
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			mode := lagBefore
			s := newLagStore(testingclock.NewFakeClock(t0), func() lag { return mode })
			// The host's other watch sees events before ReadYourWrites does.
			s.Watch(func(ch host.Change) {
				if s.onEvent != nil {
					s.onEvent(ch)
				}
			})
			ryw := host.NewReadYourWrites(s)
			first, err := ryw.Secrets().Create(ctx, &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Namespace: "ns", Name: "x"}})
			require.NoError(t, err)

			mode = lagAfter // the deletion's event waits
			require.NoError(t, ryw.Secrets().Delete(ctx, "ns", "x"))
			_, err = ryw.Secrets().Get(ctx, "ns", "x")
			require.ErrorIs(t, err, host.ErrNotFound, "the store behind still shows the object deleted: the read does not")

			made, got, err := tc.again(t, s, ryw, &mode)
			require.NoError(t, err)
			require.NotEqual(t, first.UID, made.UID)
			require.Equal(t, made.UID, got.UID, "the object made again")
			require.Equal(t, made.ResourceVersion, got.ResourceVersion)

			s.pump() // the deletion's event, late: it changes nothing
			got, err = ryw.Secrets().Get(ctx, "ns", "x")
			require.NoError(t, err)
			require.Equal(t, made.UID, got.UID)
		})
	}
}

// slowCreates is a store whose secret Creates land at once but reply
// only when the test says, as a create's HTTP reply can come after the
// watch event that another controller acted on.
type slowCreates struct {
	*host.MemoryStore
	landed, reply chan struct{}
}

func (s slowCreates) Secrets() host.Collection[*certificate.Secret] {
	return slowCreateCollection{s.MemoryStore.Secrets(), s}
}

type slowCreateCollection struct {
	host.Collection[*certificate.Secret]
	s slowCreates
}

func (c slowCreateCollection) Create(ctx context.Context, obj *certificate.Secret) (*certificate.Secret, error) {
	made, err := c.Collection.Create(ctx, obj)
	c.s.landed <- struct{}{}
	<-c.s.reply
	return made, err
}

// Two writers share one ReadYourWrites (a certificate controller that
// creates a request, a request controller that answers it): when the
// second writer's update is recorded before the first writer's create
// replies, the create's late record does not make the update's version
// read as one it replaced. Before, every read showed the request as
// created, unanswered, for good — the store behind showed the answer,
// and no event was left to come.
func TestReadYourWritesKeepsTheLaterOfTwoWritersWhoseRepliesCrossed(t *testing.T) {
	ctx := context.Background()
	st := slowCreates{host.NewMemoryStore(testingclock.NewFakeClock(t0)), make(chan struct{}), make(chan struct{})}
	ryw := host.NewReadYourWrites(st)
	created := make(chan *certificate.Secret)
	go func() {
		made, err := ryw.Secrets().Create(ctx, &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Namespace: "ns", Name: "x"}})
		if err != nil {
			t.Error(err)
		}
		created <- made
	}()
	<-st.landed
	cur, err := ryw.Secrets().Get(ctx, "ns", "x")
	require.NoError(t, err, "the store behind shows the create before its reply")
	cur.Data = map[string][]byte{"answer": []byte("issued")}
	answered, err := ryw.Secrets().Update(ctx, cur)
	require.NoError(t, err)
	close(st.reply)
	first := <-created
	require.NotEqual(t, first.ResourceVersion, answered.ResourceVersion)

	got, err := ryw.Secrets().Get(ctx, "ns", "x")
	require.NoError(t, err)
	require.Equal(t, answered.ResourceVersion, got.ResourceVersion, "the later write, not the create whose reply came last")
	require.Equal(t, "issued", string(got.Data["answer"]))
	list, err := ryw.Secrets().List(ctx, host.ListOptions{Namespace: "ns"})
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, answered.ResourceVersion, list[0].ResourceVersion)
}
