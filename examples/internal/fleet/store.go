package fleet

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/keys"
)

// store is the simulation's host.Store: leaner than host.MemoryStore, so
// that a shard holds its certificates in a few kilobytes each, and able to
// misbehave the ways a host's storage does.
//
//   - Lean: objects are held as written, not encoded; labels and
//     annotations as values against key lists the store interns, secret
//     data as sorted pairs, rather than maps; a status write shares the
//     spec of the version before; a secret's tls.crt shares its bytes with
//     the request it came from, and ca.crt with the CA's. Reads build
//     the label, annotation and data maps and share the rest with what
//     the store holds, which callers never change (host.Collection);
//     what a write is given shares its byte slices, pointers and spec
//     with what the store keeps, which the loop never changes in place
//     after the write.
//   - Lagging: with a lag, a write shows in reads (and is reported to
//     watchers, as an informer's watch does) only some time after it was
//     made; each kind's writes show in the order they were made. Writes
//     always check the latest state (a create of a name that exists fails,
//     an update at an old resource version conflicts), as an API server
//     does behind a stale informer cache. A lagging store is not
//     host.Authoritative, so the loop reads it through
//     host.ReadYourWrites.
//   - Crashing: a write may fail at chosen points (the host crashed
//     before it, or after it landed and before it heard back).
//
// The simulation drives it from one goroutine; the lock makes it a
// correct host.Store for any caller.
type store struct {
	mu      sync.Mutex
	clock   clock.PassiveClock
	version uint64
	tables  [3]*table
	// watchers see each write once it shows in reads.
	watchers []func(host.Change)
	// lagOf is how long a write takes to show; nil means at once.
	lagOf func(kind host.Kind, name string, version uint64) time.Duration
	// crash, when set, is asked before each write the loop makes (not the
	// simulation's own): crashBefore fails it, crashAfter makes it and
	// then fails.
	crash func(kind host.Kind, name string) crashPoint
	// observe sees every write as it lands (before it shows in reads):
	// the tracker's authoritative record.
	observe func(w write)
	// shared are byte strings many secrets hold (the CA's certificate):
	// a secret's copy is replaced by the shared one.
	shared [][]byte

	// keyLists are the key lists of labels and annotations objects carry.
	keyLists map[string]*keyList

	// syncAt is when the writes made before the host last started all
	// show.
	syncAt time.Time

	// staleReads counts the objects reads gave behind their latest write
	// (or absent when created, or present when deleted).
	staleReads int
}

type crashPoint uint8

const (
	noCrash crashPoint = iota
	crashBefore
	crashAfter
)

// errCrash is the error of a write at a crash point.
var errCrash = fmt.Errorf("the host crashed (simulated)")

// write is one write as it lands: the object after it (before it, for a
// delete), a copy the observer may keep.
type write struct {
	kind    host.Kind
	deleted bool
	// created: the object did not exist before.
	created bool
	obj     object
}

var kinds = [3]host.Kind{host.KindCertificate, host.KindSecret, host.KindRequest}

func newStore(clk clock.PassiveClock) *store {
	s := &store{clock: clk}
	for i := range s.tables {
		s.tables[i] = newTable(kinds[i])
	}
	return s
}

var (
	_ host.Store   = (*store)(nil)
	_ host.Watcher = (*store)(nil)
	_ host.Syncer  = (*store)(nil)
)

func (s *store) Certificates() host.Collection[*certificate.Certificate] {
	return collection[*certificate.Certificate]{s, s.tables[0]}
}

func (s *store) Secrets() host.Collection[*certificate.Secret] {
	return collection[*certificate.Secret]{s, s.tables[1]}
}

func (s *store) Requests() host.Collection[*certificate.CertificateRequest] {
	return collection[*certificate.CertificateRequest]{s, s.tables[2]}
}

// Watch implements host.Watcher.
func (s *store) Watch(f func(host.Change)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watchers = append(s.watchers, f)
}

