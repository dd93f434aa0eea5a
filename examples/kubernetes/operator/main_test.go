package operator_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/localca"
	"github.com/certlife/certlife/keys"

	"github.com/certlife/certlife/examples/kubernetes/operator"
)

// The tests run against a real kube-apiserver and etcd (envtest), built
// from the Go module proxy by .ci/k8s-assets:
//
//	export KUBEBUILDER_ASSETS="$(../../.ci/k8s-assets)"
var (
	restConfig *rest.Config
	// k8s is the tests' own client: uncached, not counted.
	k8s client.Client
)

var (
	envOnce  sync.Once
	env      *envtest.Environment
	envError error
)

// apiServer starts the API server the first time a test needs it.
func apiServer(t testing.TB) {
	t.Helper()
	envOnce.Do(func() {
		if os.Getenv("KUBEBUILDER_ASSETS") == "" {
			envError = fmt.Errorf("KUBEBUILDER_ASSETS is not set: this test runs against a real API server. From the repository root run\n\texport KUBEBUILDER_ASSETS=\"$(.ci/k8s-assets)\"\n(it builds kube-apiserver and etcd once), or run .ci/test")
			return
		}
		// cert-manager's CRDs, and the Gateway API's (the shims' Gateways).
		e := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "config", "crd"), filepath.Join("..", "config", "crd", "gateway-api")}, ErrorIfCRDPathMissing: true}
		// The aggregation layer, for the webhook solver's tests.
		if err := enableAggregation(e); err != nil {
			envError = fmt.Errorf("envtest's aggregation layer: %w", err)
			return
		}
		cfg, err := e.Start()
		if err != nil {
			envError = fmt.Errorf("starting envtest: %w", err)
			return
		}
		env, restConfig = e, cfg
		k8s, envError = client.New(cfg, client.Options{Scheme: operator.Scheme()})
	})
	if envError != nil {
		t.Fatal(envError)
	}
}

func TestMain(m *testing.M) {
	logf := io.Discard
	if os.Getenv("OPERATOR_TEST_LOG") != "" {
		logf = os.Stderr
	}
	logger := zap.New(zap.WriteTo(logf), zap.UseDevMode(true), zap.Level(zapcore.Level(-1)))
	ctrl.SetLogger(logger)
	klog.SetLogger(logger)
	code := m.Run()
	stopSolver()
	if env != nil {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping envtest:", err)
		}
	}
	if aggregationDir != "" {
		_ = os.RemoveAll(aggregationDir)
	}
	os.Exit(code)
}

// writes counts the API writes an operator's client makes, by verb and
// kind, those that succeeded and those that failed.
type writes struct {
	mu     sync.Mutex
	ok     map[string]int
	failed map[string]int
}

func (w *writes) note(verb string, obj runtime.Object, err error) {
	kind := typeName(obj)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.failed[verb+" "+kind]++
		return
	}
	w.ok[verb+" "+kind]++
}

// take returns the successful writes counted so far and starts again.
func (w *writes) take() (ok, failed map[string]int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ok, failed = w.ok, w.failed
	w.ok, w.failed = map[string]int{}, map[string]int{}
	return ok, failed
}

func (w *writes) total() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, v := range w.ok {
		n += v
	}
	return n
}

// newCountingClient wraps the manager's client so every write is counted.
func newCountingClient(w *writes) client.NewClientFunc {
	return func(cfg *rest.Config, o client.Options) (client.Client, error) {
		c, err := client.NewWithWatch(cfg, o)
		if err != nil {
			return nil, err
		}
		return interceptor.NewClient(c, interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				err := c.Create(ctx, obj, opts...)
				w.note("create", obj, err)
				return err
			},
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				err := c.Update(ctx, obj, opts...)
				w.note("update", obj, err)
				return err
			},
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
				err := c.Patch(ctx, obj, p, opts...)
				w.note("patch", obj, err)
				return err
			},
			Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
				err := c.Delete(ctx, obj, opts...)
				w.note("delete", obj, err)
				return err
			},
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				err := c.SubResource(sub).Update(ctx, obj, opts...)
				w.note("update/"+sub, obj, err)
				return err
			},
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
				err := c.SubResource(sub).Patch(ctx, obj, p, opts...)
				w.note("patch/"+sub, obj, err)
				return err
			},
		}), nil
	}
}

