package certificate

import (
	"cmp"
	"crypto/x509"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/renewal"
)

// spentBefore reports a request that was answered (issued or failed)
// before the current Issuing transition: it belongs to an earlier attempt.
// A request without a creation time never counts as spent.
func spentBefore(r *request, issuingCond *Condition) bool {
	if r.created.IsZero() || !r.created.Before(issuingCond.LastTransitionTime) {
		return false
	}
	if ready := r.Condition(RequestConditionReady); ready != nil && (ready.Status == StatusTrue || ready.Reason == RequestReasonFailed) {
		return true
	}
	failed, _, _ := requestFailed(r.CertificateRequest)
	return failed
}

// requestFailed reports a request the issuer answered with a failure, the
// reason for the certificate's Issuing condition, and a message naming the
// request.
func requestFailed(r *CertificateRequest) (failed bool, reason, message string) {
	if c := r.Condition(RequestConditionDenied); c != nil && c.Status == StatusTrue {
		return true, ReasonDenied, "request " + r.Name + " was denied: " + c.Message
	}
	if c := r.Condition(RequestConditionInvalidRequest); c != nil && c.Status == StatusTrue {
		return true, ReasonInvalidRequest, "request " + r.Name + " is invalid: " + c.Message
	}
	if c := r.Condition(RequestConditionReady); c != nil && c.Status == StatusFalse && c.Reason == RequestReasonFailed {
		return true, ReasonFailed, "request " + r.Name + " failed: " + c.Message
	}
	return false, "", ""
}

// failedBefore reports a failed request whose failure predates the current
// Issuing transition: it was counted already, by an earlier attempt.
func failedBefore(r *CertificateRequest, issuingCond *Condition) bool {
	failed, _, _ := requestFailed(r)
	return failed && r.Status.FailureTime != nil && r.Status.FailureTime.Before(issuingCond.LastTransitionTime)
}

// checkTemplate is keys.RequestTemplate.Validate, the rules BuildCSR
// applies before it builds (a few microseconds; keys.CheckTemplate's
// trial build would cost a signature on every request made); a test puts
// a stricter one in its place to reach what no valid spec reaches.
var checkTemplate = keys.RequestTemplate.Validate

// deletedRequestRecheck is how soon the requestmanager looks again after
// deleting an outdated request.
const deletedRequestRecheck = 5 * time.Second

// RequestManager is the requestmanager stage. While Issuing is True and
// the next private key exists, it keeps exactly one request, for revision
// status.revision+1, named RequestName(certificate, revision): it deletes
// requests with a missing or bad revision, and requests of the next
// revision that no longer match the spec, are not for the next private
// key, or were answered before the current issuance began, and any beyond
// the first that matches (oldest first, then by name); it creates the
// request when none is left. A request deleted in this pass is re-created
// on a later pass, never in the same one, so a create never meets the
// deletion of its own name. Before it asks for a request it checks that
// the host can build its CSR (keys.RequestTemplate.Validate, the rules
// keys.BuildCSR applies): one it cannot is
// recorded as a failed issuance (ReasonRequestNotBuildable, the Issuing
// condition's message saying why), so the backoff applies and the
// status shows the reason.
//
// While the target secret holds data certlife did not write
// (ReasonSecretNotOwned) it makes and deletes no request.
//
// When not issuing and Ready, it keeps the revision history: requests of
// issued revisions beyond spec.revisionHistoryLimit, oldest first, are
// deleted.
func RequestManager(s *Snapshot, now time.Time, cfg Config) Result {
	if res, ok := checkInput(s, now, StageRequestManager); !ok {
		return res
	}
	p := newPass(s, now, cfg)
	return finish(p, requestmanager(p, now))
}

