package order

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/certlife/certlife/challenge"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func tp(t time.Time) *time.Time { return &t }

var (
	http01 = challenge.Solver{HTTP01: &challenge.HTTP01Solver{}}
	dns01  = challenge.Solver{DNS01: &challenge.DNS01Solver{Provider: "test"}}
)

func newOrder() *Order {
	o := &Order{Name: "web-1", CreationTimestamp: t0, Spec: Spec{
		CSR: []byte{0x30, 0x00}, Issuer: challenge.Issuer{Name: "le"}, Account: "acct",
		DNSNames: []string{"web.example", "*.web.example"},
		Solvers:  []SolverConfig{{Solver: http01}, {Selector: &Selector{DNSZones: []string{"web.example"}}, Solver: dns01}},
	}}
	return o
}

func created(o *Order) *Order {
	o.Status = Status{URL: "https://ca/order/1", FinalizeURL: "https://ca/order/1/finalize", State: StatePending, SpecHash: SpecHash(&o.Spec),
		Authorizations:    []Authorization{{URL: "https://ca/authz/a"}, {URL: "https://ca/authz/b"}},
		KeyAuthorizations: map[string]string{"ta": "ta.thumb", "tb": "tb.thumb"}}
	return o
}

func authorized(o *Order) *Order {
	created(o)
	o.Status.Authorizations = []Authorization{
		{URL: "https://ca/authz/a", Identifier: "web.example", InitialState: StatePending, Challenges: []OfferedChallenge{
			{Type: challenge.TypeHTTP01, URL: "https://ca/chall/a-http", Token: "ta"}, {Type: challenge.TypeDNS01, URL: "https://ca/chall/a-dns", Token: "ta"}}},
		{URL: "https://ca/authz/b", Identifier: "web.example", Wildcard: true, InitialState: StatePending, Challenges: []OfferedChallenge{
			{Type: challenge.TypeDNS01, URL: "https://ca/chall/b-dns", Token: "tb"}}},
	}
	return o
}

func names(acts []Action) string {
	var out []string
	for _, a := range acts {
		out = append(out, a.String())
	}
	return strings.Join(out, " ")
}

