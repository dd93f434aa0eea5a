package fleet

import (
	"context"
	"testing"
)

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
