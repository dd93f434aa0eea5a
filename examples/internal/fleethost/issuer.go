package fleethost

import (
	"context"
	"io"
	"time"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/examples/internal/simca"
	"github.com/certlife/certlife/keys"
)

// Issuer answers CertificateRequests.
type Issuer interface {
	// Process looks at a pending request. When the issuer has an answer it
	// returns Done with the request's new status; otherwise it says when to
	// look again.
	Process(ctx context.Context, req *certificate.CertificateRequest, now time.Time) (Outcome, error)
}

// Outcome is an issuer's answer about one request.
type Outcome struct {
	Done      bool
	Status    certificate.RequestStatus // when Done
	RequeueAt time.Time                 // when not Done
}

// Issued is the status of a request answered with a certificate.
func Issued(chain, ca []byte) certificate.RequestStatus {
	return certificate.RequestStatus{Certificate: chain, CA: ca, Conditions: []certificate.Condition{
		{Type: certificate.RequestConditionReady, Status: certificate.StatusTrue, Reason: certificate.RequestReasonIssued, Message: "certificate issued"}}}
}

// Failed is the status of a request the issuer could not answer with a
// certificate; retryAfter, when set, is when the issuer allows another
// attempt.
func Failed(now time.Time, msg string, retryAfter *time.Time) certificate.RequestStatus {
	t := now
	return certificate.RequestStatus{FailureTime: &t, RetryAfter: retryAfter, Conditions: []certificate.Condition{
		{Type: certificate.RequestConditionReady, Status: certificate.StatusFalse, Reason: certificate.RequestReasonFailed, Message: msg}}}
}

// Fault is a misbehaviour of the local CA, for tests and the simulation.
type Fault int

// Faults.
const (
	FaultNone Fault = iota
	// FaultFail: the request fails ("the CA is down").
	FaultFail
	// FaultWrongKey: a certificate for another key than the CSR's.
	FaultWrongKey
	// FaultExpired: a certificate that has already expired.
	FaultExpired
	// FaultRateLimited: the request fails with a Retry-After.
	FaultRateLimited
)

func (f Fault) String() string {
	return [...]string{"none", "fail", "wrong key", "expired", "rate limited"}[f]
}

// LocalCA issues from a local CA, at once.
type LocalCA struct {
	CA   *simca.CA
	Rand io.Reader
	// Fault, when set, decides a misbehaviour per request.
	Fault func(req *certificate.CertificateRequest, now time.Time) Fault
	// RetryAfter of a rate-limited request; zero means 2 hours.
	RetryAfter time.Duration
	// TrustRequests skips the check of each CSR's signature (see
	// simca.Options.TrustRequest): for the simulation only.
	TrustRequests bool
	// Count of requests answered, by fault.
	Count map[Fault]int
}

// Process implements Issuer.
func (l *LocalCA) Process(_ context.Context, req *certificate.CertificateRequest, now time.Time) (Outcome, error) {
	fault := FaultNone
	if l.Fault != nil {
		fault = l.Fault(req, now)
	}
	if l.Count == nil {
		l.Count = map[Fault]int{}
	}
	l.Count[fault]++
	switch fault {
	case FaultFail:
		return Outcome{Done: true, Status: Failed(now, "the CA is unavailable", nil)}, nil
	case FaultRateLimited:
		wait := l.RetryAfter
		if wait <= 0 {
			wait = 2 * time.Hour
		}
		at := now.Add(wait)
		return Outcome{Done: true, Status: Failed(now, "rate limited: too many certificates for this name; retry after "+at.UTC().Format(time.RFC3339), &at)}, nil
	}
	csr, err := keys.ParseCSR(req.Spec.Request)
	if err != nil {
		return Outcome{Done: true, Status: Failed(now, "the request's CSR cannot be read: "+err.Error(), nil)}, nil
	}
	d := certificate.DefaultDuration
	if req.Spec.Duration != nil {
		d = req.Spec.Duration.Duration
	}
	opts := simca.Options{NotBefore: now, NotAfter: now.Add(d), IsCA: req.Spec.IsCA, TrustRequest: l.TrustRequests}
	switch fault {
	case FaultWrongKey:
		k, err := keys.Generate(l.Rand, keys.KeySpec{Algorithm: keys.AlgorithmEd25519})
		if err != nil {
			return Outcome{}, err
		}
		opts.PublicKey = k.Public()
	case FaultExpired:
		opts.NotBefore, opts.NotAfter = now.Add(-2*d), now.Add(-d)
	}
	chain, err := l.CA.Sign(l.Rand, csr, opts)
	if err != nil {
		return Outcome{Done: true, Status: Failed(now, err.Error(), nil)}, nil
	}
	return Outcome{Done: true, Status: Issued(chain, l.CA.CertPEM)}, nil
}

// ACME answers requests over ACME with the public acmeclient.Issuer: one
// order per request, its state in the issuer's store. A renewal's request
// carries certificate.AnnotationReplaces, set by the decision, and its
// order names the certificate it replaces (RFC 9773 §5).
type ACME struct {
	Issuer *acmeclient.Issuer
}

// Process implements Issuer: one step of the request's order.
func (a *ACME) Process(ctx context.Context, req *certificate.CertificateRequest, _ time.Time) (Outcome, error) {
	res, err := a.Issuer.Step(ctx, req)
	if err != nil {
		return Outcome{}, err
	}
	if res.Answered {
		return Outcome{Done: true, Status: req.Status}, nil
	}
	return Outcome{RequeueAt: res.RequeueAt}, nil
}
