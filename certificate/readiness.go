package certificate

import (
	"time"

	"github.com/certlife/certlife/renewal"
)

// ReasonReady is the Ready condition's reason when every check passes.
const ReasonReady = "Ready"

// renewalConditionTypes are the condition types the renewal package owns
// on a certificate; readiness sets the ones a decision lists and removes the
// rest.
var renewalConditionTypes = []string{
	renewal.ConditionRenewalDisabled, renewal.ConditionRenewalDeferred, renewal.ConditionRenewalWindowBypassed,
	renewal.ConditionRenewalConfigInvalid, renewal.ConditionRenewalWindowsIgnored,
}

// Readiness is the readiness stage: it sets the Ready condition (False with
// the first failing trigger check's reason, or Expired; True otherwise), the
// validity and renewal time in status, and the renewal conditions and status
// of seed 004. It returns an UpdateStatus only when the status changes, so
// a healthy certificate causes no writes, and asks to look again at
// notAfter, when Ready must turn into Expired.
func Readiness(s *Snapshot, now time.Time, cfg Config) Result {
	if s == nil || s.Certificate == nil {
		return Result{Reason: ReasonNoCertificate, Message: "the snapshot holds no certificate"}
	}
	c := s.Certificate
	if o := owner(s); o != c {
		st := cloneStatus(c.Status)
		msg := "secret " + c.Spec.SecretName + " belongs to certificate " + o.Name + "; give this certificate its own secretName"
		st.Conditions = setCondition(st.Conditions, Condition{Type: ConditionReady, Status: StatusFalse, Reason: ReasonSecretInUse, Message: msg}, now, c.Generation)
		res := Result{Reason: ReasonSecretInUse, Message: msg}
		if !statusEqual(st, c.Status) {
			res.Actions = []Action{UpdateStatus{Status: st}}
		}
		return res
	}
	v := newView(s)
	if until, msg, hold := secretNotCaughtUp(v, now, cfg); hold {
		// Judge the secret once the cache shows it; until then leave the
		// status as it is.
		return Result{Reason: ReasonSecretNotCaughtUp, Message: msg, RequeueAt: until}
	}
	reason, message := runChain(v, now, cfg)
	var res Result
	var (
		leaf        = false
		nb, na, rt  time.Time
		rs          renewal.Status
		renewalOK   bool
		renewalCond []renewal.Condition
	)
	if p := v.secret(); p != nil && p.Leaf != nil {
		leaf = true
		nb, na = p.Leaf.NotBefore, p.Leaf.NotAfter
		if d, _, ok := decideRenewal(v, now, cfg); ok {
			renewalOK, rt, rs, renewalCond = true, d.RenewalTime, d.Status, d.Conditions
		}
		if reason == "" && !now.Before(na) {
			reason, message = ReasonExpired, "the certificate expired at "+stamp(na)
		}
		if now.Before(na) {
			res.RequeueAt = na
		}
	}
	ready := Condition{Type: ConditionReady, Status: StatusTrue, Reason: ReasonReady, Message: "the certificate is up to date and has not expired"}
	if reason != "" {
		ready = Condition{Type: ConditionReady, Status: StatusFalse, Reason: reason, Message: message}
	}
	res.Reason, res.Message = ready.Reason, ready.Message

	// The common case, a healthy certificate seen again, changes nothing:
	// find that out without building a new status.
	old := &c.Status
	same := conditionHolds(old.Conditions, ready, c.Generation)
	if leaf {
		same = same && timePtrIs(old.NotBefore, nb) && timePtrIs(old.NotAfter, na)
		if renewalOK {
			same = same && timePtrIs(old.RenewalTime, rt) && renewalStatusEqual(old.Renewal, &rs) &&
				renewalConditionsHold(old.Conditions, renewalCond, c.Generation)
		}
	} else {
		same = same && old.NotBefore == nil && old.NotAfter == nil && old.RenewalTime == nil
	}
	if same {
		return res
	}

	st := cloneStatus(c.Status)
	if leaf {
		// Fresh copies, so the locals above stay off the heap.
		nb, na := nb, na
		st.NotBefore, st.NotAfter = &nb, &na
		if renewalOK {
			rt, rs := rt, rs
			st.RenewalTime, st.Renewal = &rt, &rs
			st.Conditions = setRenewalConditions(st.Conditions, renewalCond, now, c.Generation)
		}
	} else {
		st.NotBefore, st.NotAfter, st.RenewalTime = nil, nil, nil
	}
	st.Conditions = setCondition(st.Conditions, ready, now, c.Generation)
	if !statusEqual(st, c.Status) {
		res.Actions = []Action{UpdateStatus{Status: st}}
	}
	return res
}

