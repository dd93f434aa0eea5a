package hosttest

import (
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
)

// eachKind runs f as a subtest for each kind of object.
func eachKind(h *harness, fc func(*harness, kind[*certificate.Certificate]), fs func(*harness, kind[*certificate.Secret]), fr func(*harness, kind[*certificate.CertificateRequest])) {
	h.sub(string(host.KindCertificate), func(h *harness) { fc(h, certificates) })
	h.sub(string(host.KindSecret), func(h *harness) { fs(h, secrets) })
	h.sub(string(host.KindRequest), func(h *harness) { fr(h, requests) })
}

// readNote explains, for a store whose reads lag, when the suite read.
func (h *harness) readNote() string {
	if h.auth {
		return ""
	}
	if h.cfg.Settle != nil {
		return " (read after Config.Settle returned)"
	}
	return " (read after the Watcher reported the write: a store whose reads lag reports a write once its reads show it)"
}

// checkWritten reports what got does not keep of what was written
// (sent): name, owner, labels and annotations (a secret's exactly,
// another's at least), a certificate's secret name and DNS names, a
// request's CSR and issuer, a secret's data, and the status.
func checkWritten[T host.Object](h *harness, k kind[T], sent, got T, rule string) {
	h.t.Helper()
	sm, gm := sent.Meta(), got.Meta()
	what := describe(k.name, sm)
	if gm.Namespace != sm.Namespace || gm.Name != sm.Name {
		h.t.Errorf("%s: %s came back as %s/%s", rule, what, gm.Namespace, gm.Name)
	}
	if gm.OwnerUID != sm.OwnerUID {
		h.t.Errorf("%s: %s has ownerUID %q, want %q", rule, what, gm.OwnerUID, sm.OwnerUID)
	}
	if k.name == host.KindSecret {
		if d := diff(h.secretLabels(sm.Labels), gm.Labels); d != "" {
			h.t.Errorf("%s: a secret keeps its labels exactly: %s's differ (-written +got):\n%s", rule, what, d)
		}
		if d := diff(sm.Annotations, gm.Annotations); d != "" {
			h.t.Errorf("%s: a secret keeps its annotations exactly: %s's differ (-written +got):\n%s", rule, what, d)
		}
	} else {
		for _, l := range []struct {
			name      string
			sent, got map[string]string
		}{{"label", sm.Labels, gm.Labels}, {"annotation", sm.Annotations, gm.Annotations}} {
			for key, v := range l.sent {
				if g, ok := l.got[key]; !ok || g != v {
					h.t.Errorf("%s: %s has %s %s=%q, want %q", rule, what, l.name, key, g, v)
				}
			}
		}
	}
	switch s := any(sent).(type) {
	case *certificate.Certificate:
		g := any(got).(*certificate.Certificate)
		if g.Spec.SecretName != s.Spec.SecretName || !slices.Equal(g.Spec.DNSNames, s.Spec.DNSNames) {
			h.t.Errorf("%s: %s has spec.secretName %q and spec.dnsNames %q, want %q and %q", rule, what, g.Spec.SecretName, g.Spec.DNSNames, s.Spec.SecretName, s.Spec.DNSNames)
		}
		if d := diff(s.Status, g.Status); d != "" {
			h.t.Errorf("%s: %s's status differs (-written +got):\n%s", rule, what, d)
		}
	case *certificate.CertificateRequest:
		g := any(got).(*certificate.CertificateRequest)
		if string(g.Spec.Request) != string(s.Spec.Request) || g.Spec.IssuerRef.Name != s.Spec.IssuerRef.Name {
			h.t.Errorf("%s: %s has spec.request %q and spec.issuerRef.name %q, want %q and %q", rule, what, g.Spec.Request, g.Spec.IssuerRef.Name, s.Spec.Request, s.Spec.IssuerRef.Name)
		}
		if d := diff(s.Status, g.Status); d != "" {
			h.t.Errorf("%s: %s's status differs (-written +got):\n%s", rule, what, d)
		}
	case *certificate.Secret:
		g := any(got).(*certificate.Secret)
		if d := diff(s.Data, g.Data); d != "" {
			h.t.Errorf("%s: a secret keeps its data exactly, every key and byte: %s's differs (-written +got):\n%s", rule, what, d)
		}
	}
}

