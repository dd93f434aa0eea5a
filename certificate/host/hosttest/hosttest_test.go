package hosttest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// fakeT records what the suite reports instead of failing the test.
type fakeT struct {
	real *testing.T
	name string
	mu   *sync.Mutex
	errs *[]string
}

type stop struct{}

func (f fakeT) Helper() {}

func (f fakeT) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	*f.errs = append(*f.errs, f.name+": "+fmt.Sprintf(format, args...))
}

func (f fakeT) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	panic(stop{})
}

func (f fakeT) Skipf(string, ...any) { panic(stop{}) }

func (f fakeT) Run(name string, fn func(t tb)) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(stop); !ok {
				panic(r)
			}
		}
	}()
	fn(fakeT{f.real, f.name + "/" + name, f.mu, f.errs})
}

func (f fakeT) testingT() *testing.T { return f.real }

// runFake runs the suite and returns what it reported.
func runFake(t *testing.T, open func(t *testing.T) host.Store, cfg Config) []string {
	var errs []string
	f := fakeT{real: t, name: "TestStore", mu: &sync.Mutex{}, errs: &errs}
	f.Run("", func(t tb) { run(t, open, cfg) })
	return errs
}

func memory(*testing.T) host.Store { return host.NewMemoryStore(testingclock.NewFakeClock(t0)) }

// A store that keeps the contract, whether its reads show writes at once
// or lag behind them (caught up by Settle, or on a goroutine of its own
// that reports each write once reads show it), passes.
func TestSuitePassesStoresThatKeepTheContract(t *testing.T) {
	for name, tc := range map[string]struct {
		open func(t *testing.T) host.Store
		cfg  Config
	}{
		"a memory store": {open: memory},
		"a lagging store caught up by Settle": {
			open: func(t *testing.T) host.Store { return newLagging(t, false, false) },
			cfg:  Config{Settle: func(s host.Store) { s.(*lagging).catchUp() }},
		},
		"a lagging store that catches up on a goroutine and reports writes once they show": {
			open: func(t *testing.T) host.Store { return newLagging(t, false, true) },
		},
		"a store that takes names that are not valid, with AcceptsInvalidNames": {
			open: faulty(acceptInvalidNames),
			cfg:  Config{AcceptsInvalidNames: true},
		},
		"a store whose updates are two writes, each reported, with SplitUpdates": {
			open: faulty(func(f *faultyStore) { f.split = true }),
			cfg:  Config{SplitUpdates: true},
		},
		"a Leaser of its own": {
			open: func(*testing.T) host.Store {
				return faulty(withLeaser(&mapLeaser{grant: rightly}))(nil)
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			if errs := runFake(t, tc.open, tc.cfg); len(errs) > 0 {
				t.Errorf("the suite reported %d departures of a store that keeps the contract:\n%s", len(errs), strings.Join(errs, "\n"))
			}
		})
	}
}

