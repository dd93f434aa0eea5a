package challenge

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/certlife/certlife/backoff/retry"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func tp(t time.Time) *time.Time { return &t }

func newChallenge(name, dns string, typ Type, created time.Time) *Challenge {
	return &Challenge{
		Name: name, CreationTimestamp: created,
		Spec: Spec{URL: "https://ca/chall/" + name, AuthorizationURL: "https://ca/authz/" + name, Type: typ, DNSName: dns,
			Token: "tok-" + name, Key: "tok-" + name + ".thumb", Issuer: Issuer{Name: "le"}, Account: "acct-1",
			Solver: Solver{HTTP01: &HTTP01Solver{}}},
	}
}

func TestDecide(t *testing.T) {
	tests := map[string]struct {
		status  Status
		cfg     Config
		now     time.Time
		actions []string // action names
		reason  string
		requeue time.Duration
	}{
		"an unscheduled challenge waits for the scheduler": {
			status: Status{}, reason: ReasonNotScheduled,
		},
		"a scheduled challenge is synced first (RFC 8555 §7.5)": {
			status: Status{Processing: true}, actions: []string{"Sync"}, reason: ReasonSyncing,
		},
		"an authorization already valid finishes at once, presenting nothing (§7.1.6)": {
			status:  Status{Processing: true, SyncedAt: tp(t0), State: StateValid},
			actions: []string{"UpdateStatus"}, reason: ReasonFinished,
		},
		"a pending challenge is presented": {
			status: Status{Processing: true, SyncedAt: tp(t0), State: StatePending}, actions: []string{"Present"}, reason: ReasonPresenting,
		},
		"a presented challenge is self-checked": {
			status:  Status{Processing: true, SyncedAt: tp(t0), State: StatePending, Presented: true, PresentedAt: tp(t0)},
			actions: []string{"SelfCheck"}, reason: ReasonSelfChecking,
		},
		"a failed self-check is retried 10 seconds later": {
			status: Status{Processing: true, SyncedAt: tp(t0), State: StatePending, Presented: true, PresentedAt: tp(t0.Add(-time.Minute)),
				SelfCheckAt: tp(t0.Add(-3 * time.Second))},
			reason:  ReasonSelfChecking,
			requeue: 7 * time.Second,
		},
		"a passed self-check accepts the challenge (§7.5.1)": {
			status:  Status{Processing: true, SyncedAt: tp(t0), State: StatePending, Presented: true, SelfCheckAt: tp(t0), SelfCheckPassed: true},
			actions: []string{"Accept"}, reason: ReasonAccepting,
		},
		"with a fixed wait, it accepts only after the wait, without self-checking": {
			status: Status{Processing: true, SyncedAt: tp(t0), State: StatePending, Presented: true, PresentedAt: tp(t0.Add(-time.Minute))},
			cfg:    Config{FixedWait: 2 * time.Minute}, reason: ReasonWaitingBeforeAccept, requeue: time.Minute,
		},
		"with a fixed wait that has passed, it accepts": {
			status: Status{Processing: true, SyncedAt: tp(t0), State: StatePending, Presented: true, PresentedAt: tp(t0.Add(-3 * time.Minute))},
			cfg:    Config{FixedWait: 2 * time.Minute}, actions: []string{"Accept"}, reason: ReasonAccepting,
		},
		"an accepted challenge polls its authorization (§7.5.1)": {
			status:  Status{Processing: true, SyncedAt: tp(t0.Add(-5 * time.Second)), State: StateProcessing, Presented: true, Accepted: true},
			actions: []string{"Sync"}, reason: ReasonWaitingForAuthorization,
		},
		"an accepted challenge polled moments ago waits": {
			status: Status{Processing: true, SyncedAt: tp(t0.Add(-time.Second)), State: StateProcessing, Presented: true, Accepted: true},
			reason: ReasonWaitingForAuthorization, requeue: 4 * time.Second,
		},
		"an invalid authorization cleans up and stops processing (§7.1.6)": {
			status:  Status{Processing: true, SyncedAt: tp(t0), State: StateInvalid, Presented: true, Accepted: true, Reason: "urn:ietf:params:acme:error:unauthorized"},
			actions: []string{"CleanUp", "UpdateStatus"}, reason: ReasonFinished,
		},
		"an accepted challenge is polled no sooner than the server's Retry-After": {
			status: Status{Processing: true, SyncedAt: tp(t0.Add(-5 * time.Second)), State: StateProcessing, Presented: true, Accepted: true,
				Attempts: retry.Attempts{RetryAfter: tp(t0.Add(40 * time.Second))}},
			reason: ReasonWaitingForAuthorization, requeue: 40 * time.Second,
		},
		"a challenge read long ago is read again before it is presented": {
			status: Status{Processing: true, SyncedAt: tp(t0.Add(-time.Hour)), State: StatePending}, actions: []string{"Sync"}, reason: ReasonSyncing,
		},
		"a transient error is retried at the server's Retry-After and never made final": {
			status: Status{Processing: true, SyncedAt: tp(t0), State: StatePending, Presented: true, SelfCheckPassed: true,
				Attempts: retry.Attempts{LastError: "503 Service Unavailable", Transient: true, RetryAfter: tp(t0.Add(40 * time.Second)), LastErrorTime: tp(t0), FailedAttempts: 1}},
			reason: ReasonRetryingAfterError, requeue: 40 * time.Second,
		},
		"an unknown state is not final: the machine goes on": {
			status:  Status{Processing: true, SyncedAt: tp(t0), State: "weird", Presented: true, Accepted: true, SelfCheckPassed: true},
			reason:  ReasonWaitingForAuthorization,
			requeue: 5 * time.Second,
		},
		"a challenge left presented after processing ended is cleaned up": {
			status: Status{Presented: true, State: StateValid}, actions: []string{"CleanUp", "UpdateStatus"}, reason: ReasonCleaningUp,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := newChallenge("a", "a.example", TypeHTTP01, t0)
			c.Status = tc.status
			res := Decide(c, t0, tc.cfg)
			var acts []string
			for _, a := range res.Actions {
				acts = append(acts, strings.SplitN(a.String(), "{", 2)[0])
			}
			require.Equal(t, tc.actions, acts, "Decide() actions (%s)", res.Message)
			require.Equal(t, tc.reason, res.Reason, "Decide() reason (%s)", res.Message)
			var rq time.Duration
			if !res.RequeueAt.IsZero() {
				rq = res.RequeueAt.Sub(t0)
			}
			require.Equal(t, tc.requeue, rq, "requeue after now")
			for _, a := range res.Actions {
				if u, ok := a.(UpdateStatus); ok && u.Status.Processing {
					require.False(t, u.Status.State.Final(), "a final challenge stays processing")
				}
			}
		})
	}
}

