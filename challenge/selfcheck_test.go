package challenge

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// selfChecking is a processing challenge presented presentedAgo before t0
// whose last self-check, checkedAgo before t0, failed with failure.
func selfChecking(presentedAgo, checkedAgo time.Duration, failure string) Status {
	return Status{Processing: true, SyncedAt: tp(t0.Add(-presentedAgo)), State: StatePending, Presented: true,
		PresentedAt: tp(t0.Add(-presentedAgo)), SelfCheckAt: tp(t0.Add(-checkedAgo)), Reason: failure}
}

const noTXT = "self-check failed: no TXT record at _acme-challenge.a.example"

// A self-check that never passes (split-horizon DNS, a NAT without
// hairpin) ends the challenge errored once Config.SelfCheckTimeout has
// passed since the presentation, or 5 minutes before the order expires,
// whichever comes first; waiting never goes past that end.
func TestSelfCheckIsBounded(t *testing.T) {
	c := newChallenge("a", "a.example", TypeDNS01, t0)
	cleanUp := cleanUpOf(c.Spec)
	timedOut := func(reason string) func(st Status) Result {
		return func(st Status) Result {
			next := st
			next.Processing, next.Presented, next.State, next.Reason = false, false, StateErrored, reason
			return Result{Actions: []Action{cleanUp, UpdateStatus{next}}, Reason: ReasonSelfCheckTimedOut, Message: reason}
		}
	}
	waits := func(d time.Duration, reason, message string) func(Status) Result {
		return func(Status) Result { return Result{RequeueAt: t0.Add(d), Reason: reason, Message: message} }
	}
	tests := map[string]struct {
		status  Status
		expires *time.Time
		cfg     Config
		want    func(st Status) Result
	}{
		"a self-check failing 10 minutes after the presentation is repeated 10 s later, as before": {
			status: selfChecking(10*time.Minute, 0, noTXT),
			want: waits(10*time.Second, ReasonSelfChecking,
				"the self-check failed; checking again at 2026-03-01T12:00:10.000Z; self-checking ends at 2026-03-01T12:20:00Z"),
		},
		"a second before the 30-minute bound, the wait ends at the bound, not at the next check": {
			status: selfChecking(30*time.Minute-time.Second, 0, noTXT),
			want: waits(time.Second, ReasonSelfChecking,
				"the self-check failed; self-checking ends at 2026-03-01T12:00:01Z, before the next check is due"),
		},
		"at the bound, the challenge ends errored naming the self-check and its last error, cleans up and gives its slot back": {
			status: selfChecking(30*time.Minute, 5*time.Second, noTXT),
			want:   timedOut("the self-check did not pass within 30m0s: no TXT record at _acme-challenge.a.example"),
		},
		"the bound is Config.SelfCheckTimeout": {
			status: selfChecking(2*time.Minute, time.Second, "connection refused"),
			cfg:    Config{SelfCheckTimeout: 2 * time.Minute},
			want:   timedOut("the self-check did not pass within 2m0s: connection refused"),
		},
		"5 minutes before the order expires, self-checking ends, before the timeout": {
			status:  selfChecking(time.Minute, time.Second, noTXT),
			expires: tp(t0.Add(5 * time.Minute)),
			want:    timedOut("the self-check did not pass by 2026-03-01T12:00:00Z, 5m0s before the order expires: no TXT record at _acme-challenge.a.example"),
		},
		"3 s before that, the wait ends then": {
			status:  selfChecking(time.Minute, 0, noTXT),
			expires: tp(t0.Add(5*time.Minute + 3*time.Second)),
			want: waits(3*time.Second, ReasonSelfChecking,
				"the self-check failed; self-checking ends at 2026-03-01T12:00:03Z, before the next check is due"),
		},
		"an order expiring after the timeout leaves the timeout in charge": {
			status:  selfChecking(30*time.Minute, time.Second, noTXT),
			expires: tp(t0.Add(time.Hour)),
			want:    timedOut("the self-check did not pass within 30m0s: no TXT record at _acme-challenge.a.example"),
		},
		"a challenge that was never self-checked by the bound (the host was down) ends too, saying so": {
			status: func() Status { st := selfChecking(31*time.Minute, 0, ""); st.SelfCheckAt = nil; return st }(),
			want:   timedOut("the self-check did not pass within 30m0s: no self-check ran"),
		},
		"a last self-check that recorded no error is named by its time": {
			status: selfChecking(30*time.Minute, 4*time.Second, ""),
			want:   timedOut("the self-check did not pass within 30m0s; the last ran at 2026-03-01T11:59:56Z"),
		},
		"a presentation without a recorded time gets one now, so self-checking is bounded from now": {
			status: func() Status { st := selfChecking(time.Hour, 5*time.Second, noTXT); st.PresentedAt = nil; return st }(),
			want: func(st Status) Result {
				next := st
				next.PresentedAt = tp(t0)
				return Result{Actions: []Action{UpdateStatus{next}}, Reason: ReasonSelfChecking,
					Message: "presented without a recorded time: recording it, to bound self-checking from now"}
			},
		},
		"a transient error while self-checking waits no later than the bound": {
			status: func() Status {
				st := selfChecking(30*time.Minute-2*time.Second, time.Second, noTXT)
				return withError(st, 1, 0)
			}(),
			want: waits(2*time.Second, ReasonRetryingAfterError,
				"a transient error (503 Service Unavailable), attempt 1 of 10; retrying at 2026-03-01T12:00:05Z; self-checking ends first, at 2026-03-01T12:00:02Z"),
		},
		"and at the bound it ends errored, though its retry is not yet due": {
			status: withError(selfChecking(30*time.Minute, time.Second, noTXT), 1, -time.Second),
			want:   timedOut("the self-check did not pass within 30m0s: no TXT record at _acme-challenge.a.example"),
		},
		"a self-check that passed is accepted, however long it took (RFC 8555 §7.5.1)": {
			status: func() Status { st := selfChecking(time.Hour, time.Second, ""); st.SelfCheckPassed = true; return st }(),
			want: func(Status) Result {
				return Result{Actions: []Action{Accept{URL: c.Spec.URL}}, Reason: ReasonAccepting, Message: "asking the server to validate (RFC 8555 §7.5.1)"}
			},
		},
		"an accepted challenge is the server's to validate: no self-check bound (§7.5.1)": {
			status: func() Status {
				st := selfChecking(time.Hour, time.Hour, "")
				st.Accepted, st.State, st.SyncedAt = true, StateProcessing, tp(t0.Add(-time.Second))
				return st
			}(),
			want: waits(4*time.Second, ReasonWaitingForAuthorization, "the server is validating; looking again at 2026-03-01T12:00:04.000Z"),
		},
		"a fixed wait replaces the self-check and its bound": {
			status: selfChecking(31*time.Minute, 0, ""),
			cfg:    Config{FixedWait: 40 * time.Minute},
			want: waits(9*time.Minute, ReasonWaitingBeforeAccept,
				"waiting a fixed time instead of self-checking; accepting at 2026-03-01T12:09:00Z"),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := newChallenge("a", "a.example", TypeDNS01, t0)
			c.Spec.Expires = tc.expires
			c.Status = tc.status
			got := Decide(c, t0, tc.cfg)
			if diff := cmp.Diff(tc.want(tc.status), got); diff != "" {
				t.Fatalf("Decide() mismatch (-want +got):\n%s", diff)
			}
			checkLiveness(t, c, got, t0, tc.cfg)
		})
	}
}