// checkFilled reports what Create must have filled in and got lacks.
func checkFilled[T host.Object](h *harness, k kind[T], got T, rule string) {
	h.t.Helper()
	m := got.Meta()
	what := describe(k.name, m)
	if m.ResourceVersion == "" {
		h.t.Errorf("%s: %s has no metadata.resourceVersion", rule, what)
	}
	if k.name == host.KindCertificate {
		if m.UID == "" {
			h.t.Errorf("%s: %s has no metadata.uid", rule, what)
		}
		if m.Generation != 1 {
			h.t.Errorf("%s: %s has metadata.generation %d, want 1", rule, what, m.Generation)
		}
	}
	if k.name != host.KindSecret && m.CreationTimestamp.IsZero() {
		h.t.Errorf("%s: %s has no metadata.creationTimestamp", rule, what)
	}
}

func testCreate(h *harness) { eachKind(h, createKind, createKind, createKind) }

func createKind[T host.Object](h *harness, k kind[T]) {
	h.t.Helper()
	ns := h.ns[0]
	obj := k.sample(ns, "created", 1)
	sent := clone(obj)
	made := mustCreate(h, k, obj)
	if !userCreated(h, k) {
		checkFilled(h, k, made, "Create must fill in metadata the loop relies on")
		checkWritten(h, k, sent, made, "Create must return the object as stored")
	}
	if _, err := k.coll(h.s).Get(h.ctx, ns, "created"); errors.Is(err, host.ErrAbsenceConfirmed) {
		h.t.Errorf("Get must not confirm the absence of an object that exists (ErrAbsenceConfirmed): Get of %s right after its Create returned %v", describe(k.name, sent.Meta()), err)
	}
	got := mustGet(h, k, ns, "created", "after its Create")
	if got.Meta().ResourceVersion != made.Meta().ResourceVersion {
		h.t.Errorf("Get after Create must show the object at the version Create returned: got %q, want %q%s", got.Meta().ResourceVersion, made.Meta().ResourceVersion, h.readNote())
	}
	checkFilled(h, k, got, "What Get returns of a created object must have what Create fills in")
	checkWritten(h, k, sent, got, "Get after Create must return what was created")
	if !userCreated(h, k) {
		if d := diff(made, got); d != "" {
			h.t.Errorf("Get after Create must return the object as Create returned it (-Create +Get):\n%s", d)
		}
		_, err := k.coll(h.s).Create(h.ctx, k.sample(ns, "created", 2))
		h.wantErr(err, host.ErrAlreadyExists, "Create of a name that is taken must fail")
		if after := mustGet(h, k, ns, "created", "after a Create of its name was refused"); after.Meta().ResourceVersion != made.Meta().ResourceVersion {
			h.t.Errorf("a refused Create must change nothing: %s is at version %q after it, want %q", describe(k.name, sent.Meta()), after.Meta().ResourceVersion, made.Meta().ResourceVersion)
		}
		if _, err := k.coll(h.s).Create(h.ctx, k.sample(ns, "", 3)); err == nil {
			h.t.Errorf("Create of an object without metadata.name must fail: it succeeded")
		}
	}
}

func testGetMissing(h *harness) { eachKind(h, getMissingKind, getMissingKind, getMissingKind) }

func getMissingKind[T host.Object](h *harness, k kind[T]) {
	h.t.Helper()
	got, err := get(h, k, h.ns[0], "missing")
	h.wantErr(err, host.ErrNotFound, "Get of a missing %s must fail", k.name)
	if err == nil && got != nil {
		h.t.Errorf("Get of a missing %s must return nothing: got %s", k.name, describe(k.name, got.Meta()))
	}
}

func testIsolation(h *harness) { eachKind(h, isolationKind, isolationKind, isolationKind) }

