// Package hosttest checks that a host.Store keeps the contract the host
// loop relies on, in the manner of testing/fstest.TestFS: write a store
// over your storage (a database, an API, files), call TestStore from a
// test with a function that opens an empty one, and every way it departs
// from the contract is reported, each failure naming the rule it breaks:
//
//	Update of a Certificate whose spec changed must increase
//	metadata.generation: got 1, want 2
//
// The rules are those of host.Store, host.Collection, host.Watcher and
// host.Authoritative, as the loop (and the decisions it feeds) rely on
// them:
//
//   - Create stores a new object and returns it as stored: with a
//     resource version, and for a certificate a UID, generation 1 and a
//     creation time; for a request a creation time. A name that is taken
//     is ErrAlreadyExists and changes nothing; an object without a name is
//     an error.
//   - Get of a missing object is ErrNotFound (errors.Is), and an object
//     that exists is never reported missing with ErrAbsenceConfirmed.
//   - What Get, List, Create and Update return may be what the store
//     holds (callers share it, and never change it), but the store never
//     changes it afterwards: a write replaces what it holds. What was
//     passed to Create and Update is not kept: changing it afterwards
//     changes nothing stored.
//   - List selects by ListOptions.Namespace, OwnerUID, SecretName and
//     Labels and their combinations, across namespaces when Namespace is empty, each
//     object once and at its latest version; an object whose owner or
//     secret name changed, or that was deleted, leaves the selection.
//   - Update at the object's resource version succeeds and gives it a new
//     one; at an older one it is ErrConflict and changes nothing; of a
//     missing object it is ErrNotFound. It keeps the UID and creation
//     time; a certificate's generation goes up when its spec changes and
//     not when only its status, labels or annotations do.
//   - Delete removes the object (Get, List and Update then find nothing)
//     and is ErrNotFound when there is nothing to delete; an object made
//     again under the same name never gets a resource version given
//     before, and a certificate gets a new UID.
//   - The same name in two namespaces is two objects, and no name reaches
//     an object of another namespace: the name "b/x" in the namespace ""
//     is not the object x of the namespace b. Create, Get, Update and
//     Delete fail for a namespace or name no object can have
//     (certificate.ValidateNamespace, certificate.ValidateObjectName;
//     unless Config.AcceptsInvalidNames).
//   - A secret keeps its data (every key, every byte, empty values
//     included), labels, annotations and owner exactly.
//   - A Watcher reports every write once, after it is made, in the order
//     of the writes to each object: the kind, namespace and name, the
//     UID, owner and (but for a deletion) the resource version the write
//     returned, and Deleted for a deletion. A failed write is not
//     reported.
//   - An Authoritative store's reads show every write that returned, at
//     once.
//   - A Leaser gives a key's lease to a holder when nobody else holds it
//     unexpired at the now given (a lease expires at its deadline), and
//     renews (or shortens) the holder's own; it refuses another holder
//     without an error, returning the lease as it stands; after the
//     deadline it gives the lease to whoever asks first, and refuses the
//     holder it expired on; Release by the holder ends the lease at once,
//     and Release of a lease another holds, or of none, is no error and
//     changes nothing; of many concurrent Lease calls for one key, at
//     most one gets the lease, and all succeed. The suite gives times of
//     the real clock, to the second.
//
// A store whose reads lag behind its writes (a cache in front of an API,
// as a Kubernetes informer is) keeps the rules once its reads have caught
// up: after each write, before its next call, the suite waits for that,
// by Config.Settle or by the Watcher's report of the write (the report of
// a lagging store must come once its reads show the write, since the loop
// waits for it before it reads and writes the object again). Only a Get
// right after a Create is made before: it must not confirm the absence
// of the object created.
//
// The ACME states a store may keep for an ACME issuer are not checked
// here.
//
// # Scenarios
//
// RunScenarios runs lifecycle scenarios over a store: a host.Loop on a
// fake clock, with a test CA, driven by the commands of a text file,
// each command's output compared with the output written under it. The
// scenarios are certlife's own (first issuance, renewal, backoff, a
// deleted secret, a failing disk, ... in certificate/host/testdata/
// scenarios of its module: copy them into your testdata), over which
// your store must give the output host.MemoryStore gives, or yours, in
// the language RunScenarios documents:
//
//	func TestScenarios(t *testing.T) {
//		hosttest.RunScenarios(t, "testdata/scenarios/*.txt", hosttest.ScenarioConfig{
//			Open: func(t *testing.T, clk *testingclock.FakeClock) host.Store {
//				return openMyStore(t, clk) // empty, on the scenario's clock
//			},
//		})
//	}
//
// # Code that reads a store
//
// What a store returns may be what it holds, shared with every caller
// (host.Collection). CheckReadOnly wraps a store so that a test fails when
// code reading through it — an issuer, a hook, a controller of your own —
// changes an object it got instead of a copy; the scenarios run their
// loop through it.
//
// # Driving a loop on a fake clock
//
// Settle steps a host.Loop until nothing more is due at the clock's time;
// Advance moves a fake clock from one due time to the next, up to an end
// or a condition.
package hosttest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync/atomic"
	"testing"
	"time"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
)

