package host

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/certlife/certlife/certificate"
)

// An issuer's circuit, step by step on explicit times: it opens after
// Failures failures in a row within Window, skips the issuer until its
// deadline, then is half-open — one probe goes, the others wait for its
// answer or for Probe — and closes on an issued request.
func TestCircuit(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	ca := certificate.IssuerRef{Name: "ca"}
	cfg := CircuitConfig{Failures: 3, Window: 10 * time.Minute, Open: time.Hour, Probe: 5 * time.Minute}
	type step struct {
		at time.Duration // after t0
		// op: "fail", "issue", "admit" (want admitted), "deny" (want not
		// admitted), or "skip" (want the issuer skipped until t0+until;
		// until zero: not skipped).
		op    string
		until time.Duration
	}
	tests := map[string]struct {
		cfg   CircuitConfig
		steps []step
	}{
		"closed: two failures skip nothing": {steps: []step{
			{0, "fail", 0}, {time.Minute, "fail", 0}, {2 * time.Minute, "skip", 0}, {2 * time.Minute, "admit", 0},
		}},
		"three failures within the window open it until the deadline": {steps: []step{
			{0, "fail", 0}, {time.Minute, "fail", 0}, {2 * time.Minute, "fail", 0},
			{3 * time.Minute, "skip", 62 * time.Minute}, {3 * time.Minute, "deny", 0}, {61 * time.Minute, "deny", 0},
		}},
		"failures further apart than the window do not": {steps: []step{
			{0, "fail", 0}, {6 * time.Minute, "fail", 0}, {12 * time.Minute, "fail", 0}, {13 * time.Minute, "skip", 0},
			{13 * time.Minute, "fail", 0}, {14 * time.Minute, "skip", 73 * time.Minute},
		}},
		"an issued request between failures starts the count again": {steps: []step{
			{0, "fail", 0}, {time.Minute, "fail", 0}, {2 * time.Minute, "issue", 0}, {3 * time.Minute, "fail", 0}, {4 * time.Minute, "skip", 0},
		}},
		"a failure while open, of a request made before, changes nothing": {steps: []step{
			{0, "fail", 0}, {0, "fail", 0}, {0, "fail", 0}, {30 * time.Minute, "fail", 0}, {30 * time.Minute, "skip", time.Hour},
		}},
		"half-open: one probe goes, the others wait for its answer": {steps: []step{
			{0, "fail", 0}, {0, "fail", 0}, {0, "fail", 0},
			{time.Hour, "skip", 0}, {time.Hour, "admit", 0},
			{time.Hour + time.Second, "skip", time.Hour + 5*time.Minute}, {time.Hour + time.Second, "deny", 0},
		}},
		"half-open, the probe issued: closed": {steps: []step{
			{0, "fail", 0}, {0, "fail", 0}, {0, "fail", 0}, {time.Hour, "admit", 0},
			{time.Hour + time.Minute, "issue", 0}, {time.Hour + time.Minute, "skip", 0}, {time.Hour + time.Minute, "admit", 0}, {time.Hour + time.Minute, "admit", 0},
		}},
		"half-open, the probe failed: open again for the whole time": {steps: []step{
			{0, "fail", 0}, {0, "fail", 0}, {0, "fail", 0}, {time.Hour, "admit", 0},
			{time.Hour + time.Minute, "fail", 0}, {time.Hour + 2*time.Minute, "skip", 2*time.Hour + time.Minute}, {2 * time.Hour, "deny", 0},
		}},
		"half-open, the probe unanswered: another goes after the probe time": {steps: []step{
			{0, "fail", 0}, {0, "fail", 0}, {0, "fail", 0}, {time.Hour, "admit", 0},
			{time.Hour + 4*time.Minute, "deny", 0}, {time.Hour + 5*time.Minute, "skip", 0}, {time.Hour + 5*time.Minute, "admit", 0},
		}},
		"an issued request while open closes it": {steps: []step{
			{0, "fail", 0}, {0, "fail", 0}, {0, "fail", 0}, {10 * time.Minute, "issue", 0}, {10 * time.Minute, "skip", 0},
		}},
		"circuits off: never open": {cfg: CircuitConfig{Failures: -1}, steps: []step{
			{0, "fail", 0}, {0, "fail", 0}, {0, "fail", 0}, {0, "fail", 0}, {0, "fail", 0}, {0, "fail", 0},
			{time.Minute, "skip", 0}, {time.Minute, "admit", 0},
		}},
		"the defaults: five failures, an hour": {cfg: CircuitConfig{}, steps: []step{
			{0, "fail", 0}, {0, "fail", 0}, {0, "fail", 0}, {0, "fail", 0}, {time.Second, "skip", 0},
			{59 * time.Minute, "fail", 0}, {time.Hour, "skip", 2*time.Hour - time.Minute},
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := cfg
			if tc.cfg != (CircuitConfig{}) || name == "the defaults: five failures, an hour" {
				c = tc.cfg
			}
			cs := newCircuits(c)
			for i, s := range tc.steps {
				now := t0.Add(s.at)
				switch s.op {
				case "fail":
					cs.failed(ca, now)
				case "issue":
					cs.succeeded(ca)
				case "admit", "deny":
					assert.Equal(t, s.op == "admit", cs.admit(ca, now), "step %d (%s at +%v)", i, s.op, s.at)
				case "skip":
					var want []certificate.IssuerSkip
					if s.until != 0 {
						want = []certificate.IssuerSkip{{IssuerRef: ca.WithDefaults(), Until: t0.Add(s.until)}}
					}
					assert.Equal(t, want, cs.skips(now), "step %d (skip at +%v)", i, s.at)
				}
			}
		})
	}
}

