package operator_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	whapi "github.com/cert-manager/cert-manager/pkg/acme/webhook/apis/acme/v1alpha1"
	whserver "github.com/cert-manager/cert-manager/pkg/acme/webhook/cmd/server"
	cmacme "github.com/cert-manager/cert-manager/pkg/apis/acme/v1"
	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/yaml"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/acmeclient/acmetest"
	"github.com/certlife/certlife/challenge"

	"github.com/certlife/certlife/examples/kubernetes/operator"
)

// The webhook solver of these tests is served by cert-manager's own
// webhook library (its apiserver), in this process, on a non-loopback
// address of this machine (the API server refuses loopback addresses in
// EndpointSlices), registered with an APIService, and reached through
// the API server's aggregation layer.
const (
	webhookGroup  = "acme.certlife.test"
	webhookSolver = "test-solver"
	// webhookHost is this machine's address the solver listens on:
	// CERTLIFE_WEBHOOK_HOST, or the first non-loopback IPv4 address.
	webhookHostEnv = "CERTLIFE_WEBHOOK_HOST"
	frontProxyUser = "front-proxy-client"
)

// aggregationDir holds the front proxy's CA and client certificate the
// API server proxies to aggregated APIs with; removed by TestMain.
var aggregationDir string

// enableAggregation gives envtest's API server what the aggregation
// layer needs to reach an extension API server: a client certificate to
// proxy with, the CA the extension server checks it against (published
// in kube-system/extension-apiserver-authentication), the headers that
// carry the user, and routing to the endpoints of a Service (there is no
// kube-proxy to route its cluster IP). Nothing else the tests do changes.
func enableAggregation(e *envtest.Environment) error {
	dir, err := os.MkdirTemp("", "certlife-aggregation-")
	if err != nil {
		return err
	}
	aggregationDir = dir
	ca, err := newTestCA("front-proxy CA")
	if err != nil {
		return err
	}
	crt, key, err := ca.issue(&x509.Certificate{Subject: pkix.Name{CommonName: frontProxyUser}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		return err
	}
	files := map[string][]byte{"front-proxy-ca.crt": ca.certPEM, "front-proxy-client.crt": crt, "front-proxy-client.key": key}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return err
		}
	}
	e.ControlPlane.GetAPIServer().Configure().
		Set("requestheader-client-ca-file", filepath.Join(dir, "front-proxy-ca.crt")).
		Set("requestheader-allowed-names", frontProxyUser).
		Set("requestheader-username-headers", "X-Remote-User").
		Set("requestheader-group-headers", "X-Remote-Group").
		Set("requestheader-extra-headers-prefix", "X-Remote-Extra-").
		Set("proxy-client-cert-file", filepath.Join(dir, "front-proxy-client.crt")).
		Set("proxy-client-key-file", filepath.Join(dir, "front-proxy-client.key")).
		Set("enable-aggregator-routing", "true")
	return nil
}

// testCA is a CA for the tests' own certificates.
type testCA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
}

func newTestCA(name string) (*testCA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &testCA{cert: cert, key: key, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// issue signs a leaf from tmpl (subject, names, usages) and returns it
// and its key, PEM.
func (ca *testCA) issue(tmpl *x509.Certificate) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return nil, nil, err
	}
	tmpl.SerialNumber, tmpl.NotBefore, tmpl.NotAfter = serial, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), nil
}

// recordingSolver is a cert-manager webhook.Solver (the interface the
// webhook-example projects implement): it writes the TXT record into
// the test DNS server its config names ({"dns": "host:port"}), fails
// with the config's "fail" message when there is one, and records every
// request.
type recordingSolver struct {
	mu       sync.Mutex
	requests []whapi.ChallengeRequest
}

func (*recordingSolver) Name() string { return webhookSolver }

func (*recordingSolver) Initialize(*rest.Config, <-chan struct{}) error { return nil }

func (s *recordingSolver) Present(ch *whapi.ChallengeRequest) error { return s.do(ch, true) }

func (s *recordingSolver) CleanUp(ch *whapi.ChallengeRequest) error { return s.do(ch, false) }

// solverConfig is the test solver's config.
type solverConfig struct {
	DNS  string `json:"dns"`
	Fail string `json:"fail"`
}

