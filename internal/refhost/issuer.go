package refhost

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"time"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/challenge"
	"github.com/certlife/certlife/internal/acmeflow"
	"github.com/certlife/certlife/internal/localca"
	"github.com/certlife/certlife/internal/stablehash"
	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/order"
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
	CA   *localca.CA
	Rand io.Reader
	// Fault, when set, decides a misbehaviour per request.
	Fault func(req *certificate.CertificateRequest, now time.Time) Fault
	// RetryAfter of a rate-limited request; zero means 2 hours.
	RetryAfter time.Duration
	// TrustRequests skips the check of each CSR's signature (see
	// localca.Options.TrustRequest): for the simulation only.
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
	csr, err := keys.DecodeCSR(req.Spec.Request)
	if err != nil {
		return Outcome{Done: true, Status: Failed(now, "the request's CSR cannot be read: "+err.Error(), nil)}, nil
	}
	d := certificate.DefaultDuration
	if req.Spec.Duration != nil {
		d = req.Spec.Duration.Duration
	}
	opts := localca.Options{NotBefore: now, NotAfter: now.Add(d), IsCA: req.Spec.IsCA, TrustRequest: l.TrustRequests}
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

// ACME issues through an ACME server: one order per request, driven by the
// order and challenge machines of a Runner.
type ACME struct {
	Runner *acmeflow.Runner
	// Solvers the orders offer; one HTTP-01 solver for every name when
	// empty.
	Solvers []order.SolverConfig
	// Profile the orders ask for.
	Profile string
	// RequestValidity makes each order ask for notBefore = now and notAfter
	// = now + the request's duration (cert-manager's
	// enableDurationFeature), for CAs that honour them.
	RequestValidity bool
	// PreferredChain is the issuer common name of the chain to prefer.
	PreferredChain string
}

// orderName is one order per request and CSR: a request re-created after a
// failure carries a new CSR and gets a new order.
func orderName(req *certificate.CertificateRequest) string {
	return fmt.Sprintf("%s-%08x", req.Name, uint32(stablehash.Sum64("order", string(req.Spec.Request))))
}

// orderSpec is the order for a request's CSR. The common name goes in as
// itself: the order machine makes it an identifier — an IP address as an
// IP identifier, never a DNS name.
func (a *ACME) orderSpec(req *certificate.CertificateRequest, csr *x509.CertificateRequest, now time.Time) order.Spec {
	spec := order.Spec{CSR: csr.Raw, Issuer: challenge.Issuer{Name: req.Spec.IssuerRef.Name, Kind: req.Spec.IssuerRef.Kind, Group: req.Spec.IssuerRef.Group},
		CommonName: csr.Subject.CommonName, DNSNames: append([]string(nil), csr.DNSNames...), Solvers: a.Solvers, Profile: a.Profile, PreferredChain: a.PreferredChain}
	for _, ip := range csr.IPAddresses {
		spec.IPAddresses = append(spec.IPAddresses, ip.String())
	}
	if len(spec.Solvers) == 0 {
		spec.Solvers = []order.SolverConfig{{Solver: challenge.Solver{HTTP01: &challenge.HTTP01Solver{}}}}
	}
	if a.RequestValidity {
		d := certificate.DefaultDuration
		if req.Spec.Duration != nil {
			d = req.Spec.Duration.Duration
		}
		nb, na := now.Truncate(time.Second), now.Truncate(time.Second).Add(d)
		spec.NotBefore, spec.NotAfter = &nb, &na
	}
	return spec
}

// Process implements Issuer.
func (a *ACME) Process(ctx context.Context, req *certificate.CertificateRequest, now time.Time) (Outcome, error) {
	name := orderName(req)
	if _, ok := a.Runner.Order(name); !ok {
		csr, err := keys.DecodeCSR(req.Spec.Request)
		if err != nil {
			return Outcome{Done: true, Status: Failed(now, "the request's CSR cannot be read: "+err.Error(), nil)}, nil
		}
		a.Runner.Add(order.Order{Name: name, Namespace: req.Namespace, CreationTimestamp: now, Spec: a.orderSpec(req, csr, now)})
	}
	acted, next := a.Runner.Step(ctx)
	if acted {
		next = now // the machines have more to do at once
	}
	o, _ := a.Runner.Order(name)
	switch {
	case o.Status.State == order.StateValid && len(o.Status.Certificate) > 0:
		a.Runner.Remove(ctx, name)
		return Outcome{Done: true, Status: Issued(o.Status.Certificate, topOfChain(o.Status.Certificate))}, nil
	case o.Status.State.Failed():
		a.Runner.Remove(ctx, name)
		var retry *time.Time
		if o.Status.RetryAfter != nil && o.Status.RetryAfter.After(now) {
			retry = o.Status.RetryAfter
		}
		return Outcome{Done: true, Status: Failed(now, "the ACME order is "+string(o.Status.State)+": "+o.Status.Reason, retry)}, nil
	}
	if next.IsZero() {
		next = now.Add(time.Second)
	}
	return Outcome{RequeueAt: next}, nil
}

// topOfChain returns the last certificate of a PEM chain, the one whose
// issuer is the root: what a host writes to ca.crt for an ACME chain.
func topOfChain(chain []byte) []byte {
	var last []byte
	rest := chain
	for {
		b, r := pem.Decode(rest)
		if b == nil {
			break
		}
		last = pem.EncodeToMemory(b)
		rest = r
	}
	return last
}
