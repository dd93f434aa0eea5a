package backoff

import (
	"errors"
	"fmt"
	"math/bits"
	"time"

	"github.com/certlife/certlife/internal/stablehash"
	"github.com/certlife/certlife/renewal"
)

// Defaults of the policy: an hour after the first failure, doubling to at
// most 32 hours.
const (
	// DefaultMin is the delay after the first failed issuance.
	DefaultMin = time.Hour
	// DefaultMax caps the delay: reached on the 6th consecutive failure.
	DefaultMax = 32 * time.Hour
)

// Bounds that keep a retry ahead of the certificate's expiry. They apply to
// every policy and to the CA's Retry-After alike; see [Policy.Decide] and
// [Policy.ExpiryMargin].
const (
	// RetryFloor is the least time between a failure and a retry brought
	// forward for expiry, so that a certificate about to expire is retried
	// every minute at most, never in a loop.
	RetryFloor = time.Minute
)

// Reasons a [Decision] carries. They are stable strings a host may put in a
// condition or a metric label. Each constant is named after its value,
// without the "Backoff" a value begins with where it would stutter:
// backoff.ReasonDisabled is "BackoffDisabled".
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
	// ReasonRetryBeforeExpiry: the backoff or the CA's Retry-After would
	// have waited past the certificate's expiry, so the retry was brought
	// forward to land before it; the wait until then has not passed.
	ReasonRetryBeforeExpiry = "RetryBeforeExpiry"
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

	// SafetyMargin is the time before a valid certificate's expiry that
	// retries after a failure leave, while there is more than that left
	// (see Decide): room for more attempts, and for a person told of the
	// failure to act. Zero means the renewal package's default fail-safe
	// margin for the certificate's lifetime (renewal.DefaultSafetyMargin:
	// 24h, or a sixth of a lifetime shorter than six days). A host that
	// sets renewal.Options.SafetyMargin sets the same here; package
	// certificate does it for its hosts. Negative is invalid.
	SafetyMargin time.Duration `json:"safetyMargin,omitempty"`

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

	// NotAfter is the current certificate's expiry. A failure recorded
	// while the certificate was still valid (LastFailure before NotAfter)
	// is retried before it expires, whatever the backoff or the CA's
	// Retry-After say (see Decide); it also feeds
	// Policy.ShortLivedFraction. Zero means unknown: no bound.
	NotAfter time.Time

	// NotBefore is the current certificate's start of validity: with
	// NotAfter, its lifetime, which sets the default
	// Policy.SafetyMargin. Zero means unknown: the margin of a long-lived
	// certificate (24h).
	NotBefore time.Time

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
	// bounding, before Retry-After). When the retry is brought forward
	// for expiry, Delay is shortened to match when that cuts the backoff.
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
	case p.SafetyMargin < 0:
		return fmt.Errorf("%w: safetyMargin: %v is negative", ErrInvalidPolicy, p.SafetyMargin)
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
//
// The next attempt is the later of LastFailure plus the backoff delay and
// the CA's Retry-After, with one exception that keeps a valid certificate
// from expiring behind a long wait: when the last failure happened before
// in.NotAfter, the next attempt is never later than the expiry deadline.
// While more than the safety margin (ExpiryMargin) is left at the failure,
// the deadline is in.NotAfter minus the margin: the retries leave the
// margin whole, as renewal's fail-safe does, so that when that attempt
// fails too there is still a day (by default) for more attempts and for a
// person to act. A failure within the margin is retried once half the
// time it left has passed: a 90-day certificate that fails 24h before it
// expires is retried 12h, 6h, 3h … before. The deadline is never closer
// than RetryFloor to the failure, so that an attempt that fails just
// before expiry is not retried in a loop. The Reason is then
// ReasonRetryBeforeExpiry (while waiting), and the message says the retry
// was brought forward and when the certificate expires. With no failure
// recorded, a Retry-After is brought forward to in.NotAfter minus the
// margin while now is before in.NotAfter. A certificate that had already
// expired at the failure follows the schedule above unchanged.
func (p Policy) Decide(in Input, now time.Time) Decision {
	if in.LastFailure.IsZero() {
		return p.decideRetryAfterOnly(in, now)
	}
	min, max := p.bounds()
	disabled := min < 0
	var delay time.Duration
	var why string
	if disabled {
		why = "backoff is turned off by the policy"
	} else {
		delay = p.jitteredDelay(in, max)
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
		why = fmt.Sprintf("issuance failed %s, last at %s; backoff %v", describeAttempts(in.FailedAttempts), stamp(in.LastFailure), delay)
		if bounded {
			why += fmt.Sprintf(" (bounded by %g of the certificate's remaining validity)", p.ShortLivedFraction)
		}
	}

	next := in.LastFailure.Add(delay)
	caWaits := !in.RetryAfter.IsZero() && in.RetryAfter.After(next)
	if caWaits {
		next = in.RetryAfter
		why += fmt.Sprintf(", and the CA asked to wait until %s", stamp(in.RetryAfter))
	}
	deadline, expires := expiryDeadline(in.LastFailure, in.NotAfter, p.ExpiryMargin(in))
	clamped := expires && next.After(deadline)
	if clamped {
		next = deadline
		if cut := deadline.Sub(in.LastFailure); cut < delay {
			delay = cut
		}
		why += broughtForward(deadline, in.NotAfter)
	}

	d := Decision{NextAttempt: next, Delay: delay}
	switch {
	case disabled && !caWaits:
		d.Reason, d.Message = ReasonDisabled, why
		if now.Before(next) {
			// A failure recorded ahead of now (another host's clock):
			// with backoff off a retry is allowed now all the same.
			d.NextAttempt = now
		}
	case !now.Before(next):
		d.Reason = ReasonRetryAllowed
		d.Message = fmt.Sprintf("%s: retry allowed since %s", why, stamp(next))
	case clamped:
		d.Wait, d.Reason = true, ReasonRetryBeforeExpiry
		d.Message = fmt.Sprintf("%s: next attempt at %s", why, stamp(next))
	case caWaits:
		d.Wait, d.Reason, d.Message = true, ReasonRetryAfter, why
	default:
		d.Wait, d.Reason = true, ReasonBackingOff
		d.Message = fmt.Sprintf("%s: next attempt at %s", why, stamp(next))
	}
	return d
}

