package fleet

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A small fleet for a year with every fault on: no invariant breaks.
func TestSmallFleetWithFaults(t *testing.T) {
	cfg := Defaults()
	cfg.Certificates, cfg.Faults = 500, true
	if raceEnabled {
		cfg.Certificates = 150
	}
	sum, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	t.Log("\n" + sum.String())
	require.Empty(t, sum.Violations, "violations")
	// The run did what it claims: renewals happened, faults struck, the
	// host crashed and read stale state, and the summary ends as promised.
	require.GreaterOrEqual(t, sum.Renewals, 4*cfg.Certificates, "a thin run, too few renewals: %+v", sum)
	require.NotZero(t, sum.Failures, "a thin run, no failures: %+v", sum)
	require.NotZero(t, sum.Crashes, "a thin run, no crashes: %+v", sum)
	require.NotZero(t, sum.ManualTriggers, "a thin run, no manual triggers: %+v", sum)
	require.True(t, strings.HasSuffix(sum.String(), "violations: 0\n"), "the last line is not the violation count:\n%s", sum)
}

// The same seed gives the same run.
func TestDeterministic(t *testing.T) {
	cfg := Defaults()
	cfg.Certificates, cfg.Days, cfg.Faults = 120, 60, true
	a, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	b, _ := Run(context.Background(), cfg)
	strip := func(s Summary) string {
		s.Wall, s.HeapBytes = 0, 0
		out := s.String()
		return out[:strings.Index(out, "wall time")]
	}
	require.Equal(t, strip(a), strip(b), "two runs of one seed differ")
}

// The invariants can fail: with jitter off, a fleet created in one second
// renews in one minute, and the peak-renewal check says so.
func TestInvariantsCatchARenewalStampede(t *testing.T) {
	cfg := Defaults()
	cfg.Certificates, cfg.Days, cfg.Jitter = 300, 70, false
	sum, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	require.GreaterOrEqual(t, sum.PeakRenewalsPerMinute, 100, "the peak without jitter")
	// Jitter off is allowed to stampede; the same fleet with jitter on
	// stays under the bound.
	cfg.Jitter = true
	on, _ := Run(context.Background(), cfg)
	require.Less(t, on.PeakRenewalsPerMinute, sum.PeakRenewalsPerMinute/10, "the peak with jitter, against a tenth of the peak without")
	require.Empty(t, on.Violations, "violations with jitter")
}

func TestConfigIsChecked(t *testing.T) {
	_, err := Run(context.Background(), Config{Shards: 99})
	for _, want := range []string{"Certificates: 0", "Days: 0", "Shards: 99", "Start"} {
		require.ErrorContains(t, err, want, "the error does not name it")
	}
}

func BenchmarkFleet(b *testing.B) {
	for i := 0; i < b.N; i++ {
		cfg := Defaults()
		cfg.Certificates, cfg.Days, cfg.Faults = 500, 365, true
		sum, err := Run(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(sum.Issuances), "issuances")
	}
}
