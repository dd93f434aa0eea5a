package backoff

import (
	"errors"
	"fmt"
	"math/bits"
	"time"

	"github.com/certlife/certlife/internal/stablehash"
)

// Defaults of the policy: an hour after the first failure, doubling to at
// most 32 hours.
const (
	// DefaultMin is the delay after the first failed issuance.
	DefaultMin = time.Hour
	// DefaultMax caps the delay: reached on the 6th consecutive failure.
	DefaultMax = 32 * time.Hour
)

// Reasons a [Decision] carries. They are stable strings a host may put in a
// condition or a metric label.
const (
	// ReasonNoFailure: no failure is recorded, nothing to wait for.
	ReasonNoFailure = "NoFailure"
	// ReasonBackingOff: the backoff delay after the last failure has not passed.
	ReasonBackingOff = "BackingOff"
	// ReasonRetryAfter: the CA asked to wait longer than the backoff delay.
	ReasonRetryAfter = "RetryAfter"
	// ReasonRetryAllowed: a failure is recorded and its delay has passed.
	ReasonRetryAllowed = "RetryAllowed"
	// ReasonDisabled: the policy turns backoff off (negative Min).
	ReasonDisabled = "BackoffDisabled"
)

// ErrInvalidPolicy is wrapped by every error [Policy.Validate] returns.
var ErrInvalidPolicy = errors.New("backoff: invalid policy")

// Policy configures the backoff. The zero value is the default policy:
// 1h·2^(n−1) capped at 32h, no jitter, no short-lived bounding.
type Policy struct {
	// Min is the delay after the first failure. Zero means DefaultMin (1h).
	// A negative Min turns backoff off: a retry is always allowed (a
	// Retry-After from the CA is still honoured).
	Min time.Duration `json:"min,omitempty"`

	// Max caps the delay. Zero means DefaultMax (32h). It must not be below
	// the effective Min.
	Max time.Duration `json:"max,omitempty"`

	// Jitter, in [0, 1], lengthens each delay by up to this fraction of
	// itself, derived from Input.JitterKey (still capped at Max). Zero means
	// no jitter. The spread is deterministic: the same key always gives the
	// same delay.
	Jitter float64 `json:"jitter,omitempty"`

	// ShortLivedFraction, in [0, 1], bounds the delay by this fraction of the
	// current certificate's validity remaining at the failure
	// (Input.NotAfter − Input.LastFailure), never below Min. Zero turns the
	// bound off. 0.25 is a reasonable value: a certificate never waits more
	// than a quarter of what it has left.
	ShortLivedFraction float64 `json:"shortLivedFraction,omitempty"`
}

// Input is what the decision reads from a Certificate's status.
type Input struct {
	// LastFailure is the time of the last failed issuance. Zero means no
	// failure is recorded, and so no backoff.
	LastFailure time.Time

	// FailedAttempts is the count of consecutive failed issuances, as the
	// status stores it. Nil means unset: with LastFailure set, the minimum
	// delay applies (the upgrade fallback). Zero is treated as one. A
	// negative count is corrupt and waits the maximum.
	FailedAttempts *int

	// RetryAfter is the earliest time the CA allows another attempt (from a
	// rate-limit answer's Retry-After). Zero means none.
	RetryAfter time.Time

	// NotAfter is the current certificate's expiry, for
	// Policy.ShortLivedFraction. Zero means unknown: no bound.
	NotAfter time.Time

	// JitterKey is a stable key for Policy.Jitter, such as the
	// certificate's UID. Empty means no jitter.
	JitterKey string
}

// Decision says whether to wait and until when.
type Decision struct {
	// Wait is true when now is before NextAttempt.
	Wait bool
	// NextAttempt is the earliest time a new issuance may start. Zero when
	// no failure is recorded.
	NextAttempt time.Time
	// Delay is the backoff delay from LastFailure (after jitter and
	// bounding, before Retry-After).
	Delay time.Duration
	// Reason is one of the Reason constants.
	Reason string
	// Message says why and when, for a person.
	Message string
}

// Validate reports a policy that cannot be applied, naming the field.
func (p Policy) Validate() error {
	min, max := p.Min, p.Max
	if min == 0 {
		min = DefaultMin
	}
	if max == 0 {
		max = DefaultMax
	}
	switch {
	case p.Max < 0:
		return fmt.Errorf("%w: max: %v is negative", ErrInvalidPolicy, p.Max)
	case min > 0 && max < min:
		return fmt.Errorf("%w: max: %v is below min %v", ErrInvalidPolicy, max, min)
	case !(p.Jitter >= 0 && p.Jitter <= 1): // also rejects NaN
		return fmt.Errorf("%w: jitter: %v is outside [0, 1]", ErrInvalidPolicy, p.Jitter)
	case !(p.ShortLivedFraction >= 0 && p.ShortLivedFraction <= 1):
		return fmt.Errorf("%w: shortLivedFraction: %v is outside [0, 1]", ErrInvalidPolicy, p.ShortLivedFraction)
	}
	return nil
}