func (s *recordingSolver) do(ch *whapi.ChallengeRequest, present bool) error {
	s.mu.Lock()
	s.requests = append(s.requests, *ch.DeepCopy())
	s.mu.Unlock()
	var cfg solverConfig
	if ch.Config == nil {
		return errors.New("test solver: no config")
	}
	if err := json.Unmarshal(ch.Config.Raw, &cfg); err != nil {
		return fmt.Errorf("test solver: config: %w", err)
	}
	if cfg.Fail != "" {
		return errors.New(cfg.Fail)
	}
	d := testDNS(cfg.DNS)
	if d == nil {
		return fmt.Errorf("test solver: no test DNS server at %q", cfg.DNS)
	}
	if present {
		d.SetTXT(ch.ResolvedFQDN, ch.Key)
	} else {
		d.ClearTXT(ch.ResolvedFQDN, ch.Key)
	}
	return nil
}

// requestsFor returns the requests the solver had for a resource
// namespace.
func (s *recordingSolver) requestsFor(namespace string) []whapi.ChallengeRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []whapi.ChallengeRequest
	for _, r := range s.requests {
		if r.ResourceNamespace == namespace {
			out = append(out, r)
		}
	}
	return out
}

// The test DNS servers the solver writes to, by address.
var (
	dnsMu      sync.Mutex
	dnsServers = map[string]*acmetest.DNS{}
)

func registerTestDNS(t *testing.T, d *acmetest.DNS) {
	dnsMu.Lock()
	dnsServers[d.Addr()] = d
	dnsMu.Unlock()
	t.Cleanup(func() {
		dnsMu.Lock()
		delete(dnsServers, d.Addr())
		dnsMu.Unlock()
	})
}

func testDNS(addr string) *acmetest.DNS {
	dnsMu.Lock()
	defer dnsMu.Unlock()
	return dnsServers[addr]
}

var (
	solverOnce sync.Once
	solver     *recordingSolver
	solverErr  error
	// stopSolver stops the solver's API server; TestMain calls it.
	stopSolver = func() {}
)

// webhookSolverServer starts the solver the first time a test needs it,
// and registers it with the API server: a namespace, a Service without
// selector with an EndpointSlice to the solver's address, and the
// APIService v1alpha1.<group> with the CA of the solver's serving
// certificate. It waits until the API server finds the APIService
// available.
func webhookSolverServer(t *testing.T) *recordingSolver {
	t.Helper()
	apiServer(t)
	solverOnce.Do(func() { solver, solverErr = startWebhookSolver() })
	if solverErr != nil {
		t.Fatal(solverErr)
	}
	return solver
}

// webhookHost is the address the solver listens on.
func webhookHost() (string, error) {
	if h := os.Getenv(webhookHostEnv); h != "" {
		return h, nil
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String(), nil
		}
	}
	return "", fmt.Errorf("no non-loopback IPv4 address on this machine for the webhook solver (the API server refuses loopback endpoints); set %s", webhookHostEnv)
}

