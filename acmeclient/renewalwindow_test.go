package acmeclient_test

import (
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/acmeclient/acmetest"
	"github.com/certlife/certlife/certificate/localca"
	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/renewal"
)

// The issuer gives a host the CA's renewal window of each certificate it
// issued, asking the server once per its Retry-After (6 h at Pebble)
// however often it is asked; nothing for a certificate the server does
// not know, nor when it is turned off.
func TestRenewalWindowAsksOncePerPoll(t *testing.T) {
	e := newEnv(t, acmetest.Options{}, nil)
	ctx := timeout(t)
	r, key := newRequest(t, "ari-1", "ari.example")
	drive(t, ctx, e.issuer, r)
	leaf := leafOf(t, e.srv, r, key, "ari.example")
	asked := func() int { return e.client.Transport().Counts().ByKind[acmeclient.KindRenewalInfo] }
	now := time.Now()

	w, next, err := e.issuer.RenewalWindow(ctx, nil, leaf, now)
	require.NoError(t, err)
	require.NotNil(t, w)
	assert.True(t, w.Start.After(leaf.NotBefore) && w.End.Before(leaf.NotAfter), "a window inside the validity: %+v", w)
	assert.Equal(t, now.Add(renewal.DefaultPoll), next, "Pebble's Retry-After")
	assert.Equal(t, 1, asked())

	for _, at := range []time.Duration{time.Minute, time.Hour, renewal.DefaultPoll - time.Second} {
		again, n, err := e.issuer.RenewalWindow(ctx, nil, leaf, now.Add(at))
		require.NoError(t, err)
		assert.Equal(t, w, again)
		assert.Equal(t, next, n)
	}
	assert.Equal(t, 1, asked(), "answered from memory until the next poll")

	start, end := now.Add(time.Hour), now.Add(2*time.Hour)
	require.NoError(t, e.srv.SetRenewalInfo(leaf, start, end, ""))
	moved, n, err := e.issuer.RenewalWindow(ctx, nil, leaf, next)
	require.NoError(t, err)
	assert.Equal(t, 2, asked())
	assert.Equal(t, next.Add(renewal.DefaultPoll), n)
	assert.True(t, moved.Start.Equal(start.Truncate(time.Second)), "%v", moved.Start)

	// A certificate of another CA: none, asked again at the default poll.
	other, err := localca.NewRoot(rand.Reader, "other", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, now.Add(-time.Hour), time.Hour*24)
	require.NoError(t, err)
	otherReq, _ := newRequest(t, "other-1", "other.example")
	require.NoError(t, other.Issue(rand.Reader, otherReq, now))
	b, _ := pem.Decode(otherReq.Status.Certificate)
	require.NotNil(t, b)
	otherLeaf, err := x509.ParseCertificate(b.Bytes)
	require.NoError(t, err)
	none, n, err := e.issuer.RenewalWindow(ctx, nil, otherLeaf, now)
	require.NoError(t, err)
	assert.Nil(t, none)
	assert.Equal(t, now.Add(renewal.DefaultPoll), n)

	off := newEnv(t, acmetest.Options{}, func(c *acmeclient.IssuerConfig) { c.DisableRenewalInfo = true })
	none, n, err = off.issuer.RenewalWindow(ctx, nil, leaf, now)
	require.NoError(t, err)
	assert.Nil(t, none)
	assert.True(t, n.IsZero())
	assert.Zero(t, off.client.Transport().Counts().ByKind[acmeclient.KindRenewalInfo])
}
