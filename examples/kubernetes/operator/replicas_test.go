package operator_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two replicas with leader election: only the leader acts; when it stops,
// the other takes over.
func TestLeaderElectionOnlyOneActs(t *testing.T) {
	h := newHarness(t)
	h.caIssuer("ca")
	elect := h.elect
	a := h.start(elect)
	<-a.mgr.Elected() // a leads; b starts after it, so it waits
	b := h.start(elect)

	for i := range 5 {
		h.create(h.certificate(fmt.Sprintf("web%d", i), "ca"))
	}
	for i := range 5 {
		h.waitReady(fmt.Sprintf("web%d", i), 1)
	}
	h.settle(a)
	assert.Positive(t, a.writes.total(), "the leader acts")
	assert.Zero(t, b.writes.total(), "the other replica does not")
	select {
	case <-b.mgr.Elected():
		t.Fatal("both replicas lead")
	default:
	}

	// The leader steps down (it releases the lease); the other takes over.
	a.stop()
	select {
	case <-b.mgr.Elected():
	case <-time.After(30 * time.Second):
		t.Fatal("the second replica never led")
	}
	before := a.writes.total()
	h.create(h.certificate("after", "ca"))
	h.waitReady("after", 1)
	assert.Positive(t, b.writes.total(), "the new leader acts")
	assert.Equal(t, before, a.writes.total(), "the stopped replica wrote nothing more")
}

// Two replicas without leader election race over the same certificates,
// each with its own cache that lags the other's writes: still one request
// per revision — deterministic names turn the second create into
// AlreadyExists — and every certificate Ready at revision 1.
func TestStaleCachesMakeOneRequestPerRevision(t *testing.T) {
	h := newHarness(t)
	h.caIssuer("ca")
	a := h.start()
	b := h.start()
	const n = 20
	for i := range n {
		h.create(h.certificate(fmt.Sprintf("web%d", i), "ca"))
	}
	for i := range n {
		h.waitReady(fmt.Sprintf("web%d", i), 1)
	}
	h.settle(a)
	h.settle(b)
	aOK, aFailed := a.writes.take()
	bOK, bFailed := b.writes.take()
	t.Logf("replica a: %v failed %v", aOK, aFailed)
	t.Logf("replica b: %v failed %v", bOK, bFailed)

	reqs := h.requests()
	perRevision := map[string]int{}
	for _, r := range reqs {
		perRevision[r.Annotations[cmapi.CertificateNameKey]+"@"+r.Annotations[cmapi.CertificateRequestRevisionAnnotationKey]]++
	}
	require.Len(t, perRevision, n)
	for k, v := range perRevision {
		assert.Equal(t, 1, v, "requests for %s", k)
	}
	assert.Equal(t, n, aOK["create CertificateRequest"]+bOK["create CertificateRequest"],
		"one request created per certificate across both replicas, never a second one after a delete")
	assert.Zero(t, aOK["delete CertificateRequest"]+bOK["delete CertificateRequest"], "no request was thrown away")
	for _, r := range reqs {
		assert.True(t, strings.HasSuffix(r.Name, "-1"))
	}
}