func isolationKind[T host.Object](h *harness, k kind[T]) {
	h.t.Helper()
	ns, name := h.ns[0], "copied"
	deep := !h.cfg.SharesValues
	obj := k.sample(ns, name, 1)
	made := mustCreate(h, k, obj)
	want := clone(mustGet(h, k, ns, name, "after its Create"))
	unchanged := func(rule string) {
		h.t.Helper()
		if d := diff(want, mustGet(h, k, ns, name, "after "+rule)); d != "" {
			h.t.Errorf("%s must change nothing stored: %s changed (-before +after):\n%s", rule, describe(k.name, want.Meta()), d)
		}
	}
	if !userCreated(h, k) {
		k.mutate(obj, deep)
		unchanged("changing what was passed to Create")
	}

	// What the store returns may be what it holds, but it never changes
	// once returned: a write replaces it.
	read := mustGet(h, k, ns, name, "after its Create")
	listed := list(h, k, host.ListOptions{Namespace: ns})
	returned := []T{read}
	if !userCreated(h, k) {
		returned = append(returned, made)
	}
	returned = append(returned, listed...)
	before := make([]T, len(returned))
	for i, o := range returned {
		before[i] = clone(o)
	}

	upd := clone(want)
	k.change(upd, 1)
	mustUpdate(h, k, upd)
	want = clone(mustGet(h, k, ns, name, "after its Update"))
	k.mutate(upd, deep)
	unchanged("changing what was passed to Update")
	for i, o := range returned {
		if d := diff(before[i], o); d != "" {
			h.t.Errorf("an object the store returned must not change when the store is written (a write replaces what the store holds, since callers share what it returns): %s changed (-before +after):\n%s", describe(k.name, before[i].Meta()), d)
		}
	}
}

