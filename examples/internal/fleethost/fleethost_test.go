package fleethost

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/examples/internal/simca"
	"github.com/certlife/certlife/keys"
)

var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// runUntil works the queue, moving the fake clock to each due time, until
// end.
func runUntil(t testing.TB, h *Host, clk *testingclock.FakePassiveClock, end time.Time) {
	t.Helper()
	ctx := context.Background()
	for i := 0; ; i++ {
		if i > 1_000_000 {
			t.Fatal("the queue never drains: a loop")
		}
		next, ok := h.Next()
		if !ok || next.After(end) {
			clk.SetTime(end)
			h.Step(ctx)
			return
		}
		if next.After(clk.Now()) {
			clk.SetTime(next)
		}
		h.Step(ctx)
	}
}

type fixture struct {
	h      *Host
	clk    *testingclock.FakePassiveClock
	ca     *LocalCA
	events []Event
}

func newFixture(t testing.TB, lag time.Duration) *fixture {
	t.Helper()
	clk := testingclock.NewFakePassiveClock(t0)
	root, err := simca.New(rand.Reader, "reference CA", t0.AddDate(-1, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{clk: clk, ca: &LocalCA{CA: root, Rand: rand.Reader}}
	f.h, err = New(Options{Clock: clk, Rand: rand.Reader, Lag: lag, Observe: func(e Event) { f.events = append(f.events, e) }})
	if err != nil {
		t.Fatal(err)
	}
	f.h.SetIssuer("ca", f.ca)
	t.Cleanup(func() {
		if t.Failed() {
			f.dump(t)
		}
	})
	return f
}

func webCertificate() *certificate.Certificate {
	return &certificate.Certificate{
		ObjectMeta: certificate.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: certificate.Spec{SecretName: "web-tls", CommonName: "web.example", DNSNames: []string{"web.example"},
			IssuerRef: certificate.IssuerRef{Name: "ca"}, PrivateKey: &keys.KeySpec{Algorithm: keys.AlgorithmECDSA}},
	}
}

// secretOK checks the target secret: a key matching its certificate, for
// the spec's names, and returns the leaf's serial and key.
func (f *fixture) secretOK(t testing.TB) *keys.ParsedSecret {
	t.Helper()
	sec, _, ok := f.h.Secrets.Get("web-tls")
	if !ok {
		t.Fatal("no secret")
	}
	p, err := keys.ParseSecretData(sec.Data)
	if err != nil || !p.KeyMatches {
		t.Fatalf("the secret's key and certificate: %v (match %v)", err, p != nil && p.KeyMatches)
	}
	return p
}

func (f *fixture) ready(t testing.TB) *certificate.Certificate {
	t.Helper()
	c, _, _ := f.h.Certificates.Get("web")
	if r := c.Status.Condition(certificate.ConditionReady); r == nil || r.Status != certificate.StatusTrue {
		t.Fatalf("not Ready: %+v", c.Status.Conditions)
	}
	return c
}

func (f *fixture) requestsCreated() int {
	n := 0
	for _, e := range f.events {
		for _, a := range e.Done {
			if _, ok := a.(certificate.CreateRequest); ok {
				n++
			}
		}
	}
	return n
}

func TestFirstIssuanceAndRenewal(t *testing.T) {
	f := newFixture(t, 0)
	if err := f.h.Apply(webCertificate()); err != nil {
		t.Fatal(err)
	}
	runUntil(t, f.h, f.clk, t0.Add(time.Hour))
	first := f.secretOK(t)
	c := f.ready(t)
	if *c.Status.Revision != 1 || f.requestsCreated() != 1 {
		t.Fatalf("revision %d after %d requests", *c.Status.Revision, f.requestsCreated())
	}
	// 90-day certificate: renews when a third remains, at day 60.
	runUntil(t, f.h, f.clk, t0.Add(61*24*time.Hour))
	second := f.secretOK(t)
	c = f.ready(t)
	if *c.Status.Revision != 2 || f.requestsCreated() != 2 {
		t.Fatalf("after renewal: revision %d, %d requests", *c.Status.Revision, f.requestsCreated())
	}
	if keys.PublicKeysEqual(first.Key.Public(), second.Key.Public()) {
		t.Fatal("the key was not rotated")
	}
	if got := second.Leaf.NotBefore.Sub(t0); got < 59*24*time.Hour || got > 61*24*time.Hour {
		t.Fatalf("renewed %v after the first issuance", got)
	}
	// Nothing left behind: one request (revision history 1), no next key.
	var one [1]string
	if n := len(f.h.requestsOf.get(c.UID, &one)); n != 1 {
		t.Fatalf("%d requests kept", n)
	}
	if n := len(f.h.keysOf.get(c.UID, &one)); n != 0 {
		t.Fatalf("%d next-key secrets left", n)
	}
}

// A failing CA costs one request per backoff step (1h, 2h, 4h), and
// issuance succeeds once it recovers.
func TestFailuresBackOff(t *testing.T) {
	f := newFixture(t, 0)
	failUntil := t0.Add(6 * time.Hour)
	f.ca.Fault = func(_ *certificate.CertificateRequest, now time.Time) Fault {
		if now.Before(failUntil) {
			return FaultFail
		}
		return FaultNone
	}
	if err := f.h.Apply(webCertificate()); err != nil {
		t.Fatal(err)
	}
	runUntil(t, f.h, f.clk, t0.Add(24*time.Hour))
	f.secretOK(t)
	f.ready(t)
	var times []time.Duration
	for _, e := range f.events {
		for _, a := range e.Done {
			if _, ok := a.(certificate.CreateRequest); ok {
				times = append(times, e.Time.Sub(t0))
			}
		}
	}
	// Attempts at 0, +1h, +3h (2h later), +7h (4h later): the last after
	// the CA came back.
	want := []time.Duration{0, time.Hour, 3 * time.Hour, 7 * time.Hour}
	if len(times) != len(want) {
		t.Fatalf("requests at %v, want %v", times, want)
	}
	for i := range want {
		if d := times[i] - want[i]; d < 0 || d > time.Minute {
			t.Fatalf("requests at %v, want %v", times, want)
		}
	}
}

// With reads lagging writes by 30 s, the host never creates a second
// request for a revision: the deterministic name turns a duplicate create
// into AlreadyExists.
func TestStaleCacheMakesNoDuplicateRequest(t *testing.T) {
	f := newFixture(t, 30*time.Second)
	if err := f.h.Apply(webCertificate()); err != nil {
		t.Fatal(err)
	}
	runUntil(t, f.h, f.clk, t0.Add(61*24*time.Hour))
	f.secretOK(t)
	c := f.ready(t)
	if *c.Status.Revision != 2 || f.requestsCreated() != 2 {
		t.Fatalf("revision %d, %d request creations", *c.Status.Revision, f.requestsCreated())
	}
	conflicts := 0
	for _, e := range f.events {
		if e.Err != nil {
			conflicts++
		}
	}
	t.Logf("%d passes stopped on stale reads or conflicts", conflicts)
}

// A crash between two actions of a pass is repaired by the next pass.
func TestCrashBetweenActions(t *testing.T) {
	f := newFixture(t, 0)
	crashes := 0
	f.h.opts.Crash = func(_ string, i int) bool {
		if i == 1 && crashes < 5 {
			crashes++
			return true
		}
		return false
	}
	if err := f.h.Apply(webCertificate()); err != nil {
		t.Fatal(err)
	}
	runUntil(t, f.h, f.clk, t0.Add(2*time.Hour))
	if crashes == 0 {
		t.Fatal("no crash was injected")
	}
	f.secretOK(t)
	c := f.ready(t)
	if *c.Status.Revision != 1 || f.requestsCreated() != 1 {
		t.Fatalf("after %d crashes: revision %d, %d requests", crashes, *c.Status.Revision, f.requestsCreated())
	}
}

// A manual trigger re-issues at once, even in the middle of a backoff.
func TestManualTrigger(t *testing.T) {
	f := newFixture(t, 0)
	if err := f.h.Apply(webCertificate()); err != nil {
		t.Fatal(err)
	}
	runUntil(t, f.h, f.clk, t0.Add(time.Hour))
	if err := f.h.Trigger("web", "rotate after an incident"); err != nil {
		t.Fatal(err)
	}
	runUntil(t, f.h, f.clk, t0.Add(2*time.Hour))
	c := f.ready(t)
	if *c.Status.Revision != 2 {
		t.Fatalf("revision %d after the trigger", *c.Status.Revision)
	}
	if err := f.h.Trigger("missing", "x"); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("triggering a missing certificate: %v", err)
	}
}

func TestNewNeedsAClockAndRandomness(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Fatal("New without a clock")
	}
}

func (f *fixture) dump(t testing.TB) {
	for _, e := range f.events {
		if e.Result != nil {
			t.Logf("%s %s %s %v crashed=%v err=%v", e.Time.Sub(t0), e.Result.Reason, e.Result.Message, e.Done, e.Crashed, e.Err)
		} else {
			t.Logf("%s request %s answered %v", e.Time.Sub(t0), e.Request.Name, e.Request.Status.Conditions)
		}
	}
}
