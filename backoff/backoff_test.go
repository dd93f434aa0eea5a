package backoff

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func ptr(n int) *int { return &n }

// TestSeedExamples covers every example of seed 003 and the edge
// cases. Each row gives the failure history, the time of the decision, and
// the expected wait and next attempt.
func TestSeedExamples(t *testing.T) {
	tests := map[string]struct {
		policy   Policy
		in       Input
		now      time.Time
		wantWait bool
		wantNext time.Time
		reason   string
	}{
		"no failure recorded means no wait": {
			in: Input{}, now: t0, reason: ReasonNoFailure,
		},
		"after the 1st failure the next attempt is 1h later": {
			in: Input{LastFailure: t0, FailedAttempts: ptr(1)}, now: t0,
			wantWait: true, wantNext: t0.Add(time.Hour), reason: ReasonBackingOff,
		},
		"after the 2nd failure the next attempt is 2h later": {
			in: Input{LastFailure: t0, FailedAttempts: ptr(2)}, now: t0,
			wantWait: true, wantNext: t0.Add(2 * time.Hour), reason: ReasonBackingOff,
		},
		"after the 3rd failure the next attempt is 4h later (seed 003 example)": {
			in: Input{LastFailure: t0, FailedAttempts: ptr(3)}, now: t0,
			wantWait: true, wantNext: t0.Add(4 * time.Hour), reason: ReasonBackingOff,
		},
		"after the 4th failure the next attempt is 8h later (manual retry failed)": {
			in: Input{LastFailure: t0, FailedAttempts: ptr(4)}, now: t0,
			wantWait: true, wantNext: t0.Add(8 * time.Hour), reason: ReasonBackingOff,
		},
		"after the 5th failure the next attempt is 16h later": {
			in: Input{LastFailure: t0, FailedAttempts: ptr(5)}, now: t0,
			wantWait: true, wantNext: t0.Add(16 * time.Hour), reason: ReasonBackingOff,
		},
		"after the 6th failure the next attempt is 32h later": {
			in: Input{LastFailure: t0, FailedAttempts: ptr(6)}, now: t0,
			wantWait: true, wantNext: t0.Add(32 * time.Hour), reason: ReasonBackingOff,
		},
		"after the 7th failure the delay stays at the 32h cap": {
			in: Input{LastFailure: t0, FailedAttempts: ptr(7)}, now: t0,
			wantWait: true, wantNext: t0.Add(32 * time.Hour), reason: ReasonBackingOff,
		},
		"after 100 failures the delay stays at the 32h cap": {
			in: Input{LastFailure: t0, FailedAttempts: ptr(100)}, now: t0,
			wantWait: true, wantNext: t0.Add(32 * time.Hour), reason: ReasonBackingOff,
		},
		"59 minutes after the 1st failure the trigger still waits": {
			in: Input{LastFailure: t0, FailedAttempts: ptr(1)}, now: t0.Add(59 * time.Minute),
			wantWait: true, wantNext: t0.Add(time.Hour), reason: ReasonBackingOff,
		},
		"61 minutes after the 1st failure a retry is allowed": {
			in: Input{LastFailure: t0, FailedAttempts: ptr(1)}, now: t0.Add(61 * time.Minute),
			wantNext: t0.Add(time.Hour), reason: ReasonRetryAllowed,
		},
		"exactly at the boundary a retry is allowed": {
			in: Input{LastFailure: t0, FailedAttempts: ptr(3)}, now: t0.Add(4 * time.Hour),
			wantNext: t0.Add(4 * time.Hour), reason: ReasonRetryAllowed,
		},
		"a failure time with the count unset (upgrade) waits the minimum": {
			in: Input{LastFailure: t0}, now: t0.Add(30 * time.Minute),
			wantWait: true, wantNext: t0.Add(time.Hour), reason: ReasonBackingOff,
		},
		"a zero count with a failure time waits the minimum": {
			in: Input{LastFailure: t0, FailedAttempts: ptr(0)}, now: t0,
			wantWait: true, wantNext: t0.Add(time.Hour), reason: ReasonBackingOff,
		},
		"an overflowing count waits the maximum": {
			in: Input{LastFailure: t0, FailedAttempts: ptr(math.MaxInt)}, now: t0,
			wantWait: true, wantNext: t0.Add(32 * time.Hour), reason: ReasonBackingOff,
		},
		"a negative count is out of range and waits the maximum": {
			in: Input{LastFailure: t0, FailedAttempts: ptr(-3)}, now: t0,
			wantWait: true, wantNext: t0.Add(32 * time.Hour), reason: ReasonBackingOff,
		},
		"custom bounds 5m..1h: the 3rd failure waits 20m": {
			policy: Policy{Min: 5 * time.Minute, Max: time.Hour},
			in:     Input{LastFailure: t0, FailedAttempts: ptr(3)}, now: t0,
			wantWait: true, wantNext: t0.Add(20 * time.Minute), reason: ReasonBackingOff,
		},
		"custom bounds 5m..1h: the 10th failure waits the 1h cap": {
			policy: Policy{Min: 5 * time.Minute, Max: time.Hour},
			in:     Input{LastFailure: t0, FailedAttempts: ptr(10)}, now: t0,
			wantWait: true, wantNext: t0.Add(time.Hour), reason: ReasonBackingOff,
		},
		"a minimum below zero turns backoff off": {
			policy: Policy{Min: -1},
			in:     Input{LastFailure: t0, FailedAttempts: ptr(5)}, now: t0,
			wantNext: t0, reason: ReasonDisabled,
		},
		"a Retry-After later than the backoff wins": {
			in:  Input{LastFailure: t0, FailedAttempts: ptr(1), RetryAfter: t0.Add(3 * time.Hour)},
			now: t0.Add(2 * time.Hour), wantWait: true, wantNext: t0.Add(3 * time.Hour), reason: ReasonRetryAfter,
		},
		"a Retry-After beyond the 32h cap is still honoured": {
			in:  Input{LastFailure: t0, FailedAttempts: ptr(9), RetryAfter: t0.Add(50 * time.Hour)},
			now: t0.Add(40 * time.Hour), wantWait: true, wantNext: t0.Add(50 * time.Hour), reason: ReasonRetryAfter,
		},
		"a Retry-After earlier than the backoff changes nothing": {
			in:  Input{LastFailure: t0, FailedAttempts: ptr(3), RetryAfter: t0.Add(time.Minute)},
			now: t0.Add(2 * time.Hour), wantWait: true, wantNext: t0.Add(4 * time.Hour), reason: ReasonBackingOff,
		},
		"a Retry-After with no failure recorded is still honoured": {
			in:  Input{RetryAfter: t0.Add(10 * time.Minute)},
			now: t0, wantWait: true, wantNext: t0.Add(10 * time.Minute), reason: ReasonRetryAfter,
		},
		"a Retry-After is honoured even when backoff is off": {
			policy: Policy{Min: -1},
			in:     Input{LastFailure: t0, FailedAttempts: ptr(1), RetryAfter: t0.Add(time.Hour)},
			now:    t0, wantWait: true, wantNext: t0.Add(time.Hour), reason: ReasonRetryAfter,
		},
		"a 6-day certificate with 2 days left is bounded to a quarter of them": {
			policy: Policy{ShortLivedFraction: 0.25},
			in:     Input{LastFailure: t0, FailedAttempts: ptr(6), NotAfter: t0.Add(48 * time.Hour)},
			now:    t0, wantWait: true, wantNext: t0.Add(12 * time.Hour), reason: ReasonBackingOff,
		},
		"the short-lived bound never goes below the minimum": {
			policy: Policy{ShortLivedFraction: 0.25},
			in:     Input{LastFailure: t0, FailedAttempts: ptr(6), NotAfter: t0.Add(2 * time.Hour)},
			now:    t0, wantWait: true, wantNext: t0.Add(time.Hour), reason: ReasonBackingOff,
		},
		"an already expired certificate retries at the minimum under the short-lived bound": {
			policy: Policy{ShortLivedFraction: 0.25},
			in:     Input{LastFailure: t0, FailedAttempts: ptr(6), NotAfter: t0.Add(-time.Hour)},
			now:    t0, wantWait: true, wantNext: t0.Add(time.Hour), reason: ReasonBackingOff,
		},
		"the short-lived bound does not lengthen a short delay": {
			policy: Policy{ShortLivedFraction: 0.25},
			in:     Input{LastFailure: t0, FailedAttempts: ptr(2), NotAfter: t0.Add(90 * 24 * time.Hour)},
			now:    t0, wantWait: true, wantNext: t0.Add(2 * time.Hour), reason: ReasonBackingOff,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := tc.policy.Decide(tc.in, tc.now)
			require.Equal(t, tc.wantWait, got.Wait, "Decide().Wait (%s)", got.Message)
			require.True(t, got.NextAttempt.Equal(tc.wantNext), "Decide().NextAttempt = %v, want %v (%s)", got.NextAttempt, tc.wantNext, got.Message)
			require.Equal(t, tc.reason, got.Reason, "Decide().Reason (%s)", got.Message)
			assert.NotEmpty(t, got.Message, "Decide() gave no message")
		})
	}
}

