package renewal_test

import (
	"fmt"
	"time"

	"github.com/certlife/certlife/renewal"
)

// A 90-day certificate may renew only on weekday nights in Oslo. On the
// Monday morning its renewal falls due, the decision defers it to the night
// and says when.
func ExampleDecide() {
	notBefore := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	in := renewal.Input{
		NotBefore: notBefore,
		NotAfter:  notBefore.Add(90 * 24 * time.Hour),
		Spec: renewal.Spec{
			Policy: renewal.PolicyScheduled,
			Windows: []renewal.Window{{
				DaysOfWeek: []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday"},
				Start:      "23:00", End: "05:00", TimeZone: "Europe/Oslo",
			}},
		},
	}
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	d := renewal.Decide(in, now, renewal.Options{})
	fmt.Println(d.Reason, d.Renew)
	fmt.Println("look again at", d.NextCheck.Format(time.RFC3339))

	d = renewal.Decide(in, d.NextCheck, renewal.Options{})
	fmt.Println(d.Reason, d.Renew, d.Status.Windows.MatchedWindow)
	// Output:
	// RenewalDeferred false
	// look again at 2026-03-02T22:00:00Z
	// RenewalDue true windows[0]
}

// Renewal time for certificates of different lifetimes, with the
// short-lived rule on (the default).
func ExampleTime() {
	nb := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, days := range []int{90, 45, 6} {
		at, src := renewal.Time(nb, nb.AddDate(0, 0, days), 0, 0, renewal.Timing{})
		fmt.Printf("%2d days: renew after %v (%s)\n", days, at.Sub(nb), src)
	}
	// Output:
	// 90 days: renew after 1440h0m0s (default)
	// 45 days: renew after 720h0m0s (default)
	//  6 days: renew after 72h0m0s (shortLivedDefault)
}
