package host_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/host/hosttest"
	"github.com/certlife/certlife/certificate/localca"
	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/renewal"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output in testdata/scenarios/*.txt")

// scenarioStart is where every scenario's clock starts: a Sunday.
var scenarioStart = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// TestScenarios runs the lifecycle scenarios in testdata/scenarios through
// the host loop (host.Loop over a host.MemoryStore on a fake clock, with
// one issuer, "ca": a local CA that can be told to misbehave). Each file
// is a list of commands, each followed by "----" and the output it gives,
// up to a blank line; -rewrite writes the output the commands give now.
//
// Commands (the writes they make are someone else's, as a user's would
// be; the loop sees them through the store's watch):
//
//	certificate NAME dns=A,B [cn=] [issuer=ca] [secret=] [duration=] [renew-before=] [usages=A;B] [rotation=Never] [outputs=CombinedPEM] [window="Tue 09:00-11:00 Europe/Oslo"]
//	    creates a certificate, and runs
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
// Each pass of the loop that acts, stops or holds back prints a line: the
// time, the certificate, the stage, the reason and the actions carried
// out, then why. An issuer's answer prints a line; so does each request
// the loop tells the issuer it deleted (certificate.Forgetter). A
// pass that stops early says why and when the loop looks again.
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "scenarios", "*.txt"))
	require.NoError(t, err, "no scenarios")
	require.NotEmpty(t, files, "no scenarios")
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			runScenario(t, file)
		})
	}
}

// block is a command and the output written under it.
type block struct {
	comments []string
	cmd      string
	want     string
}

func parseScenario(t *testing.T, file string) []block {
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	var out []block
	var cur block
	inOutput := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case inOutput && line == "":
			out = append(out, cur)
			cur, inOutput = block{}, false
		case inOutput:
			cur.want += line + "\n"
		case line == "----":
			require.NotEmpty(t, cur.cmd, "%s: ---- without a command", file)
			inOutput = true
		case strings.HasPrefix(line, "#") || line == "":
			cur.comments = append(cur.comments, line)
		default:
			require.Empty(t, cur.cmd, "%s: %q follows a command without ----", file, line)
			cur.cmd = line
		}
	}
	require.NoError(t, sc.Err())
	if inOutput || cur.cmd != "" {
		out = append(out, cur)
	}
	return out
}

func runScenario(t *testing.T, file string) {
	blocks := parseScenario(t, file)
	s := newScenario(t)
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
		if *rewrite {
			for _, c := range b.comments {
				rewritten.WriteString(c + "\n")
			}
			rewritten.WriteString(b.cmd + "\n----\n" + got + "\n")
			continue
		}
		require.Equal(t, b.want, got, "%s: %s (go test -rewrite updates the file)", file, b.cmd)
	}
	if *rewrite {
		require.NoError(t, os.WriteFile(file, []byte(strings.TrimRight(rewritten.String(), "\n")+"\n"), 0o644))
	}
}

// scenario is the host loop on a fake clock over a memory store, with a
// test CA, and the trace of what it does.
type scenario struct {
	t     *testing.T
	ctx   context.Context
	clock *testingclock.FakeClock
	store *host.MemoryStore
	loop  *host.Loop
	ca    *testCA
	// fails are the loop's writes to fail: "create secrets" → how many.
	fails map[string]int
	// digests are the secrets' data as the data command last saw it.
	digests map[string]string
	out     strings.Builder
}

const namespace = "default"

func newScenario(t *testing.T) *scenario {
	root, err := localca.NewRoot(rand.Reader, "scenario CA", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, scenarioStart.AddDate(-1, 0, 0), 10*365*24*time.Hour)
	require.NoError(t, err)
	s := &scenario{t: t, ctx: context.Background(), clock: testingclock.NewFakeClock(scenarioStart), fails: map[string]int{}, digests: map[string]string{}}
	s.store = host.NewMemoryStore(s.clock)
	s.ca = &testCA{ca: root, issuer: root.Issuer(nil)}
	s.loop, err = host.New(host.Config{
		Store:   &failingStore{MemoryStore: s.store, fails: s.fails},
		Clock:   s.clock,
		Issuers: map[certificate.IssuerRef]certificate.Issuer{{Name: "ca"}: s.ca},
		Observe: s.observe,
	})
	require.NoError(t, err)
	return s
}

