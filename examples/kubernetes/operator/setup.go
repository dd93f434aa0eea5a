package operator

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"slices"
	"time"

	cmacme "github.com/cert-manager/cert-manager/pkg/apis/acme/v1"
	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	gwapi "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
)

// Options configure the operator's controllers. The zero value of each
// field is the reference operator's default.
type Options struct {
	// Clock gives decisions their now and measures the work queues'
	// delays (RequeueAfter); nil means the real clock. Tests pass a fake
	// one.
	Clock clock.WithTicker
	// Config is passed to every certificate decision; its zero value is
	// certlife's defaults (certificate.Config documents each field: the
	// backoff, the cache grace, how long a request may go unanswered by
	// any issuer before the certificate says so, …). Setup refuses one
	// that certificate.Config.Validate refuses. One default differs:
	// SecretInUseRecheck is SecretRecheck unless set, since a Secret
	// outside the operator's label-selected cache (one a user made, or
	// another Certificate holds) brings no watch event when it is
	// annotated for takeover or released.
	Config certificate.Config
	// ClusterResourceNamespace holds the Secrets ClusterIssuers name.
	ClusterResourceNamespace string
	// EnableCertificateOwnerRef makes each Certificate the owner of its
	// Secret, so that deleting the Certificate deletes the Secret, as the
	// reference operator's --enable-certificate-owner-ref does. Off, a
	// deleted Certificate's Secret stays.
	EnableCertificateOwnerRef bool
	// DisableApprover turns the operator's approver off: a
	// CertificateRequest then waits for another approver (such as
	// approver-policy) to set its Approved or Denied condition. On, every
	// request that has neither is approved, as the reference operator's
	// default approver does.
	DisableApprover bool
	// DisabledIssuerTypes are issuer types — "ca", "selfsigned", "acme",
	// as the reference operator names them — that this operator leaves to
	// another controller, as the reference operator leaves a type out when
	// its --controllers flag omits that type's controllers. An Issuer or
	// ClusterIssuer of such a type gets no Ready condition from this
	// operator, and its CertificateRequests are approved (unless the
	// approver is off) but not answered: the controller that serves the
	// type answers them, through the same CertificateRequest contract as
	// an issuer of another API group. Certificates that name such an
	// issuer are reconciled as any other. Setup refuses a type it does not
	// know, naming it.
	DisabledIssuerTypes []string
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
	// Shim configures the Certificates kept for Ingresses and Gateways
	// annotated with cert-manager.io/issuer or cert-manager.io/cluster-issuer.
	Shim ShimOptions
	// Observe, when set, sees every pass over a Certificate and every
	// answer to a CertificateRequest the operator makes, as
	// host.Config.Observe does: for tracing, or to know that the operator
	// has looked at an object when looking changed nothing. It is called
	// from the controllers' workers and must not block.
	Observe func(host.Event)
}

// Scheme is the scheme the operator's clients use: Kubernetes' built-in
// types, cert-manager.io/v1, acme.cert-manager.io/v1 and the Gateway API's
// gateway.networking.k8s.io/v1.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, cmapi.AddToScheme, cmacme.AddToScheme, gwapi.Install} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// CacheOptions are the operator's cache settings: of Secrets only those
// labelled LabelManaged are held (next private keys and target Secrets,
// the operator's and the reference operator's), of Services only those
// labelled LabelHTTP01 (the HTTP-01 routes' Services; NewManager adds
// HTTPRoutes so labelled when the cluster serves them, as a cache
// refuses a type the API server does not know); every Ingress is held,
// since the Ingress shim reads the annotations of all of them and the
// HTTP-01 routes are Ingresses too. No object keeps its managedFields or
// kubectl's last-applied configuration, and equal
// certificates, CA certificates, label and annotation keys are shared
// among the cached objects.
func CacheOptions() cache.Options {
	return cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}:  {Label: labels.SelectorFromSet(labels.Set{LabelManaged: "true"})},
			&corev1.Service{}: {Label: routingSelector()},
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
	mo.MapperProvider = newRememberingMapper(mo.MapperProvider)
	if servesHTTPRoutes(cfg) {
		mo.Cache.ByObject[&gwapi.HTTPRoute{}] = cache.ByObject{Label: routingSelector()}
	}
	mgr, err := ctrl.NewManager(cfg, mo)
	if err != nil {
		return nil, err
	}
	if err := Setup(mgr, o); err != nil {
		return nil, err
	}
	return mgr, nil
}

