package tlsserve_test

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/acmeclient/acmetest"
	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/tlsserve"
	"github.com/certlife/certlife/keys"
)

// End to end: the host loop issues a certificate for two names through
// Pebble in process, whose TLS-ALPN-01 validation reaches the very
// listener that serves the certificates (tlsserve, with the challenge
// handler beside it); a handshake for each name then verifies against
// Pebble's roots. A renewal the loop writes (here: the certificate's
// issuance triggered again) is served on the next handshake.
func TestIssuesOverTLSALPN01AnsweredByTheServingListener(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()

	// The listener first: Pebble validates TLS-ALPN-01 on its port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	srv, err := acmetest.Start(acmetest.Options{TLSALPN01Port: port})
	require.NoError(t, err)
	defer srv.Close()

	store := host.NewMemoryStore(nil)
	alpn := acmeclient.NewTLSALPN01Handler(nil)
	answered := &countingResponder{h: alpn}
	serve := newServer(t, store, tlsserve.Options{TLSALPN01: answered})
	tln := tls.NewListener(ln, serve.TLSConfig())
	addr := ln.Addr().String()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := tln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				_ = c.(*tls.Conn).Handshake()
			}()
		}
	}()
	defer func() { tln.Close(); <-done }()

	accountKey, err := keys.Generate(rand.Reader, keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
	require.NoError(t, err)
	client, err := acmeclient.New(srv.ClientConfig(accountKey))
	require.NoError(t, err)
	issuer, err := acmeclient.NewIssuer(acmeclient.IssuerConfig{
		Client: client, Store: acmeclient.NewMemoryStore(), Profile: "default",
		Account: acmeclient.AccountOptions{AgreeToTerms: true},
		Solvers: acmeclient.Solvers{TLSALPN01: alpn, TLSALPN01Check: srv.TLSALPN01Checker()},
	})
	require.NoError(t, err)
	var (
		mu     sync.Mutex
		events []string
	)
	loop, err := host.New(host.Config{Store: store,
		Issuers: map[certificate.IssuerRef]certificate.Issuer{{Name: "pebble"}: issuer},
		Observe: func(e host.Event) {
			if e.Result != nil && len(e.Result.Actions) > 0 || e.Err != nil {
				mu.Lock()
				defer mu.Unlock()
				events = append(events, e.Time.Format("15:04:05.000")+" "+string(e.Kind)+" "+e.Name+" "+resultReason(e))
			}
		}})
	require.NoError(t, err)

	// Secret writes, as the store reports them.
	written := make(chan string, 16)
	store.Watch(func(c host.Change) {
		if c.Kind == host.KindSecret && !c.Deleted && c.Name == "web-tls" {
			select {
			case written <- c.Meta.ResourceVersion:
			default:
			}
		}
	})
	names := []string{"web.example", "api.example"}
	_, err = store.Certificates().Create(ctx, &certificate.Certificate{
		ObjectMeta: certificate.ObjectMeta{Namespace: "default", Name: "web"},
		Spec:       certificate.Spec{SecretName: "web-tls", DNSNames: names, IssuerRef: certificate.IssuerRef{Name: "pebble"}},
	})
	require.NoError(t, err)

	loopCtx, stop := context.WithCancel(ctx)
	loopDone := make(chan error, 1)
	go func() { loopDone <- loop.Run(loopCtx) }()
	defer func() { stop(); <-loopDone }()

	// waitServed waits for a secret write after which both names are
	// served a certificate other than old, verified against Pebble's
	// roots, and returns its serial.
	waitServed := func(old string) string {
		t.Helper()
		for {
			select {
			case <-written:
			case <-ctx.Done():
				mu.Lock()
				for _, e := range events {
					t.Log(e)
				}
				mu.Unlock()
				t.Fatalf("no certificate served: %v", ctx.Err())
			}
			var serial string
			ok := true
			for _, n := range names {
				conn, err := tls.Dial("tcp", addr, &tls.Config{ServerName: n, RootCAs: srv.RootPool(), MinVersion: tls.VersionTLS12})
				if err != nil {
					ok = false // a write of the secret before the certificate (the next key)
					break
				}
				serial = conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
				conn.Close()
			}
			if ok && serial != old {
				return serial
			}
		}
	}
	start := time.Now()
	first := waitServed("")
	t.Logf("issued over TLS-ALPN-01 and served in %v", time.Since(start).Round(time.Millisecond))
	assert.Zero(t, alpn.Presented(), "challenge certificates left presented")
	assert.GreaterOrEqual(t, answered.n.Load(), int64(len(names)), "the serving listener answered fewer TLS-ALPN-01 hellos than names")

	// A renewal: the user triggers issuance again (Issuing=True); the
	// new certificate is served once it is written.
	for {
		c, err := store.Certificates().Get(ctx, "default", "web")
		require.NoError(t, err)
		conds := slices.DeleteFunc(c.Status.Conditions, func(cd certificate.Condition) bool { return cd.Type == certificate.ConditionIssuing })
		c.Status.Conditions = append(conds, certificate.Condition{Type: certificate.ConditionIssuing, Status: certificate.StatusTrue,
			Reason: certificate.ReasonManualTrigger, Message: "renewal asked by the test", LastTransitionTime: time.Now(), ObservedGeneration: c.Generation})
		if _, err = store.Certificates().Update(ctx, c); !errors.Is(err, host.ErrConflict) {
			require.NoError(t, err)
			break
		}
	}
	second := waitServed(first)
	assert.NotEqual(t, first, second)
	t.Logf("renewed: serial %s… → %s…", first[:min(8, len(first))], second[:min(8, len(second))])
}

func resultReason(e host.Event) string {
	if e.Err != nil {
		return "error: " + e.Err.Error()
	}
	return e.Result.Reason + ": " + e.Result.Message
}

// countingResponder counts the TLS-ALPN-01 hellos it answers.
type countingResponder struct {
	h tlsserve.ChallengeResponder
	n atomic.Int64
}

func (c *countingResponder) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	cert, err := c.h.GetCertificate(hello)
	if err == nil {
		c.n.Add(1)
	}
	return cert, err
}
