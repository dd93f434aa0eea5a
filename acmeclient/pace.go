package acmeclient

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/publicsuffix"

	"github.com/certlife/certlife/order"
)

// Limit is one rate limit of an ACME CA: at most Count in any Window,
// one more allowed each Window/Count after the Count are spent (a token
// bucket that holds Count and refills at that pace, as Let's Encrypt's
// limits are kept). A zero Limit is no limit.
type Limit struct {
	Count  int           `json:"count"`
	Window time.Duration `json:"window"`
}

// IsZero reports whether the limit is none.
func (l Limit) IsZero() bool { return l.Count == 0 }

// String is "300 per 3h".
func (l Limit) String() string { return strconv.Itoa(l.Count) + " per " + shortDuration(l.Window) }

// interval is how long one unit takes to come back; tolerance how far
// ahead of now the bucket's theoretical arrival time may be while one is
// still allowed (GCRA).
func (l Limit) interval() time.Duration  { return l.Window / time.Duration(l.Count) }
func (l Limit) tolerance() time.Duration { return l.Window - l.interval() }

// RateLimits are the limits an ACME issuer paces its orders by, so that
// the CA never refuses one for a rate limit: an order that would pass a
// limit is not sent; its request stays Pending (Reason "Paced") with the
// limit and the time its order goes, and Answer returns that time. The
// waiting requests are given their slots in the order they asked, each
// its own, so that a host steps each once when its turn comes.
//
// Orders the issuer does not send cost nothing. An order counts against
// OrdersPerAccount when it is sent, and against the per-domain and
// per-set limits while it is in flight and, once its certificate is
// issued, from the time the issuer saw it issued; an order that fails
// gives those back. A failed validation counts against
// FailedValidationsPerIdentifier for its identifier.
//
// The CA's answers teach the issuer too: a refusal for a rate limit
// (HTTP 429, urn:ietf:params:acme:error:rateLimited) holds that limit's
// orders until its Retry-After, and when the problem's detail names the
// limit as Let's Encrypt's do ("too many new orders (300) from this
// account in the last 3h0m0s"), the issuer takes the CA's count and
// window for that limit from then on. A refused order is given back: it
// costs nothing, and the request waits Pending for its slot instead of
// failing.
//
// A nil *RateLimits in IssuerConfig means LetsEncryptRateLimits for Let's
// Encrypt's directories and no configured limits (learning only) for any
// other CA; a zero Limit field is no limit of that kind (still learned
// from a refusal); Disabled turns pacing and learning off.
type RateLimits struct {
	// Disabled turns pacing off: every order is sent at once, and a
	// refusal for a rate limit is an order's failure like any other,
	// retried on the server's Retry-After or failing the request with it.
	Disabled bool `json:"disabled,omitempty"`
	// OrdersPerAccount bounds the newOrder requests of the account.
	OrdersPerAccount Limit `json:"ordersPerAccount,omitzero"`
	// CertificatesPerRegisteredDomain bounds the certificates that name
	// any name under one registered domain (the public suffix plus one
	// label, golang.org/x/net/publicsuffix; an IP address is its own); a
	// certificate counts once for each registered domain it names.
	CertificatesPerRegisteredDomain Limit `json:"certificatesPerRegisteredDomain,omitzero"`
	// CertificatesPerExactSet bounds the certificates for one exact set
	// of identifiers ("duplicate certificates").
	CertificatesPerExactSet Limit `json:"certificatesPerExactSet,omitzero"`
	// FailedValidationsPerIdentifier bounds the failed validations of
	// one identifier by the account: an order that names an identifier
	// whose failures used the limit up waits until one more may fail.
	FailedValidationsPerIdentifier Limit `json:"failedValidationsPerIdentifier,omitzero"`
	// CountRenewals paces renewals that name the certificate they
	// replace (ACME Renewal Information, RFC 9773 "replaces") like any
	// order. By default they are exempt, sent at once and counted
	// nowhere, as Let's Encrypt exempts them from its limits.
	CountRenewals bool `json:"countRenewals,omitempty"`
}