func startWebhookSolver() (*recordingSolver, error) {
	ctx := context.Background()
	host, err := webhookHost()
	if err != nil {
		return nil, err
	}
	const ns, svc = "certlife-webhook-solver", "test-solver"
	dir, err := os.MkdirTemp(aggregationDir, "solver-")
	if err != nil {
		return nil, err
	}
	// The serving certificate: the aggregation layer checks it for the
	// Service's name, against the APIService's caBundle.
	ca, err := newTestCA("webhook solver CA")
	if err != nil {
		return nil, err
	}
	crt, key, err := ca.issue(&x509.Certificate{Subject: pkix.Name{CommonName: svc + "." + ns + ".svc"}, DNSNames: []string{svc + "." + ns + ".svc"},
		IPAddresses: []net.IP{net.ParseIP(host)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	if err != nil {
		return nil, err
	}
	certFile, keyFile, kubeconfig := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(certFile, crt, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		return nil, err
	}
	// The solver's own access to the API server: it reads the front
	// proxy's CA, and reviews tokens and access, as a solver in a cluster
	// does with its service account.
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: restConfig.Host, CertificateAuthorityData: restConfig.CAData}
	kc.AuthInfos["solver"] = &clientcmdapi.AuthInfo{ClientCertificateData: restConfig.CertData, ClientKeyData: restConfig.KeyData, Token: restConfig.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "solver"}
	kc.CurrentContext = "envtest"
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, fmt.Errorf("the webhook solver cannot listen on %s: %w", host, err)
	}
	port := ln.Addr().(*net.TCPAddr).Port

	s := &recordingSolver{}
	o := whserver.NewWebhookServerOptions(webhookGroup, s)
	ss := o.RecommendedOptions.SecureServing
	ss.Listener, ss.BindAddress, ss.BindPort = ln, net.ParseIP(host), port
	ss.ServerCert.CertKey.CertFile, ss.ServerCert.CertKey.KeyFile = certFile, keyFile
	o.RecommendedOptions.Authentication.RemoteKubeConfigFile = kubeconfig
	o.RecommendedOptions.Authorization.RemoteKubeConfigFile = kubeconfig
	o.RecommendedOptions.CoreAPI.CoreAPIKubeconfigPath = kubeconfig
	cfg, err := o.Config()
	if err != nil {
		return nil, fmt.Errorf("the webhook solver's config: %w", err)
	}
	srv, err := cfg.Complete().New()
	if err != nil {
		return nil, fmt.Errorf("the webhook solver's API server: %w", err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.GenericAPIServer.PrepareRun().RunWithContext(runCtx) }()
	stopSolver = func() {
		cancel()
		<-done
	}

	// Register it.
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return nil, err
	}
	if err := k8s.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: svc, Namespace: ns}, Spec: corev1.ServiceSpec{
		Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt(port)}}}}); err != nil {
		return nil, err
	}
	if err := k8s.Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: svc + "-1", Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{host}, Conditions: discoveryv1.EndpointConditions{Ready: new(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: new("https"), Port: new(int32(port))}},
	}); err != nil {
		return nil, err
	}
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": operator.WebhookVersion + "." + webhookGroup},
		"spec": map[string]any{
			"group": webhookGroup, "version": operator.WebhookVersion,
			"service":              map[string]any{"namespace": ns, "name": svc, "port": int64(443)},
			"caBundle":             base64.StdEncoding.EncodeToString(ca.certPEM),
			"groupPriorityMinimum": int64(1000), "versionPriority": int64(15),
		},
	}}
	if err := k8s.Create(ctx, apiService); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		got := &unstructured.Unstructured{}
		got.SetAPIVersion("apiregistration.k8s.io/v1")
		got.SetKind("APIService")
		err := k8s.Get(ctx, client.ObjectKey{Name: apiService.GetName()}, got)
		msg := fmt.Sprint(err)
		if err == nil {
			conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
			for _, c := range conds {
				c, _ := c.(map[string]any)
				if c["type"] == "Available" {
					if c["status"] == "True" {
						return s, nil
					}
					msg = fmt.Sprintf("%v: %v", c["reason"], c["message"])
				}
			}
		}
		select {
		case err := <-done:
			return nil, fmt.Errorf("the webhook solver's API server stopped: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the APIService %s is not available after a minute: %s", apiService.GetName(), msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// watchChallenges records every version of the namespace's Challenges
// the API server serves from now on, until the test ends.
func (h *harness) watchChallenges() func() []cmacme.Challenge {
	h.t.Helper()
	wc, err := client.NewWithWatch(restConfig, client.Options{Scheme: operator.Scheme()})
	require.NoError(h.t, err)
	w, err := wc.Watch(h.ctx, &cmacme.ChallengeList{}, client.InNamespace(h.ns))
	require.NoError(h.t, err)
	h.t.Cleanup(w.Stop)
	var (
		mu   sync.Mutex
		seen []cmacme.Challenge
	)
	go func() {
		for ev := range w.ResultChan() {
			if c, ok := ev.Object.(*cmacme.Challenge); ok {
				mu.Lock()
				seen = append(seen, *c)
				mu.Unlock()
			}
		}
	}()
	return func() []cmacme.Challenge {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

// withWebhookDNS points an operator's ACME at Pebble, and its DNS-01
// zone lookups at Pebble's DNS server.
func withWebhookDNS(srv *acmetest.Server) func(*manager.Options, *operator.Options) {
	return func(mo *manager.Options, o *operator.Options) {
		withACME(srv, operator.NewChallengeServer())(mo, o)
		o.ACME.DNS01Resolver = srv.DNS().Addr()
	}
}

// webhookIssuer makes an ACME Issuer on Pebble whose one solver is the
// test's webhook solver with config, and waits until it is Ready.
func (h *harness) webhookIssuer(name string, srv *acmetest.Server, config any) {
	h.t.Helper()
	h.create(&cmapi.Issuer{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{ACME: &cmacme.ACMEIssuer{
		Server: srv.DirectoryURL, Email: "ops@example.com", CABundle: srv.CABundle(),
		PrivateKey: secretKey(name+"-account", ""),
		Solvers: []cmacme.ACMEChallengeSolver{{DNS01: &cmacme.ACMEChallengeSolverDNS01{Webhook: &cmacme.ACMEIssuerDNS01ProviderWebhook{
			GroupName: webhookGroup, SolverName: webhookSolver, Config: &apiextensionsv1.JSON{Raw: mustJSON(config)}}}}},
	}}}})
	h.eventually("the ACME issuer to be Ready", func() bool {
		var iss cmapi.Issuer
		if err := k8s.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: name}, &iss); err != nil {
			return false
		}
		c := condition(iss.Status.Conditions, "Ready")
		return c != nil && c.Status == cmmeta.ConditionTrue
	})
}

// A Certificate for a name and its wildcard, from an ACME Issuer whose
// DNS-01 solver is a webhook solver built with cert-manager's webhook
// library: the operator calls it through the API server's aggregation
// layer with cert-manager's ChallengePayload, the solver writes both TXT
// values at the one record name, Pebble validates them, the certificate
// becomes Ready, and both values are cleaned up.
func TestWebhookSolverIssuesThroughTheAggregationLayer(t *testing.T) {
	s := webhookSolverServer(t)
	srv := pebble(t)
	srv.DNS().AddZone("example.")
	registerTestDNS(t, srv.DNS())
	h := newHarness(t)
	h.start(withWebhookDNS(srv))
	config := map[string]any{"dns": srv.DNS().Addr(), "note": "passed as it is"}
	h.webhookIssuer("le", srv, config)
	seen := h.watchChallenges()
	h.create(h.certificate("web", "le", func(s *cmapi.CertificateSpec) { s.DNSNames = []string{"web.example", "*.web.example"} }))

	t.Cleanup(func() {
		if t.Failed() {
			for _, c := range h.challenges() {
				t.Logf("challenge %s: presented=%v state=%s reason=%q", c.Spec.DNSName, c.Status.Presented, c.Status.State, c.Status.Reason)
			}
			for _, r := range h.requests() {
				t.Logf("request %s: %+v", r.Name, r.Status.Conditions)
			}
			t.Logf("solver requests: %+v", s.requestsFor(h.ns))
		}
	})
	h.waitReady("web", 1)
	leaf := h.leafOf("web-tls")
	assert.ElementsMatch(t, []string{"web.example", "*.web.example"}, leaf.DNSNames)

	// While the order was open, its Challenges showed the webhook solver.
	presented := 0
	for _, c := range seen() {
		require.NotNil(t, c.Spec.Solver.DNS01)
		require.NotNil(t, c.Spec.Solver.DNS01.Webhook, "the Challenge shows the webhook solver")
		assert.Equal(t, webhookGroup, c.Spec.Solver.DNS01.Webhook.GroupName)
		assert.Equal(t, webhookSolver, c.Spec.Solver.DNS01.Webhook.SolverName)
		assert.JSONEq(t, string(mustJSON(config)), string(c.Spec.Solver.DNS01.Webhook.Config.Raw))
		if c.Status.Presented {
			presented++
		}
	}
	assert.Positive(t, presented, "the Challenges were presented")

	name := acmeclient.DNS01Name("web.example")
	h.eventually("the TXT values to be cleaned up", func() bool { return len(srv.DNS().TXT(name)) == 0 })
	reqs := s.requestsFor(h.ns)
	var presents, cleanUps []whapi.ChallengeRequest
	for _, r := range reqs {
		switch r.Action {
		case whapi.ChallengeActionPresent:
			presents = append(presents, r)
		case whapi.ChallengeActionCleanUp:
			cleanUps = append(cleanUps, r)
		default:
			t.Errorf("an action cert-manager does not send: %q", r.Action)
		}
	}
	t.Logf("the solver's calls: %d Present, %d CleanUp", len(presents), len(cleanUps))
	require.GreaterOrEqual(t, len(presents), 2, "a Present per challenge: %+v", reqs)
	require.GreaterOrEqual(t, len(cleanUps), 2, "a CleanUp per challenge: %+v", reqs)
	keys := map[string]bool{}
	for _, r := range presents {
		assert.Equal(t, "dns-01", r.Type)
		assert.Equal(t, "web.example", r.DNSName, "the name validated, a wildcard's without *. (as cert-manager's Challenge spec.dnsName)")
		assert.Equal(t, name, r.ResolvedFQDN)
		assert.Equal(t, "_acme-challenge.web.example.", r.ResolvedFQDN)
		assert.Equal(t, "example.", r.ResolvedZone, "the zone, found by SOA")
		assert.Equal(t, h.ns, r.ResourceNamespace, "an Issuer's namespace")
		assert.False(t, r.AllowAmbientCredentials, "not for an Issuer, as cert-manager's default")
		assert.NotEmpty(t, r.UID)
		require.NotNil(t, r.Config)
		assert.JSONEq(t, string(mustJSON(config)), string(r.Config.Raw), "the solver's config, as it is")
		assert.Len(t, r.Key, 43, "the TXT value: base64url of a SHA-256 digest")
		keys[r.Key] = true
	}
	assert.Len(t, keys, 2, "two values at one record name")
	cleaned := map[string]bool{}
	for _, r := range cleanUps {
		assert.True(t, keys[r.Key], "CleanUp takes away a value that was presented")
		cleaned[r.Key] = true
	}
	assert.Equal(t, keys, cleaned, "every value presented is cleaned up")
	assert.Empty(t, srv.DNS().TXT(name), "both values are gone")
}

// A webhook solver that fails says why in its answer's status message:
// that message becomes the Challenge's reason, and the certificate is
// not issued.
func TestWebhookSolverErrorIsTheChallengeReason(t *testing.T) {
	s := webhookSolverServer(t)
	srv := pebble(t)
	srv.DNS().AddZone("example.")
	h := newHarness(t)
	h.start(withWebhookDNS(srv))
	const msg = "the test solver refuses: zone example. is locked"
	h.webhookIssuer("le", srv, map[string]any{"fail": msg})
	h.create(h.certificate("web", "le"))
	var reason string
	h.eventually("the challenge's reason to carry the solver's message", func() bool {
		for _, c := range h.challenges() {
			if strings.Contains(c.Status.Reason, msg) {
				reason = c.Status.Reason
				return !c.Status.Presented
			}
		}
		return false
	})
	t.Logf("the challenge's reason: %s", reason)
	assert.Contains(t, reason, webhookGroup+"/"+webhookSolver, "the reason names the solver")
	assert.Contains(t, reason, "Present", "and the action")
	assert.NotEmpty(t, s.requestsFor(h.ns), "the solver was called")
	assert.False(t, h.isReady("web", 1))
}

// Settings of a webhook solver that cannot be called make the Issuer not
// Ready, naming the field and the value.
func TestWebhookSettingsRefusedByTheIssuer(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.create(&cmapi.Issuer{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{ACME: &cmacme.ACMEIssuer{
		Server: "https://acme.example/directory", PrivateKey: secretKey("bad-account", ""),
		Solvers: []cmacme.ACMEChallengeSolver{{DNS01: &cmacme.ACMEChallengeSolverDNS01{Webhook: &cmacme.ACMEIssuerDNS01ProviderWebhook{
			GroupName: "Acme_Example", SolverName: "x", Config: &apiextensionsv1.JSON{Raw: []byte(`["a"]`)}}}}},
	}}}})
	var msg string
	h.eventually("the Issuer to say what is wrong", func() bool {
		var iss cmapi.Issuer
		if err := k8s.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "bad"}, &iss); err != nil {
			return false
		}
		c := condition(iss.Status.Conditions, "Ready")
		if c == nil || c.Status != cmmeta.ConditionFalse {
			return false
		}
		msg = c.Message
		return true
	})
	assert.Contains(t, msg, `spec.acme.solvers[0].dns01.webhook.groupName "Acme_Example": not an API group name`)
	assert.Contains(t, msg, `spec.acme.solvers[0].dns01.webhook.config ["a"]: want a JSON object, not an array`)
}

