package host

import (
	"bytes"
	"container/heap"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/renewal"
)

// Config configures a Loop. Store is required; every other field has a
// documented zero value.
type Config struct {
	// Store keeps the certificates, secrets and requests.
	Store Store
	// Clock is the loop's time: every decision's now, and the timers of
	// Run. Nil means the real clock. Tests and simulations pass a fake
	// one and drive the loop with Step.
	Clock clock.Clock
	// Issuers answer the requests whose issuerRef names them. An empty
	// kind or group in a key means the defaults (certificate.IssuerRef.
	// WithDefaults). A request whose issuer is neither here nor given
	// by IssuerFor is left to whoever serves it; the certificate says so when nobody answers.
	// An issuer that keeps state of its own and is a
	// certificate.Sweeper — acmeclient.Issuer is — is swept when the
	// loop starts and again at each time Sweep returns, at the clock's
	// time, so that what it keeps goes on time even when no request
	// needs it.
	Issuers map[certificate.IssuerRef]certificate.Issuer
	// IssuerFor, when set, gives the issuer of a request whose issuerRef
	// (its defaults filled, certificate.IssuerRef.WithDefaults) is not a
	// key of Issuers, or nil when the host serves none by that reference:
	// for a host whose issuers come and go, such as a Kubernetes
	// operator's Issuer resources. The loop asks it whenever it needs a
	// request's issuer — to answer the request, and to tell the issuer of
	// its deletion — so it must be cheap and safe for concurrent use. The
	// loop does not sweep the issuers it gives; a host whose issuer is a
	// certificate.Sweeper calls Sweep itself.
	IssuerFor func(ref certificate.IssuerRef) certificate.Issuer
	// Certificate is passed to every decision.
	Certificate certificate.Config
	// Rand is the randomness for keys, CSRs and keystores; nil means
	// crypto/rand.
	Rand io.Reader
	// ARI, when set, is asked for the CA's suggested renewal window of a
	// certificate's current leaf (acmeclient.Client.RenewalInfo), which
	// renewal follows (RFC 9773). An error is reported in the pass's
	// Event and the pass goes on without a window.
	ARI func(ctx context.Context, c *certificate.Certificate, leaf *x509.Certificate) (*renewal.ARIWindow, error)
	// Resync is how often every certificate and unanswered request is
	// queued again, and objects a deleted certificate owned are removed,
	// whatever else happens. Zero means 1 h for a Store that is not a
	// Watcher and never for one that is; negative means never.
	Resync time.Duration
	// Observe, when set, sees every pass: each certificate decision with
	// what came of its actions, and each issuer step.
	Observe func(Event)
}

// Event is one pass of the loop, for a log, a timeline or a test.
type Event struct {
	Time time.Time
	// Kind is KindCertificate for a certificate's decision, KindRequest
	// for an issuer's step on a request, and KindIssuer for an issuer's
	// sweep (Name is then the issuer reference).
	Kind            Kind
	Namespace, Name string
	// Result is the decision (certificate passes).
	Result *certificate.Result
	// Done are the actions carried out: all of Result.Actions unless Err
	// stopped the pass.
	Done []certificate.Action
	// Request is the request as the issuer left it (request passes).
	Request *certificate.CertificateRequest
	// Next is when the object is looked at again, zero for only on a
	// change.
	Next time.Time
	// Err is why the pass stopped early, or what went wrong beside it
	// (an ARI read, telling an issuer of a deletion).
	Err error
}

// Loop is the host loop: for each certificate that is due it gathers a
// certificate.Snapshot from the Store, decides with
// certificate.Reconcile, carries out the actions in order exactly as
// their docs say, and looks again at the time the result names; for each
// request that is not answered it steps the request's issuer and writes
// the request's status back. See the package documentation for its
// duties in full.
//
// Step, Settle and Next drive it on the caller's time (a fake clock);
// Run drives it on the clock's own time until the context ends. One
// goroutine drives a Loop with them; Notify may be called from any. A
// host with a queue of its own drives it with Pass and Answer instead,
// which several goroutines may call at once for different objects (as a
// Kubernetes workqueue's workers do), never for the same object at once.
type Loop struct {
	cfg      Config
	clock    clock.Clock
	rand     io.Reader
	issuers  map[certificate.IssuerRef]certificate.Issuer
	watching bool
	// authoritative: the store's reads show every write, so a secret it
	// does not hold is gone (certificate.Snapshot.SecretAbsenceConfirmed).
	authoritative bool
	resync        time.Duration

	// expecting: the store reports writes (Watcher) but its reads may not
	// show them yet (not Authoritative); the loop then waits for its own
	// writes to show before it decides on a certificate again.
	expecting bool

	mu       sync.Mutex
	queue    schedule
	failures map[item]int
	uids     map[string]item // certificate UID → the certificate
	certUIDs map[item]string // the certificate → its UID, as last read
	wake     chan struct{}
	// pending are the loop's own writes its store's watch has not shown
	// yet (expecting stores only).
	pending map[object]*expectation
	// refs is the issuer of each request the loop has seen that one of
	// its issuers serves: a deletion it did not make itself is still told
	// to the issuer.
	refs map[item]certificate.IssuerRef
	// self are the requests whose status the loop is writing (several
	// at once when a host calls Answer from several goroutines): the
	// write's own watch event does not queue a request again, as its
	// issuer said when to look again.
	self map[item]bool
	// deleting are the requests the loop is deleting (their issuer told
	// to forget them, the store's delete not yet returned): another
	// goroutine's Answer leaves them alone, so that an issuer does not
	// start again on what it was just told to forget.
	deleting map[item]bool
	// inFlight are the requests being answered, each closed when its
	// answer ends: telling an issuer to forget a request waits for the
	// answer in flight, so that the answer cannot start again what the
	// issuer was told to drop.
	inFlight map[item]chan struct{}
	// wroteOver is the resource version each request's last answer wrote
	// over (stores that are not Authoritative), until a read shows
	// another: a read that shows it lags the write.
	wroteOver map[item]string

	started    bool
	nextResync time.Time
}

// kindOwned queues the removal of what a certificate that is gone owned:
// its item's name is the certificate's UID.
const kindOwned Kind = "owned"

// item is something the loop looks at: a certificate to decide on, a
// request to hand to its issuer, an issuer to sweep, or what a gone
// certificate owned, to remove.
type item struct {
	kind            Kind
	namespace, name string
}

