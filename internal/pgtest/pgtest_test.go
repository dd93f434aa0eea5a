package pgtest_test

import (
	"database/sql"
	"os"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/certlife/certlife/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// Each Start is a database of its own on the package's one server.
func TestStartGivesEmptyDatabasesOfTheirOwn(t *testing.T) {
	var dsns []string
	for range 2 {
		dsn := pgtest.Start(t)
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var n int
		if err := db.QueryRow("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").Scan(&n); err != nil {
			t.Fatalf("%s: %v", dsn, err)
		}
		if n != 0 {
			t.Errorf("%s holds %d tables, want none", dsn, n)
		}
		if _, err := db.Exec("CREATE TABLE t (x int)"); err != nil {
			t.Fatal(err)
		}
		dsns = append(dsns, dsn)
	}
	if dsns[0] == dsns[1] {
		t.Errorf("two Starts gave the same database %s", dsns[0])
	}
}

// A server of its own stops and leaves nothing behind.
func TestServerStops(t *testing.T) {
	srv, err := pgtest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	dsn, err := srv.NewDatabase()
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := db.Ping(); err == nil {
		t.Error("the server still answers after Stop")
	}
	if _, err := os.Stat(srv.Dir()); !os.IsNotExist(err) {
		t.Errorf("its directory %s is still there: %v", srv.Dir(), err)
	}
}
