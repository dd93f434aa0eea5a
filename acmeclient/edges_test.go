package acmeclient_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/order"
)

// huge answers status with a body of size bytes — a JSON string that never
// ends — streamed, counting what the client took, and closes done when it
// stops (the client hung up, or it sent everything).
func huge(status int, size int64, written *atomic.Int64, done chan struct{}) http.HandlerFunc {
	chunk := []byte(strings.Repeat("A", 32<<10))
	return func(w http.ResponseWriter, _ *http.Request) {
		defer close(done)
		w.Header().Set("Content-Type", "application/json")
		if status >= 400 {
			w.Header().Set("Content-Type", "application/problem+json")
			w.Header().Set("Retry-After", "120")
		}
		w.WriteHeader(status)
		n, err := w.Write([]byte(`{"detail":"`))
		written.Add(int64(n))
		for written.Load() < size && err == nil {
			n, err = w.Write(chunk)
			written.Add(int64(n))
		}
	}
}

// An answer larger than its bound is not read whole: a success answer
// fails the call with ErrServer, saying which answer and its bound; an
// error answer is cut at 64 KiB and the call fails with its status, its
// Retry-After, and the server's words cut to a readable length. The
// heap does not grow with the answer (a 64 MiB answer was read whole,
// and the heap grew by three times that), and the client reads no more
// of the answer than its bound and what the sockets hold — whether the
// HTTPClient is the user's or the client's own.
func TestAnAnswerLargerThanItsBoundIsNotRead(t *testing.T) {
	const size = 64 << 20
	tests := []struct {
		path   string // the request answered hugely
		call   string
		status int
		bound  string // in the error, for a success answer
	}{
		{"/dir", "directory", http.StatusOK, "64 KiB"},
		{"/account", "account", http.StatusCreated, "64 KiB"},
		{"/new-order", "newOrder", http.StatusCreated, "1 MiB"},
		{"/order/1", "order", http.StatusOK, "1 MiB"},
		{"/authz/1", "authorization", http.StatusOK, "256 KiB"},
		{"/authz/1", "challenge", http.StatusOK, "256 KiB"},
		{"/chal/1", "accept", http.StatusOK, "256 KiB"},
		{"/finalize/1", "finalize", http.StatusOK, "1 MiB"},
		{"/cert/1", "certificate", http.StatusOK, "4 MiB"},
		{"/dir", "directory", http.StatusInternalServerError, ""},
		{"/new-order", "newOrder", http.StatusInternalServerError, ""},
		{"/finalize/1", "finalize", http.StatusServiceUnavailable, ""},
		{"/order/1", "order", http.StatusTooManyRequests, ""},
	}
	for _, tls := range []bool{true, false} {
		for _, tc := range tests {
			name := fmt.Sprintf("%s %d, HTTPClient the user's %v", tc.call, tc.status, tls)
			t.Run(name, func(t *testing.T) {
				h := newHostile(t, tls)
				var written atomic.Int64
				done := make(chan struct{})
				h.handle(tc.path, huge(tc.status, size, &written, done))
				c := h.client(t)

				heap := heapGrowth(t, func() {
					err := callUpTo(tc.call)(t.Context(), c, h.srv.URL)
					require.Error(t, err)
					var e *acmeclient.Error
					require.ErrorAs(t, err, &e)
					if tc.status < 400 {
						require.ErrorIs(t, err, acmeclient.ErrServer)
						require.Contains(t, err.Error(), "runs past "+tc.bound)
						require.Contains(t, err.Error(), h.srv.URL+tc.path)
						require.True(t, acmeclient.Retryable(err))
						return
					}
					require.Equal(t, tc.status, e.Status)
					require.Contains(t, e.Detail, "the answer ran past 64 KiB and was cut there")
					require.Less(t, len(e.Detail), 2<<10, "the server's words are cut to a readable length")
					require.Less(t, len(err.Error()), 2<<10)
					_, ok := acmeclient.RetryAfter(err)
					require.True(t, ok, "the Retry-After of the answer is kept")
				})
				<-done
				t.Logf("read %d KiB, heap +%d KiB", written.Load()>>10, heap>>10)
				require.Less(t, written.Load(), int64(size/4), "the client read on past the bound")
				require.Less(t, heap, uint64(24<<20), "the heap grew with the answer")
			})
		}
	}
}

