// Command quickstart is certlife's main job: it starts Pebble (Let's
// Encrypt's test CA) in process, solves HTTP-01 on loopback, issues a
// certificate through the host loop users import (certificate/host),
// writes tls.crt and tls.key (the key readable by its owner only), and
// then moves a fake clock forward to show, one line per decision, renewal
// with key rotation, a failed issuance and its backoff, a renewal deferred
// by a window and then done inside it, and a manual trigger.
//
//	go run ./examples/quickstart [-out DIR] [-v]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
)

func main() {
	out := flag.String("out", "", "directory for tls.crt, tls.key and pebble-root.pem (default: a new temporary directory)")
	verbose := flag.Bool("v", false, "also show the ACME order and challenge decisions")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := Run(ctx, Options{Out: *out, W: os.Stdout, Verbose: *verbose})
	if err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
	fmt.Printf("\ntls.crt:         %s\ntls.key:         %s\nPebble's root:   %s\n", res.CertFile, res.KeyFile, res.RootFile)
}
