package host

import (
	"errors"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

type obj struct{ V string }

func cloneObj(o obj) obj { return o }

func TestStoreVersionsAndConflicts(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	s := NewStore(clk, 0, cloneObj)
	v1, err := s.Create("a", obj{"1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create("a", obj{"again"}); !errors.Is(err, ErrAlreadyExists) {
		t.Fatalf("second create: %v, want ErrAlreadyExists", err)
	}
	v2, err := s.Update("a", obj{"2"}, v1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update("a", obj{"stale"}, v1); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale update: %v, want ErrConflict", err)
	}
	got, v, ok := s.Get("a")
	if !ok || got.V != "2" || v != v2 {
		t.Fatalf("Get = %v %d %v, want 2 at %d", got, v, ok, v2)
	}
	if err := s.Delete("a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete("a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v, want ErrNotFound", err)
	}
	if _, err := s.Update("a", obj{"x"}, v2); !errors.Is(err, ErrNotFound) {
		t.Fatalf("update of deleted: %v, want ErrNotFound", err)
	}
}

func TestStoreLaggingReadsSeeWritesLate(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	s := NewStore(clk, 5*time.Second, cloneObj)
	v1, _ := s.Create("a", obj{"1"})
	if _, _, ok := s.Get("a"); ok {
		t.Fatal("a lagging cache saw a create at once")
	}
	// A create from a stale view still conflicts with what exists.
	if _, err := s.Create("a", obj{"dup"}); !errors.Is(err, ErrAlreadyExists) {
		t.Fatalf("create behind the cache: %v, want ErrAlreadyExists", err)
	}
	clk.Step(5 * time.Second)
	got, v, ok := s.Get("a")
	if !ok || got.V != "1" || v != v1 {
		t.Fatalf("after the lag Get = %v %d %v", got, v, ok)
	}
	v2, _ := s.Update("a", obj{"2"}, v1)
	clk.Step(time.Second)
	got, v, _ = s.Get("a")
	if got.V != "1" || v != v1 {
		t.Fatalf("1s after an update the cache shows %v@%d, want the old 1@%d", got, v, v1)
	}
	// A write based on the stale read is refused.
	if _, err := s.Update("a", obj{"3"}, v); !errors.Is(err, ErrConflict) {
		t.Fatalf("update from a stale read: %v, want ErrConflict", err)
	}
	clk.Step(4 * time.Second)
	if got, v, _ = s.Get("a"); got.V != "2" || v != v2 {
		t.Fatalf("after the lag the cache shows %v@%d, want 2@%d", got, v, v2)
	}
	if n := len(s.List()); n != 1 {
		t.Fatalf("List has %d objects, want 1", n)
	}
}

func TestQueueEarliestWinsAndOrder(t *testing.T) {
	t0 := time.Unix(1000, 0)
	q := NewQueue()
	q.AddAt("b", t0.Add(2*time.Second))
	q.AddAt("a", t0.Add(5*time.Second))
	q.AddAt("a", t0.Add(time.Second))    // earlier: moves a forward
	q.AddAt("b", t0.Add(10*time.Second)) // later: ignored
	q.AddAt("c", t0.Add(2*time.Second))  // ties with b: b first (added first)
	if q.Len() != 3 {
		t.Fatalf("Len = %d, want 3", q.Len())
	}
	if _, ok := q.PopDue(t0); ok {
		t.Fatal("popped a key before it was due")
	}
	var got []string
	for {
		k, ok := q.PopDue(t0.Add(time.Hour))
		if !ok {
			break
		}
		got = append(got, k)
	}
	want := []string{"a", "b", "c"}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("order %v, want %v", got, want)
	}
	if _, ok := q.Next(); ok {
		t.Fatal("queue not empty")
	}
}

// An event (a write reaching the cache) is not merged into an earlier
// timer: the pass at the timer's time would not see the write.
func TestQueueEventsAreNotMergedIntoEarlierTimers(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	q := NewQueue()
	q.AddAt("a", t0.Add(time.Second))
	q.AddEvent("a", t0.Add(3*time.Second))
	q.AddEvent("a", t0.Add(3*time.Second)) // the same event twice: once
	q.AddAt("b", t0.Add(2*time.Second))
	var got []string
	for {
		next, ok := q.Next()
		if !ok {
			break
		}
		k, _ := q.PopDue(next)
		got = append(got, k+"@"+next.Sub(t0).String())
	}
	if want := "a@1s b@2s a@3s"; strings.Join(got, " ") != want {
		t.Fatalf("popped %v, want %s", got, want)
	}
	if q.Len() != 0 {
		t.Fatalf("%d left", q.Len())
	}
}
