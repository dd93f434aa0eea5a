package acmeclient

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/challenge"
	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/order"
)

// IssuerConfig configures an Issuer. Client, Store and at least one
// presenter in Solvers are required; every other field has a documented
// zero value.
type IssuerConfig struct {
	// Client makes the ACME requests, on its clock. It needs an account:
	// the issuer registers one with Account (or finds the key's) before
	// its first order, unless the host did with EnsureAccount.
	Client *Client
	// Account is what the account is registered with, when the issuer
	// registers it.
	Account AccountOptions
	// Store keeps each request's order and challenges for the host. The
	// issuer owns it: it reads it whole once (List), when it is first
	// used, and keeps in memory what scheduling needs, updated by its own
	// writes; nothing else may write it while the issuer runs.
	Store Store
	// Solvers present and self-check the challenges: one Presenter per
	// challenge type the orders may use.
	Solvers Solvers
	// SolverConfigs choose, per identifier, the challenge type and the
	// solver configuration a presenter sees (order.ChooseSolver). Every
	// type named must have a presenter in Solvers. Empty means one
	// default per presenter: HTTP-01 for names and IP addresses when
	// there is an HTTP-01 presenter, else TLS-ALPN-01 when there is a
	// TLS-ALPN-01 one, DNS-01 for wildcards (and for every name when it
	// is the only one). A type the server does not offer for an
	// identifier is passed over for the next default.
	SolverConfigs []order.SolverConfig
	// Profile is the certificate profile the orders ask for; empty asks
	// for the server's default.
	Profile string
	// PreferredChain is the issuer common name of the chain to prefer
	// among those the server offers; empty takes its default.
	PreferredChain string
	// RequestValidity makes each order ask for notBefore = now and
	// notAfter = now + the request's duration (RFC 8555 §7.4), for CAs
	// that honour them; Let's Encrypt does not.
	RequestValidity bool
	// Order, Challenge and Scheduler configure the machines; their zero
	// values are their defaults (the first poll 200 ms after each change,
	// doubling to 5 s while nothing changes, the server's Retry-After
	// followed; at most 60 challenges in flight, never two for the same
	// name and type).
	Order     order.Config
	Challenge challenge.Config
	Scheduler challenge.SchedulerConfig
	// KeepAnswered is how long a state is kept after its request was
	// answered, so that a host that crashed before it wrote the answer
	// gets it again from the same order; zero means 10 minutes. Then it
	// is removed.
	KeepAnswered time.Duration
	// StaleAfter bounds how long a state the host stopped stepping is
	// kept: one not stepped for StaleAfter past the time its last Step
	// asked to be called again (or, after a restart, past the issuer's
	// first use) is taken for the state of a request that is gone — the
	// host deleted it without Forget, or crashed in between — and removed,
	// what its challenges present cleaned up. So is a state whose order
	// expired without a Step since. The scheduler never counts such a
	// state's challenges, so no other request waits for a slot it holds.
	// Zero means 15 minutes. A host that deletes a request calls Forget,
	// which removes its state at once. Replicas that share the Store:
	// a state is read again before it is removed as stale, and one that
	// another issuer wrote since this one last saw it (State.SteppedAt)
	// is kept, for 1 h 15 min past that write — past the longest wait
	// on the server's Retry-After — since that replica is at work on it.
	StaleAfter time.Duration
	// Trace, when set, sees every decision that had effects.
	Trace func(Event)
	// DisableRenewalInfo turns off ACME Renewal Information (RFC 9773):
	// RenewalWindow then suggests no window, and asks the server
	// nothing. By default the issuer gives the window of each
	// certificate it issued to a host that asks, when the server's
	// directory offers renewalInfo.
	DisableRenewalInfo bool
	// Limits are the CA's rate limits the issuer paces its orders by
	// (see RateLimits). Nil means Let's Encrypt's published limits
	// (LetsEncryptRateLimits) when the Client's directory is Let's
	// Encrypt's production or staging one (acme-v02.api.letsencrypt.org,
	// acme-staging-v02.api.letsencrypt.org), and for any other CA no
	// limits of its own but still learning from the CA's answers: an
	// order the CA refuses for a rate limit (429 rateLimited) waits
	// Pending (Reason "Paced") until the CA's Retry-After instead of
	// failing the request. &RateLimits{Disabled: true} turns pacing and
	// learning off: every order is sent at once, as an issuer without
	// pacing does.
	Limits *RateLimits
}

// Event is one decision of the order or a challenge machine that had
// effects, a challenge presented again after a restart, or a state
// removed, for a timeline or a log.
type Event struct {
	Time time.Time
	// Resource is "order/<name>" or "challenge/<name>" (a state is
	// "order/<key>").
	Resource string
	Reason   string
	Message  string
	Actions  []string
	// Err is the error that stopped the actions, if one did.
	Err error
}

// String is one readable line.
func (e Event) String() string {
	s := fmt.Sprintf("%s %-28s %-22s %s", e.Time.UTC().Format("15:04:05.000"), e.Resource, e.Reason, strings.Join(e.Actions, " "))
	if e.Err != nil {
		s += " error: " + e.Err.Error()
	}
	return s
}

// Issuer answers certificate requests over ACME: one order per request,
// driven by the order and challenge machines, whose state the host keeps
// in a Store. It carries out every action of both machines, schedules the
// challenges, cleans a challenge up before it is deleted, presents again
// after a restart what the states say is presented, and answers the
// request through the issuer contract of package certificate
// (certificate.Issuer, certificate.Forgetter and certificate.Sweeper:
// Answer, Forget, Sweep). An issued request's CA, which the
// certificate's secret holds as ca.crt, is the last certificate of the
// chain the server sent when that is a CA certificate, and empty when the
// server sent the leaf alone (see Step): ca.crt never holds a leaf.
//
// No state outlives its request for long, whatever the host forgets:
// Forget removes a deleted request's state at once; a state not stepped
// for IssuerConfig.StaleAfter past its last requeue time, one whose order
// expired, and one answered more than KeepAnswered ago are removed (what
// they present cleaned up) by any later Step, Forget or Sweep, and never
// hold a scheduler slot meanwhile.
//
// A server that does not answer costs one request's deadline
// (Config.RequestTimeout), not one per request waiting on it: after a
// step meets a network error (ErrNetwork), every step until the time
// that step set for its own retry answers at once that the server is
// unreachable and when it is asked again (ReasonServerUnreachable), so
// that a host stepping many requests of one issuer in turn is not held
// for each.
//
// The loop stays the host's: Answer (or Step) does what is due and says
// when to call it again. Safe for concurrent use by several requests at
// once; two calls for the same request wait for each other.
//
// The issuer's time is the host's. Answer and Sweep work on the now they
// are given: what they record on the request, when a state was stepped
// and when it is due to go (KeepAnswered, StaleAfter), the times they
// return and the Trace's are timed from it, moved on by the time the
// call's ACME requests take as the Client's clock measures it. Forget,
// which is given no time, takes the Client's clock shifted as the last
// Answer or Sweep found it. Step is given no time either and times its
// work by the Client's clock; a host uses Answer or Step, not both. What
// the ACME protocol times — Retry-After, when a status was read from the
// server — is the Client's clock's, so a host gives the Client the clock
// it answers by (ClientConfig.Clock).
type Issuer struct {
	cfg       IssuerConfig
	selectors []order.SolverConfig

	// idx is the store's index in memory; loadMu and loaded guard its
	// first reading.
	idx    *index
	loadMu sync.Mutex
	loaded atomic.Bool

	accountMu  sync.Mutex
	accountURL string

	// shown holds the challenges presented by this process (name and
	// token): one the states say is presented but that is not here was
	// presented before a restart and is presented again.
	shownMu sync.Mutex
	shown   map[string]bool

	// offset is how far the now the last Answer, Step or Sweep was given
	// is from the Client's clock, in nanoseconds (see Issuer.now).
	offset atomic.Int64

	// Until downUntil, the server is taken as unreachable: downErr is
	// the network error that said so.
	downMu    sync.Mutex
	downUntil time.Time
	downErr   error

	// ari is the renewal information of each certificate, by its ARI
	// identifier (RenewalWindow); ariPruneAt its size at which it is
	// pruned next.
	ariMu      sync.Mutex
	ari        map[string]*ariEntry
	ariPruneAt int

	// pace keeps the rate limits; nil when pacing is off.
	pace *pacer
}

