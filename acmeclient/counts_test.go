package acmeclient_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/acme"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/acmeclient/acmetest"
	"github.com/certlife/certlife/challenge"
	"github.com/certlife/certlife/internal/acmeflow"
	"github.com/certlife/certlife/order"
)

// pathCounter counts requests by Pebble's paths, for a client that is not
// ours.
type pathCounter struct {
	base http.RoundTripper
	mu   sync.Mutex
	n    map[string]int
}

func (p *pathCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	kind := "other"
	for prefix, k := range map[string]string{"/dir": "directory", "/nonce-plz": "nonce", "/sign-me-up": "account", "/order-plz": "newOrder",
		"/my-order/": "order", "/authZ/": "authorization", "/chalZ/": "challenge", "/finalize-order/": "finalize", "/certZ/": "certificate"} {
		if strings.HasPrefix(r.URL.Path, prefix) {
			kind = k
		}
	}
	p.mu.Lock()
	p.n[kind]++
	p.mu.Unlock()
	return p.base.RoundTrip(r)
}

func (p *pathCounter) total() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := 0
	for _, n := range p.n {
		t += n
	}
	return t
}

// The requests of one issuance of one name over HTTP-01, ours against a
// bare x/crypto/acme flow with its polling helpers, on the same server.
// Ours: newOrder, authorization, challenge, finalize and certificate once
// each (RFC 8555 §7.4's minimum), plus the polls the server's asynchronous
// validation and issuance need, and no newNonce request after the first
// (every response carries the next nonce). The first issuance of a
// client costs one newNonce more: finalize is signed apart from
// x/crypto/acme, and that signer has no nonce of its own yet.
func TestRequestsPerIssuance(t *testing.T) {
	e := newEnv(t, acmetest.Options{})
	e.client.Transport().ResetCounts()
	key, der := csr(t, "first.example")
	e.leafOf(mustIssue(t, e, http01Spec(der, "first.example")), key, "first.example")
	first := e.client.Transport().Counts()
	require.Equal(t, 1, first.ByKind[acmeclient.KindNonce], "the first finalize fetches a nonce: %v", first)

	e.client.Transport().ResetCounts()
	key, der = csr(t, "count.example")
	e.leafOf(mustIssue(t, e, http01Spec(der, "count.example")), key, "count.example")
	ours := e.client.Transport().Counts()
	for kind, want := range map[acmeclient.Kind]int{acmeclient.KindNewOrder: 1, acmeclient.KindChallenge: 1, acmeclient.KindFinalize: 1,
		acmeclient.KindCertificate: 1, acmeclient.KindNonce: 0, acmeclient.KindAccount: 0, acmeclient.KindDirectory: 0} {
		if got := ours.ByKind[kind]; got != want {
			t.Errorf("%s: %d requests, want %d (%v)", kind, got, want, ours)
		}
	}
	if ours.ByKind[acmeclient.KindAuthorization] < 1 {
		t.Errorf("the authorization was never read: %v", ours)
	}

	// The bare x/crypto/acme flow.
	pc := &pathCounter{base: e.srv.Client().Transport, n: map[string]int{}}
	akey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	c := &acme.Client{Key: akey, DirectoryURL: e.srv.DirectoryURL, HTTPClient: &http.Client{Transport: pc}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Register(ctx, &acme.Account{}, acme.AcceptTOS); err != nil {
		t.Fatal(err)
	}
	setup := pc.total()
	o, err := c.AuthorizeOrder(ctx, acme.DomainIDs("stock.example"))
	if err != nil {
		t.Fatal(err)
	}
	z, err := c.GetAuthorization(ctx, o.AuthzURLs[0])
	if err != nil {
		t.Fatal(err)
	}
	var ch *acme.Challenge
	for _, x := range z.Challenges {
		if x.Type == "http-01" {
			ch = x
		}
	}
	ka, _ := c.HTTP01ChallengeResponse(ch.Token)
	if err := e.http01.Present(ctx, acmeclient.Presentation{Type: challenge.TypeHTTP01, Identifier: "stock.example", Token: ch.Token, KeyAuthorization: ka}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Accept(ctx, ch); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitAuthorization(ctx, z.URI); err != nil {
		t.Fatal(err)
	}
	_, sder := csr(t, "stock.example")
	if _, _, err := c.CreateCertFromOrder(ctx, o, sder, true); err != nil {
		t.Fatal(err)
	}
	stock := pc.total() - setup
	t.Logf("one issuance, account already registered: certlife %d requests (%v); x/crypto/acme with its helpers %d (%v, of which %d for the account)",
		ours.Total, ours, stock, pc.n, setup)
	if ours.Total > stock+2 {
		t.Errorf("certlife made %d requests, x/crypto/acme %d", ours.Total, stock)
	}
}

// BenchmarkIssue20 issues 20 certificates end to end against the
// in-process Pebble (validation sleep off), all 20 orders driven at once by
// one runner, as a host with 20 certificates due does.
func BenchmarkIssue20(b *testing.B) {
	e := newEnv(b, acmetest.Options{})
	e.runner.Trace = nil
	b.ReportAllocs()
	e.client.Transport().ResetCounts()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		names := make([]string, 20)
		for j := range names {
			orderSeq++
			names[j] = "b" + strconv.Itoa(orderSeq)
			_, der := csr(b, names[j]+".example")
			e.runner.Add(order.Order{Name: names[j], CreationTimestamp: time.Now(), Spec: http01Spec(der, names[j]+".example")})
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		for _, n := range names {
			if _, err := e.runner.Run(ctx, n, acmeflow.RealTime); err != nil {
				b.Fatal(err)
			}
			e.runner.Remove(ctx, n)
		}
		cancel()
	}
	elapsed := time.Since(start)
	c := e.client.Transport().Counts()
	certs := float64(20 * b.N)
	b.ReportMetric(certs/elapsed.Seconds(), "certs/s")
	b.ReportMetric(float64(c.Total)/certs, "requests/cert")
}
