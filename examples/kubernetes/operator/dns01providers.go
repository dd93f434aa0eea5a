package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	cmacme "github.com/cert-manager/cert-manager/pkg/apis/acme/v1"
	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	"github.com/libdns/cloudflare"
	"github.com/libdns/route53"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/challenge"
)

// DNS01ProviderOptions are the settings of the DNS-01 providers the
// operator reaches through libdns provider modules: cert-manager's
// dns01.cloudflare (github.com/libdns/cloudflare) and dns01.route53
// (github.com/libdns/route53). The TXT record is written in the zone
// found by asking ACMEOptions.DNS01Resolver for the SOA record of its
// name and its parents, and checked at the zone's authoritative servers
// before the challenge is accepted.
//
// Route 53 is reached at the endpoint the AWS SDK's configuration names:
// AWS_ENDPOINT_URL_ROUTE_53 (or AWS_ENDPOINT_URL) in the operator's
// environment overrides Amazon's.
type DNS01ProviderOptions struct {
	// CloudflareURL is the Cloudflare API's base URL; empty means
	// https://api.cloudflare.com/client/v4. github.com/libdns/cloudflare
	// has that URL built in: the operator's HTTP client sends its
	// requests to CloudflareURL instead (a proxy or a test server).
	CloudflareURL string
}

// cloudflareAPI is the base URL built into github.com/libdns/cloudflare.
const cloudflareAPI = "https://api.cloudflare.com/client/v4"

// libdnsProviders are the solver configurations' provider names served
// through libdns.
const (
	providerCloudflare = "cloudflare"
	providerRoute53    = "route53"
)

// Keys of the solver configuration (challenge.DNS01Solver.Config) of the
// Cloudflare and Route 53 solvers: every field of cert-manager's, Secrets
// by reference, never a value.
const (
	cfgEmail                = "email"
	cfgAPITokenSecretName   = "apiTokenSecretName"
	cfgAPITokenSecretKey    = "apiTokenSecretKey"
	cfgAPIKeySecretName     = "apiKeySecretName"
	cfgAPIKeySecretKey      = "apiKeySecretKey"
	cfgRegion               = "region"
	cfgAccessKeyID          = "accessKeyID"
	cfgAccessKeyIDSecret    = "accessKeyIDSecretName"
	cfgAccessKeyIDSecretKey = "accessKeyIDSecretKey"
	cfgSecretKeySecretName  = "secretAccessKeySecretName"
	cfgSecretKeySecretKey   = "secretAccessKeySecretKey"
	cfgRole                 = "role"
	cfgHostedZoneID         = "hostedZoneID"
	cfgAuth                 = "auth" // Route53Auth as JSON
)

// libdnsConfig is the solver configuration of a Cloudflare or Route 53
// DNS-01 solver; nil for other providers.
func libdnsConfig(d *cmacme.ACMEChallengeSolverDNS01) *challenge.DNS01Solver {
	if d == nil {
		return nil
	}
	out := &challenge.DNS01Solver{Config: map[string]string{}}
	set := func(k, v string) {
		if v != "" {
			out.Config[k] = v
		}
	}
	ref := func(name, key string, r *cmmeta.SecretKeySelector) {
		if r != nil {
			out.Config[name] = r.Name
			set(key, r.Key)
		}
	}
	switch {
	case d.Cloudflare != nil:
		c := d.Cloudflare
		out.Provider = providerCloudflare
		set(cfgEmail, c.Email)
		ref(cfgAPITokenSecretName, cfgAPITokenSecretKey, c.APIToken)
		ref(cfgAPIKeySecretName, cfgAPIKeySecretKey, c.APIKey)
	case d.Route53 != nil:
		r := d.Route53
		out.Provider = providerRoute53
		set(cfgRegion, r.Region)
		set(cfgAccessKeyID, r.AccessKeyID)
		ref(cfgAccessKeyIDSecret, cfgAccessKeyIDSecretKey, r.SecretAccessKeyID)
		set(cfgSecretKeySecretName, r.SecretAccessKey.Name)
		set(cfgSecretKeySecretKey, r.SecretAccessKey.Key)
		set(cfgRole, r.Role)
		set(cfgHostedZoneID, r.HostedZoneID)
		if r.Auth != nil {
			b, _ := json.Marshal(r.Auth) // plain struct of strings: cannot fail
			out.Config[cfgAuth] = string(b)
		}
	default:
		return nil
	}
	return out
}

