package operator_test

import (
	"context"
	"testing"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/host/hosttest"

	"github.com/certlife/certlife/examples/kubernetes/operator"
)

// The operator's store keeps the host.Store contract on a real API
// server, reading through the operator's cache (not Authoritative: the
// suite reads once the informers have reported each write). Its
// deliberate differences are the Config's: users create Certificates,
// updates of Certificates and CertificateRequests write only their status,
// every Secret it writes carries the managed label its cache selects by,
// what it reads shares byte slices with the cache's copy, and an update of
// a Certificate's status writes the status, then the annotations for what
// cert-manager's status has no field for (two versions, each reported).
func TestStoreConformance(t *testing.T) {
	apiServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	mgr, err := manager.New(restConfig, manager.Options{
		Scheme:                 operator.Scheme(),
		Cache:                  operator.CacheOptions(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 ctrl.Log.WithName("conformance"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := operator.SetupStoreIndexes(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}
	open := func(t *testing.T) host.Store {
		st, remove, err := operator.NewStoreForTest(ctx, mgr, true)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(remove)
		return st
	}
	hosttest.TestStore(t, open, hosttest.Config{
		Namespace: func(t *testing.T, name string) {
			if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
				t.Fatal(err)
			}
		},
		CreateCertificate: func(ctx context.Context, _ host.Store, c *certificate.Certificate) (*certificate.Certificate, error) {
			crt := &cmapi.Certificate{
				ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: c.Name, Labels: c.Labels, Annotations: c.Annotations},
				Spec: cmapi.CertificateSpec{SecretName: c.Spec.SecretName, CommonName: c.Spec.CommonName, DNSNames: c.Spec.DNSNames,
					IssuerRef: cmmeta.IssuerReference{Name: c.Spec.IssuerRef.Name, Kind: c.Spec.IssuerRef.Kind, Group: c.Spec.IssuerRef.Group}},
			}
			if err := k8s.Create(ctx, crt); err != nil {
				return nil, err
			}
			return operator.CertificateToCore(crt, operator.Passwords{}), nil
		},
		StatusOnly:   true,
		SecretLabels: map[string]string{operator.LabelManaged: "true"},
		SharesValues: true,
		SplitUpdates: true,
	})
}
