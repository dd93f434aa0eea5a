package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	whapi "github.com/cert-manager/cert-manager/pkg/acme/webhook/apis/acme/v1alpha1"
	cmacme "github.com/cert-manager/cert-manager/pkg/apis/acme/v1"
	cmwebhook "github.com/cert-manager/cert-manager/pkg/issuer/acme/dns/webhook"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/acmeclient/acmetest"
	"github.com/certlife/certlife/challenge"
)

// seenRequest is what a fake API server saw of one call.
type seenRequest struct {
	method, path, contentType, accept string
	body                              map[string]any
}

// fakeAPIServer answers every request with answer and records it.
type fakeAPIServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen []seenRequest
}

func startFakeAPIServer(t *testing.T, answer func(w http.ResponseWriter, req *whapi.ChallengePayload)) *fakeAPIServer {
	t.Helper()
	f := &fakeAPIServer{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s := seenRequest{method: r.Method, path: r.URL.Path, contentType: r.Header.Get("Content-Type"), accept: r.Header.Get("Accept")}
		_ = json.Unmarshal(b, &s.body)
		var pl whapi.ChallengePayload
		_ = json.Unmarshal(b, &pl)
		f.mu.Lock()
		f.seen = append(f.seen, s)
		f.mu.Unlock()
		answer(w, &pl)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAPIServer) requests() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenRequest(nil), f.seen...)
}

