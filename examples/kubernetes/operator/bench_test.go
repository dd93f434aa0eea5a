package operator_test

import (
	"context"
	"fmt"
	"maps"
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/certlife/certlife/certificate"

	"github.com/certlife/certlife/examples/kubernetes/operator"
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

// readyTimes starts following the Certificates of the test's namespace
// (followCertificates) and returns a function that waits, at most
// timeout, until n of them are Ready and returns when each was first
// seen so. Start it before creating the Certificates; it misses no
// change either way.
//
// With settled, a certificate counts once its issuance is wholly done (the
// next private key deleted and forgotten).
//
// It reads each change of a Certificate once, as the API server sends it,
// and never lists but to start and after a closed watch: the process's
// CPU time while it waits is the operator's, not the test's polling.
func readyTimes(b *testing.B, h *harness, op *running, n int, settled bool) (wait func(timeout time.Duration) map[string]time.Time) {
	b.Helper()
	var (
		mu    sync.Mutex
		ready = map[string]time.Time{}
		all   = make(chan struct{})
	)
	stop := h.followCertificates(0, func(c *cmapi.Certificate) {
		r := condition(c.Status.Conditions, certificate.ConditionReady)
		if r == nil || r.Status != cmmeta.ConditionTrue || settled && c.Status.NextPrivateKeySecretName != nil {
			return
		}
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		if _, seen := ready[c.Name]; seen {
			return
		}
		ready[c.Name] = now
		if len(ready) == n {
			close(all)
		}
	})
	return func(timeout time.Duration) map[string]time.Time {
		b.Helper()
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		select {
		case <-all:
		case <-timer.C:
		}
		stop()
		mu.Lock()
		defer mu.Unlock()
		if len(ready) < n {
			b.Fatalf("%d of %d certificates Ready after %v; those not Ready, by reason:\n%s", len(ready), n, timeout, notReadySummary(h, op))
		}
		out := maps.Clone(ready)
		ready = nil // not held while the caller measures the heap
		return out
	}
}

// notReadySummary groups the test namespace's Certificates that are not
// Ready by their Ready reason, with one message and the state of that
// certificate's requests, for a benchmark that timed out.
func notReadySummary(h *harness, op *running) string {
	var certs cmapi.CertificateList
	if err := k8s.List(context.Background(), &certs, client.InNamespace(h.ns)); err != nil {
		return err.Error()
	}
	var reqs cmapi.CertificateRequestList
	if err := k8s.List(context.Background(), &reqs, client.InNamespace(h.ns)); err != nil {
		return err.Error()
	}
	byCert := map[string][]string{}
	for _, r := range reqs.Items {
		st := "no Ready condition"
		for _, c := range r.Status.Conditions {
			if c.Type == cmapi.CertificateRequestConditionReady {
				st = fmt.Sprintf("%s/%s: %s", c.Status, c.Reason, c.Message)
			}
		}
		name := r.Annotations[cmapi.CertificateNameKey]
		byCert[name] = append(byCert[name], r.Name+" "+st)
	}
	count, example := map[string]int{}, map[string]string{}
	for _, c := range certs.Items {
		r := condition(c.Status.Conditions, certificate.ConditionReady)
		if r != nil && r.Status == cmmeta.ConditionTrue {
			continue
		}
		reason := "no Ready condition"
		if r != nil {
			reason = string(r.Status) + "/" + r.Reason
		}
		if count[reason]++; count[reason] == 1 {
			msg := ""
			if r != nil {
				msg = r.Message
			}
			example[reason] = fmt.Sprintf("%s (rv %s): %s; requests %v; its last passes:\n    %s", c.Name, c.ResourceVersion, msg, byCert[c.Name],
				strings.Join(op.passed.lastPasses(c.Name), "\n    "))
		}
	}
	var out strings.Builder
	for reason, k := range count {
		fmt.Fprintf(&out, "  %d %s, e.g. %s\n", k, reason, example[reason])
	}
	return out.String()
}

// followCertificates calls seen with every Certificate in the test's
// namespace as it is now, and then with each version the API server
// serves after, in order, until the stop function it returns is called
// (or the test ends). When the watch ends — the API server closes
// watches after a while (after watchTimeout when it is not zero), or
// sends an error — it lists again, calling seen with each Certificate as
// it is then, and watches again from the list's resource version, so no
// change is missed, though seen may see a version twice. seen is called
// from one goroutine at a time.
func (h *harness) followCertificates(watchTimeout time.Duration, seen func(*cmapi.Certificate)) (stop func()) {
	h.t.Helper()
	wc, err := client.NewWithWatch(restConfig, client.Options{Scheme: operator.Scheme()})
	require.NoError(h.t, err)
	ctx, cancel := context.WithCancel(h.ctx)
	list := func() (string, error) {
		var l cmapi.CertificateList
		if err := wc.List(ctx, &l, client.InNamespace(h.ns)); err != nil {
			return "", err
		}
		for i := range l.Items {
			seen(&l.Items[i])
		}
		return l.ResourceVersion, nil
	}
	rv, err := list()
	require.NoError(h.t, err)
	opts := metav1.ListOptions{AllowWatchBookmarks: true}
	if watchTimeout > 0 {
		opts.TimeoutSeconds = new(int64(watchTimeout.Seconds()))
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			opts.ResourceVersion = rv
			if w, err := wc.Watch(ctx, &cmapi.CertificateList{}, &client.ListOptions{Namespace: h.ns, Raw: &opts}); err == nil {
				for ev := range w.ResultChan() {
					if ev.Type == watch.Error {
						break
					}
					if c, ok := ev.Object.(*cmapi.Certificate); ok && ev.Type != watch.Bookmark && ev.Type != watch.Deleted {
						seen(c)
					}
				}
				w.Stop()
			}
			// The watch ended (or could not start): list again and watch
			// from there.
			for ctx.Err() == nil {
				if rv, err = list(); err == nil {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	h.t.Cleanup(stop)
	return stop
}

// followCertificates misses no change when the API server closes its
// watch: with every watch closed after a second and no operator running,
// a Certificate made before it starts, one made while it follows, one
// made after a watch was closed and a change to the second are all seen,
// and each closed watch is followed by a new list (the first Certificate,
// which never changes, is seen again).
func TestFollowCertificatesAcrossClosedWatches(t *testing.T) {
	h := newHarness(t)
	h.create(h.certificate("first", "ca"))
	var (
		mu       sync.Mutex
		versions = map[string][]string{} // name → the resource versions seen, in order
	)
	stop := h.followCertificates(time.Second, func(c *cmapi.Certificate) {
		mu.Lock()
		defer mu.Unlock()
		versions[c.Name] = append(versions[c.Name], c.ResourceVersion)
	})
	defer stop()
	seen := func(name string) []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(versions[name])
	}
	require.Len(t, seen("first"), 1, "the first list")

	h.create(h.certificate("second", "ca"))
	h.eventually("the second seen", func() bool { return len(seen("second")) > 0 })
	h.eventually("a closed watch followed by a list", func() bool { return len(seen("first")) >= 2 })
	h.create(h.certificate("third", "ca"))
	h.eventually("the third seen", func() bool { return len(seen("third")) > 0 })
	changed := h.edit("second", func(c *cmapi.Certificate) { c.Spec.DNSNames = append(c.Spec.DNSNames, "www.second.example") })
	h.eventually("the change to the second seen", func() bool { return slices.Contains(seen("second"), changed.ResourceVersion) })
	h.eventually("another closed watch followed by a list", func() bool { return len(seen("first")) >= 3 })

	t.Logf("the first seen %d times", len(seen("first")))
}

// Time from a Certificate's creation to Ready with the CA issuer, over 100
// Certificates created at once (ECDSA P-256 keys), in envtest: the median
// and the slowest, in milliseconds.
func BenchmarkCreateToReady100(b *testing.B) {
	for range b.N {
		h := newHarness(b)
		h.caIssuer("ca")
		op := h.start()
		h.eventually("the issuer", func() bool { return issuerReady(h, "ca") })
		wait := readyTimes(b, h, op, 100, false)
		created := createAll(b, h, 100, "ECDSA")
		ready := wait(5 * time.Minute)
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
// (s-all-ready), the live heap per certificate after GC (B/certificate;
// with OPERATOR_HEAP_WAIT=13m also B/certificate-idle, once client-go's
// event recorder has let the issuance's Events go),
// API writes per issuance in all (writes/certificate) and by verb and
// resource (<verb>-<resource>/issuance), refused updates (conflicts per
// certificate), the passes over Certificates and CertificateRequests per
// issuance (certificate-passes/issuance, request-passes/issuance, until
// all are Ready and the operator has settled) and the process's CPU-seconds from the first create until
// all were Ready (cpu-s-to-ready). That CPU time is the operator's: the
// API server is another process, and the test follows one watch on the
// Certificates rather than polling them — its share is creating the
// Certificates and decoding each change once. Run it on a quiet machine:
//
//	go test -run '^$' -bench BenchmarkFleet -benchtime 1x ./operator
func BenchmarkFleet(b *testing.B) {
	benchmarkHeap(b, benchCertificates(), "ECDSA")
}

// benchCertificates is how many Certificates the fleet benchmarks make:
// OPERATOR_BENCH_CERTS, or 1,000.
func benchCertificates() int {
	if v, err := strconv.Atoi(os.Getenv("OPERATOR_BENCH_CERTS")); err == nil && v > 0 {
		return v
	}
	return 1000
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
		op.reads.take()
		before := liveHeap()
		writeHeapProfile(b, ".before")
		wait := readyTimes(b, h, op, n, true)
		certPasses, reqPasses := op.passed.counts()
		start, cpuStart := time.Now(), cpuSeconds()
		created := createAll(b, h, n, algorithm)
		createdAll := time.Since(start)
		timeout := max(20*time.Minute, time.Duration(n)*200*time.Millisecond)
		if d, err := time.ParseDuration(os.Getenv("OPERATOR_BENCH_WAIT")); err == nil && d > 0 {
			timeout = d
		}
		readyAt := wait(timeout)
		allReady, cpu := time.Since(start), cpuSeconds()-cpuStart
		h.settle(op)
		// Passes to issue them all and settle: a count, unlike CPU
		// seconds, that a noisy machine does not move.
		certAfter, reqAfter := op.passed.counts()
		b.ReportMetric(float64(certAfter-certPasses)/float64(n), "certificate-passes/issuance")
		b.ReportMetric(float64(reqAfter-reqPasses)/float64(n), "request-passes/issuance")
		// The harness's own record of each Certificate's last passes (for
		// a run that times out) is not the operator's heap.
		op.passed.forgetLast()
		after := liveHeap()
		writeHeapProfile(b, "")
		b.ReportMetric(float64(after-before)/float64(n), "B/certificate")
		// Events stay in client-go's event series cache for 6 to 12
		// minutes after they are sent (it drops those older than 6
		// minutes every 6 minutes); OPERATOR_HEAP_WAIT=13m measures
		// again once they have gone: the heap of an idle operator.
		if wait, err := time.ParseDuration(os.Getenv("OPERATOR_HEAP_WAIT")); err == nil && wait > 0 {
			time.Sleep(wait)
			b.ReportMetric(float64(liveHeap()-before)/float64(n), "B/certificate-idle")
		}
		b.ReportMetric(allReady.Seconds(), "s-all-ready")
		// Each Certificate's time from its creation to Ready (its
		// median, and the 90th percentile), how long creating them
		// took, and when the first hundred were Ready: with work begun
		// going first, those created first are Ready first.
		d := make([]time.Duration, 0, len(readyAt))
		ready := make([]time.Duration, 0, len(readyAt))
		for name, at := range readyAt {
			d = append(d, at.Sub(created[name]))
			ready = append(ready, at.Sub(start))
		}
		slices.Sort(d)
		slices.Sort(ready)
		b.ReportMetric(d[len(d)/2].Seconds(), "s-median-create-to-ready")
		b.ReportMetric(d[len(d)*9/10].Seconds(), "s-p90-create-to-ready")
		b.ReportMetric(ready[min(100, len(ready))-1].Seconds(), "s-first-100-ready")
		b.ReportMetric(createdAll.Seconds(), "s-all-created")
		b.ReportMetric(cpu, "cpu-s-to-ready")
		reportStalls(b, h.ns, start, readyAt)
		ok, failed := op.writes.take()
		b.ReportMetric(float64(sum(ok))/float64(n), "writes/certificate")
		for k, v := range ok {
			b.ReportMetric(float64(v)/float64(n), strings.NewReplacer(" ", "-", "/", "-").Replace(k)+"/issuance")
		}
		// The operator's writes are at the version read: a refused one is
		// a conflict.
		b.ReportMetric(float64(sum(failed))/float64(n), "conflicts/certificate")
		b.Logf("writes %v, failed %v", ok, failed)
		// Reads, from the informer cache and from the API server: counts
		// too, and what a pass costs besides its writes.
		var cached, api int
		for k, v := range op.reads.take() {
			if strings.HasPrefix(k, "cache ") {
				cached += v
			} else {
				api += v
			}
			b.ReportMetric(float64(v)/float64(n), strings.NewReplacer(" ", "-", "/", "-").Replace(k)+"/issuance")
		}
		b.ReportMetric(float64(cached)/float64(n), "cache-reads/issuance")
		b.ReportMetric(float64(api)/float64(n), "api-reads/issuance")
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