func TestDecide(t *testing.T) {
	tests := map[string]struct {
		order   func() *Order
		owned   func(o *Order) []*challenge.Challenge
		want    string // the actions' String()s
		reason  string
		requeue time.Duration
	}{
		"a new order is created with its identifiers (RFC 8555 §7.4)": {
			order: newOrder, want: "CreateOrder{[web.example *.web.example]}", reason: ReasonCreating,
		},
		"authorizations are fetched once the order exists": {
			order: func() *Order { return created(newOrder()) }, reason: ReasonFetchingAuthorizations,
			want: "GetAuthorization{https://ca/authz/a} GetAuthorization{https://ca/authz/b}",
		},
		"one challenge per authorization, the wildcard with DNS-01 (§7.1.3)": {
			order:  func() *Order { return authorized(newOrder()) },
			want:   "CreateChallenge{web-1-0 dns-01 web.example} CreateChallenge{web-1-1 dns-01 web.example}",
			reason: ReasonManagingChallenges,
		},
		"an authorization already valid gets no challenge (reuse)": {
			order: func() *Order {
				o := authorized(newOrder())
				o.Status.Authorizations[1].InitialState = StateValid
				return o
			},
			want: "CreateChallenge{web-1-0 dns-01 web.example}", reason: ReasonManagingChallenges,
		},
		"a leftover challenge is deleted": {
			order: func() *Order { return authorized(newOrder()) },
			owned: func(o *Order) []*challenge.Challenge {
				return []*challenge.Challenge{{Name: "web-1-9", Spec: challenge.Spec{URL: "x"}}}
			},
			want:   "DeleteChallenge{web-1-9: not needed by the order's authorizations} CreateChallenge{web-1-0 dns-01 web.example} CreateChallenge{web-1-1 dns-01 web.example}",
			reason: ReasonManagingChallenges,
		},
		"while challenges run, the order waits for one to change, or at the latest for its expiry (7 days when the server gave none)": {
			order:  func() *Order { return authorized(newOrder()) },
			owned:  func(o *Order) []*challenge.Challenge { return wanted(o, challenge.StatePending) },
			reason: ReasonWaitingForChallenges, requeue: 7 * 24 * time.Hour,
		},
		"while challenges run, the order waits for one to change, or at the latest for the expiry the server gave (RFC 8555 §7.1.3)": {
			order: func() *Order {
				o := authorized(newOrder())
				o.Status.Expires = tp(t0.Add(50 * time.Minute))
				return o
			},
			owned:  func(o *Order) []*challenge.Challenge { return wanted(o, challenge.StatePending) },
			reason: ReasonWaitingForChallenges, requeue: 50 * time.Minute,
		},
		"all challenges valid: finalize without reading the order first, keeping the challenges (§7.4)": {
			order: func() *Order { return authorized(newOrder()) },
			owned: func(o *Order) []*challenge.Challenge { return wanted(o, challenge.StateValid) },
			want:  "Finalize{https://ca/order/1/finalize}", reason: ReasonFinalizing,
		},
		"all challenges valid after the server said orderNotReady: read the order first (§7.1.6)": {
			order: func() *Order {
				o := authorized(newOrder())
				o.Status.LastError, o.Status.Transient = "order not ready", true
				o.Status.RetryAfter = tp(t0.Add(-time.Second))
				return o
			},
			owned: func(o *Order) []*challenge.Challenge { return wanted(o, challenge.StateValid) },
			want:  "Sync{https://ca/order/1}", reason: ReasonSyncing,
		},
		"a challenge invalid and the others valid: read the order for the server's verdict": {
			order: func() *Order { return authorized(newOrder()) },
			owned: func(o *Order) []*challenge.Challenge {
				cs := wanted(o, challenge.StateValid)
				cs[0].Status.State = challenge.StateInvalid
				return cs
			},
			want: "Sync{https://ca/order/1}", reason: ReasonSyncing,
		},
		"a processing order is polled no sooner than the server's Retry-After": {
			order: func() *Order {
				o := authorized(newOrder())
				o.Status.State, o.Status.SyncedAt = StateProcessing, tp(t0.Add(-2*time.Second))
				o.Status.RetryAfter = tp(t0.Add(20 * time.Second))
				return o
			},
			reason: ReasonSyncing, requeue: 20 * time.Second,
		},
		"a ready order is finalized with the CSR (§7.4)": {
			order: func() *Order {
				o := authorized(newOrder())
				o.Status.State = StateReady
				return o
			},
			want: "Finalize{https://ca/order/1/finalize}", reason: ReasonFinalizing,
		},
		"a valid order's certificate is fetched (§7.4.2)": {
			order: func() *Order {
				o := authorized(newOrder())
				o.Status.State, o.Status.CertificateURL = StateValid, "https://ca/cert/1"
				return o
			},
			want: "FetchCertificate{https://ca/cert/1}", reason: ReasonFetchingCertificate,
		},
		"a processing order is polled": {
			order: func() *Order {
				o := authorized(newOrder())
				o.Status.State, o.Status.SyncedAt = StateProcessing, tp(t0.Add(-2*time.Second))
				return o
			},
			reason: ReasonSyncing, requeue: 3 * time.Second,
		},
		"an invalid order records its failure time and keeps the reason": {
			order: func() *Order {
				o := authorized(newOrder())
				o.Status.State, o.Status.Reason = StateInvalid, "urn:ietf:params:acme:error:unauthorized: wrong key authorization"
				return o
			},
			want: "UpdateStatus{state=invalid}", reason: ReasonFailed, requeue: 30 * time.Minute,
		},
		"a failed order is deleted after 30 minutes (seed 002)": {
			order: func() *Order {
				o := authorized(newOrder())
				o.Status.State, o.Status.FailureTime = StateInvalid, tp(t0.Add(-31*time.Minute))
				return o
			},
			want: "DeleteOrder{failed more than 30m0s ago}", reason: ReasonFailed,
		},
		"a changed spec is an error, not followed": {
			order: func() *Order {
				o := authorized(newOrder())
				o.Spec.DNSNames = append(o.Spec.DNSNames, "new.example")
				return o
			},
			want: "UpdateStatus{state=errored}", reason: ReasonSpecChanged,
		},
		"a wildcard with only HTTP-01 solvers fails, saying what to configure": {
			order: func() *Order {
				o := authorized(newOrder())
				o.Spec.Solvers = []SolverConfig{{Solver: http01}}
				o.Status.SpecHash = SpecHash(&o.Spec)
				return o
			},
			want: "UpdateStatus{state=errored}", reason: ReasonNoSolver,
		},
		"a transient error waits for Retry-After": {
			order: func() *Order {
				o := authorized(newOrder())
				o.Status.LastError, o.Status.Transient, o.Status.RetryAfter = "429 rateLimited", true, tp(t0.Add(time.Hour))
				return o
			},
			reason: ReasonRetryingAfterError, requeue: time.Hour,
		},
		"an unknown state is not final: the authorizations are worked on": {
			order: func() *Order {
				o := authorized(newOrder())
				o.Status.State = "mystery"
				return o
			},
			want:   "CreateChallenge{web-1-0 dns-01 web.example} CreateChallenge{web-1-1 dns-01 web.example}",
			reason: ReasonManagingChallenges,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := tc.order()
			var owned []*challenge.Challenge
			if tc.owned != nil {
				owned = tc.owned(o)
			}
			res := Decide(o, owned, t0, Config{})
			var rq time.Duration
			if !res.RequeueAt.IsZero() {
				rq = res.RequeueAt.Sub(t0)
			}
			require.Equal(t, tc.want, names(res.Actions), "Decide() actions (%s)", res.Message)
			require.Equal(t, tc.reason, res.Reason, "Decide() reason (%s)", res.Message)
			require.Equal(t, tc.requeue, rq, "Decide() requeue after now (%s)", res.Message)
		})
	}
}

