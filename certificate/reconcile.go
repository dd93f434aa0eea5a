package certificate

import (
	"cmp"
	"slices"

	"github.com/certlife/certlife/keys"
	"strconv"
	"time"
)

// The stages in the order Reconcile runs them.
const (
	stageTrigger = iota
	stageKeymanager
	stageRequestmanager
	stageIssuing
	stageReadiness
	stageCount
)

// runStage calls stage i directly (not through a table of functions, which
// would make every snapshot escape to the heap).
func runStage(i int, s *Snapshot, now time.Time, cfg Config) Result {
	switch i {
	case stageTrigger:
		return Trigger(s, now, cfg)
	case stageKeymanager:
		return Keymanager(s, now, cfg)
	case stageRequestmanager:
		return Requestmanager(s, now, cfg)
	case stageIssuing:
		return Issuing(s, now, cfg)
	}
	return Readiness(s, now, cfg)
}

// Reconcile runs the stages in order on one snapshot — trigger, keymanager,
// requestmanager, issuing, readiness, then revision history — folding each
// stage's status change into the snapshot before the next, and returns one
// result: the effects in order with a single UpdateStatus last (only when
// the status changed), the earliest time to look again, and the reason and
// message of the stage that acted last (or of readiness when none acted).
//
// Hosts that prefer one controller per stage call the stages alone; the
// outcome is the same, over more passes.
func Reconcile(s *Snapshot, now time.Time, cfg Config) Result {
	if s == nil || s.Certificate == nil {
		return Result{Reason: ReasonNoCertificate, Message: "the snapshot holds no certificate"}
	}
	orig := s.Certificate
	// One allocation holds the working snapshot and the memo. The
	// certificate is copied only when a stage changes its status
	// (copy-on-write), so a healthy pass copies nothing.
	w := &work{snap: *s}
	snap := &w.snap
	snap.memo = &w.memo
	// Parse each input once for all stages: the secret here, the requests'
	// CSRs lazily through the memo, unless the host's cache holds them.
	if snap.Parsed == nil && snap.Secret != nil {
		snap.Parsed, _ = keys.ParseSecretData(snap.Secret.Data)
	}

	var out Result
	wroteSecret := false
	for i := range stageCount {
		if i == stageReadiness && wroteSecret {
			// The secret changes under readiness's feet: look again at once
			// and judge the new secret then.
			out.RequeueAt = earliest(out.RequeueAt, now)
			continue
		}
		r := runStage(i, snap, now, cfg)
		effects := false
		for _, a := range r.Actions {
			if u, ok := a.(UpdateStatus); ok {
				// A new pointer for a new status: the memo's view is keyed
				// by it.
				cert := *snap.Certificate
				cert.Status = u.Status
				snap.Certificate = &cert
				continue
			}
			if _, ok := a.(WriteSecret); ok {
				wroteSecret = true
			}
			out.Actions = append(out.Actions, a)
			effects = true
		}
		out.RequeueAt = earliest(out.RequeueAt, r.RequeueAt)
		if r.Renewal != nil {
			out.Renewal = r.Renewal
		}
		// The why: the trigger's, unless a later stage has effects, or the
		// trigger set Issuing (its own reason then stays the headline until
		// another stage acts).
		if effects || out.Reason == "" || (i == stageIssuing && r.Reason == ReasonIssuanceFailed) {
			out.Reason, out.Message = r.Reason, r.Message
		}
	}
	out.Actions = append(out.Actions, revisionHistory(snap)...)
	if snap.Certificate != orig && !statusEqual(snap.Certificate.Status, orig.Status) {
		out.Actions = append(out.Actions, UpdateStatus{Status: snap.Certificate.Status})
	}
	return out
}

// work is Reconcile's per-call state, allocated once.
type work struct {
	snap Snapshot
	memo memo
}

func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}

// revisionHistory deletes the oldest requests beyond
// spec.revisionHistoryLimit, only while the certificate is Ready and not
// issuing, and only requests of revisions already issued.
func revisionHistory(s *Snapshot) []Action {
	c := s.Certificate
	ready := c.Status.Condition(ConditionReady)
	if ready == nil || ready.Status != StatusTrue || issuing(c) != nil || c.Status.Revision == nil {
		return nil
	}
	limit := DefaultRevisionHistoryLimit
	if l := c.Spec.RevisionHistoryLimit; l != nil && *l > 0 {
		limit = int(*l)
	}
	type old struct {
		rev  int
		name string
	}
	var buf [4]old
	olds := buf[:0]
	for i, r := range s.Requests {
		if rev, ok := s.revisionIn(i); ok && rev <= *c.Status.Revision {
			olds = append(olds, old{rev, r.Name})
		}
	}
	if len(olds) <= limit {
		return nil
	}
	slices.SortFunc(olds, func(a, b old) int { return cmp.Compare(b.rev, a.rev) })
	var acts []Action
	for _, o := range olds[limit:] {
		acts = append(acts, DeleteRequest{Name: o.name, Reason: "revision " + strconv.Itoa(o.rev) + " is beyond the revision history limit of " + strconv.Itoa(limit)})
	}
	return acts
}
