// Package managed keeps the certificates of a Go TLS service issued,
// renewed and served, on certlife's host loop: give it a store and the
// names, and it gives you a tls.Config.
//
//	m, err := managed.New(ctx, managed.Config{
//		Store: store, // a sqlstore.Store, host.FileStore, …
//		ACME:  &managed.ACME{DirectoryURL: "https://acme-v02.api.letsencrypt.org/directory", Email: "ops@example.com", AgreeToTerms: true},
//		Certificates: []managed.Certificate{
//			{Name: "web", DNSNames: []string{"example.com", "www.example.com"}, Issuer: managed.IssuerACME},
//			{Name: "internal", DNSNames: []string{"api.internal"}, Issuer: managed.IssuerLocalCA},
//		},
//	})
//	go m.Run(ctx)
//	srv := &http.Server{Handler: mux, TLSConfig: m.TLSConfig()}
//	go http.ListenAndServe(":80", m.HTTPHandler(nil)) // HTTP-01
//	srv.ListenAndServeTLS("", "")
//
// Everything it keeps is in the store: the certificates and their
// secrets, the ACME account key (made on the first start), the ACME
// orders in flight when the store is also an acmeclient.Store (a
// restart resumes the same order), and the local CA, itself a
// certificate the loop issues and renews, made on the first start and
// signing as soon as it is written. With a store that several processes
// share (sqlstore over PostgreSQL: a host.Leaser and an
// acmeclient.PresentationStore), each of them can run the same
// Manager: each request is worked on by one at a time, and any of them
// answers a challenge another presented.
//
// The ACME issuer presents HTTP-01 (HTTPHandler, on port 80) and
// TLS-ALPN-01 (answered by TLSConfig on port 443) and uses the first
// the CA offers; renewals follow the CA's renewal information (ARI)
// where it has it. Failures are logged through Config.Logger
// (slog.Default() when nil), which also receives at Debug every decision
// of the host and of the ACME issuer's orders and challenges.
package managed

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/host/sqlstore"
	"github.com/certlife/certlife/certificate/localca"
	"github.com/certlife/certlife/certificate/tlsserve"
)

// Issuer names where a Certificate comes from.
type Issuer string

// The issuers a Manager runs.
const (
	// IssuerACME: the ACME CA of Config.ACME.
	IssuerACME Issuer = "acme"
	// IssuerLocalCA: the Manager's own CA, a self-signed CA certificate
	// kept in the store (secret LocalCAName), for names no public CA
	// vouches for.
	IssuerLocalCA Issuer = "local-ca"
)

// Names of what a Manager keeps in the store beside the certificates.
const (
	// AccountKeyName is the secret holding the ACME account key.
	AccountKeyName = "acme-account"
	// LocalCAName is the certificate (and its secret) of the local CA.
	LocalCAName = "local-ca"
	// selfSignedIssuer issues the local CA's own certificate.
	selfSignedIssuer = "self-signed"
)

// Certificate is one certificate the Manager keeps.
type Certificate struct {
	// Name of the certificate and of the secret it is kept in: a DNS
	// label or subdomain (certificate.ValidateObjectName).
	Name string
	// DNSNames and IPAddresses it is for; at least one.
	DNSNames    []string
	IPAddresses []string
	// Issuer; IssuerACME when empty.
	Issuer Issuer
	// Duration asked for; zero leaves it to the issuer (90 days from
	// the local CA; what the CA gives over ACME unless
	// ACME.RequestValidity).
	Duration time.Duration
}

// ACME configures the ACME issuer.
type ACME struct {
	// DirectoryURL of the CA (RFC 8555 §7.1.1).
	DirectoryURL string
	// Email for the account; may be empty.
	Email string
	// AgreeToTerms must be set: it agrees to the CA's terms of service.
	AgreeToTerms bool
	// HTTPClient talks to the CA; nil means a client with the ACME
	// client's defaults.
	HTTPClient *http.Client
	// RequestValidity asks the CA for each certificate's Duration (or
	// 90 days) from the time of the order: for CAs that honour notBefore
	// and notAfter (Pebble does, Let's Encrypt does not).
	RequestValidity bool
}

