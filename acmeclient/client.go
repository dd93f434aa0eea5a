package acmeclient

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/cryptosigner"
	"golang.org/x/crypto/acme"
	"k8s.io/utils/clock"
)

// Config configures a Client. DirectoryURL and Key are required; every
// other field has a documented zero value.
type Config struct {
	// DirectoryURL is the ACME directory, e.g.
	// https://acme-v02.api.letsencrypt.org/directory. It must be https://
	// unless InsecureAllowHTTP is set.
	DirectoryURL string
	// InsecureAllowHTTP accepts an http:// DirectoryURL, and http:// URLs
	// from the server: its directory's endpoints, the Location of what it
	// creates, the URLs in its orders, authorizations and Link headers.
	// Every request then travels in the clear, where anyone on the way can
	// read it and answer in the server's place (a directory that points
	// elsewhere, a certificate for another key, challenges that never
	// pass): for a test server on loopback only. False, the zero value,
	// refuses each of them (ErrInsecureURL), so that no request, signed
	// with the account key or not, is sent in the clear (RFC 8555 §6.1);
	// acmetest's server is https and needs no such thing.
	InsecureAllowHTTP bool
	// Key is the account key: an ECDSA (P-256, P-384, P-521), RSA or
	// Ed25519 private key. It is never printed.
	Key crypto.Signer
	// HTTPClient carries the requests; nil means http.DefaultClient's
	// settings. Its Transport is wrapped by the Client's Transport, which
	// bounds every answer (ResponseLimit) and refuses http:// URLs. The
	// Client follows a redirect only to the scheme, host and port the
	// request was for, and refuses one elsewhere (ErrRedirect), before
	// its CheckRedirect, if any, is asked.
	HTTPClient *http.Client
	// RequestTimeout bounds each HTTP request, from sending it to the last
	// byte of the answer, so that a server that accepts a request and
	// never answers ends it in an error a retry follows (ErrNetwork),
	// which names the request. Zero means HTTPClient's Timeout when it has
	// one (which then bounds each request in its place), else
	// DefaultRequestTimeout (30 s); negative means no bound but the
	// context's.
	RequestTimeout time.Duration
	// UserAgent is prepended to the User-Agent of every request.
	UserAgent string
	// Clock is the time of SyncedAt, Retry-After and the like; nil means
	// the wall clock. Hosts on a fake clock (k8s.io/utils/clock/testing)
	// pass theirs.
	Clock clock.PassiveClock
	// MaxBadNonceRetries bounds the retries of a request the server
	// rejected for a bad nonce (RFC 8555 §6.5); zero means 20, which a
	// server rejecting half of all nonces fails once in a million.
	MaxBadNonceRetries int
}

// Client carries out ACME actions against one server with one account.
// Every call is single-shot: it makes the requests the action needs, never
// polls, never sleeps (a bad nonce is retried at once with the server's new
// nonce), and returns what it saw and, when the server said, when to look
// again. A Client is safe for concurrent use, EnsureAccount included.
// Every call that acts on the account's behalf (orders, authorizations,
// challenges, certificates, revocation) needs EnsureAccount to have
// succeeded first, and fails with ErrUnauthorized until it has.
type Client struct {
	acme       *acme.Client
	transport  *Transport
	hc         *http.Client
	key        crypto.Signer
	clock      clock.PassiveClock
	maxRetries int
	userAgent  string
	allowHTTP  bool

	mu         sync.Mutex
	accountURL string
	dir        *Directory
	// orders is the account's orders URL ("" when the server keeps
	// none), once ordersKnown (FindOrder).
	orders      string
	ordersKnown bool
	// nonces are the Replay-Nonces of the responses to signedPost's own
	// requests, newest last (x/crypto/acme keeps those of its own).
	nonces []string
}

// maxPooledNonces bounds the client's own nonces; the oldest go first.
const maxPooledNonces = 32

// ErrConfig is wrapped by the errors of New and NewIssuer.
var ErrConfig = errors.New("acmeclient: invalid config")

