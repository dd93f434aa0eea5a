package acmeclient_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/acme"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/acmeclient/acmetest"
	"github.com/certlife/certlife/challenge"
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

// The requests of one issuance of one name over HTTP-01 through the
// Issuer at its defaults, against a bare x/crypto/acme flow with its
// polling helpers on the same server. Ours: what RFC 8555 §7.4 needs when
// the CA answers at once — newOrder, the authorization, the accept, one
// read of the authorization, finalize, one read of the order, the
// certificate — and no newNonce (every response carries the next nonce).
// The first issuance of a client costs one newNonce more: finalize is
// signed apart from x/crypto/acme, and that signer has no nonce of its
// own yet.
func TestRequestsPerIssuance(t *testing.T) {
	e := newEnv(t, acmetest.Options{}, nil)
	ctx := timeout(t)
	_, err := e.client.EnsureAccount(ctx, acmeclient.AccountOptions{AgreeToTerms: true})
	require.NoError(t, err)
	e.client.Transport().ResetCounts()
	r, key := newRequest(t, "first", "first.example")
	drive(t, ctx, e.issuer, r)
	leafOf(t, e.srv, r, key, "first.example")
	first := e.client.Transport().Counts()
	require.Equal(t, 1, first.ByKind[acmeclient.KindNonce], "the first finalize fetches a nonce: %v", first)

	e.client.Transport().ResetCounts()
	r, key = newRequest(t, "counted", "count.example")
	drive(t, ctx, e.issuer, r)
	leafOf(t, e.srv, r, key, "count.example")
	ours := e.client.Transport().Counts()
	assert.Equal(t, map[acmeclient.RequestKind]int{acmeclient.KindNewOrder: 1, acmeclient.KindAuthorization: 2, acmeclient.KindChallenge: 1,
		acmeclient.KindFinalize: 1, acmeclient.KindOrder: 1, acmeclient.KindCertificate: 1}, ours.ByKind)

	// The bare x/crypto/acme flow.
	pc := &pathCounter{base: e.srv.Client().Transport, n: map[string]int{}}
	akey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	c := &acme.Client{Key: akey, DirectoryURL: e.srv.DirectoryURL, HTTPClient: &http.Client{Transport: pc}}
	_, err = c.Register(ctx, &acme.Account{}, acme.AcceptTOS)
	require.NoError(t, err)
	setup := pc.total()
	o, err := c.AuthorizeOrder(ctx, acme.DomainIDs("stock.example"))
	require.NoError(t, err)
	z, err := c.GetAuthorization(ctx, o.AuthzURLs[0])
	require.NoError(t, err)
	var ch *acme.Challenge
	for _, x := range z.Challenges {
		if x.Type == "http-01" {
			ch = x
		}
	}
	ka, _ := c.HTTP01ChallengeResponse(ch.Token)
	require.NoError(t, e.srv.HTTP01Handler().Present(ctx, acmeclient.Presentation{Type: challenge.TypeHTTP01, Identifier: "stock.example", Token: ch.Token, KeyAuthorization: ka}))
	_, err = c.Accept(ctx, ch)
	require.NoError(t, err)
	_, err = c.WaitAuthorization(ctx, z.URI)
	require.NoError(t, err)
	_, sder := csr(t, "stock.example")
	_, _, err = c.CreateCertFromOrder(ctx, o, sder, true)
	require.NoError(t, err)
	stock := pc.total() - setup
	t.Logf("one issuance, account already registered: certlife %d requests (%v); x/crypto/acme with its helpers %d (%v, of which %d for the account)",
		ours.Total, ours, stock, pc.n, setup)
	assert.LessOrEqual(t, ours.Total, stock)
}

// csr makes a key and a DER CSR for names.
func csr(t testing.TB, names ...string) (crypto.Signer, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: names[0]}, DNSNames: names}, key)
	require.NoError(t, err)
	return key, der
}
