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
	reason, message := runChain(v, now, cfg)
	st := cloneStatus(c.Status)
	var res Result
	if p := v.secret(); p != nil && p.Leaf != nil {
		nb, na := p.Leaf.NotBefore, p.Leaf.NotAfter
		st.NotBefore, st.NotAfter = &nb, &na
		if d, _, ok := decideRenewal(v, now, cfg); ok {
			rt := d.RenewalTime
			st.RenewalTime = &rt
			rs := d.Status
			st.Renewal = &rs
			st.Conditions = setRenewalConditions(st.Conditions, d.Conditions, now, c.Generation)
		}
		if reason == "" && !now.Before(na) {
			reason, message = ReasonExpired, "the certificate expired at "+stamp(na)
		}
		if now.Before(na) {
			res.RequeueAt = na
		}
	} else {
		st.NotBefore, st.NotAfter, st.RenewalTime = nil, nil, nil
	}
	ready := Condition{Type: ConditionReady, Status: StatusTrue, Reason: ReasonReady, Message: "the certificate is up to date and has not expired"}
	if reason != "" {
		ready = Condition{Type: ConditionReady, Status: StatusFalse, Reason: reason, Message: message}
	}
	st.Conditions = setCondition(st.Conditions, ready, now, c.Generation)
	res.Reason, res.Message = ready.Reason, ready.Message
	if !statusEqual(st, c.Status) {
		res.Actions = []Action{UpdateStatus{Status: st}}
	}
	return res
}

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
