package certificate

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/certlife/certlife/backoff"
	"github.com/certlife/certlife/keys"
)

// Issue is the issuing stage. While Issuing is True it acts on the
// issuer's answer to the request of the next revision — but only once that
// request is settled: its CSR must be for the next private key and the
// request must still match the spec (everything it was made from, the key
// spec included). A request that is not is left alone, neither written nor
// counted as a failure (ReasonRequestOutdated); the requestmanager replaces
// it. So a spec change that races an issuance is never lost, a spec fix
// that races a CA failure is never held back by backoff, and a next-key
// secret replaced by hand never counts as a CA failure.
//
// While the request is not answered, the Issuing condition's message says
// why the certificate is being issued, as the trigger put it, and then
// what the issuance waits for — its reason (DoesNotExist, Renewing, …)
// stays: "secret web-tls does not exist; request web-1 is waiting for the
// issuer: <the message the issuer recorded on it>", or, once Config.IssuerGrace has passed with no issuer
// touching the request, that no issuer has answered it for its issuerRef
// (ReasonIssuerNotAnswering; not a failure, nothing backs off). The status
// is written only when that message changes, and the result asks to look
// again when the grace ends.
//
// A settled request that failed — denied, invalid, failed, or "issued" a
// chain that is undecodable, for another key, already expired, for other
// names, or already due for renewal on arrival — is recorded as a failure
// (lastFailureTime, failedIssuanceAttempts+1, the CA's Retry-After,
// Issuing=False with the request's own reason) so the backoff applies:
// never a silent retry loop, nor a re-issue loop. A settled request that
// succeeded is written into the secret; the new revision is recorded, the
// failure fields cleared and Issuing removed, and the result asks to look
// again at once so the next pass cleans up.
//
// With spec.issueTemporaryCertificate, while the request of the next
// revision is not answered and the secret holds no usable certificate and
// key, it writes a temporary certificate for the next private key
// (WriteTemporaryCertificate, ReasonWritingTemporaryCertificate), once:
// the secret then holds a usable pair, which the issued certificate
// replaces.
//
// It never writes a target secret that holds data certlife did not write
// (ReasonSecretNotOwned), whatever the request's answer: the answer waits
// until the secret is handed over (AnnotationAllowTakeover) or removed.
//
// When not issuing it repairs: it records a revision an interrupted pass
// wrote into the secret but not into status (ReasonRevisionAdopted), and
// rewrites a secret that drifted around a certificate that is otherwise in
// line (ReasonSecretDrifted) from the key and chain it holds — one write,
// no new key, no new request, no backoff.
func Issue(s *Snapshot, now time.Time, cfg Config) Result {
	if res, ok := checkInput(s, now, StageIssuing); !ok {
		return res
	}
	p := newPass(s, now, cfg)
	return finish(p, issuingStage(p, now, cfg))
}

