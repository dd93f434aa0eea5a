package host_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/host/hosttest"
	"github.com/certlife/certlife/certificate/localca"
	"github.com/certlife/certlife/keys"
)

// A host with a local CA, kept in memory, on a fake clock: the
// certificate is issued, and renewed when a third of its lifetime
// remains. A real host uses host.OpenFileStore (or its own Store), the
// real clock, and loop.Run.
func Example() {
	ctx := context.Background()
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := testingclock.NewFakeClock(start)
	store := host.NewMemoryStore(clk)
	ca, err := localca.NewRoot(rand.Reader, "Example CA", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, start, 10*365*24*time.Hour)
	if err != nil {
		panic(err)
	}
	loop, err := host.New(host.Config{
		Store:   store,
		Clock:   clk,
		Issuers: map[certificate.IssuerRef]certificate.Issuer{{Name: "internal-ca"}: ca.Issuer(nil)},
		Observe: func(e host.Event) {
			if e.Result != nil && len(e.Result.Actions) > 0 {
				line := fmt.Sprintf("day %2.0f  %-14s %-16s %s", e.Time.Sub(start).Hours()/24, e.Result.Stage, e.Result.Reason, e.Result.IssuanceReason)
				fmt.Println(strings.TrimSpace(line))
			}
		},
	})
	if err != nil {
		panic(err)
	}
	_, err = store.Certificates().Create(ctx, &certificate.Certificate{
		ObjectMeta: certificate.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: certificate.Spec{
			SecretName: "web-tls",
			DNSNames:   []string{"web.example"},
			Duration:   &certificate.Duration{Duration: 30 * 24 * time.Hour},
			IssuerRef:  certificate.IssuerRef{Name: "internal-ca"},
		},
	})
	if err != nil {
		panic(err)
	}
	if err := hosttest.Advance(ctx, loop, clk, start.Add(25*24*time.Hour), hosttest.AdvanceOptions{}); err != nil {
		panic(err)
	}
	c, _ := store.Certificates().Get(ctx, "default", "web")
	fmt.Println("revision", *c.Status.Revision, "ready until", c.Status.NotAfter.Format(time.DateOnly))
	// Output:
	// day  0  keymanager     WaitingForKey    DoesNotExist
	// day  0  requestmanager RequestCreated   DoesNotExist
	// day  0  issuing        Issued
	// day  0  keymanager     NotIssuing
	// day 20  keymanager     WaitingForKey    Renewing
	// day 20  requestmanager RequestCreated   Renewing
	// day 20  issuing        Issued
	// day 20  requestmanager RevisionHistory
	// revision 2 ready until 2026-04-20
}
