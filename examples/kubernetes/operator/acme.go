package operator

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cmacme "github.com/cert-manager/cert-manager/pkg/apis/acme/v1"
	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/challenge"
	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/order"
)

// ChallengeServer answers HTTP-01 challenges (RFC 8555 §8.3) on the
// operator's -http01-address, where the names' traffic to
// /.well-known/acme-challenge/ must be routed. It is the ACME issuers'
// HTTP-01 presenter: the replica that solves a challenge serves its token
// from memory at once, and every replica, leader or not, serves the
// tokens of the presented Challenges in its cache, so a Service in front
// of several replicas answers from any of them.
type ChallengeServer struct {
	handler acmeclient.HTTP01Handler
	cache   client.Reader // set by Setup
}

// NewChallengeServer returns a ChallengeServer; Setup connects it to the
// operator's cache.
func NewChallengeServer() *ChallengeServer { return &ChallengeServer{} }

// Present serves p's key authorization.
func (s *ChallengeServer) Present(ctx context.Context, p acmeclient.Presentation) error {
	return s.handler.Present(ctx, p)
}

// CleanUp stops serving p's token from memory.
func (s *ChallengeServer) CleanUp(ctx context.Context, p acmeclient.Presentation) error {
	return s.handler.CleanUp(ctx, p)
}

// Presented is how many tokens this process serves from memory.
func (s *ChallengeServer) Presented() int { return s.handler.Presented() }

// ServeHTTP answers a token this process presents, or one a presented
// Challenge in the cache holds.
func (s *ChallengeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if token, ok := strings.CutPrefix(r.URL.Path, acmeclient.HTTP01Path); ok && token != "" && s.cache != nil &&
		(r.Method == http.MethodGet || r.Method == http.MethodHead) {
		var l cmacme.ChallengeList
		if err := s.cache.List(r.Context(), &l, client.MatchingFields{indexChallengeToken: token}); err == nil {
			for _, c := range l.Items {
				if c.Spec.Type == cmacme.ACMEChallengeTypeHTTP01 && c.Status.Presented && !challenge.State(c.Status.State).Final() {
					w.Header().Set("Content-Type", "text/plain")
					_, _ = w.Write([]byte(c.Spec.Key))
					return
				}
			}
		}
	}
	s.handler.ServeHTTP(w, r)
}

// forget stops serving a deleted Challenge's token from memory.
func (s *ChallengeServer) forget(obj any) {
	if c, ok := obj.(*cmacme.Challenge); ok {
		_ = s.handler.CleanUp(context.Background(), acmeclient.Presentation{Type: challenge.TypeHTTP01, Token: c.Spec.Token})
	}
}

// ACMEOptions are the operator's ACME settings.
type ACMEOptions struct {
	// ChallengeServer presents HTTP-01 key authorizations; nil means a
	// new one (which Setup serves on nothing: main.go serves it on
	// -http01-address).
	ChallengeServer *ChallengeServer
	// HTTP01Check and DNS01Check are the self-checks before a challenge is
	// accepted; nil means acmeclient.HTTP01Checker{} and
	// acmeclient.DNS01Checker{} (with the solver's nameservers).
	HTTP01Check, DNS01Check acmeclient.Checker
	// DNS01Providers are the settings of the dns01.cloudflare and
	// dns01.route53 solvers (dns01providers.go).
	DNS01Providers DNS01ProviderOptions
	// UserAgent is sent with every ACME request; empty means
	// "certlife-operator".
	UserAgent string
	// HTTP01Service is the operator's challenge Service (namespace and
	// name): the Service in front of every replica's challenge server.
	// For an issuer whose HTTP-01 solver sets http01.ingress or
	// http01.gatewayHTTPRoute, the operator routes each challenge's
	// request to it — a Service in the challenge's namespace whose
	// EndpointSlices mirror this Service's, and an Ingress or HTTPRoute to
	// it. Empty turns the routing off: such settings are then not used,
	// and the issuer's condition says so.
	HTTP01Service types.NamespacedName
	// DNS01Resolver is a recursive resolver (host:port) through which
	// the operator finds the zone of a DNS-01 record name for the
	// webhook, cloudflare and route53 solvers (a webhook solver's
	// resolvedZone; the zone the record is written in) and, when
	// DNS01Check is nil, the zone's servers for their challenges'
	// self-check; empty means the first of /etc/resolv.conf.
	DNS01Resolver string
}