func (s *scenario) do(cmd string) string {
	s.out.Reset()
	fields := splitFields(cmd)
	require.NotEmpty(s.t, fields, "empty command")
	args := fields[1:]
	certs, secrets := s.store.Certificates(), s.store.Secrets()
	switch fields[0] {
	case "certificate":
		c := &certificate.Certificate{ObjectMeta: certificate.ObjectMeta{Name: args[0], Namespace: namespace},
			Spec: certificate.Spec{SecretName: args[0] + "-tls", IssuerRef: certificate.IssuerRef{Name: "ca"},
				PrivateKey: &keys.KeySpec{Algorithm: keys.AlgorithmECDSA}}}
		s.applySpec(&c.Spec, args[1:])
		_, err := certs.Create(s.ctx, c)
		s.must(err)
		s.run()
	case "spec":
		c := s.certificate(args[0])
		s.applySpec(&c.Spec, args[1:])
		c, err := certs.Update(s.ctx, c)
		s.must(err)
		fmt.Fprintf(&s.out, "%s generation %d\n", args[0], c.Generation)
	case "step":
		_, err := s.loop.Step(s.ctx)
		s.must(err)
	case "run":
		s.run()
	case "advance":
		s.clock.SetTime(s.clock.Now().Add(parseDuration(s.t, args[0])))
		s.run()
	case "until":
		end := s.clock.Now().Add(parseDuration(s.t, args[0]))
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
		s.ca.mode = args[1]
		fmt.Fprintf(&s.out, "issuer %s: %s\n", args[0], args[1])
	case "trigger":
		c := s.certificate(args[0])
		c.Status.Conditions = append(slices.DeleteFunc(c.Status.Conditions, func(c certificate.Condition) bool { return c.Type == certificate.ConditionIssuing }),
			certificate.Condition{Type: certificate.ConditionIssuing, Status: certificate.StatusTrue, Reason: certificate.ReasonManualTrigger,
				Message: "renew now", LastTransitionTime: s.clock.Now()})
		_, err := certs.Update(s.ctx, c)
		s.must(err)
		fmt.Fprintf(&s.out, "%s Issuing=True (ManualTrigger)\n", args[0])
	case "delete-secret":
		s.must(secrets.Delete(s.ctx, namespace, args[0]))
		s.run()
	case "corrupt-secret", "strip-annotations":
		sec, err := secrets.Get(s.ctx, namespace, args[0])
		s.must(err)
		if fields[0] == "corrupt-secret" {
			sec.Data[args[1]] = []byte("garbage")
		} else {
			sec.Annotations = nil
		}
		_, err = secrets.Update(s.ctx, sec)
		s.must(err)
		s.run()
	case "delete-request":
		s.must(s.store.Requests().Delete(s.ctx, namespace, args[0]))
		s.run()
	case "user-secret":
		_, err := secrets.Create(s.ctx, s.userSecret(args[0], args[1]))
		s.must(err)
		s.run()
	case "annotate-secret":
		sec, err := secrets.Get(s.ctx, namespace, args[0])
		s.must(err)
		k, v, _ := strings.Cut(args[1], "=")
		if sec.Annotations == nil {
			sec.Annotations = map[string]string{}
		}
		sec.Annotations[k] = v
		_, err = secrets.Update(s.ctx, sec)
		s.must(err)
		s.run()
	case "data":
		sec, err := secrets.Get(s.ctx, namespace, args[0])
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
		s.must(certs.Delete(s.ctx, namespace, args[0]))
		s.run()
	case "store-fails":
		var n int
		_, err := fmt.Sscanf(args[0], "%d", &n)
		s.must(err)
		s.fails[args[1]+" "+args[2]] = n
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
		s.t.Fatalf("unknown command %q", cmd)
	}
	s.forgotten("")
	return s.out.String()
}

// userSecret is a secret a user makes by hand: a key pair of their own
// (a key and a self-signed certificate for "my own CA"), only a CA
// certificate, no data at all, or only labels and annotations.
func (s *scenario) userSecret(name, kind string) *certificate.Secret {
	sec := &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Name: name, Namespace: namespace}}
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
		s.t.Fatalf("unknown user secret %q", kind)
	}
	return sec
}

