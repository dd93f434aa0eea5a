//go:build unix

package durable

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// LockDir takes an exclusive lock on dir (a file .lock in it), so that
// two processes, or two openings in one process, never write it at once.
// Where there is no flock it takes none.
func LockDir(dir string) (*Lock, error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s is %w", dir, ErrLocked)
		}
		return nil, fmt.Errorf("locking %s: %w", dir, err)
	}
	return &Lock{f: f}, nil
}