func requestmanager(p *pass, now time.Time) Result {
	res := Result{Stage: StageRequestManager}
	c := p.cert
	cond := issuing(c)
	if cond == nil {
		res.Actions = revisionHistory(p)
		res.Reason, res.Message = ReasonNotIssuing, "not issuing"
		if len(res.Actions) > 0 {
			res.Reason, res.Message = ReasonRevisionHistory, "deleting requests beyond the revision history limit"
		}
		return res
	}
	if p.specErr != nil {
		res.Reason, res.Message = ReasonInvalidSpec, "no request is made until the spec is corrected"
		return res
	}
	if held := heldSecret(p); held != nil {
		res.Reason, res.Message = ReasonSecretNotOwned, "no request is made: "+heldMessage(p, held)
		return res
	}
	keyName := c.Status.NextPrivateKeySecretName
	k := p.nextKey(keyName)
	if k == nil || k.err != nil {
		res.Reason, res.Message = ReasonWaitingForKey, "waiting for "+describeKey(keyName)
		return res
	}
	next := nextRevision(c)
	var current *request
	deletedNext := false
	for i := range p.requests {
		r := &p.requests[i]
		if r.revision == 0 {
			res.Actions = append(res.Actions, DeleteRequest{Name: r.Name, IssuerRef: r.Spec.IssuerRef, Reason: "missing or invalid " + AnnotationRevision + " annotation"})
			continue
		}
		if r.revision != next {
			continue // earlier revisions are the revision history's
		}
		why := ""
		switch {
		case current != nil:
			why = "request " + current.Name + " is the current one for revision " + strconv.Itoa(next)
		case spentBefore(r, cond):
			why = "it was answered before this issuance began"
		case failedBefore(r.CertificateRequest, cond):
			why = "its failure predates the current issuance"
		default:
			why = requestMismatch(r, &c.Spec, []IssuerRef{p.wantIssuer()}, k.key.Public(), keyName)
		}
		if why != "" {
			res.Actions = append(res.Actions, DeleteRequest{Name: r.Name, IssuerRef: r.Spec.IssuerRef, Reason: why})
			deletedNext = true
			continue
		}
		current = r
	}
	switch {
	case current != nil:
		if at, due := notReady(p, current, now); due {
			return replaceNotReady(p, current, res, now)
		} else if !at.IsZero() {
			res.RequeueAt = at
		}
		res.Reason, res.Message = ReasonRequestPending, "request "+current.Name+" for revision "+strconv.Itoa(next)+" is current"
		return res
	case deletedNext:
		// The deletion's watch event brings the next pass; the requeue is a
		// backstop, late enough not to spin while a read cache still shows
		// the deleted request.
		res.Reason, res.RequeueAt = ReasonRequestPending, now.Add(deletedRequestRecheck)
		res.Message = "an outdated request for revision " + strconv.Itoa(next) + " is deleted; its replacement is created on the next pass"
		return res
	}
	issuerRef := c.Spec.IssuerRef
	using := ""
	if p.hasFallback() {
		ch, changed, held, until := p.chooseIssuer()
		cond := issuing(c)
		switch {
		case held:
			res.Reason, res.RequeueAt = ReasonAllIssuersUnhealthy, until
			res.Message = "no request for revision " + strconv.Itoa(next) + " is made: the host skips every issuer of the certificate, the first until " + stamp(until)
			return res
		case changed || !strings.Contains(cond.Message, "; "+describeChoice(ch)):
			// The choice is written before a request names it: a request
			// always names the issuer the status records.
			res.Actions = []Action{UpdateStatus{Status: recordChoice(p, ch, now)}}
			res.Reason, res.RequeueAt = ReasonRequestPending, now
			res.Message = "the request for revision " + strconv.Itoa(next) + " goes to " + describeRef(ch.IssuerRef) + " (" + ch.Reason + "): " + ch.Message + "; it is created on the next pass"
			return res
		}
		issuerRef = c.Spec.IssuerRef
		if ch.Index > 0 {
			issuerRef = c.Spec.FallbackIssuerRefs[ch.Index-1]
		}
		using = ", to " + describeRef(ch.IssuerRef)
	}
	name := RequestName(c.Name, next)
	req := CertificateRequest{
		ObjectMeta: ObjectMeta{Name: name, Namespace: c.Namespace, OwnerUID: c.UID, Annotations: map[string]string{
			AnnotationRevision: strconv.Itoa(next), AnnotationCertificateName: c.Name,
			AnnotationPrivateKeySecretName: keyName,
			AnnotationCreatedAt:            now.UTC().Format(time.RFC3339Nano),
		}},
		Spec: RequestSpec{IssuerRef: issuerRef, Duration: c.Spec.Duration, IsCA: c.Spec.IsCA, Usages: c.Spec.Usages},
	}
	tmpl := c.Spec.Template()
	if err := checkTemplate(tmpl); err != nil {
		// Validate accepts what the host builds; should the two ever part,
		// the host would fail on every pass and the status would never
		// say why.
		r := recordFailure(p, &CertificateRequest{}, ReasonRequestNotBuildable,
			"no certificate signing request can be built from the spec: "+err.Error(), now, now)
		r.Stage = StageRequestManager
		return r
	}
	replaces := replacedCertificate(p)
	if replaces != "" {
		req.Annotations[AnnotationReplaces] = replaces
	}
	res.Actions = append(res.Actions, CreateRequest{Request: req, KeySecretName: keyName, Template: tmpl, Replaces: replaces})
	res.Reason, res.Message = ReasonRequestCreated, "creating request "+name+" for revision "+strconv.Itoa(next)+" with "+describeKey(keyName)+using
	return res
}

