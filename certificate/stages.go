package certificate

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"fmt"
	"strconv"
	"time"

	"github.com/certlife/certlife/internal/stablehash"
	"github.com/certlife/certlife/keys"
)

// Reasons of the keymanager, requestmanager and issuing stages.
const (
	ReasonNotIssuing      = "NotIssuing"
	ReasonWaitingForKey   = "WaitingForKey"
	ReasonKeyReady        = "KeyReady"
	ReasonRequestPending  = "RequestPending"
	ReasonRequestCreated  = "RequestCreated"
	ReasonIssued          = "Issued"
	ReasonIssuanceFailed  = "Failed"
	ReasonRotationBlocked = "RotationNeverKeyMismatch"
)

func issuing(c *Certificate) *Condition {
	if cond := c.Status.Condition(ConditionIssuing); cond != nil && cond.Status == StatusTrue {
		return cond
	}
	return nil
}

func nextRevision(c *Certificate) int {
	if r := c.Status.Revision; r != nil && *r >= 0 {
		return *r + 1
	}
	return 1
}

// nextKeySecretName is deterministic per certificate, revision and key
// spec: a spec change mid-issuance gives a new name, so a stale cache never
// confuses the old key for the new one.
func nextKeySecretName(c *Certificate, rev int, spec keys.KeySpec) string {
	h := stablehash.Sum64("next-key", fmt.Sprintf("%s/%d/%s/%d", c.UID, rev, spec.Algorithm, spec.Size))
	return fmt.Sprintf("%s-next-key-%d-%08x", c.Name, rev, uint32(h))
}

func findSecret(list []*Secret, name string) *Secret {
	for _, s := range list {
		if s != nil && s.Name == name {
			return s
		}
	}
	return nil
}

func decodeKey(s *Secret) (crypto.Signer, error) {
	if s == nil {
		return nil, fmt.Errorf("secret missing")
	}
	return keys.DecodePrivateKey(s.Data[keys.SecretPrivateKey])
}

// nextKey decodes a next-private-key secret once per decision: from the
// host's cache when it has it, else through Reconcile's memo, so the
// keymanager, requestmanager and issuing stages share one decode (deriving
// a public key is the dearest step of a pass that issues).
func (s *Snapshot) nextKey(sec *Secret) (crypto.Signer, error) {
	if sec == nil {
		return nil, fmt.Errorf("secret missing")
	}
	if k, ok := s.ParsedKeys[sec.Name]; ok && k != nil {
		return k, nil
	}
	m := s.memo
	if m != nil && m.keyName == sec.Name && m.keySecret == sec {
		return m.key, m.keyErr
	}
	k, err := decodeKey(sec)
	if m != nil {
		m.keyName, m.keySecret, m.key, m.keyErr = sec.Name, sec, k, err
	}
	return k, err
}

