package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/yaml"

	"github.com/certlife/certlife/certificate/localca"
	"github.com/certlife/certlife/keys"

	"github.com/certlife/certlife/examples/kubernetes/operator"
)

// The install manifests are checked on a real kube-apiserver (envtest,
// RBAC on) started with no CRDs: the manifests install them.
var (
	envOnce    sync.Once
	env        *envtest.Environment
	restConfig *rest.Config
	envErr     error
)

func apiServer(t *testing.T) *rest.Config {
	t.Helper()
	envOnce.Do(func() {
		if os.Getenv("KUBEBUILDER_ASSETS") == "" {
			envErr = errors.New("KUBEBUILDER_ASSETS is not set: this test runs against a real API server. From the repository root run\n\texport KUBEBUILDER_ASSETS=\"$(.ci/k8s-assets)\"")
			return
		}
		env = &envtest.Environment{}
		restConfig, envErr = env.Start()
	})
	if envErr != nil {
		t.Fatal(envErr)
	}
	return restConfig
}

func TestMain(m *testing.M) {
	code := m.Run()
	if env != nil {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping envtest:", err)
		}
	}
	os.Exit(code)
}

// kustomize reads the objects of a kustomization directory as kubectl
// apply -k would, for the kustomizations of deploy/ and config/: they
// list resources (files, or directories with a kustomization of their
// own) and nothing else, and the test refuses any other field rather than
// read it wrongly.
func kustomize(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	require.NoError(t, err)
	var k map[string]any
	require.NoError(t, yaml.Unmarshal(b, &k))
	for field := range k {
		require.Contains(t, []string{"apiVersion", "kind", "resources"}, field, "%s/kustomization.yaml: this test reads only resources; teach it %s", dir, field)
	}
	var out []*unstructured.Unstructured
	for _, r := range k["resources"].([]any) {
		path := filepath.Join(dir, r.(string))
		fi, err := os.Stat(path)
		require.NoError(t, err, "%s/kustomization.yaml: resource %s", dir, r)
		if fi.IsDir() {
			out = append(out, kustomize(t, path)...)
			continue
		}
		f, err := os.Open(path)
		require.NoError(t, err)
		dec := k8syaml.NewYAMLOrJSONDecoder(f, 4096)
		for {
			var obj map[string]any
			err := dec.Decode(&obj)
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err, path)
			if len(obj) == 0 {
				continue
			}
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
		require.NoError(t, f.Close())
	}
	return out
}

// applyOrder is the order objects are applied in, as kubectl apply -k
// sorts them: namespaces and CRDs before what lives in them.
var applyOrder = []string{"Namespace", "CustomResourceDefinition", "ServiceAccount", "ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding", "Service", "Deployment"}

// apply applies every object server-side, refusing unknown fields, and
// waits for the CRDs among them to be established.
func apply(t *testing.T, cfg *rest.Config, objs []*unstructured.Unstructured) {
	t.Helper()
	c, err := client.New(cfg, client.Options{})
	require.NoError(t, err)
	c = client.WithFieldValidation(c, metav1.FieldValidationStrict)
	objs = slices.Clone(objs)
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int {
		return slices.Index(applyOrder, a.GetKind()) - slices.Index(applyOrder, b.GetKind())
	})
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, obj := range objs {
		require.Contains(t, applyOrder, obj.GetKind(), "a kind the test does not order")
		err := c.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(obj.DeepCopy()), client.FieldOwner("certlife-install-test"), client.ForceOwnership)
		require.NoError(t, err, "applying %s %s/%s", obj.GetKind(), obj.GetNamespace(), obj.GetName())
		if obj.GetKind() == "CustomResourceDefinition" {
			var crd apiextensionsv1.CustomResourceDefinition
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &crd))
			crds = append(crds, &crd)
		}
	}
	require.NoError(t, envtest.WaitForCRDs(cfg, crds, envtest.CRDInstallOptions{MaxTime: time.Minute, PollInterval: 100 * time.Millisecond}))
}

func only[T any](t *testing.T, objs []*unstructured.Unstructured, kind, name string) *T {
	t.Helper()
	var found []*T
	for _, o := range objs {
		if o.GetKind() == kind && (name == "" || o.GetName() == name) {
			v := new(T)
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, v, true), "%s %s", kind, o.GetName())
			found = append(found, v)
		}
	}
	require.Len(t, found, 1, "one %s %s", kind, name)
	return found[0]
}

