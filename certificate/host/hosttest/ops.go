package hosttest

import (
	"slices"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
)

// The suite's calls on the store: writes are noted for the Watcher and
// for lagging reads; every call waits for a lagging store to settle
// first, as the loop waits for its own writes to show before it reads and
// writes an object again (a store in front of a cache may check an
// update's version against the cache).

// sub runs f as a subtest on the same store.
func (h *harness) sub(name string, f func(h *harness)) {
	h.t.Helper()
	h.t.Run(name, func(t tb) {
		t.Helper()
		c := *h
		c.t = t
		defer func() { h.dirty = c.dirty }()
		defer c.finish()
		f(&c)
	})
}

// userCreated reports whether the suite makes objects of k through
// Config.CreateCertificate rather than the store's Create.
func userCreated[T host.Object](h *harness, k kind[T]) bool {
	return k.name == host.KindCertificate && h.cfg.CreateCertificate != nil
}

// create makes obj as the loop (or, per Config.CreateCertificate, a user)
// would.
func create[T host.Object](h *harness, k kind[T], obj T) (T, error) {
	h.t.Helper()
	h.settle()
	var made T
	var err error
	if userCreated(h, k) {
		var c *certificate.Certificate
		c, err = h.cfg.CreateCertificate(h.ctx, h.s, any(obj).(*certificate.Certificate))
		if c != nil {
			made = any(c).(T)
		}
	} else {
		made, err = k.coll(h.s).Create(h.ctx, obj)
	}
	if err == nil {
		if made == nil {
			h.t.Fatalf("Create of %s must return the object as stored: it returned nil and no error", describe(k.name, obj.Meta()))
		}
		h.written(k.name, "the Create of "+describe(k.name, obj.Meta()), *made.Meta(), false)
	}
	return made, err
}

// mustCreate is create that stops the subtest when it fails.
func mustCreate[T host.Object](h *harness, k kind[T], obj T) T {
	h.t.Helper()
	made, err := create(h, k, obj)
	if err != nil {
		h.t.Fatalf("Create of a new %s must succeed: %v", describe(k.name, obj.Meta()), err)
	}
	return made
}

func update[T host.Object](h *harness, k kind[T], obj T) (T, error) {
	h.t.Helper()
	h.settle()
	made, err := k.coll(h.s).Update(h.ctx, obj)
	if err == nil {
		if made == nil {
			h.t.Fatalf("Update of %s must return the object as stored: it returned nil and no error", describe(k.name, obj.Meta()))
		}
		h.written(k.name, "the Update of "+describe(k.name, obj.Meta()), *made.Meta(), false)
	}
	return made, err
}

func mustUpdate[T host.Object](h *harness, k kind[T], obj T) T {
	h.t.Helper()
	made, err := update(h, k, obj)
	if err != nil {
		h.t.Fatalf("Update of %s at its resource version %q must succeed: %v", describe(k.name, obj.Meta()), obj.Meta().ResourceVersion, err)
	}
	return made
}

// remove deletes last, the object as the suite last knew it.
func remove[T host.Object](h *harness, k kind[T], last T) error {
	h.t.Helper()
	h.settle()
	m := last.Meta()
	err := k.coll(h.s).Delete(h.ctx, m.Namespace, m.Name)
	if err == nil {
		h.written(k.name, "the Delete of "+describe(k.name, m), *m, true)
	}
	return err
}

func mustRemove[T host.Object](h *harness, k kind[T], last T) {
	h.t.Helper()
	if err := remove(h, k, last); err != nil {
		h.t.Fatalf("Delete of %s must succeed: %v", describe(k.name, last.Meta()), err)
	}
}

// get reads an object once the store shows the suite's writes.
func get[T host.Object](h *harness, k kind[T], namespace, name string) (T, error) {
	h.t.Helper()
	h.settle()
	return k.coll(h.s).Get(h.ctx, namespace, name)
}

// mustGet is get of an object that must be there.
func mustGet[T host.Object](h *harness, k kind[T], namespace, name, after string) T {
	h.t.Helper()
	obj, err := get(h, k, namespace, name)
	if err != nil {
		h.t.Fatalf("Get of %s %s/%s %s must find it: %v", k.name, namespace, name, after, err)
	}
	if obj == nil {
		h.t.Fatalf("Get of %s %s/%s %s returned nil and no error", k.name, namespace, name, after)
	}
	return obj
}

// list lists once the store shows the suite's writes, keeping only the
// objects of the subtest's namespaces.
func list[T host.Object](h *harness, k kind[T], opts host.ListOptions) []T {
	h.t.Helper()
	h.settle()
	objs, err := k.coll(h.s).List(h.ctx, opts)
	if err != nil {
		h.t.Fatalf("List of %ss with %+v must succeed: %v", k.name, opts, err)
	}
	out := objs[:0:0]
	for _, o := range objs {
		if o == nil {
			h.t.Errorf("List of %ss with %+v must return objects: it returned a nil one", k.name, opts)
			continue
		}
		if slices.Contains(h.ns[:], o.Meta().Namespace) {
			out = append(out, o)
		}
	}
	return out
}
