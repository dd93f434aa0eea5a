package operator_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cmacme "github.com/cert-manager/cert-manager/pkg/apis/acme/v1"
	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	gwapi "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/acmeclient/acmetest"

	"github.com/certlife/certlife/examples/kubernetes/operator"
)

// routing is the HTTP-01 routing set-up of a test: the operator's
// challenge Service in a namespace of its own, whose EndpointSlice points
// at the challenge server the test serves on loopback, and the test's own
// Ingress and Gateway controller on Pebble's HTTP-01 port, which sends
// each request where the Ingresses and HTTPRoutes the operator made say:
// to the backend Service's EndpointSlices' address. A challenge is
// answered only through the routes.
type routing struct {
	h       *harness
	srv     *acmetest.Server
	opNS    string
	service types.NamespacedName
	port    int
	cs      atomic.Pointer[operator.ChallengeServer]

	mu   sync.Mutex
	seen map[string]*routeSeen // by host, what served the first request that reached a token
}

// podIP is the address the operator's challenge Service's EndpointSlice
// gives its pod (the API server refuses loopback addresses there): an
// address of the documentation range, which the test's controller, as a
// node's proxy would, translates to the loopback address the challenge
// server listens on. Nothing is ever sent to it.
const podIP = "192.0.2.10"

// routeSeen is what the test's controller followed for a host.
type routeSeen struct {
	ingress *networkingv1.Ingress
	route   *gwapi.HTTPRoute
	service *corev1.Service
	slice   *discoveryv1.EndpointSlice
}

func newRouting(h *harness, srv *acmetest.Server) *routing {
	h.t.Helper()
	r := &routing{h: h, srv: srv, opNS: h.ns + "-op", seen: map[string]*routeSeen{}}
	r.service = types.NamespacedName{Namespace: r.opNS, Name: "certlife-http01"}
	require.NoError(h.t, k8s.Create(h.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.opNS}}))
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if cs := r.cs.Load(); cs != nil {
			cs.ServeHTTP(w, req)
			return
		}
		http.NotFound(w, req)
	}))
	h.t.Cleanup(ts.Close)
	r.port = ts.Listener.Addr().(*net.TCPAddr).Port
	// The operator's challenge Service, and its endpoints as the
	// EndpointSlice controller would write them: the challenge server.
	require.NoError(h.t, k8s.Create(h.ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: r.service.Name, Namespace: r.opNS},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app.kubernetes.io/name": "certlife-operator"},
			Ports: []corev1.ServicePort{{Name: "http01", Port: 8089, TargetPort: intstr.FromString("http01"), Protocol: corev1.ProtocolTCP}}}}))
	require.NoError(h.t, k8s.Create(h.ctx, &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: r.service.Name + "-abcde", Namespace: r.opNS,
		Labels: map[string]string{discoveryv1.LabelServiceName: r.service.Name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: new("http01"), Port: new(int32(r.port)), Protocol: new(corev1.ProtocolTCP)}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{podIP}, Conditions: discoveryv1.EndpointConditions{Ready: new(true)}}}}))
	srv.SetHTTP01Handler(r)
	return r
}

// operator sets an operator up with ACME on Pebble and HTTP-01 routing
// through the test's Service, its challenge server serving on the
// test's loopback port.
func (r *routing) operator(mo *manager.Options, o *operator.Options) {
	cs := operator.NewChallengeServer()
	r.cs.Store(cs)
	checks := r.srv.Solvers()
	o.ACME = operator.ACMEOptions{ChallengeServer: cs, HTTP01Check: checks.HTTP01Check, DNS01Check: checks.DNS01Check, HTTP01Service: r.service}
}

