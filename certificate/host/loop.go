package host

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/certlife/certlife/certificate"
)

// Loop drives a Reconciler for a host that has no queue of its own: it
// keeps one, fed by the Store's watch (Watcher), by the passes' own
// writes, by the times the passes name and by Notify, and makes each pass
// when it is due. One goroutine drives it — Run on the clock's own time,
// or Step (with the drivers of package hosttest) on a fake clock — and
// owns all its state; Notify, the store's watch and, under Run, the
// issuers' answers (each issuer's on a goroutine of its own) only hand it
// changes. See the package documentation for its duties in full.
type Loop struct {
	r        *Reconciler
	watching bool
	resync   time.Duration

	// Owned by the goroutine that drives the loop.
	queue    schedule
	failures map[item]int
	owners   map[string]item                // certificate UID → the certificate
	refs     map[item]certificate.IssuerRef // requests seen → their issuers
	dropped  map[item]bool                  // requests deleted during this step
	hold     item                           // not queued by follow: its pass failed
	uids     map[item]string                // the certificate → its UID, as last seen
	// own are, per object, the versions the loop's own writes made
	// (deletedMark for a deletion), oldest first, whose watch events
	// have not come: those events are not changes to follow.
	own        map[object][]string
	started    bool
	syncWait   bool // the first Step found the store not synced
	nextResync time.Time

	// Under Run, request passes run on a goroutine per issuer (async), so
	// that a slow issuer holds up only its own requests: busy are the
	// issuers with a pass in flight, waiting the requests due meanwhile,
	// flying how many passes are in flight.
	async   bool
	busy    map[certificate.IssuerRef]bool
	waiting map[certificate.IssuerRef][]item
	flying  int
	workers sync.WaitGroup

	// Requests whose issuer waits for a secret to be written
	// (Event.AwaitedSecret): awaiting are the requests per secret,
	// awaits the secret of each. writes counts the secret writes seen;
	// secretWrites keeps, while request passes are in flight (startedAt
	// records when each began, by issuer), the count at each secret's
	// last write, so that a pass that read a secret before it was
	// written does not wait for a write that has been.
	awaiting     map[object]map[item]bool
	awaits       map[item]object
	writes       uint64
	secretWrites map[object]uint64
	startedAt    map[certificate.IssuerRef]uint64

	// The inbox: changes from the store's watch and Notify, and request
	// passes that finished, from any goroutine.
	mu       sync.Mutex
	inbox    []Change
	finished []finished
	wake     chan struct{}
}

// finished is a request pass that ran on its issuer's goroutine.
type finished struct {
	it     item
	ref    certificate.IssuerRef
	at     time.Time
	writes uint64 // Loop.writes when the pass began
	ev     Event
	err    error
}

// kindForget is telling the issuer of a request that someone else
// deleted that it is gone.
const kindForget Kind = "forget"

// request is the request item of a kindForget item.
func (it item) request() item { return item{KindRequest, it.namespace, it.name} }

// kindOwned is the removal of what a certificate that is gone owned: its
// item's name is the certificate's UID.
const kindOwned Kind = "owned"

// item is something the loop looks at: a certificate to decide on, a
// request to hand to its issuer, the issuers to sweep (KindIssuer), or
// what a gone certificate owned, to remove (kindOwned).
type item struct {
	kind            Kind
	namespace, name string
}

func (it item) String() string { return string(it.kind) + " " + key(it.namespace, it.name) }

var sweepItem = item{kind: KindIssuer}

// New returns a Loop over a new Reconciler of cfg: NewLoop(NewReconciler(cfg)).
func New(cfg Config) (*Loop, error) {
	r, err := NewReconciler(cfg)
	if err != nil {
		return nil, err
	}
	return NewLoop(r), nil
}

