package acmetest

import (
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/letsencrypt/pebble/v2/ca"
	"github.com/letsencrypt/pebble/v2/db"
	"github.com/letsencrypt/pebble/v2/va"
	"github.com/letsencrypt/pebble/v2/wfe"

	"github.com/certlife/certlife/acmeclient"
)

// Profile is a certificate profile the server offers (RFC draft
// "ACME profiles"): a description and a validity.
type Profile struct {
	Description string
	// Validity of certificates issued under the profile; zero means 90
	// days.
	Validity time.Duration
}

// Options are Pebble's knobs. The zero value is a quiet, deterministic
// server: no rejected nonces, no validation sleep, no authorization reuse,
// one intermediate, no alternate roots, and the profiles "default" (90
// days) and "shortlived" (6 days). An order that names no profile gets one
// of the profiles at random, as Pebble chooses: name one
// (acmeclient.IssuerConfig.Profile), or ask for the validity
// (IssuerConfig.RequestValidity), for certificates of a known lifetime.
type Options struct {
	// NonceRejectPercent of good nonces rejected as bad
	// (PEBBLE_WFE_NONCEREJECT), 0–99.
	NonceRejectPercent int
	// ValidationSleep, when positive, makes each validation sleep a random
	// whole number of seconds below it (PEBBLE_VA_SLEEPTIME); zero turns the
	// sleep off (PEBBLE_VA_NOSLEEP).
	ValidationSleep time.Duration
	// AlwaysValid skips validation: every challenge passes
	// (PEBBLE_VA_ALWAYS_VALID).
	AlwaysValid bool
	// AuthzReusePercent is how often a new order reuses a valid
	// authorization the account holds for the same identifier
	// (PEBBLE_AUTHZREUSE), 0–100, exactly.
	//
	// Pebble itself reuses one more time in a hundred than it is told: it
	// creates a new authorization when rand.Intn(100) > percent, so told
	// 0 it still reuses one time in 100. Start passes percent−1 for 1–100,
	// and for 0 hides the account's valid authorizations from Pebble
	// while it creates each order, so that no order reuses one that was
	// valid when it was asked for.
	AuthzReusePercent int
	// Intermediates between the leaf and the root; zero means 1
	// (PEBBLE_CHAIN_LENGTH).
	Intermediates int
	// AlternateRoots is the number of extra roots, each with its own chain
	// (PEBBLE_ALTERNATE_ROOTS).
	AlternateRoots int
	// Profiles replaces the default profiles when set.
	Profiles map[string]Profile
	// EAB holds external account binding keys: key ID → base64url HMAC key.
	EAB map[string]string
	// RequireEAB makes newAccount require an external account binding.
	RequireEAB bool
	// RetryAfterAuthz and RetryAfterOrder are the Retry-After seconds the
	// server sends on challenge and finalize responses; zero sends none.
	RetryAfterAuthz, RetryAfterOrder int
	// Log receives Pebble's log; nil discards it.
	Log io.Writer
	// TLSALPN01Port, when set, is the loopback port the server validates
	// TLS-ALPN-01 challenges on, where the caller's own TLS server
	// listens — to test a server that answers TLS-ALPN-01 itself, for
	// example with TLSALPN01Handler's GetCertificate. Zero starts a
	// listener of the server's own that answers with TLSALPN01Handler.
	TLSALPN01Port int
	// RateLimits, when set, makes the server refuse orders and
	// finalizes past them as Let's Encrypt does (see RateLimits).
	RateLimits *RateLimits
}

