package challenge

import (
	"fmt"
	"strings"
	"time"

	"github.com/certlife/certlife/backoff/retry"
)

// Config tunes the challenge machine. The zero value is the documented
// default of each field.
type Config struct {
	// SelfCheckInterval is the longest wait between failed self-checks:
	// the first recheck comes FirstPoll after the check, each next one as
	// long after the last as the challenge has been presented (so the
	// waits double), up to this. Zero means 10s.
	SelfCheckInterval time.Duration
	// SelfCheckTimeout bounds self-checking, counted from the presentation
	// (Status.PresentedAt; a presentation without a recorded time is
	// given one first). Self-checking also ends 5 minutes before the
	// order expires (Spec.Expires), leaving time for the server to
	// validate and the order to be finalized. When self-checking ends
	// without a passed check, the challenge ends errored with a reason
	// that names the self-check and its last error; it cleans up and
	// gives its scheduler slot back, and its order fails. A self-check
	// that can never pass (split-horizon DNS, a NAT without hairpin: see
	// FixedWait) so fails instead of holding a slot. Zero means 30
	// minutes.
	SelfCheckTimeout time.Duration
	// FixedWait, when positive, replaces the self-check: the challenge is
	// accepted this long after it was presented (a presentation without a
	// recorded time is given one first). For NAT hairpin and split-horizon
	// DNS, where the host cannot see what the CA sees.
	FixedWait time.Duration
	// Schedule is when an accepted challenge's authorization is read while
	// the server validates, how long the challenge waits after a failed
	// action, and after how many failed attempts without progress
	// (Status.FailedAttempts) it ends errored, which fails its order:
	// reads 200ms after a change doubling to 5s, retries 5s after a
	// failure doubling to 5 minutes, and 10 attempts (see package retry).
	// Its FirstPoll is also the first wait before a failed self-check is
	// repeated.
	retry.Schedule
	// MaxHeldWait is the longest wait for a retry during which a
	// challenge that is not yet accepted keeps its scheduler slot; with a
	// longer wait it cleans up, gives the slot back and records
	// NextAttemptAt, so other challenges are not starved. An accepted
	// challenge keeps its slot and its presentation: the server is
	// validating them. Zero means 1 minute.
	MaxHeldWait time.Duration
	// MaxSyncAge is how old a read of the challenge may be when it is
	// presented; an older one (say, a challenge that waited long for the
	// scheduler) is read again first. Zero means 5 minutes.
	MaxSyncAge time.Duration
}

func (c Config) maxSyncAge() time.Duration { return orDefault(c.MaxSyncAge, 5*time.Minute) }

func (c Config) selfCheckInterval() time.Duration {
	return orDefault(c.SelfCheckInterval, 10*time.Second)
}

func (c Config) selfCheckTimeout() time.Duration {
	return orDefault(c.SelfCheckTimeout, 30*time.Minute)
}

func (c Config) maxHeldWait() time.Duration { return orDefault(c.MaxHeldWait, time.Minute) }

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// selfCheckExpiryMargin is how long before the order expires
// self-checking ends.
const selfCheckExpiryMargin = 5 * time.Minute

