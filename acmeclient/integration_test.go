package acmeclient_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/acmeclient/acmetest"
	"github.com/certlife/certlife/challenge"
	"github.com/certlife/certlife/internal/acmeflow"
	"github.com/certlife/certlife/order"
	"github.com/certlife/certlife/renewal"
)

// env is one Pebble, one account and a runner, as a host has them.
type env struct {
	t      testing.TB
	srv    *acmetest.Server
	client *acmeclient.Client
	runner *acmeflow.Runner
	http01 *acmeclient.HTTP01Handler
	events []acmeflow.Event
}

func fastOrders() order.Config {
	return order.Config{PollInterval: 20 * time.Millisecond, TransientRetry: 50 * time.Millisecond}
}

func fastChallenges() challenge.Config {
	return challenge.Config{PollInterval: 20 * time.Millisecond, SelfCheckInterval: 50 * time.Millisecond, TransientRetry: 50 * time.Millisecond}
}

// resolvingClient is an HTTP client that resolves every name through the
// test DNS server, as the CA does, for the HTTP-01 self-check.
func resolvingClient(dnsAddr string) *http.Client {
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, dnsAddr)
	}}
	d := &net.Dialer{Resolver: r, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
}

func newEnv(t testing.TB, opts acmetest.Options) *env {
	t.Helper()
	srv, err := acmetest.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	client, err := acmeclient.New(acmeclient.Config{DirectoryURL: srv.DirectoryURL, Key: key, HTTPClient: srv.Client(), UserAgent: "certlife-test"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := client.EnsureAccount(ctx, acmeclient.AccountOptions{AgreeToTerms: true, Contact: []string{"mailto:ops@example.com"}}); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, srv: srv, client: client, http01: &acmeclient.HTTP01Handler{}}
	srv.SetHTTP01Handler(e.http01)
	srv.DNS().AddZone("example")
	e.runner = &acmeflow.Runner{
		Client: client,
		Solvers: acmeclient.Solvers{
			HTTP01:      e.http01,
			HTTP01Check: &acmeclient.HTTP01Checker{Client: resolvingClient(srv.DNS().Addr()), Port: srv.HTTP01Port()},
			DNS01:       srv.DNS(),
			DNS01Check:  &acmeclient.DNS01Checker{Nameservers: []string{srv.DNS().Addr()}},
		},
		OrderConfig: fastOrders(), ChallengeConfig: fastChallenges(),
		Trace: func(ev acmeflow.Event) { e.events = append(e.events, ev) },
	}
	return e
}

var orderSeq int

// csr makes a key and a CSR for names.
func csr(t testing.TB, names ...string) (crypto.Signer, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: names[0]}, DNSNames: names}, key)
	if err != nil {
		t.Fatal(err)
	}
	return key, der
}

// issue drives one order through the order and challenge machines.
func (e *env) issue(spec order.Spec) (order.Order, error) {
	e.t.Helper()
	orderSeq++
	name := "order-" + strconv.Itoa(orderSeq)
	e.runner.Add(order.Order{Name: name, Namespace: "default", CreationTimestamp: time.Now(), Spec: spec})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o, err := e.runner.Run(ctx, name, acmeflow.RealTime)
	e.runner.Remove(ctx, name)
	return o, err
}

func http01Spec(der []byte, names ...string) order.Spec {
	return order.Spec{CSR: der, Issuer: challenge.Issuer{Name: "pebble"}, DNSNames: names,
		Solvers: []order.SolverConfig{{Solver: challenge.Solver{HTTP01: &challenge.HTTP01Solver{}}}}}
}

func dns01Spec(der []byte, names ...string) order.Spec {
	return order.Spec{CSR: der, Issuer: challenge.Issuer{Name: "pebble"}, DNSNames: names,
		Solvers: []order.SolverConfig{{Solver: challenge.Solver{DNS01: &challenge.DNS01Solver{Provider: "test"}}}}}
}

