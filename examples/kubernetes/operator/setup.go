package operator

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/certlife/certlife/certificate"

	"github.com/certlife/certlife/examples/kubernetes/api/v1alpha1"
)

// Options configure the operator's controllers.
type Options struct {
	// Clock gives decisions their now and measures the work queues'
	// delays (RequeueAfter); nil means the real clock. Tests pass a fake
	// one.
	Clock clock.WithTicker
	// Config is passed to every certificate decision; its zero value is
	// certlife's defaults (certificate.Config documents each field: the
	// backoff, the cache grace, how long a request may go unanswered by
	// any issuer before the certificate says so, …). Setup refuses one
	// that certificate.Config.Validate refuses.
	Config certificate.Config
	// ClusterResourceNamespace holds the Secrets ClusterIssuers name.
	ClusterResourceNamespace string
	// Rand is the randomness for keys, CSRs, keystores, serial numbers and
	// signatures; nil means crypto/rand.
	Rand io.Reader
	// Workers is how many certificates are reconciled at once; 0 means 4.
	Workers int
	// Metrics, when set, are kept up to date (register them yourself).
	Metrics *Metrics
	// EventSource names the operator in Events; empty means
	// "certlife-operator".
	EventSource string
	// ACME configures the ACME issuers.
	ACME ACMEOptions
}

// Scheme is the scheme the operator's clients use: Kubernetes' built-in
// types and certlife.dev/v1alpha1.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// CacheOptions are the operator's cache settings: of Secrets only those
// labelled LabelManaged are held (next private keys and target Secrets the
// operator wrote), no object keeps its managedFields or kubectl's
// last-applied configuration, and equal certificates, CA certificates,
// label and annotation keys are shared among the cached objects.
func CacheOptions() cache.Options {
	return cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Label: labels.SelectorFromSet(labels.Set{LabelManaged: "true"})},
		},
		DefaultTransform: newInterner().transform,
	}
}

// stripMetadata drops from cached objects what no decision reads: managed
// fields, and the last configuration kubectl applied (a copy of the
// whole object).
func stripMetadata(in any) (any, error) {
	if obj, ok := in.(metav1.Object); ok {
		obj.SetManagedFields(nil)
		if a := obj.GetAnnotations(); a != nil {
			if _, ok := a[corev1.LastAppliedConfigAnnotation]; ok {
				delete(a, corev1.LastAppliedConfigAnnotation)
				obj.SetAnnotations(a)
			}
		}
	}
	return in, nil
}

// NewManager makes a controller-runtime manager with the operator's
// scheme and cache (mo's Scheme is replaced, and its Cache too but for
// DefaultNamespaces, which restricts the operator to some namespaces) and
// sets up its controllers.
func NewManager(cfg *rest.Config, mo manager.Options, o Options) (manager.Manager, error) {
	mo.Scheme = Scheme()
	namespaces := mo.Cache.DefaultNamespaces
	mo.Cache = CacheOptions()
	mo.Cache.DefaultNamespaces = namespaces
	mgr, err := ctrl.NewManager(cfg, mo)
	if err != nil {
		return nil, err
	}
	if err := Setup(mgr, o); err != nil {
		return nil, err
	}
	return mgr, nil
}

