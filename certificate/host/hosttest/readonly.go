package hosttest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
)

// CheckReadOnly returns st wrapped so that t fails when anything changes
// an object that st returned, from Get, List, Create or Update. A store
// may hand out what it holds (host.Collection), as a Kubernetes
// informer's cache does, so the loop never changes what it reads — and
// neither may your own code that reads a store beside it (an issuer, a
// hook, a controller of your own): put CheckReadOnly between that code
// and the store in a test.
//
// Each object returned is checked at each of the next eight writes
// through the wrapper (most changes are made to write the changed object
// back) and, with every other object returned, when t ends. A failure names the object,
// the call that returned it and the fields that changed, never their
// values (a secret's data holds a private key). The wrapper keeps an
// encoding of every object returned until t ends: use it in tests, not
// in production.
//
// The wrapper is a host.Watcher, a host.Leaser, or both, when st is; it
// is host.Authoritative and a host.Syncer with st's answers (a store
// that is not one reads as not authoritative, and as synced). It is
// safe for concurrent use when st is.
func CheckReadOnly(t testing.TB, st host.Store) host.Store {
	t.Helper()
	r := &readOnly{st: st, t: t}
	t.Cleanup(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.check(r.all)
		r.all, r.fresh = nil, nil
	})
	w, watcher := st.(host.Watcher)
	l, leaser := st.(host.Leaser)
	switch {
	case watcher && leaser:
		return struct {
			*readOnly
			host.Watcher
			host.Leaser
		}{r, w, l}
	case watcher:
		return struct {
			*readOnly
			host.Watcher
		}{r, w}
	case leaser:
		return struct {
			*readOnly
			host.Leaser
		}{r, l}
	}
	return r
}

type readOnly struct {
	st host.Store
	t  testing.TB

	mu sync.Mutex
	// fresh are the objects returned that fewer than checkWrites writes
	// followed; all, every one returned.
	fresh, all []*returned
}

// checkWrites is how many writes after its return an object is checked
// at.
const checkWrites = 8

// returned is an object a store returned, and its encoding then.
type returned struct {
	kind   host.Kind
	call   string
	obj    metaObject
	enc    []byte
	checks int
}

// metaObject is a host.Object outside a type constraint.
type metaObject interface {
	Meta() *certificate.ObjectMeta
}

func (r *readOnly) Certificates() host.Collection[*certificate.Certificate] {
	return readOnlyCollection[*certificate.Certificate]{r, r.st.Certificates(), host.KindCertificate}
}

func (r *readOnly) Secrets() host.Collection[*certificate.Secret] {
	return readOnlyCollection[*certificate.Secret]{r, r.st.Secrets(), host.KindSecret}
}

func (r *readOnly) Requests() host.Collection[*certificate.CertificateRequest] {
	return readOnlyCollection[*certificate.CertificateRequest]{r, r.st.Requests(), host.KindRequest}
}

// Authoritative is the store's answer; false when it gives none.
func (r *readOnly) Authoritative() bool {
	a, ok := r.st.(host.Authoritative)
	return ok && a.Authoritative()
}

// HasSynced is the store's answer; true when it is not a host.Syncer.
func (r *readOnly) HasSynced() bool {
	s, ok := r.st.(host.Syncer)
	return !ok || s.HasSynced()
}

// Unwrap returns the store wrapped.
func (r *readOnly) Unwrap() host.Store { return r.st }

// keep records what the store returned.
func (r *readOnly) keep(kind host.Kind, call string, objs ...metaObject) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range objs {
		if o == nil || isNil(o) {
			continue
		}
		enc, err := json.Marshal(o)
		if err != nil {
			r.t.Errorf("hosttest: %s %s returned an object that does not encode: %v", kind, call, err)
			continue
		}
		rec := &returned{kind: kind, call: call, obj: o, enc: enc}
		r.fresh = append(r.fresh, rec)
		r.all = append(r.all, rec)
	}
}

// written checks the objects returned that fewer than checkWrites
// writes followed.
func (r *readOnly) written() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.check(r.fresh)
	kept := r.fresh[:0]
	for _, rec := range r.fresh {
		if rec.checks++; rec.checks < checkWrites {
			kept = append(kept, rec)
		}
	}
	clear(r.fresh[len(kept):])
	r.fresh = kept
}

// check fails t for each object of recs that changed; r.mu is held.
func (r *readOnly) check(recs []*returned) {
	r.t.Helper()
	for _, rec := range recs {
		now, err := json.Marshal(rec.obj)
		if err != nil {
			r.t.Errorf("hosttest: an object %s returned no longer encodes: %v", rec.call, err)
			continue
		}
		if bytes.Equal(now, rec.enc) {
			continue
		}
		m := rec.obj.Meta()
		r.t.Errorf("hosttest: %s, returned by %s, was changed after the store returned it (fields: %s): what a store returns may be what it holds, and must be copied before it is changed",
			describe(rec.kind, m), rec.call, strings.Join(changedFields(rec.enc, now), ", "))
		rec.enc = now // reported once
	}
}

// isNil reports a typed nil pointer in o.
func isNil(o metaObject) bool {
	switch v := o.(type) {
	case *certificate.Certificate:
		return v == nil
	case *certificate.Secret:
		return v == nil
	case *certificate.CertificateRequest:
		return v == nil
	}
	return false
}

// changedFields are the paths of the JSON fields that differ between a
// and b, sorted, without their values.
func changedFields(a, b []byte) []string {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return []string{"(the whole object)"}
	}
	var out []string
	diffPaths("", va, vb, &out)
	sort.Strings(out)
	if len(out) == 0 {
		out = []string{"(the encoding)"}
	}
	return out
}

func diffPaths(path string, a, b any, out *[]string) {
	ma, okA := a.(map[string]any)
	mb, okB := b.(map[string]any)
	if okA && okB {
		keys := map[string]bool{}
		for k := range ma {
			keys[k] = true
		}
		for k := range mb {
			keys[k] = true
		}
		for k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			diffPaths(p, ma[k], mb[k], out)
		}
		return
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		if path == "" {
			path = "(the whole object)"
		}
		*out = append(*out, path)
	}
}

type readOnlyCollection[T host.Object] struct {
	r    *readOnly
	c    host.Collection[T]
	kind host.Kind
}

func (c readOnlyCollection[T]) Get(ctx context.Context, namespace, name string) (T, error) {
	obj, err := c.c.Get(ctx, namespace, name)
	if err == nil {
		c.r.keep(c.kind, fmt.Sprintf("Get(%q, %q)", namespace, name), obj)
	}
	return obj, err
}

func (c readOnlyCollection[T]) List(ctx context.Context, opts host.ListOptions) ([]T, error) {
	objs, err := c.c.List(ctx, opts)
	if err == nil {
		out := make([]metaObject, len(objs))
		for i, o := range objs {
			out[i] = o
		}
		c.r.keep(c.kind, "List", out...)
	}
	return objs, err
}

func (c readOnlyCollection[T]) Create(ctx context.Context, obj T) (T, error) {
	c.r.written()
	made, err := c.c.Create(ctx, obj)
	if err == nil {
		c.r.keep(c.kind, "Create", made)
	}
	return made, err
}

func (c readOnlyCollection[T]) Update(ctx context.Context, obj T) (T, error) {
	c.r.written()
	made, err := c.c.Update(ctx, obj)
	if err == nil {
		c.r.keep(c.kind, "Update", made)
	}
	return made, err
}

func (c readOnlyCollection[T]) Delete(ctx context.Context, namespace, name string) error {
	c.r.written()
	return c.c.Delete(ctx, namespace, name)
}