// acmeIssuers builds, and keeps until its configuration changes, one
// acmeclient.Issuer per ACME Issuer or ClusterIssuer.
type acmeIssuers struct {
	client        client.Client
	api, cache    client.Reader
	store         *store
	clock         clock.PassiveClock
	opts          ACMEOptions
	log           logr.Logger
	clusterSecret string
	// router makes the HTTP-01 routes; nil when ACMEOptions.HTTP01Service
	// is not set.
	router *http01Router

	// rest reaches the API server for webhook solvers; nil in tests
	// that need none.
	rest *restAccess

	mu   sync.Mutex
	byID map[string]*acmeRuntime
	// retired holds the request counts of replaced clients, by issuer
	// labels and kind, so the exported counters never go backwards.
	retired map[[4]string]int
}

// retire keeps a replaced runtime's request counts. Called with mu held.
func (a *acmeIssuers) retire(rt *acmeRuntime) {
	if a.retired == nil {
		a.retired = map[[4]string]int{}
	}
	for kind, n := range rt.client.Transport().Counts().ByKind {
		a.retired[[4]string{rt.namespace, rt.kind, rt.name, string(kind)}] += n
	}
}

// acmeRuntime is one issuer's ACME client and certlife issuer.
type acmeRuntime struct {
	fingerprint string
	client      *acmeclient.Client
	issuer      *acmeclient.Issuer
	account     acmeclient.AccountOptions
	// kind, namespace, name label the ACME request counts.
	kind, namespace, name string
	// registered is the account URL once registered with this client.
	registered string
	// keyHash is the account key's hash as cert-manager records it in
	// status.acme.lastPrivateKeyHash (RSA keys; empty for others).
	keyHash string
}

// issuerID names an issuer among all: kind, namespace (for an Issuer),
// name.
func issuerID(kind, namespace, name string) string {
	if kind == "ClusterIssuer" {
		return kind + "/" + name
	}
	return "Issuer/" + namespace + "/" + name
}

// accountKeyRef is the account key's Secret and key: tls.key when the
// spec names no key, as in cert-manager.
func accountKeyRef(spec *cmacme.ACMEIssuer) cmmeta.SecretKeySelector {
	ref := spec.PrivateKey
	if ref.Key == "" {
		ref.Key = corev1.TLSPrivateKeyKey
	}
	return ref
}

// errNoAccountKey: the account key Secret does not exist yet.
type errNoAccountKey struct{ namespace, name string }

func (e errNoAccountKey) Error() string {
	return fmt.Sprintf("the ACME account key secret %s/%s does not exist yet", e.namespace, e.name)
}

// secretData reads a Secret's data; nil when it does not exist.
func (a *acmeIssuers) secretData(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	s, err := a.store.secret(ctx, namespace, name)
	if errors.Is(err, host.ErrNotFound) {
		return nil, nil
	}
	return s, err
}

// existing returns the runtime built for an issuer, nil when none is.
func (a *acmeIssuers) existing(id string) *acmeRuntime {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.byID[id]
}

