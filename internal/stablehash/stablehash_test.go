package stablehash

import (
	"fmt"
	"testing"
)

func TestFractionIsDeterministicAndInRange(t *testing.T) {
	for i := 0; i < 1000; i++ {
		key := fmt.Sprintf("uid-%d", i)
		a, b := Fraction("d", key), Fraction("d", key)
		if a != b {
			t.Fatalf("Fraction(%q) not deterministic: %v != %v", key, a, b)
		}
		if a < 0 || a >= 1 {
			t.Fatalf("Fraction(%q) = %v, want [0,1)", key, a)
		}
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
	if same > 40 {
		t.Fatalf("%d of 1000 keys landed in the same bucket in two domains", same)
	}
}

func TestScaleSpreadsSequentialKeys(t *testing.T) {
	// UIDs that differ in one character must spread over the range: 10,000
	// keys into 100 buckets should leave no bucket empty or overfull.
	const n, buckets = 10000, 100
	var count [buckets]int
	for i := 0; i < n; i++ {
		v := Scale(buckets, "renewal", fmt.Sprintf("00000000-0000-0000-0000-%012d", i))
		if v < 0 || v >= buckets {
			t.Fatalf("Scale out of range: %d", v)
		}
		count[v]++
	}
	for b, c := range count {
		if c < 50 || c > 150 {
			t.Errorf("bucket %d holds %d of %d keys, want about %d", b, c, n, n/buckets)
		}
	}
}

func TestScaleEdges(t *testing.T) {
	if got := Scale(0, "d", "k"); got != 0 {
		t.Errorf("Scale(0) = %d, want 0", got)
	}
	if got := Scale(-5, "d", "k"); got != 0 {
		t.Errorf("Scale(-5) = %d, want 0", got)
	}
	if got := Scale(1, "d", "k"); got != 0 {
		t.Errorf("Scale(1) = %d, want 0", got)
	}
	if Sum64("ab", "c") == Sum64("a", "bc") {
		t.Error("domain and key boundary is ambiguous")
	}
}

func BenchmarkScale(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		Scale(1<<40, "renewal", "6f1c2b0e-8d4a-4b7e-9a51-0c3f2d9e7a11")
	}
}
