package managed_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/host/hosttest"
	"github.com/certlife/certlife/managed"
)

// A Manager with a local CA only, on a fake clock: the CA is made and
// signs on the first pass, and the certificate is served by name. A real
// service gives a database (Config.DB) and an ACME CA, calls Run instead
// of driving the loop, and ListenAndServe.
func ExampleNew() {
	ctx := context.Background()
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	m, err := managed.New(ctx, managed.Config{
		Store: host.NewMemoryStore(clk), Clock: clk, Logger: slog.New(slog.DiscardHandler),
		Certificates: []managed.Certificate{{Name: "api", DNSNames: []string{"api.internal"}, Issuer: managed.IssuerLocalCA}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	if _, err := hosttest.Settle(ctx, m.Loop(), 100); err != nil {
		fmt.Println(err)
		return
	}
	cert, err := m.GetCertificate(&tls.ClientHelloInfo{ServerName: "api.internal"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cert.Leaf.DNSNames, "from", cert.Leaf.Issuer.CommonName, "until", cert.Leaf.NotAfter.Format(time.DateOnly))
	// Output: [api.internal] from certlife local CA until 2027-02-26
}
