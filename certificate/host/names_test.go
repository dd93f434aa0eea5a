package host_test

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
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

// Every store refuses, with an error that names the field and quotes the
// value, an object whose name or namespace no object can have, on every
// call; nothing is written, and a FileStore's files stay in its
// directory.
func TestStoresRefuseInvalidNames(t *testing.T) {
	stores(t, func(t *testing.T, store host.Store) {
		ctx := t.Context()
		secrets := store.Secrets()
		for _, n := range []struct{ namespace, name, want string }{
			{"", "team-b/db-tls", `metadata.name: certificate: "team-b/db-tls" is not a valid object name: it has the character '/'`},
			{"default", "../../escape", `metadata.name: certificate: "../../escape" is not a valid object name: it starts with '.'`},
			{"..", "x", `metadata.namespace: certificate: ".." is not a valid namespace: it has the character '.'`},
			{"Default", "web", `metadata.namespace: certificate: "Default" is not a valid namespace: it has the upper-case letter 'D'`},
		} {
			sec := &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Namespace: n.namespace, Name: n.name}}
			_, err := secrets.Create(ctx, sec)
			assert.ErrorContains(t, err, n.want, "Create")
			assert.ErrorIs(t, err, certificate.ErrInvalidName)
			_, err = secrets.Update(ctx, sec)
			assert.ErrorContains(t, err, n.want, "Update")
			_, err = secrets.Get(ctx, n.namespace, n.name)
			assert.ErrorContains(t, err, n.want, "Get")
			assert.NotErrorIs(t, err, host.ErrNotFound)
			assert.ErrorContains(t, secrets.Delete(ctx, n.namespace, n.name), n.want, "Delete")
		}
		_, err := secrets.List(ctx, host.ListOptions{Namespace: "a/b"})
		assert.ErrorIs(t, err, certificate.ErrInvalidName)
		all, err := secrets.List(ctx, host.ListOptions{})
		require.NoError(t, err)
		assert.Empty(t, all)
	})
}

// A FileStore refuses to open a directory holding a file whose object has
// a name no object can have, or is another object than its file's name
// says, naming the file: a store never holds two objects under one key.
func TestFileStoreRefusesFilesWithInvalidNames(t *testing.T) {
	for name, tc := range map[string]struct {
		file, namespace, objName, want string
	}{
		"an object whose name holds a '/'": {
			file: "team-b%2Fdb-tls.json", namespace: "", objName: "team-b/db-tls",
			want: `metadata.name: certificate: "team-b/db-tls" is not a valid object name`,
		},
		"an object in another file than its name's": {
			file: "other.json", namespace: "default", objName: "web",
			want: "other.json holds Secret default/web, whose file is default%2Fweb.json",
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := host.OpenFileStore(dir, nil)
			require.NoError(t, err)
			require.NoError(t, s.Close())
			obj := fmt.Sprintf(`{"metadata":{"namespace":%q,"name":%q,"resourceVersion":"1.1"}}`, tc.namespace, tc.objName)
			path := filepath.Join(dir, "secrets", tc.file)
			require.NoError(t, os.WriteFile(path, []byte(obj), 0o600))
			_, err = host.OpenFileStore(dir, nil)
			assert.ErrorContains(t, err, tc.want)
			assert.ErrorContains(t, err, tc.file)
		})
	}
}