func issuingStage(p *pass, now time.Time, cfg Config) Result {
	c := p.cert
	res := Result{Stage: StageIssuing}
	if held := heldSecret(p); held != nil {
		res.Reason, res.Message = ReasonSecretNotOwned, "nothing is written: "+heldMessage(p, held)
		return res
	}
	cond := issuing(c)
	if cond == nil {
		if r, ok := adoptRevision(p); ok {
			return r
		}
		if r, ok := repairSecret(p, now, cfg); ok {
			return r
		}
		res.Reason, res.Message = ReasonNotIssuing, "not issuing"
		return res
	}
	if p.specErr != nil {
		res.Reason, res.Message = ReasonInvalidSpec, "nothing is written until the spec is corrected"
		return res
	}
	next := nextRevision(c)
	req := p.requestFor(next)
	if w, why, ok := temporaryCertificate(p, req, now); ok {
		res.Actions = []Action{w}
		res.Reason = ReasonWritingTemporaryCertificate
		res.Message = "issuing revision " + strconv.Itoa(next) + ", and " + why + ": writing a temporary certificate for " +
			describeKey(w.KeySecretName) + " meanwhile (spec.issueTemporaryCertificate)"
		return res
	}
	if req == nil {
		res.Reason, res.Message = ReasonRequestPending, "no request for revision "+strconv.Itoa(next)+" yet"
		return res
	}
	if spentBefore(req, cond) || failedBefore(req.CertificateRequest, cond) {
		// Answered for an earlier attempt: the requestmanager replaces it;
		// judging it again would count its failure twice.
		res.Reason, res.Message = ReasonRequestPending, "request "+req.Name+" was answered before this issuance began; it is being replaced"
		return res
	}
	failed, failReason, failMsg := requestFailed(req.CertificateRequest)
	ready := req.Condition(RequestConditionReady)
	if !failed && (ready == nil || ready.Status != StatusTrue) {
		return waitForIssuer(p, req, now, cfg)
	}

	// Settle before acting on the answer.
	keyName := c.Status.NextPrivateKeySecretName
	k := p.nextKey(keyName)
	if k == nil || k.err != nil {
		res.Reason = ReasonWaitingForKey
		res.Message = "request " + req.Name + " is answered, but " + describeKey(keyName) + " is not readable yet; the answer is used once it is"
		return res
	}
	if why := requestMismatch(req, &c.Spec, []IssuerRef{p.wantIssuer()}, k.key.Public(), keyName); why != "" {
		res.Reason = ReasonRequestOutdated
		res.Message = "request " + req.Name + " is answered, but " + why + "; the answer is not used and the request is replaced"
		return res
	}

	if failed {
		at := now
		if req.Status.FailureTime != nil {
			at = *req.Status.FailureTime
		}
		return recordFailure(p, req.CertificateRequest, failReason, failMsg, at, now)
	}
	leaf, reason, bad := checkIssued(p.cfg.ParseCache, req.CertificateRequest, k, keyName, &c.Spec, now)
	if bad == "" {
		// Due for renewal on arrival: written, it would start the next
		// issuance at once. The ARI window in the snapshot is the replaced
		// certificate's, not this one's.
		if d := renewalOf(p, leaf, nil); d.Renew {
			reason, bad = ReasonIssuedDueForRenewal, fmt.Sprintf("a certificate already due for renewal on arrival (valid from %s until %s): %s",
				stamp(leaf.NotBefore), stamp(leaf.NotAfter), d.Message)
		}
	}
	if bad != "" {
		// The request is spent. It stays until the next attempt (after the
		// backoff), whose requestmanager replaces it: deleting it now
		// would let a pass that reads the request's deletion but not yet
		// this status start that attempt at once. A request without a
		// creation time cannot be told from the next attempt's, so it is
		// deleted now.
		r := recordFailure(p, req.CertificateRequest, reason, "request "+req.Name+" was issued "+bad, now, now)
		if req.created.IsZero() {
			r.Actions = append([]Action{DeleteRequest{Name: req.Name, IssuerRef: req.Spec.IssuerRef, Reason: "its certificate was rejected: " + bad}}, r.Actions...)
		}
		return r
	}

	labels, annotations := secretMetadataBy(c, leaf, req.Spec.IssuerRef.WithDefaults())
	write := WriteSecret{
		Name: c.Spec.SecretName, OwnerUID: c.UID, KeySecretName: keyName,
		Chain: req.Status.Certificate, CA: req.Status.CA, Output: outputSpec(&c.Spec),
		Labels: labels, Annotations: annotations,
	}
	if p.secret != nil {
		write.ResourceVersion = p.secret.ResourceVersion
	}
	st := cloneStatus(c.Status)
	st.Revision = &next
	st.LastFailureTime, st.FailedIssuanceAttempts, st.RetryAfter = nil, nil, nil
	if p.hasFallback() {
		ch, _ := p.choice() // the request names it: it is settled
		st.Issuer = &ch
	}
	st.Conditions = removeCondition(st.Conditions, ConditionIssuing)
	res.Actions = []Action{write, UpdateStatus{Status: st}}
	res.Reason = ReasonIssued
	res.Message = fmt.Sprintf("issued revision %d from request %s, valid until %s", next, req.Name, stamp(leaf.NotAfter))
	res.RequeueAt = now // the next pass deletes the next private key and old requests
	return res
}

