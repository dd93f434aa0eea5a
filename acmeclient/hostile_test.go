package acmeclient_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/challenge"
	"github.com/certlife/certlife/order"
)

// hostile is a small ACME server on loopback, written for these tests: it
// answers one order for a.example, with one authorization and one HTTP-01
// challenge, accepts every JWS without looking, and lets a test answer any
// path its own way (on). Its directory and objects name URLs under base,
// its own URL unless a test says otherwise.
type hostile struct {
	srv  *httptest.Server
	stop chan struct{} // closed when the test ends: a held answer returns

	mu   sync.Mutex
	base string
	on   map[string]http.HandlerFunc
	hits map[string]int
}

func newHostile(t testing.TB, tls bool) *hostile {
	h := &hostile{stop: make(chan struct{}), on: map[string]http.HandlerFunc{}, hits: map[string]int{}}
	if tls {
		h.srv = httptest.NewTLSServer(h)
	} else {
		h.srv = httptest.NewServer(h)
	}
	h.base = h.srv.URL
	t.Cleanup(func() { close(h.stop); h.srv.Close() })
	return h
}

// client is a new client of the server: its own HTTPClient (the test
// server's, which trusts its certificate) when the server is TLS, nil and
// InsecureAllowHTTP when it is not.
func (h *hostile) client(t testing.TB, tune ...func(*acmeclient.Config)) *acmeclient.Client {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	cfg := acmeclient.Config{DirectoryURL: h.srv.URL + "/dir", Key: key}
	if strings.HasPrefix(h.srv.URL, "https://") {
		cfg.HTTPClient = h.srv.Client()
	} else {
		cfg.InsecureAllowHTTP = true
	}
	for _, f := range tune {
		f(&cfg)
	}
	c, err := acmeclient.New(cfg)
	require.NoError(t, err)
	return c
}

func (h *hostile) handle(path string, f http.HandlerFunc) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.on[path] = f
}

func (h *hostile) setBase(base string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.base = base
}

func (h *hostile) hitsOf(path string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hits[path]
}

func (h *hostile) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.hits[r.URL.Path]++
	f, base := h.on[r.URL.Path], h.base
	h.mu.Unlock()
	w.Header().Set("Replay-Nonce", fmt.Sprintf("nonce-%d", nonces.Add(1)))
	if f != nil {
		f(w, r)
		return
	}
	send := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	switch r.URL.Path {
	case "/dir":
		send(http.StatusOK, hostileDirectory(base))
	case "/nonce":
		w.WriteHeader(http.StatusOK)
	case "/account":
		w.Header().Set("Location", base+"/acct/1")
		send(http.StatusCreated, map[string]any{"status": "valid"})
	case "/new-order":
		w.Header().Set("Location", base+"/order/1")
		send(http.StatusCreated, hostileOrder(base, "pending"))
	case "/order/1":
		send(http.StatusOK, hostileOrder(base, "pending"))
	case "/authz/1":
		send(http.StatusOK, map[string]any{"status": "pending", "identifier": map[string]string{"type": "dns", "value": "a.example"},
			"challenges": []any{map[string]string{"type": "http-01", "url": base + "/chal/1", "token": "tok", "status": "pending"}}})
	case "/chal/1":
		send(http.StatusOK, map[string]string{"type": "http-01", "url": base + "/chal/1", "token": "tok", "status": "processing"})
	case "/finalize/1":
		send(http.StatusOK, hostileOrder(base, "valid"))
	case "/cert/1":
		w.Header().Set("Content-Type", "application/pem-certificate-chain")
		w.Header().Add("Link", "<"+base+"/cert/1/alt>;rel=\"alternate\"")
		_, _ = w.Write([]byte("-----BEGIN CERTIFICATE-----\nMAA=\n-----END CERTIFICATE-----\n"))
	default:
		http.NotFound(w, r)
	}
}

var nonces atomic.Int64

func hostileDirectory(base string) map[string]string {
	return map[string]string{"newNonce": base + "/nonce", "newAccount": base + "/account", "newOrder": base + "/new-order",
		"revokeCert": base + "/revoke", "keyChange": base + "/key-change", "renewalInfo": base + "/ari"}
}

