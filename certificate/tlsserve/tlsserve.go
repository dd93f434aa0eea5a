package tlsserve

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/keys"
)

// ACMETLS1Protocol is the ALPN protocol of TLS-ALPN-01 validation
// (RFC 8737 §6.2); it is acmeclient.ACMETLS1Protocol.
const ACMETLS1Protocol = "acme-tls/1"

// Defaults of Options.
const (
	// DefaultResync is how often a store that does not report its writes
	// is read again.
	DefaultResync = time.Minute
	// DefaultWatchedResync is how often a store that reports its writes
	// (host.Watcher) is read again, as a backstop.
	DefaultWatchedResync = 10 * time.Minute
	// DefaultMaxCached is how many secrets are kept parsed at most.
	DefaultMaxCached = 10000
	// DefaultLoadTimeout bounds how long a handshake waits on the store.
	DefaultLoadTimeout = 5 * time.Second
	// DefaultRetry is how soon a read that failed is tried again.
	DefaultRetry = 5 * time.Second
)

// ErrNoCertificate is wrapped by GetCertificate's error when it has no
// certificate for the hello's server name.
var ErrNoCertificate = errors.New("tlsserve: no certificate")

// ErrClosed is wrapped by GetCertificate's error after Close.
var ErrClosed = errors.New("tlsserve: server closed")

// ChallengeResponder answers the handshakes of TLS-ALPN-01 validation:
// *acmeclient.TLSALPN01Handler is one.
type ChallengeResponder interface {
	GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error)
}

// Options configure a Server. The zero value serves every namespace of
// the store, with the documented defaults.
type Options struct {
	// TLSALPN01, when set, answers every hello that offers
	// ACMETLS1Protocol alone (a CA validating a TLS-ALPN-01 challenge,
	// RFC 8737 §3), and TLSConfig lists that protocol. Nil refuses such
	// hellos.
	TLSALPN01 ChallengeResponder
	// Namespace, when set, serves only the certificates of that
	// namespace.
	Namespace string
	// Resync is how often everything is read from the store again:
	// every certificate, and every secret kept parsed (a secret whose
	// resource version did not change is not parsed again). Zero means
	// DefaultWatchedResync for a store that reports its writes
	// (host.Watcher), DefaultResync for one that does not.
	Resync time.Duration
	// MaxCached bounds the secrets kept parsed (a certificate chain and
	// its key each); the least recently served is dropped first, and
	// read again when a handshake asks for it. Zero means
	// DefaultMaxCached. The names of every certificate are kept
	// whatever the bound: a few strings each.
	MaxCached int
	// LoadTimeout bounds how long a handshake waits on the store; zero
	// means DefaultLoadTimeout.
	LoadTimeout time.Duration
	// Retry is how soon a read of the store that failed is tried again;
	// zero means DefaultRetry.
	Retry time.Duration
	// Logger receives a record for every failure to read or use what the
	// store holds (the secret's namespace and name, never its data); nil
	// means slog.Default().
	Logger *slog.Logger
}

