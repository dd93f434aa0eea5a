package operator

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gwapi "sigs.k8s.io/gateway-api/apis/v1"
)

// ShimOptions configure the Certificates the operator keeps for annotated
// Ingresses and Gateways, as the reference operator's ingress-shim and
// gateway-shim do. The zero value serves both (the Gateway one when the
// Gateway API's CRDs are installed when the operator starts).
type ShimOptions struct {
	// DisableIngress turns the Ingress shim off, as the reference
	// operator's --controllers=*,-ingress-shim does.
	DisableIngress bool
	// DisableGateway turns the Gateway shim off, as the reference
	// operator's --enable-gateway-api=false (its default) does.
	DisableGateway bool
	// DefaultIssuerName, DefaultIssuerKind and DefaultIssuerGroup are the
	// issuer of an Ingress that asks for a certificate with one of
	// AutoCertificateAnnotations and names no issuer (the reference
	// operator's --default-issuer-name, -kind and -group). Kind defaults
	// to Issuer, Group to cert-manager.io; with no name, such an Ingress
	// gets a Warning Event saying no issuer is named, as the reference
	// operator's does.
	DefaultIssuerName, DefaultIssuerKind, DefaultIssuerGroup string
	// AutoCertificateAnnotations are annotations that, set to "true" on
	// an Ingress, ask for certificates from the default issuer; nil
	// means kubernetes.io/tls-acme, as the reference operator's
	// --auto-certificate-annotations. They are not read on Gateways.
	AutoCertificateAnnotations []string
	// ExtraCertificateAnnotations are annotations copied from the
	// Ingress or Gateway to its Certificates (the reference operator's
	// --extra-certificate-annotations).
	ExtraCertificateAnnotations []string
}

// Events the shims record on an Ingress or a Gateway (the reference
// operator's reasons, and one of the operator's own).
const (
	// ReasonBadConfig: an annotation or a TLS entry the shim cannot use;
	// the note names it and its value.
	ReasonBadConfig = "BadConfig"
	// ReasonCreateCertificate, ReasonUpdateCertificate and
	// ReasonDeleteCertificate: a Certificate made, changed or removed.
	ReasonCreateCertificate = "CreateCertificate"
	ReasonUpdateCertificate = "UpdateCertificate"
	ReasonDeleteCertificate = "DeleteCertificate"
	// ReasonCertificateNotOwned: a Certificate of the name the shim
	// would use exists and is not the resource's own; the shim leaves it.
	ReasonCertificateNotOwned = "CertificateNotOwned"
)

// applysetLabel is kubectl's ApplySet membership label, which the
// Certificates do not inherit from their Ingress or Gateway: a
// Certificate labelled so would be pruned by the next apply.
const applysetLabel = "applyset.kubernetes.io/part-of"

const (
	kindIngress = "Ingress"
	kindGateway = "Gateway"
)

// The shims read Ingresses and Gateways, and keep Certificates.
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gateways,verbs=get;list;watch
// +kubebuilder:rbac:groups=cert-manager.io,resources=certificates,verbs=create;update;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// tlsEntry is one Certificate a resource asks for: its Secret and names.
type tlsEntry struct {
	secret string
	hosts  []string
}

// shimKind is what differs between the Ingress and the Gateway shim.
type shimKind struct {
	gvk     schema.GroupVersionKind
	newObj  func() client.Object
	newList func() client.ObjectList
	// names lists the names of a list of newList.
	names func(client.ObjectList) []string
	// auto: whether AutoCertificateAnnotations ask for certificates.
	auto bool
	// entries are the Certificates obj asks for, and problems with the
	// entries skipped; fatal stops the shim from changing anything.
	entries func(obj client.Object) (entries []tlsEntry, skipped []string, fatal error)
	// secrets are all the Secrets obj names, served or not: a
	// Certificate of one of them is kept.
	secrets func(obj client.Object) []string
}