// ReasonServerUnreachable is the Result.Reason of a step not taken
// because a step shortly before it found the ACME server unreachable.
const ReasonServerUnreachable = "ServerUnreachable"

// unreachable is the result of a step made while the server is taken as
// unreachable; ok is false when it is not.
func (i *Issuer) unreachable(now time.Time) (Result, bool) {
	i.downMu.Lock()
	defer i.downMu.Unlock()
	if i.downErr == nil || !now.Before(i.downUntil) {
		return Result{}, false
	}
	return Result{RequeueAt: i.downUntil, Reason: ReasonServerUnreachable, Err: i.downErr,
		Message: "the ACME server did not answer a request shortly before (" + i.downErr.Error() + "); it is asked again at " + i.downUntil.UTC().Format(time.RFC3339)}, true
}

// noteNetwork takes the server as unreachable until until (the retry
// time of the step) after a step whose ACME requests met a network error,
// and as reachable again after one that met none.
func (i *Issuer) noteNetwork(err error, now, until time.Time) {
	i.downMu.Lock()
	defer i.downMu.Unlock()
	if errors.Is(err, ErrNetwork) && until.After(now) {
		i.downUntil, i.downErr = until, err
		return
	}
	i.downUntil, i.downErr = time.Time{}, nil
}

// NewIssuer returns an Issuer. It makes no request. Its errors wrap
// ErrConfig and name every field that is wrong.
func NewIssuer(cfg IssuerConfig) (*Issuer, error) {
	var problems []string
	if cfg.Client == nil {
		problems = append(problems, "Client is required")
	}
	if cfg.Store == nil {
		problems = append(problems, "Store is required")
	}
	if cfg.Solvers.HTTP01 == nil && cfg.Solvers.DNS01 == nil && cfg.Solvers.TLSALPN01 == nil {
		problems = append(problems, "Solvers needs a presenter: HTTP01, DNS01, TLSALPN01 or several")
	}
	if cfg.KeepAnswered < 0 {
		problems = append(problems, fmt.Sprintf("KeepAnswered %v is negative", cfg.KeepAnswered))
	}
	if cfg.StaleAfter < 0 {
		problems = append(problems, fmt.Sprintf("StaleAfter %v is negative", cfg.StaleAfter))
	}
	problems = append(problems, cfg.Limits.problems()...)
	selectors := cfg.SolverConfigs
	if len(selectors) == 0 {
		// One default per presenter; among defaults the first that
		// applies wins (order.ChooseSolver), so HTTP-01 comes before
		// TLS-ALPN-01, and DNS-01, which alone solves wildcards, last.
		if cfg.Solvers.HTTP01 != nil {
			selectors = append(selectors, order.SolverConfig{Solver: challenge.Solver{HTTP01: &challenge.HTTP01Solver{}}})
		}
		if cfg.Solvers.TLSALPN01 != nil {
			selectors = append(selectors, order.SolverConfig{Solver: challenge.Solver{TLSALPN01: &challenge.TLSALPN01Solver{}}})
		}
		if cfg.Solvers.DNS01 != nil {
			selectors = append(selectors, order.SolverConfig{Solver: challenge.Solver{DNS01: &challenge.DNS01Solver{}}})
		}
	}
	for i, s := range selectors {
		var types []string
		if s.Solver.HTTP01 != nil {
			types = append(types, "HTTP-01")
			if cfg.Solvers.HTTP01 == nil {
				problems = append(problems, fmt.Sprintf("SolverConfigs[%d] is HTTP-01, but Solvers.HTTP01 is nil", i))
			}
		}
		if s.Solver.DNS01 != nil {
			types = append(types, "DNS-01")
			if cfg.Solvers.DNS01 == nil {
				problems = append(problems, fmt.Sprintf("SolverConfigs[%d] is DNS-01, but Solvers.DNS01 is nil", i))
			}
		}
		if s.Solver.TLSALPN01 != nil {
			types = append(types, "TLS-ALPN-01")
			if cfg.Solvers.TLSALPN01 == nil {
				problems = append(problems, fmt.Sprintf("SolverConfigs[%d] is TLS-ALPN-01, but Solvers.TLSALPN01 is nil", i))
			}
		}
		switch len(types) {
		case 0:
			problems = append(problems, fmt.Sprintf("SolverConfigs[%d] configures no solver", i))
		case 1:
		default:
			problems = append(problems, fmt.Sprintf("SolverConfigs[%d] configures %s; give each its own entry", i, strings.Join(types, " and ")))
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%w: IssuerConfig: %s", ErrConfig, strings.Join(problems, "; "))
	}
	return &Issuer{cfg: cfg, selectors: selectors, shown: map[string]bool{}, idx: newIndex(), ari: map[string]*ariEntry{}, pace: newPacer(defaultLimits(cfg.Limits, cfg.Client.directoryURL()))}, nil
}

var (
	_ certificate.Issuer         = (*Issuer)(nil)
	_ certificate.Forgetter      = (*Issuer)(nil)
	_ certificate.Sweeper        = (*Issuer)(nil)
	_ certificate.RenewalAdvisor = (*Issuer)(nil)
)

// String names the issuer by its client, without the account key.
func (i *Issuer) String() string {
	if i.cfg.Client == nil {
		return "acmeclient.Issuer{no client}"
	}
	return "acmeclient.Issuer{" + i.cfg.Client.String() + "}"
}

// Format prints String for every verb and flag: the issuer's fields hold
// the client, which fmt would otherwise print field by field, key
// included, under a verb that does not suit a pointer (%s, %q).
func (i *Issuer) Format(f fmt.State, _ rune) { io.WriteString(f, i.String()) }

// Result is what one Step did and when to call again.
type Result struct {
	// Answered: Step answered the request (certificate.SetIssued,
	// SetFailed or SetInvalid); the host writes its status back and stops
	// stepping it.
	Answered bool
	// Changed: Step changed the request's status (answered it, or
	// recorded its order, or an error reading the store, with
	// certificate.SetPending); the host writes it back.
	Changed bool
	// RequeueAt is when to call Step again; zero once Answered. It is
	// set after an error too.
	RequeueAt time.Time
	// Reason and Message say what the order is doing or waiting for, in
	// words a person can act on, with the last failure when there is
	// one.
	Reason, Message string
	// Err is the first error of an ACME request, presentation or clean-up
	// in this step. The order's or challenge's status records it too and
	// the machines retry it at RequeueAt, so it needs no handling; it is
	// here for logs, and for a host that gives up waiting to say why.
	Err error
}

// OrderName is the key of a request's state and the name of its order:
// the request's name and a hash of its namespace, name and CSR, so that a
// request made again with a new CSR gets a new order.
func OrderName(r *certificate.CertificateRequest) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", r.Namespace, r.Name)
	h.Write(r.Spec.Request)
	return r.Name + "-" + hex.EncodeToString(h.Sum(nil)[:4])
}

