package host_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/acmeclient/acmetest"
	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/host/hosttest"
	"github.com/certlife/certlife/keys"
)

// The fault matrix: one row per fault a host can meet on the way to an
// ACME certificate, each run through the public loop, the ACME issuer and
// Pebble (acmetest) on a fake clock. Every row ends with the certificate
// Ready within a stated bound of fake time, or showing Ready=False or
// Issuing with a reason that names the fault and a time for the next
// attempt; at every step no certificate waits without a deadline; and at
// the end no ACME state outlives its request.
//
// Pebble validates and issues on the real clock, so the fake clock moves
// to each due time at once but gives Pebble a few real milliseconds
// whenever an issuer is at work (matrixEnv.run).

// wire sits between the ACME client and Pebble (an http.RoundTripper):
// requests go to Pebble unless the row's script answers one with what
// Pebble cannot give — a 429 with a long Retry-After, a network outage —
// or changes Pebble's answer (a certificate for another key).
type wire struct {
	base http.RoundTripper
	mu   sync.Mutex
	// script is asked for each request, by kind ("newOrder",
	// "certificate", …); nil passes everything on.
	script func(kind string) *wireFault
	seen   map[string]int
	// failed lists, by kind, the requests Pebble answered with an error
	// or that never got an answer (status and body, or the error).
	failed map[string][]string
}

type wireFault struct {
	// down: the server cannot be reached.
	down bool
	// status, retryAfter, body: an answer instead of Pebble's.
	status     int
	retryAfter string
	body       string
	// certificate replaces the body of Pebble's answer.
	certificate []byte
}

func wireKind(path string) string {
	for _, p := range []struct{ prefix, kind string }{{"/dir", "directory"}, {"/nonce-plz", "nonce"}, {"/sign-me-up", "account"},
		{"/order-plz", "newOrder"}, {"/my-order/", "order"}, {"/authZ/", "authorization"}, {"/chalZ/", "challenge"},
		{"/finalize-order/", "finalize"}, {"/certZ/", "certificate"}, {"/draft-ietf-acme-ari", "renewalInfo"}} {
		if strings.HasPrefix(path, p.prefix) {
			return p.kind
		}
	}
	return "other"
}

func (w *wire) set(script func(kind string) *wireFault) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.script = script
}

func (w *wire) count(kind string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen[kind]
}

func (w *wire) fail(kind, what string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failed == nil {
		w.failed = map[string][]string{}
	}
	w.failed[kind] = append(w.failed[kind], what)
}

// failures are the failed requests of a kind (see failed).
func (w *wire) failures(kind string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.failed[kind]...)
}

func (w *wire) RoundTrip(r *http.Request) (*http.Response, error) {
	kind := wireKind(r.URL.Path)
	w.mu.Lock()
	w.seen[kind]++
	var f *wireFault
	if w.script != nil {
		f = w.script(kind)
	}
	w.mu.Unlock()
	switch {
	case f == nil:
		resp, err := w.base.RoundTrip(r)
		switch {
		case err != nil:
			w.fail(kind, err.Error())
		case resp.StatusCode >= 400:
			b, rerr := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
			resp.Body.Close()
			if rerr != nil {
				return nil, rerr
			}
			w.fail(kind, fmt.Sprintf("%d %s", resp.StatusCode, b))
			resp.Body = io.NopCloser(bytes.NewReader(b))
		}
		return resp, err
	case f.down:
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, errors.New("dial tcp: connect: connection refused")
	case f.certificate != nil:
		resp, err := w.base.RoundTrip(r)
		if err != nil || resp.StatusCode != http.StatusOK {
			return resp, err
		}
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(f.certificate))
		resp.ContentLength = int64(len(f.certificate))
		resp.Header.Del("Content-Length")
		return resp, nil
	}
	if r.Body != nil {
		r.Body.Close()
	}
	h := http.Header{"Content-Type": {"application/problem+json"}, "Replay-Nonce": {r.Header.Get("Replay-Nonce")}}
	if f.retryAfter != "" {
		h.Set("Retry-After", f.retryAfter)
	}
	return &http.Response{StatusCode: f.status, Status: strconv.Itoa(f.status) + " " + http.StatusText(f.status), Header: h,
		Body: io.NopCloser(strings.NewReader(f.body)), ContentLength: int64(len(f.body)), Request: r, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}, nil
}