// Keymanager is the keymanager stage (seed 000). While Issuing is True it
// makes sure exactly one next-private-key secret exists, meets the key spec,
// and is named in status.nextPrivateKeySecretName: it creates one when none
// exists, adopts the one that exists when status lost it, regenerates on a
// spec change, and deletes extras. When not issuing it deletes them all.
// With rotation policy Never it reuses the key of the target secret while
// that key meets the spec, and says so when it cannot.
func Keymanager(s *Snapshot, now time.Time, cfg Config) Result {
	if s == nil || s.Certificate == nil {
		return Result{Reason: ReasonNoCertificate}
	}
	c := s.Certificate
	// Only the next key's name changes here; the conditions are copied
	// when the status is written.
	st := c.Status
	var acts []Action
	deleteAllBut := func(keep string, why string) {
		for _, sec := range s.NextPrivateKeySecrets {
			if sec != nil && sec.Name != keep {
				acts = append(acts, DeleteSecret{Name: sec.Name, Reason: why})
			}
		}
	}
	finish := func(reason, msg string) Result {
		if st.NextPrivateKeySecretName != c.Status.NextPrivateKeySecretName {
			acts = append(acts, UpdateStatus{Status: cloneStatus(st)})
		}
		return Result{Actions: acts, Reason: reason, Message: msg}
	}
	if issuing(c) == nil {
		deleteAllBut("", "not issuing")
		st.NextPrivateKeySecretName = ""
		return finish(ReasonNotIssuing, "not issuing: no next private key is kept")
	}
	spec := c.Spec.KeySpec()
	name := nextKeySecretName(c, nextRevision(c), spec)

	if cur := st.NextPrivateKeySecretName; cur != "" {
		sec := findSecret(s.NextPrivateKeySecrets, cur)
		switch {
		case cur != name:
			deleteAllBut("", "the key spec or revision changed")
			st.NextPrivateKeySecretName = ""
			return finish(ReasonWaitingForKey, "the next private key "+cur+" is for another key spec or revision; a new one is made next")
		case sec == nil:
			// Missing from the cache: created by a pass the cache has not
			// seen, or deleted by hand. Creating again is safe.
			acts = append(acts, s.generate(name, spec))
			return finish(ReasonWaitingForKey, "creating the next private key "+name)
		}
		key, err := s.nextKey(sec)
		if err != nil {
			deleteAllBut("", "the next private key cannot be decoded")
			st.NextPrivateKeySecretName = ""
			return finish(ReasonWaitingForKey, "the next private key "+cur+" cannot be decoded; it is replaced")
		}
		if m := keys.SpecMismatches(key.Public(), spec); m != nil {
			deleteAllBut("", "the next private key does not meet the spec")
			st.NextPrivateKeySecretName = ""
			return finish(ReasonWaitingForKey, "the next private key "+cur+" does not meet the spec; it is replaced")
		}
		deleteAllBut(cur, "an extra next private key")
		return finish(ReasonKeyReady, "the next private key is "+cur)
	}
	if sec := findSecret(s.NextPrivateKeySecrets, name); sec != nil {
		deleteAllBut(name, "an extra next private key")
		st.NextPrivateKeySecretName = name
		return finish(ReasonKeyReady, "adopted the next private key "+name+" that status had lost")
	}
	deleteAllBut("", "an extra next private key")
	g := s.generate(name, spec)
	msg := "creating the next private key " + name
	if g.ReuseFrom != "" {
		msg += " from the key in " + g.ReuseFrom + " (rotation policy Never)"
	} else if spec.RotationPolicy == keys.RotationNever {
		msg += ": rotation policy Never, but the key in " + c.Spec.SecretName + " cannot be reused (missing, undecodable or not meeting the spec), so a new key is generated"
	}
	acts = append(acts, g)
	st.NextPrivateKeySecretName = name
	return finish(ReasonWaitingForKey, msg)
}

// generate builds the GenerateKey action, reusing the target secret's key
// under rotation policy Never when it meets the spec.
func (s *Snapshot) generate(name string, spec keys.KeySpec) GenerateKey {
	g := GenerateKey{SecretName: name, OwnerUID: s.Certificate.UID, Spec: spec}
	if spec.RotationPolicy == keys.RotationNever && s.Secret != nil {
		if p := newView(s).secret(); p != nil && p.Key != nil && keys.SpecMismatches(p.Key.Public(), spec) == nil {
			g.ReuseFrom = s.Secret.Name
		}
	}
	return g
}

// spentBefore reports a request that was answered (issued or failed)
// before the current Issuing transition: it belongs to an earlier attempt.
// A request without a creation time never counts as spent.
func spentBefore(r *CertificateRequest, issuingCond *Condition) bool {
	if r.CreationTimestamp.IsZero() || !r.CreationTimestamp.Before(issuingCond.LastTransitionTime) {
		return false
	}
	if ready := r.Condition(RequestConditionReady); ready != nil && (ready.Status == StatusTrue || ready.Reason == RequestReasonFailed) {
		return true
	}
	failed, _ := requestFailed(r)
	return failed
}

func requestFailed(r *CertificateRequest) (bool, string) {
	if c := r.Condition(RequestConditionDenied); c != nil && c.Status == StatusTrue {
		return true, "request " + r.Name + " was denied: " + c.Message
	}
	if c := r.Condition(RequestConditionInvalidRequest); c != nil && c.Status == StatusTrue {
		return true, "request " + r.Name + " is invalid: " + c.Message
	}
	if c := r.Condition(RequestConditionReady); c != nil && c.Status == StatusFalse && c.Reason == RequestReasonFailed {
		return true, "request " + r.Name + " failed: " + c.Message
	}
	return false, ""
}

