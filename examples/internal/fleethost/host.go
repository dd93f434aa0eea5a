package fleethost

import (
	"bytes"
	"container/list"
	"context"
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/utils/clock"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/examples/internal/host"
	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/renewal"
)

// Options configure a Host. Clock and Rand are required.
type Options struct {
	// Clock is the host's time: real, or fake in tests and the simulation.
	Clock clock.PassiveClock
	// Rand supplies key and signature randomness to package keys.
	Rand io.Reader
	// Lag is how long a write takes to show in reads (a stale informer
	// cache); zero means at once.
	Lag time.Duration
	// Config is the certificate controller's configuration.
	Config certificate.Config
	// CacheSize bounds the cache of parsed secrets and keys and compiled
	// specs (entries); zero means 128, negative turns it off. Only
	// certificates being worked on use it, so a small cache serves a large
	// fleet: in the fleet simulation, 32 entries per 5,000 certificates
	// miss only a quarter more often than 512 do, while each entry holds
	// about 3 KB.
	CacheSize int
	// Observe, when set, sees every certificate pass and request answer.
	Observe func(Event)
	// Crash, when set, is asked before each action of a pass whether the
	// host "crashes" there: the pass stops, the rest is not carried out,
	// and the certificate is looked at again after a restart delay (fault
	// injection for the simulation).
	Crash func(certificate string, action int) bool
	// ARI, when set, gives the CA's suggested renewal window for a
	// certificate's current leaf (from acmeclient.RenewalInfo, polled by
	// the host).
	ARI func(certificate string, leaf *x509.Certificate) *renewal.ARIWindow
	// RestartDelay after a crash; zero means 10s.
	RestartDelay time.Duration
}

// Event is one certificate pass, or one request answered.
type Event struct {
	Time time.Time
	// Certificate is set for a certificate pass: its state before the
	// pass.
	Certificate *certificate.Certificate
	// Result of Reconcile, for a certificate pass.
	Result *certificate.Result
	// Done are the actions carried out (all of Result.Actions unless an
	// error or a crash stopped the pass).
	Done []certificate.Action
	// Created names the requests this pass created. A CreateRequest that
	// met AlreadyExists (an earlier pass, unseen by a stale cache, made it)
	// is done but created nothing.
	Created []string
	// Crashed: the pass stopped at a simulated crash.
	Crashed bool
	// Request is set when an issuer answered a request: its new state.
	Request *certificate.CertificateRequest
	// Err stopped the pass.
	Err error
}

// Host runs certificates. It is one loop: not safe for concurrent use.
type Host struct {
	opts Options

	Certificates *host.Store[*certificate.Certificate]
	Secrets      *host.Store[*certificate.Secret]
	Requests     *host.Store[*certificate.CertificateRequest]

	queue   *host.Queue
	issuers map[string]Issuer

	// Indexes over the authoritative stores (a Kubernetes host uses its
	// informers' indexers).
	requestsOf *index // owner UID → request names
	keysOf     *index // owner UID → next-key secret names
	claimants  *index // secret name → certificate names

	cache    *lru
	failures map[string]int // consecutive failed passes, by certificate
	// expecting holds, per certificate, when this host's last writes for
	// it show in reads.
	expecting map[string]time.Time
	// expiring lists the expectations in the order they were set (so by
	// time: visibleAt never goes back), for Step to drop the passed ones;
	// a certificate's next pass may be months away.
	expiring []expectation
}

type expectation struct {
	name  string
	until time.Time
}

// New returns a host with empty stores.
func New(opts Options) (*Host, error) {
	if opts.Clock == nil || opts.Rand == nil {
		return nil, errors.New("refhost: Options.Clock and Options.Rand are required")
	}
	size := opts.CacheSize
	if size == 0 {
		size = 128
	}
	h := &Host{
		opts:         opts,
		Certificates: host.NewStore(opts.Clock, opts.Lag, cloneCertificate),
		Secrets:      host.NewPackedStore(opts.Clock, opts.Lag, packSecret, unpackSecret),
		Requests:     host.NewPackedStore(opts.Clock, opts.Lag, packRequest, unpackRequest),
		queue:        host.NewQueue(),
		issuers:      map[string]Issuer{},
		requestsOf:   newIndex(),
		keysOf:       newIndex(),
		claimants:    newIndex(),
		cache:        newLRU(size),
		failures:     map[string]int{},
		expecting:    map[string]time.Time{},
	}
	return h, nil
}

// SetIssuer answers the requests whose issuerRef names name.
func (h *Host) SetIssuer(name string, i Issuer) { h.issuers[name] = i }

