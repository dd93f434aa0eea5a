package acmetest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/challenge"
	"github.com/certlife/certlife/order"
)

// Close frees every port and leaves no goroutine behind except Pebble's
// idle validation-queue reader, which Pebble gives no way to stop.
func TestCloseLeaksNothing(t *testing.T) {
	before := goroutines()
	for range 3 {
		s, err := Start(Options{})
		require.NoError(t, err)
		res, err := s.Client().Get(s.DirectoryURL)
		require.NoError(t, err)
		res.Body.Close()
		u, err := url.Parse(s.URL)
		require.NoError(t, err)
		addrs := []string{u.Host, s.HTTP01Addr(), s.DNS().Addr()}
		s.Client().CloseIdleConnections()
		s.Close()
		for _, a := range addrs {
			ln, err := net.Listen("tcp", a)
			require.NoError(t, err, "port %s still held after Close", a)
			ln.Close()
		}
		if pc, err := net.ListenPacket("udp", s.DNS().Addr()); err == nil {
			pc.Close()
		} else {
			// Another process's UDP socket (a DNS client's ephemeral
			// port, say) may have taken the freed port: what must not
			// be is this server still answering on it.
			m := new(dns.Msg)
			m.SetQuestion("example.org.", dns.TypeTXT)
			_, _, qerr := (&dns.Client{Net: "udp", Timeout: 200 * time.Millisecond}).Exchange(m, s.DNS().Addr())
			require.Error(t, qerr, "the DNS server still answers on UDP %s after Close (listen: %v)", s.DNS().Addr(), err)
		}
	}
	var after map[string]int
	for range 50 { // let exiting goroutines finish
		after = goroutines()
		if extra(before, after) == "" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	assert.Empty(t, extra(before, after), "goroutines left behind")
}

// goroutines counts live goroutines by their top function, leaving out
// Pebble's validation-queue reader.
func goroutines() map[string]int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	out := map[string]int{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		lines := strings.Split(g, "\n")
		if len(lines) < 2 || strings.Contains(g, "va.VAImpl.processTasks") || strings.Contains(g, "testing.") && strings.Contains(g, "tRunner") && strings.Contains(g, "TestCloseLeaksNothing") {
			continue
		}
		fn := lines[1]
		if i := strings.Index(fn, "("); i > 0 {
			fn = fn[:i]
		}
		out[fn]++
	}
	return out
}

func extra(before, after map[string]int) string {
	var b strings.Builder
	for fn, n := range after {
		if n > before[fn] {
			b.WriteString(fn + "\n")
		}
	}
	return b.String()
}

