package acmeclient

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"golang.org/x/crypto/acme"

	"github.com/certlife/certlife/challenge"
	"github.com/certlife/certlife/order"
)

// The order calls take the order's current status and the action, and
// return the status to write back unchanged. On success they call
// Status.NoteSuccess (the order moved on when it was created, changed
// state, got its certificate URL, had an authorization read or its
// certificate fetched); on failure Status.NoteFailure, which records the
// error, its time, the attempt and the server's Retry-After and never
// moves State backwards. An error that a retry cannot fix (Retryable is
// false) also moves the order to "errored" with the server's words as its
// reason, so the order machine records the failure instead of asking for
// the same call forever.
//
// A call cut short by its own context (the host shutting down, or losing
// its leadership) is no failure of the order: it returns the status it
// was given, unchanged, with the error — no attempt counted.

// CreateOrder carries out order.CreateOrder (RFC 8555 §7.4): it writes
// URL, FinalizeURL, State, Reason, one Authorization per authorization URL
// and SpecHash. A profile the server does not list is an error that names
// the profiles it does. With Replaces set and an ARI endpoint in the
// directory, the order names the certificate it renews (RFC 9773 §5). When
// the server refuses the order with replaces — for whatever reason: the
// certificate was replaced already, the order shares no identifier with
// it, the server finds no such certificate — the order is created again
// without it at once, and ReplacesRefused records the server's words, so
// that no later attempt sends it again. Only a rate limit (429), an
// unavailable server (502, 503, 504) and a request that never reached the
// server are not taken for a refusal.
func (c *Client) CreateOrder(ctx context.Context, st order.Status, a order.CreateOrder) (order.Status, error) {
	now := c.now()
	o, refused, err := c.newOrder(ctx, a)
	if refused != "" {
		st.ReplacesRefused = refused
	}
	if err == nil {
		err = c.checkOrder("create order", o, o.URL)
	}
	if err != nil {
		return failOrder(ctx, st, err, now), err
	}
	return created(st, o, a, now), nil
}

// created writes the order o, created for a, into st, as CreateOrder
// says.
func created(st order.Status, o *wireOrder, a order.CreateOrder, now time.Time) order.Status {
	st.URL = o.URL
	st.SpecHash = a.SpecHash
	st.Authorizations = nil
	for _, u := range o.Authorizations {
		st.Authorizations = append(st.Authorizations, order.Authorization{URL: u})
	}
	st = applyOrder(st, o, now)
	st.FailedAttempts = 0 // created: the order moved on
	return st
}

// checkOrder refuses an order that names a URL the client may not send
// to (ErrInsecureURL): its own (the Location of newOrder's answer), its
// authorizations', its finalize and its certificate URL.
func (c *Client) checkOrder(op string, o *wireOrder, orderURL string) error {
	if o.URL != "" {
		if err := checkURL(op, o.URL, "the server's newOrder answer, as the order's Location,", c.allowHTTP); err != nil {
			return err
		}
	}
	from := "the order " + urlFor(orderURL) + ", as "
	for _, u := range o.Authorizations {
		if err := checkURL(op, u, from+"an authorization,", c.allowHTTP); err != nil {
			return err
		}
	}
	if o.Finalize != "" {
		if err := checkURL(op, o.Finalize, from+"its finalize URL,", c.allowHTTP); err != nil {
			return err
		}
	}
	if o.Certificate != "" {
		if err := checkURL(op, o.Certificate, from+"its certificate URL,", c.allowHTTP); err != nil {
			return err
		}
	}
	return nil
}

// wireOrder is an order object as the server sends it (RFC 8555 §7.1.3).
type wireOrder struct {
	URL            string       `json:"-"`
	Status         string       `json:"status"`
	Authorizations []string     `json:"authorizations"`
	Finalize       string       `json:"finalize"`
	Certificate    string       `json:"certificate"`
	Error          *wireProblem `json:"error"`
	Replaces       string       `json:"replaces"`
	Profile        string       `json:"profile"`
	Expires        time.Time    `json:"expires"`
	Identifiers    []struct {
		Type  string `json:"type"`
		Value string `json:"value"`
	} `json:"identifiers"`
	// NotBefore and NotAfter as the server wrote them (FindOrder
	// compares them; nothing else reads them).
	NotBefore  string    `json:"notBefore"`
	NotAfter   string    `json:"notAfter"`
	RetryAfter time.Time `json:"-"`
}