func (it item) String() string { return string(it.kind) + " " + key(it.namespace, it.name) }

// New returns a loop over cfg.Store. It reads nothing yet: the first Step
// (or Run) lists what the store holds and queues it.
func New(cfg Config) (*Loop, error) {
	if cfg.Store == nil {
		return nil, errors.New("host: Config.Store is required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if err := cfg.Certificate.Validate(); err != nil {
		return nil, fmt.Errorf("host: Config.Certificate: %w", err)
	}
	l := &Loop{cfg: cfg, clock: cfg.Clock, rand: cfg.Rand, issuers: map[certificate.IssuerRef]certificate.Issuer{},
		failures: map[item]int{}, uids: map[string]item{}, certUIDs: map[item]string{}, refs: map[item]certificate.IssuerRef{}, self: map[item]bool{}, deleting: map[item]bool{}, inFlight: map[item]chan struct{}{}, wroteOver: map[item]string{},
		pending: map[object]*expectation{}, wake: make(chan struct{}, 1)}
	if l.rand == nil {
		l.rand = rand.Reader
	}
	for ref, iss := range cfg.Issuers {
		if iss == nil {
			return nil, fmt.Errorf("host: Config.Issuers[%s]: the issuer is nil", describeRef(ref))
		}
		l.issuers[ref.WithDefaults()] = iss
	}
	if a, ok := cfg.Store.(Authoritative); ok {
		l.authoritative = a.Authoritative()
	}
	if w, ok := cfg.Store.(Watcher); ok {
		l.watching = true
		w.Watch(l.changed)
	}
	l.expecting = l.watching && !l.authoritative
	switch {
	case cfg.Resync > 0:
		l.resync = cfg.Resync
	case cfg.Resync == 0 && !l.watching:
		l.resync = time.Hour
	}
	return l, nil
}

func describeRef(r certificate.IssuerRef) string {
	r = r.WithDefaults()
	return r.Kind + " " + r.Group + "/" + r.Name
}

// Notify queues the object for now, as a write to it does in a store
// that is a Watcher: call it after changing the store behind the loop's
// back when the store does not report its writes. Kind is
// KindCertificate, KindSecret or KindRequest.
func (l *Loop) Notify(kind Kind, namespace, name string) {
	l.changed(Change{Kind: kind, Namespace: namespace, Name: name})
}

// Next is when the loop next has something to do; ok is false when
// nothing is queued (before the first Step: now).
func (l *Loop) Next() (t time.Time, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.started {
		return l.clock.Now(), true
	}
	t, ok = l.queue.peek()
	if l.resync > 0 && (!ok || l.nextResync.Before(t)) {
		t, ok = l.nextResync, true
	}
	return t, ok
}

// NextFor is when the loop next looks at one object — a certificate
// (KindCertificate) or a request (KindRequest) — and ok is false when it
// is not queued: it is then looked at only when a write concerns it.
func (l *Loop) NextFor(kind Kind, namespace, name string) (t time.Time, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.queue.when(item{kind, namespace, name})
}

// Step looks at everything due at the clock's time — certificates first,
// then requests, each once, in name order — and returns how many it
// looked at. What they queue for now is left for the next Step. The first
// Step lists the store and queues every certificate and unanswered
// request.
func (l *Loop) Step(ctx context.Context) (int, error) {
	now := l.clock.Now()
	if err := l.start(ctx, now); err != nil {
		return 0, err
	}
	l.mu.Lock()
	due := l.queue.popDue(now)
	l.mu.Unlock()
	rank := map[Kind]int{kindOwned: 0, KindCertificate: 1, KindRequest: 2, KindIssuer: 3}
	slices.SortFunc(due, func(a, b item) int {
		if a.kind != b.kind {
			return rank[a.kind] - rank[b.kind]
		}
		return strings.Compare(key(a.namespace, a.name), key(b.namespace, b.name))
	})
	for _, it := range due {
		if err := ctx.Err(); err != nil {
			l.enqueue(it, now) // not looked at: still due
			continue
		}
		switch it.kind {
		case KindCertificate:
			if ev, ok := l.reconcile(ctx, it, now); ok {
				l.observe(ev)
			}
		case KindRequest:
			if ev, ok := l.answer(ctx, it, now); ok {
				l.observe(ev)
			}
		case KindIssuer:
			l.sweep(ctx, it, now)
		case kindOwned:
			l.removeOwnedBy(ctx, it, now)
		}
	}
	return len(due), ctx.Err()
}

// Pass runs one pass for the certificate namespace/name at the clock's
// time — gather, decide, carry out the actions — as Step does for a
// queued one, and returns what it did. Event.Next is when to look at the
// certificate again (zero: only when a write concerns it). It is for a
// host that keeps its own queue, such as a Kubernetes workqueue: it calls
// Pass for certificates and Answer for requests when its queue says, and
// never Step or Run. ok is false when there was nothing to do: the
// certificate is gone, or its last writes do not show yet (Event.Next is
// then when to try again, should their watch events not come first).
// A Watcher store's events of the pass's own writes may make Event.Next
// now: the next pass follows them.
func (l *Loop) Pass(ctx context.Context, namespace, name string) (ev Event, ok bool) {
	it := item{KindCertificate, namespace, name}
	l.take(it)
	ev, ok = l.reconcile(ctx, it, l.clock.Now())
	if ok {
		l.observe(ev)
	}
	return ev, ok
}

// Answer hands the request namespace/name to its issuer and writes back
// the status it leaves, as Step does for a queued request, and returns
// what it did (Event.Next: when to call it again). ok is false when there
// was nothing to do: the request is gone, answered, or for an issuer the
// loop does not have; or the store's read still shows the version the
// last answer wrote over (a store that is not Authoritative), when
// Event.Next is when to try again, should the write's watch event not
// come first.
func (l *Loop) Answer(ctx context.Context, namespace, name string) (ev Event, ok bool) {
	it := item{KindRequest, namespace, name}
	l.take(it)
	ev, ok = l.answer(ctx, it, l.clock.Now())
	if ok {
		l.observe(ev)
	}
	return ev, ok
}

// take removes it from the loop's queue, as Step does with what is due:
// the pass about to run is the one it was queued for, and Event.Next is
// then what this pass and the writes since queue it for, never an
// earlier time a pass has already served.
func (l *Loop) take(it item) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.queue.remove(it)
}

