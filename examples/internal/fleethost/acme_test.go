package fleethost

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/acmeclient/acmetest"
	"github.com/certlife/certlife/backoff/retry"
	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/challenge"
	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/order"
	"github.com/stretchr/testify/require"
)

// runACME works the queue on a fake clock while Pebble validates and
// issues in real time: a step with nothing to do waits a few real
// milliseconds before the fake clock jumps to the next due time.
func runACME(t testing.TB, h *Host, clk *testingclock.FakePassiveClock, end time.Time) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		next, ok := h.Next()
		if !ok || next.After(end) {
			clk.SetTime(end)
			h.Step(ctx)
			return
		}
		if next.After(clk.Now()) {
			if next.Sub(clk.Now()) < time.Minute {
				time.Sleep(2 * time.Millisecond) // let Pebble's validation run
			}
			clk.SetTime(next)
		}
		h.Step(ctx)
	}
	t.Fatal("the ACME issuance did not finish in 30 s of real time")
}

// The reference host issues and renews through ACME against Pebble: the
// order and challenge machines, HTTP-01 on loopback.
func TestACMEIssuerThroughTheReferenceHost(t *testing.T) {
	srv, err := acmetest.Start(acmetest.Options{})
	require.NoError(t, err)
	defer srv.Close()
	start := time.Now().Truncate(time.Second)
	clk := testingclock.NewFakePassiveClock(start)
	accountKey, _ := keys.Generate(rand.Reader, keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
	cfg := srv.ClientConfig(accountKey)
	cfg.Clock = clk
	client, err := acmeclient.New(cfg)
	require.NoError(t, err)
	issuer, err := acmeclient.NewIssuer(acmeclient.IssuerConfig{Client: client, Account: acmeclient.AccountOptions{AgreeToTerms: true},
		Store: acmeclient.NewMemoryStore(), Solvers: srv.Solvers(), RequestValidity: true,
		Order: order.Config{Schedule: retry.Schedule{PollInterval: time.Second}}, Challenge: challenge.Config{Schedule: retry.Schedule{PollInterval: time.Second}}})
	require.NoError(t, err)

	h, err := New(Options{Clock: clk, Rand: rand.Reader})
	require.NoError(t, err)
	h.SetIssuer("pebble", &ACME{Issuer: issuer})
	c := &certificate.Certificate{ObjectMeta: certificate.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: certificate.Spec{SecretName: "web-tls", DNSNames: []string{"web.example"}, IssuerRef: certificate.IssuerRef{Name: "pebble"},
			PrivateKey: &keys.KeySpec{Algorithm: keys.AlgorithmECDSA}}}
	require.NoError(t, h.Apply(c))
	check := func(revision int) *x509.Certificate {
		t.Helper()
		got, _, _ := h.Certificates.Get("web")
		require.NotNil(t, got.Status.Revision, "no revision, want %d (%+v)", revision, got.Status.Conditions)
		require.Equal(t, revision, *got.Status.Revision, "revision (%+v)", got.Status.Conditions)
		sec, _, _ := h.Secrets.Get("web-tls")
		p, err := keys.ParseSecretData(sec.Data)
		require.NoError(t, err, "secret")
		require.True(t, p.KeyMatches, "secret: the key does not match the certificate")
		inter := x509.NewCertPool()
		rest := sec.Data[keys.SecretCertificate]
		for {
			var b *pem.Block
			if b, rest = pem.Decode(rest); b == nil {
				break
			}
			ic, _ := x509.ParseCertificate(b.Bytes)
			inter.AddCert(ic)
		}
		_, err = p.Leaf.Verify(x509.VerifyOptions{DNSName: "web.example", Roots: srv.RootPool(), Intermediates: inter, CurrentTime: clk.Now()})
		require.NoError(t, err, "the secret's certificate does not chain to Pebble's root")
		return p.Leaf
	}
	runACME(t, h, clk, start.Add(time.Hour))
	first := check(1)
	runACME(t, h, clk, start.Add(61*24*time.Hour))
	second := check(2)
	require.True(t, second.NotBefore.After(first.NotBefore.Add(59*24*time.Hour)), "renewed certificate valid from %v; the first from %v", second.NotBefore, first.NotBefore)
	// The renewal named the certificate it replaces (RFC 9773 §5).
	require.Eventually(t, func() bool {
		replaced, _ := srv.Replaced(first)
		return replaced
	}, 5*time.Second, 5*time.Millisecond, "the server did not record the renewal as replacing the first certificate")
}
