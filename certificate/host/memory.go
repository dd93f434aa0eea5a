package host

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"k8s.io/utils/clock"

	"github.com/certlife/certlife/certificate"
)

// MemoryStore is a Store in memory: for tests, simulations and hosts that
// keep nothing across restarts. It keeps each object encoded, as a
// database would, so nothing is shared between what it returns and what
// it holds; it indexes objects by owner and certificates by secret name,
// reports every write to its watchers, and its reads always show every
// write (Authoritative); it keeps leases (Leaser) for the hosts that
// share it in one process. It keys objects by namespace and name apart, and
// refuses a namespace or name no object can have (certificate.
// ValidateNamespace, certificate.ValidateObjectName) with an error
// wrapping certificate.ErrInvalidName. Safe for concurrent use.
type MemoryStore struct {
	mu       sync.Mutex
	clock    clock.PassiveClock
	version  int64
	tables   map[Kind]*table
	watchers []func(Change)
	leases   leases

	// For a FileStore: the prefix of every resource version and UID (the
	// store's epoch, so that no version is ever given twice across
	// restarts), and the disk every write goes to before memory.
	prefix string
	disk   *disk
}

// NewMemoryStore returns an empty store whose creation timestamps come
// from clk (nil means the real clock).
func NewMemoryStore(clk clock.PassiveClock) *MemoryStore {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &MemoryStore{clock: clk, tables: newTables()}
}

var (
	_ Store         = (*MemoryStore)(nil)
	_ Watcher       = (*MemoryStore)(nil)
	_ Authoritative = (*MemoryStore)(nil)
)

// Certificates implements Store.
func (s *MemoryStore) Certificates() Collection[*certificate.Certificate] {
	return memCollection[*certificate.Certificate]{s, KindCertificate}
}

// Secrets implements Store.
func (s *MemoryStore) Secrets() Collection[*certificate.Secret] {
	return memCollection[*certificate.Secret]{s, KindSecret}
}

// Requests implements Store.
func (s *MemoryStore) Requests() Collection[*certificate.CertificateRequest] {
	return memCollection[*certificate.CertificateRequest]{s, KindRequest}
}

// Watch implements Watcher.
func (s *MemoryStore) Watch(f func(Change)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watchers = append(s.watchers, f)
}

// Authoritative implements Authoritative: reads show every write.
func (s *MemoryStore) Authoritative() bool { return true }

// table is the objects of one kind, encoded, with their indexes.
type table struct {
	objs     map[objKey]stored
	byOwner  map[string]map[objKey]bool // owner UID → keys
	bySecret map[objKey]map[objKey]bool // namespace and secret name → certificate keys
}

// objKey is an object's namespace and name, kept apart: no name can
// stand for another namespace's object.
type objKey struct{ namespace, name string }

func (k objKey) String() string { return key(k.namespace, k.name) }

func compareKeys(a, b objKey) int {
	return cmp.Or(strings.Compare(a.namespace, b.namespace), strings.Compare(a.name, b.name))
}

type stored struct {
	data       []byte
	meta       certificate.ObjectMeta
	spec       []byte            // certificates and requests: the spec, for generation
	secretName string            // certificates: spec.secretName
	labels     map[string]string // the object's labels, for ListOptions.Labels
}

func newTables() map[Kind]*table {
	t := map[Kind]*table{}
	for _, k := range []Kind{KindCertificate, KindSecret, KindRequest} {
		t[k] = &table{objs: map[objKey]stored{}, byOwner: map[string]map[objKey]bool{}, bySecret: map[objKey]map[objKey]bool{}}
	}
	return t
}

func (t *table) put(k objKey, e stored) {
	t.remove(k)
	t.objs[k] = e
	if e.meta.OwnerUID != "" {
		addIndex(t.byOwner, e.meta.OwnerUID, k)
	}
	if e.secretName != "" {
		addIndex(t.bySecret, objKey{e.meta.Namespace, e.secretName}, k)
	}
}

func (t *table) remove(k objKey) {
	old, ok := t.objs[k]
	if !ok {
		return
	}
	delete(t.objs, k)
	if old.meta.OwnerUID != "" {
		dropIndex(t.byOwner, old.meta.OwnerUID, k)
	}
	if old.secretName != "" {
		dropIndex(t.bySecret, objKey{old.meta.Namespace, old.secretName}, k)
	}
}

func addIndex[V comparable](ix map[V]map[objKey]bool, v V, k objKey) {
	if ix[v] == nil {
		ix[v] = map[objKey]bool{}
	}
	ix[v][k] = true
}