// forgetful is an ACME issuer whose host "crashes" between deleting a
// request and telling the issuer: it is no certificate.Forgetter, so
// Forget never reaches it; it is swept as ever.
type forgetful struct{ iss *acmeclient.Issuer }

func (f forgetful) Answer(ctx context.Context, r *certificate.CertificateRequest, now time.Time) (time.Time, error) {
	return f.iss.Answer(ctx, r, now)
}

func (f forgetful) Sweep(ctx context.Context, now time.Time) (time.Time, error) {
	return f.iss.Sweep(ctx, now)
}

type matrixEnv struct {
	t      *testing.T
	clk    *testingclock.FakeClock
	start  time.Time
	srv    *acmetest.Server
	wire   *wire
	store  *host.MemoryStore
	acme   *acmeclient.MemoryStore
	issuer *acmeclient.Issuer
	loop   *host.Loop

	mu   sync.Mutex
	next map[string]time.Time // the last Event.Next of each certificate and request
	log  []string
}

type matrixOptions struct {
	pebble acmetest.Options
	// start is where the fake clock starts, relative to the real now.
	start time.Duration
	// requestValidity: orders ask for the spec's validity on the fake
	// clock (Pebble honours it).
	requestValidity bool
	// profile the orders ask for; empty means "default" (90 days). An
	// order that names none gets one of Pebble's profiles at random.
	profile string
	tune    func(*acmeclient.IssuerConfig)
	wrap    func(*acmeclient.Issuer) certificate.Issuer
}

func newMatrixEnv(t *testing.T, o matrixOptions) *matrixEnv {
	srv, err := acmetest.Start(o.pebble)
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	start := time.Now().Add(o.start).Truncate(time.Second)
	e := &matrixEnv{t: t, clk: testingclock.NewFakeClock(start), start: start, srv: srv, next: map[string]time.Time{}}
	e.store, e.acme = host.NewMemoryStore(e.clk), acmeclient.NewMemoryStore()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	cfg := srv.ClientConfig(key)
	hc := *cfg.HTTPClient
	e.wire = &wire{base: hc.Transport, seen: map[string]int{}}
	hc.Transport, hc.Timeout = e.wire, 5*time.Second
	cfg.HTTPClient, cfg.Clock = &hc, e.clk
	client, err := acmeclient.New(cfg)
	require.NoError(t, err)
	icfg := acmeclient.IssuerConfig{Client: client, Store: e.acme, Solvers: srv.Solvers(),
		Account: acmeclient.AccountOptions{AgreeToTerms: true}, RequestValidity: o.requestValidity, Profile: o.profile}
	if icfg.Profile == "" {
		icfg.Profile = "default"
	}
	if o.tune != nil {
		o.tune(&icfg)
	}
	e.issuer, err = acmeclient.NewIssuer(icfg)
	require.NoError(t, err)
	var iss certificate.Issuer = e.issuer
	if o.wrap != nil {
		iss = o.wrap(e.issuer)
	}
	e.loop, err = host.New(host.Config{Store: hosttest.CheckReadOnly(t, e.store), Clock: e.clk,
		Issuers: map[certificate.IssuerRef]certificate.Issuer{{Name: "pebble"}: iss},
		Observe: e.observe})
	require.NoError(t, err)
	return e
}

func (e *matrixEnv) observe(ev host.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.next[string(ev.Kind)+"/"+ev.Name] = ev.Next
	line := fmt.Sprintf("%8v %s %s", ev.Time.Sub(e.start).Round(time.Millisecond), ev.Kind, ev.Name)
	if ev.Result != nil {
		line += " " + ev.Result.Reason + ": " + ev.Result.Message
	}
	if ev.Request != nil {
		if c := ev.Request.Condition(certificate.RequestConditionReady); c != nil {
			line += " " + c.Reason + ": " + c.Message
		}
	}
	if ev.Err != nil {
		line += " error: " + ev.Err.Error()
	}
	e.log = append(e.log, line)
}

