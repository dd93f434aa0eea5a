// Package plugin is kubectl-certlife, the kubectl plugin that explains
// Certificates the way certlife's controller decides on them: it reads a
// Certificate, its Secret, its CertificateRequests and their ACME Orders
// and Challenges, runs the controller's pure decision
// (certificate.Reconcile) on them with the operator's default
// configuration, and prints what will happen next and when. It never asks
// the controller and never prints private key material.
package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/certlife/certlife/certificate"

	"github.com/certlife/certlife/examples/kubernetes/operator"
)

const usage = `kubectl certlife explains cert-manager Certificates as certlife's controller decides on them.

Usage:
  kubectl certlife status NAME            what the certificate is, when it renews and why,
                                          what its issuer waits for, what happens next
  kubectl certlife renew NAME...          start an issuance now (Issuing=True, ManuallyTriggered)
  kubectl certlife renew --all [-A] [-l SELECTOR]
  kubectl certlife inspect secret NAME    the certificates and key in a Secret, checked

The decision is the controller's own (certificate.Reconcile), run here with
the operator's default configuration on what the API server holds now.

Flags:
`

// Main runs the plugin with the command line args (without the program
// name) and returns its exit code: 0, 1 for a failure, 2 for a usage
// error.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// The API server's warnings reach controller-runtime's client as log
	// records: show them as kubectl does, one line each on stderr.
	log.SetLogger(funcr.New(func(_, args string) { fmt.Fprintln(stderr, "warning:", args) }, funcr.Options{}))
	return (&cli{stdout: stdout, stderr: stderr, now: time.Now, cfg: DefaultConfig()}).run(ctx, args)
}

// cli is one run of the plugin; tests set now, and a client in place of
// the kubeconfig's.
type cli struct {
	stdout, stderr io.Writer
	now            func() time.Time
	cfg            certificate.Config
	// client and namespace, when client is set, replace the kubeconfig's
	// (tests).
	client    client.Client
	namespace string
}

type usageError struct{ error }

func (c *cli) run(ctx context.Context, args []string) int {
	err := c.exec(ctx, args)
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, pflag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintln(c.stderr, "error:", err)
		fmt.Fprintln(c.stderr, "Run 'kubectl certlife --help' for usage.")
		return 2
	}
	fmt.Fprintln(c.stderr, "error:", err)
	return 1
}

func (c *cli) exec(ctx context.Context, args []string) error {
	fs := pflag.NewFlagSet("kubectl certlife", pflag.ContinueOnError)
	fs.SetOutput(c.stderr)
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	fs.StringVar(&rules.ExplicitPath, clientcmd.RecommendedConfigPathFlag, "", "Path to the kubeconfig file to use")
	overrides := &clientcmd.ConfigOverrides{}
	clientcmd.BindOverrideFlags(overrides, fs, clientcmd.RecommendedConfigOverrideFlags(""))
	all := fs.Bool("all", false, "renew: every Certificate in the namespace")
	allNamespaces := fs.BoolP("all-namespaces", "A", false, "renew --all: in every namespace")
	selector := fs.StringP("selector", "l", "", "renew: the Certificates with these labels (key=value,...)")
	fs.Usage = func() {
		fmt.Fprint(c.stderr, usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	pos := fs.Args()
	if len(pos) == 0 {
		fs.Usage()
		return usageError{errors.New("no command given: status, renew or inspect")}
	}
	cmd, pos := pos[0], pos[1:]
	if cmd != "renew" && (*all || *allNamespaces || *selector != "") {
		return usageError{fmt.Errorf("%s: --all, -A and -l are renew's flags", cmd)}
	}
	switch cmd {
	case "status":
		if len(pos) != 1 {
			return usageError{errors.New("status: name one certificate: kubectl certlife status NAME")}
		}
	case "inspect":
		if len(pos) != 2 || pos[0] != "secret" {
			return usageError{errors.New("inspect: kubectl certlife inspect secret NAME")}
		}
	case "renew":
	default:
		return usageError{fmt.Errorf("unknown command %q: status, renew or inspect", cmd)}
	}

	k, ns, err := c.connect(rules, overrides)
	if err != nil {
		return err
	}
	now := c.now()
	switch cmd {
	case "status":
		g, err := gather(ctx, k, ns, pos[0])
		if err != nil {
			return err
		}
		return writeStatus(c.stdout, g, now, c.cfg)
	case "inspect":
		return inspectSecret(ctx, k, ns, pos[1], now, c.cfg, c.stdout)
	}
	o := renewOptions{names: pos, namespace: ns, all: *all, allNamespaces: *allNamespaces, selector: *selector}
	if err := o.validate(); err != nil {
		return usageError{err}
	}
	return runRenew(ctx, k, o, now, c.stdout)
}

// connect makes the client from the kubeconfig as kubectl does
// (KUBECONFIG, --kubeconfig, --context, -n …), and the namespace to work
// in.
func (c *cli) connect(rules *clientcmd.ClientConfigLoadingRules, overrides *clientcmd.ConfigOverrides) (client.Client, string, error) {
	if c.client != nil {
		ns := c.namespace
		if overrides.Context.Namespace != "" {
			ns = overrides.Context.Namespace
		}
		return c.client, ns, nil
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig: %w", err)
	}
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig: %w", err)
	}
	k, err := newClient(rc)
	if err != nil {
		return nil, "", err
	}
	return k, ns, nil
}

func newClient(rc *rest.Config) (client.Client, error) {
	rc = rest.CopyConfig(rc)
	rc.UserAgent = "kubectl-certlife"
	return client.New(rc, client.Options{Scheme: operator.Scheme()})
}

func parseSelector(s string) (labels.Selector, error) {
	sel, err := labels.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("-l %q: %w", s, err)
	}
	return sel, nil
}