// reopen is a new host process opening the store: the watchers of the
// one before are gone, and its reads are synced (host.Syncer) once every
// write made so far shows, as a new process's informers are once their
// first list is in.
func (s *store) reopen() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watchers = nil
	s.syncAt = time.Time{}
	for _, t := range s.tables {
		if n := len(t.pending); n > 0 && t.pending[n-1].visibleAt.After(s.syncAt) {
			s.syncAt = t.pending[n-1].visibleAt
		}
	}
}

// HasSynced implements host.Syncer.
func (s *store) HasSynced() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.clock.Now().Before(s.syncAt)
}

// object is a Certificate, Secret or CertificateRequest (host.Object,
// outside a type constraint).
type object interface {
	Meta() *certificate.ObjectMeta
}

// objKey names an object.
type objKey struct{ namespace, name string }

func (k objKey) String() string { return k.namespace + "/" + k.name }

type bytesPair struct {
	k string
	v []byte
}

// entry is one object as the store holds it. A status write makes a new
// entry that shares the spec of the one before.
type entry struct {
	meta certificate.ObjectMeta // Labels and Annotations nil
	// maps holds Labels and Annotations.
	maps packedMaps
	// body is a *certBody, a *reqBody, or a secret's secretData.
	body any
}

type certBody struct {
	spec   *certificate.Spec
	status certificate.Status
}

type reqBody struct {
	spec   *certificate.RequestSpec
	status certificate.RequestStatus
}

type secretData []bytesPair

func (e *entry) cert() *certBody {
	b, _ := e.body.(*certBody)
	return b
}

func (e *entry) req() *reqBody {
	b, _ := e.body.(*reqBody)
	return b
}

// secretName is the spec.secretName of a certificate entry.
func (e *entry) secretName() string {
	if e == nil || e.cert() == nil {
		return ""
	}
	return e.cert().spec.SecretName
}

func (e *entry) owner() string {
	if e == nil {
		return ""
	}
	return e.meta.OwnerUID
}

// nameSet is a set of names, the first held inline: most owners own one
// object of a kind, most secrets have one certificate.
type nameSet struct {
	one  string
	more []string
}

func (n nameSet) has(name string) bool { return n.one == name || slices.Contains(n.more, name) }

func (n nameSet) add(name string) nameSet {
	switch {
	case n.has(name):
	case n.one == "":
		n.one = name
	default:
		n.more = append(n.more, name)
	}
	return n
}

// remove drops name; the set is empty when one is "".
func (n nameSet) remove(name string) nameSet {
	if n.one == name {
		n.one = ""
		if len(n.more) > 0 {
			n.one = n.more[len(n.more)-1]
			n.more = n.more[:len(n.more)-1]
		}
	} else if i := slices.Index(n.more, name); i >= 0 {
		n.more = slices.Delete(n.more, i, i+1)
	}
	if len(n.more) == 0 {
		n.more = nil
	}
	return n
}

func (n nameSet) names() []string {
	if n.one == "" {
		return nil
	}
	return append([]string{n.one}, n.more...)
}

// table holds the objects of one kind: the latest state (items) and, for
// the names whose latest writes do not show yet, what reads see (behind).
type table struct {
	kind   host.Kind
	items  map[objKey]*entry
	behind map[objKey]*lagging
	// pending are the writes that do not show yet, in order.
	pending []pendingWrite
	// Indexes over the names either the latest state or reads have with
	// the value: namespace and owner UID → names, namespace and secret
	// name → certificates. A list filters what they give by what reads
	// see.
	byOwner  map[objKey]nameSet
	bySecret map[objKey]nameSet
}

type lagging struct {
	seen    *entry // nil: reads do not see the name
	pending int
	// stale are index values the name had while behind, to drop when it
	// catches up.
	staleOwners, staleSecrets []string
}

type pendingWrite struct {
	key       objKey
	e         *entry // nil for a delete
	prev      *entry // the entry before, for a delete's watch event
	visibleAt time.Time
}

func newTable(k host.Kind) *table {
	return &table{kind: k, items: map[objKey]*entry{}, behind: map[objKey]*lagging{},
		byOwner: map[objKey]nameSet{}, bySecret: map[objKey]nameSet{}}
}

