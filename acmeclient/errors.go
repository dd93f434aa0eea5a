package acmeclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/acme"
)

// Sentinel errors; every *Error wraps exactly one, for errors.Is.
var (
	// ErrRateLimited: the server refused for a rate limit (RFC 8555
	// rateLimited or HTTP 429); Error.RetryAfter says when to try again.
	ErrRateLimited = errors.New("acmeclient: rate limited")
	// ErrUnauthorized: the account may not do this (unauthorized,
	// accountDoesNotExist, userActionRequired, externalAccountRequired).
	ErrUnauthorized = errors.New("acmeclient: unauthorized")
	// ErrRejectedIdentifier: the server will not issue for a name
	// (rejectedIdentifier, unsupportedIdentifier, caa, invalid contact).
	ErrRejectedIdentifier = errors.New("acmeclient: identifier rejected")
	// ErrMalformed: the request was wrong and will be wrong again
	// (malformed, badCSR, badPublicKey, an unknown profile, …).
	ErrMalformed = errors.New("acmeclient: malformed request")
	// ErrNotFound: the resource does not exist (HTTP 404).
	ErrNotFound = errors.New("acmeclient: not found")
	// ErrAlreadyReplaced: the certificate named in replaces already has a
	// replacement (RFC 9773 §5).
	ErrAlreadyReplaced = errors.New("acmeclient: certificate already replaced")
	// ErrOrderNotReady: finalize came before every authorization was valid.
	ErrOrderNotReady = errors.New("acmeclient: order not ready")
	// ErrServer: the server failed (5xx, serverInternal, a response that
	// cannot be read, bad nonces past the retry limit).
	ErrServer = errors.New("acmeclient: server error")
	// ErrNetwork: the request did not complete (connection, timeout,
	// cancelled context).
	ErrNetwork = errors.New("acmeclient: network error")
	// ErrUnsupported: the server does not offer what was asked (no ARI
	// endpoint, no profiles).
	ErrUnsupported = errors.New("acmeclient: not supported by the server")
	// ErrRedirect: the server redirected a request to another scheme,
	// host or port, which the client refuses to follow (Config.HTTPClient):
	// whoever answers there is not the server the client was configured
	// for. A retry meets the same redirect: not retryable.
	ErrRedirect = errors.New("acmeclient: redirect to another server refused")
	// ErrInsecureURL: the server named a URL for the client to send to
	// that is not https:// — in its directory, the Location of what it
	// created, an order, an authorization or a Link header — and the
	// client was not configured with InsecureAllowHTTP. Whatever went
	// there would travel in the clear, signed with the account key (RFC
	// 8555 §6.1 requires https). The error names the URL and where it
	// came from; nothing is sent to it, and a retry meets it again: not
	// retryable.
	ErrInsecureURL = errors.New("acmeclient: URL that is not https:// refused")
)

// Error is a failed ACME call: what was attempted, what the server said,
// and when to try again.
type Error struct {
	// Op is the call, e.g. "finalize".
	Op string
	// Kind is one of the sentinel errors.
	Kind error
	// Status is the HTTP status, when the server answered.
	Status int
	// Type is the ACME problem type (RFC 8555 §6.7), e.g.
	// "urn:ietf:params:acme:error:rateLimited".
	Type string
	// Detail is the server's explanation, meant for people: a problem
	// document's detail and subproblems, cut to a readable length
	// (ResponseLimit says how), or what the client found wrong with the
	// answer.
	Detail string
	// RetryAfter is when the server allows another attempt (Retry-After,
	// seconds or an HTTP date); zero when it said nothing.
	RetryAfter time.Time
	// Err is the underlying error.
	Err error
}

// Error says what failed and why, in one line: the call, the server's
// words (else the underlying error, else the kind), the ACME problem type
// or HTTP status, and the Retry-After. A zero Error reads "acmeclient:
// ACME call failed".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("acmeclient: ")
	if e.Op != "" {
		b.WriteString(e.Op + ": ")
	}
	switch {
	case e.Detail != "":
		b.WriteString(e.Detail)
	case e.Err != nil:
		b.WriteString(e.Err.Error())
	case e.Kind != nil:
		b.WriteString(strings.TrimPrefix(e.Kind.Error(), "acmeclient: "))
	default:
		b.WriteString("ACME call failed")
	}
	if e.Type != "" {
		b.WriteString(" (" + shortType(e.Type) + ")")
	} else if e.Status != 0 {
		b.WriteString(" (HTTP " + strconv.Itoa(e.Status) + ")")
	}
	if !e.RetryAfter.IsZero() {
		b.WriteString("; retry after " + e.RetryAfter.UTC().Format(time.RFC3339))
	}
	return b.String()
}

// Is matches the error's kind.
func (e *Error) Is(target error) bool { return target == e.Kind }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

func shortType(t string) string {
	return strings.TrimPrefix(strings.TrimPrefix(t, "urn:ietf:params:acme:error:"), "urn:acme:error:")
}

