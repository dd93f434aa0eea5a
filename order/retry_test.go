package order

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/certlife/certlife/backoff/retry"
	"github.com/certlife/certlife/challenge"
)

// failing is an order whose last call failed transiently attempts times,
// the last at t0+at.
func failing(o *Order, attempts int, at time.Duration, err string) *Order {
	o.Status.LastError, o.Status.Transient, o.Status.FailedAttempts = err, true, attempts
	o.Status.LastErrorTime = tp(t0.Add(at))
	return o
}

func ready(o *Order) *Order {
	authorized(o)
	o.Status.State = StateReady
	return o
}

func errored(o *Order, now time.Time, msg string) Status {
	st := o.Status
	st.State, st.Reason, st.FailureTime = StateErrored, msg, tp(now)
	return st
}

// ignoreMessage compares results without their message; each case checks
// the message says why with assert.Contains.
var ignoreMessage = cmpopts.IgnoreFields(Result{}, "Message")

// Deadlines come from what the status records, so they arrive: deciding
// again at RequeueAt with nothing changed carries out the retry.
func TestRetriesArrive(t *testing.T) {
	tests := map[string]struct {
		order func() *Order
		owned func(o *Order) []*challenge.Challenge
		now   time.Duration // after t0
		cfg   Config
		want  func(o *Order) Result
		why   string // in the message
	}{
		"a transient error without Retry-After waits 5 s from when it happened, not from each look": {
			order: func() *Order { return failing(ready(newOrder()), 1, -3*time.Second, "503 Service Unavailable") },
			want: func(*Order) Result {
				return Result{RequeueAt: t0.Add(2 * time.Second), Reason: ReasonRetryingAfterError}
			},
			why: "attempt 1 of 10",
		},
		"a look one second later waits for the same deadline": {
			order: func() *Order { return failing(ready(newOrder()), 1, -3*time.Second, "503 Service Unavailable") },
			now:   time.Second,
			want: func(*Order) Result {
				return Result{RequeueAt: t0.Add(2 * time.Second), Reason: ReasonRetryingAfterError}
			},
			why: "retrying at 2026-03-01T12:00:02Z",
		},
		"at the deadline a ready order is read before it is finalized again (RFC 8555 §7.1.3)": {
			order: func() *Order { return failing(ready(newOrder()), 1, -3*time.Second, "503 Service Unavailable") },
			now:   2 * time.Second,
			want: func(o *Order) Result {
				return Result{Actions: []Action{Sync{URL: o.Status.URL}}, Reason: ReasonSyncing}
			},
			why: "reading the order before anything else",
		},
		"the delay doubles with each failed attempt": {
			order: func() *Order { return failing(ready(newOrder()), 3, 0, "429 rateLimited") },
			want: func(*Order) Result {
				return Result{RequeueAt: t0.Add(20 * time.Second), Reason: ReasonRetryingAfterError}
			},
			why: "attempt 3 of 10",
		},
		"the delay stops growing at 5 minutes": {
			order: func() *Order { return failing(ready(newOrder()), 9, 0, "timeout") },
			want: func(*Order) Result {
				return Result{RequeueAt: t0.Add(5 * time.Minute), Reason: ReasonRetryingAfterError}
			},
			why: "timeout",
		},
		"a rate limit's Retry-After is honoured, not hammered": {
			order: func() *Order {
				o := failing(ready(newOrder()), 1, 0, "too many new orders (rateLimited)")
				o.Status.RetryAfter = tp(t0.Add(time.Hour))
				return o
			},
			now:  30 * time.Minute,
			want: func(*Order) Result { return Result{RequeueAt: t0.Add(time.Hour), Reason: ReasonRetryingAfterError} },
			why:  "rateLimited",
		},
		"a Retry-After sooner than the first delay waits the first delay": {
			order: func() *Order {
				o := failing(ready(newOrder()), 1, 0, "503")
				o.Status.RetryAfter = tp(t0)
				return o
			},
			want: func(*Order) Result {
				return Result{RequeueAt: t0.Add(5 * time.Second), Reason: ReasonRetryingAfterError}
			},
			why: "retrying at",
		},
		"the tenth failed attempt fails the order, so the certificate's backoff takes over": {
			order: func() *Order { return failing(ready(newOrder()), 10, 0, "503 Service Unavailable") },
			now:   time.Hour,
			want: func(o *Order) Result {
				msg := "gave up after 10 failed attempts without progress; the last: 503 Service Unavailable"
				return Result{Actions: []Action{UpdateStatus{Status: errored(o, t0.Add(time.Hour), msg)}}, Reason: ReasonRetriesExhausted}
			},
			why: "gave up after 10 failed attempts",
		},
		"a documented smaller limit is honoured": {
			order: func() *Order { return failing(ready(newOrder()), 3, 0, "503") },
			cfg:   Config{Schedule: retry.Schedule{MaxAttempts: 3}},
			want: func(o *Order) Result {
				msg := "gave up after 3 failed attempts without progress; the last: 503"
				return Result{Actions: []Action{UpdateStatus{Status: errored(o, t0, msg)}}, Reason: ReasonRetriesExhausted}
			},
			why: "gave up",
		},
		"an order whose next attempt would come after its expiry fails, saying so": {
			order: func() *Order {
				o := failing(ready(newOrder()), 6, 0, "503")
				o.Status.Expires = tp(t0.Add(time.Minute))
				return o
			},
			want: func(o *Order) Result {
				msg := "the order expires at 2026-03-01T12:01:00Z, before its next attempt at 2026-03-01T12:02:40Z; the last error: 503"
				return Result{Actions: []Action{UpdateStatus{Status: errored(o, t0, msg)}}, Reason: ReasonOrderExpired}
			},
			why: "expires",
		},
		"a transient error recorded without its time gets one now, so the deadline stays put": {
			order: func() *Order {
				o := ready(newOrder())
				o.Status.LastError, o.Status.Transient = "503", true
				return o
			},
			want: func(o *Order) Result {
				st := o.Status
				st.LastErrorTime, st.FailedAttempts = tp(t0), 1
				return Result{Actions: []Action{UpdateStatus{Status: st}}, RequeueAt: t0.Add(5 * time.Second), Reason: ReasonRetryingAfterError}
			},
			why: "without a recorded time",
		},
		"a failed create is created again at its deadline": {
			order: func() *Order { return failing(newOrder(), 2, -10*time.Second, "connection refused") },
			want: func(o *Order) Result {
				return Result{Actions: []Action{CreateOrder{DNSNames: o.Spec.DNSNames, SpecHash: SpecHash(&o.Spec)}}, Reason: ReasonCreating}
			},
			why: "creating",
		},
		"a failed authorization read is read again at its deadline": {
			order: func() *Order { return failing(created(newOrder()), 1, -5*time.Second, "502 Bad Gateway") },
			want: func(o *Order) Result {
				return Result{Actions: []Action{GetAuthorization{URL: "https://ca/authz/a"}, GetAuthorization{URL: "https://ca/authz/b"}}, Reason: ReasonFetchingAuthorizations}
			},
			why: "fetching 2",
		},
		"a processing order whose read failed is read at the deadline, not a poll interval later": {
			order: func() *Order {
				o := failing(authorized(newOrder()), 2, -10*time.Second, "timeout")
				o.Status.State, o.Status.SyncedAt = StateProcessing, tp(t0.Add(-time.Second))
				return o
			},
			want: func(o *Order) Result {
				return Result{Actions: []Action{Sync{URL: o.Status.URL}}, Reason: ReasonSyncing}
			},
			why: "reading the order",
		},
		"a valid order without a certificate URL waits with a growing delay and says why": {
			order: func() *Order {
				o := authorized(newOrder())
				o.Status.State, o.Status.SyncedAt, o.Status.FailedAttempts = StateValid, tp(t0), 2
				return o
			},
			want: func(o *Order) Result {
				st := o.Status
				st.NoteFailure("the server says the order is valid but gives no certificate URL (RFC 8555 §7.1.3)", true, nil, t0)
				return Result{Actions: []Action{UpdateStatus{Status: st}}, RequeueAt: t0.Add(20 * time.Second), Reason: ReasonWaitingForServer}
			},
			why: "gives no certificate URL",
		},
		"a valid order without a certificate URL is read again once the delay has passed": {
			order: func() *Order {
				o := failing(authorized(newOrder()), 3, -20*time.Second, "the server says the order is valid but gives no certificate URL")
				o.Status.State, o.Status.SyncedAt = StateValid, tp(t0.Add(-20*time.Second))
				return o
			},
			want: func(o *Order) Result {
				return Result{Actions: []Action{Sync{URL: o.Status.URL}}, Reason: ReasonSyncing}
			},
			why: "reading the order",
		},
		"an order still pending when read after every challenge finished waits with a growing delay": {
			order: func() *Order {
				o := authorized(newOrder())
				o.Status.SyncedAt = tp(t0)
				return o
			},
			owned: func(o *Order) []*challenge.Challenge {
				cs := wanted(o, challenge.StateValid)
				for _, c := range cs {
					c.Status.SyncedAt = tp(t0.Add(-time.Second))
				}
				return cs
			},
			want: func(o *Order) Result {
				st := o.Status
				st.NoteFailure("every challenge is final but the server still says the order is pending", true, nil, t0)
				return Result{Actions: []Action{UpdateStatus{Status: st}}, RequeueAt: t0.Add(5 * time.Second), Reason: ReasonWaitingForServer}
			},
			why: "still says the order is pending",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := tc.order()
			var owned []*challenge.Challenge
			if tc.owned != nil {
				owned = tc.owned(o)
			}
			now := t0.Add(tc.now)
			got := Decide(o, owned, now, tc.cfg)
			if diff := cmp.Diff(tc.want(o), got, ignoreMessage); diff != "" {
				t.Fatalf("Decide() mismatch (-want +got):\n%s\nmessage: %s", diff, got.Message)
			}
			assert.Contains(t, got.Message, tc.why)
			if len(got.Actions) == 0 && !got.RequeueAt.IsZero() {
				// The deadline arrives: at RequeueAt, nothing changed,
				// the machine acts or waits for another reason.
				again := Decide(o, owned, got.RequeueAt, tc.cfg)
				assert.True(t, len(again.Actions) > 0 || (again.RequeueAt.After(got.RequeueAt) && again.Reason != got.Reason),
					"at %v: %+v", got.RequeueAt, again)
			}
		})
	}
}

