//go:build !unix

package host

// lock does nothing where there is no flock: one process must use a
// store's directory at a time, as the FileStore documentation says.
func (d *disk) lock() error { return nil }

func (d *disk) unlock() error { return nil }
