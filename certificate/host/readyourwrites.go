package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/certlife/certlife/certificate"
)

// ReadYourWrites is a Store over another whose reads may lag behind its
// writes — a Kubernetes informer cache, a read replica — whose reads show
// every write made through it: a Get or List that the store behind
// answers with the version a write through ReadYourWrites replaced (or
// without an object it created, or with one it deleted) gets the written
// version instead. It never waits: a read returns at once, with the
// newest version it knows of.
//
// It keeps each write until a read or a watch event shows the store
// behind has caught up with it (that version, or any later one; a
// deletion, until the watch reports it). It keeps the objects of at most
// MaxPending writes: beyond that the oldest write's copy goes and only
// its versions stay, so that a read the store behind answers from before
// that write fails with ErrConflict (the caller looks again later)
// rather than answer with the past. Of those, it keeps at most
// 10 × MaxPending; what goes beyond that costs at most a decision on a
// stale read.
//
// A Delete names no version. When another writer deleted an object and
// made it again since the last write through ReadYourWrites of its name,
// a Delete through it removes an object it never saw, and a read may
// show that object until the watch reports the deletion — as a read of
// the store behind would. Every other deletion through it reads as done
// at once. A Delete first reads the store behind (one Get) to learn which
// object it removes: an object of the name with another UID that the
// store shows later was made since, and reads as itself at once, not as
// deleted until the watch reports the deletion.
//
// A read it answers from a write kept returns the object the store
// behind returned for that write, the one the writer got back: as with
// any Store (Collection), what a read returns is shared and must not be
// changed.
//
// A Reconciler reads a Store that is not Authoritative through one of
// its own; share one ReadYourWrites among everything that writes
// through the same store in a process, so that each sees the others'
// writes. It is safe for concurrent use.
type ReadYourWrites struct {
	st Store
	// MaxPending bounds the writes whose objects are kept; zero means
	// 10,000.
	MaxPending int

	mu      sync.Mutex
	entries map[object]*written
	// live indexes the objects whose last write kept is a create or an
	// update — what a List may have to add — by kind, namespace and the
	// value lists select them by (a certificate's secret name, another
	// object's owner).
	live map[liveKey]map[object]bool
	// holds are, per certificate, writes of a pass that met a conflict:
	// the certificate reads as behind until the store shows them.
	holds map[object][]object
	order []pendingRef
	seq   uint64
	// bodies counts the entries that keep an object, in bodyOrder from
	// the oldest write.
	bodies    int
	bodyOrder []pendingRef
}

// liveKey is a kind, a namespace and a selecting value.
type liveKey struct {
	kind           Kind
	namespace, sel string
}

// selector is the value lists select obj by: a certificate's secret
// name, another object's owner UID.
func selector(obj any) string {
	switch v := obj.(type) {
	case *certificate.Certificate:
		return v.Spec.SecretName
	case *certificate.Secret:
		return v.OwnerUID
	case *certificate.CertificateRequest:
		return v.OwnerUID
	}
	return ""
}

// drop forgets what is kept of o; s.mu is held.
func (s *ReadYourWrites) drop(o object) {
	s.unindex(o)
	if e := s.entries[o]; e != nil && e.obj != nil {
		s.bodies--
	}
	delete(s.entries, o)
}

// strip lets the object kept of o go, keeping everything else: a read
// that shows a version from before the write fails with ErrConflict
// until the store behind shows the write; s.mu is held.
func (s *ReadYourWrites) strip(o object, e *written) {
	if !e.created {
		// A list that does not show a created object lags: its entry
		// stays in the index, so lists can tell.
		s.unindex(o)
	}
	s.bodies--
	e.obj, e.evicted = nil, true
}

// index adds o to the live index under e.sel; s.mu is held.
func (s *ReadYourWrites) index(o object, e *written) {
	e.indexed = true
	k := liveKey{o.kind, o.namespace, e.sel}
	if s.live[k] == nil {
		s.live[k] = map[object]bool{}
	}
	s.live[k][o] = true
}

