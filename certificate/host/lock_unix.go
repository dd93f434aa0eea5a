//go:build unix

package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lock takes an exclusive lock on the store's directory, so that two
// processes never write it at once.
func (d *disk) lock() error {
	f, err := os.OpenFile(filepath.Join(d.dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("host: locking the store: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("host: the store %s is in use by another process", d.dir)
		}
		return fmt.Errorf("host: locking the store: %w", err)
	}
	d.lockFile = f
	return nil
}

func (d *disk) unlock() error {
	if d.lockFile == nil {
		return nil
	}
	err := d.lockFile.Close() // closing releases the lock
	d.lockFile = nil
	return err
}
