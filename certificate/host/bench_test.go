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

// unleased is a MemoryStore without its Leaser: a store the Reconciler
// leases nothing over.
type unleased struct{ s *host.MemoryStore }

func (u unleased) Certificates() host.Collection[*certificate.Certificate] {
	return u.s.Certificates()
}
func (u unleased) Secrets() host.Collection[*certificate.Secret] { return u.s.Secrets() }
func (u unleased) Requests() host.Collection[*certificate.CertificateRequest] {
	return u.s.Requests()
}
func (u unleased) Authoritative() bool { return true }

// BenchmarkRequestPassLease is one pass over a request in flight whose
// issuer has nothing new to say (the pass a replica makes at each poll
// of an order): over a MemoryStore, which is a Leaser, so the pass
// renews the request's lease, and over the same store without leases.
// The difference is what the lease costs a pass.
func BenchmarkRequestPassLease(b *testing.B) {
	for _, name := range []string{"leased", "unleased"} {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			clk := testingclock.NewFakeClock(t0)
			mem := host.NewMemoryStore(clk)
			var store host.Store = mem
			if name == "unleased" {
				store = unleased{mem}
			}
			iss := &scripted{answer: func(r *certificate.CertificateRequest, now time.Time) time.Time {
				certificate.SetPending(r, "ordering", t0)
				return now.Add(5 * time.Second)
			}}
			r, err := host.NewReconciler(host.Config{Store: store, Clock: clk, Identity: "replica-a",
				Issuers: map[certificate.IssuerRef]certificate.Issuer{{Name: "ca"}: iss}})
			require.NoError(b, err)
			_, err = mem.Requests().Create(ctx, &certificate.CertificateRequest{
				ObjectMeta: certificate.ObjectMeta{Namespace: "default", Name: "web-1"},
				Spec:       certificate.RequestSpec{IssuerRef: certificate.IssuerRef{Name: "ca"}, Request: []byte("csr")},
			})
			require.NoError(b, err)
			_, err = r.Request(ctx, "default", "web-1") // writes the Pending status once
			require.NoError(b, err)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				ev, err := r.Request(ctx, "default", "web-1")
				if err != nil || len(ev.Writes) > 0 || ev.Held != nil {
					b.Fatalf("the pass wrote %v, held %v: %v", ev.Writes, ev.Held, err)
				}
			}
		})
	}
}

// BenchmarkMemoryStoreLease is a renewal of a lease held, with 10,000
// other leases held.
func BenchmarkMemoryStoreLease(b *testing.B) {
	ctx := context.Background()
	s := host.NewMemoryStore(nil)
	for i := range 10000 {
		_, err := s.Lease(ctx, fmt.Sprint("key-", i), "replica-b", t0, t0.Add(time.Hour))
		require.NoError(b, err)
	}
	key := host.LeaseKey(host.KindRequest, "default", "web-1", "uid-1")
	b.ReportAllocs()
	for i := range b.N {
		now := t0.Add(time.Duration(i) * time.Millisecond)
		l, err := s.Lease(ctx, key, "replica-a", now, now.Add(2*time.Minute))
		if err != nil || l.Holder != "replica-a" {
			b.Fatal(l, err)
		}
	}
}
