package operator

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	cmacme "github.com/cert-manager/cert-manager/pkg/apis/acme/v1"
	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/certlife/certlife/challenge"
)

func ref(name, key string) *cmmeta.SecretKeySelector {
	return &cmmeta.SecretKeySelector{LocalObjectReference: cmmeta.LocalObjectReference{Name: name}, Key: key}
}

// secretsOf reads keys of a map of Secrets the way the presenter reads
// them from the issuer's namespace.
func secretsOf(secrets map[string]map[string]string) secretValue {
	return func(field string, r cmmeta.SecretKeySelector) (string, error) {
		v, ok := secrets[r.Name][r.Key]
		if !ok {
			return "", fmt.Errorf("%s: secret ns/%s has no key %q", field, r.Name, r.Key)
		}
		return strings.TrimSpace(v), nil
	}
}

// isolateAWS keeps the AWS SDK from reading the machine's configuration.
func isolateAWS(t *testing.T) {
	for k, v := range map[string]string{"AWS_CONFIG_FILE": "/nonexistent/aws-config", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials",
		"AWS_PROFILE": "", "AWS_REGION": "", "AWS_EC2_METADATA_DISABLED": "true", "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""} {
		t.Setenv(k, v)
	}
}

// Every field of cert-manager's Cloudflare and Route 53 solvers is served
// or refused by name.
func TestLibDNSFieldsServedOrRefused(t *testing.T) {
	acme := func(d *cmacme.ACMEChallengeSolverDNS01) *cmapi.IssuerSpec {
		return &cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{ACME: &cmacme.ACMEIssuer{Server: "https://acme.example/directory",
			Solvers: []cmacme.ACMEChallengeSolver{{DNS01: d}}}}}
	}
	fieldsClassified(t, []string{"Email", "APIToken"}, map[string]string{"APIKey": "spec.acme.solvers[0].dns01.cloudflare.apiKeySecretRef"},
		func(set func(*cmacme.ACMEIssuerDNS01ProviderCloudflare)) *cmapi.IssuerSpec {
			c := &cmacme.ACMEIssuerDNS01ProviderCloudflare{APIToken: ref("cf", "token")}
			set(c)
			return acme(&cmacme.ACMEChallengeSolverDNS01{Cloudflare: c})
		})
	fieldsClassified(t, []string{"Region", "AccessKeyID", "SecretAccessKeyID", "SecretAccessKey", "HostedZoneID"},
		map[string]string{"Role": "spec.acme.solvers[0].dns01.route53.role", "Auth": "spec.acme.solvers[0].dns01.route53.auth"},
		func(set func(*cmacme.ACMEIssuerDNS01ProviderRoute53)) *cmapi.IssuerSpec {
			r := &cmacme.ACMEIssuerDNS01ProviderRoute53{AccessKeyID: "AKID", SecretAccessKey: *ref("aws", "secret")}
			set(r)
			return acme(&cmacme.ACMEChallengeSolverDNS01{Route53: r})
		})
}

