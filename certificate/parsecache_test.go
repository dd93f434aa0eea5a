package certificate

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/certlife/certlife/keys"
)

// decisions are every decision a host may make on a snapshot.
var decisions = []struct {
	name   string
	decide func(*Snapshot, time.Time, Config) Result
}{
	{"Reconcile", Reconcile},
	{"Trigger", Trigger},
	{"KeyManager", KeyManager},
	{"RequestManager", RequestManager},
	{"Issue", Issue},
	{"Readiness", Readiness},
}

// checkParseCache: a parse cache can only make a decision cheaper. Every
// decision gives the same result with cfg's cache as without one, on a
// cache that already holds the snapshot's parses (the second call) as on
// one that did not.
func checkParseCache(t testing.TB, s *Snapshot, now time.Time, cfg Config, cache *keys.ParseCache) {
	t.Helper()
	plain := cfg
	plain.ParseCache = nil
	cached := cfg
	cached.ParseCache = cache
	for _, d := range decisions {
		want := d.decide(s, now, plain)
		for call := 1; call <= 2; call++ {
			if diff := cmp.Diff(want, d.decide(s, now, cached)); diff != "" {
				t.Fatalf("%s with a parse cache (call %d) differs from %s without (-without +with):\n%s", d.name, call, d.name, diff)
			}
		}
	}
}

// TestParseCacheKeepsDecisions runs every decision on structured
// snapshots — every kind of secret, key, request and answer the fuzz
// pool makes, garbage included — with and without a parse cache: one
// shared by all the snapshots, as a host's is, and one too small to hold
// more than a few parses, which evicts all the time.
func TestParseCacheKeepsDecisions(t *testing.T) {
	pool := newFuzzPool(t)
	shared := keys.NewParseCache(0)
	tiny := keys.NewParseCache(16 << 10)
	rng := rand.New(rand.NewPCG(28, 1))
	n := 400
	if testing.Short() {
		n = 50
	}
	for range n {
		data := make([]byte, 40)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		s, now, cfg := pool.snapshot(&fuzzReader{b: data})
		checkParseCache(t, s, now, cfg, shared)
		checkParseCache(t, s, now, cfg, tiny)
	}
	if st := shared.Stats(); st.Hits == 0 || st.Entries == 0 {
		t.Fatalf("the shared cache was never used: %+v", st)
	}
	if st := tiny.Stats(); st.Evictions == 0 {
		t.Fatalf("the tiny cache never evicted: %+v", st)
	}
}

// TestParseCacheKeepsHealthyDecision: on a Ready certificate the cached
// decision is the plain one, and parses nothing after the first pass.
func TestParseCacheKeepsHealthyDecision(t *testing.T) {
	f := newFixture(t)
	s, _ := f.healthy(t0.Add(-10 * 24 * time.Hour))
	cache := keys.NewParseCache(0)
	checkParseCache(t, s, t0, Config{}, cache)
	misses := cache.Stats().Misses
	Reconcile(s, t0, Config{ParseCache: cache})
	if st := cache.Stats(); st.Misses != misses {
		t.Fatalf("a second pass on the same snapshot parsed again: %+v (misses were %d)", st, misses)
	}
}
