package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/certlife/certlife/certificate"
)

// The errors a Store returns, as a Kubernetes API server gives them; the
// loop tests them with errors.Is, so a store wraps them.
var (
	// ErrNotFound: no object of that namespace and name.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: a create met an object of the same namespace and
	// name.
	ErrAlreadyExists = errors.New("already exists")
	// ErrConflict: an update named a resource version that is not the
	// object's any more — someone wrote it since it was read. The loop
	// reads again and decides again.
	ErrConflict = errors.New("conflict: the object has been modified")
	// ErrAbsenceConfirmed: a Get found no object in the store's source
	// of truth itself, not only in a cache in front of it that may lag
	// behind the last write. A store that is not Authoritative wraps it
	// beside ErrNotFound when it confirmed a miss that way — as a
	// Kubernetes store does that asks the API server after its cache
	// misses a secret — and the loop then tells the decisions that the
	// secret is gone for certain (certificate.Snapshot.
	// SecretAbsenceConfirmed), as it does for every miss of an
	// Authoritative store: a secret deleted right after an issuance is
	// issued again at once rather than after the cache grace.
	ErrAbsenceConfirmed = errors.New("absence confirmed by the source of truth")
)

// Object is a kind the loop keeps in a Store.
type Object interface {
	*certificate.Certificate | *certificate.Secret | *certificate.CertificateRequest
	Meta() *certificate.ObjectMeta
}

// Kind names a kind of Object.
type Kind string

// The kinds.
const (
	KindCertificate Kind = "Certificate"
	KindSecret      Kind = "Secret"
	KindRequest     Kind = "CertificateRequest"
	// KindIssuer names an issuer's sweep in an Event; a Store keeps no
	// issuers.
	KindIssuer Kind = "Issuer"
)

// ListOptions select objects. Every field that is set must match; a store
// may index them.
type ListOptions struct {
	// Namespace; empty means every namespace.
	Namespace string
	// OwnerUID selects the objects whose controlling owner has this UID
	// (ObjectMeta.OwnerUID): a certificate's requests and next-key
	// secrets.
	OwnerUID string
	// SecretName selects the certificates whose spec.secretName is this
	// (certificates only; with Namespace).
	SecretName string
	// Labels selects the objects whose labels have each of these keys
	// with its value, as a Kubernetes equality selector "k1=v1,k2=v2"
	// does; empty selects any. The loop lists a certificate's next-key
	// secrets with it (certificate.LabelNextPrivateKey "true") beside
	// OwnerUID, so that a store which filters before it copies does not
	// copy the certificate's own secret, with its key and chain, on every
	// pass. Callers share the map: a store must not change it.
	Labels map[string]string
}

// Matches reports whether the object passes o; a Store can filter with
// it.
func (o ListOptions) Matches(obj any) bool {
	var m *certificate.ObjectMeta
	secretName := ""
	switch v := obj.(type) {
	case *certificate.Certificate:
		m, secretName = &v.ObjectMeta, v.Spec.SecretName
	case *certificate.Secret:
		m = &v.ObjectMeta
	case *certificate.CertificateRequest:
		m = &v.ObjectMeta
	default:
		return false
	}
	switch {
	case o.Namespace != "" && m.Namespace != o.Namespace:
		return false
	case o.OwnerUID != "" && m.OwnerUID != o.OwnerUID:
		return false
	case o.SecretName != "" && secretName != o.SecretName:
		return false
	}
	return o.MatchesLabels(m.Labels)
}

