package operator_test

import (
	"crypto"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/keys"
)

// The switch from the reference operator at scale: OPERATOR_BENCH_CERTS
// (1,000 unless set) Certificates, each with its Secret, its status and,
// for two in three, its last CertificateRequest, made with the reference
// operator's own pki package as v1.21 leaves them (referenceMake; keys
// mostly ECDSA P-256 and P-384 in SEC1 and PKCS#8, and RSA 2048 in PKCS#1
// and PKCS#8 for 2 in 100), all written before the operator starts. Two
// in 100 Secrets await a metadata repair: one lacks the reference
// operator's managed label (as a Secret written before v1.12 does), one
// its alt-names annotation (a user removed it).
//
// The operator then starts, looks at every Certificate and settles. The
// adoption must make no issuance — no CertificateRequest created, no
// Secret created (no next private key), every tls.key byte for byte as
// the reference operator wrote it, every revision unchanged — and at most
// one write to each Secret: none to a Secret as the reference operator
// left it, one merge patch to each that awaits a repair. Every
// Certificate stays Ready throughout (every version the API server
// serves), and none is written: certlife's status of a valid
// certificate is the reference operator's, Ready message included. What
// the adoption writes besides is the Issuer's status, once.
//
// It reports, per Certificate, the operator's writes by verb and
// resource (<verb>-<resource>/certificate) and in all (writes/certificate),
// refused writes (conflicts/certificate), the most changes any one
// Certificate and any one Secret saw (max-changes/certificate,
// max-writes/secret, from watches on the API server), the requests
// created and keys rewritten (both 0), the seconds from the operator's
// start until the operator had decided on every Certificate
// (s-to-looked, from Options.Observe) and until
// it had made no write for half a second (s-settled, that half second
// included), the process's CPU-seconds over that time (cpu-s-to-settled:
// the operator's, and the test's following of two watches, each change
// decoded once; no polling of the API server) and the operator's live
// heap per Certificate after GC (B/certificate), net of the heap of an
// operator running with nothing but an Issuer (B/idle-operator, measured
// first the same way). Making the keys and writing the objects is not
// measured. Run it on a quiet machine:
//
//	go test -run '^$' -bench '^BenchmarkMigration1000$' -benchtime 1x -timeout 30m ./operator
func BenchmarkMigration1000(b *testing.B) {
	n := benchCertificates()
	for range b.N {
		benchmarkMigration(b, n)
	}
}

