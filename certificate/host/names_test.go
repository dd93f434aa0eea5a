package host_test

import (
	"bytes"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/host/hosttest"
	"github.com/certlife/certlife/certificate/localca"
	"github.com/certlife/certlife/keys"
)

// A certificate cannot reach into another namespace through its
// secretName: "team-b/db-tls" in the namespace "" is not team-b's secret
// db-tls, nor any secret. The certificate says its spec is invalid, and
// team-b's secret, key pair and owner stay as they were.
func TestSecretNameCannotAliasAnotherNamespace(t *testing.T) {
	stores(t, func(t *testing.T, store host.Store) {
		ctx := t.Context()
		clk := testingclock.NewFakeClock(t0)
		ca, err := localca.NewRoot(rand.Reader, "Test CA", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, t0, 10*365*24*time.Hour)
		require.NoError(t, err)
		loop, err := host.New(host.Config{
			Store: store, Clock: clk,
			Issuers: map[certificate.IssuerRef]certificate.Issuer{{Name: "ca"}: ca.Issuer(nil)},
		})
		require.NoError(t, err)
		victim, err := store.Certificates().Create(ctx, newCert("team-b", "db", "db-tls"))
		require.NoError(t, err)
		settle := func() {
			t.Helper()
			_, err := hosttest.Settle(ctx, loop, 1000)
			require.NoError(t, err)
		}
		settle()
		before, err := store.Secrets().Get(ctx, "team-b", "db-tls")
		require.NoError(t, err, "team-b's certificate is issued")
		require.Equal(t, victim.UID, before.OwnerUID)

		hostile, err := store.Certificates().Create(ctx, newCert("", "attacker", "team-b/db-tls"))
		require.NoError(t, err, "the certificate's own names are valid")
		settle()

		after, err := store.Secrets().Get(ctx, "team-b", "db-tls")
		require.NoError(t, err)
		assert.Equal(t, before.ResourceVersion, after.ResourceVersion, "team-b's secret is not written")
		assert.Equal(t, victim.UID, after.OwnerUID)
		assert.True(t, bytes.Equal(before.Data[keys.SecretPrivateKey], after.Data[keys.SecretPrivateKey]), "team-b's key is its own")
		all, err := store.Secrets().List(ctx, host.ListOptions{})
		require.NoError(t, err)
		for _, s := range all {
			assert.NotEqual(t, hostile.UID, s.OwnerUID, "the hostile certificate owns nothing: %s/%s", s.Namespace, s.Name)
		}

		got, err := store.Certificates().Get(ctx, "", "attacker")
		require.NoError(t, err)
		ready := got.Status.Condition(certificate.ConditionReady)
		require.NotNil(t, ready, "the certificate says why nothing happens")
		assert.Equal(t, certificate.ReasonInvalidSpec, ready.Reason)
		assert.Contains(t, ready.Message, `spec.secretName: "team-b/db-tls" is not a valid object name`)
		assert.False(t, strings.Contains(ready.Message, "BEGIN"))
	})
}