// temporaryCertificate is the write of a temporary certificate, while the
// issuance runs, when the spec asks for one: only into this certificate's
// secret when it holds no usable certificate and key (missing, lacking
// data, undecodable, or a key that is not the certificate's), only once
// the next private key is readable, and only while the request of the
// next revision is not answered (its answer is acted on instead). why
// says what the secret lacks.
func temporaryCertificate(p *pass, req *request, now time.Time) (w WriteTemporaryCertificate, why string, ok bool) {
	c := p.cert
	if !c.Spec.IssueTemporaryCertificate || owner(p) != c || (req != nil && Answered(req.CertificateRequest)) {
		return w, "", false
	}
	keyName := c.Status.NextPrivateKeySecretName
	if k := p.nextKey(keyName); k == nil || k.err != nil {
		return w, "", false
	}
	switch {
	case p.secret == nil:
		why = "secret " + c.Spec.SecretName + " does not exist"
	case p.parsed == nil || p.parsed.Leaf == nil || p.parsed.Key == nil:
		why = "secret " + p.secret.Name + " holds no readable certificate and key"
	case !p.parsed.KeyMatches:
		why = "the key in secret " + p.secret.Name + " is not its certificate's"
	default:
		return w, "", false
	}
	duration := DefaultDuration
	if c.Spec.Duration != nil && c.Spec.Duration.Duration > 0 {
		duration = c.Spec.Duration.Duration
	}
	annotations := map[string]string{AnnotationCertificateName: c.Name}
	var labels map[string]string
	if t := c.Spec.SecretTemplate; t != nil {
		labels = maps.Clone(t.Labels)
		for k, v := range t.Annotations {
			if _, ours := annotations[k]; !ours {
				annotations[k] = v
			}
		}
	}
	w = WriteTemporaryCertificate{
		Name: c.Spec.SecretName, OwnerUID: c.UID, KeySecretName: keyName,
		Template: c.Spec.Template(), NotBefore: now, NotAfter: now.Add(duration),
		Output: outputSpec(&c.Spec), Labels: labels, Annotations: annotations,
	}
	if p.secret != nil {
		w.ResourceVersion = p.secret.ResourceVersion
	}
	return w, why, true
}

// waitForIssuer is the issuing stage's result while the request of the
// next revision is not answered. It says what the issuance waits for and
// puts it in the Issuing condition's message (its reason, why the
// certificate is being issued, stays), writing the status only when the
// message changes; a request no issuer has touched is reported at the end
// of Config.IssuerGrace, and the result asks to look again then.
func waitForIssuer(p *pass, req *request, now time.Time, cfg Config) Result {
	res := Result{Stage: StageIssuing, Reason: ReasonRequestPending, Message: "request " + req.Name + " is waiting for the issuer"}
	if ready := req.Condition(RequestConditionReady); ready != nil && ready.Message != "" {
		res.Message += ": " + ready.Message
	}
	pr, ok := issuerProgress(p, now, cfg)
	if !ok {
		return res // not settled: the requestmanager replaces it
	}
	res.Reason = pr.reason
	if pr.report == "" {
		res.RequeueAt = pr.at
		res.Message += "; no issuer has touched it yet, which the certificate reports at " + stamp(pr.at)
		return res
	}
	res.Message = pr.report
	c := p.cert
	cond := issuing(c)
	if msg := withProgress(cond.Message, pr.report); cond.Message != msg {
		st := cloneStatus(c.Status)
		st.Conditions = setCondition(st.Conditions, Condition{Type: ConditionIssuing, Status: StatusTrue, Reason: cond.Reason, Message: msg}, now, c.Generation)
		res.Actions = []Action{UpdateStatus{Status: st}}
	}
	return res
}