type wireProblem struct {
	Type        string            `json:"type"`
	Detail      string            `json:"detail"`
	Subproblems []acme.Subproblem `json:"subproblems"`
}

func (p *wireProblem) text() string {
	if p == nil {
		return ""
	}
	return problemWords(p.Type, p.Detail, p.Subproblems)
}

// problemText is the server's words in an error: its detail and
// subproblems, for an order's or challenge's reason.
func problemText(err error) string {
	var ae *acme.Error
	if !errors.As(err, &ae) {
		if err != nil {
			return err.Error()
		}
		return ""
	}
	return problemWords(ae.ProblemType, ae.Detail, ae.Subproblems)
}

// subproblem is one subproblem's words (RFC 8555 §6.7.1), after the
// identifier it is about.
func subproblem(sp acme.Subproblem) string {
	if sp.Identifier == nil || sp.Identifier.Value == "" {
		return sp.Detail
	}
	return sp.Identifier.Value + ": " + sp.Detail
}

// problemWords joins a problem's detail and subproblems, each cut to a
// readable length, at most maxSubproblems of them; the type stands in when
// there are no words.
func problemWords(typ, detail string, sps []acme.Subproblem) string {
	s := clip(detail, maxDetailLen)
	if len(sps) > 0 {
		s += "; " + subproblems(sps)
	}
	if s == "" {
		s = clip(shortType(typ), maxSubproblemLen)
	}
	return s
}

// subproblems lists subproblems' words, each cut to a readable length, at
// most maxSubproblems of them and the number of the others.
func subproblems(sps []acme.Subproblem) string {
	var parts []string
	for i, sp := range sps {
		if i == maxSubproblems {
			parts = append(parts, fmt.Sprintf("and %d more", len(sps)-i))
			break
		}
		parts = append(parts, clip(subproblem(sp), maxSubproblemLen))
	}
	return strings.Join(parts, "; ")
}

// newOrder creates the order; refused is the server's words when it
// refused replaces and the order was asked for again without it.
func (c *Client) newOrder(ctx context.Context, a order.CreateOrder) (o *wireOrder, refused string, err error) {
	const op = "create order"
	if _, err := c.account(); err != nil {
		return nil, "", err
	}
	dir, err := c.Directory(ctx)
	if err != nil {
		return nil, "", err
	}
	if a.Profile != "" {
		if _, ok := dir.Profiles[a.Profile]; !ok {
			names := make([]string, 0, len(dir.Profiles))
			for n := range dir.Profiles {
				names = append(names, n)
			}
			sort.Strings(names)
			if len(names) == 0 {
				return nil, "", errorf(op, ErrUnsupported, "profile %q was asked for, but the server offers no profiles", a.Profile)
			}
			return nil, "", errorf(op, ErrMalformed, "profile %q is not one the server offers (%s)", a.Profile, strings.Join(names, ", "))
		}
	}
	if a.Replaces != "" && dir.RenewalInfo != "" {
		o, err := c.newOrderSigned(ctx, dir.NewOrder, a, a.Replaces)
		if err == nil || !refusesReplaces(err) || ctx.Err() != nil {
			return o, "", err
		}
		// RFC 9773 §5: the server may refuse a replacement that shares no
		// identifier with the certificate, or of one already replaced;
		// this order is then a new issuance, not a renewal.
		refused = problemText(err)
		var e *Error
		if errors.As(err, &e) && e.Detail != "" {
			refused = e.Detail
			if e.Type != "" {
				refused += " (" + shortType(e.Type) + ")"
			}
		}
	}
	o, err = c.newOrderPlain(ctx, a)
	return o, refused, err
}

