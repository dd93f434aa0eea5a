package certificate

import (
	"reflect"
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
	v := newView(s)
	reason, message := "", ""
	for _, ch := range checks {
		if reason, message = ch.fn(v, now, cfg); reason != "" {
			break
		}
	}
	st := cloneStatus(c.Status)
	var res Result
	if p := v.secret(); p != nil && p.Leaf != nil {
		nb, na := p.Leaf.NotBefore, p.Leaf.NotAfter
		st.NotBefore, st.NotAfter = &nb, &na
		if in, ok := renewalInput(v); ok {
			d := renewal.Decide(in, now, cfg.Renewal)
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
	if !reflect.DeepEqual(st, c.Status) {
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