// withProgress is the Issuing condition's message while the issuer works:
// why the certificate is being issued (the words the condition was set
// with, kept), then what the issuance waits for.
func withProgress(current, report string) string {
	why := current
	// With fallback issuers, the issuer in use follows why ("; using …")
	// and is kept.
	using := ""
	if i := strings.Index(why, "; using "); i >= 0 {
		why, using = why[:i], why[i:]
		for _, sep := range []string{"; request ", "; no issuer has answered request "} {
			if j := strings.Index(using, sep); j >= 0 {
				using = using[:j]
			}
		}
	}
	for _, sep := range []string{"; request ", "; no issuer has answered request "} {
		if i := strings.Index(why, sep); i >= 0 {
			why = why[:i]
		}
	}
	if strings.HasPrefix(why, "request ") && strings.Contains(why, " is waiting for the issuer") || strings.HasPrefix(why, "no issuer has answered request ") {
		why = "" // written before the reason was kept
	}
	if why == "" && using == "" {
		return report
	}
	return why + using + "; " + report
}

// progress is what an issuance waits for from the issuer.
type progress struct {
	// reason is ReasonRequestPending, or ReasonIssuerNotAnswering once no
	// issuer has touched the request within the grace.
	reason string
	// report is for the conditions' messages; "" while a request no
	// issuer has touched is within Config.IssuerGrace.
	report string
	// at is when the report on an untouched request is due; zero
	// otherwise.
	at time.Time
}

// issuerProgress is what the issuance in progress waits for from the
// issuer, for the Issuing condition's message and Ready's: ok only while
// the request of the next revision is current (not answered before this
// issuance began), settled (it matches the spec and its CSR is for the
// next private key) and not answered. An issuer that touched the request
// — any Ready condition, such as Pending — is quoted; a request that no
// issuer touched is reported once Config.IssuerGrace has passed since it
// was created (or, with no creation time, since the issuance began).
func issuerProgress(p *pass, now time.Time, cfg Config) (progress, bool) {
	c := p.cert
	cond := issuing(c)
	if cond == nil || p.specErr != nil {
		return progress{}, false
	}
	req := p.requestFor(nextRevision(c))
	if req == nil || spentBefore(req, cond) || failedBefore(req.CertificateRequest, cond) || Answered(req.CertificateRequest) {
		return progress{}, false
	}
	k := p.nextKey(c.Status.NextPrivateKeySecretName)
	if k == nil || k.err != nil || requestMismatch(req, &c.Spec, []IssuerRef{p.wantIssuer()}, k.key.Public(), "") != "" {
		return progress{}, false
	}
	if ready := req.Condition(RequestConditionReady); ready != nil {
		report := "request " + req.Name + " is waiting for the issuer"
		switch {
		case ready.Message != "":
			report += ": " + ready.Message
		case ready.Reason != "":
			report += " (" + ready.Reason + ")"
		}
		return progress{reason: ReasonRequestPending, report: report}, true
	}
	since := req.created
	if since.IsZero() {
		since = cond.LastTransitionTime
	}
	at := since.Add(cfg.issuerGrace())
	if now.Before(at) {
		return progress{reason: ReasonRequestPending, at: at}, true
	}
	return progress{reason: ReasonIssuerNotAnswering, report: fmt.Sprintf("no issuer has answered request %s for issuerRef %s since %s: is an issuer for it running?",
		req.Name, describeRef(req.Spec.IssuerRef.WithDefaults()), stamp(since))}, true
}

// checkIssued reads an issued request's chain and CA, and says what is
// wrong with them, with the failure reason: undecodable, a leaf for
// another key than the next private key (which the CSR was checked to
// hold), expired, or for other names than the spec's.
func checkIssued(pc *keys.ParseCache, req *CertificateRequest, k *nextKey, keyName string, spec *Spec, now time.Time) (leaf *x509.Certificate, reason, bad string) {
	chain, err := parseChain(pc, req.Status.Certificate)
	if err == nil && len(chain) == 0 {
		err = errors.New("no certificate")
	}
	if err != nil {
		return nil, ReasonIssuedUndecodable, "an undecodable chain: " + err.Error()
	}
	if len(bytes.TrimSpace(req.Status.CA)) > 0 {
		if _, err := parseChain(pc, req.Status.CA); err != nil {
			return nil, ReasonIssuedUndecodable, "an undecodable CA: " + err.Error()
		}
	}
	leaf = chain[0]
	switch {
	case !keys.PublicKeysEqual(leaf.PublicKey, k.key.Public()):
		return nil, ReasonIssuedWrongKey, "a certificate for another key than " + describeKey(keyName) + ", which its CSR holds"
	case !now.Before(leaf.NotAfter):
		return nil, ReasonIssuedExpired, "a certificate that expired at " + stamp(leaf.NotAfter)
	}
	if d := keys.CompareCertificateNames(leaf, spec.Template()); d != nil {
		return nil, ReasonIssuedOtherNames, "a certificate for other names: " + joinDiffs(d)
	}
	return leaf, "", ""
}