func TestOptionsAreCheckedByField(t *testing.T) {
	tests := map[string]struct {
		opts Options
		want []string
	}{
		"a nonce rejection rate of 100 % would reject every request": {Options{NonceRejectPercent: 100}, []string{"NonceRejectPercent: 100"}},
		"a negative reuse rate":            {Options{AuthzReusePercent: -1}, []string{"AuthzReusePercent: -1"}},
		"a negative chain":                 {Options{Intermediates: -2}, []string{"Intermediates (-2)"}},
		"every bad field is named at once": {Options{NonceRejectPercent: 120, AlternateRoots: -1}, []string{"NonceRejectPercent: 120", "AlternateRoots (-1)"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Start(tc.opts)
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// validName makes the account hold a valid authorization for name (RFC
// 8555 §7.5.1), through HTTP-01 on the server's own handler.
func validName(t *testing.T, s *Server, c *acmeclient.Client, name string) {
	t.Helper()
	ctx := context.Background()
	st, err := c.CreateOrder(ctx, order.Status{}, order.CreateOrder{DNSNames: []string{name}})
	require.NoError(t, err)
	require.Len(t, st.Authorizations, 1)
	st, err = c.GetAuthorization(ctx, st, order.GetAuthorization{URL: st.Authorizations[0].URL})
	require.NoError(t, err)
	a := st.Authorizations[0]
	for _, ch := range a.Challenges {
		if ch.Type != challenge.TypeHTTP01 {
			continue
		}
		p := acmeclient.Presentation{Type: ch.Type, Identifier: name, Token: ch.Token, KeyAuthorization: st.KeyAuthorizations[ch.Token]}
		require.NoError(t, s.Solvers().HTTP01.Present(ctx, p))
		cs, err := c.Accept(ctx, challenge.Status{}, challenge.Accept{URL: ch.URL})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			cs, err = c.SyncChallenge(ctx, cs, challenge.Sync{URL: ch.URL, AuthorizationURL: a.URL})
			return err == nil && cs.State == challenge.StateValid
		}, 10*time.Second, 10*time.Millisecond)
		return
	}
	t.Fatal("no HTTP-01 challenge offered")
}

// AuthzReusePercent is exact: at 0 no new order reuses a valid
// authorization (Pebble alone reuses one in a hundred), at 100 every one
// does (RFC 8555 §7.4 lets a server reuse them).
func TestAuthzReusePercentIsExact(t *testing.T) {
	tests := map[string]struct {
		percent      int
		wantReused   func(n int) bool
		wantDescribe string
	}{
		"never at 0":        {0, func(n int) bool { return n == 0 }, "none"},
		"every time at 100": {100, func(n int) bool { return n == 200 }, "all"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := Start(Options{AuthzReusePercent: tc.percent})
			require.NoError(t, err)
			defer s.Close()
			key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			require.NoError(t, err)
			c, err := acmeclient.New(s.ClientConfig(key))
			require.NoError(t, err)
			_, err = c.EnsureAccount(context.Background(), acmeclient.AccountOptions{AgreeToTerms: true})
			require.NoError(t, err)
			validName(t, s, c, "reuse.example")
			reused := 0
			for range 200 {
				st, err := c.CreateOrder(context.Background(), order.Status{}, order.CreateOrder{DNSNames: []string{"reuse.example"}})
				require.NoError(t, err)
				if st.State == order.StateReady { // RFC 8555 §7.1.6: every authorization valid at creation
					reused++
				}
			}
			assert.True(t, tc.wantReused(reused), "%d of 200 orders reused the valid authorization, want %s", reused, tc.wantDescribe)
		})
	}
}

// Solvers look where the CA looks: a presented HTTP-01 token answers on
// the validation port, a DNS-01 value is served by the DNS server, and the
// self-checks see both; cleaned up, neither is there.
func TestSolversPresentWhereTheCALooks(t *testing.T) {
	s, err := Start(Options{})
	require.NoError(t, err)
	defer s.Close()
	sv := s.Solvers()
	ctx := context.Background()
	tests := map[string]struct {
		p         acmeclient.Presentation
		presenter func(acmeclient.Solvers) (acmeclient.Presenter, acmeclient.Checker)
	}{
		"HTTP-01 on the validation port (RFC 8555 §8.3)": {
			p: acmeclient.Presentation{Type: challenge.TypeHTTP01, Identifier: "web.example", Token: "tok1", KeyAuthorization: "tok1.thumb"},
			presenter: func(sv acmeclient.Solvers) (acmeclient.Presenter, acmeclient.Checker) {
				return sv.HTTP01, sv.HTTP01Check
			},
		},
		"DNS-01 in the DNS server (RFC 8555 §8.4)": {
			p: acmeclient.Presentation{Type: challenge.TypeDNS01, Identifier: "web.example", Wildcard: true, Token: "tok2", KeyAuthorization: "tok2.thumb"},
			presenter: func(sv acmeclient.Solvers) (acmeclient.Presenter, acmeclient.Checker) {
				return sv.DNS01, sv.DNS01Check
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p, check := tc.presenter(sv)
			require.Error(t, check.Check(ctx, tc.p), "seen before it was presented")
			require.NoError(t, p.Present(ctx, tc.p))
			require.NoError(t, check.Check(ctx, tc.p))
			require.NoError(t, p.CleanUp(ctx, tc.p))
			require.Error(t, check.Check(ctx, tc.p), "seen after the clean-up")
		})
	}
}

// CABundle alone is enough to reach the server: a client that trusts only
// it reads the directory, and one that trusts nothing does not.
func TestCABundleReachesTheServer(t *testing.T) {
	s, err := Start(Options{})
	require.NoError(t, err)
	defer s.Close()
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(s.CABundle()), "CABundle is not PEM")
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer c.CloseIdleConnections()
	res, err := c.Get(s.DirectoryURL)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)

	bare := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: x509.NewCertPool()}}}
	defer bare.CloseIdleConnections()
	_, err = bare.Get(s.DirectoryURL)
	require.Error(t, err, "a client without the bundle reached the server")
}
