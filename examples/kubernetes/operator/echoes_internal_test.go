package operator

import (
	"testing"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/certlife/certlife/certificate/host"
)

// objectAt is an object (a Secret, standing for any kind) with the
// certificate-name annotation writer.
func objectAt(name, rv, uid, writer string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, ResourceVersion: rv, UID: types.UID("uid-" + uidOr(uid, name)),
		Annotations: map[string]string{cmapi.CertificateNameKey: writer}}}
}

func uidOr(uid, name string) string {
	if uid != "" {
		return uid
	}
	return name
}

// The event of a write whose call returned is known by its version: it
// is the writer's echo once, and an event of any other version is not.
func TestEchoOfAWriteThatReturned(t *testing.T) {
	var e echoes
	noQueue := func(string) { t.Fatal("nothing is held back after the write returned") }
	f := e.send(host.KindSecret, "team", "web-tls", "web")
	e.landed(f, objectAt("web-tls", "7", "", "web"), false, true, true)

	assert.Empty(t, e.echo(host.KindSecret, objectAt("web-tls", "6", "", "web"), false, noQueue), "an older version: someone else's write")
	assert.Empty(t, e.echo(host.KindCertificate, objectAt("web-tls", "7", "", "web"), false, noQueue), "another kind")
	assert.Equal(t, "web", e.echo(host.KindSecret, objectAt("web-tls", "7", "", "web"), false, noQueue))
	assert.Empty(t, e.echo(host.KindSecret, objectAt("web-tls", "7", "", "web"), false, noQueue), "an echo is the writer's once")
	assert.Empty(t, e.echo(host.KindSecret, objectAt("web-tls", "8", "", "web"), false, noQueue), "a later write by someone else")
}

// A deletion is known by the UID deleted.
func TestEchoOfADeletion(t *testing.T) {
	var e echoes
	noQueue := func(string) { t.Fatal("nothing is held back after the write returned") }
	gone := objectAt("web-next-key-1", "9", "a", "web")
	f := e.send(host.KindSecret, "team", gone.Name, "web")
	e.landed(f, gone, true, true, true)
	assert.Empty(t, e.echo(host.KindSecret, objectAt("web-next-key-1", "9", "b", "web"), true, noQueue), "another object of the name")
	assert.Empty(t, e.echo(host.KindSecret, gone, false, noQueue), "an update of it is not its deletion")
	assert.Equal(t, "web", e.echo(host.KindSecret, gone, true, noQueue))
}

// An event that comes while the write is under way is held back from
// the writer's queue: dropped when it shows what the write made (the
// pass after the write reads it), queued when it shows anything else or
// the write failed (the pass may then end without another).
func TestEchoWhileTheWriteIsUnderWay(t *testing.T) {
	for _, ok := range []bool{true, false} {
		var e echoes
		var queued []string
		queue := func(w string) { queued = append(queued, w) }
		f := e.send(host.KindRequest, "team", "web-1", "web")
		assert.Equal(t, "web", e.echo(host.KindRequest, objectAt("web-1", "3", "", "web"), false, queue))
		assert.Equal(t, "web", e.echo(host.KindRequest, objectAt("web-1", "2", "", "web"), false, queue), "another version, held too")
		assert.Empty(t, e.echo(host.KindRequest, objectAt("web-2", "4", "", "web"), false, queue), "another object")
		assert.Empty(t, queued)
		e.landed(f, objectAt("web-1", "3", "", "web"), false, ok, true)
		if ok {
			assert.Equal(t, []string{"web"}, queued, "the write succeeded: its own event is dropped, the other's queues the writer")
		} else {
			assert.Equal(t, []string{"web", "web"}, queued, "the write failed: the events queue their writer now")
		}
		queued = nil
		assert.Empty(t, e.echo(host.KindRequest, objectAt("web-1", "5", "", "web"), false, queue), "the flight is over")
		assert.Empty(t, e.echo(host.KindRequest, objectAt("web-1", "3", "", "web"), false, queue), "an echo that came during the flight is not waited for again")
		assert.Empty(t, e.written, "nothing is left to wait for")
		assert.Empty(t, queued)
	}
}

