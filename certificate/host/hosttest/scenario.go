package hosttest

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/localca"
	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/renewal"
)

// scenarioStart is where every scenario's clock starts: a Sunday.
var scenarioStart = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// ScenarioConfig configures RunScenarios. The zero value runs the
// scenarios over a host.MemoryStore and compares their output.
type ScenarioConfig struct {
	// Open returns an empty store for one scenario, on the scenario's
	// fake clock (which only the scenario moves); it is called once per scenario with the
	// scenario's subtest and may register its clean-up with t.Cleanup.
	// Nil means host.NewMemoryStore(clk).
	//
	// The scenarios write as a user would, through the store's own
	// collections (they create certificates, change their specs and
	// statuses, delete secrets and requests), and read everything back at
	// once: the store must show every write that returned in its next
	// read (one whose reads lag shows the loop's passes at other times
	// than the expected output says), and keep a certificate's UID given
	// to Create (the scenario numbers them, so that the names derived
	// from them are the same over every store). certlife's scenarios
	// expect a store that is a host.Watcher; over one that is not, the
	// scenario tells the loop of its writes with host.Loop.Notify, and
	// the loop's resync and its later view of deletions show as passes
	// the expected output does not have.
	Open func(t *testing.T, clk *testingclock.FakeClock) host.Store
	// Rewrite writes the output the commands give now into each file,
	// under its command, in place of comparing it with the output
	// written there: for a new scenario, or after a change that alters
	// the output (review the difference before committing it). The
	// invariants are still checked.
	Rewrite bool
}

// RunScenarios runs each lifecycle scenario file that pattern
// (filepath.Glob) matches as a subtest of t, named after the file
// without ".txt", and fails t when pattern matches none. certlife's own
// scenarios are certificate/host/testdata/scenarios/*.txt in its
// module.
//
// A scenario is a host.Loop on a fake clock over a store from
// cfg.Open, with one issuer, "ca": a local CA that can be told to
// misbehave. The loop's writes to the store go through a wrapper that
// can make them fail (store-fails); the scenario's own writes, which are
// someone else's as a user's would be, go to the store directly, and
// the loop sees them through the store's watch (host.Loop.Notify for a
// store that is not a host.Watcher).
//
// A file is a list of commands, each followed by a line "----" and the
// output it gives, up to a blank line. Lines starting with "#" between
// blocks are comments. Each command's output is compared with the one
// written under it (cfg.Rewrite writes the output the commands give now
// instead). After every command that lets the loop run (all but spec,
// trigger, step, issuer and status) the invariants are checked, whatever
// the expected output says: never two requests for one revision of a
// certificate, and a certificate that says Ready has a secret with a
// matching key pair for its names.
//
// The commands (all objects are in the namespace "default"):
//
//	certificate NAME dns=A,B [cn=] [issuer=ca] [secret=] [duration=] [renew-before=] [usages=A;B] [rotation=Never] [outputs=CombinedPEM] [window="Tue 09:00-11:00 Europe/Oslo"]
//	    creates a certificate (secret NAME-tls unless secret= says, an
//	    ECDSA key), and runs
//	spec NAME (the same fields): changes the spec
//	step: one loop step at the clock's time
//	run: steps until nothing more is due now
//	advance DURATION: moves the clock (2h, 60d) and runs
//	until DURATION: moves the clock from deadline to deadline for that long, running at each
//	issuer ca ok|fail|wrong-key|pending: how the issuer answers from now on
//	    (pending: it records progress and asks to be called again in an hour)
//	trigger NAME: a manual trigger (Issuing=True, ManualTrigger); the loop runs at the next step or run
//	delete-secret NAME / corrupt-secret NAME KEY / strip-annotations NAME: and runs
//	delete-request NAME / delete-certificate NAME: and runs
//	user-secret NAME keypair|ca|empty|labels: a secret a user makes by hand, and runs:
//	    a key pair of their own, only a CA certificate, no data, or only labels and annotations
//	annotate-secret NAME KEY=VALUE: sets an annotation on a secret, and runs
//	data NAME: the keys of a secret's data, and whether its data changed since the last data NAME
//	store-fails N create|update|delete certificates|secrets|requests:
//	    the loop's next N such writes fail ("the disk is full")
//	status NAME: the certificate's status and its secret
//	objects: every secret and request in the store
//
// Each pass of the loop that acts, stops or holds back prints a line:
// the time (the day, counted from 0, and the time of day, UTC; every
// scenario starts on Sunday 1 March 2026 at 12:00 UTC), the
// certificate, the stage, the reason and the actions carried out, then
// why. An issuer's answer prints a line; so does each request the loop
// tells the issuer it deleted (certificate.Forgetter). A pass that stops
// early says why and when the loop looks again.
func RunScenarios(t *testing.T, pattern string, cfg ScenarioConfig) {
	t.Helper()
	runScenarios(realT{t}, pattern, cfg)
}