func (h *Host) now() time.Time { return h.opts.Clock.Now() }

// Queue keys.
func certKey(name string) string    { return "certificate/" + name }
func requestKey(name string) string { return "request/" + name }

// Enqueue asks for a certificate to be looked at, at t (a timer: merged
// into an earlier one).
func (h *Host) Enqueue(certificateName string, t time.Time) {
	h.queue.AddAt(certKey(certificateName), t)
}

// notify is the watch notification of a write to a certificate or what it
// owns: the certificate is looked at when the cache shows the write (the
// stores say when; writes show in order).
func (h *Host) notify(certificateName string) {
	h.queue.AddEvent(certKey(certificateName), h.visibleAt())
}

func (h *Host) visibleAt() time.Time {
	t := h.Certificates.VisibleAt()
	if s := h.Secrets.VisibleAt(); s.After(t) {
		t = s
	}
	if r := h.Requests.VisibleAt(); r.After(t) {
		t = r
	}
	return t
}

// Apply creates a certificate, or updates its spec (a user's kubectl
// apply): the generation moves on a spec change, and the certificate is
// looked at once the cache shows it.
func (h *Host) Apply(c *certificate.Certificate) error {
	cur, ver, ok := h.Certificates.Get(c.Name)
	if !ok {
		c = cloneCertificate(c)
		if c.UID == "" {
			c.UID = "uid-" + c.Name
		}
		if c.Generation == 0 {
			c.Generation = 1
		}
		if c.CreationTimestamp.IsZero() {
			c.CreationTimestamp = h.now()
		}
		if _, err := h.Certificates.Create(c.Name, c); err != nil {
			return err
		}
		h.claimants.add(c.Spec.SecretName, c.Name)
		var one [1]string
		for _, n := range h.claimants.get(c.Spec.SecretName, &one) {
			h.notify(n) // the other claimants of the secret see a new rival
		}
	} else {
		if cur.Spec.SecretName != c.Spec.SecretName {
			h.claimants.remove(cur.Spec.SecretName, c.Name)
			h.claimants.add(c.Spec.SecretName, c.Name)
		}
		cur.Spec = c.Spec
		cur.Generation++
		if _, err := h.Certificates.Update(c.Name, cur, ver); err != nil {
			return err
		}
	}
	h.notify(c.Name)
	return nil
}

// Trigger is a manual renewal: a user setting Issuing=True.
func (h *Host) Trigger(name, why string) error {
	c, ver, ok := h.Certificates.Get(name)
	if !ok {
		return fmt.Errorf("refhost: no certificate %q", name)
	}
	now := h.now()
	conds := c.Status.Conditions[:0:0]
	for _, cd := range c.Status.Conditions {
		if cd.Type != certificate.ConditionIssuing {
			conds = append(conds, cd)
		}
	}
	c.Status.Conditions = append(conds, certificate.Condition{Type: certificate.ConditionIssuing, Status: certificate.StatusTrue,
		Reason: certificate.ReasonManualTrigger, Message: why, LastTransitionTime: now, ObservedGeneration: c.Generation})
	if _, err := h.Certificates.Update(name, c, ver); err != nil {
		return err
	}
	h.notify(name)
	return nil
}

// Next is when the queue next has work; ok is false when it is empty.
func (h *Host) Next() (time.Time, bool) { return h.queue.Next() }

// Pending is how many keys are queued.
func (h *Host) Pending() int { return h.queue.Len() }

// Step works off every key due at the clock's time, including keys that
// become due at that same time while it works.
func (h *Host) Step(ctx context.Context) int {
	h.dropPassedExpectations()
	n := 0
	for {
		key, ok := h.queue.PopDue(h.now())
		if !ok {
			return n
		}
		n++
		switch {
		case strings.HasPrefix(key, "certificate/"):
			h.reconcile(ctx, strings.TrimPrefix(key, "certificate/"))
		case strings.HasPrefix(key, "request/"):
			h.answer(ctx, strings.TrimPrefix(key, "request/"))
		}
	}
}

