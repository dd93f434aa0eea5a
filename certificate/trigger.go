package certificate

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"fmt"
	"slices"
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
// on a missing secret, an undecodable one and a missing request: it then
// passes, and an earlier check in the chain is the one that reports the
// problem — so the chain can be reordered without a panic.
type check struct {
	name string
	fn   func(p *pass) (reason, message string)
}

// checks is the trigger chain in order; the first violation wins.
var checks = []check{
	{"SecretDoesNotExist", secretDoesNotExist},
	{"SecretMissingData", secretMissingData},
	{"SecretInvalidKeyPair", secretInvalidKeyPair},
	{"SecretHoldsTemporaryCertificate", secretHoldsTemporaryCertificate},
	{"SecretIssuerMismatch", secretIssuerMismatch},
	{"SecretCertificateNameMismatch", secretCertificateNameMismatch},
	{"SecretKeyMismatchesSpec", secretKeyMismatchesSpec},
	{"SecretKeyMismatchesRequest", secretKeyMismatchesRequest},
	{"RequestOrCertificateChanged", requestOrCertificateChanged},
}

func secretDoesNotExist(p *pass) (string, string) {
	if p.secret == nil {
		return ReasonDoesNotExist, "secret " + p.cert.Spec.SecretName + " does not exist"
	}
	return "", ""
}

