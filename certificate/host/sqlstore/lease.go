package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/certlife/certlife/certificate/host"
)

// Lease implements host.Leaser: one statement takes the lease when it is
// free, expired at now or holder's own, so two processes asking at once
// cannot both get it. Deadlines are kept to the nanosecond; the Until
// returned is in UTC.
func (s *Store) Lease(ctx context.Context, key, holder string, now, until time.Time) (host.Lease, error) {
	switch {
	case key == "":
		return host.Lease{}, errors.New("sqlstore: a lease needs a key")
	case holder == "":
		return host.Lease{}, fmt.Errorf("sqlstore: lease %q: a lease needs a holder", key)
	case !until.After(now):
		return host.Lease{}, fmt.Errorf("sqlstore: lease %q: until (%v) must be after now (%v)", key, until, now)
	}
	got := host.Lease{Key: key}
	var ns int64
	for attempt := 0; ; attempt++ {
		err := s.db.QueryRowContext(ctx, s.rebind(`INSERT INTO certlife_leases (lease_key, holder, until_ns) VALUES (?, ?, ?)
			ON CONFLICT (lease_key) DO UPDATE SET holder = excluded.holder, until_ns = excluded.until_ns
			WHERE certlife_leases.holder = excluded.holder OR certlife_leases.until_ns <= ?
			RETURNING holder, until_ns`), key, holder, until.UnixNano(), now.UnixNano()).Scan(&got.Holder, &ns)
		if errors.Is(err, sql.ErrNoRows) {
			// Another holds it: say who, and until when.
			err = s.db.QueryRowContext(ctx, s.rebind(`SELECT holder, until_ns FROM certlife_leases WHERE lease_key = ?`), key).Scan(&got.Holder, &ns)
			if errors.Is(err, sql.ErrNoRows) && attempt < 3 {
				continue // released since: ask again
			}
		}
		if err != nil {
			return host.Lease{}, fmt.Errorf("sqlstore: lease %q: %w", key, err)
		}
		got.Until = time.Unix(0, ns).UTC()
		return got, nil
	}
}

// Release implements host.Leaser.
func (s *Store) Release(ctx context.Context, key, holder string) error {
	if _, err := s.db.ExecContext(ctx, s.rebind(`DELETE FROM certlife_leases WHERE lease_key = ? AND holder = ?`), key, holder); err != nil {
		return fmt.Errorf("sqlstore: releasing lease %q: %w", key, err)
	}
	return nil
}
