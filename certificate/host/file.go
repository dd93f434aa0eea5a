package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/utils/clock"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/internal/durable"
)

// FileStore is a Store in a directory on the local disk: every object is
// a JSON file, written to a temporary file, synced, renamed over the old
// one and the directory synced, before the write returns. A process
// killed at any moment leaves each object either as it was or as it was
// written, never half-written; a write that returned is on disk. An ACME
// issuer's states are kept apart, by acmeclient.FileStore: a host that
// keeps both in one directory opens that in its subdirectory "acme"
// (acmeclient.OpenFileStore(filepath.Join(dir, "acme"))), where the
// FileStore of earlier versions kept them.
//
// Reads come from memory (the directory is read once, by OpenFileStore); the
// store reports its writes (Watcher) and its reads show them
// (Authoritative). One process uses a directory at a time: OpenFileStore
// takes a lock on it (on Unix), and Close releases it.
//
// Secrets hold private keys: the directory and its subdirectories are
// made readable by their owner only (0700) and every file 0600 — when
// OpenFileStore finds them with other modes too (a directory made by
// hand, files restored from a backup), before it reads them.
//
// Why files and not an embedded database: a certificate host writes a few
// objects per issuance, hours or months apart, and reads them from
// memory; one small file per object, replaced atomically, needs nothing
// beyond the standard library, can be read and repaired with a text
// editor, and makes the crash guarantee easy to see.
type FileStore struct {
	mem  *MemoryStore
	disk *disk
}

var (
	_ Store         = (*FileStore)(nil)
	_ Watcher       = (*FileStore)(nil)
	_ Authoritative = (*FileStore)(nil)
	_ Leaser        = (*FileStore)(nil)
)

// The directories of a FileStore, one per kind.
var kindDirs = map[Kind]string{
	KindCertificate: "certificates",
	KindSecret:      "secrets",
	KindRequest:     "requests",
}

// OpenFileStore opens the store in dir, making it when it does not
// exist, and reads what it holds. Creation timestamps come from clk (nil
// means the real clock). A file that cannot be decoded is an error that
// names it: nothing is dropped silently; so is a file that holds an
// object whose name or namespace is not valid (certificate.
// ValidateObjectName, certificate.ValidateNamespace), or another object
// than its name says.
func OpenFileStore(dir string, clk clock.PassiveClock) (*FileStore, error) {
	if err := durable.MkdirOwnerOnly(dir); err != nil {
		return nil, fmt.Errorf("host: making the store directory: %w", err)
	}
	d := &disk{dir: dir}
	if err := d.lock(); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			d.unlock()
		}
	}()
	for _, sub := range sortedKindDirs() {
		if err := durable.MkdirOwnerOnly(filepath.Join(dir, sub)); err != nil {
			return nil, fmt.Errorf("host: making %s: %w", filepath.Join(dir, sub), err)
		}
	}
	epoch, err := d.nextEpoch()
	if err != nil {
		return nil, err
	}
	mem := NewMemoryStore(clk)
	mem.prefix = strconv.FormatInt(epoch, 10) + "."
	for kind, sub := range kindDirs {
		files, err := d.readAll(sub)
		if err != nil {
			return nil, err
		}
		t := mem.tables[kind]
		for f, b := range files {
			path := filepath.Join(dir, sub, fileName(f))
			e, err := loadEntry(kind, b)
			if err != nil {
				return nil, fmt.Errorf("host: %s: %w", path, err)
			}
			k := objKey{e.meta.Namespace, e.meta.Name}
			if err := checkNames(kind, k.namespace, k.name); err != nil {
				return nil, fmt.Errorf("%w (in %s: rename the object or remove the file)", err, path)
			}
			if k.String() != f {
				return nil, fmt.Errorf("host: %s holds %s %s, whose file is %s", path, kind, k, fileName(k.String()))
			}
			t.put(k, e)
		}
	}
	mem.disk = d
	ok = true
	return &FileStore{mem: mem, disk: d}, nil
}

func sortedKindDirs() []string {
	return []string{kindDirs[KindCertificate], kindDirs[KindSecret], kindDirs[KindRequest]}
}