// Settle steps at the clock's time until nothing more is due now, at
// most max steps, and returns how many it took.
func (l *Loop) Settle(ctx context.Context, max int) (int, error) {
	for i := 0; i < max; i++ {
		n, err := l.Step(ctx)
		if err != nil {
			return i, err
		}
		if n == 0 {
			return i, nil
		}
	}
	return max, fmt.Errorf("host: still busy after %d steps at %v", max, l.clock.Now())
}

// Run steps the loop on the clock's time until ctx ends, sleeping until
// the next thing is due or a write (Notify, or a Watcher store's) wakes
// it. It returns ctx's error.
func (l *Loop) Run(ctx context.Context) error {
	for {
		if _, err := l.Step(ctx); err != nil && ctx.Err() == nil {
			// The store could not be listed: try again shortly.
			l.sleep(ctx, l.clock.Now().Add(storeRetry))
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		next, ok := l.Next()
		if !ok {
			next = time.Time{}
		}
		l.sleep(ctx, next)
	}
}

// storeRetry is how soon Run lists the store again after listing failed.
const storeRetry = 5 * time.Second

// sleep waits until t (forever when zero), a wake-up, or ctx's end.
func (l *Loop) sleep(ctx context.Context, t time.Time) {
	var timer clock.Timer
	var fire <-chan time.Time
	if !t.IsZero() {
		d := t.Sub(l.clock.Now())
		if d <= 0 {
			return
		}
		timer = l.clock.NewTimer(d)
		defer timer.Stop()
		fire = timer.C()
	}
	select {
	case <-ctx.Done():
	case <-l.wake:
	case <-fire:
	}
}

// start lists the store once, and again at every resync: it queues every
// certificate and every unanswered request, and removes what deleted
// certificates owned.
func (l *Loop) start(ctx context.Context, now time.Time) error {
	l.mu.Lock()
	due := !l.started || (l.resync > 0 && !now.Before(l.nextResync))
	l.mu.Unlock()
	if !due {
		return nil
	}
	certs, err := l.cfg.Store.Certificates().List(ctx, ListOptions{})
	if err != nil {
		return fmt.Errorf("host: listing certificates: %w", err)
	}
	reqs, err := l.cfg.Store.Requests().List(ctx, ListOptions{})
	if err != nil {
		return fmt.Errorf("host: listing requests: %w", err)
	}
	secrets, err := l.cfg.Store.Secrets().List(ctx, ListOptions{})
	if err != nil {
		return fmt.Errorf("host: listing secrets: %w", err)
	}
	live := map[string]bool{}
	l.mu.Lock()
	for _, c := range certs {
		it := item{KindCertificate, c.Namespace, c.Name}
		l.uids[c.UID] = it
		l.certUIDs[it] = c.UID
		live[c.UID] = true
		l.push(it, now)
	}
	seen := map[item]bool{}
	for _, r := range reqs {
		it := item{KindRequest, r.Namespace, r.Name}
		seen[it] = true
		if l.issuer(r.Spec.IssuerRef) != nil {
			l.refs[it] = r.Spec.IssuerRef
		}
		if !certificate.Answered(r) {
			l.push(it, now)
		}
	}
	var gone []item
	for it := range l.refs {
		if !seen[it] {
			gone = append(gone, it)
		}
	}
	if !l.started {
		for ref, iss := range l.issuers {
			if _, ok := iss.(certificate.Sweeper); ok {
				l.push(item{kind: KindIssuer, name: describeRef(ref)}, now)
			}
		}
	}
	l.started = true
	if l.resync > 0 {
		l.nextResync = now.Add(l.resync)
	}
	l.mu.Unlock()
	for _, it := range gone {
		l.requestGone(ctx, it)
	}
	// What a deleted certificate owned: its requests (their issuers are
	// told) and its next private keys. Its secret stays, as a deleted
	// Kubernetes Certificate's does.
	orphans := map[item]bool{}
	for _, r := range reqs {
		if r.OwnerUID != "" && !live[r.OwnerUID] {
			orphans[item{kindOwned, r.Namespace, r.OwnerUID}] = true
		}
	}
	for _, sec := range secrets {
		if sec.OwnerUID != "" && !live[sec.OwnerUID] && sec.Labels[certificate.LabelNextPrivateKey] == "true" {
			orphans[item{kindOwned, sec.Namespace, sec.OwnerUID}] = true
		}
	}
	for it := range orphans {
		l.removeOwnedBy(ctx, it, now)
	}
	return nil
}

// changed queues what a write concerns: the object itself when it is a
// certificate or a request, and the certificates a secret or request
// belongs to.
func (l *Loop) changed(ch Change) {
	now := l.clock.Now()
	l.shown(ch)
	var its []item
	switch ch.Kind {
	case KindCertificate:
		its = append(its, item{KindCertificate, ch.Namespace, ch.Name})
		if ch.Meta.UID != "" && !ch.Deleted {
			l.mu.Lock()
			if _, ok := l.uids[ch.Meta.UID]; !ok && l.certUIDs[item{KindCertificate, ch.Namespace, ch.Name}] == "" {
				l.uids[ch.Meta.UID] = item{KindCertificate, ch.Namespace, ch.Name}
			}
			l.mu.Unlock()
		}
	case KindRequest:
		it := item{KindRequest, ch.Namespace, ch.Name}
		if ch.Deleted {
			l.requestGone(context.Background(), it)
		} else {
			its = append(its, it)
		}
		its = append(its, l.owner(ch.Meta.OwnerUID)...)
	case KindSecret:
		its = append(its, l.owner(ch.Meta.OwnerUID)...)
		// The certificates that name the secret: listed outside the
		// loop's lock, as a store may call this under its own.
		certs, err := l.cfg.Store.Certificates().List(context.Background(), ListOptions{Namespace: ch.Namespace, SecretName: ch.Name})
		if err == nil {
			for _, c := range certs {
				its = append(its, item{KindCertificate, c.Namespace, c.Name})
			}
		}
	}
	if len(its) == 0 {
		return
	}
	l.mu.Lock()
	for _, it := range its {
		if !l.self[it] {
			l.push(it, now)
		}
	}
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// requestGone tells the issuer of a request the loop saw that it is
// deleted, whoever deleted it.
func (l *Loop) requestGone(ctx context.Context, it item) {
	l.mu.Lock()
	done := l.inFlight[it]
	l.mu.Unlock()
	if done != nil {
		// An answer of it is under way: the issuer hears of the deletion
		// once it ends, without holding up the store's watch meanwhile.
		go func() {
			<-done
			l.forgetGone(ctx, it)
		}()
		return
	}
	l.forgetGone(ctx, it)
}

// forgetGone tells the issuer of a deleted request, if the loop has seen
// one of its issuers serve it.
func (l *Loop) forgetGone(ctx context.Context, it item) {
	l.mu.Lock()
	ref, ok := l.refs[it]
	delete(l.refs, it)
	delete(l.wroteOver, it)
	l.mu.Unlock()
	if !ok {
		return
	}
	if f, ok := l.issuer(ref).(certificate.Forgetter); ok {
		if err := f.Forget(ctx, it.namespace, it.name); err != nil {
			l.observe(Event{Time: l.clock.Now(), Kind: KindRequest, Namespace: it.namespace, Name: it.name,
				Err: fmt.Errorf("telling %s that request %s is deleted: %w", describeRef(ref), key(it.namespace, it.name), err)})
		}
	}
}

func (l *Loop) owner(uid string) []item {
	if uid == "" {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if it, ok := l.uids[uid]; ok {
		return []item{it}
	}
	return nil
}

func (l *Loop) enqueue(it item, t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.push(it, t)
}

// push queues it at t, or keeps it at an earlier time; l.mu is held.
func (l *Loop) push(it item, t time.Time) { l.queue.add(it, t) }

// reconcile is one pass for a certificate: gather, decide, carry out the
// actions in order until one fails, requeue.
func (l *Loop) reconcile(ctx context.Context, it item, now time.Time) (ev Event, acted bool) {
	ev = Event{Time: now, Kind: KindCertificate, Namespace: it.namespace, Name: it.name}
	if until, waiting := l.waitingFor(it, now); waiting {
		// The store's reads do not show this loop's last writes for the
		// certificate yet: a decision now would be made on what they
		// replaced. Their watch events queue it again; until is the
		// backstop.
		l.enqueue(it, until)
		ev.Next = until
		return ev, false
	}
	c, err := l.cfg.Store.Certificates().Get(ctx, it.namespace, it.name)
	switch {
	case errors.Is(err, ErrNotFound):
		l.succeeded(it) // nothing left to retry
		if uid := l.forgetUID(it, ""); uid != "" {
			l.removeOwnedBy(ctx, item{kindOwned, it.namespace, uid}, now)
		}
		return ev, false
	case err != nil:
		ev.Err = err
		ev.Next = l.failed(it, now, err)
		return ev, true
	}
	if old := l.forgetUID(it, c.UID); old != "" {
		// Deleted and made again under the same name: what the old one
		// owned goes first, or its requests' names would stand in the new
		// one's way.
		if err := l.removeOwned(ctx, it.namespace, old); err != nil {
			l.enqueue(item{kindOwned, it.namespace, old}, now)
			ev.Err = err
			ev.Next = l.failed(it, now, err)
			return ev, true
		}
	}
	snap, ariErr, err := l.gather(ctx, c)
	if err != nil {
		ev.Err = err
		ev.Next = l.failed(it, now, err)
		return ev, true
	}
	res := certificate.Reconcile(snap, now, l.cfg.Certificate)
	ev.Result = &res
	if res.Err != nil {
		// A certificate no decision can be made on: fixing it is a write,
		// which queues it again.
		ev.Err = res.Err
		return ev, true
	}
	for _, a := range res.Actions {
		if err := l.carryOut(ctx, c, a, now); err != nil {
			ev.Err = fmt.Errorf("%v: %w", a, err)
			break
		}
		ev.Done = append(ev.Done, a)
	}
	if ev.Err != nil {
		l.failed(it, now, ev.Err)
	} else {
		l.succeeded(it)
		if !res.RequeueAt.IsZero() {
			l.enqueue(it, res.RequeueAt)
		}
		ev.Err = ariErr
	}
	ev.Next = l.queuedAt(it) // the pass's own writes may have queued it sooner
	return ev, true
}

// queuedAt is when it is queued, zero when it is not.
func (l *Loop) queuedAt(it item) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, _ := l.queue.when(it)
	return t
}

// gather reads everything a decision about c reads; nil for what is
// missing. ariErr is a failed ARI read, which the pass goes on without.
func (l *Loop) gather(ctx context.Context, c *certificate.Certificate) (s *certificate.Snapshot, ariErr, err error) {
	st := l.cfg.Store
	s = &certificate.Snapshot{Certificate: c}
	sec, err := st.Secrets().Get(ctx, c.Namespace, c.Spec.SecretName)
	switch {
	case errors.Is(err, ErrNotFound):
		s.SecretAbsenceConfirmed = l.authoritative || errors.Is(err, ErrAbsenceConfirmed)
	case err != nil:
		return nil, nil, err
	default:
		s.Secret = sec
	}
	owned, err := st.Secrets().List(ctx, ListOptions{Namespace: c.Namespace, OwnerUID: c.UID})
	if err != nil {
		return nil, nil, err
	}
	for _, o := range owned {
		if o.Labels[certificate.LabelNextPrivateKey] == "true" {
			s.NextPrivateKeySecrets = append(s.NextPrivateKeySecrets, o)
		}
	}
	if s.Requests, err = st.Requests().List(ctx, ListOptions{Namespace: c.Namespace, OwnerUID: c.UID}); err != nil {
		return nil, nil, err
	}
	others, err := st.Certificates().List(ctx, ListOptions{Namespace: c.Namespace, SecretName: c.Spec.SecretName})
	if err != nil {
		return nil, nil, err
	}
	for _, o := range others {
		if o.Name != c.Name {
			s.OtherOwners = append(s.OtherOwners, o)
		}
	}
	if l.cfg.ARI != nil && s.Secret != nil {
		if leaf := leafOf(s.Secret); leaf != nil {
			s.ARI, ariErr = l.cfg.ARI(ctx, c, leaf)
			if ariErr != nil {
				s.ARI, ariErr = nil, fmt.Errorf("renewal information: %w", ariErr)
			}
		}
	}
	return s, ariErr, nil
}

func leafOf(s *certificate.Secret) *x509.Certificate {
	b, _ := pem.Decode(s.Data[keys.SecretCertificate])
	if b == nil || b.Type != "CERTIFICATE" {
		return nil
	}
	leaf, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return nil
	}
	return leaf
}

// carryOut does what an action's doc says.
func (l *Loop) carryOut(ctx context.Context, c *certificate.Certificate, a certificate.Action, now time.Time) error {
	st := l.cfg.Store
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
			key, err := keys.Generate(l.rand, a.Spec)
			if err != nil {
				return err
			}
			if pemKey, err = keys.EncodePrivateKey(key, keys.EncodingPKCS8); err != nil {
				return err
			}
		}
		obj := object{KindSecret, c.Namespace, a.SecretName}
		l.beginWrite(obj)
		made, err := st.Secrets().Create(ctx, &certificate.Secret{
			ObjectMeta: certificate.ObjectMeta{Name: a.SecretName, Namespace: c.Namespace, OwnerUID: a.OwnerUID,
				Labels:      map[string]string{certificate.LabelNextPrivateKey: "true"},
				Annotations: map[string]string{certificate.AnnotationCertificateName: c.Name}},
			Data: map[string][]byte{keys.SecretPrivateKey: pemKey},
		})
		l.endWrite(obj, certItem(c), made, err)
		if err == nil {
			l.wrote(KindSecret, c.Namespace, a.SecretName, a.OwnerUID)
		}
		return ignore(err, ErrAlreadyExists) // made by an earlier pass

	case certificate.CreateRequest:
		key, err := l.privateKey(ctx, c.Namespace, a.KeySecretName)
		if err != nil {
			return err
		}
		r := a.Request
		if r.Spec.Request, err = keys.BuildCSR(l.rand, a.Template, key); err != nil {
			return err
		}
		obj := object{KindRequest, r.Namespace, r.Name}
		l.beginWrite(obj)
		made, err := st.Requests().Create(ctx, &r)
		l.endWrite(obj, certItem(c), made, err)
		if err == nil {
			l.wrote(KindRequest, r.Namespace, r.Name, r.OwnerUID)
		}
		return ignore(err, ErrAlreadyExists) // made by an earlier pass

	case certificate.DeleteRequest:
		return l.deleteRequest(ctx, c.Namespace, a.Name, a.IssuerRef, certItem(c))

	case certificate.DeleteSecret:
		obj := object{KindSecret, c.Namespace, a.Name}
		l.beginWrite(obj)
		err := st.Secrets().Delete(ctx, c.Namespace, a.Name)
		l.endDelete(obj, certItem(c), err)
		if err == nil {
			l.wrote(KindSecret, c.Namespace, a.Name, c.UID)
		}
		return ignore(err, ErrNotFound)

	case certificate.WriteSecret:
		key, err := l.privateKey(ctx, c.Namespace, a.KeySecretName)
		if err != nil {
			return err
		}
		data, err := keys.SecretData(l.rand, key, a.Chain, a.CA, a.Output)
		if err != nil {
			return err
		}
		return l.writeSecret(ctx, c, a.Name, a.OwnerUID, a.ResourceVersion, data, a.Labels, a.Annotations)

	case certificate.WriteTemporaryCertificate:
		key, err := l.privateKey(ctx, c.Namespace, a.KeySecretName)
		if err != nil {
			return err
		}
		chain, err := keys.TemporaryCertificate(l.rand, key, a.Template, a.NotBefore, a.NotAfter)
		if err != nil {
			return err
		}
		data, err := keys.SecretData(l.rand, key, chain, nil, a.Output)
		if err != nil {
			return err
		}
		return l.writeSecret(ctx, c, a.Name, a.OwnerUID, a.ResourceVersion, data, a.Labels, a.Annotations)

	case certificate.UpdateStatus:
		n := *c
		n.Status = a.Status
		obj := object{KindCertificate, c.Namespace, c.Name}
		l.beginWrite(obj)
		made, err := st.Certificates().Update(ctx, &n)
		l.endWrite(obj, certItem(c), made, err)
		if err == nil {
			// Its watch event brings the next pass, as the decisions
			// expect.
			l.wrote(KindCertificate, c.Namespace, c.Name, "")
		}
		return err
	}
	return fmt.Errorf("host: unknown action %T", a)
}

