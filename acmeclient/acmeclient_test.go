package acmeclient

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/acme"

	"github.com/certlife/certlife/challenge"
)

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// RFC 9110 §10.2.3: Retry-After is delay-seconds or an HTTP date.
func TestParseRetryAfter(t *testing.T) {
	tests := map[string]struct {
		in   string
		want time.Time
		ok   bool
	}{
		"seconds":                  {"120", t0.Add(2 * time.Minute), true},
		"zero seconds is now":      {"0", t0, true},
		"an HTTP date":             {"Sun, 22 Nov 2026 13:00:00 GMT", t0.Add(time.Hour), true},
		"spaces around":            {" 30 ", t0.Add(30 * time.Second), true},
		"negative is refused":      {"-5", time.Time{}, false},
		"empty is none":            {"", time.Time{}, false},
		"garbage is none":          {"soon", time.Time{}, false},
		"absurd delays are capped": {"99999999999999", t0.Add(10 * 365 * 24 * time.Hour), true},
		"an HTTP date far in the future is capped as the seconds are": {"Fri, 31 Dec 9999 23:59:59 GMT", t0.Add(10 * 365 * 24 * time.Hour), true},
		"an HTTP date just inside the cap is kept":                    {"Mon, 17 Nov 2036 11:00:00 GMT", time.Date(2036, 11, 17, 11, 0, 0, 0, time.UTC), true},
		"an HTTP date in the obsolete RFC 850 form is read too":       {"Sunday, 22-Nov-26 13:00:00 GMT", t0.Add(time.Hour), true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := ParseRetryAfter(tt.in, t0)
			if ok != tt.ok || !got.Equal(tt.want) {
				t.Fatalf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
			}
		})
	}
}

// RFC 8555 §6.7 problem types map to the error kinds hosts act on.
func TestClassify(t *testing.T) {
	hdr := func(v string) http.Header { return http.Header{"Retry-After": {v}} }
	tests := map[string]struct {
		err        error
		kind       error
		retryable  bool
		retryAfter time.Time
	}{
		"rate limited with Retry-After in seconds": {
			&acme.Error{StatusCode: 429, ProblemType: "urn:ietf:params:acme:error:rateLimited", Detail: "too many certificates", Header: hdr("3600")},
			ErrRateLimited, true, t0.Add(time.Hour)},
		"rate limited with an HTTP date": {
			&acme.Error{StatusCode: 429, ProblemType: "urn:ietf:params:acme:error:rateLimited", Header: hdr("Mon, 23 Nov 2026 12:00:00 GMT")},
			ErrRateLimited, true, t0.Add(24 * time.Hour)},
		"rate limited with an HTTP date far in the future: capped as the seconds are (RFC 9110 §10.2.3)": {
			&acme.Error{StatusCode: 429, ProblemType: "urn:ietf:params:acme:error:rateLimited", Header: hdr("Fri, 31 Dec 9999 23:59:59 GMT")},
			ErrRateLimited, true, t0.Add(10 * 365 * 24 * time.Hour)},
		"rate limited with absurd seconds: the same cap": {
			&acme.Error{StatusCode: 429, ProblemType: "urn:ietf:params:acme:error:rateLimited", Header: hdr("315569520000")},
			ErrRateLimited, true, t0.Add(10 * 365 * 24 * time.Hour)},
		"a bare 429": {&acme.Error{StatusCode: 429}, ErrRateLimited, true, time.Time{}},
		"a redirect to another server": {
			&url.Error{Op: "Get", URL: "https://acme.example/dir", Err: &redirectError{method: "GET", from: "https://acme.example/dir", to: "https://elsewhere.example/dir"}},
			ErrRedirect, false, time.Time{}},
		"unauthorized": {
			&acme.Error{StatusCode: 403, ProblemType: "urn:ietf:params:acme:error:unauthorized"}, ErrUnauthorized, false, time.Time{}},
		"rejected identifier": {
			&acme.Error{StatusCode: 400, ProblemType: "urn:ietf:params:acme:error:rejectedIdentifier"}, ErrRejectedIdentifier, false, time.Time{}},
		"CAA forbids": {&acme.Error{StatusCode: 403, ProblemType: "urn:ietf:params:acme:error:caa"}, ErrRejectedIdentifier, false, time.Time{}},
		"malformed":   {&acme.Error{StatusCode: 400, ProblemType: "urn:ietf:params:acme:error:malformed"}, ErrMalformed, false, time.Time{}},
		"bad CSR":     {&acme.Error{StatusCode: 400, ProblemType: "urn:ietf:params:acme:error:badCSR"}, ErrMalformed, false, time.Time{}},
		"server error with Retry-After": {
			&acme.Error{StatusCode: 503, ProblemType: "urn:ietf:params:acme:error:serverInternal", Header: hdr("60")}, ErrServer, true, t0.Add(time.Minute)},
		"a bare 502":       {&acme.Error{StatusCode: 502}, ErrServer, true, time.Time{}},
		"not found":        {&acme.Error{StatusCode: 404}, ErrNotFound, false, time.Time{}},
		"already replaced": {&acme.Error{StatusCode: 409, ProblemType: "urn:ietf:params:acme:error:alreadyReplaced"}, ErrAlreadyReplaced, false, time.Time{}},
		"order not ready":  {&acme.Error{StatusCode: 403, ProblemType: "urn:ietf:params:acme:error:orderNotReady"}, ErrOrderNotReady, true, time.Time{}},
		"a cancelled context": {
			context.Canceled, ErrNetwork, true, time.Time{}},
		"something else": {errors.New("acme: error reading order: EOF"), ErrServer, true, time.Time{}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			err := classify("op", tt.err, nil, t0)
			if !errors.Is(err, tt.kind) {
				t.Fatalf("kind: %v is not %v", err, tt.kind)
			}
			if Retryable(err) != tt.retryable {
				t.Fatalf("Retryable(%v) = %v", err, !tt.retryable)
			}
			at, ok := RetryAfter(err)
			if ok != !tt.retryAfter.IsZero() || !at.Equal(tt.retryAfter) {
				t.Fatalf("RetryAfter = %v, %v; want %v", at, ok, tt.retryAfter)
			}
			if !errors.Is(err, tt.err) && !errors.As(err, new(*acme.Error)) {
				t.Fatalf("the cause is lost: %v", err)
			}
		})
	}
	if Retryable(nil) {
		t.Fatal("nil is retryable")
	}
}

