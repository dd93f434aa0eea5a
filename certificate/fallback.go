package certificate

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Issuer fallback (Spec.FallbackIssuerRefs). Which issuer a request
// names is decided from the snapshot alone: the choice for the revision
// being issued is recorded in Status.Issuer before a request names it,
// moved on by a failure the rules count (recordFailure) or by a request
// left unanswered too long (requestmanager), and checked against the
// host's report of issuer health (Snapshot.IssuerHealth) before each new
// request. A certificate without fallback issuers reads none of it.

// hasFallback reports a certificate with fallback issuers.
func (p *pass) hasFallback() bool { return len(p.cert.Spec.FallbackIssuerRefs) > 0 }

// choice is the issuer choice for the next revision: the one Status.Issuer
// records for it, or spec.issuerRef (ReasonFirstIssuer) for a revision
// nothing was chosen for yet — a new revision starts with the first
// issuer. recorded says which. An index beyond the spec's issuers (the
// user shortened the list) is the first issuer.
func (p *pass) choice() (ch IssuerStatus, recorded bool) {
	next := nextRevision(p.cert)
	if is := p.cert.Status.Issuer; is != nil && is.Revision == next && is.Index >= 0 && is.Index < len(p.refs) {
		ch = *is
		ch.IssuerRef = p.refs[ch.Index]
		return ch, true
	}
	return IssuerStatus{Revision: next, Index: 0, IssuerRef: p.refs[0], Reason: ReasonFirstIssuer,
		Message: "each revision starts with spec.issuerRef"}, false
}

// wantIssuer is the issuer a request of the next revision must name:
// spec.issuerRef, or with fallback issuers the one chosen.
func (p *pass) wantIssuer() IssuerRef {
	if !p.hasFallback() {
		return p.refs[0]
	}
	ch, _ := p.choice()
	return ch.IssuerRef
}

// issuedBy is the issuer the secret's annotations name when it is one of
// the spec's issuers, else spec.issuerRef: whose name certlife's
// annotations on the secret carry.
func (p *pass) issuedBy() IssuerRef {
	if p.hasFallback() && p.secret != nil {
		if have, ok := secretIssuer(p.secret); ok && slices.Contains(p.refs, have) {
			return have
		}
	}
	return p.refs[0]
}

// IssuedBy is the issuer of the certificate that secret s holds for c:
// the one certlife's annotations on s name (AnnotationIssuerName, Kind,
// Group) when it is one of c's issuers (Spec.IssuerRefs), else
// spec.issuerRef; defaults filled. It is the issuer to ask about that
// certificate, such as for its renewal window (RenewalAdvisor).
func IssuedBy(c *Certificate, s *Secret) IssuerRef {
	first := c.Spec.IssuerRef.WithDefaults()
	if len(c.Spec.FallbackIssuerRefs) == 0 || s == nil {
		return first
	}
	if have, ok := secretIssuer(s); ok && slices.Contains(c.Spec.IssuerRefs(), have) {
		return have
	}
	return first
}

// secretIssuer is the issuer a secret's annotations name, defaults
// filled; ok is false when they name none.
func secretIssuer(s *Secret) (IssuerRef, bool) {
	a := s.Annotations
	if a[AnnotationIssuerName] == "" {
		return IssuerRef{}, false
	}
	return IssuerRef{Name: a[AnnotationIssuerName], Kind: a[AnnotationIssuerKind], Group: a[AnnotationIssuerGroup]}.WithDefaults(), true
}

// describeIssuers names a list of issuers for messages.
func describeIssuers(refs []IssuerRef) string {
	if len(refs) == 1 {
		return describeRef(refs[0])
	}
	parts := make([]string, len(refs))
	for i, r := range refs {
		parts[i] = describeRef(r)
	}
	return "one of " + strings.Join(parts, ", ")
}

// describeChoice is how the Issuing condition's message names the issuer
// in use: "using <issuer>: <why>".
func describeChoice(ch IssuerStatus) string {
	which := "spec.issuerRef"
	if ch.Index > 0 {
		which = "spec.fallbackIssuerRefs[" + strconv.Itoa(ch.Index-1) + "]"
	}
	return "using " + describeRef(ch.IssuerRef) + " (" + which + "): " + ch.Message
}

// skippedUntil is when issuer i may be tried again, by the host's report
// and by the skips the recorded choice of the next revision carries (what
// another host reported): zero when it may be now.
func (p *pass) skippedUntil(i int) time.Time {
	var until time.Time
	skip := func(h IssuerSkip) {
		if h.IssuerRef.WithDefaults() == p.refs[i] && p.now.Before(h.Until) && h.Until.After(until) {
			until = h.Until
		}
	}
	for _, h := range p.health {
		skip(h)
	}
	if ch, recorded := p.choice(); recorded {
		for _, h := range ch.Skipped {
			skip(h)
		}
	}
	return until
}

// healthy is the first issuer from index from on (after the last, back
// to the first) that the host's report does not skip. held is true when
// it skips every one: until is then when the first of them may be tried
// again.
func (p *pass) healthy(from int) (i int, until time.Time, held bool) {
	n := len(p.refs)
	for k := range n {
		j := (from + k) % n
		t := p.skippedUntil(j)
		if t.IsZero() {
			return j, time.Time{}, false
		}
		if until.IsZero() || t.Before(until) {
			until = t
		}
	}
	return from, until, true
}