func TestDecisionMessageSaysWhyAndWhen(t *testing.T) {
	got := Policy{}.Decide(Input{LastFailure: t0, FailedAttempts: ptr(3)}, t0.Add(time.Hour))
	want := Decision{
		Wait:        true,
		NextAttempt: t0.Add(4 * time.Hour),
		Delay:       4 * time.Hour,
		Reason:      ReasonBackingOff,
		Message:     "issuance failed 3 times in a row, last at 2026-03-01T12:00:00Z; backoff 4h0m0s: next attempt at 2026-03-01T16:00:00Z",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Decide() mismatch (-want +got):\n%s", diff)
	}
}

func TestValidate(t *testing.T) {
	tests := map[string]struct {
		policy    Policy
		wantField string // empty: valid
	}{
		"the zero policy is valid":              {policy: Policy{}},
		"custom bounds are valid":               {policy: Policy{Min: time.Minute, Max: time.Hour}},
		"a max below the min is invalid":        {policy: Policy{Min: 2 * time.Hour, Max: time.Hour}, wantField: "max"},
		"a negative max is invalid":             {policy: Policy{Max: -time.Hour}, wantField: "max"},
		"jitter above one is invalid":           {policy: Policy{Jitter: 1.5}, wantField: "jitter"},
		"jitter NaN is invalid":                 {policy: Policy{Jitter: math.NaN()}, wantField: "jitter"},
		"a negative short-lived fraction fails": {policy: Policy{ShortLivedFraction: -0.1}, wantField: "shortLivedFraction"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := tc.policy.Validate()
			if tc.wantField == "" {
				require.NoError(t, err, "Validate()")
				return
			}
			require.ErrorIs(t, err, ErrInvalidPolicy, "Validate()")
			require.ErrorContains(t, err, tc.wantField+":", "Validate() names the field")
		})
	}
}