// seen is what reads see of k.
func (t *table) seen(k objKey) *entry {
	if l, ok := t.behind[k]; ok {
		return l.seen
	}
	return t.items[k]
}

func addTo(ix map[objKey]nameSet, v objKey, name string) { ix[v] = ix[v].add(name) }

func dropFrom(ix map[objKey]nameSet, v objKey, name string) {
	n, ok := ix[v]
	if !ok {
		return
	}
	if n = n.remove(name); n.one == "" {
		delete(ix, v)
		return
	}
	ix[v] = n
}

func (t *table) index(k objKey, e *entry) {
	if o := e.owner(); o != "" {
		addTo(t.byOwner, objKey{k.namespace, o}, k.name)
	}
	if sn := e.secretName(); sn != "" {
		addTo(t.bySecret, objKey{k.namespace, sn}, k.name)
	}
}

// unindex drops k from the index values old had and cur does not.
func (t *table) unindex(k objKey, owners, secrets []string, cur *entry) {
	for _, o := range owners {
		if o != "" && o != cur.owner() {
			dropFrom(t.byOwner, objKey{k.namespace, o}, k.name)
		}
	}
	for _, sn := range secrets {
		if sn != "" && sn != cur.secretName() {
			dropFrom(t.bySecret, objKey{k.namespace, sn}, k.name)
		}
	}
}

// keys are the names opts may select, from an index when it can.
func (t *table) keys(opts host.ListOptions) []objKey {
	var ix map[objKey]nameSet
	var v string
	switch {
	case opts.Namespace != "" && opts.OwnerUID != "":
		ix, v = t.byOwner, opts.OwnerUID
	case opts.Namespace != "" && opts.SecretName != "":
		ix, v = t.bySecret, opts.SecretName
	}
	if ix != nil {
		set := ix[objKey{opts.Namespace, v}]
		ks := make([]objKey, 0, 1+len(set.more))
		for _, n := range set.names() {
			ks = append(ks, objKey{opts.Namespace, n})
		}
		return ks
	}
	ks := make([]objKey, 0, len(t.items)+len(t.behind))
	for k := range t.items {
		if _, ok := t.behind[k]; !ok {
			ks = append(ks, k)
		}
	}
	for k, l := range t.behind {
		if l.seen != nil {
			ks = append(ks, k)
		}
	}
	return ks
}

// put makes a write to k: it lands in items at once and shows in reads
// after lag (never before an earlier write of the kind). It returns the
// changes that show now.
func (t *table) put(k objKey, e *entry, lag time.Duration, now time.Time) []host.Change {
	prev := t.items[k]
	if e == nil {
		delete(t.items, k)
	} else {
		t.items[k] = e
		t.index(k, e)
	}
	at := now.Add(lag)
	if n := len(t.pending); n > 0 && at.Before(t.pending[n-1].visibleAt) {
		at = t.pending[n-1].visibleAt
	}
	l := t.behind[k]
	if l == nil {
		if len(t.pending) == 0 && !at.After(now) {
			// Nothing of this kind is pending: reads see it at once.
			t.unindex(k, []string{prev.owner()}, []string{prev.secretName()}, e)
			return []host.Change{t.change(k, e, prev)}
		}
		l = &lagging{seen: prev}
		t.behind[k] = l
	}
	l.pending++
	l.staleOwners = append(l.staleOwners, prev.owner())
	l.staleSecrets = append(l.staleSecrets, prev.secretName())
	t.pending = append(t.pending, pendingWrite{key: k, e: e, prev: prev, visibleAt: at})
	return t.flush(now)
}

