package plugin

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/big"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	cmacme "github.com/cert-manager/cert-manager/pkg/apis/acme/v1"
	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/keys"

	"github.com/certlife/certlife/examples/kubernetes/operator"
)

// The tests run against a real kube-apiserver and etcd (envtest), with
// the operator's CRDs; the operator does not run. Each test puts a
// Certificate in a state by carrying out the controller's own decisions
// (drive), standing in for the issuer where a state needs it, at fixed
// times: the output depends on nothing but the test.
//
//	export KUBEBUILDER_ASSETS="$(../../.ci/k8s-assets)"   # from examples/kubernetes
var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var (
	envOnce    sync.Once
	testEnv    *envtest.Environment
	restConfig *rest.Config
	k8s        client.Client
	envErr     error
)

func apiServer(t testing.TB) {
	t.Helper()
	envOnce.Do(func() {
		if os.Getenv("KUBEBUILDER_ASSETS") == "" {
			envErr = errors.New("KUBEBUILDER_ASSETS is not set: these tests run against a real API server. From examples/kubernetes run\n\texport KUBEBUILDER_ASSETS=\"$(../../.ci/k8s-assets)\"")
			return
		}
		e := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "..", "..", "..", "config", "crd")}, ErrorIfCRDPathMissing: true}
		cfg, err := e.Start()
		if err != nil {
			envErr = fmt.Errorf("starting envtest: %w", err)
			return
		}
		testEnv, restConfig = e, cfg
		k8s, envErr = client.New(cfg, client.Options{Scheme: operator.Scheme()})
	})
	if envErr != nil {
		t.Fatal(envErr)
	}
}

func TestMain(m *testing.M) {
	flag.Parse()
	log.SetLogger(logr.Discard())
	code := m.Run()
	if testEnv != nil {
		if err := testEnv.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping envtest:", err)
		}
	}
	os.Exit(code)
}

// t0 is the tests' now: every time they make or print is relative to it.
var t0 = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

// env is one test's namespace on the API server.
type env struct {
	t   *testing.T
	ctx context.Context
	c   client.Client
	ns  string
}

func newEnv(t *testing.T, ns string) *env {
	t.Helper()
	apiServer(t)
	e := &env{t: t, ctx: t.Context(), c: k8s, ns: ns}
	// The namespace stays (envtest runs no namespace controller to remove
	// it); what the test made in it goes, so that the test runs again on
	// the same API server (-count).
	if err := k8s.Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("namespace %s: %v", ns, err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		for _, obj := range []client.Object{&cmacme.Challenge{}, &cmacme.Order{}, &cmapi.CertificateRequest{}, &cmapi.Certificate{}, &corev1.Secret{}} {
			if err := k8s.DeleteAllOf(ctx, obj, client.InNamespace(ns)); err != nil {
				t.Errorf("cleaning namespace %s: %v", ns, err)
			}
		}
	})
	return e
}

// testKey is a P-256 key fixed by its name, so that certificates and
// fingerprints are the same on every run.
func testKey(t testing.TB, name string) *ecdsa.PrivateKey {
	t.Helper()
	d := sha256.Sum256([]byte("kubectl-certlife test key " + name))
	k, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), d[:])
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// caKey is the test CA's: Ed25519, whose signatures are deterministic.
var caKey = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))

// caCert is the test CA's certificate.
func caCert(t testing.TB) *x509.Certificate {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "certlife test CA"},
		NotBefore: t0.AddDate(-1, 0, 0), NotAfter: t0.AddDate(5, 0, 0),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, caKey.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func pemOf(der []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}) }

// signLeaf makes a leaf for pub with the names, signed by the test CA.
func signLeaf(t testing.TB, serial int64, pub crypto.PublicKey, cn string, dns []string, notBefore, notAfter time.Time) []byte {
	t.Helper()
	ca := caCert(t)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn}, DNSNames: dns,
		NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, pub, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pemOf(der)
}

// newCertificate creates a Certificate for <name>.example.com in secret
// <name>-tls from Issuer ca, with a P-256 key; mutate changes the spec
// first.
func (e *env) newCertificate(name string, mutate func(*cmapi.Certificate)) *cmapi.Certificate {
	e.t.Helper()
	crt := &cmapi.Certificate{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: cmapi.CertificateSpec{
			SecretName: name + "-tls",
			DNSNames:   []string{name + ".example.com"},
			IssuerRef:  cmmeta.IssuerReference{Name: "ca", Kind: cmapi.IssuerKind, Group: "cert-manager.io"},
			Duration:   &metav1.Duration{Duration: 90 * 24 * time.Hour},
			PrivateKey: &cmapi.CertificatePrivateKey{Algorithm: cmapi.ECDSAKeyAlgorithm, Size: 256},
		},
	}
	if mutate != nil {
		mutate(crt)
	}
	if err := e.c.Create(e.ctx, crt); err != nil {
		e.t.Fatalf("creating certificate %s: %v", name, err)
	}
	return crt
}

