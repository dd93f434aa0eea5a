package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/certlife/certlife/certificate"
)

// ReadYourWrites is a Store over another whose reads may lag behind its
// writes — a Kubernetes informer cache, a read replica — whose reads show
// every write made through it: a Get or List that the store behind
// answers with the version a write through ReadYourWrites replaced (or
// without an object it created, or with one it deleted) gets the written
// version instead. It never waits: a read returns at once, with the
// newest version it knows of.
//
// It keeps each write until a read or a watch event shows the store
// behind has caught up with it (that version, or any later one), at most
// MaxPending writes (the oldest goes first). What goes early costs at
// most a decision on a stale read, which the write that follows it
// meets as ErrConflict, as it would without ReadYourWrites.
//
// A Reconciler reads a Store that is not Authoritative through one of
// its own; share one ReadYourWrites among everything that writes
// through the same store in a process, so that each sees the others'
// writes. It is safe for concurrent use.
type ReadYourWrites struct {
	st Store
	// MaxPending bounds the writes kept; zero means 10,000.
	MaxPending int

	mu      sync.Mutex
	entries map[object]*written
	order   []pendingRef
	seq     uint64
}

// object names one object of the store.
type object struct {
	kind            Kind
	namespace, name string
}

// written is one object's last write through ReadYourWrites that the
// store behind has not been seen to show.
type written struct {
	// obj is the object as written (a *certificate.Certificate, Secret
	// or CertificateRequest the caller never sees); nil for a deletion.
	obj any
	// rv is the version written; "" for a deletion.
	rv string
	// over are the versions the writes replaced: a read that shows one
	// lags behind.
	over []string
	// created: the object did not exist before the first of the writes,
	// so a read that does not find it lags behind.
	created bool
	seq     uint64
}

type pendingRef struct {
	obj object
	seq uint64
}

// NewReadYourWrites returns a ReadYourWrites over st. When st is a
// Watcher, its events end the keeping of writes they show.
func NewReadYourWrites(st Store) *ReadYourWrites {
	s := &ReadYourWrites{st: st, entries: map[object]*written{}}
	if w, ok := st.(Watcher); ok {
		w.Watch(s.seen)
	}
	return s
}

var _ Store = (*ReadYourWrites)(nil)

// Unwrap returns the store behind.
func (s *ReadYourWrites) Unwrap() Store { return s.st }

// Pending is how many writes the store behind has not been seen to show.
func (s *ReadYourWrites) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

// Certificates implements Store.
func (s *ReadYourWrites) Certificates() Collection[*certificate.Certificate] {
	return rywCollection[*certificate.Certificate]{s, s.st.Certificates(), KindCertificate}
}

// Secrets implements Store.
func (s *ReadYourWrites) Secrets() Collection[*certificate.Secret] {
	return rywCollection[*certificate.Secret]{s, s.st.Secrets(), KindSecret}
}

// Requests implements Store.
func (s *ReadYourWrites) Requests() Collection[*certificate.CertificateRequest] {
	return rywCollection[*certificate.CertificateRequest]{s, s.st.Requests(), KindRequest}
}

// seen ends the keeping of a write that a watch event shows, or shows
// overtaken.
func (s *ReadYourWrites) seen(ch Change) {
	o := object{ch.Kind, ch.Namespace, ch.Name}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[o]
	switch {
	case e == nil:
	case ch.Deleted:
		// Deleted (by this writer or another): nothing written before
		// the deletion is newer than it.
		delete(s.entries, o)
	case slices.Contains(e.over, ch.Meta.ResourceVersion):
		// An event of a version the writes replaced, arriving late.
	default:
		// The written version, or a later one.
		delete(s.entries, o)
	}
}

// record keeps a write: obj as written (nil for a deletion), its version,
// and the version it replaced ("" when unknown or none).
func (s *ReadYourWrites) record(o object, obj any, rv, over string, created bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	e := s.entries[o]
	if e == nil {
		e = &written{created: created}
		s.entries[o] = e
	} else if e.rv != "" {
		e.over = append(e.over, e.rv)
	}
	if over != "" && !slices.Contains(e.over, over) {
		e.over = append(e.over, over)
	}
	e.obj, e.rv, e.seq = obj, rv, s.seq
	s.order = append(s.order, pendingRef{o, s.seq})
	limit := s.MaxPending
	if limit <= 0 {
		limit = 10000
	}
	for len(s.entries) > limit && len(s.order) > 0 {
		head := s.order[0]
		s.order = s.order[1:]
		if e := s.entries[head.obj]; e != nil && e.seq == head.seq {
			delete(s.entries, head.obj)
		}
	}
	if len(s.order) > 2*limit {
		// Compact references to writes that were superseded or shown.
		kept := s.order[:0]
		for _, r := range s.order {
			if e := s.entries[r.obj]; e != nil && e.seq == r.seq {
				kept = append(kept, r)
			}
		}
		s.order = kept
	}
}

