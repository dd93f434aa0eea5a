package challenge

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var ignoreMessage = cmpopts.IgnoreFields(Result{}, "Message")

// presentedAndChecked is a processing challenge, presented and
// self-checked, ready to accept.
func presentedAndChecked() Status {
	return Status{Processing: true, SyncedAt: tp(t0.Add(-time.Minute)), State: StatePending, Presented: true, PresentedAt: tp(t0.Add(-time.Minute)),
		SelfCheckAt: tp(t0.Add(-30 * time.Second)), SelfCheckPassed: true}
}

func withError(st Status, attempts int, at time.Duration) Status {
	st.LastError, st.Transient, st.FailedAttempts, st.LastErrorTime = "503 Service Unavailable", true, attempts, tp(t0.Add(at))
	return st
}

// Deadlines come from what the status records, so they arrive; a long
// wait gives the scheduler slot back.
func TestChallengeRetriesArrive(t *testing.T) {
	c := newChallenge("a", "a.example", TypeHTTP01, t0)
	cleanUp := CleanUp{Type: c.Spec.Type, DNSName: c.Spec.DNSName, Token: c.Spec.Token, Key: c.Spec.Key, Solver: c.Spec.Solver}
	tests := map[string]struct {
		status Status
		noURL  bool
		cfg    Config
		now    time.Duration
		want   func(st Status) Result
		why    string
	}{
		"a failed accept without Retry-After is retried 5 s after it failed, not 5 s after each look": {
			status: withError(presentedAndChecked(), 1, -2*time.Second),
			want: func(Status) Result {
				return Result{RequeueAt: t0.Add(3 * time.Second), Reason: ReasonRetryingAfterError}
			},
			why: "attempt 1 of 10",
		},
		"at that deadline, nothing changed, the challenge is read before it is accepted again (RFC 8555 §7.5)": {
			status: withError(presentedAndChecked(), 1, -2*time.Second), now: 3 * time.Second,
			want: func(Status) Result {
				return Result{Actions: []Action{Sync{URL: c.Spec.URL, AuthorizationURL: c.Spec.AuthorizationURL}}, Reason: ReasonSyncing}
			},
			why: "reading the challenge before accepting again",
		},
		"read still pending after the failed accept, it is accepted again (§7.5.1)": {
			status: func() Status {
				st := presentedAndChecked()
				st.FailedAttempts, st.SyncedAt = 1, tp(t0)
				return st
			}(),
			want: func(Status) Result {
				return Result{Actions: []Action{Accept{URL: c.Spec.URL}}, Reason: ReasonAccepting}
			},
			why: "asking the server to validate",
		},
		"read processing after the failed accept (it took effect), it is polled, never accepted twice (§7.1.6)": {
			status: func() Status {
				st := presentedAndChecked()
				st.FailedAttempts, st.SyncedAt, st.State = 1, tp(t0.Add(-time.Second)), StateProcessing
				return st
			}(),
			want: func(Status) Result {
				return Result{RequeueAt: t0.Add(4 * time.Second), Reason: ReasonWaitingForAuthorization}
			},
			why: "the server is validating",
		},
		"after a 503 on the authorization read, the read comes 5 s later, not once a day": {
			status: func() Status {
				st := withError(Status{Processing: true}, 1, 0)
				return st
			}(),
			now: 5 * time.Second,
			want: func(Status) Result {
				return Result{Actions: []Action{Sync{URL: c.Spec.URL, AuthorizationURL: c.Spec.AuthorizationURL}}, Reason: ReasonSyncing}
			},
			why: "reading the challenge",
		},
		"a wait of more than a minute gives the scheduler slot back and cleans up the presentation": {
			status: withError(presentedAndChecked(), 6, 0),
			want: func(st Status) Result {
				next := st
				next.Processing, next.Presented, next.PresentedAt, next.SelfCheckAt, next.SelfCheckPassed = false, false, nil, nil, false
				next.NextAttemptAt = tp(t0.Add(160 * time.Second))
				return Result{Actions: []Action{cleanUp, UpdateStatus{next}}, RequeueAt: t0.Add(160 * time.Second), Reason: ReasonYieldingSlot}
			},
			why: "giving the scheduler slot back",
		},
		"a rate limit's long Retry-After gives the slot back too": {
			status: func() Status {
				st := withError(Status{Processing: true, SyncedAt: tp(t0), State: StatePending}, 1, 0)
				st.RetryAfter = tp(t0.Add(time.Hour))
				return st
			}(),
			want: func(st Status) Result {
				next := st
				next.Processing, next.NextAttemptAt = false, tp(t0.Add(time.Hour))
				return Result{Actions: []Action{UpdateStatus{next}}, RequeueAt: t0.Add(time.Hour), Reason: ReasonYieldingSlot}
			},
			why: "more than 1m0s away",
		},
		"an accepted challenge keeps its slot and its presentation through a long wait: the server is validating": {
			status: func() Status {
				st := withError(presentedAndChecked(), 6, 0)
				st.Accepted, st.State = true, StateProcessing
				return st
			}(),
			want: func(Status) Result {
				return Result{RequeueAt: t0.Add(160 * time.Second), Reason: ReasonRetryingAfterError}
			},
			why: "attempt 6 of 10",
		},
		"an accepted challenge whose read failed reads again at the deadline, not a poll interval later": {
			status: func() Status {
				st := withError(presentedAndChecked(), 1, -5*time.Second)
				st.Accepted, st.State, st.SyncedAt = true, StateProcessing, tp(t0.Add(-time.Second))
				return st
			}(),
			want: func(Status) Result {
				return Result{Actions: []Action{Sync{URL: c.Spec.URL, AuthorizationURL: c.Spec.AuthorizationURL}}, Reason: ReasonWaitingForAuthorization}
			},
			why: "reading the authorization",
		},
		"a challenge that gave its slot back waits for its retry": {
			status: func() Status {
				st := withError(Status{SyncedAt: tp(t0), State: StatePending}, 6, 0)
				st.NextAttemptAt = tp(t0.Add(160 * time.Second))
				return st
			}(),
			now:  time.Minute,
			want: func(Status) Result { return Result{RequeueAt: t0.Add(160 * time.Second), Reason: ReasonYieldingSlot} },
			why:  "the scheduler may start it again at 2026-03-01T12:02:40Z",
		},
		"after its retry time it waits for the scheduler": {
			status: func() Status {
				st := withError(Status{SyncedAt: tp(t0), State: StatePending}, 6, 0)
				st.NextAttemptAt = tp(t0.Add(160 * time.Second))
				return st
			}(),
			now:  160 * time.Second,
			want: func(Status) Result { return Result{Reason: ReasonNotScheduled} },
			why:  "waiting for the scheduler",
		},
		"the tenth failed attempt ends the challenge errored, cleaning up, so its order fails": {
			status: withError(presentedAndChecked(), 10, 0),
			want: func(st Status) Result {
				next := st
				next.Processing, next.Presented, next.State = false, false, StateErrored
				next.Reason = "gave up after 10 failed attempts without progress; the last: 503 Service Unavailable"
				return Result{Actions: []Action{cleanUp, UpdateStatus{next}}, Reason: ReasonRetriesExhausted}
			},
			why: "gave up after 10",
		},
		"a transient error recorded without its time gets one now, so the deadline stays put": {
			status: func() Status {
				st := presentedAndChecked()
				st.LastError, st.Transient = "timeout", true
				return st
			}(),
			want: func(st Status) Result {
				next := st
				next.LastErrorTime, next.FailedAttempts = tp(t0), 1
				return Result{Actions: []Action{UpdateStatus{next}}, RequeueAt: t0.Add(5 * time.Second), Reason: ReasonRetryingAfterError}
			},
			why: "without a recorded time",
		},
		"with a fixed wait and no recorded presentation time, it records one and waits before accepting": {
			status: func() Status {
				st := presentedAndChecked()
				st.PresentedAt, st.SelfCheckAt, st.SelfCheckPassed = nil, nil, false
				return st
			}(),
			cfg: Config{FixedWait: 2 * time.Minute},
			want: func(st Status) Result {
				next := st
				next.PresentedAt = tp(t0)
				return Result{Actions: []Action{UpdateStatus{next}}, RequeueAt: t0.Add(2 * time.Minute), Reason: ReasonWaitingBeforeAccept}
			},
			why: "presented without a recorded time",
		},
		"a challenge without a URL fails at once, saying so": {
			status: Status{Processing: true}, noURL: true,
			want: func(st Status) Result {
				next := st
				next.Processing, next.State = false, StateErrored
				next.Reason = `spec.url ("") and spec.authorizationURL ("https://ca/authz/a") must both be set`
				return Result{Actions: []Action{UpdateStatus{next}}, Reason: ReasonInvalidSpec}
			},
			why: "spec.url",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := newChallenge("a", "a.example", TypeHTTP01, t0)
			if tc.noURL {
				c.Spec.URL = ""
			}
			c.Status = tc.status
			now := t0.Add(tc.now)
			got := Decide(c, now, tc.cfg)
			if diff := cmp.Diff(tc.want(tc.status), got, ignoreMessage); diff != "" {
				t.Fatalf("Decide() mismatch (-want +got):\n%s\nmessage: %s", diff, got.Message)
			}
			assert.Contains(t, got.Message, tc.why)
			checkLiveness(t, c, got, now, tc.cfg)
		})
	}
}

