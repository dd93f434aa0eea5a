package acmeclient_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/acmeclient/acmetest"
	"github.com/certlife/certlife/challenge"
	"github.com/certlife/certlife/order"
)

// presentationStore is a PresentationStore in memory, shared by the
// handlers of several "replicas" in a test.
type presentationStore struct {
	mu sync.Mutex
	m  map[challenge.Type]map[string]acmeclient.Presentation
}

func (s *presentationStore) PutPresentation(_ context.Context, p acmeclient.Presentation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[challenge.Type]map[string]acmeclient.Presentation{}
	}
	if s.m[p.Type] == nil {
		s.m[p.Type] = map[string]acmeclient.Presentation{}
	}
	s.m[p.Type][acmeclient.PresentationKey(p)] = p
	return nil
}

func (s *presentationStore) DeletePresentation(_ context.Context, p acmeclient.Presentation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := acmeclient.PresentationKey(p)
	if have, ok := s.m[p.Type][k]; ok && have.KeyAuthorization == p.KeyAuthorization {
		delete(s.m[p.Type], k)
	}
	return nil
}

func (s *presentationStore) LookupPresentation(_ context.Context, t challenge.Type, key string) (acmeclient.Presentation, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.m[t][key]
	return p, ok, nil
}

func (s *presentationStore) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, m := range s.m {
		n += len(m)
	}
	return n
}

// countingPresenter counts the presentations of each type it passes on.
type countingPresenter struct {
	acmeclient.Presenter
	mu    sync.Mutex
	types map[challenge.Type]int
}

func (c *countingPresenter) Present(ctx context.Context, p acmeclient.Presentation) error {
	c.mu.Lock()
	if c.types == nil {
		c.types = map[challenge.Type]int{}
	}
	c.types[p.Type]++
	c.mu.Unlock()
	return c.Presenter.Present(ctx, p)
}

// RFC 8737: a request is answered with a certificate when TLS-ALPN-01 is
// the only solver, for DNS names and for an IP address (RFC 8738 §6, the
// reverse name as SNI); the challenge certificates are gone afterwards.
func TestIssuerIssuesOverTLSALPN01(t *testing.T) {
	tests := map[string][]string{
		"one name":      {"alpn.example"},
		"three names":   {"a.alpn.example", "b.alpn.example", "c.alpn.example"},
		"an IP address": {"127.0.0.1"},
	}
	for name, names := range tests {
		t.Run(name, func(t *testing.T) {
			var counted *countingPresenter
			e := newEnv(t, acmetest.Options{}, nil)
			sol := e.srv.TLSALPN01Solvers()
			counted = &countingPresenter{Presenter: sol.TLSALPN01}
			sol.TLSALPN01 = counted
			iss, err := acmeclient.NewIssuer(acmeclient.IssuerConfig{Client: e.client, Store: e.store, Solvers: sol,
				Account: acmeclient.AccountOptions{AgreeToTerms: true}})
			require.NoError(t, err)
			r, key := newRequest(t, "alpn-1", names...)
			res := drive(t, timeout(t), iss, r)
			assert.Equal(t, order.ReasonDone, res.Reason, res.Message)
			leafOf(t, e.srv, r, key, names...)
			assert.Equal(t, map[challenge.Type]int{challenge.TypeTLSALPN01: len(names)}, counted.types, "presentations by type")
			assert.Zero(t, e.srv.TLSALPN01Handler().Presented(), "challenge certificates still served")
			assert.Zero(t, e.srv.HTTP01Handler().Presented())
		})
	}
}