func hostileOrder(base, status string) map[string]any {
	o := map[string]any{"status": status, "identifiers": []any{map[string]string{"type": "dns", "value": "a.example"}},
		"authorizations": []string{base + "/authz/1"}, "finalize": base + "/finalize/1"}
	if status == "valid" {
		o["certificate"] = base + "/cert/1"
	}
	return o
}

// hostileCall is one call of the public API through every action of an
// issuance, each against the server's fixed URLs.
type hostileCall func(ctx context.Context, c *acmeclient.Client, base string) error

// oneCall makes only the call named, as callUpTo names them.
func oneCall(name string) hostileCall {
	return func(ctx context.Context, c *acmeclient.Client, base string) error {
		var err error
		switch name {
		case "order":
			_, err = c.SyncOrder(ctx, order.Status{URL: base + "/order/1"}, order.Sync{URL: base + "/order/1"})
		case "authorization":
			st := order.Status{URL: base + "/order/1", Authorizations: []order.Authorization{{URL: base + "/authz/1"}}}
			_, err = c.GetAuthorization(ctx, st, order.GetAuthorization{URL: base + "/authz/1"})
		case "finalize":
			_, err = c.Finalize(ctx, order.Status{URL: base + "/order/1"}, order.Finalize{URL: base + "/finalize/1", CSR: []byte{0x30, 0}})
		case "certificate":
			_, err = c.FetchCertificate(ctx, order.Status{URL: base + "/order/1"}, order.FetchCertificate{URL: base + "/cert/1"})
		default:
			panic("no call " + name)
		}
		return err
	}
}

// callUpTo makes the calls of an issuance up to and with the one named:
// "directory", "account", "newOrder", "order", "authorization",
// "challenge" (read), "accept", "finalize", "certificate".
func callUpTo(name string) hostileCall {
	return func(ctx context.Context, c *acmeclient.Client, base string) error {
		if _, err := c.Directory(ctx); err != nil || name == "directory" {
			return err
		}
		if _, err := c.EnsureAccount(ctx, acmeclient.AccountOptions{}); err != nil || name == "account" {
			return err
		}
		var err error
		switch name {
		case "newOrder":
			_, err = c.CreateOrder(ctx, order.Status{}, order.CreateOrder{DNSNames: []string{"a.example"}})
		case "order":
			_, err = c.SyncOrder(ctx, order.Status{URL: base + "/order/1"}, order.Sync{URL: base + "/order/1"})
		case "authorization":
			st := order.Status{URL: base + "/order/1", Authorizations: []order.Authorization{{URL: base + "/authz/1"}}}
			_, err = c.GetAuthorization(ctx, st, order.GetAuthorization{URL: base + "/authz/1"})
		case "challenge":
			_, err = c.SyncChallenge(ctx, challenge.Status{}, challenge.Sync{URL: base + "/chal/1", AuthorizationURL: base + "/authz/1"})
		case "accept":
			_, err = c.Accept(ctx, challenge.Status{}, challenge.Accept{URL: base + "/chal/1"})
		case "finalize":
			_, err = c.Finalize(ctx, order.Status{URL: base + "/order/1"}, order.Finalize{URL: base + "/finalize/1", CSR: []byte{0x30, 0}})
		case "certificate":
			_, err = c.FetchCertificate(ctx, order.Status{URL: base + "/order/1"}, order.FetchCertificate{URL: base + "/cert/1", PreferredChain: "Other Root"})
		default:
			panic("no call " + name)
		}
		return err
	}
}

func (h *hostile) total() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, v := range h.hits {
		n += v
	}
	return n
}

// BenchmarkClientCalls measures single-shot calls against a server on
// loopback that answers at once: what the client costs per call, the
// bounded reading of each answer included.
func BenchmarkClientCalls(b *testing.B) {
	for _, call := range []string{"order", "authorization", "finalize", "certificate"} {
		b.Run(call, func(b *testing.B) {
			h := newHostile(b, true)
			c := h.client(b)
			ctx := context.Background()
			if _, err := c.EnsureAccount(ctx, acmeclient.AccountOptions{}); err != nil {
				b.Fatal(err)
			}
			do := oneCall(call)
			b.ReportAllocs()
			for b.Loop() {
				if err := do(ctx, c, h.srv.URL); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
