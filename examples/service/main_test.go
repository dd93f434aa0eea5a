package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/acmeclient/acmetest"
	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host/hosttest"
	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/managed"
)

// The service end to end, against Pebble in process: it starts, orders,
// and is stopped while the order is in flight; started again on the same
// database it finishes the same order and serves both certificates —
// the public one verified against Pebble's root, the internal one
// against the CA it made on its first start — and, 61 days later on its
// fake clock, serves the renewal without a restart.
func TestService(t *testing.T) {
	ca, err := acmetest.Start(acmetest.Options{ValidationSleep: 2 * time.Second})
	require.NoError(t, err)
	defer ca.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	clk := testingclock.NewFakeClock(time.Now().UTC().Truncate(time.Second))
	names := []string{"shop.example", "www.shop.example"}
	cfg := managed.Config{Clock: clk, Logger: slog.New(slog.DiscardHandler), Certificates: certificates(names),
		ACME: &managed.ACME{DirectoryURL: ca.DirectoryURL, HTTPClient: ca.Client(), AgreeToTerms: true, RequestValidity: true}}
	dsn := filepath.Join(t.TempDir(), "service.db")
	// Pebble validates HTTP-01 by asking its own port; the test routes
	// that to the service's port 80 of the moment. Between the two
	// starts there is none: a validation that comes then waits for the
	// second start, as behind a load balancer that holds requests while
	// its only backend restarts, instead of failing the order.
	route := newRoute(ctx)
	ca.SetHTTP01Handler(route)
	toService := func(m *managed.Manager) { route.to(&url.URL{Scheme: "http", Host: m.Addrs()[1].String()}) }
	public := strings.Join(names, ",")

	// First start: everything due now is done, and the service stops
	// with the order in flight (Pebble validates for a second or two).
	err = serve(ctx, dsn, cfg, "127.0.0.1:0", "127.0.0.1:0", func(m *managed.Manager, ctx context.Context) error {
		toService(m)
		_, err := hosttest.Settle(ctx, m.Loop(), 200)
		require.NoError(t, err)
		c := cert(t, m, "public")
		require.False(t, ready(c), "the public certificate is Ready before the CA validated")
		require.True(t, ready(cert(t, m, "internal")), "the internal certificate waits for no one: the local CA is made and signs at once")
		route.to(nil) // the service stops
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, map[string]int{public: 1}, ca.OrdersCreated(), "one order before the stop")

	// Second start, on the same database: the same order finishes.
	err = serve(ctx, dsn, cfg, "127.0.0.1:0", "127.0.0.1:0", func(m *managed.Manager, ctx context.Context) error {
		toService(m)
		err := hosttest.Advance(ctx, m.Loop(), clk, clk.Now().Add(10*time.Minute),
			hosttest.AdvanceOptions{Pace: 10 * time.Second, Until: func() bool { return ready(cert(t, m, "public")) }})
		require.NoError(t, err)
		require.True(t, ready(cert(t, m, "public")), "%+v", cert(t, m, "public").Status.Conditions)
		assert.Equal(t, map[string]int{public: 1}, ca.OrdersCreated(), "the restart made no second order")

		https := m.Addrs()[0].String()
		first := handshake(t, https, "www.shop.example", ca.RootPool())
		internalCA := localCA(t, m)
		handshake(t, https, "api.internal", internalCA)
		assert.Equal(t, "hello, www.shop.example\n", get(t, https, "www.shop.example"))

		// 61 days on: the public certificate (90 days) is renewed and
		// served by this same server.
		err = hosttest.Advance(ctx, m.Loop(), clk, clk.Now().Add(61*24*time.Hour), hosttest.AdvanceOptions{Pace: 10 * time.Second})
		require.NoError(t, err)
		c := cert(t, m, "public")
		require.True(t, ready(c))
		require.GreaterOrEqual(t, *c.Status.Revision, 2, "renewed")
		renewed := handshake(t, https, "shop.example", ca.RootPool())
		assert.NotEqual(t, first.SerialNumber, renewed.SerialNumber, "the renewal is served without a restart")
		assert.Equal(t, map[string]int{public: 2}, ca.OrdersCreated(), "one order per revision")
		return nil
	})
	require.NoError(t, err)
}

func cert(t *testing.T, m *managed.Manager, name string) *certificate.Certificate {
	t.Helper()
	c, err := m.Store().Certificates().Get(context.Background(), "default", name)
	require.NoError(t, err)
	return c
}

func ready(c *certificate.Certificate) bool {
	r := c.Status.Condition(certificate.ConditionReady)
	return r != nil && r.Status == certificate.StatusTrue
}

// localCA is the pool of the CA the service made, read from its store.
func localCA(t *testing.T, m *managed.Manager) *x509.CertPool {
	t.Helper()
	sec, err := m.Store().Secrets().Get(context.Background(), "default", managed.LocalCAName)
	require.NoError(t, err)
	p, err := keys.ParseSecretData(sec.Data)
	require.NoError(t, err)
	require.True(t, p.Leaf.IsCA)
	pool := x509.NewCertPool()
	pool.AddCert(p.Leaf)
	return pool
}

// handshake makes a TLS handshake with addr for name and verifies the
// chain against roots, at the time the certificate is valid (the
// service's clock is fake); it returns the leaf.
func handshake(t *testing.T, addr, name string, roots *x509.CertPool) *x509.Certificate {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{ServerName: name, InsecureSkipVerify: true})
	require.NoError(t, err, name)
	defer conn.Close()
	chain := conn.ConnectionState().PeerCertificates
	require.NotEmpty(t, chain)
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	leaf := chain[0]
	_, err = leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots, Intermediates: inter, CurrentTime: leaf.NotBefore.Add(time.Minute)})
	require.NoError(t, err, "%s: serial %s", name, leaf.SerialNumber)
	return leaf
}

// get fetches / over https from addr for name (the chain is checked by
// handshake).
func get(t *testing.T, addr, name string) string {
	t.Helper()
	tr := &http.Transport{TLSClientConfig: &tls.Config{ServerName: name, InsecureSkipVerify: true},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("https://" + name + "/")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// route proxies to the service's plain port of the moment; with none, a
// request waits for one until ctx ends.
type route struct {
	ctx     context.Context
	mu      sync.Mutex
	target  *httputil.ReverseProxy
	changed chan struct{} // closed when target changes
}

func newRoute(ctx context.Context) *route { return &route{ctx: ctx, changed: make(chan struct{})} }

func (r *route) to(u *url.URL) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.target = nil
	if u != nil {
		r.target = httputil.NewSingleHostReverseProxy(u)
	}
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *route) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	for {
		r.mu.Lock()
		target, changed := r.target, r.changed
		r.mu.Unlock()
		if target != nil {
			target.ServeHTTP(w, req)
			return
		}
		select {
		case <-changed:
		case <-req.Context().Done():
			return
		case <-r.ctx.Done():
			http.Error(w, "no service to route to", http.StatusBadGateway)
			return
		}
	}
}
