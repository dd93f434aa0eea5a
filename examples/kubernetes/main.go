// Command kubernetes runs the certlife example operator against the
// cluster of the current kubeconfig (or in a cluster, with its service
// account):
//
//	kubectl apply -f config/crd   # cert-manager's CRDs
//	go run . -cluster-resource-namespace default
//
// or installs it in a cluster with kubectl apply -k deploy/cluster (or
// deploy/namespaced). See README.md.
package main

//go:generate go tool controller-gen rbac:roleName=certlife-operator paths=./operator/... output:rbac:artifacts:config=config/rbac
//go:generate sh -c "cp \"$(go list -m -f '{{.Dir}}' github.com/cert-manager/cert-manager)\"/deploy/crds/*.yaml config/crd/ && chmod 644 config/crd/*.yaml"
//go:generate sh -c "mkdir -p config/crd/gateway-api && cp \"$(go list -m -f '{{.Dir}}' sigs.k8s.io/gateway-api)\"/config/crd/standard/*.yaml config/crd/gateway-api/ && chmod 644 config/crd/gateway-api/*.yaml"

import (
	"flag"
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/certlife/certlife/examples/kubernetes/operator"
)

// serviceAccountNamespace is where a pod finds its namespace.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// flags are the command's flags.
type flags struct {
	metricsAddr string
	probeAddr   string
	leaderElect bool
	leaderNS    string
	clusterNS   string
	namespaces  string
	workers     int
	http01Addr  string
	http01Svc   string
	dns01NS     string
	ownerRef    bool
	approve     bool
	disabled    string
	// The shims: Certificates for annotated Ingresses and Gateways.
	ingressShim      bool
	gatewayAPI       bool
	defaultIssuer    operator.ShimOptions
	autoAnnotations  string
	extraAnnotations string
	zap              zap.Options
}

// bindFlags defines the command's flags on fs.
func bindFlags(fs *flag.FlagSet) *flags {
	f := &flags{zap: zap.Options{Development: true}}
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", "where Prometheus metrics are served (0 turns them off)")
	fs.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "where /healthz and /readyz are served")
	fs.BoolVar(&f.leaderElect, "leader-elect", true, "elect a leader, so that replicas can run side by side")
	fs.StringVar(&f.leaderNS, "leader-election-namespace", "", "namespace of the leader election Lease (default: the pod's namespace, or default outside a cluster)")
	fs.StringVar(&f.clusterNS, "cluster-resource-namespace", "cert-manager", "namespace of the Secrets ClusterIssuers name (cert-manager's default)")
	fs.StringVar(&f.namespaces, "namespaces", "", "comma-separated namespaces whose Certificates, requests, Issuers and Secrets the operator watches (and the cluster resource namespace, added when missing); empty watches every namespace")
	fs.IntVar(&f.workers, "workers", 4, "certificates reconciled at once")
	fs.StringVar(&f.http01Addr, "http01-address", ":8089", "where ACME HTTP-01 challenges are answered, on every replica (route the names' port 80 /.well-known/acme-challenge/ here; empty turns it off)")
	fs.StringVar(&f.http01Svc, "http01-service", "", "the operator's challenge Service, namespace/name (or name, in the pod's namespace), in front of -http01-address on every replica: for ACME issuers whose HTTP-01 solver sets ingress or gatewayHTTPRoute, each challenge gets an Ingress or HTTPRoute to a Service mirroring its endpoints; empty leaves those settings unused")
	fs.StringVar(&f.dns01NS, "dns01-recursive-nameservers", "", "the recursive DNS server (host:port) through which the zone of a DNS-01 record is found and its authoritative servers asked (cert-manager's flag of the same name; one server); empty means the first of /etc/resolv.conf")
	fs.BoolVar(&f.ownerRef, "enable-certificate-owner-ref", false, "make each Certificate the owner of its Secret, so that deleting the Certificate deletes the Secret (as cert-manager's flag of the same name)")
	fs.BoolVar(&f.approve, "approve-requests", true, "approve every CertificateRequest that has neither an Approved nor a Denied condition, as cert-manager's approver does; false leaves approval to another approver, such as approver-policy")
	fs.StringVar(&f.disabled, "disabled-issuer-types", "", "comma-separated issuer types (ca, selfsigned, acme) left to another controller: their requests are approved and not answered, their Issuers not written")
	fs.BoolVar(&f.ingressShim, "enable-ingress-shim", true, "keep a Certificate for each TLS entry of the Ingresses annotated cert-manager.io/issuer or cert-manager.io/cluster-issuer (cert-manager's ingress-shim, which it turns off with --controllers=*,-ingress-shim)")
	fs.BoolVar(&f.gatewayAPI, "enable-gateway-api", true, "keep a Certificate for each TLS Secret of the Gateways annotated cert-manager.io/issuer or cert-manager.io/cluster-issuer, when the Gateway API's CRDs are installed (cert-manager's flag of the same name, whose default is false)")
	fs.StringVar(&f.defaultIssuer.DefaultIssuerName, "default-issuer-name", "", "the issuer of an Ingress annotated with an -auto-certificate-annotations annotation and no issuer (as cert-manager's flag of the same name)")
	fs.StringVar(&f.defaultIssuer.DefaultIssuerKind, "default-issuer-kind", "Issuer", "the kind of -default-issuer-name")
	fs.StringVar(&f.defaultIssuer.DefaultIssuerGroup, "default-issuer-group", "cert-manager.io", "the API group of -default-issuer-name")
	fs.StringVar(&f.autoAnnotations, "auto-certificate-annotations", "kubernetes.io/tls-acme", "comma-separated annotations that, set to \"true\" on an Ingress, ask for certificates from -default-issuer-name")
	fs.StringVar(&f.extraAnnotations, "extra-certificate-annotations", "", "comma-separated annotations copied from an Ingress or Gateway to its Certificates")
	f.zap.BindFlags(fs)
	return f
}

