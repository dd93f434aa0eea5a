package host

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"k8s.io/utils/clock"
)

// Errors a Store returns, as the Kubernetes API does for the same cases.
var (
	// ErrNotFound: no object of that name.
	ErrNotFound = errors.New("host: not found")
	// ErrAlreadyExists: a create named an object that exists. A host treats
	// it as success for deterministic names: the object it meant to create
	// is there.
	ErrAlreadyExists = errors.New("host: already exists")
	// ErrConflict: an update carried a stale resource version.
	ErrConflict = errors.New("host: conflict: the object has been modified")
)

// Store is an in-memory object store with resource versions and an optional
// lagging read cache, the way a Kubernetes controller sees the API server:
// writes go to the authoritative copy and are checked against its resource
// version; reads come from a cache that sees each write only Lag after it
// happened. With Lag zero, reads are up to date.
//
// A Store is not safe for concurrent use; the reference host is one loop.
type Store[T any] struct {
	clock clock.PassiveClock
	lag   time.Duration
	// pack turns an object into what the store holds; unpack makes an
	// object the caller owns from it (nil: the held object is a T, and
	// Peek returns it as is).
	pack   func(T) any
	unpack func(any) T
	clone  func(T) T
	// LagOf, when set, gives each write its own lag (name and resource
	// version in, lag out; deterministic in the simulation), so that reads
	// are stale by varying amounts, as an informer's are. It replaces the
	// fixed lag.
	LagOf func(name string, version uint64) time.Duration

	version uint64
	items   map[string]stored
	// behind holds what reads see for the names whose latest writes do
	// not show yet; every other name reads as items has it. A read cache
	// that mirrored items would cost a second map entry per object.
	behind     map[string]*lagging
	behindPeak int            // the most names behind since behind was last empty
	pending    []pendingWrite // in write order; visible in reads at visibleAt
}

// lagging is what reads see of one name while writes to it are pending.
type lagging struct {
	seen    stored
	absent  bool // reads do not see the name (not yet created, or deleted)
	pending int  // writes to the name not yet visible
}

type stored struct {
	obj     any
	version uint64
}

type pendingWrite struct {
	name      string
	obj       stored
	deleted   bool
	visibleAt time.Time
}

// NewStore returns an empty store. clone must return a deep copy: callers
// get copies and may change them freely. lag is how long a write takes to
// reach reads (zero: at once).
func NewStore[T any](clk clock.PassiveClock, lag time.Duration, clone func(T) T) *Store[T] {
	return &Store[T]{
		clock: clk, lag: lag, clone: clone,
		pack:  func(obj T) any { return clone(obj) },
		items: map[string]stored{}, behind: map[string]*lagging{},
	}
}

// NewPackedStore returns an empty store that holds objects in a packed
// form P, smaller than T (Kubernetes-shaped objects spend much of their
// size on small maps). pack must copy whatever the caller could change
// later; unpack must return a new object the caller owns. Every read
// (Get, Peek, List) unpacks.
func NewPackedStore[T, P any](clk clock.PassiveClock, lag time.Duration, pack func(T) P, unpack func(P) T) *Store[T] {
	return &Store[T]{
		clock: clk, lag: lag,
		pack:   func(obj T) any { return pack(obj) },
		unpack: func(p any) T { return unpack(p.(P)) },
		items:  map[string]stored{}, behind: map[string]*lagging{},
	}
}

// copyOf is a copy of a held object that the caller owns.
func (s *Store[T]) copyOf(held any) T {
	if s.unpack != nil {
		return s.unpack(held)
	}
	return s.clone(held.(T))
}

// sync shows every write whose time has come.
func (s *Store[T]) sync() {
	if len(s.pending) == 0 {
		return
	}
	now := s.clock.Now()
	i := 0
	for ; i < len(s.pending); i++ {
		p := s.pending[i]
		if p.visibleAt.After(now) {
			break
		}
		l := s.behind[p.name]
		if l.pending--; l.pending == 0 {
			delete(s.behind, p.name) // reads and items agree again
			if len(s.behind) == 0 && s.behindPeak > 64 {
				s.behind, s.behindPeak = map[string]*lagging{}, 0 // a burst's map goes with it
			}
			continue
		}
		l.seen, l.absent = p.obj, p.deleted
	}
	if i == 0 {
		return
	}
	if i == len(s.pending) && cap(s.pending) > 64 {
		// Drained after a burst: let the burst's array go.
		s.pending = nil
		return
	}
	n := copy(s.pending, s.pending[i:])
	// Clear the vacated tail: it would keep written objects alive.
	clear(s.pending[n:])
	s.pending = s.pending[:n]
}