func secretMissingData(p *pass) (string, string) {
	if p.secret == nil {
		return "", ""
	}
	var missing []string
	for _, k := range []string{keys.SecretCertificate, keys.SecretPrivateKey} {
		if len(p.secret.Data[k]) == 0 {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return ReasonMissingData, "secret " + p.secret.Name + " lacks " + strings.Join(missing, " and ")
	}
	return "", ""
}

func secretInvalidKeyPair(p *pass) (string, string) {
	if p.parsed == nil {
		return "", ""
	}
	switch {
	case p.parsed.CertErr != nil:
		return ReasonInvalidKeyPair, "the certificate in secret " + p.secret.Name + " cannot be decoded: " + p.parsed.CertErr.Error()
	case p.parsed.KeyErr != nil:
		return ReasonInvalidKeyPair, "the private key in secret " + p.secret.Name + " cannot be decoded: " + p.parsed.KeyErr.Error()
	case !p.parsed.KeyMatches:
		return ReasonInvalidKeyPair, "the private key in secret " + p.secret.Name + " is not the key of the certificate beside it"
	}
	return "", ""
}

// secretHoldsTemporaryCertificate: the secret holds a placeholder written
// while an issuance ran, not an issued certificate.
func secretHoldsTemporaryCertificate(p *pass) (string, string) {
	if !p.temporary() {
		return "", ""
	}
	return ReasonTemporaryCertificate, "secret " + p.secret.Name + " holds a temporary certificate, issued by " +
		p.leaf().Issuer.CommonName + " while the first issuance runs; the issued certificate replaces it"
}

// secretIssuerMismatch: an issuer annotation that names another issuer
// means the spec moved to a new issuer. A secret with no issuer name
// annotation carries no evidence either way (written by hand, or before
// annotations): the issuing stage adds the annotations instead.
func secretIssuerMismatch(p *pass) (string, string) {
	if p.secret == nil {
		return "", ""
	}
	have, ok := secretIssuer(p.secret)
	if !ok {
		return "", ""
	}
	if !slices.Contains(p.refs, have) {
		return ReasonIncorrectIssuer, fmt.Sprintf("secret %s was issued by %s, the spec names %s", p.secret.Name, describeRef(have), describeIssuers(p.refs))
	}
	return "", ""
}

func describeRef(r IssuerRef) string { return r.Kind + " " + r.Group + "/" + r.Name }

func secretCertificateNameMismatch(p *pass) (string, string) {
	if p.secret == nil {
		return "", ""
	}
	if owner := p.secret.Annotations[AnnotationCertificateName]; owner != "" && owner != p.cert.Name {
		return ReasonSecretOwnedByOtherCertificate, "secret " + p.secret.Name + " was issued for certificate " + owner + ", which no longer claims it"
	}
	return "", ""
}

func secretKeyMismatchesSpec(p *pass) (string, string) {
	if p.parsed == nil || p.parsed.Key == nil {
		return "", ""
	}
	if m := keys.SpecMismatches(p.parsed.Key.Public(), p.cert.Spec.KeySpec()); m != nil {
		return ReasonPrivateKeyMismatchesSpec, "the private key in secret " + p.secret.Name + " does not meet spec.privateKey: " + strings.Join(m, "; ")
	}
	return "", ""
}

func secretKeyMismatchesRequest(p *pass) (string, string) {
	req := p.current()
	if p.parsed == nil || p.parsed.Key == nil || req == nil || req.csr == nil {
		return "", "" // an unreadable request is the request check's business
	}
	if !keys.PublicKeysEqual(req.csr.PublicKey, p.parsed.Key.Public()) {
		return ReasonSecretKeyMismatchesRequest, "the private key in secret " + p.secret.Name + " is not the key of request " + req.Name + ", which issued revision " + strconv.Itoa(req.revision)
	}
	return "", ""
}

func requestOrCertificateChanged(p *pass) (string, string) {
	spec := &p.cert.Spec
	if req := p.current(); req != nil {
		if why := requestMismatch(req, spec, p.refs, nil, ""); why != "" {
			return ReasonRequestChanged, "request " + req.Name + " of revision " + strconv.Itoa(req.revision) + ": " + why
		}
		return "", ""
	}
	leaf := p.leaf()
	if leaf == nil {
		return "", ""
	}
	if d := keys.CompareCertificateNames(leaf, spec.Template()); d != nil {
		return ReasonCertificateChanged, "the certificate in secret " + p.secret.Name + " differs from the spec: " + joinDiffs(d)
	}
	return "", ""
}

// requestMismatch is the one answer to "does this request still match
// what the certificate asks": what it was made from (names, subject,
// usages, isCA in its CSR and in its spec; duration), whether it names
// one of issuers (spec.issuerRef, or with fallback issuers the one in
// use for a request of the next revision, any of them for one that
// issued a revision already),
// whether its CSR's key meets spec.privateKey, and — when key is set —
// whether its CSR is for that key (named keyName in the message). It
// returns why not, or "" when it matches. A CSR that cannot be read never
// matches; its signature is the issuer's to check (see parseCSR).
func requestMismatch(r *request, spec *Spec, issuers []IssuerRef, key crypto.PublicKey, keyName string) string {
	if r.csrErr != nil {
		return "its CSR cannot be read: " + r.csrErr.Error()
	}
	var d []string
	for _, x := range keys.CompareCSR(r.csr, spec.Template()) {
		d = append(d, x.String())
	}
	if have := r.Spec.IssuerRef.WithDefaults(); !slices.Contains(issuers, have) {
		d = append(d, "issuerRef: want "+describeIssuers(issuers)+", have "+describeRef(have))
	}
	if want, have := durationOf(spec.Duration), durationOf(r.Spec.Duration); want != have {
		d = append(d, fmt.Sprintf("duration: want %v, have %v", describeDuration(want), describeDuration(have)))
	}
	if spec.IsCA != r.Spec.IsCA {
		d = append(d, fmt.Sprintf("spec.isCA: want %v, have %v", spec.IsCA, r.Spec.IsCA))
	}
	if !sameUsages(spec.Usages, r.Spec.Usages) {
		d = append(d, fmt.Sprintf("spec.usages: want %v, have %v", usageSet(spec.Usages), usageSet(r.Spec.Usages)))
	}
	if m := keys.SpecMismatches(r.csr.PublicKey, spec.KeySpec()); m != nil {
		d = append(d, "its key does not meet spec.privateKey: "+strings.Join(m, "; "))
	}
	if len(d) > 0 {
		return "it differs from the spec: " + strings.Join(d, "; ")
	}
	if key != nil && !keys.PublicKeysEqual(r.csr.PublicKey, key) {
		return "its CSR is not for " + describeKey(keyName)
	}
	return ""
}

// sameUsages reports whether two usage lists are the same set, each the
// defaults when empty.
func sameUsages(a, b []keys.Usage) bool {
	return slices.Equal(usageSet(a), usageSet(b))
}

// usageSet is a usage list as a sorted set, the defaults for none.
func usageSet(us []keys.Usage) []keys.Usage {
	if len(us) == 0 {
		us = keys.DefaultUsages()
	}
	set := slices.Clone(us)
	slices.Sort(set)
	return slices.Compact(set)
}

func durationOf(d *Duration) time.Duration {
	if d == nil {
		return 0
	}
	return d.Duration
}

func describeDuration(d time.Duration) string {
	if d == 0 {
		return "the issuer's default"
	}
	return d.String()
}

func joinDiffs(ds []keys.Difference) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = d.String()
	}
	return strings.Join(parts, "; ")
}

// runChain runs the check chain; the first violation wins.
func runChain(p *pass) (reason, message string) {
	for _, ch := range checks {
		if reason, message = ch.fn(p); reason != "" {
			return reason, message
		}
	}
	return "", ""
}