// heapGrowth is what f allocated, in bytes, whoever in the process did.
func heapGrowth(t *testing.T, f func()) uint64 {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Every URL the client sends to must be https:// (RFC 8555 §6.1), not only
// the directory's: an endpoint the directory lists, the Location of a new
// order, an order's authorizations, finalize and certificate URLs, an
// authorization's challenges, a certificate's alternates. One that is
// http:// is refused before anything is sent to it — a JWS signed by the
// account key never travels in the clear — with ErrInsecureURL, which no
// retry gets past, naming the URL and where it came from; the order is
// marked errored with those words. The http:// server here is a working
// ACME server: a client that followed the URL would succeed.
func TestURLsThatAreNotHTTPSAreRefused(t *testing.T) {
	type setup func(h *hostile, plain string)
	answer := func(path string, status int, v func(base string) any, hdr ...string) setup {
		return func(h *hostile, plain string) {
			h.handle(path, func(w http.ResponseWriter, _ *http.Request) {
				for i := 0; i+1 < len(hdr); i += 2 {
					w.Header().Set(hdr[i], strings.ReplaceAll(hdr[i+1], "PLAIN", plain))
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				_ = json.NewEncoder(w).Encode(v(h.srv.URL))
			})
		}
	}
	directoryWith := func(endpoint string) setup {
		return func(h *hostile, plain string) {
			answer("/dir", http.StatusOK, func(base string) any {
				d := hostileDirectory(base)
				d[endpoint] = plain + strings.TrimPrefix(d[endpoint], base)
				return d
			})(h, plain)
		}
	}
	orderWith := func(field, status string) func(base string) any {
		return func(base string) any {
			o := hostileOrder(base, status)
			o[field] = "PLAIN"
			return o
		}
	}
	plainIn := func(f func(string) any) func(string) any { return f }
	tests := map[string]struct {
		setup setup
		call  string
		from  string // where the error says the URL came from
	}{
		"the directory's newNonce":    {directoryWith("newNonce"), "account", "the directory BASE/dir, as newNonce,"},
		"the directory's newAccount":  {directoryWith("newAccount"), "account", "the directory BASE/dir, as newAccount,"},
		"the directory's newOrder":    {directoryWith("newOrder"), "account", "the directory BASE/dir, as newOrder,"},
		"the directory's revokeCert":  {directoryWith("revokeCert"), "directory", "the directory BASE/dir, as revokeCert,"},
		"the directory's keyChange":   {directoryWith("keyChange"), "directory", "the directory BASE/dir, as keyChange,"},
		"the directory's renewalInfo": {directoryWith("renewalInfo"), "directory", "the directory BASE/dir, as renewalInfo,"},
		"the new account's Location": {answer("/account", http.StatusCreated, func(string) any { return map[string]any{"status": "valid"} }, "Location", "PLAIN/acct/1"),
			"account", "the server's newAccount answer, as the account's Location,"},
		"the found account's Location": {answer("/account", http.StatusOK, func(string) any { return map[string]any{"status": "valid"} }, "Location", "PLAIN/acct/1"),
			"account", "the server's newAccount answer, as the account's Location,"},
		"the new order's Location": {answer("/new-order", http.StatusCreated, func(base string) any { return hostileOrder(base, "pending") }, "Location", "PLAIN/order/1"),
			"newOrder", "the server's newOrder answer, as the order's Location,"},
		"an authorization of the new order": {answer("/new-order", http.StatusCreated, plainIn(func(base string) any {
			o := hostileOrder(base, "pending")
			o["authorizations"] = []string{base + "/authz/1", "PLAIN/authz/1"}
			return o
		}), "Location", "BASE/order/1"), "newOrder", "the order BASE/order/1, as an authorization,"},
		"the order's finalize URL":    {answer("/order/1", http.StatusOK, orderWith("finalize", "ready")), "order", "the order BASE/order/1, as its finalize URL,"},
		"the order's certificate URL": {answer("/finalize/1", http.StatusOK, orderWith("certificate", "valid")), "finalize", "the order BASE/order/1, as its certificate URL,"},
		"a challenge of an authorization": {answer("/authz/1", http.StatusOK, func(base string) any {
			return map[string]any{"status": "pending", "identifier": map[string]string{"type": "dns", "value": "a.example"},
				"challenges": []any{map[string]string{"type": "http-01", "url": "PLAIN/chal/1", "token": "tok", "status": "pending"}}}
		}), "authorization", "the authorization BASE/authz/1, as its http-01 challenge,"},
		"an alternate chain": {func(h *hostile, plain string) {
			h.handle("/cert/1", func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/pem-certificate-chain")
				w.Header().Add("Link", "<"+plain+"/cert/1>;rel=\"alternate\"")
				_, _ = w.Write([]byte("-----BEGIN CERTIFICATE-----\nMAA=\n-----END CERTIFICATE-----\n"))
			})
		}, "certificate", "the certificate BASE/cert/1, as an alternate chain (Link header),"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := newHostile(t, true)
			plain := newHostile(t, false)
			tc.setup(h, plain.srv.URL)
			// Bodies name "PLAIN" where the plain server's URL goes.
			h.mu.Lock()
			for path, f := range h.on {
				h.on[path] = rewrite(f, "PLAIN", plain.srv.URL, "BASE", h.srv.URL)
			}
			h.mu.Unlock()
			c := h.client(t)
			err := callUpTo(tc.call)(t.Context(), c, h.srv.URL)
			require.ErrorIs(t, err, acmeclient.ErrInsecureURL)
			require.False(t, acmeclient.Retryable(err))
			require.Contains(t, err.Error(), strings.ReplaceAll(tc.from, "BASE", h.srv.URL)+" names "+plain.srv.URL)
			require.Zero(t, plain.total(), "a request went to the http:// server")
		})
	}

	t.Run("an order that names one is errored, with where it came from", func(t *testing.T) {
		h := newHostile(t, true)
		plain := newHostile(t, false)
		answer("/order/1", http.StatusOK, orderWith("finalize", "ready"))(h, plain.srv.URL)
		h.on["/order/1"] = rewrite(h.on["/order/1"], "PLAIN", plain.srv.URL)
		c := h.client(t)
		_, err := c.EnsureAccount(t.Context(), acmeclient.AccountOptions{})
		require.NoError(t, err)
		st, err := c.SyncOrder(t.Context(), order.Status{URL: h.srv.URL + "/order/1", State: order.StatePending}, order.Sync{URL: h.srv.URL + "/order/1"})
		require.ErrorIs(t, err, acmeclient.ErrInsecureURL)
		require.Equal(t, order.StateErrored, st.State)
		require.Contains(t, st.Reason, "as its finalize URL, names "+plain.srv.URL)
		require.Empty(t, st.FinalizeURL, "the URL is not kept")
	})

	t.Run("a URL kept from before is refused too, before it is sent", func(t *testing.T) {
		h := newHostile(t, true)
		plain := newHostile(t, false)
		c := h.client(t)
		_, err := c.EnsureAccount(t.Context(), acmeclient.AccountOptions{})
		require.NoError(t, err)
		u := plain.srv.URL + "/authz/1"
		st := order.Status{URL: h.srv.URL + "/order/1", Authorizations: []order.Authorization{{URL: u}}}
		_, err = c.GetAuthorization(t.Context(), st, order.GetAuthorization{URL: u})
		require.ErrorIs(t, err, acmeclient.ErrInsecureURL)
		require.Contains(t, err.Error(), "the authorization request was to go to "+u+", which is not an https:// URL")
		_, err = c.Finalize(t.Context(), order.Status{URL: h.srv.URL + "/order/1"}, order.Finalize{URL: plain.srv.URL + "/finalize/1", CSR: []byte{0x30, 0}})
		require.ErrorIs(t, err, acmeclient.ErrInsecureURL)
		require.Zero(t, plain.total(), "a request went to the http:// server")
	})

	t.Run("an account answer that names no account is an error, and no account is kept", func(t *testing.T) {
		for _, status := range []int{http.StatusCreated, http.StatusOK} {
			h := newHostile(t, true)
			answer("/account", status, func(string) any { return map[string]any{"status": "valid"} })(h, "")
			c := h.client(t)
			_, err := c.EnsureAccount(t.Context(), acmeclient.AccountOptions{})
			require.ErrorIs(t, err, acmeclient.ErrServer, "status %d", status)
			require.Contains(t, err.Error(), "no Location header")
			_, err = c.CreateOrder(t.Context(), order.Status{}, order.CreateOrder{DNSNames: []string{"a.example"}})
			require.ErrorContains(t, err, "no account yet")
			require.Zero(t, h.hitsOf("/new-order"))
		}
	})

	t.Run("InsecureAllowHTTP follows them", func(t *testing.T) {
		h := newHostile(t, true)
		plain := newHostile(t, false)
		directoryWith("newOrder")(h, plain.srv.URL)
		c := h.client(t, func(cfg *acmeclient.Config) { cfg.InsecureAllowHTTP = true })
		require.NoError(t, callUpTo("newOrder")(t.Context(), c, h.srv.URL))
		require.Equal(t, 1, plain.hitsOf("/new-order"))
	})
}