// Setup adds the field indexes and the controllers to mgr, whose cache
// must be set up with CacheOptions.
func Setup(mgr manager.Manager, o Options) error {
	if err := o.Config.Validate(); err != nil {
		return fmt.Errorf("operator: options.config: %w", err)
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Rand == nil {
		o.Rand = rand.Reader
	}
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.EventSource == "" {
		o.EventSource = "certlife-operator"
	}
	ctx := context.Background()
	idx := mgr.GetFieldIndexer()
	controllerUID := func(obj client.Object) []string {
		if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
			return []string{string(ref.UID)}
		}
		return nil
	}
	if err := namespacedIndex(ctx, mgr.GetCache(), &corev1.Secret{}, indexOwner, controllerUID); err != nil {
		return err
	}
	if err := namespacedIndex(ctx, mgr.GetCache(), &v1alpha1.CertificateRequest{}, indexOwner, controllerUID); err != nil {
		return err
	}
	if err := namespacedIndex(ctx, mgr.GetCache(), &v1alpha1.Certificate{}, indexSecretName, func(obj client.Object) []string {
		return []string{obj.(*v1alpha1.Certificate).Spec.SecretName}
	}); err != nil {
		return err
	}
	// ClusterIssuers' requests are looked up across namespaces: a
	// controller-runtime index.
	if err := idx.IndexField(ctx, &v1alpha1.CertificateRequest{}, indexIssuer, func(obj client.Object) []string {
		return []string{issuerKey(obj.(*v1alpha1.CertificateRequest).Spec.IssuerRef)}
	}); err != nil {
		return err
	}

	// The challenge server finds presented tokens in the cache.
	if err := idx.IndexField(ctx, &v1alpha1.Challenge{}, indexChallengeToken, func(obj client.Object) []string {
		return []string{obj.(*v1alpha1.Challenge).Spec.Token}
	}); err != nil {
		return err
	}

	g := Gatherer{Cache: mgr.GetClient(), API: mgr.GetAPIReader()}
	if o.ACME.ChallengeServer == nil {
		o.ACME.ChallengeServer = NewChallengeServer()
	}
	o.ACME.ChallengeServer.cache = mgr.GetCache()
	challenges, err := mgr.GetCache().GetInformer(ctx, &v1alpha1.Challenge{}, cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	if _, err := challenges.AddEventHandler(toolscache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		o.ACME.ChallengeServer.forget(obj)
	}}); err != nil {
		return err
	}
	acme := &acmeIssuers{client: mgr.GetClient(), api: mgr.GetAPIReader(), cache: mgr.GetCache(), gather: g, clock: o.Clock,
		opts: o.ACME, log: mgr.GetLogger().WithName("acme"), clusterSecret: o.ClusterResourceNamespace, byID: map[string]*acmeRuntime{}}
	if o.Metrics != nil {
		o.Metrics.acmeRequests.issuers.Store(acme)
	}
	if o.Metrics != nil {
		var cached client.Reader = mgr.GetCache()
		o.Metrics.perCertificate.reader.Store(&cached)
	}
	recorder := mgr.GetEventRecorder(o.EventSource)
	issuers := Issuers{Gatherer: g, ClusterResourceNamespace: o.ClusterResourceNamespace}
	newQueue := func(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		return workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{Name: name, Clock: o.Clock})
	}

	certs := &CertificateReconciler{Client: mgr.GetClient(), Gatherer: g, Clock: o.Clock, Config: o.Config, Rand: o.Rand, Recorder: recorder, Metrics: o.Metrics, Issuers: &issuers}
	if err := ctrl.NewControllerManagedBy(mgr).Named("certificate").
		For(&v1alpha1.Certificate{}).
		// Another certificate naming the same Secret changed.
		Watches(&v1alpha1.Certificate{}, handler.EnqueueRequestsFromMapFunc(sameSecret(g.Cache))).
		// Its requests, next private keys and target Secret.
		Owns(&v1alpha1.CertificateRequest{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(secretCertificates(g.Cache))).
		WithOptions(controller.Options{MaxConcurrentReconciles: o.Workers, NewQueue: newQueue}).
		Complete(certs); err != nil {
		return err
	}

	reqs := &RequestReconciler{Client: mgr.GetClient(), Issuers: issuers, ACME: acme, Clock: o.Clock, Rand: o.Rand, Recorder: recorder, Metrics: o.Metrics}
	if err := ctrl.NewControllerManagedBy(mgr).Named("certificaterequest").
		For(&v1alpha1.CertificateRequest{}).
		Watches(&v1alpha1.Issuer{}, handler.EnqueueRequestsFromMapFunc(issuerRequests(g.Cache, "Issuer"))).
		Watches(&v1alpha1.ClusterIssuer{}, handler.EnqueueRequestsFromMapFunc(issuerRequests(g.Cache, "ClusterIssuer"))).
		WithOptions(controller.Options{MaxConcurrentReconciles: o.Workers, NewQueue: newQueue}).
		Complete(reqs); err != nil {
		return err
	}

	if err := idx.IndexField(ctx, &v1alpha1.Issuer{}, indexCASecret, func(obj client.Object) []string {
		if ca := obj.(*v1alpha1.Issuer).Spec.CA; ca != nil {
			return []string{ca.SecretName}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &v1alpha1.ClusterIssuer{}, indexCASecret, func(obj client.Object) []string {
		if ca := obj.(*v1alpha1.ClusterIssuer).Spec.CA; ca != nil {
			return []string{ca.SecretName}
		}
		return nil
	}); err != nil {
		return err
	}
	for _, cluster := range []bool{false, true} {
		var obj client.Object = &v1alpha1.Issuer{}
		name := "issuer"
		if cluster {
			obj, name = &v1alpha1.ClusterIssuer{}, "clusterissuer"
		}
		if err := ctrl.NewControllerManagedBy(mgr).Named(name).For(obj).
			// A CA Secret the operator manages (one a Certificate wrote).
			Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(caSecretIssuers(g.Cache, cluster, o.ClusterResourceNamespace))).
			WithOptions(controller.Options{NewQueue: newQueue}).
			Complete(&IssuerReconciler{Client: mgr.GetClient(), Issuers: issuers, ACME: acme, Clock: o.Clock, Rand: o.Rand, Cluster: cluster}); err != nil {
			return err
		}
	}
	return nil
}

// namespacedIndex is IndexField for lookups within one namespace
// (client.InNamespace with client.MatchingFields), which are all the
// operator makes on it: controller-runtime's IndexField also indexes each
// object under an all-namespaces key, one more set per object and value.
// The index is named and keyed as controller-runtime's cache reader looks
// it up ("field:<name>", "<namespace>/<value>"); the tests hold the two
// together.
func namespacedIndex(ctx context.Context, c cache.Cache, obj client.Object, field string, values client.IndexerFunc) error {
	inf, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	return inf.AddIndexers(toolscache.Indexers{"field:" + field: func(raw any) ([]string, error) {
		o, ok := raw.(client.Object)
		if !ok || o.GetNamespace() == "" {
			return nil, fmt.Errorf("index %s: %T is not a namespaced object", field, raw)
		}
		vals := values(o)
		out := make([]string, len(vals))
		for i, v := range vals {
			out[i] = o.GetNamespace() + "/" + v
		}
		return out, nil
	}})
}

func issuerKey(ref v1alpha1.IssuerReference) string {
	kind := ref.Kind
	if kind == "" {
		kind = "Issuer"
	}
	return kind + "/" + ref.Name
}

// sameSecret maps a Certificate to the other Certificates naming its
// Secret.
func sameSecret(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		crt := obj.(*v1alpha1.Certificate)
		var list v1alpha1.CertificateList
		if err := c.List(ctx, &list, client.InNamespace(crt.Namespace), client.MatchingFields{indexSecretName: crt.Spec.SecretName}); err != nil {
			return nil
		}
		var out []reconcile.Request
		for _, o := range list.Items {
			if o.UID != crt.UID {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&o)})
			}
		}
		return out
	}
}