// With HTTP-01 and TLS-ALPN-01 both configured and no SolverConfigs,
// names go on over HTTP-01 as before; TLS-ALPN-01 is chosen when it is
// named.
func TestIssuerChoosesTLSALPN01OnlyWhenAsked(t *testing.T) {
	for _, tc := range []struct {
		name    string
		configs []order.SolverConfig
		want    challenge.Type
	}{
		{name: "defaults", want: challenge.TypeHTTP01},
		{name: "named", want: challenge.TypeTLSALPN01,
			configs: []order.SolverConfig{{Solver: challenge.Solver{TLSALPN01: &challenge.TLSALPN01Solver{}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, acmetest.Options{}, nil)
			sol := e.srv.Solvers()
			alpn := e.srv.TLSALPN01Solvers()
			h := &countingPresenter{Presenter: sol.HTTP01}
			a := &countingPresenter{Presenter: alpn.TLSALPN01}
			sol.HTTP01, sol.TLSALPN01, sol.TLSALPN01Check = h, a, alpn.TLSALPN01Check
			iss, err := acmeclient.NewIssuer(acmeclient.IssuerConfig{Client: e.client, Store: e.store, Solvers: sol, SolverConfigs: tc.configs,
				Account: acmeclient.AccountOptions{AgreeToTerms: true}})
			require.NoError(t, err)
			r, key := newRequest(t, "choose-1", "choose.example")
			drive(t, timeout(t), iss, r)
			leafOf(t, e.srv, r, key, "choose.example")
			got := map[challenge.Type]int{}
			for _, c := range []*countingPresenter{h, a} {
				for k, v := range c.types {
					got[k] += v
				}
			}
			assert.Equal(t, map[challenge.Type]int{tc.want: 1}, got)
		})
	}
}

// handshake dials the server's TLS-ALPN-01 port as a CA would (or not,
// as the arguments say) and returns the leaf it got.
func handshake(t *testing.T, port int, serverName string, protos ...string) (*x509.Certificate, string, error) {
	t.Helper()
	conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), &tls.Config{
		ServerName: serverName, NextProtos: protos, InsecureSkipVerify: true, MinVersion: tls.VersionTLS12,
	})
	if err != nil {
		return nil, "", err
	}
	defer conn.Close()
	cs := conn.ConnectionState()
	return cs.PeerCertificates[0], cs.NegotiatedProtocol, nil
}

// RFC 8737 §3 on the listener Pebble validates against: a hello that
// offers exactly acme-tls/1 and names the identifier gets the challenge
// certificate (one SAN, the critical acmeIdentifier extension); a hello
// without acme-tls/1, with another protocol beside it, or naming another
// name gets none; after clean-up, none.
func TestTLSALPN01HandlerAnswersOnlyTheChallengeHandshake(t *testing.T) {
	srv, err := acmetest.Start(acmetest.Options{})
	require.NoError(t, err)
	defer srv.Close()
	h := srv.TLSALPN01Handler()
	ctx := context.Background()
	p := acmeclient.Presentation{Type: challenge.TypeTLSALPN01, Identifier: "Web.Example.", Token: "tok", KeyAuthorization: "tok.thumb"}
	ip := acmeclient.Presentation{Type: challenge.TypeTLSALPN01, Identifier: "::ffff:127.0.0.1", Token: "tok2", KeyAuthorization: "tok2.thumb"}
	require.NoError(t, h.Present(ctx, p))
	require.NoError(t, h.Present(ctx, ip))
	port := srv.TLSALPN01Port()

	leaf, proto, err := handshake(t, port, "web.example", acmeclient.ACMETLS1Protocol)
	require.NoError(t, err)
	assert.Equal(t, acmeclient.ACMETLS1Protocol, proto)
	require.NoError(t, acmeclient.CheckTLSALPN01Certificate(leaf, "web.example", "tok.thumb"))
	assert.Error(t, acmeclient.CheckTLSALPN01Certificate(leaf, "web.example", "other.thumb"), "another key authorization passes")
	assert.Error(t, acmeclient.CheckTLSALPN01Certificate(leaf, "other.example", "tok.thumb"), "another identifier passes")
	assert.Equal(t, []string{"web.example"}, leaf.DNSNames)

	// RFC 8738 §6: an IP identifier, named by its reverse name.
	assert.Equal(t, "1.0.0.127.in-addr.arpa", acmeclient.ReverseName("127.0.0.1"))
	leaf, _, err = handshake(t, port, acmeclient.ReverseName("127.0.0.1"), acmeclient.ACMETLS1Protocol)
	require.NoError(t, err)
	require.NoError(t, acmeclient.CheckTLSALPN01Certificate(leaf, "127.0.0.1", "tok2.thumb"))
	_, _, err = handshake(t, port, "127.0.0.1.in-addr.arpa", acmeclient.ACMETLS1Protocol)
	assert.Error(t, err, "a reverse name not reversed")

	for name, hello := range map[string]struct {
		sni    string
		protos []string
	}{
		"no ALPN":                        {sni: "web.example"},
		"h2 and http/1.1":                {sni: "web.example", protos: []string{"h2", "http/1.1"}},
		"acme-tls/1 beside h2":           {sni: "web.example", protos: []string{acmeclient.ACMETLS1Protocol, "h2"}},
		"another name":                   {sni: "other.example", protos: []string{acmeclient.ACMETLS1Protocol}},
		"a subdomain":                    {sni: "sub.web.example", protos: []string{acmeclient.ACMETLS1Protocol}},
		"no SNI (an IP address as name)": {sni: "127.0.0.1", protos: []string{acmeclient.ACMETLS1Protocol}},
	} {
		_, _, err := handshake(t, port, hello.sni, hello.protos...)
		assert.Error(t, err, "%s: the handshake got a certificate", name)
	}

	require.NoError(t, h.CleanUp(ctx, p))
	require.NoError(t, h.CleanUp(ctx, p))
	_, _, err = handshake(t, port, "web.example", acmeclient.ACMETLS1Protocol)
	assert.Error(t, err, "the challenge certificate is served after clean-up")
	assert.Equal(t, 1, h.Presented())

	// A wildcard cannot be presented (RFC 8737 §3).
	assert.ErrorContains(t, h.Present(ctx, acmeclient.Presentation{Identifier: "wild.example", Wildcard: true, KeyAuthorization: "k"}), "wildcard")
}

