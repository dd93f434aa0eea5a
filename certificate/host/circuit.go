package host

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/certlife/certlife/certificate"
)

// Defaults of CircuitConfig.
const (
	DefaultCircuitFailures = 5
	DefaultCircuitWindow   = time.Hour
	DefaultCircuitOpen     = time.Hour
	DefaultCircuitProbe    = 15 * time.Minute
)

// CircuitConfig sets the circuit a Reconciler keeps for each issuer,
// across all its certificates, so that certificates with fallback
// issuers (certificate.Spec.FallbackIssuerRefs) skip an issuer that
// fails for the others: the circuit opens after Failures failures in a
// row within Window, and while it is open no new request of such a
// certificate names the issuer (certificate.Snapshot.IssuerHealth): it
// goes to the certificate's next issuer. Open later the circuit is
// half-open: one request (a probe) may name the issuer again, and the
// others wait for its answer — an issued request closes the circuit, a
// failed one opens it again for Open — or, when none comes, for Probe,
// after which another probe may go.
//
// A failure is a request the issuer failed (Ready False, reason Failed)
// or an answer that could not reach its CA (certificate.ErrCAUnreachable);
// denied and invalid requests say nothing of the issuer's health. A
// failure of a request made before the circuit opened, arriving while
// it is open, changes nothing; any issued request closes it. The
// circuits live in the Reconciler's memory: a restarted host starts with
// every circuit closed. Certificates without fallback issuers are never
// held back by a circuit, and their requests' answers count.
type CircuitConfig struct {
	// Failures in a row (no issued request between) that open a
	// circuit. Zero means DefaultCircuitFailures (5); negative turns the
	// circuits off.
	Failures int
	// Window: failures older than this are forgotten. Zero means
	// DefaultCircuitWindow (1 h).
	Window time.Duration
	// Open is how long an open circuit skips its issuer. Zero means
	// DefaultCircuitOpen (1 h).
	Open time.Duration
	// Probe is how long a half-open circuit waits for its probe's answer
	// before it lets another request go. Zero means DefaultCircuitProbe
	// (15 min).
	Probe time.Duration
}

// Validate names a setting that cannot be applied.
func (c CircuitConfig) Validate() error {
	var errs []error
	for name, d := range map[string]time.Duration{"Window": c.Window, "Open": c.Open, "Probe": c.Probe} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("host: Config.IssuerCircuit.%s is %v: it must not be negative", name, d))
		}
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}

func (c CircuitConfig) withDefaults() CircuitConfig {
	if c.Failures == 0 {
		c.Failures = DefaultCircuitFailures
	}
	if c.Window == 0 {
		c.Window = DefaultCircuitWindow
	}
	if c.Open == 0 {
		c.Open = DefaultCircuitOpen
	}
	if c.Probe == 0 {
		c.Probe = DefaultCircuitProbe
	}
	return c
}

// ErrIssuerSkipped is wrapped by the error of a certificate pass whose
// decision asked for a request to an issuer whose circuit opened (or
// whose half-open circuit sent its probe) while the pass ran: the request
// is not made, and the next pass decides on the news.
var ErrIssuerSkipped = errors.New("the issuer's circuit is open")

// CircuitState is one issuer's circuit (Reconciler.Circuits).
type CircuitState struct {
	IssuerRef certificate.IssuerRef
	// Failures are the failures in a row within the window, while the
	// circuit is closed.
	Failures int
	// OpenUntil is zero while the circuit is closed. Before it, the
	// circuit is open; at and after it, half-open.
	OpenUntil time.Time
	// ProbeUntil, while half-open, is how long the probe that went holds
	// back other requests; zero (or past) when none is out.
	ProbeUntil time.Time
}

// circuits are the Reconciler's circuits, one per issuer that failed
// since it last issued. Safe for concurrent use.
type circuits struct {
	cfg CircuitConfig // defaults filled
	mu  sync.Mutex
	m   map[certificate.IssuerRef]*circuit
}

type circuit struct {
	failures   []time.Time // in a row, oldest first
	openUntil  time.Time
	probeUntil time.Time
}

func newCircuits(cfg CircuitConfig) *circuits {
	return &circuits{cfg: cfg.withDefaults(), m: map[certificate.IssuerRef]*circuit{}}
}

func (cs *circuits) off() bool { return cs.cfg.Failures < 0 }

// failed records a failure of ref's issuer at at.
func (cs *circuits) failed(ref certificate.IssuerRef, at time.Time) {
	if cs.off() {
		return
	}
	ref = ref.WithDefaults()
	cs.mu.Lock()
	defer cs.mu.Unlock()
	c := cs.m[ref]
	if c == nil {
		cs.prune(at)
		c = &circuit{}
		cs.m[ref] = c
	}
	switch {
	case !c.openUntil.IsZero() && at.Before(c.openUntil):
		// Open: a request made before it opened.
	case !c.openUntil.IsZero():
		// Half-open: the probe, or any other request, failed.
		c.openUntil, c.probeUntil, c.failures = at.Add(cs.cfg.Open), time.Time{}, nil
	default:
		keep := c.failures[:0]
		for _, f := range c.failures {
			if at.Sub(f) < cs.cfg.Window {
				keep = append(keep, f)
			}
		}
		c.failures = append(keep, at)
		if len(c.failures) >= cs.cfg.Failures {
			c.openUntil, c.failures = at.Add(cs.cfg.Open), nil
		}
	}
}

