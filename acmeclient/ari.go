package acmeclient

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/renewal"
)

// RenewalInfo is the server's answer about one certificate (RFC 9773
// §4.2).
type RenewalInfo struct {
	// Window is the suggested renewal window and its explanation URL.
	Window renewal.ARIWindow
	// RetryAfter is the server's Retry-After, zero when it sent none.
	RetryAfter time.Time
	// NextPoll is when to ask again: Retry-After clamped to
	// [renewal.MinPoll, renewal.MaxPoll], renewal.DefaultPoll without it.
	NextPoll time.Time
}

// RenewalInfo fetches the ARI renewal information of a certificate: an
// unauthenticated GET of <renewalInfo>/<certID> (RFC 9773 §4.1). The
// certificate must carry an authority key identifier. It returns an error
// wrapping ErrUnsupported when the directory has no renewalInfo endpoint.
func (c *Client) RenewalInfo(ctx context.Context, cert *x509.Certificate) (RenewalInfo, error) {
	const op = "renewal info"
	now := c.now()
	dir, err := c.Directory(ctx)
	if err != nil {
		return RenewalInfo{}, err
	}
	if dir.RenewalInfo == "" {
		return RenewalInfo{}, errorf(op, ErrUnsupported, "the server's directory has no renewalInfo endpoint")
	}
	id, err := renewal.CertID(cert)
	if err != nil {
		return RenewalInfo{}, &Error{Op: op, Kind: ErrMalformed, Err: err}
	}
	cctx, rec := withCall(ctx, KindRenewalInfo)
	req, err := http.NewRequestWithContext(cctx, http.MethodGet, strings.TrimSuffix(dir.RenewalInfo, "/")+"/"+id, nil)
	if err != nil {
		return RenewalInfo{}, &Error{Op: op, Kind: ErrMalformed, Err: err}
	}
	req.Header.Set("User-Agent", c.ua())
	res, err := c.hc.Do(req)
	if err != nil {
		return RenewalInfo{}, classify(op, err, rec, now)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body) // bounded by the Transport
	if err != nil {
		return RenewalInfo{}, classify(op, err, rec, now)
	}
	if res.StatusCode != http.StatusOK {
		var p wireProblem
		_ = json.Unmarshal(body, &p)
		e := &Error{Op: op, Kind: kindOfProblem(res.StatusCode, p.Type), Status: res.StatusCode, Type: p.Type, Detail: p.text()}
		e.Detail = withCut(e.Detail, rec)
		if t, ok := ParseRetryAfter(res.Header.Get("Retry-After"), now); ok {
			e.RetryAfter = t
		}
		return RenewalInfo{}, e
	}
	var v struct {
		SuggestedWindow struct {
			Start time.Time `json:"start"`
			End   time.Time `json:"end"`
		} `json:"suggestedWindow"`
		ExplanationURL string `json:"explanationURL"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return RenewalInfo{}, &Error{Op: op, Kind: ErrServer, Detail: "the renewalInfo answer cannot be read: " + err.Error()}
	}
	info := RenewalInfo{Window: renewal.ARIWindow{Start: v.SuggestedWindow.Start, End: v.SuggestedWindow.End, ExplanationURL: v.ExplanationURL}}
	var wait time.Duration
	if t, ok := ParseRetryAfter(rec.header.Get("Retry-After"), now); ok {
		info.RetryAfter = t
		wait = max(t.Sub(now), time.Nanosecond) // "now" is raised to renewal.MinPoll
	}
	info.NextPoll = renewal.NextPoll(now, wait)
	return info, nil
}

// ariEntry is what an Issuer remembers of one certificate's renewal
// information: the last window the server gave (nil: none), when to ask
// again, and how many asks in a row failed.
type ariEntry struct {
	window   *renewal.ARIWindow
	next     time.Time
	failures int
}

// ariMinPrune is the number of remembered certificates past which an
// Issuer drops those it was not asked about for renewal.MaxPoll past
// their next poll (certificates it no longer serves).
const ariMinPrune = 1024

// RenewalWindow implements certificate.RenewalAdvisor: the CA's suggested
// renewal window for leaf, a certificate it issued (ACME Renewal
// Information, RFC 9773), which a host gives its renewal decision
// (package certificate/host does, for every certificate whose issuerRef
// names the issuer). It returns no window, and no error, when
// IssuerConfig.DisableRenewalInfo is set, when the server's directory has
// no renewalInfo endpoint, and for a certificate the server does not
// know (one another CA issued: the server answers not found or
// malformed), which it asks about again after renewal.DefaultPoll.
//
// How often it asks the server, per certificate: once when first asked,
// then at the time the answer said — the server's Retry-After within
// [renewal.MinPoll, renewal.MaxPoll], renewal.DefaultPoll (6 h) without
// one — and never in between: a host may ask on every pass, the answers
// until then come from memory, and next tells it when to ask again.
// After a failed request (an error here, which a host reports), it asks
// again after a delay that doubles per failure in a row from
// renewal.MinPoll up to renewal.DefaultPoll, or at the server's
// Retry-After when later; while the issuer takes the server as
// unreachable (see Issuer), not at all. Pebble and Let's Encrypt say 6 h:
// four requests a day per certificate.
//
// The last window the server gave is kept across failures. What the
// issuer remembers of certificates it is no longer asked about is
// dropped.
func (i *Issuer) RenewalWindow(ctx context.Context, _ *certificate.Certificate, leaf *x509.Certificate, now time.Time) (*renewal.ARIWindow, time.Time, error) {
	if i.cfg.DisableRenewalInfo || leaf == nil || len(leaf.AuthorityKeyId) == 0 {
		return nil, time.Time{}, nil
	}
	id, err := renewal.CertID(leaf)
	if err != nil {
		return nil, time.Time{}, nil
	}
	i.ariMu.Lock()
	e, known := i.ari[id]
	if known && now.Before(e.next) {
		w, next := e.window, e.next
		i.ariMu.Unlock()
		return w, next, nil
	}
	i.ariMu.Unlock()
	if _, down := i.unreachable(now); down {
		i.downMu.Lock()
		until := i.downUntil
		i.downMu.Unlock()
		var w *renewal.ARIWindow
		if known {
			w = e.window
		}
		return w, until, nil
	}

	start := i.cfg.Client.now()
	info, err := i.cfg.Client.RenewalInfo(ctx, leaf)
	i.ariMu.Lock()
	defer i.ariMu.Unlock()
	e = i.ari[id]
	if e == nil {
		e = &ariEntry{}
		i.prune(now)
		i.ari[id] = e
	}
	switch {
	case err == nil:
		e.failures = 0
		w := info.Window
		e.window = &w
		var wait time.Duration
		if !info.RetryAfter.IsZero() {
			// Retry-After counts whole seconds from the answer.
			wait = max(info.RetryAfter.Sub(start).Round(time.Second), time.Nanosecond)
		}
		e.next = renewal.NextPoll(now, wait)
		return e.window, e.next, nil
	case errors.Is(err, ErrUnsupported):
		delete(i.ari, id)
		return nil, time.Time{}, nil
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrMalformed):
		// A certificate the server does not know: another CA's.
		e.failures = 0
		e.window = nil
		e.next = now.Add(renewal.DefaultPoll)
		return nil, e.next, nil
	case ctx.Err() != nil:
		return e.window, now.Add(renewal.MinPoll), err
	}
	e.failures++
	d := renewal.MinPoll
	for n := 1; n < e.failures && d < renewal.DefaultPoll; n++ {
		d *= 2
	}
	e.next = now.Add(min(d, renewal.DefaultPoll))
	if at, ok := RetryAfter(err); ok && at.After(e.next) {
		e.next = renewal.NextPoll(now, at.Sub(start))
	}
	if errors.Is(err, ErrNetwork) {
		err = fmt.Errorf("%w: %w", certificate.ErrCAUnreachable, err)
	}
	return e.window, e.next, fmt.Errorf("acmeclient: renewal information of certificate %s: %w", id, err)
}

// prune drops what the issuer remembers of certificates it was not asked
// about for long, once it remembers many; the caller holds ariMu.
func (i *Issuer) prune(now time.Time) {
	if len(i.ari) < max(ariMinPrune, i.ariPruneAt) {
		return
	}
	for id, e := range i.ari {
		if now.Sub(e.next) > renewal.MaxPoll {
			delete(i.ari, id)
		}
	}
	i.ariPruneAt = 2 * len(i.ari)
}
