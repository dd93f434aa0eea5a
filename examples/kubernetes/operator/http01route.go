package operator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"

	cmacme "github.com/cert-manager/cert-manager/pkg/apis/acme/v1"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gwapi "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/challenge"
)

// HTTP-01 routing. For a Challenge whose solver sets http01.ingress or
// http01.gatewayHTTPRoute, the operator makes, when it presents the
// challenge and before the self-check, what sends the CA's request for
// /.well-known/acme-challenge/<token> on the challenge's name to its own
// challenge server: a Service in the challenge's namespace without a
// selector, whose EndpointSlices mirror those of the operator's challenge
// Service (ACMEOptions.HTTP01Service; every replica serves every
// presented token, so any endpoint answers), and an Ingress or an
// HTTPRoute to it (or, with http01.ingress.name, a path added to that
// Ingress). All are owned by the Challenge and labelled LabelHTTP01; they
// go when the challenge ends, and a sweep (the http01route controller)
// removes those of a Challenge that ended or is gone, whenever that
// happened — while the operator was down, or between making a route and
// recording the challenge presented.

// Labels and annotations of the HTTP-01 routing objects.
const (
	// LabelHTTP01 marks what the operator made or edited to route HTTP-01:
	// "route" on the Services, EndpointSlices, Ingresses and HTTPRoutes it
	// made (owned by their Challenge), "edited" on an Ingress named by
	// http01.ingress.name while it carries challenge paths.
	LabelHTTP01 = "operator.certlife.dev/http01"
	// AnnotationHTTP01Edits on an Ingress named by http01.ingress.name:
	// the challenge paths the operator added, by Challenge UID, as JSON,
	// so that exactly these are taken out again.
	AnnotationHTTP01Edits = "operator.certlife.dev/http01-edits"
	// annotationHTTP01Spec: a hash of what the operator last wrote to a
	// routing object, so it rewrites only what changed (the API server's
	// defaults aside).
	annotationHTTP01Spec = "operator.certlife.dev/http01-spec"

	http01Route  = "route"
	http01Edited = "edited"
	// endpointSliceManager is the managed-by label value of the mirrored
	// EndpointSlices (the EndpointSlice controller leaves them alone).
	endpointSliceManager = "operator.certlife.dev"
	// nginxWhitelist is the annotation cert-manager puts on its solver
	// Ingresses, so that a source range set for the host does not keep
	// the CA out; an ingressTemplate annotation of the same last segment
	// replaces it.
	nginxWhitelist = "nginx.ingress.kubernetes.io/whitelist-source-range"
	// annotationIngressClass is the class annotation http01.ingress.class
	// sets.
	annotationIngressClass = "kubernetes.io/ingress.class"
)

// challengeGVK is the Challenge's group, version and kind, for owner
// references.
var challengeGVK = cmacme.SchemeGroupVersion.WithKind("Challenge")

// routeConfig is a Challenge's HTTP-01 routing settings, from its solver.
type routeConfig struct {
	ingress *cmacme.ACMEChallengeSolverHTTP01Ingress
	gateway *cmacme.ACMEChallengeSolverHTTP01GatewayHTTPRoute
}

func (c routeConfig) any() bool { return c.ingress != nil || c.gateway != nil }

func (c routeConfig) serviceType() corev1.ServiceType {
	t := corev1.ServiceType("")
	switch {
	case c.ingress != nil:
		t = c.ingress.ServiceType
	case c.gateway != nil:
		t = c.gateway.ServiceType
	}
	if t == "" {
		t = corev1.ServiceTypeNodePort // cert-manager's default
	}
	return t
}

// routeOf reads the routing settings of an HTTP-01 solver.
func routeOf(s challenge.Solver) routeConfig {
	if s.HTTP01 == nil {
		return routeConfig{}
	}
	h := http01SolverFromCore(s.HTTP01)
	return routeConfig{ingress: h.Ingress, gateway: h.GatewayHTTPRoute}
}