// TestProperties checks, over many counts and policies, that the delay never
// falls as the count grows, never goes below the minimum, and never above the
// maximum unless a Retry-After says so.
func TestProperties(t *testing.T) {
	policies := []Policy{
		{},
		{Min: time.Minute, Max: 24 * time.Hour},
		{Min: 10 * time.Second, Max: 10 * time.Second},
		{Jitter: 0.1},
		{Jitter: 1, Min: time.Minute, Max: 90 * time.Minute},
		{ShortLivedFraction: 0.25},
	}
	keys := []string{"", "uid-1", "uid-2", "6f1c2b0e-8d4a-4b7e-9a51-0c3f2d9e7a11"}
	for pi, p := range policies {
		min, max := p.bounds()
		for _, key := range keys {
			prev := time.Duration(0)
			for n := 1; n <= 200; n++ {
				in := Input{LastFailure: t0, FailedAttempts: ptr(n), JitterKey: key, NotAfter: t0.Add(6 * 24 * time.Hour)}
				d := p.Decide(in, t0)
				require.GreaterOrEqual(t, d.Delay, prev, "policy %d key %q: delay fell at count %d", pi, key, n)
				require.GreaterOrEqual(t, d.Delay, min, "policy %d key %q: delay at count %d below the minimum", pi, key, n)
				require.LessOrEqual(t, d.Delay, max, "policy %d key %q: delay at count %d above the maximum", pi, key, n)
				require.True(t, d.Wait, "policy %d key %q count %d: %+v", pi, key, n, d)
				require.True(t, d.NextAttempt.Equal(t0.Add(d.Delay)), "policy %d key %q count %d: next attempt is not last failure + delay: %+v", pi, key, n, d)
				prev = d.Delay
			}
		}
	}
}

func TestJitterIsDeterministicBoundedAndSpreads(t *testing.T) {
	p := Policy{Jitter: 0.5}
	seen := map[time.Duration]bool{}
	for i := 0; i < 200; i++ {
		in := Input{LastFailure: t0, FailedAttempts: ptr(2), JitterKey: fmt.Sprintf("uid-%d", i)}
		a, b := p.Decide(in, t0), p.Decide(in, t0)
		if diff := cmp.Diff(a, b); diff != "" {
			t.Fatalf("same input, different decisions:\n%s", diff)
		}
		// Never earlier than the unjittered delay, never beyond +50 %.
		require.GreaterOrEqual(t, a.Delay, 2*time.Hour, "jittered delay outside [2h, 3h)")
		require.Less(t, a.Delay, 3*time.Hour, "jittered delay outside [2h, 3h)")
		seen[a.Delay.Truncate(time.Minute)] = true
	}
	// 200 certificates that failed in the same second must not retry in a
	// handful of minutes: with a 60-minute spread they cover most of them.
	require.GreaterOrEqual(t, len(seen), 40, "200 keys spread over too few distinct minutes")
}

func TestZeroPolicyEqualsExplicitDefaults(t *testing.T) {
	explicit := Policy{Min: DefaultMin, Max: DefaultMax}
	for n := 1; n < 10; n++ {
		in := Input{LastFailure: t0, FailedAttempts: ptr(n)}
		if diff := cmp.Diff(explicit.Decide(in, t0), Policy{}.Decide(in, t0), cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("count %d: zero policy differs from defaults:\n%s", n, diff)
		}
	}
}

