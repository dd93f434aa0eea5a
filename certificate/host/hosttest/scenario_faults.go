package hosttest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/localca"
	"github.com/certlife/certlife/keys"
)

// scenarioCA is the scenarios' issuer: a local CA that can be told to
// fail, to certify another key than the request's, or to keep requests
// pending. It records the requests it is told are deleted.
type scenarioCA struct {
	ca     *localca.CA
	issuer certificate.Issuer
	mode   string
	forgot []string
}

var _ certificate.Forgetter = (*scenarioCA)(nil)

func (c *scenarioCA) Answer(ctx context.Context, r *certificate.CertificateRequest, now time.Time) (time.Time, error) {
	switch c.mode {
	case "pending":
		certificate.SetPending(r, "waiting for the CA", now)
		return now.Add(time.Hour), nil
	case "fail":
		certificate.SetFailed(r, "the CA is down", now, time.Time{})
		return time.Time{}, nil
	case "wrong-key":
		csr, err := keys.ParseCSR(r.Spec.Request)
		if err != nil {
			return time.Time{}, err
		}
		other, err := keys.Generate(rand.Reader, keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
		if err != nil {
			return time.Time{}, err
		}
		fake := *r
		fake.Spec.Request, err = keys.BuildCSR(rand.Reader, keys.RequestTemplate{CommonName: csr.Subject.CommonName, DNSNames: csr.DNSNames}, other)
		if err != nil {
			return time.Time{}, err
		}
		if err := c.ca.Issue(rand.Reader, &fake, now); err != nil {
			return time.Time{}, err
		}
		r.Status = fake.Status
		return time.Time{}, nil
	}
	return c.issuer.Answer(ctx, r, now)
}

func (c *scenarioCA) Forget(ctx context.Context, namespace, name string) error {
	c.forgot = append(c.forgot, namespace+"/"+name)
	if f, ok := c.issuer.(certificate.Forgetter); ok {
		return f.Forget(ctx, namespace, name)
	}
	return nil
}

func (c *scenarioCA) takeForgotten() []string {
	f := c.forgot
	c.forgot = nil
	return f
}

// scenarioWrites are the loop's writes to fail (n: "create secrets" →
// how many more), and the count of the creates and updates that
// succeeded, the scenario's own and the loop's, which numbers the UIDs
// the scenario gives the certificates it creates.
type scenarioWrites struct {
	mu    sync.Mutex
	n     map[string]int
	count int
}

// wrote counts a create or update that succeeded.
func (f *scenarioWrites) wrote() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.count++
}

// nextUID is the UID of a certificate created now: "uid-" and the number
// of the write, as host.MemoryStore numbers them, so that the names the
// decisions derive from it are the same over every store.
func (f *scenarioWrites) nextUID() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fmt.Sprintf("uid-%08d", f.count+1)
}

func (f *scenarioWrites) set(op, kind string, n int) error {
	switch op {
	case "create", "update", "delete":
	default:
		return fmt.Errorf("the write %q is not create, update or delete", op)
	}
	switch kind {
	case "certificates", "secrets", "requests":
	default:
		return fmt.Errorf("the kind %q is not certificates, secrets or requests", kind)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n[op+" "+kind] = n
	return nil
}

// fail reports whether the write should fail, counting it.
func (f *scenarioWrites) fail(op, kind string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := op + " " + kind
	if f.n[k] == 0 {
		return false
	}
	f.n[k]--
	return true
}

// failWrites is st as the loop sees it in a scenario: its writes of a
// kind fail when the scenario asks (store-fails). It is a host.Watcher
// when st is one, and as host.Authoritative as st. The scenario's own
// writes go through one that never fails (user), to be counted.
func failWrites(st host.Store, faults *scenarioWrites, user bool) host.Store {
	f := &failingStore{st: st, faults: faults, user: user}
	if w, ok := st.(host.Watcher); ok {
		return failingWatcher{f, w}
	}
	return f
}

type failingStore struct {
	st     host.Store
	faults *scenarioWrites
	user   bool
}

func (s *failingStore) Certificates() host.Collection[*certificate.Certificate] {
	return failing[*certificate.Certificate]{s.st.Certificates(), s, "certificates"}
}

func (s *failingStore) Secrets() host.Collection[*certificate.Secret] {
	return failing[*certificate.Secret]{s.st.Secrets(), s, "secrets"}
}

func (s *failingStore) Requests() host.Collection[*certificate.CertificateRequest] {
	return failing[*certificate.CertificateRequest]{s.st.Requests(), s, "requests"}
}

// Authoritative is the store's answer; false when it gives none.
func (s *failingStore) Authoritative() bool {
	a, ok := s.st.(host.Authoritative)
	return ok && a.Authoritative()
}

type failingWatcher struct {
	*failingStore
	w host.Watcher
}

func (s failingWatcher) Watch(f func(host.Change)) { s.w.Watch(f) }

type failing[T host.Object] struct {
	host.Collection[T]
	s    *failingStore
	kind string
}

var errDiskFull = errors.New("the disk is full")

func (c failing[T]) fail(op string) bool {
	return !c.s.user && c.s.faults.fail(op, c.kind)
}

func (c failing[T]) Create(ctx context.Context, obj T) (T, error) {
	if c.fail("create") {
		return nil, errDiskFull
	}
	obj, err := c.Collection.Create(ctx, obj)
	if err == nil {
		c.s.faults.wrote()
	}
	return obj, err
}

func (c failing[T]) Update(ctx context.Context, obj T) (T, error) {
	if c.fail("update") {
		return nil, errDiskFull
	}
	obj, err := c.Collection.Update(ctx, obj)
	if err == nil {
		c.s.faults.wrote()
	}
	return obj, err
}

func (c failing[T]) Delete(ctx context.Context, namespace, name string) error {
	if c.fail("delete") {
		return errDiskFull
	}
	return c.Collection.Delete(ctx, namespace, name)
}
