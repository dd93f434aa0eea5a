package fleethost

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/examples/internal/simca"
	"github.com/certlife/certlife/keys"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// runUntil works the queue, moving the fake clock to each due time, until
// end.
func runUntil(t testing.TB, h *Host, clk *testingclock.FakePassiveClock, end time.Time) {
	t.Helper()
	ctx := context.Background()
	for i := 0; ; i++ {
		require.LessOrEqual(t, i, 1_000_000, "the queue never drains: a loop")
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
	require.NoError(t, err)
	f := &fixture{clk: clk, ca: &LocalCA{CA: root, Rand: rand.Reader}}
	f.h, err = New(Options{Clock: clk, Rand: rand.Reader, Lag: lag, Observe: func(e Event) { f.events = append(f.events, e) }})
	require.NoError(t, err)
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
	require.True(t, ok, "no secret")
	p, err := keys.ParseSecretData(sec.Data)
	require.NoError(t, err, "the secret's key and certificate")
	require.True(t, p.KeyMatches, "the secret's key does not match its certificate")
	return p
}

func (f *fixture) ready(t testing.TB) *certificate.Certificate {
	t.Helper()
	c, _, _ := f.h.Certificates.Get("web")
	r := c.Status.Condition(certificate.ConditionReady)
	require.NotNil(t, r, "not Ready: %+v", c.Status.Conditions)
	require.Equal(t, certificate.StatusTrue, r.Status, "not Ready: %+v", c.Status.Conditions)
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
	require.NoError(t, f.h.Apply(webCertificate()))
	runUntil(t, f.h, f.clk, t0.Add(time.Hour))
	first := f.secretOK(t)
	c := f.ready(t)
	require.Equal(t, 1, *c.Status.Revision, "revision after first issuance")
	require.Equal(t, 1, f.requestsCreated(), "requests for first issuance")
	// 90-day certificate: renews when a third remains, at day 60.
	runUntil(t, f.h, f.clk, t0.Add(61*24*time.Hour))
	second := f.secretOK(t)
	c = f.ready(t)
	require.Equal(t, 2, *c.Status.Revision, "revision after renewal")
	require.Equal(t, 2, f.requestsCreated(), "requests after renewal")
	require.False(t, keys.PublicKeysEqual(first.Key.Public(), second.Key.Public()), "the key was not rotated")
	renewedAfter := second.Leaf.NotBefore.Sub(t0)
	require.GreaterOrEqual(t, renewedAfter, 59*24*time.Hour, "renewed too soon after the first issuance")
	require.LessOrEqual(t, renewedAfter, 61*24*time.Hour, "renewed too late after the first issuance")
	// Nothing left behind: one request (revision history 1), no next key.
	var one [1]string
	require.Len(t, f.h.requestsOf.get(c.UID, &one), 1, "requests kept")
	require.Empty(t, f.h.keysOf.get(c.UID, &one), "next-key secrets left")
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
	require.NoError(t, f.h.Apply(webCertificate()))
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
	require.Len(t, times, len(want), "requests at %v, want %v", times, want)
	for i := range want {
		d := times[i] - want[i]
		require.GreaterOrEqual(t, d, time.Duration(0), "requests at %v, want %v", times, want)
		require.LessOrEqual(t, d, time.Minute, "requests at %v, want %v", times, want)
	}
}

// With reads lagging writes by 30 s, the host never creates a second
// request for a revision: the deterministic name turns a duplicate create
// into AlreadyExists.
func TestStaleCacheMakesNoDuplicateRequest(t *testing.T) {
	f := newFixture(t, 30*time.Second)
	require.NoError(t, f.h.Apply(webCertificate()))
	runUntil(t, f.h, f.clk, t0.Add(61*24*time.Hour))
	f.secretOK(t)
	c := f.ready(t)
	require.Equal(t, 2, *c.Status.Revision, "revision")
	require.Equal(t, 2, f.requestsCreated(), "request creations")
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
	require.NoError(t, f.h.Apply(webCertificate()))
	runUntil(t, f.h, f.clk, t0.Add(2*time.Hour))
	require.NotZero(t, crashes, "no crash was injected")
	f.secretOK(t)
	c := f.ready(t)
	require.Equal(t, 1, *c.Status.Revision, "revision after %d crashes", crashes)
	require.Equal(t, 1, f.requestsCreated(), "requests after %d crashes", crashes)
}

// A manual trigger re-issues at once, even in the middle of a backoff.
func TestManualTrigger(t *testing.T) {
	f := newFixture(t, 0)
	require.NoError(t, f.h.Apply(webCertificate()))
	runUntil(t, f.h, f.clk, t0.Add(time.Hour))
	require.NoError(t, f.h.Trigger("web", "rotate after an incident"))
	runUntil(t, f.h, f.clk, t0.Add(2*time.Hour))
	c := f.ready(t)
	require.Equal(t, 2, *c.Status.Revision, "revision after the trigger")
	require.ErrorContains(t, f.h.Trigger("missing", "x"), "missing", "triggering a missing certificate")
}

func TestNewNeedsAClockAndRandomness(t *testing.T) {
	_, err := New(Options{})
	require.Error(t, err, "New without a clock")
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