// New returns a Client. It makes no request.
func New(cfg Config) (*Client, error) {
	var problems []string
	if problem := checkDirectoryURL(cfg.DirectoryURL, cfg.InsecureAllowHTTP); problem != "" {
		problems = append(problems, problem)
	}
	switch k := cfg.Key.(type) {
	case nil:
		problems = append(problems, "Key is required")
	case *ecdsa.PrivateKey, *rsa.PrivateKey, ed25519.PrivateKey:
	default:
		problems = append(problems, fmt.Sprintf("Key of type %T is not an ECDSA, RSA or Ed25519 private key", k))
	}
	if cfg.MaxBadNonceRetries < 0 {
		problems = append(problems, fmt.Sprintf("MaxBadNonceRetries %d is negative", cfg.MaxBadNonceRetries))
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrConfig, strings.Join(problems, "; "))
	}
	base := http.DefaultTransport
	hc := &http.Client{}
	if cfg.HTTPClient != nil {
		*hc = *cfg.HTTPClient
		if hc.Transport != nil {
			base = hc.Transport
		}
	}
	// The Transport keeps the deadline of each request, so that the
	// error can say which request and deadline it was.
	timeout := cfg.RequestTimeout
	switch {
	case timeout < 0:
		timeout = 0
	case timeout == 0 && hc.Timeout > 0:
		timeout = hc.Timeout
	case timeout == 0:
		timeout = DefaultRequestTimeout
	}
	hc.Timeout = 0
	tr := &Transport{Base: base, allowHTTP: cfg.InsecureAllowHTTP, timeout: timeout}
	tr.setDirectoryURL(cfg.DirectoryURL)
	hc.Transport = tr
	hc.CheckRedirect = sameOriginRedirects(hc.CheckRedirect)
	var clk clock.PassiveClock = clock.RealClock{}
	if cfg.Clock != nil {
		clk = cfg.Clock
	}
	retries := cfg.MaxBadNonceRetries
	if retries == 0 {
		retries = 20
	}
	c := &Client{transport: tr, hc: hc, key: cfg.Key, clock: clk, maxRetries: retries, userAgent: cfg.UserAgent, allowHTTP: cfg.InsecureAllowHTTP}
	c.acme = &acme.Client{
		Key: cfg.Key, HTTPClient: hc, DirectoryURL: cfg.DirectoryURL, UserAgent: cfg.UserAgent,
		// Retry a bad nonce (HTTP 400 is the only 4xx x/crypto/acme
		// retries) at once, a bounded number of times; never wait inside
		// a call for anything else: the host owns every wait.
		RetryBackoff: func(n int, _ *http.Request, res *http.Response) time.Duration {
			if res != nil && res.StatusCode == http.StatusBadRequest && n <= retries {
				return time.Nanosecond
			}
			return 0
		},
	}
	return c, nil
}

// checkDirectoryURL says what is wrong with a directory URL, "" when
// nothing is: it must be an absolute https:// URL with a host, or http://
// with insecure set.
func checkDirectoryURL(dir string, insecure bool) string {
	if dir == "" {
		return "DirectoryURL is required"
	}
	u, err := url.Parse(dir)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return fmt.Sprintf("DirectoryURL %q is not an https:// URL", dir)
	case u.Scheme == "http" && !insecure:
		return fmt.Sprintf("DirectoryURL %q is http://: anyone on the way could read and answer the ACME requests in the server's place; "+
			"use the server's https:// URL, or set InsecureAllowHTTP for a test server on loopback", dir)
	}
	return ""
}

// sameOriginRedirects is a CheckRedirect that refuses a redirect to
// another scheme, host or port than the request's (ErrRedirect), and
// then asks next (nil: net/http's default, at most 10 redirects).
func sameOriginRedirects(next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		from := via[0].URL
		if origin(req.URL) != origin(from) {
			return &redirectError{method: via[0].Method, from: redactQuery(from), to: redactQuery(req.URL)}
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
}

// redirectError is a redirect refused; errors.Is(err, ErrRedirect).
type redirectError struct{ method, from, to string }

func (e *redirectError) Error() string {
	return "the server redirected " + e.method + " " + e.from + " to " + e.to +
		", another server: refused, an ACME client follows no redirect off the server it was given (set DirectoryURL to the server that answers)"
}

func (e *redirectError) Is(target error) bool { return target == ErrRedirect }

// origin is a URL's scheme, host and port (the scheme's default when
// none is given), the host in lower case.
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[u.Scheme]
	}
	return u.Scheme + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

// redactQuery is a URL for an error message, without its query.
func redactQuery(u *url.URL) string {
	c := *u
	c.RawQuery, c.User = "", nil
	return c.String()
}

func (c *Client) now() time.Time { return c.clock.Now() }

