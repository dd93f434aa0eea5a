package certificate

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/certlife/certlife/backoff"
	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/renewal"
)

// check is one named trigger check. It returns a reason and a message when
// the certificate must be issued, and "" when it passes. Every check is safe
// on a nil secret and a nil parse: it then passes, and an earlier check in
// the chain is the one that reports the problem — so the chain can be
// reordered without a panic.
type check struct {
	name string
	fn   func(v *view, now time.Time, cfg Config) (reason, message string)
}

// Checks is the trigger chain in order; the first violation wins.
var checks = []check{
	{"SecretDoesNotExist", secretDoesNotExist},
	{"SecretMissingData", secretMissingData},
	{"SecretInvalidKeyPair", secretInvalidKeyPair},
	{"SecretIssuerMismatch", secretIssuerMismatch},
	{"SecretCertificateNameMismatch", secretCertificateNameMismatch},
	{"SecretKeyMismatchesSpec", secretKeyMismatchesSpec},
	{"SecretKeyMismatchesRequest", secretKeyMismatchesRequest},
	{"RequestOrCertificateChanged", requestOrCertificateChanged},
}

func secretDoesNotExist(v *view, _ time.Time, _ Config) (string, string) {
	if v.s.Secret == nil {
		return ReasonDoesNotExist, "secret " + v.cert.Spec.SecretName + " does not exist"
	}
	return "", ""
}

func secretMissingData(v *view, _ time.Time, _ Config) (string, string) {
	if v.s.Secret == nil {
		return "", ""
	}
	var missing []string
	for _, k := range []string{keys.SecretCertificate, keys.SecretPrivateKey} {
		if len(v.s.Secret.Data[k]) == 0 {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return ReasonMissingData, "secret " + v.s.Secret.Name + " lacks " + strings.Join(missing, " and ")
	}
	return "", ""
}

func secretInvalidKeyPair(v *view, _ time.Time, _ Config) (string, string) {
	p := v.secret()
	if p == nil {
		return "", ""
	}
	switch {
	case p.CertErr != nil:
		return ReasonInvalidKeyPair, "the certificate in the secret cannot be decoded: " + p.CertErr.Error()
	case p.KeyErr != nil:
		return ReasonInvalidKeyPair, "the private key in the secret cannot be decoded: " + p.KeyErr.Error()
	case !p.KeyMatches:
		return ReasonInvalidKeyPair, "the private key in the secret is not the certificate's key"
	}
	return "", ""
}

func secretIssuerMismatch(v *view, _ time.Time, _ Config) (string, string) {
	if v.s.Secret == nil {
		return "", ""
	}
	a := v.s.Secret.Annotations
	name, kind, group := a[AnnotationIssuerName], a[AnnotationIssuerKind], a[AnnotationIssuerGroup]
	if name == "" && kind == "" && group == "" {
		return "", "" // a secret written by hand or before annotations: no evidence either way
	}
	want := v.cert.Spec.IssuerRef.WithDefaults()
	have := IssuerRef{Name: name, Kind: kind, Group: group}.WithDefaults()
	if want != have {
		return ReasonIncorrectIssuer, fmt.Sprintf("the secret was issued by %s %s/%s, the spec names %s %s/%s",
			have.Kind, have.Group, have.Name, want.Kind, want.Group, want.Name)
	}
	return "", ""
}

func secretCertificateNameMismatch(v *view, _ time.Time, _ Config) (string, string) {
	if v.s.Secret == nil {
		return "", ""
	}
	if owner := v.s.Secret.Annotations[AnnotationCertificateName]; owner != "" && owner != v.cert.Name {
		return ReasonSecretOwnedByOther, "the secret was issued for certificate " + owner + ", which no longer claims it"
	}
	return "", ""
}

func secretKeyMismatchesSpec(v *view, _ time.Time, _ Config) (string, string) {
	p := v.secret()
	if p == nil || p.Key == nil {
		return "", ""
	}
	if m := keys.SpecMismatches(p.Key.Public(), v.cert.Spec.KeySpec()); m != nil {
		return ReasonKeyMismatchesSpec, "the private key does not meet spec.privateKey: " + strings.Join(m, "; ")
	}
	return "", ""
}

func secretKeyMismatchesRequest(v *view, _ time.Time, _ Config) (string, string) {
	p := v.secret()
	if p == nil || p.Key == nil {
		return "", ""
	}
	v.currentRequestOnly()
	req := v.current
	if req == nil {
		return "", ""
	}
	if c, cached := v.s.ParsedCSRs[req.Name]; p.KeyMatches && p.Leaf != nil {
		// Same key bytes as the leaf, which is the secret's key: equal.
		// Different bytes may still encode one key, so that case parses.
		if cached && c != nil && bytes.Equal(c.RawSubjectPublicKeyInfo, p.Leaf.RawSubjectPublicKeyInfo) {
			return "", ""
		}
		if match, ok := csrKeyMatchesLeaf(req, p.Leaf); !cached && ok && match {
			return "", ""
		}
	}
	_, csr, err := v.currentRequest()
	if err != nil {
		return "", "" // an unreadable request is the request check's business
	}
	if !keys.PublicKeysEqual(csr.PublicKey, p.Key.Public()) {
		return ReasonKeyMismatchesRequest, "the private key in the secret is not the key of request " + req.Name
	}
	return "", ""
}

func requestOrCertificateChanged(v *view, _ time.Time, _ Config) (string, string) {
	v.currentRequestOnly()
	spec := &v.cert.Spec
	if req := v.current; req != nil {
		// Without a parsed CSR at hand, the fingerprint (one hash of the
		// spec) is far cheaper than parsing the CSR; with one, comparing it
		// is cheaper still.
		fp := req.Annotations[AnnotationSpecFingerprint]
		if k := v.s.compiled(); k != nil {
			if fp == k.fingerprint {
				return "", "" // made from this very spec: nothing to compare
			}
		} else if _, cached := v.s.ParsedCSRs[req.Name]; !cached && fingerprintMatches(fp, spec) {
			return "", ""
		}
		_, csr, err := v.currentRequest()
		if err != nil {
			return ReasonRequestChanged, "request " + req.Name + " cannot be read: " + err.Error()
		}
		if d := requestDifferences(req, csr, spec); len(d) > 0 {
			return ReasonRequestChanged, "request " + req.Name + " differs from the spec: " + strings.Join(d, "; ")
		}
		return "", ""
	}
	p := v.secret()
	if p == nil || p.Leaf == nil {
		return "", ""
	}
	if d := keys.CompareCertificateNames(p.Leaf, spec.Template()); d != nil {
		return ReasonCertificateChanged, "the issued certificate differs from the spec: " + joinDiffs(d)
	}
	return "", ""
}

// requestDifferences lists how a request differs from the spec.
func requestDifferences(req *CertificateRequest, csr *x509.CertificateRequest, spec *Spec) []string {
	var out []string
	for _, d := range keys.CompareCSR(csr, spec.Template()) {
		out = append(out, d.String())
	}
	if want, have := spec.IssuerRef.WithDefaults(), req.Spec.IssuerRef.WithDefaults(); want != have {
		out = append(out, fmt.Sprintf("issuerRef: want %s %s/%s, have %s %s/%s", want.Kind, want.Group, want.Name, have.Kind, have.Group, have.Name))
	}
	if want, have := durationOf(spec.Duration), durationOf(req.Spec.Duration); want != have {
		out = append(out, fmt.Sprintf("duration: want %v, have %v", want, have))
	}
	return out
}

func durationOf(d *Duration) time.Duration {
	if d == nil {
		return 0
	}
	return d.Duration
}

func joinDiffs(ds []keys.Difference) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = d.String()
	}
	return strings.Join(parts, "; ")
}