// parseChain parses every CERTIFICATE block of a PEM bundle, through pc
// (nil: parsing each), within keys.MaxSecretValueBytes and
// keys.MaxCertificates.
func parseChain(pc *keys.ParseCache, pemBytes []byte) ([]*x509.Certificate, error) {
	return pc.ParseCertificates(pemBytes)
}

// firstCertificate parses the first block of a PEM bundle, which must be
// a CERTIFICATE.
func firstCertificate(chain []byte) (*x509.Certificate, error) { return firstCertificateIn(nil, chain) }

// firstCertificateIn is firstCertificate through pc (nil: parsing).
func firstCertificateIn(pc *keys.ParseCache, chain []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(chain)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no CERTIFICATE PEM block")
	}
	return pc.ParseCertificate(block.Bytes)
}

func removeCondition(conds []Condition, t string) []Condition {
	out := make([]Condition, 0, len(conds))
	for _, c := range conds {
		if c.Type != t {
			out = append(out, c)
		}
	}
	return out
}

// adoptRevision repairs a status that missed the end of an issuance: when
// the secret already holds the certificate of a Ready request with a
// revision above status.revision, that revision is recorded and the failure
// fields cleared, as the issuance would have done. Without it the next
// issuance would reuse the revision. A request created before the last
// failure the status records is not adopted: its answer was rejected, so
// whatever the secret holds was not written from it.
func adoptRevision(p *pass) (Result, bool) {
	c := p.cert
	leaf := p.leaf()
	if leaf == nil {
		return Result{}, false
	}
	cur := 0
	if c.Status.Revision != nil {
		cur = *c.Status.Revision
	}
	var from *request
	for i := range p.requests {
		r := &p.requests[i]
		if r.revision <= cur || (from != nil && r.revision <= from.revision) {
			continue
		}
		if ready := r.Condition(RequestConditionReady); ready == nil || ready.Status != StatusTrue {
			continue
		}
		if f := c.Status.LastFailureTime; f != nil && !r.created.IsZero() && !f.Before(r.created) {
			// Its answer was judged and failed, so never written: the
			// secret holds the same certificate from before (a CA that
			// answered with the certificate already in it).
			continue
		}
		if issued, err := firstCertificateIn(p.cfg.ParseCache, r.Status.Certificate); err == nil && bytes.Equal(issued.Raw, leaf.Raw) {
			from = r
		}
	}
	if from == nil {
		return Result{}, false
	}
	st := cloneStatus(c.Status)
	rev := from.revision
	st.Revision = &rev
	st.LastFailureTime, st.FailedIssuanceAttempts, st.RetryAfter = nil, nil, nil
	return Result{Stage: StageIssuing, Actions: []Action{UpdateStatus{Status: st}}, Reason: ReasonRevisionAdopted,
		Message: fmt.Sprintf("secret %s holds the certificate of request %s: recording revision %d, which an interrupted pass did not", p.secret.Name, from.Name, rev)}, true
}

