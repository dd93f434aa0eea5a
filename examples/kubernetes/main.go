// Command kubernetes runs the certlife example operator against the
// cluster of the current kubeconfig (or in a cluster, with its service
// account):
//
//	kubectl apply -f config/crd   # cert-manager's CRDs
//	go run . -cluster-resource-namespace default
//
// See README.md.
package main

//go:generate go tool controller-gen rbac:roleName=certlife-operator paths=./operator/... output:rbac:artifacts:config=config/rbac
//go:generate sh -c "cp \"$(go list -m -f '{{.Dir}}' github.com/cert-manager/cert-manager)\"/deploy/crds/*.yaml config/crd/ && chmod 644 config/crd/*.yaml"

import (
	"flag"
	"os"

	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/certlife/certlife/examples/kubernetes/operator"
)

// serviceAccountNamespace is where a pod finds its namespace.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

func main() {
	var (
		metricsAddr = flag.String("metrics-bind-address", ":8080", "where Prometheus metrics are served (0 turns them off)")
		probeAddr   = flag.String("health-probe-bind-address", ":8081", "where /healthz and /readyz are served")
		leaderElect = flag.Bool("leader-elect", true, "elect a leader, so that replicas can run side by side")
		leaderNS    = flag.String("leader-election-namespace", "", "namespace of the leader election Lease (default: the pod's namespace, or default outside a cluster)")
		clusterNS   = flag.String("cluster-resource-namespace", "cert-manager", "namespace of the Secrets ClusterIssuers name (cert-manager's default)")
		workers     = flag.Int("workers", 4, "certificates reconciled at once")
		http01Addr  = flag.String("http01-address", ":8089", "where ACME HTTP-01 challenges are answered, on every replica (route the names' port 80 /.well-known/acme-challenge/ here; empty turns it off)")
		ownerRef    = flag.Bool("enable-certificate-owner-ref", false, "make each Certificate the owner of its Secret, so that deleting the Certificate deletes the Secret (as cert-manager's flag of the same name)")
		approve     = flag.Bool("approve-requests", true, "approve every CertificateRequest that has neither an Approved nor a Denied condition, as cert-manager's approver does; false leaves approval to another approver, such as approver-policy")
	)
	zapOpts := zap.Options{Development: true}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	logger := ctrl.Log.WithName("certlife-operator")

	if *leaderNS == "" {
		if _, err := os.Stat(serviceAccountNamespace); err != nil {
			*leaderNS = "default" // not in a cluster
		}
	}
	challenges := operator.NewChallengeServer()
	metrics := operator.NewMetrics()
	if err := metrics.Register(ctrlmetrics.Registry); err != nil {
		logger.Error(err, "registering metrics")
		os.Exit(1)
	}
	mgr, err := operator.NewManager(ctrl.GetConfigOrDie(), manager.Options{
		Metrics:                       metricsserver.Options{BindAddress: *metricsAddr},
		HealthProbeBindAddress:        *probeAddr,
		LeaderElection:                *leaderElect,
		LeaderElectionID:              "certlife-operator",
		LeaderElectionNamespace:       *leaderNS,
		LeaderElectionReleaseOnCancel: true,
	}, operator.Options{
		Clock:                     clock.RealClock{},
		ClusterResourceNamespace:  *clusterNS,
		EnableCertificateOwnerRef: *ownerRef,
		DisableApprover:           !*approve,
		Workers:                   *workers,
		Metrics:                   metrics,
		ACME:                      operator.ACMEOptions{ChallengeServer: challenges},
	})
	if err != nil {
		logger.Error(err, "setting up the operator")
		os.Exit(1)
	}
	if *http01Addr != "" {
		if err := mgr.Add(challenges.Runnable(*http01Addr)); err != nil {
			logger.Error(err, "HTTP-01 challenge server")
			os.Exit(1)
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		logger.Error(err, "health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		logger.Error(err, "ready check")
		os.Exit(1)
	}
	logger.Info("starting", "leaderElection", *leaderElect, "clusterResourceNamespace", *clusterNS, "enableCertificateOwnerRef", *ownerRef, "approveRequests", *approve)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		logger.Error(err, "the operator stopped")
		os.Exit(1)
	}
}
