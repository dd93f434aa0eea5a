package acmetest

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/publicsuffix"

	"github.com/certlife/certlife/acmeclient"
)

// orderFinalizePath is Pebble's path for finalizing an order.
const orderFinalizePath = "/finalize-order/"

// RateLimits make the server refuse what passes them the way Let's
// Encrypt does: HTTP 429 with a urn:ietf:params:acme:error:rateLimited
// problem worded as Let's Encrypt words it ("too many new orders (300)
// from this account in the last 3h0m0s, retry after …: see
// https://letsencrypt.org/docs/rate-limits/#new-orders-per-account") and
// Retry-After in seconds. Each limit is a token bucket, as Let's
// Encrypt keeps them: Count at once, then one each Window/Count. A zero
// Limit is none.
//
// A newOrder is refused when the account's orders are spent, or when a
// registered domain it names (golang.org/x/net/publicsuffix; an IP
// address is its own), or its exact set of identifiers, has no
// certificate left; it spends one order when Pebble creates it. A
// finalize is refused on the same certificate limits, and spends one
// certificate of each registered domain and of the set when Pebble
// accepts it.
type RateLimits struct {
	OrdersPerAccount                acmeclient.Limit
	CertificatesPerRegisteredDomain acmeclient.Limit
	CertificatesPerExactSet         acmeclient.Limit
	// Now is the limits' clock; nil means time.Now. A test that runs
	// the issuer on a fake clock gives the same clock here.
	Now func() time.Time
}

// Issuance is a certificate the server issued behind RateLimits: when
// (on the limits' clock) its finalize was accepted, and its identifiers
// sorted and joined with ",".
type Issuance struct {
	At    time.Time
	Names string
}

// Refusal is a request the server refused for a rate limit.
type Refusal struct {
	At         time.Time
	Path       string
	Detail     string
	RetryAfter time.Time
}

// limiter enforces RateLimits in front of Pebble.
type limiter struct {
	cfg RateLimits

	mu      sync.Mutex
	tat     map[string]time.Time // per bucket: "orders/<account>", "domain/<d>", "set/<names>"
	issued  []Issuance
	refused []Refusal
	orders  []time.Time
}

// RateLimitRefusals are the requests the server refused for a rate limit,
// in order; none without Options.RateLimits.
func (s *Server) RateLimitRefusals() []Refusal {
	if s.limits == nil {
		return nil
	}
	s.limits.mu.Lock()
	defer s.limits.mu.Unlock()
	return append([]Refusal(nil), s.limits.refused...)
}

// Issuances are the certificates the server issued, in order of their
// finalize, on the limits' clock; none without Options.RateLimits.
func (s *Server) Issuances() []Issuance {
	if s.limits == nil {
		return nil
	}
	s.limits.mu.Lock()
	defer s.limits.mu.Unlock()
	return append([]Issuance(nil), s.limits.issued...)
}

// OrdersAccepted are the times (on the limits' clock) of the newOrders
// the server created, in order; none without Options.RateLimits.
func (s *Server) OrdersAccepted() []time.Time {
	if s.limits == nil {
		return nil
	}
	s.limits.mu.Lock()
	defer s.limits.mu.Unlock()
	return append([]time.Time(nil), s.limits.orders...)
}

func (l *limiter) now() time.Time {
	if l.cfg.Now != nil {
		return l.cfg.Now()
	}
	return time.Now()
}

// allowed reports when bucket allows one more at now under lim: now
// when it does.
func (l *limiter) allowed(bucket string, lim acmeclient.Limit, now time.Time) time.Time {
	if lim.Count <= 0 {
		return now
	}
	tat, ok := l.tat[bucket]
	if !ok {
		return now
	}
	iv := lim.Window / time.Duration(lim.Count)
	if at := tat.Add(-(lim.Window - iv)); at.After(now) {
		return at
	}
	return now
}

func (l *limiter) spend(bucket string, lim acmeclient.Limit, now time.Time) {
	if lim.Count <= 0 {
		return
	}
	tat := l.tat[bucket]
	if tat.Before(now) {
		tat = now
	}
	l.tat[bucket] = tat.Add(lim.Window / time.Duration(lim.Count))
}

