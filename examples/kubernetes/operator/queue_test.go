package operator

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func req(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}
}

// newTestQueue is the Certificate queue as Setup builds it, on a fake
// clock.
func newTestQueue(t *testing.T) (*startedFirst, workqueue.TypedRateLimitingInterface[reconcile.Request], *clocktesting.FakeClock) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	sf := newStartedFirst()
	q := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[reconcile.Request]{Clock: clk, Queue: sf})
	dq := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[reconcile.Request]{Clock: clk, Queue: q})
	rq := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request](),
		workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{Clock: clk, DelayingQueue: dq})
	t.Cleanup(rq.ShutDown)
	return sf, rq, clk
}

// drain takes every queued item, in order, marking each done.
func drain(t *testing.T, q workqueue.TypedRateLimitingInterface[reconcile.Request]) []string {
	t.Helper()
	var out []string
	for q.Len() > 0 {
		r, shutdown := q.Get()
		require.False(t, shutdown)
		out = append(out, r.Name)
		q.Done(r)
	}
	return out
}

func TestStartedFirstOrder(t *testing.T) {
	type op struct {
		name string
		new  bool
	}
	for _, tc := range []struct {
		name string
		ops  []op
		want []string
	}{
		{"new work waits behind work under way",
			[]op{{"a", true}, {"b", true}, {"c", false}, {"d", true}, {"e", false}},
			[]string{"c", "e", "a", "b", "d"}},
		{"each level is first in, first out",
			[]op{{"a", false}, {"b", false}, {"c", true}, {"d", true}},
			[]string{"a", "b", "c", "d"}},
		{"new work added again as work under way moves up, behind what was there",
			[]op{{"a", true}, {"b", true}, {"c", false}, {"b", false}},
			[]string{"c", "b", "a"}},
		{"work under way added again as new work stays where it is",
			[]op{{"a", true}, {"b", false}, {"b", true}},
			[]string{"b", "a"}},
		{"an item is queued once",
			[]op{{"a", true}, {"a", true}, {"b", false}, {"b", false}},
			[]string{"b", "a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sf, q, _ := newTestQueue(t)
			for _, o := range tc.ops {
				if o.new {
					sf.addNew(q, req(o.name))
				} else {
					sf.add(q, req(o.name))
				}
			}
			require.Equal(t, tc.want, drain(t, q))
			require.Empty(t, sf.later, "no item is left marked as new work")
		})
	}
}

// A new item's mark is kept while the same item is being worked on, and
// the item goes behind work under way when it is queued again at Done.
func TestStartedFirstWhileProcessing(t *testing.T) {
	sf, q, _ := newTestQueue(t)
	sf.add(q, req("a"))
	r, _ := q.Get() // a is being worked on
	sf.addNew(q, req("a"))
	sf.add(q, req("b"))
	q.Done(r)
	require.Equal(t, []string{"b", "a"}, drain(t, q))

	// And an add of work under way while it is worked on wins.
	sf.add(q, req("a"))
	r, _ = q.Get()
	sf.addNew(q, req("a"))
	sf.add(q, req("a"))
	sf.addNew(q, req("c"))
	q.Done(r)
	require.Equal(t, []string{"a", "c"}, drain(t, q))
}

// Delays and rate limits are the workqueue's, on its clock; an item
// whose delay ends is work under way.
func TestStartedFirstDelaysOnTheClock(t *testing.T) {
	sf, q, clk := newTestQueue(t)
	sf.addNew(q, req("new"))
	q.AddAfter(req("later"), time.Minute)
	require.Equal(t, 1, q.Len())
	clk.Step(time.Minute)
	require.Eventually(t, func() bool { return q.Len() == 2 }, 10*time.Second, time.Millisecond,
		"the delayed item is queued once the fake clock reaches its time")
	require.Equal(t, []string{"later", "new"}, drain(t, q))
}