// answerPayload answers as a solver built with cert-manager's library:
// the payload with its response, 201 Created.
func answerPayload(resp *whapi.ChallengeResponse) func(http.ResponseWriter, *whapi.ChallengePayload) {
	return func(w http.ResponseWriter, req *whapi.ChallengePayload) {
		req.APIVersion, req.Kind = whapi.SchemeGroupVersion.String(), "ChallengePayload"
		req.Response = resp
		if resp != nil && req.Request != nil {
			resp.UID = req.Request.UID
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(req)
	}
}

func webhookPresentation(name string, wildcard bool) acmeclient.Presentation {
	return acmeclient.Presentation{Type: challenge.TypeDNS01, Identifier: name, Wildcard: wildcard, Token: "tok", KeyAuthorization: "tok.thumb"}
}

// The request the operator sends is cert-manager's own, byte for byte
// but the UID (cert-manager sends none): the same method, path, content
// type and payload as cert-manager's webhook client
// (pkg/issuer/acme/dns/webhook) sends for the same challenge, Present
// and CleanUp.
func TestWebhookRequestIsCertManagers(t *testing.T) {
	f := startFakeAPIServer(t, answerPayload(&whapi.ChallengeResponse{Success: true}))
	p := webhookPresentation("web.example", true)
	config := json.RawMessage(`{"apiKeySecretRef":{"name":"dns","key":"token"},"ttl":60}`)
	ours := WebhookSolver{Config: &rest.Config{Host: f.URL}, GroupName: "acme.example.com", SolverName: "example-solver",
		SolverConfig: config, ResourceNamespace: "apps", AllowAmbientCredentials: true, Zone: "example."}

	theirs := &cmwebhook.Webhook{}
	require.NoError(t, theirs.Initialize(&rest.Config{Host: f.URL}, nil))
	// cert-manager hands its webhook client the solver's whole settings
	// as config, and sends on only their config.
	whole, err := json.Marshal(&cmacme.ACMEIssuerDNS01ProviderWebhook{GroupName: "acme.example.com", SolverName: "example-solver",
		Config: &apiextensionsv1.JSON{Raw: config}})
	require.NoError(t, err)
	req := &whapi.ChallengeRequest{Type: "dns-01", DNSName: "web.example", Key: p.DNS01Value(), ResourceNamespace: "apps",
		ResolvedFQDN: "_acme-challenge.web.example.", ResolvedZone: "example.", AllowAmbientCredentials: true,
		Config: &apiextensionsv1.JSON{Raw: whole}}

	for _, step := range []struct {
		action      string
		ours, their func() error
	}{
		{"Present", func() error { return ours.Present(context.Background(), p) }, func() error { return theirs.Present(req) }},
		{"CleanUp", func() error { return ours.CleanUp(context.Background(), p) }, func() error { return theirs.CleanUp(req) }},
	} {
		t.Run(step.action, func(t *testing.T) {
			n := len(f.requests())
			require.NoError(t, step.their())
			require.NoError(t, step.ours())
			got := f.requests()[n:]
			require.Len(t, got, 2)
			theirs, ours := got[0], got[1]
			assert.Equal(t, http.MethodPost, ours.method)
			assert.Equal(t, "/apis/acme.example.com/v1alpha1/example-solver", ours.path)
			assert.Equal(t, theirs.path, ours.path)
			assert.Equal(t, theirs.method, ours.method)
			assert.Equal(t, theirs.contentType, ours.contentType)
			ourReq := ours.body["request"].(map[string]any)
			assert.NotEmpty(t, ourReq["uid"], "a UID for each call")
			assert.Equal(t, step.action, ourReq["action"])
			ourReq["uid"] = ""
			assert.Equal(t, theirs.body, ours.body, "the payload is cert-manager's")
			assert.NotContains(t, ours.body, "apiVersion", "as cert-manager's, the payload leaves its type to the solver")
		})
	}
}

// The solver's answer decides: success, or its message as the error
// (cut at 1 KiB); the API server's refusals carry its message, a missing
// APIService a hint; answers larger than the bound are refused.
func TestWebhookAnswers(t *testing.T) {
	status := func(code int, reason, msg string) func(http.ResponseWriter, *whapi.ChallengePayload) {
		return func(w http.ResponseWriter, _ *whapi.ChallengePayload) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_ = json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": msg, "reason": reason, "code": code})
		}
	}
	long := strings.Repeat("é", 3000)
	tests := map[string]struct {
		answer  func(http.ResponseWriter, *whapi.ChallengePayload)
		max     int64
		want    []string // in the error; none: success
		notWant string
	}{
		"success": {answer: answerPayload(&whapi.ChallengeResponse{Success: true})},
		"a failure with a message": {answer: answerPayload(&whapi.ChallengeResponse{Result: &metav1.Status{Status: "Failed", Message: "zone locked"}}),
			want: []string{"dns01 webhook acme.example.com/example-solver Present _acme-challenge.web.example.: zone locked"}},
		"a failure without a reason": {answer: answerPayload(&whapi.ChallengeResponse{}), want: []string{"the solver did not succeed and gave no reason"}},
		"no response":                {answer: answerPayload(nil), want: []string{"the solver's answer has no response"}},
		"a long message": {answer: answerPayload(&whapi.ChallengeResponse{Result: &metav1.Status{Message: long}}),
			want: []string{strings.Repeat("é", webhookMaxMessage/2) + "…"}, notWant: strings.Repeat("é", webhookMaxMessage/2+1)},
		"forbidden": {answer: status(http.StatusForbidden, "Forbidden", `example-solver.acme.example.com is forbidden: User "op" cannot create resource "example-solver" in API group "acme.example.com" at the cluster scope`),
			want: []string{`User "op" cannot create resource "example-solver" in API group "acme.example.com"`}},
		"no APIService": {answer: status(http.StatusNotFound, "NotFound", "the server could not find the requested resource"),
			want: []string{"could not find the requested resource", `is the APIService v1alpha1.acme.example.com registered, and does the solver serve "example-solver"?`}},
		"the solver unavailable": {answer: status(http.StatusServiceUnavailable, "ServiceUnavailable", "service unavailable"), want: []string{"service unavailable"}},
		"an answer beyond the bound": {answer: answerPayload(&whapi.ChallengeResponse{Result: &metav1.Status{Message: strings.Repeat("x", 4096)}}), max: 1000,
			want: []string{"the answer is larger than the limit of 1000 bytes"}},
		"an answer beyond the default bound": {answer: answerPayload(&whapi.ChallengeResponse{Result: &metav1.Status{Message: strings.Repeat("x", DefaultWebhookMaxResponse)}}),
			want: []string{"the answer is larger than the limit of 1048576 bytes"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := startFakeAPIServer(t, tc.answer)
			w := WebhookSolver{Config: &rest.Config{Host: f.URL}, GroupName: "acme.example.com", SolverName: "example-solver", Zone: "example.", MaxResponseSize: tc.max}
			err := w.Present(context.Background(), webhookPresentation("web.example", false))
			if len(tc.want) == 0 {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, s := range tc.want {
				assert.Contains(t, err.Error(), s)
			}
			if tc.notWant != "" {
				assert.NotContains(t, err.Error(), tc.notWant)
			}
			assert.Len(t, f.requests(), 1, "one call, no retries")
		})
	}
}

// An answer of exactly the bound is read; one byte more is refused.
func TestWebhookAnswerAtTheBound(t *testing.T) {
	body := []byte(`{"apiVersion":"webhook.acme.cert-manager.io/v1alpha1","kind":"ChallengePayload","response":{"uid":"","success":true}}`)
	f := startFakeAPIServer(t, func(w http.ResponseWriter, _ *whapi.ChallengePayload) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	})
	s := WebhookSolver{Config: &rest.Config{Host: f.URL}, GroupName: "acme.example.com", SolverName: "s", Zone: "example.", MaxResponseSize: int64(len(body))}
	require.NoError(t, s.Present(context.Background(), webhookPresentation("web.example", false)))
	s.MaxResponseSize--
	assert.ErrorContains(t, s.Present(context.Background(), webhookPresentation("web.example", false)),
		fmt.Sprintf("the answer is larger than the limit of %d bytes", len(body)-1))
}