func (s *scenario) certificate(name string) *certificate.Certificate {
	c, err := s.store.Certificates().Get(s.ctx, namespace, name)
	s.must(err)
	return c
}

// requests lists the requests a certificate owns, by name.
func (s *scenario) requests(c *certificate.Certificate) []*certificate.CertificateRequest {
	reqs, err := s.store.Requests().List(s.ctx, host.ListOptions{Namespace: namespace, OwnerUID: c.UID})
	s.must(err)
	slices.SortFunc(reqs, func(a, b *certificate.CertificateRequest) int { return strings.Compare(a.Name, b.Name) })
	return reqs
}

// checkInvariants holds once the loop has settled, whatever the golden
// output says: never two requests for one revision of a certificate, and a
// certificate that says Ready has a secret with a matching key pair for its
// names.
func (s *scenario) checkInvariants(cmd string) {
	s.t.Helper()
	certs, err := s.store.Certificates().List(s.ctx, host.ListOptions{})
	s.must(err)
	for _, c := range certs {
		seen := map[string]string{}
		for _, r := range s.requests(c) {
			rev := r.Annotations[certificate.AnnotationRevision]
			other, ok := seen[rev]
			require.False(s.t, ok, "after %q: requests %s and %s are both for revision %s of %s", cmd, other, r.Name, rev, c.Name)
			seen[rev] = r.Name
		}
		ready := c.Status.Condition(certificate.ConditionReady)
		if ready == nil || ready.Status != certificate.StatusTrue {
			continue
		}
		sec, err := s.store.Secrets().Get(s.ctx, namespace, c.Spec.SecretName)
		require.NoError(s.t, err, "after %q: %s is Ready without a secret", cmd, c.Name)
		p, _ := keys.ParseSecretData(sec.Data)
		require.NotNil(s.t, p, "after %q: %s is Ready but its secret cannot be read", cmd, c.Name)
		require.True(s.t, p.KeyMatches, "after %q: %s is Ready but its secret does not hold a matching key pair", cmd, c.Name)
		require.Nil(s.t, keys.CompareCertificateNames(p.Leaf, c.Spec.Template()), "after %q: %s is Ready but its secret's certificate is not for its names", cmd, c.Name)
	}
}

func (s *scenario) must(err error) {
	s.t.Helper()
	require.NoError(s.t, err)
}

func (s *scenario) run() {
	s.t.Helper()
	_, err := hosttest.Settle(s.ctx, s.loop, 50)
	require.NoError(s.t, err, "%s", s.out.String())
}

// applySpec sets the spec fields named by key=value arguments.
func (s *scenario) applySpec(spec *certificate.Spec, args []string) {
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
			spec.Duration = &certificate.Duration{Duration: parseDuration(s.t, v)}
		case "renew-before":
			spec.RenewBefore = &certificate.Duration{Duration: parseDuration(s.t, v)}
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
			start, end, _ := strings.Cut(f[1], "-")
			spec.Renewal = &renewal.Spec{Policy: renewal.PolicyScheduled,
				Windows: []renewal.Window{{DaysOfWeek: []string{f[0]}, Start: start, End: end, TimeZone: f[2]}}}
		default:
			s.t.Fatalf("unknown spec field %q", k)
		}
	}
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
	secs, err := s.store.Secrets().List(s.ctx, host.ListOptions{Namespace: namespace})
	s.must(err)
	slices.SortFunc(secs, func(a, b *certificate.Secret) int { return strings.Compare(a.Name, b.Name) })
	for _, sec := range secs {
		what := "secret"
		if sec.Labels[certificate.LabelNextPrivateKey] == "true" {
			what = "next private key"
		}
		fmt.Fprintf(&s.out, "%s %s\n", what, sec.Name)
	}
	reqs, err := s.store.Requests().List(s.ctx, host.ListOptions{Namespace: namespace})
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
	sec, err := s.store.Secrets().Get(s.ctx, namespace, c.Spec.SecretName)
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

