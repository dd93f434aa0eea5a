package host

import (
	"cmp"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/renewal"
)

// Config configures a Reconciler (and a Loop on top of it). Store is
// required; every other field has a documented zero value.
type Config struct {
	// Store keeps the certificates, secrets and requests. A Store that is
	// not Authoritative (its reads may lag behind its writes, as a
	// Kubernetes informer cache does) is read through ReadYourWrites, so
	// that a pass always sees the Reconciler's own writes.
	Store Store
	// Clock gives every decision and every issuer its now. Nil means the
	// real clock. Tests and simulations pass a fake one.
	Clock clock.PassiveClock
	// Issuers answer the requests whose issuerRef names them. An empty
	// kind or group in a key means the defaults (certificate.IssuerRef.
	// WithDefaults). A request whose issuer is neither here nor given by
	// IssuerFor is left to whoever serves it; the certificate says so
	// when nobody answers. An issuer that keeps state per request
	// implements certificate.Forgetter and is told when its requests go;
	// one that also removes what it keeps on a schedule implements
	// certificate.Sweeper, and Reconciler.Sweep (which a Loop calls)
	// sweeps it.
	Issuers map[certificate.IssuerRef]certificate.Issuer
	// IssuerFor, when set, gives the issuer of a request whose issuerRef
	// (its defaults filled) is not a key of Issuers, or nil when the host
	// serves none by that reference: for a host whose issuers come and
	// go, such as a Kubernetes operator's Issuer resources. It is asked
	// whenever a request's issuer is needed, so it must be cheap and safe
	// for concurrent use. Its issuers are not swept by Reconciler.Sweep;
	// a host whose issuers sweep calls them itself.
	IssuerFor func(ref certificate.IssuerRef) certificate.Issuer
	// Certificate is passed to every decision. Its ParseCache, when nil,
	// is a new keys.ParseCache of the default bound, one per Reconciler;
	// the Reconciler reads private keys and leaves through it too, so
	// each is parsed once per content.
	Certificate certificate.Config
	// Rand is the randomness for keys, CSRs and keystores; nil means
	// crypto/rand.
	Rand io.Reader
	// ARI, when set, is asked for the CA's suggested renewal window of a
	// certificate's current leaf on every pass over a certificate that
	// has one, and renewal follows it (RFC 9773), instead of the
	// certificate's issuer. Cache its answers for as long as the CA's
	// Retry-After says. An error is reported in the pass's Event
	// (Warning) and the pass goes on without a window. When nil, the
	// issuer the certificate's issuerRef names is asked when it is a
	// certificate.RenewalAdvisor — the ACME issuer (acmeclient.Issuer) is
	// one, on by default where the CA's directory offers renewalInfo —
	// and the certificate is looked at again by the time it says to ask
	// again (for the ACME issuer, per certificate, at most once per the
	// CA's Retry-After, 6 h at Let's Encrypt, within 1 min–12 h). To turn
	// ARI off, set a func that returns nil, nil.
	ARI func(ctx context.Context, c *certificate.Certificate, leaf *x509.Certificate) (*renewal.ARIWindow, error)
	// Resync is how often a Loop queues every certificate and unanswered
	// request again, and removes what deleted certificates owned,
	// whatever else happens. Zero means 1 h for a Store that is not a
	// Watcher and never for one that is; negative means never. Only a
	// Loop reads it.
	Resync time.Duration
	// Observe, when set, sees every pass that did something: each
	// certificate decision with what came of its actions, each issuer
	// step, and each pass over a request that another replica holds
	// (Event.Held). It is called on the goroutine that made the pass.
	Observe func(Event)
	// Logger receives the same events as structured records (LogEvent):
	// failures at Error and Warn — a pass that failed, an issuance that
	// failed, an issuer that failed a request or could not reach its CA,
	// a spec nothing can be issued for — and every other decision and
	// issuer answer at Debug. Nil means slog.Default(), whose default
	// handler shows Info and above: failures are logged unless the host
	// opts out, with slog.New(slog.DiscardHandler).
	Logger *slog.Logger
	// Identity names this host among the replicas of one service that
	// share the Store, when the Store is a Leaser: it is the holder of
	// the leases the Reconciler takes, and what the others' Events say
	// holds a request ("held by web-2 until …"). Give each replica its
	// own — the pod or machine name — and never two at once the same:
	// two replicas of one identity would each take the other's lease for
	// its own. A replica restarted under the same identity takes its
	// leases back at once; under a new one, it waits for them to expire
	// as the others do. Empty means the host name, the process ID and a
	// random part, new for every Reconciler (Reconciler.Identity).
	Identity string
	// LeaseDuration is how long a request's lease lasts (see Reconciler.
	// Request): how long the other replicas wait for a replica that died
	// holding it. It must exceed the longest single call of any issuer
	// (an ACME issuer's may last a few of its client's request timeouts,
	// 30 s each by default), or another replica may take a request over
	// while its issuer is still at work. Zero means DefaultLeaseDuration
	// (2 minutes); only a Store that is a Leaser is leased.
	LeaseDuration time.Duration
	// IssuerCircuit sets the circuit kept for each issuer across the
	// certificates, which certificates with fallback issuers read to
	// skip an issuer that fails for the others (see CircuitConfig). The
	// zero value is the documented defaults.
	IssuerCircuit CircuitConfig
}

