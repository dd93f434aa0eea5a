package sqlstore_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/host/sqlstore"
	"github.com/certlife/certlife/certificate/localca"
	"github.com/certlife/certlife/keys"
)

// benchCertificates is how many certificates the benchmarks' store holds,
// each with a request it owns.
const benchCertificates = 10000

// BenchmarkStore reads and writes a store of 10,000 certificates and
// their 10,000 requests: Get of a certificate, Update of its status, and
// List of the requests one certificate owns (through the owner index).
func BenchmarkStore(b *testing.B) {
	for _, d := range dialects {
		b.Run(d.String(), func(b *testing.B) {
			ctx := b.Context()
			s := newDB(b, d).open(b, nil)
			uids := make([]string, benchCertificates)
			start := time.Now()
			for i := range benchCertificates {
				c, err := s.Certificates().Create(ctx, newCert("default", fmt.Sprintf("c%05d", i), fmt.Sprintf("c%05d-tls", i)))
				if err != nil {
					b.Fatal(err)
				}
				uids[i] = c.UID
				_, err = s.Requests().Create(ctx, &certificate.CertificateRequest{
					ObjectMeta: certificate.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("c%05d-1", i), OwnerUID: c.UID},
					Spec:       certificate.RequestSpec{Request: make([]byte, 400), IssuerRef: c.Spec.IssuerRef},
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.Logf("%v: %d writes in %v", d, 2*benchCertificates, time.Since(start).Round(time.Millisecond))

			b.Run("Get", func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if _, err := s.Certificates().Get(ctx, "default", fmt.Sprintf("c%05d", i%benchCertificates)); err != nil {
						b.Fatal(err)
					}
					i += 7919
				}
			})
			b.Run("Update", func(b *testing.B) {
				b.ReportAllocs()
				c, err := s.Certificates().Get(ctx, "default", "c00042")
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for b.Loop() {
					n++
					c.Status.FailedIssuanceAttempts = &n
					if c, err = s.Certificates().Update(ctx, c); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("Pass", func(b *testing.B) {
				// A certificate pass over a Ready certificate, as a
				// host makes at each resync, with 10,000 others in
				// the store: its reads through the indexes, no write.
				clk := testingclock.NewFakeClock(t0)
				r := newReconciler(b, s, clk)
				issueByPasses(b, ctx, s, r, "web")
				b.ReportAllocs()
				for b.Loop() {
					ev, err := r.Certificate(ctx, "default", "web")
					if err != nil || len(ev.Writes) > 0 {
						b.Fatal(ev.Writes, err)
					}
				}
			})
			b.Run("ListByOwner", func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					rs, err := s.Requests().List(ctx, host.ListOptions{Namespace: "default", OwnerUID: uids[i%benchCertificates]})
					if err != nil || len(rs) != 1 {
						b.Fatal(len(rs), err)
					}
					i += 7919
				}
			})
		})
	}
}

// BenchmarkIssuance issues one certificate per iteration through the
// host loop with a local CA, on a fake clock, and reports the store's
// writes per issuance (the certificate's creation included).
func BenchmarkIssuance(b *testing.B) {
	for _, d := range dialects {
		b.Run(d.String(), func(b *testing.B) {
			ctx := b.Context()
			clk := testingclock.NewFakeClock(t0)
			s := newDB(b, d).open(b, clk)
			loop := newLoop(b, s, clk)
			b.ReportAllocs()
			writes, i := 0, 0
			for b.Loop() {
				writes += issue(b, ctx, s, loop, clk, fmt.Sprintf("web%d", i))
				i++
			}
			b.ReportMetric(float64(writes)/float64(i), "writes/issuance")
		})
	}
}

// newReconciler is a Reconciler over s with a local CA as issuer "ca".
func newReconciler(t testing.TB, s *sqlstore.Store, clk *testingclock.FakeClock) *host.Reconciler {
	t.Helper()
	ca, err := localca.NewRoot(rand.Reader, "sqlstore bench CA", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, clk.Now().Add(-time.Hour), 10*365*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	r, err := host.NewReconciler(host.Config{Store: s, Clock: clk, Logger: slog.New(slog.DiscardHandler),
		Issuers: map[certificate.IssuerRef]certificate.Issuer{{Name: "ca"}: ca.Issuer(nil)}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// issueByPasses creates certificate name and makes passes over it and
// its requests, as a host's queue would for that key alone, until it is
// Ready and a pass over it writes nothing.
func issueByPasses(t testing.TB, ctx context.Context, s *sqlstore.Store, r *host.Reconciler, name string) {
	t.Helper()
	c, err := s.Certificates().Create(ctx, newCert("default", name, name+"-tls"))
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		ev, err := r.Certificate(ctx, "default", name)
		if err != nil {
			t.Fatal(err)
		}
		reqs, err := s.Requests().List(ctx, host.ListOptions{Namespace: "default", OwnerUID: c.UID})
		if err != nil {
			t.Fatal(err)
		}
		for _, req := range reqs {
			if _, err := r.Request(ctx, "default", req.Name); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.Certificates().Get(ctx, "default", name)
		if err != nil {
			t.Fatal(err)
		}
		ready, issuing := got.Status.Condition(certificate.ConditionReady), got.Status.Condition(certificate.ConditionIssuing)
		if len(ev.Writes) == 0 && ready != nil && ready.Status == certificate.StatusTrue && (issuing == nil || issuing.Status != certificate.StatusTrue) {
			return
		}
	}
	t.Fatalf("%s: not Ready after 50 rounds of passes", name)
}