// RFC 8555 §7.4: after a refused or failed finalize the order is read
// before anything is redone; a processing or valid order is followed to
// its certificate, and its challenges are kept until then.
func TestRecoveryReadsFirst(t *testing.T) {
	allValid := func(o *Order) []*challenge.Challenge { return wanted(o, challenge.StateValid) }
	tests := map[string]struct {
		order func() *Order
		owned func(o *Order) []*challenge.Challenge
		want  func(o *Order, owned []*challenge.Challenge) Result
	}{
		"a finalize refused as already finalized reads the order before anything else": {
			order: func() *Order {
				return failing(ready(newOrder()), 1, -time.Minute, "acmeclient: finalize: order already finalized (malformed); reading the order first")
			},
			owned: allValid,
			want: func(o *Order, _ []*challenge.Challenge) Result {
				return Result{Actions: []Action{Sync{URL: o.Status.URL}}, Reason: ReasonSyncing}
			},
		},
		"a finalize refused with a bare 403 on an order still pending here reads the order, never re-creating challenges": {
			order: func() *Order {
				return failing(authorized(newOrder()), 1, -time.Minute, "acmeclient: finalize: unauthorized (HTTP 403); reading the order first")
			},
			owned: allValid,
			want: func(o *Order, _ []*challenge.Challenge) Result {
				return Result{Actions: []Action{Sync{URL: o.Status.URL}}, Reason: ReasonSyncing}
			},
		},
		"an order the server is processing is polled, never sent back through its challenges": {
			order: func() *Order {
				o := authorized(newOrder())
				o.Status.State, o.Status.SyncedAt = StateProcessing, tp(t0.Add(-time.Second))
				return o
			},
			owned: allValid,
			want: func(*Order, []*challenge.Challenge) Result {
				return Result{RequeueAt: t0.Add(4 * time.Second), Reason: ReasonSyncing}
			},
		},
		"a valid order fetches its certificate and keeps its challenges until it has it (§7.4.2)": {
			order: func() *Order {
				o := authorized(newOrder())
				o.Status.State, o.Status.CertificateURL = StateValid, "https://ca/cert/1"
				return o
			},
			owned: allValid,
			want: func(*Order, []*challenge.Challenge) Result {
				return Result{Actions: []Action{FetchCertificate{URL: "https://ca/cert/1"}}, Reason: ReasonFetchingCertificate}
			},
		},
		"once the certificate is fetched, the challenges are deleted": {
			order: func() *Order {
				o, key := withCSR(newOrder())
				authorized(o)
				o.Status.State, o.Status.CertificateURL, o.Status.Certificate = StateValid, "https://ca/cert/1", selfSigned(key, o.Spec.DNSNames)
				return o
			},
			owned: allValid,
			want: func(_ *Order, owned []*challenge.Challenge) Result {
				return Result{Actions: []Action{DeleteChallenge{Name: owned[0].Name, Reason: "the order has its certificate"},
					DeleteChallenge{Name: owned[1].Name, Reason: "the order has its certificate"}}, Reason: ReasonDone}
			},
		},
		"a challenge that failed on our side fails the order with its reason": {
			order: authorizedOrder,
			owned: func(o *Order) []*challenge.Challenge {
				cs := allValid(o)
				cs[1].Status.State, cs[1].Status.Reason = challenge.StateErrored, "the challenge https://ca/chall/b-dns is not one its authorization lists"
				return cs
			},
			want: func(o *Order, _ []*challenge.Challenge) Result {
				msg := "the challenge for *.web.example failed: the challenge https://ca/chall/b-dns is not one its authorization lists"
				return Result{Actions: []Action{UpdateStatus{Status: errored(o, t0, msg)}}, Reason: ReasonChallengeFailed}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := tc.order()
			owned := tc.owned(o)
			got := Decide(o, owned, t0, Config{})
			if diff := cmp.Diff(tc.want(o, owned), got, ignoreMessage); diff != "" {
				t.Fatalf("Decide() mismatch (-want +got):\n%s\nmessage: %s", diff, got.Message)
			}
			for _, a := range got.Actions {
				_, recreate := a.(CreateChallenge)
				require.False(t, recreate, "a recovered order re-created a challenge: %v", got.Actions)
			}
		})
	}
}