func runScenarios(t tb, pattern string, cfg ScenarioConfig) {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatalf("hosttest: scenarios %q: %v", pattern, err)
	}
	if len(files) == 0 {
		t.Fatalf("hosttest: no scenario files match %q", pattern)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t tb) {
			runScenario(t, file, cfg)
		})
	}
}

// scenarioBlock is a command, the comments before it and the output
// written under it.
type scenarioBlock struct {
	comments []string
	cmd      string
	want     string
}

func parseScenario(t tb, file string) []scenarioBlock {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatalf("hosttest: %v", err)
	}
	defer f.Close()
	var out []scenarioBlock
	var cur scenarioBlock
	inOutput := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case inOutput && line == "":
			out = append(out, cur)
			cur, inOutput = scenarioBlock{}, false
		case inOutput:
			cur.want += line + "\n"
		case line == "----":
			if cur.cmd == "" {
				t.Fatalf("hosttest: %s:%d: ---- without a command", file, n)
			}
			inOutput = true
		case strings.HasPrefix(line, "#") || line == "":
			cur.comments = append(cur.comments, line)
		default:
			if cur.cmd != "" {
				t.Fatalf("hosttest: %s:%d: %q follows the command %q without ----", file, n, line, cur.cmd)
			}
			cur.cmd = line
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("hosttest: %s: %v", file, err)
	}
	if inOutput || cur.cmd != "" {
		out = append(out, cur)
	}
	return out
}

