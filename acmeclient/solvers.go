package acmeclient

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/certlife/certlife/challenge"
)

// HTTP01Path is where an HTTP-01 key authorization is served (RFC 8555
// §8.3).
const HTTP01Path = "/.well-known/acme-challenge/"

// Presentation is what a Presenter puts up for the CA to find and later
// takes down: the key authorization of one challenge (RFC 8555 §8.1).
type Presentation struct {
	// Type is the challenge type: TypeHTTP01, TypeDNS01 or
	// TypeTLSALPN01.
	Type challenge.Type
	// Identifier is the DNS name (a wildcard's without "*.") or IP
	// address the CA validates.
	Identifier string
	// Wildcard is set when the order asked for "*." + Identifier.
	Wildcard bool
	// Token is the challenge's token: the last path segment of an
	// HTTP-01 URL.
	Token string
	// KeyAuthorization is token "." account key thumbprint: the body of
	// the HTTP-01 answer, and, hashed, the DNS-01 TXT value and the
	// TLS-ALPN-01 certificate's acmeIdentifier extension.
	KeyAuthorization string
	// Solver is the solver configuration the order chose (a DNS-01
	// provider's name and options), for a presenter serving several.
	Solver challenge.Solver
}

// DNS01Name is the TXT record name of a DNS-01 presentation.
func (p Presentation) DNS01Name() string { return DNS01Name(p.Identifier) }

// DNS01Value is the TXT record value of a DNS-01 presentation.
func (p Presentation) DNS01Value() string { return DNS01Value(p.KeyAuthorization) }

// String names the presentation.
func (p Presentation) String() string {
	id := p.Identifier
	if p.Wildcard {
		id = "*." + id
	}
	return string(p.Type) + " " + id
}

// A Presenter makes key authorizations visible where the CA looks for
// them, and takes them away: an HTTP-01 presenter serves the token's
// file on port 80 (HTTP01Handler), a TLS-ALPN-01 presenter answers the
// handshake on port 443 (TLSALPN01Handler), a DNS-01 presenter publishes
// the TXT record in the zone through the DNS provider's API. Every kind
// is the same interface.
type Presenter interface {
	// Present makes p visible. Presenting the same p again is harmless.
	// Another presentation may share p's name: a wildcard and its base
	// name share the DNS-01 record name, so a DNS-01 presenter adds its
	// value beside any that are there.
	Present(ctx context.Context, p Presentation) error
	// CleanUp takes p away, leaving any other presentation in place.
	// Idempotent.
	CleanUp(ctx context.Context, p Presentation) error
}

// PresentationStore keeps presentations where every replica of a service
// can find them — a table of the database they share — so that whichever
// replica the CA's validation request reaches answers a challenge that
// another presented. A presenter that serves from one (HTTP-01's
// handler, TLS-ALPN-01's certificates) writes through it when it
// presents and cleans up, and looks up what it serves there.
type PresentationStore interface {
	// PutPresentation keeps p, replacing a presentation of the same type
	// and lookup key (PresentationKey).
	PutPresentation(ctx context.Context, p Presentation) error
	// DeletePresentation removes the presentation of p's type and lookup
	// key when it is p (same key authorization); none is no error.
	DeletePresentation(ctx context.Context, p Presentation) error
	// LookupPresentation returns the presentation of type t whose lookup
	// key is key; ok is false when there is none.
	LookupPresentation(ctx context.Context, t challenge.Type, key string) (p Presentation, ok bool, err error)
}

// PresentationKey is what a presentation is looked up by when the CA
// asks for it: the token for HTTP-01 (the path names it), the identifier
// for the other types (TLS-ALPN-01's handshake names it, and DNS-01's
// record is at a name derived from it).
func PresentationKey(p Presentation) string {
	if p.Type == challenge.TypeHTTP01 {
		return p.Token
	}
	return p.Identifier
}

// A Checker is a self-check: it looks, from where the host stands, at
// what the CA will see, before the challenge is accepted. An error means
// "not yet": the challenge machine checks again later.
type Checker interface {
	Check(ctx context.Context, p Presentation) error
}

// HTTP01Handler is an HTTP-01 Presenter and the http.Handler that serves
// what it presents: the key authorization of each presented token at
// HTTP01Path + token (RFC 8555 §8.3). Mount it on port 80 of every name
// it solves for (or behind the proxy that routes HTTP01Path there).
//
// The zero value keeps what it presents in memory. With Store set, every
// presentation is written to the store and every request looks its
// token up there, so that any replica of a service answers a challenge
// another presented. Set Store before first use. Safe for concurrent
// use.
type HTTP01Handler struct {
	// Store, when set, keeps the presentations (see PresentationStore).
	Store PresentationStore

	mu     sync.RWMutex
	tokens map[string]string
}