func authorizedOrder() *Order { return authorized(newOrder()) }

// The common name is an identifier (seed 002); an IP address is an IP
// identifier (RFC 8738), never a DNS name.
func TestIdentifiers(t *testing.T) {
	tests := map[string]struct {
		spec            Spec
		dns, ips        []string
		problemContains string
	}{
		"an order with only a common name asks for it": {
			spec: Spec{CommonName: "only.example"}, dns: []string{"only.example"},
		},
		"a common name already among the DNS names is not asked twice, whatever its case": {
			spec: Spec{CommonName: "WWW.example.", DNSNames: []string{"www.example", "api.example"}}, dns: []string{"www.example", "api.example"},
		},
		"a common name beside other names is added to them": {
			spec: Spec{CommonName: "cn.example", DNSNames: []string{"www.example"}}, dns: []string{"www.example", "cn.example"},
		},
		"an IP address common name becomes an IP identifier, never a DNS name": {
			spec: Spec{CommonName: "192.0.2.7", DNSNames: []string{"www.example"}}, dns: []string{"www.example"}, ips: []string{"192.0.2.7"},
		},
		"an IPv6 common name already among the addresses is not asked twice": {
			spec: Spec{CommonName: "2001:db8::1", IPAddresses: []string{"2001:0db8:0:0:0:0:0:1"}}, ips: []string{"2001:0db8:0:0:0:0:0:1"},
		},
		"an address that does not parse is an error naming the field and value": {
			spec: Spec{DNSNames: []string{"a.example"}, IPAddresses: []string{"192.0.2.1", "300.1.1.1"}}, problemContains: `spec.ipAddresses[1]: "300.1.1.1" is not an IP address`,
		},
		"no identifier at all is an error that says what to set": {
			spec: Spec{}, problemContains: "set spec.commonName, spec.dnsNames or spec.ipAddresses",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			dns, ips, problem := Identifiers(&tc.spec)
			if tc.problemContains != "" {
				assert.Contains(t, problem, tc.problemContains)
				return
			}
			require.Empty(t, problem)
			assert.Equal(t, tc.dns, dns)
			assert.Equal(t, tc.ips, ips)
		})
	}
}