// gather reads one certificate's snapshot through the cache. It peeks
// (reads without copying): a decision never changes its snapshot.
func (h *Host) gather(c *certificate.Certificate) (*certificate.Snapshot, uint64) {
	s := &certificate.Snapshot{Certificate: c}
	var secretVer uint64
	if sec, v, ok := h.Secrets.Peek(c.Spec.SecretName); ok {
		s.Secret, secretVer = sec, v
	}
	var one [1]string
	for _, n := range h.requestsOf.get(c.UID, &one) {
		if r, _, ok := h.Requests.Peek(n); ok {
			s.Requests = append(s.Requests, r)
		}
	}
	for _, n := range h.keysOf.get(c.UID, &one) {
		if sec, _, ok := h.Secrets.Peek(n); ok {
			s.NextPrivateKeySecrets = append(s.NextPrivateKeySecrets, sec)
		}
	}
	for _, n := range h.claimants.get(c.Spec.SecretName, &one) {
		if n == c.Name {
			continue
		}
		if o, _, ok := h.Certificates.Peek(n); ok {
			s.OtherOwners = append(s.OtherOwners, o)
		}
	}
	if h.opts.ARI != nil && s.Secret != nil {
		if p := h.cache.secret(s.Secret.Name, secretVer, s.Secret.Data); p != nil && p.Leaf != nil {
			s.ARI = h.opts.ARI(c.Name, p.Leaf)
		}
	}
	return s, secretVer
}

// dropPassedExpectations forgets the expectations whose writes show in
// reads by now: a pass would drop each anyway, but only when it comes.
func (h *Host) dropPassedExpectations() {
	now := h.now()
	i := 0
	for ; i < len(h.expiring) && !h.expiring[i].until.After(now); i++ {
		e := h.expiring[i]
		if until, ok := h.expecting[e.name]; ok && until.Equal(e.until) {
			delete(h.expecting, e.name)
		}
	}
	if i == 0 {
		return
	}
	n := copy(h.expiring, h.expiring[i:])
	clear(h.expiring[n:])
	h.expiring = h.expiring[:n]
	if n == 0 {
		if len(h.expecting) == 0 {
			h.expecting = map[string]time.Time{} // a burst's map goes with it
		}
		if cap(h.expiring) > 64 {
			h.expiring = nil
		}
	}
}

func (h *Host) reconcile(ctx context.Context, name string) {
	now := h.now()
	if until, ok := h.expecting[name]; ok {
		if now.Before(until) {
			// Expectations, as Kubernetes controllers keep them: this
			// host's last writes for the certificate do not show in its
			// reads yet, and a pass now would decide on the state before
			// them. Look again when they show.
			h.Enqueue(name, until)
			return
		}
		delete(h.expecting, name)
	}
	c, ver, ok := h.Certificates.Peek(name) // never changed: status updates write a copy
	if !ok {
		return // deleted
	}
	snap, secretVer := h.gather(c)
	res := certificate.Reconcile(snap, now, h.opts.Config)
	ev := Event{Time: now, Certificate: c, Result: &res} // c is this pass's copy; carryOut never changes it
	for i, a := range res.Actions {
		if h.opts.Crash != nil && h.opts.Crash(name, i) {
			ev.Crashed = true
			break
		}
		created, err := h.carryOut(c, ver, secretVer, a)
		if created != "" {
			ev.Created = append(ev.Created, created)
		}
		if err != nil {
			ev.Err = fmt.Errorf("%v: %w", a, err)
			break
		}
		ev.Done = append(ev.Done, a)
	}
	if h.opts.Observe != nil {
		h.opts.Observe(ev)
	}
	h.requeue(name, now, res.RequeueAt, ev)
}

// requeue schedules the next pass, the way a controller's rate-limited
// queue does: a pass that failed (a conflict, a create that lost a race,
// an object the cache does not show yet) is retried with a per-certificate
// exponential delay (100 ms doubling to 5 min, reset by a clean pass); a
// result asking to look again "now" waits for the cache to show this
// pass's writes. So neither a stale cache nor a persistent error can spin
// the loop.
func (h *Host) requeue(name string, now, at time.Time, ev Event) {
	switch {
	case ev.Crashed:
		d := h.opts.RestartDelay
		if d <= 0 {
			d = 10 * time.Second
		}
		// A restarted host has lost its in-memory expectations: its first
		// pass may read state older than its last writes.
		delete(h.expecting, name)
		h.Enqueue(name, now.Add(d))
		return
	case ev.Err != nil:
		n := h.failures[name]
		h.failures[name] = n + 1
		d := 100 * time.Millisecond << min(n, 12)
		h.Enqueue(name, now.Add(max(min(d, 5*time.Minute), h.opts.Lag)))
		return
	}
	delete(h.failures, name)
	if len(ev.Done) > 0 {
		until := h.visibleAt()
		h.expecting[name] = until
		h.expiring = append(h.expiring, expectation{name, until})
		h.notify(name)
	}
	if !at.IsZero() {
		if !at.After(now) {
			at = now.Add(h.opts.Lag)
		}
		h.Enqueue(name, at)
	}
}