// shimReconciler keeps the Certificates of one kind of resource.
type shimReconciler struct {
	kind  shimKind
	cache client.Reader
	// api reads from the API server: whether a Certificate's owner is
	// really gone before the Certificate is removed.
	api      client.Reader
	client   client.Client
	recorder events.EventRecorder
	opts     ShimOptions
}

// shimOwnerValue is the indexShimOwner value of a Certificate controlled
// by a resource of kind gvk named name.
func shimOwnerValue(gvk schema.GroupVersionKind, name string) string {
	return gvk.Kind + "." + gvk.Group + "/" + name
}

// shimOwner is the indexShimOwner values of a Certificate: its
// controller's when that is an Ingress or a Gateway.
func shimOwner(obj client.Object) []string {
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil {
		return nil
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil
	}
	if (gv.Group == networkingv1.GroupName && ref.Kind == kindIngress) || (gv.Group == gwapi.GroupName && ref.Kind == kindGateway) {
		return []string{shimOwnerValue(gv.WithKind(ref.Kind), ref.Name)}
	}
	return nil
}

// Reconcile keeps the Certificates of one Ingress or Gateway.
func (r *shimReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := r.kind.newObj()
	if err := r.cache.Get(ctx, req.NamespacedName, obj); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		// Gone: the garbage collector removes its Certificates; so does
		// the shim, for a cluster without one and to be quick.
		return ctrl.Result{}, r.removeOwned(ctx, nil, req.Namespace, req.Name, nil)
	}
	if obj.GetDeletionTimestamp() != nil || slices.Contains(obj.GetFinalizers(), metav1.FinalizerDeleteDependents) {
		return ctrl.Result{}, nil // being deleted: the garbage collector's
	}
	annotations := obj.GetAnnotations()
	if !r.asks(annotations) {
		return ctrl.Result{}, r.removeOwned(ctx, obj, obj.GetNamespace(), obj.GetName(), nil)
	}
	issuer, err := shimIssuer(r.opts, annotations)
	if err != nil {
		r.event(obj, nil, corev1.EventTypeWarning, ReasonBadConfig, actionReadAnnotations, err.Error())
		return ctrl.Result{}, nil
	}
	entries, skipped, err := r.kind.entries(obj)
	if err != nil {
		r.event(obj, nil, corev1.EventTypeWarning, ReasonBadConfig, actionReadTLS, err.Error())
		return ctrl.Result{}, nil
	}
	if len(skipped) > 0 {
		r.event(obj, nil, corev1.EventTypeWarning, ReasonBadConfig, actionReadTLS, strings.Join(skipped, "; "))
	}

	// What every Certificate of obj has in common.
	var template cmapi.CertificateSpec
	if err := applyAnnotations(&template, annotations); err != nil {
		r.event(obj, nil, corev1.EventTypeWarning, ReasonBadConfig, actionReadAnnotations, err.Error()+"; its Certificates are left as they are")
		return ctrl.Result{}, nil
	}
	labels := maps.Clone(obj.GetLabels())
	delete(labels, applysetLabel)
	extra := solverAnnotations(r.kind.gvk.Kind, obj.GetName(), annotations)
	for _, k := range r.opts.ExtraCertificateAnnotations {
		if v, ok := annotations[k]; ok {
			extra[k] = v
		}
	}

	wanted := map[string]bool{}
	for _, e := range entries {
		wanted[e.secret] = true
		want := &cmapi.Certificate{ObjectMeta: metav1.ObjectMeta{
			Name: e.secret, Namespace: obj.GetNamespace(), Labels: maps.Clone(labels), Annotations: maps.Clone(extra),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(obj, r.kind.gvk)},
		}}
		want.Spec = *template.DeepCopy()
		want.Spec.SecretName = e.secret
		want.Spec.IssuerRef = issuer
		if want.Spec.Usages == nil {
			want.Spec.Usages = cmapi.DefaultKeyUsages()
		}
		dnsNames, ips := splitHosts(e.hosts)
		want.Spec.DNSNames = append(dnsNames, want.Spec.DNSNames...)
		want.Spec.IPAddresses = append(ips, want.Spec.IPAddresses...)
		if err := r.keep(ctx, obj, want); err != nil {
			return ctrl.Result{}, err
		}
	}
	// A Certificate whose Secret the resource still names is kept even
	// when its entry is skipped, as the reference operator does: a typo
	// in a listener does not delete a certificate in use.
	for _, s := range r.kind.secrets(obj) {
		wanted[s] = true
	}
	return ctrl.Result{}, r.removeOwned(ctx, obj, obj.GetNamespace(), obj.GetName(), wanted)
}

