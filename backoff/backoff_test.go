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

func FuzzDecide(f *testing.F) {
	f.Add(int64(time.Hour), int64(32*time.Hour), 0.0, 0.0, 3, true, int64(0), int64(0), int64(0), "uid")
	f.Add(int64(-1), int64(0), 0.5, 0.25, math.MaxInt, false, int64(time.Hour), int64(-time.Hour), int64(10), "")
	f.Fuzz(func(t *testing.T, min, max int64, jitter, short float64, n int, nSet bool, now, retryAfter, notAfter int64, key string) {
		p := Policy{Min: time.Duration(min), Max: time.Duration(max), Jitter: jitter, ShortLivedFraction: short}
		in := Input{LastFailure: t0, JitterKey: key}
		if nSet {
			in.FailedAttempts = &n
		}
		if retryAfter != 0 {
			in.RetryAfter = t0.Add(time.Duration(retryAfter))
		}
		if notAfter != 0 {
			in.NotAfter = t0.Add(time.Duration(notAfter))
		}
		at := t0.Add(time.Duration(now))
		d := p.Decide(in, at)
		require.True(t, d == p.Decide(in, at), "same input, different decisions")
		require.Equal(t, at.Before(d.NextAttempt), d.Wait, "Wait disagrees with now %v and next %v", at, d.NextAttempt)
		if !in.RetryAfter.IsZero() && at.Before(in.RetryAfter) {
			require.True(t, d.Wait, "retry allowed before the CA's Retry-After: %+v", d)
		}
		if p.Validate() != nil {
			return
		}
		lo, hi := p.bounds()
		if lo < 0 {
			return
		}
		// Never a retry before the backoff allows, never beyond the cap
		// unless the CA said so.
		require.GreaterOrEqual(t, d.Delay, lo, "delay below the minimum")
		require.LessOrEqual(t, d.Delay, hi, "delay above the maximum")
		require.False(t, d.NextAttempt.Before(in.LastFailure.Add(lo)), "next attempt %v before the minimum", d.NextAttempt)
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