// servesHTTPRoutes reports whether the API server serves
// gateway.networking.k8s.io/v1 HTTPRoutes.
func servesHTTPRoutes(cfg *rest.Config) bool {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false
	}
	rl, err := dc.ServerResourcesForGroupVersion(gwapi.SchemeGroupVersion.String())
	if err != nil {
		return false
	}
	return slices.ContainsFunc(rl.APIResources, func(r metav1.APIResource) bool { return r.Name == "httproutes" })
}

// Setup adds the field indexes and the controllers to mgr, whose cache
// must be set up with CacheOptions: the Certificate controller and the
// CertificateRequest controller, both on one certlife host loop
// (certificate/host: Loop.Pass and Loop.Answer) over the Kubernetes
// store, the Issuer and ClusterIssuer controllers, and the shims that
// keep Certificates for annotated Ingresses and Gateways (ShimOptions; the
// Gateway one only when the Gateway API's CRDs are installed, which Setup
// asks the API server, logging when they are not).
// SecretRecheck is how often a Certificate whose Secret it may not write
// (SecretNotOwned, SecretInUse) looks at it again: a minute after the
// Secret is handed over, the Certificate issues into it.
const SecretRecheck = time.Minute

func Setup(mgr manager.Manager, o Options) error {
	if err := o.Config.Validate(); err != nil {
		return fmt.Errorf("operator: options.config: %w", err)
	}
	if o.Config.SecretInUseRecheck == 0 {
		o.Config.SecretInUseRecheck = SecretRecheck
	}
	disabled, err := issuerTypes(o.DisabledIssuerTypes)
	if err != nil {
		return err
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
	if err := setupIndexes(ctx, mgr); err != nil {
		return err
	}

	st := &store{client: mgr.GetClient(), cache: mgr.GetCache(), api: mgr.GetAPIReader(), ownerRefs: o.EnableCertificateOwnerRef}
	if o.ACME.ChallengeServer == nil {
		o.ACME.ChallengeServer = NewChallengeServer()
	}
	o.ACME.ChallengeServer.cache = mgr.GetCache()
	challenges, err := mgr.GetCache().GetInformer(ctx, &cmacme.Challenge{}, cache.BlockUntilSynced(false))
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
	acme := &acmeIssuers{client: mgr.GetClient(), api: mgr.GetAPIReader(), cache: mgr.GetCache(), store: st, clock: o.Clock,
		opts: o.ACME, log: mgr.GetLogger().WithName("acme"), clusterSecret: o.ClusterResourceNamespace, byID: map[string]*acmeRuntime{},
		rest: &restAccess{config: mgr.GetConfig(), client: mgr.GetHTTPClient()}}
	if o.Metrics != nil {
		o.Metrics.acmeRequests.issuers.Store(acme)
		var cached client.Reader = mgr.GetCache()
		o.Metrics.perCertificate.reader.Store(&cached)
	}
	if o.ACME.HTTP01Service.Name != "" {
		if acme.router, err = setupHTTP01Routing(ctx, mgr, o.ACME.HTTP01Service, newQueueFor(o.Clock)); err != nil {
			return err
		}
	}
	recorder := mgr.GetEventRecorder(o.EventSource)
	issuers := &issuers{cache: mgr.GetCache(), store: st, acme: acme, rand: o.Rand, clusterNS: o.ClusterResourceNamespace, approve: !o.DisableApprover, disabled: disabled}
	rec, err := host.NewReconciler(host.Config{Store: st, Clock: o.Clock, Rand: o.Rand, Certificate: o.Config, IssuerFor: issuers.issuerFor, Observe: o.Observe})
	if err != nil {
		return fmt.Errorf("operator: %w", err)
	}
	newQueue := newQueueFor(o.Clock)

	// The Certificate queue lets work already begun go first
	// (startedFirst): a Certificate's first look waits behind the later
	// passes of those under way.
	sf := newStartedFirst()
	certQueue := func(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		q := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[reconcile.Request]{Name: name, Clock: o.Clock, Queue: sf})
		dq := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[reconcile.Request]{Name: name, Clock: o.Clock, Queue: q})
		return workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{Name: name, Clock: o.Clock, DelayingQueue: dq})
	}

	certs := &CertificateReconciler{Reconciler: rec, Cache: mgr.GetCache(), Client: mgr.GetClient(), Clock: o.Clock, Recorder: recorder, Metrics: o.Metrics, echoes: &st.echoes}
	// The Certificate controller's sources tell the store's watchers
	// (the loop) of each change before they queue what it concerns: a
	// pass that waits for its own last writes to show finds them shown.
	c := mgr.GetCache()
	if err := ctrl.NewControllerManagedBy(mgr).Named("certificate").
		WatchesRawSource(source.Kind(c, &cmapi.Certificate{}, reporting(st, sf, host.KindCertificate, sharingKeys(c), certs.deleted))).
		WatchesRawSource(source.Kind(c, &cmapi.CertificateRequest{}, reporting(st, sf, host.KindRequest, ownerKey[*cmapi.CertificateRequest]))).
		WatchesRawSource(source.Kind(c, &corev1.Secret{}, reporting(st, sf, host.KindSecret, secretKeys(c)))).
		WithOptions(controller.Options{MaxConcurrentReconciles: o.Workers, NewQueue: certQueue}).
		Complete(certs); err != nil {
		return err
	}

	reqs := &RequestReconciler{Reconciler: rec, Cache: mgr.GetCache(), Client: mgr.GetClient(), Clock: o.Clock, Recorder: recorder, Metrics: o.Metrics, Approve: !o.DisableApprover}
	if err := ctrl.NewControllerManagedBy(mgr).Named("certificaterequest").
		Watches(&cmapi.CertificateRequest{}, reqs.events()).
		Watches(&cmapi.Issuer{}, handler.EnqueueRequestsFromMapFunc(issuerRequests(c, cmapi.IssuerKind))).
		Watches(&cmapi.ClusterIssuer{}, handler.EnqueueRequestsFromMapFunc(issuerRequests(c, cmapi.ClusterIssuerKind))).
		// A CA Secret that appears or changes: the requests of the issuers
		// that sign with it, which may be waiting for it, are answered
		// again at once, not at their next recheck.
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(caSecretRequests(c, o.ClusterResourceNamespace))).
		WithOptions(controller.Options{MaxConcurrentReconciles: o.Workers, NewQueue: newQueue}).
		Complete(reqs); err != nil {
		return err
	}

	for _, cluster := range []bool{false, true} {
		var obj client.Object = &cmapi.Issuer{}
		name := "issuer"
		if cluster {
			obj, name = &cmapi.ClusterIssuer{}, "clusterissuer"
		}
		if err := ctrl.NewControllerManagedBy(mgr).Named(name).For(obj).
			// A CA Secret the operator manages (one a Certificate wrote).
			Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(caSecretIssuers(c, cluster, o.ClusterResourceNamespace))).
			WithOptions(controller.Options{NewQueue: newQueue}).
			Complete(&IssuerReconciler{Client: mgr.GetClient(), Issuers: issuers, Clock: o.Clock, Rand: o.Rand, Cluster: cluster}); err != nil {
			return err
		}
	}
	return setupShims(ctx, mgr, o, recorder, newQueue)
}

