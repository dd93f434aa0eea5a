package acmeclient

import (
	"fmt"
	"testing"
	"time"
)

// Without configured limits, Let's Encrypt's directories get its published
// limits and any other CA none (learning from its refusals only).
func TestDefaultLimitsByDirectory(t *testing.T) {
	le := LetsEncryptRateLimits()
	off := &RateLimits{Disabled: true}
	for _, tc := range []struct {
		url    string
		limits *RateLimits
		want   RateLimits
	}{
		{"https://acme-v02.api.letsencrypt.org/directory", nil, le},
		{"https://acme-staging-v02.api.letsencrypt.org/directory", nil, le},
		{"https://ACME-V02.api.letsencrypt.org./directory", nil, le},
		{"https://localhost:14000/dir", nil, RateLimits{}},
		{"https://ca.internal:9000/acme/acme/directory", nil, RateLimits{}},
		{"https://acme.zerossl.com/v2/DV90", nil, RateLimits{}},
		{"https://acme-v02.api.letsencrypt.org.evil.example/directory", nil, RateLimits{}},
		{"::not a url", nil, RateLimits{}},
		{"https://acme-v02.api.letsencrypt.org/directory", off, *off},
		{"https://localhost:14000/dir", &le, le},
	} {
		if got := *defaultLimits(tc.limits, tc.url); got != tc.want {
			t.Errorf("defaultLimits(%v, %q) = %+v, want %+v", tc.limits, tc.url, got, tc.want)
		}
	}
}

// BenchmarkPaceAdmit is the admit path of a paced order under Let's
// Encrypt's limits (raised so that none binds): each order a subdomain of
// one registered domain,
// admitted at its slot, sent and issued.
func BenchmarkPaceAdmit(b *testing.B) {
	lim := LetsEncryptRateLimits()
	lim.OrdersPerAccount = Limit{Count: 1 << 30, Window: time.Hour}
	lim.CertificatesPerRegisteredDomain = Limit{Count: 1 << 30, Window: time.Hour}
	lim.CertificatesPerExactSet = Limit{Count: 1 << 30, Window: time.Hour}
	p := newPacer(&lim)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	keys := make([]string, 1024)
	names := make([][]string, len(keys))
	for i := range keys {
		keys[i] = fmt.Sprintf("ns/r-%d", i)
		names[i] = []string{fmt.Sprintf("sub-%d.fleet.example.com", i)}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		k := i % len(keys)
		now = now.Add(time.Millisecond)
		h := p.admit(keys[k], RequestRef{}, demand(names[k], nil), now)
		if !h.ok {
			b.Fatalf("order %d held: %s", i, h.why)
		}
		p.sent(keys[k])
		p.finalizing(keys[k])
		p.issued(keys[k], now)
	}
}

// A refusal whose words name an absurd window (a CA's error or a hostile
// answer) is not learned: the orders wait for its Retry-After only.
func TestPaceIgnoresAnAbsurdLearnedWindow(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		detail string
		learn  bool
	}{
		{"too many new orders (10) from this account in the last 3h0m0s", true},
		{"too many new orders (1) from this account in the last 2562047h0m0s", false},
		{"too many new orders (1) from this account in the last 745h", false},
		{"too many new orders (-5) from this account in the last 3h", false},
		{"too many new orders (99999999999999999999) from this account in the last 3h", false},
		{"too many new orders (10) from this account in the last garbage", false},
	} {
		p := newPacer(&RateLimits{})
		err := &Error{Kind: ErrRateLimited, Status: 429, Type: "urn:ietf:params:acme:error:rateLimited", Detail: tc.detail, RetryAfter: now.Add(time.Hour)}
		ids := demand([]string{"a.example.com"}, nil)
		p.learn(err, ids, now)
		if got := !p.learned[kindOrders].IsZero(); got != tc.learn {
			t.Errorf("%q: learned %v, want %v", tc.detail, p.learned[kindOrders], tc.learn)
		}
		if h := p.admit("k", RequestRef{}, ids, now); h.ok || h.at.After(now.Add(time.Hour+3*time.Hour)) {
			t.Errorf("%q: admitted %v, held until %v; want held, until the Retry-After (a learned limit's tolerance at most)", tc.detail, h.ok, h.at)
		}
	}
}