func runScenario(t tb, file string, cfg ScenarioConfig) {
	t.Helper()
	blocks := parseScenario(t, file)
	s := newScenario(t, cfg)
	var rewritten strings.Builder
	for _, b := range blocks {
		got := s.do(b.cmd)
		switch strings.Fields(b.cmd)[0] {
		case "spec", "trigger", "step", "issuer", "status":
			// The loop has not had its pass yet: a Ready from before the
			// change still stands.
		default:
			s.checkInvariants(b.cmd)
		}
		if cfg.Rewrite {
			for _, c := range b.comments {
				rewritten.WriteString(c + "\n")
			}
			rewritten.WriteString(b.cmd + "\n----\n" + got + "\n")
			continue
		}
		if got != b.want {
			t.Fatalf("%s: %s: the output differs (-want +got; ScenarioConfig.Rewrite writes it):\n%s", file, b.cmd, lineDiff(b.want, got))
		}
	}
	if cfg.Rewrite {
		if err := os.WriteFile(file, []byte(strings.TrimRight(rewritten.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatalf("hosttest: %v", err)
		}
	}
}

// scenario is the host loop on a fake clock over the store under test,
// with a test CA, and the trace of what it does.
type scenario struct {
	t     tb
	ctx   context.Context
	clock *testingclock.FakeClock
	store host.Store
	// user is the store as the scenario writes to it: its creates and
	// updates are counted.
	user host.Store
	// watched: the store reports writes; otherwise the scenario's own
	// writes are told to the loop with Notify.
	watched bool
	loop    *host.Loop
	ca      *scenarioCA
	// writes are the loop's writes to fail (store-fails) and the count
	// of writes made.
	writes *scenarioWrites
	// digests are the secrets' data as the data command last saw it.
	digests map[string]string
	out     strings.Builder
}

const scenarioNamespace = "default"

func newScenario(t tb, cfg ScenarioConfig) *scenario {
	t.Helper()
	root, err := localca.NewRoot(rand.Reader, "scenario CA", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, scenarioStart.AddDate(-1, 0, 0), 10*365*24*time.Hour)
	if err != nil {
		t.Fatalf("hosttest: the scenario CA: %v", err)
	}
	s := &scenario{t: t, ctx: t.testingT().Context(), clock: testingclock.NewFakeClock(scenarioStart), writes: &scenarioWrites{n: map[string]int{}}, digests: map[string]string{}}
	if cfg.Open != nil {
		s.store = cfg.Open(t.testingT(), s.clock)
		if s.store == nil {
			t.Fatalf("hosttest: ScenarioConfig.Open returned a nil store")
		}
	} else {
		s.store = host.NewMemoryStore(s.clock)
	}
	_, s.watched = s.store.(host.Watcher)
	// The scenario's own writes read the store as a user's code would,
	// and must not change what it returns either.
	s.user = CheckReadOnly(t.testingT(), failWrites(s.store, s.writes, true))
	s.ca = &scenarioCA{ca: root, issuer: root.Issuer(nil)}
	s.loop, err = host.New(host.Config{
		// The loop must not change what the store returns.
		Store:   CheckReadOnly(t.testingT(), failWrites(s.store, s.writes, false)),
		Clock:   s.clock,
		Issuers: map[certificate.IssuerRef]certificate.Issuer{{Name: "ca"}: s.ca},
		Observe: s.observe,
	})
	if err != nil {
		t.Fatalf("hosttest: %v", err)
	}
	return s
}

// wrote tells the loop of one of the scenario's own writes when the
// store does not.
func (s *scenario) wrote(kind host.Kind, name string) {
	if !s.watched {
		s.loop.Notify(kind, scenarioNamespace, name)
	}
}

func (s *scenario) do(cmd string) string {
	s.t.Helper()
	s.out.Reset()
	fields := splitCommand(cmd)
	if len(fields) == 0 {
		s.t.Fatalf("hosttest: an empty command")
	}
	args := fields[1:]
	s.wantArgs(cmd, args)
	certs, secrets := s.user.Certificates(), s.user.Secrets()
	switch fields[0] {
	case "certificate":
		c := &certificate.Certificate{ObjectMeta: certificate.ObjectMeta{Name: args[0], Namespace: scenarioNamespace, UID: s.writes.nextUID()},
			Spec: certificate.Spec{SecretName: args[0] + "-tls", IssuerRef: certificate.IssuerRef{Name: "ca"},
				PrivateKey: &keys.KeySpec{Algorithm: keys.AlgorithmECDSA}}}
		s.applySpec(&c.Spec, args[1:])
		_, err := certs.Create(s.ctx, c)
		s.must(err)
		s.wrote(host.KindCertificate, args[0])
		s.run()
	case "spec":
		c := clone(s.certificate(args[0])) // what a store returns is shared
		s.applySpec(&c.Spec, args[1:])
		c, err := certs.Update(s.ctx, c)
		s.must(err)
		s.wrote(host.KindCertificate, args[0])
		fmt.Fprintf(&s.out, "%s generation %d\n", args[0], c.Generation)
	case "step":
		_, err := s.loop.Step(s.ctx)
		s.must(err)
	case "run":
		s.run()
	case "advance":
		s.clock.SetTime(s.clock.Now().Add(s.duration(args[0])))
		s.run()
	case "until":
		end := s.clock.Now().Add(s.duration(args[0]))
		s.run()
		for {
			next, ok := s.loop.Next()
			if !ok || next.After(end) {
				break
			}
			if next.After(s.clock.Now()) {
				s.clock.SetTime(next)
			}
			s.run()
		}
		s.clock.SetTime(end)
	case "issuer":
		switch args[1] {
		case "ok", "fail", "wrong-key", "pending":
		default:
			s.t.Fatalf("hosttest: %q: the issuer answers ok, fail, wrong-key or pending, not %q", cmd, args[1])
		}
		s.ca.mode = args[1]
		fmt.Fprintf(&s.out, "issuer %s: %s\n", args[0], args[1])
	case "trigger":
		c := clone(s.certificate(args[0]))
		c.Status.Conditions = append(slices.DeleteFunc(c.Status.Conditions, func(c certificate.Condition) bool { return c.Type == certificate.ConditionIssuing }),
			certificate.Condition{Type: certificate.ConditionIssuing, Status: certificate.StatusTrue, Reason: certificate.ReasonManualTrigger,
				Message: "renew now", LastTransitionTime: s.clock.Now()})
		_, err := certs.Update(s.ctx, c)
		s.must(err)
		s.wrote(host.KindCertificate, args[0])
		fmt.Fprintf(&s.out, "%s Issuing=True (ManualTrigger)\n", args[0])
	case "delete-secret":
		s.must(secrets.Delete(s.ctx, scenarioNamespace, args[0]))
		s.wrote(host.KindSecret, args[0])
		s.run()
	case "corrupt-secret", "strip-annotations":
		sec, err := secrets.Get(s.ctx, scenarioNamespace, args[0])
		s.must(err)
		sec = clone(sec)
		if fields[0] == "corrupt-secret" {
			sec.Data[args[1]] = []byte("garbage")
		} else {
			sec.Annotations = nil
		}
		_, err = secrets.Update(s.ctx, sec)
		s.must(err)
		s.wrote(host.KindSecret, args[0])
		s.run()
	case "delete-request":
		s.must(s.user.Requests().Delete(s.ctx, scenarioNamespace, args[0]))
		s.wrote(host.KindRequest, args[0])
		s.run()
	case "user-secret":
		_, err := secrets.Create(s.ctx, s.userSecret(args[0], args[1]))
		s.must(err)
		s.wrote(host.KindSecret, args[0])
		s.run()
	case "annotate-secret":
		sec, err := secrets.Get(s.ctx, scenarioNamespace, args[0])
		s.must(err)
		sec = clone(sec)
		k, v, _ := strings.Cut(args[1], "=")
		if sec.Annotations == nil {
			sec.Annotations = map[string]string{}
		}
		sec.Annotations[k] = v
		_, err = secrets.Update(s.ctx, sec)
		s.must(err)
		s.wrote(host.KindSecret, args[0])
		s.run()
	case "data":
		sec, err := secrets.Get(s.ctx, scenarioNamespace, args[0])
		s.must(err)
		names := slices.Sorted(maps.Keys(sec.Data))
		h := sha256.New()
		for _, k := range names {
			fmt.Fprintf(h, "%s=%x;", k, sec.Data[k])
		}
		digest := string(h.Sum(nil))
		fmt.Fprintf(&s.out, "secret %s: %s", args[0], strings.Join(names, " "))
		switch before, ok := s.digests[args[0]]; {
		case !ok:
		case before == digest:
			fmt.Fprint(&s.out, ", unchanged since the last look")
		default:
			fmt.Fprint(&s.out, ", changed since the last look")
		}
		fmt.Fprintln(&s.out)
		s.digests[args[0]] = digest
	case "delete-certificate":
		s.must(certs.Delete(s.ctx, scenarioNamespace, args[0]))
		s.wrote(host.KindCertificate, args[0])
		s.run()
	case "store-fails":
		var n int
		if _, err := fmt.Sscanf(args[0], "%d", &n); err != nil || n < 0 {
			s.t.Fatalf("hosttest: %q: the count %q is not a number of writes", cmd, args[0])
		}
		if err := s.writes.set(args[1], args[2], n); err != nil {
			s.t.Fatalf("hosttest: %q: %v", cmd, err)
		}
		plural := "s"
		if n == 1 {
			plural = ""
		}
		fmt.Fprintf(&s.out, "the loop's next %d %s%s of %s fail\n", n, args[1], plural, args[2])
	case "status":
		s.status(args[0])
	case "objects":
		s.objects()
	default:
		s.t.Fatalf("hosttest: unknown scenario command %q", cmd)
	}
	s.forgotten("")
	return s.out.String()
}

// scenarioArgs is how many arguments each command needs at least.
var scenarioArgs = map[string]int{
	"certificate": 1, "spec": 1, "advance": 1, "until": 1, "issuer": 2, "trigger": 1,
	"delete-secret": 1, "corrupt-secret": 2, "strip-annotations": 1, "delete-request": 1,
	"user-secret": 2, "annotate-secret": 2, "data": 1, "delete-certificate": 1,
	"store-fails": 3, "status": 1,
}

// wantArgs fails a command given fewer arguments than it needs.
func (s *scenario) wantArgs(cmd string, args []string) {
	s.t.Helper()
	if n := scenarioArgs[strings.Fields(cmd)[0]]; len(args) < n {
		s.t.Fatalf("hosttest: %q: %d arguments, want %d", cmd, len(args), n)
	}
}

// userSecret is a secret a user makes by hand: a key pair of their own
// (a key and a self-signed certificate for "my own CA"), only a CA
// certificate, no data at all, or only labels and annotations.
func (s *scenario) userSecret(name, kind string) *certificate.Secret {
	s.t.Helper()
	sec := &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Name: name, Namespace: scenarioNamespace}}
	switch kind {
	case "keypair", "ca":
		own, err := localca.NewRoot(rand.Reader, "my own CA", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, s.clock.Now().AddDate(-1, 0, 0), 10*365*24*time.Hour)
		s.must(err)
		sec.Data = map[string][]byte{keys.SecretCA: own.CertificatePEM()}
		if kind == "keypair" {
			keyPEM, err := own.KeyPEM()
			s.must(err)
			sec.Data[keys.SecretCertificate], sec.Data[keys.SecretPrivateKey] = own.CertificatePEM(), keyPEM
		}
	case "empty":
	case "labels":
		sec.Labels, sec.Annotations = map[string]string{"team": "web"}, map[string]string{"owner": "platform-team"}
	default:
		s.t.Fatalf("hosttest: user-secret %s %s: the kind is keypair, ca, empty or labels", name, kind)
	}
	return sec
}

