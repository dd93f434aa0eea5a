package acmeclient_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/acmeclient/acmetest"
	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/keys"
)

// paceEnv is Pebble behind a front that enforces rate limits on a fake
// clock, and an issuer on the same clock.
type paceEnv struct {
	srv    *acmetest.Server
	clock  *testingclock.FakeClock
	client *acmeclient.Client
	store  *acmeclient.MemoryStore
	issuer *acmeclient.Issuer
	limits *acmeclient.RateLimits
}

// restart is a new issuer on the same store, as after a restart.
func (e *paceEnv) restart(t *testing.T) {
	iss, err := acmeclient.NewIssuer(acmeclient.IssuerConfig{Client: e.client, Store: e.store, Solvers: e.srv.Solvers(),
		Account: acmeclient.AccountOptions{AgreeToTerms: true}, KeepAnswered: 24 * time.Hour, Limits: e.limits})
	require.NoError(t, err)
	e.issuer = iss
}

// The fake clock starts far enough in the past that the simulated months
// stay behind the wall clock Pebble dates its orders and authorizations by.
func newPaceEnv(t *testing.T, front acmetest.RateLimits, limits *acmeclient.RateLimits) *paceEnv {
	t.Helper()
	clk := testingclock.NewFakeClock(time.Now().Add(-3 * 365 * 24 * time.Hour).Truncate(time.Second))
	front.Now = clk.Now
	srv, err := acmetest.Start(acmetest.Options{AlwaysValid: true, RateLimits: &front})
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	accountKey, err := keys.Generate(rand.Reader, keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
	require.NoError(t, err)
	cc := srv.ClientConfig(accountKey)
	cc.Clock = clk
	client, err := acmeclient.New(cc)
	require.NoError(t, err)
	e := &paceEnv{srv: srv, clock: clk, client: client, store: acmeclient.NewMemoryStore(), limits: limits}
	e.restart(t)
	return e
}

// paced is one request of the simulation: when it is due, when its last
// Paced status said its order goes, and when it was answered.
type paced struct {
	r         *certificate.CertificateRequest
	due       time.Time
	announced time.Time
	changed   int           // times the announced time moved
	moved     time.Duration // by how much at most
	issued    time.Time
}

// run is the host loop on the fake clock: every request due is answered
// at the clock's time, then the clock moves to the earliest next time.
// Each Paced status is checked to say when, and that time is when Answer
// asks to be called again.
func (e *paceEnv) run(t *testing.T, reqs []*paced) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, p := range reqs {
		p.due = e.clock.Now()
	}
	for left := len(reqs); left > 0; {
		now := e.clock.Now()
		var next time.Time
		for _, p := range reqs {
			if !p.issued.IsZero() {
				continue
			}
			if !p.due.After(now) {
				at, err := e.issuer.Answer(ctx, p.r, now)
				require.NoError(t, err)
				ready := p.r.Condition(certificate.RequestConditionReady)
				require.NotNil(t, ready)
				if certificate.Answered(p.r) {
					require.Equal(t, certificate.StatusTrue, ready.Status, "%s: %s", p.r.Name, ready.Message)
					p.issued = now
					left--
					continue
				}
				if strings.HasPrefix(ready.Message, acmeclient.ReasonPaced+": ") {
					require.True(t, strings.Contains(ready.Message, "next slot at "+at.UTC().Format(time.RFC3339)) ||
						strings.Contains(ready.Message, "looked at again at "+at.UTC().Format(time.RFC3339)),
						"%s waits until %v, and its status says so: %s", p.r.Name, at, ready.Message)
					if !p.announced.IsZero() && !p.announced.Equal(at) {
						p.changed++
						p.moved = max(p.moved, at.Sub(p.announced).Abs())
					}
					p.announced = at
				}
				require.False(t, at.IsZero())
				p.due = at
			}
			if next.IsZero() || p.due.Before(next) {
				next = p.due
			}
		}
		if left > 0 {
			require.False(t, next.Before(now))
			e.clock.SetTime(next)
		}
		require.NoError(t, ctx.Err(), "the simulation ran out of time")
	}
}

func newPaced(t *testing.T, n int, domain string) []*paced {
	reqs := make([]*paced, n)
	for k := range reqs {
		r, _ := newRequest(t, fmt.Sprintf("sub-%04d", k), fmt.Sprintf("sub-%04d.%s", k, domain))
		reqs[k] = &paced{r: r}
	}
	return reqs
}

// gcra is the test's own token bucket, to compute the schedule the
// limits allow: tat is when the bucket is full again.
type gcra struct {
	lim acmeclient.Limit
	tat time.Time
}

func (g *gcra) earliest(now time.Time) time.Time {
	iv := g.lim.Window / time.Duration(g.lim.Count)
	if at := g.tat.Add(-(g.lim.Window - iv)); at.After(now) {
		return at
	}
	return now
}