// Config describes how a store differs from the plainest one (an
// in-memory store whose reads show every write): the zero value suits
// host.MemoryStore and host.FileStore.
type Config struct {
	// Settle, when set, is called with the store after the suite's writes
	// and before it reads, when the store is not Authoritative, and
	// returns once the store's reads show every write that returned — a
	// store on a fake clock whose reads lag moves its clock past the lag
	// and lets the writes show. Nil means the suite waits instead for the
	// Watcher's report of each write (at most Timeout); a store that is
	// neither Authoritative nor a Watcher needs Settle.
	Settle func(s host.Store)
	// Timeout bounds each wait for a Watcher's report of a write. Zero
	// means 10 seconds.
	Timeout time.Duration
	// Namespace, when set, is called with each namespace a subtest writes
	// in, before it writes there: for a store where namespaces must be
	// made first (Kubernetes). Each subtest writes in namespaces of its
	// own, named "hosttest-" and a number, and ignores objects in any
	// other, so a store shared with other tests can be checked. Nil
	// means namespaces need no making.
	Namespace func(t *testing.T, name string)
	// CreateCertificate, when set, makes the certificates the suite needs,
	// for a store whose Certificates().Create is not for the loop (a
	// Kubernetes store, whose certificates users create): it creates c
	// in the store's backing storage as a user would and returns it as
	// created, with its resource version. The suite then leaves
	// Certificates().Create unchecked, and checks that what it reads of
	// such a certificate has what Create would have filled in. Nil means
	// the suite creates certificates with Certificates().Create.
	CreateCertificate func(ctx context.Context, s host.Store, c *certificate.Certificate) (*certificate.Certificate, error)
	// StatusOnly says that Update of a certificate or a request writes
	// only its status, as a store over an API with a status subresource
	// may (the loop changes nothing else of them). The suite then changes
	// only the status in those updates, and checks that an update whose
	// spec differs leaves the spec as stored; that a spec change raises
	// the generation is the API's to keep, and is not checked. False
	// means Update writes the whole object.
	StatusOnly bool
	// SecretLabels are labels the store adds to every secret it writes
	// (a Kubernetes store that caches only the secrets it labels): the
	// suite expects them beside the labels it wrote. Nil means a secret's
	// labels are exactly those written.
	SecretLabels map[string]string
	// SharesValues says that the objects the store takes may share with
	// what it holds the values the loop never changes in place after it
	// passed them: byte slices, pointers, and the slices of a spec (a
	// lean store does, to hold a certificate in a few kilobytes). The
	// suite then changes those by replacing them, as the loop does, and
	// changes maps, condition slices and plain fields in place. False
	// means the suite changes everything it passed in place: a store
	// copies all it takes.
	SharesValues bool
	// SplitUpdates says that the store may carry out one Update as more
	// than one write to its backing storage, each of which its Watcher
	// reports (a Kubernetes store writes a certificate's status, then the
	// annotations for what the status has no field for). The suite then
	// accepts, before the report of the version an Update returned,
	// reports of the object at versions it was never seen at. False means
	// each write is reported once.
	SplitUpdates bool
	// AcceptsInvalidNames says that the store keeps objects whose
	// namespace or name is not valid (certificate.ValidateNamespace,
	// certificate.ValidateObjectName) rather than refusing them, keeping
	// namespace and name apart so that no name stands for an object of
	// another namespace (as a store with a column for each may). The
	// suite then checks only that no call reaches another namespace's
	// object. False means every Create, Get, Update and Delete that names
	// a namespace or name no object can have fails, as host.MemoryStore
	// and host.FileStore's do; the loop never asks for one.
	AcceptsInvalidNames bool
}