func (s *scenario) certificate(name string) *certificate.Certificate {
	s.t.Helper()
	c, err := s.store.Certificates().Get(s.ctx, scenarioNamespace, name)
	s.must(err)
	return c
}

// requests lists the requests a certificate owns, by name.
func (s *scenario) requests(c *certificate.Certificate) []*certificate.CertificateRequest {
	s.t.Helper()
	reqs, err := s.store.Requests().List(s.ctx, host.ListOptions{Namespace: scenarioNamespace, OwnerUID: c.UID})
	s.must(err)
	slices.SortFunc(reqs, func(a, b *certificate.CertificateRequest) int { return strings.Compare(a.Name, b.Name) })
	return reqs
}

// checkInvariants holds once the loop has settled, whatever the expected
// output says: never two requests for one revision of a certificate, and
// a certificate that says Ready has a secret with a matching key pair
// for its names.
func (s *scenario) checkInvariants(cmd string) {
	s.t.Helper()
	certs, err := s.store.Certificates().List(s.ctx, host.ListOptions{})
	s.must(err)
	for _, c := range certs {
		seen := map[string]string{}
		for _, r := range s.requests(c) {
			rev := r.Annotations[certificate.AnnotationRevision]
			if other, ok := seen[rev]; ok {
				s.t.Fatalf("after %q: requests %s and %s are both for revision %s of %s", cmd, other, r.Name, rev, c.Name)
			}
			seen[rev] = r.Name
		}
		ready := c.Status.Condition(certificate.ConditionReady)
		if ready == nil || ready.Status != certificate.StatusTrue {
			continue
		}
		sec, err := s.store.Secrets().Get(s.ctx, scenarioNamespace, c.Spec.SecretName)
		if err != nil {
			s.t.Fatalf("after %q: %s is Ready without a secret: %v", cmd, c.Name, err)
		}
		p, _ := keys.ParseSecretData(sec.Data)
		if !p.KeyMatches {
			s.t.Fatalf("after %q: %s is Ready but its secret does not hold a matching key pair", cmd, c.Name)
		}
		if err := keys.CompareCertificateNames(p.Leaf, c.Spec.Template()); err != nil {
			s.t.Fatalf("after %q: %s is Ready but its secret's certificate is not for its names: %v", cmd, c.Name, err)
		}
	}
}