func all[T any](t *testing.T, objs []*unstructured.Unstructured, kind string) []*T {
	t.Helper()
	var out []*T
	for _, o := range objs {
		if o.GetKind() == kind {
			v := new(T)
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, v, true), "%s %s", kind, o.GetName())
			out = append(out, v)
		}
	}
	return out
}

// parseArgs parses a container's args with the command's own flags.
func parseArgs(t *testing.T, args []string) *flags {
	t.Helper()
	fs := flag.NewFlagSet("certlife-operator", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := bindFlags(fs)
	require.NoError(t, fs.Parse(args), "the Deployment's args are flags main.go defines")
	require.Empty(t, fs.Args(), "the Deployment's args are all flags")
	return f
}

// port is the port of a bind address such as ":8081".
func port(t *testing.T, addr string) int32 {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	require.NoError(t, err, addr)
	n, err := strconv.Atoi(p)
	require.NoError(t, err, addr)
	return int32(n)
}

// containerPort is the number of a probe's or a Service's target port.
func containerPort(t *testing.T, c *corev1.Container, p intstr.IntOrString) int32 {
	t.Helper()
	if p.Type == intstr.Int {
		return p.IntVal
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort
		}
	}
	t.Fatalf("container %s has no port named %s", c.Name, p.StrVal)
	return 0
}

// freeAddr is a loopback address no one listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// Both installs apply to a real API server as they are, and their
// Deployments run the operator as main.go does: every arg is a flag it
// defines, the probes ask its /healthz and /readyz on the port of
// -health-probe-bind-address, the metrics Service reaches
// -metrics-bind-address, and the pod runs as the restricted Pod Security
// Standard asks.
func TestInstallManifests(t *testing.T) {
	cfg := apiServer(t)
	for _, dir := range []string{"cluster", "namespaced"} {
		t.Run(dir, func(t *testing.T) {
			objs := kustomize(t, filepath.Join("deploy", dir))
			kinds := map[string]int{}
			for _, o := range objs {
				kinds[o.GetKind()]++
			}
			assert.Equal(t, 6, kinds["CustomResourceDefinition"], "cert-manager's six CRDs")
			for _, k := range []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment"} {
				assert.Equal(t, 1, kinds[k], k)
			}
			assert.Equal(t, 2, kinds["Service"], "the metrics Service and the HTTP-01 challenge Service")
			apply(t, cfg, objs)

			dep := only[appsv1.Deployment](t, objs, "Deployment", "certlife-operator")
			require.Len(t, dep.Spec.Template.Spec.Containers, 1)
			c := &dep.Spec.Template.Spec.Containers[0]
			f := parseArgs(t, c.Args)
			assert.Equal(t, "certlife-operator", dep.Spec.Template.Spec.ServiceAccountName)

			// Probes and ports against the flags.
			require.NotNil(t, c.LivenessProbe)
			require.NotNil(t, c.ReadinessProbe)
			require.NotNil(t, c.LivenessProbe.HTTPGet)
			require.NotNil(t, c.ReadinessProbe.HTTPGet)
			assert.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
			assert.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
			assert.Equal(t, port(t, f.probeAddr), containerPort(t, c, c.LivenessProbe.HTTPGet.Port), "liveness probe port is -health-probe-bind-address's")
			assert.Equal(t, port(t, f.probeAddr), containerPort(t, c, c.ReadinessProbe.HTTPGet.Port), "readiness probe port is -health-probe-bind-address's")
			assert.Equal(t, port(t, f.http01Addr), containerPort(t, c, intstr.FromString("http01")), "the http01 port is -http01-address's")
			svc := only[corev1.Service](t, objs, "Service", "certlife-operator-metrics")
			require.Len(t, svc.Spec.Ports, 1)
			assert.Equal(t, port(t, f.metricsAddr), containerPort(t, c, svc.Spec.Ports[0].TargetPort), "the metrics Service reaches -metrics-bind-address")
			assert.Equal(t, dep.Spec.Template.Labels, svc.Spec.Selector, "the metrics Service selects the operator's pods")
			// The HTTP-01 challenge Service: -http01-service names it, it
			// selects the operator's pods and reaches -http01-address.
			h01, err := f.http01Service()
			require.NoError(t, err)
			svc = only[corev1.Service](t, objs, "Service", h01.Name)
			assert.Equal(t, dep.Namespace, h01.Namespace, "-http01-service is in the operator's namespace")
			assert.Equal(t, dep.Spec.Template.Labels, svc.Spec.Selector, "the HTTP-01 Service selects the operator's pods")
			require.Len(t, svc.Spec.Ports, 1)
			assert.Equal(t, port(t, f.http01Addr), containerPort(t, c, svc.Spec.Ports[0].TargetPort), "the HTTP-01 Service reaches -http01-address")

			// Resources and security.
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				req, lim := c.Resources.Requests[r], c.Resources.Limits[r]
				assert.False(t, req.IsZero(), "a %s request", r)
				assert.False(t, lim.IsZero(), "a %s limit", r)
				assert.LessOrEqual(t, req.Cmp(lim), 0, "the %s request is within the limit", r)
			}
			pod, sc := dep.Spec.Template.Spec.SecurityContext, c.SecurityContext
			require.NotNil(t, pod)
			require.NotNil(t, sc)
			assert.Equal(t, new(true), pod.RunAsNonRoot)
			assert.Equal(t, new(false), sc.AllowPrivilegeEscalation)
			assert.Equal(t, new(true), sc.ReadOnlyRootFilesystem)
			require.NotNil(t, sc.Capabilities)
			assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
			require.NotNil(t, pod.SeccompProfile)
			assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, pod.SeccompProfile.Type)

			// The Deployment's flags run the operator, and the probes'
			// paths answer (the ports are the test's own: the flags'
			// are checked above).
			f.probeAddr, f.metricsAddr, f.http01Addr = freeAddr(t), "0", ""
			f.leaderNS = "default"
			mgr, err := newManager(cfg, f, prometheus.NewRegistry(), skipNameValidation)
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- mgr.Start(ctx) }()
			defer func() {
				cancel()
				stopped(t, done)
			}()
			for _, path := range []string{c.LivenessProbe.HTTPGet.Path, c.ReadinessProbe.HTTPGet.Path} {
				require.Eventually(t, func() bool {
					resp, err := http.Get("http://" + f.probeAddr + path)
					if err != nil {
						return false
					}
					_ = resp.Body.Close()
					return resp.StatusCode == http.StatusOK
				}, 30*time.Second, 50*time.Millisecond, "GET %s answers 200", path)
			}
		})
	}
}