// Validate reports a Config the suite cannot run with.
func (c Config) Validate() error {
	if c.Timeout < 0 {
		return fmt.Errorf("hosttest: Config.Timeout is %v: it must not be negative", c.Timeout)
	}
	return nil
}

func (c Config) timeout() time.Duration {
	if c.Timeout == 0 {
		return 10 * time.Second
	}
	return c.Timeout
}

// TestStore runs the conformance suite as subtests of t, each on a new
// store from open, and reports every departure from the contract the
// package documentation lists. open is called once per subtest, with the
// subtest's t; it returns an empty store (or one holding nothing in the
// namespaces the subtest writes in, see Config.Namespace) and may
// register its clean-up with t.Cleanup.
func TestStore(t *testing.T, open func(t *testing.T) host.Store, cfg Config) {
	t.Helper()
	run(realT{t}, open, cfg)
}

// tb is what the suite needs of a test: a *testing.T, or a recorder in
// the suite's own tests.
type tb interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
	Run(name string, f func(t tb))
	// testingT is the *testing.T open and Config.Namespace are given.
	testingT() *testing.T
}

type realT struct{ *testing.T }

func (r realT) Run(name string, f func(t tb)) {
	r.T.Run(name, func(t *testing.T) { f(realT{t}) })
}

func (r realT) testingT() *testing.T { return r.T }

// subtests are the suite's subtests, in order.
var subtests = []struct {
	name string
	run  func(h *harness)
}{
	{"Create", testCreate},
	{"GetMissing", testGetMissing},
	{"Isolation", testIsolation},
	{"List", testList},
	{"Update", testUpdate},
	{"Generation", testGeneration},
	{"Delete", testDelete},
	{"Namespaces", testNamespaces},
	{"Names", testNames},
	{"SecretsExact", testSecretsExact},
	{"Watch", testWatch},
	{"Authoritative", testAuthoritative},
	{"Lease", testLease},
}

func run(t tb, open func(t *testing.T) host.Store, cfg Config) {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("%v", err)
	}
	for _, st := range subtests {
		t.Run(st.name, func(t tb) {
			t.Helper()
			h := newHarness(t, open, cfg)
			defer h.finish()
			st.run(h)
		})
	}
}

// namespaceCount numbers the suite's namespaces within the process.
var namespaceCount atomic.Int64

// harness is one subtest's store and what the suite knows of it.
type harness struct {
	t    tb
	cfg  Config
	s    host.Store
	ctx  context.Context
	ns   [2]string
	auth bool
	// watch records the reports of a Watcher; nil for another store.
	watch *recorder
	// dirty: a write has been made since the store last settled.
	dirty bool
}

func newHarness(t tb, open func(t *testing.T) host.Store, cfg Config) *harness {
	t.Helper()
	s := open(t.testingT())
	if s == nil {
		t.Fatalf("open returned a nil store")
	}
	h := &harness{t: t, cfg: cfg, s: s, ctx: t.testingT().Context()}
	if a, ok := s.(host.Authoritative); ok {
		h.auth = a.Authoritative()
	}
	n := namespaceCount.Add(1)
	h.ns = [2]string{fmt.Sprintf("hosttest-%d-a", n), fmt.Sprintf("hosttest-%d-b", n)}
	if w, ok := s.(host.Watcher); ok {
		h.watch = newRecorder(h.ns[:])
		w.Watch(h.watch.add)
	}
	if !h.auth && h.watch == nil && cfg.Settle == nil {
		t.Fatalf("the store is neither Authoritative nor a Watcher: the suite cannot tell when its reads show a write; give Config.Settle")
	}
	for _, ns := range h.ns {
		if cfg.Namespace != nil {
			cfg.Namespace(t.testingT(), ns)
		}
	}
	return h
}

