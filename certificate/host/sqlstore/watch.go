package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
)

// pollPage is how many change log entries a poll reads at a time.
const pollPage = 1000

// Watch implements host.Watcher: f is called after each write, once, in
// the order of the versions, never under the store's locks — at once for
// this Store's own writes, within Options.PollInterval for those of other
// processes. A Change carries the object's namespace, name, UID, owner
// UID and resource version (for a deletion, the deletion's version).
func (s *Store) Watch(f func(host.Change)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watchers = append(slices.Clip(s.watchers), f)
}

// write runs f in a write transaction that holds the version counter
// (which serialises it with every other write of every process) and has
// allocated version v for it; f writes the object and returns the
// change, which goes into the change log in the same transaction, and is
// reported once the transaction commits.
func (s *Store) write(ctx context.Context, f func(t *tx, v int64) (host.Change, error)) error {
	s.wmu.Lock()
	var ch host.Change
	var v int64
	err := s.inTx(ctx, 0, func(t *tx) error {
		if err := t.queryRow("UPDATE certlife_counter SET version = version + 1 WHERE id = 1 RETURNING version").Scan(&v); err != nil {
			return fmt.Errorf("taking a version: %w", err)
		}
		var err error
		if ch, err = f(t, v); err != nil {
			return err
		}
		deleted := 0
		if ch.Deleted {
			deleted = 1
		}
		_, err = t.exec("INSERT INTO certlife_changes (version, kind, namespace, name, uid, owner_uid, deleted, at_ns) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
			v, string(ch.Kind), ch.Namespace, ch.Name, ch.Meta.UID, ch.Meta.OwnerUID, deleted, s.clock.Now().UnixNano())
		if err != nil {
			return fmt.Errorf("logging the change: %w", err)
		}
		return nil
	})
	if err == nil {
		s.mu.Lock()
		s.enqueueLocked(ch, v)
		s.mu.Unlock()
	}
	s.wmu.Unlock()
	if err == nil {
		s.drain()
	}
	return err
}

// enqueueLocked queues the report of the change at version v unless it
// was reported already — by the poller, or as this store's own write —
// or an object's later change was. Called with s.mu held.
func (s *Store) enqueueLocked(ch host.Change, v int64) {
	k := objKey{ch.Kind, ch.Namespace, ch.Name}
	if v <= s.cursor || s.lastSent[k] >= v {
		return
	}
	s.lastSent[k] = v
	if len(s.watchers) > 0 {
		s.queue = append(s.queue, ch)
	}
}

// drain calls the watchers with the queued reports, in order, outside
// the store's locks. One goroutine drains at a time; a write made while
// another drains (one made by a watcher, say) is reported by that one.
func (s *Store) drain() {
	s.mu.Lock()
	if s.draining {
		s.mu.Unlock()
		return
	}
	s.draining = true
	for len(s.queue) > 0 {
		q, ws := s.queue, s.watchers
		s.queue = nil
		s.mu.Unlock()
		for _, ch := range q {
			for _, w := range ws {
				w(ch)
			}
		}
		s.mu.Lock()
	}
	s.draining = false
	s.mu.Unlock()
}

// poller polls the change log every PollInterval, and prunes it, until
// Close.
func (s *Store) poller() {
	defer close(s.done)
	ticker := time.NewTicker(s.opts.PollInterval)
	defer ticker.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-ticker.C:
		}
		err := s.poll(s.ctx)
		if err == nil {
			err = s.prune(s.ctx)
		}
		if err != nil && s.ctx.Err() == nil {
			s.opts.Logger.Warn("sqlstore: polling the change log failed; retrying at the next poll", "error", err)
		}
	}
}

// poll reports the changes other processes logged since the last poll.
func (s *Store) poll(ctx context.Context) error {
	s.pollMu.Lock()
	defer s.pollMu.Unlock()
	var version, pruned int64
	if err := s.db.QueryRowContext(ctx, "SELECT version, pruned_through FROM certlife_counter WHERE id = 1").Scan(&version, &pruned); err != nil {
		return fmt.Errorf("sqlstore: reading the version: %w", err)
	}
	s.mu.Lock()
	cursor := s.cursor
	s.mu.Unlock()
	if cursor < pruned {
		// What was logged between the cursor and what was pruned is
		// gone: report every object written since, as it is.
		if err := s.catchUp(ctx, cursor, pruned); err != nil {
			return err
		}
		cursor = pruned
	}
	for cursor < version {
		rows, err := s.db.QueryContext(ctx, s.rebind("SELECT version, kind, namespace, name, uid, owner_uid, deleted FROM certlife_changes WHERE version > ? AND version <= ? ORDER BY version LIMIT "+strconv.Itoa(pollPage)),
			cursor, version)
		if err != nil {
			return fmt.Errorf("sqlstore: reading the change log: %w", err)
		}
		var page []versioned
		for rows.Next() {
			var c versioned
			var kind string
			var deleted int
			if err := rows.Scan(&c.v, &kind, &c.ch.Namespace, &c.ch.Name, &c.ch.Meta.UID, &c.ch.Meta.OwnerUID, &deleted); err != nil {
				rows.Close()
				return fmt.Errorf("sqlstore: reading the change log: %w", err)
			}
			c.ch.Kind, c.ch.Deleted = host.Kind(kind), deleted != 0
			c.ch.Meta.Namespace, c.ch.Meta.Name, c.ch.Meta.ResourceVersion = c.ch.Namespace, c.ch.Name, strconv.FormatInt(c.v, 10)
			page = append(page, c)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return fmt.Errorf("sqlstore: reading the change log: %w", err)
		}
		next := version
		if len(page) == pollPage {
			next = page[len(page)-1].v
		}
		s.advance(page, next)
		cursor = next
	}
	s.advance(nil, version)
	return nil
}