// get returns the runtime of an ACME issuer, built anew when its spec or
// any Secret it reads changed.
func (a *acmeIssuers) get(ctx context.Context, kind, namespace, name string, spec *cmacme.ACMEIssuer, secretsNS string) (*acmeRuntime, error) {
	keyRef := accountKeyRef(spec)
	keySecret, err := a.secretData(ctx, secretsNS, keyRef.Name)
	if err != nil {
		return nil, err
	}
	if keySecret == nil || len(keySecret.Data[keyRef.Key]) == 0 {
		return nil, errNoAccountKey{secretsNS, keyRef.Name}
	}
	var eab *acmeclient.EAB
	fp := sha256.New()
	specJSON, _ := json.Marshal(spec)
	fp.Write(specJSON)
	fmt.Fprintf(fp, "|%s|%s", keySecret.UID, keySecret.ResourceVersion)
	if b := spec.ExternalAccountBinding; b != nil {
		s, err := a.secretData(ctx, secretsNS, b.Key.Name)
		if err != nil {
			return nil, err
		}
		if s == nil || len(s.Data[b.Key.Key]) == 0 {
			return nil, fmt.Errorf("spec.acme.externalAccountBinding.keySecretRef: secret %s/%s has no key %q", secretsNS, b.Key.Name, b.Key.Key)
		}
		mac, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(strings.TrimSpace(string(s.Data[b.Key.Key])), "="))
		if err != nil {
			return nil, fmt.Errorf("spec.acme.externalAccountBinding.keySecretRef: secret %s/%s key %q is not base64url", secretsNS, b.Key.Name, b.Key.Key)
		}
		eab = &acmeclient.EAB{KeyID: b.KeyID, Key: mac}
		fmt.Fprintf(fp, "|%s|%s", s.UID, s.ResourceVersion)
	}
	id := issuerID(kind, namespace, name)
	fingerprint := hex.EncodeToString(fp.Sum(nil))
	if rt := a.existing(id); rt != nil && rt.fingerprint == fingerprint {
		return rt, nil
	}

	key, err := keys.DecodePrivateKey(keySecret.Data[keyRef.Key])
	if err != nil {
		return nil, fmt.Errorf("spec.acme.privateKeySecretRef: the key in secret %s/%s cannot be used: %w", secretsNS, keyRef.Name, err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("spec.acme.privateKeySecretRef: the key in secret %s/%s cannot sign", secretsNS, keyRef.Name)
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	if len(spec.CABundle) > 0 || spec.SkipTLSVerify {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: spec.SkipTLSVerify} // #nosec G402 -- the issuer's spec asks for it (skipTLSVerify)
		if len(spec.CABundle) > 0 {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(spec.CABundle) {
				return nil, errors.New("spec.acme.caBundle: no PEM certificate in it")
			}
			t.TLSClientConfig.RootCAs = pool
		}
		hc.Transport = t
	}
	ua := a.opts.UserAgent
	if ua == "" {
		ua = "certlife-operator"
	}
	c, err := acmeclient.New(acmeclient.Config{DirectoryURL: spec.Server, Key: signer, HTTPClient: hc, UserAgent: ua, Clock: a.clock})
	if err != nil {
		return nil, fmt.Errorf("spec.acme: %w", err)
	}
	account := acmeclient.AccountOptions{AgreeToTerms: true, EAB: eab}
	if spec.Email != "" {
		account.Contact = []string{"mailto:" + spec.Email}
	}
	storeNS := namespace
	if kind == "ClusterIssuer" {
		storeNS = ""
	}
	label := labelValueHash(id)
	store := newOrderStore(a.client, a.api, a.cache, label, storeNS)
	solvers, configs := a.solvers(spec, secretsNS, store)
	markWebhookAmbient(configs, kind)
	allowAmbient(solvers, kind) // dns01providers.go
	logger := a.log.WithValues("issuer", id)
	iss, err := acmeclient.NewIssuer(acmeclient.IssuerConfig{
		Client:          c,
		Account:         account,
		Store:           store,
		Solvers:         solvers,
		SolverConfigs:   configs,
		Profile:         spec.Profile,
		PreferredChain:  spec.PreferredChain,
		RequestValidity: spec.EnableDurationFeature,
		Trace: func(e acmeclient.Event) {
			if e.Err != nil {
				logger.Info(e.String(), "error", e.Err.Error())
				return
			}
			logger.V(1).Info(e.String())
		},
	})
	if err != nil {
		return nil, fmt.Errorf("spec.acme: %w", err)
	}
	rt := &acmeRuntime{fingerprint: fingerprint, client: c, issuer: iss, account: account, kind: kind, namespace: namespace, name: name}
	if k, ok := signer.(*rsa.PrivateKey); ok {
		sum := sha256.Sum256(x509.MarshalPKCS1PrivateKey(k))
		rt.keyHash = base64.StdEncoding.EncodeToString(sum[:])
	}
	a.mu.Lock()
	if old := a.byID[id]; old != nil {
		// Keep the request counts of the client replaced.
		a.retire(old)
	}
	a.byID[id] = rt
	a.mu.Unlock()
	return rt, nil
}

// labelValueHash is a short hash, for label values of names that may be
// long.
func labelValueHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:12])
}