// MatchesLabels reports whether labels pass o.Labels; a store that keeps
// an object's labels apart from the rest of it can filter with it before
// it builds the object.
func (o ListOptions) MatchesLabels(labels map[string]string) bool {
	for k, v := range o.Labels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Collection keeps the objects of one kind. Every object carries a
// resource version that each write changes; an update names the version
// it read and fails with ErrConflict when the object moved on, so a
// decision made on a stale read never overwrites a newer object.
//
// What a Collection returns may be what it holds, shared with every other
// caller, as a Kubernetes informer's cache shares its objects: a caller
// treats it as read-only and copies an object before it changes it. The
// loop never changes what a store returns (hosttest.CheckReadOnly checks
// code of your own that reads a store beside it: an issuer, a hook). A
// store that shares never changes an object after it returned it: a
// write replaces what it holds. A store may as well return copies, as
// MemoryStore and FileStore do. What a Collection is given is not kept:
// changing it afterwards changes nothing stored.
//
// Namespace and name are two keys: no name reaches an
// object of another namespace, and a call that names a namespace or name
// no object can have (certificate.ValidateNamespace,
// certificate.ValidateObjectName) fails — a store that joins the two
// into one key, as "namespace/name", would otherwise take the name
// "b/x" in the namespace "" for the object x of the namespace b. A
// Collection is safe for concurrent use. Package hosttest checks a Store
// against this contract.
type Collection[T Object] interface {
	// Get returns the object, or an error wrapping ErrNotFound.
	Get(ctx context.Context, namespace, name string) (T, error)
	// List returns the objects opts selects, in any order.
	List(ctx context.Context, opts ListOptions) ([]T, error)
	// Create stores a new object and returns it as stored (its resource
	// version, for a certificate its UID, generation 1 and creation time,
	// and for a request its creation time, filled in when empty);
	// ErrAlreadyExists when the name is taken. A resource version is
	// never given twice, and a certificate made again under a deleted
	// one's name gets a new UID.
	Create(ctx context.Context, obj T) (T, error)
	// Update replaces the object that is still at obj's resource version
	// and returns it as stored: ErrConflict when it is at another,
	// ErrNotFound when it is gone. It keeps the UID and creation time. A
	// certificate's generation goes up when its spec changes, and only
	// then, as the API server's does. For a store backed
	// by an API with a status subresource: the loop changes only the
	// status of certificates and requests, and only the data, labels and
	// annotations of secrets.
	Update(ctx context.Context, obj T) (T, error)
	// Delete removes the object; ErrNotFound when it is not there.
	Delete(ctx context.Context, namespace, name string) error
}

// Store is where a host keeps its certificates, their secrets and their
// requests. Implement it over your storage (a database, an API, files),
// or use MemoryStore or FileStore.
type Store interface {
	Certificates() Collection[*certificate.Certificate]
	Secrets() Collection[*certificate.Secret]
	Requests() Collection[*certificate.CertificateRequest]
}

// Change is a write to a Store: the kind, namespace and name of the
// object, and its metadata after the write (before, for a delete). The
// loop reads the Meta's UID, OwnerUID and, but for a delete,
// ResourceVersion, which is the version the write returned; a store may
// leave the rest of Meta empty.
type Change struct {
	Kind            Kind
	Namespace, Name string
	Meta            certificate.ObjectMeta
	Deleted         bool
}

// Watcher is a Store that reports its writes. The loop watches a store
// that implements it, so that a write by anyone — a user creating a
// certificate, another process — queues what it concerns at once; a
// store that does not is read again only when the loop queues an object
// itself (its own writes, RequeueAt, Loop.Notify, and the resync).
type Watcher interface {
	// Watch calls f after each write, once, outside the store's locks, in
	// the order of the writes. A store that is not Authoritative calls it
	// once its reads show the write: the loop waits for the report of
	// its own write before it reads the object again.
	Watch(f func(Change))
}

// Authoritative is implemented by a Store whose reads always show every
// write that returned (no cache in between). The loop then tells the
// decisions that a secret it did not find is really gone, so a deleted
// secret is issued again at once rather than after the cache grace.
type Authoritative interface {
	Authoritative() bool
}

// Syncer is implemented by a Store whose reads may not yet show, when a
// host starts, the writes made before it — by an earlier process of the
// same host, say — because they come from a cache that fills from a
// watch (a Kubernetes informer) or from a replica that lags. HasSynced
// reports whether reads now show every write that returned before the
// host started, as an informer's HasSynced does once its first list is
// in. Until it does, a Reconciler decides nothing (its passes return
// ErrNotSynced) and a Loop lists nothing: a decision on such a read
// could ask again for what was issued already, or retry before its
// backoff ends. A Syncer that is a Watcher reports the writes that show
// meanwhile, so the Loop notices at once when it has synced; the Loop
// also asks again every second.
type Syncer interface {
	HasSynced() bool
}

// Leaser is implemented by a Store that several hosts share — replicas of
// one service over one database — so that one of them at a time works on
// an object that must not be worked on twice at once, such as a request
// whose ACME order is in flight: two replicas answering it would order
// twice. A lease has a deadline, so a replica that dies holding one holds
// it no longer than that: another takes it over once it has expired.
// Times are the callers' clocks; keep the replicas' clocks in step (NTP)
// and leases much longer than the skew between them. A Leaser is safe for
// concurrent use by every replica.
type Leaser interface {
	// Lease gives holder the lease named key until until, when no other
	// holder's lease of key is unexpired at now, or when holder holds it
	// already (a renewal, which may also shorten it). It returns the
	// lease as it stands after the call: its Holder is holder when it was
	// taken or renewed, and another holder (with its deadline) when it
	// was not — which is no error.
	Lease(ctx context.Context, key, holder string, now, until time.Time) (Lease, error)
	// Release ends holder's lease of key at once. A lease that another
	// holds, or none, is no error and is left as it is.
	Release(ctx context.Context, key, holder string) error
}

// Lease is a Leaser's lease of one key.
type Lease struct {
	Key, Holder string
	// Until is when it expires.
	Until time.Time
}

// ErrNotSynced is the error of a pass made before a Syncer store synced.
var ErrNotSynced = errors.New("the store has not synced yet: its reads may not show writes made before the host started")

func notFound(kind Kind, namespace, name string) error {
	return fmt.Errorf("%s %s: %w", kind, key(namespace, name), ErrNotFound)
}

func key(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}