// Server is Pebble running in this process on loopback: its ACME
// endpoint over TLS, a DNS server it resolves every name with, an HTTP
// server on the port it validates HTTP-01 challenges against, and a TLS
// server on the port it validates TLS-ALPN-01 challenges against.
type Server struct {
	// URL is the base URL of the ACME endpoint, https://127.0.0.1:port.
	URL string
	// DirectoryURL is the ACME directory (RFC 8555 §7.1.1).
	DirectoryURL string

	acme    *httptest.Server
	db      *db.MemoryStore
	ca      *ca.CAImpl
	dns     *DNS
	http01  *http.Server
	httpLn  net.Listener
	h01mu   sync.Mutex
	h01     http.Handler
	handler *acmeclient.HTTP01Handler
	done    chan struct{}
	tlsPort int
	tlsLn   net.Listener // nil when Options.TLSALPN01Port is set
	tlsalpn *acmeclient.TLSALPN01Handler
	tlsWG   sync.WaitGroup
	// orders counts the orders Pebble created, by identifiers.
	ordersMu sync.Mutex
	orders   map[string]int
	// limits enforces Options.RateLimits; nil without.
	limits *limiter
	// newOrders is held exclusively while Pebble creates an order with
	// the account's valid authorizations hidden (AuthzReusePercent 0).
	newOrders sync.RWMutex
}

// envMu serialises the environment variables Pebble reads while its
// objects are constructed.
var envMu sync.Mutex

// Start starts a server. Close stops it.
func Start(opts Options) (*Server, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	logOut := opts.Log
	if logOut == nil {
		logOut = io.Discard
	}
	logger := log.New(logOut, "pebble ", log.LstdFlags)

	s := &Server{done: make(chan struct{}), handler: &acmeclient.HTTP01Handler{}, tlsalpn: &acmeclient.TLSALPN01Handler{}}
	s.h01 = s.handler
	var err error
	if s.dns, err = StartDNS(); err != nil {
		return nil, err
	}
	if s.httpLn, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		s.dns.Close()
		return nil, fmt.Errorf("acmetest: HTTP-01 listener: %w", err)
	}
	s.http01 = &http.Server{Handler: http.HandlerFunc(s.serveHTTP01), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		defer close(s.done)
		_ = s.http01.Serve(s.httpLn)
	}()
	if s.tlsPort = opts.TLSALPN01Port; s.tlsPort == 0 {
		if s.tlsLn, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			s.Close()
			return nil, fmt.Errorf("acmetest: TLS-ALPN-01 listener: %w", err)
		}
		s.tlsPort = s.tlsLn.Addr().(*net.TCPAddr).Port
		s.tlsWG.Add(1)
		go s.serveTLSALPN01()
	}

	chain := opts.Intermediates
	if chain == 0 {
		chain = 1
	}
	profiles := map[string]ca.Profile{}
	src := opts.Profiles
	if src == nil {
		src = map[string]Profile{
			"default":    {Description: "90-day certificates", Validity: 90 * 24 * time.Hour},
			"shortlived": {Description: "6-day certificates", Validity: 6 * 24 * time.Hour},
		}
	}
	for name, p := range src {
		v := p.Validity
		if v <= 0 {
			v = 90 * 24 * time.Hour
		}
		profiles[name] = ca.Profile{Description: p.Description, ValidityPeriod: uint64(v / time.Second)}
	}

	httpPort := s.httpLn.Addr().(*net.TCPAddr).Port
	env := map[string]string{
		"PEBBLE_WFE_NONCEREJECT": strconv.Itoa(opts.NonceRejectPercent),
		"PEBBLE_AUTHZREUSE":      strconv.Itoa(max(opts.AuthzReusePercent-1, 0)),
		"PEBBLE_VA_NOSLEEP":      "1",
		"PEBBLE_VA_SLEEPTIME":    "",
		"PEBBLE_VA_ALWAYS_VALID": "",
	}
	if opts.ValidationSleep > 0 {
		env["PEBBLE_VA_NOSLEEP"] = ""
		env["PEBBLE_VA_SLEEPTIME"] = strconv.Itoa(int((opts.ValidationSleep + time.Second - 1) / time.Second))
	}
	if opts.AlwaysValid {
		env["PEBBLE_VA_ALWAYS_VALID"] = "1"
	}

	var w wfe.WebFrontEndImpl
	withEnv(env, func() {
		s.db = db.NewMemoryStore()
		s.ca = ca.New(logger, s.db, "", "ecdsa", opts.AlternateRoots, chain, profiles)
		v := va.New(logger, httpPort, s.tlsPort, false, s.dns.Addr(), s.db)
		w = wfe.New(logger, s.db, v, s.ca, []string{"pebble.letsencrypt.org"}, false, opts.RequireEAB, opts.RetryAfterAuthz, opts.RetryAfterOrder)
	})
	for id, key := range opts.EAB {
		if err := s.db.AddExternalAccountKeyByID(id, key); err != nil {
			s.Close()
			return nil, fmt.Errorf("acmetest: EAB key %q: %w", id, err)
		}
	}
	h := w.Handler()
	if opts.AuthzReusePercent == 0 {
		h = s.withoutReuse(h)
	}
	if opts.RateLimits != nil {
		s.limits = &limiter{cfg: *opts.RateLimits, tat: map[string]time.Time{}}
		h = s.limits.wrap(h)
	}
	s.acme = httptest.NewUnstartedServer(s.countOrders(h))
	s.acme.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.acme.StartTLS()
	s.URL = s.acme.URL
	s.DirectoryURL = s.acme.URL + wfe.DirectoryPath
	return s, nil
}