// pass is one pass of the Certificate controller at at, as the operator
// makes it: gather, decide, carry out the actions in order. It returns
// the decision.
func (e *env) pass(name string, at time.Time) certificate.Result {
	e.t.Helper()
	g, err := gather(e.ctx, e.c, e.ns, name)
	if err != nil {
		e.t.Fatal(err)
	}
	res := g.decide(at, DefaultConfig())
	if res.Err != nil {
		e.t.Fatalf("decision on %s: %v", name, res.Err)
	}
	for _, a := range res.Actions {
		e.carryOut(g, a)
	}
	return res
}

// settle makes passes at at until one has nothing to do.
func (e *env) settle(name string, at time.Time) {
	e.t.Helper()
	for range 10 {
		if res := e.pass(name, at); len(res.Actions) == 0 {
			return
		}
	}
	e.t.Fatalf("certificate %s does not settle at %s", name, at)
}

func (e *env) carryOut(g *gathered, a certificate.Action) {
	e.t.Helper()
	c := g.snap.Certificate
	switch a := a.(type) {
	case certificate.GenerateKey:
		// The key is fixed by the name without its hash, which hashes the
		// Certificate's UID: the same on every run.
		pemKey, err := keys.EncodePrivateKey(testKey(e.t, nextKeyName.ReplaceAllString(a.SecretName, "-next-key-$1")), keys.EncodingPKCS8)
		if err != nil {
			e.t.Fatal(err)
		}
		sec := operator.SecretFromCore(&certificate.Secret{
			ObjectMeta: certificate.ObjectMeta{Name: a.SecretName, Namespace: e.ns, OwnerUID: a.OwnerUID,
				Labels:      map[string]string{certificate.LabelNextPrivateKey: "true"},
				Annotations: map[string]string{certificate.AnnotationCertificateName: c.Name}},
			Data: map[string][]byte{keys.SecretPrivateKey: pemKey},
		})
		sec.Type = corev1.SecretTypeOpaque
		e.create(sec)
	case certificate.CreateRequest:
		key := e.privateKey(a.KeySecretName)
		req := a.Request
		csr, err := keys.BuildCSR(rand.Reader, a.Template, key)
		if err != nil {
			e.t.Fatal(err)
		}
		req.Spec.Request = csr
		e.create(operator.RequestFromCore(&req))
	case certificate.DeleteRequest:
		e.delete(&cmapi.CertificateRequest{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: a.Name}})
	case certificate.DeleteSecret:
		e.delete(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: a.Name}})
	case certificate.WriteSecret:
		data, err := keys.SecretData(rand.Reader, e.privateKey(a.KeySecretName), a.Chain, a.CA, a.Output)
		if err != nil {
			e.t.Fatal(err)
		}
		from := operator.SecretFromCore(&certificate.Secret{ObjectMeta: certificate.ObjectMeta{Name: a.Name, Namespace: e.ns,
			Labels: a.Labels, Annotations: a.Annotations}, Data: data})
		var cur corev1.Secret
		err = e.c.Get(e.ctx, types.NamespacedName{Namespace: e.ns, Name: a.Name}, &cur)
		switch {
		case apierrors.IsNotFound(err):
			from.Type = corev1.SecretTypeTLS
			e.create(from)
		case err != nil:
			e.t.Fatal(err)
		default:
			cur.Data = data
			cur.Labels = merged(cur.Labels, from.Labels)
			cur.Annotations = merged(cur.Annotations, from.Annotations)
			if err := e.c.Update(e.ctx, &cur); err != nil {
				e.t.Fatal(err)
			}
		}
	case certificate.UpdateStatus:
		e.writeStatus(c.Name, a.Status, &c.Spec)
	default:
		e.t.Fatalf("the test host does not carry out %T", a)
	}
}

func merged(a, b map[string]string) map[string]string {
	out := maps.Clone(a)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, b)
	return out
}

// writeStatus writes a certlife status into the Certificate as the
// operator does: the status subresource, then the annotations it keeps.
func (e *env) writeStatus(name string, st certificate.Status, spec *certificate.Spec) {
	e.t.Helper()
	var cur cmapi.Certificate
	if err := e.c.Get(e.ctx, types.NamespacedName{Namespace: e.ns, Name: name}, &cur); err != nil {
		e.t.Fatal(err)
	}
	want := cur.DeepCopy()
	operator.CertificateStatusFromCore(want, st, spec)
	at := cur.DeepCopy()
	at.Status = want.Status
	if err := e.c.Status().Update(e.ctx, at); err != nil {
		e.t.Fatalf("status of %s: %v", name, err)
	}
	if !maps.Equal(want.Annotations, at.Annotations) {
		at.Annotations = want.Annotations
		if err := e.c.Update(e.ctx, at); err != nil {
			e.t.Fatal(err)
		}
	}
}