// loadEntry decodes a stored object into its table entry.
func loadEntry(kind Kind, b []byte) (stored, error) {
	switch kind {
	case KindCertificate:
		obj, err := decode[*certificate.Certificate](kind, b)
		if err != nil {
			return stored{}, err
		}
		return entryOf(kind, obj)
	case KindSecret:
		obj, err := decode[*certificate.Secret](kind, b)
		if err != nil {
			return stored{}, err
		}
		return entryOf(kind, obj)
	default:
		obj, err := decode[*certificate.CertificateRequest](kind, b)
		if err != nil {
			return stored{}, err
		}
		return entryOf(kind, obj)
	}
}

// Certificates implements Store.
func (s *FileStore) Certificates() Collection[*certificate.Certificate] { return s.mem.Certificates() }

// Secrets implements Store.
func (s *FileStore) Secrets() Collection[*certificate.Secret] { return s.mem.Secrets() }

// Requests implements Store.
func (s *FileStore) Requests() Collection[*certificate.CertificateRequest] { return s.mem.Requests() }

// Watch implements Watcher.
func (s *FileStore) Watch(f func(Change)) { s.mem.Watch(f) }

// Authoritative implements Authoritative.
func (s *FileStore) Authoritative() bool { return true }

// Lease implements Leaser, in memory, as MemoryStore's does: one process
// uses a directory at a time, so its leases need not outlive it.
func (s *FileStore) Lease(ctx context.Context, key, holder string, now, until time.Time) (Lease, error) {
	return s.mem.Lease(ctx, key, holder, now, until)
}

// Release implements Leaser.
func (s *FileStore) Release(ctx context.Context, key, holder string) error {
	return s.mem.Release(ctx, key, holder)
}

// Close releases the directory's lock. The store must not be used after.
func (s *FileStore) Close() error { return s.disk.unlock() }

// disk writes a FileStore's files (package internal/durable).
type disk struct {
	dir    string
	locked *durable.Lock
}

// fileName is an object's file name: its namespace/name escaped, so any
// name is one file in one directory. As a valid namespace and name hold
// no '/' (certificate.ValidateNamespace, certificate.ValidateObjectName),
// and the store holds only objects whose names are valid, no two objects
// share a file.
func fileName(k string) string { return durable.FileName(k) }

// write replaces the file of key k in the directory of kind atomically.
func (d *disk) write(kind Kind, k objKey, data []byte) error {
	return d.writeFile(kindDirs[kind], fileName(k.String()), data)
}

func (d *disk) remove(kind Kind, k objKey) error {
	if err := durable.RemoveFile(filepath.Join(d.dir, kindDirs[kind]), fileName(k.String())); err != nil {
		return fmt.Errorf("host: %w", err)
	}
	return nil
}

// writeFile replaces the file sub/name atomically (durable.WriteFile):
// after a crash it holds either its old or its new content.
func (d *disk) writeFile(sub, name string, data []byte) error {
	if err := durable.WriteFile(filepath.Join(d.dir, sub), name, data); err != nil {
		return fmt.Errorf("host: %w", err)
	}
	return nil
}

// readAll reads every object file of a directory by key, making each
// readable by its owner only (0600) first, and removing the temporary
// files a crash left behind.
func (d *disk) readAll(sub string) (map[string][]byte, error) {
	files, err := durable.ReadDir(filepath.Join(d.dir, sub))
	if err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	return files, nil
}

// lock takes an exclusive lock on the store's directory, so that two
// processes never write it at once (on Unix).
func (d *disk) lock() error {
	l, err := durable.LockDir(d.dir)
	if err != nil {
		if errors.Is(err, durable.ErrLocked) {
			return fmt.Errorf("host: the store %s is in use by another process", d.dir)
		}
		return fmt.Errorf("host: %w", err)
	}
	d.locked = l
	return nil
}

func (d *disk) unlock() error { return d.locked.Unlock() }

// nextEpoch counts the store's openings, durably: resource versions and
// UIDs start with it, so a version is never given twice, even for an
// object deleted before a crash and made again after.
func (d *disk) nextEpoch() (int64, error) {
	var n int64
	b, err := os.ReadFile(filepath.Join(d.dir, "epoch"))
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return 0, fmt.Errorf("host: reading the store's epoch: %w", err)
	default:
		if n, err = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err != nil || n < 0 {
			return 0, fmt.Errorf("host: %s: %q is not an epoch", filepath.Join(d.dir, "epoch"), b)
		}
	}
	n++
	if err := d.writeFile("", "epoch", []byte(strconv.FormatInt(n, 10)+"\n")); err != nil {
		return 0, err
	}
	return n, nil
}