// challengeRoute is the routing a Challenge asks for: none for a
// Challenge the operator does not keep, or that is not HTTP-01.
func challengeRoute(c *cmacme.Challenge) routeConfig {
	if _, ours := c.Labels[LabelACMEIssuer]; !ours || c.Spec.Type != cmacme.ACMEChallengeTypeHTTP01 {
		return routeConfig{}
	}
	return routeOf(ChallengeToCore(c).Spec.Solver)
}

// routeName is the name of what routes a Challenge's HTTP-01 request: a
// hash of the Challenge's name, a valid Service name (DNS-1035) of fixed
// length.
func routeName(challengeName string) string {
	h := sha256.Sum256([]byte(challengeName))
	return "certlife-http01-" + hex.EncodeToString(h[:10])
}

// sliceName is a mirrored EndpointSlice's name.
func sliceName(service string, t discoveryv1.AddressType) string {
	return service + "-" + strings.ToLower(string(t))
}

// http01Router makes, keeps and removes the routing objects.
type http01Router struct {
	client client.Client
	api    client.Reader
	// cache holds Challenges, and Services, Ingresses and HTTPRoutes
	// labelled LabelHTTP01.
	cache client.Reader
	// slices holds the EndpointSlices of source, the operator's challenge
	// Service; nil when none is configured.
	slices client.Reader
	source types.NamespacedName
	// gateway is set when the API server serves HTTPRoutes.
	gateway bool
	log     logr.Logger
}

// errNoHTTPRoutes: an issuer asks for an HTTPRoute, and the cluster has
// no Gateway API.
var errNoHTTPRoutes = errors.New("http01.gatewayHTTPRoute: the API server serves no HTTPRoute (gateway.networking.k8s.io/v1): install the Gateway API CRDs and restart the operator")

// ensure makes (or adopts, or brings up to date) what routes c's
// HTTP-01 request to the challenge server.
func (r *http01Router) ensure(ctx context.Context, c *cmacme.Challenge) error {
	cfg := challengeRoute(c)
	if !cfg.any() || r.source.Name == "" {
		return nil // nothing asked, or nowhere to route to (the issuer's condition says so)
	}
	if cfg.ingress != nil && cfg.ingress.Class != nil && cfg.ingress.IngressClassName != nil {
		return errors.New("http01.ingress: class and ingressClassName cannot both be set")
	}
	if cfg.ingress == nil && !r.gateway {
		return errNoHTTPRoutes
	}
	svc, err := r.ensureService(ctx, c, cfg)
	if err != nil {
		return fmt.Errorf("the HTTP-01 Service for challenge %s/%s: %w", c.Namespace, c.Name, err)
	}
	if err := r.mirror(ctx, svc); err != nil {
		return fmt.Errorf("the HTTP-01 EndpointSlices for challenge %s/%s: %w", c.Namespace, c.Name, err)
	}
	switch {
	case cfg.ingress != nil && cfg.ingress.Name != "":
		err = r.editIngress(ctx, c, svc)
	case cfg.ingress != nil:
		err = r.ensureIngress(ctx, c, cfg.ingress, svc)
	default:
		err = r.ensureHTTPRoute(ctx, c, cfg.gateway, svc)
	}
	if err != nil {
		return fmt.Errorf("the HTTP-01 route for challenge %s/%s: %w", c.Namespace, c.Name, err)
	}
	return nil
}

// routeLabels are the labels of every routing object of c: LabelHTTP01,
// and cert-manager's solver labels (which its users' policies may
// select).
func routeLabels(c *cmacme.Challenge) map[string]string {
	return map[string]string{
		LabelHTTP01:                         http01Route,
		cmacme.SolverIdentificationLabelKey: "true",
		cmacme.DomainLabelKey:               labelValue(c.Spec.DNSName),
		cmacme.TokenLabelKey:                labelValue(c.Spec.Token),
	}
}

func owner(c *cmacme.Challenge) []metav1.OwnerReference {
	return []metav1.OwnerReference{*metav1.NewControllerRef(c, challengeGVK)}
}

// challengeOwner is the Challenge that controls a routing object: its
// name and UID, empty when it is not one the operator made.
func challengeOwner(obj client.Object) (string, types.UID) {
	if obj.GetLabels()[LabelHTTP01] != http01Route {
		return "", ""
	}
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil || ref.Kind != challengeGVK.Kind || ref.APIVersion != challengeGVK.GroupVersion().String() {
		return "", ""
	}
	return ref.Name, ref.UID
}