// TestRetryBeforeExpiry: a certificate that failed to renew while still
// valid is retried before it expires, whatever the backoff or the CA's
// Retry-After (RFC 8555 §6.6, RFC 9110 §10.2.3) say; one that had expired
// follows the schedule unchanged. Each row sits on a boundary of the
// margin (the safety margin before expiry while more is left at the
// failure, else half the time left) or of the floor (RetryFloor after the
// failure).
func TestRetryBeforeExpiry(t *testing.T) {
	const day = 24 * time.Hour
	tenYears := t0.Add(10 * 365 * day)
	tests := map[string]struct {
		policy   Policy
		in       Input
		now      time.Time
		wantWait bool
		wantNext time.Time
		reason   string
	}{
		"a ten-year Retry-After is brought forward to a day before expiry": {
			in:  Input{LastFailure: t0, FailedAttempts: ptr(1), RetryAfter: tenYears, NotAfter: t0.Add(30 * day)},
			now: t0, wantWait: true, wantNext: t0.Add(29 * day), reason: ReasonRetryBeforeExpiry,
		},
		"a 32h backoff with 30h left is brought forward to a day before expiry": {
			in:  Input{LastFailure: t0, FailedAttempts: ptr(6), NotAfter: t0.Add(30 * time.Hour)},
			now: t0, wantWait: true, wantNext: t0.Add(6 * time.Hour), reason: ReasonRetryBeforeExpiry,
		},
		"with 2 minutes more than the margin left the margin is left whole": {
			in:  Input{LastFailure: t0, FailedAttempts: ptr(6), NotAfter: t0.Add(day + 2*time.Minute)},
			now: t0, wantWait: true, wantNext: t0.Add(2 * time.Minute), reason: ReasonRetryBeforeExpiry,
		},
		"with a second more than the margin left the floor holds": {
			in:  Input{LastFailure: t0, FailedAttempts: ptr(6), NotAfter: t0.Add(day + time.Second)},
			now: t0, wantWait: true, wantNext: t0.Add(time.Minute), reason: ReasonRetryBeforeExpiry,
		},
		"with exactly the margin left the retry comes when half of it has passed": {
			in:  Input{LastFailure: t0, FailedAttempts: ptr(6), NotAfter: t0.Add(day)},
			now: t0, wantWait: true, wantNext: t0.Add(12 * time.Hour), reason: ReasonRetryBeforeExpiry,
		},
		"with 10h left the retry lands 5h before expiry": {
			in:  Input{LastFailure: t0, FailedAttempts: ptr(6), NotAfter: t0.Add(10 * time.Hour)},
			now: t0, wantWait: true, wantNext: t0.Add(5 * time.Hour), reason: ReasonRetryBeforeExpiry,
		},
		"with 20 minutes left the retry lands 10 minutes before expiry": {
			in:  Input{LastFailure: t0, FailedAttempts: ptr(1), NotAfter: t0.Add(20 * time.Minute)},
			now: t0, wantWait: true, wantNext: t0.Add(10 * time.Minute), reason: ReasonRetryBeforeExpiry,
		},
		"with exactly 2 minutes left the floor and the half meet": {
			in:  Input{LastFailure: t0, FailedAttempts: ptr(1), NotAfter: t0.Add(2 * time.Minute)},
			now: t0, wantWait: true, wantNext: t0.Add(time.Minute), reason: ReasonRetryBeforeExpiry,
		},
		"with 90 seconds left the floor holds the retry a minute after the failure": {
			in:  Input{LastFailure: t0, FailedAttempts: ptr(1), NotAfter: t0.Add(90 * time.Second)},
			now: t0, wantWait: true, wantNext: t0.Add(time.Minute), reason: ReasonRetryBeforeExpiry,
		},
		"with 30 seconds left the floor still holds, though the retry lands after expiry": {
			in:  Input{LastFailure: t0, FailedAttempts: ptr(1), NotAfter: t0.Add(30 * time.Second)},
			now: t0, wantWait: true, wantNext: t0.Add(time.Minute), reason: ReasonRetryBeforeExpiry,
		},
		"a 6-day certificate keeps the whole day": {
			in:  Input{LastFailure: t0, FailedAttempts: ptr(6), NotBefore: t0.Add(-4 * day), NotAfter: t0.Add(2 * day)},
			now: t0, wantWait: true, wantNext: t0.Add(day), reason: ReasonRetryBeforeExpiry,
		},
		"a 3-day certificate keeps a sixth of its lifetime, 12h": {
			in:  Input{LastFailure: t0, FailedAttempts: ptr(6), NotBefore: t0.Add(-2 * day), NotAfter: t0.Add(day)},
			now: t0, wantWait: true, wantNext: t0.Add(12 * time.Hour), reason: ReasonRetryBeforeExpiry,
		},
		"a 1-hour certificate keeps 10 minutes": {
			in:  Input{LastFailure: t0, FailedAttempts: ptr(1), NotBefore: t0.Add(-30 * time.Minute), NotAfter: t0.Add(30 * time.Minute)},
			now: t0, wantWait: true, wantNext: t0.Add(20 * time.Minute), reason: ReasonRetryBeforeExpiry,
		},
		"the policy's safety margin replaces the default": {
			policy: Policy{SafetyMargin: 3 * day},
			in:     Input{LastFailure: t0, FailedAttempts: ptr(6), NotAfter: t0.Add(4 * day)},
			now:    t0, wantWait: true, wantNext: t0.Add(day), reason: ReasonRetryBeforeExpiry,
		},
		"a backoff that ends before the deadline is unchanged": {
			in:  Input{LastFailure: t0, FailedAttempts: ptr(3), NotAfter: t0.Add(30 * day)},
			now: t0, wantWait: true, wantNext: t0.Add(4 * time.Hour), reason: ReasonBackingOff,
		},
		"a backoff that ends exactly at the deadline is unchanged": {
			in:  Input{LastFailure: t0, FailedAttempts: ptr(3), NotAfter: t0.Add(28 * time.Hour)},
			now: t0, wantWait: true, wantNext: t0.Add(4 * time.Hour), reason: ReasonBackingOff,
		},
		"a Retry-After that ends exactly at the deadline is honoured": {
			in:  Input{LastFailure: t0, FailedAttempts: ptr(1), RetryAfter: t0.Add(day), NotAfter: t0.Add(2 * day)},
			now: t0, wantWait: true, wantNext: t0.Add(day), reason: ReasonRetryAfter,
		},
		"a Retry-After a second past the deadline is brought forward": {
			in:  Input{LastFailure: t0, FailedAttempts: ptr(1), RetryAfter: t0.Add(day + time.Second), NotAfter: t0.Add(2 * day)},
			now: t0, wantWait: true, wantNext: t0.Add(day), reason: ReasonRetryBeforeExpiry,
		},
		"a second before the brought-forward time it still waits": {
			in:  Input{LastFailure: t0, FailedAttempts: ptr(6), RetryAfter: tenYears, NotAfter: t0.Add(30 * time.Hour)},
			now: t0.Add(6*time.Hour - time.Second), wantWait: true, wantNext: t0.Add(6 * time.Hour), reason: ReasonRetryBeforeExpiry,
		},
		"exactly at the brought-forward time a retry is allowed": {
			in:  Input{LastFailure: t0, FailedAttempts: ptr(6), RetryAfter: tenYears, NotAfter: t0.Add(30 * time.Hour)},
			now: t0.Add(6 * time.Hour), wantNext: t0.Add(6 * time.Hour), reason: ReasonRetryAllowed,
		},
		"a retry brought forward stays allowed once the certificate has expired": {
			in:  Input{LastFailure: t0, FailedAttempts: ptr(6), RetryAfter: tenYears, NotAfter: t0.Add(30 * time.Hour)},
			now: t0.Add(31 * time.Hour), wantNext: t0.Add(6 * time.Hour), reason: ReasonRetryAllowed,
		},
		"a failure exactly at expiry follows the normal schedule": {
			in:  Input{LastFailure: t0, FailedAttempts: ptr(1), RetryAfter: tenYears, NotAfter: t0},
			now: t0, wantWait: true, wantNext: tenYears, reason: ReasonRetryAfter,
		},
		"a failure after expiry follows the normal schedule": {
			in:  Input{LastFailure: t0, FailedAttempts: ptr(6), NotAfter: t0.Add(-time.Second)},
			now: t0, wantWait: true, wantNext: t0.Add(32 * time.Hour), reason: ReasonBackingOff,
		},
		"a failure a second before expiry is retried a minute later": {
			in:  Input{LastFailure: t0, FailedAttempts: ptr(6), NotAfter: t0.Add(time.Second)},
			now: t0, wantWait: true, wantNext: t0.Add(time.Minute), reason: ReasonRetryBeforeExpiry,
		},
		"a policy whose minimum is below the floor is never lengthened by it": {
			policy: Policy{Min: 10 * time.Second, Max: time.Hour},
			in:     Input{LastFailure: t0, FailedAttempts: ptr(1), NotAfter: t0.Add(30 * time.Second)},
			now:    t0, wantWait: true, wantNext: t0.Add(10 * time.Second), reason: ReasonBackingOff,
		},
		"with backoff off a ten-year Retry-After is brought forward too": {
			policy: Policy{Min: -1},
			in:     Input{LastFailure: t0, FailedAttempts: ptr(1), RetryAfter: tenYears, NotAfter: t0.Add(3 * day)},
			now:    t0, wantWait: true, wantNext: t0.Add(2 * day), reason: ReasonRetryBeforeExpiry,
		},
		"with no failure recorded a ten-year Retry-After is brought forward to a day before expiry": {
			in:  Input{RetryAfter: tenYears, NotAfter: t0.Add(3 * day)},
			now: t0, wantWait: true, wantNext: t0.Add(2 * day), reason: ReasonRetryBeforeExpiry,
		},
		"with no failure recorded and less than the margin left a Retry-After holds nothing back": {
			in:  Input{RetryAfter: tenYears, NotAfter: t0.Add(12 * time.Hour)},
			now: t0, wantNext: t0.Add(-12 * time.Hour), reason: ReasonRetryAllowed,
		},
		"with no failure recorded and the certificate expired the Retry-After holds": {
			in:  Input{RetryAfter: tenYears, NotAfter: t0.Add(-time.Minute)},
			now: t0, wantWait: true, wantNext: tenYears, reason: ReasonRetryAfter,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := tc.policy.Decide(tc.in, tc.now)
			require.Equal(t, tc.wantWait, got.Wait, "Decide().Wait (%s)", got.Message)
			require.True(t, got.NextAttempt.Equal(tc.wantNext), "Decide().NextAttempt = %v, want %v (%s)", got.NextAttempt, tc.wantNext, got.Message)
			require.Equal(t, tc.reason, got.Reason, "Decide().Reason (%s)", got.Message)
			if got.Reason == ReasonRetryBeforeExpiry || (got.Reason == ReasonRetryAllowed && !tc.in.NotAfter.IsZero()) {
				require.Contains(t, got.Message, "brought forward to "+stamp(got.NextAttempt)+" because the certificate expires at "+stamp(tc.in.NotAfter))
			} else {
				require.NotContains(t, got.Message, "brought forward")
			}
		})
	}
}