// asks reports whether annotations ask for certificates.
func (r *shimReconciler) asks(annotations map[string]string) bool {
	if _, ok := annotations[cmapi.IngressIssuerNameAnnotationKey]; ok {
		return true
	}
	if _, ok := annotations[cmapi.IngressClusterIssuerNameAnnotationKey]; ok {
		return true
	}
	if !r.kind.auto {
		return false
	}
	auto := r.opts.AutoCertificateAnnotations
	if auto == nil {
		auto = []string{"kubernetes.io/tls-acme"}
	}
	for _, k := range auto {
		if ok, _ := strconv.ParseBool(annotations[k]); ok {
			return true
		}
	}
	return false
}

// keep makes the Certificate want, or brings the one obj owns in line
// with it; one obj does not own is left alone.
func (r *shimReconciler) keep(ctx context.Context, obj client.Object, want *cmapi.Certificate) error {
	var have cmapi.Certificate
	err := r.cache.Get(ctx, client.ObjectKeyFromObject(want), &have)
	if apierrors.IsNotFound(err) {
		if err := r.client.Create(ctx, want); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("certificate %s was made meanwhile: %w", want.Name, err)
			}
			return err
		}
		r.event(obj, want, corev1.EventTypeNormal, ReasonCreateCertificate, "Create", fmt.Sprintf("Created Certificate %s", want.Name))
		return nil
	}
	if err != nil {
		return err
	}
	owner := metav1.GetControllerOfNoCopy(&have)
	if owner == nil || owner.UID != obj.GetUID() {
		if owner != nil && r.staleOwner(owner, obj) {
			// A former resource of the same name made it: it goes (the
			// garbage collector would remove it), and the next pass makes
			// this one's.
			return r.removeOrphan(ctx, obj, &have)
		}
		whose := "has no owner"
		if owner != nil {
			whose = fmt.Sprintf("is owned by %s %s", owner.Kind, owner.Name)
		}
		r.event(obj, &have, corev1.EventTypeWarning, ReasonCertificateNotOwned, "Skip",
			fmt.Sprintf("Certificate %s exists and %s, not this %s: it is left as it is", want.Name, whose, r.kind.gvk.Kind))
		return nil
	}
	updated := have.DeepCopy()
	updated.Spec = want.Spec
	updated.Labels = want.Labels
	for _, k := range shimManagedAnnotations {
		if _, ok := want.Annotations[k]; !ok {
			delete(updated.Annotations, k)
		}
	}
	updated.Annotations = mergeInto(updated.Annotations, want.Annotations)
	if equality.Semantic.DeepEqual(updated.Spec, have.Spec) && equality.Semantic.DeepEqual(updated.Labels, have.Labels) &&
		equality.Semantic.DeepEqual(updated.Annotations, have.Annotations) {
		return nil
	}
	if err := r.client.Update(ctx, updated); err != nil {
		return err
	}
	r.event(obj, updated, corev1.EventTypeNormal, ReasonUpdateCertificate, "Update", fmt.Sprintf("Updated Certificate %s", want.Name))
	return nil
}

// staleOwner reports whether ref is a former resource of obj's kind and
// name (deleted, and made again).
func (r *shimReconciler) staleOwner(ref *metav1.OwnerReference, obj client.Object) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == r.kind.gvk.Group && ref.Kind == r.kind.gvk.Kind && ref.Name == obj.GetName() && ref.UID != obj.GetUID()
}