// stopped waits for a stopped manager's Start to return, for a while.
func stopped(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		assert.NoError(t, err, "the manager")
	case <-time.After(30 * time.Second):
		t.Error("the manager did not stop within 30s of its context's end")
	}
}

func skipNameValidation(mo *manager.Options) {
	mo.Controller = config.Controller{SkipNameValidation: new(true)}
}

// rule is one verb on one resource, as RBAC grants it.
type rule struct{ group, resource, name, verb string }

func rules(rs []rbacv1.PolicyRule) map[rule]bool {
	out := map[rule]bool{}
	for _, r := range rs {
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, n := range names {
					for _, v := range r.Verbs {
						out[rule{g, res, n, v}] = true
					}
				}
			}
		}
	}
	return out
}

// clusterScoped are the resources the operator is granted that no Role
// can grant: ClusterIssuers, and signers, which cert-manager's webhook
// checks with a SubjectAccessReview without a namespace.
var clusterScoped = map[string]bool{"clusterissuers": true, "clusterissuers/status": true, "signers": true}

// The namespaced install grants exactly what the generated ClusterRole
// does, split by scope: the namespaced resources in a Role per watched
// namespace (all alike), the cluster-scoped ones in its ClusterRole, and
// its leader election Role is the generated one. So a marker added to
// the operator fails here until the namespaced install has it too.
func TestNamespacedRBACIsTheGeneratedRoleSplitByScope(t *testing.T) {
	generated := kustomize(t, filepath.Join("config", "rbac"))
	full := rules(only[rbacv1.ClusterRole](t, generated, "ClusterRole", "certlife-operator").Rules)
	election := only[rbacv1.Role](t, generated, "Role", "certlife-operator")

	objs := kustomize(t, filepath.Join("deploy", "namespaced"))
	cluster := rules(only[rbacv1.ClusterRole](t, objs, "ClusterRole", "certlife-operator-cluster").Rules)
	roles := all[rbacv1.Role](t, objs, "Role")
	var watched []*rbacv1.Role
	for _, r := range roles {
		if r.Name == election.Name && r.Namespace == election.Namespace {
			assert.Equal(t, election.Rules, r.Rules, "the leader election Role is config/rbac's")
			continue
		}
		watched = append(watched, r)
	}
	require.NotEmpty(t, watched)
	ns := rules(watched[0].Rules)
	for _, r := range watched[1:] {
		assert.Equal(t, ns, rules(r.Rules), "Role %s/%s is the same as %s/%s", r.Namespace, r.Name, watched[0].Namespace, watched[0].Name)
	}

	for r := range cluster {
		assert.True(t, clusterScoped[r.resource], "the ClusterRole grants only what is cluster-wide, not %v", r)
	}
	for r := range ns {
		assert.False(t, clusterScoped[r.resource], "a Role cannot grant %v", r)
	}
	for r := range full {
		assert.True(t, cluster[r] || ns[r], "the namespaced install grants %v, as the generated ClusterRole does", r)
	}
	for r := range cluster {
		assert.True(t, full[r], "the namespaced ClusterRole grants %v, which the generated one does not", r)
	}
	for r := range ns {
		assert.True(t, full[r], "the namespaced Roles grant %v, which the generated ClusterRole does not", r)
	}
	for r := range cluster {
		assert.NotEqual(t, "secrets", r.resource, "no Secret access cluster-wide")
	}

	// Every watched namespace of the Deployment, and the cluster resource
	// namespace, has its Role and a binding to the ServiceAccount.
	dep := only[appsv1.Deployment](t, objs, "Deployment", "certlife-operator")
	f := parseArgs(t, dep.Spec.Template.Spec.Containers[0].Args)
	namespaces, err := f.watched()
	require.NoError(t, err)
	require.NotEmpty(t, namespaces, "the namespaced Deployment sets -namespaces")
	bindings := all[rbacv1.RoleBinding](t, objs, "RoleBinding")
	for n := range namespaces {
		i := slices.IndexFunc(watched, func(r *rbacv1.Role) bool { return r.Namespace == n })
		require.GreaterOrEqual(t, i, 0, "a Role in watched namespace %s", n)
		assert.True(t, slices.ContainsFunc(bindings, func(b *rbacv1.RoleBinding) bool {
			return b.Namespace == n && b.RoleRef.Kind == "Role" && b.RoleRef.Name == watched[i].Name &&
				slices.Contains(b.Subjects, rbacv1.Subject{Kind: "ServiceAccount", Name: dep.Spec.Template.Spec.ServiceAccountName, Namespace: dep.Namespace})
		}), "the Role in %s is bound to the operator's ServiceAccount", n)
	}
	// And the two Deployments differ only by -namespaces.
	clusterDep := only[appsv1.Deployment](t, kustomize(t, filepath.Join("deploy", "cluster")), "Deployment", "certlife-operator")
	strip := func(d *appsv1.Deployment) *appsv1.Deployment {
		d = d.DeepCopy()
		c := &d.Spec.Template.Spec.Containers[0]
		c.Args = slices.DeleteFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--namespaces=") })
		return d
	}
	assert.Equal(t, strip(clusterDep), strip(dep), "the namespaced Deployment is the cluster one with -namespaces")
}