func TestErrorMessageSaysWhatAndWhen(t *testing.T) {
	err := classify("create order", &acme.Error{StatusCode: 429, ProblemType: "urn:ietf:params:acme:error:rateLimited",
		Detail: "too many new orders", Header: http.Header{"Retry-After": {"30"}}}, nil, t0)
	want := "acmeclient: create order: too many new orders (rateLimited); retry after 2026-11-22T12:00:30Z"
	if err.Error() != want {
		t.Fatalf("%q\nwant %q", err.Error(), want)
	}
}

// An Error says what it can, whatever it holds: a zero Error, or one with
// only some of its fields set, never panics.
func TestErrorMessageOfPartialErrors(t *testing.T) {
	tests := map[string]struct {
		err  *Error
		want string
	}{
		"a zero Error":                    {&Error{}, "acmeclient: ACME call failed"},
		"only a kind":                     {&Error{Kind: ErrServer}, "acmeclient: server error"},
		"only an operation":               {&Error{Op: "finalize"}, "acmeclient: finalize: ACME call failed"},
		"an operation and an HTTP status": {&Error{Op: "get order", Status: 503}, "acmeclient: get order: ACME call failed (HTTP 503)"},
		"an underlying error before the kind": {&Error{Op: "nonce", Kind: ErrNetwork, Err: errors.New("connection refused")},
			"acmeclient: nonce: connection refused"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			require.NotPanics(t, func() { _ = tt.err.Error() })
			require.Equal(t, tt.want, tt.err.Error())
		})
	}
}

func TestNewRejectsBadConfigByField(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tests := map[string]struct {
		cfg  Config
		want string
	}{
		"no directory":   {Config{Key: key}, "DirectoryURL is required"},
		"not a URL":      {Config{DirectoryURL: "acme.example", Key: key}, `DirectoryURL "acme.example" is not an https:// URL`},
		"another scheme": {Config{DirectoryURL: "ftp://acme.example/dir", Key: key}, `DirectoryURL "ftp://acme.example/dir" is not an https:// URL`},
		"no host":        {Config{DirectoryURL: "https:///dir", Key: key}, `DirectoryURL "https:///dir" is not an https:// URL`},
		"http:// without the insecure option": {Config{DirectoryURL: "http://acme.example/dir", Key: key},
			`DirectoryURL "http://acme.example/dir" is http://: anyone on the way could read and answer the ACME requests in the server's place; use the server's https:// URL, or set InsecureAllowHTTP`},
		"no key":            {Config{DirectoryURL: "https://acme.example/dir"}, "Key is required"},
		"negative retries":  {Config{DirectoryURL: "https://acme.example/dir", Key: key, MaxBadNonceRetries: -1}, "MaxBadNonceRetries -1 is negative"},
		"every problem too": {Config{}, "DirectoryURL is required; Key is required"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New: %v; want it to say %q", err, tt.want)
			}
		})
	}
}

