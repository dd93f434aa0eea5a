package operator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	whapi "github.com/cert-manager/cert-manager/pkg/acme/webhook/apis/acme/v1alpha1"
	cmacme "github.com/cert-manager/cert-manager/pkg/apis/acme/v1"
	"github.com/miekg/dns"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	pathvalidation "k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/challenge"
	"github.com/certlife/certlife/order"
)

// A DNS-01 solver of an ACME issuer may name a cert-manager webhook
// solver (dns01.webhook: groupName, solverName, config), the contract
// the many cert-manager-webhook-* projects serve. The operator calls it
// as cert-manager does: it creates a ChallengePayload (API group
// webhook.acme.cert-manager.io, version v1alpha1) at
// /apis/<groupName>/v1alpha1/<solverName> on the API server, whose
// aggregation layer passes it to the solver's APIService
// (v1alpha1.<groupName>), and reads the solver's answer from the
// payload it returns.
//
// The operator's service account needs the create verb on the solver's
// resource: a ClusterRole with the rule
//
//	apiGroups: [<groupName>], resources: [<solverName>], verbs: [create]
//
// bound to it. The webhook projects' Helm charts make such a ClusterRole
// ("<name>:domain-solver") and bind it to cert-manager's service
// account; bind it to the operator's as well (see
// config/samples/dns01-webhook-rbac.yaml). The operator's own ClusterRole
// cannot grant it, as the groups are the user's.

// webhookProvider names cert-manager's webhook solver among the DNS-01
// providers of certlife's solver configurations.
const webhookProvider = "webhook"

// webhookField is the path of the webhook solver's settings in an
// Issuer's or ClusterIssuer's spec, for errors.
const webhookField = "spec.acme.solvers[].dns01.webhook"

// The keys of a webhook solver's settings in certlife's solver
// configuration (challenge.DNS01Solver.Config).
const (
	webhookKeyGroup   = "groupName"
	webhookKeySolver  = "solverName"
	webhookKeyConfig  = "config"
	webhookKeyAmbient = "allowAmbientCredentials"
)

// WebhookVersion is the API version every webhook solver serves its
// resources in.
const WebhookVersion = "v1alpha1"

// Bounds of a call to a webhook solver.
const (
	// DefaultWebhookTimeout bounds one call when WebhookSolver.Timeout
	// is zero.
	DefaultWebhookTimeout = 30 * time.Second
	// DefaultWebhookMaxResponse bounds the answer read, in bytes, when
	// WebhookSolver.MaxResponseSize is zero.
	DefaultWebhookMaxResponse = 1 << 20
	// webhookMaxMessage bounds the solver's error message kept in an
	// error (and so in a challenge's reason), in bytes.
	webhookMaxMessage = 1024
)

// WebhookSolver is an acmeclient.Presenter that publishes DNS-01 TXT
// records through a cert-manager webhook solver, called through the API
// server's aggregation layer exactly as cert-manager calls it: Present
// and CleanUp each create one ChallengePayload (action Present or
// CleanUp, type dns-01) at /apis/<GroupName>/v1alpha1/<SolverName>. The
// request carries the name validated (DNSName: a wildcard's without
// "*."), the TXT value (Key), the record name (ResolvedFQDN,
// "_acme-challenge.<name>.") and its zone (ResolvedZone), the namespace
// of the Secrets the solver's config names (ResourceNamespace),
// AllowAmbientCredentials and the solver's config; it has a new UID on
// every call (cert-manager sends none). As with cert-manager, the body
// carries no apiVersion and kind: the solver's API server gives it
// webhook.acme.cert-manager.io/v1alpha1 ChallengePayload.
//
// The call succeeds when the solver answers with response.success; a
// solver that fails answers with response.status.message, which the
// error carries (cut at 1 KiB), so that it becomes the challenge's
// reason. An answer the API server refuses (no permission, no
// APIService, the solver unreachable) is an error with the API server's
// message. The answer read is bounded by MaxResponseSize, the call by
// Timeout.
//
// Whether a solver adds a value beside others at the record name, and
// whether its CleanUp removes only its own, is the solver's: cert-manager
// asks the same of them.
//
// A WebhookSolver holds no state and is safe for concurrent use; its
// fields must not change while it is in use.
type WebhookSolver struct {
	// Config reaches the API server (the operator's own REST config).
	// Required.
	Config *rest.Config
	// HTTPClient is the HTTP client for Config; nil means one made from
	// Config on each call.
	HTTPClient *http.Client
	// GroupName is the solver's API group, as the Issuer's
	// dns01.webhook.groupName. Required.
	GroupName string
	// SolverName is the solver's resource name in the group, as
	// dns01.webhook.solverName. Required.
	SolverName string
	// SolverConfig is dns01.webhook.config: a JSON object, passed to the
	// solver as it is; empty (or JSON null) passes none.
	SolverConfig json.RawMessage
	// ResourceNamespace is the namespace of the Secrets the config names:
	// an Issuer's own, or the cluster resource namespace for a
	// ClusterIssuer.
	ResourceNamespace string
	// AllowAmbientCredentials tells the solver it may use the
	// credentials of its environment (cert-manager's default: true for
	// ClusterIssuers, false for Issuers).
	AllowAmbientCredentials bool
	// Zone is the zone sent as ResolvedZone, a FQDN. Empty means found
	// on every call by asking Resolver for the SOA record at the record
	// name and, one label up at a time, its parents.
	Zone string
	// Resolver is a recursive resolver (host:port) for finding the zone;
	// empty means the first of /etc/resolv.conf.
	Resolver string
	// Timeout bounds one call, zone discovery included; zero means
	// DefaultWebhookTimeout. A sooner deadline of the context is kept.
	Timeout time.Duration
	// MaxResponseSize bounds the answer read, in bytes; zero means
	// DefaultWebhookMaxResponse.
	MaxResponseSize int64
}