// ReasonRegisteringAccount is the Result.Reason of a step that could not
// register the ACME account.
const ReasonRegisteringAccount = "RegisteringAccount"

// maxRounds bounds the decide–carry out rounds of one Step; a request
// with more to do is stepped again at once.
const maxRounds = 16

// schedulerWait is how soon a request whose challenge waits for a
// scheduler slot (every slot taken, or another challenge for the same
// name and type in flight) is looked at again.
const schedulerWait = time.Second

// sweepPerStep bounds the states one Step removes for others, so that a
// step is not held up long by clean-ups; Sweep removes every one due.
const sweepPerStep = 8

// sweepRetry is how soon a removal whose clean-up or delete failed is
// tried again.
const sweepRetry = time.Minute

// Answer implements certificate.Issuer: it does one Step of r at now (see
// Issuer for how the issuer keeps time), records what the order is doing
// on r's Ready condition (Pending, with the order's reason and message)
// whenever that reason changes, and returns when to call again — zero
// once r is answered. When the server could not be reached — the step's
// requests met a network error, or a step shortly before did
// (ReasonServerUnreachable) — and r is not answered, it returns an error
// wrapping certificate.ErrCAUnreachable and the network error (ErrNetwork)
// with the time to call again: the order machine retries as ever, and a
// host logs the error as a warning (package certificate/host does).
func (i *Issuer) Answer(ctx context.Context, r *certificate.CertificateRequest, now time.Time) (time.Time, error) {
	res, err := i.stepAt(ctx, r, now)
	if err == nil && !res.Answered && res.Reason != "" && r != nil {
		prefix := res.Reason + ": "
		c := r.Condition(certificate.RequestConditionReady)
		if c == nil || c.Reason != certificate.RequestReasonPending || !strings.HasPrefix(c.Message, prefix) ||
			res.Reason == ReasonPaced && c.Message != prefix+res.Message { // a paced request says when its order goes
			certificate.SetPending(r, prefix+res.Message, now)
		}
	}
	if err == nil && !res.Answered && !res.RequeueAt.IsZero() && errors.Is(res.Err, ErrNetwork) {
		err = fmt.Errorf("%w: %w", certificate.ErrCAUnreachable, res.Err)
	}
	return res.RequeueAt, err
}

// Step does what is due for r now: it creates the request's order (the
// first time), carries out the actions of the order machine and of the
// challenge machine for each of its challenges until they wait, starting
// the challenges the scheduler allows, and writes the state to the Store
// after each decision. When the order has its certificate, and it checks
// out against the CSR (order.CheckCertificate: a bad one is ordered again
// once), Step answers r with certificate.SetIssued: the chain as the
// server sent it, leaf first, and as the request's CA (status.ca, which
// becomes the secret's ca.crt) the chain's last certificate when the chain
// holds more than the leaf and that certificate is a CA (basic
// constraints, cA true) — none when the server returned the leaf alone,
// never the leaf itself, nor a last certificate that is no CA; when the order
// failed, with certificate.SetFailed and the server's Retry-After; a CSR
// that cannot be ordered, with certificate.SetInvalid. Then it cleans up
// the challenges. Each Step also removes, a few at a time, the states of
// other requests that are due to go (see Issuer).
//
// An error means the step could not run: the store failed (recorded on r
// with certificate.SetPending too, and Result.Changed), or ctx ended —
// then Step returns ctx.Err(), and nothing it was doing counts as a
// failed attempt of the order or a challenge. Result.RequeueAt says when
// to try again. A failed ACME request is not an error of Step: see
// Result.Err.
//
// Step is given no time: it works at the time of the Client's clock
// (ClientConfig.Clock), where Answer works at the now it is given.
func (i *Issuer) Step(ctx context.Context, r *certificate.CertificateRequest) (Result, error) {
	return i.stepAt(ctx, r, i.cfg.Client.now())
}

// stepAt is Step at the time given.
func (i *Issuer) stepAt(ctx context.Context, r *certificate.CertificateRequest, given time.Time) (Result, error) {
	if r == nil {
		return Result{}, errors.New("acmeclient: Step of a nil request")
	}
	t := i.timeFrom(given)
	now := given
	retry := Result{RequeueAt: now.Add(i.cfg.Order.RetryDelay(1))}
	if err := i.load(ctx, now); err != nil {
		if ctx.Err() != nil {
			return retry, ctx.Err()
		}
		return i.storeFailed(r, retry, now, err)
	}
	if certificate.Answered(r) {
		i.sweep(ctx, now, sweepPerStep)
		return Result{Answered: true, Reason: "Answered", Message: "the request is answered"}, nil
	}
	key := OrderName(r)
	release, err := i.idx.claim(ctx, key)
	if err != nil {
		return retry, err
	}
	defer release()
	// Claimed first: a step that comes late never sweeps its own state.
	i.sweep(ctx, now, sweepPerStep)
	if res, down := i.unreachable(now); down {
		i.stepped(key, now, res.RequeueAt)
		return res, nil
	}
	res, err := i.step(ctx, r, key, retry, t)
	if ctx.Err() == nil {
		i.noteNetwork(res.Err, t.now(), res.RequeueAt)
	}
	var se storeError
	switch {
	case ctx.Err() != nil:
		res, err = retry, ctx.Err()
	case errors.As(err, &se) && !res.Changed:
		res, err = i.storeFailed(r, res, t.now(), err)
	}
	i.stepped(key, t.now(), res.RequeueAt)
	return res, err
}

// storeFailed records on r that the issuer could not read its own store,
// and returns the error.
func (i *Issuer) storeFailed(r *certificate.CertificateRequest, retry Result, now time.Time, err error) (Result, error) {
	if !certificate.Answered(r) {
		certificate.SetPending(r, "the ACME issuer cannot use its state store; trying again at "+retry.RequeueAt.UTC().Format(time.RFC3339)+": "+err.Error(), now)
		retry.Changed = true
	}
	retry.Reason, retry.Message = ReasonStoreFailed, err.Error()
	return retry, err
}

// ReasonStoreFailed is the Result.Reason of a step that could not read or
// write the issuer's Store.
const ReasonStoreFailed = "StoreFailed"

// storeError is an error of the issuer's Store.
type storeError struct{ error }

func (e storeError) Unwrap() error { return e.error }