// Through the machine: an order with only an IP common name creates an
// order for an IP identifier.
func TestDecideCreatesAnIPIdentifierForAnIPCommonName(t *testing.T) {
	o := &Order{Name: "ip", CreationTimestamp: t0, Spec: Spec{CSR: []byte{0x30, 0x00}, CommonName: "192.0.2.7",
		Solvers: []SolverConfig{{Solver: http01}}}}
	got := Decide(o, nil, t0, Config{})
	want := Result{Actions: []Action{CreateOrder{IPAddresses: []string{"192.0.2.7"}, SpecHash: SpecHash(&o.Spec)}}, Reason: ReasonCreating}
	if diff := cmp.Diff(want, got, ignoreMessage); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

// Solver choice uses only the challenge types the authorization offers.
func TestSolverChoiceAmongOfferedTypes(t *testing.T) {
	o := authorized(newOrder())
	// The HTTP-01 solver names web.example exactly; the DNS-01 one is the
	// default. The server offers only DNS-01 for web.example.
	o.Spec.Solvers = []SolverConfig{{Selector: &Selector{DNSNames: []string{"web.example"}}, Solver: http01}, {Solver: dns01}}
	o.Status.SpecHash = SpecHash(&o.Spec)
	o.Status.Authorizations[0].Challenges = o.Status.Authorizations[0].Challenges[1:]
	got := Decide(o, nil, t0, Config{})
	require.Equal(t, ReasonManagingChallenges, got.Reason, got.Message)
	for _, a := range got.Actions {
		c := a.(CreateChallenge).Challenge
		assert.Equal(t, challenge.TypeDNS01, c.Spec.Type, "%s", c.Name)
		assert.NotNil(t, c.Spec.Solver.DNS01, "%s", c.Name)
	}

	// Offered only a type no solver has: the order fails saying what the
	// server offers.
	o.Spec.Solvers = []SolverConfig{{Solver: http01}}
	o.Status.SpecHash = SpecHash(&o.Spec)
	got = Decide(o, nil, t0, Config{})
	require.Equal(t, ReasonNoSolver, got.Reason)
	assert.Contains(t, got.Message, "no solver applies to web.example among the challenge types the server offers for it (dns-01)")
}

// Selector matching as ChooseSolver documents it: wildcards, zones, both
// conditions, offered types, and ties.
func TestChooseSolverMatching(t *testing.T) {
	sel := func(names, zones []string, labels map[string]string) *Selector {
		return &Selector{DNSNames: names, DNSZones: zones, MatchLabels: labels}
	}
	dnsA := challenge.Solver{DNS01: &challenge.DNS01Solver{Provider: "a"}}
	dnsB := challenge.Solver{DNS01: &challenge.DNS01Solver{Provider: "b"}}
	dnsC := challenge.Solver{DNS01: &challenge.DNS01Solver{Provider: "c"}}
	httpA := challenge.Solver{HTTP01: &challenge.HTTP01Solver{Options: map[string]string{"n": "a"}}}
	both := []challenge.Type{challenge.TypeHTTP01, challenge.TypeDNS01}
	tests := map[string]struct {
		solvers  []SolverConfig
		name     string
		wildcard bool
		offered  []challenge.Type
		labels   map[string]string
		want     *challenge.Solver // nil: none applies
	}{
		"a wildcard matches a *.example.com entry in dnsNames": {
			solvers: []SolverConfig{{Solver: dnsA}, {Selector: sel([]string{"*.example.com"}, nil, nil), Solver: dnsB}},
			name:    "example.com", wildcard: true, offered: both, want: &dnsB,
		},
		"the bare example.com entry does not select for the wildcard": {
			solvers: []SolverConfig{{Solver: dnsA}, {Selector: sel([]string{"example.com"}, nil, nil), Solver: dnsB}},
			name:    "example.com", wildcard: true, offered: both, want: &dnsA,
		},
		"the *.example.com entry does not select for the bare name": {
			solvers: []SolverConfig{{Solver: dnsA}, {Selector: sel([]string{"*.example.com"}, nil, nil), Solver: dnsB}},
			name:    "example.com", offered: both, want: &dnsA,
		},
		"a zone holds the wildcard of its apex, by suffix": {
			solvers: []SolverConfig{{Selector: sel(nil, []string{"example.com"}, nil), Solver: dnsB}},
			name:    "example.com", wildcard: true, offered: both, want: &dnsB,
		},
		"a zone holds a wildcard below it": {
			solvers: []SolverConfig{{Selector: sel(nil, []string{"example.com"}, nil), Solver: dnsB}},
			name:    "web.example.com", wildcard: true, offered: both, want: &dnsB,
		},
		"a selector with names and zones does not apply when only the name matches": {
			solvers: []SolverConfig{{Solver: dnsA}, {Selector: sel([]string{"www.example.com"}, []string{"other.org"}, nil), Solver: dnsB}},
			name:    "www.example.com", offered: both, want: &dnsA,
		},
		"a selector with names and zones does not apply when only the zone matches": {
			solvers: []SolverConfig{{Solver: dnsA}, {Selector: sel([]string{"api.example.com"}, []string{"example.com"}, nil), Solver: dnsB}},
			name:    "www.example.com", offered: both, want: &dnsA,
		},
		"a selector with names and zones applies when both match, ahead of a zone-only one": {
			solvers: []SolverConfig{{Selector: sel(nil, []string{"www.example.com"}, nil), Solver: dnsA},
				{Selector: sel([]string{"www.example.com"}, []string{"example.com"}, nil), Solver: dnsB}},
			name: "www.example.com", offered: both, want: &dnsB,
		},
		"a name match beats a longer zone": {
			solvers: []SolverConfig{{Selector: sel(nil, []string{"www.example.com"}, nil), Solver: dnsA},
				{Selector: sel([]string{"www.example.com"}, nil, nil), Solver: dnsB}},
			name: "www.example.com", offered: both, want: &dnsB,
		},
		"between two name matches the one with more labels wins": {
			solvers: []SolverConfig{{Selector: sel([]string{"www.example.com"}, nil, nil), Solver: dnsA},
				{Selector: sel([]string{"www.example.com"}, nil, map[string]string{"team": "x"}), Solver: dnsB}},
			name: "www.example.com", offered: both, labels: map[string]string{"team": "x"}, want: &dnsB,
		},
		"a full tie goes to the first in list order": {
			solvers: []SolverConfig{{Selector: sel(nil, []string{"example.com"}, nil), Solver: dnsA},
				{Selector: sel(nil, []string{"example.com"}, nil), Solver: dnsC}},
			name: "www.example.com", offered: both, want: &dnsA,
		},
		"only offered types are considered: a DNS-01-only authorization never picks HTTP-01": {
			solvers: []SolverConfig{{Selector: sel([]string{"www.example.com"}, nil, nil), Solver: httpA}, {Solver: dnsA}},
			name:    "www.example.com", offered: []challenge.Type{challenge.TypeDNS01}, want: &dnsA,
		},
		"no offered type has a solver: none applies": {
			solvers: []SolverConfig{{Solver: httpA}},
			name:    "www.example.com", offered: []challenge.Type{challenge.TypeDNS01},
		},
		"an IP address is never solved with DNS-01 (RFC 8738 §7) and zones never hold it": {
			solvers: []SolverConfig{{Solver: dnsA}, {Selector: sel(nil, []string{"2.0.192"}, nil), Solver: httpA}},
			name:    "192.0.2.7", offered: both,
		},
		"an IP address takes the HTTP-01 default": {
			solvers: []SolverConfig{{Solver: dnsA}, {Solver: httpA}},
			name:    "192.0.2.7", offered: both, want: &httpA,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := ChooseSolver(tc.solvers, tc.name, tc.wildcard, tc.offered, tc.labels)
			if tc.want == nil {
				require.False(t, ok, "chose %+v", got)
				return
			}
			require.True(t, ok)
			if diff := cmp.Diff(*tc.want, got); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

// processing is an order the server is issuing (RFC 8555 §7.1.6), read at
// t0+read, found changed at t0+changed.
func processing(read, changed time.Duration) *Order {
	o := authorized(newOrder())
	o.Status.State = StateProcessing
	o.Status.SyncedAt = tp(t0.Add(read))
	o.Status.ChangedAt = tp(t0.Add(changed))
	return o
}

// A poll comes soon after a change and later while nothing changes: the
// first FirstPoll after the call that moved the order on, each next one as
// long after the last as the order had then been unchanged (so the waits
// double), never longer than PollInterval apart; the server's Retry-After
// is followed, but never sooner than FirstPoll after the read.
func TestPollsStartSoonAndSlowDownWhileNothingChanges(t *testing.T) {
	ms := time.Millisecond
	tests := map[string]struct {
		order func() *Order
		cfg   Config
		want  time.Duration // RequeueAt after t0
	}{
		"the first read 200 ms after the finalize that made it processing": {
			order: func() *Order { return processing(0, 0) }, want: 200 * ms,
		},
		"a read 200 ms after the change that found nothing new: the next 200 ms later": {
			order: func() *Order { return processing(200*ms, 0) }, want: 400 * ms,
		},
		"then 400 ms later": {
			order: func() *Order { return processing(400*ms, 0) }, want: 800 * ms,
		},
		"then a second later": {
			order: func() *Order { return processing(1000*ms, 0) }, want: 2000 * ms,
		},
		"never more than PollInterval apart": {
			order: func() *Order { return processing(time.Minute, 0) }, want: time.Minute + 5*time.Second,
		},
		"a configured first poll and interval": {
			order: func() *Order { return processing(0, 0) }, cfg: Config{Schedule: retry.Schedule{FirstPoll: time.Second, PollInterval: 30 * time.Second}}, want: time.Second,
		},
		"a first poll longer than the interval waits the interval": {
			order: func() *Order { return processing(0, 0) }, cfg: Config{Schedule: retry.Schedule{FirstPoll: time.Second, PollInterval: 20 * ms}}, want: 20 * ms,
		},
		"without a recorded change the reads are PollInterval apart": {
			order: func() *Order { o := processing(0, 0); o.Status.ChangedAt = nil; return o }, want: 5 * time.Second,
		},
		"the server's Retry-After is followed when later (RFC 8555 §7.4, RFC 9110 §10.2.3)": {
			order: func() *Order { o := processing(0, 0); o.Status.RetryAfter = tp(t0.Add(3 * time.Second)); return o }, want: 3 * time.Second,
		},
		"the server's Retry-After is followed when sooner than the growing wait": {
			order: func() *Order {
				o := processing(time.Minute, 0)
				o.Status.RetryAfter = tp(t0.Add(time.Minute + time.Second))
				return o
			},
			want: time.Minute + time.Second,
		},
		"a Retry-After of 0 never makes reads come sooner than the first poll": {
			order: func() *Order { o := processing(0, 0); o.Status.RetryAfter = tp(t0); return o }, want: 200 * ms,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := tc.order()
			now := *o.Status.SyncedAt
			got := Decide(o, nil, now, tc.cfg)
			want := Result{RequeueAt: t0.Add(tc.want), Reason: ReasonSyncing}
			if diff := cmp.Diff(want, got, ignoreMessage); diff != "" {
				t.Fatalf("Decide() mismatch (-want +got):\n%s\nmessage: %s", diff, got.Message)
			}
			checkLiveness(t, got, now, func(now time.Time) Result { return Decide(o, nil, now, tc.cfg) })
			at := Decide(o, nil, got.RequeueAt, tc.cfg)
			assert.Equal(t, []Action{Sync{URL: o.Status.URL}}, at.Actions, "at its time the order is read")
		})
	}
}
