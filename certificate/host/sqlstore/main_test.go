package sqlstore_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"k8s.io/utils/clock"
	_ "modernc.org/sqlite"

	"github.com/certlife/certlife/certificate/host/sqlstore"
	"github.com/certlife/certlife/internal/pgtest"
)

// One PostgreSQL server for the package's tests, started by the first
// that needs it.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

var t0 = time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)

// database is an empty database of a dialect.
type database struct {
	dialect sqlstore.Dialect
	dsn     string
	db      *sql.DB
}

// newDB makes an empty database of the dialect: a SQLite file in a
// temporary directory, or a database of its own on the package's
// PostgreSQL server.
func newDB(t testing.TB, d sqlstore.Dialect) database {
	t.Helper()
	dsn := ""
	switch d {
	case sqlstore.SQLite:
		dsn = "file:" + filepath.Join(t.TempDir(), "certlife.db") + "?_pragma=busy_timeout(10000)"
	case sqlstore.PostgreSQL:
		dsn = pgtest.Start(t)
	}
	return database{dialect: d, dsn: dsn}.another(t)
}

// another is the database through a *sql.DB of its own, as another
// process has, closed in t's clean-up.
func (d database) another(t testing.TB) database {
	t.Helper()
	driver := "sqlite"
	if d.dialect == sqlstore.PostgreSQL {
		driver = "pgx"
	}
	db, err := sql.Open(driver, d.dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	d.db = db
	return d
}

// open opens a Store in the database, closed in t's clean-up.
func (d database) open(t testing.TB, clk clock.PassiveClock, opts ...func(*sqlstore.Options)) *sqlstore.Store {
	t.Helper()
	o := sqlstore.Options{Dialect: d.dialect, Clock: clk, PollInterval: 20 * time.Millisecond}
	for _, f := range opts {
		f(&o)
	}
	s, err := sqlstore.Open(context.Background(), d.db, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var dialects = []sqlstore.Dialect{sqlstore.SQLite, sqlstore.PostgreSQL}

// eachDialect runs f as a subtest per dialect.
func eachDialect(t *testing.T, f func(t *testing.T, d sqlstore.Dialect)) {
	for _, d := range dialects {
		t.Run(d.String(), func(t *testing.T) { f(t, d) })
	}
}
