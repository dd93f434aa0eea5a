package refhost_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/localca"
	"github.com/certlife/certlife/examples/refhost"
	"github.com/certlife/certlife/keys"
	clocktesting "k8s.io/utils/clock/testing"
)

// A certificate from an internal CA, issued and then renewed when a third
// of its lifetime remains.
func Example() {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := clocktesting.NewFakePassiveClock(start)
	ca, err := localca.NewRoot(rand.Reader, "internal CA", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, start, 10*365*24*time.Hour)
	if err != nil {
		panic(err)
	}
	store := refhost.NewStore()
	host := refhost.New(store, clock, certificate.Config{}, map[string]refhost.Issuer{"internal": refhost.LocalCA{CA: ca}})

	err = store.CreateCertificate(&certificate.Certificate{
		ObjectMeta: certificate.ObjectMeta{Name: "webhook", Namespace: "system"},
		Spec: certificate.Spec{
			SecretName: "webhook-tls", DNSNames: []string{"webhook.system.svc"},
			IssuerRef: certificate.IssuerRef{Name: "internal"},
			Duration:  &certificate.Duration{Duration: 30 * 24 * time.Hour},
		},
	})
	if err != nil {
		panic(err)
	}
	show := func() {
		if _, err := host.Settle(context.Background(), 20); err != nil {
			panic(err)
		}
		c, _ := store.Certificate("webhook")
		ready := c.Status.Condition(certificate.ConditionReady)
		next, _ := host.Next()
		fmt.Printf("%s: Ready=%s revision %d, renews at %s, host looks again at %s\n", clock.Now().Format("Jan 2"),
			ready.Status, *c.Status.Revision, c.Status.RenewalTime.Format("Jan 2"), next.Format("Jan 2"))
	}
	show()
	next, _ := host.Next()
	clock.SetTime(next)
	show()
	// Output:
	// Mar 1: Ready=True revision 1, renews at Mar 21, host looks again at Mar 21
	// Mar 21: Ready=True revision 2, renews at Apr 10, host looks again at Apr 10
}