// versioned is a change and its version.
type versioned struct {
	v  int64
	ch host.Change
}

// advance queues the reports of page, sets the cursor to through (when
// it is past it) and reports.
func (s *Store) advance(page []versioned, through int64) {
	s.mu.Lock()
	for _, c := range page {
		s.enqueueLocked(c.ch, c.v)
	}
	if through > s.cursor {
		s.cursor = through
		maps.DeleteFunc(s.lastSent, func(_ objKey, v int64) bool { return v <= through })
	}
	s.mu.Unlock()
	s.drain()
}

// catchUp reports every object written after version from, as it is
// now, up to the cursor through.
func (s *Store) catchUp(ctx context.Context, from, through int64) error {
	var all []versioned
	for _, t := range []struct {
		kind  host.Kind
		table string
	}{{host.KindCertificate, "certlife_certificates"}, {host.KindSecret, "certlife_secrets"}, {host.KindRequest, "certlife_requests"}} {
		rows, err := s.db.QueryContext(ctx, s.rebind("SELECT version, namespace, name, uid, owner_uid FROM "+t.table+" WHERE version > ?"), from)
		if err != nil {
			return fmt.Errorf("sqlstore: catching up with the pruned change log: %w", err)
		}
		for rows.Next() {
			var c versioned
			var m certificate.ObjectMeta
			if err := rows.Scan(&c.v, &m.Namespace, &m.Name, &m.UID, &m.OwnerUID); err != nil {
				rows.Close()
				return fmt.Errorf("sqlstore: catching up with the pruned change log: %w", err)
			}
			m.ResourceVersion = strconv.FormatInt(c.v, 10)
			c.ch = host.Change{Kind: t.kind, Namespace: m.Namespace, Name: m.Name, Meta: m}
			all = append(all, c)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return fmt.Errorf("sqlstore: catching up with the pruned change log: %w", err)
		}
	}
	slices.SortFunc(all, func(a, b versioned) int { return cmp.Compare(a.v, b.v) })
	s.opts.Logger.Warn("sqlstore: the change log was pruned past this store's last poll: reporting every object written since, as it is now; deletions among them are not reported",
		"lastPolled", from, "prunedThrough", through, "objects", len(all))
	s.advance(all, through)
	return nil
}

// prune removes the change log's entries older than ChangeRetention, and
// the leases expired as long ago, at most every quarter of it.
func (s *Store) prune(ctx context.Context) error {
	now := s.clock.Now()
	s.mu.Lock()
	if !s.lastPrune.IsZero() && now.Sub(s.lastPrune) < s.opts.ChangeRetention/4 {
		s.mu.Unlock()
		return nil
	}
	s.lastPrune = now
	s.mu.Unlock()
	cutoff := now.Add(-s.opts.ChangeRetention).UnixNano()
	err := s.inTx(ctx, 0, func(t *tx) error {
		// The counter first, as every write takes it.
		if _, err := t.exec("UPDATE certlife_counter SET pruned_through = pruned_through WHERE id = 1"); err != nil {
			return err
		}
		// Leases expired as long ago are no one's: a holder that died
		// left them.
		if _, err := t.exec("DELETE FROM certlife_leases WHERE until_ns < ?", cutoff); err != nil {
			return err
		}
		var through sql.NullInt64
		if err := t.queryRow("SELECT max(version) FROM certlife_changes WHERE at_ns < ?", cutoff).Scan(&through); err != nil {
			return err
		}
		if !through.Valid {
			return nil
		}
		if _, err := t.exec("DELETE FROM certlife_changes WHERE version <= ?", through.Int64); err != nil {
			return err
		}
		_, err := t.exec("UPDATE certlife_counter SET pruned_through = ? WHERE id = 1 AND pruned_through < ?", through.Int64, through.Int64)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlstore: pruning the change log: %w", err)
	}
	return nil
}