// refusesReplaces reports whether the server answered a newOrder with
// replaces by refusing it: any error answer but a rate limit or an
// unavailable server (which a retry with replaces may get past, and which
// would refuse the order without it just the same).
func refusesReplaces(err error) bool {
	var e *Error
	if !errors.As(err, &e) || e.Status == 0 {
		return false // never reached the server
	}
	switch {
	case errors.Is(err, ErrRateLimited), errors.Is(err, ErrNetwork):
		return false
	case e.Status == http.StatusBadGateway, e.Status == http.StatusServiceUnavailable, e.Status == http.StatusGatewayTimeout:
		return false
	case strings.EqualFold(shortType(e.Type), "badNonce"):
		return false
	}
	return true
}

// newOrderPlain creates an order through x/crypto/acme (profile and
// notAfter are options there).
func (c *Client) newOrderPlain(ctx context.Context, a order.CreateOrder) (*wireOrder, error) {
	ids := append(acme.DomainIDs(a.DNSNames...), acme.IPIDs(a.IPAddresses...)...)
	var opts []acme.OrderOption
	if a.Profile != "" {
		opts = append(opts, acme.WithOrderIssuanceProfile(acme.ProfileName(a.Profile)))
	}
	if a.NotBefore != nil {
		opts = append(opts, acme.WithOrderNotBefore(*a.NotBefore))
	}
	if a.NotAfter != nil {
		opts = append(opts, acme.WithOrderNotAfter(*a.NotAfter))
	}
	cctx, rec := withCall(ctx, KindNewOrder)
	o, err := c.acme.AuthorizeOrder(cctx, ids, opts...)
	if err != nil {
		return nil, classify("create order", err, rec, c.now())
	}
	w := &wireOrder{URL: o.URI, Status: o.Status, Authorizations: o.AuthzURLs, Finalize: o.FinalizeURL, Certificate: o.CertURL,
		Profile: string(o.Profile), Expires: o.Expires}
	if o.Error != nil {
		w.Error = &wireProblem{Type: o.Error.ProblemType, Detail: o.Error.Detail, Subproblems: o.Error.Subproblems}
	}
	if t, ok := ParseRetryAfter(rec.header.Get("Retry-After"), c.now()); ok {
		w.RetryAfter = t
	}
	return w, nil
}

// newOrderSigned sends newOrder itself, so that it can carry replaces.
func (c *Client) newOrderSigned(ctx context.Context, url string, a order.CreateOrder, replaces string) (*wireOrder, error) {
	type ident struct {
		Type  string `json:"type"`
		Value string `json:"value"`
	}
	req := struct {
		Identifiers []ident `json:"identifiers"`
		NotBefore   string  `json:"notBefore,omitempty"`
		NotAfter    string  `json:"notAfter,omitempty"`
		Profile     string  `json:"profile,omitempty"`
		Replaces    string  `json:"replaces,omitempty"`
	}{Profile: a.Profile, Replaces: replaces}
	for _, n := range a.DNSNames {
		req.Identifiers = append(req.Identifiers, ident{"dns", n})
	}
	for _, ip := range a.IPAddresses {
		req.Identifiers = append(req.Identifiers, ident{"ip", ip})
	}
	if a.NotBefore != nil {
		req.NotBefore = a.NotBefore.UTC().Format(time.RFC3339)
	}
	if a.NotAfter != nil {
		req.NotAfter = a.NotAfter.UTC().Format(time.RFC3339)
	}
	rec, body, err := c.signedPost(ctx, KindNewOrder, url, req)
	if err != nil {
		return nil, classify("create order", err, rec, c.now())
	}
	o, err := c.decodeOrder(body, rec)
	if err != nil {
		return nil, &Error{Op: "create order", Kind: ErrServer, Err: err}
	}
	o.URL = rec.header.Get("Location")
	if o.URL == "" {
		return nil, errorf("create order", ErrServer, "the server's newOrder answer has no Location")
	}
	return o, nil
}