// Event is one pass over one object, for a log, a timeline or a test.
type Event struct {
	Time time.Time
	// Kind is KindCertificate for a certificate's decision, KindRequest
	// for an issuer's step on a request, and KindIssuer for an issuer's
	// sweep.
	Kind            Kind
	Namespace, Name string
	// Certificate is the certificate as the pass read it, before its
	// actions (certificate passes): what a host compares the status the
	// pass wrote with, for its own events and metrics.
	Certificate *certificate.Certificate
	// Result is the decision (certificate passes).
	Result *certificate.Result
	// Done are the actions carried out: all of Result.Actions unless Err
	// stopped the pass.
	Done []certificate.Action
	// Request is the request as the issuer left it (request passes).
	Request *certificate.CertificateRequest
	// Next is when to look at the object again: zero for only when a
	// write concerns it. A pass that wrote anything asks to be looked at
	// again at once (Time), as the decisions expect to see what their
	// actions made.
	Next time.Time
	// Writes are the writes the pass made, in order, as a Watcher would
	// report them: a host whose store does not report writes queues what
	// they concern (a request's owner, say) itself.
	Writes []Change
	// Err is why the pass stopped early: the error Certificate or
	// Request returned.
	Err error
	// Warning is what went wrong beside the pass without stopping it: an
	// ARI read, telling an issuer that a request is gone, releasing a
	// lease, an issuer that could not reach its CA
	// (certificate.ErrCAUnreachable) and will be called again at Next.
	Warning error
	// AwaitedSecret, after a request pass that left the request
	// unanswered, names the secret its issuer waits for
	// (certificate.SecretAwaiter); empty otherwise. A host with its own
	// queue looks at the request again as soon as that secret is written,
	// as a Loop does, besides at Next.
	AwaitedSecret SecretKey
	// Held is set on a request pass over a Leaser store that did not
	// hand the request to its issuer because another replica holds its
	// lease (Held.Holder, until Held.Until; Held.String says so): Next is
	// then just after the lease expires, when this replica takes the
	// request over unless the holder renewed it.
	Held *Lease
}

// SecretKey names a secret: its namespace and name. The zero value names
// none.
type SecretKey struct{ Namespace, Name string }

// IsZero reports whether k names no secret.
func (k SecretKey) IsZero() bool { return k.Name == "" }

// Reconciler is the per-object core of a host, in the shape of
// controller-runtime's reconciler contract: Certificate and Request each
// make one pass over one object — read what it needs from the Store,
// decide, carry out the actions — and return when to look again and an
// error. It keeps no queue, starts no goroutine and holds no state
// between calls beyond what makes them cheaper (the read-your-writes
// record of a lagging Store, parsed keys, and over a Leaser store which
// request leases it holds); whoever owns the queue owns the retries. It is safe for concurrent use, as long as no two calls
// work on the same object at once (a workqueue's guarantee; a Loop's, as
// it has one goroutine).
type Reconciler struct {
	cfg           Config
	clock         clock.PassiveClock
	rand          io.Reader
	store         Store
	issuers       map[certificate.IssuerRef]certificate.Issuer
	authoritative bool
	// holdOnConflict: a certificate whose pass met a conflict is not
	// decided on again until the store shows that pass's writes
	// (ReadYourWrites.hold). A Loop sets it: it wakes on every watch
	// event and retries on its own clock. A host with a workqueue leaves
	// it off, and its rate-limited retries read the store afresh.
	holdOnConflict bool
	// syncer is Config.Store (behind a ReadYourWrites) when it is a
	// Syncer; synced turns true the first time it says it synced.
	syncer Syncer
	synced atomic.Bool
	// Over a Leaser store: the Reconciler's identity, how long its leases
	// last, and the leases it holds.
	identity string
	leaseFor time.Duration
	leaseMu  sync.Mutex
	lease    leaseState
	// circuits is each issuer's health across the certificates.
	circuits *circuits
}