// Requestmanager is the requestmanager stage (seed 000). While Issuing is
// True and the next private key exists, it keeps exactly one request, for
// revision status.revision+1, named <certificate>-<revision>: it deletes
// requests with a missing or bad revision, and requests of the next
// revision whose CSR differs from the spec or is not for the next key, or
// whose failure predates the current Issuing transition; it creates the
// request when none is left. A request deleted in this pass is re-created
// on a later pass, never in the same one, so a create never meets the
// deletion of its own name.
func Requestmanager(s *Snapshot, now time.Time, cfg Config) Result {
	if s == nil || s.Certificate == nil {
		return Result{Reason: ReasonNoCertificate}
	}
	c := s.Certificate
	cond := issuing(c)
	if cond == nil {
		return Result{Reason: ReasonNotIssuing, Message: "not issuing"}
	}
	keyName := c.Status.NextPrivateKeySecretName
	key, err := s.nextKey(findSecret(s.NextPrivateKeySecrets, keyName))
	if keyName == "" || err != nil {
		return Result{Reason: ReasonWaitingForKey, Message: "waiting for the next private key"}
	}
	next := nextRevision(c)
	v := newView(s)
	var acts []Action
	var current *CertificateRequest
	deletedNext := false
	for i, r := range s.Requests {
		if r == nil {
			continue
		}
		rev, ok := s.revisionIn(i)
		if !ok {
			acts = append(acts, DeleteRequest{Name: r.Name, Reason: "missing or invalid " + AnnotationRevision + " annotation"})
			continue
		}
		if rev != next {
			continue // earlier revisions are the revision history's
		}
		why := ""
		if spentBefore(r, cond) {
			why = "it was answered before this issuance began"
		} else if madeFor(s, r, key) {
			// Made from this very spec and for this key: nothing to parse.
		} else if csr, err := v.csrOf(r); err != nil {
			why = "its CSR cannot be decoded"
		} else if d := requestDifferences(r, csr, &c.Spec); len(d) > 0 {
			why = "it differs from the spec: " + d[0]
		} else if !keys.PublicKeysEqual(csr.PublicKey, key.Public()) {
			why = "it is not for the next private key"
		}
		if failed, _ := requestFailed(r); why == "" && failed && r.Status.FailureTime != nil && r.Status.FailureTime.Before(cond.LastTransitionTime) {
			why = "its failure predates the current issuance"
		}
		if why != "" {
			acts = append(acts, DeleteRequest{Name: r.Name, Reason: why})
			deletedNext = true
			continue
		}
		current = r
	}
	switch {
	case current != nil:
		return Result{Actions: acts, Reason: ReasonRequestPending, Message: "request " + current.Name + " is current"}
	case deletedNext:
		return Result{Actions: acts, Reason: ReasonRequestPending, Message: "an outdated request was deleted; its replacement is created on the next pass",
			RequeueAt: now.Add(5 * time.Second)}
	}
	name := RequestName(c.Name, next)
	req := CertificateRequest{
		ObjectMeta: ObjectMeta{Name: name, Namespace: c.Namespace, OwnerUID: c.UID, Annotations: map[string]string{
			AnnotationRevision: strconv.Itoa(next), AnnotationCertificateName: c.Name,
			AnnotationSpecFingerprint: specFingerprint(&c.Spec),
		}},
		Spec: RequestSpec{IssuerRef: c.Spec.IssuerRef, Duration: c.Spec.Duration, IsCA: c.Spec.IsCA, Usages: c.Spec.Usages},
	}
	acts = append(acts, CreateRequest{Request: req, KeySecretName: keyName, Template: c.Spec.Template()})
	return Result{Actions: acts, Reason: ReasonRequestCreated, Message: "creating request " + name + " for revision " + strconv.Itoa(next)}
}

// madeFor reports, without parsing the CSR, that a request was made from
// the current spec (its fingerprint annotation) and carries the key's
// SubjectPublicKeyInfo bytes. False means "cannot tell": the caller
// compares the parsed CSR.
func madeFor(s *Snapshot, r *CertificateRequest, key crypto.Signer) bool {
	fp := r.Annotations[AnnotationSpecFingerprint]
	if k := s.compiled(); k != nil {
		if fp != k.fingerprint {
			return false
		}
	} else if !fingerprintMatches(fp, &s.Certificate.Spec) {
		return false
	}
	spki, ok := keys.CSRPublicKeyInfo(r.Spec.Request)
	if !ok {
		return false
	}
	want, err := x509.MarshalPKIXPublicKey(key.Public())
	return err == nil && bytes.Equal(spki, want)
}