func TestScheduleCapsUniquenessAndFairness(t *testing.T) {
	var all []*Challenge
	// Issuer "failing" has an old backlog of 50 challenges; issuer "new"
	// has 5 fresh ones.
	for i := 0; i < 50; i++ {
		c := newChallenge(fmt.Sprintf("old-%02d", i), fmt.Sprintf("old%d.example", i), TypeHTTP01, t0.Add(time.Duration(i)*time.Second))
		c.Spec.Issuer, c.Spec.Account = Issuer{Name: "failing"}, "acct-a"
		all = append(all, c)
	}
	for i := 0; i < 5; i++ {
		c := newChallenge(fmt.Sprintf("new-%d", i), fmt.Sprintf("new%d.example", i), TypeHTTP01, t0.Add(time.Hour))
		c.Spec.Issuer, c.Spec.Account = Issuer{Name: "new"}, "acct-b"
		all = append(all, c)
	}
	// Two for the same name and type, and one already processing for
	// old0's name.
	dup := newChallenge("dup", "old1.example", TypeHTTP01, t0)
	dup.Spec.Issuer, dup.Spec.Account = Issuer{Name: "failing"}, "acct-a"
	running := newChallenge("running", "old0.example", TypeHTTP01, t0)
	running.Status.Processing = true
	running.Spec.Issuer, running.Spec.Account = Issuer{Name: "failing"}, "acct-a"
	all = append(all, dup, running)

	got := Schedule(all, t0, SchedulerConfig{MaxInFlight: 11})
	require.Len(t, got, 10, "started: want 10 (11 in flight minus 1 running)")
	seen := map[string]bool{"old0.example/http-01": true}
	newCount := 0
	for _, c := range got {
		k := c.Spec.DNSName + "/" + string(c.Spec.Type)
		require.False(t, seen[k], "two challenges for %s", k)
		seen[k] = true
		if c.Spec.Issuer.Name == "new" {
			newCount++
		}
	}
	require.Equal(t, 5, newCount, "the new issuer's slots of 10 behind the other's backlog: want all 5 of its challenges")
	// Oldest first within the backlog: dup (t0) and old-01 share a name, so
	// dup (older, "dup" < "old-01") wins it.
	require.Equal(t, "dup", got[0].Name, "first pick: want the oldest challenge")
	again := Schedule(all, t0, SchedulerConfig{MaxInFlight: 11})
	require.Equal(t, names(got), names(again), "the scheduler is not deterministic")
}

func names(cs []*Challenge) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}

func TestScheduleRespectsTheAccountBudgetAndPerPass(t *testing.T) {
	var all []*Challenge
	for i := 0; i < 20; i++ {
		all = append(all, newChallenge(fmt.Sprintf("c%02d", i), fmt.Sprintf("n%d.example", i), TypeDNS01, t0.Add(time.Duration(i)*time.Second)))
	}
	require.Len(t, Schedule(all, t0, SchedulerConfig{AccountBudget: 3}), 3, "account budget 3")
	require.Len(t, Schedule(all, t0, SchedulerConfig{MaxPerPass: 4}), 4, "per-pass cap 4")
	all[0].Status.State = StateValid
	for _, c := range Schedule(all, t0, SchedulerConfig{}) {
		require.False(t, c.Status.State.Final(), "a final challenge was scheduled")
	}
}