func testList(h *harness) {
	a, b := h.ns[0], h.ns[1]
	u1, owner1 := owner(1)
	u2, owner2 := owner(2)
	h.sub(string(host.KindCertificate), func(h *harness) {
		k := certificates
		made := map[string]*certificate.Certificate{}
		for _, c := range []struct{ ns, name, secret string }{{a, "c1", "shared"}, {a, "c2", "shared"}, {a, "c3", "own"}, {b, "c4", "shared"}} {
			obj := k.sample(c.ns, c.name, len(made))
			obj.Spec.SecretName = c.secret
			made[c.name] = mustCreate(h, k, obj)
		}
		all := []string{a + "/c1", a + "/c2", a + "/c3", b + "/c4"}
		checkLists(h, k, made, []listCase{
			{host.ListOptions{}, all},
			{host.ListOptions{Namespace: a}, all[:3]},
			{host.ListOptions{Namespace: a, SecretName: "shared"}, all[:2]},
			{host.ListOptions{Namespace: b, SecretName: "shared"}, all[3:]},
			{host.ListOptions{Namespace: a, SecretName: "none"}, nil},
			{host.ListOptions{Namespace: "hosttest-none"}, nil},
		})
		// Deleted, and (as a user may) its secret renamed: each leaves
		// the selection.
		mustRemove(h, k, made["c1"])
		delete(made, "c1")
		if h.cfg.StatusOnly {
			checkLists(h, k, made, []listCase{
				{host.ListOptions{Namespace: a, SecretName: "shared"}, []string{a + "/c2"}},
				{host.ListOptions{}, all[1:]},
			})
			return
		}
		c2 := clone(mustGet(h, k, a, "c2", "after its Create"))
		c2.Spec.SecretName = "own"
		made["c2"] = mustUpdate(h, k, c2)
		checkLists(h, k, made, []listCase{
			{host.ListOptions{Namespace: a, SecretName: "shared"}, nil},
			{host.ListOptions{Namespace: a, SecretName: "own"}, []string{a + "/c2", a + "/c3"}},
			{host.ListOptions{Namespace: b, SecretName: "shared"}, all[3:]},
			{host.ListOptions{}, all[1:]},
		})
	})
	h.sub(string(host.KindRequest), func(h *harness) {
		k := requests
		made := map[string]*certificate.CertificateRequest{}
		for _, r := range []struct{ ns, name, uid, owner string }{{a, "r1", u1, owner1}, {a, "r2", u1, owner1}, {a, "r3", u2, owner2}, {b, "r4", u1, owner1}} {
			obj := k.sample(r.ns, r.name, len(made))
			obj.OwnerUID, obj.Annotations[certificate.AnnotationCertificateName] = r.uid, r.owner
			made[r.name] = mustCreate(h, k, obj)
		}
		all := []string{a + "/r1", a + "/r2", a + "/r3", b + "/r4"}
		checkLists(h, k, made, []listCase{
			{host.ListOptions{}, all},
			{host.ListOptions{Namespace: a}, all[:3]},
			{host.ListOptions{Namespace: b}, all[3:]},
			{host.ListOptions{Namespace: a, OwnerUID: u1}, all[:2]},
			{host.ListOptions{OwnerUID: u1}, []string{a + "/r1", a + "/r2", b + "/r4"}},
			{host.ListOptions{Namespace: b, OwnerUID: u2}, nil},
			{host.ListOptions{Namespace: b, OwnerUID: u1}, all[3:]},
			{host.ListOptions{OwnerUID: "hosttest-nobody"}, nil},
		})
		mustRemove(h, k, made["r2"])
		delete(made, "r2")
		r1 := clone(made["r1"])
		k.change(r1, 1)
		made["r1"] = mustUpdate(h, k, r1)
		checkLists(h, k, made, []listCase{
			{host.ListOptions{Namespace: a, OwnerUID: u1}, []string{a + "/r1"}},
			{host.ListOptions{OwnerUID: u1}, []string{a + "/r1", b + "/r4"}},
			{host.ListOptions{}, []string{a + "/r1", a + "/r3", b + "/r4"}},
		})
	})
	h.sub(string(host.KindSecret), func(h *harness) {
		k := secrets
		made := map[string]*certificate.Secret{}
		for _, s := range []struct{ ns, name, uid, owner, next string }{{a, "s1", u1, owner1, "true"}, {a, "s2", u2, owner2, "false"}, {b, "s3", u1, owner1, "true"}} {
			obj := k.sample(s.ns, s.name, len(made))
			obj.OwnerUID, obj.Annotations[certificate.AnnotationCertificateName] = s.uid, s.owner
			obj.Labels[certificate.LabelNextPrivateKey] = s.next
			made[s.name] = mustCreate(h, k, obj)
		}
		all := []string{a + "/s1", a + "/s2", b + "/s3"}
		next := map[string]string{certificate.LabelNextPrivateKey: "true"}
		checkLists(h, k, made, []listCase{
			{host.ListOptions{}, all},
			{host.ListOptions{Namespace: a}, all[:2]},
			{host.ListOptions{Namespace: a, OwnerUID: u1}, all[:1]},
			{host.ListOptions{Namespace: a, OwnerUID: u2}, all[1:2]},
			{host.ListOptions{OwnerUID: u1}, []string{a + "/s1", b + "/s3"}},
			{host.ListOptions{Namespace: b, OwnerUID: u2}, nil},
			// Labels: every key with its value; a key must be there,
			// even for an empty value.
			{host.ListOptions{Namespace: a, OwnerUID: u1, Labels: next}, all[:1]},
			{host.ListOptions{OwnerUID: u1, Labels: next}, []string{a + "/s1", b + "/s3"}},
			{host.ListOptions{Namespace: a, OwnerUID: u2, Labels: next}, nil},
			{host.ListOptions{Labels: map[string]string{certificate.LabelNextPrivateKey: "false"}}, all[1:2]},
			{host.ListOptions{Namespace: a, Labels: map[string]string{certificate.LabelNextPrivateKey: "true", labelSample: "0"}}, all[:1]},
			{host.ListOptions{Labels: map[string]string{certificate.LabelNextPrivateKey: "true", labelSample: "1"}}, nil},
			{host.ListOptions{Labels: map[string]string{"hosttest-absent": ""}}, nil},
		})
		// Relabelled: it joins the selection of its new labels.
		s2 := clone(made["s2"])
		s2.Labels[certificate.LabelNextPrivateKey] = "true"
		made["s2"] = mustUpdate(h, k, s2)
		checkLists(h, k, made, []listCase{
			{host.ListOptions{Namespace: a, Labels: next}, all[:2]},
			{host.ListOptions{Labels: map[string]string{certificate.LabelNextPrivateKey: "false"}}, nil},
		})
		// Taken over by another owner: it leaves the first owner's
		// selection.
		s1 := clone(made["s1"])
		s1.OwnerUID, s1.Annotations[certificate.AnnotationCertificateName] = u2, owner2
		made["s1"] = mustUpdate(h, k, s1)
		checkLists(h, k, made, []listCase{
			{host.ListOptions{Namespace: a, OwnerUID: u1}, nil},
			{host.ListOptions{Namespace: a, OwnerUID: u2}, all[:2]},
			{host.ListOptions{OwnerUID: u1}, all[2:]},
			{host.ListOptions{Namespace: a, OwnerUID: u2, Labels: next}, all[:2]},
			{host.ListOptions{OwnerUID: u1, Labels: next}, all[2:]},
		})
		mustRemove(h, k, made["s3"])
		delete(made, "s3")
		checkLists(h, k, made, []listCase{
			{host.ListOptions{OwnerUID: u1}, nil},
			{host.ListOptions{}, all[:2]},
		})
	})
}