// verdict is what a read of the store behind says of a kept write.
type verdict int

const (
	behind   verdict = iota // the read lags: answer with the write
	caughtUp                // the read shows the write or later: drop it
)

// judge compares what the store behind read (found, at version rv) with
// the write kept for o; ok is false when none is kept. It drops a write
// the read shows caught up with.
func (s *ReadYourWrites) judge(o object, found bool, rv string) (obj any, v verdict, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[o]
	if e == nil {
		return nil, caughtUp, false
	}
	switch {
	case !found && e.obj == nil, found && rv == e.rv && e.obj != nil:
		v = caughtUp // shows the write
	case !found && e.created:
		v = behind // not made yet, as far as the read knows
	case !found:
		v = caughtUp // deleted by someone since
	case slices.Contains(e.over, rv):
		v = behind
	case e.obj == nil && len(e.over) == 0:
		// Deleted at a version unknown: any version found may be the one
		// deleted. Kept until a watch event or a miss shows the deletion.
		v = behind
	default:
		v = caughtUp // a later version, by someone else
	}
	if v == caughtUp {
		delete(s.entries, o)
		return nil, v, true
	}
	return e.obj, v, true
}

// adds are the kept writes of kind that a list of the store behind did
// not show, made since it was last seen: created, or changed so that
// they match the list now.
func (s *ReadYourWrites) adds(kind Kind, listed map[object]bool) []any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []any
	for o, e := range s.entries {
		if o.kind == kind && e.obj != nil && !listed[o] {
			out = append(out, e.obj)
		}
	}
	return out
}

type rywCollection[T Object] struct {
	s    *ReadYourWrites
	c    Collection[T]
	kind Kind
}

func (c rywCollection[T]) Get(ctx context.Context, namespace, name string) (T, error) {
	obj, err := c.c.Get(ctx, namespace, name)
	notFound := errors.Is(err, ErrNotFound)
	if err != nil && !notFound {
		return nil, err
	}
	rv := ""
	if !notFound {
		rv = obj.Meta().ResourceVersion
	}
	kept, v, ok := c.s.judge(object{c.kind, namespace, name}, !notFound, rv)
	if !ok || v == caughtUp {
		return obj, err
	}
	if kept == nil {
		return nil, fmt.Errorf("%s %s: deleted: %w", c.kind, key(namespace, name), ErrNotFound)
	}
	return clone(c.kind, kept.(T))
}

func (c rywCollection[T]) List(ctx context.Context, opts ListOptions) ([]T, error) {
	objs, err := c.c.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	out := objs[:0:0]
	listed := make(map[object]bool, len(objs))
	for _, obj := range objs {
		m := obj.Meta()
		o := object{c.kind, m.Namespace, m.Name}
		listed[o] = true
		kept, v, ok := c.s.judge(o, true, m.ResourceVersion)
		switch {
		case !ok || v == caughtUp:
			out = append(out, obj)
		case kept == nil:
			// deleted
		case opts.Matches(kept):
			k, err := clone(c.kind, kept.(T))
			if err != nil {
				return nil, err
			}
			out = append(out, k)
		}
	}
	for _, kept := range c.s.adds(c.kind, listed) {
		if !opts.Matches(kept) {
			continue
		}
		k, err := clone(c.kind, kept.(T))
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, nil
}

func (c rywCollection[T]) Create(ctx context.Context, obj T) (T, error) {
	made, err := c.c.Create(ctx, obj)
	if err != nil {
		return made, err
	}
	if err := c.keep(made, "", true); err != nil {
		return nil, err
	}
	return made, nil
}

func (c rywCollection[T]) Update(ctx context.Context, obj T) (T, error) {
	over := obj.Meta().ResourceVersion
	made, err := c.c.Update(ctx, obj)
	if err != nil {
		return made, err
	}
	if err := c.keep(made, over, false); err != nil {
		return nil, err
	}
	return made, nil
}

func (c rywCollection[T]) keep(made T, over string, created bool) error {
	if made == nil {
		return fmt.Errorf("host: the store returned no %s from a write", c.kind)
	}
	k, err := clone(c.kind, made)
	if err != nil {
		return err
	}
	m := k.Meta()
	c.s.record(object{c.kind, m.Namespace, m.Name}, k, m.ResourceVersion, over, created)
	return nil
}

func (c rywCollection[T]) Delete(ctx context.Context, namespace, name string) error {
	err := c.c.Delete(ctx, namespace, name)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	// Gone either way; a read that still shows it lags.
	c.s.record(object{c.kind, namespace, name}, nil, "", "", false)
	return err
}