// bounds returns the effective Min and Max. A negative min means off.
func (p Policy) bounds() (min, max time.Duration) {
	min, max = p.Min, p.Max
	if min == 0 {
		min = DefaultMin
	}
	if max <= 0 {
		max = DefaultMax
	}
	if min > 0 && max < min {
		// An invalid policy still gives a safe answer: never less than Min.
		max = min
	}
	return min, max
}

// Delay returns the unjittered, unbounded delay after the given count of
// consecutive failures: Min·2^(n−1), at most Max. A nil or zero count gives
// Min; a negative count gives Max. It returns 0 when backoff is off.
func (p Policy) Delay(failedAttempts *int) time.Duration {
	min, max := p.bounds()
	if min < 0 {
		return 0
	}
	if failedAttempts == nil || *failedAttempts <= 1 {
		if failedAttempts != nil && *failedAttempts < 0 {
			return max
		}
		return min
	}
	shift := *failedAttempts - 1
	// Min·2^shift overflows or passes Max: Max.
	if shift >= 63 || bits.Len64(uint64(min))+shift > 62 {
		return max
	}
	d := min << uint(shift)
	if d > max || d <= 0 {
		return max
	}
	return d
}

// Decide says whether a new issuance must wait, at now, after the failures
// in, and until when. It reads nothing but its arguments.
func (p Policy) Decide(in Input, now time.Time) Decision {
	if in.LastFailure.IsZero() {
		if !in.RetryAfter.IsZero() && now.Before(in.RetryAfter) {
			return Decision{
				Wait: true, NextAttempt: in.RetryAfter, Reason: ReasonRetryAfter,
				Message: fmt.Sprintf("the CA asked to wait until %s", stamp(in.RetryAfter)),
			}
		}
		return Decision{Reason: ReasonNoFailure, Message: "no failed issuance is recorded"}
	}
	min, max := p.bounds()
	attempts := describeAttempts(in.FailedAttempts)
	if min < 0 {
		d := Decision{Reason: ReasonDisabled, Message: "backoff is turned off by the policy", NextAttempt: in.LastFailure}
		if !in.RetryAfter.IsZero() && now.Before(in.RetryAfter) {
			d.Wait, d.NextAttempt, d.Reason = true, in.RetryAfter, ReasonRetryAfter
			d.Message = fmt.Sprintf("backoff is off, but the CA asked to wait until %s", stamp(in.RetryAfter))
		}
		return d
	}

	delay := p.Delay(in.FailedAttempts)
	if p.Jitter > 0 && p.Jitter <= 1 && in.JitterKey != "" && delay < max {
		spread := time.Duration(stablehash.Scale(int64(float64(delay)*p.Jitter), "backoff", in.JitterKey))
		if delay+spread > max {
			delay = max
		} else {
			delay += spread
		}
	}
	bounded := false
	if p.ShortLivedFraction > 0 && p.ShortLivedFraction <= 1 && !in.NotAfter.IsZero() {
		remaining := in.NotAfter.Sub(in.LastFailure)
		bound := time.Duration(float64(remaining) * p.ShortLivedFraction)
		if bound < min {
			bound = min
		}
		if delay > bound {
			delay, bounded = bound, true
		}
	}

	next := in.LastFailure.Add(delay)
	d := Decision{NextAttempt: next, Delay: delay}
	why := fmt.Sprintf("issuance failed %s, last at %s; backoff %v", attempts, stamp(in.LastFailure), delay)
	if bounded {
		why += fmt.Sprintf(" (bounded by %g of the certificate's remaining validity)", p.ShortLivedFraction)
	}
	if !in.RetryAfter.IsZero() && in.RetryAfter.After(next) {
		d.NextAttempt = in.RetryAfter
		if now.Before(in.RetryAfter) {
			d.Wait, d.Reason = true, ReasonRetryAfter
			d.Message = fmt.Sprintf("%s, and the CA asked to wait until %s", why, stamp(in.RetryAfter))
			return d
		}
	}
	if now.Before(d.NextAttempt) {
		d.Wait, d.Reason = true, ReasonBackingOff
		d.Message = fmt.Sprintf("%s: next attempt at %s", why, stamp(d.NextAttempt))
		return d
	}
	d.Reason = ReasonRetryAllowed
	d.Message = fmt.Sprintf("%s: retry allowed since %s", why, stamp(d.NextAttempt))
	return d
}

func describeAttempts(n *int) string {
	switch {
	case n == nil:
		return "(attempt count not recorded)"
	case *n < 0:
		// Delay gives the longest backoff for a count that cannot be true.
		return fmt.Sprintf("an unknown number of times (the attempt count reads %d)", *n)
	case *n <= 1:
		// A failure is recorded, so it failed at least once, whatever the
		// count says (0 means the count was not kept up).
		return "once"
	default:
		return fmt.Sprintf("%d times in a row", *n)
	}
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