// leafOf parses the chain and checks it: leaf for the key and names, and
// a path to one of the server's roots.
func (e *env) leafOf(o order.Order, key crypto.Signer, names ...string) *x509.Certificate {
	e.t.Helper()
	var certs []*x509.Certificate
	rest := o.Status.Certificate
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			e.t.Fatal(err)
		}
		certs = append(certs, c)
	}
	if len(certs) < 2 {
		e.t.Fatalf("the chain has %d certificates, want a leaf and an intermediate", len(certs))
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	for _, n := range names {
		if _, err := certs[0].Verify(x509.VerifyOptions{DNSName: n, Roots: e.srv.RootPool(), Intermediates: inter}); err != nil {
			e.t.Fatalf("the certificate does not verify for %s: %v", n, err)
		}
	}
	if !certs[0].PublicKey.(*ecdsa.PublicKey).Equal(key.Public()) {
		e.t.Fatal("the certificate is not for the CSR's key")
	}
	return certs[0]
}

func TestIssueOneNameOverHTTP01(t *testing.T) {
	e := newEnv(t, acmetest.Options{})
	e.client.Transport().ResetCounts()
	key, der := csr(t, "web.example")
	o, err := e.issue(http01Spec(der, "web.example"))
	if err != nil {
		for _, ev := range e.events {
			t.Log(ev)
		}
		t.Fatal(err)
	}
	e.leafOf(o, key, "web.example")
	t.Logf("requests: %v", e.client.Transport().Counts())
	for _, ev := range e.events {
		t.Log(ev)
	}
}

func mustIssue(t *testing.T, e *env, spec order.Spec) order.Order {
	t.Helper()
	o, err := e.issue(spec)
	if err != nil {
		for _, ev := range e.events {
			t.Log(ev)
		}
		t.Fatal(err)
	}
	return o
}

func TestIssueThreeNamesOverHTTP01(t *testing.T) {
	e := newEnv(t, acmetest.Options{})
	names := []string{"a.example", "b.example", "c.example"}
	key, der := csr(t, names...)
	o := mustIssue(t, e, http01Spec(der, names...))
	leaf := e.leafOf(o, key, names...)
	if len(leaf.DNSNames) != 3 {
		t.Fatalf("the certificate names %v", leaf.DNSNames)
	}
	if e.http01.Presented() != 0 {
		t.Fatalf("%d tokens still served after the order finished", e.http01.Presented())
	}
}

// RFC 8555 §7.1.3: a wildcard name is authorized by DNS-01 only.
func TestIssueWildcardOverDNS01(t *testing.T) {
	e := newEnv(t, acmetest.Options{})
	names := []string{"*.wild.example", "wild.example"}
	key, der := csr(t, names...)
	o := mustIssue(t, e, dns01Spec(der, names...))
	e.leafOf(o, key, "x.wild.example", "wild.example")
	if got := e.srv.DNS().TXT(acmeclient.DNS01Name("wild.example")); len(got) != 0 {
		t.Fatalf("TXT records left behind: %v", got)
	}
	if e.srv.DNS().Queries("TXT") < 2 {
		t.Fatalf("the CA and the self-check asked for TXT %d times", e.srv.DNS().Queries("TXT"))
	}
}

// RFC 8555 §6.5: a badNonce rejection is retried with the nonce it
// carries. Half of all nonces rejected and half of all authorizations
// reused: every issuance still succeeds.
func TestIssueUnderBadNoncesAndAuthorizationReuse(t *testing.T) {
	e := newEnv(t, acmetest.Options{NonceRejectPercent: 50, AuthzReusePercent: 50})
	e.client.Transport().ResetCounts()
	reused := 0
	for i := range 6 {
		names := []string{"n" + strconv.Itoa(i%3) + ".example"}
		key, der := csr(t, names...)
		o := mustIssue(t, e, http01Spec(der, names...))
		e.leafOf(o, key, names...)
		for _, a := range o.Status.Authorizations {
			if a.Identifier == "" || a.InitialState == order.StateValid {
				reused++ // never read (the order was ready), or read valid
			}
		}
	}
	c := e.client.Transport().Counts()
	t.Logf("6 issuances: %v; %d authorizations reused", c, reused)
	if c.BadNonces == 0 {
		t.Fatal("no bad nonce was seen: the fault knob is not on")
	}
}