// jitteredDelay is Delay for in's count, lengthened by the policy's jitter
// (at most max).
func (p Policy) jitteredDelay(in Input, max time.Duration) time.Duration {
	delay := p.Delay(in.FailedAttempts)
	if p.Jitter > 0 && p.Jitter <= 1 && in.JitterKey != "" && delay < max {
		spread := time.Duration(stablehash.Scale(int64(float64(delay)*p.Jitter), "backoff", in.JitterKey))
		if delay+spread > max {
			delay = max
		} else {
			delay += spread
		}
	}
	return delay
}

// decideRetryAfterOnly decides with no failure recorded: only a CA's
// Retry-After can hold an issuance back, and not past the certificate's
// expiry while it is valid.
func (p Policy) decideRetryAfterOnly(in Input, now time.Time) Decision {
	if in.RetryAfter.IsZero() || !now.Before(in.RetryAfter) {
		return Decision{Reason: ReasonNoFailure, Message: "no failed issuance is recorded"}
	}
	why := fmt.Sprintf("the CA asked to wait until %s", stamp(in.RetryAfter))
	if !in.NotAfter.IsZero() && now.Before(in.NotAfter) {
		if deadline := in.NotAfter.Add(-p.ExpiryMargin(in)); in.RetryAfter.After(deadline) {
			why += broughtForward(deadline, in.NotAfter)
			if !now.Before(deadline) {
				return Decision{NextAttempt: deadline, Reason: ReasonRetryAllowed, Message: fmt.Sprintf("%s: retry allowed since %s", why, stamp(deadline))}
			}
			return Decision{Wait: true, NextAttempt: deadline, Reason: ReasonRetryBeforeExpiry, Message: fmt.Sprintf("%s: next attempt at %s", why, stamp(deadline))}
		}
	}
	return Decision{Wait: true, NextAttempt: in.RetryAfter, Reason: ReasonRetryAfter, Message: why}
}

// ExpiryMargin is the safety margin of in's certificate: p.SafetyMargin,
// or when it is zero (or invalid) renewal.DefaultSafetyMargin of its
// lifetime, in.NotAfter − in.NotBefore (24h when either is unknown).
func (p Policy) ExpiryMargin(in Input) time.Duration {
	if p.SafetyMargin > 0 {
		return p.SafetyMargin
	}
	var lifetime time.Duration
	if !in.NotBefore.IsZero() && !in.NotAfter.IsZero() {
		lifetime = in.NotAfter.Sub(in.NotBefore)
	}
	return renewal.DefaultSafetyMargin(lifetime)
}

// expiryDeadline is the latest retry after a failure at lastFailure of a
// certificate that expires at notAfter: notAfter minus margin while more
// than the margin is left at the failure, else the failure plus half the
// time left; never less than RetryFloor after the failure. ok is false
// when there is no such bound: expiry unknown, or the certificate had
// expired at the failure.
func expiryDeadline(lastFailure, notAfter time.Time, margin time.Duration) (deadline time.Time, ok bool) {
	if notAfter.IsZero() || !lastFailure.Before(notAfter) {
		return time.Time{}, false
	}
	left := notAfter.Sub(lastFailure) // > 0; saturates for far-apart times
	if left > margin {
		deadline = notAfter.Add(-margin)
	} else {
		deadline = lastFailure.Add(left / 2)
	}
	if floor := lastFailure.Add(RetryFloor); deadline.Before(floor) {
		deadline = floor
	}
	return deadline, true
}

func broughtForward(to, notAfter time.Time) string {
	return fmt.Sprintf("; the retry is brought forward to %s because the certificate expires at %s", stamp(to), stamp(notAfter))
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
