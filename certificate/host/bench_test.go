package host_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/host/hosttest"
)

// notAuthoritative is a MemoryStore that does not claim its reads show
// every write, so that the Reconciler reads it through ReadYourWrites.
type notAuthoritative struct{ *host.MemoryStore }

func (notAuthoritative) Authoritative() bool { return false }

// BenchmarkReconcilerReady is one pass over a Ready certificate that has
// nothing to do — the pass a host makes most often (every resync, every
// watch event that changes nothing) — over a MemoryStore, and over the
// same store read through ReadYourWrites.
func BenchmarkReconcilerReady(b *testing.B) {
	for _, name := range []string{"MemoryStore", "ReadYourWrites"} {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			clk := testingclock.NewFakeClock(t0)
			mem := host.NewMemoryStore(clk)
			var store host.Store = mem
			if name == "ReadYourWrites" {
				store = notAuthoritative{mem}
			}
			loop, err := host.New(host.Config{Store: store, Clock: clk,
				Issuers: map[certificate.IssuerRef]certificate.Issuer{{Name: "ca"}: newCA(b, t0).Issuer(nil)}})
			require.NoError(b, err)
			_, err = store.Certificates().Create(ctx, newCert("default", "web", "web-tls"))
			require.NoError(b, err)
			_, err = hosttest.Settle(ctx, loop, 50)
			require.NoError(b, err)
			c, err := mem.Certificates().Get(ctx, "default", "web")
			require.NoError(b, err)
			require.True(b, ready(c))
			r := loop.Reconciler()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				ev, err := r.Certificate(ctx, "default", "web")
				if err != nil || len(ev.Done) > 0 {
					b.Fatalf("a Ready certificate's pass did %v, %v", ev.Done, err)
				}
			}
		})
	}
}

// BenchmarkReadYourWritesGet is a read through ReadYourWrites of an
// object it keeps a write of (the store behind lags), and of one it keeps
// nothing of.
func BenchmarkReadYourWritesGet(b *testing.B) {
	ctx := context.Background()
	s := newLagStore(testingclock.NewFakeClock(t0), func() lag { return lagNever })
	ryw := host.NewReadYourWrites(s)
	for i := range 100 {
		_, err := ryw.Secrets().Create(ctx, &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("s", i)},
			Data: map[string][]byte{"tls.crt": make([]byte, 2048)}})
		require.NoError(b, err)
	}
	b.Run("kept", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := ryw.Secrets().Get(ctx, "ns", "s1"); err != nil {
				b.Fatal(err)
			}
		}
	})
	s.relist()
	b.Run("caught up", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := ryw.Secrets().Get(ctx, "ns", "s1"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkLogEvent is the cost of Config.Logger on every pass: a
// decision at Debug with a logger that shows Info and above (the
// default: nothing is written), and a failure that is written (to a
// handler that discards).
func BenchmarkLogEvent(b *testing.B) {
	res := &certificate.Result{Reason: certificate.ReasonUpToDate, Message: "renewal at 2027-01-01T00:00:00Z",
		Steps: []certificate.Step{{Reason: certificate.ReasonUpToDate}, {Reason: certificate.ReasonReady}}}
	decision := host.Event{Time: t0, Kind: host.KindCertificate, Namespace: "default", Name: "web", Result: res, Next: t0.Add(time.Hour)}
	failure := host.Event{Time: t0, Kind: host.KindCertificate, Namespace: "default", Name: "web", Err: errors.New("the disk is full"), Next: t0.Add(time.Second)}
	for name, tc := range map[string]struct {
		ev     host.Event
		logger *slog.Logger
	}{
		"a decision, not shown": {decision, slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))},
		"a failure, written":    {failure, slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))},
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			ctx := context.Background()
			for b.Loop() {
				host.LogEvent(ctx, tc.logger, tc.ev)
			}
		})
	}
}