func (s *ReadYourWrites) unindex(o object) {
	e := s.entries[o]
	if e == nil || !e.indexed {
		return
	}
	e.indexed = false
	k := liveKey{o.kind, o.namespace, e.sel}
	if m := s.live[k]; m != nil {
		delete(m, o)
		if len(m) == 0 {
			delete(s.live, k)
		}
	}
}

// object names one object of the store.
type object struct {
	kind            Kind
	namespace, name string
}

// written is what ReadYourWrites keeps of one object: its last write
// through it that the store behind has not been seen to show, and the
// versions a write found stale.
type written struct {
	// wrote: there is a write to show; obj is the object the store
	// behind returned for it (a *certificate.Certificate, Secret or
	// CertificateRequest, shared with the writer and every read it
	// answers, never changed), nil for a deletion.
	wrote bool
	obj   any
	// rv is the version written, and uid its object's UID when the store
	// gives one; "" for a deletion.
	rv, uid string
	// over are the versions the writes replaced, and stale those an
	// update was refused at (ErrConflict): a read that shows one lags
	// behind.
	over, stale []string
	// created: the object did not exist before the last create among
	// the writes, so a read that does not find it lags behind.
	created bool
	// unseenDelete: the writes deleted the object at a version they did
	// not know, and neither a read nor the watch has shown the deletion
	// yet: any version found other than a later write's is from before
	// it.
	unseenDelete bool
	// deletes counts the deletions written whose watch events have not
	// come yet: an earlier deletion's event, arriving late, does not end
	// the keeping of a later one.
	deletes int
	// deletedUID is the UID of the object the last deletion written
	// removed, when known: a watch event of the deletion of another
	// object of the name (an earlier one) does not end the keeping.
	deletedUID string
	// shownUID is the UID of the object the store behind showed under
	// the name when the last deletion was written ("" when it showed
	// none): an object of another UID that it shows later was made
	// after that deletion.
	shownUID string
	seq      uint64
	// evicted: the object written was let go (MaxPending); obj is nil
	// though the write was a create or an update.
	evicted bool
	// sel is the value lists select the object kept by (selector), and
	// indexed says the entry is in ReadYourWrites.live under it.
	sel     string
	indexed bool
}

// old reports a version from before the writes.
func (e *written) old(rv string) bool {
	return slices.Contains(e.over, rv) || slices.Contains(e.stale, rv)
}

type pendingRef struct {
	obj object
	seq uint64
}

// NewReadYourWrites returns a ReadYourWrites over st. When st is a
// Watcher, its events end the keeping of writes they show.
func NewReadYourWrites(st Store) *ReadYourWrites {
	s := &ReadYourWrites{st: st, entries: map[object]*written{}, holds: map[object][]object{}, live: map[liveKey]map[object]bool{}}
	if w, ok := st.(Watcher); ok {
		w.Watch(s.seen)
	}
	return s
}

var _ Store = (*ReadYourWrites)(nil)

// Unwrap returns the store behind.
func (s *ReadYourWrites) Unwrap() Store { return s.st }

// Pending is how many writes the store behind has not been seen to show.
func (s *ReadYourWrites) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

// Certificates implements Store.
func (s *ReadYourWrites) Certificates() Collection[*certificate.Certificate] {
	return rywCollection[*certificate.Certificate]{s, s.st.Certificates(), KindCertificate}
}

// Secrets implements Store.
func (s *ReadYourWrites) Secrets() Collection[*certificate.Secret] {
	return rywCollection[*certificate.Secret]{s, s.st.Secrets(), KindSecret}
}

// Requests implements Store.
func (s *ReadYourWrites) Requests() Collection[*certificate.CertificateRequest] {
	return rywCollection[*certificate.CertificateRequest]{s, s.st.Requests(), KindRequest}
}