func (e *matrixEnv) create(name string, dns ...string) {
	_, err := e.store.Certificates().Create(context.Background(), &certificate.Certificate{
		ObjectMeta: certificate.ObjectMeta{Namespace: "default", Name: name},
		Spec: certificate.Spec{SecretName: name + "-tls", DNSNames: dns, IssuerRef: certificate.IssuerRef{Name: "pebble"},
			PrivateKey: &keys.KeySpec{Algorithm: keys.AlgorithmECDSA}},
	})
	require.NoError(e.t, err)
}

func (e *matrixEnv) cert(name string) *certificate.Certificate {
	c, err := e.store.Certificates().Get(context.Background(), "default", name)
	require.NoError(e.t, err)
	return c
}

func (e *matrixEnv) update(name string, change func(*certificate.Certificate)) {
	c := e.cert(name)
	change(c)
	_, err := e.store.Certificates().Update(context.Background(), c)
	require.NoError(e.t, err)
}

// run steps the loop on the fake clock until done holds, or fails the
// row when more than bound of fake time passes first. After every step
// it checks that no certificate waits without a deadline.
func (e *matrixEnv) run(what string, bound time.Duration, done func() bool) time.Duration {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	from := e.clk.Now()
	for {
		_, err := e.loop.Step(ctx)
		require.NoError(e.t, err, "%s: the loop stopped (%s)", what, e.tail())
		e.checkDeadlines(what)
		if done() {
			return e.clk.Now().Sub(from)
		}
		next, ok := e.loop.Next()
		require.True(e.t, ok, "%s: nothing is queued and it is not done (%s)", what, e.tail())
		require.False(e.t, next.After(from.Add(bound)), "%s: not done within %v: the next thing is due at +%v (%s)", what, bound, next.Sub(from), e.tail())
		if now := e.clk.Now(); next.After(now) {
			if e.issuing() {
				// Pebble works on the real clock: while an issuer is at
				// work, the fake clock moves no faster than the real one
				// for waits of a poll's length (longer ones, retries after
				// failures, it jumps).
				pause := next.Sub(now)
				if pause > 5*time.Second {
					pause = 0
				}
				select {
				case <-ctx.Done():
					e.t.Fatalf("%s: more than 90 s of real time (%s)", what, e.tail())
				case <-time.After(pause):
				}
			}
			e.clk.SetTime(next)
		}
	}
}

// issuing reports a request no issuer has answered yet.
func (e *matrixEnv) issuing() bool {
	reqs, err := e.store.Requests().List(context.Background(), host.ListOptions{})
	require.NoError(e.t, err)
	for _, r := range reqs {
		if !certificate.Answered(r) {
			return true
		}
	}
	return false
}

// checkDeadlines: every certificate that is not Ready, or is issuing,
// says why (a condition with a reason and a message) and has a time it
// is looked at again — its own, or that of a request of its that no
// issuer has answered.
func (e *matrixEnv) checkDeadlines(what string) {
	ctx := context.Background()
	certs, err := e.store.Certificates().List(ctx, host.ListOptions{})
	require.NoError(e.t, err)
	for _, c := range certs {
		ready := c.Status.Condition(certificate.ConditionReady)
		iss := c.Status.Condition(certificate.ConditionIssuing)
		if ready != nil && ready.Status == certificate.StatusTrue && (iss == nil || iss.Status != certificate.StatusTrue) {
			continue
		}
		if ready == nil && iss == nil {
			continue // not decided on yet: it is queued
		}
		var why *certificate.Condition
		for _, cond := range []*certificate.Condition{iss, ready} {
			if cond != nil && cond.Status != certificate.StatusTrue || cond == iss && cond != nil {
				why = cond
				break
			}
		}
		require.NotNil(e.t, why, "%s: certificate %s waits without saying why", what, c.Name)
		require.NotEmpty(e.t, why.Reason, "%s: certificate %s: %s has no reason", what, c.Name, why.Type)
		require.NotEmpty(e.t, why.Message, "%s: certificate %s: %s has no message", what, c.Name, why.Type)
		deadline, _ := e.loop.NextFor(host.KindCertificate, c.Namespace, c.Name)
		reqs, err := e.store.Requests().List(ctx, host.ListOptions{OwnerUID: c.UID})
		require.NoError(e.t, err)
		for _, r := range reqs {
			if n, ok := e.loop.NextFor(host.KindRequest, r.Namespace, r.Name); ok && !certificate.Answered(r) && (deadline.IsZero() || n.Before(deadline)) {
				deadline = n
			}
		}
		require.False(e.t, deadline.IsZero(), "%s: certificate %s waits (%s %s: %s) with no time it is looked at again (%s)", what, c.Name, why.Type, why.Reason, why.Message, e.tail())
	}
}