// removeOwned deletes the Certificates that a resource of the shim's kind
// named name controls, but for those keep names — obj's own, or a former
// one's (obj nil: none exists now).
func (r *shimReconciler) removeOwned(ctx context.Context, obj client.Object, namespace, name string, keep map[string]bool) error {
	var list cmapi.CertificateList
	if err := r.cache.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{indexShimOwner: shimOwnerValue(r.kind.gvk, name)}); err != nil {
		return err
	}
	for i := range list.Items {
		c := &list.Items[i]
		ref := metav1.GetControllerOfNoCopy(c)
		current := obj != nil && ref != nil && ref.UID == obj.GetUID()
		if current && keep[c.Name] {
			continue
		}
		remove := r.remove
		if !current {
			remove = r.removeOrphan
		}
		if err := remove(ctx, obj, c); err != nil {
			return err
		}
	}
	return nil
}

// removeOrphan deletes c when the API server confirms that the resource
// controlling it is gone (the cache may lag).
func (r *shimReconciler) removeOrphan(ctx context.Context, obj client.Object, c *cmapi.Certificate) error {
	ref := metav1.GetControllerOfNoCopy(c)
	if ref == nil {
		return nil
	}
	owner := r.kind.newObj()
	err := r.api.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: ref.Name}, owner)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return err
	case owner.GetUID() == ref.UID:
		return nil // there after all: its own pass keeps it
	}
	return r.remove(ctx, obj, c)
}

// remove deletes c, if it is still the object read.
func (r *shimReconciler) remove(ctx context.Context, obj client.Object, c *cmapi.Certificate) error {
	uid := c.UID
	err := r.client.Delete(ctx, c, client.Preconditions{UID: &uid})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or made again meanwhile: its own event comes
	}
	if err != nil {
		return err
	}
	if obj != nil {
		r.event(obj, c, corev1.EventTypeNormal, ReasonDeleteCertificate, "Delete", fmt.Sprintf("Deleted Certificate %s, which the %s no longer asks for", c.Name, r.kind.gvk.Kind))
	}
	return nil
}

// Actions of the shims' Events. Events of one object (at one resource
// version), reason, action and related object are one series, which keeps
// the first note: each problem found in one pass has its own.
const (
	actionReadAnnotations = "ReadAnnotations"
	actionReadTLS         = "ReadTLS"
)

// event records an Event on obj, about the Certificate related if any.
func (r *shimReconciler) event(obj client.Object, related *cmapi.Certificate, typ, reason, action, note string) {
	if related == nil {
		recordEvent(r.recorder, obj, nil, typ, reason, action, note)
		return
	}
	recordEvent(r.recorder, obj, related, typ, reason, action, note)
}

// ingressShim is the Ingress kind: one Certificate per TLS entry.
func ingressShim() shimKind {
	return shimKind{
		gvk:     networkingv1.SchemeGroupVersion.WithKind(kindIngress),
		newObj:  func() client.Object { return &networkingv1.Ingress{} },
		newList: func() client.ObjectList { return &networkingv1.IngressList{} },
		names: func(l client.ObjectList) []string {
			var out []string
			for _, o := range l.(*networkingv1.IngressList).Items {
				out = append(out, o.Name)
			}
			return out
		},
		auto: true,
		entries: func(obj client.Object) ([]tlsEntry, []string, error) {
			ing := obj.(*networkingv1.Ingress)
			// One Certificate per entry, named after its Secret: two
			// entries of one Secret cannot both have theirs.
			first := map[string]int{}
			for i, tls := range ing.Spec.TLS {
				if j, ok := first[tls.SecretName]; ok {
					return nil, nil, field.Invalid(field.NewPath("spec", "tls").Index(j).Child("secretName"), tls.SecretName,
						fmt.Sprintf("also named by spec.tls[%d]: one Secret per TLS entry", i))
				}
				first[tls.SecretName] = i
			}
			var out []tlsEntry
			var skipped []string
			for i, tls := range ing.Spec.TLS {
				path := field.NewPath("spec", "tls").Index(i)
				var errs field.ErrorList
				if len(tls.Hosts) == 0 {
					errs = append(errs, field.Required(path.Child("hosts"), "the names to certify"))
				}
				if tls.SecretName == "" {
					errs = append(errs, field.Required(path.Child("secretName"), "the Secret to keep the certificate in"))
				}
				if len(errs) > 0 {
					skipped = append(skipped, "Skipped a TLS entry: "+errs.ToAggregate().Error())
					continue
				}
				out = append(out, tlsEntry{secret: tls.SecretName, hosts: tls.Hosts})
			}
			return out, skipped, nil
		},
		secrets: func(obj client.Object) []string {
			var out []string
			for _, tls := range obj.(*networkingv1.Ingress).Spec.TLS {
				out = append(out, tls.SecretName)
			}
			return out
		},
	}
}

