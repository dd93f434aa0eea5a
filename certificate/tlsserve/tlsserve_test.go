package tlsserve_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/localca"
	"github.com/certlife/certlife/certificate/tlsserve"
	"github.com/certlife/certlife/challenge"
	"github.com/certlife/certlife/keys"
)

var quiet = slog.New(slog.DiscardHandler)

// pki is a local CA that issues the test's certificates.
type pki struct {
	ca   *localca.CA
	pool *x509.CertPool
}

func newPKI(t testing.TB) *pki {
	t.Helper()
	ca, err := localca.NewRoot(rand.Reader, "tlsserve test CA", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, time.Now().Add(-time.Hour), 24*time.Hour)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(ca.Certificate())
	return &pki{ca: ca, pool: pool}
}

// issue returns a secret's data for names (IP addresses among them) and
// the leaf's serial.
func (p *pki) issue(t testing.TB, names ...string) (map[string][]byte, string) {
	t.Helper()
	key, err := keys.Generate(rand.Reader, keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
	require.NoError(t, err)
	return p.issueFor(t, key, names...)
}

func (p *pki) issueFor(t testing.TB, key crypto.Signer, names ...string) (map[string][]byte, string) {
	t.Helper()
	var tmpl keys.RequestTemplate
	for _, n := range names {
		if net.ParseIP(n) != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, n)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	csr, err := keys.BuildCSR(rand.Reader, tmpl, key)
	require.NoError(t, err)
	r := &certificate.CertificateRequest{
		ObjectMeta: certificate.ObjectMeta{Name: "r", Namespace: "default"},
		Spec:       certificate.RequestSpec{Request: csr, Duration: &certificate.Duration{Duration: time.Hour}},
	}
	require.NoError(t, p.ca.Issue(rand.Reader, r, time.Now()))
	require.NotEmpty(t, r.Status.Certificate, "not issued: %+v", r.Status.Conditions)
	data, err := keys.SecretData(rand.Reader, key, r.Status.Certificate, r.Status.CA, keys.OutputSpec{})
	require.NoError(t, err)
	parsed, err := keys.ParseSecretData(data)
	require.NoError(t, err)
	return data, parsed.Leaf.SerialNumber.String()
}

// put writes a certificate for names and its secret, and returns the
// serial served.
func (p *pki) put(t testing.TB, store host.Store, name string, names ...string) string {
	t.Helper()
	ctx := context.Background()
	spec := certificate.Spec{SecretName: name + "-tls", IssuerRef: certificate.IssuerRef{Name: "ca"}}
	for _, n := range names {
		if net.ParseIP(n) != nil {
			spec.IPAddresses = append(spec.IPAddresses, n)
		} else {
			spec.DNSNames = append(spec.DNSNames, n)
		}
	}
	_, err := store.Certificates().Create(ctx, &certificate.Certificate{ObjectMeta: certificate.ObjectMeta{Namespace: "default", Name: name}, Spec: spec})
	require.NoError(t, err)
	data, serial := p.issue(t, names...)
	writeSecret(t, store, name+"-tls", data)
	return serial
}

// writeSecret creates or replaces a secret's data.
func writeSecret(t testing.TB, store host.Store, name string, data map[string][]byte) {
	t.Helper()
	ctx := context.Background()
	sec, err := store.Secrets().Get(ctx, "default", name)
	if errors.Is(err, host.ErrNotFound) {
		_, err = store.Secrets().Create(ctx, &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Namespace: "default", Name: name}, Data: data})
		require.NoError(t, err)
		return
	}
	require.NoError(t, err)
	sec.Data = data
	_, err = store.Secrets().Update(ctx, sec)
	require.NoError(t, err)
}