func (s *scenario) must(err error) {
	s.t.Helper()
	if err != nil {
		s.t.Fatalf("%v", err)
	}
}

func (s *scenario) run() {
	s.t.Helper()
	if _, err := Settle(s.ctx, s.loop, 50); err != nil {
		s.t.Fatalf("%v\n%s", err, s.out.String())
	}
}

// applySpec sets the spec fields named by key=value arguments.
func (s *scenario) applySpec(spec *certificate.Spec, args []string) {
	s.t.Helper()
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		switch k {
		case "dns":
			spec.DNSNames = strings.Split(v, ",")
		case "cn":
			spec.CommonName = v
		case "issuer":
			spec.IssuerRef.Name = v
		case "secret":
			spec.SecretName = v
		case "duration":
			spec.Duration = &certificate.Duration{Duration: s.duration(v)}
		case "renew-before":
			spec.RenewBefore = &certificate.Duration{Duration: s.duration(v)}
		case "usages":
			spec.Usages = nil
			for _, u := range strings.Split(v, ";") {
				spec.Usages = append(spec.Usages, keys.Usage(u))
			}
		case "rotation":
			spec.PrivateKey.RotationPolicy = keys.RotationPolicy(v)
		case "outputs":
			spec.AdditionalOutputFormats = []certificate.OutputFormat{certificate.OutputFormat(v)}
		case "window":
			f := strings.Fields(v) // "Tue 09:00-11:00 Europe/Oslo"
			if len(f) != 3 {
				s.t.Fatalf("hosttest: window=%q: want a day, a time range and a time zone, as \"Tue 09:00-11:00 Europe/Oslo\"", v)
			}
			start, end, _ := strings.Cut(f[1], "-")
			spec.Renewal = &renewal.Spec{Policy: renewal.PolicyScheduled,
				Windows: []renewal.Window{{DaysOfWeek: []string{f[0]}, Start: start, End: end, TimeZone: f[2]}}}
		default:
			s.t.Fatalf("hosttest: unknown spec field %q", k)
		}
	}
}

