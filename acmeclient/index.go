package acmeclient

import (
	"container/heap"
	"context"
	"encoding/hex"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/certlife/certlife/challenge"
	"github.com/certlife/certlife/order"
)

// index is what an Issuer keeps in memory of its store: for each state,
// what scheduling and sweeping need — its request, when it was answered,
// when its order expires, when it was last stepped and when it asked to
// be stepped next, and a copy of its challenges. It is read from
// Store.List once, when the issuer is first used, and kept by the
// issuer's own writes (the issuer owns its store).
//
// A key is claimed while a Step, Forget or sweep works on it, so no two
// of them write one state at once: a Step or Forget waits for the claim,
// a sweep passes a claimed key by and comes back to it later.
type index struct {
	mu      sync.Mutex
	entries map[string]*entry
	// byRequest: request (namespace/name) → keys of its states.
	byRequest map[string]map[string]struct{}
	// busy: the keys claimed, each with a channel closed when released.
	busy map[string]chan struct{}
	// due orders the entries by when they may be swept.
	due dueHeap
	// sorted are the entries by key, for the scheduler (its input order
	// settles ties); stale once keys come or go.
	sorted      []*entry
	sortedStale bool
}

// entry is one state in the index.
type entry struct {
	key        string
	request    RequestRef
	answeredAt *time.Time
	expires    *time.Time
	// lastStep is when a Step last worked on the state, or when the index
	// first saw it; nextStep is when the last Step asked to be called
	// again (zero when it did not say).
	lastStep, nextStep time.Time
	// challenges are copies of the state's challenges, for the
	// scheduler and for cleaning up.
	challenges []challenge.Challenge
	// sweepAt is when the entry may be swept (see Issuer.sweepAt);
	// retryAt holds off a sweep that failed.
	sweepAt, retryAt time.Time
	pos              int // in due
}

func newIndex() *index {
	return &index{entries: map[string]*entry{}, byRequest: map[string]map[string]struct{}{}, busy: map[string]chan struct{}{}}
}

// requestOf is the request a state is for: as it records, or, for a state
// written before it recorded one, its order's namespace and the request
// name its key (OrderName) begins with.
func requestOf(key string, s *State) RequestRef {
	if s.Request.Name != "" {
		return s.Request
	}
	ref := RequestRef{Namespace: s.Order.Namespace}
	if name, sum, ok := cutLast(key, "-"); ok && len(sum) == 8 {
		if _, err := hex.DecodeString(sum); err == nil {
			ref.Name = name
		}
	}
	return ref
}

func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

func (r RequestRef) id() string { return r.Namespace + "/" + r.Name }

// setLocked records a state's contents (nil: the state is gone); the
// caller holds x.mu and passes the issuer's sweep deadline function.
func (x *index) setLocked(key string, s *State, now time.Time, sweepAt func(*entry) time.Time) {
	e := x.entries[key]
	if s == nil {
		if e != nil {
			x.dropLocked(e)
		}
		return
	}
	ref := requestOf(key, s)
	if e == nil {
		e = &entry{key: key, lastStep: now, pos: -1}
		x.entries[key] = e
		x.sortedStale = true
	} else if e.request != ref {
		x.unlinkLocked(e)
	}
	e.request = ref
	if ref.Name != "" {
		keys := x.byRequest[ref.id()]
		if keys == nil {
			keys = map[string]struct{}{}
			x.byRequest[ref.id()] = keys
		}
		keys[key] = struct{}{}
	}
	e.answeredAt = copyTime(s.AnsweredAt)
	e.expires = nil
	if exp, ok := order.Expiry(&s.Order); ok {
		e.expires = &exp
	}
	e.challenges = append(e.challenges[:0], s.Challenges...)
	x.fixLocked(e, sweepAt)
}

func (x *index) fixLocked(e *entry, sweepAt func(*entry) time.Time) {
	e.sweepAt = sweepAt(e)
	if e.pos < 0 {
		heap.Push(&x.due, e)
	} else {
		heap.Fix(&x.due, e.pos)
	}
}

func (x *index) unlinkLocked(e *entry) {
	if keys := x.byRequest[e.request.id()]; keys != nil {
		delete(keys, e.key)
		if len(keys) == 0 {
			delete(x.byRequest, e.request.id())
		}
	}
}

func (x *index) dropLocked(e *entry) {
	x.unlinkLocked(e)
	if e.pos >= 0 {
		heap.Remove(&x.due, e.pos)
	}
	delete(x.entries, e.key)
	x.sortedStale = true
}

// byKeyLocked returns the entries in the order of their keys.
func (x *index) byKeyLocked() []*entry {
	if x.sortedStale || len(x.sorted) != len(x.entries) {
		x.sorted = x.sorted[:0]
		for _, e := range x.entries {
			x.sorted = append(x.sorted, e)
		}
		slices.SortFunc(x.sorted, func(a, b *entry) int { return strings.Compare(a.key, b.key) })
		x.sortedStale = false
	}
	return x.sorted
}

// claim waits until no one else works on key, then claims it; release
// gives it back.
func (x *index) claim(ctx context.Context, key string) (release func(), err error) {
	x.mu.Lock()
	for {
		ch, held := x.busy[key]
		if !held {
			break
		}
		x.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		x.mu.Lock()
	}
	ch := make(chan struct{})
	x.busy[key] = ch
	x.mu.Unlock()
	return func() {
		x.mu.Lock()
		delete(x.busy, key)
		x.mu.Unlock()
		close(ch)
	}, nil
}

// tryClaimLocked claims key when no one holds it; the caller holds x.mu.
func (x *index) tryClaimLocked(key string) (release func(), ok bool) {
	if _, held := x.busy[key]; held {
		return nil, false
	}
	ch := make(chan struct{})
	x.busy[key] = ch
	return func() {
		x.mu.Lock()
		delete(x.busy, key)
		x.mu.Unlock()
		close(ch)
	}, true
}

// keysOf are the keys of a request's states.
func (x *index) keysOf(ref RequestRef) []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []string
	for k := range x.byRequest[ref.id()] {
		out = append(out, k)
	}
	return out
}

// dueHeap is a min-heap of entries by sweepAt (container/heap).
type dueHeap []*entry

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(a, b int) bool { return h[a].sweepAt.Before(h[b].sweepAt) }
func (h dueHeap) Swap(a, b int) {
	h[a], h[b] = h[b], h[a]
	h[a].pos, h[b].pos = a, b
}

func (h *dueHeap) Push(v any) {
	e := v.(*entry)
	e.pos = len(*h)
	*h = append(*h, e)
}

func (h *dueHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.pos = -1
	return e
}

func copyTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