func header(rec *call) http.Header {
	if rec == nil {
		return nil
	}
	return rec.header
}

func (c *Client) decodeOrder(body []byte, rec *call) (*wireOrder, error) {
	var o wireOrder
	if err := json.Unmarshal(body, &o); err != nil {
		return nil, err
	}
	if rec != nil {
		if t, ok := ParseRetryAfter(rec.header.Get("Retry-After"), c.now()); ok {
			o.RetryAfter = t
		}
	}
	return &o, nil
}

// applyOrder writes what the server said about an order into its status.
// The order moved on when its state changed or its certificate URL
// appeared.
func applyOrder(st order.Status, o *wireOrder, now time.Time) order.Status {
	movedOn := st.State != order.State(o.Status) || (st.CertificateURL == "" && o.Certificate != "")
	st.State = order.State(o.Status)
	st.Reason = o.Error.text()
	if o.Finalize != "" {
		st.FinalizeURL = o.Finalize
	}
	if o.Certificate != "" {
		st.CertificateURL = o.Certificate
	}
	if !o.Expires.IsZero() {
		t := o.Expires
		st.Expires = &t
	}
	if len(st.Authorizations) == 0 {
		for _, u := range o.Authorizations {
			st.Authorizations = append(st.Authorizations, order.Authorization{URL: u})
		}
	}
	st.SyncedAt = &now
	if movedOn {
		st.ChangedAt = &now
	}
	if st.ReadFirst && !movedOn && !st.State.Failed() {
		// The read that a refused finalize asked for found the order
		// as it was: the refusal keeps its retry delay.
		st.ReadFirst = false
		return st
	}
	st.NoteSuccess(movedOn)
	if !o.RetryAfter.IsZero() && !st.State.Failed() && st.State != order.StateValid {
		t := o.RetryAfter
		st.RetryAfter = &t // the server asks to be polled no sooner
	}
	return st
}

// failOrder records an error in an order's status; State moves only to
// errored, for an error a retry cannot fix. A call cut short by its own
// context records nothing: st comes back as it was given.
func failOrder(ctx context.Context, st order.Status, err error, now time.Time) order.Status {
	if ctx.Err() != nil {
		return st
	}
	msg, transient, retryAfter := errorFields(err)
	st.NoteFailure(msg, transient, retryAfter, now)
	if !transient {
		st.State = order.StateErrored
		st.Reason = msg
	}
	return st
}

// errorFields are what a status records of an error: its text, whether a
// retry can succeed, and the server's Retry-After.
func errorFields(err error) (string, bool, *time.Time) {
	var at *time.Time
	if t, ok := RetryAfter(err); ok {
		at = &t
	}
	return err.Error(), Retryable(err), at
}

// GetAuthorization carries out order.GetAuthorization (RFC 8555 §7.5): it
// fills the authorization's identifier, wildcard flag, state and offered
// challenges, and the key authorization of each challenge token.
func (c *Client) GetAuthorization(ctx context.Context, st order.Status, a order.GetAuthorization) (order.Status, error) {
	now := c.now()
	z, _, err := oneRequest(c, ctx, "get authorization", KindAuthorization, now, func(cctx context.Context) (*acme.Authorization, error) {
		return c.acme.GetAuthorization(cctx, a.URL)
	})
	if err != nil {
		return failOrder(ctx, st, err, now), err
	}
	auths := append([]order.Authorization(nil), st.Authorizations...)
	found := false
	keyAuths := map[string]string{}
	for k, v := range st.KeyAuthorizations {
		keyAuths[k] = v
	}
	for i := range auths {
		if auths[i].URL != a.URL {
			continue
		}
		found = true
		entry := order.Authorization{URL: a.URL, Identifier: z.Identifier.Value, Wildcard: z.Wildcard,
			InitialState: order.State(z.Status), FetchedAt: &now}
		for _, ch := range z.Challenges {
			from := "the authorization " + urlFor(a.URL) + ", as its " + clip(ch.Type, maxURLLen) + " challenge,"
			if err := checkURL("get authorization", ch.URI, from, c.allowHTTP); err != nil {
				return failOrder(ctx, st, err, now), err
			}
			entry.Challenges = append(entry.Challenges, order.OfferedChallenge{Type: challenge.Type(ch.Type), URL: ch.URI, Token: ch.Token})
			if ch.Token != "" {
				ka, err := c.KeyAuthorization(ch.Token)
				if err != nil {
					err = &Error{Op: "get authorization", Kind: ErrMalformed, Err: err}
					return failOrder(ctx, st, err, now), err
				}
				keyAuths[ch.Token] = ka
			}
		}
		auths[i] = entry
	}
	if !found {
		err := errorf("get authorization", ErrMalformed, "%s is not one of the order's authorizations", a.URL)
		return failOrder(ctx, st, err, now), err
	}
	st.Authorizations = auths
	st.KeyAuthorizations = keyAuths
	st.NoteSuccess(true)
	return st, nil
}