// prune lets go, before a new issuer's circuit is kept, those that say
// nothing any more at now: closed ones whose failures are all older
// than Window, and half-open ones with no probe out that have been
// half-open for longer than Window (an issuer nobody asked since,
// perhaps deleted; its next request is the probe it would have been).
// So the circuits kept are those of issuers that failed recently,
// however many issuers come and go. cs.mu is held.
func (cs *circuits) prune(now time.Time) {
	for ref, c := range cs.m {
		switch {
		case c.openUntil.IsZero():
			if len(c.failures) == 0 || now.Sub(c.failures[len(c.failures)-1]) >= cs.cfg.Window {
				delete(cs.m, ref)
			}
		case now.Sub(c.openUntil) >= cs.cfg.Window && !now.Before(c.probeUntil):
			delete(cs.m, ref)
		}
	}
}

// succeeded records an issued request of ref's issuer: its circuit
// closes.
func (cs *circuits) succeeded(ref certificate.IssuerRef) {
	if cs.off() {
		return
	}
	cs.mu.Lock()
	delete(cs.m, ref.WithDefaults())
	cs.mu.Unlock()
}

// admit reports whether a new request of a certificate with fallback
// issuers may name ref at now: not while its circuit is open, nor while
// it is half-open and a probe is out; a request admitted while it is
// half-open is the probe.
func (cs *circuits) admit(ref certificate.IssuerRef, now time.Time) bool {
	if cs.off() {
		return true
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	c := cs.m[ref.WithDefaults()]
	switch {
	case c == nil || c.openUntil.IsZero():
		return true
	case now.Before(c.openUntil), now.Before(c.probeUntil):
		return false
	}
	c.probeUntil = now.Add(cs.cfg.Probe)
	return true
}

// skips is the report for a decision at now: each issuer a new request
// may not name yet, and until when.
func (cs *circuits) skips(now time.Time) []certificate.IssuerSkip {
	if cs.off() {
		return nil
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var out []certificate.IssuerSkip
	for ref, c := range cs.m {
		switch {
		case c.openUntil.IsZero():
		case now.Before(c.openUntil):
			out = append(out, certificate.IssuerSkip{IssuerRef: ref, Until: c.openUntil})
		case now.Before(c.probeUntil):
			out = append(out, certificate.IssuerSkip{IssuerRef: ref, Until: c.probeUntil})
		}
	}
	slices.SortFunc(out, func(a, b certificate.IssuerSkip) int {
		return strings.Compare(describeRef(a.IssuerRef), describeRef(b.IssuerRef))
	})
	return out
}

// states lists every circuit, by issuer.
func (cs *circuits) states() []CircuitState {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	out := make([]CircuitState, 0, len(cs.m))
	for ref, c := range cs.m {
		out = append(out, CircuitState{IssuerRef: ref, Failures: len(c.failures), OpenUntil: c.openUntil, ProbeUntil: c.probeUntil})
	}
	slices.SortFunc(out, func(a, b CircuitState) int {
		return strings.Compare(describeRef(a.IssuerRef), describeRef(b.IssuerRef))
	})
	return out
}

// answered records what an issuer's answer says of its health: an issued
// request, a failed one; nothing for a denied or invalid one.
func (cs *circuits) answered(r *certificate.CertificateRequest, now time.Time) {
	if c := r.Condition(certificate.RequestConditionDenied); c != nil && c.Status == certificate.StatusTrue {
		return
	}
	if c := r.Condition(certificate.RequestConditionInvalidRequest); c != nil && c.Status == certificate.StatusTrue {
		return
	}
	c := r.Condition(certificate.RequestConditionReady)
	switch {
	case c == nil:
	case c.Status == certificate.StatusTrue:
		cs.succeeded(r.Spec.IssuerRef)
	case c.Status == certificate.StatusFalse && c.Reason == certificate.RequestReasonFailed:
		at := now
		if r.Status.FailureTime != nil {
			at = *r.Status.FailureTime
		}
		cs.failed(r.Spec.IssuerRef, at)
	}
}

// Circuits lists the Reconciler's issuer circuits (Config.IssuerCircuit):
// each issuer that failed since it last issued, sorted by issuer. For
// status pages, metrics and tests. A circuit that says nothing any more
// (a closed one whose failures are all older than Window, a half-open
// one nobody asked for longer than Window) may be let go.
func (r *Reconciler) Circuits() []CircuitState { return r.circuits.states() }

// IssuerHealth is what the Reconciler's circuits report to the decision
// on a certificate with fallback issuers at now
// (certificate.Snapshot.IssuerHealth).
func (r *Reconciler) IssuerHealth(now time.Time) []certificate.IssuerSkip {
	return r.circuits.skips(now)
}

// ReportIssuer records the answer of a request the Reconciler did not
// hand to its issuer — one answered by whoever serves its issuer, which a
// host learns of through its store — in the issuer's circuit: failed
// for a request the issuer failed, false for one it issued. The
// Reconciler records the answers of its own issuers itself.
func (r *Reconciler) ReportIssuer(ref certificate.IssuerRef, failed bool) {
	if failed {
		r.circuits.failed(ref, r.clock.Now())
		return
	}
	r.circuits.succeeded(ref)
}
