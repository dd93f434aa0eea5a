package acmeclient_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/acmeclient/acmetest"
	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/challenge"
	"github.com/certlife/certlife/order"
)

// fakeClock is the time the machines, the client and the front server
// share. Waiting moves it forward at once; each wait also gives Pebble,
// which runs on the wall clock, a moment for its asynchronous validation
// and issuance.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

func (c *fakeClock) wait(ctx context.Context, until time.Time) error {
	c.mu.Lock()
	if until.After(c.t) {
		c.t = until
	}
	c.mu.Unlock()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(2 * time.Millisecond):
		return nil
	}
}

// fault is a scripted answer of the front server.
type fault struct {
	// Status and Body are the answer; a Body of "" sends none.
	Status int
	Body   string
	// RetryAfter, when set, is sent as the Retry-After header.
	RetryAfter string
	// Hang holds the request until the client gives up (a timeout).
	Hang bool
	// Forward passes the request to Pebble first (it takes effect there)
	// and then answers the fault instead of Pebble's answer.
	Forward bool
	// ContentType of Body; "" means application/problem+json.
	ContentType string
	// Location, when set, is sent as the Location header (a redirect).
	Location string
	// Edit, when set, passes the request to Pebble and answers what Edit
	// makes of Pebble's answer (its status, headers and body); the other
	// fields are ignored.
	Edit func(status int, h http.Header, body []byte) (int, []byte)
}

func problem(status int, typ, detail string) fault {
	return fault{Status: status, Body: fmt.Sprintf(`{"type":"urn:ietf:params:acme:error:%s","detail":%q,"status":%d}`, typ, detail, status)}
}

// seen is one request the front server saw.
type seen struct {
	At    time.Time // on the fake clock
	Kind  string
	Fault *fault
}

// front is a small ACME server in front of Pebble: it passes every request
// on to Pebble (which builds its URLs from the Host it is asked for, so
// they point here), unless its script answers one with an error Pebble
// cannot give — 503 with or without Retry-After, 429, a timeout, a
// finalize refused as already done, a bare 403.
type front struct {
	srv   *httptest.Server
	clock *fakeClock
	proxy *httputil.ReverseProxy
	stop  chan struct{} // closed when the test ends: hung requests return

	mu     sync.Mutex
	script func(kind string, n int, total int, now time.Time) *fault // n: this kind's count, total: every kind's, both from 1
	counts map[string]int
	total  int
	log    []seen
}

func frontKind(path string) string {
	for _, p := range []struct{ prefix, kind string }{{"/dir", "directory"}, {"/nonce-plz", "nonce"}, {"/sign-me-up", "account"},
		{"/order-plz", "newOrder"}, {"/my-order/", "order"}, {"/authZ/", "authorization"}, {"/chalZ/", "challenge"},
		{"/finalize-order/", "finalize"}, {"/certZ/", "certificate"}, {"/draft-ietf-acme-ari", "renewalInfo"}} {
		if strings.HasPrefix(path, p.prefix) {
			return p.kind
		}
	}
	return "other"
}

func newFront(t testing.TB, pebble *acmetest.Server, clock *fakeClock) *front {
	target, err := url.Parse(pebble.DirectoryURL)
	require.NoError(t, err)
	f := &front{clock: clock, counts: map[string]int{}, stop: make(chan struct{})}
	f.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(&url.URL{Scheme: target.Scheme, Host: target.Host})
			pr.Out.Host = pr.In.Host // Pebble's URLs point at the front
		},
		Transport: pebble.Client().Transport,
		ErrorLog:  nil,
	}
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	f.srv.Config.ErrorLog = nil
	f.srv.StartTLS()
	t.Cleanup(f.srv.Close)
	t.Cleanup(func() { close(f.stop) }) // runs first
	return f
}

