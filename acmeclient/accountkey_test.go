package acmeclient_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/acmeclient/acmetest"
	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/order"
)

// The account key is made on first use and kept in the store: the next
// call, as a restart makes, gets the same key, and the ACME server knows
// the account by it.
func TestAccountKeyIsMadeOnceAndKept(t *testing.T) {
	store := host.NewMemoryStore(testingclock.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)))
	secrets := store.Secrets()
	first, err := acmeclient.AccountKey(t.Context(), secrets.Get, secrets.Create, "default", "acme-account", nil)
	require.NoError(t, err)
	s, err := secrets.Get(t.Context(), "default", "acme-account")
	require.NoError(t, err)
	assert.Equal(t, "true", s.Labels[acmeclient.LabelAccountKey])
	kept, err := keys.DecodePrivateKey(s.Data[keys.SecretPrivateKey])
	require.NoError(t, err)
	assert.True(t, kept.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(first.Public()), "the key returned is the key kept")

	again, err := acmeclient.AccountKey(t.Context(), secrets.Get, secrets.Create, "default", "acme-account", nil)
	require.NoError(t, err)
	assert.True(t, again.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(first.Public()), "the second call reads the same key")

	ca, err := acmetest.Start(acmetest.Options{})
	require.NoError(t, err)
	defer ca.Close()
	var urls []string
	for _, key := range []crypto.Signer{first, again} {
		c, err := acmeclient.New(acmeclient.Config{DirectoryURL: ca.DirectoryURL, Key: key, HTTPClient: ca.Client()})
		require.NoError(t, err)
		a, err := c.EnsureAccount(t.Context(), acmeclient.AccountOptions{AgreeToTerms: true})
		require.NoError(t, err)
		urls = append(urls, a.URL)
	}
	assert.Equal(t, urls[0], urls[1], "one account")
}

// Two processes that start together over one store both find no secret
// and both make a key: the one whose create loses reads the winner's, and
// both use the same key.
func TestAccountKeyRaceEndsOnOneKey(t *testing.T) {
	store := host.NewMemoryStore(testingclock.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)))
	secrets := store.Secrets()
	// Each reads before either creates: the barrier holds the first read
	// of each until both have read.
	var reads sync.WaitGroup
	reads.Add(2)
	var once [2]sync.Once
	getOf := func(i int) acmeclient.SecretGetter {
		return func(ctx context.Context, ns, name string) (*certificate.Secret, error) {
			s, err := secrets.Get(ctx, ns, name)
			first := false
			once[i].Do(func() { first = true })
			if first {
				reads.Done()
				reads.Wait()
			}
			return s, err
		}
	}
	var lost sync.WaitGroup
	var mu sync.Mutex
	var createErrs []error
	create := func(ctx context.Context, s *certificate.Secret) (*certificate.Secret, error) {
		made, err := secrets.Create(ctx, s)
		mu.Lock()
		createErrs = append(createErrs, err)
		mu.Unlock()
		return made, err
	}
	var got [2]crypto.Signer
	var errs [2]error
	lost.Add(2)
	for i := range 2 {
		go func() {
			defer lost.Done()
			got[i], errs[i] = acmeclient.AccountKey(t.Context(), getOf(i), create, "default", "acme-account", nil)
		}()
	}
	lost.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.Len(t, createErrs, 2, "both found no key and made one")
	assert.Equal(t, 1, countIs(createErrs, host.ErrAlreadyExists), "one create lost")
	assert.True(t, got[0].Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(got[1].Public()), "both use the winner's key")
	s, err := secrets.Get(t.Context(), "default", "acme-account")
	require.NoError(t, err)
	kept, err := keys.DecodePrivateKey(s.Data[keys.SecretPrivateKey])
	require.NoError(t, err)
	assert.True(t, kept.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(got[0].Public()), "the key kept")
}

func countIs(errs []error, target error) int {
	n := 0
	for _, err := range errs {
		if errors.Is(err, target) {
			n++
		}
	}
	return n
}

// What cannot give a key is an error that says where, and a secret that
// holds something else is never overwritten.
func TestAccountKeyRefusals(t *testing.T) {
	store := host.NewMemoryStore(testingclock.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)))
	secrets := store.Secrets()
	_, err := secrets.Create(t.Context(), &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Namespace: "default", Name: "taken"},
		Data: map[string][]byte{keys.SecretPrivateKey: []byte("not a key")}})
	require.NoError(t, err)
	down := errors.New("the store is down")
	for name, tc := range map[string]struct {
		get    acmeclient.SecretGetter
		create acmeclient.SecretCreator
		secret string
		want   string
		is     error
	}{
		"a secret that holds no key": {get: secrets.Get, create: secrets.Create, secret: "taken",
			want: "acmeclient: the ACME account key in secret default/taken: tls.key holds no usable private key"},
		"a store that is down": {
			get:    func(context.Context, string, string) (*certificate.Secret, error) { return nil, down },
			create: func(context.Context, *certificate.Secret) (*certificate.Secret, error) { return nil, down },
			secret: "acme-account", want: "acmeclient: the ACME account key in secret default/acme-account: the store is down", is: down},
		"no getter":  {create: secrets.Create, secret: "acme-account", want: "AccountKey needs a SecretGetter and a SecretCreator", is: acmeclient.ErrConfig},
		"a bad name": {get: secrets.Get, create: secrets.Create, secret: "a/b", want: "AccountKey: the secret's name", is: acmeclient.ErrConfig},
	} {
		t.Run(name, func(t *testing.T) {
			key, err := acmeclient.AccountKey(t.Context(), tc.get, tc.create, "default", tc.secret, nil)
			require.Error(t, err)
			assert.Nil(t, key)
			assert.Contains(t, err.Error(), tc.want)
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
		})
	}
	s, err := secrets.Get(t.Context(), "default", "taken")
	require.NoError(t, err)
	assert.Equal(t, "not a key", string(s.Data[keys.SecretPrivateKey]), "not overwritten")
}

// One Client is shared by every caller of a host (an operator's Issuer
// controller and its request workers each ensure the account): calls to
// EnsureAccount that overlap, with orders beside them, all find the one
// account and race on nothing (this test is meant to run with -race).
func TestEnsureAccountConcurrently(t *testing.T) {
	ca, err := acmetest.Start(acmetest.Options{})
	require.NoError(t, err)
	defer ca.Close()
	key, err := keys.Generate(rand.Reader, keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
	require.NoError(t, err)
	c, err := acmeclient.New(acmeclient.Config{DirectoryURL: ca.DirectoryURL, Key: key, HTTPClient: ca.Client()})
	require.NoError(t, err)
	first, err := c.EnsureAccount(t.Context(), acmeclient.AccountOptions{AgreeToTerms: true})
	require.NoError(t, err)
	require.True(t, first.Created)

	const callers = 8
	urls := make([]string, callers)
	errs := make([]error, 2*callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			a, err := c.EnsureAccount(t.Context(), acmeclient.AccountOptions{AgreeToTerms: true})
			urls[i], errs[i] = a.URL, err
		})
		wg.Go(func() {
			_, errs[callers+i] = c.CreateOrder(t.Context(), order.Status{}, order.CreateOrder{DNSNames: []string{fmt.Sprintf("c%d.example", i)}})
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "call %d", i)
	}
	for i, u := range urls {
		assert.Equal(t, first.URL, u, "caller %d finds the account the first call made", i)
	}
}