type listCase struct {
	opts host.ListOptions
	want []string // namespace/name, sorted
}

// checkLists lists with each case's options and checks that each selects
// exactly the objects it names, once each, at the versions made holds.
func checkLists[T host.Object](h *harness, k kind[T], made map[string]T, cases []listCase) {
	h.t.Helper()
	for _, c := range cases {
		got := list(h, k, c.opts)
		gotNames := names(got)
		if !slices.Equal(gotNames, c.want) {
			h.t.Errorf("List of %ss with %s must return exactly the objects it selects, each once: got [%s], want [%s]%s",
				k.name, describeOptions(c.opts), strings.Join(gotNames, " "), strings.Join(c.want, " "), h.readNote())
		}
		for _, o := range got {
			if m, ok := made[o.Meta().Name]; ok && o.Meta().ResourceVersion != m.Meta().ResourceVersion {
				h.t.Errorf("List must show each object at its latest version: %s at %q, want %q%s", describe(k.name, o.Meta()), o.Meta().ResourceVersion, m.Meta().ResourceVersion, h.readNote())
			}
		}
	}
}

func describeOptions(o host.ListOptions) string {
	var parts []string
	if o.Namespace != "" {
		parts = append(parts, "Namespace "+o.Namespace)
	}
	if o.OwnerUID != "" {
		parts = append(parts, "OwnerUID "+o.OwnerUID)
	}
	if o.SecretName != "" {
		parts = append(parts, "SecretName "+o.SecretName)
	}
	if len(o.Labels) > 0 {
		var sel []string
		for _, k := range slices.Sorted(maps.Keys(o.Labels)) {
			sel = append(sel, k+"="+o.Labels[k])
		}
		parts = append(parts, "Labels "+strings.Join(sel, ","))
	}
	if parts == nil {
		return "no options"
	}
	return strings.Join(parts, ", ")
}

func testUpdate(h *harness) { eachKind(h, updateKind, updateKind, updateKind) }

func updateKind[T host.Object](h *harness, k kind[T]) {
	h.t.Helper()
	ns, name := h.ns[0], "updated"
	mustCreate(h, k, k.sample(ns, name, 1))
	cur := mustGet(h, k, ns, name, "after its Create")
	upd := clone(cur)
	k.change(upd, 1)
	sent := clone(upd)
	got := mustUpdate(h, k, upd)
	what := describe(k.name, cur.Meta())
	if rv := got.Meta().ResourceVersion; rv == "" || rv == cur.Meta().ResourceVersion {
		h.t.Errorf("Update that changes an object must give it a new resource version: %s is at %q after it, and was at %q", what, rv, cur.Meta().ResourceVersion)
	}
	checkKept(h, k, cur, got, "Update")
	checkWritten(h, k, sent, got, "Update must return the object as stored")
	read := mustGet(h, k, ns, name, "after its Update")
	if read.Meta().ResourceVersion != got.Meta().ResourceVersion {
		h.t.Errorf("Get after Update must show the object at the version Update returned: got %q, want %q%s", read.Meta().ResourceVersion, got.Meta().ResourceVersion, h.readNote())
	}
	checkWritten(h, k, sent, read, "Get after Update must return what was written")

	stale := clone(cur)
	k.change(stale, 2)
	_, err := k.coll(h.s).Update(h.ctx, stale)
	h.wantErr(err, host.ErrConflict, "Update at a resource version the object has moved on from must fail")
	if after := mustGet(h, k, ns, name, "after a refused Update"); diff(read, after) != "" {
		h.t.Errorf("a refused Update must change nothing: %s changed (-before +after):\n%s", what, diff(read, after))
	}

	missing := k.sample(ns, "never-created", 3)
	missing.Meta().ResourceVersion = got.Meta().ResourceVersion
	_, err = k.coll(h.s).Update(h.ctx, missing)
	h.wantErr(err, host.ErrNotFound, "Update of a missing object must fail")

	again := clone(read)
	k.change(again, 3)
	mustUpdate(h, k, again)
}

