package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"github.com/certlife/certlife/certificate/host"
)

// Poll reads the change log now, as the poller does every PollInterval.
func (s *Store) Poll(ctx context.Context) error { return s.poll(ctx) }

// Prune prunes the change log now, however recently it was.
func (s *Store) Prune(ctx context.Context) error {
	s.mu.Lock()
	s.lastPrune = time.Time{}
	s.mu.Unlock()
	return s.prune(ctx)
}

// PollerStopped reports whether the poller's goroutine has returned.
func (s *Store) PollerStopped() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// ListQuery is the query List runs for opts, and its arguments.
func ListQuery[T host.Object](c host.Collection[T], opts host.ListOptions) (string, []any) {
	return c.(collection[T]).listQuery(opts)
}

// DB is the store's database.
func DB(s *Store) *sql.DB { return s.db }