// Issuing is the issuing stage (seed 000). When the request of the next
// revision has failed — denied, invalid, failed, or "issued" a certificate
// that is undecodable, for another key, already expired, or for other names
// — it records the failure (lastFailureTime, failedIssuanceAttempts+1, the
// CA's Retry-After, Issuing=False) so the backoff applies: never a silent
// retry loop. When it has succeeded, it writes the secret, then records the
// revision, clears the failure fields and removes Issuing.
func Issuing(s *Snapshot, now time.Time, cfg Config) Result {
	if s == nil || s.Certificate == nil {
		return Result{Reason: ReasonNoCertificate}
	}
	c := s.Certificate
	if issuing(c) == nil {
		if r, ok := adoptRevision(s); ok {
			return r
		}
		return Result{Reason: ReasonNotIssuing, Message: "not issuing"}
	}
	next := nextRevision(c)
	v := newView(s)
	req := v.requestFor(next)
	if req == nil {
		return Result{Reason: ReasonRequestPending, Message: "no request for revision " + strconv.Itoa(next) + " yet"}
	}
	cond := issuing(c)
	if spentBefore(req, cond) {
		// Answered for an earlier attempt: the requestmanager replaces it;
		// judging it again would count its failure twice.
		return Result{Reason: ReasonRequestPending, Message: "request " + req.Name + " was answered before this issuance began; it is being replaced"}
	}
	if failed, msg := requestFailed(req); failed {
		if req.Status.FailureTime != nil && req.Status.FailureTime.Before(cond.LastTransitionTime) {
			// A failure of an earlier attempt: the requestmanager replaces
			// the request; recording it again would count one failure twice.
			return Result{Reason: ReasonRequestPending, Message: "request " + req.Name + " failed before this issuance began; it is being replaced"}
		}
		at := now
		if req.Status.FailureTime != nil {
			at = *req.Status.FailureTime
		}
		return recordFailure(c, req, at, now, msg)
	}
	if ready := req.Condition(RequestConditionReady); ready == nil || ready.Status != StatusTrue {
		return Result{Reason: ReasonRequestPending, Message: "request " + req.Name + " is pending"}
	}
	keyName := c.Status.NextPrivateKeySecretName
	key, err := s.nextKey(findSecret(s.NextPrivateKeySecrets, keyName))
	if keyName == "" || err != nil {
		return Result{Reason: ReasonWaitingForKey, Message: "the request is issued but the next private key is not readable yet"}
	}
	leaf, err := firstCertificate(req.Status.Certificate)
	bad := ""
	switch {
	case err != nil:
		bad = "an undecodable certificate: " + err.Error()
	case !keys.PublicKeysEqual(leaf.PublicKey, key.Public()):
		bad = "a certificate for another key than its CSR's"
	case !now.Before(leaf.NotAfter):
		bad = "a certificate that expired at " + stamp(leaf.NotAfter)
	default:
		if d := keys.CompareCertificateNames(leaf, c.Spec.Template()); d != nil {
			bad = "a certificate for other names: " + joinDiffs(d)
		}
	}
	if bad != "" {
		// The request is spent. It stays until the next attempt (after the
		// backoff), whose requestmanager replaces it: deleting it now
		// would let a pass that reads the request's deletion but not yet
		// this status start that attempt at once. A request without a
		// creation time cannot be told from the next attempt's, so it is
		// deleted now.
		r := recordFailure(c, req, now, now, "request "+req.Name+" was issued "+bad)
		if req.CreationTimestamp.IsZero() {
			r.Actions = append([]Action{DeleteRequest{Name: req.Name, Reason: "its certificate was rejected: " + bad}}, r.Actions...)
		}
		return r
	}

	ref := c.Spec.IssuerRef.WithDefaults()
	write := WriteSecret{
		Name: c.Spec.SecretName, OwnerUID: c.UID, KeySecretName: keyName,
		Chain: req.Status.Certificate, CA: req.Status.CA, Output: outputSpec(&c.Spec),
		Annotations: map[string]string{
			AnnotationCertificateName: c.Name, AnnotationIssuerName: ref.Name,
			AnnotationIssuerKind: ref.Kind, AnnotationIssuerGroup: ref.Group,
		},
	}
	if t := c.Spec.SecretTemplate; t != nil {
		write.Labels = t.Labels
		for k, v := range t.Annotations {
			if _, ours := write.Annotations[k]; !ours {
				write.Annotations[k] = v
			}
		}
	}
	st := cloneStatus(c.Status)
	st.Revision = &next
	st.LastFailureTime, st.FailedIssuanceAttempts, st.RetryAfter = nil, nil, nil
	conds := st.Conditions[:0:0]
	for _, cd := range st.Conditions {
		if cd.Type != ConditionIssuing {
			conds = append(conds, cd)
		}
	}
	st.Conditions = conds
	return Result{
		Actions: []Action{write, UpdateStatus{Status: st}},
		Reason:  ReasonIssued, Message: fmt.Sprintf("issued revision %d from request %s, valid until %s", next, req.Name, stamp(leaf.NotAfter)),
	}
}

