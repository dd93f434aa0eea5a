package plugin

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/keys"
)

func (e *env) get(name string) *cmapi.Certificate {
	e.t.Helper()
	var c cmapi.Certificate
	if err := e.c.Get(e.ctx, types.NamespacedName{Namespace: e.ns, Name: name}, &c); err != nil {
		e.t.Fatal(err)
	}
	return &c
}

// TestRenew: renew sets Issuing=True as cmctl renew does, the
// controller's decision honours it (an issuance starts though renewal is
// not due), and a certificate already issuing is refused, unchanged.
func TestRenew(t *testing.T) {
	e := newEnv(t, "renew")
	e.newCertificate("web", nil)
	e.issued("web", t0.Add(-30*day))
	before := e.get("web")

	out, errOut, code := e.run(t0, "renew", "web")
	if code != 0 {
		t.Fatalf("renew: exit %d: %s", code, errOut)
	}
	if want := "Manually triggered issuance of certificate renew/web\n"; out != want {
		t.Errorf("renew said %q, want %q", out, want)
	}
	after := e.get("web")
	c := findCondition(after, cmapi.CertificateConditionIssuing)
	if c == nil || c.Status != cmmeta.ConditionTrue || c.Reason != "ManuallyTriggered" || c.Message != "Certificate re-issuance manually triggered" ||
		c.ObservedGeneration != after.Generation || c.LastTransitionTime == nil || !c.LastTransitionTime.Time.Equal(t0) {
		t.Fatalf("Issuing condition after renew: %+v", c)
	}
	if r := findCondition(after, cmapi.CertificateConditionReady); r == nil || r.Status != cmmeta.ConditionTrue {
		t.Errorf("renew changed Ready: %+v", r)
	}
	if after.Spec.SecretName != before.Spec.SecretName || after.Generation != before.Generation {
		t.Errorf("renew changed the spec")
	}
	// The controller's decision takes it as a manual trigger: the
	// issuance starts though renewal is due only in 30 days.
	g, err := gather(e.ctx, e.c, e.ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	res := g.decide(t0, DefaultConfig())
	if res.IssuanceReason != "ManuallyTriggered" || res.Steps[0].Reason != certificate.ReasonIssuingInProgress {
		t.Errorf("the decision after renew: issuance %q, trigger %s: %s", res.IssuanceReason, res.Steps[0].Reason, res.Steps[0].Message)
	}
	status, _, _ := e.run(t0, "status", "web")
	if !strings.Contains(status, "An issuance runs (ManuallyTriggered).") {
		t.Errorf("status after renew does not say the issuance runs:\n%s", status)
	}

	// Again: refused, nothing written.
	rv := after.ResourceVersion
	out, errOut, code = e.run(t0.Add(time.Minute), "renew", "web")
	if code != 1 || out != "" || !strings.Contains(errOut, "certificate renew/web is already issuing (ManuallyTriggered) since 2026-03-02T12:00:00Z (1m ago)") {
		t.Errorf("second renew: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if got := e.get("web").ResourceVersion; got != rv {
		t.Errorf("a refused renew wrote the certificate: version %s, was %s", got, rv)
	}
}

// TestRenewAll: --all renews every certificate of the namespace but
// those already issuing, which it names; -l narrows it; names with --all
// are a usage error.
func TestRenewAll(t *testing.T) {
	e := newEnv(t, "renew-all")
	for _, n := range []string{"a", "b", "c"} {
		e.newCertificate(n, func(c *cmapi.Certificate) { c.Labels = map[string]string{"app": n} })
		e.issued(n, t0.Add(-30*day))
	}
	out, errOut, code := e.run(t0, "renew", "-l", "app=b")
	if code != 0 || out != "Manually triggered issuance of certificate renew-all/b\n" {
		t.Fatalf("renew -l app=b: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, errOut, code = e.run(t0, "renew", "--all")
	want := "Manually triggered issuance of certificate renew-all/a\n" +
		"Skipped renew-all/b: certificate renew-all/b is already issuing (ManuallyTriggered) since 2026-03-02T12:00:00Z (now): already issuing\n" +
		"Manually triggered issuance of certificate renew-all/c\n"
	if code != 0 || out != want {
		t.Errorf("renew --all: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, errOut, out, want)
	}
	for _, n := range []string{"a", "b", "c"} {
		if c := findCondition(e.get(n), cmapi.CertificateConditionIssuing); c == nil || c.Status != cmmeta.ConditionTrue {
			t.Errorf("%s is not issuing after renew --all", n)
		}
	}
	if _, errOut, code := e.run(t0, "renew", "--all", "a"); code != 2 || !strings.Contains(errOut, "not both") {
		t.Errorf("renew --all a: exit %d, stderr %q", code, errOut)
	}
	if _, errOut, code := e.run(t0, "renew"); code != 2 || !strings.Contains(errOut, "name one or more certificates") {
		t.Errorf("renew with nothing: exit %d, stderr %q", code, errOut)
	}
	if _, errOut, code := e.run(t0, "renew", "missing"); code != 1 || !strings.Contains(errOut, "certificate renew-all/missing does not exist") {
		t.Errorf("renew missing: exit %d, stderr %q", code, errOut)
	}
}

// TestInspectSecret: the chain, the CA, the key matching the leaf, the
// annotations, and the owning Certificate's verdict; then the same
// Secret with another key in tls.key (mismatch, and the decision says
// InvalidKeyPair), and one whose leaf names other hosts than the
// Certificate asks for.
func TestInspectSecret(t *testing.T) {
	e := newEnv(t, "inspect")
	e.newCertificate("web", nil)
	e.issued("web", t0.Add(-30*day))

	out, errOut, code := e.run(t0, "inspect", "secret", "web-tls")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, w := range []string{"tls.crt [0] leaf", "tls.crt [1]", "Signed by [1]:  yes", "CN=certlife test CA", "SHA-256:",
		"matches the certificate (key not shown)", "ca.crt [0]", "cert-manager.io/issuer-name:", "yes: the secret holds what the certificate asks for",
		"digital signature, server auth", "ECDSA P-256", "Ed25519"} {
		if !strings.Contains(out, w) {
			t.Errorf("inspect does not say %q", w)
		}
	}
	noKeyMaterial(t, e, out)
	golden(t, "inspect-match", []byte(out))

	e.replaceKey("web-tls", "another")
	out, _, _ = e.run(t0, "inspect", "secret", "web-tls")
	for _, w := range []string{"MISMATCH: the private key is not the certificate's", "no: InvalidKeyPair"} {
		if !strings.Contains(out, w) {
			t.Errorf("inspect after the key changed does not say %q:\n%s", w, out)
		}
	}
	noKeyMaterial(t, e, out)

	// A leaf for other names, with its own key: the key matches, the
	// Certificate does not get what it asks.
	var s corev1.Secret
	if err := e.c.Get(e.ctx, types.NamespacedName{Namespace: e.ns, Name: "web-tls"}, &s); err != nil {
		t.Fatal(err)
	}
	k := testKey(t, "other")
	s.Data[keys.SecretCertificate] = signLeaf(t, 77, k.Public(), "", []string{"other.example.com"}, t0.Add(-day), t0.Add(60*day))
	pemKey, err := keys.EncodePrivateKey(k, keys.EncodingPKCS8)
	if err != nil {
		t.Fatal(err)
	}
	s.Data[keys.SecretPrivateKey] = pemKey
	delete(s.Data, "ca.crt")
	if err := e.c.Update(e.ctx, &s); err != nil {
		t.Fatal(err)
	}
	out, _, _ = e.run(t0, "inspect", "secret", "web-tls")
	for _, w := range []string{"DNS other.example.com", "matches the certificate", "no: "} {
		if !strings.Contains(out, w) {
			t.Errorf("inspect of a leaf for other names does not say %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "ca.crt [") {
		t.Errorf("inspect shows a ca.crt the secret no longer has")
	}

	if _, errOut, code := e.run(t0, "inspect", "secret", "nope"); code != 1 || !strings.Contains(errOut, "secret inspect/nope does not exist") {
		t.Errorf("inspect of a missing secret: exit %d, %q", code, errOut)
	}
}

// TestKubeconfig runs the command line as kubectl runs a plugin, with a
// kubeconfig file (--kubeconfig, -n), and KUBECONFIG with --context.
func TestKubeconfig(t *testing.T) {
	e := newEnv(t, "kubeconfig")
	e.newCertificate("web", nil)
	e.issued("web", t0.Add(-30*day))

	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["envtest"] = &clientcmdapi.Cluster{Server: restConfig.Host, CertificateAuthorityData: restConfig.CAData}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: restConfig.CertData, ClientKeyData: restConfig.KeyData, Token: restConfig.BearerToken}
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin", Namespace: "kubeconfig"}
	cfg.Contexts["elsewhere"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin", Namespace: "default"}
	cfg.CurrentContext = "elsewhere"
	path := filepath.Join(t.TempDir(), "config")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, string, int) {
		var out, errOut bytes.Buffer
		c := &cli{stdout: &out, stderr: &errOut, now: func() time.Time { return t0 }, cfg: DefaultConfig()}
		code := c.run(e.ctx, args)
		return out.String(), errOut.String(), code
	}
	out, errOut, code := run("--kubeconfig", path, "-n", "kubeconfig", "status", "web")
	if code != 0 || !strings.Contains(out, "Certificate kubeconfig/web") {
		t.Fatalf("status with --kubeconfig and -n: exit %d, %s\n%s", code, errOut, out)
	}
	t.Setenv("KUBECONFIG", path)
	if out, errOut, code := run("status", "--context", "test", "web"); code != 0 || !strings.Contains(out, "Certificate kubeconfig/web") {
		t.Errorf("status with KUBECONFIG and --context: exit %d, %s", code, errOut)
	}
	if _, errOut, code := run("status", "web"); code != 1 || !strings.Contains(errOut, "certificate default/web does not exist") {
		t.Errorf("status in the current context's namespace: exit %d, %q", code, errOut)
	}
	if _, errOut, code := run("frobnicate"); code != 2 || !strings.Contains(errOut, `unknown command "frobnicate"`) {
		t.Errorf("an unknown command: exit %d, %q", code, errOut)
	}
	if _, _, code := run("--help"); code != 0 {
		t.Errorf("--help: exit %d", code)
	}
}
