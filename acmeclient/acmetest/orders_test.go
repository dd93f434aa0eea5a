package acmetest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/order"
)

// OrdersCreated counts the orders Pebble created, by their identifiers
// in any order, and not the newOrder requests it refused.
func TestOrdersCreatedCountsWhatPebbleCreated(t *testing.T) {
	s, err := Start(Options{})
	require.NoError(t, err)
	defer s.Close()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	c, err := acmeclient.New(s.ClientConfig(key))
	require.NoError(t, err)
	ctx := context.Background()
	_, err = c.EnsureAccount(ctx, acmeclient.AccountOptions{AgreeToTerms: true})
	require.NoError(t, err)
	assert.Empty(t, s.OrdersCreated())
	for _, names := range [][]string{{"b.example", "a.example"}, {"a.example", "b.example"}, {"c.example"}} {
		_, err := c.CreateOrder(ctx, order.Status{}, order.CreateOrder{DNSNames: names})
		require.NoError(t, err)
	}
	// An identifier Pebble refuses (not a DNS name) creates no order.
	_, err = c.CreateOrder(ctx, order.Status{}, order.CreateOrder{DNSNames: []string{"bad_name!"}})
	require.Error(t, err)
	assert.Equal(t, map[string]int{"a.example,b.example": 2, "c.example": 1}, s.OrdersCreated())
}