func (f *front) serve(w http.ResponseWriter, r *http.Request) {
	kind := frontKind(r.URL.Path)
	f.mu.Lock()
	f.counts[kind]++
	f.total++
	var ft *fault
	if f.script != nil {
		ft = f.script(kind, f.counts[kind], f.total, f.clock.Now())
	}
	f.log = append(f.log, seen{At: f.clock.Now(), Kind: kind, Fault: ft})
	f.mu.Unlock()
	if ft == nil {
		f.proxy.ServeHTTP(w, r)
		return
	}
	if ft.Hang {
		// Read the body, so that the server notices the client hanging
		// up, then answer nothing until it has.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-f.stop:
		}
		return
	}
	if ft.Edit != nil {
		rec := httptest.NewRecorder()
		f.proxy.ServeHTTP(rec, r)
		status, body := ft.Edit(rec.Code, rec.Header(), rec.Body.Bytes())
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(status)
		_, _ = w.Write(body)
		return
	}
	if ft.Forward {
		f.proxy.ServeHTTP(httptest.NewRecorder(), r)
	}
	if ft.RetryAfter != "" {
		w.Header().Set("Retry-After", ft.RetryAfter)
	}
	if ft.Location != "" {
		w.Header().Set("Location", ft.Location)
	}
	if ft.Body != "" {
		ct := ft.ContentType
		if ct == "" {
			ct = "application/problem+json"
		}
		w.Header().Set("Content-Type", ct)
	}
	w.WriteHeader(ft.Status)
	_, _ = io.WriteString(w, ft.Body)
}

func (f *front) setScript(s func(kind string, n, total int, now time.Time) *fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script, f.counts, f.total, f.log = s, map[string]int{}, 0, nil
}

func (f *front) requests() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seen(nil), f.log...)
}

// kinds lists the kinds of the requests seen, in order, without nonce and
// directory requests, marking a scripted answer with "!". Polls of the
// same kind in a row count once, and reads of the authorization right
// after the challenge's accept are left out: how many a validation or an
// issuance takes depends on how fast Pebble is (an accept answered after
// Pebble validated says so itself, and needs no read).
func kinds(log []seen) []string {
	var out []string
	for _, s := range log {
		if s.Kind == "nonce" || s.Kind == "directory" {
			continue
		}
		k := s.Kind
		if s.Fault != nil {
			k += "!"
		}
		if len(out) > 0 && out[len(out)-1] == k && (k == "authorization" || k == "order") {
			continue
		}
		if len(out) > 0 && out[len(out)-1] == "challenge" && k == "authorization" {
			continue
		}
		out = append(out, k)
	}
	return out
}

// faultEnv is Pebble behind a front server, an account, and an issuer on
// a fake clock with the machines' default timing (no self-checks).
type faultEnv struct {
	*env
	front *front
	clock *fakeClock
}

func newFaultEnv(t *testing.T) *faultEnv {
	t.Helper()
	return newFaultEnvWith(t, acmetest.Options{}, nil)
}

// newFaultEnvWith is a faultEnv with Pebble's options and the issuer's
// config tuned.
func newFaultEnvWith(t *testing.T, opts acmetest.Options, tune func(*acmeclient.IssuerConfig)) *faultEnv {
	t.Helper()
	srv, err := acmetest.Start(opts)
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	clock := &fakeClock{t: time.Now()}
	fr := newFront(t, srv, clock)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	hc := fr.srv.Client()
	hc.Timeout = 2 * time.Second // a hung request is a timeout
	client, err := acmeclient.New(acmeclient.Config{DirectoryURL: strings.Replace(srv.DirectoryURL, mustHost(t, srv.DirectoryURL), mustHost(t, fr.srv.URL), 1),
		Key: key, HTTPClient: hc, Clock: clock})
	require.NoError(t, err)
	_, err = client.EnsureAccount(context.Background(), acmeclient.AccountOptions{AgreeToTerms: true})
	require.NoError(t, err)
	e := &env{srv: srv, key: key, client: client, store: acmeclient.NewMemoryStore()}
	cfg := acmeclient.IssuerConfig{Client: client, Store: e.store,
		Solvers: acmeclient.Solvers{HTTP01: srv.HTTP01Handler(), DNS01: srv.DNS()},
		Trace: func(ev acmeclient.Event) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.events = append(e.events, ev)
		}}
	if tune != nil {
		tune(&cfg)
	}
	e.issuer, err = acmeclient.NewIssuer(cfg)
	require.NoError(t, err)
	return &faultEnv{env: e, front: fr, clock: clock}
}

