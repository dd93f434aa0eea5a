package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fallbackScenario is the fallback row: a fleet whose every certificate
// names a second CA as its fallback issuer, and whose first CA is down for
// the whole of outageDay, when the fleet's 45-day certificates renew;
// arrivals certificates are created over that day and the next, one
// every 10 minutes: enough traffic for the hosts' circuits (the
// defaults: 5 failures in a row within an hour, open for an hour) to
// open within the outage's first hour and to close soon after it.
func fallbackScenario() Config {
	cfg := Defaults()
	const outageDay = 30
	cfg.Certificates, cfg.Days, cfg.Fallback = 300, outageDay+10, true
	cfg.outageDays, cfg.arrivals = []int{outageDay}, 288
	if raceEnabled {
		cfg.Certificates, cfg.arrivals = 100, 144
	}
	return cfg
}

// A day-long outage of the first CA, with a second CA to fall back on:
// no certificate expires, the second CA issues what the first cannot, no
// request goes to the first while its circuit is open, and once it is
// back the first CA issues again — every renewal after the outage.
func TestFallbackOverADayLongOutage(t *testing.T) {
	cfg := fallbackScenario()
	sum, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	t.Log("\n" + sum.String())
	require.Empty(t, sum.Violations, "violations")
	assert.Zero(t, sum.Expiries, "expiries")
	assert.NotZero(t, sum.IssuedInOutage[fallbackRef.Name], "the second CA issued nothing during the outage")
	assert.Zero(t, sum.IssuedInOutage[issuerRef.Name], "the first CA issued during its outage")
	assert.Greater(t, sum.IssuedAfterOutage[issuerRef.Name], 0, "the first CA issued nothing after the outage")
	// Back at midnight, the first CA's circuit is half-open within the
	// hour of its last failure; a probe closes it; the second CA issues
	// only what was already under way with it.
	assert.GreaterOrEqual(t, sum.FirstCABackAfter, time.Duration(0))
	assert.Less(t, sum.FirstCABackAfter, 2*time.Hour, "the first CA was used again long after it was back")
	assert.Less(t, sum.SecondCALastAfter, 3*time.Hour, "the second CA was still used long after the first was back")
	// A certificate created in the outage fails once on the first CA at
	// most (before the circuits open), and is issued by the second after
	// the backoff's first hour and the CA's pending time (at most
	// PendingMax).
	assert.Less(t, sum.LongestUnready, time.Hour+PendingMax+5*time.Minute, "a certificate created in the outage waited too long")
}

// The same outage without a second CA: certificates created in it wait
// for the first CA's return; the fallback row's figures are against
// these.
func TestOutageWithoutFallback(t *testing.T) {
	cfg := fallbackScenario()
	cfg.Fallback = false
	sum, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	t.Log("\n" + sum.String())
	require.Empty(t, sum.Violations, "violations")
	t.Logf("longest un-Ready without a second CA: %v", sum.LongestUnready)
	assert.Greater(t, sum.LongestUnready, 6*time.Hour, "without a second CA, certificates created in the outage wait for its end")
}

// The circuit invariant can fail: certificates that do not name the
// second CA keep asking the first, whatever its circuit says.
func TestInvariantsCatchRequestsToAnOpenCircuit(t *testing.T) {
	cfg := fallbackScenario()
	cfg.Certificates, cfg.Days = 60, 32
	cfg.noFallbackRefs = true
	sum, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	assert.NotZero(t, violationKinds(sum.Violations)["open circuit"], "no open-circuit violation among %v", sum.Violations)
}