// solvers maps the issuer's solvers to certlife's: the presenters (the
// challenge server for HTTP-01, with the routes its settings ask for;
// RFC 2136, Cloudflare, Route 53 or a webhook solver for DNS-01) and one
// solver configuration per solver, with its selector and, for HTTP-01,
// its routing settings.
func (a *acmeIssuers) solvers(spec *cmacme.ACMEIssuer, secretsNS string, store *orderStore) (acmeclient.Solvers, []order.SolverConfig) {
	s := acmeclient.Solvers{HTTP01: routedHTTP01{server: a.opts.ChallengeServer, router: a.router, store: store},
		HTTP01Check: a.opts.HTTP01Check, DNS01Check: a.opts.DNS01Check}
	if s.HTTP01Check == nil {
		s.HTTP01Check = acmeclient.HTTP01Checker{}
	}
	var configs []order.SolverConfig
	for _, sv := range spec.Solvers {
		var sc order.SolverConfig
		if sel := sv.Selector; sel != nil {
			sc.Selector = &order.Selector{DNSNames: sel.DNSNames, DNSZones: sel.DNSZones, MatchLabels: sel.MatchLabels}
		}
		switch {
		case sv.HTTP01 != nil:
			sc.Solver.HTTP01 = http01SolverToCore(sv.HTTP01)
		case sv.DNS01 != nil && sv.DNS01.RFC2136 != nil:
			sc.Solver.DNS01 = dns01Config(sv.DNS01.RFC2136)
			s.DNS01 = &dns01Presenter{secrets: a, namespace: secretsNS}
			if s.DNS01Check == nil {
				s.DNS01Check = acmeclient.DNS01Checker{}
			}
		case sv.DNS01 != nil && sv.DNS01.Webhook != nil:
			// A cert-manager webhook solver (webhook.go).
			sc.Solver.DNS01 = webhookDNS01Config(sv.DNS01.Webhook)
			s.DNS01 = &dns01Presenter{secrets: a, namespace: secretsNS}
			if s.DNS01Check == nil {
				s.DNS01Check = acmeclient.DNS01Checker{Resolver: a.opts.DNS01Resolver}
			}
		case sv.DNS01 != nil && libdnsConfig(sv.DNS01) != nil: // cloudflare, route53 (dns01providers.go)
			sc.Solver.DNS01 = libdnsConfig(sv.DNS01)
			s.DNS01 = &dns01Presenter{secrets: a, namespace: secretsNS}
			if s.DNS01Check == nil {
				s.DNS01Check = acmeclient.DNS01Checker{Resolver: a.opts.DNS01Resolver}
			}
		default:
			continue // refused (acmeNotServed)
		}
		configs = append(configs, sc)
	}
	return s, configs
}

// acmeNotServed names what an ACME issuer configures that this operator
// does not serve: DNS-01 providers other than RFC 2136, Cloudflare, Route
// 53 (and what these two cannot do) and cert-manager's webhook solvers,
// webhook solver settings that cannot be called, CNAME following, waiting
// instead of the self-check, a solver that solves nothing.
func acmeNotServed(a *cmacme.ACMEIssuer) []string {
	var out []string
	for i, sv := range a.Solvers {
		path := fmt.Sprintf("spec.acme.solvers[%d]", i)
		if sv.WaitInsteadOfSelfCheck != nil {
			out = append(out, path+".waitInsteadOfSelfCheck: is not served by this operator (it checks each challenge itself before accepting it)")
		}
		switch {
		case sv.HTTP01 != nil && sv.DNS01 != nil:
			out = append(out, path+": sets both http01 and dns01; give each its own solver")
		case sv.HTTP01 != nil:
			if in := sv.HTTP01.Ingress; in != nil && in.Class != nil && in.IngressClassName != nil {
				out = append(out, path+".http01.ingress: sets both class and ingressClassName; set one")
			}
			if sv.HTTP01.Ingress != nil && sv.HTTP01.GatewayHTTPRoute != nil {
				out = append(out, path+".http01: sets both ingress and gatewayHTTPRoute; give each its own solver")
			}
		case sv.DNS01 == nil:
			out = append(out, path+": sets neither http01 nor dns01")
		default:
			d := sv.DNS01
			if d.CNAMEStrategy == cmacme.FollowStrategy {
				out = append(out, path+".dns01.cnameStrategy: Follow is not served by this operator")
			}
			for _, p := range []struct {
				name string
				set  bool
			}{{"acmeDNS", d.AcmeDNS != nil}, {"akamai", d.Akamai != nil}, {"azureDNS", d.AzureDNS != nil}, {"cloudDNS", d.CloudDNS != nil},
				{"digitalocean", d.DigitalOcean != nil}} {
				if p.set {
					out = append(out, path+".dns01."+p.name+": is not served by this operator (its DNS-01 providers are rfc2136, cloudflare, route53 and webhook)")
				}
			}
			if d.Webhook != nil {
				out = append(out, webhookNotServed(path+".dns01.webhook", d.Webhook)...)
			}
			out = append(out, libdnsNotServed(path+".dns01", d)...) // cloudflare, route53 (dns01providers.go)
			if d.RFC2136 == nil && !slicesContainsTrue(d.AcmeDNS != nil, d.Akamai != nil, d.AzureDNS != nil, d.CloudDNS != nil, d.Cloudflare != nil, d.DigitalOcean != nil, d.Route53 != nil, d.Webhook != nil) {
				out = append(out, path+".dns01: names no DNS provider (this operator's are rfc2136, cloudflare, route53 and webhook)")
			}
		}
	}
	return out
}