// NewReconciler returns a Reconciler over cfg.Store; it reads nothing
// yet.
func NewReconciler(cfg Config) (*Reconciler, error) {
	if cfg.Store == nil {
		return nil, errors.New("host: Config.Store is required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if err := cfg.Certificate.Validate(); err != nil {
		return nil, fmt.Errorf("host: Config.Certificate: %w", err)
	}
	if cfg.Certificate.ParseCache == nil {
		cfg.Certificate.ParseCache = keys.NewParseCache(0)
	}
	if cfg.LeaseDuration < 0 {
		return nil, fmt.Errorf("host: Config.LeaseDuration is %v: it must not be negative", cfg.LeaseDuration)
	}
	if err := cfg.IssuerCircuit.Validate(); err != nil {
		return nil, err
	}
	r := &Reconciler{cfg: cfg, clock: cfg.Clock, rand: cfg.Rand, store: cfg.Store, issuers: map[certificate.IssuerRef]certificate.Issuer{},
		circuits: newCircuits(cfg.IssuerCircuit)}
	if r.rand == nil {
		r.rand = rand.Reader
	}
	for ref, iss := range cfg.Issuers {
		if isNil(iss) {
			return nil, fmt.Errorf("host: Config.Issuers[%s]: the issuer is nil", describeRef(ref))
		}
		r.issuers[ref.WithDefaults()] = iss
	}
	if a, ok := cfg.Store.(Authoritative); ok {
		r.authoritative = a.Authoritative()
	}
	base := cfg.Store
	if ryw, ok := base.(*ReadYourWrites); ok {
		base = ryw.Unwrap()
	}
	if s, ok := base.(Syncer); ok {
		r.syncer = s
	} else {
		r.synced.Store(true)
	}
	if l, ok := base.(Leaser); ok {
		r.lease = leaseState{leaser: l, held: map[objKey]Lease{}}
	}
	r.leaseFor = cmp.Or(cfg.LeaseDuration, DefaultLeaseDuration)
	r.identity = cfg.Identity
	if r.identity == "" {
		id, err := defaultIdentity(r.rand)
		if err != nil {
			return nil, err
		}
		r.identity = id
	}
	if _, ok := cfg.Store.(*ReadYourWrites); !ok && !r.authoritative {
		r.store = NewReadYourWrites(cfg.Store)
	}
	return r, nil
}

// isNil reports a nil interface or one holding a nil pointer.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

func describeRef(r certificate.IssuerRef) string {
	r = r.WithDefaults()
	return r.Kind + " " + r.Group + "/" + r.Name
}

// Store is the store the Reconciler reads and writes through: Config.Store,
// or the ReadYourWrites over it.
func (r *Reconciler) Store() Store { return r.store }

// Identity is the name of the Reconciler's leases' holder: Config.
// Identity, or the one made for it when that is empty.
func (r *Reconciler) Identity() string { return r.identity }

// Now is the Reconciler's clock's time.
func (r *Reconciler) Now() time.Time { return r.clock.Now() }

// HasSynced reports whether the Store's reads can be decided on: true
// unless Config.Store is a Syncer that has not synced yet. Once true it
// stays true.
func (r *Reconciler) HasSynced() bool {
	if r.synced.Load() {
		return true
	}
	if r.syncer.HasSynced() {
		r.synced.Store(true)
		return true
	}
	return false
}

// notSynced is the error of a pass made before the store synced.
func notSynced(ev Event) error {
	return fmt.Errorf("%s %s: %w", ev.Kind, key(ev.Namespace, ev.Name), ErrNotSynced)
}

// Certificate makes one pass over the certificate namespace/name at the
// clock's time: it gathers a certificate.Snapshot (the certificate, its
// secret, the requests and next-private-key secrets it owns, the other
// certificates that name its secret, and with Config.ARI the CA's
// renewal window), decides with certificate.Reconcile, and carries out
// the actions in order, exactly as their docs say, stopping at the first
// that fails. A create that meets an object of the same (deterministic)
// name is success; a delete of a missing one too; a deleted request's
// issuer is told (certificate.Forgetter) after the deletion; a secret is
// written only over the version the decision read; the status is written
// last.
//
// It returns what it did, Event.Next (when to look again), and an error
// when the pass could not run or an action failed (errors.Is(err,
// ErrConflict) when someone wrote in between: look again at once, the
// next read sees it). A certificate that is gone is no error and nothing
// to do: Event.Result is nil. A spec no decision can be made on is no
// error either: the decision says so in the status it writes.
func (r *Reconciler) Certificate(ctx context.Context, namespace, name string) (Event, error) {
	ev, err := r.certificatePass(ctx, namespace, name)
	r.observeIf(ev)
	return ev, err
}

// certificatePass is Certificate without telling Config.Observe.
func (r *Reconciler) certificatePass(ctx context.Context, namespace, name string) (Event, error) {
	now := r.clock.Now()
	ev := Event{Time: now, Kind: KindCertificate, Namespace: namespace, Name: name}
	if !r.HasSynced() {
		ev.Err = notSynced(ev)
		return ev, ev.Err
	}
	ev, err := r.certificate(ctx, ev, now)
	ev.Err = err
	return ev, err
}

// observeIf tells Config.Observe of a pass that did something.
func (r *Reconciler) observeIf(ev Event) {
	if ev.Result != nil || ev.Request != nil || ev.Err != nil || ev.Warning != nil || ev.Held != nil {
		r.observe(ev)
	}
}

func (r *Reconciler) certificate(ctx context.Context, ev Event, now time.Time) (Event, error) {
	c, err := r.store.Certificates().Get(ctx, ev.Namespace, ev.Name)
	switch {
	case errors.Is(err, ErrNotFound):
		return ev, nil
	case err != nil:
		return ev, err
	}
	ev.Certificate = c
	snap, ariNext, ariErr, err := r.gather(ctx, c, now)
	if err != nil {
		return ev, err
	}
	res := certificate.Reconcile(snap, now, r.cfg.Certificate)
	ev.Result = &res
	ev.Warning = ariErr
	if res.Err != nil {
		// A certificate no decision can be made on: fixing it is a
		// write, which brings the next pass.
		return ev, nil
	}
	p := pass{r: r, c: c, now: now}
	for _, a := range res.Actions {
		if err := p.carryOut(ctx, a); err != nil {
			ev.Writes, ev.Warning = p.writes, errors.Join(ev.Warning, p.warning)
			if ryw, ok := r.store.(*ReadYourWrites); ok && r.holdOnConflict && errors.Is(err, ErrConflict) {
				ryw.hold(c.Namespace, c.Name, p.writes)
			}
			return ev, fmt.Errorf("%v: %w", a, err)
		}
		ev.Done = append(ev.Done, a)
	}
	ev.Writes, ev.Warning = p.writes, errors.Join(ev.Warning, p.warning)
	ev.Next = res.RequeueAt
	if !ariNext.IsZero() && (ev.Next.IsZero() || ariNext.Before(ev.Next)) {
		ev.Next = ariNext // to ask the CA again
	}
	if len(p.writes) > 0 {
		ev.Next = now
	}
	return ev, nil
}

// Request hands the request namespace/name to its issuer at the clock's
// time and writes back the status the issuer leaves, when it changed. It
// returns what it did, Event.Next (when the issuer asked to be called
// again; zero: only when the request changes) and an error when the pass
// could not run: the store could not be read or written, or the issuer
// failed (Event.Next is then the issuer's own retry time, if it named
// one). A request that is gone, answered, or for an issuer the
// Reconciler does not have is nothing to do: Event.Request is nil. A
// request that is gone is forgotten by every issuer of Config.Issuers
// that keeps state, and one whose status write finds it gone, by its
// own. An issuer that could not reach its CA (an error wrapping
// certificate.ErrCAUnreachable, with a time to call again) is no failed
// pass: its error is Event.Warning. When the request is left unanswered
// by an issuer that waits for a secret (certificate.SecretAwaiter),
// Event.AwaitedSecret names it: look at the request again as soon as
// that secret is written.
//
// Over a Store that is a Leaser (replicas of one service sharing one
// database), one replica at a time works on a request: before it hands
// the request to its issuer, the pass takes or renews the request's
// lease (LeaseKey) for Config.LeaseDuration, as Config.Identity, and
// releases it when the request is answered or deleted. A lease never
// runs more than Config.LeaseDuration past the holder's clock: when the
// issuer asks to be called again later than half a lease before the
// lease ends, Event.Next is then instead, and that pass renews it (and
// hands the request to the issuer early, as a write would). A request
// whose lease another replica holds is not handed to the issuer: the
// pass is no error, Event.Held says who holds it until when, and
// Event.Next is just after that, when this replica takes the request
// over unless the holder renewed the lease meanwhile. So a replica that
// dies mid-order holds up its requests for one lease at most, and the
// replica that takes one over carries on the same order (the issuer's
// state is in the store they share).
func (r *Reconciler) Request(ctx context.Context, namespace, name string) (Event, error) {
	ev, err := r.requestPass(ctx, namespace, name)
	r.observeIf(ev)
	return ev, err
}

// requestPass is Request without telling Config.Observe.
func (r *Reconciler) requestPass(ctx context.Context, namespace, name string) (Event, error) {
	now := r.clock.Now()
	ev := Event{Time: now, Kind: KindRequest, Namespace: namespace, Name: name}
	if !r.HasSynced() {
		ev.Err = notSynced(ev)
		return ev, ev.Err
	}
	ev, err := r.request(ctx, ev, now)
	ev.Err = err
	return ev, err
}

func (r *Reconciler) request(ctx context.Context, ev Event, now time.Time) (Event, error) {
	reqs := r.store.Requests()
	req, err := reqs.Get(ctx, ev.Namespace, ev.Name)
	switch {
	case errors.Is(err, ErrNotFound):
		// Whoever deleted it, nothing an issuer keeps for it may outlive
		// it: tell those that keep state. (Those IssuerFor gives sweep
		// what nobody steps.)
		ev.Warning = errors.Join(r.forgetEverywhere(ctx, ev.Namespace, ev.Name), r.releaseLease(ctx, ev.Namespace, ev.Name))
		return ev, nil
	case err != nil:
		return ev, err
	case certificate.Answered(req):
		ev.Warning = r.releaseLease(ctx, ev.Namespace, ev.Name)
		return ev, nil
	}
	iss := r.issuer(req.Spec.IssuerRef)
	if iss == nil {
		return ev, nil // not ours: whoever serves its issuer answers it
	}
	var lease Lease
	if r.lease.leaser != nil {
		var mine, fresh bool
		lease, mine, fresh, err = r.takeLease(ctx, req, now)
		switch {
		case err != nil:
			return ev, err
		case !mine:
			return heldElsewhere(ev, lease), nil
		case fresh:
			// The replica that held the lease may have answered the
			// request and released it since it was read: read it again,
			// now that nobody else works on it.
			req, err = reqs.Get(ctx, ev.Namespace, ev.Name)
			switch {
			case errors.Is(err, ErrNotFound) || err == nil && (certificate.Answered(req) || LeaseKey(KindRequest, req.Namespace, req.Name, req.UID) != lease.Key):
				ev.Warning = r.releaseLease(ctx, ev.Namespace, ev.Name)
				return ev, nil // the next pass (a write brings it) sees
			case err != nil:
				return ev, err
			}
		}
	}
	// The issuer answers on its own copy: what the store returned may be
	// what it holds (Collection), and an issuer changes the request it
	// is given in place.
	before := req.Status
	req = copyRequest(req)
	next, aerr := iss.Answer(ctx, req, now)
	ev.Request = req
	ev.Next = next
	if aw, ok := iss.(certificate.SecretAwaiter); ok && !certificate.Answered(req) {
		if ns, name := aw.AwaitedSecret(req); name != "" {
			ev.AwaitedSecret = SecretKey{Namespace: ns, Name: name}
		}
	}
	if aerr != nil && !next.IsZero() && errors.Is(aerr, certificate.ErrCAUnreachable) {
		// Not a failed pass: the issuer is called again at next.
		ev.Warning, aerr = aerr, nil
		r.circuits.failed(req.Spec.IssuerRef, now)
	}
	if certificate.Answered(req) {
		r.circuits.answered(req, now)
	}
	if r.lease.leaser != nil && !certificate.Answered(req) {
		// Before the write, so that a write that fails because another
		// replica took the request over says why.
		var lost error
		ev.Next, lost = r.extendLease(ctx, req, lease, next)
		ev.Warning = errors.Join(ev.Warning, lost)
	}
	if !reflect.DeepEqual(before, req.Status) {
		made, err := reqs.Update(ctx, req)
		switch {
		case errors.Is(err, ErrNotFound):
			// Deleted while it was answered: what the answer made for it
			// goes with it.
			ev.Warning = errors.Join(ev.Warning, r.forget(ctx, iss, req.Spec.IssuerRef, ev.Namespace, ev.Name), r.releaseLease(ctx, ev.Namespace, ev.Name))
			ev.Next = time.Time{}
			return ev, nil
		case err != nil:
			return ev, errors.Join(aerr, err)
		}
		ev.Writes = append(ev.Writes, changeOf(KindRequest, made, false))
	}
	if r.lease.leaser != nil && certificate.Answered(req) {
		ev.Warning = errors.Join(ev.Warning, r.releaseLease(ctx, ev.Namespace, ev.Name))
	}
	return ev, aerr
}

// forget tells an issuer that keeps state that a request is gone.
func (r *Reconciler) forget(ctx context.Context, iss certificate.Issuer, ref certificate.IssuerRef, namespace, name string) error {
	f, ok := iss.(certificate.Forgetter)
	if !ok {
		return nil
	}
	if err := f.Forget(ctx, namespace, name); err != nil {
		return fmt.Errorf("telling %s that request %s is gone: %w", describeRef(ref), key(namespace, name), err)
	}
	return nil
}

// forgetEverywhere tells every issuer of Config.Issuers that keeps state
// that a request is gone.
func (r *Reconciler) forgetEverywhere(ctx context.Context, namespace, name string) error {
	var err error
	for ref, iss := range r.issuers {
		err = errors.Join(err, r.forget(ctx, iss, ref, namespace, name))
	}
	return err
}

// Sweep sweeps every issuer of Config.Issuers that is a
// certificate.Sweeper at the clock's time, and returns the earliest time
// one asked to be swept again (zero: none did) and their errors. A Loop
// calls it when it starts and at each time it returns.
func (r *Reconciler) Sweep(ctx context.Context) (next time.Time, err error) {
	now := r.clock.Now()
	for ref, iss := range r.issuers {
		sw, ok := iss.(certificate.Sweeper)
		if !ok {
			continue
		}
		n, serr := sw.Sweep(ctx, now)
		if serr != nil {
			err = errors.Join(err, fmt.Errorf("sweeping %s: %w", describeRef(ref), serr))
		}
		if !n.IsZero() && (next.IsZero() || n.Before(next)) {
			next = n
		}
	}
	return next, err
}

// sweeps reports whether any issuer of Config.Issuers sweeps.
func (r *Reconciler) sweeps() bool {
	for _, iss := range r.issuers {
		if _, ok := iss.(certificate.Sweeper); ok {
			return true
		}
	}
	return false
}

// RemoveOwned removes what the certificate with the UID ownerUID in
// namespace owned, once it is gone: its requests (their issuers told) and
// its next-private-key secrets. Its secret stays, as a deleted Kubernetes
// Certificate's does. A host whose store removes owned objects itself (a
// Kubernetes garbage collector) needs none of this; a Loop calls it when
// a certificate's deletion is reported and for every orphan it finds when
// it lists the store.
func (r *Reconciler) RemoveOwned(ctx context.Context, namespace, ownerUID string) error {
	_, err := r.removeOwned(ctx, namespace, ownerUID)
	return err
}

// removeOwned is RemoveOwned; it returns the deletions it made.
func (r *Reconciler) removeOwned(ctx context.Context, namespace, ownerUID string) (writes []Change, err error) {
	if ownerUID == "" {
		return nil, nil
	}
	reqs, err := r.store.Requests().List(ctx, ListOptions{Namespace: namespace, OwnerUID: ownerUID})
	for _, req := range reqs {
		deleted, derr := r.deleteRequest(ctx, namespace, req.Name, req.Spec.IssuerRef)
		if deleted {
			writes = append(writes, changeOf(KindRequest, req, true))
		}
		err = errors.Join(err, derr)
	}
	secs, lerr := r.store.Secrets().List(ctx, ListOptions{Namespace: namespace, OwnerUID: ownerUID})
	err = errors.Join(err, lerr)
	for _, s := range secs {
		if s.Labels[certificate.LabelNextPrivateKey] == "true" {
			derr := r.store.Secrets().Delete(ctx, s.Namespace, s.Name)
			if derr == nil {
				writes = append(writes, changeOf(KindSecret, s, true))
			}
			err = errors.Join(err, ignore(derr, ErrNotFound))
		}
	}
	return writes, err
}

// Forget tells the issuer ref names, when it keeps state
// (certificate.Forgetter), that the request namespace/name is gone: for
// a host that learns of a deletion together with the deleted object (a
// Kubernetes watch's delete event carries it), whoever deleted it. The
// Reconciler tells issuers itself of the deletions it makes. Over a
// Leaser store it also releases the request's lease, when it holds it.
func (r *Reconciler) Forget(ctx context.Context, ref certificate.IssuerRef, namespace, name string) error {
	lerr := r.releaseLease(ctx, namespace, name)
	iss := r.issuer(ref)
	if iss == nil {
		return lerr
	}
	return errors.Join(r.forget(ctx, iss, ref, namespace, name), lerr)
}

// deleteRequest deletes a request, then tells its issuer. Deleting first
// closes every race with an answer of the same request under way: an
// answer that made something after Forget finds the request gone when
// it writes back, and forgets it itself. A crash between the two leaves
// what the issuer keeps to its sweep.
func (r *Reconciler) deleteRequest(ctx context.Context, namespace, name string, ref certificate.IssuerRef) (deleted bool, err error) {
	err = r.store.Requests().Delete(ctx, namespace, name)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return false, err
	}
	ferr := r.releaseLease(ctx, namespace, name)
	if iss := r.issuer(ref); iss != nil {
		ferr = errors.Join(r.forget(ctx, iss, ref, namespace, name), ferr)
	}
	return err == nil, ferr
}