// chooseIssuer is the choice for a new request of the next revision: the
// recorded one (or the first issuer), moved on past issuers the host
// reports unhealthy. changed says it differs from what Status.Issuer
// records; held, that every issuer is unhealthy until until.
func (p *pass) chooseIssuer() (ch IssuerStatus, changed, held bool, until time.Time) {
	ch, recorded := p.choice()
	j, until, held := p.healthy(ch.Index)
	if held {
		return ch, !recorded, true, until
	}
	if j != ch.Index {
		skipped := p.refs[ch.Index]
		// The issuers passed over, each with its time, join those the
		// recorded choice passed over and are still skipped.
		var skips []IssuerSkip
		for _, h := range ch.Skipped {
			if p.now.Before(h.Until) {
				skips = append(skips, h)
			}
		}
		for k := ch.Index; k != j; k = (k + 1) % len(p.refs) {
			if u := p.skippedUntil(k); !u.IsZero() && !slices.ContainsFunc(skips, func(h IssuerSkip) bool { return h.IssuerRef.WithDefaults() == p.refs[k] }) {
				skips = append(skips, IssuerSkip{IssuerRef: p.refs[k], Until: u})
			}
		}
		ch = IssuerStatus{Revision: ch.Revision, Index: j, IssuerRef: p.refs[j], Reason: ReasonIssuerUnhealthy,
			Message: fmt.Sprintf("the host skips %s until %s: it failed for other certificates", describeRef(skipped), stamp(p.skippedUntil(ch.Index))),
			Skipped: skips}
		return ch, true, false, time.Time{}
	}
	return ch, !recorded, false, time.Time{}
}

// advance is the choice after ch: the next issuer in the list (after the
// last, the first), with why.
func (p *pass) advance(ch IssuerStatus, reason, message string) IssuerStatus {
	j := (ch.Index + 1) % len(p.refs)
	return IssuerStatus{Revision: ch.Revision, Index: j, IssuerRef: p.refs[j], Reason: reason, Message: message}
}

// withChoice sets the Issuing condition's message to say which issuer is
// used and why: the reason the issuance began (the words before any
// issuer or progress note), then "; using …".
func withChoice(current string, ch IssuerStatus) string {
	return issuanceWhy(current) + "; " + describeChoice(ch)
}

// issuanceWhy is the part of the Issuing condition's message that says
// why the certificate is being issued, without the notes that follow it:
// the issuer in use, and what the issuance waits for.
func issuanceWhy(current string) string {
	why := current
	for _, sep := range []string{"; using ", "; request ", "; no issuer has answered request "} {
		if i := strings.Index(why, sep); i >= 0 {
			why = why[:i]
		}
	}
	return why
}

// recordChoice is the status with ch recorded, and the Issuing
// condition's message saying so.
func recordChoice(p *pass, ch IssuerStatus, now time.Time) Status {
	c := p.cert
	st := cloneStatus(c.Status)
	is := ch
	st.Issuer = &is
	if cond := issuing(c); cond != nil {
		st.Conditions = setCondition(st.Conditions, Condition{Type: ConditionIssuing, Status: StatusTrue, Reason: cond.Reason, Message: withChoice(cond.Message, ch)}, now, c.Generation)
	}
	return st
}

// afterFailure moves the choice on after a failed issuance of the next
// revision whose request named the issuer in use: it counts the failure
// against that issuer and, when a rule says so, makes the next issuer the
// one the next attempt names. It sets st.Issuer, clears st.RetryAfter
// when the choice moved away from the issuer that asked for it, and
// returns words for the Issuing=False condition's message ("" when the
// choice stays).
func afterFailure(p *pass, st *Status, failed IssuerRef, at time.Time) string {
	ch, _ := p.choice()
	if failed.WithDefaults() != ch.IssuerRef {
		return "" // not the issuer's answer (a request the host could not build), or a stale one
	}
	ch.FailedAttempts++
	next := ch
	switch n := p.cfg.fallbackAfterFailures(); {
	case st.RetryAfter != nil && p.cfg.FallbackRetryAfter >= 0 && st.RetryAfter.Sub(at) > p.cfg.fallbackRetryAfter():
		next = p.advance(ch, ReasonIssuerRetryAfter, fmt.Sprintf("%s asked to wait until %s (Retry-After), over %v",
			describeRef(ch.IssuerRef), stamp(*st.RetryAfter), p.cfg.fallbackRetryAfter()))
		st.RetryAfter = nil
	case n > 0 && ch.FailedAttempts >= n:
		words := "an issuance"
		if ch.FailedAttempts > 1 {
			words = strconv.Itoa(ch.FailedAttempts) + " issuances in a row"
		}
		next = p.advance(ch, ReasonIssuerFailedRepeatedly, describeRef(ch.IssuerRef)+" failed "+words)
	}
	st.Issuer = &next
	if next.Index == ch.Index {
		return ""
	}
	return "the next attempt goes to " + describeRef(next.IssuerRef) + ", as " + next.Message
}

// notReady reports a request of the next revision, to the issuer in use,
// that has been left unanswered for Config.FallbackPending: its issuer
// is not ready. at is when that is, or was, the case (zero when the rule
// is off or the request has no creation time).
func notReady(p *pass, r *request, now time.Time) (at time.Time, due bool) {
	if !p.hasFallback() || p.cfg.FallbackPending < 0 || r.created.IsZero() || Answered(r.CertificateRequest) {
		return time.Time{}, false
	}
	at = r.created.Add(p.cfg.fallbackPending())
	return at, !now.Before(at)
}
