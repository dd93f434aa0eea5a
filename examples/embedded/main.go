// Command embedded is a certificate host as a user writes one, on the
// public packages only: it keeps three certificates issued and renewed —
// two from a local CA, one over ACME — with everything in one directory
// (a host.FileStore, and the ACME issuer's acmeclient.FileStore in its
// subdirectory acme), so that a host that stops and starts again carries
// on where it was. The CA's key pair is made on the first run, as cert-manager
// users make theirs: a self-signed CA certificate the loop issues and
// renews, into the secret the CA issuer signs with (localca.RootCertificate,
// localca.SelfSigned, localca.FromSecret). The ACME account key is made on
// the first run too, and kept in the store (acmeclient.AccountKey).
//
// To show it, the program stops its host while the ACME order is in
// flight, as a crash or a deploy would, opens the store again with a new
// loop and issuer, and checks that the same order finishes (same order
// URL, no second newOrder). Then it moves its fake clock 61 days on,
// through the renewals, and checks each certificate was renewed.
//
// Pebble, in process (acmetest), stands in for the ACME CA. A real host
// gives acmeclient.New the CA's directory URL and IssuerConfig.Solvers an
// acmeclient.HTTP01Handler served on port 80, drops RequestValidity (Let's
// Encrypt sets the validity itself), and runs loop.Run on the real clock.
//
//	go run ./examples/embedded
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/acmeclient/acmetest"
	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/host/hosttest"
	"github.com/certlife/certlife/certificate/localca"
)

const ns = "default"

func main() {
	if err := run(context.Background(), os.TempDir(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "embedded:", err)
		os.Exit(1)
	}
}

// run starts the host on a new directory under parent, stops it while the
// ACME order is in flight, starts it again on the same directory, and
// renews.
func run(ctx context.Context, parent string, w io.Writer) error {
	dir, err := os.MkdirTemp(parent, "certlife-embedded-")
	if err != nil {
		return err
	}
	ca, err := acmetest.Start(acmetest.Options{}) // a real host: Let's Encrypt
	if err != nil {
		return err
	}
	defer ca.Close()
	clk := testingclock.NewFakeClock(time.Now().UTC().Truncate(time.Minute))

	// The first run does what is due now and nothing later (Settle), and
	// stops: the ACME order is made, its challenge accepted, and the CA
	// validates it while no host runs.
	store, loop, _, err := startHost(ctx, dir, ca, clk, w)
	if err != nil {
		return err
	}
	_, err = hosttest.Settle(ctx, loop, 100)
	inFlight, answered := acmeOrder(ctx, store.acme)
	store.Close()
	if err != nil || inFlight == "" || answered {
		return fmt.Errorf("no ACME order in flight: order %q (answered: %v), %v", inFlight, answered, err)
	}
	fmt.Fprintf(w, "stopped with ACME order %s in flight; starting again on %s\n", inFlight, dir)

	store, loop, client, err := startHost(ctx, dir, ca, clk, w)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := advance(ctx, loop, clk, store.objects, clk.Now().Add(2*time.Minute), 1, w); err != nil {
		return err
	}
	url, answered := acmeOrder(ctx, store.acme)
	if n := client.Transport().Counts().ByKind[acmeclient.KindNewOrder]; n > 0 || url != inFlight || !answered {
		return fmt.Errorf("after the restart: order %s (answered: %v), %d newOrder requests", url, answered, n)
	}
	fmt.Fprintf(w, "the same order finished: no new order\n")

	// Renewals: 61 days of the fake clock in a few seconds of real time.
	return advance(ctx, loop, clk, store.objects, clk.Now().Add(61*24*time.Hour), 2, w)
}

// stores are what the host keeps in its directory: the certificates,
// secrets and requests, and, in its subdirectory acme, the ACME issuer's
// orders and challenges.
type stores struct {
	objects *host.FileStore
	acme    *acmeclient.FileStore
}

func openStores(dir string, clk *testingclock.FakeClock) (*stores, error) {
	objects, err := host.OpenFileStore(dir, clk)
	if err != nil {
		return nil, err
	}
	acme, err := acmeclient.OpenFileStore(filepath.Join(dir, "acme"))
	if err != nil {
		objects.Close()
		return nil, err
	}
	return &stores{objects: objects, acme: acme}, nil
}

// Close releases both directories.
func (s *stores) Close() error { return errors.Join(s.acme.Close(), s.objects.Close()) }