func (r *Reconciler) issuer(ref certificate.IssuerRef) certificate.Issuer {
	ref = ref.WithDefaults()
	if iss, ok := r.issuers[ref]; ok {
		return iss
	}
	if r.cfg.IssuerFor != nil {
		if iss := r.cfg.IssuerFor(ref); !isNil(iss) {
			return iss
		}
	}
	return nil
}

func (r *Reconciler) observe(ev Event) {
	if r.cfg.Observe != nil {
		r.cfg.Observe(ev)
	}
	LogEvent(context.Background(), r.cfg.Logger, ev)
}

// nextKeyLabels selects a certificate's next-key secrets; shared, never
// changed.
var nextKeyLabels = map[string]string{certificate.LabelNextPrivateKey: "true"}

// gather reads everything a decision about c reads; nil for what is
// missing. ariErr is a failed ARI read, which the pass goes on without;
// ariNext is when the certificate's issuer asked to be asked again about
// its renewal window.
func (r *Reconciler) gather(ctx context.Context, c *certificate.Certificate, now time.Time) (s *certificate.Snapshot, ariNext time.Time, ariErr, err error) {
	st := r.store
	s = &certificate.Snapshot{Certificate: c}
	if len(c.Spec.FallbackIssuerRefs) > 0 {
		s.IssuerHealth = r.circuits.skips(now)
	}
	// A secret name that is not valid names no secret, and nothing is
	// read by it (one with a '/' could reach into another namespace in a
	// store that joins names): the decision says the spec is invalid.
	secretNamed := certificate.ValidateObjectName(c.Spec.SecretName) == nil
	if secretNamed {
		sec, err := st.Secrets().Get(ctx, c.Namespace, c.Spec.SecretName)
		switch {
		case errors.Is(err, ErrNotFound):
			s.SecretAbsenceConfirmed = r.authoritative || errors.Is(err, ErrAbsenceConfirmed)
		case err != nil:
			return nil, time.Time{}, nil, err
		default:
			s.Secret = sec
		}
	}
	owned, err := st.Secrets().List(ctx, ListOptions{Namespace: c.Namespace, OwnerUID: c.UID, Labels: nextKeyLabels})
	if err != nil {
		return nil, time.Time{}, nil, err
	}
	for _, o := range owned {
		// Checked again for a store that does not select by labels.
		if o.Labels[certificate.LabelNextPrivateKey] == "true" {
			s.NextPrivateKeySecrets = append(s.NextPrivateKeySecrets, o)
		}
	}
	if s.Requests, err = st.Requests().List(ctx, ListOptions{Namespace: c.Namespace, OwnerUID: c.UID}); err != nil {
		return nil, time.Time{}, nil, err
	}
	if secretNamed {
		others, err := st.Certificates().List(ctx, ListOptions{Namespace: c.Namespace, SecretName: c.Spec.SecretName})
		if err != nil {
			return nil, time.Time{}, nil, err
		}
		for _, o := range others {
			if o.Name != c.Name {
				s.OtherOwners = append(s.OtherOwners, o)
			}
		}
	}
	if s.Secret != nil {
		switch adv, _ := r.issuer(certificate.IssuedBy(c, s.Secret)).(certificate.RenewalAdvisor); {
		case r.cfg.ARI != nil:
			if leaf := leafOf(r.cfg.Certificate.ParseCache, s.Secret); leaf != nil {
				if s.ARI, ariErr = r.cfg.ARI(ctx, c, leaf); ariErr != nil {
					s.ARI = nil
				}
			}
		case adv != nil:
			if leaf := leafOf(r.cfg.Certificate.ParseCache, s.Secret); leaf != nil {
				s.ARI, ariNext, ariErr = adv.RenewalWindow(ctx, c, leaf, now)
			}
		}
		s.ARINextCheck = ariNext
		if ariErr != nil {
			ariErr = fmt.Errorf("renewal information: %w", ariErr)
			s.ARIError = ariErr.Error()
		}
	}
	return s, ariNext, ariErr, nil
}