// watched is the namespaces the operator's caches hold: nil for every
// namespace, else those of -namespaces and the cluster resource
// namespace, whose Secrets ClusterIssuers sign with. A name that is not
// a namespace's is refused, naming the flag and the value.
func (f *flags) watched() (map[string]cache.Config, error) {
	if strings.TrimSpace(f.namespaces) == "" {
		return nil, nil
	}
	out := map[string]cache.Config{}
	for _, ns := range strings.Split(f.namespaces, ",") {
		ns = strings.TrimSpace(ns)
		if ns == "" {
			continue
		}
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return nil, fmt.Errorf("-namespaces: %q is not a namespace's name: %s", ns, strings.Join(errs, "; "))
		}
		out[ns] = cache.Config{}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-namespaces: %q names no namespace", f.namespaces)
	}
	if f.clusterNS != "" {
		out[f.clusterNS] = cache.Config{}
	}
	return out, nil
}

// dns01Nameserver is -dns01-recursive-nameservers: one host:port, or
// empty.
func (f *flags) dns01Nameserver() (string, error) {
	v := strings.TrimSpace(f.dns01NS)
	if v == "" {
		return "", nil
	}
	if strings.Contains(v, ",") {
		return "", fmt.Errorf("-dns01-recursive-nameservers: %q names more than one server; this operator asks one", v)
	}
	host, port, err := net.SplitHostPort(v)
	if err != nil || host == "" {
		return "", fmt.Errorf("-dns01-recursive-nameservers: %q is not host:port", v)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("-dns01-recursive-nameservers: %q: port %q is not a number from 1 to 65535", v, port)
	}
	return v, nil
}