// carryOut is one action. The ownership of everything created is the
// certificate's UID, and the indexes follow every create and delete.
func (h *Host) carryOut(c *certificate.Certificate, ver, secretVer uint64, a certificate.Action) (created string, err error) {
	switch a := a.(type) {
	case certificate.GenerateKey:
		var keyPEM []byte
		if a.ReuseFrom != "" {
			src, _, ok := h.Secrets.Get(a.ReuseFrom)
			if !ok {
				return "", fmt.Errorf("secret %s to reuse the key of is not visible", a.ReuseFrom)
			}
			keyPEM = src.Data[keys.SecretPrivateKey]
		}
		var generated crypto.Signer
		if a.ReuseFrom == "" {
			k, err := keys.Generate(h.opts.Rand, a.Spec)
			if err != nil {
				return "", err
			}
			if keyPEM, err = keys.EncodePrivateKey(k, keys.EncodingPKCS8); err != nil {
				return "", err
			}
			generated = k
		}
		sec := &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Name: a.SecretName, Namespace: c.Namespace, OwnerUID: a.OwnerUID,
			Labels: map[string]string{certificate.LabelNextPrivateKey: "true"}}, Data: map[string][]byte{keys.SecretPrivateKey: keyPEM}}
		v, err := h.Secrets.Create(a.SecretName, sec)
		if err != nil && !errors.Is(err, host.ErrAlreadyExists) {
			return "", err
		}
		if err == nil && generated != nil {
			h.cache.put(lruKey{'k', a.SecretName, v}, generated) // no need to decode what was just made
		}
		h.keysOf.add(a.OwnerUID, a.SecretName)
	case certificate.DeleteSecret:
		if err := h.Secrets.Delete(a.Name); err != nil && !errors.Is(err, host.ErrNotFound) {
			return "", err
		}
		h.keysOf.remove(c.UID, a.Name)
	case certificate.CreateRequest:
		key, err := h.nextKey(a.KeySecretName)
		if err != nil {
			return "", err
		}
		r := a.Request
		if r.Spec.Request, err = keys.BuildCSR(h.opts.Rand, a.Template, key); err != nil {
			return "", err
		}
		r.CreationTimestamp = h.now()
		if _, err := h.Requests.Create(r.Name, &r); err != nil {
			if errors.Is(err, host.ErrAlreadyExists) {
				return "", nil // made by a pass the cache had not shown: success
			}
			return "", err
		}
		created = r.Name
		h.requestsOf.add(c.UID, r.Name)
		h.queue.AddEvent(requestKey(r.Name), h.Requests.VisibleAt())
	case certificate.DeleteRequest:
		if err := h.Requests.Delete(a.Name); err != nil && !errors.Is(err, host.ErrNotFound) {
			return "", err
		}
		h.requestsOf.remove(c.UID, a.Name)
	case certificate.WriteSecret:
		key, err := h.nextKey(a.KeySecretName)
		if err != nil {
			return "", err
		}
		data, err := keys.SecretData(h.opts.Rand, key, a.Chain, a.CA, a.Output)
		if err != nil {
			return "", err
		}
		// SecretData copies the chain and CA for its caller; this host
		// never changes stored bytes in place, so the secret shares them
		// with the request (and every secret the CA's bytes).
		if bytes.Equal(data[keys.SecretCertificate], a.Chain) {
			data[keys.SecretCertificate] = a.Chain
		}
		if bytes.Equal(data[keys.SecretCA], a.CA) {
			data[keys.SecretCA] = a.CA
		}
		sec := &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Name: a.Name, Namespace: c.Namespace, Labels: a.Labels, Annotations: a.Annotations}, Data: data}
		var written uint64
		if _, v, exists := h.Secrets.Get(a.Name); exists {
			written, err = h.Secrets.Update(a.Name, sec, v)
		} else {
			written, err = h.Secrets.Create(a.Name, sec)
		}
		if err != nil {
			return "", err
		}
		// The host holds the key it wrote: the parse of the new version
		// need not derive it again.
		h.cache.seedSecret(a.Name, written, data, key)
	case certificate.UpdateStatus:
		updated := *c
		updated.Status = a.Status
		if _, err := h.Certificates.Update(c.Name, &updated, ver); err != nil {
			return "", err
		}
	default:
		return "", fmt.Errorf("unknown action %T", a)
	}
	return created, nil
}