// Settings that cannot be called are refused by field and value, before
// any request.
func TestWebhookSettings(t *testing.T) {
	const f = "spec.acme.solvers[0].dns01.webhook."
	tests := map[string]struct {
		group, solver, config string
		want                  []string
	}{
		"good":                    {group: "acme.example.com", solver: "example-solver", config: `{"a":1}`},
		"no config":               {group: "acme.example.com", solver: "s"},
		"a null config":           {group: "acme.example.com", solver: "s", config: " null "},
		"an empty object":         {group: "acme.example.com", solver: "s", config: "{}"},
		"no group":                {solver: "s", want: []string{f + "groupName: is required"}},
		"a group that is no name": {group: "Acme_Example", solver: "s", want: []string{f + `groupName "Acme_Example": not an API group name`}},
		"no solver":               {group: "acme.example.com", want: []string{f + "solverName: is required"}},
		"a solver with a slash":   {group: "acme.example.com", solver: "a/b", want: []string{f + `solverName "a/b": not a resource name`}},
		"a solver of dots":        {group: "acme.example.com", solver: "..", want: []string{f + `solverName "..": not a resource name`}},
		"a solver with a space":   {group: "acme.example.com", solver: " s", want: []string{f + `solverName " s": not a resource name: has leading or trailing space`}},
		"an array":                {group: "acme.example.com", solver: "s", config: `[1, 2]`, want: []string{f + "config [1, 2]: want a JSON object, not an array"}},
		"a string":                {group: "acme.example.com", solver: "s", config: `"token"`, want: []string{f + `config "token": want a JSON object, not a string`}},
		"a number":                {group: "acme.example.com", solver: "s", config: `3`, want: []string{f + "config 3: want a JSON object, not a number"}},
		"a boolean":               {group: "acme.example.com", solver: "s", config: `true`, want: []string{f + "config true: want a JSON object, not a boolean"}},
		"not JSON":                {group: "acme.example.com", solver: "s", config: `{"a":`, want: []string{f + `config "{\"a\":": not JSON`}},
		"everything wrong":        {config: "[]", want: []string{f + "groupName: is required", f + "solverName: is required", f + "config []: want a JSON object"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := &cmacme.ACMEIssuerDNS01ProviderWebhook{GroupName: tc.group, SolverName: tc.solver}
			if tc.config != "" {
				w.Config = &apiextensionsv1.JSON{Raw: []byte(tc.config)}
			}
			got := acmeNotServed(&cmacme.ACMEIssuer{Solvers: []cmacme.ACMEChallengeSolver{{DNS01: &cmacme.ACMEChallengeSolverDNS01{Webhook: w}}}})
			require.Len(t, got, len(tc.want), "%q", got)
			for i, want := range tc.want {
				assert.True(t, strings.HasPrefix(got[i], want), "%q does not begin %q", got[i], want)
			}

			// The presenter refuses the same settings, naming the field,
			// and calls nothing.
			fake := startFakeAPIServer(t, answerPayload(&whapi.ChallengeResponse{Success: true}))
			s := WebhookSolver{Config: &rest.Config{Host: fake.URL}, GroupName: tc.group, SolverName: tc.solver, SolverConfig: json.RawMessage(tc.config), Zone: "example."}
			err := s.Present(context.Background(), webhookPresentation("web.example", false))
			if len(tc.want) == 0 {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, want := range tc.want {
				assert.Contains(t, err.Error(), strings.Replace(want, "solvers[0]", "solvers[]", 1))
			}
			assert.Empty(t, fake.requests())
		})
	}
	// Not a DNS-01 presentation, no REST config.
	p := webhookPresentation("web.example", false)
	p.Type = challenge.TypeHTTP01
	good := WebhookSolver{Config: &rest.Config{Host: "http://127.0.0.1:1"}, GroupName: "acme.example.com", SolverName: "s", Zone: "example."}
	assert.ErrorContains(t, good.Present(context.Background(), p), "not a DNS-01 presentation")
	good.Config = nil
	assert.ErrorContains(t, good.CleanUp(context.Background(), webhookPresentation("web.example", false)), "no REST config")
}

// The zone sent is found by SOA through the resolver, or is the one set,
// which must hold the record name.
func TestWebhookZone(t *testing.T) {
	d, err := acmetest.StartDNS()
	require.NoError(t, err)
	t.Cleanup(d.Close)
	d.AddZone("example.test.")
	zone, err := findZoneBySOA(context.Background(), d.Addr(), "_acme-challenge.a.b.example.test.")
	require.NoError(t, err)
	assert.Equal(t, "example.test.", zone)
	_, err = findZoneBySOA(context.Background(), d.Addr(), "_acme-challenge.www.other.test.")
	assert.ErrorContains(t, err, "knows no SOA record at _acme-challenge.www.other.test. or above it")
	assert.ErrorContains(t, err, d.Addr())

	var sent []string
	f := startFakeAPIServer(t, func(w http.ResponseWriter, req *whapi.ChallengePayload) {
		sent = append(sent, req.Request.ResolvedZone)
		answerPayload(&whapi.ChallengeResponse{Success: true})(w, req)
	})
	s := WebhookSolver{Config: &rest.Config{Host: f.URL}, GroupName: "acme.example.com", SolverName: "s", Resolver: d.Addr()}
	require.NoError(t, s.Present(context.Background(), webhookPresentation("a.b.example.test", false)))
	assert.Equal(t, []string{"example.test."}, sent)
	err = s.Present(context.Background(), webhookPresentation("www.other.test", false))
	assert.ErrorContains(t, err, "dns01 webhook acme.example.com/s Present _acme-challenge.www.other.test.: find the zone")
	s.Zone = "other.test"
	assert.ErrorContains(t, s.Present(context.Background(), webhookPresentation("web.example.test", false)), "the zone other.test. does not hold the record name")
	assert.Len(t, sent, 1, "nothing sent without a zone")
}

// A solver that does not answer is given up on at the timeout.
func TestWebhookTimeout(t *testing.T) {
	release := make(chan struct{})
	f := startFakeAPIServer(t, func(w http.ResponseWriter, _ *whapi.ChallengePayload) { <-release })
	t.Cleanup(func() { close(release) })
	s := WebhookSolver{Config: &rest.Config{Host: f.URL}, GroupName: "acme.example.com", SolverName: "s", Zone: "example.", Timeout: 100 * time.Millisecond}
	err := s.Present(context.Background(), webhookPresentation("web.example", false))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "dns01 webhook acme.example.com/s Present")
}