// Retryable reports whether a later attempt of the same call can succeed:
// rate limits, server errors, network errors and an order that was not
// ready yet. Nil is not retryable.
func Retryable(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return err != nil && isNetwork(err)
	}
	switch e.Kind {
	case ErrRateLimited, ErrServer, ErrNetwork, ErrOrderNotReady:
		return true
	}
	return false
}

// RetryAfter returns when the server allows another attempt, if it said.
func RetryAfter(err error) (time.Time, bool) {
	var e *Error
	if errors.As(err, &e) && !e.RetryAfter.IsZero() {
		return e.RetryAfter, true
	}
	return time.Time{}, false
}

// ParseRetryAfter reads a Retry-After header value (RFC 9110 §10.2.3):
// delay-seconds or an HTTP date, either clamped to ten years from now.
// ok is false for an empty or unreadable value, or a negative delay.
func ParseRetryAfter(v string, now time.Time) (time.Time, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return time.Time{}, false
		}
		if secs > int64(maxRetryAfter/time.Second) {
			secs = int64(maxRetryAfter / time.Second)
		}
		return now.Add(time.Duration(secs) * time.Second), true
	}
	if t, err := http.ParseTime(v); err == nil {
		if limit := now.Add(maxRetryAfter); t.After(limit) {
			t = limit
		}
		return t, true
	}
	return time.Time{}, false
}

// maxRetryAfter clamps a Retry-After: no server means longer, and a date
// beyond it would overflow the arithmetic of durations. The machines fail
// an order asked to wait much less than this (order.Config.MaxRetryAfter).
const maxRetryAfter = 10 * 365 * 24 * time.Hour

// classify turns an error from x/crypto/acme, our own requests or the
// network into an *Error.
//
// rec is the call's record, nil when there is none: its headers (the
// Retry-After), and whether the answer was cut at its bound.
func classify(op string, err error, rec *call, now time.Time) error {
	if err == nil {
		return nil
	}
	var already *Error
	if errors.As(err, &already) {
		return err
	}
	e := &Error{Op: op, Err: err}
	header := header(rec)
	var ae *acme.Error
	var tooLarge *tooLargeError
	var insecure *insecureURLError
	var late *deadlineError
	switch {
	case errors.As(err, &ae):
		e.Status, e.Type, e.Detail = ae.StatusCode, ae.ProblemType, clip(ae.Detail, maxDetailLen)
		if ae.Header != nil {
			header = ae.Header
		}
		e.Kind = kindOfProblem(ae.StatusCode, ae.ProblemType)
		if len(ae.Subproblems) > 0 {
			e.Detail += " [" + subproblems(ae.Subproblems) + "]"
		}
		e.Detail = withCut(e.Detail, rec)
	case errors.As(err, &tooLarge):
		e.Kind, e.Detail = ErrServer, tooLarge.Error()
	case errors.As(err, &insecure):
		e.Kind, e.Detail = ErrInsecureURL, insecure.Error()
	case errors.As(err, &late):
		e.Kind, e.Detail = ErrNetwork, late.Error()
	case errors.Is(err, ErrRedirect):
		e.Kind = ErrRedirect
		var re *redirectError
		if errors.As(err, &re) {
			e.Detail = re.Error()
		}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), isNetwork(err):
		e.Kind = ErrNetwork
	default:
		e.Kind = ErrServer
	}
	if header != nil {
		if t, ok := ParseRetryAfter(header.Get("Retry-After"), now); ok {
			e.RetryAfter = t
		}
	}
	return e
}

func kindOfProblem(status int, typ string) error {
	switch shortType(strings.ToLower(typ)) {
	case "ratelimited":
		return ErrRateLimited
	case "unauthorized", "accountdoesnotexist", "useractionrequired", "externalaccountrequired":
		return ErrUnauthorized
	case "rejectedidentifier", "unsupportedidentifier", "caa", "invalidcontact", "unsupportedcontact":
		return ErrRejectedIdentifier
	case "malformed", "badcsr", "badpublickey", "badsignaturealgorithm", "badrevocationreason", "invalidprofile":
		return ErrMalformed
	case "alreadyreplaced":
		return ErrAlreadyReplaced
	case "ordernotready":
		return ErrOrderNotReady
	case "serverinternal", "badnonce":
		return ErrServer
	}
	switch {
	case status == http.StatusTooManyRequests:
		return ErrRateLimited
	case status == http.StatusNotFound:
		return ErrNotFound
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return ErrUnauthorized
	case status >= 500:
		return ErrServer
	case status >= 400:
		return ErrMalformed
	}
	return ErrServer
}

func isNetwork(err error) bool {
	var ne net.Error
	var oe *net.OpError
	return errors.As(err, &ne) || errors.As(err, &oe)
}

func errorf(op string, kind error, format string, args ...any) *Error {
	return &Error{Op: op, Kind: kind, Detail: fmt.Sprintf(format, args...)}
}
