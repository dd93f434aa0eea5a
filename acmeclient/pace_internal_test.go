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