func (g *gcra) take(at time.Time) {
	g.tat = maxOf(g.tat, at).Add(g.lim.Window / time.Duration(g.lim.Count))
}

func maxOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// 1,000 certificates for subdomains of one registered domain, against a
// CA that enforces (scaled down) an orders-per-account limit and a
// certificates-per-registered-domain limit: the issuer sends no order the
// CA refuses, each certificate is ordered at the earliest time the limits
// allow (the orders limit binds first, then the domain's), and every
// waiting request's status says when its order goes.
func TestPacingIssuesAThousandCertificatesWithoutARefusal(t *testing.T) {
	n := 1000
	if testing.Short() {
		n = 200
	}
	orders := acmeclient.Limit{Count: 20, Window: 3 * time.Hour}
	perDomain := acmeclient.Limit{Count: 50, Window: 7 * 24 * time.Hour}
	limits := &acmeclient.RateLimits{OrdersPerAccount: orders, CertificatesPerRegisteredDomain: perDomain,
		CertificatesPerExactSet: acmeclient.Limit{Count: 5, Window: 7 * 24 * time.Hour}}
	e := newPaceEnv(t, acmetest.RateLimits{OrdersPerAccount: orders, CertificatesPerRegisteredDomain: perDomain,
		CertificatesPerExactSet: acmeclient.Limit{Count: 5, Window: 7 * 24 * time.Hour}}, limits)
	reqs := newPaced(t, n, "fleet.example.com")
	start := e.clock.Now()
	e.run(t, reqs)

	assert.Empty(t, e.srv.RateLimitRefusals(), "no order or finalize refused for a rate limit")
	sent := e.srv.OrdersAccepted()
	require.Len(t, sent, n, "one order per certificate")
	issued := e.srv.Issuances()
	require.Len(t, issued, n)

	// The schedule the limits allow, had each order been issued the
	// moment it was sent.
	o, d := &gcra{lim: orders}, &gcra{lim: perDomain}
	at := start
	var worst time.Duration
	changed, moved := 0, time.Duration(0)
	for k := range n {
		at = maxOf(at, maxOf(o.earliest(at), d.earliest(at)))
		o.take(at)
		d.take(at)
		require.False(t, sent[k].Before(at), "order %d sent at %v, before the limits allow it (%v)", k, sent[k], at)
		worst = max(worst, sent[k].Sub(at))
		if k >= orders.Count { // the first are sent at once and may finish in any order
			want := fmt.Sprintf("sub-%04d.fleet.example.com", k)
			assert.Equal(t, want, issued[k].Names, "certificates are issued in the order they were asked for")
		}
		changed += reqs[k].changed
		moved = max(moved, reqs[k].moved)
	}
	assert.LessOrEqual(t, worst, 2*time.Second, "every order goes at the earliest time the limits allow, give or take the time the orders before it took")
	assert.LessOrEqual(t, moved, 2*time.Second, "a waiting request's announced time is corrected by the time orders took to be issued, no more")
	last := issued[n-1].At.Sub(start)
	t.Logf("%d certificates: %d orders sent, %d refused; the last ordered %v after the first (the limits' minimum %v, %v later at most), issued at %v; announced slots moved %d times, by %v at most",
		n, len(sent), len(e.srv.RateLimitRefusals()), sent[n-1].Sub(start).Round(time.Second), at.Sub(start).Round(time.Second), worst.Round(time.Second), last.Round(time.Second), changed, moved)
	for k, p := range reqs {
		if k >= orders.Count { // the first are sent at once
			require.False(t, p.announced.IsZero(), "request %d waited without saying when", k)
		}
	}
}

// A CA whose limit is lower than the issuer's configuration refuses the
// first order past it; that refusal teaches the issuer (the CA's count and
// window from its words, the slot from its Retry-After): the order waits
// Pending rather than failing, and no other is refused.
func TestPacingLearnsALowerLimitFromTheFirstRefusal(t *testing.T) {
	caOrders := acmeclient.Limit{Count: 10, Window: 3 * time.Hour}
	e := newPaceEnv(t, acmetest.RateLimits{OrdersPerAccount: caOrders},
		&acmeclient.RateLimits{OrdersPerAccount: acmeclient.Limit{Count: 20, Window: 3 * time.Hour}})
	const n = 40
	reqs := newPaced(t, n, "learn.example.org")
	start := e.clock.Now()
	e.run(t, reqs)

	refusals := e.srv.RateLimitRefusals()
	require.Len(t, refusals, 1, "the first refusal teaches the issuer; no other follows: %v", refusals)
	assert.Contains(t, refusals[0].Detail, "too many new orders (10)")
	sent := e.srv.OrdersAccepted()
	require.Len(t, sent, n)
	o := &gcra{lim: caOrders}
	at := start
	for k := range n {
		at = maxOf(at, o.earliest(at))
		o.take(at)
		assert.False(t, sent[k].Before(at), "order %d", k)
		assert.Less(t, sent[k].Sub(at), time.Minute, "order %d goes at the earliest the CA's limit allows", k)
	}
	t.Logf("%d orders sent, 1 refused; the last %v after the first (the CA's limit allows %v)", len(sent), sent[n-1].Sub(start), at.Sub(start))
}

