package refhost

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/keys"
	"k8s.io/utils/clock"
)

// Issuer answers the requests whose issuerRef names it.
type Issuer interface {
	// Answer works on a request that is not certificate.Answered: it
	// answers it through the issuer contract (certificate.SetIssued,
	// SetFailed, SetDenied, SetInvalid) or records progress
	// (certificate.SetPending), changing only r's status, and says when to
	// call again — zero for "when the request changes".
	Answer(ctx context.Context, r *certificate.CertificateRequest, now time.Time) (next time.Time, err error)
}

// Event is one thing the host did, for a log or a test: a certificate's
// decision and what came of its actions, or an issuer's answer.
type Event struct {
	Time time.Time
	// Certificate is the certificate decided on; Result the decision;
	// Done the actions carried out (all of Result.Actions unless Err).
	Certificate string
	Result      *certificate.Result
	Done        []certificate.Action
	// Request is a request an issuer worked on, as it left it.
	Request *certificate.CertificateRequest
	// Err is why the pass stopped early.
	Err error
}

// Host is the reference host: it keeps certificates in a Store, decides
// with certificate.Reconcile and carries out the actions, and lets issuers
// answer requests. It is single-threaded and driven by Step, so that a test
// or a simulation on a fake clock decides when time moves.
type Host struct {
	Store *Store
	// Clock says what time it is; a fake one in tests.
	Clock clock.PassiveClock
	// Config is passed to every decision.
	Config certificate.Config
	// Issuers answer requests, by issuerRef name.
	Issuers map[string]Issuer
	// Rand is the randomness for keys, CSRs and keystores; nil means
	// crypto/rand.
	Rand io.Reader
	// Observe, when set, sees every event.
	Observe func(Event)

	mu    sync.Mutex
	queue map[item]time.Time
}

// item is something the host looks at: a certificate to decide on, or a
// request to hand to its issuer.
type item struct {
	kind string // "certificate" or "request"
	name string
}

// New returns a host over store, which it watches: every write to the
// store — the host's own, and anyone else's — queues the certificates it
// concerns, as watch events do for a controller.
func New(store *Store, clk clock.PassiveClock, cfg certificate.Config, issuers map[string]Issuer) *Host {
	h := &Host{Store: store, Clock: clk, Config: cfg, Issuers: issuers, queue: map[item]time.Time{}}
	store.watch(h.changed)
	return h
}

// changed is the store's watch event: queue what a write concerns, now.
func (h *Host) changed(kind, name string, meta certificate.ObjectMeta) {
	now := h.Clock.Now()
	switch kind {
	case "certificate":
		h.enqueue(item{"certificate", name}, now)
	case "secret":
		for _, c := range h.Store.Certificates() {
			if c.Spec.SecretName == name || c.UID == meta.OwnerUID {
				h.enqueue(item{"certificate", c.Name}, now)
			}
		}
	case "request":
		h.enqueue(item{"request", name}, now)
		for _, c := range h.Store.Certificates() {
			if c.UID == meta.OwnerUID {
				h.enqueue(item{"certificate", c.Name}, now)
			}
		}
	}
}

// enqueue asks to look at it at t, or sooner if it is queued sooner.
func (h *Host) enqueue(it item, t time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if old, ok := h.queue[it]; !ok || t.Before(old) {
		h.queue[it] = t
	}
}

// Next is when the host next has something to do; ok is false when
// nothing is queued.
func (h *Host) Next() (t time.Time, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, due := range h.queue {
		if !ok || due.Before(t) {
			t, ok = due, true
		}
	}
	return t, ok
}

// Step looks at everything that is due at the clock's time, certificates
// first, each once, and returns how many it looked at. What they queue for
// now is left for the next Step.
func (h *Host) Step(ctx context.Context) int {
	now := h.Clock.Now()
	h.mu.Lock()
	var due []item
	for it, t := range h.queue {
		if !t.After(now) {
			due = append(due, it)
			delete(h.queue, it)
		}
	}
	h.mu.Unlock()
	slices.SortFunc(due, func(a, b item) int {
		if a.kind != b.kind {
			if a.kind == "certificate" {
				return -1
			}
			return 1
		}
		if a.name < b.name {
			return -1
		}
		if a.name > b.name {
			return 1
		}
		return 0
	})
	for _, it := range due {
		if it.kind == "certificate" {
			h.reconcile(ctx, it.name, now)
		} else {
			h.answer(ctx, it.name, now)
		}
	}
	return len(due)
}