// conditionHolds reports whether setting c on conds would change nothing.
func conditionHolds(conds []Condition, c Condition, gen int64) bool {
	for i := range conds {
		if o := &conds[i]; o.Type == c.Type {
			return o.Status == c.Status && o.Reason == c.Reason && o.Message == c.Message && o.ObservedGeneration == gen
		}
	}
	return false
}

// renewalConditionsHold reports whether setRenewalConditions would change
// nothing: every wanted condition holds and no other renewal condition is
// set.
func renewalConditionsHold(conds []Condition, want []renewal.Condition, gen int64) bool {
	for _, w := range want {
		if !conditionHolds(conds, Condition{Type: w.Type, Status: w.Status, Reason: w.Reason, Message: w.Message}, gen) {
			return false
		}
	}
	for i := range conds {
		if !isRenewalCondition(conds[i].Type) {
			continue
		}
		listed := false
		for _, w := range want {
			listed = listed || w.Type == conds[i].Type
		}
		if !listed {
			return false
		}
	}
	return true
}

func timePtrIs(p *time.Time, t time.Time) bool { return p != nil && p.Equal(t) }

// setRenewalConditions sets the renewal conditions a decision lists and
// removes the other renewal condition types.
func setRenewalConditions(conds []Condition, want []renewal.Condition, now time.Time, gen int64) []Condition {
	listed := map[string]bool{}
	for _, w := range want {
		listed[w.Type] = true
		conds = setCondition(conds, Condition{Type: w.Type, Status: w.Status, Reason: w.Reason, Message: w.Message}, now, gen)
	}
	out := conds[:0:0]
	for _, c := range conds {
		if isRenewalCondition(c.Type) && !listed[c.Type] {
			continue
		}
		out = append(out, c)
	}
	return out
}

func isRenewalCondition(t string) bool {
	for _, r := range renewalConditionTypes {
		if r == t {
			return true
		}
	}
	return false
}

// statusEqual compares two statuses field by field (reflect.DeepEqual was a
// fifth of a cached Reconcile).
func statusEqual(a, b Status) bool {
	if len(a.Conditions) != len(b.Conditions) ||
		!intPtrEqual(a.Revision, b.Revision) || a.NextPrivateKeySecretName != b.NextPrivateKeySecretName ||
		!timePtrEqual(a.LastFailureTime, b.LastFailureTime) || !intPtrEqual(a.FailedIssuanceAttempts, b.FailedIssuanceAttempts) ||
		!timePtrEqual(a.RetryAfter, b.RetryAfter) || !timePtrEqual(a.NotBefore, b.NotBefore) ||
		!timePtrEqual(a.NotAfter, b.NotAfter) || !timePtrEqual(a.RenewalTime, b.RenewalTime) ||
		!renewalStatusEqual(a.Renewal, b.Renewal) {
		return false
	}
	for i := range a.Conditions {
		x, y := a.Conditions[i], b.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message ||
			!x.LastTransitionTime.Equal(y.LastTransitionTime) || x.ObservedGeneration != y.ObservedGeneration {
			return false
		}
	}
	return true
}

func intPtrEqual(a, b *int) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func timePtrEqual(a, b *time.Time) bool { return (a == nil) == (b == nil) && (a == nil || a.Equal(*b)) }

func renewalStatusEqual(a, b *renewal.Status) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	if a == nil {
		return true
	}
	if a.Policy != b.Policy || (a.Windows == nil) != (b.Windows == nil) {
		return false
	}
	return a.Windows == nil || *a.Windows == *b.Windows
}