// A webhook solver's settings go into certlife's solver configuration
// and come back out as cert-manager's; a ClusterIssuer's may use ambient
// credentials, an Issuer's not, and the presenter is built from them.
func TestWebhookSolverConfig(t *testing.T) {
	w := &cmacme.ACMEIssuerDNS01ProviderWebhook{GroupName: "acme.example.com", SolverName: "s", Config: &apiextensionsv1.JSON{Raw: []byte(`{ "a" : [1, 2] }`)}}
	cfg := webhookDNS01Config(w)
	assert.Equal(t, &challenge.DNS01Solver{Provider: "webhook", Config: map[string]string{"groupName": "acme.example.com", "solverName": "s", "config": `{"a":[1,2]}`}}, cfg)
	back := webhookFromConfig(cfg.Config)
	assert.Equal(t, "acme.example.com", back.GroupName)
	assert.Equal(t, "s", back.SolverName)
	assert.JSONEq(t, `{"a":[1,2]}`, string(back.Config.Raw))
	sv := solverFromCore(challenge.Solver{DNS01: cfg})
	require.NotNil(t, sv.DNS01.Webhook)
	assert.Equal(t, cfg, solverToCore(sv).DNS01)
	assert.Nil(t, webhookFromConfig(webhookDNS01Config(&cmacme.ACMEIssuerDNS01ProviderWebhook{GroupName: "g", SolverName: "s"}).Config).Config, "no config, none back")

	for _, kind := range []string{"Issuer", "ClusterIssuer"} {
		a := &acmeIssuers{opts: ACMEOptions{DNS01Resolver: "127.0.0.1:5353"}}
		solvers, configs := a.solvers(&cmacme.ACMEIssuer{Solvers: []cmacme.ACMEChallengeSolver{{DNS01: &cmacme.ACMEChallengeSolverDNS01{Webhook: w}}}}, "secrets-ns", nil)
		markWebhookAmbient(configs, kind)
		require.Len(t, configs, 1)
		require.IsType(t, &dns01Presenter{}, solvers.DNS01)
		assert.Equal(t, acmeclient.DNS01Checker{Resolver: "127.0.0.1:5353"}, solvers.DNS01Check)
		pr, err := solvers.DNS01.(*dns01Presenter).provider(context.Background(), acmeclient.Presentation{Type: challenge.TypeDNS01, Solver: configs[0].Solver})
		require.NoError(t, err)
		got := pr.(WebhookSolver)
		assert.Equal(t, kind == "ClusterIssuer", got.AllowAmbientCredentials, kind)
		assert.Equal(t, "secrets-ns", got.ResourceNamespace)
		assert.Equal(t, "127.0.0.1:5353", got.Resolver)
		assert.Equal(t, json.RawMessage(`{"a":[1,2]}`), got.SolverConfig)
		assert.ErrorContains(t, got.Present(context.Background(), webhookPresentation("web.example", false)), "no REST config", "an operator without one says so")
	}
}