// deleteRequest tells a request's issuer that the request goes, then
// deletes it. Forget comes first: it is idempotent, so a crash between
// the two leaves a request whose next decision deletes it again, and
// tells the issuer again; the other way round, a crash would leave the
// issuer keeping what nobody would ever tell it to drop.
func (l *Loop) deleteRequest(ctx context.Context, namespace, name string, ref certificate.IssuerRef, owner item) error {
	it := item{KindRequest, namespace, name}
	l.mu.Lock()
	delete(l.refs, it) // told here, not again by the deletion's watch event
	delete(l.wroteOver, it)
	l.deleting[it] = true
	l.mu.Unlock()
	if owner == (item{}) {
		// No certificate waits for the deletion to show (its own is
		// gone): the request does, so that it is not answered again
		// while the store's reads still show it.
		owner = it
	}
	defer func() {
		l.mu.Lock()
		delete(l.deleting, it)
		l.mu.Unlock()
	}()
	if err := l.answered(ctx, it); err != nil {
		return err
	}
	if f, ok := l.issuer(ref).(certificate.Forgetter); ok {
		if err := f.Forget(ctx, namespace, name); err != nil {
			return fmt.Errorf("telling %s that request %s goes: %w", describeRef(ref), key(namespace, name), err)
		}
	}
	obj := object{KindRequest, namespace, name}
	l.beginWrite(obj)
	err := l.cfg.Store.Requests().Delete(ctx, namespace, name)
	l.endDelete(obj, owner, err)
	return ignore(err, ErrNotFound)
}

