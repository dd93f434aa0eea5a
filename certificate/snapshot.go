package certificate

import (
	"cmp"
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/renewal"
)

// Snapshot is everything a decision reads about one certificate, gathered
// by the host in one place. Nil means missing. A decision never changes it
// and keeps nothing of it: every call parses what it needs from the bytes
// given, or takes the parse from Config.ParseCache.
type Snapshot struct {
	// Certificate is the resource being reconciled. It must have a name
	// and a UID (every object a decision creates is owned by it), and its
	// name and namespace must be valid (ValidateObjectName,
	// ValidateNamespace): the objects a decision creates are named after
	// it, in its namespace.
	Certificate *Certificate
	// Secret is spec.secretName; nil when it does not exist.
	Secret *Secret
	// SecretAbsenceConfirmed says that Secret is nil because the host read
	// spec.secretName from the source of truth — the API server, not a
	// cache, after it read the certificate — and found nothing. Right after
	// an issuance a missing secret is otherwise taken for a read cache that
	// has not caught up with the write, for Config.CacheGrace (Ready is
	// Unknown meanwhile); confirmed, it is what it says: the certificate is
	// not Ready, and is issued again (ReasonDoesNotExist). A host whose
	// cache misses the secret does best to read it from the API server
	// and, when it is there, pass it as Secret. Ignored when Secret is set.
	SecretAbsenceConfirmed bool
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
	// ARINextCheck is when the host will next ask the CA for the
	// current certificate's renewal window (zero when it does not ask),
	// and ARIError why its last request failed (empty when it did not).
	// With ARI they make the status's RenewalInfo; a NextCheck that
	// differs from the one the status records means the host asked the
	// CA in this pass.
	ARINextCheck time.Time
	ARIError     string
	// IssuerHealth is the host's report of issuers that failed across its
	// certificates: a new request names none whose Until is after now,
	// while the certificate has another
	// (Spec.FallbackIssuerRefs) — the next in its list — and none at all
	// while every one of its issuers is skipped (ReasonAllIssuersUnhealthy),
	// until the first of them may be tried again. An issuer whose time
	// has come may be tried again. Nil: every issuer may be used. Read only
	// for certificates with fallback issuers; a request already made is
	// never abandoned for it. Package certificate/host keeps it (a circuit
	// per issuer: host.CircuitConfig).
	IssuerHealth []IssuerSkip
}

// IssuerSkip is an issuer the host skips for new requests until a time:
// its circuit is open (Snapshot.IssuerHealth).
type IssuerSkip struct {
	// IssuerRef is the issuer; empty kind and group mean the defaults.
	IssuerRef IssuerRef `json:"issuerRef"`
	// Until is when it may be tried again.
	Until time.Time `json:"until"`
}

// ErrInvalidInput is wrapped by the error of a result whose snapshot or
// time cannot be decided on.
var ErrInvalidInput = errors.New("certificate: invalid input")

// InputError names what is wrong with a decision's input, at a path such
// as "certificate.metadata.uid".
type InputError struct {
	Path    string
	Message string
}

func (e *InputError) Error() string { return "certificate: " + e.Path + ": " + e.Message }

// Unwrap lets errors.Is(err, ErrInvalidInput) match.
func (e *InputError) Unwrap() error { return ErrInvalidInput }

// checkInput returns the result for input no stage can decide on, or ok.
func checkInput(s *Snapshot, now time.Time, stage Stage) (Result, bool) {
	var err *InputError
	reason := ReasonInvalidInput
	switch {
	case s == nil || s.Certificate == nil:
		reason, err = ReasonNoCertificate, &InputError{Path: "certificate", Message: "the snapshot holds no certificate"}
	case s.Certificate.Name == "":
		err = &InputError{Path: "certificate.metadata.name", Message: "is empty: requests and keys are named after it"}
	case objectNameError(s.Certificate.Name) != nil:
		err = &InputError{Path: "certificate.metadata.name", Message: objectNameError(s.Certificate.Name).detail()}
	case namespaceError(s.Certificate.Namespace) != nil:
		err = &InputError{Path: "certificate.metadata.namespace", Message: namespaceError(s.Certificate.Namespace).detail()}
	case s.Certificate.UID == "":
		err = &InputError{Path: "certificate.metadata.uid", Message: "is empty: everything a decision creates is owned by it"}
	case now.IsZero():
		err = &InputError{Path: "now", Message: "is the zero time: pass the host clock's time"}
	default:
		return Result{}, true
	}
	return Result{Stage: stage, Reason: reason, Message: err.Error(), Err: err}, false
}

