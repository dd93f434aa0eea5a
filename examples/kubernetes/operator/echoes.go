package operator

import (
	"sync"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/certlife/certlife/certificate/host"
)

// echoes are the writes of Certificate passes whose watch events would
// bring their Certificate nothing new. A pass that writes is always
// followed by another pass over the same Certificate — at once
// (host.Event.Next), or after the work queue's delay when it failed
// later on — and that pass reads what was written (through
// host.ReadYourWrites, or from the cache once it shows it). So the watch
// event of such a write would only queue one more pass, deciding what the
// pass after the write decides, after reading everything again. The
// Certificate controller's event handlers ask echo before they queue, and
// skip the Certificate whose pass wrote; every other Certificate an event
// concerns (those sharing its Secret) is queued as before, and every
// event still reaches host.ReadYourWrites.
//
// The API server often sends a write's event before the write call
// returns to the operator, so a write is known from the moment it is
// sent. Until it returns, an event about its object is held back from the
// writer's queue; when the call returns, an event that showed what was
// written is dropped, and every other one (someone else's write, or a
// version from before) queues the writer then, as do all of them when the
// write failed. After the write returns, its event is known by the
// object's version written (a deletion's by the UID deleted), never by
// the name alone: an event of a version the operator did not write is
// queued as always. A record whose event never comes (a relist folded it
// into a later one) matches nothing after a minute, and is swept; nor
// would it before, since versions and UIDs are not reused. An object
// with finalizers is only marked for deletion by the delete call: its
// deletion, later, is someone else's doing, and no echo.
type echoes struct {
	mu       sync.Mutex
	inFlight map[objectKey]*flight
	written  map[echoKey]echo
	// sweepAt is how many records of written may be kept before the old
	// ones are swept.
	sweepAt int
}

type objectKey struct {
	kind            host.Kind
	namespace, name string
}

type echoKey struct {
	objectKey
	// version is the resource version written, or "deleted " and the UID
	// of the object deleted.
	version string
}

type echo struct {
	// writer is the Certificate whose pass wrote.
	writer string
	at     time.Time
}

// flight is a write sent and not yet returned.
type flight struct {
	key    objectKey
	writer string
	// held are the events about the object that came meanwhile: the
	// writer's queueing held back, and the version each showed.
	held []heldEvent
	// terminating: an event showed the object marked for deletion, which
	// is what deleting an object with finalizers does; its deletion comes
	// later, and is no echo.
	terminating bool
}

type heldEvent struct {
	version string
	queue   func()
}

// echoSweepAge is how long a write's record waits for its event.
const echoSweepAge = time.Minute

// send records that writer's pass is about to write the object kind
// namespace/name: the caller calls landed with the result. A nil flight
// (no writer; or another write of the object under way, from another
// Certificate's pass sharing it) holds nothing back.
func (e *echoes) send(kind host.Kind, namespace, name, writer string) *flight {
	if writer == "" {
		return nil
	}
	k := objectKey{kind, namespace, name}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.inFlight == nil {
		e.inFlight = map[objectKey]*flight{}
	}
	if f, ok := e.inFlight[k]; ok {
		f.writer = "" // two writers: neither is sure of a pass after
		return nil
	}
	f := &flight{key: k, writer: writer}
	e.inFlight[k] = f
	return f
}

// landed ends a flight: obj as written (a deletion: the object deleted),
// or ok false when the write failed. The events held back meanwhile that
// showed what was written are dropped (the pass after the write reads
// it); the others, someone else's or from before, and all of them when
// the write failed, queue the writer now. With await, the written
// version's event, when it has not come yet, is waited for: it will not
// queue the writer either. A caller whose pass must see that event (a
// second write to the object in one Update, which ReadYourWrites does not
// keep apart from the first) passes false.
func (e *echoes) landed(f *flight, obj client.Object, deleted, ok, await bool) {
	if f == nil {
		return
	}
	v := ""
	if ok {
		v = versionOf(obj, deleted)
	}
	e.mu.Lock()
	if e.inFlight[f.key] == f {
		delete(e.inFlight, f.key)
	}
	if f.writer == "" {
		v = "" // another writer joined: nothing is known as this one's echo
	}
	var queue []func()
	seen := false
	for _, h := range f.held {
		if v != "" && h.version == v {
			seen = true
			continue
		}
		queue = append(queue, h.queue)
	}
	if await && v != "" && !seen && !(deleted && f.terminating) {
		e.remember(echoKey{f.key, v}, f.writer) // its event is still to come
	}
	e.mu.Unlock()
	for _, q := range queue {
		q()
	}
}

// remember records a write whose event is still to come.
func (e *echoes) remember(k echoKey, writer string) {
	now := time.Now()
	if e.written == nil {
		e.written = map[echoKey]echo{}
	}
	if len(e.written) >= max(e.sweepAt, 1024) {
		for k, w := range e.written {
			if now.Sub(w.at) > echoSweepAge {
				delete(e.written, k)
			}
		}
		e.sweepAt = 2 * len(e.written)
	}
	e.written[k] = echo{writer: writer, at: now}
}

func versionOf(obj client.Object, deleted bool) string {
	if deleted {
		if obj.GetUID() == "" {
			return ""
		}
		return "deleted " + string(obj.GetUID())
	}
	return obj.GetResourceVersion()
}

// echo reports the Certificate whose pass wrote, or is writing, what an
// event shows: "" when there is none, and the event queues everyone it
// concerns. While the write is under way, queue is held back, to be
// called when the write fails or the event turns out not to show it. A
// record of a written version is dropped once its event came, or a
// minute on. An object marked for deletion is not deleted yet: the
// deletion still to come is no echo.
func (e *echoes) echo(kind host.Kind, obj client.Object, deleted bool, queue func(writer string)) (writer string) {
	k := objectKey{kind, obj.GetNamespace(), obj.GetName()}
	v := versionOf(obj, deleted)
	terminating := !deleted && obj.GetDeletionTimestamp() != nil
	e.mu.Lock()
	defer e.mu.Unlock()
	if terminating {
		delete(e.written, echoKey{k, versionOf(obj, true)})
	}
	if f, ok := e.inFlight[k]; ok && f.writer != "" {
		w := f.writer
		f.held = append(f.held, heldEvent{version: v, queue: func() { queue(w) }})
		f.terminating = f.terminating || terminating
		return w
	}
	w, ok := e.written[echoKey{k, v}]
	if !ok || v == "" {
		return ""
	}
	delete(e.written, echoKey{k, v})
	if time.Since(w.at) > echoSweepAge {
		return ""
	}
	return w.writer
}

// forgetWriter drops the records of the writes of the Certificate
// namespace/name whose events are still to come: its pass failed, and
// the work queue retries it after a delay, which those events, when they
// show the store has caught up, should not wait for.
func (e *echoes) forgetWriter(namespace, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k, w := range e.written {
		if k.namespace == namespace && w.writer == name {
			delete(e.written, k)
		}
	}
}

// writerOf is the Certificate an object a Certificate's pass writes
// belongs to: the Certificate itself, or the one a Secret's or
// CertificateRequest's certificate-name annotation names.
func writerOf(kind host.Kind, obj client.Object) string {
	if kind == host.KindCertificate {
		return obj.GetName()
	}
	return obj.GetAnnotations()[cmapi.CertificateNameKey]
}