// staleRetry is how soon a request read at the version its last answer
// wrote over is looked at again, should the write's watch event not
// come first.
const staleRetry = time.Second

// staleRead reports a read of a request that still shows the version its
// last answer wrote over (a store whose reads lag); a read that shows
// another ends the watch for it.
func (l *Loop) staleRead(it item, r *certificate.CertificateRequest) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	over, ok := l.wroteOver[it]
	if ok && over != r.ResourceVersion {
		delete(l.wroteOver, it)
		return false
	}
	return ok
}

// answered waits until no answer of the request it is in flight.
func (l *Loop) answered(ctx context.Context, it item) error {
	l.mu.Lock()
	done := l.inFlight[it]
	l.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// wrote queues what the loop's own write concerns, when the store does
// not report writes itself.
func (l *Loop) wrote(kind Kind, namespace, name, ownerUID string) {
	if !l.watching {
		l.changed(Change{Kind: kind, Namespace: namespace, Name: name, Meta: certificate.ObjectMeta{Namespace: namespace, Name: name, OwnerUID: ownerUID}})
	}
}

// writeSecret writes data as the secret name's data, owned by ownerUID,
// merging labels and annotations into what the secret has, and only over
// the version the decision read (rv; empty: it read none): a secret the
// decision did not see is never written.
func (l *Loop) writeSecret(ctx context.Context, c *certificate.Certificate, name, ownerUID, rv string, data map[string][]byte, labels, annotations map[string]string) error {
	secrets := l.cfg.Store.Secrets()
	sec, err := secrets.Get(ctx, c.Namespace, name)
	switch {
	case errors.Is(err, ErrNotFound) && rv != "":
		return fmt.Errorf("secret %s was read at version %s and is gone: %w", name, rv, ErrConflict)
	case errors.Is(err, ErrNotFound):
		sec = &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Name: name, Namespace: c.Namespace}}
	case err != nil:
		return err
	case rv == "":
		// Made since the decision found none, by someone else: the next
		// decision reads it, and judges whether it may be written.
		return fmt.Errorf("secret %s exists, but the decision found none: %w", name, ErrConflict)
	case sec.ResourceVersion != rv:
		return fmt.Errorf("secret %s is at version %s, the decision read %s: %w", name, sec.ResourceVersion, rv, ErrConflict)
	}
	sec.OwnerUID = ownerUID
	sec.Labels = mergeInto(sec.Labels, labels)
	sec.Annotations = mergeInto(sec.Annotations, annotations)
	sec.Data = data
	obj := object{KindSecret, c.Namespace, name}
	l.beginWrite(obj)
	var made *certificate.Secret
	if sec.ResourceVersion == "" {
		made, err = secrets.Create(ctx, sec)
		if errors.Is(err, ErrAlreadyExists) {
			err = fmt.Errorf("secret %s was made since the decision found none: %w", name, ErrConflict)
		}
	} else {
		made, err = secrets.Update(ctx, sec)
	}
	l.endWrite(obj, certItem(c), made, err)
	if err == nil {
		l.wrote(KindSecret, c.Namespace, name, ownerUID)
	}
	return err
}

