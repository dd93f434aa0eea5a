package fleet

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/certlife/certlife/backoff"
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
	// host crashed, restarted, read stale state and met conflicts, users
	// acted, the CA kept orders pending and was told of deleted requests;
	// and the summary ends as promised.
	require.GreaterOrEqual(t, sum.Renewals, 4*cfg.Certificates, "a thin run, too few renewals: %+v", sum)
	for what, n := range map[string]int{
		"failures": sum.Failures, "crashes": sum.Crashes, "restarts": sum.Restarts, "manual renewals": sum.ManualTriggers,
		"spec changes": sum.SpecChanges, "re-creations": sum.Recreations, "delayed answers": sum.Delayed, "forgotten orders": sum.Forgets,
		"stale reads": sum.StaleReads, "conflicts": sum.Conflicts,
	} {
		require.NotZero(t, n, "a thin run, no %s: %+v", what, sum)
	}
	require.LessOrEqual(t, sum.MaxUnready, ReadyBound)
	require.LessOrEqual(t, sum.MaxRetryLate, RetryBound)
	require.True(t, strings.HasSuffix(sum.String(), "violations: "+strconv.Itoa(len(sum.Violations))+"\n"), "the last line is not the violation count:\n%s", sum)
}

// The same seed gives the same run.
func TestDeterministic(t *testing.T) {
	cfg := Defaults()
	cfg.Certificates, cfg.Days, cfg.Faults = 120, 60, true
	a, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	b, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	strip := func(s Summary) string {
		out := s.String()
		return out[:strings.Index(out, "wall time")]
	}
	require.Equal(t, strip(a), strip(b), "two runs of one seed differ")
	require.Equal(t, a.Violations, b.Violations)
	require.Empty(t, a.Violations, "violations")
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
	on, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	require.Less(t, on.PeakRenewalsPerMinute, sum.PeakRenewalsPerMinute/10, "the peak with jitter, against a tenth of the peak without")
	require.Empty(t, on.Violations, "violations with jitter")
}

// violationKinds counts violations by kind (the text before the first colon).
func violationKinds(vs []string) map[string]int {
	out := map[string]int{}
	for _, v := range vs {
		out[v[:strings.Index(v, ":")]]++
	}
	return out
}

// Each invariant catches the fault it is there for, in a fleet that is
// otherwise clean: the same small fleet, in the conditions the row names
// (given), without and then with one thing wrong.
func TestInvariantsCatchFaults(t *testing.T) {
	base := Defaults()
	base.Certificates, base.Days, base.Faults = 100, OutageDays[0]+2, true
	if raceEnabled {
		base.Certificates = 40
	}
	for name, tc := range map[string]struct {
		given  func(*Config)
		break_ func(*Config)
		want   string
	}{
		"an issuer that is never told of deleted requests keeps their orders": {
			nil, func(c *Config) { c.forgetless = true }, "issuer state"},
		// The CA is down on the first day, so that every certificate's
		// first issuance fails again and again.
		"retries before the schedule the README claims (the 2nd after 1h, not 2h: on the CA's outage day)": {
			func(c *Config) { c.outageDays, c.Days = []int{0}, 2 },
			func(c *Config) { c.backoff = backoff.Policy{Max: time.Hour} }, "backoff"},
		"a CA that keeps its orders longer than the un-Ready bound allows": {
			nil, func(c *Config) { c.slowCA = ReadyBound + time.Hour }, "not ready"},
		// The loop then reads the store without ReadYourWrites, and takes
		// the watch events of its own writes for writes it has read: a
		// pass decides on reads that do not show its last writes, and
		// nothing wakes it when they show. (The loop before
		// ReadYourWrites made requests for revisions already issued.)
		"a loop that trusts a lagging store's reads (the store claims to be authoritative) leaves certificates un-Ready": {
			func(c *Config) { c.Certificates = 200 },
			func(c *Config) { c.claimAuthoritative = true }, "not ready"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := base
			if tc.given != nil {
				tc.given(&cfg)
			}
			clean, err := Run(context.Background(), cfg)
			require.NoError(t, err)
			require.Empty(t, clean.Violations, "the fleet without the fault")
			broken := cfg
			tc.break_(&broken)
			sum, err := Run(context.Background(), broken)
			require.NoError(t, err)
			assert.NotZero(t, violationKinds(sum.Violations)[tc.want], "no %q violation among %v", tc.want, sum.Violations)
		})
	}
}

func TestConfigIsChecked(t *testing.T) {
	_, err := Run(context.Background(), Config{Shards: 99})
	for _, want := range []string{"Certificates: 0", "Days: 0", "Shards: 99", "Start"} {
		require.ErrorContains(t, err, want, "the error does not name it")
	}
}

func BenchmarkFleet(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		cfg := Defaults()
		cfg.Certificates, cfg.Days, cfg.Faults = 500, 365, true
		sum, err := Run(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(sum.Issuances), "issuances")
		b.ReportMetric(sum.BytesPerCertificate(), "B/cert")
	}
}