func parseDuration(t *testing.T, s string) time.Duration {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		_, err := fmt.Sscanf(d, "%d", &n)
		require.NoError(t, err, "duration %q", s)
		return time.Duration(n) * 24 * time.Hour
	}
	v, err := time.ParseDuration(s)
	require.NoError(t, err, "duration %q", s)
	return v
}

// splitFields splits a command on spaces, keeping "quoted values" whole.
func splitFields(s string) []string {
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

// testCA is the scenarios' issuer: a local CA that can be told to fail,
// to certify another key than the request's, or to keep requests pending.
// It records the requests it is told are deleted.
type testCA struct {
	ca     *localca.CA
	issuer certificate.Issuer
	mode   string
	forgot []string
}

var (
	_ certificate.Issuer    = (*testCA)(nil)
	_ certificate.Forgetter = (*testCA)(nil)
)

func (c *testCA) Answer(ctx context.Context, r *certificate.CertificateRequest, now time.Time) (time.Time, error) {
	switch c.mode {
	case "pending":
		certificate.SetPending(r, "waiting for the CA", now)
		return now.Add(time.Hour), nil
	case "fail":
		certificate.SetFailed(r, "the CA is down", now, time.Time{})
		return time.Time{}, nil
	case "wrong-key":
		csr, err := keys.ParseCSR(r.Spec.Request)
		if err != nil {
			return time.Time{}, err
		}
		other, err := keys.Generate(rand.Reader, keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
		if err != nil {
			return time.Time{}, err
		}
		fake := *r
		fake.Spec.Request, err = keys.BuildCSR(rand.Reader, keys.RequestTemplate{CommonName: csr.Subject.CommonName, DNSNames: csr.DNSNames}, other)
		if err != nil {
			return time.Time{}, err
		}
		if err := c.ca.Issue(rand.Reader, &fake, now); err != nil {
			return time.Time{}, err
		}
		r.Status = fake.Status
		return time.Time{}, nil
	}
	return c.issuer.Answer(ctx, r, now)
}

func (c *testCA) Forget(ctx context.Context, namespace, name string) error {
	c.forgot = append(c.forgot, namespace+"/"+name)
	if f, ok := c.issuer.(certificate.Forgetter); ok {
		return f.Forget(ctx, namespace, name)
	}
	return nil
}

func (c *testCA) takeForgotten() []string {
	f := c.forgot
	c.forgot = nil
	return f
}

// failingStore is the scenarios' store as the loop sees it: the memory
// store, with the loop's next writes of a kind failing when a scenario
// asks (store-fails). It reports writes and is authoritative, as the
// memory store is.
type failingStore struct {
	*host.MemoryStore
	fails map[string]int
}

func (s *failingStore) Certificates() host.Collection[*certificate.Certificate] {
	return failing[*certificate.Certificate]{s.MemoryStore.Certificates(), s.fails, "certificates"}
}

func (s *failingStore) Secrets() host.Collection[*certificate.Secret] {
	return failing[*certificate.Secret]{s.MemoryStore.Secrets(), s.fails, "secrets"}
}

func (s *failingStore) Requests() host.Collection[*certificate.CertificateRequest] {
	return failing[*certificate.CertificateRequest]{s.MemoryStore.Requests(), s.fails, "requests"}
}

type failing[T host.Object] struct {
	host.Collection[T]
	fails map[string]int
	kind  string
}

var errDiskFull = errors.New("the disk is full")

// fail reports whether the write op should fail, counting it.
func (c failing[T]) fail(op string) bool {
	k := op + " " + c.kind
	if c.fails[k] == 0 {
		return false
	}
	c.fails[k]--
	return true
}

func (c failing[T]) Create(ctx context.Context, obj T) (T, error) {
	if c.fail("create") {
		return nil, errDiskFull
	}
	return c.Collection.Create(ctx, obj)
}

func (c failing[T]) Update(ctx context.Context, obj T) (T, error) {
	if c.fail("update") {
		return nil, errDiskFull
	}
	return c.Collection.Update(ctx, obj)
}

func (c failing[T]) Delete(ctx context.Context, namespace, name string) error {
	if c.fail("delete") {
		return errDiskFull
	}
	return c.Collection.Delete(ctx, namespace, name)
}