// SyncOrder carries out order.Sync: it reads the order (RFC 8555 §7.1.3)
// and writes State, Reason (the server's error, when it has one),
// FinalizeURL, CertificateURL and SyncedAt, and RetryAfter when the server
// asks to be polled no sooner.
func (c *Client) SyncOrder(ctx context.Context, st order.Status, a order.Sync) (order.Status, error) {
	now := c.now()
	o, rec, err := oneRequest(c, ctx, "get order", KindOrder, now, func(cctx context.Context) (*acme.Order, error) {
		return c.acme.GetOrder(cctx, a.URL)
	})
	if err != nil {
		return failOrder(ctx, st, err, now), err
	}
	w := &wireOrder{Status: o.Status, Authorizations: o.AuthzURLs, Finalize: o.FinalizeURL, Certificate: o.CertURL, Expires: o.Expires}
	if o.Error != nil {
		w.Error = &wireProblem{Type: o.Error.ProblemType, Detail: o.Error.Detail, Subproblems: o.Error.Subproblems}
	}
	if t, ok := ParseRetryAfter(rec.header.Get("Retry-After"), now); ok {
		w.RetryAfter = t
	}
	if err := c.checkOrder("get order", w, a.URL); err != nil {
		return failOrder(ctx, st, err, now), err
	}
	return applyOrder(st, w, now), nil
}

// Finalize carries out order.Finalize (RFC 8555 §7.4): one POST of the
// CSR; it writes the returned State, CertificateURL and SyncedAt. It does
// not wait for the certificate: a "processing" order is read again by a
// later Sync, no sooner than the Retry-After it records.
//
// A refusal that says the order is not ready or was already finalized
// (orderNotReady, a detail that says "already finalized", or a bare 403
// without a problem type) is recorded as a transient failure and leaves
// State alone, so the order machine reads the order before anything else
// and follows an order the server is processing, or has issued, to its
// certificate. It never rewrites the order's state from a failed call.
func (c *Client) Finalize(ctx context.Context, st order.Status, a order.Finalize) (order.Status, error) {
	now := c.now()
	req := struct {
		CSR string `json:"csr"`
	}{base64.RawURLEncoding.EncodeToString(a.CSR)}
	rec, body, err := c.signedPost(ctx, KindFinalize, a.URL, req)
	if err != nil {
		err = classify("finalize", err, rec, now)
		if ctx.Err() != nil {
			return st, err
		}
		if finalizeRefused(err) {
			msg, _, retryAfter := errorFields(err)
			st.NoteFailure(msg+"; reading the order first", true, retryAfter, now)
			st.ReadFirst = true
			return st, err
		}
		return failOrder(ctx, st, err, now), err
	}
	o, err := c.decodeOrder(body, rec)
	if err != nil {
		err = &Error{Op: "finalize", Kind: ErrServer, Err: err}
		return failOrder(ctx, st, err, now), err
	}
	if err := c.checkOrder("finalize", o, st.URL); err != nil {
		return failOrder(ctx, st, err, now), err
	}
	return applyOrder(st, o, now), nil
}