// libdnsFromConfig is the inverse of libdnsConfig: it sets the
// Cloudflare or Route 53 solver of out that s configures.
func libdnsFromConfig(s *challenge.DNS01Solver, out *cmacme.ACMEChallengeSolverDNS01) {
	if s == nil || out == nil {
		return
	}
	cfg := s.Config
	ref := func(name, key string) *cmmeta.SecretKeySelector {
		n, ok := cfg[name]
		if !ok {
			return nil
		}
		return &cmmeta.SecretKeySelector{LocalObjectReference: cmmeta.LocalObjectReference{Name: n}, Key: cfg[key]}
	}
	switch s.Provider {
	case providerCloudflare:
		out.Cloudflare = &cmacme.ACMEIssuerDNS01ProviderCloudflare{Email: cfg[cfgEmail],
			APIToken: ref(cfgAPITokenSecretName, cfgAPITokenSecretKey), APIKey: ref(cfgAPIKeySecretName, cfgAPIKeySecretKey)}
	case providerRoute53:
		r := &cmacme.ACMEIssuerDNS01ProviderRoute53{Region: cfg[cfgRegion], AccessKeyID: cfg[cfgAccessKeyID],
			SecretAccessKeyID: ref(cfgAccessKeyIDSecret, cfgAccessKeyIDSecretKey),
			SecretAccessKey: cmmeta.SecretKeySelector{LocalObjectReference: cmmeta.LocalObjectReference{Name: cfg[cfgSecretKeySecretName]},
				Key: cfg[cfgSecretKeySecretKey]},
			Role: cfg[cfgRole], HostedZoneID: cfg[cfgHostedZoneID]}
		if a, ok := cfg[cfgAuth]; ok {
			r.Auth = &cmacme.Route53Auth{}
			_ = json.Unmarshal([]byte(a), r.Auth) // written by libdnsConfig
		}
		out.Route53 = r
	}
}

// libdnsNotServed names what a DNS-01 solver's Cloudflare or Route 53
// settings ask for that the libdns providers cannot do, each as
// "<path>.<field>: why", path being the solver's dns01.
func libdnsNotServed(path string, d *cmacme.ACMEChallengeSolverDNS01) []string {
	var out []string
	n := 0
	for _, set := range []bool{d.AcmeDNS != nil, d.Akamai != nil, d.AzureDNS != nil, d.CloudDNS != nil, d.Cloudflare != nil,
		d.DigitalOcean != nil, d.RFC2136 != nil, d.Route53 != nil, d.Webhook != nil} {
		if set {
			n++
		}
	}
	if n > 1 && (d.Cloudflare != nil || d.Route53 != nil) {
		out = append(out, path+": names more than one DNS provider; give each its own solver")
	}
	if c := d.Cloudflare; c != nil {
		p := path + ".cloudflare"
		if c.APIKey != nil {
			out = append(out, fmt.Sprintf("%s.apiKeySecretRef: secret %q key %q: a global API key is not served "+
				"(github.com/libdns/cloudflare authenticates with API tokens only); use apiTokenSecretRef", p, c.APIKey.Name, c.APIKey.Key))
		}
		if c.APIToken == nil && c.APIKey == nil {
			out = append(out, p+": sets no apiTokenSecretRef")
		} else if c.APIToken != nil && c.APIToken.Name == "" {
			out = append(out, p+".apiTokenSecretRef: names no secret")
		}
	}
	if r := d.Route53; r != nil {
		p := path + ".route53"
		if r.Role != "" {
			out = append(out, fmt.Sprintf("%s.role: %q is not served (github.com/libdns/route53 cannot assume a role); "+
				"give the role's own access key", p, r.Role))
		}
		if a := r.Auth; a != nil {
			sa := ""
			if a.Kubernetes != nil && a.Kubernetes.ServiceAccountRef != nil {
				sa = a.Kubernetes.ServiceAccountRef.Name
			}
			out = append(out, fmt.Sprintf("%s.auth: kubernetes service account %q (AssumeRoleWithWebIdentity) is not served "+
				"(github.com/libdns/route53 cannot assume a role); give an access key, or ambient credentials to a ClusterIssuer", p, sa))
		}
		keyID := r.AccessKeyID != "" || r.SecretAccessKeyID != nil
		switch {
		case r.AccessKeyID != "" && r.SecretAccessKeyID != nil:
			out = append(out, fmt.Sprintf("%s: sets both accessKeyID %q and accessKeyIDSecretRef (secret %q); set one", p, r.AccessKeyID, r.SecretAccessKeyID.Name))
		case r.SecretAccessKeyID != nil && r.SecretAccessKeyID.Name == "":
			out = append(out, p+".accessKeyIDSecretRef: names no secret")
		}
		switch {
		case keyID && r.SecretAccessKey.Name == "":
			out = append(out, p+".secretAccessKeySecretRef: names no secret, which an access key id needs")
		case !keyID && r.SecretAccessKey.Name != "":
			out = append(out, fmt.Sprintf("%s.secretAccessKeySecretRef: secret %q is set without accessKeyID or accessKeyIDSecretRef", p, r.SecretAccessKey.Name))
		}
	}
	return out
}