// seen ends the keeping of a write that a watch event shows, or shows
// overtaken.
func (s *ReadYourWrites) seen(ch Change) {
	o := object{ch.Kind, ch.Namespace, ch.Name}
	rv := ch.Meta.ResourceVersion
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch.Deleted && ch.Kind == KindCertificate {
		delete(s.holds, o) // nothing is decided on a certificate that is gone
	}
	e := s.entries[o]
	switch {
	case e == nil:
	case !e.wrote && (ch.Deleted || !e.old(rv)):
		s.drop(o) // past the versions found stale
	case !e.wrote:
	case ch.Deleted && e.deletion() && e.deletedUID != "" && ch.Meta.UID != "":
		if ch.Meta.UID == e.deletedUID {
			s.drop(o) // the deletion written
		} else if e.deletes > 1 {
			e.deletes-- // an earlier deletion's event
		}
	case ch.Deleted && e.deletion() && e.deletes > 1:
		e.deletes-- // an earlier deletion's event; a later one is to come
	case ch.Deleted && (e.deletion() || rv == e.rv || e.ours(ch.Meta.UID)):
		// The deletion written, or a deletion of the version written.
		s.drop(o)
	case ch.Deleted:
		// The deletion of the object as it was before a later create.
		if e.deletes > 0 {
			e.deletes--
		}
		e.unseenDelete = e.deletes > 0
	default:
		if e.judge(true, rv, ch.Meta.UID) == caughtUp {
			s.drop(o)
		}
	}
}

// deletion reports a deletion kept (not an object let go).
func (e *written) deletion() bool { return e.wrote && e.obj == nil && !e.evicted }

// later reports that a deletion kept is overtaken by what the store
// behind shows (found, of uid): another object of the name than the
// one the store showed when the deletion was written and than the one
// deleted, which can only have been made since: a read must show it,
// not hide it behind the deletion.
func (e *written) later(found bool, uid string) bool {
	return e.deletion() && found && e.shownUID != "" && uid != "" && uid != e.shownUID && uid != e.deletedUID
}

// ours reports an object of the UID of the one written (both known).
func (e *written) ours(uid string) bool { return uid != "" && e.uid == uid }

// judge compares a version the store behind shows (found at rv, of uid)
// with a create or update written (e.obj is not nil).
func (e *written) judge(found bool, rv, uid string) verdict {
	switch {
	case e.later(found, uid):
		return caughtUp // made since the deletion written
	case found && rv == e.rv:
		return caughtUp // the version written
	case !found && e.created:
		return behind // not made yet, as far as the read knows
	case !found:
		return caughtUp // deleted by someone since
	case e.old(rv):
		return behind // a version the writes replaced, or refused at
	case e.ours(uid):
		return caughtUp // a later version of the object written
	case uid != "" && e.uid != "" && e.created:
		// Another object of the name: one from before the create (a
		// deletion of the one written would have shown first).
		return behind
	case uid != "" && e.uid != "":
		return caughtUp // the object updated was deleted and made again since
	case e.unseenDelete:
		return behind // from before the deletion written
	}
	return caughtUp // a later version, by someone else
}

// record keeps a write: obj as written (nil for a deletion, counted when
// it deleted something, shown the UID of the object the store behind
// showed before it), its version, and the version it replaced (""
// when unknown or none).
func (s *ReadYourWrites) record(o object, obj any, rv, uid, over, shown string, created, counted bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.entries[o]; e != nil && obj != nil && rv != "" && e.old(rv) {
		// The version this write made was replaced already by a later
		// write through ReadYourWrites, whose reply came first (two
		// writers: one creates a request, the other answers it before
		// the create's reply arrives). Keeping this write would make the
		// later version read as one it replaced, for good.
		if over != "" && !slices.Contains(e.over, over) {
			e.over = append(e.over, over)
		}
		return
	}
	e := s.entry(o)
	if e.rv != "" {
		e.over = append(e.over, e.rv)
	}
	if over != "" && !slices.Contains(e.over, over) {
		e.over = append(e.over, over)
	}
	e.shownUID = shown
	if obj == nil {
		e.unseenDelete = true
		if counted {
			e.deletes++
			// The object deleted is the one last written through
			// ReadYourWrites, when that was a create or an update and
			// nobody made it again since; "" when not known.
			e.deletedUID = e.uid
		}
	} else {
		e.deletedUID = ""
	}
	if created {
		e.created = true
	}
	s.unindex(o)
	if e.obj != nil {
		s.bodies--
	}
	e.wrote, e.obj, e.rv, e.uid, e.evicted = true, obj, rv, uid, false
	if obj != nil {
		s.kept(o, e)
		e.sel = selector(obj)
		s.index(o, e)
	}
}