// LetsEncryptRateLimits are Let's Encrypt's published limits
// (letsencrypt.org/docs/rate-limits): 300 new orders per account per 3
// hours, 50 certificates per registered domain per 7 days, 5 certificates
// per exact set of identifiers per 7 days, 5 failed validations per
// identifier per account per hour. They are the default of an issuer
// whose IssuerConfig.Limits is nil and whose Client's directory is Let's
// Encrypt's.
func LetsEncryptRateLimits() RateLimits {
	week := 7 * 24 * time.Hour
	return RateLimits{
		OrdersPerAccount:                Limit{Count: 300, Window: 3 * time.Hour},
		CertificatesPerRegisteredDomain: Limit{Count: 50, Window: week},
		CertificatesPerExactSet:         Limit{Count: 5, Window: week},
		FailedValidationsPerIdentifier:  Limit{Count: 5, Window: time.Hour},
	}
}

// problems says what is wrong with the limits, naming each field.
func (l *RateLimits) problems() []string {
	if l == nil || l.Disabled {
		return nil
	}
	var out []string
	for _, f := range []struct {
		name string
		l    Limit
	}{
		{"OrdersPerAccount", l.OrdersPerAccount},
		{"CertificatesPerRegisteredDomain", l.CertificatesPerRegisteredDomain},
		{"CertificatesPerExactSet", l.CertificatesPerExactSet},
		{"FailedValidationsPerIdentifier", l.FailedValidationsPerIdentifier},
	} {
		switch {
		case f.l.Count < 0:
			out = append(out, fmt.Sprintf("Limits.%s.Count %d is negative", f.name, f.l.Count))
		case f.l.Count > 0 && f.l.Window <= 0:
			out = append(out, fmt.Sprintf("Limits.%s.Window %v must be positive for a Count of %d", f.name, f.l.Window, f.l.Count))
		case f.l.Count > 0 && f.l.Window/time.Duration(f.l.Count) <= 0:
			out = append(out, fmt.Sprintf("Limits.%s: %d per %v is more than one a nanosecond", f.name, f.l.Count, f.l.Window))
		}
	}
	return out
}

// ReasonPaced is the Result.Reason (and the Pending reason on the
// request) of a request whose order waits for a rate limit (RateLimits):
// the message names the limit and when the order is sent.
const ReasonPaced = "Paced"

// The kinds of limit.
type limitKind int

const (
	kindOrders limitKind = iota
	kindDomain
	kindSet
	kindFailures
	numKinds
)

// pacedRecheck is how soon an order that waits for orders in flight (a
// per-domain or per-set limit whose room they hold) is looked at again.
const pacedRecheck = 10 * time.Second

// bookingGrace is how long past its slot a booking is kept for a request
// that does not come for it.
const bookingGrace = 15 * time.Minute

// bucket is one limit's state for one key (GCRA): real is the
// theoretical arrival time of what was sent (or issued, or failed),
// booked that and the slots booked for waiting requests; zero is a full
// bucket. inflight counts orders sent and not yet issued or failed (per
// domain and per set). holdUntil is a refusal's Retry-After.
type bucket struct {
	real, booked, holdUntil time.Time
	inflight                int
}

type bucketID struct {
	kind limitKind
	name string
}

// booking is the slot of a waiting request.
type booking struct {
	at  time.Time
	why string
	ids []bucketID
	seq int64 // the order of the bookings; a refused order's is negative, first in line
	ref RequestRef
}

// reservation is an order admitted: its buckets; sent once its newOrder
// went; finalizing once it was finalized (its certificate may be issued).
type reservation struct {
	ids              []bucketID
	sent, finalizing bool
}

// pacer keeps an issuer's limits. A nil pacer paces nothing.
type pacer struct {
	mu       sync.Mutex
	limits   [numKinds]Limit
	learned  [numKinds]Limit
	renewals bool
	buckets  map[bucketID]*bucket
	bookings map[string]*booking
	reserved map[string]*reservation
	seq      int64
	front    int64
	pruneAt  int
}

// defaultLimits is the limits an issuer paces by: the configured ones,
// else Let's Encrypt's for its directories and none (learning from the
// CA's refusals only) for any other.
func defaultLimits(l *RateLimits, directoryURL string) *RateLimits {
	if l != nil {
		return l
	}
	if isLetsEncrypt(directoryURL) {
		d := LetsEncryptRateLimits()
		return &d
	}
	return &RateLimits{}
}