// directoryURL is the ACME directory the Client talks to; "" for a Client
// not made by New.
func (c *Client) directoryURL() string {
	if c == nil || c.acme == nil {
		return ""
	}
	return c.acme.DirectoryURL
}

// Transport returns the client's transport, for its request counts.
func (c *Client) Transport() *Transport { return c.transport }

// Directory is what the server's directory says (RFC 8555 §7.1.1), with
// the ARI endpoint (RFC 9773 §3) and profiles.
type Directory struct {
	NewNonce, NewAccount, NewOrder, RevokeCert, KeyChange string
	// RenewalInfo is the ARI endpoint; empty when the server has none.
	RenewalInfo string
	// Profiles maps profile names to their descriptions.
	Profiles map[string]string
	// Terms is the terms-of-service URL, if any.
	Terms string
	// ExternalAccountRequired: newAccount needs an external account
	// binding.
	ExternalAccountRequired bool
}

// Directory reads the directory, once per Client.
func (c *Client) Directory(ctx context.Context) (Directory, error) {
	c.mu.Lock()
	if c.dir != nil {
		d := *c.dir
		c.mu.Unlock()
		return d, nil
	}
	c.mu.Unlock()
	ctx, rec := withCall(ctx, KindDirectory)
	if _, err := c.acme.Discover(ctx); err != nil {
		return Directory{}, classify("directory", err, rec, c.now())
	}
	var raw directoryJSON
	if err := json.Unmarshal(c.transport.directoryBody(), &raw); err != nil {
		return Directory{}, &Error{Op: "directory", Kind: ErrServer, Err: err}
	}
	d := Directory{NewNonce: raw.NewNonce, NewAccount: raw.NewAccount, NewOrder: raw.NewOrder, RevokeCert: raw.RevokeCert,
		KeyChange: raw.KeyChange, RenewalInfo: raw.RenewalInfo, Profiles: raw.Meta.Profiles, Terms: raw.Meta.Terms,
		ExternalAccountRequired: raw.Meta.EAB}
	for _, ep := range []struct{ name, url string }{{"newNonce", d.NewNonce}, {"newAccount", d.NewAccount}, {"newOrder", d.NewOrder},
		{"revokeCert", d.RevokeCert}, {"keyChange", d.KeyChange}, {"renewalInfo", d.RenewalInfo}} {
		if ep.url == "" {
			continue
		}
		from := "the directory " + c.acme.DirectoryURL + ", as " + ep.name + ","
		if err := checkURL("directory", ep.url, from, c.allowHTTP); err != nil {
			return Directory{}, err
		}
	}
	c.mu.Lock()
	c.dir = &d
	c.mu.Unlock()
	return d, nil
}

// EAB is an external account binding (RFC 8555 §7.3.4): the key ID and
// HMAC key the CA gave out of band. The key is never printed.
type EAB struct {
	KeyID string
	Key   []byte
}

// String names the key ID, never the key.
func (e EAB) String() string { return "EAB{" + e.KeyID + ", key redacted}" }

// GoString is String: %#v must not print the key either.
func (e EAB) GoString() string { return e.String() }

// Format prints String for every verb and flag, so that %x or %d never
// print the key's bytes.
func (e EAB) Format(f fmt.State, _ rune) { io.WriteString(f, e.String()) }

// AccountOptions are what EnsureAccount registers with.
type AccountOptions struct {
	// Contact URLs, e.g. "mailto:ops@example.com".
	Contact []string
	// AgreeToTerms must be true when the server has terms of service.
	AgreeToTerms bool
	// EAB, when the server requires an external account binding.
	EAB *EAB
}

// Account is the ACME account of the client's key.
type Account struct {
	// URL identifies the account (the "kid" of every signed request).
	URL string
	// Created is true when this call registered it.
	Created bool
}

