package sqlstore_test

import (
	"database/sql"
	"testing"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/host/hosttest"
	"github.com/certlife/certlife/certificate/host/sqlstore"
)

// The store keeps the whole contract on both dialects, with the zero
// Config: it is Authoritative and a Watcher, copies all it takes and
// gives, and refuses invalid names.
func TestStoreConformance(t *testing.T) {
	eachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		hosttest.TestStore(t, func(t *testing.T) host.Store {
			return newDB(t, d).open(t, testingclock.NewFakeClock(t0))
		}, hosttest.Config{})
	})
	// An in-memory SQLite database, on its one connection.
	t.Run("SQLiteInMemory", func(t *testing.T) {
		hosttest.TestStore(t, func(t *testing.T) host.Store {
			db, err := sql.Open("sqlite", "file::memory:")
			if err != nil {
				t.Fatal(err)
			}
			db.SetMaxOpenConns(1)
			t.Cleanup(func() { db.Close() })
			return database{dialect: sqlstore.SQLite, db: db}.open(t, testingclock.NewFakeClock(t0))
		}, hosttest.Config{})
	})
}