// checkKept reports the metadata an update of was changed that it must
// keep: the UID and the creation time.
func checkKept[T host.Object](h *harness, k kind[T], was, got T, call string) {
	h.t.Helper()
	wm, gm := was.Meta(), got.Meta()
	if gm.UID != wm.UID {
		h.t.Errorf("%s must keep metadata.uid: %s has %q after it, want %q", call, describe(k.name, wm), gm.UID, wm.UID)
	}
	if !gm.CreationTimestamp.Equal(wm.CreationTimestamp) {
		h.t.Errorf("%s must keep metadata.creationTimestamp: %s has %v after it, want %v", call, describe(k.name, wm), gm.CreationTimestamp, wm.CreationTimestamp)
	}
}

// testGeneration checks a certificate's generation: the loop records it
// in the conditions it writes (observedGeneration), so a user can tell
// whether the status speaks of the spec they wrote. A request's
// generation is not read by the loop.
func testGeneration(h *harness) {
	k := certificates
	ns, name := h.ns[0], "generation"
	mustCreate(h, k, k.sample(ns, name, 1))
	cur := mustGet(h, k, ns, name, "after its Create")
	gen := cur.Generation

	upd := clone(cur)
	k.change(upd, 1)
	got := mustUpdate(h, k, upd)
	if got.Generation != gen {
		h.t.Errorf("Update of a Certificate's status only must keep metadata.generation: got %d, want %d", got.Generation, gen)
	}
	if !h.cfg.StatusOnly {
		upd = clone(got)
		upd.Labels[labelSample] = "relabelled"
		upd.Annotations[annotationNote] = "annotated again"
		got = mustUpdate(h, k, upd)
		if got.Generation != gen {
			h.t.Errorf("Update of a Certificate's labels and annotations only must keep metadata.generation: got %d, want %d", got.Generation, gen)
		}
	}

	upd = clone(got)
	upd.Spec.DNSNames = append(upd.Spec.DNSNames, "changed.example.com")
	got = mustUpdate(h, k, upd)
	read := mustGet(h, k, ns, name, "after its Update")
	if h.cfg.StatusOnly {
		if !slices.Equal(read.Spec.DNSNames, cur.Spec.DNSNames) || read.Generation != gen {
			h.t.Errorf("Update of a Certificate must write only its status (Config.StatusOnly): after an Update whose spec differs, spec.dnsNames is %q and metadata.generation %d, want %q and %d", read.Spec.DNSNames, read.Generation, cur.Spec.DNSNames, gen)
		}
		return
	}
	if got.Generation <= gen {
		h.t.Errorf("Update of a Certificate whose spec changed must increase metadata.generation: got %d after the update, want %d", got.Generation, gen+1)
	}
	if read.Generation != got.Generation {
		h.t.Errorf("Get after Update must show the generation Update returned: got %d, want %d%s", read.Generation, got.Generation, h.readNote())
	}
	checkKept(h, k, cur, got, "Update of a Certificate's spec")
	gen = got.Generation
	upd = clone(got)
	k.change(upd, 2)
	if got = mustUpdate(h, k, upd); got.Generation != gen {
		h.t.Errorf("Update of a Certificate's status only must keep metadata.generation: got %d after a spec change and a status change, want %d", got.Generation, gen)
	}
}

func testDelete(h *harness) { eachKind(h, deleteKind, deleteKind, deleteKind) }

func deleteKind[T host.Object](h *harness, k kind[T]) {
	h.t.Helper()
	ns, name := h.ns[0], "deleted"
	mustCreate(h, k, k.sample(ns, name, 1))
	cur := mustGet(h, k, ns, name, "after its Create")
	mustRemove(h, k, cur)
	what := describe(k.name, cur.Meta())
	_, err := get(h, k, ns, name)
	h.wantErr(err, host.ErrNotFound, "Get of a deleted object must fail (%s)%s", what, h.readNote())
	if got := list(h, k, host.ListOptions{Namespace: ns}); slices.Contains(names(got), ns+"/"+name) {
		h.t.Errorf("List must not show a deleted object: it showed %s%s", what, h.readNote())
	}
	h.wantErr(k.coll(h.s).Delete(h.ctx, ns, name), host.ErrNotFound, "Delete of an object deleted already must fail (%s)", what)
	upd := clone(cur)
	k.change(upd, 1)
	_, err = k.coll(h.s).Update(h.ctx, upd)
	h.wantErr(err, host.ErrNotFound, "Update of a deleted object must fail (%s)", what)
	err = k.coll(h.s).Delete(h.ctx, ns, "never-created")
	h.wantErr(err, host.ErrNotFound, "Delete of an object that never was must fail")

	mustCreate(h, k, k.sample(ns, name, 2))
	again := mustGet(h, k, ns, name, "made again after its Delete")
	if again.Meta().ResourceVersion == cur.Meta().ResourceVersion {
		h.t.Errorf("a resource version is never given twice: %s made again after its Delete is at %q, as it was before", what, again.Meta().ResourceVersion)
	}
	if k.name == host.KindCertificate && again.Meta().UID == cur.Meta().UID {
		h.t.Errorf("a Certificate made again after its Delete must get a new metadata.uid (the loop tells the objects of the old one by it): got %q again", again.Meta().UID)
	}
}