// running is an operator started for a test.
type running struct {
	mgr      manager.Manager
	writes   *writes
	reads    *reads
	registry *prometheus.Registry
	stop     func()
	// passed are the Certificates the operator has decided on.
	passed *passed
}

// harness is one test's namespace and clock.
type harness struct {
	t     testing.TB
	ns    string
	clock *clocktesting.FakeClock
	ctx   context.Context
}

// newHarness makes a namespace for the test and a fake clock that moves
// on its own at the real pace (so the work queues' short delays pass)
// and that the test moves forward by days at a time.
func newHarness(t testing.TB) *harness {
	t.Helper()
	apiServer(t)
	ns := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(ns) > 50 {
		ns = ns[:50]
	}
	ns = strings.TrimRight(ns, "-") + "-" + fmt.Sprint(time.Now().UnixNano()%100000)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	t.Cleanup(cancel)
	require.NoError(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	clk := clocktesting.NewFakeClock(time.Now().UTC().Truncate(time.Second))
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				clk.Step(5 * time.Millisecond)
			}
		}
	}()
	t.Cleanup(func() { close(done) })
	return &harness{t: t, ns: ns, clock: clk, ctx: ctx}
}

// start runs an operator on the test's namespace, stopped at the end of
// the test (or by the stop function it returns).
func (h *harness) start(mod ...func(*manager.Options, *operator.Options)) *running {
	h.t.Helper()
	w := &writes{ok: map[string]int{}, failed: map[string]int{}}
	rd := &reads{n: map[string]int{}}
	mo := manager.Options{
		NewCache:               newCountingCache(rd),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: new(true)},
		NewClient:              newCountingClient(w),
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{h.ns: {}}},
		Logger:                 ctrl.Log.WithName(h.ns),
	}
	metrics := operator.NewMetrics()
	registry := prometheus.NewRegistry()
	require.NoError(h.t, metrics.Register(registry))
	seen := &passed{names: map[string]bool{}}
	o := operator.Options{Clock: h.clock, ClusterResourceNamespace: h.ns, Rand: rand.Reader, Metrics: metrics, Workers: 4, Observe: seen.observe}
	for _, f := range mod {
		f(&mo, &o)
	}
	mgr, err := operator.NewManager(countingConfig(restConfig, rd), mo, o)
	require.NoError(h.t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				h.t.Errorf("manager: %v", err)
			}
		})
	}
	h.t.Cleanup(stop)
	return &running{mgr: mgr, writes: w, reads: rd, registry: registry, stop: stop, passed: seen}
}

// passed records the Certificates the operator has passed over (decided
// on), whether or not the pass wrote anything.
type passed struct {
	mu sync.Mutex
	// certificates and requests count the passes over each kind.
	certificates, requests int
	names                  map[string]bool
	// last holds the last few passes over each Certificate, for a test
	// or benchmark that reports one that never got Ready.
	last map[string][]string
}

func (p *passed) observe(ev host.Event) {
	if ev.Kind == host.KindRequest {
		p.mu.Lock()
		p.requests++
		p.mu.Unlock()
	}
	if ev.Kind != host.KindCertificate {
		return
	}
	line := fmt.Sprintf("%s no decision: err=%v", time.Now().Format("15:04:05.000"), ev.Err)
	if ev.Result != nil {
		line = fmt.Sprintf("%s %s/%s done=%v next=%s err=%v warning=%v", time.Now().Format("15:04:05.000"), ev.Result.Stage, ev.Result.Reason,
			ev.Done, ev.Next.Format("15:04:05.000"), ev.Err, ev.Warning)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.certificates++
	if ev.Result != nil {
		p.names[ev.Name] = true
	}
	if p.last == nil {
		p.last = map[string][]string{}
	}
	l := append(p.last[ev.Name], line)
	if len(l) > 8 {
		l = l[len(l)-8:]
	}
	p.last[ev.Name] = l
}

// counts are the passes over Certificates and CertificateRequests so far.
func (p *passed) counts() (certificates, requests int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.certificates, p.requests
}

// lastPasses is what the last passes over the Certificate name did.
func (p *passed) lastPasses(name string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.last[name])
}

// forgetLast drops the record of the last passes.
func (p *passed) forgetLast() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = nil
}

// has reports whether the operator has decided on the Certificate name.
func (p *passed) has(name string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.names[name]
}