// flush shows every write due by now, in order, and returns their
// changes.
func (t *table) flush(now time.Time) (out []host.Change) {
	i := 0
	for ; i < len(t.pending); i++ {
		p := t.pending[i]
		if p.visibleAt.After(now) {
			break
		}
		l := t.behind[p.key]
		l.pending--
		l.seen = p.e
		if l.pending == 0 {
			delete(t.behind, p.key) // reads and items agree again
			t.unindex(p.key, l.staleOwners, l.staleSecrets, t.items[p.key])
		}
		out = append(out, t.change(p.key, p.e, p.prev))
	}
	if i > 0 {
		n := copy(t.pending, t.pending[i:])
		clear(t.pending[n:]) // the vacated tail would keep objects alive
		t.pending = t.pending[:n]
		if n == 0 && cap(t.pending) > 256 {
			t.pending = nil // a burst's array goes with it
		}
		if len(t.behind) == 0 {
			t.behind = map[objKey]*lagging{}
		}
	}
	return out
}

func (t *table) change(k objKey, e, prev *entry) host.Change {
	ch := host.Change{Kind: t.kind, Namespace: k.namespace, Name: k.name}
	switch {
	case e != nil:
		ch.Meta = e.meta
	case prev != nil:
		ch.Meta, ch.Deleted = prev.meta, true
	default:
		ch.Deleted = true
	}
	return ch
}

// nextVisible is when the next pending write shows; ok is false when none
// is pending.
func (s *store) nextVisible() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var next time.Time
	ok := false
	for _, t := range s.tables {
		if len(t.pending) > 0 && (!ok || t.pending[0].visibleAt.Before(next)) {
			next, ok = t.pending[0].visibleAt, true
		}
	}
	return next, ok
}

// show shows every write due by the clock's time and tells the watchers.
func (s *store) show() {
	now := s.clock.Now()
	s.mu.Lock()
	var chs []host.Change
	for _, t := range s.tables {
		chs = append(chs, t.flush(now)...)
	}
	watchers := s.watchers
	s.mu.Unlock()
	s.tell(watchers, chs)
}

func (s *store) tell(watchers []func(host.Change), chs []host.Change) {
	for _, ch := range chs {
		for _, w := range watchers {
			w(ch)
		}
	}
}

// collection is one kind of the store, as host.Collection.
type collection[T host.Object] struct {
	s *store
	t *table
}

func (c collection[T]) Get(_ context.Context, namespace, name string) (T, error) {
	if err := checkNames(c.t.kind, namespace, name); err != nil {
		return nil, err
	}
	k := objKey{namespace, name}
	c.s.mu.Lock()
	e := c.t.seen(k)
	if _, ok := c.t.behind[k]; ok {
		c.s.staleReads++
	}
	c.s.mu.Unlock()
	if e == nil {
		return nil, fmt.Errorf("%s %s/%s: %w", c.t.kind, namespace, name, host.ErrNotFound)
	}
	return unpack[T](e), nil
}

func (c collection[T]) List(_ context.Context, opts host.ListOptions) ([]T, error) {
	c.s.mu.Lock()
	var es []*entry
	for _, k := range c.t.keys(opts) {
		if e := c.t.seen(k); e != nil && (opts.Namespace == "" || k.namespace == opts.Namespace) && e.maps.matchesLabels(opts.Labels) {
			es = append(es, e)
			if _, ok := c.t.behind[k]; ok {
				c.s.staleReads++
			}
		}
	}
	c.s.mu.Unlock()
	out := make([]T, 0, len(es))
	for _, e := range es {
		if obj := unpack[T](e); opts.Matches(obj) {
			out = append(out, obj)
		}
	}
	slices.SortFunc(out, func(a, b T) int { return strings.Compare(a.Meta().Name, b.Meta().Name) })
	return out, nil
}

func (c collection[T]) Create(_ context.Context, obj T) (T, error) {
	obj2, err := c.s.write(c.t, obj, true, false)
	if err != nil {
		return nil, err
	}
	return obj2.(T), nil
}

func (c collection[T]) Update(_ context.Context, obj T) (T, error) {
	obj2, err := c.s.write(c.t, obj, false, false)
	if err != nil {
		return nil, err
	}
	return obj2.(T), nil
}

func (c collection[T]) Delete(_ context.Context, namespace, name string) error {
	if err := checkNames(c.t.kind, namespace, name); err != nil {
		return err
	}
	return c.s.remove(c.t, objKey{namespace, name}, false)
}