func TestRetryBeforeExpiryMessage(t *testing.T) {
	in := Input{LastFailure: t0, FailedAttempts: ptr(2), RetryAfter: t0.Add(10 * 365 * 24 * time.Hour), NotAfter: t0.Add(48 * time.Hour)}
	got := Policy{}.Decide(in, t0.Add(time.Hour))
	want := Decision{
		Wait:        true,
		NextAttempt: t0.Add(24 * time.Hour),
		Delay:       2 * time.Hour,
		Reason:      ReasonRetryBeforeExpiry,
		Message: "issuance failed 2 times in a row, last at 2026-03-01T12:00:00Z; backoff 2h0m0s, and the CA asked to wait until 2036-02-27T12:00:00Z; " +
			"the retry is brought forward to 2026-03-02T12:00:00Z because the certificate expires at 2026-03-03T12:00:00Z: next attempt at 2026-03-02T12:00:00Z",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Decide() mismatch (-want +got):\n%s", diff)
	}
}

// The retries of a certificate whose every attempt fails, from its
// renewal time (two thirds of its lifetime) to its expiry, with the
// default policy: the backoff's schedule until it would pass the safety
// margin (24h, a sixth of the lifetime under six days), then an attempt
// when the margin begins and more at half the time left each, a minute
// apart at the least. Before, the last attempt came an hour before expiry
// (10 minutes for a 1-hour certificate), and one that failed left nobody
// time to act.
func TestRetriesBeforeExpiryLeaveTheMargin(t *testing.T) {
	const day = 24 * time.Hour
	tests := map[string]struct {
		lifetime time.Duration
		// left is the time left before expiry at each attempt after the
		// first failure, from the first brought forward for expiry;
		// skip attempts before it follow the backoff's schedule.
		skip int
		left []time.Duration
	}{
		"a 90-day certificate": {
			lifetime: 90 * day,
			// 30 days left: 1h, 2h, 4h, 8h, 16h, then 20 waits of 32h,
			// down to 49h left.
			skip: 25,
			left: []time.Duration{day, 12 * time.Hour, 6 * time.Hour, 3 * time.Hour, 90 * time.Minute, 45 * time.Minute,
				22*time.Minute + 30*time.Second, 11*time.Minute + 15*time.Second, 5*time.Minute + 37500*time.Millisecond,
				2*time.Minute + 48750*time.Millisecond, time.Minute + 24375*time.Millisecond, 24375 * time.Millisecond},
		},
		"a 6-day certificate": {
			lifetime: 6 * day,
			// 48h left: 1h, 2h, 4h, 8h: 33h left, and 16h more would
			// leave 17h.
			skip: 4,
			left: []time.Duration{day, 12 * time.Hour, 6 * time.Hour, 3 * time.Hour, 90 * time.Minute, 45 * time.Minute,
				22*time.Minute + 30*time.Second, 11*time.Minute + 15*time.Second, 5*time.Minute + 37500*time.Millisecond,
				2*time.Minute + 48750*time.Millisecond, time.Minute + 24375*time.Millisecond, 24375 * time.Millisecond},
		},
		"a 1-hour certificate": {
			lifetime: time.Hour,
			// 20 minutes left: the first backoff (1h) passes the margin
			// (10 minutes) at once.
			left: []time.Duration{10 * time.Minute, 5 * time.Minute, 150 * time.Second, 75 * time.Second, 15 * time.Second},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			notBefore := t0
			notAfter := notBefore.Add(tc.lifetime)
			failure := notBefore.Add(tc.lifetime * 2 / 3)
			var left []time.Duration
			for n := 1; ; n++ {
				d := Policy{}.Decide(Input{LastFailure: failure, FailedAttempts: ptr(n), NotBefore: notBefore, NotAfter: notAfter}, failure)
				require.True(t, d.Wait, "attempt %d: %s", n, d.Message)
				if !d.NextAttempt.Before(notAfter) {
					break
				}
				if len(left) == 0 && d.Reason != ReasonRetryBeforeExpiry {
					tc.skip--
				} else {
					left = append(left, notAfter.Sub(d.NextAttempt))
				}
				failure = d.NextAttempt // it fails at once
			}
			require.Zero(t, tc.skip, "attempts on the backoff's schedule")
			require.Equal(t, tc.left, left)
		})
	}
}

