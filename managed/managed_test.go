package managed_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/acmeclient/acmetest"
	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/host/hosttest"
	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/managed"
)

var quiet = slog.New(slog.DiscardHandler)

// Every problem of a Config is named at once, with the field and value.
func TestConfigProblemsAreNamed(t *testing.T) {
	store := host.NewMemoryStore(nil)
	tests := map[string]struct {
		cfg  managed.Config
		want []string
	}{
		"no store": {managed.Config{}, []string{"Config.Store, or Config.DB"}},
		"ACME without terms": {managed.Config{Store: store, ACME: &managed.ACME{DirectoryURL: "https://ca.example/dir"}},
			[]string{"AgreeToTerms is false"}},
		"ACME certificate without ACME": {managed.Config{Store: store, Certificates: []managed.Certificate{{Name: "web", DNSNames: []string{"a.example"}}}},
			[]string{`Certificates[0] ("web"): Issuer "acme" needs Config.ACME`}},
		"bad names": {managed.Config{Store: store, Certificates: []managed.Certificate{
			{Name: "Web/x", DNSNames: []string{"a.example"}, Issuer: managed.IssuerLocalCA},
			{Name: "db", Issuer: managed.IssuerLocalCA},
			{Name: managed.LocalCAName, DNSNames: []string{"b.example"}, Issuer: managed.IssuerLocalCA},
			{Name: "x", DNSNames: []string{"c.example"}, Issuer: "vault"},
		}}, []string{`Certificates[0] ("Web/x"): Name`, `Certificates[1] ("db"): no DNSNames or IPAddresses`,
			`Certificates[2] ("local-ca"): Name is taken`, `Certificates[3] ("x"): Issuer "vault"`}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := managed.New(context.Background(), tc.cfg)
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// A Manager with only the local CA: the CA is made on the first start and
// the certificate it signs issued in the same settle; served over TLS by
// name; and a changed Config is written to the stored certificate on the
// next start, which the next settle issues.
func TestLocalCAServedByName(t *testing.T) {
	ctx := context.Background()
	clk := testingclock.NewFakeClock(time.Now().UTC().Truncate(time.Second))
	store := host.NewMemoryStore(clk)
	cfg := managed.Config{Store: store, Clock: clk, Logger: quiet,
		Certificates: []managed.Certificate{{Name: "api", DNSNames: []string{"api.internal"}, Issuer: managed.IssuerLocalCA}}}
	m, err := managed.New(ctx, cfg)
	require.NoError(t, err)
	_, err = hosttest.Settle(ctx, m.Loop(), 100)
	require.NoError(t, err)
	c, err := store.Certificates().Get(ctx, "default", "api")
	require.NoError(t, err)
	require.Equal(t, 1, *c.Status.Revision, "issued in the first settle: %+v", c.Status.Conditions)

	require.NoError(t, m.ListenAndServe("127.0.0.1:0", "127.0.0.1:0", http.NotFoundHandler()))
	roots := caPool(t, store)
	leaf := dial(t, m.Addrs()[0].String(), "api.internal", roots)
	assert.Equal(t, []string{"api.internal"}, leaf.DNSNames)
	_, err = tls.Dial("tcp", m.Addrs()[0].String(), &tls.Config{ServerName: "other.internal", RootCAs: roots})
	assert.Error(t, err, "a name the Manager keeps no certificate for")
	require.NoError(t, m.Close())

	cfg.Certificates[0].DNSNames = []string{"api.internal", "api2.internal"}
	m, err = managed.New(ctx, cfg)
	require.NoError(t, err)
	defer m.Close()
	_, err = hosttest.Settle(ctx, m.Loop(), 100)
	require.NoError(t, err)
	c, err = store.Certificates().Get(ctx, "default", "api")
	require.NoError(t, err)
	assert.Equal(t, 2, *c.Status.Revision, "the new name is issued")
	assert.Equal(t, []string{"api.internal", "api2.internal"}, c.Spec.DNSNames)
	require.NoError(t, m.ListenAndServe("127.0.0.1:0", "", http.NotFoundHandler()))
	dial(t, m.Addrs()[0].String(), "api2.internal", roots)
}

// HTTPHandler answers only the HTTP-01 path itself; everything else goes
// to next, or is redirected to https.
func TestHTTPHandlerRedirects(t *testing.T) {
	m, err := managed.New(context.Background(), managed.Config{Store: host.NewMemoryStore(nil), Logger: quiet})
	require.NoError(t, err)
	defer m.Close()
	rec := httptest.NewRecorder()
	m.HTTPHandler(nil).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://shop.example:80/cart?x=1", nil))
	assert.Equal(t, http.StatusFound, rec.Code)
	assert.Equal(t, "https://shop.example/cart?x=1", rec.Header().Get("Location"))
	rec = httptest.NewRecorder()
	m.HTTPHandler(nil).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "http://shop.example/cart", nil))
	assert.Equal(t, http.StatusBadRequest, rec.Code, "a POST is not redirected")
}

func caPool(t *testing.T, store host.Store) *x509.CertPool {
	t.Helper()
	sec, err := store.Secrets().Get(context.Background(), "default", managed.LocalCAName)
	require.NoError(t, err)
	p, err := keys.ParseSecretData(sec.Data)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(p.Leaf)
	return pool
}

func dial(t *testing.T, addr, name string, roots *x509.CertPool) *x509.Certificate {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{ServerName: name, InsecureSkipVerify: true})
	require.NoError(t, err)
	defer conn.Close()
	leaf := conn.ConnectionState().PeerCertificates[0]
	_, err = leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots, CurrentTime: leaf.NotBefore.Add(time.Minute)})
	require.NoError(t, err)
	return leaf
}