func mustHost(t *testing.T, u string) string {
	p, err := url.Parse(u)
	require.NoError(t, err)
	return p.Host
}

// run steps a request on the fake clock until it is answered.
func (e *faultEnv) run(t *testing.T, r *certificate.CertificateRequest) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		res, err := e.issuer.Step(ctx, r)
		if err != nil {
			return err
		}
		if res.Answered {
			if ready := r.Condition(certificate.RequestConditionReady); ready == nil || ready.Status != certificate.StatusTrue {
				return fmt.Errorf("not issued: %+v", ready)
			}
			return nil
		}
		if err := e.clock.wait(ctx, res.RequeueAt); err != nil {
			return fmt.Errorf("%w: %s: %s", err, res.Reason, res.Message)
		}
	}
}

func (e *faultEnv) logTimeline(t *testing.T) {
	start := time.Time{}
	for _, s := range e.front.requests() {
		if start.IsZero() {
			start = s.At
		}
		mark := ""
		if s.Fault != nil {
			mark = " → scripted " + strconv.Itoa(s.Fault.Status)
			if s.Fault.Hang {
				mark = " → scripted timeout"
			}
		}
		t.Logf("+%-8v %s%s", s.At.Sub(start).Round(time.Millisecond), s.Kind, mark)
	}
}

// after returns the time of the first request of kind after the scripted
// one, and of the scripted one.
func retryGap(log []seen, kind string) (failedAt, retriedAt time.Time, ok bool) {
	for i, s := range log {
		if s.Kind == kind && s.Fault != nil {
			for _, r := range log[i+1:] {
				if r.Kind == kind {
					return s.At, r.At, true
				}
			}
		}
	}
	return time.Time{}, time.Time{}, false
}