// ServeHTTP plays the cluster's Ingress and Gateway controllers.
func (r *routing) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	host, _, err := net.SplitHostPort(req.Host)
	if err != nil {
		host = req.Host
	}
	ctx := req.Context()
	seen, backend, port := r.route(ctx, host, req.URL.Path)
	if backend == "" {
		http.NotFound(w, req)
		return
	}
	var svc corev1.Service
	if k8s.Get(ctx, client.ObjectKey{Namespace: r.h.ns, Name: backend}, &svc) != nil {
		http.Error(w, "no backend Service", http.StatusServiceUnavailable)
		return
	}
	seen.service = &svc
	i := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Port == port })
	if i < 0 {
		http.Error(w, "no such Service port", http.StatusServiceUnavailable)
		return
	}
	var sl discoveryv1.EndpointSliceList
	if k8s.List(ctx, &sl, client.InNamespace(r.h.ns), client.MatchingLabels{discoveryv1.LabelServiceName: backend}) != nil {
		http.Error(w, "no endpoints", http.StatusServiceUnavailable)
		return
	}
	target := ""
	for j := range sl.Items {
		s := &sl.Items[j]
		k := slices.IndexFunc(s.Ports, func(p discoveryv1.EndpointPort) bool { return p.Name != nil && *p.Name == svc.Spec.Ports[i].Name })
		if k < 0 || len(s.Endpoints) == 0 || s.Ports[k].Port == nil {
			continue
		}
		if s.Endpoints[0].Addresses[0] != podIP {
			continue // an address the test does not know: never dialled
		}
		target = net.JoinHostPort("127.0.0.1", strconv.Itoa(int(*s.Ports[k].Port)))
		seen.slice = s
	}
	if target == "" {
		http.Error(w, "no ready endpoint", http.StatusServiceUnavailable)
		return
	}
	out, _ := http.NewRequestWithContext(ctx, req.Method, (&url.URL{Scheme: "http", Host: target, Path: req.URL.Path}).String(), nil)
	out.Host = req.Host
	resp, err := http.DefaultClient.Do(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK {
		r.mu.Lock()
		if r.seen[host] == nil {
			r.seen[host] = seen
		}
		r.mu.Unlock()
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
}

// route finds the Ingress rule or HTTPRoute rule for host and path: the
// backend Service and port.
func (r *routing) route(ctx context.Context, host, path string) (*routeSeen, string, int32) {
	var il networkingv1.IngressList
	if k8s.List(ctx, &il, client.InNamespace(r.h.ns)) == nil {
		for i := range il.Items {
			for _, rule := range il.Items[i].Spec.Rules {
				if rule.Host != host || rule.HTTP == nil {
					continue
				}
				for _, p := range rule.HTTP.Paths {
					if p.Path == path && p.PathType != nil && *p.PathType == networkingv1.PathTypeExact && p.Backend.Service != nil {
						return &routeSeen{ingress: &il.Items[i]}, p.Backend.Service.Name, p.Backend.Service.Port.Number
					}
				}
			}
		}
	}
	var rl gwapi.HTTPRouteList
	if k8s.List(ctx, &rl, client.InNamespace(r.h.ns)) == nil {
		for i := range rl.Items {
			hr := &rl.Items[i]
			if !slices.Contains(hr.Spec.Hostnames, gwapi.Hostname(host)) {
				continue
			}
			for _, rule := range hr.Spec.Rules {
				for _, m := range rule.Matches {
					if m.Path != nil && m.Path.Value != nil && *m.Path.Value == path && len(rule.BackendRefs) > 0 && rule.BackendRefs[0].Port != nil {
						return &routeSeen{route: hr}, string(rule.BackendRefs[0].Name), *rule.BackendRefs[0].Port
					}
				}
			}
		}
	}
	return nil, "", 0
}

func (r *routing) seenFor(host string) *routeSeen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[host]
}

// routeIssuer makes an ACME Issuer on Pebble whose HTTP-01 solver is sv.
func (h *harness) routeIssuer(name string, srv *acmetest.Server, sv *cmacme.ACMEChallengeSolverHTTP01) {
	h.t.Helper()
	h.create(&cmapi.Issuer{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{ACME: &cmacme.ACMEIssuer{
		Server: srv.DirectoryURL, Email: "ops@example.com", CABundle: srv.CABundle(), PrivateKey: secretKey(name+"-account", ""),
		Solvers: []cmacme.ACMEChallengeSolver{{HTTP01: sv}},
	}}}})
}