// duration parses 2h, 90m or 60d.
func (s *scenario) duration(v string) time.Duration {
	s.t.Helper()
	if d, ok := strings.CutSuffix(v, "d"); ok {
		var n int
		if _, err := fmt.Sscanf(d, "%d", &n); err != nil {
			s.t.Fatalf("hosttest: duration %q: %v", v, err)
		}
		return time.Duration(n) * 24 * time.Hour
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		s.t.Fatalf("hosttest: duration %q: %v", v, err)
	}
	return d
}

// stamp is a time as the calendar day since the scenario began and the
// clock time (UTC).
func stamp(t time.Time) string {
	days := int(t.UTC().Truncate(24*time.Hour).Sub(scenarioStart.Truncate(24*time.Hour)) / (24 * time.Hour))
	return fmt.Sprintf("day %3d %s", days, t.UTC().Format("15:04:05"))
}

// observe writes one line per event: the time, who, the reason and the
// actions carried out, then why (and why the certificate is being issued).
func (s *scenario) observe(e host.Event) {
	if e.Kind == host.KindRequest {
		if r := e.Request; r != nil {
			ready := r.Condition(certificate.RequestConditionReady)
			switch {
			case ready != nil && ready.Status == certificate.StatusTrue:
				fmt.Fprintf(&s.out, "%s  issuer %-12s %s answered: %s\n", stamp(e.Time), r.Spec.IssuerRef.Name, r.Name, ready.Reason)
			case ready != nil && !certificate.Answered(r):
				fmt.Fprintf(&s.out, "%s  issuer %-12s %s %s: %s\n", stamp(e.Time), r.Spec.IssuerRef.Name, r.Name, ready.Reason, ready.Message)
			case ready != nil:
				fmt.Fprintf(&s.out, "%s  issuer %-12s %s answered: %s: %s\n", stamp(e.Time), r.Spec.IssuerRef.Name, r.Name, ready.Reason, ready.Message)
			}
		}
		if e.Err != nil {
			fmt.Fprintf(&s.out, "%s  issuer on %s stopped: %v; again at %s\n", stamp(e.Time), e.Name, e.Err, stamp(e.Next))
		}
		return
	}
	defer s.forgotten("             ")
	res := e.Result
	if res == nil {
		// The pass stopped before a decision (a read failed).
		if e.Err != nil {
			fmt.Fprintf(&s.out, "%s  %-5s stopped: %v; again at %s\n", stamp(e.Time), e.Name, e.Err, stamp(e.Next))
		}
		return
	}
	if len(e.Done) == 0 && e.Err == nil && !quietWorthShowing(res) {
		return
	}
	acts := make([]string, len(e.Done))
	for i, a := range e.Done {
		acts[i] = a.String()
	}
	fmt.Fprintf(&s.out, "%s  %-5s %-14s %-22s %s\n", stamp(e.Time), e.Name, res.Stage, res.Reason, strings.Join(acts, " "))
	fmt.Fprintf(&s.out, "             why: %s\n", res.Message)
	if res.IssuanceReason != "" {
		fmt.Fprintf(&s.out, "             issuing: %s\n", res.IssuanceReason)
	}
	if e.Err != nil {
		fmt.Fprintf(&s.out, "             stopped: %v; again at %s\n", e.Err, stamp(e.Next))
	}
}

// forgotten prints the requests the issuer was told are deleted since it
// last printed them: under a pass (indent), or on their own.
func (s *scenario) forgotten(indent string) {
	for _, name := range s.ca.takeForgotten() {
		if indent != "" {
			fmt.Fprintf(&s.out, "%sissuer ca told: %s deleted\n", indent, name)
		} else {
			fmt.Fprintf(&s.out, "%s  issuer ca           told: %s deleted\n", stamp(s.clock.Now()), name)
		}
	}
}