func (o Options) validate() error {
	var errs []error
	if o.NonceRejectPercent < 0 || o.NonceRejectPercent > 99 {
		errs = append(errs, fmt.Errorf("acmetest: NonceRejectPercent: %d is not in 0–99", o.NonceRejectPercent))
	}
	if o.AuthzReusePercent < 0 || o.AuthzReusePercent > 100 {
		errs = append(errs, fmt.Errorf("acmetest: AuthzReusePercent: %d is not in 0–100", o.AuthzReusePercent))
	}
	if o.TLSALPN01Port < 0 || o.TLSALPN01Port > 65535 {
		errs = append(errs, fmt.Errorf("acmetest: TLSALPN01Port: %d is not a port", o.TLSALPN01Port))
	}
	if o.Intermediates < 0 || o.AlternateRoots < 0 || o.ValidationSleep < 0 {
		errs = append(errs, fmt.Errorf("acmetest: Intermediates (%d), AlternateRoots (%d) and ValidationSleep (%v) must not be negative",
			o.Intermediates, o.AlternateRoots, o.ValidationSleep))
	}
	if l := o.RateLimits; l != nil {
		for _, f := range []struct {
			name string
			l    acmeclient.Limit
		}{{"OrdersPerAccount", l.OrdersPerAccount}, {"CertificatesPerRegisteredDomain", l.CertificatesPerRegisteredDomain}, {"CertificatesPerExactSet", l.CertificatesPerExactSet}} {
			if f.l.Count < 0 || (f.l.Count > 0 && f.l.Window/time.Duration(f.l.Count) <= 0) {
				errs = append(errs, fmt.Errorf("acmetest: RateLimits.%s: %d per %v is not a limit", f.name, f.l.Count, f.l.Window))
			}
		}
	}
	return errors.Join(errs...)
}

// withEnv sets environment variables (empty: unset) for the duration of
// fn, then restores them. Pebble reads them in its constructors only.
func withEnv(env map[string]string, fn func()) {
	envMu.Lock()
	defer envMu.Unlock()
	old := map[string]*string{}
	for k, v := range env {
		if prev, ok := os.LookupEnv(k); ok {
			old[k] = &prev
		} else {
			old[k] = nil
		}
		if v == "" {
			os.Unsetenv(k)
		} else {
			os.Setenv(k, v)
		}
	}
	defer func() {
		for k, v := range old {
			if v == nil {
				os.Unsetenv(k)
			} else {
				os.Setenv(k, *v)
			}
		}
	}()
	fn()
}