// Replicas: a presentation made by one handler is answered by another
// that shares its PresentationStore, for TLS-ALPN-01 and HTTP-01 alike,
// and a clean-up by either ends it for both. The self-check sees what
// the CA would.
func TestHandlersAnswerFromASharedPresentationStore(t *testing.T) {
	store := &presentationStore{}
	ctx := context.Background()

	a, b := acmeclient.NewTLSALPN01Handler(store), acmeclient.NewTLSALPN01Handler(store)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{GetCertificate: b.GetCertificate, NextProtos: []string{acmeclient.ACMETLS1Protocol}})
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _ = c.(*tls.Conn).Handshake(); c.Close() }()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	check := acmeclient.TLSALPN01Checker{Port: port}
	p := acmeclient.Presentation{Type: challenge.TypeTLSALPN01, Identifier: "127.0.0.1", Token: "t", KeyAuthorization: "t.thumb"}
	assert.Error(t, check.Check(ctx, p), "answered before it was presented")
	require.NoError(t, a.Present(ctx, p))
	assert.Equal(t, 1, store.len())
	require.NoError(t, check.Check(ctx, p), "replica b does not answer what a presented")
	assert.Error(t, check.Check(ctx, acmeclient.Presentation{Identifier: "127.0.0.1", KeyAuthorization: "other"}), "the check passes another key authorization")
	require.NoError(t, a.CleanUp(ctx, p))
	assert.Error(t, check.Check(ctx, p), "answered after clean-up")
	assert.Zero(t, store.len())

	ha, hb := acmeclient.NewHTTP01Handler(store), acmeclient.NewHTTP01Handler(store)
	web := httptest.NewServer(hb)
	defer web.Close()
	get := func() int {
		res, err := http.Get(web.URL + acmeclient.HTTP01Path + "tok")
		require.NoError(t, err)
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode == http.StatusOK {
			assert.Equal(t, "tok.thumb", string(body))
		}
		return res.StatusCode
	}
	hp := acmeclient.Presentation{Type: challenge.TypeHTTP01, Identifier: "web.example", Token: "tok", KeyAuthorization: "tok.thumb"}
	require.NoError(t, ha.Present(ctx, hp))
	assert.Equal(t, http.StatusOK, get())
	require.NoError(t, hb.CleanUp(ctx, hp))
	assert.Equal(t, http.StatusNotFound, get())
}

// The reverse names of RFC 8738 §6 read back to the address.
func TestReverseName(t *testing.T) {
	for _, tc := range []struct{ ip, name string }{
		{"192.0.2.1", "1.2.0.192.in-addr.arpa"},
		{"2001:db8::1", "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa"},
		{"example.com", "example.com"},
	} {
		assert.Equal(t, tc.name, acmeclient.ReverseName(tc.ip))
	}
}

// BenchmarkTLSALPN01GetCertificate is the lookup of a CA's validation hello in a
// handler that presents the challenge, in memory: the certificate is
// built once and kept.
func BenchmarkTLSALPN01GetCertificate(b *testing.B) {
	h := &acmeclient.TLSALPN01Handler{}
	require.NoError(b, h.Present(context.Background(), acmeclient.Presentation{Identifier: "web.example", KeyAuthorization: "k.thumb"}))
	hello := &tls.ClientHelloInfo{ServerName: "web.example", SupportedProtos: []string{acmeclient.ACMETLS1Protocol}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.GetCertificate(hello); err != nil {
			b.Fatal(err)
		}
	}
}