// rewrite answers what f answers, each old string in its body and headers
// replaced by its new one.
func rewrite(f http.HandlerFunc, oldnew ...string) http.HandlerFunc {
	r := strings.NewReplacer(oldnew...)
	return func(w http.ResponseWriter, req *http.Request) {
		rec := httptest.NewRecorder()
		f(rec, req)
		for k, vs := range rec.Header() {
			for i, v := range vs {
				vs[i] = r.Replace(v)
			}
			w.Header()[k] = vs
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write([]byte(r.Replace(rec.Body.String())))
	}
}

// stall holds a request until the test ends: with headersFirst it sends
// the status and the start of a body first, then holds the rest.
func stall(h *hostile, headersFirst bool) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if headersFirst {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(`{"status":`))
			w.(http.Flusher).Flush()
		}
		<-h.stop
	}
}

// A server that takes a request and never answers it — or answers its
// status and never the rest — fails the call at the request's deadline
// (Config.RequestTimeout) with ErrNetwork, which a retry follows, and the
// request the issuer was answering says why.
func TestAServerThatNeverAnswersFailsTheCallAtTheDeadline(t *testing.T) {
	tests := []struct {
		path, call   string
		headersFirst bool
	}{
		{"/dir", "directory", false},
		{"/dir", "directory", true},
		{"/account", "account", false},
		{"/new-order", "newOrder", true},
		{"/authz/1", "authorization", false},
		{"/finalize/1", "finalize", false},
		{"/finalize/1", "finalize", true},
		{"/cert/1", "certificate", true},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s, headers first %v", tc.path, tc.headersFirst), func(t *testing.T) {
			h := newHostile(t, true)
			h.handle(tc.path, stall(h, tc.headersFirst))
			c := h.client(t, func(cfg *acmeclient.Config) { cfg.RequestTimeout = 100 * time.Millisecond })
			err := callUpTo(tc.call)(t.Context(), c, h.srv.URL)
			require.ErrorIs(t, err, acmeclient.ErrNetwork)
			require.True(t, acmeclient.Retryable(err))
			require.Contains(t, err.Error(), "the server did not answer the "+kindOf[tc.call]+" request "+h.srv.URL+tc.path+" within 100ms (Config.RequestTimeout)")
		})
	}

	t.Run("the request the issuer answers says why", func(t *testing.T) {
		h := newHostile(t, true)
		h.handle("/dir", stall(h, false))
		c := h.client(t, func(cfg *acmeclient.Config) { cfg.RequestTimeout = 100 * time.Millisecond })
		iss, err := acmeclient.NewIssuer(acmeclient.IssuerConfig{Client: c, Store: acmeclient.NewMemoryStore(),
			Solvers: acmeclient.Solvers{HTTP01: &acmeclient.HTTP01Handler{}}})
		require.NoError(t, err)
		req := &certificate.CertificateRequest{ObjectMeta: certificate.ObjectMeta{Name: "web-1", Namespace: "default"},
			Spec: certificate.RequestSpec{IssuerRef: certificate.IssuerRef{Name: "acme"}}}
		now := time.Now()
		next, err := iss.Answer(t.Context(), req, now)
		require.ErrorIs(t, err, certificate.ErrCAUnreachable, "a warning for the host")
		require.ErrorIs(t, err, acmeclient.ErrNetwork)
		require.True(t, next.After(now), "the request is tried again")
		ready := req.Condition(certificate.RequestConditionReady)
		require.NotNil(t, ready)
		require.Equal(t, certificate.RequestReasonPending, ready.Reason)
		require.Contains(t, ready.Message, "registering the ACME account")
		require.Contains(t, ready.Message, "did not answer the directory request "+h.srv.URL+"/dir within 100ms")
	})
}