// specHash is the annotationHTTP01Spec value of what is written.
func specHash(v any) string {
	b, _ := json.Marshal(v)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:12])
}

// put makes want, owned by c, or brings the object of its name to it:
// one of c's that differs in what the operator writes is updated, one of
// an earlier Challenge of the same name replaced, one the operator did
// not make refused. set copies what the operator writes from want to
// the object read.
func put[T client.Object](ctx context.Context, r *http01Router, c *cmacme.Challenge, want T, empty func() T, set func(have, want T)) (T, error) {
	want.SetLabels(mergeInto(want.GetLabels(), routeLabels(c)))
	want.SetOwnerReferences(owner(c))
	hash := specHash(want)
	want.SetAnnotations(mergeInto(want.GetAnnotations(), map[string]string{annotationHTTP01Spec: hash}))
	for range 3 {
		have := empty()
		err := r.api.Get(ctx, client.ObjectKeyFromObject(want), have)
		switch {
		case apierrors.IsNotFound(err):
			obj := want.DeepCopyObject().(T)
			if err := r.client.Create(ctx, obj); err != nil {
				if apierrors.IsAlreadyExists(err) {
					continue
				}
				return obj, err
			}
			return obj, nil
		case err != nil:
			return have, err
		}
		name, uid := challengeOwner(have)
		switch {
		case name == "":
			return have, fmt.Errorf("%T %s/%s exists and is not the operator's: it is left alone", have, have.GetNamespace(), have.GetName())
		case uid != c.UID:
			// An earlier Challenge of the same name: not c's to adopt.
			puid := have.GetUID()
			if err := r.client.Delete(ctx, have, client.Preconditions{UID: &puid}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return have, err
			}
			continue
		case have.GetAnnotations()[annotationHTTP01Spec] == hash:
			return have, nil
		}
		set(have, want)
		have.SetLabels(mergeInto(have.GetLabels(), want.GetLabels()))
		have.SetAnnotations(mergeInto(have.GetAnnotations(), want.GetAnnotations()))
		if err := r.client.Update(ctx, have); err != nil {
			if apierrors.IsConflict(err) {
				continue
			}
			return have, err
		}
		return have, nil
	}
	return want, fmt.Errorf("%T %s/%s: changed by another writer while it was being written", want, want.GetNamespace(), want.GetName())
}

// ensureService makes the challenge's Service: no selector, the port of
// the operator's challenge Service, of the type the settings ask for.
func (r *http01Router) ensureService(ctx context.Context, c *cmacme.Challenge, cfg routeConfig) (*corev1.Service, error) {
	var src corev1.Service
	if err := r.api.Get(ctx, r.source, &src); err != nil {
		return nil, fmt.Errorf("the operator's challenge Service %s: %w", r.source, err)
	}
	if len(src.Spec.Ports) == 0 {
		return nil, fmt.Errorf("the operator's challenge Service %s has no port", r.source)
	}
	p := src.Spec.Ports[0]
	want := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: routeName(c.Name), Namespace: c.Namespace},
		Spec: corev1.ServiceSpec{Type: cfg.serviceType(),
			Ports: []corev1.ServicePort{{Name: p.Name, Protocol: p.Protocol, Port: p.Port, TargetPort: p.TargetPort}}},
	}
	return put(ctx, r, c, want, func() *corev1.Service { return &corev1.Service{} }, func(have, want *corev1.Service) {
		have.Spec.Type, have.Spec.Ports = want.Spec.Type, want.Spec.Ports
		if want.Spec.Type == corev1.ServiceTypeClusterIP {
			for i := range have.Spec.Ports {
				have.Spec.Ports[i].NodePort = 0
			}
		}
	})
}

