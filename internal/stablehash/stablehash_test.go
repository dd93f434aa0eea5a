package stablehash

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFractionIsDeterministicAndInRange(t *testing.T) {
	for i := 0; i < 1000; i++ {
		key := fmt.Sprintf("uid-%d", i)
		a, b := Fraction("d", key), Fraction("d", key)
		require.Equal(t, a, b, "Fraction(%q) not deterministic", key)
		require.GreaterOrEqual(t, a, 0.0, "Fraction(%q), want [0,1)", key)
		require.Less(t, a, 1.0, "Fraction(%q), want [0,1)", key)
	}
}

func TestDomainsAreIndependent(t *testing.T) {
	same := 0
	for i := 0; i < 1000; i++ {
		key := fmt.Sprintf("uid-%d", i)
		if Scale(100, "renewal", key) == Scale(100, "backoff", key) {
			same++
		}
	}
	// Independent buckets collide about 1 % of the time.
	require.LessOrEqual(t, same, 40, "keys of 1000 that landed in the same bucket in two domains")
}

func TestScaleSpreadsSequentialKeys(t *testing.T) {
	// UIDs that differ in one character must spread over the range: 10,000
	// keys into 100 buckets should leave no bucket empty or overfull.
	const n, buckets = 10000, 100
	var count [buckets]int
	for i := 0; i < n; i++ {
		v := Scale(buckets, "renewal", fmt.Sprintf("00000000-0000-0000-0000-%012d", i))
		require.GreaterOrEqual(t, v, int64(0), "Scale out of range")
		require.Less(t, v, int64(buckets), "Scale out of range")
		count[v]++
	}
	for b, c := range count {
		assert.GreaterOrEqual(t, c, 50, "bucket %d's share of %d keys, want about %d", b, n, n/buckets)
		assert.LessOrEqual(t, c, 150, "bucket %d's share of %d keys, want about %d", b, n, n/buckets)
	}
}

func TestScaleEdges(t *testing.T) {
	assert.Equal(t, int64(0), Scale(0, "d", "k"), "Scale(0)")
	assert.Equal(t, int64(0), Scale(-5, "d", "k"), "Scale(-5)")
	assert.Equal(t, int64(0), Scale(1, "d", "k"), "Scale(1)")
	assert.NotEqual(t, Sum64("ab", "c"), Sum64("a", "bc"), "domain and key boundary is ambiguous")
}

func BenchmarkScale(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		Scale(1<<40, "renewal", "6f1c2b0e-8d4a-4b7e-9a51-0c3f2d9e7a11")
	}
}