// ambientNotAllowed names the Route 53 solvers of an Issuer (not a
// ClusterIssuer) that give no access key: as cert-manager does by
// default, only ClusterIssuers use the operator's ambient credentials
// (its environment, shared configuration, instance role).
func ambientNotAllowed(kind string, spec *cmapi.IssuerSpec) []string {
	if kind == cmapi.ClusterIssuerKind || spec == nil || spec.ACME == nil {
		return nil
	}
	var out []string
	for i, sv := range spec.ACME.Solvers {
		if sv.DNS01 != nil && route53Ambient(sv.DNS01.Route53) {
			out = append(out, fmt.Sprintf("spec.acme.solvers[%d].dns01.route53: gives no accessKeyID or accessKeyIDSecretRef, and "+
				"ambient credentials are used for ClusterIssuers only (as cert-manager's default); give an access key", i))
		}
	}
	return out
}

// route53Ambient says whether r uses ambient credentials: no access key
// of its own.
func route53Ambient(r *cmacme.ACMEIssuerDNS01ProviderRoute53) bool {
	return r != nil && r.AccessKeyID == "" && r.SecretAccessKeyID == nil && r.SecretAccessKey.Name == "" && r.Auth == nil
}

// secretValue reads a key of a Secret for the field named field.
type secretValue func(field string, ref cmmeta.SecretKeySelector) (string, error)

// cloudflareProvider is the libdns provider of a Cloudflare solver, its
// API token read through secret.
func cloudflareProvider(c *cmacme.ACMEIssuerDNS01ProviderCloudflare, secret secretValue, opts DNS01ProviderOptions) (*cloudflare.Provider, error) {
	if problems := libdnsNotServed("spec.acme.solvers[].dns01", &cmacme.ACMEChallengeSolverDNS01{Cloudflare: c}); len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	token, err := secret("spec.acme.solvers[].dns01.cloudflare.apiTokenSecretRef", *c.APIToken)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	if opts.CloudflareURL != "" {
		base, err := url.Parse(opts.CloudflareURL)
		if err != nil || base.Scheme == "" || base.Host == "" {
			return nil, fmt.Errorf("the Cloudflare API URL %q is not an absolute URL", opts.CloudflareURL)
		}
		hc.Transport = rebase{base: base, next: http.DefaultTransport}
	}
	return &cloudflare.Provider{APIToken: token, HTTPClient: hc}, nil
}

// rebase sends requests for cloudflareAPI to base instead.
type rebase struct {
	base *url.URL
	next http.RoundTripper
}

func (r rebase) RoundTrip(req *http.Request) (*http.Response, error) {
	u := *req.URL
	u.Scheme, u.Host = r.base.Scheme, r.base.Host
	u.Path = strings.TrimSuffix(r.base.Path, "/") + strings.TrimPrefix(u.Path, "/client/v4")
	u.RawPath = ""
	out := req.Clone(req.Context())
	out.URL, out.Host = &u, ""
	return r.next.RoundTrip(out)
}

