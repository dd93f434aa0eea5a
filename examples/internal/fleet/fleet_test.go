package fleet

import (
	"context"
	"strings"
	"testing"
)

// A small fleet for a year with every fault on: no invariant breaks.
func TestSmallFleetWithFaults(t *testing.T) {
	cfg := Defaults()
	cfg.Certificates, cfg.Faults = 500, true
	if raceEnabled {
		cfg.Certificates = 150
	}
	sum, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + sum.String())
	if len(sum.Violations) > 0 {
		t.Fatalf("%d violations", len(sum.Violations))
	}
	// The run did what it claims: renewals happened, faults struck, the
	// host crashed and read stale state, and the summary ends as promised.
	if sum.Renewals < 4*cfg.Certificates || sum.Failures == 0 || sum.Crashes == 0 || sum.ManualTriggers == 0 {
		t.Fatalf("a thin run: %+v", sum)
	}
	if !strings.HasSuffix(sum.String(), "violations: 0\n") {
		t.Fatalf("the last line is not the violation count:\n%s", sum)
	}
}

// The same seed gives the same run.
func TestDeterministic(t *testing.T) {
	cfg := Defaults()
	cfg.Certificates, cfg.Days, cfg.Faults = 120, 60, true
	a, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Run(context.Background(), cfg)
	strip := func(s Summary) string {
		s.Wall, s.HeapBytes = 0, 0
		out := s.String()
		return out[:strings.Index(out, "wall time")]
	}
	if strip(a) != strip(b) {
		t.Fatalf("two runs of one seed differ:\n%s\n%s", strip(a), strip(b))
	}
}

// The invariants can fail: with jitter off, a fleet created in one second
// renews in one minute, and the peak-renewal check says so.
func TestInvariantsCatchARenewalStampede(t *testing.T) {
	cfg := Defaults()
	cfg.Certificates, cfg.Days, cfg.Jitter = 300, 70, false
	sum, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if sum.PeakRenewalsPerMinute < 100 {
		t.Fatalf("without jitter the peak is only %d", sum.PeakRenewalsPerMinute)
	}
	// Jitter off is allowed to stampede; the same fleet with jitter on
	// stays under the bound.
	cfg.Jitter = true
	on, _ := Run(context.Background(), cfg)
	if on.PeakRenewalsPerMinute >= sum.PeakRenewalsPerMinute/10 || len(on.Violations) > 0 {
		t.Fatalf("with jitter: peak %d, %v", on.PeakRenewalsPerMinute, on.Violations)
	}
}

func TestConfigIsChecked(t *testing.T) {
	_, err := Run(context.Background(), Config{Shards: 99})
	for _, want := range []string{"Certificates: 0", "Days: 0", "Shards: 99", "Start"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v does not name %q", err, want)
		}
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