// The flag's namespaces, with the cluster resource namespace added; a
// name that is not a namespace's is refused, naming the flag and value.
func TestNamespacesFlag(t *testing.T) {
	tests := map[string]struct {
		namespaces, clusterNS string
		want                  []string
		err                   string
	}{
		"no namespaces watches every namespace":                    {namespaces: "", clusterNS: "certlife"},
		"the cluster resource namespace is added":                  {namespaces: "a,b", clusterNS: "certlife", want: []string{"a", "b", "certlife"}},
		"a cluster resource namespace among them is there once":    {namespaces: "a, certlife ", clusterNS: "certlife", want: []string{"a", "certlife"}},
		"a name that is not a namespace's is refused":              {namespaces: "a,B_c", clusterNS: "certlife", err: `-namespaces: "B_c" is not a namespace's name`},
		"commas alone name no namespace":                           {namespaces: ",,", clusterNS: "certlife", err: `-namespaces: ",," names no namespace`},
		"an empty cluster resource namespace adds nothing":         {namespaces: "a", clusterNS: "", want: []string{"a"}},
		"a wildcard is refused: every namespace is the flag unset": {namespaces: "*", clusterNS: "certlife", err: `-namespaces: "*" is not a namespace's name`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := &flags{namespaces: tc.namespaces, clusterNS: tc.clusterNS}
			got, err := f.watched()
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			var names []string
			for n := range got {
				names = append(names, n)
			}
			slices.Sort(names)
			assert.Equal(t, tc.want, names)
		})
	}
}