// recorder keeps the messages of the records it is given, at every
// level.
type recorder struct {
	mu   sync.Mutex
	msgs map[string]int
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs[rec.Message]++
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

// One logger shows the host's decisions and the ACME issuer's order and
// challenge decisions.
func TestOneLoggerShowsTheACMEIssuersDecisions(t *testing.T) {
	ca, err := acmetest.Start(acmetest.Options{})
	require.NoError(t, err)
	defer ca.Close()
	ctx := context.Background()
	clk := testingclock.NewFakeClock(time.Now().UTC().Truncate(time.Second))
	rec := &recorder{msgs: map[string]int{}}
	m, err := managed.New(ctx, managed.Config{Store: host.NewMemoryStore(clk), Clock: clk, Logger: slog.New(rec),
		ACME:         &managed.ACME{DirectoryURL: ca.DirectoryURL, HTTPClient: ca.Client(), AgreeToTerms: true, RequestValidity: true},
		Certificates: []managed.Certificate{{Name: "web", DNSNames: []string{"web.example"}}}})
	require.NoError(t, err)
	defer m.Close()
	ca.SetHTTP01Handler(m.HTTPHandler(nil))
	ready := func() bool {
		c, err := m.Store().Certificates().Get(ctx, "default", "web")
		require.NoError(t, err)
		r := c.Status.Condition(certificate.ConditionReady)
		return r != nil && r.Status == certificate.StatusTrue
	}
	require.NoError(t, hosttest.Advance(ctx, m.Loop(), clk, clk.Now().Add(5*time.Minute), hosttest.AdvanceOptions{Pace: 10 * time.Second, Until: ready}))
	require.True(t, ready())
	rec.mu.Lock()
	defer rec.mu.Unlock()
	assert.Positive(t, rec.msgs["certlife: ACME issuer"], "the ACME issuer's decisions: %v", rec.msgs)
	assert.Greater(t, len(rec.msgs), 1, "the host's decisions too: %v", rec.msgs)
}

// Close shuts the servers down and is safe to call again; a Serve after
// it serves nothing.
func TestCloseStopsServingOnce(t *testing.T) {
	m, err := managed.New(context.Background(), managed.Config{Store: host.NewMemoryStore(nil), Logger: quiet})
	require.NoError(t, err)
	require.NoError(t, m.ListenAndServe("127.0.0.1:0", "127.0.0.1:0", http.NotFoundHandler()))
	plain := m.Addrs()[1].String()
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get("http://" + plain + "/x")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusFound, resp.StatusCode)
	require.NoError(t, m.Close())
	require.NoError(t, m.Close(), "a second Close")
	_, err = noFollow.Get("http://" + plain + "/x")
	assert.Error(t, err, "still serving after Close")
	assert.ErrorIs(t, m.ListenAndServe("127.0.0.1:0", "", http.NotFoundHandler()), managed.ErrClosed)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	m.Serve(ln, nil, http.NotFoundHandler())
	_, err = noFollow.Get("http://" + ln.Addr().String() + "/x")
	assert.Error(t, err, "a Serve after Close serves")
	assert.Len(t, m.Addrs(), 2, "a Serve after Close started a server")
}