// advance runs the loop until end on the fake clock, and checks that each
// certificate is Ready at revision at least. While an ACME order is in
// flight the clock moves no faster than real time (Pace), as the CA
// validates on its own clock.
func advance(ctx context.Context, loop *host.Loop, clk *testingclock.FakeClock, store host.Store, end time.Time, revision int, w io.Writer) error {
	if err := hosttest.Advance(ctx, loop, clk, end, hosttest.AdvanceOptions{Pace: 10 * time.Second}); err != nil {
		return err
	}
	for _, name := range []string{"api", "db", "web"} {
		c, err := store.Certificates().Get(ctx, ns, name)
		if err != nil {
			return err
		}
		if r := c.Status.Condition(certificate.ConditionReady); r == nil || r.Status != certificate.StatusTrue || *c.Status.Revision < revision {
			return fmt.Errorf("certificate %s: not Ready at revision %d: %+v", name, revision, c.Status)
		}
		fmt.Fprintf(w, "%-3s revision %d, valid until %s\n", name, *c.Status.Revision, c.Status.NotAfter.Format(time.DateTime))
	}
	return nil
}

// startHost opens the store, creates the certificates that are missing,
// and returns a loop over it all and the loop's ACME client.
func startHost(ctx context.Context, dir string, ca *acmetest.Server, clk *testingclock.FakeClock, w io.Writer) (
	*stores, *host.Loop, *acmeclient.Client, error) {
	stores, err := openStores(dir, clk)
	if err != nil {
		return nil, nil, nil, err
	}
	store := stores.objects
	// The ACME account's key: made on the first run and kept in the store.
	accountKey, err := acmeclient.AccountKey(ctx, store.Secrets().Get, store.Secrets().Create, ns, "acme-account", nil)
	if err != nil {
		return nil, nil, nil, err
	}
	// A real host: the CA's directory URL, and no HTTPClient (the CA's TLS
	// certificate is a public one).
	client, err := acmeclient.New(acmeclient.Config{DirectoryURL: ca.DirectoryURL, Key: accountKey, HTTPClient: ca.Client(), Clock: clk})
	if err != nil {
		return nil, nil, nil, err
	}
	acme, err := acmeclient.NewIssuer(acmeclient.IssuerConfig{Client: client, Account: acmeclient.AccountOptions{AgreeToTerms: true},
		Store: stores.acme, Solvers: ca.Solvers(), RequestValidity: true})
	if err != nil {
		return nil, nil, nil, err
	}
	loop, err := host.New(host.Config{Store: store, Clock: clk, Observe: func(e host.Event) { observe(w, e) },
		Issuers: map[certificate.IssuerRef]certificate.Issuer{
			{Name: "self-signed"}: localca.SelfSigned(store.Secrets().Get, nil),
			{Name: "internal-ca"}: localca.FromSecret(store.Secrets().Get, ns, "internal-ca", nil),
			{Name: "acme"}:        acme,
		}})
	if err != nil {
		return nil, nil, nil, err
	}
	// The CA's key pair: a self-signed CA certificate the loop issues
	// and renews (localca.RootCertificate), into the secret the
	// internal-ca issuer signs with; the requests of api and db wait for
	// it and are answered as soon as it is written. The others: 30 days
	// from the CA, what the ACME CA gives (90 days at Pebble).
	certs := []*certificate.Certificate{localca.RootCertificate(ns, "internal-ca", "internal CA", certificate.IssuerRef{Name: "self-signed"})}
	for _, c := range []struct{ name, issuer string }{{"api", "internal-ca"}, {"db", "internal-ca"}, {"web", "acme"}} {
		spec := certificate.Spec{SecretName: c.name, CommonName: c.name + ".example", DNSNames: []string{c.name + ".example"},
			IssuerRef: certificate.IssuerRef{Name: c.issuer}}
		if c.issuer == "internal-ca" {
			spec.Duration = &certificate.Duration{Duration: 30 * 24 * time.Hour}
		}
		certs = append(certs, &certificate.Certificate{ObjectMeta: certificate.ObjectMeta{Namespace: ns, Name: c.name}, Spec: spec})
	}
	for _, c := range certs {
		if _, err := store.Certificates().Create(ctx, c); err != nil && !errors.Is(err, host.ErrAlreadyExists) {
			return nil, nil, nil, err
		}
	}
	return stores, loop, client, nil
}

// acmeOrder is the URL of the ACME order the issuer keeps in the store,
// and whether it has answered the request with it.
func acmeOrder(ctx context.Context, store *acmeclient.FileStore) (url string, answered bool) {
	states, _ := store.List(ctx)
	for _, s := range states {
		return s.Order.Status.URL, s.AnsweredAt != nil
	}
	return "", false
}

// observe prints what the loop does: each request made and answered, and
// each error, at the fake clock's time.
func observe(w io.Writer, e host.Event) {
	at := fmt.Sprintf("%s  %-13s", e.Time.Format(time.DateTime), e.Name)
	switch r := e.Request; {
	case e.Err != nil:
		fmt.Fprintf(w, "%s  error: %v\n", at, e.Err)
	case certificate.Answered(r):
		fmt.Fprintf(w, "%s  %s\n", at, r.Condition(certificate.RequestConditionReady).Message)
	case e.Result != nil && e.Result.Reason == certificate.ReasonRequestCreated:
		fmt.Fprintf(w, "%s  %s: %s\n", at, e.Result.IssuanceReason, e.Result.Message)
	}
}
