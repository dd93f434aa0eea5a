package operator_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// reads counts an operator's reads: those its informer cache answers
// ("cache get Secret", "cache list CertificateList"), and those that go
// to the API server ("api get secrets", "api list certificaterequests"),
// watches and discovery aside.
type reads struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *reads) note(what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n[what]++
}

// take returns the reads counted so far and starts again.
func (r *reads) take() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := maps.Clone(r.n)
	clear(r.n)
	return out
}

func typeName(obj runtime.Object) string {
	kind := fmt.Sprintf("%T", obj)
	return kind[strings.LastIndex(kind, ".")+1:]
}

// countingCache is the manager's cache with every Get and List counted.
type countingCache struct {
	cache.Cache
	r *reads
}

func (c countingCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.r.note("cache get " + typeName(obj))
	return c.Cache.Get(ctx, key, obj, opts...)
}

func (c countingCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.r.note("cache list " + typeName(list))
	return c.Cache.List(ctx, list, opts...)
}

// newCountingCache makes the manager's cache, counted in r.
func newCountingCache(r *reads) cache.NewCacheFunc {
	return func(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
		c, err := cache.New(cfg, opts)
		if err != nil {
			return nil, err
		}
		return countingCache{Cache: c, r: r}, nil
	}
}

// countingTransport counts the GETs that reach the API server, by verb
// (get or list) and resource; watches and discovery are not counted.
type countingTransport struct {
	base http.RoundTripper
	r    *reads
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet && req.URL.Query().Get("watch") != "true" {
		if what, ok := apiRead(req.URL.Path); ok {
			t.r.note(what)
		}
	}
	return t.base.RoundTrip(req)
}

// apiRead names a read of an API path: "api get secrets" for
// /api/v1/namespaces/ns/secrets/name, "api list certificates" for
// /apis/cert-manager.io/v1/namespaces/ns/certificates; false for
// discovery and anything else.
func apiRead(path string) (string, bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var res []string // the resource and what follows it
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		res = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		res = parts[3:]
	default:
		return "", false
	}
	if len(res) >= 2 && res[0] == "namespaces" {
		if len(res) == 2 {
			return "api get namespaces", true
		}
		res = res[2:]
	}
	switch len(res) {
	case 1:
		return "api list " + res[0], true
	case 2:
		return "api get " + res[0], true
	case 3:
		return "api get " + res[0] + "/" + res[2], true
	}
	return "", false
}

// countingConfig is cfg with every API read counted in r.
func countingConfig(cfg *rest.Config, r *reads) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{base: rt, r: r} })
	return c
}

func TestAPIReadNames(t *testing.T) {
	for path, want := range map[string]string{
		"/api/v1/namespaces/ns/secrets/web-tls":                          "api get secrets",
		"/api/v1/namespaces/ns/secrets":                                  "api list secrets",
		"/apis/cert-manager.io/v1/namespaces/ns/certificates":            "api list certificates",
		"/apis/cert-manager.io/v1/namespaces/ns/certificates/web/status": "api get certificates/status",
		"/apis/cert-manager.io/v1/clusterissuers/ca":                     "api get clusterissuers",
		"/api/v1/namespaces/ns":                                          "api get namespaces",
		"/apis":                                                          "",
		"/apis/cert-manager.io/v1":                                       "",
		"/api/v1":                                                        "",
		"/openapi/v3":                                                    "",
		"/apis/coordination.k8s.io/v1/namespaces/ns/leases/operator-lease": "api get leases",
	} {
		got, ok := apiRead(path)
		if got != want || ok != (want != "") {
			t.Errorf("apiRead(%q) = %q, %v; want %q", path, got, ok, want)
		}
	}
}
