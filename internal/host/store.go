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
	clone func(T) T
	// LagOf, when set, gives each write its own lag (name and resource
	// version in, lag out; deterministic in the simulation), so that reads
	// are stale by varying amounts, as an informer's are. It replaces the
	// fixed lag.
	LagOf func(name string, version uint64) time.Duration

	version uint64
	items   map[string]stored[T]
	cache   map[string]stored[T]
	pending []pendingWrite[T] // in write order; visible in cache at visibleAt
}

type stored[T any] struct {
	obj     T
	version uint64
}

type pendingWrite[T any] struct {
	name      string
	obj       stored[T]
	deleted   bool
	visibleAt time.Time
}

// NewStore returns an empty store. clone must return a deep copy: callers
// get copies and may change them freely. lag is how long a write takes to
// reach reads (zero: at once).
func NewStore[T any](clk clock.PassiveClock, lag time.Duration, clone func(T) T) *Store[T] {
	return &Store[T]{
		clock: clk, lag: lag, clone: clone,
		items: map[string]stored[T]{}, cache: map[string]stored[T]{},
	}
}

// sync moves every write whose time has come into the read cache.
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
		if p.deleted {
			delete(s.cache, p.name)
		} else {
			s.cache[p.name] = p.obj
		}
	}
	if i > 0 {
		s.pending = append(s.pending[:0], s.pending[i:]...)
	}
}

func (s *Store[T]) record(name string, obj stored[T], deleted bool) {
	lag := s.lag
	if s.LagOf != nil {
		lag = s.LagOf(name, obj.version)
	}
	if lag <= 0 && len(s.pending) == 0 {
		if deleted {
			delete(s.cache, name)
		} else {
			s.cache[name] = obj
		}
		return
	}
	// Writes become visible in order (a watch delivers events in order):
	// never before an earlier write.
	at := s.clock.Now().Add(lag)
	if n := len(s.pending); n > 0 && at.Before(s.pending[n-1].visibleAt) {
		at = s.pending[n-1].visibleAt
	}
	s.pending = append(s.pending, pendingWrite[T]{name: name, obj: obj, deleted: deleted, visibleAt: at})
}

// Get returns a copy of the named object as the read cache sees it, with its
// resource version.
func (s *Store[T]) Get(name string) (obj T, version uint64, ok bool) {
	s.sync()
	e, ok := s.cache[name]
	if !ok {
		return obj, 0, false
	}
	return s.clone(e.obj), e.version, true
}

// Peek is Get without the copy: the object is the cache's own and must not
// be changed. For readers that only read (a decision's snapshot), it saves
// a deep copy per read.
func (s *Store[T]) Peek(name string) (obj T, version uint64, ok bool) {
	s.sync()
	e, ok := s.cache[name]
	if !ok {
		return obj, 0, false
	}
	return e.obj, e.version, true
}

// List returns copies of every object the read cache sees, by name.
func (s *Store[T]) List() []T {
	s.sync()
	names := make([]string, 0, len(s.cache))
	for n := range s.cache {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]T, 0, len(names))
	for _, n := range names {
		out = append(out, s.clone(s.cache[n].obj))
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
	e := stored[T]{obj: s.clone(obj), version: s.version}
	s.items[name] = e
	s.record(name, e, false)
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
	e := stored[T]{obj: s.clone(obj), version: s.version}
	s.items[name] = e
	s.record(name, e, false)
	return e.version, nil
}

// Delete removes the named object. Deleting a missing object is
// ErrNotFound, which hosts treat as success.
func (s *Store[T]) Delete(name string) error {
	if _, ok := s.items[name]; !ok {
		return fmt.Errorf("delete %q: %w", name, ErrNotFound)
	}
	delete(s.items, name)
	s.record(name, stored[T]{}, true)
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