// settle waits until the store's reads show every write the suite made,
// when they may lag.
func (h *harness) settle() {
	h.t.Helper()
	if h.auth || !h.dirty {
		return
	}
	h.dirty = false
	if h.cfg.Settle != nil {
		h.cfg.Settle(h.s)
	}
	if h.watch != nil {
		h.awaitReports()
	}
}

// finish checks, at the end of a subtest, that every write was reported
// and nothing else was.
func (h *harness) finish() {
	h.t.Helper()
	if h.watch == nil {
		return
	}
	if h.cfg.Settle != nil && !h.auth {
		h.cfg.Settle(h.s)
	}
	h.awaitReports()
	for _, ch := range h.watch.unclaimed() {
		h.t.Errorf("a Watcher must report only the writes made, each once: it reported %s, which no write made or which was reported before", describeChange(ch))
	}
}

// written notes a write that returned, for the Watcher to report and for
// lagging reads to show.
func (h *harness) written(kind host.Kind, what string, m certificate.ObjectMeta, deleted bool) {
	h.dirty = true
	if h.watch != nil {
		h.watch.expect(report{key: key{kind, m.Namespace, m.Name}, what: what, rv: m.ResourceVersion, uid: m.UID, owner: m.OwnerUID, deleted: deleted})
	}
}

// awaitReports waits for the Watcher's report of each write not yet
// reported, and checks each.
func (h *harness) awaitReports() {
	h.t.Helper()
	deadline := time.Now().Add(h.cfg.timeout())
	for _, p := range h.watch.takeExpected() {
		for {
			skipped, got, ok, wake := h.watch.claim(p, h.cfg.SplitUpdates)
			for _, ch := range skipped {
				h.t.Errorf("a Watcher must report each write once, in the order of the writes to the object: before its report of %s it reported %s", p.what, describeChange(ch))
			}
			if ok {
				h.checkReport(p, got)
				break
			}
			left := time.Until(deadline)
			if left <= 0 {
				h.t.Errorf("a Watcher must report every write: %s (resource version %q) was not reported within %v", p.what, p.rv, h.cfg.timeout())
				break
			}
			timer := time.NewTimer(left)
			select {
			case <-wake:
			case <-timer.C:
			}
			timer.Stop()
		}
	}
}

func (h *harness) checkReport(p report, ch host.Change) {
	h.t.Helper()
	if p.uid != "" && ch.Meta.UID != p.uid {
		h.t.Errorf("a Watcher's report of a write must carry the object's metadata after the write: the report of %s has metadata.uid %q, want %q", p.what, ch.Meta.UID, p.uid)
	}
	if ch.Meta.OwnerUID != p.owner {
		h.t.Errorf("a Watcher's report of a write must carry the object's metadata after the write: the report of %s has ownerUID %q, want %q", p.what, ch.Meta.OwnerUID, p.owner)
	}
}

func describeChange(ch host.Change) string {
	s := fmt.Sprintf("a change of %s %s/%s at resource version %q", ch.Kind, ch.Namespace, ch.Name, ch.Meta.ResourceVersion)
	if ch.Deleted {
		s = fmt.Sprintf("the deletion of %s %s/%s", ch.Kind, ch.Namespace, ch.Name)
	}
	return s
}

// errIs reports whether err wraps target; what names the call.
func (h *harness) wantErr(err, target error, rule string, args ...any) bool {
	h.t.Helper()
	if !errors.Is(err, target) {
		h.t.Errorf("%s: got error %v, want one wrapping %q", fmt.Sprintf(rule, args...), err, target)
		return false
	}
	return true
}

// withLabels is m's labels with the store's own secret labels.
func (h *harness) secretLabels(written map[string]string) map[string]string {
	if len(h.cfg.SecretLabels) == 0 {
		return written
	}
	out := maps.Clone(written)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, h.cfg.SecretLabels)
	return out
}
