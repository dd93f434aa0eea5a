package acmeclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// RequestKind is the kind of an ACME request, for accounting (Counts).
type RequestKind string

// Request kinds. Directory and revocation requests are counted too, but
// are not part of an issuance.
const (
	KindDirectory     RequestKind = "directory"
	KindNonce         RequestKind = "nonce"
	KindAccount       RequestKind = "account"
	KindNewOrder      RequestKind = "newOrder"
	KindOrder         RequestKind = "order"
	KindAuthorization RequestKind = "authorization"
	KindChallenge     RequestKind = "challenge"
	KindFinalize      RequestKind = "finalize"
	KindCertificate   RequestKind = "certificate"
	KindRenewalInfo   RequestKind = "renewalInfo"
	KindRevoke        RequestKind = "revoke"
	KindOther         RequestKind = "other"
)

// Counts is a copy of a Transport's request accounting.
type Counts struct {
	// ByKind counts requests sent over the network, by kind; KindNonce
	// counts the nonces fetched with newNonce (the others come with the
	// responses to earlier requests).
	ByKind map[RequestKind]int
	// Total is the sum of ByKind.
	Total int
	// BadNonces counts badNonce rejections (RFC 8555 §6.5), each followed
	// by a retry with a fresh nonce.
	BadNonces int
}

// String lists the counts by kind, sorted, for logs and test failures.
func (c Counts) String() string {
	kinds := slices.Sorted(maps.Keys(c.ByKind))
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = string(k) + "=" + strconv.Itoa(c.ByKind[k])
	}
	return fmt.Sprintf("%s (total %d, bad nonces %d)", strings.Join(parts, " "), c.Total, c.BadNonces)
}

// Transport is the http.RoundTripper every request of a Client goes
// through. It counts requests by kind and badNonce rejections, and passes
// every request and response on unchanged: each of the client's two
// signers (x/crypto/acme, and its own for finalize and replaces) keeps the
// nonces of the responses to its own requests, so a nonce is never used
// twice and no response is made up.
//
// It also holds the client's edges, whoever sends the request
// (x/crypto/acme or the client) and whatever HTTPClient carries it: a
// request to a URL that is not https:// is refused before it is sent
// (ErrInsecureURL) unless the Client was configured with
// InsecureAllowHTTP, and an answer is read only up to its bound
// (ResponseLimit): a success answer that runs past it fails the request,
// an error answer is cut there. Each request has the Client's deadline
// (Config.RequestTimeout), to the last byte of its answer. A Transport
// made by hand rather than by New refuses http:// too, and sets no
// deadline.
//
// A Transport is safe for concurrent use. Hosts can export Counts as
// metrics.
type Transport struct {
	// Base carries the requests; nil means http.DefaultTransport.
	Base http.RoundTripper

	// allowHTTP lets requests go to http:// URLs (Config.InsecureAllowHTTP).
	allowHTTP bool
	// timeout bounds each request, to the last byte of its answer; 0:
	// none (Config.RequestTimeout).
	timeout time.Duration

	mu        sync.Mutex
	counts    map[RequestKind]int
	badNonces int
	endpoints map[string]RequestKind // directory endpoint URL → kind
	dirURL    string
	dirBody   []byte
	ariPrefix string
}

// Counts returns a copy of the accounting so far.
func (t *Transport) Counts() Counts {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := Counts{ByKind: map[RequestKind]int{}, BadNonces: t.badNonces}
	for k, n := range t.counts {
		c.ByKind[k] = n
		c.Total += n
	}
	return c
}

// ResetCounts sets every count to zero.
func (t *Transport) ResetCounts() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.counts, t.badNonces = nil, 0
}

type ctxKey struct{}

// call is what one client call tells the transport, through the request
// context: the kind of its requests, and where to leave the last
// response's status and headers (Retry-After, Link).
type call struct {
	kind   RequestKind
	status int
	header http.Header
	// cut is the bound an error answer ran past, cut there; 0 when whole.
	cut int64
}