// Close stops the ACME, DNS, HTTP-01 and TLS-ALPN-01 servers. Pebble's
// validation authority keeps one idle goroutine that it offers no way to
// stop; it holds no port.
func (s *Server) Close() {
	if s.acme != nil {
		s.acme.Close()
	}
	if s.http01 != nil {
		_ = s.http01.Close()
		<-s.done
	}
	if s.tlsLn != nil {
		_ = s.tlsLn.Close()
		s.tlsWG.Wait()
	}
	if s.dns != nil {
		s.dns.Close()
	}
}

// Client returns an HTTP client that trusts the ACME server's TLS
// certificate (not the certificates it issues: see Roots).
func (s *Server) Client() *http.Client { return s.acme.Client() }

// CABundle is the ACME endpoint's TLS certificate, PEM: what a host that
// takes the server's trust as a CA bundle (a Kubernetes issuer's caBundle)
// configures to reach it. It is not a root of the certificates the server
// issues: see Roots.
func (s *Server) CABundle() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.acme.Certificate().Raw})
}

// ClientConfig is the acmeclient configuration for this server and an
// account key: its directory, and an HTTP client that trusts it.
func (s *Server) ClientConfig(key crypto.Signer) acmeclient.Config {
	return acmeclient.Config{DirectoryURL: s.DirectoryURL, Key: key, HTTPClient: s.Client()}
}

// Solvers are presenters and self-checks for HTTP-01 and DNS-01, wired
// to this server: HTTP-01 through HTTP01Handler, which answers on the
// port the server validates against, DNS-01 through its DNS server, and
// self-checks that resolve names through that DNS server, as the CA
// does. For TLS-ALPN-01, see TLSALPN01Solvers.
func (s *Server) Solvers() acmeclient.Solvers {
	return acmeclient.Solvers{
		HTTP01:      s.handler,
		HTTP01Check: acmeclient.HTTP01Checker{Client: s.checkClient(), Port: s.HTTP01Port()},
		DNS01:       s.dns,
		DNS01Check:  acmeclient.DNS01Checker{Nameservers: []string{s.dns.Addr()}},
	}
}

// TLSALPN01Solvers are a TLS-ALPN-01 presenter and self-check wired to
// this server: TLSALPN01Handler, whose certificates answer on the port
// the server validates against, and a self-check that dials that port
// as the CA does. An issuer given them solves every name and IP address
// with TLS-ALPN-01 (wildcards cannot be); add them to Solvers' to offer
// both: with no SolverConfigs, HTTP-01 is then chosen where the server
// offers it.
func (s *Server) TLSALPN01Solvers() acmeclient.Solvers {
	return acmeclient.Solvers{TLSALPN01: s.tlsalpn, TLSALPN01Check: s.TLSALPN01Checker()}
}

// Dialer is a dialer that resolves names through the server's DNS
// server, as the CA does.
func (s *Server) Dialer() *net.Dialer {
	resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, s.dns.Addr())
	}}
	return &net.Dialer{Resolver: resolver, Timeout: 5 * time.Second}
}

func (s *Server) checkClient() *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: s.Dialer().DialContext, DisableKeepAlives: true}}
}

// TLSALPN01Checker is the TLS-ALPN-01 self-check the server's Solvers
// use: it dials the TLS-ALPN-01 port, resolving through the server's DNS
// server, as the CA does.
func (s *Server) TLSALPN01Checker() acmeclient.TLSALPN01Checker {
	return acmeclient.TLSALPN01Checker{Dialer: s.Dialer(), Port: s.tlsPort}
}

// TLSALPN01Handler is the TLS-ALPN-01 presenter whose certificates the
// server's own TLS-ALPN-01 listener answers with (none is started when
// Options.TLSALPN01Port is set: the caller's server answers there).
func (s *Server) TLSALPN01Handler() *acmeclient.TLSALPN01Handler { return s.tlsalpn }

