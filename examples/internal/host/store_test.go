package host

import (
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/stretchr/testify/require"
)

type obj struct{ V string }

func cloneObj(o obj) obj { return o }

func TestStoreVersionsAndConflicts(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	s := NewStore(clk, 0, cloneObj)
	v1, err := s.Create("a", obj{"1"})
	require.NoError(t, err)
	_, err = s.Create("a", obj{"again"})
	require.ErrorIs(t, err, ErrAlreadyExists, "second create")
	v2, err := s.Update("a", obj{"2"}, v1)
	require.NoError(t, err)
	_, err = s.Update("a", obj{"stale"}, v1)
	require.ErrorIs(t, err, ErrConflict, "stale update")
	got, v, ok := s.Get("a")
	require.True(t, ok, "Get")
	require.Equal(t, "2", got.V, "Get")
	require.Equal(t, v2, v, "Get: version")
	require.NoError(t, s.Delete("a"))
	require.ErrorIs(t, s.Delete("a"), ErrNotFound, "second delete")
	_, err = s.Update("a", obj{"x"}, v2)
	require.ErrorIs(t, err, ErrNotFound, "update of deleted")
}

func TestStoreLaggingReadsSeeWritesLate(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	s := NewStore(clk, 5*time.Second, cloneObj)
	v1, _ := s.Create("a", obj{"1"})
	_, _, ok := s.Get("a")
	require.False(t, ok, "a lagging cache saw a create at once")
	// A create from a stale view still conflicts with what exists.
	_, err := s.Create("a", obj{"dup"})
	require.ErrorIs(t, err, ErrAlreadyExists, "create behind the cache")
	clk.Step(5 * time.Second)
	got, v, ok := s.Get("a")
	require.True(t, ok, "after the lag Get")
	require.Equal(t, "1", got.V, "after the lag Get")
	require.Equal(t, v1, v, "after the lag Get: version")
	v2, _ := s.Update("a", obj{"2"}, v1)
	clk.Step(time.Second)
	got, v, _ = s.Get("a")
	require.Equal(t, "1", got.V, "1s after an update the cache must show the old value")
	require.Equal(t, v1, v, "1s after an update the cache must show the old version")
	// A write based on the stale read is refused.
	_, err = s.Update("a", obj{"3"}, v)
	require.ErrorIs(t, err, ErrConflict, "update from a stale read")
	clk.Step(4 * time.Second)
	got, v, _ = s.Get("a")
	require.Equal(t, "2", got.V, "after the lag the cache shows")
	require.Equal(t, v2, v, "after the lag the cache shows: version")
	require.Len(t, s.List(), 1, "List")
}

func TestQueueEarliestWinsAndOrder(t *testing.T) {
	t0 := time.Unix(1000, 0)
	q := NewQueue()
	q.AddAt("b", t0.Add(2*time.Second))
	q.AddAt("a", t0.Add(5*time.Second))
	q.AddAt("a", t0.Add(time.Second))    // earlier: moves a forward
	q.AddAt("b", t0.Add(10*time.Second)) // later: ignored
	q.AddAt("c", t0.Add(2*time.Second))  // ties with b: b first (added first)
	require.Equal(t, 3, q.Len(), "Len")
	_, ok := q.PopDue(t0)
	require.False(t, ok, "popped a key before it was due")
	var got []string
	for {
		k, ok := q.PopDue(t0.Add(time.Hour))
		if !ok {
			break
		}
		got = append(got, k)
	}
	want := []string{"a", "b", "c"}
	require.Equal(t, want, got, "order")
	_, ok = q.Next()
	require.False(t, ok, "queue not empty")
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
	require.Equal(t, "a@1s b@2s a@3s", strings.Join(got, " "), "popped")
	require.Equal(t, 0, q.Len(), "left in the queue")
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
			} else {
				_, exists := m.items[name]
				require.True(t, exists, "step %d: create %s failed but the model has no %s: %v", step, name, name, err)
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
			require.Equal(t, wok, ok, "step %d: read %s: found, against the model", step, n)
			require.Equal(t, want, got.V, "step %d: read %s, against the model", step, n)
		}
		require.Len(t, s.List(), len(m.cache), "step %d: List against the model", step)
		require.Equal(t, len(m.items), s.Len(), "step %d: Len against the model", step)
	}
	require.LessOrEqual(t, len(s.behind), len(names), "names held behind")
}