// renewalInput builds the renewal package's input from the certificate and
// its parsed leaf.
func renewalInput(v *view) (renewal.Input, bool) {
	p := v.secret()
	if p == nil || p.Leaf == nil {
		return renewal.Input{}, false
	}
	spec := &v.cert.Spec
	in := renewal.Input{
		NotBefore: p.Leaf.NotBefore, NotAfter: p.Leaf.NotAfter,
		ARI: v.s.ARI, JitterKey: v.cert.UID,
	}
	if spec.RenewBefore != nil {
		in.RenewBefore = spec.RenewBefore.Duration
	}
	if spec.RenewBeforePercentage != nil {
		in.RenewBeforePercentage = *spec.RenewBeforePercentage
	}
	if spec.Renewal != nil {
		in.Spec = *spec.Renewal
	}
	return in, true
}

// owner returns the certificate that owns the target secret among this one
// and the others that name it: the one the secret's annotation names, else
// the oldest (then the first by name).
func owner(s *Snapshot) *Certificate {
	c := s.Certificate
	if len(s.OtherOwners) == 0 {
		return c
	}
	claimants := []*Certificate{c}
	for _, o := range s.OtherOwners {
		if o != nil && o.Name != c.Name && o.Spec.SecretName == c.Spec.SecretName {
			claimants = append(claimants, o)
		}
	}
	if len(claimants) == 1 {
		return c
	}
	if s.Secret != nil {
		if name := s.Secret.Annotations[AnnotationCertificateName]; name != "" {
			for _, o := range claimants {
				if o.Name == name {
					return o
				}
			}
		}
	}
	sort.SliceStable(claimants, func(i, j int) bool {
		a, b := claimants[i], claimants[j]
		if !a.CreationTimestamp.Equal(b.CreationTimestamp) {
			return a.CreationTimestamp.Before(b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	return claimants[0]
}

// nextRequestMismatchesSpec reports whether the request of the failed
// issuance (revision + 1) no longer matches the spec: the user changed the
// spec after the failure, so backoff must not hold the fix back.
func nextRequestMismatchesSpec(v *view) bool {
	next := 1
	if r := v.cert.Status.Revision; r != nil {
		next = *r + 1
	}
	req := v.requestFor(next)
	if req == nil {
		return false
	}
	csr, err := v.csrOf(req)
	if err != nil {
		return true
	}
	return len(requestDifferences(req, csr, &v.cert.Spec)) > 0
}

// Trigger is the trigger stage (seed 000): it decides whether the
// certificate must be issued, and sets Issuing=True when it must.
//
// It does nothing while Issuing is True — that is also how a manual trigger
// works: a host (or a user) sets Issuing=True itself, and the trigger,
// the backoff included, stays out of the way. Otherwise it runs the chain of
// named checks in order, then asks the renewal package whether renewal is
// due. Before setting Issuing after a failure it applies the backoff, unless
// the failed request no longer matches the spec (the user fixed the spec).
// The result always says when to look again.
func Trigger(s *Snapshot, now time.Time, cfg Config) Result {
	if s == nil || s.Certificate == nil {
		return Result{Reason: ReasonNoCertificate, Message: "the snapshot holds no certificate"}
	}
	c := s.Certificate
	if cond := c.Status.Condition(ConditionIssuing); cond != nil && cond.Status == StatusTrue {
		return Result{Reason: ReasonIssuingInProgress, Message: "issuance in progress since " + stamp(cond.LastTransitionTime) + " (" + cond.Reason + ")"}
	}
	if err := s.validate(); err != nil {
		return Result{Reason: ReasonInvalidSpec, Message: "nothing is issued until the spec is corrected: " + err.Error()}
	}
	if o := owner(s); o != c {
		return Result{
			Reason:    ReasonSecretInUse,
			Message:   fmt.Sprintf("secret %s belongs to certificate %s; this certificate does not write it", c.Spec.SecretName, o.Name),
			RequeueAt: now.Add(cfg.secretInUseRecheck()),
		}
	}

	v := newView(s)
	if until, msg, hold := secretNotCaughtUp(v, now, cfg); hold {
		return Result{Reason: ReasonSecretNotCaughtUp, Message: msg, RequeueAt: until}
	}
	reason, message := runChain(v, now, cfg)
	var res Result
	if reason == "" {
		d, na, ok := decideRenewal(v, now, cfg)
		if !ok { // unreachable after the checks above, but never panic
			return Result{Reason: ReasonUpToDate, Message: "no certificate to time renewal from"}
		}
		res.Renewal = d
		if !d.Renew {
			res.Reason, res.Message, res.RequeueAt = ReasonUpToDate, d.Message, d.NextCheck
			// Readiness flips to Expired at notAfter even when nothing
			// renews (Disabled): look again then.
			if now.Before(na) && (res.RequeueAt.IsZero() || na.Before(res.RequeueAt)) {
				res.RequeueAt = na
			}
			return res
		}
		reason, message = ReasonRenewing, d.Message
	}

	if c.Status.LastFailureTime != nil || c.Status.RetryAfter != nil {
		in := backoffInput(c)
		if p := v.secret(); p != nil && p.Leaf != nil {
			in.NotAfter = p.Leaf.NotAfter
		}
		if b := cfg.Backoff.Decide(in, now); b.Wait {
			if !nextRequestMismatchesSpec(v) {
				res.Reason, res.RequeueAt = ReasonBackoff, b.NextAttempt
				res.Message = fmt.Sprintf("issuance needed (%s: %s) but held back: %s", reason, message, b.Message)
				return res
			}
			message += "; backoff skipped: the spec changed since the failed request"
		}
	}

	st := cloneStatus(c.Status)
	st.Conditions = setCondition(st.Conditions, Condition{Type: ConditionIssuing, Status: StatusTrue, Reason: reason, Message: message}, now, c.Generation)
	res.Actions = []Action{UpdateStatus{Status: st}}
	res.Reason, res.Message = reason, message
	return res
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// backoffInput reads the backoff's input from a certificate's status.
func backoffInput(c *Certificate) backoff.Input {
	in := backoff.Input{FailedAttempts: c.Status.FailedIssuanceAttempts, JitterKey: c.UID}
	if c.Status.LastFailureTime != nil {
		in.LastFailure = *c.Status.LastFailureTime
	}
	if c.Status.RetryAfter != nil {
		in.RetryAfter = *c.Status.RetryAfter
	}
	return in
}

// runChain runs the check chain, or returns the outcome Reconcile already
// computed for this snapshot.
func runChain(v *view, now time.Time, cfg Config) (reason, message string) {
	if m := v.s.memo; m != nil && m.chainDone {
		return m.reason, m.message
	}
	for _, ch := range checks {
		if reason, message = ch.fn(v, now, cfg); reason != "" {
			break
		}
	}
	if m := v.s.memo; m != nil {
		m.chainDone, m.reason, m.message = true, reason, message
	}
	return reason, message
}

// secretNotCaughtUp reports a secret that does not show the certificate
// of the latest issuance yet: the request of status.revision is issued,
// recent (created within the cache grace), and the secret is missing or
// holds a certificate that expires before that request's. Hosts read
// secrets and certificates through separate caches, so a pass can see the
// new revision in status and the old secret; issuing again then would be
// a re-issue loop. It returns when the grace ends: after that, the usual
// checks decide.
func secretNotCaughtUp(v *view, now time.Time, cfg Config) (until time.Time, msg string, hold bool) {
	grace := cfg.cacheGrace()
	if grace <= 0 {
		return time.Time{}, "", false
	}
	v.currentRequestOnly()
	req := v.current
	if req == nil || req.CreationTimestamp.IsZero() {
		return time.Time{}, "", false
	}
	until = req.CreationTimestamp.Add(grace)
	if !now.Before(until) {
		return time.Time{}, "", false
	}
	if ready := req.Condition(RequestConditionReady); ready == nil || ready.Status != StatusTrue {
		return time.Time{}, "", false
	}
	if m := v.s.memo; m != nil && m.caughtUpFor == v.cert {
		return m.caughtUpUntil, m.caughtUpMsg, m.caughtUpHold
	}
	until, msg, hold = secretNotCaughtUpSlow(v, req, until)
	if m := v.s.memo; m != nil {
		m.caughtUpFor, m.caughtUpUntil, m.caughtUpMsg, m.caughtUpHold = v.cert, until, msg, hold
	}
	return until, msg, hold
}

func secretNotCaughtUpSlow(v *view, req *CertificateRequest, until time.Time) (time.Time, string, bool) {
	var msg string
	if v.s.Secret != nil && bytes.Equal(v.s.Secret.Data[keys.SecretCertificate], req.Status.Certificate) {
		return time.Time{}, "", false // caught up: the request's very chain
	}
	p := v.secret()
	if v.s.Secret != nil && (p == nil || p.Leaf == nil) {
		return time.Time{}, "", false // garbage, not an older certificate
	}
	issued, err := firstCertificate(req.Status.Certificate)
	if err != nil {
		return time.Time{}, "", false
	}
	switch {
	case v.s.Secret == nil:
		msg = "secret " + v.cert.Spec.SecretName + " is not visible yet"
	case p.Leaf.NotAfter.Before(issued.NotAfter):
		msg = "secret " + v.s.Secret.Name + " still shows the certificate that expires at " + stamp(p.Leaf.NotAfter)
	default:
		return time.Time{}, "", false
	}
	return until, msg + ", not yet revision " + strconv.Itoa(*v.cert.Status.Revision) + "'s from request " + req.Name +
		": a read cache behind the write, taken as such until " + stamp(until), true
}

// decideRenewal asks the renewal package, once per Reconcile, and returns
// the decision (the memo's inside Reconcile, so a pass copies it nowhere)
// and the certificate's notAfter. ok is false when there is no leaf to time
// renewal from.
func decideRenewal(v *view, now time.Time, cfg Config) (d *renewal.Decision, notAfter time.Time, ok bool) {
	p := v.secret()
	if p == nil || p.Leaf == nil {
		return nil, time.Time{}, false
	}
	m := v.s.memo
	if m != nil && m.renewalDone {
		return &m.renewal, p.Leaf.NotAfter, true
	}
	in, _ := renewalInput(v)
	if m == nil {
		d := renewal.Decide(in, now, cfg.Renewal)
		return &d, p.Leaf.NotAfter, true
	}
	m.renewal = renewal.Decide(in, now, cfg.Renewal)
	m.renewalDone = true
	return &m.renewal, p.Leaf.NotAfter, true
}