// kindOf is the request kind of each call's last request.
var kindOf = map[string]string{"directory": "directory", "account": "account", "newOrder": "newOrder", "order": "order",
	"authorization": "authorization", "challenge": "authorization", "accept": "challenge", "finalize": "finalize", "certificate": "certificate"}

// pipeListener is a net.Listener whose connections are in-memory pipes
// (net.Pipe), dialed by DialContext: inside a synctest bubble, a request
// that waits on one is durably blocked, and the bubble's clock moves on.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

func (l *pipeListener) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// Each request ends at its deadline, on the clock, and not a moment
// later: with no deadline of the user's — no RequestTimeout, an
// HTTPClient with no Timeout, as with a nil HTTPClient — at
// DefaultRequestTimeout, 30 s; else at RequestTimeout, else at the
// HTTPClient's Timeout; a negative RequestTimeout leaves only the
// context's.
func TestEachRequestEndsAtItsDeadline(t *testing.T) {
	tests := map[string]struct {
		requestTimeout, clientTimeout, ctxTimeout time.Duration
		want                                      time.Duration
		says                                      string
	}{
		"the default":                            {0, 0, 0, acmeclient.DefaultRequestTimeout, "within 30s (Config.RequestTimeout)"},
		"the HTTPClient's Timeout":               {0, 10 * time.Second, 0, 10 * time.Second, "within 10s (Config.RequestTimeout)"},
		"RequestTimeout before the HTTPClient's": {5 * time.Second, 10 * time.Second, 0, 5 * time.Second, "within 5s (Config.RequestTimeout)"},
		"RequestTimeout longer than the default": {2 * time.Minute, 0, 0, 2 * time.Minute, "within 2m0s (Config.RequestTimeout)"},
		"none but the context's":                 {-1, 10 * time.Second, time.Hour, time.Hour, "context deadline exceeded"},
		"the context's, when it comes first":     {0, 0, time.Second, time.Second, "context deadline exceeded"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				stop := make(chan struct{})
				l := newPipeListener()
				srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					select {
					case <-stop:
					case <-r.Context().Done():
					}
				})}
				go func() { _ = srv.Serve(l) }()
				tr := &http.Transport{DialContext: l.DialContext}
				defer func() {
					close(stop)
					_ = srv.Close()
					tr.CloseIdleConnections()
				}()
				key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
				require.NoError(t, err)
				c, err := acmeclient.New(acmeclient.Config{DirectoryURL: "http://acme.test/dir", InsecureAllowHTTP: true, Key: key,
					HTTPClient: &http.Client{Transport: tr, Timeout: tc.clientTimeout}, RequestTimeout: tc.requestTimeout})
				require.NoError(t, err)
				ctx := t.Context()
				if tc.ctxTimeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.ctxTimeout)
					defer cancel()
				}

				start := time.Now()
				_, err = c.Directory(ctx)
				require.ErrorIs(t, err, acmeclient.ErrNetwork)
				require.Contains(t, err.Error(), tc.says)
				require.Equal(t, tc.want, time.Since(start))
			})
		})
	}
}