// mirror brings the EndpointSlices of a challenge's Service to the
// ready endpoints of the operator's challenge Service: one slice per
// address type, owned by the Service.
func (r *http01Router) mirror(ctx context.Context, svc *corev1.Service) error {
	var src discoveryv1.EndpointSliceList
	if r.slices != nil {
		if err := r.slices.List(ctx, &src, client.InNamespace(r.source.Namespace), client.MatchingLabels{discoveryv1.LabelServiceName: r.source.Name}); err != nil {
			return err
		}
	}
	type mirrored struct {
		ports     []discoveryv1.EndpointPort
		endpoints []discoveryv1.Endpoint
		seen      map[string]bool
	}
	byType := map[discoveryv1.AddressType]*mirrored{}
	slices.SortFunc(src.Items, func(a, b discoveryv1.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })
	for _, s := range src.Items {
		if s.AddressType != discoveryv1.AddressTypeIPv4 && s.AddressType != discoveryv1.AddressTypeIPv6 {
			continue
		}
		m := byType[s.AddressType]
		if m == nil {
			m = &mirrored{ports: s.Ports, seen: map[string]bool{}}
			byType[s.AddressType] = m
		}
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready || len(e.Addresses) == 0 || m.seen[e.Addresses[0]] {
				continue
			}
			m.seen[e.Addresses[0]] = true
			m.endpoints = append(m.endpoints, discoveryv1.Endpoint{Addresses: e.Addresses[:1], Conditions: discoveryv1.EndpointConditions{Ready: new(true)}})
		}
	}
	if len(byType) == 0 {
		// Nothing to mirror yet: an empty slice, filled when the
		// operator's endpoints appear.
		byType[discoveryv1.AddressTypeIPv4] = &mirrored{}
	}
	svcRef := []metav1.OwnerReference{*metav1.NewControllerRef(svc, corev1.SchemeGroupVersion.WithKind("Service"))}
	for _, t := range []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6} {
		key := types.NamespacedName{Namespace: svc.Namespace, Name: sliceName(svc.Name, t)}
		m := byType[t]
		var have discoveryv1.EndpointSlice
		err := r.api.Get(ctx, key, &have)
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		found := err == nil
		if found && !routeOwnedBy(&have, svc.UID) {
			return fmt.Errorf("EndpointSlice %s exists and is not the operator's: it is left alone", key)
		}
		if m == nil {
			if found {
				if err := r.deleteObject(ctx, &have); err != nil {
					return err
				}
			}
			continue
		}
		want := discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, OwnerReferences: svcRef,
				Labels: map[string]string{LabelHTTP01: http01Route, discoveryv1.LabelServiceName: svc.Name, discoveryv1.LabelManagedBy: endpointSliceManager}},
			AddressType: t,
			Ports:       m.ports,
			Endpoints:   m.endpoints,
		}
		if !found {
			if err := r.client.Create(ctx, &want); err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
			continue
		}
		if specHash([]any{have.Ports, have.Endpoints}) == specHash([]any{want.Ports, want.Endpoints}) {
			continue
		}
		have.Ports, have.Endpoints = want.Ports, want.Endpoints
		if err := r.client.Update(ctx, &have); err != nil {
			return err
		}
	}
	return nil
}

// routeOwnedBy reports whether obj is labelled LabelHTTP01 and controlled by
// the object of UID uid.
func routeOwnedBy(obj client.Object, uid types.UID) bool {
	ref := metav1.GetControllerOfNoCopy(obj)
	return obj.GetLabels()[LabelHTTP01] == http01Route && ref != nil && ref.UID == uid
}

// challengeHost is the host an Ingress or HTTPRoute matches for a
// challenge: its name, none for an IP address (as cert-manager does).
func challengeHost(c *cmacme.Challenge) string {
	if net.ParseIP(c.Spec.DNSName) != nil {
		return ""
	}
	return c.Spec.DNSName
}

func challengePath(c *cmacme.Challenge) string { return acmeclient.HTTP01Path + c.Spec.Token }

// ingressPath is the rule path that sends a challenge's request to svc.
func ingressPath(c *cmacme.Challenge, svc *corev1.Service) networkingv1.HTTPIngressPath {
	return networkingv1.HTTPIngressPath{
		Path:     challengePath(c),
		PathType: new(networkingv1.PathTypeExact),
		Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: svc.Name,
			Port: networkingv1.ServiceBackendPort{Number: svc.Spec.Ports[0].Port}}},
	}
}