// Settle steps at the clock's time until nothing more is due now, at most
// max steps, and returns how many it took.
func (h *Host) Settle(ctx context.Context, max int) (int, error) {
	for i := 0; i < max; i++ {
		if h.Step(ctx) == 0 {
			return i, nil
		}
	}
	return max, fmt.Errorf("refhost: still busy after %d steps at %v", max, h.Clock.Now())
}

func (h *Host) rand() io.Reader {
	if h.Rand != nil {
		return h.Rand
	}
	return rand.Reader
}

func (h *Host) observe(e Event) {
	if h.Observe != nil {
		h.Observe(e)
	}
}

// gather reads everything a decision about the certificate reads: nil for
// what does not exist.
func (h *Host) gather(c *certificate.Certificate) *certificate.Snapshot {
	s := &certificate.Snapshot{Certificate: c}
	if sec, err := h.Store.Secret(c.Spec.SecretName); err == nil {
		s.Secret = sec
	}
	s.NextPrivateKeySecrets = h.Store.Secrets(func(sec *certificate.Secret) bool {
		return sec.OwnerUID == c.UID && sec.Labels[certificate.LabelNextPrivateKey] == "true"
	})
	s.Requests = h.Store.Requests(func(r *certificate.CertificateRequest) bool { return r.OwnerUID == c.UID })
	for _, o := range h.Store.Certificates() {
		if o.Name != c.Name && o.Spec.SecretName == c.Spec.SecretName {
			s.OtherOwners = append(s.OtherOwners, o)
		}
	}
	return s
}

// reconcile is one pass for a certificate: gather, decide, carry out the
// actions in order until one fails, requeue.
func (h *Host) reconcile(ctx context.Context, name string, now time.Time) {
	c, err := h.Store.Certificate(name)
	if err != nil {
		return // deleted: nothing to do
	}
	res := certificate.Reconcile(h.gather(c), now, h.Config)
	e := Event{Time: now, Certificate: name, Result: &res}
	if res.Err != nil {
		e.Err = res.Err
		h.observe(e)
		return // a certificate no decision can be made on: fix it, and its write requeues it
	}
	for _, a := range res.Actions {
		if err := h.carryOut(ctx, c, a, now); err != nil {
			e.Err = fmt.Errorf("%v: %w", a, err)
			break
		}
		e.Done = append(e.Done, a)
	}
	if !res.RequeueAt.IsZero() {
		h.enqueue(item{"certificate", name}, res.RequeueAt)
	}
	if e.Err != nil && errors.Is(e.Err, ErrConflict) {
		h.enqueue(item{"certificate", name}, now) // read again and decide again
	}
	h.observe(e)
}

// carryOut does what an action's doc says.
func (h *Host) carryOut(ctx context.Context, c *certificate.Certificate, a certificate.Action, now time.Time) error {
	switch a := a.(type) {
	case certificate.GenerateKey:
		var pemKey []byte
		if a.ReuseFrom != "" {
			from, err := h.Store.Secret(a.ReuseFrom)
			if err != nil {
				return err
			}
			pemKey = from.Data[keys.SecretPrivateKey]
		} else {
			key, err := keys.Generate(h.rand(), a.Spec)
			if err != nil {
				return err
			}
			if pemKey, err = keys.EncodePrivateKey(key, keys.EncodingPKCS8); err != nil {
				return err
			}
		}
		err := h.Store.CreateSecret(&certificate.Secret{
			ObjectMeta: certificate.ObjectMeta{Name: a.SecretName, Namespace: c.Namespace, OwnerUID: a.OwnerUID,
				Labels: map[string]string{certificate.LabelNextPrivateKey: "true"}},
			Data: map[string][]byte{keys.SecretPrivateKey: pemKey},
		})
		return ignore(err, ErrAlreadyExists) // made by an earlier pass

	case certificate.CreateRequest:
		key, err := h.privateKey(a.KeySecretName)
		if err != nil {
			return err
		}
		r := a.Request
		if r.Spec.Request, err = keys.BuildCSR(h.rand(), a.Template, key); err != nil {
			return err
		}
		r.CreationTimestamp = now // as the API server sets it
		return ignore(h.Store.CreateRequest(&r), ErrAlreadyExists)

	case certificate.DeleteRequest:
		if err := ignore(h.Store.DeleteRequest(a.Name), ErrNotFound); err != nil {
			return err
		}
		// Tell the request's issuer, so that nothing it keeps for the
		// request (an ACME order, what its challenges present) outlives
		// it.
		if f, ok := h.Issuers[a.IssuerRef.Name].(interface {
			Forget(ctx context.Context, namespace, name string) error
		}); ok {
			return f.Forget(ctx, c.Namespace, a.Name)
		}
		return nil

	case certificate.DeleteSecret:
		return ignore(h.Store.DeleteSecret(a.Name), ErrNotFound)

	case certificate.WriteSecret:
		return h.writeSecret(c, a)

	case certificate.UpdateStatus:
		return h.Store.UpdateCertificateStatus(c.Name, c.ResourceVersion, a.Status)
	}
	return fmt.Errorf("refhost: unknown action %T", a)
}