// routingObjects lists what the operator made or edited to route HTTP-01
// in the test's namespace.
func (h *harness) routingObjects() []string {
	h.t.Helper()
	var out []string
	sel := client.HasLabels{operator.LabelHTTP01}
	var svcs corev1.ServiceList
	require.NoError(h.t, k8s.List(h.ctx, &svcs, client.InNamespace(h.ns), sel))
	for _, o := range svcs.Items {
		out = append(out, "Service "+o.Name)
	}
	var sls discoveryv1.EndpointSliceList
	require.NoError(h.t, k8s.List(h.ctx, &sls, client.InNamespace(h.ns), sel))
	for _, o := range sls.Items {
		out = append(out, "EndpointSlice "+o.Name)
	}
	var ings networkingv1.IngressList
	require.NoError(h.t, k8s.List(h.ctx, &ings, client.InNamespace(h.ns), sel))
	for _, o := range ings.Items {
		out = append(out, "Ingress "+o.Name)
	}
	var rts gwapi.HTTPRouteList
	require.NoError(h.t, k8s.List(h.ctx, &rts, client.InNamespace(h.ns), sel))
	for _, o := range rts.Items {
		out = append(out, "HTTPRoute "+o.Name)
	}
	return out
}

// Each HTTP-01 routing setting of an ACME issuer, end to end: Pebble's
// request for the token reaches the operator's challenge server only
// through the Ingress or HTTPRoute the operator made, its Service and
// the EndpointSlice mirroring the operator's challenge Service; the
// objects look as cert-manager's would (the test's controller keeps what
// it followed), and all are gone, the named Ingress as it was, once the
// certificates are issued.
func TestHTTP01RoutesPerIssuerSetting(t *testing.T) {
	srv := pebble(t)
	h := newHarness(t)
	rt := newRouting(h, srv)
	named := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: h.ns, Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"team": "a"}},
		Spec: networkingv1.IngressSpec{IngressClassName: new("public"), Rules: []networkingv1.IngressRule{
			{Host: "named.example", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
				Path: "/", PathType: new(networkingv1.PathTypePrefix),
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}},
			{Host: "other.example", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
				Path: "/", PathType: new(networkingv1.PathTypePrefix),
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "other", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}},
		}}}
	h.create(named)
	before := named.DeepCopy()
	h.start(rt.operator)

	issuers := map[string]*cmacme.ACMEChallengeSolverHTTP01{
		"class": {Ingress: &cmacme.ACMEChallengeSolverHTTP01Ingress{Class: new("nginx")}},
		"classname": {Ingress: &cmacme.ACMEChallengeSolverHTTP01Ingress{IngressClassName: new("internal"), ServiceType: corev1.ServiceTypeClusterIP,
			IngressTemplate: &cmacme.ACMEChallengeSolverHTTP01IngressTemplate{ACMEChallengeSolverHTTP01IngressObjectMeta: cmacme.ACMEChallengeSolverHTTP01IngressObjectMeta{
				Labels:      map[string]string{"team": "edge"},
				Annotations: map[string]string{"example.com/whitelist-source-range": "10.0.0.0/8", "example.com/tier": "gold"}}}}},
		"named": {Ingress: &cmacme.ACMEChallengeSolverHTTP01Ingress{Name: "web"}},
		"gw": {GatewayHTTPRoute: &cmacme.ACMEChallengeSolverHTTP01GatewayHTTPRoute{Labels: map[string]string{"gateway": "public"},
			ParentRefs: []gwapi.ParentReference{{Name: "public", Namespace: new(gwapi.Namespace("gateways")), SectionName: new(gwapi.SectionName("http"))}}}},
	}
	for name, sv := range issuers {
		h.routeIssuer(name, srv, sv)
	}
	for name := range issuers {
		h.create(h.certificate(name, name, func(s *cmapi.CertificateSpec) { s.DNSNames = []string{name + ".example"} }))
	}
	for name := range issuers {
		h.waitReady(name, 1)
	}

	owned := func(obj metav1.Object) {
		t.Helper()
		ref := metav1.GetControllerOf(obj)
		require.NotNil(t, ref, "%s is owned", obj.GetName())
		assert.Equal(t, "Challenge", ref.Kind)
		assert.Equal(t, "route", obj.GetLabels()[operator.LabelHTTP01])
		assert.Equal(t, "true", obj.GetLabels()[cmacme.SolverIdentificationLabelKey])
		assert.LessOrEqual(t, len(obj.GetName()), 63)
	}
	service := func(s *routeSeen, typ corev1.ServiceType) {
		t.Helper()
		require.NotNil(t, s.service)
		owned(s.service)
		assert.Equal(t, typ, s.service.Spec.Type)
		assert.Empty(t, s.service.Spec.Selector, "no selector: its endpoints are the operator's")
		require.Len(t, s.service.Spec.Ports, 1)
		assert.Equal(t, "http01", s.service.Spec.Ports[0].Name)
		assert.Equal(t, int32(8089), s.service.Spec.Ports[0].Port)
		require.NotNil(t, s.slice)
		assert.Equal(t, []string{podIP}, s.slice.Endpoints[0].Addresses, "the operator's challenge endpoints, mirrored")
		assert.Equal(t, int32(rt.port), *s.slice.Ports[0].Port)
		assert.Equal(t, "operator.certlife.dev", s.slice.Labels[discoveryv1.LabelManagedBy])
	}
	path := func(host string, p networkingv1.HTTPIngressPath) {
		t.Helper()
		assert.True(t, strings.HasPrefix(p.Path, acmeclient.HTTP01Path), p.Path)
		assert.Equal(t, networkingv1.PathTypeExact, *p.PathType)
	}

	s := rt.seenFor("class.example")
	require.NotNil(t, s, "Pebble's request reached the token through the class Ingress")
	require.NotNil(t, s.ingress)
	owned(s.ingress)
	assert.Equal(t, "nginx", s.ingress.Annotations["kubernetes.io/ingress.class"])
	assert.Nil(t, s.ingress.Spec.IngressClassName)
	assert.Equal(t, "0.0.0.0/0,::/0", s.ingress.Annotations["nginx.ingress.kubernetes.io/whitelist-source-range"])
	require.Len(t, s.ingress.Spec.Rules, 1)
	assert.Equal(t, "class.example", s.ingress.Spec.Rules[0].Host)
	path("class.example", s.ingress.Spec.Rules[0].HTTP.Paths[0])
	service(s, corev1.ServiceTypeNodePort)

	s = rt.seenFor("classname.example")
	require.NotNil(t, s, "through the ingressClassName Ingress")
	require.NotNil(t, s.ingress)
	owned(s.ingress)
	assert.Equal(t, new("internal"), s.ingress.Spec.IngressClassName)
	assert.NotContains(t, s.ingress.Annotations, "kubernetes.io/ingress.class")
	assert.Equal(t, "edge", s.ingress.Labels["team"], "the ingressTemplate's labels")
	assert.Equal(t, "gold", s.ingress.Annotations["example.com/tier"], "the ingressTemplate's annotations")
	assert.Equal(t, "10.0.0.0/8", s.ingress.Annotations["example.com/whitelist-source-range"])
	assert.NotContains(t, s.ingress.Annotations, "nginx.ingress.kubernetes.io/whitelist-source-range", "replaced by the template's")
	service(s, corev1.ServiceTypeClusterIP)

	s = rt.seenFor("named.example")
	require.NotNil(t, s, "through the path added to the named Ingress")
	require.NotNil(t, s.ingress)
	assert.Equal(t, "web", s.ingress.Name)
	assert.Empty(t, s.ingress.OwnerReferences, "the named Ingress is not the operator's")
	assert.Equal(t, "edited", s.ingress.Labels[operator.LabelHTTP01])
	assert.Contains(t, s.ingress.Annotations, operator.AnnotationHTTP01Edits)
	require.Len(t, s.ingress.Spec.Rules, 2)
	require.Len(t, s.ingress.Spec.Rules[0].HTTP.Paths, 2)
	path("named.example", s.ingress.Spec.Rules[0].HTTP.Paths[0])
	assert.Equal(t, before.Spec.Rules[0].HTTP.Paths[0], s.ingress.Spec.Rules[0].HTTP.Paths[1], "the host's own path stays, after the challenge's")
	service(s, corev1.ServiceTypeNodePort)

	s = rt.seenFor("gw.example")
	require.NotNil(t, s, "through the HTTPRoute")
	require.NotNil(t, s.route)
	owned(s.route)
	assert.Equal(t, "public", s.route.Labels["gateway"])
	require.Len(t, s.route.Spec.ParentRefs, 1)
	assert.Equal(t, gwapi.ObjectName("public"), s.route.Spec.ParentRefs[0].Name)
	assert.Equal(t, new(gwapi.Namespace("gateways")), s.route.Spec.ParentRefs[0].Namespace)
	assert.Equal(t, new(gwapi.SectionName("http")), s.route.Spec.ParentRefs[0].SectionName)
	assert.Equal(t, []gwapi.Hostname{"gw.example"}, s.route.Spec.Hostnames)
	require.Len(t, s.route.Spec.Rules, 1)
	assert.Equal(t, gwapi.PathMatchExact, *s.route.Spec.Rules[0].Matches[0].Path.Type)
	service(s, corev1.ServiceTypeNodePort)

	h.eventually("every route to be gone", func() bool { return len(h.routingObjects()) == 0 })
	var after networkingv1.Ingress
	require.NoError(t, k8s.Get(h.ctx, client.ObjectKeyFromObject(named), &after))
	assert.Equal(t, before.Spec, after.Spec, "the named Ingress is as it was")
	assert.Equal(t, before.Labels, after.Labels)
	assert.Equal(t, before.Annotations, after.Annotations)
}

