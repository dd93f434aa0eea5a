package stablehash_test

import (
	"fmt"
	"time"

	"github.com/certlife/certlife/internal/stablehash"
)

// Spread a fleet's renewals over an hour, deterministically: the same UID
// always lands on the same second.
func ExampleScale() {
	spread := int64(time.Hour / time.Second)
	for _, uid := range []string{"uid-a", "uid-b", "uid-a"} {
		fmt.Println(uid, stablehash.Scale(spread, "renewal", uid) == stablehash.Scale(spread, "renewal", uid))
	}
	// Output:
	// uid-a true
	// uid-b true
	// uid-a true
}
