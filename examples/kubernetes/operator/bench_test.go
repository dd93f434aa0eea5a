package operator_test

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/certlife/certlife/certificate"
)

// createAll creates n certificates from the CA issuer at once (from a few
// goroutines) and returns when each was created.
func createAll(b *testing.B, h *harness, n int, algorithm string) map[string]time.Time {
	b.Helper()
	created := map[string]time.Time{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	names := make(chan string)
	for range 8 {
		wg.Go(func() {
			for name := range names {
				c := h.certificate(name, "ca", func(s *cmapi.CertificateSpec) {
					s.PrivateKey = &cmapi.CertificatePrivateKey{Algorithm: cmapi.PrivateKeyAlgorithm(algorithm)}
				})
				require.NoError(b, k8s.Create(h.ctx, c))
				mu.Lock()
				created[name] = time.Now()
				mu.Unlock()
			}
		})
	}
	for i := range n {
		names <- fmt.Sprintf("c%04d", i)
	}
	close(names)
	wg.Wait()
	return created
}

// readyTimes polls until all n certificates are Ready and returns when
// each was first seen so.
//
// With settled, a certificate counts once its issuance is wholly done (the
// next private key deleted and forgotten).
func readyTimes(b *testing.B, h *harness, n int, timeout time.Duration, settled bool) map[string]time.Time {
	b.Helper()
	ready := map[string]time.Time{}
	deadline := time.Now().Add(timeout)
	for len(ready) < n {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d certificates Ready after %v", len(ready), n, timeout)
		}
		var list cmapi.CertificateList
		require.NoError(b, k8s.List(h.ctx, &list, client.InNamespace(h.ns)))
		now := time.Now()
		for _, c := range list.Items {
			if _, seen := ready[c.Name]; seen {
				continue
			}
			if r := condition(c.Status.Conditions, certificate.ConditionReady); r != nil && r.Status == cmmeta.ConditionTrue &&
				(!settled || c.Status.NextPrivateKeySecretName == nil) {
				ready[c.Name] = now
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return ready
}

// Time from a Certificate's creation to Ready with the CA issuer, over 100
// Certificates created at once (ECDSA P-256 keys), in envtest: the median
// and the slowest, in milliseconds.
func BenchmarkCreateToReady100(b *testing.B) {
	for range b.N {
		h := newHarness(b)
		h.caIssuer("ca")
		h.start()
		h.eventually("the issuer", func() bool { return issuerReady(h, "ca") })
		created := createAll(b, h, 100, "ECDSA")
		ready := readyTimes(b, h, 100, 5*time.Minute, false)
		var d []time.Duration
		for name, t := range created {
			d = append(d, ready[name].Sub(t))
		}
		slices.Sort(d)
		b.ReportMetric(float64(d[len(d)/2].Milliseconds()), "ms-median-to-ready")
		b.ReportMetric(float64(d[len(d)-1].Milliseconds()), "ms-slowest-to-ready")
	}
}

// Live heap of the operator per Ready Certificate: the heap after GC with
// 1,000 Certificates Ready, less the heap before any, over 1,000.
func BenchmarkHeapPerCertificate1000(b *testing.B) {
	benchmarkHeap(b, 1000, "ECDSA")
}

// The fleet: OPERATOR_BENCH_CERTS (1,000 unless set) cert-manager.io/v1
// Certificates created at once through a CA Issuer (ECDSA P-256 keys).
// It reports the seconds until all are Ready and settled
// (s-all-ready), the live heap per certificate after GC (B/certificate),
// API writes per issuance in all (writes/certificate) and by verb and
// resource (<verb>-<resource>/issuance), refused updates (conflicts per
// certificate) and the process's CPU-seconds until all were Ready
// (cpu-s-to-ready: the operator, and the test's own polling, which is
// small; the API server is another process). Run it on a quiet machine:
//
//	go test -run '^$' -bench BenchmarkFleet -benchtime 1x ./operator
func BenchmarkFleet(b *testing.B) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("OPERATOR_BENCH_CERTS")); err == nil && v > 0 {
		n = v
	}
	benchmarkHeap(b, n, "ECDSA")
}

// The same with RSA 2048 keys (certlife's default): bigger keys and CSRs.
func BenchmarkHeapPerCertificate1000RSA(b *testing.B) {
	benchmarkHeap(b, 1000, "RSA")
}

func benchmarkHeap(b *testing.B, n int, algorithm string) {
	for range b.N {
		h := newHarness(b)
		h.caIssuer("ca")
		op := h.start()
		h.eventually("the issuer", func() bool { return issuerReady(h, "ca") })
		h.settle(op)
		op.writes.take()
		before := liveHeap()
		writeHeapProfile(b, ".before")
		start, cpuStart := time.Now(), cpuSeconds()
		createAll(b, h, n, algorithm)
		readyTimes(b, h, n, 20*time.Minute, true)
		allReady, cpu := time.Since(start), cpuSeconds()-cpuStart
		h.settle(op)
		after := liveHeap()
		writeHeapProfile(b, "")
		b.ReportMetric(float64(after-before)/float64(n), "B/certificate")
		// Events stay in client-go's event series cache for 6 minutes
		// after they are sent; OPERATOR_HEAP_WAIT=7m measures again
		// once they have gone.
		if wait, err := time.ParseDuration(os.Getenv("OPERATOR_HEAP_WAIT")); err == nil && wait > 0 {
			time.Sleep(wait)
			b.ReportMetric(float64(liveHeap()-before)/float64(n), "B/certificate-later")
		}
		b.ReportMetric(allReady.Seconds(), "s-all-ready")
		b.ReportMetric(cpu, "cpu-s-to-ready")
		ok, failed := op.writes.take()
		b.ReportMetric(float64(sum(ok))/float64(n), "writes/certificate")
		for k, v := range ok {
			b.ReportMetric(float64(v)/float64(n), strings.NewReplacer(" ", "-", "/", "-").Replace(k)+"/issuance")
		}
		// The operator's writes are at the version read: a refused one is
		// a conflict.
		b.ReportMetric(float64(sum(failed))/float64(n), "conflicts/certificate")
		b.Logf("writes %v, failed %v", ok, failed)
		op.stop()
	}
}

// writeHeapProfile writes a heap profile to OPERATOR_HEAP_PROFILE with
// suffix, when it is set: the benchmarks write one before the
// certificates (suffix .before) and one after, for pprof -diff_base. Set
// runtime.MemProfileRate low (GODEBUG=memprofilerate=512) for a finer
// profile.
func writeHeapProfile(b *testing.B, suffix string) {
	path := os.Getenv("OPERATOR_HEAP_PROFILE")
	if path == "" {
		return
	}
	f, err := os.Create(path + suffix)
	require.NoError(b, err)
	require.NoError(b, pprof.WriteHeapProfile(f))
	require.NoError(b, f.Close())
}

// cpuSeconds is the CPU time (user and system) this process has used.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func liveHeap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func issuerReady(h *harness, name string) bool {
	var iss cmapi.Issuer
	if err := k8s.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: name}, &iss); err != nil {
		return false
	}
	c := condition(iss.Status.Conditions, "Ready")
	return c != nil && c.Status == cmmeta.ConditionTrue
}