func mergeInto(dst, src map[string]string) map[string]string {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		dst = map[string]string{}
	}
	maps.Copy(dst, src)
	return dst
}

// privateKey reads tls.key of a secret.
func (l *Loop) privateKey(ctx context.Context, namespace, name string) (crypto.Signer, error) {
	sec, err := l.cfg.Store.Secrets().Get(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return keys.DecodePrivateKey(sec.Data[keys.SecretPrivateKey])
}

// forgetUID records that the certificate it now has the UID uid ("": it
// is gone) and returns the UID it had before, when that was another.
func (l *Loop) forgetUID(it item, uid string) (old string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	old = l.certUIDs[it]
	if old == uid {
		return ""
	}
	delete(l.uids, old)
	if uid == "" {
		delete(l.certUIDs, it)
	} else {
		l.certUIDs[it] = uid
		l.uids[uid] = it
	}
	return old
}

// removeOwnedBy removes what the certificate whose UID the item names
// owned, and tries again later when that fails.
func (l *Loop) removeOwnedBy(ctx context.Context, it item, now time.Time) {
	if err := l.removeOwned(ctx, it.namespace, it.name); err != nil {
		next := l.failed(it, now, err)
		l.observe(Event{Time: now, Kind: KindCertificate, Namespace: it.namespace, Next: next,
			Err: fmt.Errorf("removing what deleted certificate %s owned (tried again at %s): %w", it.name, next.UTC().Format(time.RFC3339), err)})
		return
	}
	l.succeeded(it)
}

// removeOwned removes what the certificate with that UID owned: its
// requests (their issuers told) and its next private keys. Its secret
// stays, as a deleted Kubernetes Certificate's does.
func (l *Loop) removeOwned(ctx context.Context, namespace, uid string) error {
	reqs, err := l.cfg.Store.Requests().List(ctx, ListOptions{Namespace: namespace, OwnerUID: uid})
	for _, r := range reqs {
		err = errors.Join(err, l.deleteRequest(ctx, r.Namespace, r.Name, r.Spec.IssuerRef, item{}))
	}
	secs, lerr := l.cfg.Store.Secrets().List(ctx, ListOptions{Namespace: namespace, OwnerUID: uid})
	err = errors.Join(err, lerr)
	for _, s := range secs {
		if s.Labels[certificate.LabelNextPrivateKey] == "true" {
			err = errors.Join(err, ignore(l.cfg.Store.Secrets().Delete(ctx, s.Namespace, s.Name), ErrNotFound))
		}
	}
	return err
}

// answer hands a request to the issuer its issuerRef names and writes the
// status it leaves back, when it changed; it looks again when the issuer
// asks.
func (l *Loop) answer(ctx context.Context, it item, now time.Time) (ev Event, acted bool) {
	ev = Event{Time: now, Kind: KindRequest, Namespace: it.namespace, Name: it.name}
	l.mu.Lock()
	if l.goingAway(it) {
		l.mu.Unlock()
		return ev, false
	}
	done := make(chan struct{})
	l.inFlight[it] = done
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.inFlight, it)
		l.mu.Unlock()
		close(done)
	}()
	reqs := l.cfg.Store.Requests()
	r, err := reqs.Get(ctx, it.namespace, it.name)
	switch {
	case errors.Is(err, ErrNotFound):
		l.succeeded(it) // nothing left to retry
		return ev, false
	case err != nil:
		ev.Err = err
		ev.Next = l.failed(it, now, err)
		return ev, true
	case l.staleRead(it, r):
		// The store's read still shows the version the last answer
		// wrote over: the issuer would work on what it has already
		// answered, and the write would be refused. The write's watch
		// event queues it again; staleRetry is the backstop.
		next := now.Add(staleRetry)
		l.enqueue(it, next)
		ev.Next = next
		return ev, false
	case certificate.Answered(r):
		l.succeeded(it)
		return ev, false
	}
	iss := l.issuer(r.Spec.IssuerRef)
	if iss == nil {
		return // not ours: whoever serves its issuer answers it
	}
	l.mu.Lock()
	if l.goingAway(it) {
		// Its issuer was told to forget it: answering would start the
		// work again (an ACME order for names nobody wants).
		l.mu.Unlock()
		return ev, false
	}
	l.refs[it] = r.Spec.IssuerRef
	l.mu.Unlock()
	before, _ := json.Marshal(r.Status)
	next, aerr := iss.Answer(ctx, r, now)
	if _, ok := iss.(certificate.Sweeper); ok {
		// What the issuer keeps changed: its next sweep may be due sooner
		// than the last one said.
		sw := item{kind: KindIssuer, name: describeRef(r.Spec.IssuerRef)}
		if l.queuedAt(sw).IsZero() {
			l.enqueue(sw, now)
		}
	}
	ev.Request = r
	if after, _ := json.Marshal(r.Status); !bytes.Equal(before, after) {
		l.writingSelf(it, true)
		made, err := reqs.Update(ctx, r)
		if err == nil && !l.authoritative && made != nil && made.ResourceVersion != r.ResourceVersion {
			l.mu.Lock()
			l.wroteOver[it] = r.ResourceVersion
			l.mu.Unlock()
		}
		if err == nil {
			l.wrote(KindRequest, r.Namespace, r.Name, r.OwnerUID)
		}
		l.writingSelf(it, false)
		if err != nil {
			ev.Err = errors.Join(aerr, err)
			ev.Next = l.failed(it, now, err)
			return ev, true
		}
	}
	switch {
	case aerr != nil && ctx.Err() != nil:
		ev.Err = aerr // shutting down: looked at again after the restart
	case aerr != nil:
		ev.Err = aerr
		if next.IsZero() {
			next = l.failed(it, now, aerr)
		} else {
			l.enqueue(it, next)
		}
	default:
		l.succeeded(it)
		if !next.IsZero() {
			l.enqueue(it, next)
		}
	}
	ev.Next = l.queuedAt(it)
	return ev, true
}