// refused keeps a version an update was refused at: reads that show it
// lag behind the store.
func (s *ReadYourWrites) refused(o object, rv string) {
	if rv == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entry(o)
	if !slices.Contains(e.stale, rv) {
		e.stale = append(e.stale, rv)
	}
}

// entry is o's entry, made when there is none and moved to the back of
// the order; s.mu is held.
func (s *ReadYourWrites) entry(o object) *written {
	s.seq++
	e := s.entries[o]
	if e == nil {
		e = &written{}
		s.entries[o] = e
	}
	e.seq = s.seq
	s.order = append(s.order, pendingRef{o, s.seq})
	for len(s.entries) > 10*s.limit() && len(s.order) > 0 {
		head := s.order[0]
		s.order = s.order[1:]
		if old := s.entries[head.obj]; old != nil && old.seq == head.seq && old != e {
			s.drop(head.obj)
			delete(s.holds, head.obj)
		}
	}
	if len(s.order) > 2*len(s.entries)+64 {
		s.order = compact(s.order, s.entries)
	}
	return e
}

// limit is MaxPending, or its default.
func (s *ReadYourWrites) limit() int {
	if s.MaxPending <= 0 {
		return 10000
	}
	return s.MaxPending
}

// compact drops the references to entries that moved on or went.
func compact(order []pendingRef, entries map[object]*written) []pendingRef {
	kept := order[:0]
	for _, r := range order {
		if e := entries[r.obj]; e != nil && e.seq == r.seq {
			kept = append(kept, r)
		}
	}
	return slices.Clip(kept)
}

// kept counts a new object kept for e (which must not keep one yet) and
// strips the oldest beyond MaxPending; s.mu is held.
func (s *ReadYourWrites) kept(o object, e *written) {
	s.bodies++
	s.bodyOrder = append(s.bodyOrder, pendingRef{o, e.seq})
	for s.bodies > s.limit() && len(s.bodyOrder) > 0 {
		head := s.bodyOrder[0]
		s.bodyOrder = s.bodyOrder[1:]
		if old := s.entries[head.obj]; old != nil && old.seq == head.seq && old.obj != nil && old != e {
			s.strip(head.obj, old)
		}
	}
	if len(s.bodyOrder) > 2*s.bodies+64 {
		s.bodyOrder = compact(s.bodyOrder, s.entries)
	}
}

// hold makes reads of the certificate namespace/name fail with
// ErrConflict until the store behind shows the writes: those of a pass
// over it whose last write met a conflict, which says that the store's
// reads are behind some other writer's (another process's, or this
// host's before a restart). Deciding again only once the store shows the
// pass's own writes means deciding on a state the store held, in which
// everything written before them shows too (as in an informer's cache,
// which shows each kind's writes in order), not on the pass's writes
// over a base from before someone else's.
func (s *ReadYourWrites) hold(namespace, name string, writes []Change) {
	var objs []object
	for _, w := range writes {
		objs = append(objs, object{w.Kind, w.Namespace, w.Name})
	}
	if len(objs) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holds[object{KindCertificate, namespace, name}] = objs
}

// held reports whether the certificate o is held, reading the objects
// it waits for from the store behind; a hold whose writes all show goes.
func (s *ReadYourWrites) held(ctx context.Context, o object) (bool, error) {
	s.mu.Lock()
	objs := s.holds[o]
	s.mu.Unlock()
	if len(objs) == 0 {
		return false, nil
	}
	for _, w := range objs {
		s.mu.Lock()
		_, pending := s.entries[w]
		s.mu.Unlock()
		if !pending {
			continue
		}
		var m *certificate.ObjectMeta
		var err error
		switch w.kind {
		case KindCertificate:
			var c *certificate.Certificate
			if c, err = s.st.Certificates().Get(ctx, w.namespace, w.name); err == nil {
				m = &c.ObjectMeta
			}
		case KindSecret:
			var c *certificate.Secret
			if c, err = s.st.Secrets().Get(ctx, w.namespace, w.name); err == nil {
				m = &c.ObjectMeta
			}
		case KindRequest:
			var c *certificate.CertificateRequest
			if c, err = s.st.Requests().Get(ctx, w.namespace, w.name); err == nil {
				m = &c.ObjectMeta
			}
		}
		if err != nil && !errors.Is(err, ErrNotFound) {
			return false, err
		}
		rv, uid := "", ""
		if m != nil {
			rv, uid = m.ResourceVersion, m.UID
		}
		if _, v, ok := s.judge(w, m != nil, rv, uid); ok && v != caughtUp {
			return true, nil
		}
	}
	s.mu.Lock()
	delete(s.holds, o)
	s.mu.Unlock()
	return false, nil
}