// Config configures a Manager.
type Config struct {
	// Store keeps everything. Give either Store, or DB and Dialect: a
	// database the Manager keeps everything in through package
	// sqlstore (and closes the store, not the database, on Close).
	Store host.Store
	// DB and Dialect: see Store.
	DB      *sql.DB
	Dialect sqlstore.Dialect
	// Namespace the Manager's objects live in; "default" when empty.
	Namespace string
	// ACME, when set, runs the ACME issuer (required by a Certificate
	// with IssuerACME).
	ACME *ACME
	// LocalCACommonName is the subject of the local CA's certificate;
	// "certlife local CA" when empty.
	LocalCACommonName string
	// Certificates to keep. Each is created in the store, or updated to
	// match when its names, issuer or duration changed; certificates
	// the store holds beside them are left alone.
	Certificates []Certificate
	// Clock; the real clock when nil.
	Clock clock.WithTicker
	// Logger receives failures (Warn and Error) and, at Debug, every
	// decision and answer; nil means slog.Default().
	Logger *slog.Logger
	// Identity names this process among replicas sharing the store
	// (host.Config.Identity); empty makes one up.
	Identity string
	// LeaseDuration is how long a replica holds a request it works on
	// (host.Config.LeaseDuration): how long the others wait for one that
	// died. Zero means host.DefaultLeaseDuration.
	LeaseDuration time.Duration
}

// ErrClosed is returned by ListenAndServe after Close.
var ErrClosed = errors.New("managed: the Manager is closed")

// Manager keeps the configured certificates issued and renewed and
// serves them. Make it with New, run it with Run.
type Manager struct {
	loop  *host.Loop
	serve *tlsserve.Server
	http  *acmeclient.HTTP01Handler
	alpn  *acmeclient.TLSALPN01Handler
	acme  *acmeclient.Client
	// closeStore closes the store the Manager opened (Config.DB).
	closeStore func() error
	log        *slog.Logger

	mu        sync.Mutex
	servers   []*http.Server
	addrs     []net.Addr
	serveErrs []error
	serving   sync.WaitGroup
	closed    bool
}

// New checks cfg, creates the certificates it lists (and the local CA and
// ACME account key when they are missing), and returns a Manager ready to
// Run. It makes no ACME request.
func New(ctx context.Context, cfg Config) (*Manager, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ns := cfg.Namespace
	if ns == "" {
		ns = "default"
	}
	var clk clock.WithTicker = clock.RealClock{}
	if cfg.Clock != nil {
		clk = cfg.Clock
	}
	m := &Manager{log: cfg.Logger}
	if m.log == nil {
		m.log = slog.Default()
	}
	if cfg.DB != nil {
		sq, err := sqlstore.Open(ctx, cfg.DB, sqlstore.Options{Dialect: cfg.Dialect, Clock: cfg.Clock, Logger: cfg.Logger})
		if err != nil {
			return nil, fmt.Errorf("managed: %w", err)
		}
		m.closeStore = sq.Close
		cfg.Store = sq
	}
	ok := false
	defer func() {
		if !ok {
			m.close()
		}
	}()
	store := cfg.Store
	secrets := store.Secrets()
	issuers := map[certificate.IssuerRef]certificate.Issuer{}
	want := make([]*certificate.Certificate, 0, len(cfg.Certificates)+1)
	if cfg.uses(IssuerLocalCA) {
		cn := cfg.LocalCACommonName
		if cn == "" {
			cn = "certlife local CA"
		}
		issuers[certificate.IssuerRef{Name: selfSignedIssuer}] = localca.SelfSigned(secrets.Get, nil)
		issuers[certificate.IssuerRef{Name: string(IssuerLocalCA)}] = localca.FromSecret(secrets.Get, ns, LocalCAName, nil)
		want = append(want, localca.RootCertificate(ns, LocalCAName, cn, certificate.IssuerRef{Name: selfSignedIssuer}))
	}
	if cfg.ACME != nil {
		iss, err := m.acmeIssuer(ctx, cfg, ns, clk)
		if err != nil {
			return nil, err
		}
		issuers[certificate.IssuerRef{Name: string(IssuerACME)}] = iss
	}
	for _, c := range cfg.Certificates {
		want = append(want, c.object(ns))
	}
	for _, c := range want {
		if err := ensure(ctx, store.Certificates(), c); err != nil {
			return nil, err
		}
	}
	loop, err := host.New(host.Config{Store: store, Clock: clk, Issuers: issuers, Logger: cfg.Logger, Identity: cfg.Identity, LeaseDuration: cfg.LeaseDuration})
	if err != nil {
		return nil, err
	}
	opts := tlsserve.Options{Namespace: ns, Logger: cfg.Logger}
	if m.alpn != nil {
		opts.TLSALPN01 = m.alpn
	}
	serve, err := tlsserve.New(store, opts)
	if err != nil {
		return nil, err
	}
	m.loop, m.serve, ok = loop, serve, true
	return m, nil
}