// The sample RBAC (config/samples/dns01-webhook-rbac.yaml) is what the
// operator needs to call a webhook solver: without it the API server
// refuses the call, and the error names the verb, resource and group;
// with its ClusterRole bound, the same call reaches the solver.
func TestWebhookRBACSample(t *testing.T) {
	s := webhookSolverServer(t)
	h := newHarness(t)
	d, err := acmetest.StartDNS()
	require.NoError(t, err)
	t.Cleanup(d.Close)
	d.AddZone("example.")
	registerTestDNS(t, d)
	userName := h.ns + "-operator"
	user, err := env.AddUser(envtest.User{Name: userName}, restConfig)
	require.NoError(t, err)
	w := operator.WebhookSolver{Config: user.Config(), GroupName: webhookGroup, SolverName: webhookSolver,
		SolverConfig: mustJSON(solverConfig{DNS: d.Addr()}), ResourceNamespace: h.ns, Zone: "example."}
	p := acmeclient.Presentation{Type: challenge.TypeDNS01, Identifier: "rbac.example", Token: "tok", KeyAuthorization: "tok.thumb"}
	err = w.Present(h.ctx, p)
	require.Error(t, err)
	t.Logf("without the grant: %v", err)
	assert.Contains(t, err.Error(), fmt.Sprintf(`cannot create resource %q in API group %q`, webhookSolver, webhookGroup))
	assert.Empty(t, s.requestsFor(h.ns), "the API server refused it: the solver saw nothing")

	b, err := os.ReadFile(filepath.Join("..", "config", "samples", "dns01-webhook-rbac.yaml"))
	require.NoError(t, err)
	docs := strings.Split(string(b), "\n---\n")
	require.Len(t, docs, 2)
	var role rbacv1.ClusterRole
	var binding rbacv1.ClusterRoleBinding
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[0]), &role))
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[1]), &binding))
	require.Equal(t, []string{"acme.example.com"}, role.Rules[0].APIGroups, "the sample's group to edit")
	assert.Equal(t, role.Name, binding.RoleRef.Name)
	assert.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "certlife-operator", Namespace: "certlife"}}, binding.Subjects, "the operator's service account")
	// The sample, for this test's group and user.
	role.Name += "-" + h.ns
	role.Rules[0].APIGroups = []string{webhookGroup}
	binding.Name, binding.RoleRef.Name = role.Name, role.Name
	binding.Subjects = []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: userName}}
	require.NoError(t, k8s.Create(h.ctx, &role))
	require.NoError(t, k8s.Create(h.ctx, &binding))
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), &binding)
		_ = k8s.Delete(context.Background(), &role)
	})
	h.eventually("the call to be allowed", func() bool { return w.Present(h.ctx, p) == nil })
	assert.Equal(t, []string{p.DNS01Value()}, d.TXT(p.DNS01Name()), "the solver wrote the value")
	require.NoError(t, w.CleanUp(h.ctx, p))
	assert.Empty(t, d.TXT(p.DNS01Name()), "and took it away")
}