// verdict is what a read of the store behind says of what is kept.
type verdict int

const (
	caughtUp verdict = iota // the read shows the write or later: drop it
	behind                  // the read lags: answer with the write
	stale                   // the read shows a version an update was refused at, and nothing newer is known
)

// judge compares what the store behind read (found, at version rv) with
// what is kept for o; ok is false when nothing is. It drops what the read
// shows caught up with.
func (s *ReadYourWrites) judge(o object, found bool, rv, uid string) (kept keptWrite, v verdict, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[o]
	if e == nil {
		return keptWrite{}, caughtUp, false
	}
	switch {
	case found && slices.Contains(e.stale, rv) && !e.wrote:
		v = stale
	case !e.wrote:
		v = caughtUp
	case e.later(found, uid):
		// Another object of the name than the store showed when the
		// deletion was written: made since, by someone else.
		v = caughtUp
	case e.deletion():
		// Found: from before the deletion (or made again since, until the
		// watch says so or the object is known to be another). Not found:
		// the read may be from before the object was made, which says
		// nothing of the deletion. Kept until the watch shows the
		// deletion.
		v = behind
	default:
		v = e.judge(found, rv, uid)
		if v == behind && e.evicted {
			v = stale // nothing to answer with
		}
	}
	if v == caughtUp {
		s.drop(o)
		return keptWrite{}, v, true
	}
	return keptWrite{e.obj}, v, true
}

// keptWrite is a create or update kept (nil obj: a deletion), which a read
// answers with.
type keptWrite struct {
	obj any
}

// adds are the kept writes of kind that a list of the store behind did
// not show, made since it was last seen: created, or changed so that
// they match the list now.
//
// lagging names an object created through ReadYourWrites whose copy was
// let go (MaxPending) that the list did not show: the list is from
// before it.
func (s *ReadYourWrites) adds(kind Kind, opts ListOptions, listed map[object]bool) (out []keptWrite, lagging object, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	add := func(m map[object]bool) {
		for o := range m {
			e := s.entries[o]
			switch {
			case e == nil || listed[o]:
			case e.obj != nil && opts.Matches(e.obj):
				out = append(out, keptWrite{e.obj})
			case e.evicted && e.created:
				lagging, ok = o, true
			}
		}
	}
	switch {
	case opts.Namespace != "" && kind == KindCertificate && opts.SecretName != "":
		add(s.live[liveKey{kind, opts.Namespace, opts.SecretName}])
	case opts.Namespace != "" && kind != KindCertificate && opts.OwnerUID != "":
		add(s.live[liveKey{kind, opts.Namespace, opts.OwnerUID}])
	default:
		for k, m := range s.live {
			if k.kind == kind && (opts.Namespace == "" || k.namespace == opts.Namespace) {
				add(m)
			}
		}
	}
	return out, lagging, ok
}

type rywCollection[T Object] struct {
	s    *ReadYourWrites
	c    Collection[T]
	kind Kind
}