func TestDisabledIssuerTypesFlag(t *testing.T) {
	tests := map[string]struct {
		args []string
		want []string
	}{
		"unset: every type served":       {nil, nil},
		"a list, spaces and empties cut": {[]string{"-disabled-issuer-types", " ca, ,acme "}, []string{"ca", "acme"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			fs := flag.NewFlagSet("certlife-operator", flag.ContinueOnError)
			f := bindFlags(fs)
			require.NoError(t, fs.Parse(tc.args))
			assert.Equal(t, tc.want, f.disabledIssuerTypes())
		})
	}
}

func TestDNS01RecursiveNameserversFlag(t *testing.T) {
	tests := map[string]struct {
		arg, want, err string
	}{
		"unset: /etc/resolv.conf":     {"", "", ""},
		"one server":                  {" 10.0.0.10:53 ", "10.0.0.10:53", ""},
		"IPv6":                        {"[2001:db8::53]:53", "[2001:db8::53]:53", ""},
		"more than one":               {"1.1.1.1:53,8.8.8.8:53", "", `-dns01-recursive-nameservers: "1.1.1.1:53,8.8.8.8:53" names more than one server`},
		"no port":                     {"1.1.1.1", "", `-dns01-recursive-nameservers: "1.1.1.1" is not host:port`},
		"a port that is not a number": {"dns:domain", "", `port "domain" is not a number from 1 to 65535`},
		"port out of range":           {"dns:70000", "", `port "70000" is not a number from 1 to 65535`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			fs := flag.NewFlagSet("certlife-operator", flag.ContinueOnError)
			f := bindFlags(fs)
			var args []string
			if tc.arg != "" {
				args = []string{"-dns01-recursive-nameservers", tc.arg}
			}
			require.NoError(t, fs.Parse(args))
			got, err := f.dns01Nameserver()
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// A namespaced install works with no cluster-wide Secret access: the
// operator runs (main's flags, from the namespaced Deployment) with a
// client that impersonates a ServiceAccount bound only to the namespaced
// install's Roles and ClusterRole, each made in the test's namespaces; it
// issues a Certificate from an Issuer in its watched namespace and one
// from a ClusterIssuer whose CA Secret is in the cluster resource
// namespace, leaves a Certificate in a namespace it does not watch alone,
// and the ServiceAccount provably cannot list Secrets cluster-wide.
func TestNamespacedInstallWithoutClusterWideSecrets(t *testing.T) {
	cfg := apiServer(t)
	objs := kustomize(t, filepath.Join("deploy", "namespaced"))
	apply(t, cfg, objs) // the CRDs
	admin, err := client.New(cfg, client.Options{Scheme: operator.Scheme()})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	suffix := strconv.FormatInt(time.Now().UnixNano()%1_000_000, 10)
	opNS, watchedNS, clusterNS, otherNS := "op-"+suffix, "apps-"+suffix, "cluster-"+suffix, "other-"+suffix
	for _, ns := range []string{opNS, watchedNS, clusterNS, otherNS} {
		require.NoError(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	sa := rbacv1.Subject{Kind: "ServiceAccount", Name: "certlife-operator", Namespace: opNS}
	require.NoError(t, admin.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa.Name, Namespace: opNS}}))

	// The namespaced install's RBAC, made for the test's namespaces.
	var watchedRules, electionRules []rbacv1.PolicyRule
	for _, r := range all[rbacv1.Role](t, objs, "Role") {
		if r.Name == "certlife-operator" {
			electionRules = r.Rules
		} else {
			watchedRules = r.Rules
		}
	}
	require.NotEmpty(t, watchedRules)
	require.NotEmpty(t, electionRules)
	role := func(ns, name string, rs []rbacv1.PolicyRule) {
		require.NoError(t, admin.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Rules: rs}))
		require.NoError(t, admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}, Subjects: []rbacv1.Subject{sa}}))
	}
	role(watchedNS, "certlife-operator-watched", watchedRules)
	role(clusterNS, "certlife-operator-watched", watchedRules)
	role(opNS, "certlife-operator", electionRules)
	clusterRole := "certlife-operator-cluster-" + suffix
	require.NoError(t, admin.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: clusterRole},
		Rules: only[rbacv1.ClusterRole](t, objs, "ClusterRole", "certlife-operator-cluster").Rules}))
	require.NoError(t, admin.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: clusterRole},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole}, Subjects: []rbacv1.Subject{sa}}))
	t.Cleanup(func() {
		_ = admin.Delete(context.Background(), &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: clusterRole}})
		_ = admin.Delete(context.Background(), &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: clusterRole}})
	})

	saCfg := rest.CopyConfig(cfg)
	saCfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + opNS + ":" + sa.Name}
	asSA, err := client.New(saCfg, client.Options{Scheme: operator.Scheme()})
	require.NoError(t, err)

	// What the ServiceAccount may do with Secrets, as the API server's
	// authorizer answers it (RBAC is on in envtest's API server).
	allowed := func(verb, namespace string) bool {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Resource: "secrets", Namespace: namespace}}}
		require.NoError(t, asSA.Create(ctx, review))
		return review.Status.Allowed
	}
	for _, verb := range []string{"list", "watch", "get", "create", "patch", "delete"} {
		assert.False(t, allowed(verb, ""), "%s Secrets cluster-wide is refused", verb)
		assert.False(t, allowed(verb, otherNS), "%s Secrets in a namespace not watched is refused", verb)
		assert.True(t, allowed(verb, watchedNS), "%s Secrets in the watched namespace is allowed", verb)
		assert.True(t, allowed(verb, clusterNS), "%s Secrets in the cluster resource namespace is allowed", verb)
	}
	var secrets corev1.SecretList
	err = asSA.List(ctx, &secrets)
	require.True(t, apierrors.IsForbidden(err), "listing Secrets cluster-wide is forbidden, got %v", err)

	// The operator, as the namespaced Deployment runs it, in the test's
	// namespaces (later flags win).
	dep := only[appsv1.Deployment](t, objs, "Deployment", "certlife-operator")
	f := parseArgs(t, append(slices.Clone(dep.Spec.Template.Spec.Containers[0].Args),
		"--namespaces="+watchedNS, "--cluster-resource-namespace="+clusterNS, "--leader-election-namespace="+opNS,
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--http01-address="))
	require.True(t, f.leaderElect, "leader election on, as deployed: the Lease is the ServiceAccount's to hold")
	mgr, err := newManager(saCfg, f, prometheus.NewRegistry(), skipNameValidation)
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(runCtx) }()
	defer func() {
		stop()
		stopped(t, done)
	}()

	now := time.Now()
	caSecret := func(ns, name string) {
		ca, err := localca.NewRoot(rand.Reader, "test CA "+name, keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, now.Add(-time.Hour), 365*24*time.Hour)
		require.NoError(t, err)
		keyPEM, err := ca.KeyPEM()
		require.NoError(t, err)
		require.NoError(t, admin.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{keys.SecretCertificate: ca.CertificatePEM(), keys.SecretPrivateKey: keyPEM}}))
	}
	caSecret(watchedNS, "ca")
	caSecret(clusterNS, "cluster-ca")
	require.NoError(t, admin.Create(ctx, &cmapi.Issuer{ObjectMeta: metav1.ObjectMeta{Name: "ca", Namespace: watchedNS},
		Spec: cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{CA: &cmapi.CAIssuer{SecretName: "ca"}}}}))
	require.NoError(t, admin.Create(ctx, &cmapi.ClusterIssuer{ObjectMeta: metav1.ObjectMeta{Name: "ca-" + suffix},
		Spec: cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{CA: &cmapi.CAIssuer{SecretName: "cluster-ca"}}}}))
	t.Cleanup(func() {
		_ = admin.Delete(context.Background(), &cmapi.ClusterIssuer{ObjectMeta: metav1.ObjectMeta{Name: "ca-" + suffix}})
	})
	certificateFor := func(ns, name string, ref cmmeta.IssuerReference) {
		require.NoError(t, admin.Create(ctx, &cmapi.Certificate{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: cmapi.CertificateSpec{
			SecretName: name + "-tls", DNSNames: []string{name + ".example"}, IssuerRef: ref,
			PrivateKey: &cmapi.CertificatePrivateKey{Algorithm: cmapi.ECDSAKeyAlgorithm}}}))
	}
	certificateFor(watchedNS, "web", cmmeta.IssuerReference{Name: "ca"})
	certificateFor(watchedNS, "api", cmmeta.IssuerReference{Name: "ca-" + suffix, Kind: cmapi.ClusterIssuerKind})
	certificateFor(otherNS, "elsewhere", cmmeta.IssuerReference{Name: "ca-" + suffix, Kind: cmapi.ClusterIssuerKind})

	ready := func(ns, name string) bool {
		var c cmapi.Certificate
		if admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &c) != nil {
			return false
		}
		for _, cond := range c.Status.Conditions {
			if cond.Type == cmapi.CertificateConditionReady && cond.Status == cmmeta.ConditionTrue {
				return true
			}
		}
		return false
	}
	for _, name := range []string{"web", "api"} {
		require.Eventually(t, func() bool { return ready(watchedNS, name) }, 90*time.Second, 100*time.Millisecond,
			"certificate %s/%s Ready through a ServiceAccount bound only to namespaced Roles", watchedNS, name)
		var s corev1.Secret
		require.NoError(t, admin.Get(ctx, client.ObjectKey{Namespace: watchedNS, Name: name + "-tls"}, &s))
		assert.NotEmpty(t, s.Data[keys.SecretCertificate], "secret %s-tls holds the certificate", name)
		assert.Equal(t, "true", s.Labels[operator.LabelManaged])
	}
	var lease coordinationv1.Lease
	require.NoError(t, admin.Get(ctx, client.ObjectKey{Namespace: opNS, Name: "certlife-operator"}, &lease), "the leader election Lease, held through the leader election Role")
	require.NotNil(t, lease.Spec.HolderIdentity)
	// The Certificate in the namespace not watched is not touched: no
	// status, no Secret, no request (looked at after the others are
	// Ready, so the operator has had its chance).
	var other cmapi.Certificate
	require.NoError(t, admin.Get(ctx, client.ObjectKey{Namespace: otherNS, Name: "elsewhere"}, &other))
	assert.Empty(t, other.Status.Conditions, "a Certificate in a namespace not watched has no status from the operator")
	var reqs cmapi.CertificateRequestList
	require.NoError(t, admin.List(ctx, &reqs, client.InNamespace(otherNS)))
	assert.Empty(t, reqs.Items, "no request in a namespace not watched")
	var s corev1.Secret
	assert.True(t, apierrors.IsNotFound(admin.Get(ctx, client.ObjectKey{Namespace: otherNS, Name: "elsewhere-tls"}, &s)), "no Secret in a namespace not watched")
}