func withCall(ctx context.Context, kind RequestKind) (context.Context, *call) {
	c := &call{kind: kind}
	return context.WithValue(ctx, ctxKey{}, c), c
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	kind := t.kindOf(req)
	if !secureEnough(req.URL.String(), t.allowHTTP) {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, &insecureURLError{url: redactQuery(req.URL), kind: kind}
	}
	t.mu.Lock()
	if t.counts == nil {
		t.counts = map[RequestKind]int{}
	}
	t.counts[kind]++
	t.mu.Unlock()

	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	parent, ctx := req.Context(), req.Context()
	if t.timeout > 0 {
		// The deadline covers the answer to its last byte: it is read
		// here, whole, before the request's context is let go.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.timeout)
		defer cancel()
		req = req.WithContext(ctx)
	}
	res, err := base.RoundTrip(req)
	if err != nil {
		return nil, t.timedOut(parent, req, kind, err)
	}
	limit := responseLimit(kind, res.StatusCode)
	body, more, err := readBounded(res, limit)
	if err != nil {
		return nil, t.timedOut(parent, req, kind, err)
	}
	if more && res.StatusCode < 400 {
		return nil, &tooLargeError{kind: kind, url: redactQuery(req.URL), limit: limit}
	}
	ab := &answerBody{}
	ab.Reset(body)
	res.Body, res.ContentLength = ab, int64(len(body))
	if res.StatusCode == http.StatusBadRequest && isProblem(res.Header) {
		var p struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(body, &p) == nil && strings.HasSuffix(strings.ToLower(p.Type), ":badnonce") {
			t.mu.Lock()
			t.badNonces++
			t.mu.Unlock()
		}
	}
	if kind == KindDirectory && res.StatusCode == http.StatusOK {
		t.learnDirectory(body)
	}
	if c, ok := req.Context().Value(ctxKey{}).(*call); ok {
		c.status, c.header, c.cut = res.StatusCode, res.Header.Clone(), 0
		if more {
			c.cut = limit
		}
	}
	return res, nil
}

// timedOut is err, or the request's deadline when that is what ended it
// (and not the caller's context, parent).
func (t *Transport) timedOut(parent context.Context, req *http.Request, kind RequestKind, err error) error {
	if t.timeout > 0 && parent.Err() == nil && errors.Is(req.Context().Err(), context.DeadlineExceeded) {
		return &deadlineError{kind: kind, url: redactQuery(req.URL), timeout: t.timeout, err: err}
	}
	return err
}

func isProblem(h http.Header) bool {
	return strings.HasPrefix(h.Get("Content-Type"), "application/problem+json")
}

func (t *Transport) kindOf(req *http.Request) RequestKind {
	url := req.URL.String()
	t.mu.Lock()
	k, known := t.endpoints[url]
	dir := t.dirURL
	t.mu.Unlock()
	switch {
	case known:
		return k
	case url == dir:
		return KindDirectory
	case t.isRenewalInfo(url):
		return KindRenewalInfo
	}
	if c, ok := req.Context().Value(ctxKey{}).(*call); ok {
		return c.kind
	}
	return KindOther
}

func (t *Transport) isRenewalInfo(url string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ariPrefix != "" && strings.HasPrefix(url, t.ariPrefix+"/")
}

func (t *Transport) setDirectoryURL(u string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.dirURL = u
}

// directoryJSON is the directory object (RFC 8555 §7.1.1), with the ARI
// renewalInfo endpoint (RFC 9773).
type directoryJSON struct {
	NewNonce    string `json:"newNonce"`
	NewAccount  string `json:"newAccount"`
	NewOrder    string `json:"newOrder"`
	RevokeCert  string `json:"revokeCert"`
	KeyChange   string `json:"keyChange"`
	RenewalInfo string `json:"renewalInfo"`
	Meta        struct {
		Terms    string            `json:"termsOfService"`
		EAB      bool              `json:"externalAccountRequired"`
		Profiles map[string]string `json:"profiles"`
	} `json:"meta"`
}

// learnDirectory records the directory's endpoints, so that requests to
// them are counted by kind whoever sends them.
func (t *Transport) learnDirectory(body []byte) {
	var d directoryJSON
	if json.Unmarshal(body, &d) != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.dirBody = body
	t.ariPrefix = strings.TrimSuffix(d.RenewalInfo, "/")
	t.endpoints = map[string]RequestKind{}
	for u, k := range map[string]RequestKind{d.NewNonce: KindNonce, d.NewAccount: KindAccount, d.NewOrder: KindNewOrder,
		d.RevokeCert: KindRevoke, d.KeyChange: KindAccount} {
		if u != "" {
			t.endpoints[u] = k
		}
	}
}

func (t *Transport) directoryBody() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.dirBody
}