// Each departure is reported, naming the rule it breaks.
func TestSuiteReportsEachDeparture(t *testing.T) {
	for name, tc := range map[string]struct {
		open func(t *testing.T) host.Store
		cfg  Config
		want string
	}{
		"a Create that leaves a certificate's generation 0": {
			open: faulty(func(f *faultyStore) {
				f.certs.create = func(ctx context.Context, c *certificate.Certificate) (*certificate.Certificate, error) {
					made, err := f.MemoryStore.Certificates().Create(ctx, c)
					if made != nil {
						made.Generation = 0
					}
					return made, err
				}
			}),
			want: "Create must fill in metadata the loop relies on: Certificate hosttest-",
		},
		"a store that joins namespace and name with a '/'": {
			open: faulty(joinNames),
			want: `in the namespace "" must not reach Secret hosttest-`,
		},
		"a store that takes names that are not valid": {
			open: faulty(acceptInvalidNames),
			want: `Create of a CertificateRequest must fail for a namespace or name no object can have (certificate.ValidateNamespace, certificate.ValidateObjectName): it succeeded for "hosttest-`,
		},
		"a Create of a taken name that succeeds": {
			open: faulty(func(f *faultyStore) {
				f.secrets.create = func(ctx context.Context, s *certificate.Secret) (*certificate.Secret, error) {
					made, err := f.MemoryStore.Secrets().Create(ctx, s)
					if errors.Is(err, host.ErrAlreadyExists) {
						return nil, errors.New("taken")
					}
					return made, err
				}
			}),
			want: "Create of a name that is taken must fail: got error taken, want one wrapping",
		},
		"a store that changes an object it returned when it is written": {
			open: faulty(func(f *faultyStore) {
				// It gives out what it caches, which is allowed, and
				// writes over it in place, which is not: its callers
				// share it.
				cache := map[string]*certificate.CertificateRequest{}
				f.reqs.get = func(ctx context.Context, ns, name string) (*certificate.CertificateRequest, error) {
					got, err := f.MemoryStore.Requests().Get(ctx, ns, name)
					if err != nil {
						return nil, err
					}
					if c, ok := cache[ns+"/"+name]; ok && c.ResourceVersion == got.ResourceVersion {
						return c, nil
					}
					cache[ns+"/"+name] = got
					return got, nil
				}
				f.reqs.update = func(ctx context.Context, r *certificate.CertificateRequest) (*certificate.CertificateRequest, error) {
					made, err := f.MemoryStore.Requests().Update(ctx, r)
					if c, ok := cache[r.Namespace+"/"+r.Name]; ok && err == nil {
						*c = *made
					}
					return made, err
				}
			}),
			want: "an object the store returned must not change when the store is written (a write replaces what the store holds, since callers share what it returns): CertificateRequest",
		},
		"an Update that keeps what it was passed": {
			open: faulty(func(f *faultyStore) {
				type kept struct {
					rv  string
					obj *certificate.Secret
				}
				keep := map[string]kept{}
				f.secrets.update = func(ctx context.Context, s *certificate.Secret) (*certificate.Secret, error) {
					made, err := f.MemoryStore.Secrets().Update(ctx, s)
					if err == nil {
						keep[s.Namespace+"/"+s.Name] = kept{made.ResourceVersion, s}
					}
					return made, err
				}
				f.secrets.get = func(ctx context.Context, ns, name string) (*certificate.Secret, error) {
					got, err := f.MemoryStore.Secrets().Get(ctx, ns, name)
					if k, ok := keep[ns+"/"+name]; ok && err == nil && k.rv == got.ResourceVersion {
						got.Data = maps.Clone(k.obj.Data)
					}
					return got, err
				}
			}),
			want: "changing what was passed to Update must change nothing stored",
		},
		"an Update that ignores the resource version": {
			open: faulty(func(f *faultyStore) {
				f.secrets.update = func(ctx context.Context, s *certificate.Secret) (*certificate.Secret, error) {
					if cur, err := f.MemoryStore.Secrets().Get(ctx, s.Namespace, s.Name); err == nil {
						s.ResourceVersion = cur.ResourceVersion
					}
					return f.MemoryStore.Secrets().Update(ctx, s)
				}
			}),
			want: "Update at a resource version the object has moved on from must fail",
		},
		"an Update that raises the generation on a status write": {
			open: faulty(func(f *faultyStore) {
				f.certs.update = func(ctx context.Context, c *certificate.Certificate) (*certificate.Certificate, error) {
					made, err := f.MemoryStore.Certificates().Update(ctx, c)
					if made != nil {
						made.Generation++
					}
					return made, err
				}
			}),
			want: "Update of a Certificate's status only must keep metadata.generation: got 2, want 1",
		},
		"an Update that does not raise the generation on a spec change": {
			open: faulty(func(f *faultyStore) {
				f.certs.update = func(ctx context.Context, c *certificate.Certificate) (*certificate.Certificate, error) {
					made, err := f.MemoryStore.Certificates().Update(ctx, c)
					if made != nil {
						made.Generation = 1
					}
					return made, err
				}
			}),
			want: "Update of a Certificate whose spec changed must increase metadata.generation: got 1 after the update, want 2",
		},
		"a List that ignores the owner": {
			open: faulty(func(f *faultyStore) {
				f.reqs.list = func(ctx context.Context, o host.ListOptions) ([]*certificate.CertificateRequest, error) {
					o.OwnerUID = ""
					return f.MemoryStore.Requests().List(ctx, o)
				}
			}),
			want: "List of CertificateRequests with OwnerUID hosttest-owner-uid-1 must return exactly the objects it selects",
		},
		"a List that ignores the labels": {
			open: faulty(func(f *faultyStore) {
				f.secrets.list = func(ctx context.Context, o host.ListOptions) ([]*certificate.Secret, error) {
					o.Labels = nil
					return f.MemoryStore.Secrets().List(ctx, o)
				}
			}),
			want: "OwnerUID hosttest-owner-uid-2, Labels certlife.dev/next-private-key=true must return exactly the objects it selects",
		},
		"a List that takes a label without its value": {
			open: faulty(func(f *faultyStore) {
				f.secrets.list = func(ctx context.Context, o host.ListOptions) ([]*certificate.Secret, error) {
					all, err := f.MemoryStore.Secrets().List(ctx, host.ListOptions{Namespace: o.Namespace, OwnerUID: o.OwnerUID})
					return slices.DeleteFunc(all, func(s *certificate.Secret) bool {
						for k := range o.Labels {
							if _, ok := s.Labels[k]; !ok {
								return true
							}
						}
						return false
					}), err
				}
			}),
			want: "OwnerUID hosttest-owner-uid-2, Labels certlife.dev/next-private-key=true must return exactly the objects it selects",
		},
		"a Delete of a missing object that succeeds": {
			open: faulty(func(f *faultyStore) {
				f.certs.delete = func(ctx context.Context, ns, name string) error {
					if err := f.MemoryStore.Certificates().Delete(ctx, ns, name); !errors.Is(err, host.ErrNotFound) {
						return err
					}
					return nil
				}
			}),
			want: "Delete of an object deleted already must fail (Certificate hosttest-",
		},
		"a secret whose empty values are dropped": {
			open: faulty(func(f *faultyStore) {
				f.secrets.create = func(ctx context.Context, s *certificate.Secret) (*certificate.Secret, error) {
					s = clone(s)
					maps.DeleteFunc(s.Data, func(_ string, v []byte) bool { return len(v) == 0 })
					return f.MemoryStore.Secrets().Create(ctx, s)
				}
			}),
			want: "a secret keeps its data exactly, every key and byte",
		},
		"a store whose updates are two writes, each reported, without SplitUpdates": {
			open: faulty(func(f *faultyStore) { f.split = true }),
			want: "a Watcher must report each write once, in the order of the writes to the object: before its report of the Update of Certificate",
		},
		"a Watcher that reports each write twice, with SplitUpdates": {
			open: faulty(func(f *faultyStore) { f.twice = true }),
			cfg:  Config{SplitUpdates: true},
			want: "a Watcher must report only the writes made, each once",
		},
		"a Watcher that reports each write twice": {
			open: faulty(func(f *faultyStore) { f.twice = true }),
			want: "a Watcher must report only the writes made, each once",
		},
		"a Leaser that gives a held lease to anyone": {
			open: faulty(withLeaser(&mapLeaser{grant: func(host.Lease, bool, string, time.Time) bool { return true }})),
			want: "Lease of a key another holds unexpired must be refused, returning the holder's lease, and no error",
		},
		"a Leaser whose lease never expires": {
			open: faulty(withLeaser(&mapLeaser{grant: func(cur host.Lease, ok bool, holder string, _ time.Time) bool {
				return !ok || cur.Holder == holder
			}})),
			want: "Lease of a key whose lease expired (at its deadline) must give it to the new holder",
		},
		"a Leaser whose lease lasts until just after its deadline": {
			open: faulty(withLeaser(&mapLeaser{grant: func(cur host.Lease, ok bool, holder string, now time.Time) bool {
				return !ok || cur.Holder == holder || now.After(cur.Until)
			}})),
			want: "Lease of a key whose lease expired (at its deadline) must give it to the new holder",
		},
		"a Leaser that takes a renewal for a refusal": {
			open: faulty(withLeaser(&mapLeaser{grant: func(cur host.Lease, ok bool, _ string, now time.Time) bool {
				return !ok || !cur.Until.After(now)
			}})),
			want: "Lease by the holder must renew it to the new deadline",
		},
		"a Leaser whose Release ends anyone's lease": {
			open: faulty(func(f *faultyStore) {
				m := &mapLeaser{grant: rightly}
				f.lease = m.Lease
				f.release = func(_ context.Context, key, _ string) error {
					m.mu.Lock()
					defer m.mu.Unlock()
					delete(m.held, key)
					return nil
				}
			}),
			want: "Release of a lease another holds must leave it as it is",
		},
		"a Leaser whose Release of a lease nobody holds fails": {
			open: faulty(func(f *faultyStore) {
				m := &mapLeaser{grant: rightly}
				f.lease = m.Lease
				f.release = func(ctx context.Context, key, holder string) error {
					m.mu.Lock()
					_, ok := m.held[key]
					m.mu.Unlock()
					if !ok {
						return host.ErrNotFound
					}
					return m.Release(ctx, key, holder)
				}
			}),
			want: "Release of a key nobody holds must be no error",
		},
		"a Leaser whose Lease reads, then writes": {
			open: func(*testing.T) host.Store {
				b := newBarrier(leaseReplicas)
				return faulty(withLeaser(&mapLeaser{grant: rightly, between: func(key string) {
					if strings.Contains(key, "/concurrent/") {
						b.wait() // every caller has read the lease as free
					}
				}}))(nil)
			},
			want: "concurrent Lease calls of one key must give it to one holder at most",
		},
		"an Authoritative store whose reads lag": {
			open: func(t *testing.T) host.Store { return newLagging(t, true, false) },
			cfg:  Config{Timeout: time.Millisecond},
			want: "an Authoritative store's reads must show every write that returned: Get right after a write returned nothing",
		},
		"a lagging store without Settle that reports no write": {
			open: func(t *testing.T) host.Store { return newLagging(t, false, false) },
			cfg:  Config{Timeout: time.Millisecond},
			want: "a Watcher must report every write: the Create of Certificate hosttest-",
		},
	} {
		t.Run(name, func(t *testing.T) {
			errs := runFake(t, tc.open, tc.cfg)
			for _, e := range errs {
				if strings.Contains(e, tc.want) {
					return
				}
			}
			t.Errorf("the suite did not report %q; it reported:\n%s", tc.want, strings.Join(errs, "\n"))
		})
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (Config{Timeout: -time.Second}).Validate(); err == nil || !strings.Contains(err.Error(), "Config.Timeout is -1s") {
		t.Errorf("Validate of a negative timeout: got %v, want an error naming Config.Timeout and its value", err)
	}
	errs := runFake(t, func(*testing.T) host.Store { return plainStore{host.NewMemoryStore(nil)} }, Config{})
	if len(errs) == 0 || !strings.Contains(errs[0], "give Config.Settle") {
		t.Errorf("a store neither Authoritative nor a Watcher, without Settle: got %q, want a request for Config.Settle", errs)
	}
}

// plainStore is a store and nothing more.
type plainStore struct{ s *host.MemoryStore }

func (p plainStore) Certificates() host.Collection[*certificate.Certificate] {
	return p.s.Certificates()
}
func (p plainStore) Secrets() host.Collection[*certificate.Secret] { return p.s.Secrets() }
func (p plainStore) Requests() host.Collection[*certificate.CertificateRequest] {
	return p.s.Requests()
}

// faultyStore is a MemoryStore with calls replaced.
type faultyStore struct {
	*host.MemoryStore
	certs   faultyColl[*certificate.Certificate]
	secrets faultyColl[*certificate.Secret]
	reqs    faultyColl[*certificate.CertificateRequest]
	twice   bool
	// split reports each update of a certificate as two writes: a step
	// at a version of its own, then the write.
	split bool
	// lease and release, when set, replace the MemoryStore's.
	lease   func(ctx context.Context, key, holder string, now, until time.Time) (host.Lease, error)
	release func(ctx context.Context, key, holder string) error
}

func (f *faultyStore) Lease(ctx context.Context, key, holder string, now, until time.Time) (host.Lease, error) {
	if f.lease != nil {
		return f.lease(ctx, key, holder, now, until)
	}
	return f.MemoryStore.Lease(ctx, key, holder, now, until)
}

func (f *faultyStore) Release(ctx context.Context, key, holder string) error {
	if f.release != nil {
		return f.release(ctx, key, holder)
	}
	return f.MemoryStore.Release(ctx, key, holder)
}

// mapLeaser is a Leaser over a map whose rules a test bends: grant
// decides whether holder may have the lease cur (ok: there is one).
type mapLeaser struct {
	mu    sync.Mutex
	held  map[string]host.Lease
	grant func(cur host.Lease, ok bool, holder string, now time.Time) bool
	// between, when set, runs between the read and the write of a Lease
	// call, outside the lock: a store whose Lease is not atomic. Without
	// it, a Lease call holds the lock from its read to its write.
	between func(key string)
}

func (m *mapLeaser) Lease(_ context.Context, key, holder string, now, until time.Time) (host.Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.held == nil {
		m.held = map[string]host.Lease{}
	}
	cur, ok := m.held[key]
	if !m.grant(cur, ok, holder, now) {
		return cur, nil
	}
	if m.between != nil {
		// Not atomic: the write comes after others may have written.
		m.mu.Unlock()
		m.between(key)
		m.mu.Lock()
	}
	l := host.Lease{Key: key, Holder: holder, Until: until}
	m.held[key] = l
	return l, nil
}

func (m *mapLeaser) Release(_ context.Context, key, holder string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.held[key].Holder == holder {
		delete(m.held, key)
	}
	return nil
}

// rightly is the Leaser contract's grant.
func rightly(cur host.Lease, ok bool, holder string, now time.Time) bool {
	return !ok || cur.Holder == holder || !cur.Until.After(now)
}

// withLeaser makes f's leases m's.
func withLeaser(m *mapLeaser) func(f *faultyStore) {
	return func(f *faultyStore) { f.lease, f.release = m.Lease, m.Release }
}

// barrier holds each of n callers until all n have come, round after
// round.
type barrier struct {
	mu    sync.Mutex
	cond  *sync.Cond
	n     int
	count int
	round int
}

func newBarrier(n int) *barrier {
	b := &barrier{n: n}
	b.cond = sync.NewCond(&b.mu)
	return b
}

func (b *barrier) wait() {
	b.mu.Lock()
	defer b.mu.Unlock()
	round := b.round
	b.count++
	if b.count == b.n {
		b.count, b.round = 0, b.round+1
		b.cond.Broadcast()
		return
	}
	for b.round == round {
		b.cond.Wait()
	}
}

func faulty(set func(f *faultyStore)) func(t *testing.T) host.Store {
	return func(*testing.T) host.Store {
		f := &faultyStore{MemoryStore: host.NewMemoryStore(testingclock.NewFakeClock(t0))}
		f.certs.Collection, f.secrets.Collection, f.reqs.Collection = f.MemoryStore.Certificates(), f.MemoryStore.Secrets(), f.MemoryStore.Requests()
		set(f)
		return f
	}
}

func (f *faultyStore) Certificates() host.Collection[*certificate.Certificate] { return f.certs }
func (f *faultyStore) Secrets() host.Collection[*certificate.Secret]           { return f.secrets }
func (f *faultyStore) Requests() host.Collection[*certificate.CertificateRequest] {
	return f.reqs
}

func (f *faultyStore) Watch(fn func(host.Change)) {
	seen := map[key]bool{}
	f.MemoryStore.Watch(func(ch host.Change) {
		k := key{ch.Kind, ch.Namespace, ch.Name}
		if f.split && ch.Kind == host.KindCertificate && seen[k] && !ch.Deleted {
			step := ch
			step.Meta.ResourceVersion += "-step"
			fn(step)
		}
		seen[k] = !ch.Deleted
		fn(ch)
		if f.twice {
			fn(ch)
		}
	})
}

type faultyColl[T host.Object] struct {
	host.Collection[T]
	get    func(ctx context.Context, ns, name string) (T, error)
	list   func(ctx context.Context, o host.ListOptions) ([]T, error)
	create func(ctx context.Context, obj T) (T, error)
	update func(ctx context.Context, obj T) (T, error)
	delete func(ctx context.Context, ns, name string) error
}

func (c faultyColl[T]) Get(ctx context.Context, ns, name string) (T, error) {
	if c.get != nil {
		return c.get(ctx, ns, name)
	}
	return c.Collection.Get(ctx, ns, name)
}

func (c faultyColl[T]) List(ctx context.Context, o host.ListOptions) ([]T, error) {
	if c.list != nil {
		return c.list(ctx, o)
	}
	return c.Collection.List(ctx, o)
}

func (c faultyColl[T]) Create(ctx context.Context, obj T) (T, error) {
	if c.create != nil {
		return c.create(ctx, obj)
	}
	return c.Collection.Create(ctx, obj)
}

func (c faultyColl[T]) Update(ctx context.Context, obj T) (T, error) {
	if c.update != nil {
		return c.update(ctx, obj)
	}
	return c.Collection.Update(ctx, obj)
}

func (c faultyColl[T]) Delete(ctx context.Context, ns, name string) error {
	if c.delete != nil {
		return c.delete(ctx, ns, name)
	}
	return c.Collection.Delete(ctx, ns, name)
}

// lagging is a store whose reads show a copy of a MemoryStore taken at
// its last catchUp, and whose Watcher reports writes at catchUp: a cache
// in front of a store, as an informer's. With async, a goroutine of its
// own catches up after each write.
type lagging struct {
	primary  *host.MemoryStore
	auth     bool
	mu       sync.Mutex
	view     map[key]any
	pending  []host.Change
	watchers []func(host.Change)
	kick     chan struct{}
}

func newLagging(t *testing.T, auth, async bool) *lagging {
	l := &lagging{primary: host.NewMemoryStore(testingclock.NewFakeClock(t0)), auth: auth, view: map[key]any{}}
	l.primary.Watch(func(ch host.Change) {
		l.mu.Lock()
		l.pending = append(l.pending, ch)
		l.mu.Unlock()
		if l.kick != nil {
			select {
			case l.kick <- struct{}{}:
			default:
			}
		}
	})
	if async {
		l.kick = make(chan struct{}, 1)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range l.kick {
				l.catchUp()
			}
		}()
		t.Cleanup(func() { close(l.kick); <-done })
	}
	return l
}