var _ Presenter = (*HTTP01Handler)(nil)

// NewHTTP01Handler returns a handler that keeps its presentations in
// store (nil: in memory).
func NewHTTP01Handler(store PresentationStore) *HTTP01Handler {
	return &HTTP01Handler{Store: store}
}

// Present serves p's key authorization at HTTP01Path + p.Token. With a
// Store, it writes p there.
func (s *HTTP01Handler) Present(ctx context.Context, p Presentation) error {
	if p.Token == "" || strings.ContainsAny(p.Token, "/?#") {
		return fmt.Errorf("acmeclient: HTTP-01 token %q is not a path segment", p.Token)
	}
	if s.Store != nil {
		p.Type = challenge.TypeHTTP01
		if err := s.Store.PutPresentation(ctx, p); err != nil {
			return fmt.Errorf("acmeclient: HTTP-01 presentation for %s: %w", p.Identifier, err)
		}
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tokens == nil {
		s.tokens = map[string]string{}
	}
	s.tokens[p.Token] = p.KeyAuthorization
	return nil
}

// CleanUp stops serving p's token. Idempotent.
func (s *HTTP01Handler) CleanUp(ctx context.Context, p Presentation) error {
	if s.Store != nil {
		p.Type = challenge.TypeHTTP01
		if err := s.Store.DeletePresentation(ctx, p); err != nil {
			return fmt.Errorf("acmeclient: HTTP-01 clean-up for %s: %w", p.Identifier, err)
		}
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tokens, p.Token)
	return nil
}

// Presented is how many tokens are served now from memory; a handler
// with a Store keeps nothing there and reports 0.
func (s *HTTP01Handler) Presented() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.tokens)
}

// ServeHTTP answers GET and HEAD of HTTP01Path + token with the key
// authorization as text/plain, and 404 otherwise.
func (s *HTTP01Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	token, ok := strings.CutPrefix(r.URL.Path, HTTP01Path)
	if !ok {
		http.NotFound(w, r)
		return
	}
	var ka string
	if s.Store != nil {
		p, found, err := s.Store.LookupPresentation(r.Context(), challenge.TypeHTTP01, token)
		if err != nil {
			http.Error(w, "presentation store unavailable", http.StatusServiceUnavailable)
			return
		}
		ok, ka = found, p.KeyAuthorization
	} else {
		s.mu.RLock()
		ka, ok = s.tokens[token]
		s.mu.RUnlock()
	}
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = io.WriteString(w, ka)
}

// HTTP01Checker is the HTTP-01 self-check: it fetches the token the way
// the CA will, before the challenge is accepted.
type HTTP01Checker struct {
	// Client makes the request; nil means a client with a 10 s timeout.
	// Tests give it a dialer that resolves through their DNS server.
	Client *http.Client
	// Port is the port to fetch from; zero means 80.
	Port int
}

var _ Checker = HTTP01Checker{}

// Check fetches http://identifier:port/.well-known/acme-challenge/token
// and reports whether it answers the key authorization.
func (c HTTP01Checker) Check(ctx context.Context, p Presentation) error {
	name, token, keyAuth := p.Identifier, p.Token, p.KeyAuthorization
	hc := c.Client
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	port := c.Port
	if port == 0 {
		port = 80
	}
	url := "http://" + net.JoinHostPort(name, strconv.Itoa(port)) + HTTP01Path + token
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("acmeclient: HTTP-01 self-check of %s: %w", name, err)
	}
	res, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("acmeclient: HTTP-01 self-check of %s: %w", name, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("acmeclient: HTTP-01 self-check of %s: %s answered %d", name, url, res.StatusCode)
	}
	if strings.TrimSpace(string(body)) != keyAuth {
		return fmt.Errorf("acmeclient: HTTP-01 self-check of %s: %s answers another key authorization", name, url)
	}
	return nil
}

// DNS01Name is the record name of a DNS-01 challenge for a domain (a
// wildcard's "*." removed): "_acme-challenge.<domain>.".
func DNS01Name(domain string) string {
	return dns.Fqdn("_acme-challenge." + strings.TrimPrefix(strings.ToLower(domain), "*."))
}

