package main

// The quickstart's story: Pebble in process, HTTP-01 on loopback, a
// certificate issued through the host loop users import (certificate/host)
// and written to disk, then
// a fake clock moved forward to show, one line per decision, renewal with
// key rotation, a failed issuance and its backoff, a renewal deferred by a
// window and then done inside it, and a manual trigger.

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/acmeclient/acmetest"
	"github.com/certlife/certlife/backoff/retry"
	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/host/hosttest"
	"github.com/certlife/certlife/challenge"
	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/order"
	"github.com/certlife/certlife/renewal"
)

// Options for a run.
type Options struct {
	// Out is the directory tls.crt, tls.key and pebble-root.pem are
	// written to; empty means a new temporary directory.
	Out string
	// W receives the timeline.
	W io.Writer
	// Verbose adds the ACME order and challenge decisions.
	Verbose bool
}

// Result is what a run wrote.
type Result struct {
	Dir, CertFile, KeyFile, RootFile string
	// Now is the fake clock's time at the end.
	Now time.Time
	// Revisions issued, requests made, failures recorded.
	Revisions, Requests, Failures int
}

// Name is the certificate's DNS name.
const Name = "web.quickstart.example"

type run struct {
	w       io.Writer
	verbose bool
	start   time.Time
	clk     *testingclock.FakeClock
	srv     *acmetest.Server
	store   *host.MemoryStore
	loop    *host.Loop
	http01  *acmeclient.HTTP01Handler // what answers HTTP-01 behind the firewall
	res     Result

	lastBackoff string
	lastRequest map[string]string // what was last shown of each request
}

// Run runs the quickstart.
func Run(ctx context.Context, opts Options) (Result, error) {
	w := opts.W
	if w == nil {
		w = io.Discard
	}
	dir := opts.Out
	if dir == "" {
		d, err := os.MkdirTemp("", "certlife-quickstart-")
		if err != nil {
			return Result{}, err
		}
		dir = d
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return Result{}, err
	}
	r := &run{w: w, verbose: opts.Verbose, res: Result{Dir: dir}, lastRequest: map[string]string{}}
	if err := r.setUp(ctx); err != nil {
		return r.res, err
	}
	defer r.srv.Close()
	return r.res, r.story(ctx)
}