func (l *lagging) Authoritative() bool { return l.auth }

func (l *lagging) Watch(f func(host.Change)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.watchers = append(l.watchers, f)
}

// catchUp makes reads show every write made, then reports them.
func (l *lagging) catchUp() {
	ctx := context.Background()
	view := map[key]any{}
	certs, _ := l.primary.Certificates().List(ctx, host.ListOptions{})
	for _, o := range certs {
		view[key{host.KindCertificate, o.Namespace, o.Name}] = o
	}
	secs, _ := l.primary.Secrets().List(ctx, host.ListOptions{})
	for _, o := range secs {
		view[key{host.KindSecret, o.Namespace, o.Name}] = o
	}
	reqs, _ := l.primary.Requests().List(ctx, host.ListOptions{})
	for _, o := range reqs {
		view[key{host.KindRequest, o.Namespace, o.Name}] = o
	}
	l.mu.Lock()
	l.view = view
	chs := l.pending
	l.pending = nil
	ws := l.watchers
	l.mu.Unlock()
	for _, ch := range chs {
		for _, w := range ws {
			w(ch)
		}
	}
}

func (l *lagging) Certificates() host.Collection[*certificate.Certificate] {
	return lagColl[*certificate.Certificate]{l.primary.Certificates(), l, host.KindCertificate}
}