// isLetsEncrypt reports whether a directory URL is Let's Encrypt's
// production or staging endpoint.
func isLetsEncrypt(directoryURL string) bool {
	u, err := url.Parse(directoryURL)
	if err != nil {
		return false
	}
	switch strings.ToLower(strings.TrimSuffix(u.Hostname(), ".")) {
	case "acme-v02.api.letsencrypt.org", "acme-staging-v02.api.letsencrypt.org":
		return true
	}
	return false
}

func newPacer(l *RateLimits) *pacer {
	if l == nil {
		l = &RateLimits{}
	}
	if l.Disabled {
		return nil
	}
	p := &pacer{buckets: map[bucketID]*bucket{}, bookings: map[string]*booking{}, reserved: map[string]*reservation{}, renewals: l.CountRenewals, pruneAt: 1024}
	p.limits[kindOrders] = l.OrdersPerAccount
	p.limits[kindDomain] = l.CertificatesPerRegisteredDomain
	p.limits[kindSet] = l.CertificatesPerExactSet
	p.limits[kindFailures] = l.FailedValidationsPerIdentifier
	return p
}

// limit is a kind's limit: the CA's when it said, else the configured.
func (p *pacer) limit(k limitKind) Limit {
	if !p.learned[k].IsZero() {
		return p.learned[k]
	}
	return p.limits[k]
}

// exempt reports whether an order that replaces a certificate (ARI) is
// left out of pacing.
func (p *pacer) exempt(replaces string) bool { return p == nil || (replaces != "" && !p.renewals) }

// demand is the buckets an order draws on: the account's orders, each
// registered domain, its exact set, and (checked, not spent) each
// identifier's failed validations.
func demand(dnsNames, ips []string) []bucketID {
	ids := []bucketID{{kind: kindOrders}}
	var all []string
	domains := map[string]bool{}
	for _, n := range dnsNames {
		n = strings.ToLower(strings.TrimSuffix(n, "."))
		all = append(all, n)
		domains[registeredDomain(n)] = true
	}
	for _, ip := range ips {
		all = append(all, ip)
		domains[ipDomain(ip)] = true
	}
	for _, d := range slices.Sorted(mapsKeys(domains)) {
		ids = append(ids, bucketID{kindDomain, d})
	}
	slices.Sort(all)
	all = slices.Compact(all)
	ids = append(ids, bucketID{kindSet, strings.Join(all, ",")})
	for _, n := range all {
		ids = append(ids, bucketID{kindFailures, strings.TrimPrefix(n, "*.")})
	}
	return ids
}

func mapsKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// registeredDomain is a name's registered domain (eTLD+1); the name
// itself when it has none (a public suffix, a single label).
func registeredDomain(name string) string {
	name = strings.TrimPrefix(name, "*.")
	if d, err := publicsuffix.EffectiveTLDPlusOne(name); err == nil {
		return d
	}
	return name
}

// ipDomain is an IP address's "registered domain": the address for IPv4,
// its /64 for IPv6, as Let's Encrypt counts them.
func ipDomain(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil || a.Is4() {
		return ip
	}
	p, _ := a.Prefix(64)
	return p.String()
}

// spends reports whether a bucket of kind is spent when an order is sent
// (orders), counted while in flight (domain, set), or only checked
// (failures).
func spendsOnSend(k limitKind) bool { return k == kindOrders }
func inFlight(k limitKind) bool     { return k == kindDomain || k == kindSet }

// next is the earliest time at or after now that one more fits the
// bucket at tat with extra already taken (in flight); ok is false when
// the extra alone fill the limit (the time depends on them).
func next(l Limit, tat, hold, now time.Time, extra int) (time.Time, bool) {
	at := now
	if hold.After(at) {
		at = hold
	}
	if l.IsZero() {
		return at, true
	}
	iv := l.interval()
	if time.Duration(extra)*iv > l.tolerance() {
		return time.Time{}, false
	}
	if tat.IsZero() {
		return at, true
	}
	if t := tat.Add(time.Duration(extra)*iv - l.tolerance()); t.After(at) {
		at = t
	}
	return at, true
}

// spend takes one from the bucket at tat at t.
func spend(l Limit, tat, t time.Time) time.Time {
	if l.IsZero() {
		return tat
	}
	if tat.Before(t) {
		tat = t
	}
	return tat.Add(l.interval())
}