// newQueueFor makes the controllers' work queues on clk.
func newQueueFor(clk clock.WithTicker) func(string, workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return func(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		return workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{Name: name, Clock: clk})
	}
}

// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=httproutes,verbs=get;list;watch;create;update;delete

// setupHTTP01Routing makes the HTTP-01 router and its controller (on the
// leader): a cache of the EndpointSlices of the operator's challenge
// Service, and a sweep of the routes of Challenges that ended or are
// gone, on every change of a Challenge, of a routing object, and of those
// endpoints (and so, at start, of every routing object left from before).
// HTTPRoutes are served when the API server has them at start.
func setupHTTP01Routing(ctx context.Context, mgr manager.Manager, svc client.ObjectKey, newQueue func(string, workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request]) (*http01Router, error) {
	if svc.Namespace == "" {
		return nil, fmt.Errorf("operator: options.acme.http01Service: %q names no namespace", svc.String())
	}
	slices, err := cache.New(mgr.GetConfig(), cache.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		DefaultNamespaces: map[string]cache.Config{svc.Namespace: {}},
		ByObject: map[client.Object]cache.ByObject{&discoveryv1.EndpointSlice{}: {
			Label: labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: svc.Name})}},
		DefaultTransform: stripMetadata})
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(slices); err != nil {
		return nil, err
	}
	r := &http01Router{client: mgr.GetClient(), api: mgr.GetAPIReader(), cache: mgr.GetCache(), slices: slices, source: svc,
		log: mgr.GetLogger().WithName("http01route")}
	_, err = mgr.GetRESTMapper().RESTMapping(gwapi.SchemeGroupVersion.WithKind("HTTPRoute").GroupKind(), gwapi.SchemeGroupVersion.Version)
	switch {
	case err == nil:
		r.gateway = true
	case !meta.IsNoMatchError(err):
		return nil, fmt.Errorf("operator: looking for the Gateway API: %w", err)
	}
	b := ctrl.NewControllerManagedBy(mgr).Named("http01route").
		Watches(&cmacme.Challenge{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(obj client.Object) bool {
			ch, ok := obj.(*cmacme.Challenge)
			return ok && ch.Spec.Solver.HTTP01 != nil && (ch.Spec.Solver.HTTP01.Ingress != nil || ch.Spec.Solver.HTTP01.GatewayHTTPRoute != nil)
		}))).
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(challengeOf)).
		Watches(&networkingv1.Ingress{}, handler.EnqueueRequestsFromMapFunc(challengeOf)).
		WatchesRawSource(source.Kind(slices, client.Object(&discoveryv1.EndpointSlice{}), handler.EnqueueRequestsFromMapFunc(r.routedChallenges))).
		WithOptions(controller.Options{NewQueue: newQueue})
	if r.gateway {
		b = b.Watches(&gwapi.HTTPRoute{}, handler.EnqueueRequestsFromMapFunc(challengeOf))
	}
	if err := b.Complete(r); err != nil {
		return nil, err
	}
	return r, nil
}

