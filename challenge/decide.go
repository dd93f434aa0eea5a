package challenge

import (
	"time"
)

// Config tunes the challenge machine. The zero value is the documented
// default of each field.
type Config struct {
	// SelfCheckInterval between failed self-checks. Zero means 10s.
	SelfCheckInterval time.Duration
	// FixedWait, when positive, replaces the self-check: the challenge is
	// accepted this long after it was presented. For NAT hairpin and
	// split-horizon DNS, where the host cannot see what the CA sees.
	FixedWait time.Duration
	// PollInterval between reads of an accepted challenge's
	// authorization. Zero means 5s.
	PollInterval time.Duration
	// TransientRetry is how soon to retry after a transient error that
	// came without a Retry-After. Zero means 30s.
	TransientRetry time.Duration
	// MaxSyncAge is how old a read of the challenge may be when it is
	// presented; an older one (say, a challenge that waited long for the
	// scheduler) is read again first. Zero means 5 minutes.
	MaxSyncAge time.Duration
}

func (c Config) maxSyncAge() time.Duration { return orDefault(c.MaxSyncAge, 5*time.Minute) }

func (c Config) selfCheckInterval() time.Duration {
	return orDefault(c.SelfCheckInterval, 10*time.Second)
}
func (c Config) pollInterval() time.Duration   { return orDefault(c.PollInterval, 5*time.Second) }
func (c Config) transientRetry() time.Duration { return orDefault(c.TransientRetry, 30*time.Second) }

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Reasons of a Result.
const (
	ReasonNotScheduled = "NotScheduled"
	ReasonSyncing      = "Syncing"
	ReasonPresenting   = "Presenting"
	ReasonSelfChecking = "SelfChecking"
	ReasonWaiting      = "WaitingBeforeAccept"
	ReasonAccepting    = "Accepting"
	ReasonValidating   = "WaitingForAuthorization"
	ReasonFinished     = "Finished"
	ReasonRetrying     = "RetryingAfterError"
	ReasonCleaningUp   = "CleaningUp"
)

// Result lists the actions in order, when to look again, and why.
type Result struct {
	Actions   []Action
	RequeueAt time.Time
	Reason    string
	Message   string
}

// Decide is the challenge machine (seed 001). It does nothing until the
// scheduler sets Processing; then it syncs with the server, finishes at once
// if the authorization is already valid, presents the key authorization,
// self-checks every SelfCheckInterval (or waits FixedWait), accepts, polls
// the authorization until it is final, and then cleans up and clears
// Processing. A transient error never makes a challenge final: it retries
// at the server's Retry-After, or after TransientRetry.
func Decide(c *Challenge, now time.Time, cfg Config) Result {
	if c == nil {
		return Result{Reason: ReasonNotScheduled, Message: "no challenge"}
	}
	st := c.Status
	sp := c.Spec
	cleanUp := CleanUp{Type: sp.Type, DNSName: sp.DNSName, Token: sp.Token, Key: sp.Key, Solver: sp.Solver}
	if !st.Processing {
		if st.Presented {
			// Left presented by a run that ended: clean up.
			next := st
			next.Presented = false
			return Result{Actions: []Action{cleanUp, UpdateStatus{next}}, Reason: ReasonCleaningUp, Message: "not scheduled, but still presented: cleaning up"}
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
	if st.LastError != "" && st.Transient {
		at := now.Add(cfg.transientRetry())
		if st.RetryAfter != nil {
			at = *st.RetryAfter
		}
		if now.Before(at) {
			return Result{RequeueAt: at, Reason: ReasonRetrying, Message: "a transient error (" + st.LastError + "); retrying at " + at.UTC().Format(time.RFC3339)}
		}
	}
	sync := Sync{URL: sp.URL, AuthorizationURL: sp.AuthorizationURL}
	switch {
	case st.SyncedAt == nil:
		return Result{Actions: []Action{sync}, Reason: ReasonSyncing, Message: "reading the challenge from the server (RFC 8555 §7.5)"}
	case !st.Presented && !st.Accepted && now.Sub(*st.SyncedAt) > cfg.maxSyncAge():
		return Result{Actions: []Action{sync}, Reason: ReasonSyncing, Message: "the last read of the challenge is older than " + cfg.maxSyncAge().String() + ": reading it again (RFC 8555 §7.5)"}
	case st.Accepted:
		next := st.SyncedAt.Add(cfg.pollInterval())
		if ra := st.RetryAfter; ra != nil && st.LastError == "" && ra.After(next) {
			next = *ra // the server asked to be polled no sooner
		}
		if now.Before(next) {
			return Result{RequeueAt: next, Reason: ReasonValidating, Message: "the server is validating; looking again at " + next.UTC().Format(time.RFC3339)}
		}
		return Result{Actions: []Action{sync}, Reason: ReasonValidating, Message: "reading the authorization's status (RFC 8555 §7.5.1)"}
	case !st.Presented:
		return Result{Actions: []Action{Present{Type: sp.Type, DNSName: sp.DNSName, Token: sp.Token, Key: sp.Key, Solver: sp.Solver, Wildcard: sp.Wildcard}},
			Reason: ReasonPresenting, Message: "presenting the key authorization for " + sp.DNSName}
	}
	accept := Result{Actions: []Action{Accept{URL: sp.URL}}, Reason: ReasonAccepting, Message: "asking the server to validate (RFC 8555 §7.5.1)"}
	if cfg.FixedWait > 0 {
		at := now
		if st.PresentedAt != nil {
			at = st.PresentedAt.Add(cfg.FixedWait)
		}
		if now.Before(at) {
			return Result{RequeueAt: at, Reason: ReasonWaiting, Message: "waiting a fixed time instead of self-checking; accepting at " + at.UTC().Format(time.RFC3339)}
		}
		return accept
	}
	if st.SelfCheckPassed {
		return accept
	}
	if st.SelfCheckAt != nil {
		if next := st.SelfCheckAt.Add(cfg.selfCheckInterval()); now.Before(next) {
			return Result{RequeueAt: next, Reason: ReasonSelfChecking, Message: "the self-check failed; checking again at " + next.UTC().Format(time.RFC3339)}
		}
	}
	return Result{Actions: []Action{SelfCheck{Type: sp.Type, DNSName: sp.DNSName, Token: sp.Token, Key: sp.Key}},
		Reason: ReasonSelfChecking, Message: "checking that " + sp.DNSName + " serves the key authorization"}
}