func (p *pacer) bucket(id bucketID) *bucket {
	b := p.buckets[id]
	if b == nil {
		b = &bucket{}
		p.buckets[id] = b
	}
	return b
}

// hold is an admission's answer: ok, or wait until at for why.
type hold struct {
	ok  bool
	at  time.Time
	why string
}

// admit decides whether key's order, drawing on ids, may be sent at now:
// ok reserves it (the order counts from now); otherwise the request is
// given (or keeps) a slot, at which it asks again.
func (p *pacer) admit(key string, ref RequestRef, ids []bucketID, now time.Time) hold {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropStaleLocked(now)
	bk := p.bookings[key]
	if bk != nil && now.Before(bk.at) {
		return hold{at: ceilSecond(bk.at), why: bk.why}
	}
	if bk == nil {
		slot, why := now, ""
		for _, id := range ids {
			l := p.limit(id.kind)
			b := p.buckets[id]
			if b == nil {
				continue
			}
			tat := b.booked
			if id.kind == kindFailures {
				tat = b.real
			}
			t, _ := next(l, tat, b.holdUntil, now, 0)
			if t.After(slot) {
				slot, why = t, p.describe(id, b, t)
			}
		}
		for _, id := range ids {
			if id.kind != kindFailures && !p.limit(id.kind).IsZero() {
				b := p.bucket(id)
				b.booked = spend(p.limit(id.kind), b.booked, slot)
			}
		}
		p.seq++
		bk = &booking{at: slot, why: why, ids: ids, seq: p.seq, ref: ref}
		if slot.After(now) {
			p.bookings[key] = bk
			return hold{at: ceilSecond(slot), why: why}
		}
	}
	// The slot has come: the limits as they are now have the last word.
	at, why := now, ""
	for _, id := range ids {
		b := p.buckets[id]
		if b == nil {
			continue
		}
		extra := 0
		if inFlight(id.kind) {
			extra = b.inflight
		}
		t, ok := next(p.limit(id.kind), b.real, b.holdUntil, now, extra)
		if !ok {
			t = now.Add(pacedRecheck)
		}
		if t.After(at) {
			at, why = t, p.describe(id, b, t)
		}
	}
	if at.After(now) {
		bk.at, bk.why = at, why
		p.bookings[key] = bk
		return hold{at: ceilSecond(at), why: why}
	}
	delete(p.bookings, key)
	p.reserveLocked(key, ids, now)
	p.pruneLocked(now)
	return hold{ok: true}
}

// reserveLocked counts key's order as sent at now.
func (p *pacer) reserveLocked(key string, ids []bucketID, now time.Time) {
	p.releaseLocked(key)
	for _, id := range ids {
		switch {
		case spendsOnSend(id.kind):
			b := p.bucket(id)
			b.real = spend(p.limit(id.kind), b.real, now)
			b.booked = maxTime(b.booked, b.real)
		case inFlight(id.kind):
			p.bucket(id).inflight++
		}
	}
	p.reserved[key] = &reservation{ids: ids}
}

// ceilSecond is t rounded up to a whole second: the time a hold names,
// which its status prints to the second, is never before its slot.
func ceilSecond(t time.Time) time.Time {
	if r := t.Truncate(time.Second); r.Before(t) {
		return r.Add(time.Second)
	}
	return t
}

// describe says which limit holds an order until t.
func (p *pacer) describe(id bucketID, b *bucket, t time.Time) string {
	l := p.limit(id.kind)
	var what string
	switch id.kind {
	case kindOrders:
		what = l.String() + " new orders per account"
		if l.IsZero() {
			what = "new orders of the account"
		}
	case kindDomain:
		what = strconv.Itoa(l.Count) + " certificates per registered domain " + id.name + " per " + shortDuration(l.Window)
		if l.IsZero() {
			what = "certificates for the registered domain " + id.name
		}
	case kindSet:
		what = strconv.Itoa(l.Count) + " certificates per exact set of identifiers (" + id.name + ") per " + shortDuration(l.Window)
		if l.IsZero() {
			what = "certificates for the exact set " + id.name
		}
	case kindFailures:
		what = strconv.Itoa(l.Count) + " failed validations of " + id.name + " per " + shortDuration(l.Window)
		if l.IsZero() {
			what = "validations of " + id.name
		}
	}
	if !p.learned[id.kind].IsZero() {
		what += " (as the CA said)"
	}
	if !b.holdUntil.IsZero() && !t.After(b.holdUntil) {
		what += ", held by the CA's Retry-After"
	}
	if inFlight(id.kind) && b.inflight > 0 && !l.IsZero() && time.Duration(b.inflight)*l.interval() > l.tolerance() {
		what += fmt.Sprintf(", %d orders in flight hold the room left", b.inflight)
		return what + "; looked at again at " + stampOf(ceilSecond(t))
	}
	return what + "; next slot at " + stampOf(ceilSecond(t))
}

