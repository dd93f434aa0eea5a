package acmeclient

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// DefaultRequestTimeout bounds each HTTP request of a Client, from sending
// it to the last byte of the answer, when neither Config.RequestTimeout
// nor Config.HTTPClient's Timeout says otherwise. A CA answers in well
// under a second; a finalize that signs the certificate at once can take
// a few. 30 seconds lets a loaded CA answer, and ends a request to a
// server that accepted it and never answers in an error a retry follows,
// instead of holding the caller (and its host's loop) without end.
const DefaultRequestTimeout = 30 * time.Second

// ResponseLimit is the largest answer a Client reads to a request of kind,
// in bytes. An answer that runs past its bound is
// refused: the call fails with ErrServer, saying the answer's kind, its
// URL and the bound, and no more of it is read. An error answer (HTTP 400
// and above, a problem document, RFC 8555 §6.7) is bounded by
// 64 KiB instead, whatever the kind: what runs past it is cut, not
// refused, so that the call still fails with the status and Retry-After
// the server sent.
//
// RFC 8555 objects are small; the bounds are far above what any CA sends,
// and far below what would hurt a host that runs many clients:
//
//   - directory, account (newAccount, keyChange), nonce, renewalInfo,
//     revoke: 64 KiB. Let's Encrypt's directory, profiles and all, is
//     about 1 KiB; an account object with an RSA 4096 key about 1 KiB; a
//     nonce or revocation answer has no body.
//   - authorization, challenge: 256 KiB. An authorization is an
//     identifier and a few challenges; the largest is an invalid one
//     whose challenge carries validation records (up to ten HTTP-01
//     redirects, each with the addresses resolved) and an error with
//     subproblems, a few KiB.
//   - newOrder, order, finalize: 1 MiB. An order lists each identifier
//     (at most ~300 bytes) and each authorization's URL (~100 bytes):
//     Let's Encrypt's 100 names take ~40 KiB, a thousand ~400 KiB.
//   - certificate: 4 MiB. A chain in PEM is a few KiB, a leaf with
//     thousands of names a few hundred.
//   - anything else: 1 MiB.
//   - an error answer: 64 KiB. A problem document is a type, a detail
//     meant for people and a few subproblems; Let's Encrypt's are under
//     1 KiB.
//
// The server's words an Error or a status keeps are cut shorter still: a
// problem's detail to 1 KiB, each subproblem's to 256 bytes, at most ten
// subproblems listed and the rest counted, control characters (line
// breaks, escapes) made spaces; one line of a status or a log holds them.
func ResponseLimit(kind RequestKind) int64 {
	if n, ok := responseLimits[kind]; ok {
		return n
	}
	return responseLimits[KindOther]
}

var responseLimits = map[RequestKind]int64{
	KindDirectory:     64 << 10,
	KindNonce:         64 << 10,
	KindAccount:       64 << 10,
	KindRenewalInfo:   64 << 10,
	KindRevoke:        64 << 10,
	KindAuthorization: 256 << 10,
	KindChallenge:     256 << 10,
	KindNewOrder:      1 << 20,
	KindOrder:         1 << 20,
	KindFinalize:      1 << 20,
	KindCertificate:   4 << 20,
	KindOther:         1 << 20,
}

// problemLimit bounds an error answer (HTTP status 400 and above) of any
// kind; what runs past it is cut.
const problemLimit = 64 << 10

// maxDetailLen, maxSubproblemLen and maxSubproblems bound the server's
// words an Error or a status keeps (ResponseLimit).
const (
	maxDetailLen     = 1024
	maxSubproblemLen = 256
	maxSubproblems   = 10
)

// responseLimit is the bound of an answer to a request of kind with
// status.
func responseLimit(kind RequestKind, status int) int64 {
	if status >= 400 {
		return problemLimit
	}
	return ResponseLimit(kind)
}

// tooLargeError is an answer that ran past its bound; errors.Is(err,
// ErrServer).
type tooLargeError struct {
	kind  RequestKind
	url   string
	limit int64
}

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("the server's answer to the %s request %s runs past %s, the most an ACME %s answer may take: refused, not read further",
		e.kind, e.url, byteSize(e.limit), e.kind)
}

func (e *tooLargeError) Is(target error) bool { return target == ErrServer }