func TestCircuitConfigValidate(t *testing.T) {
	assert.NoError(t, CircuitConfig{}.Validate())
	assert.NoError(t, CircuitConfig{Failures: -1}.Validate())
	err := CircuitConfig{Window: -time.Second, Probe: -time.Minute}.Validate()
	assert.ErrorContains(t, err, "IssuerCircuit.Window is -1s")
	assert.ErrorContains(t, err, "IssuerCircuit.Probe is -1m0s")
}

// The circuits kept are those of issuers that failed recently: issuers
// that failed once and were never asked again, or whose circuit went
// half-open with nobody asking, are let go when another issuer fails,
// while an open circuit and a recent failure stay.
func TestCircuitsOfIssuersNotAskedAgainGo(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	cs := newCircuits(CircuitConfig{Failures: 2, Window: 10 * time.Minute, Open: time.Hour, Probe: 5 * time.Minute})
	ref := func(i int) certificate.IssuerRef {
		return certificate.IssuerRef{Name: "issuer-" + string(rune('a'+i%26)) + string(rune('a'+i/26))}
	}
	for i := range 500 {
		cs.failed(ref(i), t0) // once each: closed, one failure
	}
	open := certificate.IssuerRef{Name: "open"}
	cs.failed(open, t0)
	cs.failed(open, t0) // open until t0+1h
	recent := certificate.IssuerRef{Name: "recent"}
	cs.failed(recent, t0.Add(5*time.Minute))
	halfOpen := certificate.IssuerRef{Name: "half-open"}
	cs.failed(halfOpen, t0.Add(-2*time.Hour))
	cs.failed(halfOpen, t0.Add(-2*time.Hour)) // half-open since t0-1h
	assert.Equal(t, 503, len(cs.states()), "nothing says nothing yet")

	cs.failed(certificate.IssuerRef{Name: "new"}, t0.Add(11*time.Minute))
	var names []string
	for _, s := range cs.states() {
		names = append(names, s.IssuerRef.Name)
	}
	assert.ElementsMatch(t, []string{"open", "recent", "new"}, names)
	assert.False(t, cs.admit(open, t0.Add(11*time.Minute)), "an open circuit is kept")
	assert.True(t, cs.admit(halfOpen, t0.Add(11*time.Minute)), "a circuit let go admits")
}