// ensureIngress makes the challenge's own Ingress, as cert-manager does:
// the class (ingressClassName, or class as the kubernetes.io/ingress.class
// annotation), one rule for the name and the token's exact path, and the
// ingressTemplate's labels and annotations.
func (r *http01Router) ensureIngress(ctx context.Context, c *cmacme.Challenge, cfg *cmacme.ACMEChallengeSolverHTTP01Ingress, svc *corev1.Service) error {
	ann := map[string]string{nginxWhitelist: "0.0.0.0/0,::/0"}
	if cfg.Class != nil {
		ann[annotationIngressClass] = *cfg.Class
	}
	lbl := map[string]string{}
	if t := cfg.IngressTemplate; t != nil {
		maps.Copy(lbl, t.Labels)
		for k, v := range t.Annotations {
			if k[strings.LastIndex(k, "/")+1:] == "whitelist-source-range" {
				delete(ann, nginxWhitelist)
			}
			ann[k] = v
		}
	}
	want := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: routeName(c.Name), Namespace: c.Namespace, Labels: lbl, Annotations: ann},
		Spec: networkingv1.IngressSpec{IngressClassName: cfg.IngressClassName, Rules: []networkingv1.IngressRule{{Host: challengeHost(c),
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{ingressPath(c, svc)}}}}}},
	}
	_, err := put(ctx, r, c, want, func() *networkingv1.Ingress { return &networkingv1.Ingress{} }, func(have, want *networkingv1.Ingress) {
		have.Spec = want.Spec
	})
	return err
}

// ensureHTTPRoute makes the challenge's HTTPRoute, as cert-manager does:
// the settings' parent references and labels, the name, an exact match
// of the token's path, and the Service as its backend.
func (r *http01Router) ensureHTTPRoute(ctx context.Context, c *cmacme.Challenge, cfg *cmacme.ACMEChallengeSolverHTTP01GatewayHTTPRoute, svc *corev1.Service) error {
	var hosts []gwapi.Hostname
	if h := challengeHost(c); h != "" {
		hosts = []gwapi.Hostname{gwapi.Hostname(h)}
	}
	want := &gwapi.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Name: routeName(c.Name), Namespace: c.Namespace, Labels: maps.Clone(cfg.Labels)},
		Spec: gwapi.HTTPRouteSpec{
			CommonRouteSpec: gwapi.CommonRouteSpec{ParentRefs: cfg.ParentRefs},
			Hostnames:       hosts,
			Rules: []gwapi.HTTPRouteRule{{
				Matches: []gwapi.HTTPRouteMatch{{Path: &gwapi.HTTPPathMatch{Type: new(gwapi.PathMatchExact), Value: new(challengePath(c))}}},
				BackendRefs: []gwapi.HTTPBackendRef{{BackendRef: gwapi.BackendRef{Weight: new(int32(1)), BackendObjectReference: gwapi.BackendObjectReference{
					Group: new(gwapi.Group("")), Kind: new(gwapi.Kind("Service")), Name: gwapi.ObjectName(svc.Name),
					Port: new(svc.Spec.Ports[0].Port)}}}},
			}},
		},
	}
	_, err := put(ctx, r, c, want, func() *gwapi.HTTPRoute { return &gwapi.HTTPRoute{} }, func(have, want *gwapi.HTTPRoute) {
		have.Spec = want.Spec
	})
	return err
}

// ingressEdit is what the operator added to an Ingress named by
// http01.ingress.name for one challenge.
type ingressEdit struct {
	// Challenge is the Challenge's name (the key is its UID).
	Challenge string `json:"challenge"`
	Host      string `json:"host"`
	Path      string `json:"path"`
	Service   string `json:"service"`
	// Added says what was added: "rule" (a rule for the host), "http"
	// (the http section of the host's rule, which had none), "path" (a
	// path in the host's rule), "replaced" (a path of the same value,
	// Replaced, was there and is put back).
	Added    string                        `json:"added"`
	Replaced *networkingv1.HTTPIngressPath `json:"replaced,omitempty"`
}

