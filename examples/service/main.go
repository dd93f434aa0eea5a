// Command service is an HTTPS service that keeps its own certificates:
// one for its public names from an ACME CA (HTTP-01 answered on :80,
// TLS-ALPN-01 on :443), one for an internal name from a CA of its own,
// made on the first start. Everything is kept in SQLite: a restart
// resumes an order in flight, and renewals are served as soon as written.
//
//	go run ./examples/service -names example.com,www.example.com -email you@example.com
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strings"

	_ "modernc.org/sqlite"

	"github.com/certlife/certlife/certificate/host/sqlstore"
	"github.com/certlife/certlife/managed"
)

func main() {
	dir, email := flag.String("acme", "https://acme-staging-v02.api.letsencrypt.org/directory", "ACME directory URL"), flag.String("email", "", "ACME account contact")
	db, names := flag.String("db", "service.db", "SQLite file"), flag.String("names", "example.com,www.example.com", "public names")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	acme := &managed.ACME{DirectoryURL: *dir, Email: *email, AgreeToTerms: true}
	cfg := managed.Config{ACME: acme, Certificates: certificates(strings.Split(*names, ","))}
	if err := serve(ctx, *db, cfg, ":443", ":80", (*managed.Manager).Run); err != nil {
		log.Fatal(err)
	}
}

// certificates: the public names over ACME, api.internal from the local CA.
func certificates(names []string) []managed.Certificate {
	return []managed.Certificate{{Name: "public", DNSNames: names}, {Name: "internal", DNSNames: []string{"api.internal"}, Issuer: managed.IssuerLocalCA}}
}

// serve keeps cfg's certificates in the SQLite file dsn and serves them on
// httpsAddr (HTTP-01 on plainAddr) while run drives the manager (Run).
func serve(ctx context.Context, dsn string, cfg managed.Config, httpsAddr, plainAddr string, run func(*managed.Manager, context.Context) error) error {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	cfg.DB, cfg.Dialect = db, sqlstore.SQLite
	m, err := managed.New(ctx, cfg)
	if err != nil {
		return err
	}
	defer m.Close()
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "hello, %s\n", r.TLS.ServerName) })
	if err := m.ListenAndServe(httpsAddr, plainAddr, hello); err != nil {
		return err
	}
	return run(m, ctx)
}
