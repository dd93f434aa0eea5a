package acmeclient

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/certlife/certlife/internal/durable"
)

// FileStore is a Store in a directory on the local disk, for a host that
// keeps its issuer's states across restarts without a database: each
// state is one JSON file named by its key, written to a temporary file,
// synced, renamed over the old one and the directory synced before Put
// returns, so a process killed at any moment leaves each state either as
// it was or as it was written, never half-written. The directory is
// readable by its owner only (0700) and every file 0600.
//
// Reads come from memory: OpenFileStore reads the directory once. One
// process uses a directory at a time: OpenFileStore takes a lock on it
// (on Unix), and Close releases it. Safe for concurrent use.
//
// A host.FileStore of earlier versions kept its ACME states in its
// subdirectory "acme", in this layout: OpenFileStore(filepath.Join(dir,
// "acme")) finds them.
type FileStore struct {
	mem  MemoryStore
	dir  string
	lock *durable.Lock
}

var _ Store = (*FileStore)(nil)

// OpenFileStore opens the store in dir, making it (and its parents) when
// it does not exist, and reads every state it holds. A file that cannot
// be decoded is an error that names it: nothing is dropped silently. It
// gives the directory and its files owner-only modes when it finds them
// with others (a directory made by hand, files restored from a backup),
// and removes the temporary files of a write a crash interrupted.
func OpenFileStore(dir string) (*FileStore, error) {
	if err := durable.MkdirOwnerOnly(dir); err != nil {
		return nil, fmt.Errorf("acmeclient: making the state directory: %w", err)
	}
	lock, err := durable.LockDir(dir)
	if err != nil {
		return nil, fmt.Errorf("acmeclient: opening the state directory: %w", err)
	}
	files, err := durable.ReadDir(dir)
	if err != nil {
		lock.Unlock()
		return nil, fmt.Errorf("acmeclient: %w", err)
	}
	for k, b := range files {
		if _, err := decodeState(k, b); err != nil {
			lock.Unlock()
			return nil, fmt.Errorf("acmeclient: %s: %w", filepath.Join(dir, durable.FileName(k)), err)
		}
	}
	return &FileStore{mem: MemoryStore{states: files}, dir: dir, lock: lock}, nil
}

// Close releases the directory's lock. The store must not be used after.
func (f *FileStore) Close() error { return f.lock.Unlock() }

// Get implements Store.
func (f *FileStore) Get(ctx context.Context, req RequestRef, key string) (*State, error) {
	return f.mem.Get(ctx, req, key)
}

// Put implements Store: the state is on disk when it returns.
func (f *FileStore) Put(_ context.Context, key string, s *State) error {
	b, err := encodeState(key, s)
	if err != nil {
		return err
	}
	return f.mem.put(key, b, func() error {
		if err := durable.WriteFile(f.dir, durable.FileName(key), b); err != nil {
			return fmt.Errorf("acmeclient: %w", err)
		}
		return nil
	})
}

// Delete implements Store: the state is gone from disk when it returns.
func (f *FileStore) Delete(_ context.Context, _ RequestRef, key string) error {
	return f.mem.delete(key, func() error {
		if err := durable.RemoveFile(f.dir, durable.FileName(key)); err != nil {
			return fmt.Errorf("acmeclient: %w", err)
		}
		return nil
	})
}

// List implements Store.
func (f *FileStore) List(ctx context.Context) (map[string]*State, error) { return f.mem.List(ctx) }