// wrap puts the limits in front of next.
func (l *limiter) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || (r.URL.Path != newOrderPath && !strings.HasPrefix(r.URL.Path, orderFinalizePath)) {
			next.ServeHTTP(w, r)
			return
		}
		body, ok := requestBody(w, r)
		if !ok {
			return
		}
		finalize := r.URL.Path != newOrderPath
		var names []string
		if finalize {
			names = csrNames(body)
		} else {
			names = orderNames(body)
		}
		account := accountOf(body)
		// One request at a time: the check and the spend go together.
		l.mu.Lock()
		defer l.mu.Unlock()
		now := l.now()
		set := strings.Join(names, ",")
		type check struct {
			bucket string
			lim    acmeclient.Limit
			detail string
		}
		var checks []check
		if !finalize {
			checks = append(checks, check{"orders/" + account, l.cfg.OrdersPerAccount,
				fmt.Sprintf("too many new orders (%d) from this account in the last %s", l.cfg.OrdersPerAccount.Count, l.cfg.OrdersPerAccount.Window) + ", retry after %s: see https://letsencrypt.org/docs/rate-limits/#new-orders-per-account"})
		}
		domains := registeredDomains(names)
		for _, d := range domains {
			checks = append(checks, check{"domain/" + d, l.cfg.CertificatesPerRegisteredDomain,
				fmt.Sprintf("too many certificates (%d) already issued for %q in the last %s", l.cfg.CertificatesPerRegisteredDomain.Count, d, l.cfg.CertificatesPerRegisteredDomain.Window) + ", retry after %s: see https://letsencrypt.org/docs/rate-limits/#new-certificates-per-registered-domain"})
		}
		checks = append(checks, check{"set/" + set, l.cfg.CertificatesPerExactSet,
			fmt.Sprintf("too many certificates (%d) already issued for this exact set of identifiers in the last %s", l.cfg.CertificatesPerExactSet.Count, l.cfg.CertificatesPerExactSet.Window) + ", retry after %s: see https://letsencrypt.org/docs/rate-limits/#new-certificates-per-exact-set-of-identifiers"})
		for _, c := range checks {
			if at := l.allowed(c.bucket, c.lim, now); at.After(now) {
				detail := fmt.Sprintf(c.detail, at.UTC().Format("2006-01-02 15:04:05 MST"))
				l.refused = append(l.refused, Refusal{At: now, Path: r.URL.Path, Detail: detail, RetryAfter: at})
				secs := int64((at.Sub(now) + time.Second - 1) / time.Second)
				w.Header().Set("Content-Type", "application/problem+json")
				w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
				w.WriteHeader(http.StatusTooManyRequests)
				_ = json.NewEncoder(w).Encode(map[string]any{"type": "urn:ietf:params:acme:error:rateLimited", "detail": detail, "status": http.StatusTooManyRequests})
				return
			}
		}
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		switch {
		case !finalize && rec.status == http.StatusCreated:
			l.spend("orders/"+account, l.cfg.OrdersPerAccount, now)
			l.orders = append(l.orders, now)
		case finalize && rec.status == http.StatusOK:
			for _, d := range domains {
				l.spend("domain/"+d, l.cfg.CertificatesPerRegisteredDomain, now)
			}
			l.spend("set/"+set, l.cfg.CertificatesPerExactSet, now)
			l.issued = append(l.issued, Issuance{At: now, Names: set})
		}
	})
}

// orderNames are the identifiers of a newOrder JWS, lower-cased, sorted.
func orderNames(body []byte) []string {
	var p struct {
		Identifiers []struct {
			Value string `json:"value"`
		} `json:"identifiers"`
	}
	jwsPart(body, "payload", &p)
	var out []string
	for _, id := range p.Identifiers {
		out = append(out, strings.ToLower(id.Value))
	}
	return sortedUnique(out)
}

// csrNames are the identifiers of the CSR of a finalize JWS.
func csrNames(body []byte) []string {
	var p struct {
		CSR string `json:"csr"`
	}
	if !jwsPart(body, "payload", &p) {
		return nil
	}
	der, err := base64.RawURLEncoding.DecodeString(p.CSR)
	if err != nil {
		return nil
	}
	csr, err := x509.ParseCertificateRequest(der)
	if err != nil {
		return nil
	}
	var out []string
	for _, n := range csr.DNSNames {
		out = append(out, strings.ToLower(n))
	}
	for _, ip := range csr.IPAddresses {
		out = append(out, ip.String())
	}
	return sortedUnique(out)
}

func sortedUnique(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// registeredDomains are the registered domains of names, each once: the
// public suffix and one label; an IPv4 address itself, an IPv6 address's
// /64.
func registeredDomains(names []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range names {
		d := strings.TrimPrefix(n, "*.")
		if a, err := netip.ParseAddr(n); err == nil {
			if a.Is6() {
				p, _ := a.Prefix(64)
				d = p.String()
			}
		} else if e, err := publicsuffix.EffectiveTLDPlusOne(d); err == nil {
			d = e
		}
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	sort.Strings(out)
	return out
}
