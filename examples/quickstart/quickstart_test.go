package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"github.com/certlife/certlife/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The quickstart runs end to end; the key it writes is the certificate's,
// readable by its owner only even over a tls.key that others could read,
// and the certificate chains to Pebble's root.
func TestQuickstart(t *testing.T) {
	var out bytes.Buffer
	dir := t.TempDir()
	stale := filepath.Join(dir, "tls.key")
	require.NoError(t, os.WriteFile(stale, []byte("an older run's key"), 0o644))
	require.NoError(t, os.Chmod(stale, 0o644)) // whatever the umask
	res, err := Run(context.Background(), Options{Out: dir, W: &out})
	require.NoError(t, err, "%s", out.String())
	crt, err := os.ReadFile(res.CertFile)
	require.NoError(t, err)
	key, err := os.ReadFile(res.KeyFile)
	require.NoError(t, err)
	p, err := keys.ParseSecretData(map[string][]byte{keys.SecretCertificate: crt, keys.SecretPrivateKey: key})
	require.NoError(t, err, "tls.key and tls.crt")
	require.True(t, p.KeyMatches, "tls.key is not tls.crt's key")
	rootPEM, err := os.ReadFile(res.RootFile)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(rootPEM), "no root in pebble-root.pem")
	inter := x509.NewCertPool()
	rest := crt
	for first := true; ; first = false {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if !first {
			c, _ := x509.ParseCertificate(b.Bytes)
			inter.AddCert(c)
		}
	}
	_, err = p.Leaf.Verify(x509.VerifyOptions{DNSName: Name, Roots: roots, Intermediates: inter, CurrentTime: res.Now})
	require.NoError(t, err, "tls.crt does not chain to Pebble's root")
	require.Equal(t, stale, res.KeyFile)
	info, err := os.Stat(res.KeyFile)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "tls.key's permissions: readable by others?")
	text := out.String()
	for _, want := range []string{"trigger        DoesNotExist", "trigger        Renewing", "key rotated: true", "trigger        Backoff",
		"RenewalDeferred", "ManualTrigger", "revision 5"} {
		assert.Contains(t, text, want, "the timeline lacks it")
	}
	require.Equal(t, 5, res.Revisions, "revisions")
	require.GreaterOrEqual(t, res.Failures, 2, "failures")
}