// nextKey reads and decodes a next-private-key secret, through the cache.
func (h *Host) nextKey(name string) (crypto.Signer, error) {
	ks, v, ok := h.Secrets.Get(name)
	if !ok {
		return nil, fmt.Errorf("the next private key %s is not visible yet", name)
	}
	if k := h.cache.key(name, v, ks.Data[keys.SecretPrivateKey]); k != nil {
		return k, nil
	}
	return keys.DecodePrivateKey(ks.Data[keys.SecretPrivateKey])
}

// answer asks the request's issuer about a pending request.
func (h *Host) answer(ctx context.Context, name string) {
	r, ver, ok := h.Requests.Get(name)
	if !ok {
		return
	}
	if r.Condition(certificate.RequestConditionReady) != nil || r.Condition(certificate.RequestConditionDenied) != nil {
		return // answered
	}
	now := h.now()
	iss, ok := h.issuers[r.Spec.IssuerRef.Name]
	if !ok {
		h.queue.AddAt(requestKey(name), now.Add(time.Minute))
		return
	}
	out, err := iss.Process(ctx, r, now)
	if err != nil {
		h.queue.AddAt(requestKey(name), now.Add(10*time.Second))
		return
	}
	if !out.Done {
		h.queue.AddAt(requestKey(name), out.RequeueAt)
		return
	}
	r.Status = out.Status
	if _, err := h.Requests.Update(name, r, ver); err != nil {
		h.queue.AddAt(requestKey(name), now.Add(h.opts.Lag+time.Second))
		return
	}
	if h.opts.Observe != nil {
		h.opts.Observe(Event{Time: now, Request: r})
	}
	if owner := r.Annotations[certificate.AnnotationCertificateName]; owner != "" {
		h.notify(owner)
	}
}

// A deep copy for the certificate store (secrets and requests are held
// packed: packed.go). Byte slices are shared: nothing in the host changes
// one in place.
func cloneCertificate(c *certificate.Certificate) *certificate.Certificate {
	if c == nil {
		return nil
	}
	n := *c
	n.Labels, n.Annotations = cloneMap(c.Labels), cloneMap(c.Annotations)
	n.Status.Conditions = append([]certificate.Condition(nil), c.Status.Conditions...)
	return &n
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	n := make(map[string]string, len(m))
	for k, v := range m {
		n[k] = v
	}
	return n
}

// lru caches parsed objects by name and resource version (or generation),
// bounded in entries.
type lru struct {
	size  int
	order *list.List
	items map[lruKey]*list.Element
}

type lruKey struct {
	kind    byte // 's' parsed secret, 'k' decoded key, 'c' compiled spec (version: generation)
	name    string
	version uint64
}

type lruEntry struct {
	key lruKey
	val any
}

func newLRU(size int) *lru {
	return &lru{size: size, order: list.New(), items: map[lruKey]*list.Element{}}
}

func (l *lru) get(key lruKey) (any, bool) {
	if l.size <= 0 {
		return nil, false
	}
	if e, ok := l.items[key]; ok {
		l.order.MoveToFront(e)
		return e.Value.(*lruEntry).val, true
	}
	return nil, false
}

func (l *lru) put(key lruKey, v any) {
	if l.size <= 0 {
		return
	}
	l.items[key] = l.order.PushFront(&lruEntry{key, v})
	for l.order.Len() > l.size {
		e := l.order.Back()
		l.order.Remove(e)
		delete(l.items, e.Value.(*lruEntry).key)
	}
}

func (l *lru) secret(name string, ver uint64, data map[string][]byte) *keys.ParsedSecret {
	if l.size <= 0 {
		return nil
	}
	k := lruKey{'s', name, ver}
	if v, ok := l.get(k); ok {
		return v.(*keys.ParsedSecret)
	}
	p, _ := keys.ParseSecretData(data) // per-field errors stay in p, for the trigger to read
	if p == nil {
		return nil
	}
	l.put(k, p)
	return p
}

func (l *lru) seedSecret(name string, ver uint64, data map[string][]byte, key crypto.Signer) {
	if l.size <= 0 {
		return
	}
	if p, _ := keys.ParseSecretData(data); p != nil {
		l.put(lruKey{'s', name, ver}, p)
	}
}

func (l *lru) key(name string, ver uint64, pemBytes []byte) crypto.Signer {
	if l.size <= 0 {
		return nil
	}
	k := lruKey{'k', name, ver}
	if v, ok := l.get(k); ok {
		return v.(crypto.Signer)
	}
	key, err := keys.DecodePrivateKey(pemBytes)
	if err != nil {
		return nil
	}
	l.put(k, key)
	return key
}

// SetObserver replaces Options.Observe.
func (h *Host) SetObserver(f func(Event)) { h.opts.Observe = f }