func (l *lagging) Secrets() host.Collection[*certificate.Secret] {
	return lagColl[*certificate.Secret]{l.primary.Secrets(), l, host.KindSecret}
}

func (l *lagging) Requests() host.Collection[*certificate.CertificateRequest] {
	return lagColl[*certificate.CertificateRequest]{l.primary.Requests(), l, host.KindRequest}
}

// lagColl writes to the primary store and reads the view.
type lagColl[T host.Object] struct {
	host.Collection[T]
	l    *lagging
	kind host.Kind
}

func (c lagColl[T]) Get(_ context.Context, ns, name string) (T, error) {
	c.l.mu.Lock()
	o, ok := c.l.view[key{c.kind, ns, name}]
	c.l.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%s %s/%s: %w", c.kind, ns, name, host.ErrNotFound)
	}
	return clone(o.(T)), nil
}

func (c lagColl[T]) List(_ context.Context, opts host.ListOptions) ([]T, error) {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	var out []T
	for k, o := range c.l.view {
		if k.kind == c.kind && opts.Matches(o) {
			out = append(out, clone(o.(T)))
		}
	}
	return out, nil
}

// joinNames makes the secrets of f those of a store keyed by
// namespace + "/" + name: the name "b/x" in the namespace "" is the
// secret x of the namespace b.
func joinNames(f *faultyStore) {
	split := func(ns, name string) (string, string) {
		if before, after, ok := strings.Cut(name, "/"); ns == "" && ok {
			return before, after
		}
		return ns, name
	}
	secrets := f.MemoryStore.Secrets()
	f.secrets.get = func(ctx context.Context, ns, name string) (*certificate.Secret, error) {
		ns, name = split(ns, name)
		return secrets.Get(ctx, ns, name)
	}
	f.secrets.update = func(ctx context.Context, s *certificate.Secret) (*certificate.Secret, error) {
		s.Namespace, s.Name = split(s.Namespace, s.Name)
		return secrets.Update(ctx, s)
	}
	f.secrets.create = func(ctx context.Context, s *certificate.Secret) (*certificate.Secret, error) {
		s.Namespace, s.Name = split(s.Namespace, s.Name)
		return secrets.Create(ctx, s)
	}
	f.secrets.delete = func(ctx context.Context, ns, name string) error {
		ns, name = split(ns, name)
		return secrets.Delete(ctx, ns, name)
	}
}