// NewLoop returns a loop that drives r. It reads nothing yet: the first
// Step (or Run) lists what the store holds and queues it.
func NewLoop(r *Reconciler) *Loop {
	l := &Loop{r: r, failures: map[item]int{}, owners: map[string]item{}, uids: map[item]string{}, refs: map[item]certificate.IssuerRef{}, dropped: map[item]bool{},
		own: map[object][]string{}, wake: make(chan struct{}, 1),
		busy: map[certificate.IssuerRef]bool{}, waiting: map[certificate.IssuerRef][]item{},
		awaiting: map[object]map[item]bool{}, awaits: map[item]object{}, secretWrites: map[object]uint64{}, startedAt: map[certificate.IssuerRef]uint64{}}
	r.holdOnConflict = true
	st := r.cfg.Store
	if ryw, ok := st.(*ReadYourWrites); ok {
		st = ryw.Unwrap()
	}
	if w, ok := st.(Watcher); ok {
		l.watching = true
		w.Watch(l.post)
	}
	switch {
	case r.cfg.Resync > 0:
		l.resync = r.cfg.Resync
	case r.cfg.Resync == 0 && !l.watching:
		l.resync = time.Hour
	}
	return l
}

// Reconciler is the loop's Reconciler.
func (l *Loop) Reconciler() *Reconciler { return l.r }

// Notify queues the object for now, as a write to it does in a store
// that is a Watcher: call it after changing the store behind the loop's
// back when the store does not report its writes. Kind is
// KindCertificate, KindSecret or KindRequest. Safe from any goroutine.
func (l *Loop) Notify(kind Kind, namespace, name string) {
	l.post(Change{Kind: kind, Namespace: namespace, Name: name, Meta: certificate.ObjectMeta{Namespace: namespace, Name: name}})
}