// owner returns the certificate that owns the target secret among this one
// and the others that name it: the one the secret's annotation names, else
// the oldest (then the first by name).
func owner(p *pass) *Certificate {
	c := p.cert
	claimants := []*Certificate{c}
	for _, o := range p.others {
		if o != nil && o.Name != c.Name && o.Spec.SecretName == c.Spec.SecretName {
			claimants = append(claimants, o)
		}
	}
	if len(claimants) == 1 {
		return c
	}
	if p.secret != nil {
		if name := p.secret.Annotations[AnnotationCertificateName]; name != "" {
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

// decideRenewal asks the renewal package about the secret's certificate at
// the pass's time; nil when there is no certificate to time renewal from.
// The pass holds the answer: the spec, the ARI window and the time are the
// same for every stage, and a write that changes the certificate asks
// again.
func decideRenewal(p *pass) *renewal.Decision {
	leaf := p.leaf()
	if leaf == nil {
		return nil
	}
	d := renewalOf(p, leaf, p.ari)
	return &d
}

// renewalOf is the renewal decision at the pass's time for a certificate
// under this spec, with the given ARI window (nil for none).
func renewalOf(p *pass, leaf *x509.Certificate, ari *renewal.ARIWindow) renewal.Decision {
	spec := &p.cert.Spec
	in := renewal.Input{NotBefore: leaf.NotBefore, NotAfter: leaf.NotAfter, ARI: ari, JitterKey: p.cert.UID, Schedule: p.schedule}
	if spec.RenewBefore != nil {
		in.RenewBefore = spec.RenewBefore.Duration
	}
	if spec.RenewBeforePercentage != nil {
		in.RenewBeforePercentage = *spec.RenewBeforePercentage
	}
	if spec.Renewal != nil {
		in.Spec = *spec.Renewal
	}
	return renewal.Decide(in, p.now, p.cfg.Renewal)
}

// failedRequestMismatchesSpec reports whether the request of the failed
// issuance (revision + 1) no longer matches the spec: the user changed the
// spec after the failure, so backoff must not hold the fix back.
func failedRequestMismatchesSpec(p *pass) bool {
	req := p.requestFor(nextRevision(p.cert))
	return req != nil && requestMismatch(req, &p.cert.Spec, p.refs, nil, "") != ""
}

// Trigger is the trigger stage: it decides whether the certificate must be
// issued, and sets Issuing=True when it must.
//
// A target secret that holds data neither certlife nor the reference
// operator wrote is never issued into (ReasonSecretNotOwned): the trigger
// says so, whether Issuing is True or not, and looks again when the
// secret changes or at the next Config.SecretInUseRecheck tick.
//
// It does nothing while Issuing is True — that is also how a manual trigger
// works: a host (or a user) sets Issuing=True itself, and the trigger,
// the backoff included, stays out of the way. Otherwise it runs the chain of
// named checks in order, then asks the renewal package whether renewal is
// due. Before setting Issuing after a failure it applies the backoff, unless
// the failed request no longer matches the spec (the user fixed the spec).
// When nothing is to be issued but the secret drifted around its
// certificate, it says so (ReasonSecretDrifted); the issuing stage repairs
// it. The result always says when to look again.
func Trigger(s *Snapshot, now time.Time, cfg Config) Result {
	if res, ok := checkInput(s, now, StageTrigger); !ok {
		return res
	}
	p := newPass(s, now, cfg)
	return finish(p, trigger(p, now, cfg))
}

func trigger(p *pass, now time.Time, cfg Config) Result {
	res := Result{Stage: StageTrigger}
	c := p.cert
	if held := heldSecret(p); held != nil {
		res.Reason, res.RequeueAt = ReasonSecretNotOwned, heldRecheck(p, now)
		res.Message = heldMessage(p, held) + " (looking again when the secret changes, or at " + stamp(res.RequeueAt) + ")"
		return res
	}
	if cond := issuing(c); cond != nil {
		res.Reason, res.Message = ReasonIssuingInProgress, "issuance in progress since "+stamp(cond.LastTransitionTime)+" ("+cond.Reason+")"
		return res
	}
	if p.specErr != nil {
		res.Reason, res.Message = ReasonInvalidSpec, "nothing is issued until the spec is corrected: "+p.specErr.Error()
		return res
	}
	if o := owner(p); o != c {
		res.Reason, res.RequeueAt = ReasonSecretInUse, nextTick(c.CreationTimestamp, cfg.secretInUseRecheck(), now)
		res.Message = fmt.Sprintf("secret %s belongs to certificate %s; this certificate does not write it (looking again at %s)", c.Spec.SecretName, o.Name, stamp(res.RequeueAt))
		return res
	}
	if until, msg, hold := secretNotCaughtUp(p, now, cfg); hold {
		res.Reason, res.Message, res.RequeueAt = ReasonSecretNotCaughtUp, msg, until
		return res
	}
	reason, message := runChain(p)
	if reason == "" {
		d := p.renewal // the chain passed: there is a leaf
		res.Renewal = d
		if !d.Renew {
			res.Reason, res.Message, res.RequeueAt = ReasonUpToDate, d.Message, d.NextCheck
			// Readiness flips to Expired at notAfter even when nothing
			// renews (Disabled): look again then.
			if na := p.leaf().NotAfter; now.Before(na) && (res.RequeueAt.IsZero() || na.Before(res.RequeueAt)) {
				res.RequeueAt = na
			}
			if len(p.drift) > 0 {
				res.Reason = ReasonSecretDrifted
				res.Message = "secret " + p.secret.Name + " drifted: " + strings.Join(p.drift, "; ") +
					"; the issuing stage rewrites it from the key and certificate it holds. " + d.Message
			}
			return res
		}
		reason, message = ReasonRenewing, d.Message
	}

	if c.Status.LastFailureTime != nil || c.Status.RetryAfter != nil {
		if b := NextAttempt(c, p.leaf(), now, cfg); b.Wait {
			if !failedRequestMismatchesSpec(p) {
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

// nextTick is the first time after now in the series anchor + k·period
// (the Unix epoch when anchor is zero): a periodic recheck on fixed ticks,
// the same whenever it is asked, rather than one that moves with the clock.
func nextTick(anchor time.Time, period time.Duration, now time.Time) time.Time {
	if anchor.IsZero() {
		anchor = time.Unix(0, 0)
	}
	if now.Before(anchor) {
		return anchor
	}
	return anchor.Add((now.Sub(anchor)/period + 1) * period)
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// NextAttempt is the backoff decision the trigger stage makes for c's
// next issuance after failed ones (status.lastFailureTime,
// failedIssuanceAttempts, and the CA's Retry-After): whether it waits,
// until when, and why. leaf is the certificate c's secret holds (nil for
// none), whose expiry brings the next attempt forward. Tools that explain
// a certificate call it to say what the decision will do, with the
// decision's own rule.
func NextAttempt(c *Certificate, leaf *x509.Certificate, now time.Time, cfg Config) backoff.Decision {
	in := backoffInput(c)
	if leaf != nil {
		in.NotBefore, in.NotAfter = leaf.NotBefore, leaf.NotAfter
	}
	return cfg.backoffPolicy().Decide(in, now)
}

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

// secretNotCaughtUp reports a secret that does not show the certificate
// of the latest issuance yet: the request of status.revision is issued,
// recent (created within the cache grace), and the secret is missing,
// holds a temporary certificate, or holds a certificate that expires
// before that request's. Hosts read
// secrets and certificates through separate caches, so a pass can see the
// new revision in status and the old secret; issuing again then would be
// a re-issue loop. It returns when the grace ends: after that, the usual
// checks decide. A missing secret whose absence the host confirmed is not
// a cache: no grace.
func secretNotCaughtUp(p *pass, now time.Time, cfg Config) (until time.Time, msg string, hold bool) {
	grace := cfg.cacheGrace()
	req := p.current()
	if grace <= 0 || req == nil || req.created.IsZero() || (p.secret == nil && p.absenceConfirmed) {
		return time.Time{}, "", false
	}
	until = req.created.Add(grace)
	if !now.Before(until) {
		return time.Time{}, "", false
	}
	if ready := req.Condition(RequestConditionReady); ready == nil || ready.Status != StatusTrue {
		return time.Time{}, "", false
	}
	if p.secret != nil && bytes.Equal(p.secret.Data[keys.SecretCertificate], req.Status.Certificate) {
		return time.Time{}, "", false // caught up: the request's very chain
	}
	leaf := p.leaf()
	if p.secret != nil && leaf == nil {
		return time.Time{}, "", false // garbage, not an older certificate
	}
	issued, err := firstCertificateIn(p.cfg.ParseCache, req.Status.Certificate)
	if err != nil {
		return time.Time{}, "", false
	}
	switch {
	case p.secret == nil:
		msg = "secret " + p.cert.Spec.SecretName + " is not visible yet"
	case keys.IsTemporaryCertificate(leaf):
		msg = "secret " + p.secret.Name + " still shows the temporary certificate"
	case leaf.NotAfter.Before(issued.NotAfter):
		msg = "secret " + p.secret.Name + " still shows the certificate that expires at " + stamp(leaf.NotAfter)
	default:
		return time.Time{}, "", false
	}
	return until, msg + ", not yet revision " + strconv.Itoa(req.revision) + "'s from request " + req.Name +
		": a read cache behind the write, taken as such until " + stamp(until), true
}
