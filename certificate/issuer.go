package certificate

import (
	"context"
	"crypto/x509"
	"errors"
	"time"

	"github.com/certlife/certlife/renewal"
)

// Issuer answers the requests whose issuerRef names it, through the
// contract below. The local CA (package certificate/localca) and the ACME
// issuer (package acmeclient) implement it; a host calls Answer for each
// request that is not Answered. An issuer that keeps state per request
// also implements Forgetter, and one that removes that state on a
// schedule of its own, Sweeper; one whose answers wait for a secret to
// be written implements SecretAwaiter, and one whose CA suggests renewal
// windows, RenewalAdvisor.
type Issuer interface {
	// Answer works on a request that is not Answered: it answers it
	// (SetIssued, SetFailed, SetDenied, SetInvalid) or records progress
	// (SetPending), changing only r's status, which the host writes back
	// when it changed. now is the time to work on: the issuer reads no
	// clock of its own for its decisions. It returns when to call again;
	// zero means only when the request changes. An error means the step
	// could not run; the host calls again at next, or soon when next is
	// zero. An error wrapping ErrCAUnreachable says that the CA could not
	// be reached.
	Answer(ctx context.Context, r *CertificateRequest, now time.Time) (next time.Time, err error)
}

// Forgetter is an Issuer that keeps state per request (an ACME order,
// what its challenges present). The host calls Forget after it deletes a
// request (DeleteRequest), when it finds a request it was answering gone,
// and when it learns that one was deleted by someone else: the issuer
// drops whatever it keeps for the request namespace/name. Forget is
// idempotent; a request it never saw is no error. It may be called while
// an Answer of the same request is under way on a host with several
// workers: an answer that makes something after Forget finds the request
// gone when its status is written back, and the host calls Forget again.
type Forgetter interface {
	Forget(ctx context.Context, namespace, name string) error
}

// Sweeper is an Issuer that removes what it keeps on its own schedule —
// the state of requests answered long ago, or never stepped again — so
// that nothing outlives its use even when no request needs the issuer.
// The host calls Sweep when it starts and again at the time Sweep returns
// (zero: only after the issuer next answers a request), with the time to
// work on.
type Sweeper interface {
	Sweep(ctx context.Context, now time.Time) (next time.Time, err error)
}

// SecretAwaiter is an Issuer whose answer may wait for a secret to be
// written: a CA issuer whose CA key pair is not there yet (a CA the host
// issues itself, on its first start), a self-signed issuer whose
// request's key is not readable yet. After an Answer that left r
// unanswered, the host asks AwaitedSecret which secret that is, and
// calls Answer for r again as soon as that secret is written, besides at
// the time Answer returned, which stays the backstop. An empty name: r
// waits for no secret. It reads only r and the issuer's configuration:
// no I/O.
type SecretAwaiter interface {
	AwaitedSecret(r *CertificateRequest) (namespace, name string)
}

// RenewalAdvisor is an Issuer that can say when its CA suggests renewing
// a certificate it issued, as ACME Renewal Information (RFC 9773) does.
// On each pass over a certificate c whose issuerRef names the issuer and
// whose secret holds a certificate, a host asks RenewalWindow about that
// certificate (leaf; c says whose it is, for an issuer that serves
// several namespaces), gives the window to the decision
// (Snapshot.ARI), and looks at the certificate again by next to ask
// again (zero: no need). A nil window means the CA suggests none. An
// error is reported by the host, which asks again by next; the window
// returned with it, if any (the last the CA gave), is used meanwhile.
// The advisor bounds how often it asks its CA: a host may ask on every
// pass.
type RenewalAdvisor interface {
	RenewalWindow(ctx context.Context, c *Certificate, leaf *x509.Certificate, now time.Time) (w *renewal.ARIWindow, next time.Time, err error)
}

// ErrCAUnreachable is wrapped by the error of an Answer that could not
// reach the issuer's CA (a network error, a server that does not
// answer) and left the request unanswered, to be called again at the
// time it returned: the request is not failed, and the host reports the
// error as a warning (package host: Event.Warning) rather than as a
// failed pass.
var ErrCAUnreachable = errors.New("the issuer's CA cannot be reached")

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