// Field indexes the controllers look objects up by.
const (
	// indexOwner: the UID of an object's controller (Secrets and
	// CertificateRequests).
	indexOwner = "operator.certlife.dev/owner"
	// indexSecretName: a Certificate's spec.secretName.
	indexSecretName = "operator.certlife.dev/secret-name"
	// indexIssuer: a CertificateRequest's issuer, "Kind/name".
	indexIssuer = "operator.certlife.dev/issuer"
	// indexCASecret: the CA Secret an Issuer or ClusterIssuer signs with.
	indexCASecret = "operator.certlife.dev/ca-secret"
	// indexChallengeToken: a Challenge's token.
	indexChallengeToken = "operator.certlife.dev/challenge-token"
)

func setupIndexes(ctx context.Context, mgr manager.Manager) error {
	idx, c := mgr.GetFieldIndexer(), mgr.GetCache()
	controllerUID := func(obj client.Object) []string {
		if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
			return []string{string(ref.UID)}
		}
		return nil
	}
	if err := namespacedIndex(ctx, c, &corev1.Secret{}, indexOwner, controllerUID); err != nil {
		return err
	}
	if err := namespacedIndex(ctx, c, &cmapi.CertificateRequest{}, indexOwner, controllerUID); err != nil {
		return err
	}
	if err := namespacedIndex(ctx, c, &cmapi.Certificate{}, indexSecretName, func(obj client.Object) []string {
		return []string{obj.(*cmapi.Certificate).Spec.SecretName}
	}); err != nil {
		return err
	}
	// ClusterIssuers' requests are looked up across namespaces: a
	// controller-runtime index.
	if err := idx.IndexField(ctx, &cmapi.CertificateRequest{}, indexIssuer, func(obj client.Object) []string {
		ref := issuerRefToCore(obj.(*cmapi.CertificateRequest).Spec.IssuerRef)
		if ref.Group != GroupName {
			return nil
		}
		return []string{ref.Kind + "/" + ref.Name}
	}); err != nil {
		return err
	}
	// The challenge server finds presented tokens in the cache.
	if err := idx.IndexField(ctx, &cmacme.Challenge{}, indexChallengeToken, func(obj client.Object) []string {
		return []string{obj.(*cmacme.Challenge).Spec.Token}
	}); err != nil {
		return err
	}
	caSecret := func(obj client.Object) []string {
		if ca := obj.(cmapi.GenericIssuer).GetSpec().CA; ca != nil {
			return []string{ca.SecretName}
		}
		return nil
	}
	if err := idx.IndexField(ctx, &cmapi.Issuer{}, indexCASecret, caSecret); err != nil {
		return err
	}
	return idx.IndexField(ctx, &cmapi.ClusterIssuer{}, indexCASecret, caSecret)
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