func slicesContainsTrue(bs ...bool) bool {
	for _, b := range bs {
		if b {
			return true
		}
	}
	return false
}

// http01Note says, for an issuer with HTTP-01 solvers that configure an
// Ingress or a Gateway route, how the operator serves them: it answers
// HTTP-01 itself and routes each challenge to its challenge Service with
// the Ingress or HTTPRoute the settings describe (no solver pod; the pod
// template is not used); without a challenge Service configured
// (service empty), the settings are not used.
func http01Note(a *cmacme.ACMEIssuer, service string) string {
	var paths []string
	pod := false
	for i, sv := range a.Solvers {
		if h := sv.HTTP01; h != nil && (h.Ingress != nil || h.GatewayHTTPRoute != nil) {
			paths = append(paths, fmt.Sprintf("spec.acme.solvers[%d].http01", i))
			pod = pod || h.Ingress != nil && h.Ingress.PodTemplate != nil || h.GatewayHTTPRoute != nil && h.GatewayHTTPRoute.PodTemplate != nil
		}
	}
	if len(paths) == 0 {
		return ""
	}
	if service == "" {
		return "HTTP-01 is answered by the operator's challenge server, and the operator has no challenge Service configured (-http01-service): " +
			strings.Join(paths, ", ") + " settings are not used; route port 80 of the names (path /.well-known/acme-challenge/) to the operator"
	}
	msg := "HTTP-01 is answered by the operator's challenge server (Service " + service + "), no solver pod: for " + strings.Join(paths, ", ") +
		" each challenge gets a Service in its namespace mirroring that Service's endpoints and the Ingress or HTTPRoute the settings describe"
	if pod {
		msg += "; podTemplate is not used"
	}
	return msg
}

// dns01Config is the solver configuration a DNS-01 presenter reads back
// from a presentation: the RFC 2136 settings (the TSIG secret by
// reference, never its value).
func dns01Config(r *cmacme.ACMEIssuerDNS01ProviderRFC2136) *challenge.DNS01Solver {
	out := &challenge.DNS01Solver{Provider: "rfc2136", Config: map[string]string{"nameserver": r.Nameserver}}
	set := func(k, v string) {
		if v != "" {
			out.Config[k] = v
		}
	}
	set("tsigKeyName", r.TSIGKeyName)
	set("tsigAlgorithm", r.TSIGAlgorithm)
	set("tsigSecretName", r.TSIGSecret.Name)
	set("tsigSecretKey", r.TSIGSecret.Key)
	set("protocol", string(r.Protocol))
	return out
}

// rfc2136FromConfig is the inverse of dns01Config.
func rfc2136FromConfig(cfg map[string]string) *cmacme.ACMEIssuerDNS01ProviderRFC2136 {
	return &cmacme.ACMEIssuerDNS01ProviderRFC2136{Nameserver: cfg["nameserver"], TSIGKeyName: cfg["tsigKeyName"], TSIGAlgorithm: cfg["tsigAlgorithm"],
		TSIGSecret: cmmeta.SecretKeySelector{LocalObjectReference: cmmeta.LocalObjectReference{Name: cfg["tsigSecretName"]}, Key: cfg["tsigSecretKey"]},
		Protocol:   cmacme.RFC2136UpdateProtocol(cfg["protocol"])}
}

