package retry_test

import (
	"fmt"
	"time"

	"github.com/certlife/certlife/backoff/retry"
)

// A machine records each failed call, and the schedule says when to try
// again: from the failure's time, by the count of failed attempts.
func ExampleSchedule_RetryAt() {
	var s retry.Schedule // the defaults
	failed := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var a retry.Attempts
	for i := range 4 {
		a.NoteFailure("503 Service Unavailable", true, nil, failed)
		at, _ := s.RetryAt(&a)
		fmt.Printf("failure %d: retry %v later\n", i+1, at.Sub(failed))
	}
	// Output:
	// failure 1: retry 5s later
	// failure 2: retry 10s later
	// failure 3: retry 20s later
	// failure 4: retry 40s later
}