func (c rywCollection[T]) Get(ctx context.Context, namespace, name string) (T, error) {
	if c.kind == KindCertificate {
		held, err := c.s.held(ctx, object{c.kind, namespace, name})
		if err != nil {
			return nil, err
		}
		if held {
			return nil, fmt.Errorf("%s %s: the store does not show yet the writes of the last pass, which met a conflict: %w", c.kind, key(namespace, name), ErrConflict)
		}
	}
	obj, err := c.c.Get(ctx, namespace, name)
	notFound := errors.Is(err, ErrNotFound)
	if err != nil && !notFound {
		return nil, err
	}
	rv, uid := "", ""
	if !notFound {
		rv, uid = obj.Meta().ResourceVersion, obj.Meta().UID
	}
	kept, v, ok := c.s.judge(object{c.kind, namespace, name}, !notFound, rv, uid)
	switch {
	case !ok || v == caughtUp:
		return obj, err
	case v == stale && notFound:
		return nil, fmt.Errorf("%s %s: the store does not show yet an object created through it: %w", c.kind, key(namespace, name), ErrConflict)
	case v == stale:
		return nil, fmt.Errorf("%s %s: the store still reads version %s, from before a write through it or one an update found stale: %w", c.kind, key(namespace, name), rv, ErrConflict)
	}
	if kept.obj == nil {
		return nil, fmt.Errorf("%s %s: deleted: %w", c.kind, key(namespace, name), ErrNotFound)
	}
	return kept.obj.(T), nil
}

func (c rywCollection[T]) List(ctx context.Context, opts ListOptions) ([]T, error) {
	objs, err := c.c.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	out := objs[:0:0]
	listed := make(map[object]bool, len(objs))
	for _, obj := range objs {
		m := obj.Meta()
		o := object{c.kind, m.Namespace, m.Name}
		listed[o] = true
		kept, v, ok := c.s.judge(o, true, m.ResourceVersion, m.UID)
		switch {
		case v == stale && ok:
			return nil, fmt.Errorf("%s %s: the store lists version %s, from before a write through it or one an update found stale: %w", c.kind, key(m.Namespace, m.Name), m.ResourceVersion, ErrConflict)
		case !ok || v == caughtUp:
			out = append(out, obj)
		case kept.obj == nil:
			// deleted
		case opts.Matches(kept.obj):
			out = append(out, kept.obj.(T))
		}
	}
	adds, lagging, behind := c.s.adds(c.kind, opts, listed)
	if behind {
		return nil, fmt.Errorf("%s %s: the store does not list yet an object created through it: %w", c.kind, key(lagging.namespace, lagging.name), ErrConflict)
	}
	for _, kept := range adds {
		out = append(out, kept.obj.(T))
	}
	return out, nil
}

func (c rywCollection[T]) Create(ctx context.Context, obj T) (T, error) {
	made, err := c.c.Create(ctx, obj)
	if err != nil {
		return made, err
	}
	if err := c.keep(made, "", true); err != nil {
		return nil, err
	}
	return made, nil
}

func (c rywCollection[T]) Update(ctx context.Context, obj T) (T, error) {
	m := obj.Meta()
	over := m.ResourceVersion
	made, err := c.c.Update(ctx, obj)
	if errors.Is(err, ErrConflict) {
		c.s.refused(object{c.kind, m.Namespace, m.Name}, over)
	}
	if err != nil {
		return made, err
	}
	if err := c.keep(made, over, false); err != nil {
		return nil, err
	}
	return made, nil
}

func (c rywCollection[T]) keep(made T, over string, created bool) error {
	if made == nil {
		return fmt.Errorf("host: the store returned no %s from a write", c.kind)
	}
	m := made.Meta()
	c.s.record(object{c.kind, m.Namespace, m.Name}, made, m.ResourceVersion, m.UID, over, "", created, false)
	return nil
}

func (c rywCollection[T]) Delete(ctx context.Context, namespace, name string) error {
	// What the store behind shows now is what the deletion removes, or
	// older: an object of another UID shown later is newer. Without it,
	// a read after someone else made the name again would be answered
	// "not found" until the watch reported this deletion, and a host
	// that reads because of that create (a watch of its own) would
	// never look again.
	shown := ""
	if cur, err := c.c.Get(ctx, namespace, name); err == nil && cur != nil {
		shown = cur.Meta().UID
	}
	err := c.c.Delete(ctx, namespace, name)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	// Gone either way; a read that still shows it lags.
	c.s.record(object{c.kind, namespace, name}, nil, "", "", "", shown, false, err == nil)
	return err
}