// http01Service is -http01-service as a namespace and name: a name alone
// is in the pod's namespace. A value that names no Service is refused,
// naming the flag and the value.
func (f *flags) http01Service() (types.NamespacedName, error) {
	v := strings.TrimSpace(f.http01Svc)
	if v == "" {
		return types.NamespacedName{}, nil
	}
	ns, name, ok := strings.Cut(v, "/")
	if !ok {
		b, err := os.ReadFile(serviceAccountNamespace)
		if err != nil {
			return types.NamespacedName{}, fmt.Errorf("-http01-service: %q names no namespace, and the operator is not in a pod (give namespace/name)", v)
		}
		ns, name = strings.TrimSpace(string(b)), v
	}
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return types.NamespacedName{}, fmt.Errorf("-http01-service: %q is not a namespace's name: %s", ns, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1035Label(name); len(errs) > 0 {
		return types.NamespacedName{}, fmt.Errorf("-http01-service: %q is not a Service's name: %s", name, strings.Join(errs, "; "))
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}

// disabledIssuerTypes is -disabled-issuer-types as a list; the operator
// refuses a type it does not know, naming the option and the value.
func (f *flags) disabledIssuerTypes() []string {
	return list(f.disabled)
}

// list is a comma-separated flag's items, trimmed, empty ones left out.
func list(v string) []string {
	var out []string
	for _, t := range strings.Split(v, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// shim is the shims' options from the flags.
func (f *flags) shim() operator.ShimOptions {
	o := f.defaultIssuer
	o.DisableIngress, o.DisableGateway = !f.ingressShim, !f.gatewayAPI
	o.AutoCertificateAnnotations = list(f.autoAnnotations)
	if o.AutoCertificateAnnotations == nil {
		o.AutoCertificateAnnotations = []string{} // none, not the default
	}
	o.ExtraCertificateAnnotations = list(f.extraAnnotations)
	return o
}

// newManager makes the operator's manager from the flags, its metrics
// registered with registry, and adds the HTTP-01 challenge server and the
// /healthz and /readyz checks. mod, if any, changes the manager's options
// last (tests).
func newManager(cfg *rest.Config, f *flags, registry prometheus.Registerer, mod ...func(*manager.Options)) (manager.Manager, error) {
	if f.leaderNS == "" {
		if _, err := os.Stat(serviceAccountNamespace); err != nil {
			f.leaderNS = "default" // not in a cluster
		}
	}
	namespaces, err := f.watched()
	if err != nil {
		return nil, err
	}
	http01Svc, err := f.http01Service()
	if err != nil {
		return nil, err
	}
	dns01NS, err := f.dns01Nameserver()
	if err != nil {
		return nil, err
	}
	challenges := operator.NewChallengeServer()
	metrics := operator.NewMetrics()
	if err := metrics.Register(registry); err != nil {
		return nil, fmt.Errorf("registering metrics: %w", err)
	}
	mo := manager.Options{
		Metrics:                       metricsserver.Options{BindAddress: f.metricsAddr},
		HealthProbeBindAddress:        f.probeAddr,
		LeaderElection:                f.leaderElect,
		LeaderElectionID:              "certlife-operator",
		LeaderElectionNamespace:       f.leaderNS,
		LeaderElectionReleaseOnCancel: true,
		Cache:                         cache.Options{DefaultNamespaces: namespaces},
	}
	for _, m := range mod {
		m(&mo)
	}
	mgr, err := operator.NewManager(cfg, mo, operator.Options{
		Clock:                     clock.RealClock{},
		ClusterResourceNamespace:  f.clusterNS,
		EnableCertificateOwnerRef: f.ownerRef,
		DisableApprover:           !f.approve,
		DisabledIssuerTypes:       f.disabledIssuerTypes(),
		Workers:                   f.workers,
		Metrics:                   metrics,
		ACME:                      operator.ACMEOptions{ChallengeServer: challenges, HTTP01Service: http01Svc, DNS01Resolver: dns01NS},
		Shim:                      f.shim(),
	})
	if err != nil {
		return nil, fmt.Errorf("setting up the operator: %w", err)
	}
	if f.http01Addr != "" {
		if err := mgr.Add(challenges.Runnable(f.http01Addr)); err != nil {
			return nil, fmt.Errorf("HTTP-01 challenge server: %w", err)
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, fmt.Errorf("health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, fmt.Errorf("ready check: %w", err)
	}
	return mgr, nil
}

func main() {
	f := bindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&f.zap)))
	logger := ctrl.Log.WithName("certlife-operator")

	mgr, err := newManager(ctrl.GetConfigOrDie(), f, ctrlmetrics.Registry)
	if err != nil {
		logger.Error(err, "starting")
		os.Exit(1)
	}
	namespaces, _ := f.watched()
	logger.Info("starting", "leaderElection", f.leaderElect, "clusterResourceNamespace", f.clusterNS, "namespaces", slices.Sorted(maps.Keys(namespaces)),
		"enableCertificateOwnerRef", f.ownerRef, "approveRequests", f.approve, "disabledIssuerTypes", f.disabledIssuerTypes(),
		"enableIngressShim", f.ingressShim, "enableGatewayAPI", f.gatewayAPI, "defaultIssuerName", f.defaultIssuer.DefaultIssuerName)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		logger.Error(err, "the operator stopped")
		os.Exit(1)
	}
}
