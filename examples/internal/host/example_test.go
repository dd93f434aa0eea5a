package host_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/certlife/certlife/examples/internal/host"
	clocktesting "k8s.io/utils/clock/testing"
)

// A store whose reads lag two seconds behind its writes: a second create of
// the same name, made from a stale read, is refused.
func ExampleStore() {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	requests := host.NewStore(clk, 2*time.Second, func(s string) string { return s })

	_, _ = requests.Create("web-1", "request for revision 1")
	_, _, seen := requests.Get("web-1")
	fmt.Println("cache sees it:", seen)
	_, err := requests.Create("web-1", "request for revision 1")
	fmt.Println("duplicate refused:", errors.Is(err, host.ErrAlreadyExists))
	// Output:
	// cache sees it: false
	// duplicate refused: true
}