// post hands a change to the loop's goroutine.
func (l *Loop) post(ch Change) {
	l.mu.Lock()
	l.inbox = append(l.inbox, ch)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Next is when the loop next has something to do; ok is false when
// nothing is queued. Before the first Step, and while changes wait to be
// taken in, it is now.
func (l *Loop) Next() (t time.Time, ok bool) {
	l.mu.Lock()
	waiting := len(l.inbox) > 0 || len(l.finished) > 0
	l.mu.Unlock()
	if !l.started && l.syncWait {
		return l.r.Now().Add(syncPoll), true
	}
	if !l.started || waiting {
		return l.r.Now(), true
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
	l.takeIn(context.Background())
	return l.queue.when(item{kind, namespace, name})
}

// Answering reports whether an issuer has asked to be called again for a
// request: an issuance is in flight.
func (l *Loop) Answering() bool { return l.queue.requests > 0 || l.flying > 0 }

// Step looks at everything due at the clock's time — what deleted
// certificates owned first, then requests, then certificates, each once,
// in name order, then the issuers' sweep — and returns how many it looked
// at. Requests go before certificates so that a certificate whose request
// was just made is looked at with the issuer's answer, not once before
// it. What they queue for now is left for the next Step. The first Step
// lists the store and queues every certificate and unanswered request.
// An error is a failure to list the store (or ctx's end); a failed pass
// is queued again and reported through Config.Observe.
func (l *Loop) Step(ctx context.Context) (int, error) {
	now := l.r.Now()
	if !l.started && !l.r.HasSynced() {
		// Nothing is read before the store shows what was written
		// before the start: the changes wait in the inbox, and are
		// taken in after the first list.
		if !l.syncWait {
			l.syncWait = true
			l.r.observe(Event{Time: now, Next: now.Add(syncPoll), Warning: fmt.Errorf("host: waiting to list the store: %w", ErrNotSynced)})
		}
		return 0, nil
	}
	l.syncWait = false
	if err := l.start(ctx, now); err != nil {
		return 0, err
	}
	l.takeIn(ctx)
	due := l.queue.popDue(now)
	rank := map[Kind]int{kindOwned: 0, kindForget: 0, KindRequest: 1, KindCertificate: 2, KindIssuer: 3}
	slices.SortFunc(due, func(a, b item) int {
		if a.kind != b.kind {
			return rank[a.kind] - rank[b.kind]
		}
		return strings.Compare(key(a.namespace, a.name), key(b.namespace, b.name))
	})
	clear(l.dropped)
	for _, it := range due {
		if l.dropped[it] {
			continue // deleted by an earlier pass of this step
		}
		if ctx.Err() != nil {
			l.queue.add(it, now) // not looked at: still due
			continue
		}
		l.pass(ctx, it, now)
		l.takeIn(ctx)
	}
	return len(due), ctx.Err()
}

// pass looks at one item and queues it again as its pass says.
func (l *Loop) pass(ctx context.Context, it item, now time.Time) {
	switch it.kind {
	case KindCertificate:
		ev, err := l.r.certificatePass(ctx, it.namespace, it.name)
		if ev.Result == nil && err == nil {
			// Gone: what it owned goes too.
			if uid := l.uids[it]; uid != "" {
				delete(l.uids, it)
				delete(l.owners, uid)
				l.queue.add(item{kindOwned, it.namespace, uid}, now)
			}
		}
		l.done(it, now, ev.Next, err)
		if err != nil {
			// A pass that failed is retried when done said, not at once
			// because of the writes it made before it failed: a pass that
			// keeps failing would otherwise go round at once, forever.
			l.hold = it
		}
		l.follow(ctx, ev.Writes, false)
		l.hold = item{}
		ev.Next, _ = l.queue.when(it) // its own writes may have queued it sooner
		l.r.observeIf(ev)
	case KindRequest:
		if l.async {
			l.dispatch(ctx, it, now)
			return
		}
		writes := l.writes
		ev, err := l.r.requestPass(ctx, it.namespace, it.name)
		l.answered(ctx, it, now, writes, ev, err)
	case KindIssuer:
		next, err := l.r.Sweep(ctx)
		if err != nil {
			at := l.failed(it, now, err)
			l.r.observe(Event{Time: now, Kind: KindIssuer, Next: at, Err: err})
			return
		}
		l.done(it, now, next, nil)
	case kindForget:
		ref, ok := l.refs[it.request()]
		if !ok {
			return
		}
		if err := l.r.Forget(ctx, ref, it.namespace, it.name); err != nil {
			at := l.failed(it, now, err)
			l.r.observe(Event{Time: now, Kind: KindRequest, Namespace: it.namespace, Name: it.name, Next: at, Err: err})
			return
		}
		delete(l.refs, it.request())
		delete(l.failures, it)
	case kindOwned:
		writes, err := l.r.removeOwned(ctx, it.namespace, it.name)
		l.follow(ctx, writes, false)
		if err != nil {
			at := l.failed(it, now, err)
			l.r.observe(Event{Time: now, Kind: KindCertificate, Namespace: it.namespace, Next: at,
				Err: fmt.Errorf("removing what deleted certificate UID %s owned (tried again at %s): %w", it.name, at.UTC().Format(time.RFC3339), err)})
			return
		}
		delete(l.failures, it)
	}
}

// answered takes in a request pass that ran at now, begun when
// Loop.writes was writes.
func (l *Loop) answered(ctx context.Context, it item, now time.Time, writes uint64, ev Event, err error) {
	if ev.Request != nil {
		l.refs[it] = ev.Request.Spec.IssuerRef
	}
	l.unawait(it)
	if !ev.AwaitedSecret.IsZero() {
		o := object{KindSecret, ev.AwaitedSecret.Namespace, ev.AwaitedSecret.Name}
		if w, ok := l.secretWrites[o]; ok && w > writes {
			// Written while the pass ran: it may have read it before.
			l.queue.add(it, l.r.Now())
		} else {
			if l.awaiting[o] == nil {
				l.awaiting[o] = map[item]bool{}
			}
			l.awaiting[o][it] = true
			l.awaits[it] = o
		}
	}
	if ev.Request != nil && l.r.sweeps() {
		// What the issuer keeps changed: its next sweep may be due
		// sooner than the last one said.
		if _, queued := l.queue.when(sweepItem); !queued {
			l.queue.add(sweepItem, now)
		}
	}
	l.done(it, now, ev.Next, err)
	l.follow(ctx, ev.Writes, true)
	ev.Next, _ = l.queue.when(it)
	l.r.observeIf(ev)
}

// dispatch runs a request pass on a goroutine of its own, unless its
// issuer has one in flight: then it waits for that one to finish. The
// result comes back through the inbox (finish).
func (l *Loop) dispatch(ctx context.Context, it item, now time.Time) {
	ref, ok := l.refs[it]
	if !ok {
		// A request the loop has not read yet (one a pass just made):
		// its issuer is in its spec.
		if req, err := l.r.store.Requests().Get(ctx, it.namespace, it.name); err == nil {
			ref = req.Spec.IssuerRef
			l.refs[it] = ref
		}
	}
	ref = ref.WithDefaults()
	if l.busy[ref] {
		l.waiting[ref] = append(l.waiting[ref], it)
		return
	}
	l.busy[ref] = true
	l.flying++
	writes := l.writes
	l.startedAt[ref] = writes
	l.workers.Add(1)
	go func() {
		defer l.workers.Done()
		ev, err := l.r.requestPass(ctx, it.namespace, it.name)
		l.mu.Lock()
		l.finished = append(l.finished, finished{it: it, ref: ref, at: now, writes: writes, ev: ev, err: err})
		l.mu.Unlock()
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}()
}

// finish takes in request passes that finished on their issuers'
// goroutines, and queues the requests that waited for them.
func (l *Loop) finish(ctx context.Context, fs []finished) {
	now := l.r.Now()
	for _, f := range fs {
		l.flying--
		delete(l.busy, f.ref)
		delete(l.startedAt, f.ref)
		for _, w := range l.waiting[f.ref] {
			l.queue.add(w, now)
		}
		delete(l.waiting, f.ref)
		l.answered(ctx, f.it, f.at, f.writes, f.ev, f.err)
	}
	if len(fs) > 0 {
		l.pruneSecretWrites()
	}
}

// pruneSecretWrites drops the secret writes that no pass in flight began
// before.
func (l *Loop) pruneSecretWrites() {
	if len(l.startedAt) == 0 {
		clear(l.secretWrites)
		return
	}
	oldest := l.writes
	for _, w := range l.startedAt {
		oldest = min(oldest, w)
	}
	for o, w := range l.secretWrites {
		if w <= oldest {
			delete(l.secretWrites, o)
		}
	}
}

// unawait drops what it waited for.
func (l *Loop) unawait(it item) {
	o, ok := l.awaits[it]
	if !ok {
		return
	}
	delete(l.awaits, it)
	delete(l.awaiting[o], it)
	if len(l.awaiting[o]) == 0 {
		delete(l.awaiting, o)
	}
}

// secretWritten queues at once the requests that waited for the secret.
func (l *Loop) secretWritten(namespace, name string, now time.Time) {
	o := object{KindSecret, namespace, name}
	l.writes++
	if l.flying > 0 {
		l.secretWrites[o] = l.writes
	}
	for it := range l.awaiting[o] {
		delete(l.awaits, it)
		l.queue.add(it, now)
	}
	delete(l.awaiting, o)
}

// done queues an item after a pass: at next when it succeeded, or after
// the usual delays when it failed (at next, when the pass named one).
func (l *Loop) done(it item, now, next time.Time, err error) {
	switch {
	case err != nil && cancelled(err):
		// Shutting down: looked at again after the restart.
	case err != nil && !next.IsZero() && !errors.Is(err, ErrConflict):
		l.failures[it]++
		l.queue.add(it, next)
	case err != nil:
		l.failed(it, now, err)
	default:
		delete(l.failures, it)
		if !next.IsZero() {
			l.queue.add(it, next)
		}
	}
}

// cancelled reports an error of a context's end.
func cancelled(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// follow queues what a pass's own writes concern. A request pass's
// write of its request's status does not queue the request again (its
// issuer said when to look again), and a request the pass deleted is not
// looked at again (its issuer was told): the watch events of those
// writes, when they come, are taken for what they are.
func (l *Loop) follow(ctx context.Context, writes []Change, requestPass bool) {
	for _, ch := range writes {
		if l.watching {
			// Its watch event, when it comes, has been followed here.
			o := object{ch.Kind, ch.Namespace, ch.Name}
			rv := ch.Meta.ResourceVersion
			if ch.Deleted {
				rv = deletedMark
			}
			vs := append(l.own[o], rv)
			if len(vs) > maxOwn {
				vs = vs[len(vs)-maxOwn:]
			}
			l.own[o] = vs
		}
		switch {
		case ch.Kind == KindRequest && ch.Deleted:
			it := item{KindRequest, ch.Namespace, ch.Name}
			delete(l.refs, it) // told already
			delete(l.failures, it)
			l.unawait(it)
			l.queue.remove(it) // nothing left to answer
			l.dropped[it] = true
			l.queueOwner(ch.Meta.OwnerUID)
		case requestPass && ch.Kind == KindRequest:
			l.queueOwner(ch.Meta.OwnerUID)
		default:
			l.concerns(ctx, ch)
		}
	}
}

// maxOwn bounds the versions kept per object in Loop.own: a store that
// folds events drops some, and an event not recognised costs one pass.
const maxOwn = 8

// deletedMark in Loop.own: the loop deleted the object.
const deletedMark = "\x00deleted"

// takeIn queues what the changes in the inbox concern.
func (l *Loop) takeIn(ctx context.Context) {
	for {
		l.mu.Lock()
		in, fs := l.inbox, l.finished
		l.inbox, l.finished = nil, nil
		l.mu.Unlock()
		if len(in) == 0 && len(fs) == 0 {
			return
		}
		for _, ch := range in {
			l.changed(ctx, ch)
		}
		l.finish(ctx, fs)
	}
}

// changed queues what a change concerns: the object itself when it is a
// certificate or a request, the certificates a secret or request belongs
// to, and what a deleted certificate owned.
func (l *Loop) changed(ctx context.Context, ch Change) {
	o := object{ch.Kind, ch.Namespace, ch.Name}
	if vs, ok := l.own[o]; ok {
		rv := ch.Meta.ResourceVersion
		if ch.Deleted {
			rv = deletedMark
		}
		if i := slices.Index(vs, rv); i >= 0 {
			// The watch showing one of the loop's own writes, followed
			// already; the events of those before it, folded, will not
			// come.
			if i == len(vs)-1 {
				delete(l.own, o)
			} else {
				l.own[o] = vs[i+1:]
			}
			return
		}
		if ch.Deleted {
			delete(l.own, o) // someone else's deletion: nothing of ours is to come
		}
	}
	l.concerns(ctx, ch)
}

// concerns queues what a change concerns (see changed).
func (l *Loop) concerns(ctx context.Context, ch Change) {
	now := l.r.Now()
	switch ch.Kind {
	case KindCertificate:
		it := item{KindCertificate, ch.Namespace, ch.Name}
		uid := ch.Meta.UID
		switch {
		case ch.Deleted && uid != "":
			delete(l.owners, uid)
			if l.uids[it] == uid {
				delete(l.uids, it)
			}
			l.enqueue(item{kindOwned, ch.Namespace, uid}, now)
		case uid != "":
			if old := l.uids[it]; old != "" && old != uid {
				// Deleted and made again under the same name.
				delete(l.owners, old)
				l.enqueue(item{kindOwned, ch.Namespace, old}, now)
			}
			l.uids[it] = uid
			l.owners[uid] = it
		}
		l.enqueue(it, now)
	case KindRequest:
		it := item{KindRequest, ch.Namespace, ch.Name}
		switch {
		case ch.Deleted:
			l.unawait(it)
			// Deleted by someone else: its issuer hears of it.
			if _, seen := l.refs[it]; seen {
				l.enqueue(item{kindForget, ch.Namespace, ch.Name}, now)
			}
		default:
			l.enqueue(it, now)
		}
		l.queueOwner(ch.Meta.OwnerUID)
	case KindSecret:
		if !ch.Deleted {
			l.secretWritten(ch.Namespace, ch.Name, now)
		}
		l.queueOwner(ch.Meta.OwnerUID)
		// The certificates that name the secret.
		certs, err := l.r.store.Certificates().List(ctx, ListOptions{Namespace: ch.Namespace, SecretName: ch.Name})
		if err != nil {
			// Not lost: the resync, or the next write, brings them.
			return
		}
		for _, c := range certs {
			l.enqueue(item{KindCertificate, c.Namespace, c.Name}, now)
		}
	}
}

func (l *Loop) queueOwner(uid string) {
	if uid == "" {
		return
	}
	if it, ok := l.owners[uid]; ok {
		l.enqueue(it, l.r.Now())
	}
}

// enqueue queues it at t, unless it is held.
func (l *Loop) enqueue(it item, t time.Time) {
	if it != l.hold {
		l.queue.add(it, t)
	}
}

// start lists the store once, and again at every resync: it queues every
// certificate and every unanswered request, and what deleted
// certificates owned for removal.
func (l *Loop) start(ctx context.Context, now time.Time) error {
	if l.started && (l.resync <= 0 || now.Before(l.nextResync)) {
		return nil
	}
	if !l.started {
		// What changed before the first list, the list shows.
		l.mu.Lock()
		l.inbox = nil
		l.mu.Unlock()
	}
	st := l.r.store
	certs, err := st.Certificates().List(ctx, ListOptions{})
	if err != nil {
		return fmt.Errorf("host: listing certificates: %w", err)
	}
	reqs, err := st.Requests().List(ctx, ListOptions{})
	if err != nil {
		return fmt.Errorf("host: listing requests: %w", err)
	}
	secrets, err := st.Secrets().List(ctx, ListOptions{})
	if err != nil {
		return fmt.Errorf("host: listing secrets: %w", err)
	}
	live := map[string]bool{}
	for _, c := range certs {
		it := item{KindCertificate, c.Namespace, c.Name}
		l.uids[it] = c.UID
		l.owners[c.UID] = it
		live[c.UID] = true
		l.queue.add(it, now)
	}
	for _, r := range reqs {
		l.refs[item{KindRequest, r.Namespace, r.Name}] = r.Spec.IssuerRef
		if !certificate.Answered(r) {
			l.queue.add(item{KindRequest, r.Namespace, r.Name}, now)
		}
		if r.OwnerUID != "" && !live[r.OwnerUID] {
			l.queue.add(item{kindOwned, r.Namespace, r.OwnerUID}, now)
		}
	}
	for _, sec := range secrets {
		if sec.OwnerUID != "" && !live[sec.OwnerUID] && sec.Labels[certificate.LabelNextPrivateKey] == "true" {
			l.queue.add(item{kindOwned, sec.Namespace, sec.OwnerUID}, now)
		}
	}
	if !l.started && l.r.sweeps() {
		l.queue.add(sweepItem, now)
	}
	l.started = true
	if l.resync > 0 {
		l.nextResync = now.Add(l.resync)
	}
	return nil
}

// Run steps the loop on the clock's time until ctx ends, sleeping until
// the next thing is due or a change (Notify, or a Watcher store's) wakes
// it. It returns ctx's error, once the issuers' answers in flight have
// returned. Config.Clock's timers are used when it has them
// (clock.Clock), the real clock's otherwise.
//
// Under Run, each issuer answers its requests on a goroutine of its own,
// one request at a time, and the loop takes the answer in when it comes:
// an issuer that is slow to answer (an ACME server that does not reply
// until its deadline) holds up its own requests only, not the other
// issuers' nor any certificate. Step, and the drivers of package
// hosttest, make every pass on the calling goroutine, in order.
func (l *Loop) Run(ctx context.Context) error {
	l.async = true
	defer func() {
		// Each issuer's pass in flight returns (ctx has ended); what it
		// did is taken in by the next Run or Step.
		l.workers.Wait()
		l.async = false
	}()
	for {
		if _, err := l.Step(ctx); err != nil && ctx.Err() == nil {
			// The store could not be listed: try again shortly.
			l.r.observe(Event{Time: l.r.Now(), Err: err, Next: l.r.Now().Add(storeRetry)})
			l.sleep(ctx, l.r.Now().Add(storeRetry))
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

// syncPoll is how often a Loop asks a Syncer store whether it synced,
// beside the watch events that end the wait sooner.
const syncPoll = time.Second

// storeRetry is how soon Run lists the store again after listing failed.
const storeRetry = 5 * time.Second

// sleep waits until t (forever when zero), a wake-up, or ctx's end.
func (l *Loop) sleep(ctx context.Context, t time.Time) {
	var fire <-chan time.Time
	if !t.IsZero() {
		d := t.Sub(l.r.Now())
		if d <= 0 {
			return
		}
		if clk, ok := l.r.clock.(clock.Clock); ok {
			timer := clk.NewTimer(d)
			defer timer.Stop()
			fire = timer.C()
		} else {
			timer := time.NewTimer(d)
			defer timer.Stop()
			fire = timer.C
		}
	}
	select {
	case <-ctx.Done():
	case <-l.wake:
	case <-fire:
	}
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
	l.queue.add(it, at)
	return at
}

// schedule is the loop's queue: each item at the earliest time it was
// asked for, in a heap by time. An item asked for again later keeps its
// earlier time; one asked for sooner moves up.
type schedule struct {
	entries []*entry
	index   map[item]*entry // each item's entry
	// requests counts the requests queued.
	requests int
}

// entry is an item on the schedule; i is its place in entries, so that
// the heap's swaps touch no map.
type entry struct {
	at time.Time
	it item
	i  int
}

func (s *schedule) Len() int           { return len(s.entries) }
func (s *schedule) Less(i, j int) bool { return s.entries[i].at.Before(s.entries[j].at) }
func (s *schedule) Swap(i, j int) {
	s.entries[i], s.entries[j] = s.entries[j], s.entries[i]
	s.entries[i].i, s.entries[j].i = i, j
}
func (s *schedule) Push(x any) {
	e := x.(*entry)
	e.i = len(s.entries)
	s.index[e.it] = e
	s.entries = append(s.entries, e)
}
func (s *schedule) Pop() any {
	n := len(s.entries) - 1
	e := s.entries[n]
	s.entries[n] = nil
	s.entries = s.entries[:n]
	delete(s.index, e.it)
	return e
}

func (s *schedule) add(it item, t time.Time) {
	if s.index == nil {
		s.index = map[item]*entry{}
	}
	if e, ok := s.index[it]; ok {
		if t.Before(e.at) {
			e.at = t
			heap.Fix(s, e.i)
		}
		return
	}
	if it.kind == KindRequest {
		s.requests++
	}
	heap.Push(s, &entry{at: t, it: it})
}

// remove takes it off the schedule, when it is on it.
func (s *schedule) remove(it item) {
	e, ok := s.index[it]
	if !ok {
		return
	}
	if it.kind == KindRequest {
		s.requests--
	}
	heap.Remove(s, e.i)
}

// when is the time it is queued for.
func (s *schedule) when(it item) (time.Time, bool) {
	e, ok := s.index[it]
	if !ok {
		return time.Time{}, false
	}
	return e.at, true
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
		e := heap.Pop(s).(*entry)
		if e.it.kind == KindRequest {
			s.requests--
		}
		due = append(due, e.it)
	}
	return due
}