// record makes a write to name visible now or later. prev and existed are
// the authoritative object before the write: what reads saw, if no write
// to name was pending.
func (s *Store[T]) record(name string, obj stored, deleted bool, prev stored, existed bool) {
	lag := s.lag
	if s.LagOf != nil {
		lag = s.LagOf(name, obj.version)
	}
	if lag <= 0 && len(s.pending) == 0 {
		return // reads see items at once
	}
	// Writes become visible in order (a watch delivers events in order):
	// never before an earlier write.
	at := s.clock.Now().Add(lag)
	if n := len(s.pending); n > 0 && at.Before(s.pending[n-1].visibleAt) {
		at = s.pending[n-1].visibleAt
	}
	l := s.behind[name]
	if l == nil {
		l = &lagging{seen: prev, absent: !existed}
		s.behind[name] = l
		s.behindPeak = max(s.behindPeak, len(s.behind))
	}
	l.pending++
	s.pending = append(s.pending, pendingWrite{name: name, obj: obj, deleted: deleted, visibleAt: at})
}

// seen is what reads see of name.
func (s *Store[T]) seen(name string) (stored, bool) {
	s.sync()
	if l, ok := s.behind[name]; ok {
		return l.seen, !l.absent
	}
	e, ok := s.items[name]
	return e, ok
}

// Get returns a copy of the named object as the read cache sees it, with its
// resource version.
func (s *Store[T]) Get(name string) (obj T, version uint64, ok bool) {
	e, ok := s.seen(name)
	if !ok {
		return obj, 0, false
	}
	return s.copyOf(e.obj), e.version, true
}

// Peek is Get without the copy: the object is the cache's own and must not
// be changed. For readers that only read (a decision's snapshot), it saves
// a deep copy per read. A packed store has no object to share: Peek is Get.
func (s *Store[T]) Peek(name string) (obj T, version uint64, ok bool) {
	e, ok := s.seen(name)
	if !ok {
		return obj, 0, false
	}
	if s.unpack != nil {
		return s.unpack(e.obj), e.version, true
	}
	return e.obj.(T), e.version, true
}

// List returns copies of every object the read cache sees, by name.
func (s *Store[T]) List() []T {
	s.sync()
	names := make([]string, 0, len(s.items))
	for n := range s.items {
		if _, ok := s.behind[n]; !ok {
			names = append(names, n)
		}
	}
	for n, l := range s.behind {
		if !l.absent {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	out := make([]T, 0, len(names))
	for _, n := range names {
		e, _ := s.seen(n)
		out = append(out, s.copyOf(e.obj))
	}
	return out
}

// Create stores a new object. It fails with ErrAlreadyExists when the
// authoritative copy has one of that name, whatever the cache shows.
func (s *Store[T]) Create(name string, obj T) (uint64, error) {
	if _, ok := s.items[name]; ok {
		return 0, fmt.Errorf("create %q: %w", name, ErrAlreadyExists)
	}
	s.version++
	e := stored{obj: s.pack(obj), version: s.version}
	s.items[name] = e
	s.record(name, e, false, stored{}, false)
	return e.version, nil
}

// Update replaces the named object if version is its current resource
// version, and fails with ErrConflict otherwise (a stale read).
func (s *Store[T]) Update(name string, obj T, version uint64) (uint64, error) {
	cur, ok := s.items[name]
	if !ok {
		return 0, fmt.Errorf("update %q: %w", name, ErrNotFound)
	}
	if cur.version != version {
		return 0, fmt.Errorf("update %q at version %d (current %d): %w", name, version, cur.version, ErrConflict)
	}
	s.version++
	e := stored{obj: s.pack(obj), version: s.version}
	s.items[name] = e
	s.record(name, e, false, cur, true)
	return e.version, nil
}

// Delete removes the named object. Deleting a missing object is
// ErrNotFound, which hosts treat as success.
func (s *Store[T]) Delete(name string) error {
	cur, ok := s.items[name]
	if !ok {
		return fmt.Errorf("delete %q: %w", name, ErrNotFound)
	}
	delete(s.items, name)
	s.record(name, stored{}, true, cur, true)
	return nil
}

// VisibleAt is when the latest write shows in reads: when a watch would
// deliver it. Now, when every write already shows.
func (s *Store[T]) VisibleAt() time.Time {
	now := s.clock.Now()
	if n := len(s.pending); n > 0 && s.pending[n-1].visibleAt.After(now) {
		return s.pending[n-1].visibleAt
	}
	return now
}

// Len returns the number of objects in the authoritative copy.
func (s *Store[T]) Len() int { return len(s.items) }
