package host_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/host/hosttest"
	"github.com/certlife/certlife/order"
)

var t0 = time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)

// Both provided stores keep the whole contract with the zero Config.
func TestStoreConformance(t *testing.T) {
	t.Run("MemoryStore", func(t *testing.T) {
		hosttest.TestStore(t, func(t *testing.T) host.Store {
			return host.NewMemoryStore(testingclock.NewFakeClock(t0))
		}, hosttest.Config{})
	})
	t.Run("FileStore", func(t *testing.T) {
		hosttest.TestStore(t, func(t *testing.T) host.Store {
			s, err := host.OpenFileStore(t.TempDir(), testingclock.NewFakeClock(t0))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}, hosttest.Config{})
	})
}

// The provided stores stamp creation times from their clock and name the
// field a nameless object lacks.
func TestStoreStampsCreationFromItsClock(t *testing.T) {
	ctx := context.Background()
	mem := host.NewMemoryStore(testingclock.NewFakeClock(t0))
	file, err := host.OpenFileStore(t.TempDir(), testingclock.NewFakeClock(t0))
	require.NoError(t, err)
	t.Cleanup(func() { file.Close() })
	for name, s := range map[string]host.Store{"MemoryStore": mem, "FileStore": file} {
		t.Run(name, func(t *testing.T) {
			c, err := s.Certificates().Create(ctx, newCert("default", "web", "web-tls"))
			require.NoError(t, err)
			assert.Equal(t, t0, c.CreationTimestamp.UTC())
			_, err = s.Certificates().Create(ctx, &certificate.Certificate{})
			assert.ErrorContains(t, err, "metadata.name")
		})
	}
}

// stores runs f on each provided store.
func stores(t *testing.T, f func(t *testing.T, s host.Store)) {
	t.Run("MemoryStore", func(t *testing.T) {
		f(t, host.NewMemoryStore(testingclock.NewFakeClock(t0)))
	})
	t.Run("FileStore", func(t *testing.T) {
		s, err := host.OpenFileStore(t.TempDir(), testingclock.NewFakeClock(t0))
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		f(t, s)
	})
}

func newCert(ns, name, secret string) *certificate.Certificate {
	return &certificate.Certificate{
		ObjectMeta: certificate.ObjectMeta{Namespace: ns, Name: name},
		Spec:       certificate.Spec{SecretName: secret, DNSNames: []string{name + ".example"}, IssuerRef: certificate.IssuerRef{Name: "ca"}},
	}
}

func names[T host.Object](objs []T) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.Meta().Name)
	}
	return out
}

func TestFileStoreKeepsEverythingAcrossReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := host.OpenFileStore(dir, testingclock.NewFakeClock(t0))
	require.NoError(t, err)
	c, err := s.Certificates().Create(ctx, newCert("default", "web", "web-tls"))
	require.NoError(t, err)
	sec := &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Namespace: "default", Name: "web-tls", OwnerUID: c.UID},
		Data: map[string][]byte{"tls.key": []byte("-----BEGIN PRIVATE KEY-----\n...")}}
	_, err = s.Secrets().Create(ctx, sec)
	require.NoError(t, err)
	// An ACME issuer's states beside the objects, as hosts keep them.
	acme, err := acmeclient.OpenFileStore(filepath.Join(dir, "acme"))
	require.NoError(t, err)
	st := &acmeclient.State{Request: acmeclient.RequestRef{Namespace: "default", Name: "web-1", UID: "u1"}, Order: order.Order{Name: "web-1-abcd", Namespace: "default"}}
	require.NoError(t, acme.Put(ctx, "web-1-abcd", st))
	require.NoError(t, acme.Close())

	_, err = host.OpenFileStore(dir, nil)
	assert.ErrorContains(t, err, "in use by another process", "one process at a time")
	require.NoError(t, s.Close())

	// A crash mid-write leaves a temporary file beside the old one.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "secrets", ".tmp-123"), []byte("{half"), 0o600))

	s2, err := host.OpenFileStore(dir, nil)
	require.NoError(t, err)
	defer s2.Close()
	got, err := s2.Certificates().Get(ctx, "default", "web")
	require.NoError(t, err)
	assert.Equal(t, c, got)
	gotSec, err := s2.Secrets().Get(ctx, "default", "web-tls")
	require.NoError(t, err)
	assert.Equal(t, sec.Data, gotSec.Data)
	owned, err := s2.Secrets().List(ctx, host.ListOptions{OwnerUID: c.UID})
	require.NoError(t, err)
	assert.Len(t, owned, 1, "indexes are rebuilt on open")
	acme2, err := acmeclient.OpenFileStore(filepath.Join(dir, "acme"))
	require.NoError(t, err)
	defer acme2.Close()
	gotState, err := acme2.Get(ctx, st.Request, "web-1-abcd")
	require.NoError(t, err)
	assert.Equal(t, st, gotState, "the ACME state, beside a reopened store")
	_, err = os.Stat(filepath.Join(dir, "secrets", ".tmp-123"))
	assert.ErrorIs(t, err, os.ErrNotExist, "the interrupted write is cleared")

	// The same object updated after the reopen gets a version it never had.
	c2, err := s2.Certificates().Update(ctx, got)
	require.NoError(t, err)
	assert.NotEqual(t, c.ResourceVersion, c2.ResourceVersion)

	// Private keys are readable by their owner only.
	info, err := os.Stat(filepath.Join(dir, "secrets"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), info.Mode().Perm())
	ents, err := os.ReadDir(filepath.Join(dir, "secrets"))
	require.NoError(t, err)
	for _, e := range ents {
		fi, err := e.Info()
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), e.Name())
	}
}

// A store directory made by hand, or files restored from a backup, with
// modes that let others read them: OpenFileStore makes the directories
// 0700 and every file 0600 before it reads them, and a file it writes
// again stays 0600.
func TestFileStoreMakesWhatItFindsReadableByItsOwnerOnly(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "store")
	require.NoError(t, os.Mkdir(dir, 0o755))
	require.NoError(t, os.Chmod(dir, 0o755)) // whatever the umask
	s, err := host.OpenFileStore(dir, nil)
	require.NoError(t, err)
	_, err = s.Secrets().Create(ctx, &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Namespace: "default", Name: "web-tls"},
		Data: map[string][]byte{"tls.key": []byte("a private key")}})
	require.NoError(t, err)
	require.NoError(t, s.Close())

	// Restored from a backup with the modes of a umask 022.
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.Chmod(path, 0o755)
		}
		return os.Chmod(path, 0o644)
	}))

	s, err = host.OpenFileStore(dir, nil)
	require.NoError(t, err)
	defer s.Close()
	check := func(when string) {
		t.Helper()
		require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			want := os.FileMode(0o600)
			if d.IsDir() {
				want = 0o700
			}
			if d.Name() != ".lock" { // it holds nothing
				assert.Equal(t, want, info.Mode().Perm(), "%s: %s", when, path)
			}
			return nil
		}))
	}
	check("after opening")
	sec, err := s.Secrets().Get(ctx, "default", "web-tls")
	require.NoError(t, err)
	sec.Data["tls.key"] = []byte("another private key")
	_, err = s.Secrets().Update(ctx, sec)
	require.NoError(t, err)
	check("after writing")
}

func TestFileStoreRefusesAFileItCannotRead(t *testing.T) {
	dir := t.TempDir()
	s, err := host.OpenFileStore(dir, nil)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "certificates", "default%2Fweb.json"), []byte("{not json"), 0o600))
	_, err = host.OpenFileStore(dir, nil)
	assert.ErrorContains(t, err, "default%2Fweb.json")
}