// leafOf is the first certificate of the secret's tls.crt, nil when there
// is none or when tls.crt is beyond the bounds a decision reads
// (keys.MaxSecretValueBytes): the decision then re-issues.
func leafOf(pc *keys.ParseCache, s *certificate.Secret) *x509.Certificate {
	crt := s.Data[keys.SecretCertificate]
	if len(crt) > keys.MaxSecretValueBytes {
		return nil
	}
	b, _ := pem.Decode(crt)
	if b == nil || b.Type != "CERTIFICATE" {
		return nil
	}
	leaf, err := pc.ParseCertificate(b.Bytes)
	if err != nil {
		return nil
	}
	return leaf
}

// pass carries out one decision's actions for certificate c.
type pass struct {
	r       *Reconciler
	c       *certificate.Certificate
	now     time.Time
	writes  []Change
	warning error
}

func (p *pass) wrote(kind Kind, obj interface {
	Meta() *certificate.ObjectMeta
}, deleted bool) {
	p.writes = append(p.writes, changeOf(kind, obj, deleted))
}

func changeOf(kind Kind, obj interface {
	Meta() *certificate.ObjectMeta
}, deleted bool) Change {
	m := *obj.Meta()
	return Change{Kind: kind, Namespace: m.Namespace, Name: m.Name, Meta: m, Deleted: deleted}
}

