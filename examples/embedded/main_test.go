package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/keys"
)

// The program runs to the end: stopped mid-order, the host resumes the
// same ACME order, and renews. What it leaves in its directory is then
// read back through the public store: every certificate renewed, each
// secret's key its certificate's, the local CA's certificates chaining to
// the CA it made, and every file readable by its owner only.
func TestEmbedded(t *testing.T) {
	parent := t.TempDir()
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), parent, &out), "%s", out.String())
	text := out.String()
	assert.Contains(t, text, "in flight; starting again")
	assert.Contains(t, text, "the same order finished: no new order")
	assert.Equal(t, 1, strings.Count(text, "creating request web-1 "), "web-1 made once:\n%s", text)
	issuedAt := func(request string) string {
		for line := range strings.Lines(text) {
			if f := strings.Fields(line); len(f) > 2 && f[2] == request && strings.Contains(line, "certificate issued") {
				return f[0] + " " + f[1]
			}
		}
		return "never"
	}
	assert.Equal(t, issuedAt("internal-ca-1"), issuedAt("api-1"), "the CA's first certificates are issued as soon as it is:\n%s", text)

	dirs, err := os.ReadDir(parent)
	require.NoError(t, err)
	require.Len(t, dirs, 1, "the store's directory")
	dir := filepath.Join(parent, dirs[0].Name())
	store, err := host.OpenFileStore(dir, nil)
	require.NoError(t, err, "the store is free again once the program is done")
	defer store.Close()
	ctx := context.Background()

	caSecret, err := store.Secrets().Get(ctx, ns, "internal-ca")
	require.NoError(t, err, "the CA's key pair is kept in the store")
	ca, err := keys.ParseSecretData(caSecret.Data)
	require.NoError(t, err)
	require.True(t, ca.Leaf.IsCA && ca.KeyMatches, "internal-ca holds a CA and its key")
	roots := x509.NewCertPool()
	roots.AddCert(ca.Leaf)

	for name, wantRevision := range map[string]int{"api": 4, "db": 4, "web": 2} {
		c, err := store.Certificates().Get(ctx, ns, name)
		require.NoError(t, err)
		require.NotNil(t, c.Status.Revision, name)
		assert.Equal(t, wantRevision, *c.Status.Revision, "%s: renewed every 20 days (api, db) or at 60 (web)", name)
		sec, err := store.Secrets().Get(ctx, ns, name)
		require.NoError(t, err)
		p, err := keys.ParseSecretData(sec.Data)
		require.NoError(t, err, name)
		assert.True(t, p.KeyMatches, "%s: the secret's key is its certificate's", name)
		if name != "web" {
			_, err = p.Leaf.Verify(x509.VerifyOptions{DNSName: name + ".example", Roots: roots, CurrentTime: p.Leaf.NotBefore.Add(time.Minute)})
			assert.NoError(t, err, "%s chains to the CA the program made", name)
		}
	}

	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		info, err := d.Info()
		require.NoError(t, err)
		assert.Zero(t, info.Mode().Perm()&0o077, "%s: others may read it (%v)", path, info.Mode().Perm())
		return nil
	})
	require.NoError(t, err)
}
