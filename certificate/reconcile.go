package certificate

import (
	"time"
)

// runStage runs one stage on a pass.
func runStage(st Stage, p *pass, now time.Time, cfg Config) Result {
	switch st {
	case StageTrigger:
		return trigger(p, now, cfg)
	case StageKeyManager:
		return keymanager(p)
	case StageRequestManager:
		return requestmanager(p, now)
	case StageIssuing:
		return issuingStage(p, now, cfg)
	}
	return readiness(p, now, cfg)
}

// Reconcile runs the five stages in order on one snapshot — trigger,
// keymanager, requestmanager, issuing, readiness — each on the snapshot
// with the effects of the stages before it applied: a status change, a
// secret written (the secret as the write leaves it), requests and
// next-private-key secrets deleted. What a stage creates — a key, a
// request, a temporary certificate — needs the host's randomness and shows
// on the next pass. The outcome is
// exactly what calling the stages one after another gives, with the host
// carrying out each stage's actions in between; Reconcile gets there in one
// pass.
//
// The result lists every stage's actions in order except status changes,
// which are folded into a single UpdateStatus, last (only when the status
// changed); the earliest time any stage asked to look again; each stage's
// own reason and message in Steps; and as its headline (Stage, Reason,
// Message) the last of keymanager, requestmanager and issuing that acted,
// else the trigger. IssuanceReason says why the certificate is being
// issued, while it is.
//
// Hosts that prefer one controller per stage call the stages alone; the
// outcome is the same, over more passes.
func Reconcile(s *Snapshot, now time.Time, cfg Config) Result {
	if res, ok := checkInput(s, now, ""); !ok {
		return res
	}
	p := newPass(s, now, cfg)
	out := Result{Steps: make([]Step, 0, len(stageOrder))}
	head := -1
	for i, st := range stageOrder {
		r := runStage(st, p, now, cfg)
		out.Steps = append(out.Steps, Step{Stage: st, Reason: r.Reason, Message: r.Message, Acted: len(r.Actions) > 0, Actions: r.Actions, RequeueAt: r.RequeueAt})
		for _, a := range r.Actions {
			p.apply(a)
			if _, ok := a.(UpdateStatus); !ok {
				out.Actions = append(out.Actions, a)
			}
		}
		out.RequeueAt = earliest(out.RequeueAt, r.RequeueAt)
		if r.Renewal != nil {
			out.Renewal = r.Renewal
		}
		if st != StageTrigger && st != StageReadiness && len(r.Actions) > 0 {
			head = i
		}
	}
	if head < 0 {
		head = 0
	}
	out.Stage, out.Reason, out.Message = out.Steps[head].Stage, out.Steps[head].Reason, out.Steps[head].Message
	if !statusEqual(p.cert.Status, s.Certificate.Status) {
		out.Actions = append(out.Actions, UpdateStatus{Status: p.cert.Status})
	}
	out.IssuanceReason, out.IssuanceMessage = issuance(p.cert.Status)
	return out
}

// finish completes a stage's result for a caller that runs it alone: the
// issuance it leaves behind, from the status it writes (or the one it
// read).
func finish(p *pass, res Result) Result {
	st := p.cert.Status
	for _, a := range res.Actions {
		if u, ok := a.(UpdateStatus); ok {
			st = u.Status
		}
	}
	res.IssuanceReason, res.IssuanceMessage = issuance(st)
	return res
}

// issuance is the Issuing condition's reason and message when it is True.
func issuance(st Status) (reason, message string) {
	if c := st.Condition(ConditionIssuing); c != nil && c.Status == StatusTrue {
		return c.Reason, c.Message
	}
	return "", ""
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
