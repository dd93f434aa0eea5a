package backoff_test

import (
	"fmt"
	"time"

	"github.com/certlife/certlife/backoff"
)

// The trigger stage asks, after the third failed issuance in a row, whether
// it may start a new one.
func ExamplePolicy_Decide() {
	lastFailure := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	attempts := 3
	in := backoff.Input{LastFailure: lastFailure, FailedAttempts: &attempts}

	var policy backoff.Policy // seed 003: 1h·2^(n−1), at most 32h
	for _, now := range []time.Time{lastFailure.Add(time.Hour), lastFailure.Add(4 * time.Hour)} {
		d := policy.Decide(in, now)
		fmt.Printf("%s wait=%v next=%s\n", d.Reason, d.Wait, d.NextAttempt.Format(time.Kitchen))
	}
	// Output:
	// BackingOff wait=true next=4:00PM
	// RetryAllowed wait=false next=4:00PM
}

// A rate-limited CA answered with Retry-After; the next attempt is the later
// of the backoff and what the CA asked.
func ExampleInput_retryAfter() {
	lastFailure := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	attempts := 1
	d := backoff.Policy{}.Decide(backoff.Input{
		LastFailure:    lastFailure,
		FailedAttempts: &attempts,
		RetryAfter:     lastFailure.Add(3 * time.Hour),
	}, lastFailure.Add(90*time.Minute))
	fmt.Println(d.Reason, d.NextAttempt.Sub(lastFailure))
	// Output: RetryAfter 3h0m0s
}