// A challenge whose self-check timed out gives its scheduler slot back:
// with one slot, the next challenge starts once its status is written,
// and the timed-out one is never started again.
func TestSelfCheckTimeoutReleasesTheSlot(t *testing.T) {
	stuck := newChallenge("stuck", "a.example", TypeDNS01, t0.Add(-time.Hour))
	stuck.Status = selfChecking(30*time.Minute, time.Second, noTXT)
	next := newChallenge("next", "a.example", TypeDNS01, t0)
	all := []*Challenge{stuck, next}
	cfg := SchedulerConfig{MaxInFlight: 1}
	require.Empty(t, Schedule(all, t0.Add(-time.Second), cfg), "before the bound the slot is held")

	res := Decide(stuck, t0, Config{})
	require.Equal(t, ReasonSelfCheckTimedOut, res.Reason, res.Message)
	require.IsType(t, CleanUp{}, res.Actions[0], "the presentation is cleaned up first")
	update, ok := res.Actions[len(res.Actions)-1].(UpdateStatus)
	require.True(t, ok, "the last action writes the status: %v", res.Actions)
	stuck.Status = update.Status
	assert.Equal(t, StateErrored, stuck.Status.State, "a final state, so the order fails")
	assert.False(t, stuck.Status.Processing, "the slot is given back")
	assert.False(t, stuck.Status.Presented, "the presentation is cleaned up")

	assert.Equal(t, []string{"next"}, names(Schedule(all, t0, cfg)), "the freed slot goes to the next challenge")
	after := Decide(stuck, t0.Add(time.Hour), Config{})
	assert.Empty(t, after.Actions, "a timed-out challenge does nothing more: %s", after.Message)
}