// sent records that key's newOrder went.
func (p *pacer) sent(key string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if r := p.reserved[key]; r != nil {
		r.sent = true
	}
}

// admitted reports whether key holds a reservation whose newOrder has
// not been sent, and whether it holds one that was.
func (p *pacer) admitted(key string) (unsent, sent bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.reserved[key]
	return r != nil && !r.sent, r != nil && r.sent
}

// finalizing records that key's order was finalized.
func (p *pacer) finalizing(key string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if r := p.reserved[key]; r != nil {
		r.finalizing = true
	}
}

// issued counts key's order's certificate, issued by now, against its
// domains and set.
func (p *pacer) issued(key string, now time.Time) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.issuedLocked(key, now)
}

func (p *pacer) issuedLocked(key string, now time.Time) {
	r := p.reserved[key]
	if r == nil {
		return
	}
	delete(p.reserved, key)
	late := false
	for _, id := range r.ids {
		if !inFlight(id.kind) {
			continue
		}
		b := p.bucket(id)
		b.inflight = max(b.inflight-1, 0)
		// A bucket with room left counts the certificate from now, later
		// than the slot its booking assumed: the slots after it move.
		late = late || b.real.Before(now) && !p.limit(id.kind).IsZero()
		b.real = spend(p.limit(id.kind), b.real, now)
		b.booked = maxTime(b.booked, b.real)
	}
	if late && len(p.bookings) > 0 {
		p.rebookLocked(now)
	}
}

// failed gives back what key's order held (its certificate was not
// issued) and counts a failed validation of each of failedIDs.
func (p *pacer) failed(key string, failedIDs []string, now time.Time) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.releaseLocked(key)
	for _, n := range failedIDs {
		id := bucketID{kindFailures, strings.ToLower(strings.TrimPrefix(n, "*."))}
		if l := p.limit(kindFailures); !l.IsZero() {
			b := p.bucket(id)
			b.real = spend(l, b.real, now)
		}
	}
}

func (p *pacer) releaseLocked(key string) {
	r := p.reserved[key]
	if r == nil {
		return
	}
	delete(p.reserved, key)
	for _, id := range r.ids {
		if b := p.buckets[id]; b != nil && inFlight(id.kind) {
			b.inflight = max(b.inflight-1, 0)
		}
	}
}

// removed settles key's reservation when its state goes without an
// answer: counted as issued now when it was finalized, given back when
// not.
func (p *pacer) removed(key string, now time.Time) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if r := p.reserved[key]; r != nil && r.finalizing {
		p.issuedLocked(key, now)
		return
	}
	p.releaseLocked(key)
}

// forget drops the slots of the request ref: it is gone.
func (p *pacer) forget(ref RequestRef, now time.Time) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	gone := false
	for k, bk := range p.bookings {
		if bk.ref.Namespace == ref.Namespace && bk.ref.Name == ref.Name {
			delete(p.bookings, k)
			gone = true
		}
	}
	if gone {
		p.rebookLocked(now)
	}
}

// force counts key's order, sent without asking (a renewal the CA would
// not take as one, ordered again without replaces in the same call).
func (p *pacer) force(key string, ids []bucketID, now time.Time) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reserveLocked(key, ids, now)
	p.reserved[key].sent = true
}