// The refusals of the Cloudflare and Route 53 solvers name the field and
// its value; ambient credentials are a ClusterIssuer's only.
func TestLibDNSRefusals(t *testing.T) {
	tests := map[string]struct {
		dns01 cmacme.ACMEChallengeSolverDNS01
		kind  string
		want  []string // each a refusal, in order; none: served
	}{
		"cloudflare token":            {dns01: cmacme.ACMEChallengeSolverDNS01{Cloudflare: &cmacme.ACMEIssuerDNS01ProviderCloudflare{APIToken: ref("cf", "t"), Email: "a@b"}}},
		"route53 key":                 {dns01: cmacme.ACMEChallengeSolverDNS01{Route53: &cmacme.ACMEIssuerDNS01ProviderRoute53{AccessKeyID: "AKID", SecretAccessKey: *ref("aws", "s")}}},
		"route53 ambient, cluster":    {dns01: cmacme.ACMEChallengeSolverDNS01{Route53: &cmacme.ACMEIssuerDNS01ProviderRoute53{Region: "eu-west-1"}}, kind: cmapi.ClusterIssuerKind},
		"route53 key id from secrets": {dns01: cmacme.ACMEChallengeSolverDNS01{Route53: &cmacme.ACMEIssuerDNS01ProviderRoute53{SecretAccessKeyID: ref("aws", "id"), SecretAccessKey: *ref("aws", "s")}}},
		"cloudflare global API key": {
			dns01: cmacme.ACMEChallengeSolverDNS01{Cloudflare: &cmacme.ACMEIssuerDNS01ProviderCloudflare{APIKey: ref("cf", "global"), Email: "a@b"}},
			want:  []string{`spec.acme.solvers[0].dns01.cloudflare.apiKeySecretRef: secret "cf" key "global": a global API key is not served`},
		},
		"cloudflare without credentials": {
			dns01: cmacme.ACMEChallengeSolverDNS01{Cloudflare: &cmacme.ACMEIssuerDNS01ProviderCloudflare{Email: "a@b"}},
			want:  []string{"spec.acme.solvers[0].dns01.cloudflare: sets no apiTokenSecretRef"},
		},
		"route53 role": {
			dns01: cmacme.ACMEChallengeSolverDNS01{Route53: &cmacme.ACMEIssuerDNS01ProviderRoute53{AccessKeyID: "AKID", SecretAccessKey: *ref("aws", "s"),
				Role: "arn:aws:iam::1:role/dns"}},
			want: []string{`spec.acme.solvers[0].dns01.route53.role: "arn:aws:iam::1:role/dns" is not served`},
		},
		"route53 kubernetes auth": {
			dns01: cmacme.ACMEChallengeSolverDNS01{Route53: &cmacme.ACMEIssuerDNS01ProviderRoute53{Auth: &cmacme.Route53Auth{
				Kubernetes: &cmacme.Route53KubernetesAuth{ServiceAccountRef: &cmacme.ServiceAccountRef{Name: "dns-sa"}}}}},
			kind: cmapi.ClusterIssuerKind,
			want: []string{`spec.acme.solvers[0].dns01.route53.auth: kubernetes service account "dns-sa" (AssumeRoleWithWebIdentity) is not served`},
		},
		"route53 two key ids": {
			dns01: cmacme.ACMEChallengeSolverDNS01{Route53: &cmacme.ACMEIssuerDNS01ProviderRoute53{AccessKeyID: "AKID", SecretAccessKeyID: ref("aws", "id"), SecretAccessKey: *ref("aws", "s")}},
			want:  []string{`spec.acme.solvers[0].dns01.route53: sets both accessKeyID "AKID" and accessKeyIDSecretRef (secret "aws"); set one`},
		},
		"route53 key id without its secret": {
			dns01: cmacme.ACMEChallengeSolverDNS01{Route53: &cmacme.ACMEIssuerDNS01ProviderRoute53{AccessKeyID: "AKID"}},
			want:  []string{"spec.acme.solvers[0].dns01.route53.secretAccessKeySecretRef: names no secret, which an access key id needs"},
		},
		"route53 secret without a key id": {
			dns01: cmacme.ACMEChallengeSolverDNS01{Route53: &cmacme.ACMEIssuerDNS01ProviderRoute53{SecretAccessKey: *ref("aws", "s")}},
			want:  []string{`spec.acme.solvers[0].dns01.route53.secretAccessKeySecretRef: secret "aws" is set without accessKeyID or accessKeyIDSecretRef`},
		},
		"route53 ambient, namespaced Issuer": {
			dns01: cmacme.ACMEChallengeSolverDNS01{Route53: &cmacme.ACMEIssuerDNS01ProviderRoute53{Region: "eu-west-1"}},
			kind:  cmapi.IssuerKind,
			want:  []string{"spec.acme.solvers[0].dns01.route53: gives no accessKeyID or accessKeyIDSecretRef, and ambient credentials are used for ClusterIssuers only"},
		},
		"two providers": {
			dns01: cmacme.ACMEChallengeSolverDNS01{Cloudflare: &cmacme.ACMEIssuerDNS01ProviderCloudflare{APIToken: ref("cf", "t")},
				Route53: &cmacme.ACMEIssuerDNS01ProviderRoute53{AccessKeyID: "AKID", SecretAccessKey: *ref("aws", "s")}},
			want: []string{"spec.acme.solvers[0].dns01: names more than one DNS provider"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			spec := &cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{ACME: &cmacme.ACMEIssuer{Server: "https://acme.example/directory",
				Solvers: []cmacme.ACMEChallengeSolver{{DNS01: &tc.dns01}}}}}
			kind := tc.kind
			if kind == "" {
				kind = cmapi.IssuerKind
			}
			got := append(issuerNotServed(spec), ambientNotAllowed(kind, spec)...)
			require.Len(t, got, len(tc.want), "%q", got)
			for i := range got {
				assert.True(t, strings.HasPrefix(got[i], tc.want[i]), "%q\nstarts with\n%q", got[i], tc.want[i])
			}
		})
	}
}

