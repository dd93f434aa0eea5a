package host

import (
	"container/heap"
	"time"
)

// Queue is a delaying work queue keyed by name, like client-go's
// workqueue.AddAfter: a key added several times is held once, at the earliest
// time asked. It holds no goroutines and reads no clock; the caller says what
// time it is.
type Queue struct {
	h     timeHeap
	index map[string]int // key → position in h
}

// NewQueue returns an empty queue.
func NewQueue() *Queue {
	q := &Queue{index: map[string]int{}}
	q.h.q = q
	return q
}

// AddAt schedules key at t, or earlier if it is already scheduled earlier.
func (q *Queue) AddAt(key string, t time.Time) {
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
	if len(q.h.items) == 0 {
		return time.Time{}, false
	}
	return q.h.items[0].at, true
}

// PopDue removes and returns the earliest key due at or before now.
func (q *Queue) PopDue(now time.Time) (string, bool) {
	if len(q.h.items) == 0 || q.h.items[0].at.After(now) {
		return "", false
	}
	it := heap.Pop(&q.h).(queued)
	return it.key, true
}

// Len returns the number of queued keys.
func (q *Queue) Len() int { return len(q.h.items) }

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
	h.items = h.items[:n-1]
	delete(h.q.index, it.key)
	return it
}