// carryOut does what an action's doc says.
func (p *pass) carryOut(ctx context.Context, a certificate.Action) error {
	st, c := p.r.store, p.c
	switch a := a.(type) {
	case certificate.GenerateKey:
		var pemKey []byte
		if a.ReuseFrom != "" {
			from, err := st.Secrets().Get(ctx, c.Namespace, a.ReuseFrom)
			if err != nil {
				return err
			}
			pemKey = from.Data[keys.SecretPrivateKey]
		} else {
			key, err := keys.Generate(p.r.rand, a.Spec)
			if err != nil {
				return err
			}
			if pemKey, err = p.r.cfg.Certificate.ParseCache.EncodePrivateKey(key, keys.EncodingPKCS8); err != nil {
				return err
			}
		}
		sec := &certificate.Secret{
			ObjectMeta: certificate.ObjectMeta{Name: a.SecretName, Namespace: c.Namespace, OwnerUID: a.OwnerUID,
				Labels:      map[string]string{certificate.LabelNextPrivateKey: "true"},
				Annotations: map[string]string{certificate.AnnotationCertificateName: c.Name}},
			Data: map[string][]byte{keys.SecretPrivateKey: pemKey},
		}
		made, err := st.Secrets().Create(ctx, sec)
		if errors.Is(err, ErrAlreadyExists) {
			return p.taken(ctx, KindSecret, a.SecretName)
		}
		if err != nil {
			return err
		}
		p.wrote(KindSecret, made, false)
		return nil

	case certificate.CreateRequest:
		if len(c.Spec.FallbackIssuerRefs) > 0 && !p.r.circuits.admit(a.Request.Spec.IssuerRef, p.now) {
			// The issuer's circuit opened since the pass read it (an
			// answer on another worker): decide again on the news.
			return fmt.Errorf("request %s names %s, whose circuit opened since the decision: %w", a.Request.Name, describeRef(a.Request.Spec.IssuerRef), ErrIssuerSkipped)
		}
		key, err := p.privateKey(ctx, a.KeySecretName)
		if err != nil {
			return err
		}
		req := a.Request
		if req.Spec.Request, err = keys.BuildCSR(p.r.rand, a.Template, key); err != nil {
			return err
		}
		made, err := st.Requests().Create(ctx, &req)
		if errors.Is(err, ErrAlreadyExists) {
			return p.taken(ctx, KindRequest, req.Name)
		}
		if err != nil {
			return err
		}
		p.wrote(KindRequest, made, false)
		return nil

	case certificate.DeleteRequest:
		deleted, err := p.r.deleteRequest(ctx, c.Namespace, a.Name, a.IssuerRef)
		if deleted {
			p.wrote(KindRequest, &certificate.CertificateRequest{ObjectMeta: certificate.ObjectMeta{Namespace: c.Namespace, Name: a.Name, OwnerUID: c.UID}}, true)
		}
		if err != nil && deleted {
			// The request is gone; its issuer's sweep takes what it keeps.
			p.warning = errors.Join(p.warning, err)
			return nil
		}
		return err

	case certificate.DeleteSecret:
		err := st.Secrets().Delete(ctx, c.Namespace, a.Name)
		if err == nil {
			p.wrote(KindSecret, &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Namespace: c.Namespace, Name: a.Name, OwnerUID: c.UID}}, true)
		}
		return ignore(err, ErrNotFound)

	case certificate.WriteSecret:
		key, err := p.privateKey(ctx, a.KeySecretName)
		if err != nil {
			return err
		}
		data, err := p.r.cfg.Certificate.ParseCache.SecretData(p.r.rand, key, a.Chain, a.CA, a.Output)
		if err != nil {
			return err
		}
		return p.writeSecret(ctx, a.Name, a.OwnerUID, a.ResourceVersion, data, a.Labels, a.Annotations)

	case certificate.WriteTemporaryCertificate:
		key, err := p.privateKey(ctx, a.KeySecretName)
		if err != nil {
			return err
		}
		chain, err := keys.TemporaryCertificate(p.r.rand, key, a.Template, a.NotBefore, a.NotAfter)
		if err != nil {
			return err
		}
		data, err := p.r.cfg.Certificate.ParseCache.SecretData(p.r.rand, key, chain, nil, a.Output)
		if err != nil {
			return err
		}
		return p.writeSecret(ctx, a.Name, a.OwnerUID, a.ResourceVersion, data, a.Labels, a.Annotations)

	case certificate.UpdateStatus:
		n := *c
		n.Status = a.Status
		made, err := st.Certificates().Update(ctx, &n)
		if err != nil {
			return err
		}
		p.wrote(KindCertificate, made, false)
		return nil
	}
	return fmt.Errorf("host: unknown action %T", a)
}