// secretCertificates maps a Secret to its controlling Certificate and to
// the Certificates naming it.
func secretCertificates(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		var out []reconcile.Request
		if ref := metav1.GetControllerOfNoCopy(obj); ref != nil && ref.Kind == "Certificate" && ref.APIVersion == v1alpha1.GroupVersion.String() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: ref.Name}})
		}
		var list v1alpha1.CertificateList
		if err := c.List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.MatchingFields{indexSecretName: obj.GetName()}); err == nil {
			for _, o := range list.Items {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&o)})
			}
		}
		return out
	}
}

// caSecretIssuers maps a Secret to the issuers (or cluster issuers)
// signing with it.
func caSecretIssuers(c client.Reader, cluster bool, clusterNS string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		var out []reconcile.Request
		match := client.MatchingFields{indexCASecret: obj.GetName()}
		if cluster {
			var list v1alpha1.ClusterIssuerList
			if obj.GetNamespace() != clusterNS || c.List(ctx, &list, match) != nil {
				return nil
			}
			for i := range list.Items {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
			}
			return out
		}
		var list v1alpha1.IssuerList
		if c.List(ctx, &list, client.InNamespace(obj.GetNamespace()), match) != nil {
			return nil
		}
		for i := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
		return out
	}
}

// issuerRequests maps an issuer to the unanswered requests naming it.
func issuerRequests(c client.Reader, kind string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		opts := []client.ListOption{client.MatchingFields{indexIssuer: kind + "/" + obj.GetName()}}
		if kind == "Issuer" {
			opts = append(opts, client.InNamespace(obj.GetNamespace()))
		}
		var list v1alpha1.CertificateRequestList
		if err := c.List(ctx, &list, opts...); err != nil {
			return nil
		}
		var out []reconcile.Request
		for i := range list.Items {
			if !certificate.Answered(RequestToCore(&list.Items[i])) {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
			}
		}
		return out
	}
}
