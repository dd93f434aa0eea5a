package certificate

import (
	"context"
	"time"
)

// Issuer answers the requests whose issuerRef names it, through the
// contract below. The local CA (package certificate/localca) and the ACME
// issuer (package acmeclient) implement it; a host loop calls Answer for
// each request that is not Answered. An issuer that keeps state per
// request implements Forgetter too, and one that removes that state on a
// schedule of its own, Sweeper.
type Issuer interface {
	// Answer works on a request that is not Answered: it answers it
	// (SetIssued, SetFailed, SetDenied, SetInvalid) or records progress
	// (SetPending), changing only r's status, which the host writes back
	// when it changed. now is the host's time: the issuer times what it
	// records and what it returns from it, not from a clock of its own.
	// It returns when to call again; zero means only when the request
	// changes. An error means the step could not run; the host calls
	// again at next, or soon when next is zero.
	Answer(ctx context.Context, r *CertificateRequest, now time.Time) (next time.Time, err error)
}

// Forgetter is implemented by an issuer that keeps state per request (an
// ACME order, what its challenges present), which must not outlive the
// request. An issuer that keeps nothing between answers does not
// implement it.
type Forgetter interface {
	// Forget tells the issuer that the request namespace/name is deleted:
	// it drops whatever it keeps for it. The host calls it after it
	// deletes a request (DeleteRequest), and when an answer's status
	// write finds the request gone. It is idempotent: a request the
	// issuer never saw, or already forgot, is no error. The host loop
	// (package certificate/host) never calls it while an Answer of the
	// same request is under way, nor Answer for a request it has told the
	// issuer to forget.
	Forget(ctx context.Context, namespace, name string) error
}

// Sweeper is implemented by an issuer that keeps state and removes what
// is due on its own schedule — what it keeps for requests answered long
// ago, or for requests the host deleted without telling it (a crash
// between the deletion and Forget) — so that nothing is kept longer than
// it must be even when no request needs the issuer.
type Sweeper interface {
	// Sweep removes what is due at now and returns when the next removal
	// is due. The host calls it when it starts and again at next; zero
	// means nothing is due until the issuer is next used (Answer or
	// Forget), after which the host calls Sweep again. An error means a
	// removal failed; the host tries again later, at next when it is not
	// zero.
	Sweep(ctx context.Context, now time.Time) (next time.Time, err error)
}

// The issuer contract.
//
// An issuer reads a CertificateRequest — the CSR in Spec.Request, and
// Spec.IssuerRef, Duration, IsCA and Usages — and answers it with exactly
// one of SetIssued, SetFailed, SetDenied or SetInvalid, each of which sets
// the conditions and fields the certificate stages read. Until then it may
// record progress with SetPending. An answered request (Answered) is
// final: the issuer leaves it alone, and the certificate stages replace it
// when they need another attempt.
//
// The functions change only the request's status; the issuer writes it
// back (the status subresource in Kubernetes).

// Request condition reasons beyond RequestReasonPending, RequestReasonFailed
// and RequestReasonIssued.
const (
	// RequestReasonDenied: the request was denied (Ready=False and
	// Denied=True).
	RequestReasonDenied = "Denied"
)

// AnnotationPrivateKeySecretName on a CertificateRequest: the secret that
// holds the private key of its CSR (the certificate's next private key).
// An issuer that signs with the request's own key — a self-signed issuer —
// reads the key from it.
const AnnotationPrivateKeySecretName = "certlife.dev/private-key-secret-name"

// SetIssued answers r with a certificate: chain is the PEM chain, leaf
// first; ca is the issuing CA in PEM, or nil when the issuer does not know
// it. The issuing stage checks the chain before it writes it (the key, the
// names, the validity) and counts a bad one as a failure.
func SetIssued(r *CertificateRequest, chain, ca []byte, now time.Time) {
	r.Status.Certificate, r.Status.CA = chain, ca
	r.Status.FailureTime, r.Status.RetryAfter = nil, nil
	r.Status.Conditions = setRequestCondition(r.Status.Conditions,
		Condition{Type: RequestConditionReady, Status: StatusTrue, Reason: RequestReasonIssued, Message: "certificate issued"}, now)
}

// SetFailed answers r with a failure the issuer may recover from (the CA
// is down, a rate limit, an ACME order that went invalid). retryAfter,
// when not zero, is the earliest the CA allows another attempt; the
// certificate's backoff waits at least until then.
func SetFailed(r *CertificateRequest, message string, now, retryAfter time.Time) {
	fail(r, Condition{Type: RequestConditionReady, Status: StatusFalse, Reason: RequestReasonFailed, Message: message}, now)
	if !retryAfter.IsZero() {
		r.Status.RetryAfter = &retryAfter
	}
}

// SetDenied answers r with a refusal: the request is not to be signed
// (a policy, an approver). It is a failure for the certificate's backoff.
func SetDenied(r *CertificateRequest, message string, now time.Time) {
	r.Status.Conditions = setRequestCondition(r.Status.Conditions,
		Condition{Type: RequestConditionDenied, Status: StatusTrue, Reason: RequestReasonDenied, Message: message}, now)
	fail(r, Condition{Type: RequestConditionReady, Status: StatusFalse, Reason: RequestReasonFailed, Message: "denied: " + message}, now)
}

// SetInvalid answers r with "this request cannot be signed as it is" (a
// CSR that does not parse or whose signature is wrong, a usage the issuer
// cannot grant). It is a failure for the certificate's backoff.
func SetInvalid(r *CertificateRequest, message string, now time.Time) {
	r.Status.Conditions = setRequestCondition(r.Status.Conditions,
		Condition{Type: RequestConditionInvalidRequest, Status: StatusTrue, Reason: RequestConditionInvalidRequest, Message: message}, now)
	fail(r, Condition{Type: RequestConditionReady, Status: StatusFalse, Reason: RequestReasonFailed, Message: "invalid: " + message}, now)
}

// SetPending records progress on an unanswered request (Ready=False,
// reason Pending), such as "waiting for the ACME order". It does nothing
// to an answered request.
func SetPending(r *CertificateRequest, message string, now time.Time) {
	if Answered(r) {
		return
	}
	r.Status.Conditions = setRequestCondition(r.Status.Conditions,
		Condition{Type: RequestConditionReady, Status: StatusFalse, Reason: RequestReasonPending, Message: message}, now)
}

// Answered reports whether r was answered: issued, failed, denied or
// invalid.
func Answered(r *CertificateRequest) bool {
	if r == nil {
		return false
	}
	if failed, _, _ := requestFailed(r); failed {
		return true
	}
	ready := r.Condition(RequestConditionReady)
	return ready != nil && ready.Status == StatusTrue
}

func fail(r *CertificateRequest, ready Condition, now time.Time) {
	r.Status.Certificate, r.Status.CA = nil, nil
	r.Status.FailureTime = &now
	r.Status.Conditions = setRequestCondition(r.Status.Conditions, ready, now)
}

// setRequestCondition sets c on a request's conditions, keeping the
// transition time when the status does not change.
func setRequestCondition(conds []Condition, c Condition, now time.Time) []Condition {
	return setCondition(conds, c, now, 0)
}