// crashAfterRoute is a client that, once an Ingress was made, fails every
// later write: the operator "crashes" between making the route and
// recording the challenge presented. crashed is closed then.
func crashAfterRoute(crashed chan<- struct{}) func(*manager.Options, *operator.Options) {
	var down atomic.Bool
	errCrashed := errors.New("the test's crash: no write gets through")
	return func(mo *manager.Options, _ *operator.Options) {
		inner := mo.NewClient
		mo.NewClient = func(cfg *rest.Config, o client.Options) (client.Client, error) {
			c, err := inner(cfg, o)
			if err != nil {
				return nil, err
			}
			return interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					if down.Load() {
						return errCrashed
					}
					err := c.Create(ctx, obj, opts...)
					if _, ok := obj.(*networkingv1.Ingress); ok && err == nil && down.CompareAndSwap(false, true) {
						close(crashed)
					}
					return err
				},
				Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
					if down.Load() {
						return errCrashed
					}
					return c.Update(ctx, obj, opts...)
				},
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
					if down.Load() {
						return errCrashed
					}
					return c.Patch(ctx, obj, p, opts...)
				},
				Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
					if down.Load() {
						return errCrashed
					}
					return c.Delete(ctx, obj, opts...)
				},
				SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
					if down.Load() {
						return errCrashed
					}
					return c.SubResource(sub).Update(ctx, obj, opts...)
				},
				SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
					if down.Load() {
						return errCrashed
					}
					return c.SubResource(sub).Patch(ctx, obj, p, opts...)
				},
			}), nil
		}
	}
}