// ReasonRevisionAdopted: the secret holds the certificate of a request
// whose revision status does not record (the host stopped between writing
// the secret and writing the status).
const ReasonRevisionAdopted = "RevisionAdopted"

// adoptRevision repairs a status that missed the end of an issuance: when
// the secret already holds the certificate of a Ready request with a
// revision above status.revision, that revision is recorded and the failure
// fields cleared, as the issuance would have done. Without it the next
// issuance would reuse the revision.
func adoptRevision(s *Snapshot) (Result, bool) {
	c := s.Certificate
	cur := 0
	if c.Status.Revision != nil {
		cur = *c.Status.Revision
	}
	best := 0
	var from *CertificateRequest
	for i, r := range s.Requests {
		rev, ok := s.revisionIn(i)
		if !ok || rev <= cur || rev <= best {
			continue
		}
		if ready := r.Condition(RequestConditionReady); ready == nil || ready.Status != StatusTrue {
			continue
		}
		p := newView(s).secret()
		if p == nil || p.Leaf == nil {
			return Result{}, false
		}
		leaf, err := firstCertificate(r.Status.Certificate)
		if err != nil || !bytes.Equal(leaf.Raw, p.Leaf.Raw) {
			continue
		}
		best, from = rev, r
	}
	if from == nil {
		return Result{}, false
	}
	st := cloneStatus(c.Status)
	rev := best // a fresh variable: best stays on the stack on the healthy path
	st.Revision = &rev
	st.LastFailureTime, st.FailedIssuanceAttempts, st.RetryAfter = nil, nil, nil
	return Result{Actions: []Action{UpdateStatus{Status: st}}, Reason: ReasonRevisionAdopted,
		Message: fmt.Sprintf("the secret holds the certificate of request %s: recording revision %d, which an interrupted pass did not", from.Name, rev)}, true
}

func recordFailure(c *Certificate, req *CertificateRequest, at, now time.Time, msg string) Result {
	st := cloneStatus(c.Status)
	st.LastFailureTime = &at
	n := 1
	if c.Status.FailedIssuanceAttempts != nil && *c.Status.FailedIssuanceAttempts > 0 {
		n = *c.Status.FailedIssuanceAttempts + 1
	}
	st.FailedIssuanceAttempts = &n
	st.RetryAfter = req.Status.RetryAfter
	st.Conditions = setCondition(st.Conditions, Condition{Type: ConditionIssuing, Status: StatusFalse, Reason: ReasonIssuanceFailed, Message: msg}, now, c.Generation)
	return Result{Actions: []Action{UpdateStatus{Status: st}}, Reason: ReasonIssuanceFailed, Message: fmt.Sprintf("%s (failure %d in a row)", msg, n)}
}

func firstCertificate(chain []byte) (*x509.Certificate, error) {
	block, _ := keys.DecodePEM(chain)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("no CERTIFICATE PEM block")
	}
	return x509.ParseCertificate(block.Bytes)
}

func outputSpec(s *Spec) keys.OutputSpec {
	out := keys.OutputSpec{KeyEncoding: s.KeySpec().Encoding}
	for _, f := range s.AdditionalOutputFormats {
		switch f {
		case OutputCombinedPEM:
			out.CombinedPEM = true
		case OutputDER:
			out.DER = true
		}
	}
	if k := s.Keystores; k != nil {
		out.PKCS12, out.JKS = k.PKCS12, k.JKS
	}
	return out
}
