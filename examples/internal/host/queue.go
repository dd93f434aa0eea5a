package host

import (
	"container/heap"
	"time"
)

// Queue is a delaying work queue keyed by name, like client-go's
// workqueue.AddAfter: a key added several times is held once, at the earliest
// time asked. It holds no goroutines and reads no clock; the caller says what
// time it is.
//
// Beside those timers it holds events (AddEvent): a watch notification due
// when a write reaches the read cache. An event is never merged into an
// earlier timer of its key — the pass at the timer's time would not yet see
// the write — only into another event of the same key at the same time.
type Queue struct {
	h      timeHeap
	index  map[string]int // key → position in h
	events eventHeap
	seen   map[eventKey]bool
	// eventsPeak is the most events held since the queue last drained.
	eventsPeak int
}

type eventKey struct {
	key string
	at  int64
}

// NewQueue returns an empty queue.
func NewQueue() *Queue {
	q := &Queue{index: map[string]int{}, seen: map[eventKey]bool{}}
	q.h.q = q
	return q
}

// AddEvent schedules key at t in addition to any timer it has (a timer
// for exactly t already covers it).
func (q *Queue) AddEvent(key string, t time.Time) {
	k := eventKey{key, t.UnixNano()}
	if q.seen[k] {
		return
	}
	if i, ok := q.index[key]; ok && q.h.items[i].at.Equal(t) {
		return
	}
	q.seen[k] = true
	heap.Push(&q.events, queued{key: key, at: t, seq: q.h.seq})
	q.h.seq++
	q.eventsPeak = max(q.eventsPeak, len(q.events))
}

// AddAt schedules key at t, or earlier if it is already scheduled earlier
// (an event for exactly t already covers it).
func (q *Queue) AddAt(key string, t time.Time) {
	if q.seen[eventKey{key, t.UnixNano()}] {
		return
	}
	if i, ok := q.index[key]; ok {
		if t.Before(q.h.items[i].at) {
			q.h.items[i].at = t
			heap.Fix(&q.h, i)
		}
		return
	}
	heap.Push(&q.h, queued{key: key, at: t, seq: q.h.seq})
	q.h.seq++
}

// Next returns the earliest scheduled time and whether anything is queued.
func (q *Queue) Next() (time.Time, bool) {
	switch {
	case len(q.h.items) == 0 && len(q.events) == 0:
		return time.Time{}, false
	case len(q.events) == 0:
		return q.h.items[0].at, true
	case len(q.h.items) == 0:
		return q.events[0].at, true
	}
	a, b := q.h.items[0], q.events[0]
	if b.at.Before(a.at) {
		return b.at, true
	}
	return a.at, true
}

// PopDue removes and returns the earliest key due at or before now (timers
// and events in time order, ties in the order they were added).
func (q *Queue) PopDue(now time.Time) (string, bool) {
	timer := len(q.h.items) > 0 && !q.h.items[0].at.After(now)
	event := len(q.events) > 0 && !q.events[0].at.After(now)
	if timer && event {
		a, b := q.h.items[0], q.events[0]
		if b.at.Before(a.at) || b.at.Equal(a.at) && b.seq < a.seq {
			timer = false
		} else {
			event = false
		}
	}
	switch {
	case timer:
		return heap.Pop(&q.h).(queued).key, true
	case event:
		it := heap.Pop(&q.events).(queued)
		delete(q.seen, eventKey{it.key, it.at.UnixNano()})
		if len(q.events) == 0 && q.eventsPeak > 64 {
			// Drained after a burst of writes: Go maps and slices keep
			// their peak size, so start again small.
			q.events, q.seen, q.eventsPeak = nil, map[eventKey]bool{}, 0
		}
		return it.key, true
	}
	return "", false
}

// Len returns the number of queued timers and events.
func (q *Queue) Len() int { return len(q.h.items) + len(q.events) }

type queued struct {
	key string
	at  time.Time
	seq uint64 // insertion order breaks ties deterministically
}

type timeHeap struct {
	items []queued
	seq   uint64
	q     *Queue
}

func (h timeHeap) Len() int { return len(h.items) }
func (h timeHeap) Less(i, j int) bool {
	if !h.items[i].at.Equal(h.items[j].at) {
		return h.items[i].at.Before(h.items[j].at)
	}
	return h.items[i].seq < h.items[j].seq
}
func (h timeHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.q.index[h.items[i].key] = i
	h.q.index[h.items[j].key] = j
}
func (h *timeHeap) Push(x any) {
	it := x.(queued)
	h.q.index[it.key] = len(h.items)
	h.items = append(h.items, it)
}
func (h *timeHeap) Pop() any {
	n := len(h.items)
	it := h.items[n-1]
	h.items[n-1] = queued{}
	h.items = h.items[:n-1]
	delete(h.q.index, it.key)
	return it
}

// eventHeap holds events in time order, insertion order on ties.
type eventHeap []queued

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(queued)) }
func (h *eventHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = queued{}
	*h = old[:len(old)-1]
	return it
}