func benchmarkMigration(b *testing.B, n int) {
	idle := idleOperatorHeap(b)

	h := newHarness(b)
	ca := h.caIssuer("ca")
	caKeyPEM, err := ca.KeyPEM()
	require.NoError(b, err)
	caKey, err := keys.DecodePrivateKey(caKeyPEM)
	require.NoError(b, err)

	// Everything the reference operator left, made first, then written.
	refs := make([]*reference, n)
	require.NoError(b, inParallel(n, runtime.GOMAXPROCS(0), func(i int) error {
		name := fmt.Sprintf("m%04d", i)
		crt := &cmapi.Certificate{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: referenceSpec(name, i, i%100 < 4)}
		r, err := referenceMake(crt, ca.Certificate(), caKey.(crypto.Signer), 1+i%3, i%3 != 1)
		refs[i] = r
		return err
	}))
	repair := func(i int) bool { return i%100 == 50 || i%100 == 75 }
	for i, r := range refs {
		switch i % 100 {
		case 50:
			delete(r.secret.Labels, cmapi.PartOfCertManagerControllerLabelKey)
		case 75:
			delete(r.secret.Annotations, cmapi.AltNamesAnnotationKey)
		}
	}
	require.NoError(b, inParallel(n, 8, func(i int) error { return h.referenceWrite(refs[i]) }))
	encodings := map[string]int{}
	for _, r := range refs {
		encodings[r.migrated().encoding]++
	}
	b.Logf("%d Certificates made as the reference operator leaves them; tls.key encodings %v", n, encodings)

	// Every change to a Secret and every request created, and every
	// version of each Certificate, from here on.
	changes := h.watchChanges()
	a := &adoption{certificates: map[string]*adopted{}}
	stopFollowing := h.followCertificates(0, a.see)
	require.Len(b, a.certificates, n, "every Certificate seen before the operator starts")

	before := liveHeap()
	start, cpuStart := time.Now(), cpuSeconds()
	op := h.start()
	for deadline := time.Now().Add(10 * time.Minute); op.passed.count() < n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d Certificates decided on after 10 minutes", op.passed.count(), n)
		}
	}
	toLooked := time.Since(start)
	h.settle(op)
	settled, cpu := time.Since(start), cpuSeconds()-cpuStart
	stopFollowing()
	after := liveHeap()
	runtime.KeepAlive(refs)
	ok, failed := op.writes.take()
	secretWrites, requestsCreated := changes()

	// No issuance.
	assert.Empty(b, requestsCreated, "no CertificateRequest created")
	assert.Zero(b, ok["create CertificateRequest"], "no CertificateRequest created: %v", ok)
	assert.Zero(b, ok["create Secret"], "no Secret made (no next private key): %v", ok)

	// Each Secret: its key as written, and at most one write — one
	// metadata repair where one was due.
	var secrets corev1.SecretList
	require.NoError(b, k8s.List(h.ctx, &secrets, client.InNamespace(h.ns)))
	byName := map[string]*corev1.Secret{}
	for i := range secrets.Items {
		byName[secrets.Items[i].Name] = &secrets.Items[i]
	}
	rewritten, repaired, maxSecretWrites := 0, 0, 0
	for i, r := range refs {
		s := byName[r.secret.Name]
		if !assert.NotNil(b, s, "Secret %s kept", r.secret.Name) {
			continue
		}
		if string(s.Data[corev1.TLSPrivateKeyKey]) != string(r.key) {
			rewritten++
		}
		maxSecretWrites = max(maxSecretWrites, secretWrites[s.Name])
		if repair(i) {
			repaired++
			assert.Equal(b, 1, secretWrites[s.Name], "Secret %s: the repair is one write", s.Name)
			assert.Equal(b, "true", s.Labels[cmapi.PartOfCertManagerControllerLabelKey], "Secret %s: the managed label", s.Name)
			assert.Equal(b, r.crt.Name+".example", s.Annotations[cmapi.AltNamesAnnotationKey], "Secret %s: the alt-names annotation", s.Name)
		} else {
			assert.Zero(b, secretWrites[s.Name], "Secret %s as the reference operator left it is not written", s.Name)
		}
	}
	assert.Zero(b, rewritten, "keys rewritten (tls.key not byte for byte as the reference operator wrote it)")
	assert.Equal(b, repaired, ok["patch Secret"], "one patch per Secret that awaited a repair, no other Secret write: %v", ok)

	// Each Certificate: Ready in every version served, its revision as
	// the reference operator left it, no next private key, not written.
	var list cmapi.CertificateList
	require.NoError(b, k8s.List(h.ctx, &list, client.InNamespace(h.ns)))
	revisions := map[string]int{}
	for _, r := range refs {
		revisions[r.crt.Name] = *r.status.Revision
	}
	for _, c := range list.Items {
		ready := condition(c.Status.Conditions, certificate.ConditionReady)
		if assert.NotNil(b, ready, "%s Ready", c.Name) {
			assert.Equal(b, cmmeta.ConditionTrue, ready.Status, "%s Ready: %s %s", c.Name, ready.Reason, ready.Message)
		}
		if assert.NotNil(b, c.Status.Revision, "%s revision", c.Name) {
			assert.Equal(b, revisions[c.Name], *c.Status.Revision, "%s revision unchanged", c.Name)
		}
		assert.Nil(b, c.Status.NextPrivateKeySecretName, "%s: no next private key", c.Name)
	}
	notReady, maxChanges := a.summary()
	assert.Empty(b, notReady, "Certificates seen not Ready during the adoption")
	assert.Zero(b, maxChanges, "changes to one Certificate")
	assert.Zero(b, ok["update/status Certificate"]+ok["patch Certificate"], "no Certificate written: %v", ok)

	b.ReportMetric(float64(len(requestsCreated)), "requests-created")
	b.ReportMetric(float64(rewritten), "keys-rewritten")
	b.ReportMetric(float64(sum(ok))/float64(n), "writes/certificate")
	for k, v := range ok {
		b.ReportMetric(float64(v)/float64(n), strings.NewReplacer(" ", "-", "/", "-").Replace(k)+"/certificate")
	}
	b.ReportMetric(float64(sum(failed))/float64(n), "conflicts/certificate")
	b.ReportMetric(float64(maxChanges), "max-changes/certificate")
	b.ReportMetric(float64(maxSecretWrites), "max-writes/secret")
	b.ReportMetric(toLooked.Seconds(), "s-to-looked")
	b.ReportMetric(settled.Seconds(), "s-settled")
	b.ReportMetric(cpu, "cpu-s-to-settled")
	b.ReportMetric((float64(after)-float64(before)-float64(idle))/float64(n), "B/certificate")
	b.ReportMetric(float64(idle), "B/idle-operator")
	b.Logf("writes %v, failed %v; Secrets written %d (%d awaited a repair)", ok, failed, len(secretWrites), repaired)
	op.stop()
}

