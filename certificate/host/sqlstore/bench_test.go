package sqlstore_test

import (
	"fmt"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
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