// A wrong key authorization makes the authorization, and so the order,
// invalid (RFC 8555 §7.1.6), and the server's words reach the order.
func TestWrongKeyAuthorizationInvalidatesTheOrder(t *testing.T) {
	e := newEnv(t, acmetest.Options{})
	e.srv.SetHTTP01Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("not-the-key-authorization"))
	}))
	e.runner.Solvers.HTTP01Check = nil // the self-check would hold it back
	_, der := csr(t, "bad.example")
	o, err := e.issue(http01Spec(der, "bad.example"))
	if err == nil {
		t.Fatal("the order succeeded with a wrong key authorization")
	}
	if o.Status.State != order.StateInvalid {
		t.Fatalf("state %q, want invalid", o.Status.State)
	}
	if !strings.Contains(o.Status.Reason, "key authorization") {
		t.Fatalf("the reason %q does not carry the server's explanation", o.Status.Reason)
	}
	t.Logf("reason: %s", o.Status.Reason)
}

// RFC 9773 §4: renewal information for an issued certificate is a window
// inside its validity; §5: a renewal order names the certificate it
// replaces, and a second one naming it gets alreadyReplaced, after which
// the client orders without replaces.
func TestRenewalInfoAndReplaces(t *testing.T) {
	e := newEnv(t, acmetest.Options{})
	key, der := csr(t, "ari.example")
	leaf := e.leafOf(mustIssue(t, e, http01Spec(der, "ari.example")), key, "ari.example")

	e.client.Transport().ResetCounts()
	info, err := e.client.RenewalInfo(context.Background(), leaf)
	if err != nil {
		t.Fatal(err)
	}
	w := info.Window
	if w.Start.Before(leaf.NotBefore) || w.End.After(leaf.NotAfter) || !w.End.After(w.Start) {
		t.Fatalf("window %v–%v is not inside the validity %v–%v", w.Start, w.End, leaf.NotBefore, leaf.NotAfter)
	}
	if info.RetryAfter.IsZero() || info.NextPoll.Before(time.Now()) {
		t.Fatalf("no Retry-After (%v) or next poll (%v)", info.RetryAfter, info.NextPoll)
	}
	if c := e.client.Transport().Counts(); c.ByKind[acmeclient.KindRenewalInfo] != 1 || c.Total != 1 {
		t.Fatalf("renewalInfo is one unauthenticated GET; counted %v", c)
	}

	// The server moves the window (an incident): the client sees it.
	start, end := time.Now().Add(-time.Hour).Truncate(time.Second), time.Now().Add(time.Hour).Truncate(time.Second)
	if err := e.srv.SetRenewalInfo(leaf, start, end, "https://example.com/incident"); err != nil {
		t.Fatal(err)
	}
	info, err = e.client.RenewalInfo(context.Background(), leaf)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Window.Start.Equal(start) || !info.Window.End.Equal(end) || info.Window.ExplanationURL != "https://example.com/incident" {
		t.Fatalf("window %+v, want %v–%v with the explanation", info.Window, start, end)
	}

	id, err := renewal.CertID(leaf)
	if err != nil {
		t.Fatal(err)
	}
	key2, der2 := csr(t, "ari.example")
	spec := http01Spec(der2, "ari.example")
	spec.Replaces = id
	e.leafOf(mustIssue(t, e, spec), key2, "ari.example")
	// Pebble marks the replaced certificate just after it issues the
	// new one, in the background: give it a moment.
	require.Eventually(t, func() bool {
		replaced, err := e.srv.Replaced(leaf)
		return err == nil && replaced
	}, 5*time.Second, 5*time.Millisecond, "the server did not record the replacement")
	// Again: alreadyReplaced, then an order without replaces.
	key3, der3 := csr(t, "ari.example")
	spec = http01Spec(der3, "ari.example")
	spec.Replaces = id
	e.leafOf(mustIssue(t, e, spec), key3, "ari.example")
}

// A preferred chain picks the alternate root's chain (seed 002).
func TestPreferredChainPicksTheAlternateRoot(t *testing.T) {
	e := newEnv(t, acmetest.Options{AlternateRoots: 1})
	roots := e.srv.Roots()
	if len(roots) != 2 {
		t.Fatalf("%d roots, want 2", len(roots))
	}
	for _, root := range roots {
		key, der := csr(t, "chain.example")
		spec := http01Spec(der, "chain.example")
		spec.PreferredChain = root.Subject.CommonName
		o := mustIssue(t, e, spec)
		e.leafOf(o, key, "chain.example")
		var last *x509.Certificate
		rest := o.Status.Certificate
		for {
			var b *pem.Block
			if b, rest = pem.Decode(rest); b == nil {
				break
			}
			last, _ = x509.ParseCertificate(b.Bytes)
		}
		if last.Issuer.CommonName != root.Subject.CommonName {
			t.Fatalf("asked for the chain to %q, got one to %q", root.Subject.CommonName, last.Issuer.CommonName)
		}
	}
}

