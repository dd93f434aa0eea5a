package certificate

import (
	"strings"
	"time"

	"github.com/certlife/certlife/renewal"
)

// renewalConditionTypes are the condition types the renewal package owns
// on a certificate; readiness sets the ones a decision lists and removes the
// rest.
var renewalConditionTypes = []string{
	renewal.ConditionRenewalDisabled, renewal.ConditionRenewalDeferred, renewal.ConditionRenewalWindowBypassed,
	renewal.ConditionRenewalConfigInvalid, renewal.ConditionRenewalWindowsIgnored,
}

// Readiness is the readiness stage: it sets the Ready condition — False
// with SecretNotOwned for a target secret that holds data certlife did not
// write (naming it and how to hand it over), with InvalidSpec and the
// field errors for an invalid spec, with the first failing trigger check's
// reason (TemporaryCertificate while the secret holds only a temporary
// certificate), with Expired, or with SecretDrifted and what drifted; True
// otherwise — the validity and renewal time in status (none for a
// temporary certificate), and the renewal conditions and status. While it
// is False and an
// issuance waits for the issuer, its message says so too, as the Issuing
// condition's does. Right after an issuance, a secret that is missing
// (and not confirmed missing, Snapshot.SecretAbsenceConfirmed) may be a
// read cache behind the write: Ready is Unknown, SecretNotCaughtUp, until
// Config.CacheGrace ends. It returns an UpdateStatus only when the status
// changes, so a healthy certificate causes no writes, and asks to look
// again at notAfter, when Ready must turn into Expired.
func Readiness(s *Snapshot, now time.Time, cfg Config) Result {
	if res, ok := checkInput(s, now, StageReadiness); !ok {
		return res
	}
	p := newPass(s, now, cfg)
	return finish(p, readiness(p, now, cfg))
}

func readiness(p *pass, now time.Time, cfg Config) Result {
	c := p.cert
	res := Result{Stage: StageReadiness}
	setReady := func(status, reason, msg string) Result {
		st := cloneStatus(c.Status)
		st.Conditions = setCondition(st.Conditions, Condition{Type: ConditionReady, Status: status, Reason: reason, Message: msg}, now, c.Generation)
		res.Reason, res.Message = reason, msg
		if !statusEqual(st, c.Status) {
			res.Actions = []Action{UpdateStatus{Status: st}}
		}
		return res
	}
	if held := heldSecret(p); held != nil {
		res.RequeueAt = heldRecheck(p, now)
		return setReady(StatusFalse, ReasonSecretNotOwned, heldMessage(p, held))
	}
	if p.specErr != nil {
		return setReady(StatusFalse, ReasonInvalidSpec, "the spec is invalid: "+p.specErr.Error())
	}
	if o := owner(p); o != c {
		return setReady(StatusFalse, ReasonSecretInUse, "secret "+c.Spec.SecretName+" belongs to certificate "+o.Name+"; give this certificate its own secretName")
	}
	if until, msg, hold := secretNotCaughtUp(p, now, cfg); hold {
		// Judge the secret once the cache shows it. A secret that still
		// holds the previous certificate holds a valid one: the status
		// stays as the issuance left it. A missing one may be a cache
		// behind or a secret deleted: Ready is Unknown until the grace
		// ends.
		res.RequeueAt = until
		if p.secret != nil {
			res.Reason, res.Message = ReasonSecretNotCaughtUp, msg
			return res
		}
		return setReady(StatusUnknown, ReasonSecretNotCaughtUp, msg+"; if it is still missing then, the certificate is issued again")
	}
	reason, message := runChain(p)
	var (
		leaf        = false
		nb, na, rt  time.Time
		rs          renewal.Status
		renewalCond []renewal.Condition
	)
	// A temporary certificate has no validity or renewal to report.
	if l := p.leaf(); l != nil && !p.temporary() {
		leaf = true
		nb, na = l.NotBefore, l.NotAfter
		d := p.renewal
		res.Renewal = d
		rt, rs, renewalCond = d.RenewalTime, d.Status, d.Conditions
		switch {
		case reason == "" && !now.Before(na):
			reason, message = ReasonExpired, "the certificate expired at "+stamp(na)
		case reason == "" && len(p.drift) > 0:
			reason, message = ReasonSecretDrifted, "secret "+p.secret.Name+" drifted: "+strings.Join(p.drift, "; ")
			if err := cannotRewrite(p); err != nil {
				message += "; it is not rewritten from what it holds: " + err.Error()
			}
		}
		if now.Before(na) {
			res.RequeueAt = na
		}
	}
	// cert-manager's words for the same state, so that a Certificate it
	// left Ready is not rewritten for the wording alone.
	ready := Condition{Type: ConditionReady, Status: StatusTrue, Reason: ReasonReady, Message: "Certificate is up to date and has not expired"}
	if reason != "" {
		// Not Ready: say too what the issuance that fixes it waits for.
		if pr, ok := issuerProgress(p, now, cfg); ok {
			if pr.report != "" {
				message += "; " + pr.report
			} else {
				res.RequeueAt = earliest(res.RequeueAt, pr.at)
			}
		}
		ready = Condition{Type: ConditionReady, Status: StatusFalse, Reason: reason, Message: message}
	}
	res.Reason, res.Message = ready.Reason, ready.Message

	st := cloneStatus(c.Status)
	if leaf {
		st.NotBefore, st.NotAfter = &nb, &na
		st.RenewalTime, st.Renewal = &rt, &rs
		st.Conditions = setRenewalConditions(st.Conditions, renewalCond, now, c.Generation)
		sameLeaf := c.Status.NotBefore != nil && c.Status.NotAfter != nil && c.Status.NotBefore.Equal(nb) && c.Status.NotAfter.Equal(na)
		st.RenewalInfo = renewalInfo(c.Status.RenewalInfo, sameLeaf, p, now)
	} else {
		st.NotBefore, st.NotAfter, st.RenewalTime, st.RenewalInfo = nil, nil, nil, nil
	}
	st.Conditions = setCondition(st.Conditions, ready, now, c.Generation)
	if !statusEqual(st, c.Status) {
		res.Actions = []Action{UpdateStatus{Status: st}}
	}
	return res
}