// A challenge that gave its slot back is not started before its retry is
// due, and is started then.
func TestScheduleWaitsForNextAttempt(t *testing.T) {
	waiting := newChallenge("waiting", "w.example", TypeDNS01, t0.Add(-time.Hour))
	waiting.Status = withError(Status{SyncedAt: tp(t0), State: StatePending}, 6, 0)
	waiting.Status.NextAttemptAt = tp(t0.Add(160 * time.Second))
	fresh := newChallenge("fresh", "f.example", TypeDNS01, t0)
	all := []*Challenge{waiting, fresh}
	assert.Equal(t, []string{"fresh"}, names(Schedule(all, t0.Add(time.Minute), SchedulerConfig{})), "before the retry is due")
	assert.Equal(t, []string{"waiting", "fresh"}, names(Schedule(all, t0.Add(160*time.Second), SchedulerConfig{})), "when the retry is due")
}

// checkLiveness holds a decision made at now to the liveness invariant:
// deadlines arrive. A result without actions waits for a time after now
// (or waits for the scheduler, which then starts it); deciding again at
// any moment before that time, with nothing changed, waits for the same
// time; and deciding at that time acts, or waits for a later time for
// another reason — never for the same deadline moved forward.
//
// Every result says why, and one that waits never waits past a deadline
// the status already implies (impliedDeadlines).
func checkLiveness(t *testing.T, c *Challenge, res Result, now time.Time, cfg Config) {
	t.Helper()
	require.NotEmpty(t, res.Reason, "a result without a reason: %+v", res)
	require.NotEmpty(t, res.Message, "a result without a message: %+v", res)
	if len(res.Actions) > 0 {
		return
	}
	if !res.RequeueAt.IsZero() {
		for what, at := range impliedDeadlines(c, cfg) {
			require.False(t, res.RequeueAt.After(at), "waits until %v, past %s at %v: %s", res.RequeueAt, what, at, res.Message)
		}
	}
	if res.RequeueAt.IsZero() {
		require.Equal(t, ReasonNotScheduled, res.Reason, "no action and no deadline: %s", res.Message)
		startable(t, c, now)
		return
	}
	require.True(t, res.RequeueAt.After(now), "no action and a deadline %v not after now %v: %s", res.RequeueAt, now, res.Message)
	mid := Decide(c, now.Add(res.RequeueAt.Sub(now)/2), cfg)
	if len(mid.Actions) == 0 {
		require.True(t, mid.RequeueAt.Equal(res.RequeueAt), "the deadline moved with the clock: %v at %v, %v halfway (%s; %s)",
			res.RequeueAt, now, mid.RequeueAt, res.Message, mid.Message)
	}
	again := Decide(c, res.RequeueAt, cfg)
	switch {
	case len(again.Actions) > 0:
	case again.Reason == res.Reason:
		t.Fatalf("at its deadline %v the decision waits again for %s (until %v): %s", res.RequeueAt, again.Reason, again.RequeueAt, again.Message)
	case again.RequeueAt.IsZero():
		require.Equal(t, ReasonNotScheduled, again.Reason, "at its deadline: no action and no deadline: %s", again.Message)
		startable(t, c, res.RequeueAt)
	default:
		require.True(t, again.RequeueAt.After(res.RequeueAt), "at its deadline %v the decision waits until %v: %s", res.RequeueAt, again.RequeueAt, again.Message)
	}
}