// acmeIssuer makes the ACME client (with the account key kept in the
// store) and issuer, presenting HTTP-01 and TLS-ALPN-01 through the
// store when it keeps presentations for replicas.
func (m *Manager) acmeIssuer(ctx context.Context, cfg Config, ns string, clk clock.PassiveClock) (certificate.Issuer, error) {
	secrets := cfg.Store.Secrets()
	key, err := acmeclient.AccountKey(ctx, secrets.Get, secrets.Create, ns, AccountKeyName, nil)
	if err != nil {
		return nil, fmt.Errorf("managed: the ACME account key: %w", err)
	}
	client, err := acmeclient.New(acmeclient.Config{DirectoryURL: cfg.ACME.DirectoryURL, Key: key, HTTPClient: cfg.ACME.HTTPClient, Clock: clk})
	if err != nil {
		return nil, fmt.Errorf("managed: %w", err)
	}
	m.acme = client
	m.http, m.alpn = &acmeclient.HTTP01Handler{}, &acmeclient.TLSALPN01Handler{}
	if ps, ok := cfg.Store.(acmeclient.PresentationStore); ok {
		m.http, m.alpn = acmeclient.NewHTTP01Handler(ps), acmeclient.NewTLSALPN01Handler(ps)
	}
	state, ok := cfg.Store.(acmeclient.Store)
	if !ok {
		state = acmeclient.NewMemoryStore()
	}
	var contact []string
	if cfg.ACME.Email != "" {
		contact = []string{"mailto:" + cfg.ACME.Email}
	}
	iss, err := acmeclient.NewIssuer(acmeclient.IssuerConfig{Client: client, Store: state,
		Account:         acmeclient.AccountOptions{Contact: contact, AgreeToTerms: cfg.ACME.AgreeToTerms},
		Solvers:         acmeclient.Solvers{HTTP01: m.http, TLSALPN01: m.alpn},
		RequestValidity: cfg.ACME.RequestValidity,
		Trace:           acmeTrace(m.log)})
	if err != nil {
		return nil, fmt.Errorf("managed: %w", err)
	}
	return iss, nil
}

// acmeTrace logs the ACME issuer's order and challenge decisions through
// the Manager's logger: those that met an error at Warn, the others at
// Debug, so that the one logger shows every decision the host and the
// issuer make.
func acmeTrace(log *slog.Logger) func(acmeclient.Event) {
	return func(ev acmeclient.Event) {
		level := slog.LevelDebug
		if ev.Err != nil {
			level = slog.LevelWarn
		}
		ctx := context.Background()
		if !log.Enabled(ctx, level) {
			return
		}
		attrs := []slog.Attr{slog.String("resource", ev.Resource), slog.String("reason", ev.Reason), slog.Time("at", ev.Time)}
		if ev.Message != "" {
			attrs = append(attrs, slog.String("message", ev.Message))
		}
		if len(ev.Actions) > 0 {
			attrs = append(attrs, slog.Any("actions", ev.Actions))
		}
		if ev.Err != nil {
			attrs = append(attrs, slog.String("error", ev.Err.Error()))
		}
		log.LogAttrs(ctx, level, "certlife: ACME issuer", attrs...)
	}
}

// Run keeps the certificates until ctx ends (host.Loop.Run), then stops
// serving renewals; TLSConfig keeps answering with what it last had.
func (m *Manager) Run(ctx context.Context) error {
	err := m.loop.Run(ctx)
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil
	}
	return err
}

// TLSConfig serves the certificates for their names (by SNI) and answers
// TLS-ALPN-01 validation; renewals are served as soon as they are
// written.
func (m *Manager) TLSConfig() *tls.Config { return m.serve.TLSConfig() }

// GetCertificate is TLSConfig's GetCertificate.
func (m *Manager) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	return m.serve.GetCertificate(hello)
}

