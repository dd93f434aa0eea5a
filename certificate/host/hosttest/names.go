package hosttest

import (
	"strings"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
)

// invalidNames are namespaces and names no object can have
// (certificate.ValidateNamespace, certificate.ValidateObjectName); ns is
// replaced by a namespace of the subtest.
var invalidNames = []struct{ namespace, name string }{
	{"ns", "Upper-Case"},
	{"ns", "under_score"},
	{"ns", "-leading-dash"},
	{"ns", "trailing-dot."},
	{"ns", "two..dots"},
	{"ns", "a/b"},
	{"ns", "../escape"},
	{"ns", strings.Repeat("a", certificate.MaxNameLength+1)},
	{"Upper-Namespace", "name"},
	{"dotted.namespace", "name"},
	{"a/b", "name"},
	{strings.Repeat("n", 64), "name"},
}

// testNames checks that no name reaches an object of another namespace
// — the name "<namespace>/<name>" in the namespace "" least of all, which
// a store that joins namespace and name with a '/' takes for that object
// — and, unless Config.AcceptsInvalidNames, that every call naming a
// namespace or name no object can have fails.
func testNames(h *harness) { eachKind(h, namesKind, namesKind, namesKind) }

func namesKind[T host.Object](h *harness, k kind[T]) {
	h.t.Helper()
	coll := k.coll(h.s)
	ns, name := h.ns[1], "victim"
	mustCreate(h, k, k.sample(ns, name, 1))
	before := clone(mustGet(h, k, ns, name, "after its Create"))
	alias := ns + "/" + name
	refuse := !h.cfg.AcceptsInvalidNames
	const invalid = "a name that is not valid (certificate.ValidateObjectName)"
	unchanged := func(call string) {
		h.t.Helper()
		got, err := get(h, k, ns, name)
		if err != nil {
			h.t.Errorf("%s must not reach %s: Get of it then fails: %v", call, describe(k.name, before.Meta()), err)
			return
		}
		if d := diff(before, got); d != "" {
			h.t.Errorf("%s must not reach %s: it changed (-before +after):\n%s", call, describe(k.name, before.Meta()), d)
		}
	}

	h.settle()
	call := "Get of " + string(k.name) + " " + quote(alias) + " in the namespace \"\""
	got, err := coll.Get(h.ctx, "", alias)
	switch {
	case err == nil && got != nil && got.Meta().Namespace == ns:
		h.t.Errorf("%s must not return %s", call, describe(k.name, before.Meta()))
	case err == nil && refuse:
		h.t.Errorf("%s, %s, must fail", call, invalid)
	}

	call = "Update of " + string(k.name) + " " + quote(alias) + " in the namespace \"\""
	upd := clone(before)
	upd.Meta().Namespace, upd.Meta().Name = "", alias
	k.change(upd, 2)
	if _, err := coll.Update(h.ctx, upd); err == nil && refuse {
		h.t.Errorf("%s, %s, must fail", call, invalid)
	}
	unchanged(call)

	if !userCreated(h, k) {
		call = "Create of " + string(k.name) + " " + quote(alias) + " in the namespace \"\""
		h.settle()
		if _, err := coll.Create(h.ctx, k.sample("", alias, 3)); err == nil && refuse {
			h.t.Errorf("%s, %s, must fail", call, invalid)
		}
		unchanged(call)
	}

	call = "Delete of " + string(k.name) + " " + quote(alias) + " in the namespace \"\""
	h.settle()
	if err := coll.Delete(h.ctx, "", alias); err == nil && refuse {
		h.t.Errorf("%s, %s, must fail", call, invalid)
	}
	unchanged(call)

	if !refuse {
		return
	}
	var created, read, updated, deleted []string
	for _, n := range invalidNames {
		namespace := n.namespace
		if namespace == "ns" {
			namespace = h.ns[0]
		}
		what := quote(namespace) + "/" + quote(n.name)
		h.settle()
		if !userCreated(h, k) {
			if _, err := coll.Create(h.ctx, k.sample(namespace, n.name, 4)); err == nil {
				created = append(created, what)
			}
		}
		if _, err := coll.Get(h.ctx, namespace, n.name); err == nil {
			read = append(read, what)
		}
		obj := k.sample(namespace, n.name, 5)
		obj.Meta().ResourceVersion = before.Meta().ResourceVersion
		if _, err := coll.Update(h.ctx, obj); err == nil {
			updated = append(updated, what)
		}
		if err := coll.Delete(h.ctx, namespace, n.name); err == nil {
			deleted = append(deleted, what)
		}
	}
	for _, c := range []struct {
		call  string
		names []string
	}{{"Create", created}, {"Get", read}, {"Update", updated}, {"Delete", deleted}} {
		if len(c.names) > 0 {
			h.t.Errorf("%s of a %s must fail for a namespace or name no object can have (certificate.ValidateNamespace, certificate.ValidateObjectName): it succeeded for %s",
				c.call, k.name, strings.Join(c.names, ", "))
		}
	}
	unchanged("a call naming a namespace or name no object can have")
}

// quote quotes s, shortened to 40 bytes.
func quote(s string) string {
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return `"` + s + `"`
}
