package operator

import (
	"context"
	"testing"
	"time"

	cmacme "github.com/cert-manager/cert-manager/pkg/apis/acme/v1"
	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/certificate/host"
)

// SetupStoreIndexes adds the field indexes the store lists by to mgr.
func SetupStoreIndexes(ctx context.Context, mgr manager.Manager) error {
	return setupIndexes(ctx, mgr)
}

// NewStoreForTest is the operator's store over mgr (whose cache is set up
// with CacheOptions and the store's indexes), without the controllers:
// its watchers are told of each change mgr's informers see, as Setup's
// event handlers tell them. remove stops the telling.
func NewStoreForTest(ctx context.Context, mgr manager.Manager, ownerRefs bool) (st host.Store, remove func(), err error) {
	s := &store{client: mgr.GetClient(), cache: mgr.GetCache(), api: mgr.GetAPIReader(), ownerRefs: ownerRefs}
	var removes []func()
	remove = func() {
		for _, r := range removes {
			r()
		}
	}
	for kind, obj := range map[host.Kind]client.Object{host.KindCertificate: &cmapi.Certificate{}, host.KindSecret: &corev1.Secret{}, host.KindRequest: &cmapi.CertificateRequest{}} {
		inf, err := mgr.GetCache().GetInformer(ctx, obj)
		if err != nil {
			remove()
			return nil, nil, err
		}
		reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { s.changed(kind, o.(client.Object), false) },
			UpdateFunc: func(_, o any) { s.changed(kind, o.(client.Object), false) },
			DeleteFunc: func(o any) {
				if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
					o = d.Obj
				}
				s.changed(kind, o.(client.Object), true)
			},
		})
		if err != nil {
			remove()
			return nil, nil, err
		}
		removes = append(removes, func() { _ = inf.RemoveEventHandler(reg) })
	}
	return s, remove, nil
}

// Route53PresenterForTest is the DNS-01 presenter the operator makes for
// a Route 53 solver with the access key keyID (secret: its secret key)
// and the hosted zone zoneID, finding zones through resolver.
func Route53PresenterForTest(ctx context.Context, keyID, secret, zoneID, resolver string) (acmeclient.LibDNSPresenter, error) {
	sv := &cmacme.ACMEIssuerDNS01ProviderRoute53{AccessKeyID: keyID, HostedZoneID: zoneID,
		SecretAccessKey: cmmeta.SecretKeySelector{LocalObjectReference: cmmeta.LocalObjectReference{Name: "aws"}, Key: "secret"}}
	p, err := route53Provider(ctx, sv, func(string, cmmeta.SecretKeySelector) (string, error) { return secret, nil }, false)
	if err != nil {
		return acmeclient.LibDNSPresenter{}, err
	}
	return acmeclient.LibDNSPresenter{Provider: route53Appender{p}, Resolver: resolver, Timeout: 5 * time.Second}, nil
}

// IsolateAWS keeps the AWS SDK from reading the machine's configuration.
func IsolateAWS(t *testing.T) { isolateAWS(t) }