func (r *run) setUp(ctx context.Context) error {
	srv, err := acmetest.Start(acmetest.Options{})
	if err != nil {
		return err
	}
	r.srv = srv
	// The fake clock starts at the next full hour (after Pebble's roots
	// were made, so its chains verify on this clock); the orders ask
	// Pebble for validity on it.
	r.start = time.Now().UTC().Truncate(time.Hour).Add(time.Hour)
	r.clk = testingclock.NewFakeClock(r.start)
	accountKey, err := keys.Generate(rand.Reader, keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
	if err != nil {
		return err
	}
	cfg := srv.ClientConfig(accountKey)
	cfg.Clock, cfg.UserAgent = r.clk, "certlife-quickstart"
	client, err := acmeclient.New(cfg)
	if err != nil {
		return err
	}
	acct, err := client.EnsureAccount(ctx, acmeclient.AccountOptions{AgreeToTerms: true, Contact: []string{"mailto:ops@quickstart.example"}})
	if err != nil {
		return err
	}
	r.http01 = srv.HTTP01Handler()
	r.store = host.NewMemoryStore(r.clk)
	issuerCfg := acmeclient.IssuerConfig{
		Client: client, Store: acmeclient.NewMemoryStore(), Solvers: srv.Solvers(), RequestValidity: true,
		Order:     order.Config{Schedule: retry.Schedule{PollInterval: time.Second}},
		Challenge: challenge.Config{Schedule: retry.Schedule{PollInterval: time.Second}, SelfCheckInterval: time.Second},
	}
	if r.verbose {
		issuerCfg.Trace = func(e acmeclient.Event) {
			fmt.Fprintf(r.w, "%s  %-14s %-22s %s\n", r.stamp(e.Time), "acme "+strings.SplitN(e.Resource, "/", 2)[0], e.Reason, strings.Join(e.Actions, " "))
		}
	}
	issuer, err := acmeclient.NewIssuer(issuerCfg)
	if err != nil {
		return err
	}
	r.loop, err = host.New(host.Config{
		Store:   r.store,
		Clock:   r.clk,
		Issuers: map[certificate.IssuerRef]certificate.Issuer{{Name: "pebble"}: issuer},
		Observe: r.observe,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(r.w, "Pebble (Let's Encrypt's test CA) is serving ACME at %s\n", srv.DirectoryURL)
	fmt.Fprintf(r.w, "ACME account %s; HTTP-01 answered on 127.0.0.1:%d\n", acct.URL, srv.HTTP01Port())
	fmt.Fprintf(r.w, "The clock is a fake one from here on: each line is one decision — time, stage, reason, actions.\n\n")
	return nil
}

// stamp is a time on the timeline: the day since the start, and the UTC
// time of day (renewal windows are in UTC).
func (r *run) stamp(t time.Time) string {
	day0 := r.start.Truncate(24 * time.Hour)
	days := int(t.UTC().Truncate(24*time.Hour).Sub(day0) / (24 * time.Hour))
	return fmt.Sprintf("day %3d %s", days, t.UTC().Format("15:04:05"))
}

func (r *run) observe(e host.Event) {
	if e.Err != nil {
		// A pass that stopped early (a conflict, a failed ACME call) or
		// went wrong beside its work: the loop says when it looks again.
		again := "when it changes"
		if !e.Next.IsZero() {
			again = "at " + r.stamp(e.Next)
		}
		fmt.Fprintf(r.w, "%s  %-14s %-22s %s %s: %v; looking again %s\n", r.stamp(e.Time), "host", "Error",
			e.Kind, e.Name, e.Err, again)
	}
	if e.Kind == host.KindRequest {
		if e.Request == nil {
			return
		}
		cond := e.Request.Condition(certificate.RequestConditionReady)
		if cond == nil || r.lastRequest[e.Request.Name] == cond.Message {
			return // the request's state, seen again
		}
		r.lastRequest[e.Request.Name] = cond.Message
		if cond != nil && cond.Status == certificate.StatusTrue {
			fmt.Fprintf(r.w, "%s  %-14s %-22s request %s answered with a certificate\n", r.stamp(e.Time), "issuer", "Issued", e.Request.Name)
		} else if cond != nil {
			fmt.Fprintf(r.w, "%s  %-14s %-22s request %s: %s\n", r.stamp(e.Time), "issuer", cond.Reason, e.Request.Name, cond.Message)
		}
		return
	}
	res := e.Result
	if res == nil || len(e.Done) == 0 && res.Reason != certificate.ReasonBackoff {
		return // a pass that changed nothing
	}
	if res.Reason == certificate.ReasonBackoff {
		if res.Message == r.lastBackoff {
			return // the same decision, seen again
		}
		r.lastBackoff = res.Message
	}
	for _, a := range e.Done {
		switch a.(type) {
		case certificate.CreateRequest:
			r.res.Requests++
		}
	}
	stage, reason := string(res.Stage), res.Reason
	if d := res.Renewal; d != nil && d.Reason == renewal.ReasonDeferred && res.Reason == certificate.ReasonUpToDate {
		reason = d.Reason // the renewal policy's decision is the news
	}
	// A pass whose trigger started an issuance was the trigger's decision,
	// whatever stage acted last: show why it issues.
	if len(res.Steps) > 0 && res.Steps[0].Acted && res.IssuanceReason != "" {
		stage, reason = string(certificate.StageTrigger), res.IssuanceReason
	}
	var acts []string
	for _, a := range e.Done {
		acts = append(acts, short(a))
	}
	line := fmt.Sprintf("%s  %-14s %-22s %s", r.stamp(e.Time), stage, reason, strings.Join(acts, ", "))
	switch {
	case len(acts) == 0 || res.Reason == certificate.ReasonBackoff:
		line += "  — " + res.Message
	case strings.Contains(res.Message, " (issuance has failed "):
		i := strings.LastIndex(res.Message, " (issuance has failed ")
		line += "  — " + strings.Trim(res.Message[i+1:], "()") // "issuance has failed N times in a row"
	}
	fmt.Fprintln(r.w, strings.TrimRight(line, " "))
}

// short names an action without its details.
func short(a certificate.Action) string {
	switch a := a.(type) {
	case certificate.UpdateStatus:
		var parts []string
		for _, c := range a.Status.Conditions {
			parts = append(parts, c.Type+"="+c.Status)
		}
		if a.Status.Revision != nil {
			parts = append(parts, fmt.Sprintf("revision=%d", *a.Status.Revision))
		}
		return "UpdateStatus(" + strings.Join(parts, " ") + ")"
	case certificate.GenerateKey:
		return "GenerateKey(" + string(a.Spec.Algorithm) + ")"
	case certificate.CreateRequest:
		return "CreateRequest(" + a.Request.Name + ")"
	case certificate.DeleteRequest:
		return "DeleteRequest(" + a.Name + ")"
	case certificate.DeleteSecret:
		return "DeleteSecret(next key)"
	case certificate.WriteSecret:
		return "WriteSecret(" + a.Name + ")"
	}
	return a.String()
}

// runUntil works the loop until end on the fake clock (hosttest.Advance):
// it jumps to each time something is due, but while a request waits for
// Pebble, which validates and issues in real time, it moves no faster
// than the real clock across short waits (Pace), so the order's polls and
// retries see Pebble as a host on a real clock would.
func (r *run) runUntil(ctx context.Context, end time.Time) error {
	if err := hosttest.Advance(ctx, r.loop, r.clk, end, hosttest.AdvanceOptions{Pace: 10 * time.Second}); err != nil {
		return fmt.Errorf("quickstart: %w", err)
	}
	return nil
}

func (r *run) certificate(ctx context.Context) (*certificate.Certificate, error) {
	c, err := r.store.Certificates().Get(ctx, "default", "web")
	if err != nil {
		return nil, fmt.Errorf("quickstart: %w", err)
	}
	return c, nil
}

func (r *run) revision(ctx context.Context) int {
	if c, err := r.certificate(ctx); err == nil && c.Status.Revision != nil {
		return *c.Status.Revision
	}
	return 0
}

// leaf returns the secret's certificate and key, checked to match.
func (r *run) leaf(ctx context.Context) (*keys.ParsedSecret, *certificate.Secret, error) {
	sec, err := r.store.Secrets().Get(ctx, "default", "web-tls")
	if err != nil {
		return nil, nil, fmt.Errorf("quickstart: %w", err)
	}
	p, err := keys.ParseSecretData(sec.Data)
	if err != nil {
		return nil, nil, err
	}
	if !p.KeyMatches {
		return nil, nil, errors.New("quickstart: the secret's key is not its certificate's")
	}
	return p, sec, nil
}

func (r *run) heading(s string) { fmt.Fprintf(r.w, "\n── %s\n", s) }

func (r *run) story(ctx context.Context) error {
	// 1. First issuance over ACME, written to disk.
	r.heading("1. A certificate for " + Name + ": first issuance over ACME (HTTP-01 on loopback)")
	web := &certificate.Certificate{
		ObjectMeta: certificate.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: certificate.Spec{SecretName: "web-tls", CommonName: Name, DNSNames: []string{Name},
			IssuerRef: certificate.IssuerRef{Name: "pebble"}, PrivateKey: &keys.KeySpec{Algorithm: keys.AlgorithmECDSA}},
	}
	if _, err := r.store.Certificates().Create(ctx, web); err != nil {
		return err
	}
	if err := r.runUntil(ctx, r.start.Add(time.Minute)); err != nil {
		return err
	}
	first, err := r.expectRevision(ctx, 1)
	if err != nil {
		return err
	}
	if err := r.write(ctx, first); err != nil {
		return err
	}

	// 2. Renewal with key rotation.
	c, err := r.certificate(ctx)
	if err != nil {
		return err
	}
	r.heading(fmt.Sprintf("2. Renewal: due when a third of the lifetime remains (%s); the key rotates", r.stamp(*c.Status.RenewalTime)))
	if err := r.runUntil(ctx, c.Status.RenewalTime.Add(time.Minute)); err != nil {
		return err
	}
	second, err := r.expectRevision(ctx, 2)
	if err != nil {
		return err
	}
	rotated := !keys.PublicKeysEqual(first.Key.Public(), second.Key.Public())
	fmt.Fprintf(r.w, "   serial %x → %x; key rotated: %v\n", first.Leaf.SerialNumber, second.Leaf.SerialNumber, rotated)
	if !rotated {
		return errors.New("quickstart: the renewal kept the old key")
	}

	// 3. A failed issuance and its backoff.
	if c, err = r.certificate(ctx); err != nil {
		return err
	}
	r.heading("3. The CA cannot reach the solver (a firewall drops its requests; the self-check from inside still passes): renewal fails and backs off")
	var blocked atomic.Bool
	blocked.Store(true)
	r.srv.SetHTTP01Handler(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if blocked.Load() && strings.Contains(req.UserAgent(), "Pebble") {
			http.Error(w, "blocked by the firewall", http.StatusForbidden)
			return
		}
		r.http01.ServeHTTP(w, req)
	}))
	failStart := *c.Status.RenewalTime
	if err := r.runUntil(ctx, failStart.Add(3*time.Hour+30*time.Minute)); err != nil {
		return err
	}
	if c, err = r.certificate(ctx); err != nil {
		return err
	}
	if c.Status.FailedIssuanceAttempts == nil || *c.Status.FailedIssuanceAttempts < 2 {
		return fmt.Errorf("quickstart: expected failed attempts backing off, status says %v", c.Status.FailedIssuanceAttempts)
	}
	r.res.Failures = *c.Status.FailedIssuanceAttempts
	fmt.Fprintf(r.w, "   %d failed attempts so far; the firewall is fixed\n", r.res.Failures)
	blocked.Store(false)
	if err := r.runUntil(ctx, r.clk.Now().Add(8*time.Hour)); err != nil {
		return err
	}
	if _, err := r.expectRevision(ctx, 3); err != nil {
		return err
	}

	// 4. A renewal deferred by a window, then done inside it.
	if c, err = r.certificate(ctx); err != nil {
		return err
	}
	due := *c.Status.RenewalTime
	// A window that is closed when renewal falls due: two hours, starting
	// three days later at the same time of day, on that weekday.
	open := due.Add(3 * 24 * time.Hour).Truncate(time.Hour)
	win := renewal.Window{DaysOfWeek: []string{open.Weekday().String()}, Start: open.Format("15:04"), End: open.Add(2 * time.Hour).Format("15:04")}
	r.heading(fmt.Sprintf("4. Renewal windows: policy Scheduled, %s %s–%s UTC; renewal falls due at %s, outside it",
		win.DaysOfWeek[0], win.Start, win.End, r.stamp(due)))
	c.Spec.Renewal = &renewal.Spec{Policy: renewal.PolicyScheduled, Windows: []renewal.Window{win}}
	if c, err = r.store.Certificates().Update(ctx, c); err != nil {
		return err
	}
	fmt.Fprintf(r.w, "%s  %-14s %-22s spec.renewal = Scheduled (generation %d)\n", r.stamp(r.clk.Now()), "user", "SpecChanged", c.Generation)
	if err := r.runUntil(ctx, due.Add(time.Hour)); err != nil {
		return err
	}
	if r.revision(ctx) != 3 {
		return errors.New("quickstart: renewal happened outside the window")
	}
	if c, err = r.certificate(ctx); err != nil {
		return err
	}
	d := c.Status.Condition(renewal.ConditionRenewalDeferred)
	if d == nil {
		return errors.New("quickstart: no RenewalDeferred condition while outside the window")
	}
	fmt.Fprintf(r.w, "   %s: %s\n", d.Type, d.Message)
	if err := r.runUntil(ctx, open.Add(30*time.Minute)); err != nil {
		return err
	}
	fourth, err := r.expectRevision(ctx, 4)
	if err != nil {
		return err
	}
	if nb := fourth.Leaf.NotBefore; nb.Before(open) || !nb.Before(open.Add(2*time.Hour)) {
		return fmt.Errorf("quickstart: the renewal at %s is not inside the window", r.stamp(nb))
	}

	// 5. A manual trigger.
	r.heading("5. A manual trigger (someone suspects the key leaked): Issuing=True by hand, renewed at once")
	if err := r.trigger(ctx, "key compromise drill"); err != nil {
		return err
	}
	fmt.Fprintf(r.w, "%s  %-14s %-22s %s\n", r.stamp(r.clk.Now()), "user", certificate.ReasonManualTrigger, "UpdateStatus(Issuing=True) — key compromise drill")
	if err := r.runUntil(ctx, r.clk.Now().Add(10*time.Minute)); err != nil {
		return err
	}
	fifth, err := r.expectRevision(ctx, 5)
	if err != nil {
		return err
	}
	if err := r.write(ctx, fifth); err != nil {
		return err
	}
	r.res.Revisions = r.revision(ctx)
	r.res.Now = r.clk.Now()
	fmt.Fprintf(r.w, "\nDone: %d revisions from %d requests, %d failures backed off; %s of virtual time.\n",
		r.res.Revisions, r.res.Requests, r.res.Failures, r.stamp(r.res.Now))
	return nil
}

// trigger is a manual trigger, as a user does it: Issuing=True with reason
// ManualTrigger in the certificate's status.
func (r *run) trigger(ctx context.Context, why string) error {
	c, err := r.certificate(ctx)
	if err != nil {
		return err
	}
	conds := slices.DeleteFunc(c.Status.Conditions, func(cd certificate.Condition) bool { return cd.Type == certificate.ConditionIssuing })
	c.Status.Conditions = append(conds, certificate.Condition{Type: certificate.ConditionIssuing, Status: certificate.StatusTrue,
		Reason: certificate.ReasonManualTrigger, Message: why, LastTransitionTime: r.clk.Now(), ObservedGeneration: c.Generation})
	_, err = r.store.Certificates().Update(ctx, c)
	return err
}

func (r *run) expectRevision(ctx context.Context, want int) (*keys.ParsedSecret, error) {
	if got := r.revision(ctx); got != want {
		c, err := r.certificate(ctx)
		if err != nil {
			return nil, err
		}
		var conds []string
		for _, cd := range c.Status.Conditions {
			conds = append(conds, cd.Type+"="+cd.Status+" ("+cd.Reason+": "+cd.Message+")")
		}
		return nil, fmt.Errorf("quickstart: revision %d, want %d; %s", got, want, strings.Join(conds, "; "))
	}
	p, _, err := r.leaf(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.verify(p); err != nil {
		return nil, err
	}
	fmt.Fprintf(r.w, "   revision %d: serial %x, valid %s – %s, chains to Pebble's root\n", want, p.Leaf.SerialNumber,
		r.stamp(p.Leaf.NotBefore), r.stamp(p.Leaf.NotAfter))
	return p, nil
}

// verify checks the leaf chains to Pebble's root for the name, at the
// fake clock's time.
func (r *run) verify(p *keys.ParsedSecret) error {
	chain, err := p.Chain()
	if err != nil {
		return err
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	_, err = p.Leaf.Verify(x509.VerifyOptions{DNSName: Name, Roots: r.srv.RootPool(), Intermediates: inter, CurrentTime: r.clk.Now()})
	return err
}

// write saves tls.crt, tls.key and Pebble's root. The key is readable by
// its owner only, even when the file was there before with another mode.
func (r *run) write(ctx context.Context, p *keys.ParsedSecret) error {
	_, sec, err := r.leaf(ctx)
	if err != nil {
		return err
	}
	r.res.CertFile = filepath.Join(r.res.Dir, "tls.crt")
	r.res.KeyFile = filepath.Join(r.res.Dir, "tls.key")
	r.res.RootFile = filepath.Join(r.res.Dir, "pebble-root.pem")
	var roots []byte
	for _, c := range r.srv.Roots() {
		roots = append(roots, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	for _, f := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{{r.res.CertFile, sec.Data[keys.SecretCertificate], 0o644}, {r.res.KeyFile, sec.Data[keys.SecretPrivateKey], 0o600}, {r.res.RootFile, roots, 0o644}} {
		if err := writeFile(f.path, f.data, f.mode); err != nil {
			return err
		}
	}
	fmt.Fprintf(r.w, "   wrote %s and %s (serial %x)\n", r.res.CertFile, r.res.KeyFile, p.Leaf.SerialNumber)
	return nil
}

// writeFile writes data to path with mode: a file already there gets the
// mode before anything is written to it, so a key never sits in a file
// others may read.
func writeFile(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	err = f.Chmod(mode)
	if err == nil {
		_, err = f.Write(data)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("quickstart: writing %s: %w", path, err)
	}
	return nil
}