// count is how many Certificates the operator has decided on.
func (p *passed) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.names)
}

// elect turns leader election on for an operator the test starts, with
// the Lease in the test's namespace.
func (h *harness) elect(mo *manager.Options, _ *operator.Options) {
	mo.LeaderElection = true
	mo.LeaderElectionID = "certlife-operator"
	mo.LeaderElectionNamespace = h.ns
	mo.LeaderElectionReleaseOnCancel = true
	// Generous enough for a loaded machine; a clean stop releases the
	// lease at once, so the handover does not wait for it.
	mo.LeaseDuration, mo.RenewDeadline, mo.RetryPeriod = new(15*time.Second), new(10*time.Second), new(500*time.Millisecond)
}

// caIssuer makes a CA key pair in a Secret and an Issuer signing with it.
func (h *harness) caIssuer(name string) *localca.CA {
	h.t.Helper()
	ca := h.caSecret(name + "-ca")
	h.create(&cmapi.Issuer{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns},
		Spec: cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{CA: &cmapi.CAIssuer{SecretName: name + "-ca"}}}})
	return ca
}

// caSecret makes a CA key pair in a Secret the operator does not manage.
func (h *harness) caSecret(name string) *localca.CA {
	h.t.Helper()
	ca, err := localca.NewRoot(rand.Reader, "test CA "+name, keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, h.clock.Now().Add(-time.Hour), 10*365*24*time.Hour)
	require.NoError(h.t, err)
	keyPEM, err := ca.KeyPEM()
	require.NoError(h.t, err)
	h.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{keys.SecretCertificate: ca.CertificatePEM(), keys.SecretPrivateKey: keyPEM}})
	return ca
}

// eventNotes lists the notes of the Events about a certificate with the
// given reason.
func (h *harness) eventNotes(name, reason string) []string {
	return h.eventNotesOfType(name, "", reason)
}

// eventNotesOfType lists the notes of the Events of a type (Normal,
// Warning; "" for any) about a certificate with the given reason.
func (h *harness) eventNotesOfType(name, typ, reason string) []string {
	var evs eventsv1.EventList
	if err := k8s.List(h.ctx, &evs, client.InNamespace(h.ns)); err != nil {
		return nil
	}
	var out []string
	for _, e := range evs.Items {
		if e.Regarding.Kind == "Certificate" && e.Regarding.Name == name && e.Reason == reason && (typ == "" || e.Type == typ) {
			out = append(out, e.Note)
		}
	}
	return out
}

// metric is the value of a metric with the given label values (in the
// order the metric's labels are declared), 0 when it has none.
func (r *running) metric(name string, labelValues ...string) float64 {
	families, err := r.registry.Gather()
	if err != nil {
		return -1
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != len(labelValues) {
				continue
			}
			// Gather sorts labels by name; match them as a set.
			have := map[string]bool{}
			for _, l := range m.GetLabel() {
				have[l.GetValue()] = true
			}
			for _, v := range labelValues {
				if !have[v] {
					continue metrics
				}
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

func (h *harness) create(obj client.Object) {
	h.t.Helper()
	obj.SetNamespace(h.ns)
	if _, ok := obj.(*corev1.Namespace); ok {
		obj.SetNamespace("")
	}
	require.NoError(h.t, k8s.Create(h.ctx, obj))
}

// certificate is a Certificate for name.example from issuer, ECDSA.
func (h *harness) certificate(name, issuer string, mod ...func(*cmapi.CertificateSpec)) *cmapi.Certificate {
	c := &cmapi.Certificate{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns}, Spec: cmapi.CertificateSpec{
		SecretName: name + "-tls", DNSNames: []string{name + ".example"},
		IssuerRef:  cmmeta.IssuerReference{Name: issuer},
		PrivateKey: &cmapi.CertificatePrivateKey{Algorithm: cmapi.ECDSAKeyAlgorithm},
	}}
	for _, f := range mod {
		f(&c.Spec)
	}
	return c
}

func (h *harness) get(name string) *cmapi.Certificate {
	h.t.Helper()
	var c cmapi.Certificate
	require.NoError(h.t, k8s.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: name}, &c))
	return &c
}