func testNamespaces(h *harness) { eachKind(h, namespacesKind, namespacesKind, namespacesKind) }

func namespacesKind[T host.Object](h *harness, k kind[T]) {
	h.t.Helper()
	a, b, name := h.ns[0], h.ns[1], "twin"
	sentA, sentB := k.sample(a, name, 1), k.sample(b, name, 2)
	mustCreate(h, k, clone(sentA))
	mustCreate(h, k, clone(sentB))
	ga := mustGet(h, k, a, name, "after its Create")
	gb := mustGet(h, k, b, name, "after its Create")
	checkWritten(h, k, sentA, ga, "the same name in two namespaces is two objects")
	checkWritten(h, k, sentB, gb, "the same name in two namespaces is two objects")
	if ga.Meta().ResourceVersion == gb.Meta().ResourceVersion {
		h.t.Errorf("the same name in two namespaces is two objects: both are at resource version %q", ga.Meta().ResourceVersion)
	}
	mustCreate(h, k, k.sample(a, "only-in-a", 3))
	_, err := get(h, k, b, "only-in-a")
	h.wantErr(err, host.ErrNotFound, "Get must look only in the namespace asked for: Get of %s %s/only-in-a", k.name, b)

	upd := clone(ga)
	k.change(upd, 4)
	mustUpdate(h, k, upd)
	if d := diff(gb, mustGet(h, k, b, name, "after an Update of its namesake")); d != "" {
		h.t.Errorf("Update of an object must not change its namesake in another namespace: %s changed (-before +after):\n%s", describe(k.name, gb.Meta()), d)
	}
	mustRemove(h, k, ga)
	if _, err := get(h, k, b, name); err != nil {
		h.t.Errorf("Delete of an object must not delete its namesake in another namespace: Get of %s: %v", describe(k.name, gb.Meta()), err)
	}
}

// testSecretsExact checks that a secret keeps what the loop writes into
// it exactly: its private key and certificates byte for byte, and the
// labels, annotations and owner the decisions compare.
func testSecretsExact(h *harness) {
	k := secrets
	ns, name := h.ns[0], "exact"
	s := k.sample(ns, name, 1)
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	s.Data["every-byte"] = all
	s.Data["empty"] = []byte{}
	s.Labels["hosttest.certlife.dev/other"] = "value"
	s.Annotations["hosttest.certlife.dev/multi-line"] = "one\ntwo\n\u00e9\u2713 three"
	s.Annotations["hosttest.certlife.dev/empty"] = ""
	sent := clone(s)
	const rule = "a secret must keep its data, labels, annotations and owner exactly"
	made := mustCreate(h, k, s)
	checkWritten(h, k, sent, made, rule+" (as Create returns it)")
	checkWritten(h, k, sent, mustGet(h, k, ns, name, "after its Create"), rule+" (as Get returns it)")
	listed := list(h, k, host.ListOptions{Namespace: ns, OwnerUID: sent.OwnerUID})
	if len(listed) != 1 {
		h.t.Fatalf("List of the secrets of an owner must return the one it owns: got %d", len(listed))
	}
	checkWritten(h, k, sent, listed[0], rule+" (as List returns it)")

	upd := clone(made)
	delete(upd.Data, "empty")
	upd.Data["added"] = []byte{0}
	upd.Data["every-byte"] = slices.Concat(all, all)
	delete(upd.Labels, "hosttest.certlife.dev/other")
	upd.Annotations = maps.Clone(upd.Annotations)
	upd.Annotations["hosttest.certlife.dev/multi-line"] = "changed"
	uid, ownerName := owner(2)
	upd.OwnerUID, upd.Annotations[certificate.AnnotationCertificateName] = uid, ownerName
	for key := range h.cfg.SecretLabels {
		delete(upd.Labels, key)
	}
	sent = clone(upd)
	got := mustUpdate(h, k, upd)
	checkWritten(h, k, sent, got, rule+" (as Update returns it)")
	checkWritten(h, k, sent, mustGet(h, k, ns, name, "after its Update"), rule+" (as Get returns it after an Update)")
}

