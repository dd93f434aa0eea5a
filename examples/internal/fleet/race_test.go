//go:build race

package fleet

// Under the race detector everything runs about ten times slower: the
// small fleet is smaller still.
const raceEnabled = true