// Profiles (draft-aaron-acme-profiles): an order asks for a profile the
// server lists; one it does not list is a clear error that names them.
func TestProfiles(t *testing.T) {
	e := newEnv(t, acmetest.Options{})
	dir, err := e.client.Directory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := dir.Profiles["shortlived"]; !ok {
		t.Fatalf("profiles %v", dir.Profiles)
	}
	key, der := csr(t, "short.example")
	spec := http01Spec(der, "short.example")
	spec.Profile = "shortlived"
	leaf := e.leafOf(mustIssue(t, e, spec), key, "short.example")
	if life := leaf.NotAfter.Sub(leaf.NotBefore); life > 7*24*time.Hour {
		t.Fatalf("a shortlived certificate valid for %v", life)
	}

	_, der = csr(t, "short.example")
	spec = http01Spec(der, "short.example")
	spec.Profile = "forever"
	o, err := e.issue(spec)
	if !errors.Is(err, acmeflow.ErrOrderFailed) || o.Status.State != order.StateErrored {
		t.Fatalf("an unknown profile: %v, state %q", err, o.Status.State)
	}
	if !strings.Contains(o.Status.Reason, `"forever"`) || !strings.Contains(o.Status.Reason, "shortlived") {
		t.Fatalf("the reason %q does not name the profile asked and those offered", o.Status.Reason)
	}
}