func dropIndex[V comparable](ix map[V]map[objKey]bool, v V, k objKey) {
	delete(ix[v], k)
	if len(ix[v]) == 0 {
		delete(ix, v)
	}
}

// keys are the keys opts may select, from an index when it can.
func (t *table) keys(opts ListOptions) []objKey {
	switch {
	case opts.OwnerUID != "":
		return slices.SortedFunc(maps.Keys(t.byOwner[opts.OwnerUID]), compareKeys)
	case opts.SecretName != "" && opts.Namespace != "":
		return slices.SortedFunc(maps.Keys(t.bySecret[objKey{opts.Namespace, opts.SecretName}]), compareKeys)
	}
	return slices.SortedFunc(maps.Keys(t.objs), compareKeys)
}

type memCollection[T Object] struct {
	s    *MemoryStore
	kind Kind
}

func (c memCollection[T]) Get(ctx context.Context, namespace, name string) (T, error) {
	if err := checkNames(c.kind, namespace, name); err != nil {
		return nil, err
	}
	c.s.mu.Lock()
	e, ok := c.s.tables[c.kind].objs[objKey{namespace, name}]
	c.s.mu.Unlock()
	if !ok {
		return nil, notFound(c.kind, namespace, name)
	}
	return decode[T](c.kind, e.data)
}

func (c memCollection[T]) List(ctx context.Context, opts ListOptions) ([]T, error) {
	if err := checkListOptions(opts); err != nil {
		return nil, err
	}
	c.s.mu.Lock()
	t := c.s.tables[c.kind]
	var raw [][]byte
	for _, k := range t.keys(opts) {
		e := t.objs[k]
		if opts.Namespace != "" && e.meta.Namespace != opts.Namespace || !opts.MatchesLabels(e.labels) {
			continue
		}
		raw = append(raw, e.data)
	}
	c.s.mu.Unlock()
	out := make([]T, 0, len(raw))
	for _, b := range raw {
		obj, err := decode[T](c.kind, b)
		if err != nil {
			return nil, err
		}
		if opts.Matches(obj) {
			out = append(out, obj)
		}
	}
	return out, nil
}

func (c memCollection[T]) Create(ctx context.Context, obj T) (T, error) {
	obj, err := clone(c.kind, obj)
	if err != nil {
		return nil, err
	}
	m := obj.Meta()
	return c.write(m.Namespace, m.Name, func(t *table, k objKey) (T, error) {
		if _, ok := t.objs[k]; ok {
			return nil, fmt.Errorf("%s %s: %w", c.kind, k, ErrAlreadyExists)
		}
		c.s.version++
		m.ResourceVersion = c.s.prefix + strconv.FormatInt(c.s.version, 10)
		if m.UID == "" {
			m.UID = fmt.Sprintf("uid-%s%08d", c.s.prefix, c.s.version)
		}
		if m.CreationTimestamp.IsZero() {
			m.CreationTimestamp = c.s.clock.Now()
		}
		if c.kind != KindSecret {
			m.Generation = 1
		}
		return obj, nil
	})
}

func (c memCollection[T]) Update(ctx context.Context, obj T) (T, error) {
	obj, err := clone(c.kind, obj)
	if err != nil {
		return nil, err
	}
	m := obj.Meta()
	return c.write(m.Namespace, m.Name, func(t *table, k objKey) (T, error) {
		old, ok := t.objs[k]
		if !ok {
			return nil, fmt.Errorf("%s %s: %w", c.kind, k, ErrNotFound)
		}
		if old.meta.ResourceVersion != m.ResourceVersion {
			return nil, fmt.Errorf("%s %s is at version %s, the update read %s: %w", c.kind, k, old.meta.ResourceVersion, m.ResourceVersion, ErrConflict)
		}
		c.s.version++
		m.ResourceVersion = c.s.prefix + strconv.FormatInt(c.s.version, 10)
		m.UID, m.CreationTimestamp, m.Generation = old.meta.UID, old.meta.CreationTimestamp, old.meta.Generation
		if spec := specOf(obj); spec != nil && !bytes.Equal(spec, old.spec) {
			m.Generation++
		}
		return obj, nil
	})
}

func (c memCollection[T]) Delete(ctx context.Context, namespace, name string) error {
	if err := checkNames(c.kind, namespace, name); err != nil {
		return err
	}
	k := objKey{namespace, name}
	c.s.mu.Lock()
	t := c.s.tables[c.kind]
	old, ok := t.objs[k]
	if !ok {
		c.s.mu.Unlock()
		return notFound(c.kind, namespace, name)
	}
	if c.s.disk != nil {
		if err := c.s.disk.remove(c.kind, k); err != nil {
			c.s.mu.Unlock()
			return err
		}
	}
	t.remove(k)
	watchers := slices.Clone(c.s.watchers)
	c.s.mu.Unlock()
	for _, w := range watchers {
		w(Change{Kind: c.kind, Namespace: namespace, Name: name, Meta: old.meta, Deleted: true})
	}
	return nil
}