// listen serves srv's TLSConfig on loopback until the test ends; it
// returns the address.
func listen(t testing.TB, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				if c.(*tls.Conn).Handshake() == nil {
					_, _ = io.Copy(io.Discard, c) // until the client closes
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().String()
}

// dial makes a verified handshake for serverName ("" sends none) and
// returns the leaf's serial.
func dial(t testing.TB, addr, serverName string, roots *x509.CertPool) (string, error) {
	t.Helper()
	cfg := &tls.Config{ServerName: serverName, RootCAs: roots, MinVersion: tls.VersionTLS12}
	if serverName == "" {
		cfg.ServerName = "127.0.0.1" // verified as an IP address, sent as no SNI
	}
	conn, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String(), nil
}

func newServer(t testing.TB, store host.Store, opts tlsserve.Options) *tlsserve.Server {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	s, err := tlsserve.New(store, opts)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// Each name is served the certificate whose spec names it: exact names
// in any case and with a trailing dot, a wildcard one label deep and no
// deeper (as crypto/tls matches them), an IP address reached without
// SNI; a name nothing names gets no certificate, and the error names it.
func TestServesTheCertificateOfEachName(t *testing.T) {
	p := newPKI(t)
	store := host.NewMemoryStore(nil)
	web := p.put(t, store, "web", "web.example", "www.web.example")
	wild := p.put(t, store, "wild", "*.wild.example")
	ip := p.put(t, store, "ip", "127.0.0.1")
	s := newServer(t, store, tlsserve.Options{})
	addr := listen(t, s.TLSConfig())

	for name, tc := range map[string]struct {
		sni, want string
	}{
		"an exact name":                    {"web.example", web},
		"another name of the same":         {"www.web.example", web},
		"a name in capitals":               {"WEB.Example", web},
		"a wildcard, one label deep":       {"a.wild.example", wild},
		"an IP address, reached by no SNI": {"", ip},
	} {
		got, err := dial(t, addr, tc.sni, p.pool)
		if assert.NoError(t, err, name) {
			assert.Equal(t, tc.want, got, name)
		}
	}
	for name, sni := range map[string]string{
		"an unknown name":            "other.example",
		"a wildcard two labels deep": "a.b.wild.example",
		"a wildcard's base name":     "wild.example",
		"a parent of an exact name":  "example",
	} {
		_, err := dial(t, addr, sni, p.pool)
		assert.Error(t, err, name)
		_, err = s.GetCertificate(&tls.ClientHelloInfo{ServerName: sni})
		assert.ErrorIs(t, err, tlsserve.ErrNoCertificate, name)
		assert.ErrorContains(t, err, strings.ToLower(sni), name)
	}
	// A trailing dot, as some clients send it.
	c, err := s.GetCertificate(&tls.ClientHelloInfo{ServerName: "web.example."})
	require.NoError(t, err)
	assert.Equal(t, web, c.Leaf.SerialNumber.String())

	st := s.Stats()
	assert.Equal(t, 3, st.Certificates)
	assert.Equal(t, 3, st.Cached)
	assert.Equal(t, uint64(3), st.Parses, "each secret parsed once, whatever the handshakes")
}

// A renewal written to the store is served on the next handshake, and
// its secret is parsed once however many handshakes follow; a new
// certificate is served at once, a deleted one no more.
func TestServesWhatTheStoreReports(t *testing.T) {
	p := newPKI(t)
	store := host.NewMemoryStore(nil)
	first := p.put(t, store, "web", "web.example")
	s := newServer(t, store, tlsserve.Options{})
	addr := listen(t, s.TLSConfig())

	got, err := dial(t, addr, "web.example", p.pool)
	require.NoError(t, err)
	require.Equal(t, first, got)
	for i := range 3 {
		data, serial := p.issue(t, "web.example")
		writeSecret(t, store, "web-tls", data)
		for range 3 {
			got, err := dial(t, addr, "web.example", p.pool)
			require.NoError(t, err)
			require.Equal(t, serial, got, "renewal %d is not served on the next handshake", i+1)
		}
	}
	assert.Equal(t, uint64(4), s.Stats().Parses, "one parse per resource version")

	// A certificate created while the server runs is served at once.
	api := p.put(t, store, "api", "api.example")
	got, err = dial(t, addr, "api.example", p.pool)
	require.NoError(t, err)
	assert.Equal(t, api, got)

	// A spec that names another name moves it.
	c, err := store.Certificates().Get(context.Background(), "default", "api")
	require.NoError(t, err)
	c.Spec.DNSNames = []string{"api2.example"}
	_, err = store.Certificates().Update(context.Background(), c)
	require.NoError(t, err)
	_, err = s.GetCertificate(&tls.ClientHelloInfo{ServerName: "api2.example"})
	require.NoError(t, err, "the name the spec now names")

	// A deleted certificate is not served.
	require.NoError(t, store.Certificates().Delete(context.Background(), "default", "web"))
	_, err = s.GetCertificate(&tls.ClientHelloInfo{ServerName: "web.example"})
	assert.ErrorIs(t, err, tlsserve.ErrNoCertificate)
	assert.Equal(t, 1, s.Stats().Cached, "the deleted certificate's secret is dropped")
}

// The last good certificate is served while the secret is missing or
// holds what cannot be served — garbage, a key that is not the
// certificate's, no key — and the good one that follows is served.
// A secret that never held a good certificate serves nothing, and the
// error says why.
func TestServesTheLastGoodCertificate(t *testing.T) {
	p := newPKI(t)
	other, err := keys.Generate(rand.Reader, keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
	require.NoError(t, err)
	otherPEM, err := keys.EncodePrivateKey(other, keys.EncodingPKCS8)
	require.NoError(t, err)
	good, _ := p.issue(t, "web.example")
	bad := map[string]map[string][]byte{
		"garbage in tls.crt":           {keys.SecretCertificate: []byte("garbage"), keys.SecretPrivateKey: good[keys.SecretPrivateKey]},
		"a key that is not the leaf's": {keys.SecretCertificate: good[keys.SecretCertificate], keys.SecretPrivateKey: otherPEM},
		"no key":                       {keys.SecretCertificate: good[keys.SecretCertificate]},
		"nothing":                      {},
	}
	for name, data := range bad {
		t.Run(name, func(t *testing.T) {
			store := host.NewMemoryStore(nil)
			serial := p.put(t, store, "web", "web.example")
			s := newServer(t, store, tlsserve.Options{})
			hello := &tls.ClientHelloInfo{ServerName: "web.example"}
			c, err := s.GetCertificate(hello)
			require.NoError(t, err)
			require.Equal(t, serial, c.Leaf.SerialNumber.String())

			writeSecret(t, store, "web-tls", data)
			c, err = s.GetCertificate(hello)
			require.NoError(t, err)
			assert.Equal(t, serial, c.Leaf.SerialNumber.String(), "not the last good certificate")

			renewed, want := p.issue(t, "web.example")
			writeSecret(t, store, "web-tls", renewed)
			c, err = s.GetCertificate(hello)
			require.NoError(t, err)
			assert.Equal(t, want, c.Leaf.SerialNumber.String(), "the good certificate after it")

			// From the start: nothing to serve, and why.
			fresh := host.NewMemoryStore(nil)
			p.put(t, fresh, "web", "web.example")
			writeSecret(t, fresh, "web-tls", data)
			_, err = newServer(t, fresh, tlsserve.Options{}).GetCertificate(hello)
			assert.ErrorIs(t, err, tlsserve.ErrNoCertificate)
			assert.ErrorContains(t, err, "web.example")
			assert.ErrorContains(t, err, "default/web-tls")
		})
	}

	t.Run("the secret deleted", func(t *testing.T) {
		store := host.NewMemoryStore(nil)
		serial := p.put(t, store, "web", "web.example")
		s := newServer(t, store, tlsserve.Options{})
		hello := &tls.ClientHelloInfo{ServerName: "web.example"}
		_, err := s.GetCertificate(hello)
		require.NoError(t, err)
		require.NoError(t, store.Secrets().Delete(context.Background(), "default", "web-tls"))
		c, err := s.GetCertificate(hello)
		require.NoError(t, err)
		assert.Equal(t, serial, c.Leaf.SerialNumber.String())
		renewed, want := p.issue(t, "web.example")
		writeSecret(t, store, "web-tls", renewed)
		c, err = s.GetCertificate(hello)
		require.NoError(t, err)
		assert.Equal(t, want, c.Leaf.SerialNumber.String())
	})
}

// flaky is a store whose secret reads fail while fail is set, and which
// does not report its writes (no Watch).
type flaky struct {
	host.Store
	fail  atomic.Bool
	reads atomic.Int64
}

type flakySecrets struct {
	host.Collection[*certificate.Secret]
	f *flaky
}

func (f *flaky) Secrets() host.Collection[*certificate.Secret] {
	return flakySecrets{f.Store.Secrets(), f}
}

func (s flakySecrets) Get(ctx context.Context, namespace, name string) (*certificate.Secret, error) {
	s.f.reads.Add(1)
	if s.f.fail.Load() {
		return nil, errors.New("database is down")
	}
	return s.Collection.Get(ctx, namespace, name)
}

// A store that does not report its writes is read again every Resync;
// while its reads fail, the last good certificate is served without a
// handshake waiting on the store, and reads are retried every Retry.
func TestResyncAndReadFailures(t *testing.T) {
	p := newPKI(t)
	mem := host.NewMemoryStore(nil)
	first := p.put(t, mem, "web", "web.example")
	renewed, second := p.issue(t, "web.example")
	third, thirdSerial := p.issue(t, "web.example")
	synctest.Test(t, func(t *testing.T) {
		store := &flaky{Store: mem}
		s := newServer(t, store, tlsserve.Options{Resync: time.Minute, Retry: 5 * time.Second})
		hello := &tls.ClientHelloInfo{ServerName: "web.example"}
		serial := func() string {
			t.Helper()
			c, err := s.GetCertificate(hello)
			require.NoError(t, err)
			return c.Leaf.SerialNumber.String()
		}
		require.Equal(t, first, serial())

		writeSecret(t, mem, "web-tls", renewed)
		assert.Equal(t, first, serial(), "a write nothing reported is not seen before the resync")
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, second, serial(), "the resync did not read the renewal")

		store.fail.Store(true)
		writeSecret(t, mem, "web-tls", third)
		time.Sleep(time.Minute)
		synctest.Wait()
		reads := store.reads.Load()
		assert.Equal(t, second, serial(), "the last good certificate while the store fails")
		assert.Equal(t, reads, store.reads.Load(), "a handshake read the failing store")
		time.Sleep(5 * time.Second)
		synctest.Wait()
		assert.Equal(t, reads+1, store.reads.Load(), "no retry after Retry")

		store.fail.Store(false)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		assert.Equal(t, thirdSerial, serial(), "the retry did not read the renewal")
	})
}

// A hello offering acme-tls/1 alone is a CA validating TLS-ALPN-01
// (RFC 8737 §3): it is answered from the handler on the same listener, and every other hello
// with the served certificate; without a handler, such a hello is
// refused.
func TestTLSALPN01OnTheSameListener(t *testing.T) {
	p := newPKI(t)
	store := host.NewMemoryStore(nil)
	serial := p.put(t, store, "web", "web.example")
	alpn := &acmeclient.TLSALPN01Handler{}
	require.NoError(t, alpn.Present(context.Background(), acmeclient.Presentation{Type: challenge.TypeTLSALPN01,
		Identifier: "web.example", Token: "tok", KeyAuthorization: "tok.thumb"}))
	s := newServer(t, store, tlsserve.Options{TLSALPN01: alpn})
	cfg := s.TLSConfig()
	assert.Equal(t, []string{"h2", "http/1.1", tlsserve.ACMETLS1Protocol}, cfg.NextProtos)
	assert.Equal(t, uint16(tls.VersionTLS12), cfg.MinVersion)
	addr := listen(t, cfg)

	conn, err := tls.Dial("tcp", addr, &tls.Config{ServerName: "web.example", NextProtos: []string{acmeclient.ACMETLS1Protocol}, InsecureSkipVerify: true})
	require.NoError(t, err)
	leaf := conn.ConnectionState().PeerCertificates[0]
	assert.Equal(t, acmeclient.ACMETLS1Protocol, conn.ConnectionState().NegotiatedProtocol)
	conn.Close()
	require.NoError(t, acmeclient.CheckTLSALPN01Certificate(leaf, "web.example", "tok.thumb"))

	conn, err = tls.Dial("tcp", addr, &tls.Config{ServerName: "web.example", NextProtos: []string{"h2", "http/1.1"}, RootCAs: p.pool})
	require.NoError(t, err)
	assert.Equal(t, serial, conn.ConnectionState().PeerCertificates[0].SerialNumber.String())
	assert.Equal(t, "h2", conn.ConnectionState().NegotiatedProtocol)
	conn.Close()

	// A client that offers acme-tls/1 beside other protocols is no CA
	// validating: it gets the served certificate.
	conn, err = tls.Dial("tcp", addr, &tls.Config{ServerName: "web.example", NextProtos: []string{acmeclient.ACMETLS1Protocol, "h2"}, RootCAs: p.pool})
	require.NoError(t, err)
	assert.Equal(t, serial, conn.ConnectionState().PeerCertificates[0].SerialNumber.String())
	conn.Close()

	plain := newServer(t, store, tlsserve.Options{})
	assert.NotContains(t, plain.TLSConfig().NextProtos, tlsserve.ACMETLS1Protocol)
	_, err = plain.GetCertificate(&tls.ClientHelloInfo{ServerName: "web.example", SupportedProtos: []string{tlsserve.ACMETLS1Protocol}})
	assert.ErrorContains(t, err, "TLS-ALPN-01")
}

// MaxCached bounds the secrets kept parsed: every name is still served,
// reading again what was dropped.
func TestMaxCached(t *testing.T) {
	p := newPKI(t)
	store := host.NewMemoryStore(nil)
	serials := map[string]string{}
	for i := range 5 {
		n := "n" + strconv.Itoa(i) + ".example"
		serials[n] = p.put(t, store, "c"+strconv.Itoa(i), n)
	}
	s := newServer(t, store, tlsserve.Options{MaxCached: 2})
	for range 2 {
		for n, want := range serials {
			c, err := s.GetCertificate(&tls.ClientHelloInfo{ServerName: n})
			require.NoError(t, err)
			assert.Equal(t, want, c.Leaf.SerialNumber.String())
			assert.LessOrEqual(t, s.Stats().Cached, 2)
		}
	}
}

// Options that cannot be used are refused, naming the field.
func TestNewRefusesBadOptions(t *testing.T) {
	store := host.NewMemoryStore(nil)
	for name, tc := range map[string]struct {
		opts tlsserve.Options
		want string
	}{
		"a negative resync":         {tlsserve.Options{Resync: -1}, "Options.Resync"},
		"a negative cache":          {tlsserve.Options{MaxCached: -1}, "Options.MaxCached"},
		"a negative timeout":        {tlsserve.Options{LoadTimeout: -time.Second}, "Options.LoadTimeout"},
		"a namespace no object has": {tlsserve.Options{Namespace: "Not/Valid"}, "Options.Namespace"},
	} {
		_, err := tlsserve.New(store, tc.opts)
		assert.ErrorContains(t, err, tc.want, name)
	}
	_, err := tlsserve.New(nil, tlsserve.Options{})
	assert.ErrorContains(t, err, "store")

	s, err := tlsserve.New(store, tlsserve.Options{Logger: quiet})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
	_, err = s.GetCertificate(&tls.ClientHelloInfo{ServerName: "web.example"})
	assert.ErrorIs(t, err, tlsserve.ErrClosed)
}

// BenchmarkGetCertificate is a handshake's lookup among 1,000
// certificates, the secret parsed already: an exact name and a wildcard.
func BenchmarkGetCertificate(b *testing.B) {
	p := newPKI(b)
	store := host.NewMemoryStore(nil)
	for i := range 1000 {
		p.put(b, store, "c"+strconv.Itoa(i), "n"+strconv.Itoa(i)+".example", "*.w"+strconv.Itoa(i)+".example")
	}
	s := newServer(b, store, tlsserve.Options{})
	for name, sni := range map[string]string{"exact": "n500.example", "wildcard": "x.w500.example"} {
		b.Run(name, func(b *testing.B) {
			hello := &tls.ClientHelloInfo{ServerName: sni}
			if _, err := s.GetCertificate(hello); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.GetCertificate(hello); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