// An http:// directory is accepted only when the user asks for it in so
// many words (Config.InsecureAllowHTTP); https:// needs nothing.
func TestNewAcceptsHTTPOnlyWhenToldTo(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for _, cfg := range []Config{
		{DirectoryURL: "https://acme.example/dir", Key: key},
		{DirectoryURL: "http://127.0.0.1:14000/dir", Key: key, InsecureAllowHTTP: true},
		{DirectoryURL: "https://acme.example/dir", Key: key, InsecureAllowHTTP: true},
	} {
		_, err := New(cfg)
		require.NoError(t, err, "%s, InsecureAllowHTTP %v", cfg.DirectoryURL, cfg.InsecureAllowHTTP)
	}
}

// The client follows a redirect only to the scheme, host and port the
// request was for (RFC 3986 §6.2.3: a missing port is the scheme's
// default; host names compare without case), and asks the user's own
// CheckRedirect only about those.
func TestRedirectsStayOnTheServer(t *testing.T) {
	tests := map[string]struct {
		from, to string
		refused  bool
	}{
		"the same server, another path":           {"https://acme.example/dir", "https://acme.example/v2/dir", false},
		"the same server, its default port named": {"https://acme.example/dir", "https://ACME.example:443/dir", false},
		"another host":                               {"https://acme.example/dir", "https://elsewhere.example/dir", true},
		"another port":                               {"https://acme.example/dir", "https://acme.example:8443/dir", true},
		"down to http on the same host":              {"https://acme.example/dir", "http://acme.example/dir", true},
		"a look-alike host":                          {"https://acme.example/dir", "https://acme.example.evil.example/dir", true},
		"a host in the userinfo does not fool it":    {"https://acme.example/dir", "https://acme.example@elsewhere.example/dir", true},
		"a query is left out of what the error says": {"https://acme.example/dir", "https://elsewhere.example/dir?token=secret", true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			asked := 0
			check := sameOriginRedirects(func(*http.Request, []*http.Request) error { asked++; return nil })
			from, err := http.NewRequest(http.MethodGet, tc.from, nil)
			require.NoError(t, err)
			to, err := http.NewRequest(http.MethodGet, tc.to, nil)
			require.NoError(t, err)
			err = check(to, []*http.Request{from})
			if !tc.refused {
				require.NoError(t, err)
				require.Equal(t, 1, asked, "the user's CheckRedirect is asked about a redirect on the server")
				return
			}
			require.ErrorIs(t, err, ErrRedirect)
			require.Zero(t, asked, "the user's CheckRedirect could let it through")
			require.Contains(t, err.Error(), "the server redirected GET "+tc.from+" to ")
			require.NotContains(t, err.Error(), "secret", "the query of the redirect is printed")
		})
	}
	t.Run("without a CheckRedirect of the user's, at most 10 redirects", func(t *testing.T) {
		check := sameOriginRedirects(nil)
		req, _ := http.NewRequest(http.MethodGet, "https://acme.example/dir", nil)
		via := make([]*http.Request, 10)
		for i := range via {
			via[i] = req
		}
		require.NoError(t, check(req, via[:9]))
		require.ErrorContains(t, check(req, via), "stopped after 10 redirects")
	})
}

func TestLinkRel(t *testing.T) {
	h := http.Header{"Link": {
		`<https://ca/dir>;rel="index"`,
		`<https://ca/cert/1/1>;rel="alternate", <https://ca/cert/1/2>; rel=alternate`,
		`broken;rel="alternate"`,
	}}
	got := linkRel(h, "alternate")
	if len(got) != 2 || got[0] != "https://ca/cert/1/1" || got[1] != "https://ca/cert/1/2" {
		t.Fatalf("alternates %v", got)
	}
}

