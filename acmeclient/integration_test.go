package acmeclient_test

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/acmeclient/acmetest"
	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/challenge"
	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/order"
)

// RFC 8555 §6.5: a badNonce rejection is retried with a fresh nonce. Half
// of all nonces rejected and half of all authorizations reused: every
// issuance still succeeds.
func TestIssueUnderBadNoncesAndAuthorizationReuse(t *testing.T) {
	e := newEnv(t, acmetest.Options{NonceRejectPercent: 50, AuthzReusePercent: 50}, nil)
	e.client.Transport().ResetCounts()
	ctx := timeout(t)
	reused := 0
	for i := range 6 {
		name := "n" + strconv.Itoa(i%3) + ".example"
		r, key := newRequest(t, "r"+strconv.Itoa(i), name)
		drive(t, ctx, e.issuer, r)
		leafOf(t, e.srv, r, key, name)
		st, err := e.store.Get(ctx, acmeclient.RequestRef{}, acmeclient.OrderName(r))
		require.NoError(t, err)
		for _, a := range st.Order.Status.Authorizations {
			if a.Identifier == "" || a.InitialState == "valid" {
				reused++ // never read (the order was ready), or read valid
			}
		}
	}
	c := e.client.Transport().Counts()
	t.Logf("6 issuances: %v; %d authorizations reused", c, reused)
	assert.Positive(t, c.BadNonces, "no bad nonce was seen: the fault knob is not on")
}

// RFC 9773 §4: renewal information for an issued certificate is a window
// inside its validity, fetched with one unauthenticated GET; the server
// can move it. §5: a second renewal naming a certificate already replaced
// gets alreadyReplaced, after which the client orders without replaces.
func TestRenewalInfoAndAlreadyReplaced(t *testing.T) {
	e := newEnv(t, acmetest.Options{}, nil)
	ctx := timeout(t)
	r, key := newRequest(t, "ari-1", "ari.example")
	drive(t, ctx, e.issuer, r)
	leaf := leafOf(t, e.srv, r, key, "ari.example")

	e.client.Transport().ResetCounts()
	info, err := e.client.RenewalInfo(ctx, leaf)
	require.NoError(t, err)
	w := info.Window
	assert.False(t, w.Start.Before(leaf.NotBefore) || w.End.After(leaf.NotAfter) || !w.End.After(w.Start),
		"window %v–%v is not inside the validity %v–%v", w.Start, w.End, leaf.NotBefore, leaf.NotAfter)
	assert.False(t, info.RetryAfter.IsZero() || info.NextPoll.Before(time.Now()), "no Retry-After (%v) or next poll (%v)", info.RetryAfter, info.NextPoll)
	c := e.client.Transport().Counts()
	assert.Equal(t, map[acmeclient.RequestKind]int{acmeclient.KindRenewalInfo: 1}, c.ByKind, "renewalInfo is one unauthenticated GET")

	// The server moves the window (an incident): the client sees it.
	start, end := time.Now().Add(-time.Hour).Truncate(time.Second), time.Now().Add(time.Hour).Truncate(time.Second)
	require.NoError(t, e.srv.SetRenewalInfo(leaf, start, end, "https://example.com/incident"))
	info, err = e.client.RenewalInfo(ctx, leaf)
	require.NoError(t, err)
	assert.True(t, info.Window.Start.Equal(start) && info.Window.End.Equal(end), "window %+v, want %v–%v", info.Window, start, end)
	assert.Equal(t, "https://example.com/incident", info.Window.ExplanationURL)

	for n := 2; n <= 3; n++ {
		rn, keyn := newRequest(t, "ari-"+strconv.Itoa(n), "ari.example")
		markRenewal(t, rn, leaf)
		drive(t, ctx, e.issuer, rn)
		leafOf(t, e.srv, rn, keyn, "ari.example")
		// Pebble marks the replaced certificate just after it issues
		// the new one, in the background: give it a moment.
		require.Eventually(t, func() bool {
			replaced, err := e.srv.Replaced(leaf)
			return err == nil && replaced
		}, 5*time.Second, 5*time.Millisecond, "the server did not record the replacement")
	}
}