// adoption follows the Certificates of a migration: the versions in
// which one was not Ready, and how many times each changed after the
// operator started.
type adoption struct {
	mu           sync.Mutex
	certificates map[string]*adopted
}

// adopted is one Certificate's part; made when the Certificates are
// first listed (before the operator starts) so the map does not grow
// while the heap is measured.
type adopted struct {
	resourceVersion string
	changes         int
	notReady        string // the first Ready condition seen that was not True
}

// see takes one version of a Certificate (followCertificates).
func (a *adoption) see(c *cmapi.Certificate) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.certificates[c.Name]
	if s == nil {
		s = &adopted{}
		a.certificates[c.Name] = s
	} else if s.resourceVersion != c.ResourceVersion {
		s.changes++
	}
	s.resourceVersion = c.ResourceVersion
	if r := condition(c.Status.Conditions, certificate.ConditionReady); (r == nil || r.Status != cmmeta.ConditionTrue) && s.notReady == "" {
		s.notReady = fmt.Sprintf("%+v", r)
	}
}

// summary is each Certificate seen not Ready (name: condition) and the
// most changes one Certificate saw.
func (a *adoption) summary() (notReady []string, maxChanges int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for name, s := range a.certificates {
		if s.notReady != "" {
			notReady = append(notReady, name+": "+s.notReady)
		}
		maxChanges = max(maxChanges, s.changes)
	}
	slices.Sort(notReady)
	return notReady, maxChanges
}

// idleOperatorHeap is the live heap after GC that an operator holds
// while it runs with nothing to manage but a CA Issuer, in a namespace of
// its own: the heap while it runs less the heap once it has stopped (so
// what the first operator of the process sets up once and keeps is not
// counted). It is stopped before this returns.
func idleOperatorHeap(b *testing.B) uint64 {
	b.Helper()
	h := newHarness(b)
	h.caIssuer("ca")
	op := h.start()
	h.eventually("the issuer", func() bool { return issuerReady(h, "ca") })
	h.settle(op)
	running := liveHeap()
	op.stop()
	stopped := liveHeap()
	if running < stopped {
		return 0
	}
	return running - stopped
}

// inParallel calls do(i) for each i in [0, n) from workers goroutines and
// returns the first error, if any (the others still run).
func inParallel(n, workers int, do func(i int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	next := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range next {
				if err := do(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}