// DNS01Value is the TXT value for a key authorization:
// base64url(SHA-256(keyAuth)).
func DNS01Value(keyAuth string) string {
	sum := sha256.Sum256([]byte(keyAuth))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// Solvers carries out the solver actions of the challenge machine —
// Present, SelfCheck, CleanUp — with one Presenter and one self-check per
// challenge type.
type Solvers struct {
	// HTTP01 presents HTTP-01 key authorizations, for example an
	// *HTTP01Handler mounted on port 80.
	HTTP01 Presenter
	// HTTP01Check is the HTTP-01 self-check, for example an
	// HTTP01Checker; nil skips it (the check passes).
	HTTP01Check Checker
	// DNS01 publishes DNS-01 TXT records.
	DNS01 Presenter
	// DNS01Check is the DNS-01 self-check, for example a DNS01Checker;
	// nil skips it.
	DNS01Check Checker
	// TLSALPN01 answers TLS-ALPN-01 challenges, for example a
	// *TLSALPN01Handler whose GetCertificate answers on port 443.
	TLSALPN01 Presenter
	// TLSALPN01Check is the TLS-ALPN-01 self-check, for example a
	// TLSALPN01Checker; nil skips it.
	TLSALPN01Check Checker
}

// ErrNoSolver is returned for a challenge type without a presenter.
var ErrNoSolver = errors.New("acmeclient: no solver for this challenge type")

// Presenter returns the presenter of a challenge type, nil when there is
// none.
func (s Solvers) Presenter(t challenge.Type) Presenter {
	switch t {
	case challenge.TypeHTTP01:
		return s.HTTP01
	case challenge.TypeDNS01:
		return s.DNS01
	case challenge.TypeTLSALPN01:
		return s.TLSALPN01
	}
	return nil
}

func (s Solvers) checker(t challenge.Type) Checker {
	switch t {
	case challenge.TypeHTTP01:
		return s.HTTP01Check
	case challenge.TypeDNS01:
		return s.DNS01Check
	case challenge.TypeTLSALPN01:
		return s.TLSALPN01Check
	}
	return nil
}

// Present carries out challenge.Present and returns the status to write
// back (Presented, PresentedAt). A type without a presenter is an error
// a retry cannot fix: the challenge ends errored. A presentation cut short
// by ctx leaves the status as it was.
func (s Solvers) Present(ctx context.Context, st challenge.Status, a challenge.Present, now time.Time) (challenge.Status, error) {
	var err error
	if p := s.Presenter(a.Type); p == nil {
		err = fmt.Errorf("%w: %s", ErrNoSolver, a.Type)
	} else {
		err = p.Present(ctx, Presentation{Type: a.Type, Identifier: a.DNSName, Wildcard: a.Wildcard, Token: a.Token,
			KeyAuthorization: a.Key, Solver: a.Solver})
	}
	if err != nil {
		if ctx.Err() != nil {
			return st, err // cut short by the caller: not a failed attempt
		}
		transient := !errors.Is(err, ErrNoSolver)
		st.NoteFailure(err.Error(), transient, nil, now)
		if !transient {
			st.State, st.Reason = challenge.StateErrored, err.Error()
		}
		return st, err
	}
	st.Presented, st.PresentedAt = true, &now
	st.NoteSuccess(false)
	return st, nil
}

// SelfCheck carries out challenge.SelfCheck and returns the status to
// write back (SelfCheckAt, SelfCheckPassed). A failed check is not an
// error of the call: the machine checks again later. A check cut short by
// ctx leaves the status as it was.
func (s Solvers) SelfCheck(ctx context.Context, st challenge.Status, a challenge.SelfCheck, now time.Time) (challenge.Status, error) {
	var err error
	if c := s.checker(a.Type); c != nil {
		err = c.Check(ctx, Presentation{Type: a.Type, Identifier: a.DNSName, Token: a.Token, KeyAuthorization: a.Key})
	}
	if err != nil && ctx.Err() != nil {
		return st, err // cut short by the caller: no check was made
	}
	st.SelfCheckAt, st.SelfCheckPassed = &now, err == nil
	if err != nil {
		st.Reason = "self-check failed: " + err.Error()
	} else {
		st.Reason = ""
	}
	return st, err
}

// CleanUp carries out challenge.CleanUp. It changes no status: the
// machine's UpdateStatus that follows does.
func (s Solvers) CleanUp(ctx context.Context, a challenge.CleanUp) error {
	if p := s.Presenter(a.Type); p != nil {
		return p.CleanUp(ctx, Presentation{Type: a.Type, Identifier: a.DNSName, Wildcard: a.Wildcard,
			Token: a.Token, KeyAuthorization: a.Key, Solver: a.Solver})
	}
	return nil
}