// The server's words are kept readable, however many it sends within the
// bounds: a problem's detail is cut to 1 KiB, each subproblem's to 256
// bytes, ten subproblems are listed and the others counted, and control
// characters become spaces — in an error answer and in an order's error
// alike.
func TestTheServersWordsAreCutToAReadableLength(t *testing.T) {
	sub := make([]any, 60)
	for i := range sub {
		sub[i] = map[string]any{"type": "urn:ietf:params:acme:error:rejectedIdentifier", "detail": strings.Repeat("no ", 100),
			"identifier": map[string]string{"type": "dns", "value": fmt.Sprintf("n%d.example", i)}}
	}
	prob := map[string]any{"type": "urn:ietf:params:acme:error:rejectedIdentifier", "status": 400,
		"detail": "line one\nline two\x1b[31m red " + strings.Repeat("é", 5000), "subproblems": sub}
	check := func(t *testing.T, words string) {
		t.Helper()
		require.Less(t, len(words), 5<<10)
		require.Contains(t, words, "line one line two [31m red éé")
		require.Contains(t, words, "… (")
		require.Contains(t, words, "n9.example: no no")
		require.NotContains(t, words, "n10.example")
		require.Contains(t, words, "and 50 more")
		require.NotContains(t, words, "\n")
		require.NotContains(t, words, "\x1b")
		require.True(t, utf8.ValidString(words))
	}

	t.Run("an error answer", func(t *testing.T) {
		h := newHostile(t, true)
		h.handle("/new-order", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(prob)
		})
		c := h.client(t)
		err := callUpTo("newOrder")(t.Context(), c, h.srv.URL)
		require.ErrorIs(t, err, acmeclient.ErrRejectedIdentifier)
		check(t, err.Error())
	})
	t.Run("an order's error", func(t *testing.T) {
		h := newHostile(t, true)
		h.handle("/order/1", func(w http.ResponseWriter, _ *http.Request) {
			o := hostileOrder(h.srv.URL, "invalid")
			o["error"] = prob
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(o)
		})
		c := h.client(t)
		_, err := c.EnsureAccount(t.Context(), acmeclient.AccountOptions{})
		require.NoError(t, err)
		st, err := c.SyncOrder(t.Context(), order.Status{URL: h.srv.URL + "/order/1"}, order.Sync{URL: h.srv.URL + "/order/1"})
		require.NoError(t, err)
		require.Equal(t, order.StateInvalid, st.State)
		check(t, st.Reason)
	})
}