// pass is one decision's reading of a snapshot: every input parsed once,
// at the top of the decision, into plain values. A stage called alone
// reads its own pass; Reconcile reads one for all five stages and applies
// each stage's effects to it before the next (a new status, a secret
// written, requests and keys deleted), recomputing what they change.
type pass struct {
	cert   *Certificate
	others []*Certificate
	ari    *renewal.ARIWindow
	// ariNext and ariErr are the snapshot's ARINextCheck and ARIError.
	ariNext time.Time
	ariErr  string
	// refs are the spec's issuers, defaults filled (Spec.IssuerRefs);
	// health is the snapshot's IssuerHealth.
	refs   []IssuerRef
	health []IssuerSkip
	// oneRef backs refs for a certificate without fallback issuers.
	oneRef [1]IssuerRef

	// secret is the target secret, nil when missing; parsed is its data's
	// parse (nil when secret is nil). absenceConfirmed is the snapshot's
	// SecretAbsenceConfirmed.
	secret           *Secret
	parsed           *keys.ParsedSecret
	absenceConfirmed bool
	// drift lists how the secret differs from what the spec asks around
	// its certificate (secretDrift); nil when it does not, or when there
	// is no usable key pair or valid spec to judge it by.
	drift []string

	requests []request
	nextKeys []nextKey

	// specErr is Validate(spec); schedule is the spec's renewal windows
	// compiled (nil for none, or when they are invalid).
	specErr  error
	schedule *renewal.Schedule

	// now and cfg are the decision's; renewal is the renewal decision for
	// the secret's certificate at now (nil when there is none), recomputed
	// when a write changes the certificate.
	now     time.Time
	cfg     Config
	renewal *renewal.Decision
}

// request is a CertificateRequest with what the stages read of it parsed.
type request struct {
	*CertificateRequest
	// revision is the revision annotation; 0 when missing or invalid.
	revision int
	// created is when the request was made, on the decisions' clock
	// (createdAt).
	created time.Time
	csr     *x509.CertificateRequest
	csrErr  error
}

// nextKey is a next-private-key secret and its decoded key.
type nextKey struct {
	secret *Secret
	key    crypto.Signer
	err    error
}

func newPass(s *Snapshot, now time.Time, cfg Config) *pass {
	c := s.Certificate
	p := &pass{cert: c, others: s.OtherOwners, ari: s.ARI, ariNext: s.ARINextCheck, ariErr: s.ARIError, secret: s.Secret, absenceConfirmed: s.SecretAbsenceConfirmed, now: now, cfg: cfg,
		health: s.IssuerHealth}
	if len(c.Spec.FallbackIssuerRefs) == 0 {
		p.oneRef[0] = c.Spec.IssuerRef.WithDefaults()
		p.refs = p.oneRef[:]
	} else {
		p.refs = c.Spec.IssuerRefs()
	}
	p.specErr = Validate(&c.Spec)
	if r := c.Spec.Renewal; r != nil && len(r.Windows) > 0 {
		p.schedule, _ = renewal.Compile(r.Windows)
	}
	if s.Secret != nil {
		p.parsed, _ = cfg.ParseCache.ParseSecretData(s.Secret.Data)
	}
	p.drift = secretDrift(p)
	p.renewal = decideRenewal(p)
	for _, r := range s.Requests {
		if r == nil {
			continue
		}
		rq := request{CertificateRequest: r, created: createdAt(r)}
		rq.revision, _ = revisionOf(r)
		rq.csr, rq.csrErr = parseCSR(cfg.ParseCache, r.Spec.Request)
		p.requests = append(p.requests, rq)
	}
	// One order for every stage: by revision, then oldest first, then by
	// name. The requestmanager keeps the first request that matches, and
	// the issuing stage acts on the first of the revision, so both mean
	// the same one when a host holds two for a revision.
	slices.SortStableFunc(p.requests, func(a, b request) int {
		return cmp.Or(cmp.Compare(a.revision, b.revision), a.created.Compare(b.created), strings.Compare(a.Name, b.Name))
	})
	for _, sec := range s.NextPrivateKeySecrets {
		if sec == nil {
			continue
		}
		k, err := cfg.ParseCache.DecodePrivateKey(sec.Data[keys.SecretPrivateKey])
		p.nextKeys = append(p.nextKeys, nextKey{secret: sec, key: k, err: err})
	}
	return p
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

// createdAt is when a request was made, on the clock its decisions read:
// the AnnotationCreatedAt the requestmanager stamps (the decision's now),
// else, for a request made without it, its creationTimestamp. Zero means
// unknown. The stages compare it with times they recorded themselves
// (when an issuance began), so it must come from the same clock — an API
// server's clock ahead of or behind the host's would otherwise make every
// answer look older or younger than the issuance it belongs to.
func createdAt(r *CertificateRequest) time.Time {
	// Parsed only when there: time.Parse allocates the error it returns
	// for an empty string, on every pass.
	if v := r.Annotations[AnnotationCreatedAt]; v != "" {
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
			return t
		}
	}
	return r.CreationTimestamp
}

// requestFor returns the request of the given revision, or nil.
func (p *pass) requestFor(revision int) *request {
	for i := range p.requests {
		if p.requests[i].revision == revision {
			return &p.requests[i]
		}
	}
	return nil
}