func ingressEdits(ing *networkingv1.Ingress) map[types.UID]ingressEdit {
	out := map[types.UID]ingressEdit{}
	if raw := ing.Annotations[AnnotationHTTP01Edits]; raw != "" {
		_ = json.Unmarshal([]byte(raw), &out)
	}
	return out
}

func setIngressEdits(ing *networkingv1.Ingress, edits map[types.UID]ingressEdit) {
	if len(edits) == 0 {
		delete(ing.Annotations, AnnotationHTTP01Edits)
		if ing.Labels[LabelHTTP01] == http01Edited {
			delete(ing.Labels, LabelHTTP01)
		}
		return
	}
	b, _ := json.Marshal(edits)
	ing.Annotations = mergeInto(ing.Annotations, map[string]string{AnnotationHTTP01Edits: string(b)})
	ing.Labels = mergeInto(ing.Labels, map[string]string{LabelHTTP01: http01Edited})
}

// editIngress adds the challenge's path to the Ingress the settings
// name, as cert-manager does — in the rule for the name (first), or a new
// rule for it — and records what it added on the Ingress.
func (r *http01Router) editIngress(ctx context.Context, c *cmacme.Challenge, svc *corev1.Service) error {
	name := challengeRoute(c).ingress.Name
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var ing networkingv1.Ingress
		if err := r.api.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: name}, &ing); err != nil {
			return fmt.Errorf("http01.ingress.name: Ingress %s/%s: %w", c.Namespace, name, err)
		}
		edits := ingressEdits(&ing)
		p := ingressPath(c, svc)
		if _, done := edits[c.UID]; done {
			return nil
		}
		e := ingressEdit{Challenge: c.Name, Host: c.Spec.DNSName, Path: p.Path, Service: svc.Name}
		i := slices.IndexFunc(ing.Spec.Rules, func(r networkingv1.IngressRule) bool { return r.Host == c.Spec.DNSName })
		switch {
		case i < 0:
			e.Added = "rule"
			ing.Spec.Rules = append(ing.Spec.Rules, networkingv1.IngressRule{Host: c.Spec.DNSName,
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{p}}}})
		case ing.Spec.Rules[i].HTTP == nil:
			e.Added = "http"
			ing.Spec.Rules[i].HTTP = &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{p}}
		default:
			h := ing.Spec.Rules[i].HTTP
			if j := slices.IndexFunc(h.Paths, func(x networkingv1.HTTPIngressPath) bool { return x.Path == p.Path }); j >= 0 {
				e.Added, e.Replaced = "replaced", h.Paths[j].DeepCopy()
				h.Paths[j] = p
			} else {
				e.Added = "path"
				h.Paths = append([]networkingv1.HTTPIngressPath{p}, h.Paths...)
			}
		}
		edits[c.UID] = e
		setIngressEdits(&ing, edits)
		return r.client.Update(ctx, &ing)
	})
}

// restoreIngress takes out of an Ingress what was added for the
// Challenge of UID uid, and only that.
func (r *http01Router) restoreIngress(ctx context.Context, namespace, name string, uid types.UID) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var ing networkingv1.Ingress
		err := r.api.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &ing)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		edits := ingressEdits(&ing)
		e, ok := edits[uid]
		if !ok {
			return nil
		}
		delete(edits, uid)
		isOurs := func(x networkingv1.HTTPIngressPath) bool {
			return x.Path == e.Path && x.Backend.Service != nil && x.Backend.Service.Name == e.Service
		}
		for i := range ing.Spec.Rules {
			rule := &ing.Spec.Rules[i]
			if rule.Host != e.Host || rule.HTTP == nil {
				continue
			}
			j := slices.IndexFunc(rule.HTTP.Paths, isOurs)
			if j < 0 {
				continue
			}
			if e.Added == "replaced" && e.Replaced != nil {
				rule.HTTP.Paths[j] = *e.Replaced
				break
			}
			rule.HTTP.Paths = slices.Delete(rule.HTTP.Paths, j, j+1)
			if len(rule.HTTP.Paths) == 0 {
				switch e.Added {
				case "rule":
					ing.Spec.Rules = slices.Delete(ing.Spec.Rules, i, i+1)
				case "http":
					rule.HTTP = nil
				}
			}
			break
		}
		setIngressEdits(&ing, edits)
		return r.client.Update(ctx, &ing)
	})
}

