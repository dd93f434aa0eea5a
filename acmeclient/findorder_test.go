package acmeclient_test

import (
	"crypto/rand"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/acmeclient/acmetest"
	"github.com/certlife/certlife/keys"
)

// dropNewOrderAnswer passes requests on, except the first newOrder: it
// drops the answer, after the server created the order (the order
// exists, the client hears only a broken connection), or, when before,
// the request itself (no order).
type dropNewOrderAnswer struct {
	base     http.RoundTripper
	newOrder string // the directory's newOrder URL
	before   bool
	mu       sync.Mutex
	dropped  bool
}

func (d *dropNewOrderAnswer) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.String() != d.newOrder {
		return d.base.RoundTrip(r)
	}
	d.mu.Lock()
	first := !d.dropped
	d.dropped = true
	d.mu.Unlock()
	if first && d.before {
		return nil, errors.New("connection refused (the test dropped the request)")
	}
	res, err := d.base.RoundTrip(r)
	if err != nil || !first {
		return res, err
	}
	res.Body.Close()
	return nil, errors.New("connection reset by peer (the test dropped the answer)")
}

// A newOrder whose answer is lost after the server created the order —
// the connection dropped, or the process died before it wrote the order
// down — costs no second order: the state records that the newOrder was
// sent, and the next attempt, by the same issuer or by a new process on
// the same store, finds the order among the account's orders and carries
// it on to the certificate.
func TestIssuerFindsAnOrderWhoseAnswerWasLost(t *testing.T) {
	for name, restart := range map[string]bool{"the answer is lost": false, "the process dies": true} {
		t.Run(name, func(t *testing.T) {
			srv, err := acmetest.Start(acmetest.Options{})
			require.NoError(t, err)
			t.Cleanup(srv.Close)
			ctx := timeout(t)
			accountKey, err := keys.Generate(rand.Reader, keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
			require.NoError(t, err)
			store := acmeclient.NewMemoryStore()
			var found []acmeclient.Event
			var mu sync.Mutex
			newIssuer := func(client *acmeclient.Client) *acmeclient.Issuer {
				iss, err := acmeclient.NewIssuer(acmeclient.IssuerConfig{Client: client, Store: store, Solvers: srv.Solvers(),
					Account: acmeclient.AccountOptions{AgreeToTerms: true},
					Trace: func(ev acmeclient.Event) {
						if ev.Reason == acmeclient.ReasonOrderFound {
							mu.Lock()
							found = append(found, ev)
							mu.Unlock()
						}
					}})
				require.NoError(t, err)
				return iss
			}
			probe, err := acmeclient.New(srv.ClientConfig(accountKey))
			require.NoError(t, err)
			dir, err := probe.Directory(ctx)
			require.NoError(t, err)
			cfg := srv.ClientConfig(accountKey)
			drop := &dropNewOrderAnswer{base: cfg.HTTPClient.Transport, newOrder: dir.NewOrder}
			cfg.HTTPClient = &http.Client{Transport: drop}
			client, err := acmeclient.New(cfg)
			require.NoError(t, err)
			issuer := newIssuer(client)

			r, key := newRequest(t, "web-1", "lost.example")
			res, err := issuer.Step(ctx, r)
			require.NoError(t, err)
			require.False(t, res.Answered)
			require.Error(t, res.Err, "the newOrder's answer was dropped")
			require.Equal(t, map[string]int{"lost.example": 1}, srv.OrdersCreated(), "the server created the order")
			st, err := store.Get(ctx, acmeclient.RequestRef{}, acmeclient.OrderName(r))
			require.NoError(t, err)
			require.Empty(t, st.Order.Status.URL, "the client never heard of it")
			require.NotNil(t, st.OrderRequestedAt, "but recorded that it asked")

			if restart {
				fresh, err := acmeclient.New(srv.ClientConfig(accountKey))
				require.NoError(t, err)
				issuer = newIssuer(fresh)
			}
			drive(t, ctx, issuer, r)
			leafOf(t, srv, r, key, "lost.example")
			assert.Equal(t, map[string]int{"lost.example": 1}, srv.OrdersCreated(), "one order, found and carried on")
			st, err = store.Get(ctx, acmeclient.RequestRef{}, acmeclient.OrderName(r))
			require.NoError(t, err)
			assert.Nil(t, st.OrderRequestedAt)
			mu.Lock()
			defer mu.Unlock()
			require.Len(t, found, 1)
			assert.NoError(t, found[0].Err)
			assert.Contains(t, found[0].Message, st.Order.Status.URL)
		})
	}
}

// A newOrder that never reached the server is ordered again: the
// account's orders hold no match — an order for the same name that is
// finalized, or that another request's state records, is none.
func TestIssuerOrdersAgainWhenNoLostOrderMatches(t *testing.T) {
	e := newEnv(t, acmetest.Options{}, nil)
	ctx := timeout(t)
	done, _ := newRequest(t, "done-1", "same.example")
	drive(t, ctx, e.issuer, done)
	pending, _ := newRequest(t, "pending-1", "same.example")
	res, err := e.issuer.Step(ctx, pending)
	require.NoError(t, err)
	require.False(t, res.Answered)
	taken, err := e.store.Get(ctx, acmeclient.RequestRef{}, acmeclient.OrderName(pending))
	require.NoError(t, err)
	require.NotEmpty(t, taken.Order.Status.URL)

	dir, err := e.client.Directory(ctx)
	require.NoError(t, err)
	cfg := e.srv.ClientConfig(e.key)
	cfg.HTTPClient = &http.Client{Transport: &dropNewOrderAnswer{base: cfg.HTTPClient.Transport, newOrder: dir.NewOrder, before: true}}
	client, err := acmeclient.New(cfg)
	require.NoError(t, err)
	iss, err := acmeclient.NewIssuer(acmeclient.IssuerConfig{Client: client, Store: e.store, Solvers: e.srv.Solvers(),
		Account: acmeclient.AccountOptions{AgreeToTerms: true}})
	require.NoError(t, err)
	r, _ := newRequest(t, "web-1", "same.example")
	res, err = iss.Step(ctx, r)
	require.NoError(t, err)
	require.Error(t, res.Err, "the newOrder was dropped")
	require.Equal(t, map[string]int{"same.example": 2}, e.srv.OrdersCreated(), "done-1's and pending-1's")
	st, err := e.store.Get(ctx, acmeclient.RequestRef{}, acmeclient.OrderName(r))
	require.NoError(t, err)
	require.NotNil(t, st.OrderRequestedAt, "the newOrder may have reached the server, for all the client knows")
	// The next attempt looks, finds no match and orders anew. (It goes
	// no further: pending-1's challenge for the name goes first.)
	for st.Order.Status.URL == "" {
		select {
		case <-ctx.Done():
			t.Fatalf("no order: %s: %s", res.Reason, res.Message)
		case <-time.After(time.Until(res.RequeueAt)):
		}
		res, err = iss.Step(ctx, r)
		require.NoError(t, err)
		st, err = e.store.Get(ctx, acmeclient.RequestRef{}, acmeclient.OrderName(r))
		require.NoError(t, err)
	}
	assert.Equal(t, map[string]int{"same.example": 3}, e.srv.OrdersCreated(), "web-1 ordered anew")
	assert.NotEqual(t, taken.Order.Status.URL, st.Order.Status.URL, "not pending-1's order")
	assert.Nil(t, st.OrderRequestedAt)
}
