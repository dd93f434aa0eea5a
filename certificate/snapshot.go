package certificate

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"strconv"
	"time"

	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/renewal"
)

// Snapshot is everything a decision reads about one certificate, gathered
// by the host in one place. Nil means missing. The decision never changes
// it.
type Snapshot struct {
	// Certificate is the resource being reconciled.
	Certificate *Certificate
	// Secret is spec.secretName; nil when it does not exist.
	Secret *Secret
	// Requests are the CertificateRequests the certificate owns.
	Requests []*CertificateRequest
	// NextPrivateKeySecrets are the secrets the certificate owns that carry
	// LabelNextPrivateKey.
	NextPrivateKeySecrets []*Secret
	// OtherOwners are other certificates whose spec.secretName is the same
	// secret.
	OtherOwners []*Certificate
	// ARI is the CA's suggested renewal window for the current certificate.
	ARI *renewal.ARIWindow

	// Parsed is an optional host cache: the parse of Secret.Data, valid
	// only for this Secret (the host keys it by resource version or
	// keys.DataHash). Nil means parse here.
	Parsed *keys.ParsedSecret
	// ParsedCSRs is an optional host cache of parsed requests by request
	// name, valid for the Requests passed.
	ParsedCSRs map[string]*x509.CertificateRequest
	// ParsedKeys is an optional host cache of decoded next private keys by
	// secret name, valid for the NextPrivateKeySecrets passed.
	ParsedKeys map[string]crypto.Signer
	// Compiled is an optional host cache: Compile(Certificate), kept while
	// the certificate's generation is unchanged. Ignored when its
	// generation is not the certificate's.
	Compiled *Compiled

	// memo lets Reconcile's stages share the check chain's outcome and the
	// renewal decision: both depend only on the snapshot's resources and
	// now, which no stage before readiness changes unless it writes the
	// secret (and then readiness does not run).
	memo *memo
}

type memo struct {
	chainDone       bool
	reason, message string
	renewalDone     bool
	renewal         renewal.Decision
	csrs            map[string]*x509.CertificateRequest
	// The requests' revisions, read once (the first len(revBuf)).
	revsDone bool
	revBuf   [4]int
	// secretNotCaughtUp's answer for the certificate (status) it was
	// computed on, shared by trigger and readiness.
	caughtUpFor   *Certificate
	caughtUpHold  bool
	caughtUpUntil time.Time
	caughtUpMsg   string
	// The next private key, decoded once per Reconcile.
	keyName   string
	keySecret *Secret
	key       crypto.Signer
	keyErr    error
	// view is shared by the stages while the certificate pointer is the
	// same (Reconcile makes a new one for every status change).
	view view
}

// view is a snapshot with every input parsed at most once per decision.
type view struct {
	s    *Snapshot
	cert *Certificate

	parsed     *keys.ParsedSecret
	parsedDone bool

	current     *CertificateRequest // revision == status.revision
	currentCSR  *x509.CertificateRequest
	currentErr  error
	currentDone bool
	// currentFound: v.current is set (the CSR may not be parsed yet).
	currentFound bool
}

// newView returns the snapshot's view: inside Reconcile the one in the
// memo, kept while the certificate (and so its status) is the same, and
// carrying the secret's parse across status changes.
func newView(s *Snapshot) *view {
	m := s.memo
	if m == nil {
		return &view{s: s, cert: s.Certificate}
	}
	if m.view.s != s || m.view.cert != s.Certificate {
		parsed, done := m.view.parsed, m.view.parsedDone && m.view.s == s
		m.view = view{s: s, cert: s.Certificate}
		if done {
			m.view.parsed, m.view.parsedDone = parsed, true
		}
	}
	return &m.view
}

// secret returns the parsed secret, parsing it on first use.
func (v *view) secret() *keys.ParsedSecret {
	if v.parsedDone {
		return v.parsed
	}
	v.parsedDone = true
	switch {
	case v.s.Secret == nil:
	case v.s.Parsed != nil:
		v.parsed = v.s.Parsed
	default:
		v.parsed, _ = keys.ParseSecretData(v.s.Secret.Data)
	}
	return v.parsed
}

// revisionIn is revisionOf for the i-th request of the snapshot, read once
// per Reconcile (every stage asks).
func (s *Snapshot) revisionIn(i int) (int, bool) {
	m := s.memo
	if m == nil || i >= len(m.revBuf) {
		return revisionOf(s.Requests[i])
	}
	if !m.revsDone {
		m.revsDone = true
		for j := 0; j < len(s.Requests) && j < len(m.revBuf); j++ {
			n, ok := revisionOf(s.Requests[j])
			if !ok {
				n = -1
			}
			m.revBuf[j] = n
		}
	}
	n := m.revBuf[i]
	return n, n > 0
}

// revisionOf reads a request's revision annotation; ok is false when it is
// missing or not a positive integer.
func revisionOf(r *CertificateRequest) (int, bool) {
	if r == nil {
		return 0, false
	}
	n, err := strconv.Atoi(r.Annotations[AnnotationRevision])
	if err != nil || n < 1 {
		return 0, false
	}
	return n, true
}

// requestFor returns the request of the given revision, or nil.
func (v *view) requestFor(revision int) *CertificateRequest {
	for i, r := range v.s.Requests {
		if n, ok := v.s.revisionIn(i); ok && n == revision {
			return r
		}
	}
	return nil
}

// csrOf parses a request's CSR, from the host cache when it has it.
func (v *view) csrOf(r *CertificateRequest) (*x509.CertificateRequest, error) {
	if c, ok := v.s.ParsedCSRs[r.Name]; ok && c != nil {
		return c, nil
	}
	m := v.s.memo
	if m != nil {
		if c, ok := m.csrs[r.Name]; ok {
			return c, nil
		}
	}
	c, err := keys.DecodeCSR(r.Spec.Request)
	if err == nil && m != nil {
		if m.csrs == nil {
			m.csrs = map[string]*x509.CertificateRequest{}
		}
		m.csrs[r.Name] = c
	}
	return c, err
}

// csrKeyMatchesLeaf reports whether a request's CSR carries the same
// SubjectPublicKeyInfo bytes as the leaf, reading only the CSR's outer
// structure (no full parse). ok is false when it cannot tell, and the
// caller compares parsed keys instead.
func csrKeyMatchesLeaf(r *CertificateRequest, leaf *x509.Certificate) (match, ok bool) {
	spki, ok := keys.CSRPublicKeyInfo(r.Spec.Request)
	if !ok || leaf == nil {
		return false, false
	}
	if bytes.Equal(spki, leaf.RawSubjectPublicKeyInfo) {
		return true, true
	}
	return false, false // different bytes may still encode one key: parse
}

// currentRequestOnly finds the request that issued status.revision
// (v.current, nil when there is none) without parsing its CSR.
func (v *view) currentRequestOnly() {
	if !v.currentFound {
		v.currentFound = true
		if rev := v.cert.Status.Revision; rev != nil {
			v.current = v.requestFor(*rev)
		}
	}
}

// currentRequest returns the request that issued status.revision and its
// parsed CSR (nil, nil when there is none).
func (v *view) currentRequest() (*CertificateRequest, *x509.CertificateRequest, error) {
	v.currentRequestOnly()
	if !v.currentDone {
		v.currentDone = true
		if v.current != nil {
			v.currentCSR, v.currentErr = v.csrOf(v.current)
		}
	}
	return v.current, v.currentCSR, v.currentErr
}