// edit changes a Certificate as a user would: read, change, update, and
// again on a conflict (the operator writes its status meanwhile).
func (h *harness) edit(name string, change func(*cmapi.Certificate)) *cmapi.Certificate {
	h.t.Helper()
	var c *cmapi.Certificate
	require.NoError(h.t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c = h.get(name)
		change(c)
		return k8s.Update(h.ctx, c)
	}))
	return c
}

// eventually waits until cond holds, for at most a minute.
func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// isReady reports whether the certificate is Ready at revision rev, its
// issuance done (no next private key).
func isReady(c *cmapi.Certificate, rev int) bool {
	ready := condition(c.Status.Conditions, certificate.ConditionReady)
	return ready != nil && ready.Status == cmmeta.ConditionTrue && c.Status.Revision != nil && *c.Status.Revision == rev &&
		c.Status.NextPrivateKeySecretName == nil
}

// isReady reports whether the certificate is Ready at revision rev.
func (h *harness) isReady(name string, rev int) bool {
	c := &cmapi.Certificate{}
	if err := k8s.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: name}, c); err != nil {
		return false
	}
	return isReady(c, rev)
}

// waitReady waits until the certificate is Ready at revision rev.
func (h *harness) waitReady(name string, rev int) *cmapi.Certificate {
	h.t.Helper()
	var c *cmapi.Certificate
	h.eventually(fmt.Sprintf("%s Ready at revision %d", name, rev), func() bool {
		c = &cmapi.Certificate{}
		if err := k8s.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: name}, c); err != nil {
			return false
		}
		return isReady(c, rev)
	})
	return c
}

// condition finds a condition of type t among a Certificate's, a
// CertificateRequest's or an Issuer's.
func condition[C cmapi.CertificateCondition | cmapi.CertificateRequestCondition | cmapi.IssuerCondition](cs []C, t string) *C {
	for i := range cs {
		if conditionType(cs[i]) == t {
			return &cs[i]
		}
	}
	return nil
}

func conditionType(c any) string {
	switch c := c.(type) {
	case cmapi.CertificateCondition:
		return string(c.Type)
	case cmapi.CertificateRequestCondition:
		return string(c.Type)
	case cmapi.IssuerCondition:
		return string(c.Type)
	}
	return ""
}

// settle waits until the operator has made no write for a while.
//
// It fails the test when writes have not stopped within settleTimeout: an
// operator that never stops writing is a bug to see, not a test to hang.
func (h *harness) settle(r *running) {
	h.t.Helper()
	last, since, deadline := -1, time.Now(), time.Now().Add(settleTimeout)
	for time.Since(since) < 500*time.Millisecond {
		if time.Now().After(deadline) {
			h.t.Fatalf("the operator was still writing after %v (%d writes)", settleTimeout, r.writes.total())
		}
		if n := r.writes.total(); n != last {
			last, since = n, time.Now()
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// settleTimeout bounds settle: the 1,000-certificate benchmark settles in
// seconds.
const settleTimeout = 2 * time.Minute

func (h *harness) secret(name string) (*corev1.Secret, error) {
	var s corev1.Secret
	err := k8s.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: name}, &s)
	return &s, err
}

func (h *harness) requests() []cmapi.CertificateRequest {
	h.t.Helper()
	var l cmapi.CertificateRequestList
	require.NoError(h.t, k8s.List(h.ctx, &l, client.InNamespace(h.ns)))
	return l.Items
}

// watchCertificate records every version of a certificate the API server
// serves after the one it has now, in order, until the test ends.
func (h *harness) watchCertificate(name string) func() []cmapi.Certificate {
	h.t.Helper()
	wc, err := client.NewWithWatch(restConfig, client.Options{Scheme: operator.Scheme()})
	require.NoError(h.t, err)
	w, err := wc.Watch(h.ctx, &cmapi.CertificateList{}, &client.ListOptions{
		Namespace:     h.ns,
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name),
		Raw:           &metav1.ListOptions{ResourceVersion: h.get(name).ResourceVersion},
	})
	require.NoError(h.t, err)
	h.t.Cleanup(w.Stop)
	var (
		mu   sync.Mutex
		seen []cmapi.Certificate
	)
	go func() {
		for ev := range w.ResultChan() {
			if c, ok := ev.Object.(*cmapi.Certificate); ok {
				mu.Lock()
				seen = append(seen, *c)
				mu.Unlock()
			}
		}
	}()
	return func() []cmapi.Certificate {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}