// For a ClusterIssuer the solver is told the cluster resource namespace
// and that it may use ambient credentials, as cert-manager tells it by
// default.
func TestWebhookSolverForAClusterIssuer(t *testing.T) {
	s := webhookSolverServer(t)
	srv := pebble(t)
	srv.DNS().AddZone("example.")
	registerTestDNS(t, srv.DNS())
	h := newHarness(t) // the operator's cluster resource namespace is the test's
	h.start(withWebhookDNS(srv))
	name := h.ns + "-le"
	require.NoError(t, k8s.Create(h.ctx, &cmapi.ClusterIssuer{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{ACME: &cmacme.ACMEIssuer{
		Server: srv.DirectoryURL, CABundle: srv.CABundle(), PrivateKey: secretKey("le-account", ""),
		Solvers: []cmacme.ACMEChallengeSolver{{DNS01: &cmacme.ACMEChallengeSolverDNS01{Webhook: &cmacme.ACMEIssuerDNS01ProviderWebhook{
			GroupName: webhookGroup, SolverName: webhookSolver, Config: &apiextensionsv1.JSON{Raw: mustJSON(solverConfig{DNS: srv.DNS().Addr()})}}}}},
	}}}}))
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), &cmapi.ClusterIssuer{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
	h.create(h.certificate("web", name, func(s *cmapi.CertificateSpec) { s.IssuerRef.Kind = cmapi.ClusterIssuerKind }))
	h.waitReady("web", 1)
	reqs := s.requestsFor(h.ns)
	require.NotEmpty(t, reqs)
	for _, r := range reqs {
		assert.True(t, r.AllowAmbientCredentials, "%s for a ClusterIssuer", r.Action)
		assert.Equal(t, h.ns, r.ResourceNamespace, "the cluster resource namespace")
	}
}