// selfCheckAt is when a failed self-check is repeated: FirstPoll after it
// at first, then spaced out from the presentation up to
// SelfCheckInterval.
func selfCheckAt(st *Status, cfg Config) time.Time {
	interval := cfg.selfCheckInterval()
	return retry.Spaced(*st.SelfCheckAt, st.PresentedAt, min(cfg.WithDefaults().FirstPoll, interval), interval)
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// stampMilli is a time for messages, to the millisecond: polls come less
// than a second apart.
func stampMilli(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// Reasons of a Result. Each constant is named after its value: ReasonX is
// "X".
const (
	ReasonNotScheduled            = "NotScheduled"
	ReasonSyncing                 = "Syncing"
	ReasonPresenting              = "Presenting"
	ReasonSelfChecking            = "SelfChecking"
	ReasonWaitingBeforeAccept     = "WaitingBeforeAccept"
	ReasonAccepting               = "Accepting"
	ReasonWaitingForAuthorization = "WaitingForAuthorization"
	ReasonFinished                = "Finished"
	ReasonRetryingAfterError      = "RetryingAfterError"
	ReasonCleaningUp              = "CleaningUp"
	// ReasonYieldingSlot: a challenge waiting long for a retry gives its
	// scheduler slot back until its next attempt.
	ReasonYieldingSlot = "YieldingSlot"
	// ReasonRetriesExhausted: the challenge ended errored after
	// Config.MaxAttempts failed attempts without progress.
	ReasonRetriesExhausted = "RetriesExhausted"
	// ReasonInvalidSpec: the challenge lacks what it needs to be solved
	// (its URL or its authorization's).
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonSelfCheckTimedOut: the challenge ended errored because its
	// self-check did not pass within Config.SelfCheckTimeout, or before
	// its order was about to expire.
	ReasonSelfCheckTimedOut = "SelfCheckTimedOut"
)

// Result lists the actions in order, when to look again, and why. A zero
// RequeueAt means nothing is due by time alone: the decision changes only
// when the snapshot does (the scheduler starts the challenge, the host
// writes a status).
type Result struct {
	Actions   []Action
	RequeueAt time.Time
	Reason    string
	Message   string
}

// Decide is the challenge machine. It does nothing until the
// scheduler sets Processing; then it syncs with the server, finishes at once
// if the authorization is already valid, presents the key authorization,
// self-checks every SelfCheckInterval (or waits FixedWait), accepts, polls
// the authorization until it is final, and then cleans up and clears
// Processing. After a failed call it reads the challenge before accepting
// again, and a challenge the server is already validating is polled, never
// accepted twice. A self-check that has not passed by SelfCheckTimeout
// after the presentation, or 5 minutes before the order expires, ends the
// challenge errored (ReasonSelfCheckTimedOut), cleaning up and clearing
// Processing.
//
// A transient error never makes a challenge final: it retries at
// Config.RetryAt, derived from the status alone, so deciding again at the
// returned RequeueAt carries the retry out. A wait longer than MaxHeldWait gives
// the scheduler slot back (unless the challenge is accepted). After
// MaxAttempts failed attempts without progress the challenge ends errored.
func Decide(c *Challenge, now time.Time, cfg Config) Result {
	if c == nil {
		return Result{Reason: ReasonNotScheduled, Message: "no challenge"}
	}
	st := c.Status
	sp := c.Spec
	cleanUp := cleanUpOf(sp)
	if !st.Processing {
		if st.Presented {
			// Left presented by a run that ended: clean up. A later run
			// presents and checks again.
			return Result{Actions: []Action{cleanUp, UpdateStatus{unpresented(st)}}, Reason: ReasonCleaningUp,
				Message: "not scheduled, but still presented: cleaning up"}
		}
		if at := st.NextAttemptAt; at != nil && now.Before(*at) && !st.State.Final() {
			return Result{RequeueAt: *at, Reason: ReasonYieldingSlot,
				Message: "waiting to retry after a transient error (" + st.LastError + "); the scheduler may start it again at " + stamp(*at)}
		}
		return Result{Reason: ReasonNotScheduled, Message: "waiting for the scheduler"}
	}
	if st.State.Final() {
		next := st
		next.Processing, next.Presented = false, false
		var acts []Action
		if st.Presented {
			acts = append(acts, cleanUp)
		}
		msg := "the authorization is " + string(st.State)
		if st.Reason != "" {
			msg += ": " + st.Reason
		}
		return Result{Actions: append(acts, UpdateStatus{next}), Reason: ReasonFinished, Message: msg}
	}
	if sp.URL == "" || sp.AuthorizationURL == "" {
		return giveUp(c, ReasonInvalidSpec, fmt.Sprintf("spec.url (%q) and spec.authorizationURL (%q) must both be set", sp.URL, sp.AuthorizationURL))
	}
	end, bound, checking := selfCheckEnd(c, cfg)
	if checking && !now.Before(end) {
		return giveUp(c, ReasonSelfCheckTimedOut, selfCheckTimedOut(st, bound))
	}
	if res, stop := retryGate(c, now, cfg); stop {
		if checking && len(res.Actions) == 0 && end.Before(res.RequeueAt) {
			res.RequeueAt = end
			res.Message += "; self-checking ends first, at " + stamp(end)
		}
		return res
	}
	sync := Sync{URL: sp.URL, AuthorizationURL: sp.AuthorizationURL}
	switch {
	case st.SyncedAt == nil:
		return Result{Actions: []Action{sync}, Reason: ReasonSyncing, Message: "reading the challenge from the server (RFC 8555 §7.5)"}
	case !st.Presented && !st.Accepted && now.Sub(*st.SyncedAt) > cfg.maxSyncAge():
		return Result{Actions: []Action{sync}, Reason: ReasonSyncing, Message: "the last read of the challenge is older than " + cfg.maxSyncAge().String() + ": reading it again (RFC 8555 §7.5)"}
	case st.Accepted || st.State == StateProcessing:
		// Accepted, or the server is validating already (an accept
		// whose answer was lost took effect): poll, never accept again.
		next, _ := cfg.PollAt(&st.Attempts, st.SyncedAt, st.ChangedAt)
		if now.Before(next) && st.LastError == "" {
			return Result{RequeueAt: next, Reason: ReasonWaitingForAuthorization, Message: "the server is validating; looking again at " + stampMilli(next)}
		}
		return Result{Actions: []Action{sync}, Reason: ReasonWaitingForAuthorization, Message: "reading the authorization's status (RFC 8555 §7.5.1)"}
	case st.LastError != "" && st.Presented:
		// The last call failed, perhaps after it took effect at the
		// server: read the challenge before accepting it again.
		return Result{Actions: []Action{sync}, Reason: ReasonSyncing,
			Message: "the last call failed (" + st.LastError + "); reading the challenge before accepting again (RFC 8555 §7.5)"}
	case !st.Presented:
		return Result{Actions: []Action{Present{Type: sp.Type, DNSName: sp.DNSName, Token: sp.Token, Key: sp.Key, Solver: sp.Solver, Wildcard: sp.Wildcard}},
			Reason: ReasonPresenting, Message: "presenting the key authorization for " + sp.DNSName}
	}
	accept := Result{Actions: []Action{Accept{URL: sp.URL}}, Reason: ReasonAccepting, Message: "asking the server to validate (RFC 8555 §7.5.1)"}
	if cfg.FixedWait > 0 {
		if st.PresentedAt == nil {
			// Presented without a recorded time: the wait starts now.
			next := st
			t := now
			next.PresentedAt = &t
			at := now.Add(cfg.FixedWait)
			return Result{Actions: []Action{UpdateStatus{next}}, RequeueAt: at, Reason: ReasonWaitingBeforeAccept,
				Message: "presented without a recorded time: recording it and waiting a fixed time instead of self-checking; accepting at " + stamp(at)}
		}
		at := st.PresentedAt.Add(cfg.FixedWait)
		if now.Before(at) {
			return Result{RequeueAt: at, Reason: ReasonWaitingBeforeAccept, Message: "waiting a fixed time instead of self-checking; accepting at " + stamp(at)}
		}
		return accept
	}
	if st.SelfCheckPassed {
		return accept
	}
	if st.PresentedAt == nil {
		// Presented without a recorded time: self-checking is bounded
		// from now.
		next := st
		t := now
		next.PresentedAt = &t
		return Result{Actions: []Action{UpdateStatus{next}}, Reason: ReasonSelfChecking,
			Message: "presented without a recorded time: recording it, to bound self-checking from now"}
	}
	if st.SelfCheckAt != nil {
		if next := selfCheckAt(&st, cfg); now.Before(next) {
			if checking && !next.Before(end) {
				return Result{RequeueAt: end, Reason: ReasonSelfChecking,
					Message: "the self-check failed; self-checking ends at " + stamp(end) + ", before the next check is due"}
			}
			msg := "the self-check failed; checking again at " + stampMilli(next)
			if checking {
				msg += "; self-checking ends at " + stamp(end)
			}
			return Result{RequeueAt: next, Reason: ReasonSelfChecking, Message: msg}
		}
	}
	return Result{Actions: []Action{SelfCheck{Type: sp.Type, DNSName: sp.DNSName, Token: sp.Token, Key: sp.Key}},
		Reason: ReasonSelfChecking, Message: "checking that " + sp.DNSName + " serves the key authorization"}
}

// retryGate holds a processing challenge whose last action failed
// transiently until its next attempt is due (Config.Gate), giving its
// scheduler slot back when the wait is long; it ends the challenge when
// its attempts are used up. stop is false when the decision goes on.
func retryGate(c *Challenge, now time.Time, cfg Config) (Result, bool) {
	st := c.Status
	gate, at, why := cfg.Gate(&st.Attempts, now)
	switch gate {
	case retry.Proceed, retry.Due:
		return Result{}, false
	case retry.GiveUp:
		return giveUp(c, ReasonRetriesExhausted, why), true
	case retry.Record:
		next := st
		next.Attempts = st.Attempts.Timed(now)
		return Result{Actions: []Action{UpdateStatus{next}}, RequeueAt: at, Reason: ReasonRetryingAfterError, Message: why}, true
	}
	if !st.Accepted && at.Sub(now) > cfg.maxHeldWait() {
		next := unpresented(st)
		next.Processing = false
		t := at
		next.NextAttemptAt = &t
		var acts []Action
		if st.Presented {
			acts = append(acts, cleanUpOf(c.Spec))
		}
		return Result{Actions: append(acts, UpdateStatus{next}), RequeueAt: at, Reason: ReasonYieldingSlot,
			Message: fmt.Sprintf("a transient error (%s); the retry at %s is more than %v away: giving the scheduler slot back until then",
				st.LastError, stamp(at), cfg.maxHeldWait())}, true
	}
	return Result{RequeueAt: at, Reason: ReasonRetryingAfterError, Message: why}, true
}

// selfCheckEnd is when self-checking the challenge ends, and the bound
// that sets it, in words: Config.SelfCheckTimeout after the presentation,
// or the margin before the order expires, whichever is sooner. checking
// is false when the challenge is not self-checking (not presented,
// accepted, validating, passed, or waiting a fixed time instead) or
// neither time is known.
func selfCheckEnd(c *Challenge, cfg Config) (end time.Time, bound string, checking bool) {
	st := c.Status
	if !st.Presented || st.Accepted || st.State == StateProcessing || st.SelfCheckPassed || cfg.FixedWait > 0 {
		return time.Time{}, "", false
	}
	if st.PresentedAt != nil {
		end, bound, checking = st.PresentedAt.Add(cfg.selfCheckTimeout()), "within "+cfg.selfCheckTimeout().String(), true
	}
	if e := c.Spec.Expires; e != nil {
		if last := e.Add(-selfCheckExpiryMargin); !checking || last.Before(end) {
			end, checking = last, true
			bound = fmt.Sprintf("by %s, %v before the order expires", stamp(last), selfCheckExpiryMargin)
		}
	}
	return end, bound, checking
}

// selfCheckTimedOut says why self-checking ended, with the last
// self-check's error (Status.Reason) when there is one; the words
// "self-check failed: " that acmeclient.Solvers writes before it are not
// repeated.
func selfCheckTimedOut(st Status, bound string) string {
	msg := "the self-check did not pass " + bound
	switch {
	case st.SelfCheckAt == nil:
		return msg + ": no self-check ran"
	case st.Reason != "":
		return msg + ": " + strings.TrimPrefix(st.Reason, "self-check failed: ")
	}
	return msg + "; the last ran at " + stamp(*st.SelfCheckAt)
}

// giveUp ends a processing challenge errored: it cleans up and gives the
// slot back.
func giveUp(c *Challenge, reason, msg string) Result {
	next := c.Status
	next.Processing, next.Presented = false, false
	next.State, next.Reason = StateErrored, msg
	var acts []Action
	if c.Status.Presented {
		acts = append(acts, cleanUpOf(c.Spec))
	}
	return Result{Actions: append(acts, UpdateStatus{next}), Reason: reason, Message: msg}
}

// unpresented is the status after a clean-up: not presented, and, unless
// the challenge was accepted, with no presentation time or self-check, so
// that the next presentation is checked again.
func unpresented(st Status) Status {
	st.Presented = false
	if !st.Accepted {
		st.PresentedAt, st.SelfCheckAt, st.SelfCheckPassed = nil, nil, false
	}
	return st
}

// cleanUpOf is the clean-up of what Present put up for a spec.
func cleanUpOf(sp Spec) CleanUp {
	return CleanUp{Type: sp.Type, DNSName: sp.DNSName, Token: sp.Token, Key: sp.Key, Solver: sp.Solver, Wildcard: sp.Wildcard}
}