// replacedCertificate is the ARI identifier of the certificate a new
// request renews: the secret's certificate, when the issuer that the
// secret's annotations name is the one the request names (name, kind and
// group) and the
// certificate shares at least one identifier (DNS name, common name, IP
// address) with the spec; never a temporary certificate. A CA refuses "replaces" for an order that shares
// no identifier with the replaced certificate (RFC 9773 §5), and knows
// nothing of another issuer's certificates. "" when there is none.
func replacedCertificate(p *pass) string {
	leaf := p.leaf()
	if leaf == nil || p.secret == nil || keys.IsTemporaryCertificate(leaf) {
		return ""
	}
	a := p.secret.Annotations
	if a[AnnotationIssuerName] == "" {
		return ""
	}
	have := IssuerRef{Name: a[AnnotationIssuerName], Kind: a[AnnotationIssuerKind], Group: a[AnnotationIssuerGroup]}.WithDefaults()
	if have != p.wantIssuer() {
		return ""
	}
	if !sharesIdentifier(leaf, &p.cert.Spec) {
		return ""
	}
	id, err := renewal.CertID(leaf)
	if err != nil {
		return "" // no authority key identifier: nothing to name
	}
	return id
}

// sharesIdentifier reports whether the certificate and the spec have a DNS
// name (the common name counted as one), or an IP address, in common.
func sharesIdentifier(leaf *x509.Certificate, spec *Spec) bool {
	names := map[string]bool{}
	add := func(n string) {
		if n != "" {
			names[strings.ToLower(strings.TrimSuffix(n, "."))] = true
		}
	}
	for _, n := range leaf.DNSNames {
		add(n)
	}
	add(leaf.Subject.CommonName)
	for _, ip := range leaf.IPAddresses {
		add(ip.String())
	}
	for _, n := range spec.DNSNames {
		if names[strings.ToLower(strings.TrimSuffix(n, "."))] {
			return true
		}
	}
	if spec.CommonName != "" && names[strings.ToLower(strings.TrimSuffix(spec.CommonName, "."))] {
		return true
	}
	for _, s := range spec.IPAddresses {
		if ip := net.ParseIP(s); ip != nil && names[ip.String()] {
			return true
		}
	}
	return false
}

// revisionHistory deletes the oldest requests beyond
// spec.revisionHistoryLimit, only while the certificate is Ready and not
// issuing, and only requests of revisions already issued.
func revisionHistory(p *pass) []Action {
	c := p.cert
	ready := c.Status.Condition(ConditionReady)
	if ready == nil || ready.Status != StatusTrue || issuing(c) != nil || c.Status.Revision == nil {
		return nil
	}
	limit := DefaultRevisionHistoryLimit
	if l := c.Spec.RevisionHistoryLimit; l != nil && *l > 0 {
		limit = int(*l)
	}
	var olds []*request
	for i := range p.requests {
		if r := &p.requests[i]; r.revision > 0 && r.revision <= *c.Status.Revision {
			olds = append(olds, r)
		}
	}
	if len(olds) <= limit {
		return nil
	}
	slices.SortFunc(olds, func(a, b *request) int {
		return cmp.Or(cmp.Compare(b.revision, a.revision), strings.Compare(a.Name, b.Name))
	})
	var acts []Action
	for _, o := range olds[limit:] {
		acts = append(acts, DeleteRequest{Name: o.Name, IssuerRef: o.Spec.IssuerRef, Reason: "revision " + strconv.Itoa(o.revision) + " is beyond the revision history limit of " + strconv.Itoa(limit)})
	}
	return acts
}

// replaceNotReady replaces a request of the next revision that its issuer
// has left unanswered for Config.FallbackPending: the next issuer becomes
// the one in use (ReasonIssuerNotReady) and the request is deleted; its
// replacement, to that issuer, is created on a later pass. Nothing is
// recorded as a failure.
func replaceNotReady(p *pass, r *request, res Result, now time.Time) Result {
	ch, _ := p.choice()
	next := p.advance(ch, ReasonIssuerNotReady, fmt.Sprintf("%s left request %s unanswered for %v", describeRef(ch.IssuerRef), r.Name, p.cfg.fallbackPending()))
	res.Actions = []Action{
		DeleteRequest{Name: r.Name, IssuerRef: r.Spec.IssuerRef, Reason: "its issuer has not answered it for " + p.cfg.fallbackPending().String() + "; the next request goes to " + describeRef(next.IssuerRef)},
		UpdateStatus{Status: recordChoice(p, next, now)},
	}
	res.Reason, res.RequeueAt = ReasonRequestPending, now.Add(deletedRequestRecheck)
	res.Message = "request " + r.Name + " is replaced: " + next.Message + "; the next request goes to " + describeRef(next.IssuerRef)
	return res
}
