package hosttest

import (
	"context"
	"fmt"
	"time"

	"github.com/certlife/certlife/certificate/host"
)

// SettableClock is a fake clock a driver can move:
// k8s.io/utils/clock/testing's FakeClock is one. It must be the loop's
// clock (host.Config.Clock).
type SettableClock interface {
	Now() time.Time
	SetTime(time.Time)
}

// Settle steps loop at the clock's time until nothing more is due now,
// at most max steps, and returns how many it took; it fails when the
// loop is still busy after max.
func Settle(ctx context.Context, loop *host.Loop, max int) (int, error) {
	for i := 0; i < max; i++ {
		n, err := loop.Step(ctx)
		if err != nil {
			return i, err
		}
		if n == 0 {
			return i, nil
		}
	}
	return max, fmt.Errorf("hosttest: the loop is still busy after %d steps at %v", max, loop.Reconciler().Now())
}

// AdvanceOptions tune Advance. The zero value moves the clock from one
// due time to the next at once, and stops only at the end.
type AdvanceOptions struct {
	// Until, when set, is asked before each step; Advance returns as
	// soon as it reports true, with the clock where it is.
	Until func() bool
	// Pace, when positive, keeps the clock from moving faster than real
	// time across each wait shorter than Pace while an issuer has asked
	// to be called again for a request (host.Loop.Answering): for an
	// issuer that works against a real server, such as an ACME server
	// that validates on its own clock, so that its polls and retries are
	// spaced as they would be. Longer waits, and every wait while no
	// request is in flight, are jumped.
	Pace time.Duration
	// MaxSteps bounds the steps taken at one instant of the clock; zero
	// means 10,000. A loop still busy after them fails Advance: something
	// asks to be looked at again at once, forever.
	MaxSteps int
}

// Advance drives loop on the fake clock clk until end: it moves the
// clock to each time something is due and steps, then moves it to end
// and steps once more. It returns early when opts.Until reports true or
// ctx ends.
func Advance(ctx context.Context, loop *host.Loop, clk SettableClock, end time.Time, opts AdvanceOptions) error {
	maxSteps := opts.MaxSteps
	if maxSteps <= 0 {
		maxSteps = 10000
	}
	var at time.Time
	steps := 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if opts.Until != nil && opts.Until() {
			return nil
		}
		now := clk.Now()
		if now.Equal(at) {
			steps++
			if steps > maxSteps {
				return fmt.Errorf("hosttest: the loop is still busy after %d steps at %v", maxSteps, now)
			}
		} else {
			at, steps = now, 1
		}
		next, ok := loop.Next()
		if !ok || next.After(end) {
			if end.After(now) {
				clk.SetTime(end)
			}
			if _, err := loop.Step(ctx); err != nil {
				return err
			}
			if next, ok := loop.Next(); ok && !next.After(clk.Now()) {
				continue // the last step left something due at end
			}
			return nil
		}
		if next.After(now) {
			if wait := next.Sub(now); opts.Pace > 0 && wait < opts.Pace && loop.Answering() {
				timer := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					timer.Stop()
					return ctx.Err()
				case <-timer.C:
				}
			}
			clk.SetTime(next)
		}
		if _, err := loop.Step(ctx); err != nil {
			return err
		}
	}
}
