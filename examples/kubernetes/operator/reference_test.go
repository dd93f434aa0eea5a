package operator_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"

	apiutil "github.com/cert-manager/cert-manager/pkg/api/util"
	controllerpkg "github.com/cert-manager/cert-manager/pkg/controller"
	"github.com/cert-manager/cert-manager/pkg/controller/certificaterequests"
	crca "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	"github.com/cert-manager/cert-manager/pkg/controller/issuers"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	// The CA issuer's Setup (the Issuer's Ready condition), registered
	// with the issuers controller's factory.
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
)

// referenceCA runs, against the test's API server and namespace, the
// reference operator's (cert-manager v1.21.2, from its module) own
// controllers for CA issuers: its issuers controller, which keeps a CA
// Issuer's Ready condition, and its CA CertificateRequest controller
// (certificaterequests-issuer-ca), which signs the approved
// CertificateRequests of CA Issuers. They are built as cert-manager's
// controller binary builds them — a controller Context from
// controller.NewContextFactory over a kubeconfig, its informer factories
// started once every controller has registered — but for the
// CertificateRequest controller's clock, which is the test's fake clock
// (cert-manager's failureTime and the operator's backoff read the same
// time; the certificates' validity still starts at the wall clock, which
// cert-manager's signer reads itself). They stop at the end of the test.
func (h *harness) referenceCA() {
	h.t.Helper()
	user, err := env.AddUser(envtest.User{Name: "cert-manager-" + h.ns, Groups: []string{"system:masters"}}, nil)
	require.NoError(h.t, err)
	kubeconfig, err := user.KubeConfig()
	require.NoError(h.t, err)
	path := filepath.Join(h.t.TempDir(), "kubeconfig")
	require.NoError(h.t, os.WriteFile(path, kubeconfig, 0o600))

	ctx, cancel := context.WithCancel(context.Background())
	factory, err := controllerpkg.NewContextFactory(ctx, controllerpkg.ContextOptions{
		Kubeconfig:    path,
		Namespace:     h.ns,
		IssuerOptions: controllerpkg.IssuerOptions{ClusterResourceNamespace: h.ns},
	})
	if err != nil {
		cancel()
		h.t.Fatalf("cert-manager's controller context: %v", err)
	}

	issuerController, err := controllerpkg.Known()[issuers.ControllerName](factory)
	if err != nil {
		cancel()
		h.t.Fatalf("cert-manager's issuers controller: %v", err)
	}

	// As controllerpkg.Builder.Complete builds it, with the test's clock.
	cctx, err := factory.Build(crca.CRControllerName)
	if err != nil {
		cancel()
		h.t.Fatalf("cert-manager's controller context: %v", err)
	}
	cctx.Clock = h.clock
	impl := certificaterequests.New(apiutil.IssuerCA, crca.NewCA)
	queue, mustSync, err := impl.Register(cctx)
	if err != nil {
		cancel()
		h.t.Fatalf("cert-manager's CA CertificateRequest controller: %v", err)
	}
	requestController := controllerpkg.NewController(crca.CRControllerName, cctx.Metrics, impl.ProcessItem, mustSync, nil, queue)

	// The informer factories are shared by the Contexts of one factory.
	cctx.KubeSharedInformerFactory.Start(ctx.Done())
	cctx.SharedInformerFactory.Start(ctx.Done())
	var wg sync.WaitGroup
	for _, c := range []controllerpkg.Interface{issuerController, requestController} {
		wg.Go(func() {
			if err := c.Run(1, ctx); err != nil && ctx.Err() == nil {
				h.t.Errorf("cert-manager's controller: %v", err)
			}
		})
	}
	h.t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
}
