package acmeclient_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/backoff/retry"
	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/order"
	"github.com/certlife/certlife/renewal"
)

// elsewhere is another server a redirect may point at; it counts the
// requests that reach it. Its TLS certificate is the one every httptest
// server has, which the front's client trusts: a client that followed
// the redirect would get there.
func elsewhere(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var hits atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// frontClient is a new client of the front server, with no directory
// read yet.
func frontClient(t *testing.T, e *faultEnv) *acmeclient.Client {
	t.Helper()
	dir := strings.Replace(e.srv.DirectoryURL, mustHost(t, e.srv.DirectoryURL), mustHost(t, e.front.srv.URL), 1)
	c, err := acmeclient.New(acmeclient.Config{DirectoryURL: dir, Key: e.key, HTTPClient: e.front.srv.Client(), Clock: e.clock})
	require.NoError(t, err)
	return c
}

// A redirect of an ACME request to another server is refused, whichever
// request it is (RFC 8555 §6.1: the client talks to the server it was
// given, over HTTPS): nothing reaches the other server, the error says
// where the request was sent, is ErrRedirect and is not retryable, and a
// request the issuer was answering fails with those words instead of
// being retried forever. A redirect on the same server is followed.
func TestARedirectToAnotherServerIsRefused(t *testing.T) {
	redirectOnce := func(kind, to string) func(string, int, int, time.Time) *fault {
		return func(k string, n, _ int, _ time.Time) *fault {
			if k == kind && n == 1 {
				return &fault{Status: http.StatusTemporaryRedirect, Location: to}
			}
			return nil
		}
	}
	t.Run("the directory, read by a new client", func(t *testing.T) {
		e := newFaultEnv(t)
		other, hits := elsewhere(t)
		e.front.setScript(redirectOnce("directory", other.URL+"/dir"))
		_, err := frontClient(t, e).Directory(context.Background())
		require.ErrorIs(t, err, acmeclient.ErrRedirect)
		assert.False(t, acmeclient.Retryable(err), "a redirect to another server is retried: %v", err)
		assert.Contains(t, err.Error(), "the server redirected GET "+e.front.srv.URL+"/dir to "+other.URL+"/dir, another server: refused")
		assert.Zero(t, hits.Load(), "the request reached the other server")
	})
	for _, kind := range []string{"newOrder", "finalize", "certificate"} {
		t.Run("a "+kind+" the issuer makes", func(t *testing.T) {
			e := newFaultEnv(t)
			other, hits := elsewhere(t)
			e.front.setScript(redirectOnce(kind, other.URL+"/"+kind))
			r, _ := newRequest(t, "web-1", "redirected.example")
			err := e.run(t, r)
			require.Error(t, err, "issued through a redirect to another server")
			ready := r.Condition(certificate.RequestConditionReady)
			require.NotNil(t, ready)
			assert.Equal(t, certificate.RequestReasonFailed, ready.Reason)
			assert.Contains(t, ready.Message, "to "+other.URL+"/"+kind+", another server: refused")
			assert.Zero(t, hits.Load(), "the request reached the other server")
			var redirects int
			for _, s := range e.front.requests() {
				if s.Kind == kind {
					redirects++
				}
			}
			assert.Equal(t, 1, redirects, "the %s was tried again after a redirect that will not change", kind)
		})
	}
	t.Run("a redirect on the same server is followed", func(t *testing.T) {
		e := newFaultEnv(t)
		e.front.setScript(redirectOnce("directory", e.front.srv.URL+"/dir"))
		d, err := frontClient(t, e).Directory(context.Background())
		require.NoError(t, err)
		assert.NotEmpty(t, d.NewOrder)
	})
}

// A Retry-After given as an HTTP date far in the future is capped as the
// seconds form is (RFC 9110 §10.2.3), at ten years: on a rate-limited
// newOrder, which fails the request with it for the certificate's
// backoff, and on an ARI answer, whose next poll stays within
// renewal.MaxPoll (RFC 9773 §4.3).
func TestAFarRetryAfterIsCappedInEitherForm(t *testing.T) {
	const cap = 10 * 365 * 24 * time.Hour
	for name, value := range map[string]string{
		"an HTTP date in the year 9999": "Fri, 31 Dec 9999 23:59:59 GMT",
		"ten thousand years in seconds": "315569520000",
	} {
		t.Run(name, func(t *testing.T) {
			e := newFaultEnv(t)
			e.front.setScript(func(kind string, _, _ int, _ time.Time) *fault {
				if kind == "newOrder" {
					f := problem(429, "rateLimited", "too many certificates for this exact set of names")
					f.RetryAfter = value
					return &f
				}
				return nil
			})
			iss, err := acmeclient.NewIssuer(acmeclient.IssuerConfig{Client: e.client, Store: acmeclient.NewMemoryStore(), Solvers: e.srv.Solvers(),
				Order:  order.Config{Schedule: retry.Schedule{MaxAttempts: 2}},
				Limits: &acmeclient.RateLimits{Disabled: true}}) // unpaced: a refusal is the order's failure
			require.NoError(t, err)
			r, _ := newRequest(t, "web-1", "limited.example")
			ctx := timeout(t)
			res, err := iss.Step(ctx, r)
			require.NoError(t, err)
			for !res.Answered {
				require.NoError(t, e.clock.wait(ctx, res.RequeueAt))
				res, err = iss.Step(ctx, r)
				require.NoError(t, err)
			}
			require.NotNil(t, r.Status.RetryAfter, "the server's Retry-After reaches the request")
			assert.False(t, r.Status.RetryAfter.After(e.clock.Now().Add(cap)), "Retry-After %v: beyond ten years from now", r.Status.RetryAfter)
			assert.True(t, r.Status.RetryAfter.After(e.clock.Now().Add(cap-time.Hour)), "Retry-After %v: not the capped value", r.Status.RetryAfter)
		})
	}
	t.Run("on an ARI answer", func(t *testing.T) {
		e := newFaultEnv(t)
		r, key := newRequest(t, "web-1", "ari.example")
		require.NoError(t, e.run(t, r))
		leaf := leafOf(t, e.srv, r, key, "ari.example")
		e.front.setScript(func(kind string, _, _ int, _ time.Time) *fault {
			if kind == "renewalInfo" {
				return &fault{Edit: func(status int, h http.Header, body []byte) (int, []byte) {
					h.Set("Retry-After", "Fri, 31 Dec 9999 23:59:59 GMT")
					return status, body
				}}
			}
			return nil
		})
		now := e.clock.Now()
		info, err := e.client.RenewalInfo(timeout(t), leaf)
		require.NoError(t, err)
		assert.Equal(t, now.Add(cap), info.RetryAfter)
		assert.Equal(t, now.Add(renewal.MaxPoll), info.NextPoll)
	})
}

// ca.crt holds a CA: the request's CA is the last certificate of the
// chain the server sent when that is a CA certificate (RFC 5280 §4.2.1.9,
// basic constraints cA), and nothing when the server sent the leaf alone
// (RFC 8555 §7.4.2 lets it) — never the leaf.
func TestTheRequestsCAIsACA(t *testing.T) {
	leafOnly := func(kind string, _, _ int, _ time.Time) *fault {
		if kind != "certificate" {
			return nil
		}
		return &fault{Edit: func(status int, h http.Header, body []byte) (int, []byte) {
			b, _ := pem.Decode(body)
			require.NotNil(t, b, "Pebble sent no chain")
			h.Del("Link") // no alternate chains either
			return status, pem.EncodeToMemory(b)
		}}
	}
	tests := map[string]struct {
		script func(string, int, int, time.Time) *fault
		// certs in the chain, and whether the request names a CA
		certs int
		ca    bool
	}{
		"a leaf and its intermediate: the intermediate": {certs: 2, ca: true},
		"the leaf alone: no CA":                         {script: leafOnly, certs: 1, ca: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := newFaultEnv(t)
			e.front.setScript(tc.script)
			r, key := newRequest(t, "web-1", "chain.example")
			require.NoError(t, e.run(t, r))
			var chain []*x509.Certificate
			for rest := r.Status.Certificate; ; {
				var b *pem.Block
				if b, rest = pem.Decode(rest); b == nil {
					break
				}
				c, err := x509.ParseCertificate(b.Bytes)
				require.NoError(t, err)
				chain = append(chain, c)
			}
			require.Len(t, chain, tc.certs)
			require.True(t, keys.PublicKeysEqual(chain[0].PublicKey, key.Public()), "the leaf is for the CSR's key")
			if !tc.ca {
				assert.Empty(t, r.Status.CA, "the request names a CA that is not one")
				return
			}
			b, rest := pem.Decode(r.Status.CA)
			require.NotNil(t, b, "no CA")
			assert.Empty(t, strings.TrimSpace(string(rest)), "one certificate")
			ca, err := x509.ParseCertificate(b.Bytes)
			require.NoError(t, err)
			assert.True(t, ca.BasicConstraintsValid && ca.IsCA, "ca.crt is not a CA certificate")
			assert.Equal(t, chain[len(chain)-1].Raw, ca.Raw, "ca.crt is not the chain's last certificate")
			assert.NoError(t, chain[0].CheckSignatureFrom(ca), "the leaf is not signed by it")
		})
	}
}