// HTTPHandler answers HTTP-01 validation at acmeclient.HTTP01Path and
// hands every other request to next; nil next redirects it to https.
// Serve it on port 80.
func (m *Manager) HTTPHandler(next http.Handler) http.Handler {
	if next == nil {
		next = http.HandlerFunc(redirect)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m.http != nil && strings.HasPrefix(r.URL.Path, acmeclient.HTTP01Path) {
			m.http.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func redirect(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "use https", http.StatusBadRequest)
		return
	}
	host := r.Host
	if h, _, ok := strings.Cut(host, ":"); ok && !strings.Contains(h, "[") {
		host = h
	}
	http.Redirect(w, r, "https://"+host+r.URL.RequestURI(), http.StatusFound)
}

// Loop is the host loop, for tests that drive it on a fake clock
// (package hosttest) instead of Run.
func (m *Manager) Loop() *host.Loop { return m.loop }

// Store is the store the Manager keeps everything in.
func (m *Manager) Store() host.Store { return m.loop.Reconciler().Store() }

// ACMEClient is the ACME client (nil without Config.ACME), for its
// request counters.
func (m *Manager) ACMEClient() *acmeclient.Client { return m.acme }

// Close stops serving: the servers Serve started shut down (requests in
// flight get up to five seconds), TLSConfig answers no more handshakes,
// and the store the Manager opened over Config.DB is closed. Call it
// after Run returned; a second Close does nothing.
func (m *Manager) Close() error { return m.close() }

func (m *Manager) close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	servers := m.servers
	m.servers = nil
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, srv := range servers {
		if srv.Shutdown(ctx) != nil {
			srv.Close()
		}
	}
	m.serving.Wait()
	m.mu.Lock()
	errs := append([]error(nil), m.serveErrs...)
	m.mu.Unlock()
	if m.serve != nil {
		errs = append(errs, m.serve.Close())
	}
	if m.closeStore != nil {
		errs = append(errs, m.closeStore())
	}
	return errors.Join(errs...)
}

// Serve serves h over TLS on https (TLSConfig: the certificates by SNI,
// and TLS-ALPN-01) and, when plain is not nil, HTTP-01 and a redirect of
// everything else to https on plain (HTTPHandler(nil)), in the
// background, until Close. A server that fails is logged (Config.Logger)
// and its error returned by Close. Run the Manager (Run) beside it. After
// Close, Serve closes the listeners and serves nothing.
func (m *Manager) Serve(https, plain net.Listener, h http.Handler) {
	m.serveOne(&http.Server{Handler: h, TLSConfig: m.TLSConfig(), ReadHeaderTimeout: 10 * time.Second}, https)
	if plain != nil {
		m.serveOne(&http.Server{Handler: m.HTTPHandler(nil), ReadHeaderTimeout: 10 * time.Second}, plain)
	}
}

// ListenAndServe listens on the TCP addresses httpsAddr and, when not
// empty, plainAddr (":443" and ":80" in production; port 0 picks one,
// and Addrs says which) and serves on them as Serve does.
func (m *Manager) ListenAndServe(httpsAddr, plainAddr string, h http.Handler) error {
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return ErrClosed
	}
	https, err := net.Listen("tcp", httpsAddr)
	if err != nil {
		return fmt.Errorf("managed: %w", err)
	}
	var plain net.Listener
	if plainAddr != "" {
		if plain, err = net.Listen("tcp", plainAddr); err != nil {
			https.Close()
			return fmt.Errorf("managed: %w", err)
		}
	}
	m.Serve(https, plain, h)
	return nil
}

// Addrs are the addresses of the servers Serve started, in the order
// they were started (each Serve: https, then plain).
func (m *Manager) Addrs() []net.Addr {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]net.Addr(nil), m.addrs...)
}

func (m *Manager) serveOne(srv *http.Server, ln net.Listener) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		ln.Close()
		m.log.Error("certlife: Serve after Close: not serving", "addr", ln.Addr().String())
		return
	}
	m.servers = append(m.servers, srv)
	m.addrs = append(m.addrs, ln.Addr())
	m.serving.Add(1)
	go func() {
		defer m.serving.Done()
		var err error
		if srv.TLSConfig != nil {
			err = srv.ServeTLS(ln, "", "")
		} else {
			err = srv.Serve(ln)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.log.Error("certlife: serving failed", "addr", ln.Addr().String(), "error", err)
			m.mu.Lock()
			m.serveErrs = append(m.serveErrs, fmt.Errorf("managed: serving on %s: %w", ln.Addr(), err))
			m.mu.Unlock()
		}
	}()
}

