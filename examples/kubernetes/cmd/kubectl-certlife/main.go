// Command kubectl-certlife is a kubectl plugin that explains cert-manager
// Certificates as certlife's controller decides on them:
//
//	kubectl certlife status NAME
//	kubectl certlife renew NAME... | --all [-A] [-l SELECTOR]
//	kubectl certlife inspect secret NAME
//
// Install it on PATH (go install ./cmd/kubectl-certlife from
// examples/kubernetes) and kubectl finds it.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/certlife/certlife/examples/kubernetes/cmd/kubectl-certlife/internal/plugin"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := plugin.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