// impliedDeadlines lists, by what they are, the times by which a
// challenge's status already commits the machine to look again, stated
// from the documented behaviour and defaults rather than the machine's
// own helpers.
func impliedDeadlines(c *Challenge, cfg Config) map[string]time.Time {
	st := c.Status
	or := func(v, def time.Duration) time.Duration {
		if v > 0 {
			return v
		}
		return def
	}
	latest := func(at time.Time, serverSaid *time.Time) time.Time {
		if serverSaid != nil && serverSaid.After(at) {
			return *serverSaid
		}
		return at
	}
	d := map[string]time.Time{}
	if !st.Processing {
		if st.NextAttemptAt != nil && !st.State.Final() {
			d["the retry it gave its slot back for (NextAttemptAt)"] = *st.NextAttemptAt
		}
		return d
	}
	if st.State.Final() {
		return d
	}
	validating := st.Accepted || st.State == StateProcessing
	if st.LastError != "" && st.Transient && st.LastErrorTime != nil {
		longest := max(or(cfg.MaxTransientRetry, 5*time.Minute), or(cfg.TransientRetry, 5*time.Second))
		d["the retry after a transient error (MaxTransientRetry, or the server's Retry-After)"] = latest(st.LastErrorTime.Add(longest), st.RetryAfter)
	}
	if st.LastError == "" && validating && st.SyncedAt != nil {
		d["the next read of the authorization (PollInterval, or the server's Retry-After)"] = latest(st.SyncedAt.Add(or(cfg.PollInterval, 5*time.Second)), st.RetryAfter)
	}
	if cfg.FixedWait > 0 {
		if st.Presented && !validating && st.LastError == "" && st.PresentedAt != nil {
			d["the end of the fixed wait"] = st.PresentedAt.Add(cfg.FixedWait)
		}
		return d
	}
	if !st.Presented || validating || st.SelfCheckPassed {
		return d
	}
	if st.LastError == "" && st.SelfCheckAt != nil {
		d["the next self-check (SelfCheckInterval)"] = st.SelfCheckAt.Add(or(cfg.SelfCheckInterval, 10*time.Second))
	}
	if st.PresentedAt != nil {
		d["the end of self-checking (SelfCheckTimeout)"] = st.PresentedAt.Add(or(cfg.SelfCheckTimeout, 30*time.Minute))
	}
	if c.Spec.Expires != nil {
		d["the end of self-checking, 5 minutes before the order expires"] = c.Spec.Expires.Add(-5 * time.Minute)
	}
	return d
}

