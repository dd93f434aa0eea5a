package acmeclient

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/challenge"
	"github.com/certlife/certlife/order"
)

// State is what an Issuer keeps for one certificate request: its ACME
// order, the order's challenges, and when the request was answered. It is
// plain data with JSON tags: a host stores it as it is (a row, a file, a
// Kubernetes resource's status) and hands it back unchanged.
type State struct {
	// Request names the certificate request the state is for. The
	// issuer sets it before every Put, so that a store can keep the
	// state with its request or tie it to it (see Store.Put), and Forget
	// finds it by name after a restart. A state written before it was
	// recorded is taken to be for the request its key names, in its
	// order's namespace.
	Request RequestRef `json:"request,omitzero"`
	// Order is the request's one ACME order (made again, once, when the
	// server issued a certificate that does not check out).
	Order order.Order `json:"order"`
	// Challenges are the order's challenges, in flight or finished.
	Challenges []challenge.Challenge `json:"challenges,omitempty"`
	// AnsweredAt is when the issuer answered the request from this
	// order. The state is kept a while after (IssuerConfig.KeepAnswered),
	// so that a host that crashed before it wrote the answer gets the
	// same answer again instead of a second order.
	AnsweredAt *time.Time `json:"answeredAt,omitempty"`
	// OrderRequestedAt is when a newOrder was sent (or, from the state's
	// first write, may be sent) for the state whose answer it does not
	// hold: the server may have created the order
	// (the answer was lost, or the process died before it wrote it), so
	// the issuer looks for it among the account's orders before it
	// orders again (Client.FindOrder).
	OrderRequestedAt *time.Time `json:"orderRequestedAt,omitempty"`
	// SteppedAt is when an issuer last wrote the state, to five minutes
	// (it moves on with a write at most that often). Replicas that
	// share one store tell from it that another replica is at work on an
	// order, which none of them then removes as stale (see
	// IssuerConfig.StaleAfter).
	SteppedAt *time.Time `json:"steppedAt,omitempty"`
}

// RequestRef names a certificate request: its namespace and name, and
// its UID (certificate.ObjectMeta.UID), which tells a request from
// another made later under the same name; empty when the host gives
// requests none, or for a state written before UIDs were recorded.
type RequestRef struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	UID       string `json:"uid,omitempty"`
}

// requestRefOf names r.
func requestRefOf(r *certificate.CertificateRequest) RequestRef {
	return RequestRef{Namespace: r.Namespace, Name: r.Name, UID: r.UID}
}

// Store keeps an Issuer's states for the host, so that the issuer itself
// holds nothing a restart would lose: a process that starts again with
// the same store resumes each request's order instead of creating
// another. Keys are the issuer's (OrderName): unique across namespaces,
// and each the key of one request's states. The host treats the keys and
// the states as opaque, except for State.Request, which says which
// request a state is for; the issuer tells the store that on every call
// that concerns one state, so no store needs more from the context than
// its deadline.
//
// An Issuer works on one key at a time (it waits for itself), so a store
// needs no transactions; it must be safe for concurrent use when the host
// steps several requests at once.
//
// One Issuer owns a store: it reads it whole (List) once, when it is
// first used, and then keeps in memory what scheduling and clean-up need,
// updated by its own Put and Delete — no step lists the store. Nothing
// else may write the store while the issuer runs; a second Issuer on the
// same store would not see the first's challenges. A host that restarts
// makes a new Issuer, which reads the store again.
//
// MemoryStore keeps states in memory and FileStore in a directory; a
// store keyed by key alone (a table, a key-value store) can ignore the
// request the issuer passes, while one that keeps each state with its
// request (in the request's namespace, owned by it) uses it.
type Store interface {
	// Get returns the state of key, or nil when there is none. req is
	// the request being answered, the one the state is for.
	Get(ctx context.Context, req RequestRef, key string) (*State, error)
	// Put creates or replaces the state of key. s.Request names the
	// request it is for (UID included when the request has one): the
	// issuer sets it before every Put, so a store that creates the
	// state can place it with its request or tie it to it (an owner
	// reference, a foreign key).
	Put(ctx context.Context, key string, s *State) error
	// Delete removes the state of key; a key that is not there is no
	// error. req is the request the state is for, as the state last
	// recorded it (State.Request; for a state written before that was
	// recorded, its order's namespace and the name its key begins with).
	Delete(ctx context.Context, req RequestRef, key string) error
	// List returns every state by key. The issuer calls it once, when it
	// is first used: what the states hold is the challenges in flight for
	// every request, which its scheduler needs, and the states it removes
	// once their requests are answered or gone.
	List(ctx context.Context) (map[string]*State, error)
}

// MemoryStore is a Store in memory, for tests and for hosts that keep
// nothing across restarts. It keeps each state as JSON, as a host that
// persists them would, so nothing is shared between what Get returns
// and what it holds. Safe for concurrent use.
type MemoryStore struct {
	mu     sync.Mutex
	states map[string][]byte
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{states: map[string][]byte{}} }

var _ Store = (*MemoryStore)(nil)

// Get implements Store.
func (m *MemoryStore) Get(_ context.Context, _ RequestRef, key string) (*State, error) {
	m.mu.Lock()
	b, ok := m.states[key]
	m.mu.Unlock()
	if !ok {
		return nil, nil
	}
	return decodeState(key, b)
}

// Put implements Store.
func (m *MemoryStore) Put(_ context.Context, key string, s *State) error {
	b, err := encodeState(key, s)
	if err != nil {
		return err
	}
	return m.put(key, b, nil)
}

// put keeps the encoded state b of key, once write (when not nil) has
// kept it too, under the store's lock.
func (m *MemoryStore) put(key string, b []byte, write func() error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if write != nil {
		if err := write(); err != nil {
			return err
		}
	}
	if m.states == nil {
		m.states = map[string][]byte{}
	}
	m.states[key] = b
	return nil
}

// Delete implements Store.
func (m *MemoryStore) Delete(_ context.Context, _ RequestRef, key string) error {
	return m.delete(key, nil)
}

// delete drops the state of key, once remove (when not nil) has removed
// it too, under the store's lock; a key that is not there is no error
// and removes nothing.
func (m *MemoryStore) delete(key string, remove func() error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.states[key]; !ok {
		return nil
	}
	if remove != nil {
		if err := remove(); err != nil {
			return err
		}
	}
	delete(m.states, key)
	return nil
}

// List implements Store.
func (m *MemoryStore) List(_ context.Context) (map[string]*State, error) {
	m.mu.Lock()
	raw := make(map[string][]byte, len(m.states))
	for k, b := range m.states {
		raw[k] = b
	}
	m.mu.Unlock()
	out := make(map[string]*State, len(raw))
	for k, b := range raw {
		s, err := decodeState(k, b)
		if err != nil {
			return nil, err
		}
		out[k] = s
	}
	return out, nil
}

func encodeState(key string, s *State) ([]byte, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("acmeclient: encoding the state of %s: %w", key, err)
	}
	return b, nil
}

func decodeState(key string, b []byte) (*State, error) {
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("acmeclient: decoding the state of %s: %w", key, err)
	}
	return &s, nil
}