// testWatch checks a Watcher's reports of a sequence of writes to a few
// objects; every other subtest checks the reports of its own writes too.
func testWatch(h *harness) {
	if h.watch == nil {
		h.t.Skipf("the store is not a host.Watcher")
	}
	ns := h.ns[0]
	c := mustCreate(h, certificates, certificates.sample(ns, "watched", 1))
	s := mustCreate(h, secrets, secrets.sample(ns, "watched", 1))
	r := mustCreate(h, requests, requests.sample(ns, "watched", 1))
	c = mustGet(h, certificates, ns, "watched", "after its Create")
	s = mustGet(h, secrets, ns, "watched", "after its Create")
	r = mustGet(h, requests, ns, "watched", "after its Create")

	sUpd := clone(s)
	secrets.change(sUpd, 1)
	s2 := mustUpdate(h, secrets, sUpd)
	stale := clone(s)
	secrets.change(stale, 2)
	if _, err := secrets.coll(h.s).Update(h.ctx, stale); err == nil {
		h.t.Errorf("Update at a resource version the object has moved on from must fail: it succeeded")
	}
	cUpd := clone(c)
	certificates.change(cUpd, 1)
	mustUpdate(h, certificates, cUpd)
	rUpd := clone(r)
	requests.change(rUpd, 1)
	r2 := mustUpdate(h, requests, rUpd)
	mustRemove(h, secrets, s2)
	mustCreate(h, secrets, secrets.sample(ns, "watched", 2))
	mustRemove(h, requests, r2)
	c = mustGet(h, certificates, ns, "watched", "after its Update")
	mustRemove(h, certificates, c)
	h.wantErr(certificates.coll(h.s).Delete(h.ctx, ns, "watched"), host.ErrNotFound, "Delete of an object deleted already must fail")
}

// testAuthoritative checks that an Authoritative store's reads show each
// write as soon as it returned.
func testAuthoritative(h *harness) {
	if !h.auth {
		h.t.Skipf("the store is not host.Authoritative")
	}
	eachKind(h, authoritativeKind, authoritativeKind, authoritativeKind)
}

func authoritativeKind[T host.Object](h *harness, k kind[T]) {
	h.t.Helper()
	const rule = "an Authoritative store's reads must show every write that returned"
	ns, name := h.ns[0], "authoritative"
	coll := k.coll(h.s)
	listed := func() []T {
		objs, err := coll.List(h.ctx, host.ListOptions{Namespace: ns})
		if err != nil {
			h.t.Fatalf("List of %ss in %s must succeed: %v", k.name, ns, err)
		}
		return objs
	}
	made := mustCreate(h, k, k.sample(ns, name, 1))
	for i := range 2 {
		got, err := coll.Get(h.ctx, ns, name)
		if err != nil || got.Meta().ResourceVersion != made.Meta().ResourceVersion {
			h.t.Errorf("%s: Get right after a write returned %v (error %v), want version %q", rule, versionOf(got), err, made.Meta().ResourceVersion)
		}
		if objs := listed(); len(objs) != 1 || objs[0].Meta().ResourceVersion != made.Meta().ResourceVersion {
			h.t.Errorf("%s: List right after a write returned %d objects, want %s at version %q", rule, len(objs), describe(k.name, made.Meta()), made.Meta().ResourceVersion)
		}
		if i == 0 {
			upd := clone(made)
			k.change(upd, 1)
			made = mustUpdate(h, k, upd)
		}
	}
	mustRemove(h, k, made)
	if _, err := coll.Get(h.ctx, ns, name); !errors.Is(err, host.ErrNotFound) {
		h.t.Errorf("%s: Get right after a Delete returned error %v, want one wrapping %q", rule, err, host.ErrNotFound)
	}
	if objs := listed(); len(objs) != 0 {
		h.t.Errorf("%s: List right after a Delete returned %d objects, want none", rule, len(objs))
	}
}

func versionOf[T host.Object](obj T) string {
	if obj == nil {
		return "nothing"
	}
	return "version " + obj.Meta().ResourceVersion
}