// waitClosed waits for ch, for at most a minute.
func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// The operator stops between making a challenge's route and recording
// the challenge presented. Started again, it adopts the route (the same
// Ingress serves the token, and goes when the certificate is issued).
// And a route whose Challenge was deleted while the operator was down,
// or whose Challenge never existed, is swept when it starts; what it did
// not make (not labelled, or not owned by a Challenge) stays.
func TestHTTP01RouteAfterACrashIsAdoptedOrSwept(t *testing.T) {
	srv := pebble(t)
	h := newHarness(t)
	rt := newRouting(h, srv)
	h.routeIssuer("le", srv, &cmacme.ACMEChallengeSolverHTTP01{Ingress: &cmacme.ACMEChallengeSolverHTTP01Ingress{Class: new("nginx")}})
	ingresses := func() []networkingv1.Ingress {
		var l networkingv1.IngressList
		require.NoError(t, k8s.List(h.ctx, &l, client.InNamespace(h.ns), client.MatchingLabels{operator.LabelHTTP01: "route"}))
		return l.Items
	}

	// Adopted.
	crashed := make(chan struct{})
	op := h.start(rt.operator, crashAfterRoute(crashed))
	h.create(h.certificate("adopt", "le", func(s *cmapi.CertificateSpec) { s.DNSNames = []string{"adopt.example"} }))
	waitClosed(t, crashed, "the route to be made")
	op.stop()
	made := ingresses()
	require.Len(t, made, 1, "the route made before the crash")
	chs := h.challenges()
	require.Len(t, chs, 1)
	assert.False(t, chs[0].Status.Presented, "the crash came before the challenge was recorded presented")
	h.start(rt.operator)
	h.waitReady("adopt", 1)
	s := rt.seenFor("adopt.example")
	require.NotNil(t, s)
	require.NotNil(t, s.ingress)
	assert.Equal(t, made[0].UID, s.ingress.UID, "the Ingress made before the crash is adopted")
	h.eventually("the adopted route to be gone", func() bool { return len(h.routingObjects()) == 0 })
}

