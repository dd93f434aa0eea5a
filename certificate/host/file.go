package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"k8s.io/utils/clock"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/certificate"
)

// FileStore is a Store in a directory on the local disk: every object is
// a JSON file, written to a temporary file, synced, renamed over the old
// one and the directory synced, before the write returns. A process
// killed at any moment leaves each object either as it was or as it was
// written, never half-written; a write that returned is on disk. It also
// keeps an ACME issuer's states (ACME), in the same way.
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
	acme *fileACME
}

var (
	_ Store         = (*FileStore)(nil)
	_ Watcher       = (*FileStore)(nil)
	_ Authoritative = (*FileStore)(nil)
)

// The directories of a FileStore, one per kind.
var kindDirs = map[Kind]string{
	KindCertificate: "certificates",
	KindSecret:      "secrets",
	KindRequest:     "requests",
}

const acmeDir = "acme"

// OpenFileStore opens the store in dir, making it when it does not
// exist, and reads what it holds. Creation timestamps come from clk (nil
// means the real clock). A file that cannot be decoded is an error that
// names it: nothing is dropped silently.
func OpenFileStore(dir string, clk clock.PassiveClock) (*FileStore, error) {
	if err := ownerOnly(dir, 0o700, true); err != nil {
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
	for _, sub := range append(sortedKindDirs(), acmeDir) {
		if err := ownerOnly(filepath.Join(dir, sub), 0o700, true); err != nil {
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
		for k, b := range files {
			e, err := loadEntry(kind, b)
			if err != nil {
				return nil, fmt.Errorf("host: %s: %w", filepath.Join(dir, sub, fileName(k)), err)
			}
			t.put(k, e)
		}
	}
	states, err := d.readAll(acmeDir)
	if err != nil {
		return nil, err
	}
	fa := &fileACME{disk: d, states: states}
	mem.acme = fa
	mem.disk = d
	ok = true
	return &FileStore{mem: mem, disk: d, acme: fa}, nil
}

// ownerOnly gives path the mode perm when it has another, making it first
// (a directory, when dir) if it does not exist.
func ownerOnly(path string, perm os.FileMode, dir bool) error {
	if dir {
		if err := os.MkdirAll(path, perm); err != nil {
			return err
		}
	}
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if info.Mode().Perm() != perm {
		return os.Chmod(path, perm)
	}
	return nil
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

// ACME returns the store's keeping of an ACME issuer's states
// (acmeclient.IssuerConfig.Store), in the same directory.
func (s *FileStore) ACME() acmeclient.Store { return s.acme }

// Close releases the directory's lock. The store must not be used after.
func (s *FileStore) Close() error { return s.disk.unlock() }

// disk writes a FileStore's files.
type disk struct {
	dir      string
	lockFile *os.File
}

// fileName is an object's file name: its namespace/name escaped, so any
// name is one file in one directory.
func fileName(k string) string { return url.PathEscape(k) + ".json" }

const tempPrefix = ".tmp-"

// write replaces the file of key k in the directory of kind atomically.
func (d *disk) write(kind Kind, k string, data []byte) error {
	return d.writeFile(kindDirs[kind], fileName(k), data)
}

func (d *disk) remove(kind Kind, k string) error {
	return d.removeFile(kindDirs[kind], fileName(k))
}

// writeFile writes data to a temporary file beside the target, syncs it,
// renames it over the target and syncs the directory: after a crash the
// target holds either its old or its new content.
func (d *disk) writeFile(sub, name string, data []byte) error {
	dir := filepath.Join(d.dir, sub)
	f, err := os.CreateTemp(dir, tempPrefix+"*")
	if err != nil {
		return fmt.Errorf("host: writing %s: %w", name, err)
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
		return fmt.Errorf("host: writing %s: %w", filepath.Join(dir, name), err)
	}
	return syncDir(dir)
}

func (d *disk) removeFile(sub, name string) error {
	dir := filepath.Join(d.dir, sub)
	if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("host: removing %s: %w", filepath.Join(dir, name), err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("host: syncing %s: %w", dir, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("host: syncing %s: %w", dir, err)
	}
	return nil
}

// readAll reads every object file of a directory by key, making each
// readable by its owner only (0600) first, and removing the temporary
// files a crash left behind.
func (d *disk) readAll(sub string) (map[string][]byte, error) {
	dir := filepath.Join(d.dir, sub)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("host: reading %s: %w", dir, err)
	}
	out := map[string][]byte{}
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, tempPrefix) {
			_ = os.Remove(filepath.Join(dir, name)) // an interrupted write: the old file stands
			continue
		}
		if e.IsDir() || !strings.HasSuffix(name, ".json") {
			continue
		}
		k, err := url.PathUnescape(strings.TrimSuffix(name, ".json"))
		if err != nil {
			return nil, fmt.Errorf("host: %s: not a name this store wrote: %w", filepath.Join(dir, name), err)
		}
		if err := ownerOnly(filepath.Join(dir, name), 0o600, false); err != nil {
			return nil, fmt.Errorf("host: making %s readable by its owner only: %w", filepath.Join(dir, name), err)
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("host: reading %s: %w", filepath.Join(dir, name), err)
		}
		out[k] = b
	}
	return out, nil
}

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

// fileACME keeps an ACME issuer's states as files, in memory for reads.
type fileACME struct {
	disk   *disk
	mu     sync.Mutex
	states map[string][]byte
}

var _ acmeclient.Store = (*fileACME)(nil)

func (f *fileACME) Get(_ context.Context, k string) (*acmeclient.State, error) {
	f.mu.Lock()
	b, ok := f.states[k]
	f.mu.Unlock()
	if !ok {
		return nil, nil
	}
	return decodeState(k, b)
}

func (f *fileACME) Put(_ context.Context, k string, s *acmeclient.State) error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("host: encoding the ACME state %s: %w", k, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.disk.writeFile(acmeDir, fileName(k), b); err != nil {
		return err
	}
	f.states[k] = b
	return nil
}

func (f *fileACME) Delete(_ context.Context, k string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.states[k]; !ok {
		return nil
	}
	if err := f.disk.removeFile(acmeDir, fileName(k)); err != nil {
		return err
	}
	delete(f.states, k)
	return nil
}

func (f *fileACME) List(_ context.Context) (map[string]*acmeclient.State, error) {
	f.mu.Lock()
	raw := make(map[string][]byte, len(f.states))
	for k, b := range f.states {
		raw[k] = b
	}
	f.mu.Unlock()
	out := make(map[string]*acmeclient.State, len(raw))
	for k, b := range raw {
		s, err := decodeState(k, b)
		if err != nil {
			return nil, err
		}
		out[k] = s
	}
	return out, nil
}

func decodeState(k string, b []byte) (*acmeclient.State, error) {
	var s acmeclient.State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("host: decoding the ACME state %s: %w", k, err)
	}
	return &s, nil
}