func (cfg Config) uses(iss Issuer) bool {
	for _, c := range cfg.Certificates {
		if c.issuer() == iss {
			return true
		}
	}
	return false
}

func (c Certificate) issuer() Issuer {
	if c.Issuer == "" {
		return IssuerACME
	}
	return c.Issuer
}

// validate names every problem of cfg.
func (cfg Config) validate() error {
	var errs []error
	if (cfg.Store == nil) == (cfg.DB == nil) {
		errs = append(errs, errors.New("managed: give Config.Store, or Config.DB with its Dialect (not both)"))
	}
	if cfg.Namespace != "" {
		if err := certificate.ValidateNamespace(cfg.Namespace); err != nil {
			errs = append(errs, fmt.Errorf("managed: Config.Namespace: %w", err))
		}
	}
	if a := cfg.ACME; a != nil {
		if a.DirectoryURL == "" {
			errs = append(errs, errors.New("managed: Config.ACME.DirectoryURL is empty"))
		}
		if !a.AgreeToTerms {
			errs = append(errs, errors.New("managed: Config.ACME.AgreeToTerms is false: the CA issues only to accounts that agree to its terms"))
		}
	}
	seen := map[string]bool{LocalCAName: true}
	for i, c := range cfg.Certificates {
		where := fmt.Sprintf("managed: Config.Certificates[%d] (%q)", i, c.Name)
		if err := certificate.ValidateObjectName(c.Name); err != nil {
			errs = append(errs, fmt.Errorf("%s: Name: %w", where, err))
		} else if seen[c.Name] {
			errs = append(errs, fmt.Errorf("%s: Name is taken (by another certificate, or by the local CA's %q)", where, LocalCAName))
		}
		seen[c.Name] = true
		if len(c.DNSNames)+len(c.IPAddresses) == 0 {
			errs = append(errs, fmt.Errorf("%s: no DNSNames or IPAddresses", where))
		}
		if c.Duration < 0 {
			errs = append(errs, fmt.Errorf("%s: Duration %v is negative", where, c.Duration))
		}
		switch c.issuer() {
		case IssuerACME:
			if cfg.ACME == nil {
				errs = append(errs, fmt.Errorf("%s: Issuer %q needs Config.ACME", where, IssuerACME))
			}
		case IssuerLocalCA:
		default:
			errs = append(errs, fmt.Errorf("%s: Issuer %q is not %q or %q", where, c.Issuer, IssuerACME, IssuerLocalCA))
		}
		if err := certificate.Validate(&c.object("default").Spec); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
		}
	}
	return errors.Join(errs...)
}

// object is c as a certificate of namespace ns.
func (c Certificate) object(ns string) *certificate.Certificate {
	obj := &certificate.Certificate{ObjectMeta: certificate.ObjectMeta{Namespace: ns, Name: c.Name},
		Spec: certificate.Spec{SecretName: c.Name, DNSNames: c.DNSNames, IPAddresses: c.IPAddresses,
			IssuerRef: certificate.IssuerRef{Name: string(c.issuer())}}}
	if c.Duration > 0 {
		obj.Spec.Duration = &certificate.Duration{Duration: c.Duration}
	}
	return obj
}

// ensure creates want, or updates the stored certificate's spec to
// want's when it differs.
func ensure(ctx context.Context, certs host.Collection[*certificate.Certificate], want *certificate.Certificate) error {
	for range 5 {
		_, err := certs.Create(ctx, want)
		if err == nil {
			return nil
		}
		if !errors.Is(err, host.ErrAlreadyExists) {
			return fmt.Errorf("managed: creating certificate %s: %w", want.Name, err)
		}
		got, err := certs.Get(ctx, want.Namespace, want.Name)
		if errors.Is(err, host.ErrNotFound) {
			continue // deleted in between
		}
		if err != nil {
			return fmt.Errorf("managed: reading certificate %s: %w", want.Name, err)
		}
		if reflect.DeepEqual(got.Spec, want.Spec) {
			return nil
		}
		got.Spec = want.Spec
		if _, err = certs.Update(ctx, got); err == nil {
			return nil
		} else if !errors.Is(err, host.ErrConflict) && !errors.Is(err, host.ErrNotFound) {
			return fmt.Errorf("managed: updating certificate %s: %w", want.Name, err)
		}
	}
	return fmt.Errorf("managed: certificate %s: it kept changing under five attempts to write it", want.Name)
}