// checkNames refuses a namespace or name no object can have, as
// host.MemoryStore does.
func checkNames(kind host.Kind, namespace, name string) error {
	if err := certificate.ValidateNamespace(namespace); err != nil {
		return fmt.Errorf("%s: metadata.namespace: %w", kind, err)
	}
	if err := certificate.ValidateObjectName(name); err != nil {
		return fmt.Errorf("%s: metadata.name: %w", kind, err)
	}
	return nil
}

// write creates or updates obj; user writes (the simulation's own) never
// crash.
func (s *store) write(t *table, obj object, create, user bool) (object, error) {
	m := obj.Meta()
	if m.Name == "" {
		return nil, fmt.Errorf("a %s needs metadata.name", t.kind)
	}
	if err := checkNames(t.kind, m.Namespace, m.Name); err != nil {
		return nil, err
	}
	k := objKey{m.Namespace, m.Name}
	cp := noCrash
	if s.crash != nil && !user {
		if cp = s.crash(t.kind, m.Name); cp == crashBefore {
			return nil, fmt.Errorf("%s %s: %w", t.kind, k, errCrash)
		}
	}
	now := s.clock.Now()
	s.mu.Lock()
	prev := t.items[k]
	switch {
	case create && prev != nil:
		s.mu.Unlock()
		return nil, fmt.Errorf("%s %s: %w", t.kind, k, host.ErrAlreadyExists)
	case !create && prev == nil:
		s.mu.Unlock()
		return nil, fmt.Errorf("%s %s: %w", t.kind, k, host.ErrNotFound)
	case !create && prev.meta.ResourceVersion != m.ResourceVersion:
		s.mu.Unlock()
		return nil, fmt.Errorf("%s %s is at version %s, the update read %s: %w", t.kind, k, prev.meta.ResourceVersion, m.ResourceVersion, host.ErrConflict)
	}
	s.version++
	e := s.pack(obj, prev)
	e.meta.ResourceVersion = strconv.FormatUint(s.version, 10)
	if create {
		if e.meta.UID == "" && t.kind == host.KindCertificate {
			e.meta.UID = "uid-" + m.Name + "-" + e.meta.ResourceVersion
		}
		if e.meta.CreationTimestamp.IsZero() {
			e.meta.CreationTimestamp = now
		}
		if t.kind != host.KindSecret {
			e.meta.Generation = 1
		}
	} else {
		e.meta.UID, e.meta.CreationTimestamp, e.meta.Generation = prev.meta.UID, prev.meta.CreationTimestamp, prev.meta.Generation
		if t.kind == host.KindCertificate && e.cert().spec != prev.cert().spec {
			e.meta.Generation++
		}
	}
	lag := time.Duration(0)
	if s.lagOf != nil {
		lag = s.lagOf(t.kind, m.Name, s.version)
	}
	chs := t.put(k, e, lag, now)
	watchers := s.watchers
	s.mu.Unlock()
	if s.observe != nil {
		s.observe(write{kind: t.kind, created: create, obj: unpackAny(t.kind, e)})
	}
	s.tell(watchers, chs)
	if cp == crashAfter {
		return nil, fmt.Errorf("%s %s was written, then %w", t.kind, k, errCrash)
	}
	return unpackAny(t.kind, e), nil
}

// remove deletes k.
func (s *store) remove(t *table, k objKey, user bool) error {
	cp := noCrash
	if s.crash != nil && !user {
		if cp = s.crash(t.kind, k.name); cp == crashBefore {
			return fmt.Errorf("%s %s: %w", t.kind, k, errCrash)
		}
	}
	s.mu.Lock()
	prev := t.items[k]
	if prev == nil {
		s.mu.Unlock()
		return fmt.Errorf("%s %s: %w", t.kind, k, host.ErrNotFound)
	}
	s.version++
	lag := time.Duration(0)
	if s.lagOf != nil {
		lag = s.lagOf(t.kind, k.name, s.version)
	}
	chs := t.put(k, nil, lag, s.clock.Now())
	watchers := s.watchers
	s.mu.Unlock()
	if s.observe != nil {
		s.observe(write{kind: t.kind, deleted: true, obj: unpackAny(t.kind, prev)})
	}
	s.tell(watchers, chs)
	if cp == crashAfter {
		return fmt.Errorf("%s %s was deleted, then %w", t.kind, k, errCrash)
	}
	return nil
}

