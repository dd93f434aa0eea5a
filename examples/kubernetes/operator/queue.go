package operator

import (
	"slices"
	"sync"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// startedFirst is the Certificate work queue's storage: work already
// begun goes before work not yet begun. A Certificate's first look,
// queued by its creation (or by the cache's first list when the operator
// starts), waits behind every pass of a Certificate already under way —
// one whose request was answered, whose Secret was written, whose status
// the last pass set — so that when many Certificates are created at
// once, those started finish before more are started, instead of every
// later pass queueing behind the whole flood of first ones.
//
// Within each of the two levels the order is first in, first out. An
// item queued as new work and added again as work under way moves to
// the front level. It is client-go's workqueue.Queue, under the
// workqueue's own lock, so delays (RequeueAfter), rate limiting and the
// queue's metrics are the workqueue's, on the operator's clock.
type startedFirst struct {
	// mu guards later; the other fields are used only under the
	// workqueue's lock (Push, Touch, Pop, Len).
	mu sync.Mutex
	// later holds the items whose next Push is new work.
	later map[reconcile.Request]bool

	now, next []reconcile.Request
}

var _ workqueue.Queue[reconcile.Request] = (*startedFirst)(nil)

func newStartedFirst() *startedFirst {
	return &startedFirst{later: map[reconcile.Request]bool{}}
}

// addNew queues r as work not yet begun.
func (s *startedFirst) addNew(q workqueue.TypedInterface[reconcile.Request], r reconcile.Request) {
	s.mu.Lock()
	s.later[r] = true
	s.mu.Unlock()
	q.Add(r)
}

// add queues r as work under way.
func (s *startedFirst) add(q workqueue.TypedInterface[reconcile.Request], r reconcile.Request) {
	s.mu.Lock()
	delete(s.later, r)
	s.mu.Unlock()
	q.Add(r)
}

// isNew reports, and forgets, whether r's last add was new work.
func (s *startedFirst) isNew(r reconcile.Request) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.later[r]
	delete(s.later, r)
	return n
}

// Push queues an item that is not queued.
func (s *startedFirst) Push(r reconcile.Request) {
	if s.isNew(r) {
		s.next = append(s.next, r)
		return
	}
	s.now = append(s.now, r)
}

// Touch is an add of a queued item: one queued as new work moves to the
// front level when the add is of work under way.
func (s *startedFirst) Touch(r reconcile.Request) {
	if s.isNew(r) {
		return
	}
	if i := slices.Index(s.next, r); i >= 0 {
		s.next = slices.Delete(s.next, i, i+1)
		s.now = append(s.now, r)
	}
}

// Len is how many items are queued.
func (s *startedFirst) Len() int { return len(s.now) + len(s.next) }

// Pop takes the first item of the front level, else of the other.
func (s *startedFirst) Pop() reconcile.Request {
	q := &s.now
	if len(s.now) == 0 {
		q = &s.next
	}
	r := (*q)[0]
	(*q)[0] = reconcile.Request{}
	*q = (*q)[1:]
	if len(*q) == 0 {
		*q = nil // let the emptied array go
	}
	return r
}