// objects lists the store's secrets and requests, by name.
func (s *scenario) objects() {
	s.t.Helper()
	secs, err := s.store.Secrets().List(s.ctx, host.ListOptions{Namespace: scenarioNamespace})
	s.must(err)
	slices.SortFunc(secs, func(a, b *certificate.Secret) int { return strings.Compare(a.Name, b.Name) })
	for _, sec := range secs {
		what := "secret"
		if sec.Labels[certificate.LabelNextPrivateKey] == "true" {
			what = "next private key"
		}
		fmt.Fprintf(&s.out, "%s %s\n", what, sec.Name)
	}
	reqs, err := s.store.Requests().List(s.ctx, host.ListOptions{Namespace: scenarioNamespace})
	s.must(err)
	slices.SortFunc(reqs, func(a, b *certificate.CertificateRequest) int { return strings.Compare(a.Name, b.Name) })
	for _, r := range reqs {
		fmt.Fprintf(&s.out, "request %s\n", r.Name)
	}
}

// quietWorthShowing: a pass with no actions is shown when it holds
// something back that no status write shows (backoff, a secret in use, a
// cache behind).
func quietWorthShowing(res *certificate.Result) bool {
	switch res.Reason {
	case certificate.ReasonBackoff, certificate.ReasonSecretInUse, certificate.ReasonSecretNotCaughtUp, certificate.ReasonSecretNotOwned:
		return true
	}
	return false
}

func (s *scenario) status(name string) {
	s.t.Helper()
	c := s.certificate(name)
	for _, cd := range c.Status.Conditions {
		fmt.Fprintf(&s.out, "%s=%s (%s): %s\n", cd.Type, cd.Status, cd.Reason, cd.Message)
	}
	if c.Status.Revision != nil {
		fmt.Fprintf(&s.out, "revision %d", *c.Status.Revision)
		if c.Status.NotAfter != nil {
			fmt.Fprintf(&s.out, ", valid until %s, renewal at %s", stamp(*c.Status.NotAfter), stamp(*c.Status.RenewalTime))
		}
		fmt.Fprintln(&s.out)
	}
	if c.Status.FailedIssuanceAttempts != nil {
		fmt.Fprintf(&s.out, "failed attempts %d, last at %s\n", *c.Status.FailedIssuanceAttempts, stamp(*c.Status.LastFailureTime))
	}
	sec, err := s.store.Secrets().Get(s.ctx, scenarioNamespace, c.Spec.SecretName)
	if err != nil {
		fmt.Fprintf(&s.out, "secret %s: %v\n", c.Spec.SecretName, err)
		return
	}
	p, _ := keys.ParseSecretData(sec.Data)
	fmt.Fprintf(&s.out, "secret %s: key matches %v, for %s, issued by %s/%s\n", sec.Name, p.KeyMatches,
		sec.Annotations[certificate.AnnotationAltNames], sec.Annotations[certificate.AnnotationIssuerKind], sec.Annotations[certificate.AnnotationIssuerName])
	var reqs []string
	for _, r := range s.requests(c) {
		reqs = append(reqs, r.Name)
	}
	fmt.Fprintf(&s.out, "requests: %s\n", strings.Join(reqs, " "))
}

// lineDiff shows the lines of want missing from got (-) and those got
// has in their place (+), with the lines around them.
func lineDiff(want, got string) string {
	a, b := strings.SplitAfter(want, "\n"), strings.SplitAfter(got, "\n")
	// lcs[i][j] is the length of the longest common subsequence of a[i:]
	// and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	line := func(prefix, l string) {
		out.WriteString(prefix + strings.TrimSuffix(l, "\n") + "\n")
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			line("  ", a[i])
			i, j = i+1, j+1
		case j < len(b) && (i == len(a) || lcs[i][j+1] >= lcs[i+1][j]):
			line("+ ", b[j])
			j++
		default:
			line("- ", a[i])
			i++
		}
	}
	return out.String()
}

// splitCommand splits a command on spaces, keeping "quoted values" whole.
func splitCommand(s string) []string {
	var out []string
	var cur strings.Builder
	quoted := false
	for _, r := range s {
		switch {
		case r == '"':
			quoted = !quoted
		case r == ' ' && !quoted:
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}