// route53Provider is the libdns provider of a Route 53 solver, its
// access key read through secret. ambient allows a solver without an
// access key (a ClusterIssuer's): the AWS SDK's default credentials are
// used. An empty region is us-east-1 (Route 53 is global; requests are
// signed for us-east-1) unless AWS_REGION names one.
func route53Provider(ctx context.Context, r *cmacme.ACMEIssuerDNS01ProviderRoute53, secret secretValue, ambient bool) (*route53.Provider, error) {
	const path = "spec.acme.solvers[].dns01.route53"
	if problems := libdnsNotServed("spec.acme.solvers[].dns01", &cmacme.ACMEChallengeSolverDNS01{Route53: r}); len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	p := &route53.Provider{Region: r.Region, HostedZoneID: r.HostedZoneID}
	if p.Region == "" && os.Getenv("AWS_REGION") == "" {
		p.Region = "us-east-1"
	}
	switch {
	case route53Ambient(r):
		if !ambient {
			return nil, errors.New(path + ": gives no accessKeyID or accessKeyIDSecretRef, and ambient credentials are used for ClusterIssuers only")
		}
	default:
		p.AccessKeyId = r.AccessKeyID
		if ref := r.SecretAccessKeyID; ref != nil {
			id, err := secret(path+".accessKeyIDSecretRef", *ref)
			if err != nil {
				return nil, err
			}
			p.AccessKeyId = id
		}
		key, err := secret(path+".secretAccessKeySecretRef", r.SecretAccessKey)
		if err != nil {
			return nil, err
		}
		p.SecretAccessKey = key
	}
	// github.com/libdns/route53 ends the process when the AWS
	// configuration cannot be loaded (a missing AWS_PROFILE, a broken
	// shared configuration file): load it here first, and refuse.
	if _, err := config.LoadDefaultConfig(ctx, config.WithRegion(p.Region)); err != nil {
		return nil, fmt.Errorf("%s: the AWS configuration of the operator's environment cannot be loaded: %w", path, err)
	}
	return p, nil
}

// libdnsPresenter is the presenter of a Cloudflare or Route 53 solver
// configuration; ok is false for other providers.
func (d *dns01Presenter) libdnsPresenter(ctx context.Context, cfg *challenge.DNS01Solver) (pr acmeclient.Presenter, ok bool, err error) {
	if cfg == nil || (cfg.Provider != providerCloudflare && cfg.Provider != providerRoute53) {
		return nil, false, nil
	}
	var sv cmacme.ACMEChallengeSolverDNS01
	libdnsFromConfig(cfg, &sv)
	secret := func(field string, ref cmmeta.SecretKeySelector) (string, error) {
		s, err := d.secrets.secretData(ctx, d.namespace, ref.Name)
		if err != nil {
			return "", err
		}
		if s == nil || len(s.Data[ref.Key]) == 0 {
			return "", fmt.Errorf("%s: secret %s/%s has no key %q", field, d.namespace, ref.Name, ref.Key)
		}
		return strings.TrimSpace(string(s.Data[ref.Key])), nil
	}
	opts := d.secrets.opts.DNS01Providers
	var provider acmeclient.LibDNSProvider
	if sv.Cloudflare != nil {
		provider, err = cloudflareProvider(sv.Cloudflare, secret, opts)
	} else {
		provider, err = route53Provider(ctx, sv.Route53, secret, d.ambient)
	}
	if err != nil {
		return nil, true, err
	}
	return acmeclient.LibDNSPresenter{Provider: provider, Resolver: d.secrets.opts.DNS01Resolver}, true, nil
}

// allowAmbient lets the DNS-01 presenter of a ClusterIssuer's solvers use
// ambient credentials.
func allowAmbient(s acmeclient.Solvers, kind string) {
	if d, ok := s.DNS01.(*dns01Presenter); ok {
		d.ambient = kind == cmapi.ClusterIssuerKind
	}
}