// byteSize prints a bound: "64 KiB", "4 MiB".
func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// readBounded reads res's body whole, up to limit bytes, and closes it;
// more is the body ran past limit (one byte more was read to know it, no
// more).
func readBounded(res *http.Response, limit int64) (body []byte, more bool, err error) {
	defer res.Body.Close()
	size := int64(512)
	if res.ContentLength >= 0 && res.ContentLength <= limit {
		size = res.ContentLength + 1 // room for the byte that says it ends
	}
	body = make([]byte, 0, size)
	for int64(len(body)) <= limit {
		if len(body) == cap(body) { // double, up to the bound and the byte past it
			grown := make([]byte, len(body), min(2*int64(cap(body)), limit+1))
			copy(grown, body)
			body = grown
		}
		room := body[len(body):min(int64(cap(body)), limit+1)]
		n, rerr := res.Body.Read(room)
		body = body[:len(body)+n]
		if rerr == io.EOF {
			return body, false, nil
		}
		if rerr != nil {
			return body, false, rerr
		}
	}
	return body[:limit], true, nil
}

// answerBody is a body read whole, closed as it is read.
type answerBody struct{ bytes.Reader }

func (*answerBody) Close() error { return nil }

// clip makes a server's words readable: control characters become spaces,
// and text past max bytes is cut at a character boundary, saying how much
// was left out.
func clip(s string, max int) string {
	clean := strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return ' '
		}
		return r
	}, s)
	if len(clean) <= max {
		return clean
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(clean[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes more)", clean[:cut], len(clean)-cut)
}

// insecureURLError is a URL refused; errors.Is(err, ErrInsecureURL).
// from says where the server named the URL; kind, for a request the
// transport refused, what the request was.
type insecureURLError struct {
	url, from string
	kind      RequestKind
}

func (e *insecureURLError) Error() string {
	what := e.from + " names " + urlFor(e.url) + ", which is not an https:// URL"
	if e.from == "" {
		what = "the " + string(e.kind) + " request was to go to " + urlFor(e.url) + ", which is not an https:// URL"
	}
	return what + ": refused, an ACME client sends nothing in the clear (RFC 8555 §6.1; InsecureAllowHTTP allows http:// for a test server on loopback)"
}

func (e *insecureURLError) Is(target error) bool { return target == ErrInsecureURL }

// maxURLLen bounds a URL the server sent in an error message.
const maxURLLen = 256

// checkURL says why the client may not send to raw, which from names (e.g.
// "the directory https://acme.example/dir, as newOrder,"), as an error of
// op; nil when it may: it must be an absolute https:// URL with a host, or
// http:// when insecure.
func checkURL(op, raw, from string, insecure bool) error {
	if secureEnough(raw, insecure) {
		return nil
	}
	return &Error{Op: op, Kind: ErrInsecureURL, Err: &insecureURLError{url: raw, from: from}}
}

func secureEnough(raw string, insecure bool) bool {
	u, err := url.Parse(raw)
	return err == nil && u.Host != "" && (u.Scheme == "https" || (insecure && u.Scheme == "http"))
}

// urlFor is a URL the server sent, for an error message.
func urlFor(u string) string { return clip(u, maxURLLen) }

// withCut adds to detail that the answer it came from was cut at its
// bound, when it was.
func withCut(detail string, rec *call) string {
	if rec == nil || rec.cut == 0 {
		return detail
	}
	note := "the answer ran past " + byteSize(rec.cut) + " and was cut there"
	if detail == "" {
		return note
	}
	return detail + " (" + note + ")"
}

// deadlineError is a request that reached its deadline
// (Config.RequestTimeout) before the last byte of its answer; it is a
// net.Error that timed out, errors.Is(err, context.DeadlineExceeded).
type deadlineError struct {
	kind    RequestKind
	url     string
	timeout time.Duration
	err     error
}

func (e *deadlineError) Error() string {
	return fmt.Sprintf("the server did not answer the %s request %s within %s (Config.RequestTimeout)", e.kind, urlFor(e.url), e.timeout)
}

func (e *deadlineError) Unwrap() error   { return e.err }
func (e *deadlineError) Timeout() bool   { return true }
func (e *deadlineError) Temporary() bool { return true }
