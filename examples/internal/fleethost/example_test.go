package fleethost_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/examples/internal/fleethost"
	"github.com/certlife/certlife/examples/internal/simca"
	"github.com/certlife/certlife/keys"
)

// A host on a fake clock with a local CA: apply a certificate, work the
// queue, and renew when the time comes.
func Example() {
	start := time.Date(2027, 1, 4, 9, 0, 0, 0, time.UTC)
	clk := testingclock.NewFakePassiveClock(start)
	ca, _ := simca.New(rand.Reader, "example CA", start.AddDate(-1, 0, 0))
	h, _ := fleethost.New(fleethost.Options{Clock: clk, Rand: rand.Reader})
	h.SetIssuer("ca", &fleethost.LocalCA{CA: ca, Rand: rand.Reader})
	_ = h.Apply(&certificate.Certificate{
		ObjectMeta: certificate.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: certificate.Spec{SecretName: "web-tls", DNSNames: []string{"web.example"},
			IssuerRef: certificate.IssuerRef{Name: "ca"}, PrivateKey: &keys.KeySpec{Algorithm: keys.AlgorithmECDSA}},
	})
	// The host loop: move the clock to the next due time and work.
	run := func(until time.Time) {
		for {
			next, ok := h.Next()
			if !ok || next.After(until) {
				clk.SetTime(until)
				return
			}
			clk.SetTime(next)
			h.Step(context.Background())
		}
	}
	for _, day := range []int{0, 61} {
		run(start.AddDate(0, 0, day).Add(time.Hour))
		c, _, _ := h.Certificates.Get("web")
		fmt.Printf("day %d: revision %d, %s, renews %s\n", day, *c.Status.Revision,
			c.Status.Condition(certificate.ConditionReady).Reason, c.Status.RenewalTime.Format("2006-01-02"))
	}
	// Output:
	// day 0: revision 1, Ready, renews 2027-03-05
	// day 61: revision 2, Ready, renews 2027-05-04
}