// dns01Presenter publishes DNS-01 TXT records with the provider the
// presentation's solver configuration names.
type dns01Presenter struct {
	secrets   *acmeIssuers
	namespace string // of the TSIG Secrets
	ambient   bool   // a ClusterIssuer's: Route 53 may use ambient credentials
}

func (d *dns01Presenter) provider(ctx context.Context, p acmeclient.Presentation) (acmeclient.Presenter, error) {
	cfg := p.Solver.DNS01
	if cfg != nil && cfg.Provider == webhookProvider {
		// A cert-manager webhook solver (webhook.go).
		return d.secrets.webhookSolver(cfg.Config, d.namespace), nil
	}
	if pr, ok, err := d.libdnsPresenter(ctx, cfg); ok { // cloudflare, route53 (dns01providers.go)
		return pr, err
	}
	if cfg == nil || cfg.Provider != "rfc2136" {
		return nil, errors.New("spec.acme.solvers[].dns01: no DNS provider configured (this operator's are rfc2136, cloudflare, route53 and webhook)")
	}
	in := rfc2136FromConfig(cfg.Config)
	secret := ""
	if name := in.TSIGSecret.Name; name != "" {
		s, err := d.secrets.secretData(ctx, d.namespace, name)
		if err != nil {
			return nil, err
		}
		key := in.TSIGSecret.Key
		if s == nil || len(s.Data[key]) == 0 {
			return nil, fmt.Errorf("spec.acme.solvers[].dns01.rfc2136.tsigSecretSecretRef: secret %s/%s has no key %q", d.namespace, name, key)
		}
		secret = strings.TrimSpace(string(s.Data[key]))
	}
	return newRFC2136(in, secret)
}

// Present publishes p's TXT record.
func (d *dns01Presenter) Present(ctx context.Context, p acmeclient.Presentation) error {
	pr, err := d.provider(ctx, p)
	if err != nil {
		return err
	}
	return pr.Present(ctx, p)
}

// CleanUp removes p's TXT record.
func (d *dns01Presenter) CleanUp(ctx context.Context, p acmeclient.Presentation) error {
	pr, err := d.provider(ctx, p)
	if err != nil {
		return err
	}
	return pr.CleanUp(ctx, p)
}

// ensureAccountKey creates the account key Secret when it is missing, as
// cert-manager does — an RSA 2048 key in PKCS#1, which cert-manager
// requires of the accounts it uses, so that going back to it keeps the
// account — labelled so the operator caches it. With
// spec.acme.disableAccountKeyGeneration, a missing one is an error.
func (a *acmeIssuers) ensureAccountKey(ctx context.Context, spec *cmacme.ACMEIssuer, secretsNS string, rnd io.Reader) error {
	ref := accountKeyRef(spec)
	s, err := a.secretData(ctx, secretsNS, ref.Name)
	if err != nil || s != nil {
		return err
	}
	if spec.DisableAccountKeyGeneration {
		return errors.New("it does not exist, and spec.acme.disableAccountKeyGeneration forbids making it")
	}
	key, err := keys.Generate(rnd, keys.KeySpec{Algorithm: keys.AlgorithmRSA, Size: 2048})
	if err != nil {
		return err
	}
	pemKey, err := keys.EncodePrivateKey(key, keys.EncodingPKCS1)
	if err != nil {
		return err
	}
	obj := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: secretsNS, Labels: map[string]string{LabelManaged: "true"}},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{ref.Key: pemKey},
	}
	if err := a.client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// forgetRequest cleans up after a CertificateRequest whose ACME issuer