// A route whose Challenge is gone when the operator starts is swept; what
// the operator did not make stays.
func TestHTTP01RouteOfAGoneChallengeIsSweptOnStart(t *testing.T) {
	srv := pebble(t)
	h := newHarness(t)
	rt := newRouting(h, srv)
	h.routeIssuer("le", srv, &cmacme.ACMEChallengeSolverHTTP01{Ingress: &cmacme.ACMEChallengeSolverHTTP01Ingress{Class: new("nginx")}})
	crashed := make(chan struct{})
	op := h.start(rt.operator, crashAfterRoute(crashed))
	h.create(h.certificate("swept", "le", func(s *cmapi.CertificateSpec) { s.DNSNames = []string{"swept.example"} }))
	waitClosed(t, crashed, "the route to be made")
	op.stop()
	require.NotEmpty(t, h.routingObjects())
	// While the operator is down, the certificate goes, and with it (as
	// Kubernetes' garbage collector would do) its request, Order and
	// Challenge.
	for _, obj := range []client.Object{h.get("swept")} {
		require.NoError(t, k8s.Delete(h.ctx, obj))
	}
	for _, r := range h.requests() {
		require.NoError(t, k8s.Delete(h.ctx, &r))
	}
	for _, o := range h.orders() {
		require.NoError(t, k8s.Delete(h.ctx, &o))
	}
	for _, c := range h.challenges() {
		require.NoError(t, k8s.Delete(h.ctx, &c))
	}
	// A route of a Challenge that never was; an Ingress labelled as a
	// route but owned by something else; a Service owned by a Challenge
	// but not labelled.
	ghost := metav1.OwnerReference{APIVersion: cmacme.SchemeGroupVersion.String(), Kind: "Challenge", Name: "ghost", UID: "0b7a3d0e-0000-4000-8000-000000000001", Controller: new(true)}
	port := []corev1.ServicePort{{Name: "http01", Port: 8089}}
	h.create(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ghost-route", Namespace: h.ns, Labels: map[string]string{operator.LabelHTTP01: "route"},
		OwnerReferences: []metav1.OwnerReference{ghost}}, Spec: corev1.ServiceSpec{Ports: port}})
	h.create(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ghost-unlabelled", Namespace: h.ns, OwnerReferences: []metav1.OwnerReference{ghost}},
		Spec: corev1.ServiceSpec{Ports: port}})
	notOurs := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "not-ours", Namespace: h.ns, Labels: map[string]string{operator.LabelHTTP01: "route"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "ghost", UID: "0b7a3d0e-0000-4000-8000-000000000002", Controller: new(true)}}},
		Spec: networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "x", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}
	h.create(notOurs)

	h.start(rt.operator)
	h.eventually("the routes of the gone Challenges to be swept", func() bool {
		return slices.Equal(h.routingObjects(), []string{"Ingress not-ours"})
	})
	for _, o := range []client.Object{&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ghost-unlabelled", Namespace: h.ns}}, notOurs} {
		err := k8s.Get(h.ctx, client.ObjectKeyFromObject(o), o)
		assert.False(t, apierrors.IsNotFound(err), "%s is not the operator's: it stays", o.GetName())
	}
}
