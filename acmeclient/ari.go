package acmeclient

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

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