// expiryBound is the latest retry FuzzDecide accepts for a failure at lf of
// a certificate valid from nb to na, written out from the documentation:
// the margin is the policy's, or 24h, or a sixth of a lifetime under six
// days; na − margin while more than the margin is left at the failure,
// else lf plus half the time left; not before lf + RetryFloor.
func expiryBound(p Policy, lf, nb, na time.Time) (time.Time, bool) {
	if na.IsZero() || !na.After(lf) {
		return time.Time{}, false
	}
	margin := 24 * time.Hour
	if life := na.Sub(nb); !nb.IsZero() && life > 0 && life < 6*24*time.Hour {
		margin = life / 6
	}
	if p.SafetyMargin > 0 {
		margin = p.SafetyMargin
	}
	at := na.Add(-margin)
	if left := na.Sub(lf); left <= margin {
		at = lf.Add(left / 2)
	}
	if floor := lf.Add(RetryFloor); at.Before(floor) {
		at = floor
	}
	return at, true
}

func FuzzDecide(f *testing.F) {
	f.Add(int64(time.Hour), int64(32*time.Hour), 0.0, 0.0, 3, true, int64(0), int64(0), int64(0), "uid", true, int64(0), int64(0))
	f.Add(int64(-1), int64(0), 0.5, 0.25, math.MaxInt, false, int64(time.Hour), int64(-time.Hour), int64(10), "", true, int64(0), int64(0))
	f.Add(int64(0), int64(0), 0.0, 0.0, 6, true, int64(time.Hour), int64(10*365*24*time.Hour), int64(10*time.Hour), "uid", true, int64(0), int64(0))
	f.Add(int64(0), int64(0), 0.1, 0.0, 2, true, int64(time.Minute), int64(10*365*24*time.Hour), int64(90*time.Second), "uid", true, int64(0), int64(0))
	f.Add(int64(0), int64(0), 0.0, 0.0, 0, false, int64(0), int64(10*365*24*time.Hour), int64(24*time.Hour), "", false, int64(0), int64(0))
	// A 1-hour certificate 40 minutes in, and a 6-day one with a policy
	// margin of its own.
	f.Add(int64(0), int64(0), 0.0, 0.0, 1, true, int64(0), int64(0), int64(20*time.Minute), "uid", true, int64(-40*time.Minute), int64(0))
	f.Add(int64(0), int64(0), 0.0, 0.0, 6, true, int64(0), int64(0), int64(2*24*time.Hour), "uid", true, int64(-4*24*time.Hour), int64(36*time.Hour))
	f.Fuzz(func(t *testing.T, min, max int64, jitter, short float64, n int, nSet bool, now, retryAfter, notAfter int64, key string, failed bool, notBefore, margin int64) {
		p := Policy{Min: time.Duration(min), Max: time.Duration(max), Jitter: jitter, ShortLivedFraction: short, SafetyMargin: time.Duration(margin)}
		in := Input{JitterKey: key}
		if failed {
			in.LastFailure = t0
		}
		if nSet {
			in.FailedAttempts = &n
		}
		if retryAfter != 0 {
			in.RetryAfter = t0.Add(time.Duration(retryAfter))
		}
		if notAfter != 0 {
			in.NotAfter = t0.Add(time.Duration(notAfter))
		}
		if notBefore != 0 {
			in.NotBefore = t0.Add(time.Duration(notBefore))
		}
		at := t0.Add(time.Duration(now))
		d := p.Decide(in, at)
		require.True(t, d == p.Decide(in, at), "same input, different decisions")
		require.Equal(t, at.Before(d.NextAttempt), d.Wait, "Wait disagrees with now %v and next %v", at, d.NextAttempt)
		require.NotEmpty(t, d.Reason, "a decision without a reason")
		require.NotEmpty(t, d.Message, "a decision without a message")
		if d.Wait {
			require.NotEqual(t, ReasonRetryAllowed, d.Reason, "waiting, yet the reason says a retry is allowed: %+v", d)
		}

		if !failed {
			// Only a Retry-After holds an issuance back, and not past
			// the margin before the expiry of a valid certificate.
			switch {
			case in.RetryAfter.IsZero() || !at.Before(in.RetryAfter):
				require.False(t, d.Wait, "waiting with no failure and no Retry-After ahead: %+v", d)
			case !in.NotAfter.IsZero() && at.Before(in.NotAfter):
				require.False(t, d.NextAttempt.After(in.NotAfter.Add(-p.ExpiryMargin(in))), "a Retry-After holds a valid certificate past the margin before its expiry: %+v", d)
			default:
				require.True(t, d.Wait && d.NextAttempt.Equal(in.RetryAfter), "the Retry-After of an expired certificate was not honoured: %+v", d)
			}
			return
		}

		bound, expires := expiryBound(p, in.LastFailure, in.NotBefore, in.NotAfter)
		if expires {
			// A failure while valid: never a retry after the bound, so a
			// certificate is retried before it expires whenever the floor
			// leaves room for it.
			require.False(t, d.NextAttempt.After(bound), "next attempt %v after the expiry bound %v", d.NextAttempt, bound)
			if in.LastFailure.Add(RetryFloor).Before(in.NotAfter) {
				require.True(t, d.NextAttempt.Before(in.NotAfter), "next attempt %v not before expiry %v", d.NextAttempt, in.NotAfter)
			}
		} else if !in.RetryAfter.IsZero() && at.Before(in.RetryAfter) {
			// Expired or expiry unknown: the CA's word holds.
			require.True(t, d.Wait, "retry allowed before the CA's Retry-After: %+v", d)
		}
		if p.Validate() != nil {
			return
		}
		lo, hi := p.bounds()
		if lo < 0 {
			return
		}
		// Never a retry before the backoff allows (or, brought forward for
		// expiry, before the floor), never beyond the cap unless the CA
		// said so.
		require.False(t, d.NextAttempt.Before(in.LastFailure.Add(lo)) && d.NextAttempt.Before(in.LastFailure.Add(RetryFloor)),
			"next attempt %v before both the minimum and the floor", d.NextAttempt)
		require.LessOrEqual(t, d.Delay, hi, "delay above the maximum")
		if !expires {
			require.GreaterOrEqual(t, d.Delay, lo, "delay below the minimum")
			require.False(t, d.NextAttempt.Before(in.LastFailure.Add(lo)), "next attempt %v before the minimum", d.NextAttempt)
		}
		// One more failure never brings the next attempt forward.
		if nSet && n >= 1 && n < math.MaxInt {
			more := n + 1
			in2 := in
			in2.FailedAttempts = &more
			d2 := p.Decide(in2, at)
			require.False(t, d2.NextAttempt.Before(d.NextAttempt), "after %d failures the next attempt %v is earlier than after %d (%v)", more, d2.NextAttempt, n, d.NextAttempt)
		}
	})
}