// sweep calls an issuer's Sweep and queues the next at the time it
// returns; a failed sweep is tried again after the usual delays.
func (l *Loop) sweep(ctx context.Context, it item, now time.Time) {
	var sw certificate.Sweeper
	for ref, iss := range l.issuers {
		if describeRef(ref) == it.name {
			sw, _ = iss.(certificate.Sweeper)
		}
	}
	if sw == nil {
		return
	}
	next, err := sw.Sweep(ctx, now)
	if err != nil {
		l.failed(it, now, err)
		l.observe(Event{Time: now, Kind: KindIssuer, Name: it.name, Err: fmt.Errorf("sweeping %s: %w", it.name, err), Next: l.queuedAt(it)})
		return
	}
	l.succeeded(it)
	if !next.IsZero() {
		l.enqueue(it, next)
	}
}

func (l *Loop) writingSelf(it item, writing bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if writing {
		l.self[it] = true
	} else {
		delete(l.self, it)
	}
}

func (l *Loop) issuer(ref certificate.IssuerRef) certificate.Issuer {
	ref = ref.WithDefaults()
	if iss, ok := l.issuers[ref]; ok {
		return iss
	}
	if l.cfg.IssuerFor != nil {
		return l.cfg.IssuerFor(ref)
	}
	return nil
}

// Retries of a pass that failed: a conflict is retried at once a few
// times (someone else wrote; the next read sees it), then, like any other
// error, after a delay that doubles from retryMin to retryMax.
const (
	conflictRetries = 3
	retryMin        = time.Second
	retryMax        = 5 * time.Minute
)

// failed records a failed pass and queues it again; it returns when.
func (l *Loop) failed(it item, now time.Time, err error) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failures[it]++
	n := l.failures[it]
	at := now
	if !errors.Is(err, ErrConflict) || n > conflictRetries {
		d := retryMin
		for i := 1; i < n && d < retryMax; i++ {
			d *= 2
		}
		at = now.Add(min(d, retryMax))
	}
	l.push(it, at)
	return at
}

func (l *Loop) succeeded(it item) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.failures, it)
}

func (l *Loop) observe(ev Event) {
	if l.cfg.Observe != nil {
		l.cfg.Observe(ev)
	}
}

func ignore(err, ok error) error {
	if errors.Is(err, ok) {
		return nil
	}
	return err
}

// schedule is the loop's queue: each item at the earliest time it was
// asked for, in a heap by time. An item asked for again later keeps its
// earlier time; one asked for sooner moves up.
type schedule struct {
	entries []entry
	index   map[item]int // where each item is in entries
	// requests counts the requests queued.
	requests int
}

type entry struct {
	at time.Time
	it item
}

func (s *schedule) Len() int           { return len(s.entries) }
func (s *schedule) Less(i, j int) bool { return s.entries[i].at.Before(s.entries[j].at) }
func (s *schedule) Swap(i, j int) {
	s.entries[i], s.entries[j] = s.entries[j], s.entries[i]
	s.index[s.entries[i].it], s.index[s.entries[j].it] = i, j
}
func (s *schedule) Push(x any) {
	e := x.(entry)
	s.index[e.it] = len(s.entries)
	s.entries = append(s.entries, e)
}
func (s *schedule) Pop() any {
	e := s.entries[len(s.entries)-1]
	s.entries = s.entries[:len(s.entries)-1]
	delete(s.index, e.it)
	return e
}

func (s *schedule) add(it item, t time.Time) {
	if s.index == nil {
		s.index = map[item]int{}
	}
	if i, ok := s.index[it]; ok {
		if t.Before(s.entries[i].at) {
			s.entries[i].at = t
			heap.Fix(s, i)
		}
		return
	}
	if it.kind == KindRequest {
		s.requests++
	}
	heap.Push(s, entry{t, it})
}

// remove takes it off the schedule, when it is on it.
func (s *schedule) remove(it item) {
	i, ok := s.index[it]
	if !ok {
		return
	}
	if it.kind == KindRequest {
		s.requests--
	}
	heap.Remove(s, i)
}

// when is the time it is queued for.
func (s *schedule) when(it item) (time.Time, bool) {
	i, ok := s.index[it]
	if !ok {
		return time.Time{}, false
	}
	return s.entries[i].at, true
}

// peek is the earliest time anything is queued for.
func (s *schedule) peek() (time.Time, bool) {
	if len(s.entries) == 0 {
		return time.Time{}, false
	}
	return s.entries[0].at, true
}