// refused undoes key's admission after the CA refused its newOrder for a
// rate limit (nothing was created: it costs nothing), learns from the
// refusal, and books the order first in line for its next slot.
func (p *pacer) refused(key string, ref RequestRef, err error, now time.Time) hold {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.reserved[key]
	var ids []bucketID
	if r != nil {
		ids = r.ids
		for _, id := range r.ids {
			if spendsOnSend(id.kind) {
				if b := p.buckets[id]; b != nil && !b.real.IsZero() {
					l := p.limit(id.kind)
					b.real = b.real.Add(-l.interval())
					b.booked = b.booked.Add(-l.interval())
				}
			}
		}
		p.releaseLocked(key)
	}
	until := p.learnLocked(err, ids, now)
	if len(ids) == 0 {
		return hold{at: until, why: "the CA refused the order for a rate limit; held until " + stampOf(until)}
	}
	p.front--
	bk := &booking{ids: ids, seq: p.front, ref: ref}
	p.bookings[key] = bk
	p.rebookLocked(now)
	if bk.at.Before(until) {
		bk.at = until
	}
	return hold{at: ceilSecond(bk.at), why: "the CA refused the order for a rate limit: " + bk.why}
}

// learn takes what a refusal for a rate limit says: which limit, its
// count and window when the detail names them, and its Retry-After, until
// which that limit's bucket is held.
func (p *pacer) learn(err error, ids []bucketID, now time.Time) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.learnLocked(err, ids, now)
}

var (
	countRe  = regexp.MustCompile(`\((\d+)\)`)
	windowRe = regexp.MustCompile(`in the last ([0-9hmsµun.]+)`)
	quoteRe  = regexp.MustCompile(`for "([^"]+)"`)
)

// maxLearnedWindow bounds the window taken from a CA's words: a longer one
// (no CA documents a limit over weeks) is a CA's error or a hostile
// answer that would hold the limit's orders for years, and is ignored; the
// refusal's Retry-After still holds them.
const maxLearnedWindow = 31 * 24 * time.Hour

func (p *pacer) learnLocked(err error, ids []bucketID, now time.Time) time.Time {
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrRateLimited) {
		return time.Time{}
	}
	until := e.RetryAfter
	if until.IsZero() || !until.After(now) {
		until = now.Add(time.Minute)
	}
	detail := e.Detail
	low := strings.ToLower(detail)
	kind := kindOrders
	switch {
	case strings.Contains(low, "registered-domain") || strings.Contains(low, "registered domain") || strings.Contains(low, "certificates-per-domain") ||
		strings.Contains(low, "already issued for \""):
		kind = kindDomain
	case strings.Contains(low, "exact-set") || strings.Contains(low, "exact set") || strings.Contains(low, "duplicate"):
		kind = kindSet
	case strings.Contains(low, "authorization-failures") || strings.Contains(low, "failed authorization") || strings.Contains(low, "failed validation"):
		kind = kindFailures
	}
	if m := countRe.FindStringSubmatch(detail); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && n > 0 {
			if w := windowRe.FindStringSubmatch(detail); w != nil {
				if d, err := time.ParseDuration(w[1]); err == nil && d > 0 && d <= maxLearnedWindow && d/time.Duration(n) > 0 {
					p.learned[kind] = Limit{Count: n, Window: d}
				}
			}
		}
	}
	var targets []bucketID
	if kind == kindDomain || kind == kindFailures {
		if m := quoteRe.FindStringSubmatch(detail); m != nil {
			name := strings.ToLower(m[1])
			if kind == kindDomain {
				name = registeredDomain(name)
			}
			targets = append(targets, bucketID{kind, name})
		}
	}
	if len(targets) == 0 {
		for _, id := range ids {
			if id.kind == kind {
				targets = append(targets, id)
			}
		}
	}
	if len(targets) == 0 {
		targets = []bucketID{{kind: kindOrders}}
		kind = kindOrders
	}
	for _, id := range targets {
		b := p.bucket(id)
		b.holdUntil = maxTime(b.holdUntil, until)
		if l := p.limit(id.kind); !l.IsZero() {
			// The CA's bucket is empty until then: so is this one.
			full := until.Add(l.tolerance())
			b.real = maxTime(b.real, full)
			b.booked = maxTime(b.booked, full)
		}
	}
	p.rebookLocked(now)
	return until
}