// writeSecret writes the data keys.SecretData makes, merging labels and
// annotations into what the secret has, and only over the version the
// decision read.
func (h *Host) writeSecret(c *certificate.Certificate, a certificate.WriteSecret) error {
	key, err := h.privateKey(a.KeySecretName)
	if err != nil {
		return err
	}
	data, err := keys.SecretData(h.rand(), key, a.Chain, a.CA, a.Output)
	if err != nil {
		return err
	}
	sec, err := h.Store.Secret(a.Name)
	switch {
	case errors.Is(err, ErrNotFound) && a.ResourceVersion != "":
		return fmt.Errorf("secret %s was read at version %s and is gone: %w", a.Name, a.ResourceVersion, ErrConflict)
	case errors.Is(err, ErrNotFound):
		sec = &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Name: a.Name, Namespace: c.Namespace}}
	case err != nil:
		return err
	case a.ResourceVersion != "" && sec.ResourceVersion != a.ResourceVersion:
		return fmt.Errorf("secret %s is at version %s, the decision read %s: %w", a.Name, sec.ResourceVersion, a.ResourceVersion, ErrConflict)
	}
	sec.OwnerUID = a.OwnerUID
	sec.Labels = mergeInto(sec.Labels, a.Labels)
	sec.Annotations = mergeInto(sec.Annotations, a.Annotations)
	sec.Data = data
	if sec.ResourceVersion == "" {
		return h.Store.CreateSecret(sec)
	}
	return h.Store.UpdateSecret(sec)
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
func (h *Host) privateKey(secret string) (crypto.Signer, error) {
	sec, err := h.Store.Secret(secret)
	if err != nil {
		return nil, err
	}
	return keys.DecodePrivateKey(sec.Data[keys.SecretPrivateKey])
}

// answer hands a request to the issuer its issuerRef names, writes the
// status it leaves, and queues the request again when the issuer asks.
func (h *Host) answer(ctx context.Context, name string, now time.Time) {
	r, err := h.Store.Request(name)
	if err != nil || certificate.Answered(r) {
		return
	}
	iss, ok := h.Issuers[r.Spec.IssuerRef.Name]
	if !ok {
		return // not ours: another issuer answers it
	}
	before, _ := json.Marshal(r.Status)
	next, err := iss.Answer(ctx, r, now)
	e := Event{Time: now, Request: r, Err: err}
	// Write only a change: the write is a watch event that queues the
	// request again.
	if after, _ := json.Marshal(r.Status); !bytes.Equal(before, after) {
		if werr := h.Store.UpdateRequestStatus(name, r.ResourceVersion, r.Status); werr != nil {
			e.Err = errors.Join(err, werr)
			h.enqueue(item{"request", name}, now)
		}
	}
	if !next.IsZero() {
		h.enqueue(item{"request", name}, next)
	}
	h.observe(e)
}

func ignore(err, ok error) error {
	if errors.Is(err, ok) {
		return nil
	}
	return err
}