func BenchmarkDecide(b *testing.B) {
	p := Policy{Jitter: 0.1, ShortLivedFraction: 0.25}
	in := Input{LastFailure: t0, FailedAttempts: ptr(4), JitterKey: "6f1c2b0e-8d4a-4b7e-9a51-0c3f2d9e7a11", NotAfter: t0.Add(90 * 24 * time.Hour)}
	now := t0.Add(time.Hour)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = p.Decide(in, now)
	}
}

// The message counts failures as they are: never "0 times in a row".
func TestDecisionMessageCountsFailuresExactly(t *testing.T) {
	tests := map[string]struct {
		attempts *int
		want     string
	}{
		"no count recorded":                {nil, "issuance failed (attempt count not recorded), last at"},
		"a count of zero beside a failure": {ptr(0), "issuance failed once, last at"},
		"one failure":                      {ptr(1), "issuance failed once, last at"},
		"two failures":                     {ptr(2), "issuance failed 2 times in a row, last at"},
		"a negative count":                 {ptr(-3), "issuance failed an unknown number of times (the attempt count reads -3), last at"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := Policy{}.Decide(Input{LastFailure: t0, FailedAttempts: tc.attempts}, t0.Add(time.Minute))
			require.True(t, strings.HasPrefix(got.Message, tc.want), "message %q does not start with %q", got.Message, tc.want)
		})
	}
}