// rebookLocked gives the waiting requests their slots again, in the order
// they were booked, after a slot was freed or a limit learned.
func (p *pacer) rebookLocked(now time.Time) {
	for id, b := range p.buckets {
		if id.kind != kindFailures {
			b.booked = b.real
			for range b.inflight { // orders in flight hold their room
				b.booked = spend(p.limit(id.kind), b.booked, now)
			}
		}
	}
	list := make([]*booking, 0, len(p.bookings))
	for _, bk := range p.bookings {
		list = append(list, bk)
	}
	slices.SortFunc(list, func(a, b *booking) int { return cmp.Compare(a.seq, b.seq) })
	for _, bk := range list {
		slot, why := now, ""
		for _, id := range bk.ids {
			b := p.buckets[id]
			if b == nil {
				continue
			}
			tat := b.booked
			if id.kind == kindFailures {
				tat = b.real
			}
			t, _ := next(p.limit(id.kind), tat, b.holdUntil, now, 0)
			if t.After(slot) {
				slot, why = t, p.describe(id, b, t)
			}
		}
		for _, id := range bk.ids {
			if id.kind != kindFailures && !p.limit(id.kind).IsZero() {
				b := p.bucket(id)
				b.booked = spend(p.limit(id.kind), b.booked, slot)
			}
		}
		bk.at, bk.why = slot, why
	}
}

// dropStaleLocked drops the bookings of requests that did not come for
// their slot within bookingGrace (deleted without Forget).
func (p *pacer) dropStaleLocked(now time.Time) {
	stale := false
	for k, bk := range p.bookings {
		if now.Sub(bk.at) > bookingGrace {
			delete(p.bookings, k)
			stale = true
		}
	}
	if stale {
		p.rebookLocked(now)
	}
}

// pruneLocked drops the buckets that hold nothing (full, nothing in
// flight or held), once their number doubled since the last prune.
func (p *pacer) pruneLocked(now time.Time) {
	if len(p.buckets) < p.pruneAt {
		return
	}
	for id, b := range p.buckets {
		if b.inflight == 0 && !b.real.After(now) && !b.booked.After(now) && !b.holdUntil.After(now) {
			delete(p.buckets, id)
		}
	}
	p.pruneAt = max(1024, 2*len(p.buckets))
}

// rebuild counts what the store's states say was ordered and issued,
// after a restart: orders sent at their creation, certificates issued
// when their requests were answered, failed validations then, and orders
// in flight.
func (p *pacer) rebuild(states map[string]*State) {
	if p == nil {
		return
	}
	type event struct {
		at time.Time
		id bucketID
	}
	var evs []event
	p.mu.Lock()
	defer p.mu.Unlock()
	for key, st := range states {
		if st == nil || (st.Order.Status.URL == "" && st.OrderRequestedAt == nil) || p.exempt(st.Order.Spec.Replaces) && st.Order.Status.ReplacesRefused == "" {
			continue
		}
		dns, ips, problem := order.Identifiers(&st.Order.Spec)
		if problem != "" {
			continue
		}
		ids := demand(dns, ips)
		sentAt := st.Order.CreationTimestamp
		for _, id := range ids {
			if spendsOnSend(id.kind) {
				evs = append(evs, event{at: sentAt, id: id})
			}
		}
		o := st.Order.Status
		switch {
		case st.AnsweredAt != nil && o.State == order.StateValid:
			for _, id := range ids {
				if inFlight(id.kind) {
					evs = append(evs, event{at: *st.AnsweredAt, id: id})
				}
			}
		case st.AnsweredAt != nil:
			// Failed: nothing issued. (Its failed validations are not
			// known any more: the answer dropped its challenges.)
		default:
			r := &reservation{ids: ids, sent: true, finalizing: o.State == order.StateProcessing || o.State == order.StateValid}
			p.reserved[key] = r
			for _, id := range ids {
				if inFlight(id.kind) {
					p.bucket(id).inflight++
				}
			}
		}
	}
	slices.SortFunc(evs, func(a, b event) int { return a.at.Compare(b.at) })
	for _, ev := range evs {
		if l := p.limit(ev.id.kind); !l.IsZero() {
			b := p.bucket(ev.id)
			b.real = spend(l, b.real, ev.at)
			b.booked = maxTime(b.booked, b.real)
		}
	}
}

// shortDuration prints 168h0m0s as 168h and 1h30m0s as 1h30m.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// pacedError is an order not sent: it waits until at, for why.
type pacedError struct {
	at  time.Time
	why string
}

func (e *pacedError) Error() string { return "paced: " + e.why }
