package certificate

import (
	"github.com/certlife/certlife/keys"
	"sort"
	"strconv"
	"time"
)

// stage is one pure stage.
type stage struct {
	name string
	fn   func(*Snapshot, time.Time, Config) Result
}

// stages in the order Reconcile runs them.
var stages = []stage{
	{"trigger", Trigger},
	{"keymanager", Keymanager},
	{"requestmanager", Requestmanager},
	{"issuing", Issuing},
	{"readiness", Readiness},
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
	cert := *orig
	cert.Status = cloneStatus(orig.Status)
	snap := *s
	snap.Certificate = &cert
	snap.memo = &memo{}
	// Parse each input once for all stages: the secret here, the requests'
	// CSRs lazily through the memo, unless the host's cache holds them.
	if snap.Parsed == nil && snap.Secret != nil {
		snap.Parsed, _ = keys.ParseSecretData(snap.Secret.Data)
	}

	var out Result
	wroteSecret := false
	for _, st := range stages {
		if st.name == "readiness" && wroteSecret {
			// The secret changes under readiness's feet: look again at once
			// and judge the new secret then.
			out.RequeueAt = earliest(out.RequeueAt, now)
			continue
		}
		r := st.fn(&snap, now, cfg)
		effects := false
		for _, a := range r.Actions {
			if u, ok := a.(UpdateStatus); ok {
				cert.Status = u.Status
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
		if effects || out.Reason == "" || (st.name == "issuing" && r.Reason == ReasonIssuanceFailed) {
			out.Reason, out.Message = r.Reason, r.Message
		}
	}
	out.Actions = append(out.Actions, revisionHistory(&snap)...)
	if !statusEqual(cert.Status, orig.Status) {
		out.Actions = append(out.Actions, UpdateStatus{Status: cert.Status})
	}
	return out
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
	var olds []old
	for _, r := range s.Requests {
		if rev, ok := revisionOf(r); ok && rev <= *c.Status.Revision {
			olds = append(olds, old{rev, r.Name})
		}
	}
	if len(olds) <= limit {
		return nil
	}
	sort.Slice(olds, func(i, j int) bool { return olds[i].rev > olds[j].rev })
	var acts []Action
	for _, o := range olds[limit:] {
		acts = append(acts, DeleteRequest{Name: o.name, Reason: "revision " + strconv.Itoa(o.rev) + " is beyond the revision history limit of " + strconv.Itoa(limit)})
	}
	return acts
}