// RFC 8555 §7.3.4: a server that requires external account binding
// refuses an account without one and accepts one with the right key.
func TestExternalAccountBinding(t *testing.T) {
	hmacKey := []byte("0123456789abcdef0123456789abcdef")
	srv, err := acmetest.Start(acmetest.Options{RequireEAB: true, EAB: map[string]string{"kid-1": base64.RawURLEncoding.EncodeToString(hmacKey)}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	c, err := acmeclient.New(acmeclient.Config{DirectoryURL: srv.DirectoryURL, Key: key, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.EnsureAccount(ctx, acmeclient.AccountOptions{AgreeToTerms: true}); !errors.Is(err, acmeclient.ErrUnauthorized) {
		t.Fatalf("no binding: %v", err)
	}
	eab := &acmeclient.EAB{KeyID: "kid-1", Key: hmacKey}
	a, err := c.EnsureAccount(ctx, acmeclient.AccountOptions{AgreeToTerms: true, EAB: eab})
	if err != nil || !a.Created {
		t.Fatalf("with the binding: %+v %v", a, err)
	}
	if strings.Contains(fmt.Sprintf("%v %+v %#v", eab, eab, eab), string(hmacKey)) {
		t.Fatal("the EAB key is printed")
	}
	// The same key again finds the account in one request.
	c.Transport().ResetCounts()
	if a, err := c.EnsureAccount(ctx, acmeclient.AccountOptions{AgreeToTerms: true, EAB: eab}); err != nil || a.Created || a.URL == "" {
		t.Fatalf("again: %+v %v", a, err)
	}
	if n := c.Transport().Counts().ByKind[acmeclient.KindAccount]; n != 1 {
		t.Fatalf("finding an existing account took %d requests", n)
	}
}

// An authorization the account already holds is reused (RFC 8555 §7.4
// allows it): the order creates no challenge for it and costs fewer
// requests.
func TestAuthorizationReuse(t *testing.T) {
	e := newEnv(t, acmetest.Options{AuthzReusePercent: 100})
	key, der := csr(t, "again.example")
	e.leafOf(mustIssue(t, e, http01Spec(der, "again.example")), key, "again.example")
	first := len(e.events)
	e.client.Transport().ResetCounts()
	key, der = csr(t, "again.example")
	o := mustIssue(t, e, http01Spec(der, "again.example"))
	e.leafOf(o, key, "again.example")
	for _, ev := range e.events[first:] {
		if strings.HasPrefix(ev.Resource, "challenge/") {
			t.Fatalf("a challenge ran for a reused authorization: %v", ev)
		}
	}
	// The order is ready as created (§7.1.6): it is finalized at once,
	// without reading the authorization.
	c := e.client.Transport().Counts()
	t.Logf("reused issuance: %v", c)
	if c.ByKind[acmeclient.KindChallenge]+c.ByKind[acmeclient.KindAuthorization] != 0 || c.ByKind[acmeclient.KindFinalize] != 1 {
		t.Fatalf("a reused authorization was read or challenged: %v", c)
	}
}

// The DNS-01 self-check asks the zone's authoritative server, found
// through NS records, and fails until the value is there.
func TestDNS01CheckerFindsTheAuthoritativeServer(t *testing.T) {
	srv, err := acmetest.Start(acmetest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	d := srv.DNS()
	d.AddZone("zone.example")
	_, port, _ := net.SplitHostPort(d.Addr())
	p, _ := strconv.Atoi(port)
	check := acmeclient.DNS01Checker{Resolver: d.Addr(), Port: p, Timeout: 2 * time.Second}
	ctx := context.Background()
	wild := acmeclient.Presentation{Type: challenge.TypeDNS01, Identifier: "www.zone.example", Wildcard: true, KeyAuthorization: "ka"}
	if err := check.Check(ctx, wild); !errors.Is(err, acmeclient.ErrDNS01NotFound) {
		t.Fatalf("before presenting: %v", err)
	}
	if err := d.Present(ctx, wild); err != nil {
		t.Fatal(err)
	}
	if err := check.Check(ctx, wild); err != nil {
		t.Fatalf("after presenting: %v", err)
	}
	if d.Queries("NS") == 0 {
		t.Fatal("the checker did not look for the zone's nameservers")
	}
	unknown := acmeclient.DNS01Checker{Resolver: d.Addr(), Port: p, Timeout: 2 * time.Second}
	if err := unknown.Check(ctx, acmeclient.Presentation{Type: challenge.TypeDNS01, Identifier: "www.nozone.example", KeyAuthorization: "ka"}); err == nil || !strings.Contains(err.Error(), "no zone encloses") {
		t.Fatalf("a name in no known zone: %v", err)
	}
}

// RFC 8555 §7.6: the account that ordered a certificate can revoke it;
// the server's renewal information then asks for renewal now (RFC 9773
// §4.2).
func TestRevokeThenRenewalInfoSaysNow(t *testing.T) {
	e := newEnv(t, acmetest.Options{})
	key, der := csr(t, "revoke.example")
	leaf := e.leafOf(mustIssue(t, e, http01Spec(der, "revoke.example")), key, "revoke.example")
	ctx := context.Background()
	if err := e.client.RevokeCertificate(ctx, leaf.Raw, 1 /* keyCompromise */); err != nil {
		t.Fatal(err)
	}
	info, err := e.client.RenewalInfo(ctx, leaf)
	if err != nil {
		t.Fatal(err)
	}
	if info.Window.Start.After(time.Now()) {
		t.Fatalf("a revoked certificate's window starts at %v, in the future", info.Window.Start)
	}
	// Revoking again is done, not an error (alreadyRevoked).
	if err := e.client.RevokeCertificate(ctx, leaf.Raw, 1); err != nil {
		t.Fatalf("revoking twice: %v", err)
	}
}

// RFC 8555 §7.4: an order may ask for notBefore and notAfter; Pebble
// honours them (a host on a fake clock uses this to keep the CA's validity
// on its own timeline).
func TestOrderAsksForAValidity(t *testing.T) {
	e := newEnv(t, acmetest.Options{})
	nb := time.Now().Add(30 * 24 * time.Hour).Truncate(time.Second)
	na := nb.Add(10 * 24 * time.Hour)
	key, der := csr(t, "validity.example")
	spec := http01Spec(der, "validity.example")
	spec.NotBefore, spec.NotAfter = &nb, &na
	o := mustIssue(t, e, spec)
	block, _ := pem.Decode(o.Status.Certificate)
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !leaf.NotBefore.Equal(nb) || !leaf.NotAfter.Equal(na) {
		t.Fatalf("validity %v–%v, asked %v–%v", leaf.NotBefore, leaf.NotAfter, nb, na)
	}
	if !leaf.PublicKey.(*ecdsa.PublicKey).Equal(key.Public()) {
		t.Fatal("another key")
	}
}