// taken handles a create that met an object of the same name. Made by an
// earlier pass of this certificate, it is success; owned by a
// certificate of the same name that was deleted (and is gone now), it is
// removed, and the pass fails with a conflict so that the next makes it
// anew; owned by anyone else, it is a conflict the decision judges on
// its next read.
func (p *pass) taken(ctx context.Context, kind Kind, name string) error {
	var owner string
	switch kind {
	case KindSecret:
		s, err := p.r.store.Secrets().Get(ctx, p.c.Namespace, name)
		if err != nil {
			return ignore(err, ErrNotFound) // gone since: the next pass sees
		}
		owner = s.OwnerUID
	case KindRequest:
		r, err := p.r.store.Requests().Get(ctx, p.c.Namespace, name)
		if err != nil {
			return ignore(err, ErrNotFound)
		}
		owner = r.OwnerUID
	}
	if owner == "" || owner == p.c.UID {
		return nil // made by an earlier pass
	}
	live, err := p.r.certificateLives(ctx, p.c.Namespace, owner)
	if err != nil {
		return err
	}
	if live {
		return fmt.Errorf("%s %s belongs to certificate UID %s: %w", kind, name, owner, ErrConflict)
	}
	if err := p.r.RemoveOwned(ctx, p.c.Namespace, owner); err != nil {
		return err
	}
	return fmt.Errorf("%s %s belonged to a deleted certificate of the same name, removed now: %w", kind, name, ErrConflict)
}