func (i *Issuer) step(ctx context.Context, r *certificate.CertificateRequest, key string, retry Result, t callTime) (Result, error) {
	now := t.now()
	ref := requestRefOf(r)
	st, err := i.cfg.Store.Get(ctx, ref, key)
	if err != nil {
		return i.storeFailed(r, retry, now, storeError{fmt.Errorf("acmeclient: reading the state of %s: %w", key, err)})
	}
	if st != nil {
		// Every Put says which request the state is for, UID included
		// (a state written before it was recorded gets it too).
		st.Request = ref
	}
	i.index(key, st, now)
	res := Result{}
	account, err := i.account(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return retry, ctx.Err()
		}
		if Retryable(err) {
			at, ok := RetryAfter(err)
			if !ok {
				at = now.Add(i.cfg.Order.RetryDelay(1))
			}
			return Result{RequeueAt: at, Reason: ReasonRegisteringAccount, Message: "registering the ACME account: " + err.Error(), Err: err}, nil
		}
		at, _ := RetryAfter(err)
		certificate.SetFailed(r, "the ACME account: "+err.Error(), now, at)
		return Result{Answered: true, Changed: true, Reason: ReasonRegisteringAccount, Message: err.Error(), Err: err}, nil
	}
	created := false
	if st == nil {
		spec, problem := i.orderSpec(r, account, now)
		if problem != "" {
			certificate.SetInvalid(r, problem, now)
			return Result{Answered: true, Changed: true, Reason: order.ReasonInvalidSpec, Message: problem}, nil
		}
		if !i.pace.exempt(spec.Replaces) {
			// A request whose order would pass a rate limit gets a slot
			// and no state: nothing is sent, nothing kept.
			dns, ips, _ := order.Identifiers(&spec)
			if h := i.pace.admit(key, ref, demand(dns, ips), now); !h.ok {
				return Result{RequeueAt: h.at, Reason: ReasonPaced, Message: h.why}, nil
			}
		}
		// The state's first write says that a newOrder may be sent
		// (OrderRequestedAt), so that the CreateOrder of this step
		// needs no write of its own before it sends one.
		requested := now
		st = &State{Request: ref, OrderRequestedAt: &requested,
			Order: order.Order{Name: key, Namespace: r.Namespace, CreationTimestamp: now, Labels: r.Labels, Spec: spec}}
		created = true
		if err := i.put(ctx, key, st, now); err != nil {
			return retry, err
		}
		certificate.SetPending(r, "waiting for the ACME order "+key, now)
		res.Changed = true
	}
	if st.AnsweredAt == nil {
		i.presentAgain(ctx, st, t)
	}
	for round := 0; ; round++ {
		if err := ctx.Err(); err != nil {
			return retry, err
		}
		now = t.now()
		if answered := i.answer(ctx, r, st, now); answered != nil {
			answered.Changed = true
			if err := i.put(ctx, key, st, now); err != nil {
				return retry, err
			}
			return *answered, nil
		}
		if round == maxRounds {
			res.RequeueAt = now
			return res, nil
		}
		acted, next, why, err := i.round(ctx, key, st, now, created && round == 0)
		if err != nil {
			return retry, err
		}
		if why.reason == ReasonPaced && created && st.Order.Status.URL == "" {
			// Refused for a rate limit as its first order: the request
			// waits for its slot with no state, as if never admitted.
			if err := i.remove(ctx, key, "its order waits for a rate limit: "+why.message, now); err != nil {
				return retry, err
			}
			res.Changed = true
		}
		res.Err = firstErr(res.Err, why.err)
		res.Reason, res.Message = why.reason, why.message
		if !acted {
			res.RequeueAt = next
			if next.IsZero() {
				res.RequeueAt = now.Add(schedulerWait)
			}
			return res, nil
		}
	}
}

// put writes a state and keeps the index in step.
func (i *Issuer) put(ctx context.Context, key string, st *State, now time.Time) error {
	if st.SteppedAt == nil || now.Sub(*st.SteppedAt) >= steppedEvery {
		stepped := now
		st.SteppedAt = &stepped
	}
	if err := i.cfg.Store.Put(ctx, key, st); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return storeError{fmt.Errorf("acmeclient: writing the state of %s: %w", key, err)}
	}
	i.index(key, st, now)
	return nil
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// why is what a round says about the order: the order machine's reason
// and message, the last failure, and the first error of a call.
type why struct {
	reason, message string
	err             error
}

// round decides once for the order and each of its challenges and carries
// out the actions. acted reports whether any action was carried out; next
// is the earliest time a machine asked to be looked at again.
// fresh is set when the state was created in this step, with its
// OrderRequestedAt, and nothing was sent since.
func (i *Issuer) round(ctx context.Context, key string, st *State, now time.Time, fresh bool) (acted bool, next time.Time, w why, err error) {
	owned := make([]*challenge.Challenge, len(st.Challenges))
	for j := range st.Challenges {
		owned[j] = &st.Challenges[j]
	}
	ores := order.Decide(&st.Order, owned, now, i.cfg.Order)
	w.reason, w.message = ores.Reason, ores.Message
	if len(ores.Actions) > 0 {
		acted = true
		w.err = i.carryOutOrder(ctx, key, st, ores, now, fresh)
		if err := i.put(ctx, key, st, now); err != nil {
			return false, time.Time{}, w, err
		}
		var pe *pacedError
		if errors.As(w.err, &pe) {
			return false, pe.at, why{reason: ReasonPaced, message: pe.why}, ctx.Err()
		}
		return acted, ores.RequeueAt, w, ctx.Err()
	}
	next = ores.RequeueAt
	started, waiting, err := i.schedule(ctx, key, st, now)
	if err != nil {
		return false, time.Time{}, w, err
	}
	if waiting != "" {
		w.message += "; " + waiting
		next = earliest(next, now.Add(schedulerWait))
	}
	acted = started
	wrote := started
	for j := range st.Challenges {
		c := &st.Challenges[j]
		cres := challenge.Decide(c, now, i.cfg.Challenge)
		if len(cres.Actions) == 0 {
			next = earliest(next, cres.RequeueAt)
			if c.Status.SelfCheckAt != nil && !c.Status.SelfCheckPassed && c.Status.Processing {
				w.message += "; " + c.Spec.DNSName + ": " + c.Status.Reason
			}
			if c.Status.LastError != "" {
				w.message += "; " + c.Spec.DNSName + ": " + c.Status.LastError
			}
			continue
		}
		acted, wrote = true, true
		w.err = firstErr(w.err, i.carryOutChallenge(ctx, c, cres, now))
	}
	if wrote {
		if err := i.put(ctx, key, st, now); err != nil {
			return false, time.Time{}, w, err
		}
	}
	if st.Order.Status.LastError != "" {
		w.message += "; the last call failed: " + st.Order.Status.LastError
	}
	return acted, next, w, ctx.Err()
}

func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}