// Scripted errors that Pebble cannot give, through the order and challenge
// machines on a fake clock with their default timing: every order issues,
// each retry arrives no sooner than its deadline and not much later, and a
// refused finalize is followed by a read of the order, never by the
// challenges again.
func TestScriptedErrors(t *testing.T) {
	once := func(kind string, f fault) func(string, int, int, time.Time) *fault {
		return func(k string, n, _ int, _ time.Time) *fault {
			if k == kind && n == 1 {
				return &f
			}
			return nil
		}
	}
	serverInternal := problem(503, "serverInternal", "the database is restarting")
	tests := map[string]struct {
		script func(kind string, n, total int, now time.Time) *fault
		// the request kind that failed and the least and most time until
		// it was made again
		kind        string
		least, most time.Duration
		// calls: request kinds in order (nonce and directory left out),
		// when the order matters
		calls []string
		// readAtOnce: the order is read at once after the scripted
		// answer, not after a retry delay
		readAtOnce bool
		// check looks at the requests further
		check func(t *testing.T, log []seen)
	}{
		"a 503 without Retry-After on newOrder is retried 5 s later (RFC 8555 §7.4)": {
			script: once("newOrder", serverInternal), kind: "newOrder", least: 5 * time.Second, most: 6 * time.Second,
		},
		"a 503 with Retry-After on the authorization read is retried at the Retry-After (RFC 9110 §10.2.3)": {
			script: once("authorization", func() fault { f := serverInternal; f.RetryAfter = "30"; return f }()),
			kind:   "authorization", least: 30 * time.Second, most: 31 * time.Second,
		},
		"a 429 without Retry-After on finalize reads the order, then finalizes again after 5 s (RFC 8555 §6.6)": {
			script: once("finalize", fault{Status: 429}), kind: "finalize", least: 5 * time.Second, most: 6 * time.Second,
			calls: []string{"newOrder", "authorization", "challenge", "finalize!", "order", "finalize", "order", "certificate"},
		},
		"a rate limit with Retry-After on newOrder is honoured, not hammered (RFC 8555 §6.6)": {
			script: once("newOrder", func() fault {
				f := problem(429, "rateLimited", "too many new orders recently")
				f.RetryAfter = "120"
				return f
			}()),
			kind: "newOrder", least: 2 * time.Minute, most: 2*time.Minute + time.Second,
		},
		"a timeout on accept is retried 5 s later": {
			script: once("challenge", fault{Hang: true}), kind: "challenge", least: 5 * time.Second, most: 6 * time.Second,
		},
		"an accept the server carried out but answered 504: the challenge is read and never accepted twice (RFC 8555 §7.5.1)": {
			script: once("challenge", fault{Status: 504, Forward: true}),
			calls:  []string{"newOrder", "authorization", "challenge!", "authorization", "finalize", "order", "certificate"},
		},
		"a 502 on the certificate download is retried 5 s later (RFC 8555 §7.4.2)": {
			script: once("certificate", fault{Status: 502}), kind: "certificate", least: 5 * time.Second, most: 6 * time.Second,
		},
		"a finalize the server carried out but answered as already finalized: the order is read and followed to its certificate (RFC 8555 §7.4)": {
			script: once("finalize", func() fault {
				f := problem(400, "malformed", "order already finalized")
				f.Forward = true
				return f
			}()),
			calls:      []string{"newOrder", "authorization", "challenge", "finalize!", "order", "certificate"},
			readAtOnce: true,
		},
		"a finalize the server carried out but answered with a bare 403: the order is read at once, the challenges never redone": {
			script:     once("finalize", fault{Status: 403, Forward: true}),
			calls:      []string{"newOrder", "authorization", "challenge", "finalize!", "order", "certificate"},
			readAtOnce: true,
		},
		"a finalize refused as orderNotReady: the order is read at once and, ready, finalized (RFC 8555 §7.4)": {
			script:     once("finalize", problem(403, "orderNotReady", "the order is not ready")),
			calls:      []string{"newOrder", "authorization", "challenge", "finalize!", "order", "finalize", "order", "certificate"},
			readAtOnce: true,
		},
		"orderNotReady twice, the second time from an order the server says is ready: read at once, finalized again only after the retry delay": {
			script: func(k string, n, _ int, _ time.Time) *fault {
				if k == "finalize" && n <= 2 {
					f := problem(403, "orderNotReady", "the order is not ready")
					return &f
				}
				return nil
			},
			calls:      []string{"newOrder", "authorization", "challenge", "finalize!", "order", "finalize!", "order", "finalize", "order", "certificate"},
			readAtOnce: true,
			check: func(t *testing.T, log []seen) {
				var finalizes []time.Time
				for _, s := range log {
					if s.Kind == "finalize" {
						finalizes = append(finalizes, s.At)
					}
				}
				require.Len(t, finalizes, 3)
				assert.GreaterOrEqual(t, finalizes[2].Sub(finalizes[1]), 5*time.Second, "finalized again before the retry delay")
				assert.LessOrEqual(t, finalizes[2].Sub(finalizes[1]), 6*time.Second, "finalized again long after the retry delay")
			},
		},
		"a finalize that timed out after the server carried it out: the order is read, never finalized twice": {
			script: func(k string, n, _ int, _ time.Time) *fault {
				if k == "finalize" && n == 1 {
					return &fault{Status: 504, Forward: true}
				}
				return nil
			},
			calls: []string{"newOrder", "authorization", "challenge", "finalize!", "order", "certificate"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := newFaultEnv(t)
			e.front.setScript(tc.script)
			r, key := newRequest(t, "fault", "fault.example")
			err := e.run(t, r)
			e.logTimeline(t)
			if err != nil {
				e.logEvents(t)
			}
			require.NoError(t, err)
			leafOf(t, e.srv, r, key, "fault.example")
			log := e.front.requests()
			if tc.kind != "" {
				failedAt, retriedAt, ok := retryGap(log, tc.kind)
				require.True(t, ok, "no retry of the %s request", tc.kind)
				gap := retriedAt.Sub(failedAt)
				assert.GreaterOrEqual(t, gap, tc.least, "retried too soon")
				assert.LessOrEqual(t, gap, tc.most, "retried too late")
			}
			if tc.calls != nil {
				assert.Equal(t, tc.calls, kinds(log))
			}
			if tc.readAtOnce {
				for i, s := range log {
					if s.Fault == nil {
						continue
					}
					for _, next := range log[i+1:] {
						if next.Kind == "order" {
							assert.Less(t, next.At.Sub(s.At), 200*time.Millisecond, "the order was read %v after the refusal", next.At.Sub(s.At))
							break
						}
					}
				}
			}
			if tc.check != nil {
				tc.check(t, log)
			}
		})
	}
}

