package refhost_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/acmeclient/acmetest"
	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/localca"
	"github.com/certlife/certlife/examples/refhost"
	"github.com/certlife/certlife/keys"
	"k8s.io/utils/clock"
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

// A host that keeps two certificates with the public API: one from an
// internal CA, one over ACME — here against Pebble in process, as a host's
// own tests would. The host's loop runs on the real clock: step, then wait
// until the next thing is due.
func Example_twoIssuers() {
	ctx := context.Background()
	pebble, err := acmetest.Start(acmetest.Options{})
	if err != nil {
		panic(err)
	}
	defer pebble.Close()
	accountKey, _ := keys.Generate(rand.Reader, keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
	client, err := acmeclient.New(pebble.ClientConfig(accountKey))
	if err != nil {
		panic(err)
	}
	acme, err := acmeclient.NewIssuer(acmeclient.IssuerConfig{
		Client: client, Account: acmeclient.AccountOptions{AgreeToTerms: true},
		Store: acmeclient.NewMemoryStore(), Solvers: pebble.Solvers(),
	})
	if err != nil {
		panic(err)
	}
	internal, err := localca.NewRoot(rand.Reader, "internal CA", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, time.Now().Add(-time.Hour), 10*365*24*time.Hour)
	if err != nil {
		panic(err)
	}

	store := refhost.NewStore()
	host := refhost.New(store, clock.RealClock{}, certificate.Config{}, map[string]refhost.Issuer{
		"internal": refhost.LocalCA{CA: internal},
		"public":   refhost.ACME{Issuer: acme},
	})
	for name, issuer := range map[string]string{"api": "internal", "www": "public"} {
		err := store.CreateCertificate(&certificate.Certificate{
			ObjectMeta: certificate.ObjectMeta{Name: name, Namespace: "default"},
			Spec: certificate.Spec{SecretName: name + "-tls", DNSNames: []string{name + ".example"},
				IssuerRef: certificate.IssuerRef{Name: issuer}},
		})
		if err != nil {
			panic(err)
		}
	}

	ready := func(name string) bool {
		c, _ := store.Certificate(name)
		r := c.Status.Condition(certificate.ConditionReady)
		return r != nil && r.Status == certificate.StatusTrue
	}
	for deadline := time.Now().Add(30 * time.Second); !(ready("api") && ready("www")) && time.Now().Before(deadline); {
		host.Step(ctx)
		if next, ok := host.Next(); ok {
			time.Sleep(min(max(time.Until(next), 0), 100*time.Millisecond))
		}
	}
	for _, name := range []string{"api", "www"} {
		c, _ := store.Certificate(name)
		sec, _ := store.Secret(c.Spec.SecretName)
		fmt.Printf("%s: Ready=%v, issued by %s for %s\n", name, ready(name),
			sec.Annotations[certificate.AnnotationIssuerName], sec.Annotations[certificate.AnnotationAltNames])
	}
	// Output:
	// api: Ready=true, issued by internal for api.example
	// www: Ready=true, issued by public for www.example
}
