// Package durable keeps small files so that a crash at any moment leaves
// each either as it was or as it was last written, never half-written,
// and a write that returned is on disk: each file is written to a
// temporary file beside it, synced, renamed over it, and the directory
// synced. Directories are made readable by their owner only (0700) and
// files 0600, since what they hold may be private keys. The stores of
// packages certificate/host and acmeclient keep their files with it.
package durable

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// TempPrefix begins the name of a temporary file a write makes beside its
// target; ReadDir removes those a crash left behind.
const TempPrefix = ".tmp-"

// FileName is the file name of the object with key k: k escaped, so any
// key is one file in one directory, and ".json".
func FileName(k string) string { return url.PathEscape(k) + ".json" }

// MkdirOwnerOnly makes dir and its parents when they do not exist, and
// gives dir the mode 0700 when it has another.
func MkdirOwnerOnly(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return ownerOnly(dir, 0o700)
}

// ownerOnly gives path the mode perm when it has another.
func ownerOnly(path string, perm os.FileMode) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if info.Mode().Perm() != perm {
		return os.Chmod(path, perm)
	}
	return nil
}

// WriteFile replaces dir/name with data atomically: it writes a temporary
// file (0600) beside it, syncs it, renames it over dir/name and syncs
// dir. After a crash dir/name holds either its old or its new content.
func WriteFile(dir, name string, data []byte) error {
	f, err := os.CreateTemp(dir, TempPrefix+"*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Join(dir, name), err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", filepath.Join(dir, name), err)
	}
	return syncDir(dir)
}

// RemoveFile removes dir/name, which is no error when it does not exist,
// and syncs dir.
func RemoveFile(dir, name string) error {
	if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing %s: %w", filepath.Join(dir, name), err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}

// ReadDir reads every object file of dir (named by FileName) by key,
// making each readable by its owner only (0600) first, and removes the
// temporary files a crash left behind; other files and directories are
// passed over.
func ReadDir(dir string) (map[string][]byte, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", dir, err)
	}
	out := map[string][]byte{}
	for _, e := range ents {
		name := e.Name()
		path := filepath.Join(dir, name)
		if strings.HasPrefix(name, TempPrefix) {
			_ = os.Remove(path) // an interrupted write: the old file stands
			continue
		}
		if e.IsDir() || !strings.HasSuffix(name, ".json") {
			continue
		}
		k, err := url.PathUnescape(strings.TrimSuffix(name, ".json"))
		if err != nil {
			return nil, fmt.Errorf("%s: not a name this store wrote: %w", path, err)
		}
		if err := ownerOnly(path, 0o600); err != nil {
			return nil, fmt.Errorf("making %s readable by its owner only: %w", path, err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		out[k] = b
	}
	return out, nil
}

// ErrLocked: the directory is locked by another process or another
// opening (LockDir).
var ErrLocked = errors.New("in use by another process")

// Lock is an exclusive lock on a directory (see LockDir).
type Lock struct{ f *os.File }

// Unlock releases the lock; a nil Lock, or one released already, is no
// error.
func (l *Lock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing releases the lock
	l.f = nil
	return err
}