// With no Limits configured, a CA that is not Let's Encrypt gets no
// limits of the issuer's own: orders go at once until the CA refuses one
// for a rate limit; that order waits Pending (Paced) for the CA's
// Retry-After instead of failing, and the limit the CA named paces the
// rest, so no other is refused.
func TestPacingByDefaultLearnsFromACAThatIsNotLetsEncrypt(t *testing.T) {
	caOrders := acmeclient.Limit{Count: 10, Window: 3 * time.Hour}
	e := newPaceEnv(t, acmetest.RateLimits{OrdersPerAccount: caOrders}, nil)
	const n = 30
	reqs := newPaced(t, n, "private.example.net")
	start := e.clock.Now()
	e.run(t, reqs)

	refusals := e.srv.RateLimitRefusals()
	require.Len(t, refusals, 1, "the first refusal teaches the issuer; no other follows: %v", refusals)
	sent := e.srv.OrdersAccepted()
	require.Len(t, sent, n, "every request issued, none failed")
	for k := range caOrders.Count {
		assert.Equal(t, start, sent[k], "order %d goes at once: no limit of the issuer's own", k)
	}
	assert.False(t, reqs[caOrders.Count].announced.IsZero(), "the refused order waited Paced, saying when")
}

// A limit that cannot be kept is refused by name; none is refused when
// pacing is off.
func TestPacingLimitsAreChecked(t *testing.T) {
	srv, err := acmetest.Start(acmetest.Options{})
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	accountKey, err := keys.Generate(rand.Reader, keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
	require.NoError(t, err)
	client, err := acmeclient.New(srv.ClientConfig(accountKey))
	require.NoError(t, err)
	for name, tc := range map[string]struct {
		limits *acmeclient.RateLimits
		want   string
	}{
		"negative count":   {&acmeclient.RateLimits{OrdersPerAccount: acmeclient.Limit{Count: -1, Window: time.Hour}}, "Limits.OrdersPerAccount.Count -1 is negative"},
		"no window":        {&acmeclient.RateLimits{CertificatesPerRegisteredDomain: acmeclient.Limit{Count: 50}}, "Limits.CertificatesPerRegisteredDomain.Window 0s must be positive"},
		"faster than a ns": {&acmeclient.RateLimits{CertificatesPerExactSet: acmeclient.Limit{Count: 5, Window: 2}}, "Limits.CertificatesPerExactSet: 5 per 2ns"},
		"off":              {&acmeclient.RateLimits{Disabled: true, OrdersPerAccount: acmeclient.Limit{Count: -1}}, ""},
		"defaults":         {nil, ""},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := acmeclient.NewIssuer(acmeclient.IssuerConfig{Client: client, Store: acmeclient.NewMemoryStore(), Solvers: srv.Solvers(), Limits: tc.limits})
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, acmeclient.ErrConfig)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	l := acmeclient.LetsEncryptRateLimits()
	assert.Equal(t, "300 per 3h", l.OrdersPerAccount.String())
	assert.Equal(t, "50 per 168h", l.CertificatesPerRegisteredDomain.String())
	assert.Equal(t, "5 per 168h", l.CertificatesPerExactSet.String())
	assert.Equal(t, "5 per 1h", l.FailedValidationsPerIdentifier.String())
}

// An issuer that starts again counts the orders its store still holds
// (answered within KeepAnswered, or in flight): the next order waits for
// the slot the earlier ones left, and the CA refuses none.
func TestPacingCountsTheStoresOrdersAfterARestart(t *testing.T) {
	orders := acmeclient.Limit{Count: 3, Window: 3 * time.Hour}
	e := newPaceEnv(t, acmetest.RateLimits{OrdersPerAccount: orders}, &acmeclient.RateLimits{OrdersPerAccount: orders})
	first := newPaced(t, 3, "restart.example.net")
	start := e.clock.Now()
	e.run(t, first)
	e.restart(t)
	later := newPaced(t, 1, "again.example.net")
	e.run(t, later)
	assert.Empty(t, e.srv.RateLimitRefusals())
	assert.WithinDuration(t, start.Add(time.Hour), e.srv.OrdersAccepted()[3], 0, "the fourth order waits for the slot the first three left")
	assert.WithinDuration(t, start.Add(time.Hour), later[0].announced, 0)
}