// popDue removes and returns every item due at now.
func (s *schedule) popDue(now time.Time) []item {
	var due []item
	for len(s.entries) > 0 && !s.entries[0].at.After(now) {
		e := heap.Pop(s).(entry)
		if e.it.kind == KindRequest {
			s.requests--
		}
		due = append(due, e.it)
	}
	return due
}

// settableClock is a fake clock the loop can move: k8s.io/utils/clock/
// testing's FakeClock is one.
type settableClock interface {
	SetTime(time.Time)
}

// Advance drives the loop on a fake clock (Config.Clock must have a
// SetTime method, as k8s.io/utils/clock/testing's FakeClock does) until
// end: it moves the clock to each time something is due, and steps. While
// an issuer has asked to be called again for a request, it moves the
// clock no faster than real time, so that an issuer working against a
// real server (an ACME server validating on its own clock) sees its polls
// and retries spaced as they would be; between issuances the clock jumps.
// It returns at end, or with an error when it took more than maxReal of
// real time (zero means a minute).
func (l *Loop) Advance(ctx context.Context, end time.Time, maxReal time.Duration) error {
	clk, ok := l.clock.(settableClock)
	if !ok {
		return fmt.Errorf("host: Advance needs a clock it can set; Config.Clock is a %T", l.clock)
	}
	if maxReal <= 0 {
		maxReal = time.Minute
	}
	deadline := time.Now().Add(maxReal)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("host: advancing to %v took more than %v of real time (at %v)", end, maxReal, l.clock.Now())
		}
		next, ok := l.Next()
		if !ok || next.After(end) {
			if end.After(l.clock.Now()) {
				clk.SetTime(end)
			}
			_, err := l.Step(ctx)
			return err
		}
		if now := l.clock.Now(); next.After(now) {
			if wait := next.Sub(now); l.answering() && wait < time.Minute {
				timer := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					timer.Stop()
					return ctx.Err()
				case <-timer.C:
				}
			}
			clk.SetTime(next)
		}
		if _, err := l.Step(ctx); err != nil {
			return err
		}
	}
}

// answering reports whether an issuer asked to be called again for a
// request: an issuance is in flight.
func (l *Loop) answering() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.queue.requests > 0
}

// goingAway reports a request the loop is deleting, or has deleted while
// its store's reads may still show it; l.mu is held.
func (l *Loop) goingAway(it item) bool {
	if l.deleting[it] {
		return true
	}
	e := l.pending[object{KindRequest, it.namespace, it.name}]
	return e != nil && e.done && e.deleted && l.clock.Now().Before(e.until)
}

// object names one object of the store.
type object struct {
	kind            Kind
	namespace, name string
}

// expectation is one of the loop's own writes that a store whose reads
// lag (a Watcher that is not Authoritative) has not shown yet: the
// certificate whose pass made it is not decided on again (a request
// whose deletion no certificate waits for, not answered again) until the
// store's watch reports it, or until a minute has passed.
type expectation struct {
	// cert is the item that waits: a certificate, or a request deleted
	// after its certificate went.
	cert item
	// done: the write returned, and rv (or the deletion) is what the
	// watch must show.
	done    bool
	rv      string
	deleted bool
	until   time.Time
	// What the watch showed while the write was under way: a store may
	// report a write before the write returns.
	sawRV      string
	sawDeleted bool
}

// expectTimeout is how long the loop waits for a store's watch to show
// one of its own writes before it decides on the certificate anyway.
const expectTimeout = time.Minute

func certItem(c *certificate.Certificate) item {
	return item{KindCertificate, c.Namespace, c.Name}
}

func (l *Loop) beginWrite(obj object) {
	if !l.expecting {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending[obj] = &expectation{}
}

// endWrite records what a create or update left (made, as the store
// returned it), for the certificate cert to wait for.
func (l *Loop) endWrite(obj object, cert item, made interface {
	Meta() *certificate.ObjectMeta
}, err error) {
	rv := ""
	if err == nil && made != nil && !isNilObject(made) {
		rv = made.Meta().ResourceVersion
	}
	l.expect(obj, cert, rv, false, err)
}

// isNilObject reports a nil *Certificate, *Secret or *CertificateRequest
// held in an interface.
func isNilObject(o any) bool {
	switch v := o.(type) {
	case *certificate.Certificate:
		return v == nil
	case *certificate.Secret:
		return v == nil
	case *certificate.CertificateRequest:
		return v == nil
	}
	return false
}

// endDelete records a deletion, for the certificate cert to wait for.
func (l *Loop) endDelete(obj object, cert item, err error) { l.expect(obj, cert, "", true, err) }

func (l *Loop) expect(obj object, cert item, rv string, deleted bool, err error) {
	if !l.expecting {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.pending[obj]
	if e == nil {
		return
	}
	if err != nil || cert == (item{}) || (!deleted && rv == "") || (deleted && e.sawDeleted) || (!deleted && e.sawRV == rv) {
		delete(l.pending, obj) // nothing to wait for, or shown already
		return
	}
	e.cert, e.done, e.rv, e.deleted, e.until = cert, true, rv, deleted, l.clock.Now().Add(expectTimeout)
}

// shown fulfils the expectation a watch event matches.
func (l *Loop) shown(ch Change) {
	if !l.expecting {
		return
	}
	obj := object{ch.Kind, ch.Namespace, ch.Name}
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.pending[obj]
	switch {
	case e == nil:
	case !e.done && ch.Deleted:
		e.sawDeleted = true
	case !e.done:
		e.sawRV = ch.Meta.ResourceVersion
	case e.deleted && ch.Deleted, !e.deleted && !ch.Deleted && ch.Meta.ResourceVersion == e.rv:
		delete(l.pending, obj)
	}
}

// waitingFor reports a certificate with writes of its last pass the store
// does not show yet, and until when the loop waits for them.
func (l *Loop) waitingFor(it item, now time.Time) (until time.Time, waiting bool) {
	if !l.expecting {
		return time.Time{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for obj, e := range l.pending {
		if !e.done || e.cert != it {
			continue
		}
		if !now.Before(e.until) {
			delete(l.pending, obj)
			continue
		}
		if !waiting || e.until.Before(until) {
			until, waiting = e.until, true
		}
	}
	return until, waiting
}