// certificateLives reports whether a certificate with that UID is in
// namespace.
func (r *Reconciler) certificateLives(ctx context.Context, namespace, uid string) (bool, error) {
	certs, err := r.store.Certificates().List(ctx, ListOptions{Namespace: namespace})
	if err != nil {
		return false, err
	}
	for _, c := range certs {
		if c.UID == uid {
			return true, nil
		}
	}
	return false, nil
}

// writeSecret writes data as the secret name's data, owned by ownerUID,
// merging labels and annotations into what the secret has, and only over
// the version the decision read (rv; empty: it read none): a secret the
// decision did not see is never written.
func (p *pass) writeSecret(ctx context.Context, name, ownerUID, rv string, data map[string][]byte, labels, annotations map[string]string) error {
	secrets := p.r.store.Secrets()
	ns := p.c.Namespace
	sec := &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Name: name, Namespace: ns}}
	var err error
	if rv != "" {
		// Written over what is there, whose labels and annotations stay.
		sec, err = secrets.Get(ctx, ns, name)
		switch {
		case errors.Is(err, ErrNotFound):
			return fmt.Errorf("secret %s was read at version %s and is gone: %w", name, rv, ErrConflict)
		case err != nil:
			return err
		case sec.ResourceVersion != rv:
			return fmt.Errorf("secret %s is at version %s, the decision read %s: %w", name, sec.ResourceVersion, rv, ErrConflict)
		}
	}
	// A new object over what was read, which may be what the store
	// holds (Collection): nothing read is changed in place.
	sec = &certificate.Secret{ObjectMeta: sec.ObjectMeta, Data: data}
	sec.OwnerUID = ownerUID
	sec.Labels = mergeInto(sec.Labels, labels)
	sec.Annotations = mergeInto(sec.Annotations, annotations)
	var made *certificate.Secret
	if rv == "" {
		// Made since the decision found none, by someone else, it is a
		// conflict: the next decision reads it, and judges whether it may
		// be written.
		made, err = secrets.Create(ctx, sec)
		if errors.Is(err, ErrAlreadyExists) {
			err = fmt.Errorf("secret %s was made since the decision found none: %w", name, ErrConflict)
		}
	} else {
		made, err = secrets.Update(ctx, sec)
	}
	if err != nil {
		return err
	}
	p.wrote(KindSecret, made, false)
	return nil
}

// mergeInto returns a copy of dst with src's entries set over it (dst
// itself when src is empty): dst is not changed.
func mergeInto(dst, src map[string]string) map[string]string {
	if len(src) == 0 {
		return dst
	}
	out := make(map[string]string, len(dst)+len(src))
	maps.Copy(out, dst)
	maps.Copy(out, src)
	return out
}

// privateKey reads tls.key of a secret.
func (p *pass) privateKey(ctx context.Context, name string) (crypto.Signer, error) {
	sec, err := p.r.store.Secrets().Get(ctx, p.c.Namespace, name)
	if err != nil {
		return nil, err
	}
	return p.r.cfg.Certificate.ParseCache.DecodePrivateKey(sec.Data[keys.SecretPrivateKey])
}

func ignore(err, ok error) error {
	if errors.Is(err, ok) {
		return nil
	}
	return err
}
