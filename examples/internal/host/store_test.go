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

// modelStore is the plainest lagging store: a full read-cache map that
// pending writes reach in order. The Store keeps only the names that lag;
// TestStoreMatchesModel holds it to this.
type modelStore struct {
	items, cache map[string]string
	pending      []modelWrite
}

type modelWrite struct {
	name, v string
	deleted bool
	at      time.Time
}

func (m *modelStore) sync(now time.Time) {
	for len(m.pending) > 0 && !m.pending[0].at.After(now) {
		w := m.pending[0]
		m.pending = m.pending[1:]
		if w.deleted {
			delete(m.cache, w.name)
		} else {
			m.cache[w.name] = w.v
		}
	}
}

func (m *modelStore) write(name, v string, deleted bool, at time.Time) {
	if deleted {
		delete(m.items, name)
	} else {
		m.items[name] = v
	}
	if n := len(m.pending); n > 0 && at.Before(m.pending[n-1].at) {
		at = m.pending[n-1].at
	}
	m.pending = append(m.pending, modelWrite{name, v, deleted, at})
}

func TestStoreMatchesModel(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	s := NewStore(clk, 0, cloneObj)
	// Lags from 0 to 3 s, varying by write, as the simulation's are.
	s.LagOf = func(name string, version uint64) time.Duration {
		return time.Duration((version*7+uint64(len(name)))%4) * time.Second
	}
	m := &modelStore{items: map[string]string{}, cache: map[string]string{}}
	names := []string{"a", "bb", "ccc"}
	rng := uint64(1)
	next := func(n uint64) uint64 { rng = rng*6364136223846793005 + 1442695040888963407; return (rng >> 33) % n }
	for step := 0; step < 5000; step++ {
		name := names[next(3)]
		v := strings.Repeat("v", int(next(5)))
		now := clk.Now()
		switch next(5) {
		case 0:
			if ver, err := s.Create(name, obj{v}); err == nil {
				m.write(name, v, false, now.Add(s.LagOf(name, ver)))
			} else if _, exists := m.items[name]; !exists {
				t.Fatalf("step %d: create %s failed but the model has no %s: %v", step, name, name, err)
			}
		case 1:
			_, ver, _ := s.Get(name) // possibly stale: the update may conflict
			if nv, err := s.Update(name, obj{v}, ver); err == nil {
				m.write(name, v, false, now.Add(s.LagOf(name, nv)))
			}
		case 2:
			if err := s.Delete(name); err == nil {
				m.write(name, "", true, now.Add(s.LagOf(name, 0))) // a delete has no new version
			}
		case 3:
			clk.Step(time.Duration(next(2500)) * time.Millisecond)
		}
		m.sync(clk.Now())
		for _, n := range names {
			got, _, ok := s.Get(n)
			want, wok := m.cache[n]
			if ok != wok || got.V != want {
				t.Fatalf("step %d: read %s = %q %v, model %q %v", step, n, got.V, ok, want, wok)
			}
		}
		list := s.List()
		if len(list) != len(m.cache) {
			t.Fatalf("step %d: List has %d, model %d", step, len(list), len(m.cache))
		}
		if s.Len() != len(m.items) {
			t.Fatalf("step %d: Len %d, model %d", step, s.Len(), len(m.items))
		}
	}
	if len(s.behind) > len(names) {
		t.Fatalf("behind holds %d names", len(s.behind))
	}
}
