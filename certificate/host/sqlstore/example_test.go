package sqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"

	_ "modernc.org/sqlite" // the program's driver: the package imports none

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host/sqlstore"
)

// A store in a SQLite file: Open makes the tables on first use. A host
// passes it to host.New as its Store, and to its ACME issuer as its
// acmeclient.Store; replicas open one PostgreSQL database the same way,
// with sqlstore.PostgreSQL and the pgx driver.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "certlife-example-")
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "certlife.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		panic(err)
	}
	defer db.Close()
	store, err := sqlstore.Open(ctx, db, sqlstore.Options{Dialect: sqlstore.SQLite})
	if err != nil {
		panic(err)
	}
	defer store.Close()

	c, err := store.Certificates().Create(ctx, &certificate.Certificate{
		ObjectMeta: certificate.ObjectMeta{Name: "web"},
		Spec:       certificate.Spec{SecretName: "web-tls", DNSNames: []string{"web.example"}, IssuerRef: certificate.IssuerRef{Name: "ca"}},
	})
	if err != nil {
		panic(err)
	}
	c.Spec.DNSNames = append(c.Spec.DNSNames, "www.example")
	c, err = store.Certificates().Update(ctx, c)
	if err != nil {
		panic(err)
	}
	fmt.Println("version", c.ResourceVersion, "generation", c.Generation)
	// Output: version 2 generation 2
}