// A server that does not answer holds a host that answers several
// requests in turn for one request's deadline, not for each: after the
// first meets the deadline, the others are answered at once, without a
// request, until the time the first set for its retry; then the server
// is asked again.
func TestAnUnreachableServerCostsOneDeadlineNotOnePerRequest(t *testing.T) {
	h := newHostile(t, true)
	h.handle("/dir", stall(h, false))
	c := h.client(t, func(cfg *acmeclient.Config) { cfg.RequestTimeout = 100 * time.Millisecond })
	iss, err := acmeclient.NewIssuer(acmeclient.IssuerConfig{Client: c, Store: acmeclient.NewMemoryStore(),
		Solvers: acmeclient.Solvers{HTTP01: &acmeclient.HTTP01Handler{}}})
	require.NoError(t, err)
	now := time.Now()
	var reqs []*certificate.CertificateRequest
	var again time.Time
	for n := range 5 {
		req := &certificate.CertificateRequest{ObjectMeta: certificate.ObjectMeta{Name: fmt.Sprintf("web-%d", n+1), Namespace: "default"},
			Spec: certificate.RequestSpec{IssuerRef: certificate.IssuerRef{Name: "acme"}}}
		reqs = append(reqs, req)
		next, err := iss.Answer(t.Context(), req, now)
		require.ErrorIs(t, err, certificate.ErrCAUnreachable, "%s: a warning for the host", req.Name)
		require.True(t, next.After(now), "%s is tried again", req.Name)
		if n == 1 {
			again = next
		}
	}
	require.Equal(t, 1, h.hitsOf("/dir"), "only the first request asked the server")
	for _, req := range reqs[1:] {
		ready := req.Condition(certificate.RequestConditionReady)
		require.NotNil(t, ready)
		require.Equal(t, certificate.RequestReasonPending, ready.Reason)
		require.Contains(t, ready.Message, acmeclient.ReasonServerUnreachable)
		require.Contains(t, ready.Message, "did not answer the directory request", "%s says why", req.Name)
	}
	_, err = iss.Answer(t.Context(), reqs[1], again)
	require.ErrorIs(t, err, certificate.ErrCAUnreachable)
	require.Equal(t, 2, h.hitsOf("/dir"), "at the retry time, the server is asked again")
}