// The shims' flags, as cert-manager names them where it has them.
func TestShimFlags(t *testing.T) {
	tests := map[string]struct {
		args []string
		want operator.ShimOptions
	}{
		"unset: both shims, tls-acme, no default issuer": {nil, operator.ShimOptions{DefaultIssuerKind: "Issuer", DefaultIssuerGroup: "cert-manager.io",
			AutoCertificateAnnotations: []string{"kubernetes.io/tls-acme"}}},
		"off, a default issuer, no auto annotation, extra annotations": {
			[]string{"-enable-ingress-shim=false", "-enable-gateway-api=false", "-default-issuer-name=le", "-default-issuer-kind=ClusterIssuer",
				"-auto-certificate-annotations=", "-extra-certificate-annotations=a.example/x, b.example/y"},
			operator.ShimOptions{DisableIngress: true, DisableGateway: true, DefaultIssuerName: "le", DefaultIssuerKind: "ClusterIssuer",
				DefaultIssuerGroup: "cert-manager.io", AutoCertificateAnnotations: []string{}, ExtraCertificateAnnotations: []string{"a.example/x", "b.example/y"}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			fs := flag.NewFlagSet("certlife-operator", flag.ContinueOnError)
			f := bindFlags(fs)
			require.NoError(t, fs.Parse(tc.args))
			assert.Equal(t, tc.want, f.shim())
		})
	}
}