// Field indexes of the shims.
const (
	// indexShimOwner: a Certificate's controlling Ingress or Gateway,
	// "Kind.group/name".
	indexShimOwner = "operator.certlife.dev/shim-owner"
	// indexTLSSecret: the Secrets an Ingress or a Gateway names.
	indexTLSSecret = "operator.certlife.dev/tls-secret"
)

// setupShims registers the Ingress shim, and the Gateway shim when the
// Gateway API is installed.
func setupShims(ctx context.Context, mgr manager.Manager, o Options, recorder events.EventRecorder,
	newQueue func(string, workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	var kinds []shimKind
	if !o.Shim.DisableIngress {
		kinds = append(kinds, ingressShim())
	}
	if !o.Shim.DisableGateway {
		gk := schema.GroupKind{Group: gwapi.GroupName, Kind: kindGateway}
		switch _, err := mgr.GetRESTMapper().RESTMapping(gk, gwapi.GroupVersion.Version); {
		case meta.IsNoMatchError(err):
			mgr.GetLogger().Info("the Gateway API (gateway.networking.k8s.io/v1 Gateway) is not installed: Certificates are not made from Gateways; install its CRDs and restart the operator for them")
		case err != nil:
			return fmt.Errorf("operator: looking up the Gateway API: %w", err)
		default:
			kinds = append(kinds, gatewayShim())
		}
	}
	if len(kinds) == 0 {
		return nil
	}
	c := mgr.GetCache()
	if err := namespacedIndex(ctx, c, &cmapi.Certificate{}, indexShimOwner, shimOwner); err != nil {
		return err
	}
	for _, k := range kinds {
		if err := namespacedIndex(ctx, c, k.newObj(), indexTLSSecret, k.secrets); err != nil {
			return err
		}
		r := &shimReconciler{kind: k, cache: c, api: mgr.GetAPIReader(), client: mgr.GetClient(), recorder: recorder, opts: o.Shim}
		name := strings.ToLower(k.gvk.Kind) + "-shim"
		if err := ctrl.NewControllerManagedBy(mgr).Named(name).For(k.newObj()).
			// A Certificate made, deleted or changed (not its status):
			// the resource controlling it, and those naming its Secret
			// (which may wait for a Certificate not theirs to go).
			Watches(&cmapi.Certificate{}, handler.EnqueueRequestsFromMapFunc(shimCertificateKeys(c, k)),
				builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
			WithOptions(controller.Options{NewQueue: newQueue}).
			Complete(r); err != nil {
			return err
		}
	}
	return nil
}

// shimCertificateKeys maps a Certificate to the resources of kind k that
// control it or name its Secret.
func shimCertificateKeys(c client.Reader, k shimKind) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		var out []reconcile.Request
		if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
			if gv, err := schema.ParseGroupVersion(ref.APIVersion); err == nil && gv.Group == k.gvk.Group && ref.Kind == k.gvk.Kind {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: ref.Name}})
			}
		}
		// The shim's Certificates are named after their Secrets.
		list := k.newList()
		if err := c.List(ctx, list, client.InNamespace(obj.GetNamespace()), client.MatchingFields{indexTLSSecret: obj.GetName()}); err != nil {
			return out
		}
		for _, name := range k.names(list) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}})
		}
		return out
	}
}