// renewalInfo is the status's record of what the CA said of the current
// certificate's renewal window: nil when the snapshot carries nothing
// of it (an issuer that gives none). LastChecked is now when the next
// check differs from the one recorded — the host asked the CA in this
// pass — and is kept otherwise, so that a pass answered from the host's
// memory writes nothing.
//
// A record of the same certificate (sameLeaf) whose next check is still
// ahead is kept as it stands, whatever this pass's host says. Hosts that
// share the certificate (replicas of one service, a process restarted)
// each remember their own last check, with its own next one: were each
// to record its own, they would overwrite one another on every pass, and
// every write would bring the others' passes, for as long as they run.
// The record is for users to read (no decision reads it), so one that is
// a check behind costs nothing; the host that finds it due records what
// it knows then.
func renewalInfo(was *RenewalInfoStatus, sameLeaf bool, p *pass, now time.Time) *RenewalInfoStatus {
	if p.ari == nil && p.ariNext.IsZero() && p.ariErr == "" {
		return nil
	}
	if was != nil && sameLeaf && was.NextCheck != nil && now.Before(*was.NextCheck) {
		kept := *was
		if w := was.SuggestedWindow; w != nil {
			cw := *w
			kept.SuggestedWindow = &cw
		}
		return &kept
	}
	out := &RenewalInfoStatus{LastError: p.ariErr}
	if w := p.ari; w != nil {
		out.SuggestedWindow = &renewal.ARIWindow{Start: wholeSecond(w.Start), End: wholeSecond(w.End), ExplanationURL: w.ExplanationURL}
	}
	if !p.ariNext.IsZero() {
		next := wholeSecond(p.ariNext)
		out.NextCheck = &next
		if was != nil && was.NextCheck != nil && was.NextCheck.Equal(next) && was.LastChecked != nil {
			last := *was.LastChecked
			out.LastChecked = &last
		} else {
			checked := wholeSecond(now)
			out.LastChecked = &checked
		}
	}
	return out
}

// wholeSecond is t truncated to the second, in UTC.
func wholeSecond(t time.Time) time.Time { return t.Truncate(time.Second).UTC() }

func renewalInfoEqual(a, b *RenewalInfoStatus) bool {
	if a == nil || b == nil {
		return a == b
	}
	if (a.SuggestedWindow == nil) != (b.SuggestedWindow == nil) ||
		a.SuggestedWindow != nil && (!a.SuggestedWindow.Start.Equal(b.SuggestedWindow.Start) ||
			!a.SuggestedWindow.End.Equal(b.SuggestedWindow.End) || a.SuggestedWindow.ExplanationURL != b.SuggestedWindow.ExplanationURL) {
		return false
	}
	return timePtrEqual(a.LastChecked, b.LastChecked) && timePtrEqual(a.NextCheck, b.NextCheck) && a.LastError == b.LastError
}

// setRenewalConditions sets the renewal conditions a decision lists and
// removes the other renewal condition types.
func setRenewalConditions(conds []Condition, want []renewal.Condition, now time.Time, gen int64) []Condition {
	for _, w := range want {
		conds = setCondition(conds, Condition{Type: w.Type, Status: w.Status, Reason: w.Reason, Message: w.Message}, now, gen)
	}
	listed := func(t string) bool {
		for _, w := range want {
			if w.Type == t {
				return true
			}
		}
		return false
	}
	out := conds[:0:0]
	for _, c := range conds {
		if isRenewalCondition(c.Type) && !listed(c.Type) {
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

// statusEqual compares two statuses field by field.
func statusEqual(a, b Status) bool {
	if len(a.Conditions) != len(b.Conditions) ||
		!intPtrEqual(a.Revision, b.Revision) || a.NextPrivateKeySecretName != b.NextPrivateKeySecretName ||
		!timePtrEqual(a.LastFailureTime, b.LastFailureTime) || !intPtrEqual(a.FailedIssuanceAttempts, b.FailedIssuanceAttempts) ||
		!timePtrEqual(a.RetryAfter, b.RetryAfter) || !timePtrEqual(a.NotBefore, b.NotBefore) ||
		!timePtrEqual(a.NotAfter, b.NotAfter) || !timePtrEqual(a.RenewalTime, b.RenewalTime) ||
		!renewalStatusEqual(a.Renewal, b.Renewal) || !renewalInfoEqual(a.RenewalInfo, b.RenewalInfo) ||
		(a.Issuer == nil) != (b.Issuer == nil) || a.Issuer != nil && !a.Issuer.Equal(*b.Issuer) {
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