// reporting is an event handler that tells the store's watchers of each
// add, update and delete, then queues the Certificates keys names — all
// but the one whose pass made the write the event shows, which the pass
// after that write has read (echoes). A deleted object is handed to each
// of deleted first.
//
// Keys go to the queue as work under way (sf.add), but for a created
// Certificate itself, which is work not yet begun (sf.addNew).
func reporting[T client.Object](st *store, sf *startedFirst, kind host.Kind, keys func(context.Context, T) []reconcile.Request, deleted ...func(T)) handler.TypedEventHandler[T, reconcile.Request] {
	all := func(ctx context.Context, obj T, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for _, r := range keys(ctx, obj) {
			sf.add(q, r)
		}
	}
	// queue queues the keys, but for the Certificate whose pass wrote
	// what the event shows (echoes).
	queue := func(ctx context.Context, obj T, deleted bool, q workqueue.TypedRateLimitingInterface[reconcile.Request], isNew bool) {
		ns := obj.GetNamespace()
		writer := st.echoes.echo(kind, obj, deleted, func(writer string) {
			sf.add(q, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: writer}})
		})
		for _, r := range keys(ctx, obj) {
			switch {
			case r.Name == writer && r.Namespace == ns:
				// The pass after that write reads it.
			case isNew && kind == host.KindCertificate && r.Name == obj.GetName():
				sf.addNew(q, r)
			default:
				sf.add(q, r)
			}
		}
	}
	return handler.TypedFuncs[T, reconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[T], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			st.changed(kind, e.Object, false)
			queue(ctx, e.Object, false, q, true)
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[T], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			st.changed(kind, e.ObjectNew, false)
			if e.ObjectOld.GetResourceVersion() == e.ObjectNew.GetResourceVersion() {
				all(ctx, e.ObjectNew, q) // a resync: nobody wrote
				return
			}
			queue(ctx, e.ObjectNew, false, q, false)
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[T], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			st.changed(kind, e.Object, true)
			for _, f := range deleted {
				f(e.Object)
			}
			queue(ctx, e.Object, true, q, false)
		},
		GenericFunc: func(ctx context.Context, e event.TypedGenericEvent[T], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			all(ctx, e.Object, q)
		},
	}
}

