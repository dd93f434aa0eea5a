package fleethost

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// The index against a map of sorted sets, over random adds and removes.
func TestIndexMatchesSortedSets(t *testing.T) {
	x := newIndex()
	model := map[string][]string{}
	rng := uint64(7)
	next := func(n uint64) uint64 { rng = rng*6364136223846793005 + 1442695040888963407; return (rng >> 33) % n }
	keys := []string{"k1", "k2", "k3"}
	for step := 0; step < 20000; step++ {
		k, name := keys[next(3)], fmt.Sprintf("n%d", next(4))
		if next(2) == 0 {
			x.add(k, name)
			if i, found := slices.BinarySearch(model[k], name); !found {
				model[k] = slices.Insert(model[k], i, name)
			}
		} else {
			x.remove(k, name)
			if i, found := slices.BinarySearch(model[k], name); found {
				model[k] = slices.Delete(model[k], i, i+1)
			}
		}
		for _, k := range keys {
			var one [1]string
			got, want := x.get(k, &one), model[k]
			require.True(t, slices.Equal(got, want), "step %d: %s = %v, want %v", step, k, got, want)
			_, inOne := x.one[k]
			_, inMany := x.many[k]
			require.False(t, inOne && inMany, "step %d: %s held both as one and as many", step, k)
			if inMany {
				require.GreaterOrEqual(t, len(x.many[k]), 2, "step %d: %s held as many with fewer than two", step, k)
			}
		}
	}
}