func (r *http01Router) deleteObject(ctx context.Context, obj client.Object) error {
	uid := obj.GetUID()
	if err := r.client.Delete(ctx, obj, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return err
	}
	return nil
}

// remove takes down the routing of the Challenge namespace/name whose
// owner UIDs stale says are done with: its Ingress or HTTPRoute, its
// paths in an edited Ingress, then its EndpointSlices and its Service
// (last, so that what is left after a crash is still found by it).
// Objects the operator did not make are not touched.
func (r *http01Router) remove(ctx context.Context, namespace, name string, stale func(types.UID) bool) error {
	mine := func(obj client.Object) bool {
		n, uid := challengeOwner(obj)
		return n == name && stale(uid)
	}
	var errs []error
	var ings networkingv1.IngressList
	if err := r.cache.List(ctx, &ings, client.InNamespace(namespace), client.HasLabels{LabelHTTP01}); err != nil {
		return err
	}
	for i := range ings.Items {
		ing := &ings.Items[i]
		switch ing.Labels[LabelHTTP01] {
		case http01Route:
			if mine(ing) {
				errs = append(errs, r.deleteObject(ctx, ing))
			}
		case http01Edited:
			for uid, e := range ingressEdits(ing) {
				if e.Challenge == name && stale(uid) {
					errs = append(errs, r.restoreIngress(ctx, ing.Namespace, ing.Name, uid))
				}
			}
		}
	}
	if r.gateway {
		var routes gwapi.HTTPRouteList
		if err := r.cache.List(ctx, &routes, client.InNamespace(namespace), client.HasLabels{LabelHTTP01}); err != nil {
			return err
		}
		for i := range routes.Items {
			if mine(&routes.Items[i]) {
				errs = append(errs, r.deleteObject(ctx, &routes.Items[i]))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err // the Service stays, so that the sweep finds the rest
	}
	var svcs corev1.ServiceList
	if err := r.cache.List(ctx, &svcs, client.InNamespace(namespace), client.HasLabels{LabelHTTP01}); err != nil {
		return err
	}
	for i := range svcs.Items {
		svc := &svcs.Items[i]
		if !mine(svc) {
			continue
		}
		for _, t := range []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6} {
			var s discoveryv1.EndpointSlice
			err := r.api.Get(ctx, types.NamespacedName{Namespace: namespace, Name: sliceName(svc.Name, t)}, &s)
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				errs = append(errs, err)
			case routeOwnedBy(&s, svc.UID):
				errs = append(errs, r.deleteObject(ctx, &s))
			}
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
		if err := r.deleteObject(ctx, svc); err != nil {
			return err
		}
	}
	return nil
}

// removeFor takes down the routing of Challenge c.
func (r *http01Router) removeFor(ctx context.Context, c *cmacme.Challenge) error {
	return r.remove(ctx, c.Namespace, c.Name, func(uid types.UID) bool { return uid == c.UID })
}

// Reconcile (the http01route controller, on the leader) brings the
// routing of one Challenge to what it is now: made while it is presented
// and not done, removed once it is done or gone (with any left by an
// earlier Challenge of its name), left alone in between (a presentation
// may be under way, and makes it).
func (r *http01Router) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var c cmacme.Challenge
	err := r.cache.Get(ctx, req.NamespacedName, &c)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	if err == nil && c.DeletionTimestamp == nil {
		core := ChallengeToCore(&c)
		switch {
		case !core.Status.State.Final() && core.Status.Presented:
			if err := r.ensure(ctx, &c); err != nil {
				return reconcile.Result{}, err
			}
			return reconcile.Result{}, r.remove(ctx, c.Namespace, c.Name, func(uid types.UID) bool { return uid != c.UID })
		case !core.Status.State.Final():
			return reconcile.Result{}, r.remove(ctx, c.Namespace, c.Name, func(uid types.UID) bool { return uid != c.UID })
		}
		return reconcile.Result{}, r.remove(ctx, c.Namespace, c.Name, func(types.UID) bool { return true })
	}
	// Gone from the cache: the API server has the last word (a Challenge
	// made a moment ago may not be in the cache yet).
	err = r.api.Get(ctx, req.NamespacedName, &c)
	switch {
	case apierrors.IsNotFound(err):
		return reconcile.Result{}, r.remove(ctx, req.Namespace, req.Name, func(types.UID) bool { return true })
	case err != nil:
		return reconcile.Result{}, err
	}
	live := c.UID
	if c.DeletionTimestamp != nil || ChallengeToCore(&c).Status.State.Final() {
		live = ""
	}
	return reconcile.Result{}, r.remove(ctx, req.Namespace, req.Name, func(uid types.UID) bool { return uid != live })
}