// EnsureAccount registers the client's key, or finds the account it
// already has, in one request (RFC 8555 §7.3: newAccount answers 200 with
// the existing account). The account's URL is the answer's Location,
// which must be an https:// URL (or http:// with InsecureAllowHTTP); an
// answer without one is an ErrServer error.
func (c *Client) EnsureAccount(ctx context.Context, opts AccountOptions) (Account, error) {
	dir, err := c.Directory(ctx)
	if err != nil {
		return Account{}, err
	}
	if dir.Terms != "" && !opts.AgreeToTerms {
		return Account{}, errorf("account", ErrUnauthorized, "the server requires agreeing to its terms of service (%s): set AccountOptions.AgreeToTerms", dir.Terms)
	}
	if dir.ExternalAccountRequired && opts.EAB == nil {
		return Account{}, errorf("account", ErrUnauthorized, "the server requires an external account binding: set AccountOptions.EAB")
	}
	a := &acme.Account{Contact: opts.Contact}
	if opts.EAB != nil {
		a.ExternalAccountBinding = &acme.ExternalAccountBinding{KID: opts.EAB.KeyID, Key: opts.EAB.Key}
	}
	ctx, call := withCall(ctx, KindAccount)
	_, err = c.acme.Register(ctx, a, acme.AcceptTOS)
	created := true
	if errors.Is(err, acme.ErrAccountAlreadyExists) {
		created, err = false, nil
	}
	if err != nil {
		return Account{}, classify("account", err, call, c.now())
	}
	// The account's URL is the Location of the newAccount answer, new
	// account or found (RFC 8555 §7.3, §7.3.1). It is read from the answer
	// this call recorded, not from x/crypto/acme's Client.KID, which other
	// goroutines' registrations write under a lock this package cannot
	// take.
	url := call.header.Get("Location")
	if url == "" {
		return Account{}, errorf("account", ErrServer, "the server's newAccount answer names no account: it has no Location header")
	}
	if err := checkURL("account", url, "the server's newAccount answer, as the account's Location,", c.allowHTTP); err != nil {
		return Account{}, err
	}
	c.mu.Lock()
	c.accountURL = url
	c.mu.Unlock()
	return Account{URL: url, Created: created}, nil
}

func (c *Client) account() (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.accountURL == "" {
		return "", errorf("account", ErrUnauthorized, "no account yet: call EnsureAccount first")
	}
	return c.accountURL, nil
}

// oneRequest makes the one request of a single-shot call through do: the
// client must have an account, the request is counted as kind, and an
// error comes back classified as op's, with the response's headers (its
// Retry-After). rec holds the response's status and headers.
func oneRequest[T any](c *Client, ctx context.Context, op string, kind RequestKind, now time.Time, do func(context.Context) (T, error)) (v T, rec *call, err error) {
	if _, err = c.account(); err != nil {
		return v, nil, err
	}
	cctx, rec := withCall(ctx, kind)
	if v, err = do(cctx); err != nil {
		return v, rec, classify(op, err, rec, now)
	}
	return v, rec, nil
}

// KeyAuthorization returns the key authorization of a challenge token
// (RFC 8555 §8.1): token "." base64url(JWK thumbprint of the account key).
func (c *Client) KeyAuthorization(token string) (string, error) {
	return c.acme.HTTP01ChallengeResponse(token)
}

// signedPost POSTs a JWS (RFC 8555 §6.2) of payload to url, signed with
// the account key and its kid, using go-jose: the requests x/crypto/acme
// has no single-shot form for (finalize) or no option for (replaces). A
// nil payload is a POST-as-GET. A bad nonce is retried at once with the
// nonce the rejection carried.
func (c *Client) signedPost(ctx context.Context, kind RequestKind, url string, payload any) (*call, []byte, error) {
	kid, err := c.account()
	if err != nil {
		return nil, nil, err
	}
	var body []byte
	if payload != nil {
		if body, err = json.Marshal(payload); err != nil {
			return nil, nil, err
		}
	}
	dir, err := c.Directory(ctx)
	if err != nil {
		return nil, nil, err
	}
	for attempt := 0; ; attempt++ {
		nonce, err := c.nonce(ctx, dir.NewNonce)
		if err != nil {
			return nil, nil, err
		}
		jws, err := c.sign(body, kid, nonce, url)
		if err != nil {
			return nil, nil, err
		}
		cctx, rec := withCall(ctx, kind)
		req, err := http.NewRequestWithContext(cctx, http.MethodPost, url, bytes.NewReader(jws))
		if err != nil {
			return nil, nil, err
		}
		req.Header.Set("Content-Type", "application/jose+json")
		req.Header.Set("User-Agent", c.ua())
		res, err := c.hc.Do(req)
		if err != nil {
			return rec, nil, err
		}
		c.keepNonce(res.Header)
		b, err := io.ReadAll(res.Body) // bounded by the Transport
		res.Body.Close()
		if err != nil {
			return rec, nil, err
		}
		if res.StatusCode < 300 {
			return rec, b, nil
		}
		prob := &acme.Error{StatusCode: res.StatusCode, Header: res.Header}
		var p wireProblem
		if json.Unmarshal(b, &p) == nil {
			prob.ProblemType, prob.Detail, prob.Subproblems = p.Type, p.Detail, p.Subproblems
		}
		if strings.HasSuffix(strings.ToLower(p.Type), ":badnonce") && attempt < c.maxRetries {
			continue
		}
		return rec, b, prob
	}
}