// Deleting an object that has finalizers marks it for deletion; its
// deletion comes later, when someone removes them, and is no echo.
func TestEchoOfADeletionWithFinalizers(t *testing.T) {
	noQueue := func(string) { t.Fatal("nothing is held back after the write returned") }
	marked := func(s *corev1.Secret) *corev1.Secret {
		now := metav1.Now()
		s.DeletionTimestamp = &now
		s.Finalizers = []string{"example.com/keep"}
		return s
	}
	// The mark comes after the delete call returned.
	var e echoes
	obj := objectAt("web-1", "3", "a", "web")
	e.landed(e.send(host.KindRequest, "team", "web-1", "web"), obj, true, true, true)
	assert.Empty(t, e.echo(host.KindRequest, marked(objectAt("web-1", "4", "a", "web")), false, noQueue), "the mark is an update nobody waited for")
	assert.Empty(t, e.echo(host.KindRequest, objectAt("web-1", "5", "a", "web"), true, noQueue), "the deletion, later, queues the writer")

	// The mark comes while the call is under way.
	var queued []string
	f := e.send(host.KindRequest, "team", "web-1", "web")
	assert.Equal(t, "web", e.echo(host.KindRequest, marked(objectAt("web-1", "4", "a", "web")), false, func(w string) { queued = append(queued, w) }))
	e.landed(f, obj, true, true, true)
	assert.Equal(t, []string{"web"}, queued, "the mark is not the deletion: it queues the writer")
	assert.Empty(t, e.echo(host.KindRequest, objectAt("web-1", "5", "a", "web"), true, noQueue), "nor is the deletion waited for")
}

// A write whose event the pass after must see is not waited for; nor are
// the writes of a Certificate whose pass failed; nor one a minute old.
func TestEchoesNotWaitedFor(t *testing.T) {
	noQueue := func(string) { t.Fatal("nothing is held back after the write returned") }
	var e echoes
	e.landed(e.send(host.KindCertificate, "team", "web", "web"), objectAt("web", "8", "", "web"), false, true, false)
	assert.Empty(t, e.echo(host.KindCertificate, objectAt("web", "8", "", "web"), false, noQueue))

	e.landed(e.send(host.KindSecret, "team", "web-tls", "web"), objectAt("web-tls", "9", "", "web"), false, true, true)
	e.landed(e.send(host.KindSecret, "team", "api-tls", "api"), objectAt("api-tls", "10", "", "api"), false, true, true)
	e.forgetWriter("team", "web")
	assert.Empty(t, e.echo(host.KindSecret, objectAt("web-tls", "9", "", "web"), false, noQueue), "web's pass failed")
	assert.Equal(t, "api", e.echo(host.KindSecret, objectAt("api-tls", "10", "", "api"), false, noQueue), "api's did not")

	e.landed(e.send(host.KindSecret, "team", "web-tls", "web"), objectAt("web-tls", "11", "", "web"), false, true, true)
	k := echoKey{objectKey{host.KindSecret, "team", "web-tls"}, "11"}
	e.written[k] = echo{writer: "web", at: e.written[k].at.Add(-echoSweepAge - time.Second)}
	assert.Empty(t, e.echo(host.KindSecret, objectAt("web-tls", "11", "", "web"), false, noQueue), "a record over a minute old")
}

// Two writes of one object at once (Certificates sharing a Secret) hold
// nothing back: neither writer is sure of a pass after the other's.
func TestEchoOfTwoWritersAtOnce(t *testing.T) {
	var e echoes
	var queued []string
	queue := func(w string) { queued = append(queued, w) }
	a := e.send(host.KindSecret, "team", "shared", "a")
	assert.Nil(t, e.send(host.KindSecret, "team", "shared", "b"))
	assert.Empty(t, e.echo(host.KindSecret, objectAt("shared", "2", "", "a"), false, queue))
	e.landed(a, objectAt("shared", "2", "", "a"), false, true, true)
	assert.Empty(t, e.echo(host.KindSecret, objectAt("shared", "2", "", "a"), false, queue))
	assert.Empty(t, queued)

	assert.Nil(t, e.send(host.KindSecret, "team", "x", ""), "a write with no writer is not recorded")
}