// schedule starts the request's challenges the scheduler allows, against
// the challenges of every other state the issuer keeps (in memory: no
// store read), leaving out those of states that are answered, stale or
// expired; it writes the state when it started one. waiting says why a
// challenge of the request that could start did not, "" when none waits.
func (i *Issuer) schedule(ctx context.Context, key string, st *State, now time.Time) (started bool, waiting string, err error) {
	var mine []*challenge.Challenge
	for j := range st.Challenges {
		c := &st.Challenges[j]
		if !c.Status.Processing && !c.Status.State.Final() && (c.Status.NextAttemptAt == nil || !now.Before(*c.Status.NextAttemptAt)) {
			mine = append(mine, c)
		}
	}
	if len(mine) == 0 {
		return false, "", nil
	}
	x := i.idx
	x.mu.Lock()
	all := make([]*challenge.Challenge, 0, len(st.Challenges)+len(x.entries))
	mineAdded := false
	for _, e := range x.byKeyLocked() {
		if e.key == key {
			for j := range st.Challenges {
				all = append(all, &st.Challenges[j])
			}
			mineAdded = true
			continue
		}
		if i.gone(e, now) {
			continue
		}
		for j := range e.challenges {
			all = append(all, &e.challenges[j])
		}
	}
	if !mineAdded {
		for j := range st.Challenges {
			all = append(all, &st.Challenges[j])
		}
	}
	for _, c := range challenge.Schedule(all, now, i.cfg.Scheduler) {
		if slices.Contains(mine, c) {
			c.Status.Processing = true
			started = true
		}
	}
	for _, c := range mine {
		if c.Status.Processing {
			continue
		}
		waiting = fmt.Sprintf("the %s challenge for %s waits for a scheduler slot (%d in flight at most)", c.Spec.Type, c.Spec.DNSName, maxInFlight(i.cfg.Scheduler))
	blocker:
		for _, e := range x.entries {
			if e.key == key || i.gone(e, now) {
				continue
			}
			for _, other := range e.challenges {
				if other.Status.Processing && other.Spec.Type == c.Spec.Type && strings.EqualFold(other.Spec.DNSName, c.Spec.DNSName) {
					waiting = fmt.Sprintf("the %s challenge for %s waits for another request's (%s) to finish: never two at once for one name", c.Spec.Type, c.Spec.DNSName, e.request.id())
					break blocker
				}
			}
		}
		break
	}
	if started {
		// Taken at once, before the write: a concurrent step of another
		// request sees the slot as taken.
		x.setLocked(key, st, now, i.sweepAt)
	}
	x.mu.Unlock()
	if started {
		if err := i.put(ctx, key, st, now); err != nil {
			return false, "", err
		}
	}
	return started, waiting, nil
}

func maxInFlight(c challenge.SchedulerConfig) int {
	if c.MaxInFlight > 0 {
		return c.MaxInFlight
	}
	return challenge.DefaultMaxInFlight
}

func (i *Issuer) keepAnswered() time.Duration {
	if i.cfg.KeepAnswered > 0 {
		return i.cfg.KeepAnswered
	}
	return 10 * time.Minute
}

func (i *Issuer) staleAfter() time.Duration {
	if i.cfg.StaleAfter > 0 {
		return i.cfg.StaleAfter
	}
	return 15 * time.Minute
}

// sweepAt is when a state may be removed: KeepAnswered after its answer;
// else StaleAfter past the later of its last step and the time that step
// asked to be called again, or its order's expiry when no step came
// since; never before a failed removal may be tried again.
func (i *Issuer) sweepAt(e *entry) time.Time {
	var at time.Time
	if e.answeredAt != nil {
		at = e.answeredAt.Add(i.keepAnswered())
	} else {
		at = maxTime(e.lastStep, e.nextStep).Add(i.staleAfter())
		if exp := e.expires; exp != nil && e.lastStep.Before(*exp) && exp.Before(at) {
			at = *exp
		}
	}
	return maxTime(at, e.retryAt)
}

// gone reports a state whose challenges the scheduler leaves out: one
// answered, one due to be removed, and one whose order expired.
func (i *Issuer) gone(e *entry, now time.Time) bool {
	if e.answeredAt != nil || (e.expires != nil && !now.Before(*e.expires)) {
		return true
	}
	return !now.Before(maxTime(e.lastStep, e.nextStep).Add(i.staleAfter()))
}

// index records a state (nil: none) in the index at now.
func (i *Issuer) index(key string, st *State, now time.Time) {
	i.idx.mu.Lock()
	defer i.idx.mu.Unlock()
	i.idx.setLocked(key, st, now, i.sweepAt)
}

// stepped records the end of a step of key, at now, and when it asked to
// be called again.
func (i *Issuer) stepped(key string, now, next time.Time) {
	x := i.idx
	x.mu.Lock()
	defer x.mu.Unlock()
	if e := x.entries[key]; e != nil {
		e.lastStep, e.nextStep = now, next
		x.fixLocked(e, i.sweepAt)
	}
}

// load reads the store into the index, once; the states it finds count
// as seen at now.
func (i *Issuer) load(ctx context.Context, now time.Time) error {
	if i.loaded.Load() {
		return nil
	}
	i.loadMu.Lock()
	defer i.loadMu.Unlock()
	if i.loaded.Load() {
		return nil
	}
	states, err := i.cfg.Store.List(ctx)
	if err != nil {
		return fmt.Errorf("acmeclient: listing the states: %w", err)
	}
	i.idx.mu.Lock()
	for k, st := range states {
		if st != nil {
			i.idx.setLocked(k, st, now, i.sweepAt)
		}
	}
	i.idx.mu.Unlock()
	i.pace.rebuild(states)
	i.loaded.Store(true)
	return nil
}

// Sweep implements certificate.Sweeper: it removes the states that are
// due to go at now — answered more than KeepAnswered ago, not stepped for
// StaleAfter past their requeue time, or with their order expired and no
// step since — cleaning up what their challenges present, and returns
// when the next one is due (zero when the issuer keeps none). Answer,
// Step and Forget sweep too, a few states at a time; a host that may stop
// answering (every request answered) calls Sweep at the time it returns,
// so that nothing is kept longer than it must be. An error is the first
// removal that failed; it is tried again a minute later.
func (i *Issuer) Sweep(ctx context.Context, now time.Time) (time.Time, error) {
	i.timeFrom(now)
	if err := i.load(ctx, now); err != nil {
		return now.Add(sweepRetry), err
	}
	return i.sweep(ctx, now, -1)
}

// sweep removes up to limit states that are due (no limit when
// negative), and returns when the next is due and the first error.
func (i *Issuer) sweep(ctx context.Context, now time.Time, limit int) (time.Time, error) {
	var first error
	for n := 0; limit < 0 || n < limit; n++ {
		x := i.idx
		x.mu.Lock()
		if len(x.due) == 0 {
			x.mu.Unlock()
			return time.Time{}, first
		}
		e := x.due[0]
		if at := e.sweepAt; now.Before(at) {
			x.mu.Unlock()
			return at, first
		}
		release, ok := x.tryClaimLocked(e.key)
		if !ok {
			// Being stepped, or forgotten: never waited for here; a
			// step moves its deadline on.
			e.retryAt = now.Add(schedulerWait)
			x.fixLocked(e, i.sweepAt)
			x.mu.Unlock()
			continue
		}
		key, why, stale, ref, seen := e.key, i.whyGone(e, now), e.answeredAt == nil, e.request, e.lastStep
		x.mu.Unlock()
		if stale {
			// A replica sharing the store may be at work on the order:
			// read it again before it goes.
			if kept, err := i.steppedElsewhere(ctx, ref, key, seen, now); kept || err != nil {
				first = firstErr(first, err)
				release()
				continue
			}
		}
		if err := i.remove(ctx, key, why, now); err != nil {
			first = firstErr(first, err)
			x.mu.Lock()
			if e := x.entries[key]; e != nil {
				e.retryAt = now.Add(sweepRetry)
				x.fixLocked(e, i.sweepAt)
			}
			x.mu.Unlock()
		}
		release()
	}
	x := i.idx
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.due) == 0 {
		return time.Time{}, first
	}
	return x.due[0].sweepAt, first
}

// steppedEvery is how often a write of a state moves its SteppedAt on:
// often enough for another replica's stale sweep (StaleAfter, 15 min by
// default, past the last write it saw) to see it, seldom enough that a
// store which writes only what changed writes nothing more for it.
const steppedEvery = 5 * time.Minute

// foreignGrace is how long after another replica last wrote a state it
// is kept: past the longest wait an order makes on the server's
// Retry-After (order.Config.MaxRetryAfter, 1 h by default), so that no
// replica removes an order that another is waiting on.
const foreignGrace = time.Hour + 15*time.Minute