// share replaces the bytes of a secret that other objects already hold:
// ca.crt by the CA's certificate, tls.crt by the chain of the owner's
// request it was issued from. s.mu is held.
func (s *store) share(e *entry, data secretData) {
	for i := range data {
		v := data[i].v
		for _, sh := range s.shared {
			if bytes.Equal(v, sh) {
				data[i].v = sh
				break
			}
		}
		if data[i].k != keys.SecretCertificate || e.meta.OwnerUID == "" {
			continue
		}
		reqs := s.tables[2]
		for _, n := range reqs.byOwner[objKey{e.meta.Namespace, e.meta.OwnerUID}].names() {
			if r := reqs.items[objKey{e.meta.Namespace, n}]; r != nil && bytes.Equal(r.req().status.Certificate, v) {
				data[i].v = r.req().status.Certificate
				break
			}
		}
	}
}

// pack turns an object into an entry the store owns: the caller may
// change obj afterwards (but not, in place, its byte slices, pointers or
// a certificate's spec). A spec equal to prev's is prev's. s.mu is held.
func (s *store) pack(obj object, prev *entry) *entry {
	e := &entry{meta: *obj.Meta()}
	e.maps = s.packMaps(e.meta.Labels, e.meta.Annotations)
	e.meta.Labels, e.meta.Annotations = nil, nil
	switch o := obj.(type) {
	case *certificate.Certificate:
		b := &certBody{status: o.Status}
		if prev != nil && reflect.DeepEqual(&o.Spec, prev.cert().spec) {
			b.spec = prev.cert().spec
		} else {
			spec := o.Spec
			b.spec = &spec
		}
		b.status.Conditions = slices.Clone(b.status.Conditions)
		e.body = b
	case *certificate.Secret:
		data := make(secretData, 0, len(o.Data))
		for k, v := range o.Data {
			data = append(data, bytesPair{k, v})
		}
		slices.SortFunc(data, func(a, b bytesPair) int { return strings.Compare(a.k, b.k) })
		s.share(e, data)
		e.body = data
	case *certificate.CertificateRequest:
		b := &reqBody{status: o.Status}
		if prev != nil && reflect.DeepEqual(&o.Spec, prev.req().spec) {
			b.spec = prev.req().spec
		} else {
			spec := o.Spec
			b.spec = &spec
		}
		b.status.Conditions = slices.Clone(b.status.Conditions)
		e.body = b
	}
	return e
}

// packedMaps are an object's labels and annotations: their values, in
// the order of a sorted key list that the store interns (the objects of
// a kind mostly carry the same keys).
type packedMaps struct {
	keys *keyList // nil when both are empty
	vals []string
}

type keyList struct {
	labels      int // keys[:labels] are the labels', the rest the annotations'
	keys        []string
	annotations map[string]int // annotation key → index in vals
}

// packMaps packs labels and annotations. s.mu is held.
func (s *store) packMaps(labels, annotations map[string]string) packedMaps {
	if len(labels)+len(annotations) == 0 {
		return packedMaps{}
	}
	ls, as := slices.Sorted(maps.Keys(labels)), slices.Sorted(maps.Keys(annotations))
	id := strings.Join(ls, "\x00") + "\x01" + strings.Join(as, "\x00")
	kl := s.keyLists[id]
	if kl == nil {
		kl = &keyList{labels: len(ls), keys: append(ls, as...), annotations: map[string]int{}}
		for i, k := range as {
			kl.annotations[k] = len(ls) + i
		}
		if s.keyLists == nil {
			s.keyLists = map[string]*keyList{}
		}
		s.keyLists[id] = kl
	}
	p := packedMaps{keys: kl, vals: make([]string, len(kl.keys))}
	for i, k := range kl.keys {
		if i < kl.labels {
			p.vals[i] = labels[k]
		} else {
			p.vals[i] = annotations[k]
		}
	}
	return p
}

