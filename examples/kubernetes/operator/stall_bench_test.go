package operator_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/certlife/certlife/examples/kubernetes/operator"
)

// reportStalls reports, from the API server's objects once all are Ready,
// how many certificates became Ready more than 5 s after their request
// was answered (stalls), the longest such gap, and the seconds from start
// to 90 % and to all Ready (from the ready times the benchmark saw). Both
// times it compares are the Ready conditions' lastTransitionTime, on the
// operator's clock.
func reportStalls(b *testing.B, ns string, start time.Time, ready map[string]time.Time) {
	b.Helper()
	cl, err := client.New(restConfig, client.Options{Scheme: operator.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var certs cmapi.CertificateList
	if err := cl.List(ctx, &certs, client.InNamespace(ns)); err != nil {
		b.Fatal(err)
	}
	var reqs cmapi.CertificateRequestList
	if err := cl.List(ctx, &reqs, client.InNamespace(ns)); err != nil {
		b.Fatal(err)
	}
	answered := map[string]time.Time{}
	for _, r := range reqs.Items {
		for _, c := range r.Status.Conditions {
			if c.Type == cmapi.CertificateRequestConditionReady && c.Status == cmmeta.ConditionTrue && c.LastTransitionTime != nil {
				name := r.Annotations[cmapi.CertificateNameKey]
				if t := c.LastTransitionTime.Time; t.After(answered[name]) {
					answered[name] = t
				}
			}
		}
	}
	stalls, worst, compared := 0, time.Duration(0), 0
	for _, c := range certs.Items {
		for _, cond := range c.Status.Conditions {
			if cond.Type != cmapi.CertificateConditionReady || cond.Status != cmmeta.ConditionTrue || cond.LastTransitionTime == nil {
				continue
			}
			a, ok := answered[c.Name]
			if !ok {
				continue
			}
			compared++
			gap := cond.LastTransitionTime.Time.Sub(a)
			worst = max(worst, gap)
			if gap > 5*time.Second {
				stalls++
			}
		}
	}
	var d []time.Duration
	for _, t := range ready {
		d = append(d, t.Sub(start))
	}
	slices.Sort(d)
	if len(d) > 0 {
		b.ReportMetric(d[len(d)*9/10].Seconds(), "s-90%-ready")
	}
	b.ReportMetric(float64(compared), "issuances-compared")
	b.ReportMetric(float64(stalls), "stalls>5s")
	b.ReportMetric(worst.Seconds(), "s-longest-answer-to-ready")
}

// BenchmarkPacedIssuance: OPERATOR_BENCH_CERTS (1,000 unless set)
// certificates through a CA issuer, created at 20 a second — a pace the
// operator keeps up with, so that the time from a request's answer to its
// certificate's Ready is the host's own, not a queue's. It reports how
// many took more than 5 s (stalls>5s; goal 0) and the longest.
func BenchmarkPacedIssuance(b *testing.B) {
	n := benchCertificates()
	for range b.N {
		h := newHarness(b)
		h.caIssuer("ca")
		op := h.start()
		h.eventually("the issuer", func() bool { return issuerReady(h, "ca") })
		h.settle(op)
		wait := readyTimes(b, h, op, n, true)
		start := time.Now()
		tick := time.NewTicker(50 * time.Millisecond)
		for i := range n {
			<-tick.C
			c := h.certificate(fmt.Sprintf("p%04d", i), "ca", func(s *cmapi.CertificateSpec) {
				s.PrivateKey = &cmapi.CertificatePrivateKey{Algorithm: cmapi.ECDSAKeyAlgorithm}
			})
			require.NoError(b, k8s.Create(h.ctx, c))
		}
		tick.Stop()
		readyAt := wait(20 * time.Minute)
		reportStalls(b, h.ns, start, readyAt)
		op.stop()
	}
}