var _ acmeclient.Presenter = WebhookSolver{}

// Present asks the solver to publish p's TXT value.
func (w WebhookSolver) Present(ctx context.Context, p acmeclient.Presentation) error {
	return w.call(ctx, p, whapi.ChallengeActionPresent)
}

// CleanUp asks the solver to remove p's TXT value.
func (w WebhookSolver) CleanUp(ctx context.Context, p acmeclient.Presentation) error {
	return w.call(ctx, p, whapi.ChallengeActionCleanUp)
}

// webhookCodecs encodes a ChallengePayload as cert-manager does (the
// type is registered nowhere, so no apiVersion or kind is set) and
// decodes the API server's metav1.Status answers.
var webhookCodecs = func() runtime.NegotiatedSerializer {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return serializer.WithoutConversionCodecFactory{CodecFactory: serializer.NewCodecFactory(s)}
}()

// check validates w's settings; errors name the Issuer's field.
func (w WebhookSolver) check() error {
	if w.Config == nil {
		return errors.New("dns01 webhook: no REST config to reach the API server")
	}
	return errors.Join(webhookProblems(webhookField, w.GroupName, w.SolverName, w.SolverConfig)...)
}

func (w WebhookSolver) call(ctx context.Context, p acmeclient.Presentation, action whapi.ChallengeAction) error {
	if err := w.check(); err != nil {
		return err
	}
	if p.Type != challenge.TypeDNS01 {
		return fmt.Errorf("dns01 webhook: %s is not a DNS-01 presentation", p)
	}
	timeout := w.Timeout
	if timeout <= 0 {
		timeout = DefaultWebhookTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	fqdn := p.DNS01Name()
	where := fmt.Sprintf("dns01 webhook %s/%s %s %s", w.GroupName, w.SolverName, action, fqdn)
	zone := dns.CanonicalName(w.Zone)
	if w.Zone == "" {
		var err error
		if zone, err = findZoneBySOA(ctx, w.Resolver, fqdn); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
	} else if !dns.IsSubDomain(zone, fqdn) {
		return fmt.Errorf("%s: the zone %s does not hold the record name", where, zone)
	}
	req := &whapi.ChallengeRequest{
		UID:                     uuid.NewUUID(),
		Action:                  action,
		Type:                    "dns-01",
		DNSName:                 p.Identifier,
		Key:                     p.DNS01Value(),
		ResourceNamespace:       w.ResourceNamespace,
		ResolvedFQDN:            fqdn,
		ResolvedZone:            zone,
		AllowAmbientCredentials: w.AllowAmbientCredentials,
	}
	if !webhookConfigEmpty(w.SolverConfig) {
		req.Config = &apiextensionsv1.JSON{Raw: w.SolverConfig}
	}
	rc, err := w.restClient()
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	res := rc.Post().Resource(w.SolverName).Body(&whapi.ChallengePayload{Request: req}).Do(ctx)
	var out whapi.ChallengePayload
	if err := res.Into(&out); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("%s: %w (is the APIService %s.%s registered, and does the solver serve %q?)", where, err, WebhookVersion, w.GroupName, w.SolverName)
		}
		return fmt.Errorf("%s: %w", where, err)
	}
	resp := out.Response
	switch {
	case resp == nil:
		return fmt.Errorf("%s: the solver's answer has no response", where)
	case resp.Success:
		return nil
	case resp.Result != nil && resp.Result.Message != "":
		return fmt.Errorf("%s: %s", where, cut(resp.Result.Message, webhookMaxMessage))
	}
	return fmt.Errorf("%s: the solver did not succeed and gave no reason", where)
}