// current returns the request that issued status.revision, or nil.
func (p *pass) current() *request {
	if rev := p.cert.Status.Revision; rev != nil && *rev > 0 {
		return p.requestFor(*rev)
	}
	return nil
}

// nextKey returns the next-private-key secret of that name, or nil.
func (p *pass) nextKey(name string) *nextKey {
	if name == "" {
		return nil
	}
	for i := range p.nextKeys {
		if p.nextKeys[i].secret.Name == name {
			return &p.nextKeys[i]
		}
	}
	return nil
}

// temporary reports a secret whose certificate is a temporary one
// (keys.IsTemporaryCertificate) with its key beside it.
func (p *pass) temporary() bool {
	return p.parsed != nil && p.parsed.KeyMatches && keys.IsTemporaryCertificate(p.parsed.Leaf)
}

// leaf returns the secret's certificate, nil when there is none.
func (p *pass) leaf() *x509.Certificate {
	if p.parsed == nil {
		return nil
	}
	return p.parsed.Leaf
}

// apply folds one action's effect into the pass, as the host's next read
// would show it. GenerateKey, CreateRequest and WriteTemporaryCertificate
// are not folded in: what they make depends on the host's randomness, and
// the stages after them wait for it on the next pass.
func (p *pass) apply(a Action) {
	switch a := a.(type) {
	case UpdateStatus:
		c := *p.cert
		c.Status = a.Status
		p.cert = &c
	case DeleteRequest:
		p.requests = deleteFunc(p.requests, func(r request) bool { return r.Name == a.Name })
	case DeleteSecret:
		p.nextKeys = deleteFunc(p.nextKeys, func(k nextKey) bool { return k.secret.Name == a.Name })
	case WriteSecret:
		p.applyWrite(a)
	}
}

// deleteFunc is slices.DeleteFunc on a copy: the pass's slices may share
// their arrays with an earlier pass.
func deleteFunc[T any](s []T, del func(T) bool) []T {
	out := make([]T, 0, len(s))
	for _, v := range s {
		if !del(v) {
			out = append(out, v)
		}
	}
	return out
}

// applyWrite makes the pass's secret the one a WriteSecret leaves: the
// chain, the CA and the key (its tls.key in the asked encoding), the
// labels and annotations merged; after an issuance, no ARI window (the
// snapshot's was for the certificate replaced) until the next pass reads
// the new certificate's. What keys.SecretData adds beside them
// (combined PEM, DER, keystores) is what the spec asks by construction, so
// the written secret has no drift.
func (p *pass) applyWrite(w WriteSecret) {
	var key crypto.Signer
	if w.KeySecretName == w.Name && p.parsed != nil {
		key = p.parsed.Key
	} else if k := p.nextKey(w.KeySecretName); k != nil {
		key = k.key
	}
	sec := &Secret{ObjectMeta: ObjectMeta{Name: w.Name, Namespace: p.cert.Namespace, OwnerUID: w.OwnerUID}}
	if p.secret != nil {
		sec.ObjectMeta = p.secret.ObjectMeta
		sec.Labels, sec.Annotations = maps.Clone(sec.Labels), maps.Clone(sec.Annotations)
	}
	sec.Labels = merge(sec.Labels, w.Labels)
	sec.Annotations = merge(sec.Annotations, w.Annotations)
	sec.Data = map[string][]byte{keys.SecretCertificate: w.Chain, keys.SecretCA: w.CA}
	if key != nil {
		if pemKey, err := keys.EncodePrivateKey(key, w.Output.KeyEncoding); err == nil {
			sec.Data[keys.SecretPrivateKey] = pemKey
		}
	}
	p.secret = sec
	p.parsed, _ = p.cfg.ParseCache.ParseSecretData(sec.Data)
	p.drift = nil
	if w.KeySecretName != w.Name {
		// A new certificate: the snapshot's ARI window was the old one's.
		p.ari, p.ariNext, p.ariErr = nil, time.Time{}, ""
	}
	p.renewal = decideRenewal(p)
}

func merge(dst, src map[string]string) map[string]string {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		dst = make(map[string]string, len(src))
	}
	maps.Copy(dst, src)
	return dst
}

// describeKey names a next private key for messages.
func describeKey(name string) string {
	if name == "" {
		return "the next private key (none named in status)"
	}
	return fmt.Sprintf("the next private key %s", name)
}

// parseCSR reads a request's CSR (keys.DecodeCertificateRequest), through
// pc when it is not nil. Its signature is the issuer's to check
// (keys.ParseCSR): a request whose signature does not verify is answered
// invalid, and the stages replace it after the backoff, as for any
// invalid request.
func parseCSR(pc *keys.ParseCache, pemBytes []byte) (*x509.CertificateRequest, error) {
	return pc.DecodeCertificateRequest(pemBytes)
}