// A solver's settings become the provider's: the Cloudflare API token,
// Route 53's region, hosted zone and access key, read from the issuer's
// Secrets and trimmed; with ambient credentials, none (the AWS SDK's
// own). Errors name the field and never hold a secret.
func TestLibDNSProviderMapping(t *testing.T) {
	isolateAWS(t)
	secrets := secretsOf(map[string]map[string]string{
		"cf":  {"token": "cf-token-value\n", "empty": ""},
		"aws": {"id": "AKIAFROMSECRET\n", "secret": "aws-secret-value\n"},
	})
	t.Run("cloudflare", func(t *testing.T) {
		p, err := cloudflareProvider(&cmacme.ACMEIssuerDNS01ProviderCloudflare{APIToken: ref("cf", "token"), Email: "ops@example.com"}, secrets, DNS01ProviderOptions{})
		require.NoError(t, err)
		assert.Equal(t, "cf-token-value", p.APIToken)
		assert.Empty(t, p.ZoneToken)

		_, err = cloudflareProvider(&cmacme.ACMEIssuerDNS01ProviderCloudflare{APIToken: ref("cf", "missing")}, secrets, DNS01ProviderOptions{})
		assert.EqualError(t, err, `spec.acme.solvers[].dns01.cloudflare.apiTokenSecretRef: secret ns/cf has no key "missing"`)
		_, err = cloudflareProvider(&cmacme.ACMEIssuerDNS01ProviderCloudflare{APIKey: ref("cf", "token"), Email: "ops@example.com"}, secrets, DNS01ProviderOptions{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "apiKeySecretRef")
		assert.NotContains(t, err.Error(), "cf-token-value")
		_, err = cloudflareProvider(&cmacme.ACMEIssuerDNS01ProviderCloudflare{APIToken: ref("cf", "token")}, secrets, DNS01ProviderOptions{CloudflareURL: "not a url"})
		assert.EqualError(t, err, `the Cloudflare API URL "not a url" is not an absolute URL`)
	})
	tests := map[string]struct {
		in      cmacme.ACMEIssuerDNS01ProviderRoute53
		ambient bool
		// want: region, hosted zone, key id, secret; or err.
		want [4]string
		err  string
	}{
		"key id and secret from Secrets": {
			in:   cmacme.ACMEIssuerDNS01ProviderRoute53{Region: "eu-west-1", HostedZoneID: "Z1", SecretAccessKeyID: ref("aws", "id"), SecretAccessKey: *ref("aws", "secret")},
			want: [4]string{"eu-west-1", "Z1", "AKIAFROMSECRET", "aws-secret-value"},
		},
		"key id inline, no region: us-east-1": {
			in:   cmacme.ACMEIssuerDNS01ProviderRoute53{AccessKeyID: "AKIAINLINE", SecretAccessKey: *ref("aws", "secret")},
			want: [4]string{"us-east-1", "", "AKIAINLINE", "aws-secret-value"},
		},
		"ambient, allowed": {
			in: cmacme.ACMEIssuerDNS01ProviderRoute53{Region: "ap-south-1"}, ambient: true,
			want: [4]string{"ap-south-1", "", "", ""},
		},
		"ambient, not allowed": {
			in:  cmacme.ACMEIssuerDNS01ProviderRoute53{Region: "ap-south-1"},
			err: "spec.acme.solvers[].dns01.route53: gives no accessKeyID or accessKeyIDSecretRef, and ambient credentials are used for ClusterIssuers only",
		},
		"a missing secret key": {
			in:  cmacme.ACMEIssuerDNS01ProviderRoute53{AccessKeyID: "AKIAINLINE", SecretAccessKey: *ref("aws", "nope")},
			err: `spec.acme.solvers[].dns01.route53.secretAccessKeySecretRef: secret ns/aws has no key "nope"`,
		},
		"a role": {
			in:  cmacme.ACMEIssuerDNS01ProviderRoute53{AccessKeyID: "AKIAINLINE", SecretAccessKey: *ref("aws", "secret"), Role: "arn:aws:iam::1:role/dns"},
			err: `spec.acme.solvers[].dns01.route53.role: "arn:aws:iam::1:role/dns" is not served (github.com/libdns/route53 cannot assume a role); give the role's own access key`,
		},
	}
	for name, tc := range tests {
		t.Run("route53 "+name, func(t *testing.T) {
			p, err := route53Provider(context.Background(), &tc.in, secrets, tc.ambient)
			if tc.err != "" {
				assert.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, [4]string{p.Region, p.HostedZoneID, p.AccessKeyId, p.SecretAccessKey})
		})
	}
	t.Run("route53 with a broken AWS configuration", func(t *testing.T) {
		// github.com/libdns/route53 would end the process (log.Fatalf).
		t.Setenv("AWS_PROFILE", "no-such-profile")
		_, err := route53Provider(context.Background(), &cmacme.ACMEIssuerDNS01ProviderRoute53{Region: "eu-west-1"}, secrets, true)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "spec.acme.solvers[].dns01.route53: the AWS configuration of the operator's environment cannot be loaded")
	})
}