// write runs f under the lock on the object at namespace/name, once both
// are found valid; when it succeeds, it stores what f returns and tells
// the watchers.
func (c memCollection[T]) write(namespace, name string, f func(t *table, k objKey) (T, error)) (T, error) {
	if err := checkNames(c.kind, namespace, name); err != nil {
		return nil, err
	}
	k := objKey{namespace, name}
	c.s.mu.Lock()
	t := c.s.tables[c.kind]
	obj, err := f(t, k)
	if err != nil {
		c.s.mu.Unlock()
		return nil, err
	}
	e, err := entryOf(c.kind, obj)
	if err != nil {
		c.s.mu.Unlock()
		return nil, err
	}
	if c.s.disk != nil {
		if err := c.s.disk.write(c.kind, k, e.data); err != nil {
			c.s.mu.Unlock()
			return nil, err
		}
	}
	t.put(k, e)
	watchers := slices.Clone(c.s.watchers)
	c.s.mu.Unlock()
	for _, w := range watchers {
		w(Change{Kind: c.kind, Namespace: namespace, Name: name, Meta: e.meta})
	}
	return clone(c.kind, obj)
}

func entryOf[T Object](kind Kind, obj T) (stored, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return stored{}, fmt.Errorf("host: encoding %s %s: %w", kind, obj.Meta().Name, err)
	}
	e := stored{data: b, meta: *obj.Meta(), spec: specOf(obj)}
	e.labels = maps.Clone(e.meta.Labels)
	e.meta.Labels, e.meta.Annotations = nil, nil // the index needs none
	if c, ok := any(obj).(*certificate.Certificate); ok {
		e.secretName = c.Spec.SecretName
	}
	return e, nil
}

// specOf is the encoded spec of a certificate or request; nil for a
// secret.
func specOf(obj any) []byte {
	var spec any
	switch v := obj.(type) {
	case *certificate.Certificate:
		spec = v.Spec
	case *certificate.CertificateRequest:
		spec = v.Spec
	default:
		return nil
	}
	b, _ := json.Marshal(spec)
	return b
}

func decode[T Object](kind Kind, b []byte) (T, error) {
	var obj T
	switch any(obj).(type) {
	case *certificate.Certificate:
		obj = any(new(certificate.Certificate)).(T)
	case *certificate.Secret:
		obj = any(new(certificate.Secret)).(T)
	case *certificate.CertificateRequest:
		obj = any(new(certificate.CertificateRequest)).(T)
	}
	if err := json.Unmarshal(b, obj); err != nil {
		return nil, fmt.Errorf("host: decoding a %s: %w", kind, err)
	}
	return obj, nil
}

func clone[T Object](kind Kind, obj T) (T, error) {
	if obj == nil {
		return nil, fmt.Errorf("host: a nil %s", kind)
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("host: encoding %s %s: %w", kind, obj.Meta().Name, err)
	}
	return decode[T](kind, b)
}

// checkNames refuses an object without a name, and one whose name or
// namespace is not valid (certificate.ValidateObjectName,
// certificate.ValidateNamespace): as no name holds a '/', no name can
// stand for an object of another namespace, whatever a store does with
// it.
func checkNames(kind Kind, namespace, name string) error {
	if name == "" {
		return fmt.Errorf("host: a %s needs metadata.name", kind)
	}
	if err := certificate.ValidateNamespace(namespace); err != nil {
		return fmt.Errorf("host: %s: metadata.namespace: %w", kind, err)
	}
	if err := certificate.ValidateObjectName(name); err != nil {
		return fmt.Errorf("host: %s: metadata.name: %w", kind, err)
	}
	return nil
}

// checkListOptions refuses a selection by a namespace or secret name that
// no object can have.
func checkListOptions(opts ListOptions) error {
	if err := certificate.ValidateNamespace(opts.Namespace); err != nil {
		return fmt.Errorf("host: listing: ListOptions.Namespace: %w", err)
	}
	if opts.SecretName != "" {
		if err := certificate.ValidateObjectName(opts.SecretName); err != nil {
			return fmt.Errorf("host: listing: ListOptions.SecretName: %w", err)
		}
	}
	if _, ok := opts.Labels[""]; ok {
		return errors.New("host: listing: ListOptions.Labels: a label key is empty")
	}
	return nil
}