// TLSALPN01Port is the port the server validates TLS-ALPN-01 challenges
// on.
func (s *Server) TLSALPN01Port() int { return s.tlsPort }

// serveTLSALPN01 answers each connection to the TLS-ALPN-01 listener with
// one handshake, as RFC 8737 §3 asks, until the listener is closed.
func (s *Server) serveTLSALPN01() {
	defer s.tlsWG.Done()
	cfg := &tls.Config{
		GetCertificate: s.tlsalpn.GetCertificate,
		NextProtos:     []string{acmeclient.ACMETLS1Protocol},
		MinVersion:     tls.VersionTLS12,
	}
	for {
		conn, err := s.tlsLn.Accept()
		if err != nil {
			return
		}
		s.tlsWG.Add(1)
		go func() {
			defer s.tlsWG.Done()
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			_ = tls.Server(conn, cfg).Handshake()
		}()
	}
}

// HTTP01Handler is the HTTP-01 presenter whose tokens the HTTP-01 port
// serves (unless SetHTTP01Handler put another handler there).
func (s *Server) HTTP01Handler() *acmeclient.HTTP01Handler { return s.handler }

// HTTP01Port is the port the server validates HTTP-01 challenges on.
func (s *Server) HTTP01Port() int { return s.httpLn.Addr().(*net.TCPAddr).Port }

// HTTP01Addr is the loopback address of the HTTP-01 server.
func (s *Server) HTTP01Addr() string { return s.httpLn.Addr().String() }

// SetHTTP01Handler sets what answers on the HTTP-01 port, for example a
// handler that fails some requests and passes the others on to
// HTTP01Handler; nil puts HTTP01Handler back.
func (s *Server) SetHTTP01Handler(h http.Handler) {
	s.h01mu.Lock()
	defer s.h01mu.Unlock()
	if h == nil {
		h = s.handler
	}
	s.h01 = h
}

func (s *Server) serveHTTP01(w http.ResponseWriter, r *http.Request) {
	s.h01mu.Lock()
	h := s.h01
	s.h01mu.Unlock()
	h.ServeHTTP(w, r)
}

// DNS is the DNS server every name resolves through.
func (s *Server) DNS() *DNS { return s.dns }

// Roots returns the root certificates: the default chain's first, then
// each alternate root.
func (s *Server) Roots() []*x509.Certificate {
	var out []*x509.Certificate
	for i := 0; i < s.ca.GetNumberOfRootCerts(); i++ {
		if c := s.ca.GetRootCert(i); c != nil {
			out = append(out, c.Cert)
		}
	}
	return out
}

// RootPool is a pool of every root, for verifying issued certificates.
func (s *Server) RootPool() *x509.CertPool {
	p := x509.NewCertPool()
	for _, c := range s.Roots() {
		p.AddCert(c)
	}
	return p
}

// SetRenewalInfo makes the server's renewalInfo for an issued certificate
// (PEM or DER leaf) answer the given window (RFC 9773 §4.2) instead of its
// default, as Pebble's management interface does.
func (s *Server) SetRenewalInfo(leaf *x509.Certificate, start, end time.Time, explanationURL string) error {
	body := map[string]any{"suggestedWindow": map[string]string{
		"start": start.UTC().Format(time.RFC3339), "end": end.UTC().Format(time.RFC3339)}}
	if explanationURL != "" {
		body["explanationURL"] = explanationURL
	}
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	return s.db.SetARIResponse(leaf.SerialNumber, string(b))
}

// Replaced reports whether the server has marked an issued certificate as
// replaced by a renewal order that named it (RFC 9773 §5).
func (s *Server) Replaced(leaf *x509.Certificate) (bool, error) {
	o, err := s.db.GetOrderByIssuedSerial(hex.EncodeToString(leaf.SerialNumber.Bytes()))
	if err != nil {
		return false, err
	}
	o.RLock()
	defer o.RUnlock()
	return o.IsReplaced, nil
}