// repairSecret rewrites a secret that drifted around a certificate that is
// otherwise in line: valid spec, this certificate's secret, caught up, and
// every trigger check passing (else the trigger re-issues, and the new
// secret is written whole anyway).
func repairSecret(p *pass, now time.Time, cfg Config) (Result, bool) {
	if len(p.drift) == 0 || owner(p) != p.cert {
		return Result{}, false
	}
	if _, _, hold := secretNotCaughtUp(p, now, cfg); hold {
		return Result{}, false
	}
	if reason, _ := runChain(p); reason != "" {
		return Result{}, false
	}
	// Rewriting needs the whole chain and the CA to decode, as they will
	// for keys.SecretData; a secret whose tls.crt or ca.crt holds garbage
	// beside a good leaf, or more than keys' bounds, is left as it is, and
	// readiness keeps saying it drifted, and why it is not rewritten.
	if cannotRewrite(p) != nil {
		return Result{}, false
	}
	c := p.cert
	labels, annotations := secretMetadataBy(c, p.parsed.Leaf, p.issuedBy())
	write := WriteSecret{
		Name: p.secret.Name, OwnerUID: c.UID, KeySecretName: p.secret.Name,
		Chain: p.secret.Data[keys.SecretCertificate], CA: p.secret.Data[keys.SecretCA], Output: outputSpec(&c.Spec),
		Labels: labels, Annotations: annotations, ResourceVersion: p.secret.ResourceVersion,
	}
	return Result{Stage: StageIssuing, Actions: []Action{write}, Reason: ReasonSecretRepair,
		Message: "secret " + p.secret.Name + " drifted: " + strings.Join(p.drift, "; ") + "; rewriting it from the key and certificate it holds"}, true
}

// cannotRewrite says why the secret cannot be rewritten from what it
// holds: its whole tls.crt or its ca.crt does not decode, or is beyond
// keys.MaxSecretValueBytes or keys.MaxCertificates; nil when it can.
func cannotRewrite(p *pass) error {
	for _, k := range []string{keys.SecretCertificate, keys.SecretCA} {
		if _, err := parseChain(p.cfg.ParseCache, p.secret.Data[k]); err != nil {
			return &keys.FieldError{Field: k, Err: err}
		}
	}
	return nil
}

func recordFailure(p *pass, req *CertificateRequest, reason, msg string, at, now time.Time) Result {
	c := p.cert
	st := cloneStatus(c.Status)
	st.LastFailureTime = &at
	n := 1
	if c.Status.FailedIssuanceAttempts != nil && *c.Status.FailedIssuanceAttempts > 0 {
		n = *c.Status.FailedIssuanceAttempts + 1
	}
	st.FailedIssuanceAttempts = &n
	st.RetryAfter = req.Status.RetryAfter
	cond := msg
	if p.hasFallback() {
		if moved := afterFailure(p, &st, req.Spec.IssuerRef, at); moved != "" {
			cond += "; " + moved
		}
	}
	if next := nextAttempt(p, st, now); next != "" {
		cond += "; " + next
	}
	st.Conditions = setCondition(st.Conditions, Condition{Type: ConditionIssuing, Status: StatusFalse, Reason: reason, Message: cond}, now, c.Generation)
	times := "once"
	if n > 1 {
		times = strconv.Itoa(n) + " times in a row"
	}
	return Result{Stage: StageIssuing, Actions: []Action{UpdateStatus{Status: st}}, Reason: reason,
		Message: fmt.Sprintf("%s (issuance has failed %s)", msg, times)}
}

// nextAttempt says when the backoff lets the failed issuance be tried
// again, for the Issuing=False condition: "next attempt at T", with why
// when it is not the backoff's own delay — the CA's Retry-After, or a
// retry brought forward so that it comes before the certificate in use
// expires. "" when nothing holds a retry back.
func nextAttempt(p *pass, st Status, now time.Time) string {
	in := backoffInput(&Certificate{ObjectMeta: p.cert.ObjectMeta, Status: st})
	if leaf := p.leaf(); leaf != nil {
		in.NotBefore, in.NotAfter = leaf.NotBefore, leaf.NotAfter
	}
	b := p.cfg.backoffPolicy().Decide(in, now)
	if !b.Wait {
		return ""
	}
	words := "next attempt at " + stamp(b.NextAttempt)
	switch b.Reason {
	case backoff.ReasonRetryAfter:
		words += ", as the CA asked (Retry-After)"
	case backoff.ReasonRetryBeforeExpiry:
		words += ", brought forward to come before the certificate in use expires at " + stamp(in.NotAfter)
	}
	return words
}