func (c *Client) ua() string {
	ua := "certlife-acmeclient"
	if c.userAgent != "" {
		ua = c.userAgent + " " + ua
	}
	return ua
}

// keepNonce keeps the Replay-Nonce of a response to signedPost's own
// request, for its next request (RFC 8555 §7.2).
func (c *Client) keepNonce(h http.Header) {
	n := h.Get("Replay-Nonce")
	if n == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nonces = append(c.nonces, n)
	if len(c.nonces) > maxPooledNonces {
		c.nonces = c.nonces[len(c.nonces)-maxPooledNonces:]
	}
}

// nonce takes the newest nonce signedPost kept, or fetches one with a
// HEAD of newNonce (RFC 8555 §7.2).
func (c *Client) nonce(ctx context.Context, newNonce string) (string, error) {
	c.mu.Lock()
	if n := len(c.nonces); n > 0 {
		nonce := c.nonces[n-1]
		c.nonces = c.nonces[:n-1]
		c.mu.Unlock()
		return nonce, nil
	}
	c.mu.Unlock()
	ctx, _ = withCall(ctx, KindNonce)
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, newNonce, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("User-Agent", c.ua())
	res, err := c.hc.Do(req)
	if err != nil {
		return "", err
	}
	res.Body.Close()
	n := res.Header.Get("Replay-Nonce")
	if n == "" {
		return "", &Error{Op: "nonce", Kind: ErrServer, Status: res.StatusCode, Detail: "the newNonce response carries no Replay-Nonce"}
	}
	return n, nil
}

// sign makes a flattened JWS with the protected header {alg, kid, nonce,
// url} (RFC 8555 §6.2).
func (c *Client) sign(payload []byte, kid, nonce, url string) ([]byte, error) {
	opaque := cryptosigner.Opaque(c.key)
	algs := opaque.Algs()
	if len(algs) == 0 {
		return nil, fmt.Errorf("acmeclient: no JWS algorithm for the account key")
	}
	opts := (&jose.SignerOptions{}).WithHeader("kid", kid).WithHeader("nonce", nonce).WithHeader("url", url)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: algs[0], Key: opaque}, opts)
	if err != nil {
		return nil, err
	}
	obj, err := signer.Sign(payload)
	if err != nil {
		return nil, err
	}
	out := []byte(obj.FullSerialize())
	if len(payload) == 0 {
		// A POST-as-GET carries an empty payload (RFC 8555 §6.3), which
		// go-jose leaves out of the JSON serialization: put it back.
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(out, &fields); err != nil {
			return nil, err
		}
		fields["payload"] = json.RawMessage(`""`)
		return json.Marshal(fields)
	}
	return out, nil
}

// String describes the config without its key.
func (c Config) String() string {
	return fmt.Sprintf("acmeclient.Config{DirectoryURL: %q, Key: %s, UserAgent: %q}", c.DirectoryURL, keyKind(c.Key), c.UserAgent)
}

// GoString is String: %#v must not print the key either.
func (c Config) GoString() string { return c.String() }

// Format prints String for every verb and flag, so that %x or %d never
// print the key.
func (c Config) Format(f fmt.State, _ rune) { io.WriteString(f, c.String()) }

// String describes the client without its key.
func (c *Client) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprintf("acmeclient.Client{%s, key %s, account %q}", c.acme.DirectoryURL, keyKind(c.key), c.accountURL)
}

// GoString is String.
func (c *Client) GoString() string { return c.String() }

// Format prints String for every verb and flag.
func (c *Client) Format(f fmt.State, _ rune) { io.WriteString(f, c.String()) }

func keyKind(k crypto.Signer) string {
	switch k := k.(type) {
	case nil:
		return "none"
	case *ecdsa.PrivateKey:
		return "ECDSA " + k.Curve.Params().Name + " (redacted)"
	case *rsa.PrivateKey:
		return fmt.Sprintf("RSA %d (redacted)", k.N.BitLen())
	case ed25519.PrivateKey:
		return "Ed25519 (redacted)"
	}
	return fmt.Sprintf("%T (redacted)", k)
}