// steppedElsewhere reads the state of key again before a stale sweep
// removes it, and reports whether it was kept because it changed since
// this issuer last saw it (at seen): written by another replica that
// shares the store, or answered. Such a state is indexed again, due for
// a sweep foreignGrace after that write. A state gone from the store is
// not kept (its removal cleans up what this issuer presented).
func (i *Issuer) steppedElsewhere(ctx context.Context, ref RequestRef, key string, seen, now time.Time) (bool, error) {
	st, err := i.cfg.Store.Get(ctx, ref, key)
	if err != nil {
		x := i.idx
		x.mu.Lock()
		if e := x.entries[key]; e != nil {
			e.retryAt = now.Add(sweepRetry)
			x.fixLocked(e, i.sweepAt)
		}
		x.mu.Unlock()
		return true, fmt.Errorf("acmeclient: reading the state of %s before removing it: %w", key, err)
	}
	if st == nil || st.AnsweredAt == nil && (st.SteppedAt == nil || !st.SteppedAt.After(seen)) {
		return false, nil
	}
	x := i.idx
	x.mu.Lock()
	defer x.mu.Unlock()
	x.setLocked(key, st, now, i.sweepAt)
	if e := x.entries[key]; e != nil && st.AnsweredAt == nil {
		e.lastStep, e.nextStep = *st.SteppedAt, st.SteppedAt.Add(foreignGrace)
		x.fixLocked(e, i.sweepAt)
	}
	return true, nil
}

// whyGone says why a state is removed, for the trace.
func (i *Issuer) whyGone(e *entry, now time.Time) string {
	switch {
	case e.answeredAt != nil:
		return "its request was answered at " + stampOf(*e.answeredAt) + ", more than " + i.keepAnswered().String() + " ago"
	case e.expires != nil && !now.Before(*e.expires) && e.lastStep.Before(*e.expires):
		return "its order expired at " + stampOf(*e.expires) + " and its request " + e.request.id() + " was not stepped since"
	}
	return "its request " + e.request.id() + " was not stepped for " + i.staleAfter().String() + " past its requeue time: taken for deleted"
}