// startable checks that a challenge waiting for the scheduler is started
// by it at now, unless it is done.
func startable(t *testing.T, c *Challenge, now time.Time) {
	t.Helper()
	if c.Status.State.Final() || c.Status.Processing {
		return
	}
	require.Len(t, Schedule([]*Challenge{c}, now, SchedulerConfig{}), 1, "the scheduler does not start a challenge that waits for it at %v: %+v", now, c.Status)
}

// Reads of an accepted challenge and repeats of a failed self-check come
// soon after a change and later while nothing changes: FirstPoll after
// it, then each as long after the last as nothing has changed (the waits
// double), never longer apart than PollInterval (reads) or
// SelfCheckInterval (self-checks); a Retry-After is followed, never
// sooner than FirstPoll after the read.
func TestPollsStartSoonAndSlowDownWhileNothingChanges(t *testing.T) {
	ms := time.Millisecond
	c := newChallenge("a", "a.example", TypeDNS01, t0)
	accepted := func(read, changed time.Duration) Status {
		st := presentedAndChecked()
		st.Accepted, st.State, st.SyncedAt, st.ChangedAt = true, StateProcessing, tp(t0.Add(read)), tp(t0.Add(changed))
		return st
	}
	checkFailed := func(checked, presented time.Duration) Status {
		st := presentedAndChecked()
		st.SyncedAt, st.PresentedAt, st.SelfCheckAt, st.SelfCheckPassed = tp(t0.Add(presented)), tp(t0.Add(presented)), tp(t0.Add(checked)), false
		return st
	}
	tests := map[string]struct {
		status Status
		cfg    Config
		reason string
		want   time.Duration // RequeueAt after t0
	}{
		"the first read 200 ms after the accept (RFC 8555 §7.5.1)": {
			status: accepted(0, 0), reason: ReasonWaitingForAuthorization, want: 200 * ms,
		},
		"a read that found nothing new 200 ms after: the next 200 ms later": {
			status: accepted(200*ms, 0), reason: ReasonWaitingForAuthorization, want: 400 * ms,
		},
		"then a second after a read 1 s after the accept": {
			status: accepted(time.Second, 0), reason: ReasonWaitingForAuthorization, want: 2 * time.Second,
		},
		"never more than PollInterval apart": {
			status: accepted(time.Minute, 0), reason: ReasonWaitingForAuthorization, want: time.Minute + 5*time.Second,
		},
		"without a recorded change the reads are PollInterval apart": {
			status: func() Status { st := accepted(0, 0); st.ChangedAt = nil; return st }(), reason: ReasonWaitingForAuthorization, want: 5 * time.Second,
		},
		"the server's Retry-After is followed (RFC 9110 §10.2.3)": {
			status: func() Status { st := accepted(0, 0); st.RetryAfter = tp(t0.Add(3 * time.Second)); return st }(), reason: ReasonWaitingForAuthorization, want: 3 * time.Second,
		},
		"a Retry-After of 0 never makes reads come sooner than the first poll": {
			status: func() Status { st := accepted(0, 0); st.RetryAfter = tp(t0); return st }(), reason: ReasonWaitingForAuthorization, want: 200 * ms,
		},
		"a self-check that failed at the presentation is repeated 200 ms later": {
			status: checkFailed(0, 0), reason: ReasonSelfChecking, want: 200 * ms,
		},
		"a self-check still failing 4 s after the presentation is repeated 4 s later": {
			status: checkFailed(4*time.Second, 0), reason: ReasonSelfChecking, want: 8 * time.Second,
		},
		"self-checks are never more than SelfCheckInterval apart": {
			status: checkFailed(time.Minute, 0), reason: ReasonSelfChecking, want: time.Minute + 10*time.Second,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c.Status = tc.status
			now := *tc.status.SyncedAt
			if tc.status.SelfCheckAt != nil && tc.status.SelfCheckAt.After(now) {
				now = *tc.status.SelfCheckAt
			}
			got := Decide(c, now, tc.cfg)
			want := Result{RequeueAt: t0.Add(tc.want), Reason: tc.reason}
			if diff := cmp.Diff(want, got, ignoreMessage); diff != "" {
				t.Fatalf("Decide() mismatch (-want +got):\n%s\nmessage: %s", diff, got.Message)
			}
			checkLiveness(t, c, got, now, tc.cfg)
			require.NotEmpty(t, Decide(c, got.RequeueAt, tc.cfg).Actions, "at its time the challenge acts")
		})
	}
}