// A preferred chain picks the alternate root's chain.
func TestPreferredChainPicksTheAlternateRoot(t *testing.T) {
	srv, err := acmetest.Start(acmetest.Options{AlternateRoots: 1})
	require.NoError(t, err)
	defer srv.Close()
	roots := srv.Roots()
	require.Len(t, roots, 2)
	accountKey, err := keys.Generate(rand.Reader, keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
	require.NoError(t, err)
	client, err := acmeclient.New(srv.ClientConfig(accountKey))
	require.NoError(t, err)
	ctx := timeout(t)
	for i, root := range roots {
		iss, err := acmeclient.NewIssuer(acmeclient.IssuerConfig{Client: client, Store: acmeclient.NewMemoryStore(), Solvers: srv.Solvers(),
			Account: acmeclient.AccountOptions{AgreeToTerms: true}, PreferredChain: root.Subject.CommonName})
		require.NoError(t, err)
		r, key := newRequest(t, "chain-"+strconv.Itoa(i), "chain.example")
		drive(t, ctx, iss, r)
		leafOf(t, srv, r, key, "chain.example")
		var last *x509.Certificate
		for rest := r.Status.Certificate; ; {
			var b *pem.Block
			if b, rest = pem.Decode(rest); b == nil {
				break
			}
			last, _ = x509.ParseCertificate(b.Bytes)
		}
		assert.Equal(t, root.Subject.CommonName, last.Issuer.CommonName, "the chain asked for")
	}
}

// Profiles (draft-aaron-acme-profiles): an order asks for a profile the
// server lists, and gets its validity.
func TestProfiles(t *testing.T) {
	e := newEnv(t, acmetest.Options{}, func(c *acmeclient.IssuerConfig) { c.Profile = "shortlived" })
	dir, err := e.client.Directory(context.Background())
	require.NoError(t, err)
	require.Contains(t, dir.Profiles, "shortlived")
	r, key := newRequest(t, "short", "short.example")
	drive(t, timeout(t), e.issuer, r)
	leaf := leafOf(t, e.srv, r, key, "short.example")
	assert.LessOrEqual(t, leaf.NotAfter.Sub(leaf.NotBefore), 7*24*time.Hour, "a shortlived certificate")
}

// RFC 8555 §7.3.4: a server that requires external account binding
// refuses an account without one and accepts one with the right key.
func TestExternalAccountBinding(t *testing.T) {
	hmacKey := []byte("0123456789abcdef0123456789abcdef")
	srv, err := acmetest.Start(acmetest.Options{RequireEAB: true, EAB: map[string]string{"kid-1": base64.RawURLEncoding.EncodeToString(hmacKey)}})
	require.NoError(t, err)
	defer srv.Close()
	key, err := keys.Generate(rand.Reader, keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
	require.NoError(t, err)
	c, err := acmeclient.New(srv.ClientConfig(key))
	require.NoError(t, err)
	ctx := context.Background()
	_, err = c.EnsureAccount(ctx, acmeclient.AccountOptions{AgreeToTerms: true})
	require.ErrorIs(t, err, acmeclient.ErrUnauthorized, "no binding")
	eab := &acmeclient.EAB{KeyID: "kid-1", Key: hmacKey}
	a, err := c.EnsureAccount(ctx, acmeclient.AccountOptions{AgreeToTerms: true, EAB: eab})
	require.NoError(t, err)
	assert.True(t, a.Created)
	assert.NotContains(t, fmt.Sprintf("%v %+v %#v", eab, eab, eab), string(hmacKey), "the EAB key is printed")
	// The same key again finds the account in one request.
	c.Transport().ResetCounts()
	a, err = c.EnsureAccount(ctx, acmeclient.AccountOptions{AgreeToTerms: true, EAB: eab})
	require.NoError(t, err)
	assert.False(t, a.Created)
	assert.NotEmpty(t, a.URL)
	assert.Equal(t, 1, c.Transport().Counts().ByKind[acmeclient.KindAccount], "finding an existing account")
}

// An authorization the account already holds is reused (RFC 8555 §7.4
// allows it): the order creates no challenge for it, and, ready as
// created (§7.1.6), is finalized at once without reading an
// authorization.
func TestAuthorizationReuse(t *testing.T) {
	e := newEnv(t, acmetest.Options{AuthzReusePercent: 100}, nil)
	ctx := timeout(t)
	r, key := newRequest(t, "first", "again.example")
	drive(t, ctx, e.issuer, r)
	leafOf(t, e.srv, r, key, "again.example")
	e.mu.Lock()
	first := len(e.events)
	e.mu.Unlock()
	e.client.Transport().ResetCounts()
	r, key = newRequest(t, "second", "again.example")
	drive(t, ctx, e.issuer, r)
	leafOf(t, e.srv, r, key, "again.example")
	e.mu.Lock()
	for _, ev := range e.events[first:] {
		assert.False(t, strings.HasPrefix(ev.Resource, "challenge/"), "a challenge ran for a reused authorization: %v", ev)
	}
	e.mu.Unlock()
	c := e.client.Transport().Counts()
	t.Logf("reused issuance: %v", c)
	assert.Zero(t, c.ByKind[acmeclient.KindChallenge]+c.ByKind[acmeclient.KindAuthorization], "a reused authorization was read or challenged")
	assert.Equal(t, 1, c.ByKind[acmeclient.KindFinalize])
}

// The DNS-01 self-check asks the zone's authoritative server, found
// through NS records, and fails until the value is there.
func TestDNS01CheckerFindsTheAuthoritativeServer(t *testing.T) {
	srv, err := acmetest.Start(acmetest.Options{})
	require.NoError(t, err)
	defer srv.Close()
	d := srv.DNS()
	d.AddZone("zone.example")
	_, port, _ := net.SplitHostPort(d.Addr())
	p, _ := strconv.Atoi(port)
	check := acmeclient.DNS01Checker{Resolver: d.Addr(), Port: p, Timeout: 2 * time.Second}
	ctx := context.Background()
	wild := acmeclient.Presentation{Type: challenge.TypeDNS01, Identifier: "www.zone.example", Wildcard: true, KeyAuthorization: "ka"}
	require.ErrorIs(t, check.Check(ctx, wild), acmeclient.ErrDNS01NotFound, "before presenting")
	require.NoError(t, d.Present(ctx, wild))
	require.NoError(t, check.Check(ctx, wild), "after presenting")
	assert.Positive(t, d.Queries("NS"), "the checker did not look for the zone's nameservers")
	err = check.Check(ctx, acmeclient.Presentation{Type: challenge.TypeDNS01, Identifier: "www.nozone.example", KeyAuthorization: "ka"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no zone encloses")
}

// RFC 8555 §7.6: the account that ordered a certificate can revoke it;
// the server's renewal information then asks for renewal now (RFC 9773
// §4.2). Revoking again is done, not an error (alreadyRevoked).
func TestRevokeThenRenewalInfoSaysNow(t *testing.T) {
	e := newEnv(t, acmetest.Options{}, nil)
	ctx := timeout(t)
	r, key := newRequest(t, "revoke", "revoke.example")
	drive(t, ctx, e.issuer, r)
	leaf := leafOf(t, e.srv, r, key, "revoke.example")
	require.NoError(t, e.client.RevokeCertificate(ctx, leaf.Raw, 1 /* keyCompromise */))
	info, err := e.client.RenewalInfo(ctx, leaf)
	require.NoError(t, err)
	assert.False(t, info.Window.Start.After(time.Now()), "a revoked certificate's window starts at %v, in the future", info.Window.Start)
	require.NoError(t, e.client.RevokeCertificate(ctx, leaf.Raw, 1), "revoking twice")
}

// RFC 8555 §7.4: with RequestValidity an order asks for notBefore = now
// and notAfter = now + the request's duration; Pebble honours them (a
// host on a fake clock uses this to keep the CA's validity on its own
// timeline).
func TestOrderAsksForTheRequestsValidity(t *testing.T) {
	e := newEnv(t, acmetest.Options{}, func(c *acmeclient.IssuerConfig) { c.RequestValidity = true })
	r, key := newRequest(t, "validity", "validity.example")
	r.Spec.Duration = &certificate.Duration{Duration: 10 * 24 * time.Hour}
	before := time.Now().Truncate(time.Second)
	drive(t, timeout(t), e.issuer, r)
	leaf := leafOf(t, e.srv, r, key, "validity.example")
	assert.False(t, leaf.NotBefore.Before(before), "notBefore %v, asked from %v", leaf.NotBefore, before)
	assert.Equal(t, 10*24*time.Hour, leaf.NotAfter.Sub(leaf.NotBefore))
}

// A process that accepted a challenge and stopped before writing Accepted
// comes back to a challenge it sees as pending; the server, which has it
// processing or valid already, refuses a second accept (Pebble answers
// "malformed"). The second accept reads the challenge and carries on from
// where the server is instead of failing the order.
func TestAcceptOfAChallengeAcceptedBefore(t *testing.T) {
	e := newEnv(t, acmetest.Options{}, nil)
	ctx := timeout(t)
	c := e.client
	_, err := c.EnsureAccount(ctx, acmeclient.AccountOptions{AgreeToTerms: true})
	require.NoError(t, err)
	o, err := c.CreateOrder(ctx, order.Status{}, order.CreateOrder{DNSNames: []string{"twice.example"}})
	require.NoError(t, err)
	require.Len(t, o.Authorizations, 1)
	o, err = c.GetAuthorization(ctx, o, order.GetAuthorization{URL: o.Authorizations[0].URL})
	require.NoError(t, err)
	var offered order.OfferedChallenge
	for _, x := range o.Authorizations[0].Challenges {
		if x.Type == challenge.TypeHTTP01 {
			offered = x
		}
	}
	require.NotEmpty(t, offered.URL, "no http-01 challenge offered: %+v", o.Authorizations[0])
	ka, err := c.KeyAuthorization(offered.Token)
	require.NoError(t, err)
	require.NoError(t, e.srv.HTTP01Handler().Present(ctx, acmeclient.Presentation{Type: challenge.TypeHTTP01,
		Identifier: "twice.example", Token: offered.Token, KeyAuthorization: ka}))

	first, err := c.Accept(ctx, challenge.Status{State: challenge.StatePending}, challenge.Accept{URL: offered.URL})
	require.NoError(t, err)
	require.True(t, first.Accepted)

	// The first process's write is lost; the next one starts from the
	// status it had before.
	e.client.Transport().ResetCounts()
	again, err := c.Accept(ctx, challenge.Status{State: challenge.StatePending}, challenge.Accept{URL: offered.URL})
	require.NoError(t, err, "a second accept of an accepted challenge failed the order")
	assert.True(t, again.Accepted)
	assert.Contains(t, []challenge.State{challenge.StateProcessing, challenge.StateValid}, again.State)
	assert.NotEqual(t, challenge.StateErrored, again.State)
	assert.Empty(t, again.Reason)
	n := e.client.Transport().Counts()
	assert.Equal(t, 2, n.ByKind[acmeclient.KindChallenge], "the refused accept and one read of the challenge: %v", n)
}