func (p packedMaps) unpack() (labels, annotations map[string]string) {
	if p.keys == nil {
		return nil, nil
	}
	for i, k := range p.keys.keys {
		if i < p.keys.labels {
			if labels == nil {
				labels = make(map[string]string, p.keys.labels)
			}
			labels[k] = p.vals[i]
		} else {
			if annotations == nil {
				annotations = make(map[string]string, len(p.keys.keys)-p.keys.labels)
			}
			annotations[k] = p.vals[i]
		}
	}
	return labels, annotations
}

func (p packedMaps) annotation(key string) string {
	if p.keys == nil {
		return ""
	}
	if i, ok := p.keys.annotations[key]; ok {
		return p.vals[i]
	}
	return ""
}

func (p packedMaps) label(key string) string {
	v, _ := p.lookupLabel(key)
	return v
}

func (p packedMaps) lookupLabel(key string) (string, bool) {
	if p.keys == nil {
		return "", false
	}
	for i, k := range p.keys.keys[:p.keys.labels] {
		if k == key {
			return p.vals[i], true
		}
	}
	return "", false
}

// matchesLabels is host.ListOptions.MatchesLabels on the packed labels,
// so that List unpacks only what it returns.
func (p packedMaps) matchesLabels(sel map[string]string) bool {
	for k, v := range sel {
		if got, ok := p.lookupLabel(k); !ok || got != v {
			return false
		}
	}
	return true
}

func (e *entry) unpackMeta() certificate.ObjectMeta {
	m := e.meta
	m.Labels, m.Annotations = e.maps.unpack()
	return m
}

func unpack[T host.Object](e *entry) T {
	var zero T
	return unpackAny(kindOf(zero), e).(T)
}

func kindOf(obj any) host.Kind {
	switch obj.(type) {
	case *certificate.Certificate:
		return host.KindCertificate
	case *certificate.Secret:
		return host.KindSecret
	}
	return host.KindRequest
}

// unpackAny is the object e holds, sharing with it everything but the
// label and annotation maps, which it builds (host.Collection: callers
// never change what a store returns).
func unpackAny(kind host.Kind, e *entry) object {
	switch b := e.body.(type) {
	case *certBody:
		return &certificate.Certificate{ObjectMeta: e.unpackMeta(), Spec: *b.spec, Status: b.status}
	case secretData:
		sec := &certificate.Secret{ObjectMeta: e.unpackMeta(), Data: make(map[string][]byte, len(b))}
		for _, d := range b {
			sec.Data[d.k] = d.v
		}
		return sec
	case *reqBody:
		return &certificate.CertificateRequest{ObjectMeta: e.unpackMeta(), Spec: *b.spec, Status: b.status}
	}
	panic(fmt.Sprintf("fleet: a %s entry holds a %T", kind, e.body))
}

// Counts of what the store holds now, and whether reads show all of it.

// liveRequests counts the requests that exist (the latest state).
func (s *store) liveRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.tables[2].items)
}

// hasRequest reports whether the request exists (the latest state).
func (s *store) hasRequest(namespace, name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tables[2].items[objKey{namespace, name}] != nil
}

// latestCertificate is the certificate as it is now, whatever reads show;
// nil when it does not exist. The caller must not change it.
func (s *store) latestCertificate(namespace, name string) *certificate.Certificate {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.tables[0].items[objKey{namespace, name}]; e != nil {
		return unpackAny(host.KindCertificate, e).(*certificate.Certificate)
	}
	return nil
}

// userWrite creates or updates a certificate as a user does (kubectl):
// it never crashes, and an update checks the resource version.
func (s *store) userWrite(c *certificate.Certificate, create bool) error {
	_, err := s.write(s.tables[0], c, create, true)
	return err
}

// userDelete deletes a certificate as a user does.
func (s *store) userDelete(namespace, name string) error {
	return s.remove(s.tables[0], objKey{namespace, name}, true)
}