// github.com/libdns/cloudflare's requests go to CloudflareURL, with the
// token: its built-in API URL is rewritten by the operator's HTTP client.
func TestCloudflareURLRewritten(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"success":true,"errors":[],"result":[{"id":"z1","name":"example.net"}]}`)
	}))
	defer srv.Close()
	p, err := cloudflareProvider(&cmacme.ACMEIssuerDNS01ProviderCloudflare{APIToken: ref("cf", "token")},
		secretsOf(map[string]map[string]string{"cf": {"token": "tok"}}), DNS01ProviderOptions{CloudflareURL: srv.URL + "/api/cf/"})
	require.NoError(t, err)
	zones, err := p.ListZones(context.Background())
	require.NoError(t, err)
	require.Len(t, zones, 1)
	assert.Equal(t, "example.net.", zones[0].Name)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"GET /api/cf/zones Bearer tok"}, seen)
}

// The Challenge and Order resources keep every field of a Cloudflare or
// Route 53 solver: cert-manager's solver read as certlife's and shown
// again is the same, and so is certlife's configuration.
func TestLibDNSSolverRoundTrip(t *testing.T) {
	for name, d := range map[string]*cmacme.ACMEChallengeSolverDNS01{
		"cloudflare, every field":         {Cloudflare: &cmacme.ACMEIssuerDNS01ProviderCloudflare{Email: "a@b", APIToken: ref("cf", "t"), APIKey: ref("cf", "k")}},
		"cloudflare, a ref without a key": {Cloudflare: &cmacme.ACMEIssuerDNS01ProviderCloudflare{APIToken: ref("cf", "")}},
		"cloudflare, empty":               {Cloudflare: &cmacme.ACMEIssuerDNS01ProviderCloudflare{}},
		"route53, every field": {Route53: &cmacme.ACMEIssuerDNS01ProviderRoute53{Region: "eu-west-1", AccessKeyID: "AKID",
			SecretAccessKeyID: ref("aws", "id"), SecretAccessKey: *ref("aws", "secret"), Role: "arn:aws:iam::1:role/dns", HostedZoneID: "Z1",
			Auth: &cmacme.Route53Auth{Kubernetes: &cmacme.Route53KubernetesAuth{ServiceAccountRef: &cmacme.ServiceAccountRef{Name: "sa",
				TokenAudiences: []string{"sts.amazonaws.com", "a,b"}}}}}},
		"route53, empty": {Route53: &cmacme.ACMEIssuerDNS01ProviderRoute53{}},
	} {
		t.Run(name, func(t *testing.T) {
			in := cmacme.ACMEChallengeSolver{DNS01: d}
			core := solverToCore(in)
			require.NotNil(t, core.DNS01)
			assert.Equal(t, in, solverFromCore(core))
			assert.Equal(t, core, solverToCore(solverFromCore(core)))
		})
	}
	assert.Nil(t, libdnsConfig(&cmacme.ACMEChallengeSolverDNS01{RFC2136: &cmacme.ACMEIssuerDNS01ProviderRFC2136{}}), "not a libdns provider")
	assert.Equal(t, &challenge.DNS01Solver{Provider: "cloudflare", Config: map[string]string{"email": "a@b", "apiTokenSecretName": "cf", "apiTokenSecretKey": "t"}},
		libdnsConfig(&cmacme.ACMEChallengeSolverDNS01{Cloudflare: &cmacme.ACMEIssuerDNS01ProviderCloudflare{Email: "a@b", APIToken: ref("cf", "t")}}),
		"Secrets by reference")
}