// finalizeRefused reports a finalize refusal that says the order is not in
// the state the client thought: not ready yet, or already finalized.
func finalizeRefused(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	switch {
	case e.Kind == ErrOrderNotReady:
		return true
	case strings.Contains(strings.ToLower(e.Detail), "already finalized"):
		return true
	case e.Status == http.StatusForbidden && e.Type == "":
		return true
	}
	return false
}

// FetchCertificate carries out order.FetchCertificate (RFC 8555 §7.4.2):
// it downloads the chain and writes it, PEM, leaf first, to
// Status.Certificate. With PreferredChain set it takes the first chain
// (the default, then each alternate the server links) whose topmost
// certificate's issuer has that common name, else the default chain.
func (c *Client) FetchCertificate(ctx context.Context, st order.Status, a order.FetchCertificate) (order.Status, error) {
	now := c.now()
	if _, err := c.account(); err != nil {
		return failOrder(ctx, st, err, now), err
	}
	chain, alternates, err := c.fetchChain(ctx, a.URL)
	if err != nil {
		return failOrder(ctx, st, err, now), err
	}
	if a.PreferredChain != "" && topIssuer(chain) != a.PreferredChain {
		for _, u := range alternates {
			from := "the certificate " + urlFor(a.URL) + ", as an alternate chain (Link header),"
			if err := checkURL("fetch certificate", u, from, c.allowHTTP); err != nil {
				return failOrder(ctx, st, err, now), err
			}
			alt, _, err := c.fetchChain(ctx, u)
			if err != nil {
				return failOrder(ctx, st, err, now), err
			}
			if topIssuer(alt) == a.PreferredChain {
				chain = alt
				break
			}
		}
	}
	var out []byte
	for _, der := range chain {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	st.Certificate = out
	st.SyncedAt = &now
	st.NoteSuccess(true)
	return st, nil
}

func (c *Client) fetchChain(ctx context.Context, url string) ([][]byte, []string, error) {
	cctx, rec := withCall(ctx, KindCertificate)
	chain, err := c.acme.FetchCert(cctx, url, true)
	if err != nil {
		return nil, nil, classify("fetch certificate", err, rec, c.now())
	}
	if len(chain) == 0 {
		return nil, nil, errorf("fetch certificate", ErrServer, "the server sent an empty chain")
	}
	return chain, linkRel(rec.header, "alternate"), nil
}

// topIssuer is the issuer common name of the chain's last certificate.
func topIssuer(chain [][]byte) string {
	if len(chain) == 0 {
		return ""
	}
	top, err := x509.ParseCertificate(chain[len(chain)-1])
	if err != nil {
		return ""
	}
	return top.Issuer.CommonName
}

// linkRel returns the targets of Link headers with relation rel (RFC
// 8288).
func linkRel(h http.Header, rel string) []string {
	var out []string
	for _, v := range h.Values("Link") {
		for _, part := range strings.Split(v, ",") {
			fields := strings.Split(part, ";")
			target := strings.TrimSpace(fields[0])
			if !strings.HasPrefix(target, "<") || !strings.HasSuffix(target, ">") {
				continue
			}
			for _, p := range fields[1:] {
				p = strings.TrimSpace(p)
				if strings.EqualFold(p, `rel="`+rel+`"`) || strings.EqualFold(p, "rel="+rel) {
					out = append(out, strings.Trim(target, "<>"))
				}
			}
		}
	}
	return out
}

// RevokeCertificate revokes a certificate (DER) with the account key (RFC
// 8555 §7.6) and an RFC 5280 reason code.
func (c *Client) RevokeCertificate(ctx context.Context, der []byte, reason int) error {
	if _, err := c.account(); err != nil {
		return err
	}
	cctx, rec := withCall(ctx, KindRevoke)
	if err := c.acme.RevokeCert(cctx, nil, der, acme.CRLReasonCode(reason)); err != nil {
		return classify("revoke", err, rec, c.now())
	}
	return nil
}