// RFC 8555 §8.3: the key authorization is served at
// /.well-known/acme-challenge/<token> until cleaned up.
func TestHTTP01Handler(t *testing.T) {
	var s HTTP01Handler
	ctx := context.Background()
	tok := Presentation{Type: challenge.TypeHTTP01, Identifier: "web.example", Token: "tok", KeyAuthorization: "tok.thumb"}
	if err := s.Present(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if err := s.Present(ctx, Presentation{Token: "a/b", KeyAuthorization: "x"}); err == nil {
		t.Fatal("a token with a slash was accepted")
	}
	srv := httptest.NewServer(&s)
	defer srv.Close()
	get := func(path string) (int, string) {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := get(HTTP01Path + "tok"); code != 200 || body != "tok.thumb" {
		t.Fatalf("GET token: %d %q", code, body)
	}
	if code, _ := get(HTTP01Path + "other"); code != 404 {
		t.Fatalf("GET an unknown token: %d", code)
	}
	if code, _ := get("/tok"); code != 404 {
		t.Fatalf("GET outside the path: %d", code)
	}
	require.NoError(t, s.CleanUp(ctx, tok))
	require.NoError(t, s.CleanUp(ctx, tok))
	if code, _ := get(HTTP01Path + "tok"); code != 404 || s.Presented() != 0 {
		t.Fatalf("after clean-up: %d, %d presented", code, s.Presented())
	}
}

// RFC 8555 §8.4: the TXT record is base64url(SHA-256(key authorization))
// at _acme-challenge.<domain>, the wildcard label removed.
func TestDNS01Record(t *testing.T) {
	if got := DNS01Name("*.Example.COM"); got != "_acme-challenge.example.com." {
		t.Fatalf("name %q", got)
	}
	// The example of RFC 8555 §8.4 uses this token; the value is the
	// SHA-256 of the key authorization, base64url, 43 characters.
	v := DNS01Value("evaGxfADs6pSRb2LAv9IZf17Dt3juxGJ-PCt92wr-oA.thumbprint")
	if len(v) != 43 || strings.ContainsAny(v, "+/=") {
		t.Fatalf("value %q is not 43 base64url characters", v)
	}
}

func TestCountsPrintSortedByKind(t *testing.T) {
	c := Counts{ByKind: map[RequestKind]int{KindOrder: 12, KindNewOrder: 1, KindAuthorization: 2}, Total: 15, BadNonces: 3}
	require.Equal(t, "authorization=2 newOrder=1 order=12 (total 15, bad nonces 3)", c.String())
	require.Equal(t, " (total 0, bad nonces 0)", Counts{}.String())
}

// RFC 8555 §6.7.1: a problem may carry subproblems, each about one
// identifier; the server's words name each identifier before its detail,
// whether the problem came in an order's body or in an error response.
func TestProblemWordsNameEachIdentifier(t *testing.T) {
	body := `{"type":"urn:ietf:params:acme:error:malformed","detail":"Some of the identifiers requested were rejected",
		"subproblems":[{"type":"urn:ietf:params:acme:error:malformed","detail":"Invalid underscore in DNS name \"_example.org\"",
		"identifier":{"type":"dns","value":"_example.org"}},{"type":"urn:ietf:params:acme:error:rejectedIdentifier",
		"detail":"This CA will not issue for \"example.net\"","identifier":{"type":"dns","value":"example.net"}},
		{"type":"urn:ietf:params:acme:error:malformed","detail":"no identifier"}]}`
	var p wireProblem
	require.NoError(t, json.Unmarshal([]byte(body), &p))
	want := `Some of the identifiers requested were rejected; _example.org: Invalid underscore in DNS name "_example.org"; ` +
		`example.net: This CA will not issue for "example.net"; no identifier`
	require.Equal(t, want, p.text())
	ae := &acme.Error{ProblemType: p.Type, Detail: p.Detail, Subproblems: p.Subproblems}
	require.Equal(t, want, problemText(ae))
	require.Equal(t, "acmeclient: create order: Some of the identifiers requested were rejected [_example.org: Invalid underscore in DNS name "+
		`"_example.org"; example.net: This CA will not issue for "example.net"; no identifier] (malformed)`, classify("create order", ae, nil, t0).Error())
	require.Equal(t, "rateLimited", (&wireProblem{Type: "urn:ietf:params:acme:error:rateLimited"}).text(), "the type stands in for missing words")
}