func (o Options) validate() error {
	var errs []error
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"Resync", o.Resync}, {"LoadTimeout", o.LoadTimeout}, {"Retry", o.Retry}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("tlsserve: Options.%s: %v is negative", d.name, d.v))
		}
	}
	if o.MaxCached < 0 {
		errs = append(errs, fmt.Errorf("tlsserve: Options.MaxCached: %d is negative", o.MaxCached))
	}
	if o.Namespace != "" {
		if err := certificate.ValidateNamespace(o.Namespace); err != nil {
			errs = append(errs, fmt.Errorf("tlsserve: Options.Namespace: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Server answers TLS handshakes with the certificates of a host.Store.
// Make it with New; it reads the store on a goroutine of its own until
// Close. Safe for concurrent use.
type Server struct {
	store  host.Store
	opts   Options
	log    *slog.Logger
	cancel context.CancelFunc
	done   chan struct{}
	wake   chan struct{}
	once   sync.Once

	mu sync.RWMutex
	// The index: every certificate's names and secret.
	certs   map[objKey]*certInfo
	byName  map[string][]objKey // exact name → certificates
	bySuf   map[string][]objKey // "example.com" → certificates naming "*.example.com"
	refs    map[objKey]int      // secret → certificates that name it
	indexed bool                // the first list is in
	listErr error               // the last list's failure, nil once one succeeded
	indexCh chan struct{}       // closed, and replaced, whenever the index changes or a list fails
	// Certificate changes reported and not yet read (each with the
	// sequence number of its last report), or all of them (listPending,
	// with the sequence number of the last request).
	seq          uint64
	certsPending map[objKey]uint64
	listPending  bool
	listSeq      uint64
	certErr      error // the last failure to read a certificate reported changed
	// The parsed secrets.
	secrets map[objKey]*entry
	stale   map[objKey]struct{} // entries the store reported changed, or due a retry
	closed  bool

	clock atomic.Int64 // use counter for eviction
	stats struct{ loads, parses, failures atomic.Uint64 }
}

type objKey struct{ namespace, name string }

func (k objKey) String() string {
	if k.namespace == "" {
		return k.name
	}
	return k.namespace + "/" + k.name
}

type certInfo struct {
	secret objKey
	names  []string // normalised; wildcards as "*.suffix"
}

// entry is one secret, parsed.
type entry struct {
	key objKey
	// cert is the last good certificate, nil when there has been none;
	// leaf is its parsed leaf.
	cert *tls.Certificate
	leaf *x509.Certificate
	// seenRV is the resource version last read (good or not): a secret
	// still at it is not parsed again.
	seenRV string
	// problem is why the stored secret is not what is served, nil when
	// it is.
	problem error
	// stale: the store reported a newer version; a handshake may load
	// it, unless retryAt is ahead (the last read failed). recheck: the
	// goroutine reads it again (a resync), handshakes do not wait for
	// that.
	stale, recheck bool
	retryAt        time.Time
	// loading is non-nil while a read runs, closed when it ends.
	loading chan struct{}
	used    atomic.Int64
}

// New returns a Server over store and starts its goroutine, which reads
// the store's certificates at once and then keeps up with the store (see
// the package documentation); call Close to stop it. New itself reads
// nothing: a handshake that comes before the first read waits for it (at
// most Options.LoadTimeout). Its errors name the option at fault.
func New(store host.Store, opts Options) (*Server, error) {
	if store == nil {
		return nil, errors.New("tlsserve: New: store is nil")
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	w, watched := store.(host.Watcher)
	if opts.Resync == 0 {
		opts.Resync = DefaultResync
		if watched {
			opts.Resync = DefaultWatchedResync
		}
	}
	if opts.MaxCached == 0 {
		opts.MaxCached = DefaultMaxCached
	}
	if opts.LoadTimeout == 0 {
		opts.LoadTimeout = DefaultLoadTimeout
	}
	if opts.Retry == 0 {
		opts.Retry = DefaultRetry
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		store: store, opts: opts, log: logger, cancel: cancel,
		done: make(chan struct{}), wake: make(chan struct{}, 1),
		certs: map[objKey]*certInfo{}, byName: map[string][]objKey{}, bySuf: map[string][]objKey{}, refs: map[objKey]int{},
		indexCh: make(chan struct{}), certsPending: map[objKey]uint64{}, listPending: true,
		secrets: map[objKey]*entry{}, stale: map[objKey]struct{}{},
	}
	if watched {
		w.Watch(s.onChange)
	}
	go s.run(ctx)
	return s, nil
}

// Close stops the server's goroutine and waits for it; GetCertificate
// fails from then on. The store's watch, which offers no way to stop,
// calls a closed server's callback in vain. Idempotent.
func (s *Server) Close() error {
	s.once.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.cancel()
		<-s.done
	})
	return nil
}

// TLSConfig returns a new tls.Config that serves through GetCertificate,
// negotiates HTTP/2 and HTTP/1.1 (and ACMETLS1Protocol when
// Options.TLSALPN01 is set), and accepts TLS 1.2 and later.
func (s *Server) TLSConfig() *tls.Config {
	protos := []string{"h2", "http/1.1"}
	if s.opts.TLSALPN01 != nil {
		protos = append(protos, ACMETLS1Protocol)
	}
	return &tls.Config{GetCertificate: s.GetCertificate, NextProtos: protos, MinVersion: tls.VersionTLS12}
}

// Stats are counts for a host's metrics.
type Stats struct {
	// Certificates and Names are the certificates indexed and the names
	// they serve; Cached is the secrets kept parsed.
	Certificates, Names, Cached int
	// Loads counts reads of a secret from the store, Parses the reads
	// that found a resource version not parsed before, Failures the
	// reads and parses that failed.
	Loads, Parses, Failures uint64
}

// Stats returns the server's counts.
func (s *Server) Stats() Stats {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return Stats{
		Certificates: len(s.certs), Names: len(s.byName) + len(s.bySuf), Cached: len(s.secrets),
		Loads: s.stats.loads.Load(), Parses: s.stats.parses.Load(), Failures: s.stats.failures.Load(),
	}
}

// validating reports whether a hello is a CA's TLS-ALPN-01 validation:
// it offers ACMETLS1Protocol alone (RFC 8737 §3).
func validating(hello *tls.ClientHelloInfo) bool {
	return len(hello.SupportedProtos) == 1 && hello.SupportedProtos[0] == ACMETLS1Protocol
}

// GetCertificate returns the certificate for the hello's server name (for
// a hello without one, for the local address it reached), or an error
// wrapping ErrNoCertificate that names it. A hello offering
// ACMETLS1Protocol alone, as a CA validating TLS-ALPN-01 does, is
// answered by Options.TLSALPN01, and refused without one.
func (s *Server) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if validating(hello) {
		if s.opts.TLSALPN01 == nil {
			return nil, fmt.Errorf("tlsserve: a TLS-ALPN-01 hello for %q, and no TLSALPN01 responder is configured", hello.ServerName)
		}
		return s.opts.TLSALPN01.GetCertificate(hello)
	}
	name := normalizeName(hello.ServerName)
	if name == "" {
		name = localIP(hello)
		if name == "" {
			return nil, fmt.Errorf("%w: the hello names no server and its local address is unknown", ErrNoCertificate)
		}
	}
	if c, ok := s.fast(name); ok {
		return c, nil
	}
	return s.slow(hello, name)
}

// fast returns the certificate for name when the index holds it and its
// secret is parsed and current: no allocation, no wait.
func (s *Server) fast(name string) (*tls.Certificate, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed || !s.indexed {
		return nil, false
	}
	exact, wild := s.candidates(name)
	if len(exact)+len(wild) != 1 {
		return nil, false // none, or a choice to make: the slow path
	}
	k := wild
	if len(exact) == 1 {
		k = exact
	}
	if _, pending := s.certsPending[k[0]]; pending {
		return nil, false // its spec changed, or it was deleted
	}
	e := s.secrets[s.certs[k[0]].secret]
	if e == nil || e.cert == nil || e.loading != nil || (e.stale && !e.backingOff(time.Now())) {
		return nil, false
	}
	e.used.Store(s.clock.Add(1))
	return e.cert, true
}

// candidates are the certificates naming name exactly and by a wildcard;
// s.mu is held.
func (s *Server) candidates(name string) (exact, wild []objKey) {
	exact = s.byName[name]
	if i := strings.IndexByte(name, '.'); i > 0 && !isIP(name) {
		wild = s.bySuf[name[i+1:]]
	}
	return exact, wild
}

func (e *entry) backingOff(now time.Time) bool { return !e.retryAt.IsZero() && now.Before(e.retryAt) }

// slow waits for the index when it may not be current yet, loads the
// secrets of the certificates naming name that need it, and picks the
// best.
func (s *Server) slow(hello *tls.ClientHelloInfo, name string) (*tls.Certificate, error) {
	ctx := hello.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.LoadTimeout)
	defer cancel()
	var secrets []objKey
	for waited := false; ; {
		s.mu.RLock()
		if s.closed {
			s.mu.RUnlock()
			return nil, ErrClosed
		}
		exact, wild := s.candidates(name)
		secrets = secrets[:0]
		changed := false
		for _, k := range slices.Concat(exact, wild) {
			if sk := s.certs[k].secret; !slices.Contains(secrets, sk) {
				secrets = append(secrets, sk)
			}
			_, pending := s.certsPending[k]
			changed = changed || pending
		}
		// Wait for the index while it is not in; and while the store
		// reported a change to a certificate that names name, or, when
		// none does, to any certificate, that is not read yet — unless
		// reading certificates fails.
		ch, listErr, indexed := s.indexCh, s.listErr, s.indexed
		reading := listErr == nil && s.certErr == nil
		waitIndex := !indexed && listErr == nil ||
			reading && (changed || len(secrets) == 0 && (len(s.certsPending) > 0 || s.listPending))
		s.mu.RUnlock()
		if !indexed && !waitIndex {
			return nil, fmt.Errorf("%w for %q: the store's certificates cannot be read: %w", ErrNoCertificate, name, listErr)
		}
		if !waitIndex || waited {
			break
		}
		select {
		case <-ch:
		case <-ctx.Done():
			if !indexed {
				return nil, fmt.Errorf("%w for %q: the store's certificates were not read within %v", ErrNoCertificate, name, s.opts.LoadTimeout)
			}
			waited = true // serve what the index holds
		}
	}
	if len(secrets) == 0 {
		return nil, fmt.Errorf("%w for server name %q: no certificate names it", ErrNoCertificate, name)
	}
	for _, k := range secrets {
		s.load(ctx, k, false)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var best *entry
	var problems []string
	for _, k := range secrets {
		e := s.secrets[k]
		switch {
		case e == nil:
			problems = append(problems, fmt.Sprintf("secret %s: not read", k))
		case e.cert == nil && e.problem != nil:
			problems = append(problems, fmt.Sprintf("secret %s: %v", k, e.problem))
		case e.cert == nil:
			problems = append(problems, fmt.Sprintf("secret %s: not read yet", k))
		case best == nil || better(e, best, name):
			best = e
		}
	}
	if best == nil {
		return nil, fmt.Errorf("%w for server name %q: %s", ErrNoCertificate, name, strings.Join(problems, "; "))
	}
	best.used.Store(s.clock.Add(1))
	return best.cert, nil
}

// better reports whether a serves name better than b: a leaf that
// covers the name beats one that does not (a spec changed, its renewal
// pending), then the later expiry.
func better(a, b *entry, name string) bool {
	ca, cb := a.leaf.VerifyHostname(name) == nil, b.leaf.VerifyHostname(name) == nil
	if ca != cb {
		return ca
	}
	return a.leaf.NotAfter.After(b.leaf.NotAfter)
}

// load reads the secret k when it is not parsed yet or the store
// reported it changed (for the goroutine, also when a resync asks), and
// parses what it holds if its resource version is new; one read at a
// time per secret, the others waiting for it (at most until ctx ends).
func (s *Server) load(ctx context.Context, k objKey, background bool) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	e := s.secrets[k]
	if e == nil {
		if s.refs[k] == 0 {
			s.mu.Unlock()
			return // no certificate names it (any more)
		}
		e = &entry{key: k, stale: true}
		s.insert(e)
	}
	if ch := e.loading; ch != nil {
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
		}
		return
	}
	if !(e.stale || background && e.recheck) || e.backingOff(time.Now()) {
		s.mu.Unlock()
		return
	}
	e.loading, e.stale, e.recheck = make(chan struct{}), false, false
	delete(s.stale, k)
	seen := e.seenRV
	s.mu.Unlock()

	s.stats.loads.Add(1)
	sec, err := s.store.Secrets().Get(ctx, k.namespace, k.name)
	var (
		cert    *tls.Certificate
		leaf    *x509.Certificate
		problem error
		rv      = seen
		parsed  bool
	)
	switch {
	case err != nil && errors.Is(err, host.ErrNotFound):
		problem, rv = fmt.Errorf("secret %s not found", k), ""
	case err != nil:
		problem = fmt.Errorf("reading secret %s: %w", k, err)
	case sec.ResourceVersion != "" && sec.ResourceVersion == seen:
		// Parsed already.
	default:
		rv, parsed = sec.ResourceVersion, true
		s.stats.parses.Add(1)
		cert, leaf, problem = parse(sec)
		if problem != nil {
			problem = fmt.Errorf("secret %s: %w", k, problem)
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	close(e.loading)
	e.loading = nil
	switch {
	case err != nil && !errors.Is(err, host.ErrNotFound) && ctx.Err() != nil:
		// Cut short by the caller: not the store's fault; read again.
		e.stale = true
		s.stale[k] = struct{}{}
		return
	case err != nil && !errors.Is(err, host.ErrNotFound):
		e.stale, e.retryAt = true, time.Now().Add(s.opts.Retry)
		s.stale[k] = struct{}{}
	default:
		e.retryAt = time.Time{}
	}
	if parsed || err != nil {
		e.seenRV = rv
	}
	switch {
	case cert != nil:
		e.cert, e.leaf, e.problem = cert, leaf, nil
	case problem != nil:
		s.stats.failures.Add(1)
		if e.problem == nil || e.problem.Error() != problem.Error() {
			if e.cert != nil {
				s.log.Warn("tlsserve: serving the last good certificate", "secret", k.String(), "serial", e.leaf.SerialNumber.String(), "problem", problem.Error())
			} else {
				s.log.Warn("tlsserve: no certificate to serve", "secret", k.String(), "problem", problem.Error())
			}
		}
		e.problem = problem
	}
}

// parse reads a secret's tls.crt and tls.key into a tls.Certificate; the
// key must be the leaf's.
func parse(sec *certificate.Secret) (*tls.Certificate, *x509.Certificate, error) {
	p, err := keys.ParseSecretData(sec.Data)
	if err != nil {
		return nil, nil, err
	}
	if !p.KeyMatches {
		return nil, nil, keys.ErrKeyMismatch
	}
	chain, err := p.Chain()
	if err != nil {
		return nil, nil, err
	}
	der := make([][]byte, len(chain))
	for i, c := range chain {
		der[i] = c.Raw
	}
	return &tls.Certificate{Certificate: der, PrivateKey: p.Key, Leaf: p.Leaf}, p.Leaf, nil
}

// insert adds e, dropping the least recently used entry that is not
// being read when the cache is full; s.mu is held.
func (s *Server) insert(e *entry) {
	if len(s.secrets) >= s.opts.MaxCached {
		var victim *entry
		for _, o := range s.secrets {
			if o.loading == nil && (victim == nil || o.used.Load() < victim.used.Load()) {
				victim = o
			}
		}
		if victim != nil {
			delete(s.secrets, victim.key)
			delete(s.stale, victim.key)
		}
	}
	e.used.Store(s.clock.Add(1))
	s.secrets[e.key] = e
}

// onChange is the store's watch: it notes what changed, for the
// goroutine to read, and returns at once.
func (s *Server) onChange(c host.Change) {
	if s.opts.Namespace != "" && c.Namespace != s.opts.Namespace {
		return
	}
	k := objKey{c.Namespace, c.Name}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	switch c.Kind {
	case host.KindCertificate:
		s.seq++
		if len(s.certsPending) >= s.opts.MaxCached {
			s.listPending, s.listSeq = true, s.seq
			clear(s.certsPending)
		} else {
			s.certsPending[k] = s.seq
		}
	case host.KindSecret:
		e := s.secrets[k]
		if e == nil || (!c.Deleted && c.Meta.ResourceVersion != "" && c.Meta.ResourceVersion == e.seenRV) {
			s.mu.Unlock()
			return // not kept (read on first use), or read already
		}
		e.stale, e.retryAt = true, time.Time{}
		s.stale[k] = struct{}{}
	default:
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.signal()
}

func (s *Server) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// run is the goroutine: it lists the certificates at once and every
// Resync, reads the certificates and secrets reported changed, and
// retries failed reads, until ctx ends.
func (s *Server) run(ctx context.Context) {
	defer close(s.done)
	resync := time.NewTimer(s.opts.Resync)
	defer resync.Stop()
	retry := time.NewTimer(s.opts.Retry)
	defer retry.Stop()
	for {
		next := s.work(ctx)
		if !next.IsZero() {
			retry.Reset(max(time.Until(next), time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-retry.C:
		case <-resync.C:
			s.mu.Lock()
			s.seq++
			s.listPending, s.listSeq = true, s.seq
			for k, e := range s.secrets {
				e.recheck = true
				s.stale[k] = struct{}{}
			}
			s.mu.Unlock()
			resync.Reset(s.opts.Resync)
		}
	}
}

// work does what is due; it returns when to try again what failed (zero
// for nothing).
func (s *Server) work(ctx context.Context) time.Time {
	var next time.Time
	later := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	s.mu.Lock()
	list := s.listPending
	pending := make(map[objKey]uint64, len(s.certsPending))
	for k, seq := range s.certsPending {
		pending[k] = seq
	}
	s.mu.Unlock()
	if list {
		if err := s.list(ctx); err != nil {
			later(time.Now().Add(s.opts.Retry))
		}
	} else if len(pending) > 0 {
		if err := s.readCertificates(ctx, pending); err != nil {
			later(time.Now().Add(s.opts.Retry))
		}
	}
	now := time.Now()
	s.mu.Lock()
	var due []objKey
	for k := range s.stale {
		e := s.secrets[k]
		switch {
		case e == nil || !e.stale && !e.recheck:
			delete(s.stale, k)
		case e.backingOff(now):
			later(e.retryAt)
		default:
			due = append(due, k)
		}
	}
	s.mu.Unlock()
	for _, k := range due {
		if ctx.Err() != nil {
			return time.Time{}
		}
		s.load(ctx, k, true)
	}
	s.mu.RLock()
	for k := range s.stale {
		if e := s.secrets[k]; e != nil && !e.retryAt.IsZero() {
			later(e.retryAt)
		}
	}
	s.mu.RUnlock()
	return next
}

// list reads every certificate and rebuilds the index.
func (s *Server) list(ctx context.Context) error {
	s.mu.Lock()
	seq := s.seq // what the list will show
	s.mu.Unlock()
	certs, err := s.store.Certificates().List(ctx, host.ListOptions{Namespace: s.opts.Namespace})
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("tlsserve: cannot list the store's certificates", "err", err.Error())
		}
		s.listErr = fmt.Errorf("listing certificates: %w", err)
		s.broadcast()
		return err
	}
	s.listErr = nil
	if s.listSeq <= seq {
		s.listPending = false
	}
	for k, at := range s.certsPending {
		if at <= seq {
			delete(s.certsPending, k)
		}
	}
	clear(s.certs)
	clear(s.byName)
	clear(s.bySuf)
	clear(s.refs)
	for _, c := range certs {
		s.put(objKey{c.Namespace, c.Name}, c)
	}
	for k, e := range s.secrets {
		if s.refs[k] == 0 && e.loading == nil {
			delete(s.secrets, k)
			delete(s.stale, k)
		}
	}
	s.indexed = true
	s.broadcast()
	return nil
}

// readCertificates reads the certificates reported changed and updates
// the index.
func (s *Server) readCertificates(ctx context.Context, ks map[objKey]uint64) error {
	var firstErr error
	defer func() {
		s.mu.Lock()
		s.certErr = firstErr
		s.broadcast()
		s.mu.Unlock()
	}()
	for k, seq := range ks {
		c, err := s.store.Certificates().Get(ctx, k.namespace, k.name)
		if err != nil && !errors.Is(err, host.ErrNotFound) {
			if firstErr == nil {
				firstErr = err
				if ctx.Err() == nil {
					s.log.Warn("tlsserve: cannot read a certificate", "certificate", k.String(), "err", err.Error())
				}
			}
			continue
		}
		s.mu.Lock()
		if s.certsPending[k] == seq {
			delete(s.certsPending, k) // not reported again since
		}
		old := s.remove(k)
		if err == nil {
			s.put(k, c)
		}
		if e := s.secrets[old]; e != nil && s.refs[old] == 0 && e.loading == nil {
			delete(s.secrets, old)
			delete(s.stale, old)
		}
		s.broadcast()
		s.mu.Unlock()
	}
	return firstErr
}

// put indexes a certificate; s.mu is held. A CA certificate serves no
// name.
func (s *Server) put(k objKey, c *certificate.Certificate) {
	if c.Spec.SecretName == "" || c.Spec.IsCA {
		return
	}
	info := &certInfo{secret: objKey{k.namespace, c.Spec.SecretName}}
	for _, n := range c.Spec.DNSNames {
		if n = normalizeName(n); n != "" && !slices.Contains(info.names, n) {
			info.names = append(info.names, n)
		}
	}
	for _, ip := range c.Spec.IPAddresses {
		if a, err := netip.ParseAddr(ip); err == nil && a.Zone() == "" {
			if n := a.Unmap().String(); !slices.Contains(info.names, n) {
				info.names = append(info.names, n)
			}
		}
	}
	if len(info.names) == 0 {
		return
	}
	s.certs[k] = info
	s.refs[info.secret]++
	for _, n := range info.names {
		if suf, ok := strings.CutPrefix(n, "*."); ok {
			s.bySuf[suf] = insertSorted(s.bySuf[suf], k)
		} else {
			s.byName[n] = insertSorted(s.byName[n], k)
		}
	}
}

// remove takes a certificate out of the index and returns the secret
// it named; s.mu is held.
func (s *Server) remove(k objKey) objKey {
	info := s.certs[k]
	if info == nil {
		return objKey{}
	}
	delete(s.certs, k)
	if s.refs[info.secret]--; s.refs[info.secret] <= 0 {
		delete(s.refs, info.secret)
	}
	for _, n := range info.names {
		m, key := s.byName, n
		if suf, ok := strings.CutPrefix(n, "*."); ok {
			m, key = s.bySuf, suf
		}
		ks := slices.DeleteFunc(m[key], func(o objKey) bool { return o == k })
		if len(ks) == 0 {
			delete(m, key)
		} else {
			m[key] = ks
		}
	}
	return info.secret
}

func (s *Server) broadcast() {
	close(s.indexCh)
	s.indexCh = make(chan struct{})
}

func insertSorted(ks []objKey, k objKey) []objKey {
	i, found := slices.BinarySearchFunc(ks, k, func(a, b objKey) int {
		if c := strings.Compare(a.namespace, b.namespace); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	if found {
		return ks
	}
	return slices.Insert(slices.Clip(ks), i, k)
}

// normalizeName is a server name as the index keys it: lower case,
// without a trailing dot; an IP address in its canonical form.
func normalizeName(n string) string {
	n = strings.TrimSuffix(n, ".")
	if isIP(n) {
		if a, err := netip.ParseAddr(n); err == nil {
			return a.Unmap().String()
		}
	}
	return strings.ToLower(n)
}

// isIP reports whether n looks like an IP address (digits and dots, or
// a colon).
func isIP(n string) bool {
	if strings.IndexByte(n, ':') >= 0 {
		return true
	}
	return n != "" && strings.Trim(n, "0123456789.") == ""
}

// localIP is the address a hello without a server name reached.
func localIP(hello *tls.ClientHelloInfo) string {
	if hello.Conn == nil {
		return ""
	}
	if a, ok := hello.Conn.LocalAddr().(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			return ip.Unmap().String()
		}
	}
	return ""
}