// An order through a server that fails every third request for a minute
// and then recovers: it issues, with retries that arrive and a delay that
// grows but stays bounded.
func TestIssuesThroughAServerFailingEveryThirdRequestForAMinute(t *testing.T) {
	e := newFaultEnv(t)
	start := e.clock.Now()
	faults := []fault{problem(503, "serverInternal", "overloaded"), {Status: 429}, {Status: 502},
		func() fault { f := problem(503, "serverInternal", "overloaded"); f.RetryAfter = "7"; return f }()}
	e.front.setScript(func(_ string, _, total int, now time.Time) *fault {
		if now.Sub(start) < time.Minute && total%3 == 0 {
			f := faults[(total/3)%len(faults)]
			return &f
		}
		return nil
	})
	r, key := newRequest(t, "flaky", "flaky.example", "www.flaky.example")
	err := e.run(t, r)
	e.logTimeline(t)
	if err != nil {
		e.logEvents(t)
	}
	require.NoError(t, err)
	leafOf(t, e.srv, r, key, "flaky.example", "www.flaky.example")
	log := e.front.requests()
	failed, longest := 0, time.Duration(0)
	for i, s := range log {
		if s.Fault != nil {
			failed++
		}
		if i > 0 {
			longest = max(longest, s.At.Sub(log[i-1].At))
		}
	}
	issuedAfter := log[len(log)-1].At.Sub(start)
	t.Logf("issued after %v on the fake clock: %d requests, %d answered with a scripted error, longest gap between requests %v",
		issuedAfter.Round(time.Millisecond), len(log), failed, longest.Round(time.Millisecond))
	require.Positive(t, failed, "the script failed no request")
	// The machines' default delays: 5 s doubling to 5 minutes, the
	// attempt count reset whenever the order moves on. A minute of
	// failures never needs the longest delays, nor hundreds of requests.
	assert.LessOrEqual(t, longest, time.Minute, "a retry waited longer than the failures lasted")
	assert.Less(t, len(log), 100, "too many requests for one order")
	assert.Less(t, issuedAfter, 3*time.Minute)
}

// RFC 8555 §7.1.4: an authorization lists its challenges; a challenge URL
// it does not list fails at once, with a reason that says so, and the
// order fails with it instead of waiting.
func TestChallengeURLNotInItsAuthorizationFailsAtOnce(t *testing.T) {
	e := newEnv(t, acmetest.Options{}, nil)
	ctx := context.Background()
	_, err := e.client.EnsureAccount(ctx, acmeclient.AccountOptions{AgreeToTerms: true})
	require.NoError(t, err)
	st, err := e.client.CreateOrder(ctx, order.Status{}, order.CreateOrder{DNSNames: []string{"a.example", "b.example"}})
	require.NoError(t, err)
	require.Len(t, st.Authorizations, 2)
	require.NotNil(t, st.Expires, "the order's expiry is recorded")
	for _, a := range st.Authorizations {
		st, err = e.client.GetAuthorization(ctx, st, order.GetAuthorization{URL: a.URL})
		require.NoError(t, err)
	}
	// The challenge of the second authorization, read against the first.
	other := st.Authorizations[1].Challenges[0].URL
	cs, err := e.client.SyncChallenge(ctx, challenge.Status{Processing: true}, challenge.Sync{URL: other, AuthorizationURL: st.Authorizations[0].URL})
	require.ErrorIs(t, err, acmeclient.ErrNotFound)
	assert.Equal(t, challenge.StateErrored, cs.State)
	assert.Contains(t, cs.Reason, "is not one its authorization")
	assert.False(t, cs.Transient)

	// The machines: the challenge ends errored at once, the order fails
	// with its reason.
	c := &challenge.Challenge{Name: "x-0", Spec: challenge.Spec{URL: other, AuthorizationURL: st.Authorizations[0].URL, DNSName: "a.example"}, Status: cs}
	res := challenge.Decide(c, time.Now(), challenge.Config{})
	require.Equal(t, challenge.ReasonFinished, res.Reason)
}
