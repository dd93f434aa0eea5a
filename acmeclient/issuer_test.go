package acmeclient_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/acmeclient/acmetest"
	"github.com/certlife/certlife/backoff/retry"
	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/challenge"
	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/order"
	"github.com/certlife/certlife/renewal"
)

// env is Pebble, an account's client, a store and an issuer at
// their defaults, as a host has them.
type env struct {
	srv    *acmetest.Server
	key    crypto.Signer // the account key
	client *acmeclient.Client
	store  *acmeclient.MemoryStore
	issuer *acmeclient.Issuer
	events []acmeclient.Event
	mu     sync.Mutex
}

func newEnv(t testing.TB, opts acmetest.Options, tune func(*acmeclient.IssuerConfig)) *env {
	t.Helper()
	srv, err := acmetest.Start(opts)
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	accountKey, err := keys.Generate(rand.Reader, keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
	require.NoError(t, err)
	client, err := acmeclient.New(srv.ClientConfig(accountKey))
	require.NoError(t, err)
	e := &env{srv: srv, key: accountKey, client: client, store: acmeclient.NewMemoryStore()}
	cfg := acmeclient.IssuerConfig{Client: client, Store: e.store, Solvers: srv.Solvers(),
		Account: acmeclient.AccountOptions{AgreeToTerms: true},
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
	return e
}

func (e *env) logEvents(t testing.TB) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ev := range e.events {
		t.Log(ev)
	}
}

// newRequest is a request as the certificate stages create it, with a CSR
// for names (an IP address goes in as one) and its key.
func newRequest(t testing.TB, name string, names ...string) (*certificate.CertificateRequest, crypto.Signer) {
	t.Helper()
	key, err := keys.Generate(rand.Reader, keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
	require.NoError(t, err)
	tmpl := keys.RequestTemplate{CommonName: names[0]}
	for _, n := range names {
		if strings.Trim(n, "0123456789.:") == "" {
			tmpl.IPAddresses = append(tmpl.IPAddresses, n)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	csr, err := keys.BuildCSR(rand.Reader, tmpl, key)
	require.NoError(t, err)
	return &certificate.CertificateRequest{
		ObjectMeta: certificate.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       certificate.RequestSpec{Request: csr, IssuerRef: certificate.IssuerRef{Name: "pebble"}},
	}, key
}

// drive is the host loop for one request: Step, and again at RequeueAt,
// until it is answered.
func drive(t testing.TB, ctx context.Context, iss *acmeclient.Issuer, r *certificate.CertificateRequest) acmeclient.Result {
	t.Helper()
	for {
		res, err := iss.Step(ctx, r)
		require.NoError(t, err)
		if res.Answered {
			return res
		}
		require.False(t, res.RequeueAt.IsZero(), "a step that did not answer says when to step again: %s", res.Message)
		if d := time.Until(res.RequeueAt); d > 0 {
			select {
			case <-ctx.Done():
				t.Fatalf("not answered: %s: %s (last error: %v)", res.Reason, res.Message, res.Err)
			case <-time.After(d):
			}
		}
	}
}

// leafOf checks an issued request: Ready with a chain to one of the
// server's roots, for key and names.
func leafOf(t testing.TB, srv *acmetest.Server, r *certificate.CertificateRequest, key crypto.Signer, names ...string) *x509.Certificate {
	t.Helper()
	ready := r.Condition(certificate.RequestConditionReady)
	require.NotNil(t, ready)
	require.Equal(t, certificate.StatusTrue, ready.Status, "%s: %s", ready.Reason, ready.Message)
	var certs []*x509.Certificate
	for rest := r.Status.Certificate; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		c, err := x509.ParseCertificate(b.Bytes)
		require.NoError(t, err)
		certs = append(certs, c)
	}
	require.GreaterOrEqual(t, len(certs), 2, "a leaf and its intermediate")
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	for _, n := range names {
		opts := x509.VerifyOptions{Roots: srv.RootPool(), Intermediates: inter}
		if strings.Trim(n, "0123456789.") != "" {
			opts.DNSName = strings.Replace(n, "*", "x", 1)
		}
		_, err := certs[0].Verify(opts)
		require.NoError(t, err, "the certificate does not verify for %s", n)
	}
	require.True(t, keys.PublicKeysEqual(certs[0].PublicKey, key.Public()), "the certificate is for another key than the CSR's")
	require.NotEmpty(t, r.Status.CA, "the request names its CA")
	return certs[0]
}

func timeout(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// A request is answered with a certificate over each challenge type, the
// machines driven at their defaults; nothing stays presented and the
// state is kept answered. RFC 8555 §7.4, §8.3, §8.4; an IP address is an
// IP identifier (RFC 8738).
func TestIssuerIssues(t *testing.T) {
	tests := map[string]struct {
		names []string
		tune  func(*acmeclient.IssuerConfig)
	}{
		"one name over HTTP-01":    {names: []string{"web.example"}},
		"three names over HTTP-01": {names: []string{"a.example", "b.example", "c.example"}},
		"a wildcard and its base name over DNS-01 (RFC 8555 §7.1.3: wildcards need DNS-01)": {
			names: []string{"*.wild.example", "wild.example"},
		},
		"every name over DNS-01 when it is the only presenter": {
			names: []string{"dns.example"},
			tune:  func(c *acmeclient.IssuerConfig) { c.Solvers.HTTP01, c.Solvers.HTTP01Check = nil, nil },
		},
		"an IP address over HTTP-01": {
			names: []string{"127.0.0.1"},
			tune:  func(c *acmeclient.IssuerConfig) { c.Solvers.HTTP01Check = nil }, // the CA dials the address; the check resolves names
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, acmetest.Options{}, tc.tune)
			r, key := newRequest(t, "web-1", tc.names...)
			res := drive(t, timeout(t), e.issuer, r)
			if t.Failed() {
				e.logEvents(t)
			}
			assert.True(t, res.Changed)
			assert.Equal(t, order.ReasonDone, res.Reason)
			leafOf(t, e.srv, r, key, tc.names...)
			assert.Zero(t, e.srv.HTTP01Handler().Presented(), "HTTP-01 tokens still served")
			assert.Empty(t, e.srv.DNS().TXT(acmeclient.DNS01Name(tc.names[0])), "DNS-01 records left behind")
			st, err := e.store.Get(context.Background(), acmeclient.RequestRef{}, acmeclient.OrderName(r))
			require.NoError(t, err)
			require.NotNil(t, st, "the answered state is kept a while")
			assert.NotNil(t, st.AnsweredAt)
			assert.Empty(t, st.Challenges, "the challenges are removed once cleaned up")
		})
	}
}

// RFC 9773 §5: a renewal names the certificate it replaces; the server
// records the replacement. A malformed identifier is answered invalid,
// naming the annotation.
func TestIssuerRenewsWithReplaces(t *testing.T) {
	e := newEnv(t, acmetest.Options{}, nil)
	ctx := timeout(t)
	r, key := newRequest(t, "web-1", "renew.example")
	drive(t, ctx, e.issuer, r)
	first := leafOf(t, e.srv, r, key, "renew.example")

	r2, key2 := newRequest(t, "web-2", "renew.example")
	markRenewal(t, r2, first)
	drive(t, ctx, e.issuer, r2)
	leafOf(t, e.srv, r2, key2, "renew.example")
	st, err := e.store.Get(ctx, acmeclient.RequestRef{}, acmeclient.OrderName(r2))
	require.NoError(t, err)
	assert.Equal(t, r2.Annotations[certificate.AnnotationReplaces], st.Order.Spec.Replaces, "the order names the replaced certificate")
	require.Eventually(t, func() bool {
		replaced, err := e.srv.Replaced(first)
		return err == nil && replaced
	}, 30*time.Second, 5*time.Millisecond, "the server did not record the replacement")

	r3, _ := newRequest(t, "web-3", "renew.example")
	r3.Annotations = map[string]string{certificate.AnnotationReplaces: "not an identifier"}
	res := drive(t, ctx, e.issuer, r3)
	assert.True(t, res.Answered)
	invalid := r3.Condition(certificate.RequestConditionInvalidRequest)
	require.NotNil(t, invalid)
	assert.Contains(t, invalid.Message, certificate.AnnotationReplaces)
	assert.Contains(t, invalid.Message, `"not an identifier"`)
}

// A restart resumes the same order: a new client and issuer on the same
// store carry the order on, with no second newOrder, and present again
// what the lost process served (an in-memory HTTP-01 handler forgets its
// tokens), saying so in the trace.
func TestIssuerRestartResumesTheSameOrder(t *testing.T) {
	// The first process never sees its self-check pass, so it never
	// accepts: the crash comes between the presentation and the accept.
	e := newEnv(t, acmetest.Options{}, func(c *acmeclient.IssuerConfig) { c.Solvers.HTTP01Check = notYet{} })
	ctx := timeout(t)
	r, key := newRequest(t, "web-1", "restart.example")
	// Step until a challenge is presented, then "crash".
	var before *acmeclient.State
	for before == nil || len(before.Challenges) == 0 || !before.Challenges[0].Status.Presented {
		res, err := e.issuer.Step(ctx, r)
		require.NoError(t, err)
		require.False(t, res.Answered, "answered before the crash")
		before, err = e.store.Get(ctx, acmeclient.RequestRef{}, acmeclient.OrderName(r))
		require.NoError(t, err)
	}
	orderURL := before.Order.Status.URL
	require.NotEmpty(t, orderURL)
	created := e.client.Transport().Counts().ByKind[acmeclient.KindNewOrder]

	// The new process: its own client (same account key), issuer and
	// HTTP-01 handler, on the same store.
	fresh := &acmeclient.HTTP01Handler{}
	e.srv.SetHTTP01Handler(fresh)
	solvers := e.srv.Solvers()
	solvers.HTTP01 = fresh
	client, err := acmeclient.New(e.srv.ClientConfig(e.key))
	require.NoError(t, err)
	var presented []acmeclient.Event
	issuer, err := acmeclient.NewIssuer(acmeclient.IssuerConfig{Client: client, Store: e.store, Solvers: solvers,
		Account: acmeclient.AccountOptions{AgreeToTerms: true},
		Trace: func(ev acmeclient.Event) {
			if ev.Reason == acmeclient.ReasonPresentedAgain {
				presented = append(presented, ev)
			}
		}})
	require.NoError(t, err)
	drive(t, ctx, issuer, r)
	require.Len(t, presented, 1, "presenting again after the restart leaves a trace")
	assert.Equal(t, "challenge/"+before.Challenges[0].Name, presented[0].Resource)
	assert.Contains(t, presented[0].Message, "restart.example")
	assert.NoError(t, presented[0].Err)
	leafOf(t, e.srv, r, key, "restart.example")
	after, err := e.store.Get(ctx, acmeclient.RequestRef{}, acmeclient.OrderName(r))
	require.NoError(t, err)
	assert.Equal(t, orderURL, after.Order.Status.URL, "the same order")
	assert.Equal(t, 1, created, "one order before the restart")
	assert.Zero(t, client.Transport().Counts().ByKind[acmeclient.KindNewOrder], "no order after it")
	assert.Zero(t, fresh.Presented(), "presented again, and cleaned up")

	// A host that crashed after the answer but before writing it steps
	// the request again: the same answer, no new order.
	again, _ := newRequest(t, "web-1", "restart.example")
	again.Spec.Request = r.Spec.Request
	client.Transport().ResetCounts()
	res, err := issuer.Step(ctx, again)
	require.NoError(t, err)
	assert.True(t, res.Answered)
	assert.Equal(t, r.Status.Certificate, again.Status.Certificate)
	assert.Zero(t, client.Transport().Counts().Total, "answered from the stored order")
}

// A request deleted before it was answered is forgotten by name, as the
// host has it when it carries out certificate.DeleteRequest: what its
// challenges present is taken down at once and its state removed. A
// request the issuer keeps nothing for is no error, nor is forgetting
// twice.
func TestIssuerForgetsByName(t *testing.T) {
	e := newEnv(t, acmetest.Options{}, func(c *acmeclient.IssuerConfig) {
		c.Solvers.HTTP01Check = notYet{} // never accepted: presented until forgotten
	})
	ctx := timeout(t)
	r, _ := newRequest(t, "deleted", "deleted.example")
	other, _ := newRequest(t, "kept", "kept.example")
	for e.srv.HTTP01Handler().Presented() < 2 {
		for _, x := range []*certificate.CertificateRequest{r, other} {
			_, err := e.issuer.Step(ctx, x)
			require.NoError(t, err)
		}
	}
	require.NoError(t, e.issuer.Forget(ctx, r.Namespace, r.Name))
	assert.Equal(t, 1, e.srv.HTTP01Handler().Presented(), "the deleted request's token is still served, or the other's is not")
	st, err := e.store.Get(ctx, acmeclient.RequestRef{}, acmeclient.OrderName(r))
	require.NoError(t, err)
	assert.Nil(t, st, "the state is still there")
	kept, err := e.store.Get(ctx, acmeclient.RequestRef{}, acmeclient.OrderName(other))
	require.NoError(t, err)
	assert.NotNil(t, kept, "another request's state went too")

	require.NoError(t, e.issuer.Forget(ctx, r.Namespace, r.Name), "forgetting twice")
	require.NoError(t, e.issuer.Forget(ctx, "elsewhere", "never-seen"), "forgetting a request never seen")
	require.NoError(t, e.issuer.Forget(ctx, "elsewhere", other.Name), "the same name in another namespace")
	kept, err = e.store.Get(ctx, acmeclient.RequestRef{}, acmeclient.OrderName(other))
	require.NoError(t, err)
	assert.NotNil(t, kept, "forgetting a name in another namespace removed this one's state")
}

func ptr[T any](v T) *T { return &v }

// markRenewal marks r as the renewal of leaf, as the certificate stages
// do for a renewal from the same issuer (certificate.CreateRequest.Replaces).
func markRenewal(t testing.TB, r *certificate.CertificateRequest, leaf *x509.Certificate) {
	t.Helper()
	id, err := renewal.CertID(leaf)
	require.NoError(t, err)
	if r.Annotations == nil {
		r.Annotations = map[string]string{}
	}
	r.Annotations[certificate.AnnotationReplaces] = id
}

// notYet is a self-check that never passes.
type notYet struct{}

// gatedCheck fails the self-check of one name until released, and passes
// every other.
type gatedCheck struct {
	name string
	once sync.Once
	open chan struct{}
}

func (g *gatedCheck) release() { g.once.Do(func() { close(g.open) }) }

func (g *gatedCheck) Check(_ context.Context, p acmeclient.Presentation) error {
	if p.Identifier != g.name {
		return nil
	}
	select {
	case <-g.open:
		return nil
	default:
		return errors.New("not served yet")
	}
}

func (notYet) Check(context.Context, acmeclient.Presentation) error {
	return errors.New("not served yet")
}

// Failures are answered through the issuer contract: failed with the
// server's words (and its Retry-After, for the certificate's backoff), or
// invalid when the request cannot be ordered at all.
func TestIssuerAnswersFailures(t *testing.T) {
	tests := map[string]struct {
		request func(t *testing.T) *certificate.CertificateRequest
		setUp   func(e *env)
		tune    func(*acmeclient.IssuerConfig)
		// want: the condition that says so and words in its message
		condition string
		words     []string
	}{
		"a wrong key authorization makes the order invalid (RFC 8555 §7.1.6)": {
			request: func(t *testing.T) *certificate.CertificateRequest {
				r, _ := newRequest(t, "bad", "bad.example")
				return r
			},
			setUp: func(e *env) {
				e.srv.SetHTTP01Handler(httpAnswer("not-the-key-authorization"))
			},
			tune:      func(c *acmeclient.IssuerConfig) { c.Solvers.HTTP01Check = nil }, // the self-check would hold it back
			condition: certificate.RequestConditionReady, words: []string{"is invalid", "key authorization"},
		},
		"a profile the server does not offer fails, naming those it does": {
			request:   func(t *testing.T) *certificate.CertificateRequest { r, _ := newRequest(t, "p", "p.example"); return r },
			tune:      func(c *acmeclient.IssuerConfig) { c.Profile = "forever" },
			condition: certificate.RequestConditionReady, words: []string{`"forever"`, "shortlived"},
		},
		"a CSR that does not parse is invalid": {
			request: func(t *testing.T) *certificate.CertificateRequest {
				r, _ := newRequest(t, "garbage", "g.example")
				r.Spec.Request = []byte("-----BEGIN CERTIFICATE REQUEST-----\nZ2FyYmFnZQ==\n-----END CERTIFICATE REQUEST-----\n")
				return r
			},
			condition: certificate.RequestConditionInvalidRequest, words: []string{"CSR"},
		},
		"a CSR with an email address is invalid for ACME": {
			request: func(t *testing.T) *certificate.CertificateRequest {
				key, err := keys.Generate(rand.Reader, keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
				require.NoError(t, err)
				csr, err := keys.BuildCSR(rand.Reader, keys.RequestTemplate{DNSNames: []string{"m.example"}, EmailAddresses: []string{"ops@m.example"}}, key)
				require.NoError(t, err)
				return &certificate.CertificateRequest{ObjectMeta: certificate.ObjectMeta{Name: "mail"}, Spec: certificate.RequestSpec{Request: csr}}
			},
			condition: certificate.RequestConditionInvalidRequest, words: []string{"email"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, acmetest.Options{}, tc.tune)
			if tc.setUp != nil {
				tc.setUp(e)
			}
			r := tc.request(t)
			res := drive(t, timeout(t), e.issuer, r)
			assert.True(t, res.Answered && res.Changed)
			ready := r.Condition(certificate.RequestConditionReady)
			require.NotNil(t, ready)
			assert.Equal(t, certificate.StatusFalse, ready.Status)
			assert.Equal(t, certificate.RequestReasonFailed, ready.Reason)
			require.NotNil(t, r.Status.FailureTime)
			c := r.Condition(tc.condition)
			require.NotNil(t, c, "no %s condition: %+v", tc.condition, r.Status.Conditions)
			for _, w := range tc.words {
				assert.Contains(t, c.Message, w)
			}
			assert.Zero(t, e.srv.HTTP01Handler().Presented(), "tokens still served after the failure")
		})
	}
}

// The issuer's config is checked field by field, so that a challenge type
// without a presenter is refused before any order needs it.
func TestNewIssuerChecksTheConfigByField(t *testing.T) {
	srv, err := acmetest.Start(acmetest.Options{})
	require.NoError(t, err)
	defer srv.Close()
	key, err := keys.Generate(rand.Reader, keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
	require.NoError(t, err)
	client, err := acmeclient.New(srv.ClientConfig(key))
	require.NoError(t, err)
	store := acmeclient.NewMemoryStore()
	dns01 := []order.SolverConfig{{Solver: challenge.Solver{DNS01: &challenge.DNS01Solver{Provider: "route53"}}}}
	tests := map[string]struct {
		cfg  acmeclient.IssuerConfig
		want []string
	}{
		"nothing set": {cfg: acmeclient.IssuerConfig{}, want: []string{"Client is required", "Store is required", "Solvers needs a presenter"}},
		"a DNS-01 solver without a DNS-01 presenter": {
			cfg:  acmeclient.IssuerConfig{Client: client, Store: store, Solvers: acmeclient.Solvers{HTTP01: &acmeclient.HTTP01Handler{}}, SolverConfigs: dns01},
			want: []string{"SolverConfigs[0] is DNS-01, but Solvers.DNS01 is nil"},
		},
		"a solver config that configures nothing": {
			cfg:  acmeclient.IssuerConfig{Client: client, Store: store, Solvers: srv.Solvers(), SolverConfigs: []order.SolverConfig{{}}},
			want: []string{"SolverConfigs[0] configures no solver"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := acmeclient.NewIssuer(tc.cfg)
			require.ErrorIs(t, err, acmeclient.ErrConfig)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// The issuer schedules the challenges itself: with one slot, the second
// request waits for it — saying when to look again, never silently — and
// both are issued.
func TestIssuerSchedulesChallengesAcrossRequests(t *testing.T) {
	// a's self-check passes only once b's challenge was seen waiting, so
	// that a holds the one slot while b is stepped, however fast Pebble
	// validates.
	gate := &gatedCheck{name: "a.example", open: make(chan struct{})}
	e := newEnv(t, acmetest.Options{}, func(c *acmeclient.IssuerConfig) {
		c.Scheduler.MaxInFlight = 1
		c.Solvers.HTTP01Check = gate
	})
	ctx := timeout(t)
	a, keyA := newRequest(t, "a", "a.example")
	b, keyB := newRequest(t, "b", "b.example")
	waited := false
	for !certificate.Answered(a) || !certificate.Answered(b) {
		next := time.Time{}
		for _, r := range []*certificate.CertificateRequest{a, b} {
			if certificate.Answered(r) {
				continue
			}
			res, err := e.issuer.Step(ctx, r)
			require.NoError(t, err)
			if res.Answered {
				continue
			}
			require.False(t, res.RequeueAt.IsZero(), "%s: no time to look again: %s", r.Name, res.Message)
			if st, _ := e.store.Get(ctx, acmeclient.RequestRef{}, acmeclient.OrderName(r)); st != nil {
				for _, c := range st.Challenges {
					waited = waited || (!c.Status.Processing && !c.Status.State.Final())
				}
			}
			if waited {
				gate.release()
			}
			if next.IsZero() || res.RequeueAt.Before(next) {
				next = res.RequeueAt
			}
		}
		require.NoError(t, ctx.Err())
		time.Sleep(time.Until(next))
	}
	assert.True(t, waited, "a challenge waited for the slot")
	leafOf(t, e.srv, a, keyA, "a.example")
	leafOf(t, e.srv, b, keyB, "b.example")
}

// A failed call's error comes back from Step, typed, and the retry is
// when the machines say: a 503 on newOrder (RFC 8555 §6.7) is retried 5 s
// after it failed, and the request is then issued.
func TestIssuerReturnsTheErrorOfACall(t *testing.T) {
	e := newFaultEnv(t)
	e.front.setScript(func(kind string, n, _ int, _ time.Time) *fault {
		if kind == "newOrder" && n == 1 {
			f := problem(503, "serverInternal", "the database is restarting")
			return &f
		}
		return nil
	})
	store := acmeclient.NewMemoryStore()
	iss, err := acmeclient.NewIssuer(acmeclient.IssuerConfig{Client: e.client, Store: store, Solvers: e.srv.Solvers()})
	require.NoError(t, err)
	r, key := newRequest(t, "web-1", "fault.example")
	ctx := timeout(t)
	res, err := iss.Step(ctx, r)
	require.NoError(t, err)
	require.False(t, res.Answered)
	require.ErrorIs(t, res.Err, acmeclient.ErrServer)
	assert.Contains(t, res.Err.Error(), "the database is restarting")
	assert.Equal(t, e.clock.Now().Add(5*time.Second), res.RequeueAt)
	assert.Contains(t, res.Message, "the database is restarting", "the message says why it waits")
	for !res.Answered {
		require.NoError(t, e.clock.wait(ctx, res.RequeueAt))
		res, err = iss.Step(ctx, r)
		require.NoError(t, err)
	}
	leafOf(t, e.srv, r, key, "fault.example")
}

// A rate limit whose retries are used up fails the request with the
// server's Retry-After (RFC 8555 §6.6), which the certificate's backoff
// waits for.
func TestIssuerFailsARateLimitedRequestWithItsRetryAfter(t *testing.T) {
	e := newFaultEnv(t)
	e.front.setScript(func(kind string, _, _ int, _ time.Time) *fault {
		if kind == "newOrder" {
			f := problem(429, "rateLimited", "too many certificates for this exact set of names")
			f.RetryAfter = "3600"
			return &f
		}
		return nil
	})
	iss, err := acmeclient.NewIssuer(acmeclient.IssuerConfig{Client: e.client, Store: acmeclient.NewMemoryStore(), Solvers: e.srv.Solvers(),
		Order:  order.Config{Schedule: retry.Schedule{MaxAttempts: 2}},
		Limits: &acmeclient.RateLimits{Disabled: true}}) // unpaced: a refusal is the order's failure
	require.NoError(t, err)
	r, _ := newRequest(t, "web-1", "limited.example")
	ctx := timeout(t)
	start := e.clock.Now()
	res, err := iss.Step(ctx, r)
	require.NoError(t, err)
	require.ErrorIs(t, res.Err, acmeclient.ErrRateLimited)
	for !res.Answered {
		require.NoError(t, e.clock.wait(ctx, res.RequeueAt))
		res, err = iss.Step(ctx, r)
		require.NoError(t, err)
	}
	ready := r.Condition(certificate.RequestConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, certificate.RequestReasonFailed, ready.Reason)
	assert.Contains(t, ready.Message, "too many certificates")
	require.NotNil(t, r.Status.RetryAfter, "the server's Retry-After reaches the request")
	assert.True(t, r.Status.RetryAfter.After(start.Add(time.Hour)), "Retry-After %v: an hour after the last refusal", r.Status.RetryAfter)
}

// Eight requests stepped at once by eight workers, as a workqueue does:
// every one is issued, and the scheduler's cap holds.
func TestIssuerStepsRequestsConcurrently(t *testing.T) {
	capped := &inFlight{MemoryStore: acmeclient.NewMemoryStore()}
	e := newEnv(t, acmetest.Options{}, func(c *acmeclient.IssuerConfig) { c.Scheduler.MaxInFlight = 3; c.Store = capped })
	ctx := timeout(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := "c" + strconv.Itoa(w)
			r, key := newRequest(t, name, name+".example")
			for {
				res, err := e.issuer.Step(ctx, r)
				if err != nil {
					errs <- err
					return
				}
				if res.Answered {
					break
				}
				time.Sleep(time.Until(res.RequeueAt))
				if ctx.Err() != nil {
					errs <- fmt.Errorf("%s not answered: %s", name, res.Message)
					return
				}
			}
			if ready := r.Condition(certificate.RequestConditionReady); ready == nil || ready.Status != certificate.StatusTrue {
				errs <- fmt.Errorf("%s: %+v", name, ready)
			}
			_ = key
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		e.logEvents(t)
	}
	assert.LessOrEqual(t, capped.max, 3, "challenges in flight at once")
	assert.Positive(t, capped.max)
}

// inFlight is a store that tracks the most challenges processing at once
// across every state it holds.
type inFlight struct {
	*acmeclient.MemoryStore
	mu  sync.Mutex
	max int
}

func (s *inFlight) Put(ctx context.Context, key string, st *acmeclient.State) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.MemoryStore.Put(ctx, key, st); err != nil {
		return err
	}
	all, err := s.MemoryStore.List(ctx)
	if err != nil {
		return err
	}
	n := 0
	for _, st := range all {
		for _, c := range st.Challenges {
			if c.Status.Processing {
				n++
			}
		}
	}
	s.max = max(s.max, n)
	return nil
}

// httpAnswer answers every request with body.
func httpAnswer(body string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, body) })
}