// wanted returns the challenges the order wants, in the given state.
func wanted(o *Order, s challenge.State) []*challenge.Challenge {
	want, _ := wantedChallenges(o)
	var out []*challenge.Challenge
	for _, c := range want {
		c := c
		c.Status.State = s
		out = append(out, &c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func TestChooseSolver(t *testing.T) {
	byName := SolverConfig{Selector: &Selector{DNSNames: []string{"a.web.example"}}, Solver: dns01}
	zoneShort := SolverConfig{Selector: &Selector{DNSZones: []string{"example"}}, Solver: http01}
	zoneLong := SolverConfig{Selector: &Selector{DNSZones: []string{"web.example"}}, Solver: dns01}
	labels := SolverConfig{Selector: &Selector{MatchLabels: map[string]string{"team": "x"}}, Solver: http01}
	def := SolverConfig{Solver: http01}
	tests := map[string]struct {
		solvers  []SolverConfig
		name     string
		wildcard bool
		labels   map[string]string
		want     string // "dns01", "http01", "none"
	}{
		"an exact DNS name wins over zones":      {[]SolverConfig{def, zoneLong, byName}, "a.web.example", false, nil, "dns01"},
		"the longest zone wins":                  {[]SolverConfig{zoneShort, zoneLong}, "b.web.example", false, nil, "dns01"},
		"a zone matches its apex":                {[]SolverConfig{def, zoneLong}, "web.example", false, nil, "dns01"},
		"a zone never matches a sibling suffix":  {[]SolverConfig{zoneLong}, "notweb.example", false, nil, "none"},
		"labels must all match":                  {[]SolverConfig{labels}, "x.example", false, map[string]string{"team": "y"}, "none"},
		"a label selector beats the default":     {[]SolverConfig{def, labels}, "x.example", false, map[string]string{"team": "x"}, "http01"},
		"the default applies when nothing else":  {[]SolverConfig{zoneLong, def}, "other.test", false, nil, "http01"},
		"wildcards skip HTTP-01 solvers":         {[]SolverConfig{def}, "web.example", true, nil, "none"},
		"names compare without case or the dot":  {[]SolverConfig{byName}, "A.Web.Example.", false, nil, "dns01"},
		"a wildcard takes the DNS-01 zone match": {[]SolverConfig{def, zoneLong}, "web.example", true, nil, "dns01"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, ok := ChooseSolver(tc.solvers, tc.name, tc.wildcard, nil, tc.labels)
			got := "none"
			if ok {
				got = map[bool]string{true: "dns01", false: "http01"}[s.DNS01 != nil]
			}
			require.Equal(t, tc.want, got, "ChooseSolver")
		})
	}
}

func allAuthorized(o *Order, owned []*challenge.Challenge) bool {
	if len(o.Status.Authorizations) == 0 {
		return false
	}
	for i, a := range o.Status.Authorizations {
		if a.InitialState == StateValid {
			continue
		}
		ok := false
		for _, c := range owned {
			ok = ok || (c.Name == ChallengeName(o.Name, i) && c.Status.State == challenge.StateValid)
		}
		if !ok {
			return false
		}
	}
	return true
}

func FuzzOrder(f *testing.F) {
	f.Add("pending", uint8(3), "web.example", true, uint8(2), int64(0), uint8(0), uint8(0), int64(0), int64(0), int64(0), int64(0), int64(0), uint8(0))
	f.Add("ready", uint8(0), "", false, uint8(0), int64(-3600), uint8(0), uint8(0), int64(0), int64(0), int64(0), int64(0), int64(0), uint8(0))
	f.Add("ready", uint8(2), "web.example", false, uint8(1), int64(0), uint8(0b0011), uint8(2), int64(-3), int64(0), int64(-1), int64(600), int64(0), uint8(0))
	f.Add("valid", uint8(1), "web.example", false, uint8(1), int64(0), uint8(0b1000), uint8(1), int64(0), int64(0), int64(-2), int64(0), int64(0), uint8(0))
	f.Add("pending", uint8(2), "web.example", false, uint8(2), int64(0), uint8(0b10000), uint8(0), int64(0), int64(0), int64(5), int64(0), int64(0), uint8(0))
	f.Add("processing", uint8(1), "web.example", false, uint8(1), int64(0), uint8(0b0111), uint8(4), int64(-30), int64(90), int64(-1), int64(100), int64(0), uint8(0))
	f.Add("processing", uint8(1), "web.example", false, uint8(1), int64(0), uint8(0b10000), uint8(0), int64(0), int64(0), int64(0), int64(0), int64(-1500), uint8(0))
	f.Add("processing", uint8(1), "web.example", false, uint8(1), int64(0), uint8(0b11000), uint8(0), int64(0), int64(3), int64(0), int64(0), int64(-250), uint8(0))
	signed, key := withCSR(newOrder())
	good := selfSigned(key, signed.Spec.DNSNames)
	f.Add("valid", uint8(1), "web.example", false, uint8(1), int64(0), uint8(0b11000000), uint8(1), int64(0), int64(0), int64(-2), int64(0), int64(0), uint8(0b1100))
	f.Add("ready", uint8(1), "web.example", false, uint8(1), int64(0), uint8(0b00000111), uint8(1), int64(-1), int64(0), int64(0), int64(0), int64(0), uint8(0b0001))
	f.Add("pending", uint8(2), "web.example", false, uint8(5), int64(0), uint8(0), uint8(0), int64(0), int64(7200), int64(0), int64(0), int64(0), uint8(0b10000))
	f.Add("", uint8(0), "", false, uint8(0), int64(0), uint8(0), uint8(0), int64(0), int64(0), int64(0), int64(0), int64(0), uint8(0b100010))
	f.Fuzz(func(t *testing.T, state string, nAuthz uint8, ident string, wildcard bool, nOwned uint8, failOff int64,
		flags, attempts uint8, errOff, retryOff, syncOff, expOff, changedOff int64, more uint8) {
		o := authorized(newOrder())
		if more&8 != 0 {
			// A CSR that parses, so a certificate can be good.
			o.Spec.CSR = signed.Spec.CSR
			o.Status.SpecHash = SpecHash(&o.Spec)
		}
		if more&32 != 0 {
			o.Status.URL = "" // not created yet
		}
		o.Status.State = State(state)
		o.Status.Authorizations = nil
		for i := 0; i < int(nAuthz%6); i++ {
			o.Status.Authorizations = append(o.Status.Authorizations, Authorization{URL: fmt.Sprintf("u%d", i), Identifier: ident, Wildcard: wildcard && i%2 == 0,
				InitialState: State([]string{"pending", "valid", ""}[i%3]),
				Challenges:   []OfferedChallenge{{Type: challenge.TypeDNS01, URL: fmt.Sprintf("c%d", i), Token: "t"}, {Type: challenge.TypeHTTP01, URL: fmt.Sprintf("h%d", i)}}})
		}
		if failOff != 0 {
			o.Status.FailureTime = tp(t0.Add(time.Duration(failOff) * time.Second))
		}
		// The error and timing facts a status records.
		sec := func(n int64) time.Duration { return time.Duration(n%1_000_000) * time.Second }
		if flags&1 != 0 {
			o.Status.LastError = "503"
			o.Status.Transient = flags&2 != 0
			o.Status.FailedAttempts = int(attempts % 16)
			if flags&4 != 0 {
				o.Status.LastErrorTime = tp(t0.Add(sec(errOff)))
			}
		}
		if flags&8 != 0 {
			o.Status.RetryAfter = tp(t0.Add(sec(retryOff)))
		}
		if flags&16 != 0 {
			o.Status.SyncedAt = tp(t0.Add(sec(syncOff)))
		}
		if flags&32 != 0 {
			o.Status.Expires = tp(t0.Add(sec(expOff)))
		}
		if changedOff != 0 {
			// Milliseconds: polls after a change come less than a
			// second apart.
			o.Status.ChangedAt = tp(t0.Add(time.Duration(changedOff%100_000_000) * time.Millisecond))
		}
		if flags&64 != 0 {
			o.Status.CertificateURL = "https://ca/cert/1"
		}
		if flags&128 != 0 {
			o.Status.Certificate = []byte("PEM")
			if more&4 != 0 {
				o.Status.Certificate = good
			}
		}
		o.Status.ReadFirst = more&1 != 0
		if more&2 != 0 {
			o.Spec.Replaces = "aki.serial"
			o.Status.SpecHash = SpecHash(&o.Spec)
			o.Status.ReplacesRefused = "at least one identifier must match"
		}
		if more&64 != 0 {
			o.Status.BadCertificate = "the first was bad"
		}
		var owned []*challenge.Challenge
		for i := 0; i < int(nOwned%4); i++ {
			c := &challenge.Challenge{Name: ChallengeName(o.Name, i), Spec: challenge.Spec{URL: fmt.Sprintf("c%d", i), Type: challenge.TypeDNS01},
				Status: challenge.Status{State: challenge.State([]string{"valid", "pending", "invalid", "errored"}[(i+int(nOwned/4))%4])}}
			if (nOwned>>4)&1 != 0 {
				c.Status.SyncedAt = tp(t0.Add(sec(syncOff) - time.Duration(i+1)*time.Second))
			}
			if more&16 != 0 {
				c.Status.RetryAfter = tp(t0.Add(sec(retryOff)))
			}
			owned = append(owned, c)
		}
		cfg := Config{}
		res := Decide(o, owned, t0, cfg)
		require.Equal(t, names(res.Actions), names(Decide(o, owned, t0, cfg).Actions), "not deterministic")
		created := map[string]bool{}
		authz := map[string]bool{}
		for _, a := range res.Actions {
			switch a := a.(type) {
			case Finalize:
				// Only a ready order, or one whose every authorization is
				// valid (reused, or its challenge valid), is finalized,
				// and never right after a failed call: the order is read
				// first.
				if o.Status.State != StateReady {
					require.True(t, allAuthorized(o, owned), "finalized an order in state %q with authorizations not all valid", o.Status.State)
				}
				require.Empty(t, o.Status.LastError, "finalized again after a failed call without reading the order: %s", res.Message)
			case CreateChallenge:
				require.False(t, created[a.Challenge.Name], "two challenges named %s", a.Challenge.Name)
				require.False(t, authz[a.Challenge.Spec.AuthorizationURL], "two challenges for one authorization")
				created[a.Challenge.Name], authz[a.Challenge.Spec.AuthorizationURL] = true, true
				if a.Challenge.Spec.Wildcard {
					require.Equal(t, challenge.TypeDNS01, a.Challenge.Spec.Type, "a wildcard challenge that is not DNS-01")
				}
			case UpdateStatus:
				reordered := res.Reason == ReasonBadCertificate && !a.Status.State.Failed()
				if !a.Status.State.Failed() && !reordered {
					require.Equal(t, o.Status.State, a.Status.State, "the machine moved the order to a state the server did not give")
				}
				if reordered {
					require.Empty(t, o.Status.BadCertificate, "ordered again after a second bad certificate")
					require.Equal(t, Status{BadCertificate: a.Status.BadCertificate, ReplacesRefused: o.Status.ReplacesRefused}, a.Status,
						"ordered again with more than a fresh status")
					require.NotEmpty(t, a.Status.BadCertificate)
				}
			case CreateOrder:
				if o.Status.ReplacesRefused != "" {
					require.Empty(t, a.Replaces, "asked for replaces again after the server refused it")
				}
			}
		}
		if res.Reason == ReasonDone {
			require.Empty(t, CheckCertificate(&o.Spec, o.Status.Certificate), "handed over a certificate that does not check")
		}
		checkLiveness(t, res, t0, func(now time.Time) Result { return Decide(o, owned, now, cfg) })
	})
}

// final are the reasons of a decision that is done with the order: it may
// wait for no time. Every other decision without actions waits for a
// deadline.
var final = map[string]bool{ReasonDone: true, ReasonNoOrder: true}

// checkLiveness holds a decision made at now to the liveness invariant:
// deadlines arrive. A result without actions says why (a reason and a
// message) and waits for a time after now (or, final, for none); deciding
// again at any
// moment before that time, with nothing changed, waits for the same time;
// and deciding at that time acts, or waits for a later time (or an event)
// for another reason — never for the same deadline moved forward.
func checkLiveness(t *testing.T, res Result, now time.Time, decide func(time.Time) Result) {
	t.Helper()
	if len(res.Actions) > 0 {
		return
	}
	require.NotEmpty(t, res.Reason, "no action and no reason: %s", res.Message)
	require.NotEmpty(t, res.Message, "no action and no message for %s", res.Reason)
	if res.RequeueAt.IsZero() {
		require.True(t, final[res.Reason], "no action and no deadline for %s: %s", res.Reason, res.Message)
		return
	}
	require.True(t, res.RequeueAt.After(now), "no action and a deadline %v not after now %v: %s", res.RequeueAt, now, res.Message)
	mid := decide(now.Add(res.RequeueAt.Sub(now) / 2))
	if len(mid.Actions) == 0 {
		require.True(t, mid.RequeueAt.Equal(res.RequeueAt), "the deadline moved with the clock: %v at %v, %v halfway (%s; %s)",
			res.RequeueAt, now, mid.RequeueAt, res.Message, mid.Message)
	}
	again := decide(res.RequeueAt)
	switch {
	case len(again.Actions) > 0:
	case again.Reason == res.Reason:
		t.Fatalf("at its deadline %v the decision waits again for %s (until %v): %s", res.RequeueAt, again.Reason, again.RequeueAt, again.Message)
	case again.RequeueAt.IsZero():
		require.True(t, final[again.Reason], "at its deadline %v: no action and no deadline for %s: %s", res.RequeueAt, again.Reason, again.Message)
	default:
		require.True(t, again.RequeueAt.After(res.RequeueAt), "at its deadline %v the decision waits until %v: %s", res.RequeueAt, again.RequeueAt, again.Message)
	}
}

// A challenge starts from the authorization read that found it, so the
// challenge machine presents without reading it again; without that read
// time it reads first.
func TestChallengesStartFromTheAuthorizationRead(t *testing.T) {
	o := authorized(newOrder())
	fetched := t0.Add(-time.Second)
	o.Status.Authorizations[0].FetchedAt = &fetched
	res := Decide(o, nil, t0, Config{})
	var got []challenge.Challenge
	for _, a := range res.Actions {
		if c, ok := a.(CreateChallenge); ok {
			got = append(got, c.Challenge)
		}
	}
	require.Len(t, got, 2, "actions %s", names(res.Actions))
	for _, c := range got {
		seeded := c.Spec.AuthorizationURL == "https://ca/authz/a"
		if seeded {
			require.NotNil(t, c.Status.SyncedAt, "%s: status %+v, want the read of %v", c.Name, c.Status, fetched)
			require.True(t, c.Status.SyncedAt.Equal(fetched), "%s: status %+v, want the read of %v", c.Name, c.Status, fetched)
			require.Equal(t, challenge.StatePending, c.Status.State, "%s: status %+v, want the read of %v", c.Name, c.Status, fetched)
		} else {
			require.Nil(t, c.Status.SyncedAt, "%s: seeded without a read time", c.Name)
		}
		first := challenge.Decide(&challenge.Challenge{Spec: c.Spec, Status: func() challenge.Status { s := c.Status; s.Processing = true; return s }()}, t0, challenge.Config{})
		want := map[bool]string{true: challenge.ReasonPresenting, false: challenge.ReasonSyncing}[seeded]
		require.Equal(t, want, first.Reason, "%s: the challenge machine's first step", c.Name)
	}
}

// RFC 8737: TLS-ALPN-01 is chosen like HTTP-01 — by its selector, for
// names and IP addresses (RFC 8738 §6) — never for a wildcard (§3), and
// only where the server offers it.
func TestChooseSolverTLSALPN01(t *testing.T) {
	alpn := challenge.Solver{TLSALPN01: &challenge.TLSALPN01Solver{}}
	def := SolverConfig{Solver: alpn}
	named := SolverConfig{Selector: &Selector{DNSNames: []string{"a.web.example"}}, Solver: alpn}
	all := []challenge.Type{challenge.TypeHTTP01, challenge.TypeDNS01, challenge.TypeTLSALPN01}
	tests := map[string]struct {
		solvers  []SolverConfig
		name     string
		wildcard bool
		offered  []challenge.Type
		want     challenge.Type // "" for none
	}{
		"the only solver, for a name":             {[]SolverConfig{def}, "web.example", false, all, challenge.TypeTLSALPN01},
		"the only solver, for an IP address":      {[]SolverConfig{def}, "192.0.2.1", false, all, challenge.TypeTLSALPN01},
		"never for a wildcard":                    {[]SolverConfig{def}, "web.example", true, all, ""},
		"not where the server does not offer it":  {[]SolverConfig{def}, "web.example", false, []challenge.Type{challenge.TypeHTTP01}, ""},
		"after HTTP-01 among defaults":            {[]SolverConfig{{Solver: http01}, def}, "web.example", false, all, challenge.TypeHTTP01},
		"before HTTP-01 among defaults":           {[]SolverConfig{def, {Solver: http01}}, "web.example", false, all, challenge.TypeTLSALPN01},
		"in place of HTTP-01 the server withheld": {[]SolverConfig{{Solver: http01}, def}, "web.example", false, []challenge.Type{challenge.TypeTLSALPN01}, challenge.TypeTLSALPN01},
		"a name selector beats a default":         {[]SolverConfig{{Solver: http01}, named}, "a.web.example", false, all, challenge.TypeTLSALPN01},
		"a wildcard falls to DNS-01":              {[]SolverConfig{def, {Solver: dns01}}, "web.example", true, all, challenge.TypeDNS01},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, ok := ChooseSolver(tc.solvers, tc.name, tc.wildcard, tc.offered, nil)
			var got challenge.Type
			if ok {
				got, _ = solverType(s)
			}
			require.Equal(t, tc.want, got, "ChooseSolver")
		})
	}
}