func (e *matrixEnv) tail() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.tailLocked()
}

func (e *matrixEnv) tailLocked() string {
	from := max(0, len(e.log)-8)
	return "last passes:\n" + strings.Join(e.log[from:], "\n")
}

func (e *matrixEnv) ready(name string) func() bool {
	return func() bool {
		c := e.cert(name)
		iss := c.Status.Condition(certificate.ConditionIssuing)
		return ready(c) && iss == nil
	}
}

func (e *matrixEnv) revision(name string, rev int) func() bool {
	return func() bool { return e.ready(name)() && revision(e.cert(name)) >= rev }
}

// failedWith: the certificate recorded a failed issuance whose Issuing
// condition carries reason and a message containing words, and its
// next attempt is due.
func (e *matrixEnv) failedWith(name, reason, words string) func() bool {
	return func() bool {
		c := e.cert(name)
		iss := c.Status.Condition(certificate.ConditionIssuing)
		return iss != nil && iss.Status == certificate.StatusFalse && iss.Reason == reason && strings.Contains(iss.Message, words) && c.Status.LastFailureTime != nil
	}
}

// nextAttempt is when the certificate is looked at again, once the
// passes due now are done.
func (e *matrixEnv) nextAttempt(name string) time.Time {
	_, err := hosttest.Settle(context.Background(), e.loop, 50)
	require.NoError(e.t, err)
	t, _ := e.loop.NextFor(host.KindCertificate, "default", name)
	return t
}

// advance runs the loop up to the fake time to, checking deadlines all
// the way.
func (e *matrixEnv) advance(what string, to time.Time) {
	e.t.Helper()
	e.run(what, to.Sub(e.clk.Now())+time.Second, func() bool {
		next, ok := e.loop.Next()
		if !ok || next.After(to) {
			e.clk.SetTime(to)
			return true
		}
		return false
	})
	_, err := hosttest.Settle(context.Background(), e.loop, 50)
	require.NoError(e.t, err)
}

// noStateOutlivesItsRequest settles the issuer past its clean-up bounds
// and checks that every ACME state left belongs to a request that
// exists, and that nothing a gone state presented is still served.
func (e *matrixEnv) noStateOutlivesItsRequest() {
	e.t.Helper()
	ctx := context.Background()
	e.clk.Step(20 * time.Minute) // past KeepAnswered (10 min) and StaleAfter (15 min)
	_, err := hosttest.Settle(ctx, e.loop, 50)
	require.NoError(e.t, err)
	states, err := e.acme.List(ctx)
	require.NoError(e.t, err)
	for key, st := range states {
		_, err := e.store.Requests().Get(ctx, st.Request.Namespace, st.Request.Name)
		assert.NoError(e.t, err, "ACME state %s outlives its request %s/%s", key, st.Request.Namespace, st.Request.Name)
		assert.Nil(e.t, st.AnsweredAt, "answered ACME state %s kept past KeepAnswered", key)
	}
	assert.Zero(e.t, e.srv.HTTP01Handler().Presented(), "tokens still served for no request")
}

// leafOf is the certificate in a certificate's secret.
func (e *matrixEnv) leafOf(name string) *x509.Certificate {
	sec, err := e.store.Secrets().Get(context.Background(), "default", name+"-tls")
	require.NoError(e.t, err)
	p, err := keys.ParseSecretData(sec.Data)
	require.NoError(e.t, err)
	require.True(e.t, p.KeyMatches)
	return p.Leaf
}

// A row's outcome, for the log (and the note).
func (e *matrixEnv) report(format string, args ...any) {
	e.t.Logf("outcome: "+format, args...)
}

func TestFaultMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("the fault matrix runs Pebble for each row")
	}

	t.Run("spec change and rename mid-order", func(t *testing.T) {
		e := newMatrixEnv(t, matrixOptions{pebble: acmetest.Options{ValidationSleep: 2 * time.Second}})
		e.create("a", "a.example")
		// Pebble sleeps a random 0–1 s before it validates (its
		// PEBBLE_VA_SLEEPTIME is a maximum): at 0 the whole order can
		// finish within one step, and the spec change then comes right
		// after the issuance instead of mid-order.
		e.run("order in flight", time.Minute, func() bool { return e.srv.HTTP01Handler().Presented() > 0 || e.revision("a", 1)() })
		// The spec moves to b.example while Pebble validates a.example.
		e.update("a", func(c *certificate.Certificate) { c.Spec.DNSNames = []string{"b.example"} })
		took := e.run("renamed certificate", 5*time.Minute, e.ready("a"))
		assert.Equal(t, []string{"b.example"}, e.leafOf("a").DNSNames)
		// Another certificate for the old name is not held up by the
		// abandoned order.
		e.create("c", "a.example")
		took2 := e.run("certificate for the abandoned name", 5*time.Minute, e.ready("c"))
		e.report("spec change mid-order: Ready after %v; a new certificate for the old name Ready after %v", took.Round(time.Second), took2.Round(time.Second))
		e.noStateOutlivesItsRequest()
	})

	t.Run("renewal under a new name from the same issuer", func(t *testing.T) {
		e := newMatrixEnv(t, matrixOptions{requestValidity: true})
		e.create("a", "old.example")
		e.run("first issuance", 5*time.Minute, e.ready("a"))
		e.update("a", func(c *certificate.Certificate) { c.Spec.DNSNames = []string{"new.example"} })
		took := e.run("renamed", 5*time.Minute, e.revision("a", 2))
		assert.Equal(t, []string{"new.example"}, e.leafOf("a").DNSNames)
		// A renewal that keeps a name names what it replaces (RFC 9773 §5),
		// and Pebble accepts it.
		e.update("a", func(c *certificate.Certificate) { c.Spec.DNSNames = []string{"new.example", "www.new.example"} })
		e.run("renewed with an overlapping name", 5*time.Minute, e.revision("a", 3))
		failed := e.wire.failures("newOrder")
		e.report("rename through the same issuer: Ready after %v; %d newOrder requests for 3 revisions, %d of them failed %q",
			took.Round(time.Second), e.wire.count("newOrder"), len(failed), failed)
		// A newOrder that failed for another reason (a slow machine, a
		// bad nonce) is tried again; one refused for its replaces would
		// mention the certificate it names. Either way, one order was
		// made per revision.
		for _, f := range failed {
			assert.NotRegexp(t, `(?i)replace|identifier`, f, "an order refused for replaces")
		}
		assert.Equal(t, 3, e.wire.count("newOrder")-len(failed), "orders created for 3 revisions (%s)", strings.Join(e.log, "\n"))
		e.noStateOutlivesItsRequest()
	})

	t.Run("crash between deleting a request and telling the issuer", func(t *testing.T) {
		e := newMatrixEnv(t, matrixOptions{pebble: acmetest.Options{ValidationSleep: 2 * time.Second},
			tune: func(c *acmeclient.IssuerConfig) { c.StaleAfter = 10 * time.Second },
			wrap: func(i *acmeclient.Issuer) certificate.Issuer { return forgetful{i} }})
		e.create("a", "a.example")
		e.run("order in flight", time.Minute, func() bool { return e.srv.HTTP01Handler().Presented() > 0 })
		e.update("a", func(c *certificate.Certificate) { c.Spec.DNSNames = []string{"b.example"} })
		e.create("c", "a.example")
		took := e.run("a certificate for the orphaned name", 5*time.Minute, func() bool { return e.ready("a")() && e.ready("c")() })
		e.report("orphaned order (host never told the issuer): the name is free again and Ready after %v (StaleAfter 10s here, 15m by default)", took.Round(time.Second))
		e.noStateOutlivesItsRequest()
	})

	t.Run("a self-check that never passes", func(t *testing.T) {
		e := newMatrixEnv(t, matrixOptions{tune: func(c *acmeclient.IssuerConfig) {
			c.Solvers.HTTP01Check = neverPasses{}
			// 30 min by default; the challenge package tests the bound itself.
			c.Challenge.SelfCheckTimeout, c.Challenge.SelfCheckInterval = 10*time.Second, 2*time.Second
			c.Scheduler.MaxInFlight = 1
		}})
		e.create("a", "a.example")
		e.create("b", "b.example")
		took := e.run("self-check gives up", 10*time.Minute, func() bool {
			return e.failedWith("a", certificate.ReasonFailed, "self-check")() && e.failedWith("b", certificate.ReasonFailed, "self-check")()
		})
		// One slot: the second challenge ran only because the first gave
		// its slot back.
		for _, name := range []string{"a", "b"} {
			c := e.cert(name)
			at := e.nextAttempt(name)
			assert.WithinDuration(t, c.Status.LastFailureTime.Add(time.Hour), at, 0, "%s: the backoff's first retry is an hour after the failure", name)
		}
		e.report("self-check never passing: both certificates failed after %v with %q, next attempt in 1h", took.Round(time.Second), e.cert("a").Status.Condition(certificate.ConditionIssuing).Message)
		e.noStateOutlivesItsRequest()
	})

	t.Run("a CA's Retry-After of ten years", func(t *testing.T) {
		e := newMatrixEnv(t, matrixOptions{requestValidity: true})
		e.create("a", "a.example")
		e.update("a", func(c *certificate.Certificate) {
			c.Spec.Duration = &certificate.Duration{Duration: 30 * 24 * time.Hour}
		})
		e.run("first issuance", 5*time.Minute, e.revision("a", 1))
		notAfter := e.leafOf("a").NotAfter
		e.wire.set(func(kind string) *wireFault {
			if kind == "newOrder" {
				return &wireFault{status: http.StatusTooManyRequests, retryAfter: strconv.Itoa(10 * 365 * 24 * 3600),
					body: `{"type":"urn:ietf:params:acme:error:rateLimited","detail":"too many certificates","status":429}`}
			}
			return nil
		})
		e.clk.SetTime(e.leafOf("a").NotBefore.Add(20*24*time.Hour + time.Minute)) // renewal is due (2/3 of 30 days)
		e.run("renewal refused", 10*time.Minute, e.failedWith("a", certificate.ReasonFailed, "too many certificates"))
		at := e.nextAttempt("a")
		assert.True(t, at.Before(notAfter), "the retry (%v) comes before the certificate expires (%v)", at, notAfter)
		e.wire.set(nil)
		took := e.run("renewed before expiry", notAfter.Sub(e.clk.Now()), e.revision("a", 2))
		assert.True(t, e.clk.Now().Before(notAfter))
		e.report("Retry-After of ten years: retried %v before expiry, renewed %v after the refusal", notAfter.Sub(at).Round(time.Minute), took.Round(time.Minute))
		e.noStateOutlivesItsRequest()
	})

	t.Run("a certificate due on arrival", func(t *testing.T) {
		// The host's clock runs five days ahead of the CA's: Pebble's
		// six-day certificates arrive with more than two thirds of their
		// life behind them.
		e := newMatrixEnv(t, matrixOptions{start: 5 * 24 * time.Hour, profile: "shortlived"})
		e.create("a", "a.example")
		took := e.run("answer due on arrival", 5*time.Minute, e.failedWith("a", certificate.ReasonIssuedDueForRenewal, ""))
		first := e.wire.count("newOrder")
		// It backs off: a day later it has tried a bounded number of times.
		e.advance("a day of backoff", e.start.Add(24*time.Hour))
		tries := e.wire.count("newOrder")
		assert.LessOrEqual(t, tries, 6, "1h, 2h, 4h, 8h, 16h: at most six orders in a day")
		e.report("due on arrival: Issuing=False %s after %v; %d orders in the first day (backoff), %d at once", certificate.ReasonIssuedDueForRenewal, took.Round(time.Second), tries, first)
		// A spec whose renewal is due on arrival is refused before any
		// request is made.
		e.create("b", "b.example")
		e.update("b", func(c *certificate.Certificate) {
			c.Spec.Duration = &certificate.Duration{Duration: time.Hour}
			c.Spec.RenewBefore = &certificate.Duration{Duration: 59*time.Minute + 58*time.Second}
		})
		e.run("invalid spec", time.Minute, func() bool {
			r := e.cert("b").Status.Condition(certificate.ConditionReady)
			return r != nil && r.Reason == certificate.ReasonInvalidSpec && strings.Contains(r.Message, "spec.renewBefore")
		})
		reqs, err := e.store.Requests().List(context.Background(), host.ListOptions{OwnerUID: e.cert("b").UID})
		require.NoError(t, err)
		assert.Empty(t, reqs)
		e.noStateOutlivesItsRequest()
	})

	t.Run("a bad certificate from the CA", func(t *testing.T) {
		e := newMatrixEnv(t, matrixOptions{})
		e.create("a", "a.example")
		bad := otherKeysCertificate(t, "a.example")
		e.wire.set(func(kind string) *wireFault {
			if kind == "certificate" {
				return &wireFault{certificate: bad}
			}
			return nil
		})
		took := e.run("bad certificate", 5*time.Minute, e.failedWith("a", certificate.ReasonFailed, "key"))
		assert.Equal(t, 2, e.wire.count("newOrder"), "ordered again once before failing")
		failure := e.cert("a").Status.Condition(certificate.ConditionIssuing).Message
		e.wire.set(nil)
		took2 := e.run("after the backoff", 2*time.Hour, e.ready("a"))
		e.report("bad certificate: failed after %v having ordered twice (%q); Ready %v later, after the backoff", took.Round(time.Second), failure, took2.Round(time.Minute))
		e.noStateOutlivesItsRequest()
	})

	t.Run("a cancelled context", func(t *testing.T) {
		e := newMatrixEnv(t, matrixOptions{})
		e.create("a", "a.example")
		e.run("order created", time.Minute, func() bool { return e.wire.count("newOrder") > 0 })
		// Shutdown mid-order: the step's context ends.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := e.loop.Step(ctx)
		require.ErrorIs(t, err, context.Canceled)
		took := e.run("after the restart", 5*time.Minute, e.ready("a"))
		assert.Nil(t, e.cert("a").Status.LastFailureTime, "a cancelled step is not a failed issuance")
		assert.Equal(t, 1, e.wire.count("newOrder"), "the same order resumed")
		e.report("cancelled context: no failure recorded, the same order Ready %v later", took.Round(time.Second))
		e.noStateOutlivesItsRequest()
	})

	t.Run("a long outage", func(t *testing.T) {
		e := newMatrixEnv(t, matrixOptions{})
		_ = e.issuer // the account is registered before the outage
		e.create("warm", "warm.example")
		e.run("before the outage", 5*time.Minute, e.ready("warm"))
		outage := e.clk.Now().Add(6 * time.Hour)
		e.wire.set(func(string) *wireFault {
			if e.clk.Now().Before(outage) {
				return &wireFault{down: true}
			}
			return nil
		})
		e.create("a", "a.example")
		took := e.run("the order gives up", 2*time.Hour, e.failedWith("a", certificate.ReasonFailed, "connection refused"))
		took2 := e.run("after the outage", 12*time.Hour, e.ready("a"))
		assert.True(t, !e.clk.Now().Before(outage))
		back := e.clk.Now().Sub(outage)
		assert.LessOrEqual(t, back, 8*time.Hour+10*time.Minute, "recovered within one backoff step of the outage's end")
		e.report("6 h outage: the order failed after %v (retries), backoff thereafter; Ready %v after the outage ended (%v in all)", took.Round(time.Second), back.Round(time.Minute), (took + took2).Round(time.Minute))
		e.noStateOutlivesItsRequest()
	})
}

// neverPasses is a self-check behind split-horizon DNS: it never sees
// what the CA sees.
type neverPasses struct{}

func (neverPasses) Check(context.Context, acmeclient.Presentation) error {
	return errors.New("connection timed out: the name resolves to another address here")
}

// otherKeysCertificate is a certificate for name with a key nobody asked
// for, as a CA that mixes up its answers returns.
func otherKeysCertificate(t *testing.T, name string) []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(42), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(90 * 24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
