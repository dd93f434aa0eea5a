package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// schemaLock is the key of the PostgreSQL advisory lock the schema's
// creation and upgrades take: "certlife" in ASCII.
const schemaLock = 0x636572746c696665

// migration is one step of the schema: the statements that take it from
// the version before to version. Steps are only ever appended.
type migration struct {
	version int
	stmts   []string
}

// migrations are the schema's steps, in order. {{blob}} is the dialect's
// type of byte strings.
var migrations = []migration{
	{1, []string{
		// The version counter: every write updates it first, which
		// serialises writers, so versions commit in order.
		`CREATE TABLE certlife_counter (
			id INTEGER PRIMARY KEY,
			version BIGINT NOT NULL,
			pruned_through BIGINT NOT NULL)`,
		`INSERT INTO certlife_counter (id, version, pruned_through) VALUES (1, 0, 0)`,
		objectTable("certlife_certificates"),
		// Each index ends with the columns List orders by.
		`CREATE INDEX certlife_certificates_owner ON certlife_certificates (owner_uid, namespace, name)`,
		`CREATE INDEX certlife_certificates_secret ON certlife_certificates (namespace, secret_name, name)`,
		objectTable("certlife_secrets"),
		`CREATE INDEX certlife_secrets_owner ON certlife_secrets (owner_uid, namespace, name)`,
		objectTable("certlife_requests"),
		`CREATE INDEX certlife_requests_owner ON certlife_requests (owner_uid, namespace, name)`,
		`CREATE TABLE certlife_changes (
			version BIGINT PRIMARY KEY,
			kind TEXT NOT NULL,
			namespace TEXT NOT NULL,
			name TEXT NOT NULL,
			uid TEXT NOT NULL,
			owner_uid TEXT NOT NULL,
			deleted INTEGER NOT NULL,
			at_ns BIGINT NOT NULL)`,
		`CREATE TABLE certlife_leases (
			lease_key TEXT PRIMARY KEY,
			holder TEXT NOT NULL,
			until_ns BIGINT NOT NULL)`,
		`CREATE TABLE certlife_acme_states (
			issuer TEXT NOT NULL,
			state_key TEXT NOT NULL,
			request_namespace TEXT NOT NULL,
			request_name TEXT NOT NULL,
			request_uid TEXT NOT NULL,
			data {{blob}} NOT NULL,
			PRIMARY KEY (issuer, state_key))`,
		`CREATE TABLE certlife_presentations (
			challenge_type TEXT NOT NULL,
			lookup_key TEXT NOT NULL,
			key_authorization TEXT NOT NULL,
			data {{blob}} NOT NULL,
			PRIMARY KEY (challenge_type, lookup_key))`,
	}},
}

// SchemaVersion is the version of the schema this package makes and
// reads: the number of the last upgrade it knows. Open refuses a
// database whose schema is newer (made by a later certlife).
const SchemaVersion = 1

func objectTable(name string) string {
	return `CREATE TABLE ` + name + ` (
		namespace TEXT NOT NULL,
		name TEXT NOT NULL,
		uid TEXT NOT NULL,
		owner_uid TEXT NOT NULL,
		secret_name TEXT NOT NULL,
		version BIGINT NOT NULL,
		generation BIGINT NOT NULL,
		created TEXT NOT NULL,
		spec_hash {{blob}},
		data {{blob}} NOT NULL,
		PRIMARY KEY (namespace, name))`
}

// migrate creates the schema or upgrades it to SchemaVersion, in one
// transaction that holds the write lock, so that processes opening the
// database at once upgrade it once.
func (s *Store) migrate(ctx context.Context) error {
	blob := "BLOB"
	if s.opts.Dialect == PostgreSQL {
		blob = "BYTEA"
	}
	if s.opts.Dialect == SQLite {
		// Readers beside a writer; a no-op for an in-memory database.
		if _, err := s.db.ExecContext(ctx, "PRAGMA journal_mode = WAL"); err != nil {
			return fmt.Errorf("sqlstore: switching to WAL: %w", err)
		}
	}
	err := s.inTx(ctx, schemaLock, func(t *tx) error {
		if _, err := t.exec(`CREATE TABLE IF NOT EXISTS certlife_schema (version INTEGER NOT NULL)`); err != nil {
			return err
		}
		var have int
		err := t.queryRow(`SELECT version FROM certlife_schema`).Scan(&have)
		if errors.Is(err, sql.ErrNoRows) {
			if _, err := t.exec(`INSERT INTO certlife_schema (version) VALUES (0)`); err != nil {
				return err
			}
		} else if err != nil {
			return err
		}
		if latest := migrations[len(migrations)-1].version; have > latest {
			return fmt.Errorf("the database's schema is at version %d, newer than this certlife knows (%d): upgrade certlife", have, latest)
		}
		for _, m := range migrations {
			if m.version <= have {
				continue
			}
			for _, stmt := range m.stmts {
				if _, err := t.exec(strings.ReplaceAll(stmt, "{{blob}}", blob)); err != nil {
					return fmt.Errorf("upgrading to version %d: %w", m.version, err)
				}
			}
			if _, err := t.exec(`UPDATE certlife_schema SET version = ?`, m.version); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlstore: creating or upgrading the schema: %w", err)
	}
	return nil
}