// cannot be told (it was deleted): it takes down what the request's
// challenges present (an HTTP-01 token, a DNS-01 TXT record) and deletes
// the Challenges and the Order. Orders of a newer request of the same
// name stay.
func (a *acmeIssuers) forgetRequest(ctx context.Context, namespace, name string) error {
	var ol cmacme.OrderList
	if err := a.api.List(ctx, &ol, client.InNamespace(namespace), client.MatchingLabels{LabelACMERequest: labelValue(name)}); err != nil || len(ol.Items) == 0 {
		return err
	}
	var live cmapi.CertificateRequest
	err := a.api.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &live)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	for i := range ol.Items {
		o := &ol.Items[i]
		if ref := metav1.GetControllerOfNoCopy(o); ref == nil || ref.Kind != "CertificateRequest" || ref.Name != name || (err == nil && ref.UID == live.UID) {
			continue
		}
		var cl cmacme.ChallengeList
		if err := a.api.List(ctx, &cl, client.InNamespace(namespace), client.MatchingLabels{LabelACMEOrder: labelValue(o.Name)}); err != nil {
			return err
		}
		for j := range cl.Items {
			c := &cl.Items[j]
			if c.Status.Presented {
				if err := a.cleanUp(ctx, c); err != nil {
					return fmt.Errorf("cleaning up challenge %s/%s: %w", c.Namespace, c.Name, err)
				}
			}
			if err := a.client.Delete(ctx, c); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
		if err := a.client.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// cleanUp takes down what a Challenge presents.
func (a *acmeIssuers) cleanUp(ctx context.Context, c *cmacme.Challenge) error {
	core := ChallengeToCore(c)
	p := acmeclient.Presentation{Type: core.Spec.Type, Identifier: core.Spec.DNSName, Wildcard: core.Spec.Wildcard,
		Token: core.Spec.Token, KeyAuthorization: core.Spec.Key, Solver: core.Spec.Solver}
	switch core.Spec.Type {
	case challenge.TypeHTTP01:
		if a.router != nil && routeOf(core.Spec.Solver).any() {
			if err := a.router.removeFor(ctx, c); err != nil {
				return err
			}
		}
		return a.opts.ChallengeServer.CleanUp(ctx, p)
	case challenge.TypeDNS01:
		ns := c.Namespace
		if c.Spec.IssuerRef.Kind == "ClusterIssuer" {
			ns = a.clusterSecret
		}
		return (&dns01Presenter{secrets: a, namespace: ns}).CleanUp(ctx, p)
	}
	return nil
}

// http01Service names the operator's challenge Service, "" when HTTP-01
// routing is off.
func (a *acmeIssuers) http01Service() string {
	if a.router == nil {
		return ""
	}
	return a.router.source.String()
}

// drop forgets an issuer's runtime (the issuer was deleted).
func (a *acmeIssuers) drop(id string) {
	a.mu.Lock()
	if rt := a.byID[id]; rt != nil {
		a.retire(rt)
		delete(a.byID, id)
	}
	a.mu.Unlock()
}

// acmeRequestsCollector exports every ACME issuer's request counts, by
// kind, at each scrape.
type acmeRequestsCollector struct {
	issuers atomic.Pointer[acmeIssuers]
	desc    *prometheus.Desc
}

func (c *acmeRequestsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *acmeRequestsCollector) Collect(ch chan<- prometheus.Metric) {
	a := c.issuers.Load()
	if a == nil {
		return
	}
	a.mu.Lock()
	counts := make(map[[4]string]int, len(a.retired))
	for k, n := range a.retired {
		counts[k] = n
	}
	for _, rt := range a.byID {
		for kind, n := range rt.client.Transport().Counts().ByKind {
			counts[[4]string{rt.namespace, rt.kind, rt.name, string(kind)}] += n
		}
	}
	a.mu.Unlock()
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(n), k[0], k[1], k[2], k[3])
	}
}

// Runnable serves the challenge server on addr while the manager runs,
// on every replica, leader or not (add it with mgr.Add).
func (s *ChallengeServer) Runnable(addr string) manager.Runnable { return challengeRunnable{s, addr} }

type challengeRunnable struct {
	s    *ChallengeServer
	addr string
}

// NeedLeaderElection is false: every replica answers challenges.
func (challengeRunnable) NeedLeaderElection() bool { return false }

// Start serves until ctx ends.
func (r challengeRunnable) Start(ctx context.Context) error {
	srv := &http.Server{Addr: r.addr, Handler: r.s, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	select {
	case <-ctx.Done():
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(shut)
	case err := <-errc:
		return fmt.Errorf("the HTTP-01 challenge server on %s: %w", r.addr, err)
	}
}