// acceptInvalidNames makes the requests of f those of a store that keeps
// namespace and name apart but checks neither: a request of a name no
// object can have is taken (and kept nowhere).
func acceptInvalidNames(f *faultyStore) {
	reqs := f.MemoryStore.Requests()
	valid := func(ns, name string) bool {
		return name == "" || certificate.ValidateNamespace(ns) == nil && certificate.ValidateObjectName(name) == nil
	}
	f.reqs.get = func(ctx context.Context, ns, name string) (*certificate.CertificateRequest, error) {
		if !valid(ns, name) {
			return nil, host.ErrNotFound
		}
		return reqs.Get(ctx, ns, name)
	}
	f.reqs.update = func(ctx context.Context, r *certificate.CertificateRequest) (*certificate.CertificateRequest, error) {
		if !valid(r.Namespace, r.Name) {
			return nil, host.ErrNotFound
		}
		return reqs.Update(ctx, r)
	}
	f.reqs.create = func(ctx context.Context, r *certificate.CertificateRequest) (*certificate.CertificateRequest, error) {
		if !valid(r.Namespace, r.Name) {
			return r, nil
		}
		return reqs.Create(ctx, r)
	}
	f.reqs.delete = func(ctx context.Context, ns, name string) error {
		if !valid(ns, name) {
			return nil
		}
		return reqs.Delete(ctx, ns, name)
	}
}