// restClient is a client of the solver's group and version.
func (w WebhookSolver) restClient() (*rest.RESTClient, error) {
	cfg := rest.CopyConfig(w.Config)
	cfg.APIPath = "/apis"
	cfg.GroupVersion = &schema.GroupVersion{Group: w.GroupName, Version: WebhookVersion}
	cfg.NegotiatedSerializer = webhookCodecs
	cfg.ContentType = runtime.ContentTypeJSON
	cfg.AcceptContentTypes = runtime.ContentTypeJSON
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	hc := w.HTTPClient
	if hc == nil {
		var err error
		if hc, err = rest.HTTPClientFor(cfg); err != nil {
			return nil, err
		}
	}
	limit := w.MaxResponseSize
	if limit <= 0 {
		limit = DefaultWebhookMaxResponse
	}
	bounded := *hc
	bounded.Transport = limitedTransport{next: hc.Transport, limit: limit}
	return rest.RESTClientForConfigAndClient(cfg, &bounded)
}

// limitedTransport fails reading an answer body beyond limit bytes.
type limitedTransport struct {
	next  http.RoundTripper
	limit int64
}

func (t limitedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	next := t.next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(r)
	if err == nil && resp.Body != nil {
		resp.Body = &limitedBody{ReadCloser: resp.Body, left: t.limit, limit: t.limit}
	}
	return resp, err
}