func (e *env) privateKey(secret string) crypto.Signer {
	e.t.Helper()
	var s corev1.Secret
	if err := e.c.Get(e.ctx, types.NamespacedName{Namespace: e.ns, Name: secret}, &s); err != nil {
		e.t.Fatal(err)
	}
	k, err := keys.DecodePrivateKey(s.Data[keys.SecretPrivateKey])
	if err != nil {
		e.t.Fatal(err)
	}
	return k
}

func (e *env) create(obj client.Object) {
	e.t.Helper()
	obj.SetResourceVersion("")
	if err := e.c.Create(e.ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
		e.t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

func (e *env) delete(obj client.Object) {
	e.t.Helper()
	if err := e.c.Delete(e.ctx, obj); err != nil && !apierrors.IsNotFound(err) {
		e.t.Fatalf("deleting %T %s: %v", obj, obj.GetName(), err)
	}
}

// request reads the Certificate's request of a revision.
func (e *env) request(cert string, revision int) *cmapi.CertificateRequest {
	e.t.Helper()
	var r cmapi.CertificateRequest
	if err := e.c.Get(e.ctx, types.NamespacedName{Namespace: e.ns, Name: fmt.Sprintf("%s-%d", cert, revision)}, &r); err != nil {
		e.t.Fatalf("request of %s revision %d: %v", cert, revision, err)
	}
	return &r
}

// answer sets a request's conditions (and certificate) as an issuer and
// an approver would, at at.
func (e *env) answer(r *cmapi.CertificateRequest, at time.Time, conds []cmapi.CertificateRequestCondition, chain []byte) {
	e.t.Helper()
	for i := range conds {
		conds[i].LastTransitionTime = &metav1.Time{Time: at}
	}
	r.Status.Conditions = conds
	if chain != nil {
		r.Status.Certificate = chain
		r.Status.CA = pemOf(caCert(e.t).Raw)
	}
	for _, c := range conds {
		if c.Type == cmapi.CertificateRequestConditionReady && c.Reason == cmapi.CertificateRequestReasonFailed ||
			c.Type == cmapi.CertificateRequestConditionDenied {
			r.Status.FailureTime = &metav1.Time{Time: at}
		}
	}
	if err := e.c.Status().Update(e.ctx, r); err != nil {
		e.t.Fatalf("answering %s: %v", r.Name, err)
	}
}

var approved = cmapi.CertificateRequestCondition{Type: cmapi.CertificateRequestConditionApproved, Status: cmmeta.ConditionTrue,
	Reason: "cert-manager.io", Message: "Certificate request has been approved by cert-manager.io"}

// issue signs the request of a revision with the test CA, valid from at
// for the certificate's duration, and sets it Ready.
func (e *env) issue(cert string, revision int, at time.Time) {
	e.t.Helper()
	r := e.request(cert, revision)
	csr, err := keys.ParseCSR(r.Spec.Request)
	if err != nil {
		e.t.Fatal(err)
	}
	// The chain is the leaf and the CA that signed it.
	chain := append(signLeaf(e.t, int64(1000+revision), csr.PublicKey, csr.Subject.CommonName, csr.DNSNames, at, at.Add(r.Spec.Duration.Duration)), pemOf(caCert(e.t).Raw)...)
	e.answer(r, at, []cmapi.CertificateRequestCondition{approved,
		{Type: cmapi.CertificateRequestConditionReady, Status: cmmeta.ConditionTrue, Reason: cmapi.CertificateRequestReasonIssued, Message: "Certificate fetched from issuer successfully"}}, chain)
}

// issued brings a new Certificate to Ready at at: the decision's passes,
// the test CA's answer, the passes that write it.
func (e *env) issued(name string, at time.Time) {
	e.t.Helper()
	e.settle(name, at)
	e.issue(name, 1, at)
	e.settle(name, at)
}

// golden compares got with testdata/<name>.golden, or writes it with
// -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got; run with -update to accept):\n%s", path, diff)
	}
}

// run runs the plugin's command line against the test API server at
// now, in the env's namespace, and returns its output and exit code.
func (e *env) run(now time.Time, args ...string) (stdout, stderr string, code int) {
	e.t.Helper()
	var out, errOut bytes.Buffer
	c := &cli{stdout: &out, stderr: &errOut, now: func() time.Time { return now }, cfg: DefaultConfig(), client: e.c, namespace: e.ns}
	code = c.run(e.ctx, args)
	return out.String(), errOut.String(), code
}
