package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/host/hosttest"
)

// lendingStore is a MemoryStore whose collections are host.Lenders: every
// lend of a version of an object returns the same object, as a cache
// that shares its objects would, and the store keeps what each looked
// like when first lent, so that a test can tell whether anyone changed
// one.
type lendingStore struct {
	*host.MemoryStore
	mu   sync.Mutex
	lent map[string]lentObject // kind/namespace/name@version
}

type lentObject struct {
	obj  any
	json string
}

func newLendingStore(clk *testingclock.FakeClock) *lendingStore {
	return &lendingStore{MemoryStore: host.NewMemoryStore(clk), lent: map[string]lentObject{}}
}

func (s *lendingStore) Certificates() host.Collection[*certificate.Certificate] {
	return lendingColl[*certificate.Certificate]{s.MemoryStore.Certificates(), s, host.KindCertificate}
}

func (s *lendingStore) Secrets() host.Collection[*certificate.Secret] {
	return lendingColl[*certificate.Secret]{s.MemoryStore.Secrets(), s, host.KindSecret}
}

func (s *lendingStore) Requests() host.Collection[*certificate.CertificateRequest] {
	return lendingColl[*certificate.CertificateRequest]{s.MemoryStore.Requests(), s, host.KindRequest}
}

// share returns the object lent before for obj's version, or keeps obj
// (and how it looks now) as that version's.
func (s *lendingStore) share(kind host.Kind, obj any, m *certificate.ObjectMeta) (any, error) {
	k := fmt.Sprintf("%s/%s/%s@%s", kind, m.Namespace, m.Name, m.ResourceVersion)
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.lent[k]; ok {
		return l.obj, nil
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	s.lent[k] = lentObject{obj, string(b)}
	return obj, nil
}

// changed lists the lent objects that no longer look as they did when
// first lent.
func (s *lendingStore) changed() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k, l := range s.lent {
		if b, _ := json.Marshal(l.obj); string(b) != l.json {
			out = append(out, fmt.Sprintf("%s: lent as %s, now %s", k, l.json, b))
		}
	}
	return out
}

type lendingColl[T host.Object] struct {
	host.Collection[T]
	s    *lendingStore
	kind host.Kind
}

func (c lendingColl[T]) Lend(ctx context.Context, namespace, name string) (T, error) {
	obj, err := c.Collection.Get(ctx, namespace, name)
	if err != nil {
		return obj, err
	}
	shared, err := c.s.share(c.kind, obj, obj.Meta())
	if err != nil {
		return nil, err
	}
	return shared.(T), nil
}

func (c lendingColl[T]) LendList(ctx context.Context, opts host.ListOptions) ([]T, error) {
	objs, err := c.Collection.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	for i, obj := range objs {
		shared, err := c.s.share(c.kind, obj, obj.Meta())
		if err != nil {
			return nil, err
		}
		objs[i] = shared.(T)
	}
	return objs, nil
}

// TestLentObjectsAreNeverChanged runs the lifecycle scenarios over a
// store that lends its objects (host.Lender): they must give the same
// output as over a store that copies, and nothing the loop, its
// decisions or the scenarios' issuer did may have changed an object it
// was lent.
func TestLentObjectsAreNeverChanged(t *testing.T) {
	var stores []*lendingStore
	hosttest.RunScenarios(t, scenarios, hosttest.ScenarioConfig{
		Open: func(t *testing.T, clk *testingclock.FakeClock) host.Store {
			s := newLendingStore(clk)
			stores = append(stores, s)
			t.Cleanup(func() {
				if len(s.lent) == 0 {
					t.Error("the loop lent nothing: it does not read through host.Lender")
				}
				for _, c := range s.changed() {
					t.Errorf("a lent object was changed: %s", c)
				}
			})
			return s
		},
	})
	if len(stores) == 0 {
		t.Fatal("no scenario ran")
	}
}
