package sqlstore

import (
	"database/sql"
	"path/filepath"
	"slices"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/certlife/certlife/certificate"
)

// The migrations are numbered 1, 2, ... and SchemaVersion is the last.
func TestMigrationsAreNumberedInOrder(t *testing.T) {
	for i, m := range migrations {
		if m.version != i+1 {
			t.Errorf("migration %d has version %d, want %d", i, m.version, i+1)
		}
	}
	if last := migrations[len(migrations)-1].version; SchemaVersion != last {
		t.Errorf("SchemaVersion is %d, the last migration %d", SchemaVersion, last)
	}
}

// A database made by an earlier version is upgraded step by step when
// opened, keeping what it holds; one already upgraded is left alone.
func TestOpenUpgrades(t *testing.T) {
	ctx := t.Context()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := Open(ctx, db, Options{Dialect: SQLite})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Certificates().Create(ctx, &certificate.Certificate{ObjectMeta: certificate.ObjectMeta{Name: "web"}}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	saved := migrations
	t.Cleanup(func() { migrations = saved })
	migrations = append(slices.Clip(saved), migration{SchemaVersion + 1, []string{
		`ALTER TABLE certlife_certificates ADD COLUMN note TEXT NOT NULL DEFAULT 'upgraded'`,
	}})
	for range 2 { // the second finds nothing to do
		s, err = Open(ctx, db, Options{Dialect: SQLite})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	var version int
	var note string
	if err := db.QueryRowContext(ctx, "SELECT version FROM certlife_schema").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRowContext(ctx, "SELECT note FROM certlife_certificates WHERE name = 'web'").Scan(&note); err != nil {
		t.Fatal(err)
	}
	if version != SchemaVersion+1 || note != "upgraded" {
		t.Errorf("after the upgrade: version %d, note %q; want %d, %q", version, note, SchemaVersion+1, "upgraded")
	}
}