// sharingKeys: a Certificate, and the others naming its Secret.
func sharingKeys(c client.Reader) func(context.Context, *cmapi.Certificate) []reconcile.Request {
	return func(ctx context.Context, crt *cmapi.Certificate) []reconcile.Request {
		out := []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(crt)}}
		var list cmapi.CertificateList
		if err := c.List(ctx, &list, client.InNamespace(crt.Namespace), client.MatchingFields{indexSecretName: crt.Spec.SecretName}); err != nil {
			return out
		}
		for i := range list.Items {
			if o := &list.Items[i]; o.UID != crt.UID {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)})
			}
		}
		return out
	}
}

// ownerKey: the Certificate that controls an object.
func ownerKey[T client.Object](_ context.Context, obj T) []reconcile.Request {
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil && ref.Kind == cmapi.CertificateKind && ref.APIVersion == cmapi.SchemeGroupVersion.String() {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: ref.Name}}}
	}
	return nil
}

// secretKeys: a Secret's controlling Certificate and the Certificates
// naming it.
func secretKeys(c client.Reader) func(context.Context, *corev1.Secret) []reconcile.Request {
	return func(ctx context.Context, s *corev1.Secret) []reconcile.Request {
		out := ownerKey(ctx, s)
		if nextPrivateKey(s) {
			return out // no Certificate names it: it is its owner's alone
		}
		var list cmapi.CertificateList
		if err := c.List(ctx, &list, client.InNamespace(s.Namespace), client.MatchingFields{indexSecretName: s.Name}); err == nil {
			for i := range list.Items {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
			}
		}
		return out
	}
}

// nextPrivateKey reports a Secret the operator made to hold a
// Certificate's next private key (labelled so): its owner's alone, never
// a Certificate's secretName or an issuer's CA. Two of an issuance's
// three Secret events are about one (made, then deleted), so the maps
// skip their lookups for it.
func nextPrivateKey(obj client.Object) bool {
	return obj.GetLabels()[cmapi.IsNextPrivateKeySecretLabelKey] == "true"
}

// caSecretIssuers maps a Secret to the issuers (or cluster issuers)
// signing with it.
func caSecretIssuers(c client.Reader, cluster bool, clusterNS string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		if nextPrivateKey(obj) {
			return nil
		}
		var out []reconcile.Request
		match := client.MatchingFields{indexCASecret: obj.GetName()}
		if cluster {
			var list cmapi.ClusterIssuerList
			if obj.GetNamespace() != clusterNS || c.List(ctx, &list, match) != nil {
				return nil
			}
			for i := range list.Items {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
			}
			return out
		}
		var list cmapi.IssuerList
		if c.List(ctx, &list, client.InNamespace(obj.GetNamespace()), match) != nil {
			return nil
		}
		for i := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
		return out
	}
}

// caSecretRequests maps a CA Secret to the unanswered requests of the
// issuers and cluster issuers that sign with it.
func caSecretRequests(c client.Reader, clusterNS string) handler.MapFunc {
	issuers, clusterIssuers := caSecretIssuers(c, false, clusterNS), caSecretIssuers(c, true, clusterNS)
	requests, clusterRequests := issuerRequests(c, cmapi.IssuerKind), issuerRequests(c, cmapi.ClusterIssuerKind)
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		var out []reconcile.Request
		for _, is := range issuers(ctx, obj) {
			out = append(out, requests(ctx, &cmapi.Issuer{ObjectMeta: metav1.ObjectMeta{Namespace: is.Namespace, Name: is.Name}})...)
		}
		for _, is := range clusterIssuers(ctx, obj) {
			out = append(out, clusterRequests(ctx, &cmapi.ClusterIssuer{ObjectMeta: metav1.ObjectMeta{Name: is.Name}})...)
		}
		return out
	}
}

// issuerRequests maps an issuer to the unanswered requests naming it.
func issuerRequests(c client.Reader, kind string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		opts := []client.ListOption{client.MatchingFields{indexIssuer: kind + "/" + obj.GetName()}}
		if kind == cmapi.IssuerKind {
			opts = append(opts, client.InNamespace(obj.GetNamespace()))
		}
		var list cmapi.CertificateRequestList
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