// challengeOf maps a routing object to its Challenge (an edited Ingress
// to each of the Challenges whose paths it carries).
func challengeOf(_ context.Context, obj client.Object) []reconcile.Request {
	if ing, ok := obj.(*networkingv1.Ingress); ok && ing.Labels[LabelHTTP01] == http01Edited {
		var out []reconcile.Request
		for _, e := range ingressEdits(ing) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ing.Namespace, Name: e.Challenge}})
		}
		return out
	}
	if name, _ := challengeOwner(obj); name != "" {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}}}
	}
	return nil
}

// routedChallenges maps a change of the operator's challenge endpoints
// to every Challenge whose Service mirrors them.
func (r *http01Router) routedChallenges(ctx context.Context, _ client.Object) []reconcile.Request {
	var svcs corev1.ServiceList
	if err := r.cache.List(ctx, &svcs, client.HasLabels{LabelHTTP01}); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range svcs.Items {
		out = append(out, challengeOf(ctx, &svcs.Items[i])...)
	}
	return out
}

// routingSelector selects the objects LabelHTTP01 marks, for the cache.
func routingSelector() labels.Selector {
	req, _ := labels.NewRequirement(LabelHTTP01, selection.Exists, nil)
	return labels.NewSelector().Add(*req)
}

// routedHTTP01 is an ACME issuer's HTTP-01 presenter: the challenge
// server, and the router for the challenges whose solver asks for an
// Ingress or an HTTPRoute. The route is made when the challenge is
// presented, before its self-check, which so tests the path the CA's
// request takes.
type routedHTTP01 struct {
	server *ChallengeServer
	router *http01Router
	store  *orderStore
}

var _ acmeclient.Presenter = routedHTTP01{}

// challenge finds the Challenge of an HTTP-01 token: among the issuer's
// states in flight (as last read or written, so a Challenge made a moment
// ago is there), else in the cache.
func (p routedHTTP01) challenge(ctx context.Context, token string) *cmacme.Challenge {
	if c := p.store.challengeByToken(token); c != nil {
		return c
	}
	var l cmacme.ChallengeList
	if err := p.router.cache.List(ctx, &l, client.MatchingFields{indexChallengeToken: token}); err == nil {
		for i := range l.Items {
			if l.Items[i].Labels[LabelACMEIssuer] == p.store.issuer {
				return &l.Items[i]
			}
		}
	}
	return nil
}

// Present serves the key authorization and, when the solver asks for
// it, makes the route to it.
func (p routedHTTP01) Present(ctx context.Context, pr acmeclient.Presentation) error {
	if err := p.server.Present(ctx, pr); err != nil {
		return err
	}
	if p.router == nil || !routeOf(pr.Solver).any() {
		return nil
	}
	c := p.challenge(ctx, pr.Token)
	if c == nil {
		return fmt.Errorf("routing HTTP-01 for %s: its Challenge is not found yet", pr.Identifier)
	}
	return p.router.ensure(ctx, c)
}

// CleanUp stops serving the key authorization and takes the route down
// (a route whose Challenge is not found is the sweep's).
func (p routedHTTP01) CleanUp(ctx context.Context, pr acmeclient.Presentation) error {
	if err := p.server.CleanUp(ctx, pr); err != nil {
		return err
	}
	if p.router == nil || !routeOf(pr.Solver).any() {
		return nil
	}
	if c := p.challenge(ctx, pr.Token); c != nil {
		return p.router.removeFor(ctx, c)
	}
	return nil
}