func stampOf(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// remove cleans up what a state's challenges present, deletes the state
// and drops it from the index, at now. The caller holds the claim on key.
func (i *Issuer) remove(ctx context.Context, key, why string, now time.Time) error {
	i.idx.mu.Lock()
	e := i.idx.entries[key]
	var cs []challenge.Challenge
	var ref RequestRef
	if e != nil {
		cs = append(cs, e.challenges...)
		ref = e.request
	}
	i.idx.mu.Unlock()
	if e == nil {
		return nil
	}
	ev := Event{Time: now, Resource: "order/" + key, Reason: "Removed", Message: why}
	for _, c := range cs {
		if c.Status.Presented {
			ev.Actions = append(ev.Actions, "CleanUp{"+c.Name+"}")
			if err := i.cfg.Solvers.CleanUp(ctx, cleanUpOf(c.Spec)); err != nil {
				ev.Err = fmt.Errorf("acmeclient: cleaning up the challenge %s of a removed state: %w", c.Name, err)
				i.trace(ev)
				return ev.Err
			}
		}
		i.forgetShown(c)
	}
	i.pace.removed(key, now)
	ev.Actions = append(ev.Actions, "Delete{"+key+"}")
	if err := i.cfg.Store.Delete(ctx, ref, key); err != nil {
		ev.Err = fmt.Errorf("acmeclient: deleting the state of %s: %w", key, err)
		i.trace(ev)
		return ev.Err
	}
	i.trace(ev)
	i.idx.mu.Lock()
	if e := i.idx.entries[key]; e != nil {
		i.idx.dropLocked(e)
	}
	i.idx.mu.Unlock()
	return nil
}

func (i *Issuer) carryOutOrder(ctx context.Context, key string, st *State, res order.Result, now time.Time, fresh bool) error {
	ev := Event{Time: now, Resource: "order/" + st.Order.Name, Reason: res.Reason, Message: res.Message}
	c := i.cfg.Client
	var err error
	for _, a := range res.Actions {
		ev.Actions = append(ev.Actions, a.String())
		o := &st.Order
		switch a := a.(type) {
		case order.CreateOrder:
			err = i.createOrder(ctx, key, st, a, now, fresh)
		case order.GetAuthorization:
			o.Status, err = c.GetAuthorization(ctx, o.Status, a)
		case order.Sync:
			o.Status, err = c.SyncOrder(ctx, o.Status, a)
		case order.Finalize:
			i.pace.finalizing(key)
			o.Status, err = c.Finalize(ctx, o.Status, a)
			if errors.Is(err, ErrRateLimited) {
				dns, ips, _ := order.Identifiers(&o.Spec)
				i.pace.learn(err, demand(dns, ips), now)
			}
		case order.FetchCertificate:
			o.Status, err = c.FetchCertificate(ctx, o.Status, a)
		case order.CreateChallenge:
			if findChallenge(st, a.Challenge.Name) < 0 { // AlreadyExists is success
				st.Challenges = append(st.Challenges, a.Challenge)
			}
		case order.DeleteChallenge:
			err = i.deleteChallenge(ctx, st, a.Name)
		case order.UpdateStatus:
			o.Status = a.Status
		case order.DeleteOrder:
			// The issuer answers a failed order's request at once and
			// removes the state later (KeepAnswered).
		default:
			err = fmt.Errorf("acmeclient: unknown order action %T", a)
		}
		if err != nil {
			break
		}
	}
	ev.Err = err
	i.trace(ev)
	return err
}

// createOrder carries out order.CreateOrder so that a newOrder whose
// answer was lost — the connection dropped, or the process died, after
// the server created the order — costs no second order where the server
// lists the account's orders: the state records that a newOrder was sent
// (OrderRequestedAt) before it is, and a later CreateOrder of a state
// that records one looks for the order among the account's orders
// (Client.FindOrder) before it orders again.
func (i *Issuer) createOrder(ctx context.Context, key string, st *State, a order.CreateOrder, now time.Time, fresh bool) error {
	c := i.cfg.Client
	if st.OrderRequestedAt != nil && !fresh {
		found, ok, err := c.FindOrder(ctx, st.Order.Status, a, i.orderTaken(ctx, key))
		if ctx.Err() != nil {
			return ctx.Err()
		}
		ev := Event{Time: now, Resource: "order/" + st.Order.Name, Reason: ReasonOrderFound, Err: err}
		switch {
		case ok:
			ev.Message = "the order a newOrder sent at " + stampOf(*st.OrderRequestedAt) + " created, whose answer was lost, is carried on: " + found.URL
			st.Order.Status, st.OrderRequestedAt = found, nil
			i.trace(ev)
			return nil
		case err != nil:
			ev.Message = "could not look for the order a newOrder sent at " + stampOf(*st.OrderRequestedAt) + " may have created (its answer was lost); ordering again"
			i.trace(ev)
		}
	}
	exempt := i.pace.exempt(a.Replaces)
	ids := demand(a.DNSNames, a.IPAddresses)
	if !exempt {
		unsent, sent := i.pace.admitted(key)
		if sent {
			// Ordered again: the last order's certificate counts if it
			// was finalized, and is given back if not.
			i.pace.removed(key, now)
		}
		if !unsent {
			if h := i.pace.admit(key, st.Request, ids, now); !h.ok {
				st.OrderRequestedAt = nil
				return &pacedError{at: h.at, why: h.why}
			}
		}
	}
	if !fresh {
		sent := now
		st.OrderRequestedAt = &sent
		if err := i.put(ctx, key, st, now); err != nil {
			return err
		}
	}
	before := st.Order.Status
	status, err := c.CreateOrder(ctx, st.Order.Status, a)
	st.Order.Status = status
	if err == nil || !mayHaveCreated(err) {
		st.OrderRequestedAt = nil
	}
	if i.pace != nil {
		var e *Error
		switch {
		case !exempt && errors.Is(err, ErrRateLimited) && errors.As(err, &e) && e.Status == http.StatusTooManyRequests:
			// Refused for a rate limit: nothing was created, so it
			// costs nothing, and the order waits for its slot rather
			// than failing.
			h := i.pace.refused(key, st.Request, err, now)
			st.Order.Status = before
			return &pacedError{at: h.at, why: h.why}
		case errors.Is(err, ErrRateLimited):
			i.pace.learn(err, ids, now)
		case !exempt:
			i.pace.sent(key)
		case err == nil && status.ReplacesRefused != "":
			i.pace.force(key, ids, now) // sent as a new order after all
		}
	}
	return err
}

// ReasonOrderFound is the Event.Reason of a CreateOrder that found the
// order an earlier newOrder created, whose answer was lost (or says why
// it could not look).
const ReasonOrderFound = "OrderFound"

// mayHaveCreated reports whether a newOrder that failed with err may yet
// have created the order: unless the server answered with a refusal
// (4xx), it may have.
func mayHaveCreated(err error) bool {
	var e *Error
	return !errors.As(err, &e) || e.Status < 400 || e.Status >= 500
}

// orderTaken is FindOrder's skip for the state key: the URL of an order
// that another of the store's states records.
func (i *Issuer) orderTaken(ctx context.Context, key string) func(string) bool {
	var taken map[string]bool
	return func(url string) bool {
		if taken == nil {
			taken = map[string]bool{}
			all, err := i.cfg.Store.List(ctx)
			if err != nil {
				return false
			}
			for k, st := range all {
				if k != key && st != nil && st.Order.Status.URL != "" {
					taken[st.Order.Status.URL] = true
				}
			}
		}
		return taken[url]
	}
}

func findChallenge(st *State, name string) int {
	for j := range st.Challenges {
		if st.Challenges[j].Name == name {
			return j
		}
	}
	return -1
}

// deleteChallenge cleans a presented challenge up, then removes it: the
// order machine may delete a challenge the challenge machine has not
// cleaned up, and nothing stays presented for a challenge that is gone.
func (i *Issuer) deleteChallenge(ctx context.Context, st *State, name string) error {
	j := findChallenge(st, name)
	if j < 0 {
		return nil // NotFound is success
	}
	c := st.Challenges[j]
	if c.Status.Presented {
		if err := i.cfg.Solvers.CleanUp(ctx, cleanUpOf(c.Spec)); err != nil {
			return fmt.Errorf("acmeclient: cleaning up the challenge %s before deleting it: %w", name, err)
		}
	}
	i.forgetShown(c)
	st.Challenges = append(st.Challenges[:j], st.Challenges[j+1:]...)
	return nil
}

func cleanUpOf(sp challenge.Spec) challenge.CleanUp {
	return challenge.CleanUp{Type: sp.Type, DNSName: sp.DNSName, Token: sp.Token, Key: sp.Key, Solver: sp.Solver, Wildcard: sp.Wildcard}
}

func (i *Issuer) carryOutChallenge(ctx context.Context, c *challenge.Challenge, res challenge.Result, now time.Time) error {
	ev := Event{Time: now, Resource: "challenge/" + c.Name, Reason: res.Reason, Message: res.Message}
	var err error
	for _, a := range res.Actions {
		ev.Actions = append(ev.Actions, a.String())
		switch a := a.(type) {
		case challenge.Sync:
			c.Status, err = i.cfg.Client.SyncChallenge(ctx, c.Status, a)
		case challenge.Accept:
			c.Status, err = i.cfg.Client.Accept(ctx, c.Status, a)
		case challenge.Present:
			c.Status, err = i.cfg.Solvers.Present(ctx, c.Status, a, now)
			if err == nil {
				i.markShown(*c)
			}
		case challenge.SelfCheck:
			// A failed self-check is recorded in the status and
			// repeated later; it is not an error of the step.
			c.Status, _ = i.cfg.Solvers.SelfCheck(ctx, c.Status, a, now)
		case challenge.CleanUp:
			if err = i.cfg.Solvers.CleanUp(ctx, a); err == nil {
				i.forgetShown(*c)
			}
		case challenge.UpdateStatus:
			c.Status = a.Status
		default:
			err = fmt.Errorf("acmeclient: unknown challenge action %T", a)
		}
		if err != nil {
			break
		}
	}
	ev.Err = err
	i.trace(ev)
	return err
}

func shownKey(c challenge.Challenge) string { return c.Name + "\x00" + c.Spec.Token }

func (i *Issuer) markShown(c challenge.Challenge) {
	i.shownMu.Lock()
	defer i.shownMu.Unlock()
	i.shown[shownKey(c)] = true
}

func (i *Issuer) forgetShown(c challenge.Challenge) {
	i.shownMu.Lock()
	defer i.shownMu.Unlock()
	delete(i.shown, shownKey(c))
}

// presentAgain presents once more, in this process, each challenge the
// state says is presented but this process did not present: a restart
// loses what an in-memory presenter (HTTP01Handler) served, and the CA
// would find nothing. Presenting is idempotent; each is traced (reason
// PresentedAgain); a failure is left to the challenge machine, whose
// self-check or validation then fails.
func (i *Issuer) presentAgain(ctx context.Context, st *State, t callTime) {
	for _, c := range st.Challenges {
		if !c.Status.Presented {
			continue
		}
		i.shownMu.Lock()
		done := i.shown[shownKey(c)]
		i.shownMu.Unlock()
		if done {
			continue
		}
		sp := c.Spec
		a := challenge.Present{Type: sp.Type, DNSName: sp.DNSName, Token: sp.Token, Key: sp.Key, Solver: sp.Solver, Wildcard: sp.Wildcard}
		now := t.now()
		_, err := i.cfg.Solvers.Present(ctx, c.Status, a, now)
		if err == nil {
			i.markShown(c)
		}
		i.trace(Event{Time: now, Resource: "challenge/" + c.Name, Reason: ReasonPresentedAgain, Actions: []string{a.String()}, Err: err,
			Message: "the state says " + sp.DNSName + " is presented, but this process has not presented it (it started since): presenting it again"})
	}
}

// ReasonPresentedAgain is the Event.Reason of a challenge presented again
// because the process that presented it is gone.
const ReasonPresentedAgain = "PresentedAgain"

// answer answers r when the order has its certificate or has failed,
// cleaning up its challenges; nil when it has neither.
func (i *Issuer) answer(ctx context.Context, r *certificate.CertificateRequest, st *State, now time.Time) *Result {
	o := &st.Order
	var res Result
	switch {
	case o.Status.State == order.StateValid && len(o.Status.Certificate) > 0 && order.CheckCertificate(&o.Spec, o.Status.Certificate) == "":
		i.pace.issued(o.Name, now)
		certificate.SetIssued(r, o.Status.Certificate, chainCA(o.Status.Certificate), now)
		res = Result{Answered: true, Reason: order.ReasonDone, Message: "the certificate is issued"}
	case o.Status.State.Failed():
		msg := "the ACME order " + o.Name + " is " + string(o.Status.State)
		if o.Status.Reason != "" {
			msg += ": " + o.Status.Reason
		}
		var retryAfter time.Time
		if ra := o.Status.RetryAfter; ra != nil && ra.After(now) {
			retryAfter = *ra
		}
		var failedIDs []string
		for _, c := range st.Challenges {
			if c.Status.State == challenge.StateInvalid {
				failedIDs = append(failedIDs, c.Spec.DNSName)
			}
		}
		i.pace.failed(o.Name, failedIDs, now)
		certificate.SetFailed(r, msg, now, retryAfter)
		res = Result{Answered: true, Reason: order.ReasonFailed, Message: msg}
		if o.Status.LastError != "" {
			res.Err = errors.New(o.Status.LastError)
		}
	default:
		return nil
	}
	for _, c := range st.Challenges {
		if c.Status.Presented {
			if err := i.cfg.Solvers.CleanUp(ctx, cleanUpOf(c.Spec)); err != nil {
				res.Err = firstErr(res.Err, err)
			}
		}
		i.forgetShown(c)
	}
	st.Challenges = nil
	if st.AnsweredAt == nil {
		t := now
		st.AnsweredAt = &t
	}
	return &res
}

// Forget implements certificate.Forgetter: the request namespace/name was
// deleted. It cleans up what the challenges of its states present and
// removes the states, whatever they were doing; a request it keeps
// nothing for, or forgot already, is no error. It waits for a Step of the
// request in flight. It sweeps other states due to go too, a few at a
// time, at the issuer's time (see Issuer).
func (i *Issuer) Forget(ctx context.Context, namespace, name string) error {
	now := i.now()
	if err := i.load(ctx, now); err != nil {
		return err
	}
	i.sweep(ctx, now, sweepPerStep)
	ref := RequestRef{Namespace: namespace, Name: name}
	i.pace.forget(ref, now)
	var errs []error
	for _, key := range i.idx.keysOf(ref) {
		release, err := i.idx.claim(ctx, key)
		if err != nil {
			return err
		}
		errs = append(errs, i.remove(ctx, key, "its request "+ref.id()+" was deleted", now))
		release()
	}
	return errors.Join(errs...)
}

// callTime is the time of one call: the now it was given, moved on by
// what the Client's clock has measured since the call began.
type callTime struct {
	given, start time.Time
	client       *Client
}

func (t callTime) now() time.Time { return t.given.Add(t.client.now().Sub(t.start)) }

// timeFrom begins a call given now, and records how far now is from the
// Client's clock, for the calls given no time (Forget).
func (i *Issuer) timeFrom(now time.Time) callTime {
	start := i.cfg.Client.now()
	i.offset.Store(int64(now.Sub(start)))
	return callTime{given: now, start: start, client: i.cfg.Client}
}

// now is the issuer's time for a call given none: the Client's clock,
// shifted by how far from it the last Answer, Step or Sweep was given.
func (i *Issuer) now() time.Time {
	return i.cfg.Client.now().Add(time.Duration(i.offset.Load()))
}

func (i *Issuer) trace(ev Event) {
	if i.cfg.Trace != nil {
		i.cfg.Trace(ev)
	}
}

// account is the client's account URL, registering the account the first
// time.
func (i *Issuer) account(ctx context.Context) (string, error) {
	i.accountMu.Lock()
	defer i.accountMu.Unlock()
	if i.accountURL != "" {
		return i.accountURL, nil
	}
	if u, err := i.cfg.Client.account(); err == nil {
		i.accountURL = u
		return u, nil
	}
	a, err := i.cfg.Client.EnsureAccount(ctx, i.cfg.Account)
	if err != nil {
		return "", err
	}
	i.accountURL = a.URL
	return a.URL, nil
}

// orderSpec is the order for a request: the CSR's identifiers (its common
// name as itself — order.Identifiers makes an IP address an IP
// identifier, never a DNS name), the issuer's solvers, profile and chain,
// the validity when asked for, and replaces from the request's
// certificate.AnnotationReplaces. problem says why the request cannot be
// ordered.
func (i *Issuer) orderSpec(r *certificate.CertificateRequest, account string, now time.Time) (order.Spec, string) {
	csr, err := keys.ParseCSR(r.Spec.Request)
	if err != nil {
		return order.Spec{}, "the request's CSR cannot be used: " + err.Error()
	}
	spec := order.Spec{CSR: csr.Raw, Issuer: challenge.Issuer{Name: r.Spec.IssuerRef.Name, Kind: r.Spec.IssuerRef.Kind, Group: r.Spec.IssuerRef.Group},
		Account: account, CommonName: csr.Subject.CommonName, DNSNames: append([]string(nil), csr.DNSNames...),
		Solvers: i.selectors, Profile: i.cfg.Profile, PreferredChain: i.cfg.PreferredChain}
	for _, ip := range csr.IPAddresses {
		spec.IPAddresses = append(spec.IPAddresses, ip.String())
	}
	if len(csr.EmailAddresses) > 0 || len(csr.URIs) > 0 {
		return order.Spec{}, "ACME certificates name DNS names and IP addresses only; the CSR also asks for email addresses or URIs"
	}
	if id, ok := r.Annotations[certificate.AnnotationReplaces]; ok {
		if !validCertID(id) {
			return order.Spec{}, fmt.Sprintf("annotation %s: %q is not an ARI certificate identifier (base64url of the authority key identifier, \".\", base64url of the serial)", certificate.AnnotationReplaces, id)
		}
		spec.Replaces = id
	}
	if i.cfg.RequestValidity {
		d := certificate.DefaultDuration
		if r.Spec.Duration != nil && r.Spec.Duration.Duration > 0 {
			d = r.Spec.Duration.Duration
		}
		nb := now.Truncate(time.Second)
		na := nb.Add(d)
		spec.NotBefore, spec.NotAfter = &nb, &na
	}
	if _, _, problem := order.Identifiers(&spec); problem != "" {
		return order.Spec{}, problem
	}
	return spec, ""
}

// validCertID checks the shape of an ARI certificate identifier (RFC 9773
// §4.1): two non-empty base64url parts joined by ".".
func validCertID(id string) bool {
	aki, serial, ok := strings.Cut(id, ".")
	if !ok || aki == "" || serial == "" {
		return false
	}
	for _, part := range []string{aki, serial} {
		for _, ch := range part {
			if !(ch >= 'A' && ch <= 'Z' || ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '_') {
				return false
			}
		}
	}
	return true
}

// chainCA is what the issuer gives as the request's CA: the last
// certificate of a PEM chain (the one the root signed), in PEM, when the
// chain holds more than the leaf and that certificate is a CA certificate
// (basic constraints valid, cA true); nil otherwise — a server that sends
// the leaf alone leaves ca.crt empty rather than putting the leaf in it.
func chainCA(chain []byte) []byte {
	var blocks []*pem.Block
	for rest := chain; ; {
		b, r := pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type == "CERTIFICATE" {
			blocks = append(blocks, b)
		}
		rest = r
	}
	if len(blocks) < 2 {
		return nil
	}
	top := blocks[len(blocks)-1]
	c, err := x509.ParseCertificate(top.Bytes)
	if err != nil || !c.BasicConstraintsValid || !c.IsCA {
		return nil
	}
	return pem.EncodeToMemory(top)
}