type limitedBody struct {
	io.ReadCloser
	left, limit int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if b.left <= 0 {
		// At the limit: the answer may end here, or go on.
		var one [1]byte
		n, err := b.ReadCloser.Read(one[:])
		if n > 0 {
			return 0, fmt.Errorf("the answer is larger than the limit of %d bytes", b.limit)
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// cut shortens s to at most n bytes (on a rune boundary), marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

// findZoneBySOA finds the zone that holds fqdn: it asks resolver (empty:
// the first of /etc/resolv.conf) for the SOA record at fqdn and then at
// each parent, until an answer holds the SOA of that name or an
// authority section the SOA of a zone enclosing it. At most one question
// per label.
func findZoneBySOA(ctx context.Context, resolver, fqdn string) (string, error) {
	if resolver == "" {
		conf, err := dns.ClientConfigFromFile("/etc/resolv.conf")
		if err != nil || len(conf.Servers) == 0 {
			return "", errors.New("find the zone: no resolver in /etc/resolv.conf (set the operator's DNS-01 resolver)")
		}
		resolver = net.JoinHostPort(conf.Servers[0], conf.Port)
	}
	name := dns.CanonicalName(fqdn)
	labels := dns.SplitDomainName(name)
	c := &dns.Client{Timeout: 5 * time.Second, UDPSize: 1232}
	last := ""
	for i := range labels {
		cand := dns.Fqdn(strings.Join(labels[i:], "."))
		m := new(dns.Msg)
		m.SetQuestion(cand, dns.TypeSOA)
		m.SetEdns0(1232, false)
		c.Net = "udp"
		in, _, err := c.ExchangeContext(ctx, m, resolver)
		if err == nil && in.Truncated {
			c.Net = "tcp"
			in, _, err = c.ExchangeContext(ctx, m, resolver)
		}
		if err != nil {
			return "", fmt.Errorf("find the zone: SOA query for %s at %s: %w", cand, resolver, err)
		}
		if in.Rcode != dns.RcodeSuccess && in.Rcode != dns.RcodeNameError {
			return "", fmt.Errorf("find the zone: SOA query for %s at %s: answered %s", cand, resolver, dns.RcodeToString[in.Rcode])
		}
		for _, rr := range in.Answer {
			if soa, ok := rr.(*dns.SOA); ok && dns.CanonicalName(soa.Hdr.Name) == cand {
				return cand, nil
			}
		}
		for _, rr := range in.Ns {
			if soa, ok := rr.(*dns.SOA); ok && soa.Hdr.Name != "." && dns.IsSubDomain(dns.CanonicalName(soa.Hdr.Name), cand) {
				return dns.CanonicalName(soa.Hdr.Name), nil
			}
		}
		last = fmt.Sprintf(" (last answer for %s: %s)", cand, dns.RcodeToString[in.Rcode])
	}
	return "", fmt.Errorf("find the zone: %s knows no SOA record at %s or above it%s", resolver, name, last)
}

// webhookConfigEmpty reports whether a webhook solver's config is unset.
func webhookConfigEmpty(raw []byte) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// webhookProblems says what is wrong with a webhook solver's settings,
// each problem naming the field under path and its value.
func webhookProblems(path, group, solver string, config []byte) []error {
	var out []error
	switch {
	case group == "":
		out = append(out, fmt.Errorf("%s.groupName: is required (the API group of the solver's APIService)", path))
	case len(validation.IsDNS1123Subdomain(group)) > 0:
		out = append(out, fmt.Errorf("%s.groupName %q: not an API group name: %s", path, group, strings.Join(validation.IsDNS1123Subdomain(group), "; ")))
	}
	switch {
	case solver == "":
		out = append(out, fmt.Errorf("%s.solverName: is required (the solver's resource in its API group)", path))
	case strings.TrimSpace(solver) != solver || len(pathvalidation.IsValidPathSegmentName(solver)) > 0:
		msg := "has leading or trailing space"
		if errs := pathvalidation.IsValidPathSegmentName(solver); len(errs) > 0 {
			msg = strings.Join(errs, "; ")
		}
		out = append(out, fmt.Errorf("%s.solverName %q: not a resource name: %s", path, solver, msg))
	}
	if !webhookConfigEmpty(config) {
		var v any
		if err := json.Unmarshal(config, &v); err != nil {
			out = append(out, fmt.Errorf("%s.config %s: not JSON: %w", path, strconv.Quote(cut(string(config), 64)), err))
		} else if _, ok := v.(map[string]any); !ok {
			out = append(out, fmt.Errorf("%s.config %s: want a JSON object, not %s", path, cut(string(bytes.TrimSpace(config)), 64), jsonKind(v)))
		}
	}
	return out
}

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "an object"
}

// webhookNotServed names what is wrong with an ACME issuer's webhook
// solver settings, under path (spec.acme.solvers[i].dns01.webhook).
func webhookNotServed(path string, w *cmacme.ACMEIssuerDNS01ProviderWebhook) []string {
	var out []string
	for _, e := range webhookProblems(path, w.GroupName, w.SolverName, webhookRaw(w)) {
		out = append(out, e.Error())
	}
	return out
}

func webhookRaw(w *cmacme.ACMEIssuerDNS01ProviderWebhook) []byte {
	if w.Config == nil {
		return nil
	}
	return w.Config.Raw
}

// webhookDNS01Config is the solver configuration a webhook presentation
// carries: the group, the solver and its config (compact JSON).
func webhookDNS01Config(w *cmacme.ACMEIssuerDNS01ProviderWebhook) *challenge.DNS01Solver {
	out := &challenge.DNS01Solver{Provider: webhookProvider, Config: map[string]string{webhookKeyGroup: w.GroupName, webhookKeySolver: w.SolverName}}
	if raw := webhookRaw(w); !webhookConfigEmpty(raw) {
		var b bytes.Buffer
		if json.Compact(&b, raw) == nil {
			raw = b.Bytes()
		}
		out.Config[webhookKeyConfig] = string(raw)
	}
	return out
}

// webhookFromConfig is the inverse of webhookDNS01Config.
func webhookFromConfig(cfg map[string]string) *cmacme.ACMEIssuerDNS01ProviderWebhook {
	out := &cmacme.ACMEIssuerDNS01ProviderWebhook{GroupName: cfg[webhookKeyGroup], SolverName: cfg[webhookKeySolver]}
	if raw, ok := cfg[webhookKeyConfig]; ok {
		out.Config = &apiextensionsv1.JSON{Raw: []byte(raw)}
	}
	return out
}

// markWebhookAmbient records, in the webhook solver configurations of a
// ClusterIssuer, that the solver may use ambient credentials, as
// cert-manager allows by default for ClusterIssuers and not for Issuers.
func markWebhookAmbient(configs []order.SolverConfig, kind string) {
	if kind != "ClusterIssuer" {
		return
	}
	for _, c := range configs {
		if d := c.Solver.DNS01; d != nil && d.Provider == webhookProvider {
			d.Config[webhookKeyAmbient] = "true"
		}
	}
}

// webhookSolver is the presenter of a presentation whose solver names a
// webhook solver, for an issuer whose Secrets are in namespace.
func (a *acmeIssuers) webhookSolver(cfg map[string]string, namespace string) WebhookSolver {
	w := WebhookSolver{GroupName: cfg[webhookKeyGroup], SolverName: cfg[webhookKeySolver], ResourceNamespace: namespace,
		AllowAmbientCredentials: cfg[webhookKeyAmbient] == "true", Resolver: a.opts.DNS01Resolver}
	if raw, ok := cfg[webhookKeyConfig]; ok {
		w.SolverConfig = json.RawMessage(raw)
	}
	if a.rest != nil {
		w.Config, w.HTTPClient = a.rest.config, a.rest.client
	}
	return w
}

// restAccess is how the operator reaches the API server for calls its
// controller-runtime client does not make (webhook solvers).
type restAccess struct {
	config *rest.Config
	client *http.Client
}
