package managed_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/certlife/certlife/acmeclient/acmetest"
	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/host/sqlstore"
	"github.com/certlife/certlife/internal/pgtest"
	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/managed"
)

// replicaEnv, when set, makes the test binary a replica of the replicas
// test instead of running the tests: its value is the path of the
// replica's configuration (replicaConfig, JSON).
const replicaEnv = "CERTLIFE_MANAGED_REPLICA"

// One PostgreSQL server for the package's tests, started by the first
// that needs it; a replica process starts none.
func TestMain(m *testing.M) {
	if path := os.Getenv(replicaEnv); path != "" {
		os.Exit(replicaMain(path))
	}
	os.Exit(pgtest.Main(m))
}

// replicaConfig is what a replica process is told.
type replicaConfig struct {
	DSN           string
	DirectoryURL  string
	CABundle      []byte // PEM: the ACME endpoint's TLS certificate
	Certificates  int
	Identity      string
	LeaseDuration time.Duration
}

// replicaMain is a replica: the Manager of the service over the shared
// database, serving HTTP-01 on a loopback port it prints to stdout
// ("plain ADDR"), running on the real clock until it is killed.
func replicaMain(path string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "replica:", err)
		return 1
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return fail(err)
	}
	var cfg replicaConfig
	if err := json.Unmarshal(b, &cfg); err != nil {
		return fail(err)
	}
	cfg.Identity = os.Getenv(replicaEnv + "_IDENTITY")
	db, err := sql.Open("pgx", cfg.DSN)
	if err != nil {
		return fail(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(cfg.CABundle) {
		return fail(errors.New("no certificate in the CA bundle"))
	}
	client := &http.Client{Timeout: 30 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	ctx := context.Background()
	m, err := managed.New(ctx, managed.Config{DB: db, Dialect: sqlstore.PostgreSQL,
		ACME:         &managed.ACME{DirectoryURL: cfg.DirectoryURL, HTTPClient: client, AgreeToTerms: true, RequestValidity: true},
		Certificates: replicaCertificates(cfg.Certificates),
		Identity:     cfg.Identity, LeaseDuration: cfg.LeaseDuration,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return fail(err)
	}
	if err := m.ListenAndServe("127.0.0.1:0", "127.0.0.1:0", http.NotFoundHandler()); err != nil {
		return fail(err)
	}
	fmt.Printf("plain %s\n", m.Addrs()[1])
	if err := m.Run(ctx); err != nil {
		return fail(err)
	}
	return 0
}

// replicaCertificates are n certificates of one name each, c000.example
// and on.
func replicaCertificates(n int) []managed.Certificate {
	out := make([]managed.Certificate, n)
	for i := range out {
		name := fmt.Sprintf("c%03d", i)
		out[i] = managed.Certificate{Name: name, DNSNames: []string{name + ".example"}, Issuer: managed.IssuerACME}
	}
	return out
}

// Figures of the replicas test.
const (
	replicaCount      = 3
	replicaCerts      = 100
	replicaLease      = 10 * time.Second
	replicaConvergeBy = 150 * time.Second
)

// Three processes of one service share one PostgreSQL database and sit
// behind one name (a balancer in front of their HTTP-01 ports), with the
// same 100 certificates to keep, each ordered from Pebble. A replica is
// killed with SIGKILL every one to four seconds (the schedule is seeded;
// CERTLIFE_REPLICAS_SEED repeats one) and started again, under a new
// identity, until every certificate is issued. Then: every certificate
// is issued with a chain that verifies against Pebble's roots; Pebble
// created exactly one order per name (per revision), whichever replica
// asked; no lease of a killed replica lasted past its death by more than
// the lease duration, each request it held was taken over by another
// (or answered), and no replica took a lease another held unexpired.
func TestReplicasKilledAtRandom(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL, Pebble and replica processes for a minute or two")
	}
	began := time.Now()
	dsn := pgtest.Start(t)
	db, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	defer db.Close()
	ctx := context.Background()
	// The parent's own store: it makes the schema before the replicas
	// start, and reads the certificates.
	store, err := sqlstore.Open(ctx, db, sqlstore.Options{Dialect: sqlstore.PostgreSQL})
	require.NoError(t, err)
	defer store.Close()
	require.NoError(t, logLeases(ctx, db))

	pebbleLog := &tailLog{max: 400}
	ca, err := acmetest.Start(acmetest.Options{Log: pebbleLog})
	require.NoError(t, err)
	defer ca.Close()

	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "replica.json")
	b, err := json.Marshal(replicaConfig{DSN: dsn, DirectoryURL: ca.DirectoryURL, CABundle: ca.CABundle(),
		Certificates: replicaCerts, LeaseDuration: replicaLease})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(cfgPath, b, 0o600))

	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("CERTLIFE_REPLICAS_SEED"); s != "" {
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "CERTLIFE_REPLICAS_SEED")
	}
	t.Logf("kill schedule seed %d (CERTLIFE_REPLICAS_SEED=%d repeats it)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))

	fleet := &fleet{t: t, cfgPath: cfgPath, logDir: dir, lb: &balancer{}}
	defer fleet.stopAll()
	ca.SetHTTP01Handler(fleet.lb)
	for slot := range replicaCount {
		require.NoError(t, fleet.start(slot))
	}

	var kills []kill
	deadline := time.Now().Add(replicaConvergeBy)
	for {
		n, err := readyCount(ctx, store)
		require.NoError(t, err)
		if n == replicaCerts {
			break
		}
		if time.Now().After(deadline) {
			fleet.dumpLogs()
			t.Logf("Pebble's log (last lines of %d):\n%s", pebbleLog.total(), pebbleLog.String())
			t.Logf("Pebble's goroutines:\n%s", pebbleGoroutines())
			t.Fatalf("%d of %d certificates issued after %v, %d kills:\n%s", n, replicaCerts, replicaConvergeBy, len(kills), notReady(ctx, store))
		}
		wait := time.Second + time.Duration(rng.Int64N(int64(3*time.Second)))
		if !fleet.sleepUnlessReady(ctx, store, wait) {
			continue // the next round finds them all issued
		}
		slot := rng.IntN(replicaCount)
		k, err := fleet.kill(slot)
		require.NoError(t, err)
		kills = append(kills, k)
		t.Logf("%6.1fs: killed %s", k.at.Sub(began).Seconds(), k.identity)
		time.Sleep(time.Duration(200+rng.IntN(800)) * time.Millisecond) // down for a moment
		require.NoError(t, fleet.start(slot))
	}
	fleet.stopAll()
	issuedAt := time.Since(began)
	for _, cmd := range fleet.all {
		require.NotNil(t, cmd.ProcessState, "replica process %d left behind", cmd.Process.Pid)
	}

	// Every certificate issued, its chain verified against Pebble's roots.
	certs, err := store.Certificates().List(ctx, host.ListOptions{Namespace: "default"})
	require.NoError(t, err)
	require.Len(t, certs, replicaCerts)
	for _, c := range certs {
		require.True(t, isReady(c), "%s: %+v", c.Name, c.Status.Conditions)
		sec, err := store.Secrets().Get(ctx, "default", c.Spec.SecretName)
		require.NoError(t, err)
		verifyChain(t, sec, c.Spec.DNSNames[0], ca.RootPool())
	}

	// One order per name: each certificate's first revision, ordered
	// once, whoever was killed meanwhile.
	want := map[string]int{}
	for i := range replicaCerts {
		want[fmt.Sprintf("c%03d.example", i)] = 1
	}
	orders := ca.OrdersCreated()
	log, err := readLeaseLog(ctx, db)
	require.NoError(t, err)
	dup := 0
	for name, n := range orders {
		dup += max(n-1, 0)
		if n != 1 {
			t.Errorf("Pebble created %d orders for %s; its lease's history:\n%s", n, name, leaseHistory(log, strings.TrimSuffix(name, ".example"), kills, began))
		}
	}
	assert.Len(t, orders, replicaCerts, "orders for every name and no other")

	// Leases, from every write of the lease table.
	longest, lag, heldAtDeath := checkLeases(t, log, kills, replicaLease, answeredRequests(t, ctx, store))

	t.Logf("figures: %d replica starts, %d kills, %d certificates issued, %d orders for %d names (%d duplicates), "+
		"%d requests held by a replica when it was killed, longest wait for a dead replica's lease %v (lease %v; %v after it ended), "+
		"%d lease writes, %d HTTP-01 validations through the balancer (%d tried a dead replica first), all issued after %v",
		fleet.starts, len(kills), len(certs), sum(orders), len(orders), dup, heldAtDeath, longest.Round(10*time.Millisecond),
		replicaLease, lag.Round(10*time.Millisecond), len(log), fleet.lb.served(), fleet.lb.failovers(), issuedAt.Round(100*time.Millisecond))
}

// leaseHistory is every write of the leases of certificate cert's
// requests, and the kills, in order, for a failure's message.
func leaseHistory(log []leaseWrite, cert string, kills []kill, began time.Time) string {
	type line struct {
		at   time.Time
		text string
	}
	var lines []line
	for _, w := range log {
		if strings.Contains(w.key, "/"+cert+"-") {
			lines = append(lines, line{w.at, fmt.Sprintf("%s %s by %s until +%.3fs", w.op, w.key, w.holder, w.until.Sub(began).Seconds())})
		}
	}
	for _, k := range kills {
		lines = append(lines, line{k.at, "killed " + k.identity})
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].at.Before(lines[j].at) })
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "%8.3fs %s\n", l.at.Sub(began).Seconds(), l.text)
	}
	return b.String()
}

// kill is one replica killed: its identity, and when it was dead.
type kill struct {
	identity string
	at       time.Time
}

// fleet runs the replica processes.
type fleet struct {
	t       *testing.T
	cfgPath string
	logDir  string
	lb      *balancer
	starts  int

	live map[int]*replicaProc
	all  []*exec.Cmd // every process started
}

type replicaProc struct {
	identity string
	cmd      *exec.Cmd
	logPath  string
}

// start starts a replica in slot under a new identity and waits until it
// serves; the balancer then sends it validation requests.
func (f *fleet) start(slot int) error {
	f.starts++
	id := fmt.Sprintf("replica%d-start%d", slot, f.starts)
	logPath := filepath.Join(f.logDir, id+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	addr := make(chan string, 1)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), replicaEnv+"="+f.cfgPath, replicaEnv+"_IDENTITY="+id)
	cmd.Stdout = &firstLine{ch: addr}
	cmd.Stderr = logFile
	// Should the test binary die, its replicas go with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", id, err)
	}
	f.all = append(f.all, cmd)
	p := &replicaProc{identity: id, cmd: cmd, logPath: logPath}
	if f.live == nil {
		f.live = map[int]*replicaProc{}
	}
	f.live[slot] = p
	select {
	case line := <-addr:
		plain, ok := strings.CutPrefix(line, "plain ")
		if !ok {
			return fmt.Errorf("%s said %q, not its address", id, line)
		}
		f.lb.set(slot, plain)
		return nil
	case <-time.After(time.Minute):
		b, _ := os.ReadFile(logPath)
		return fmt.Errorf("%s did not start serving within a minute:\n%s", id, b)
	}
}

// kill kills the replica in slot with SIGKILL and waits until it is
// dead.
func (f *fleet) kill(slot int) (kill, error) {
	p := f.live[slot]
	f.lb.set(slot, "")
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return kill{}, fmt.Errorf("killing %s: %w", p.identity, err)
	}
	err := p.cmd.Wait()
	at := time.Now()
	delete(f.live, slot)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		b, _ := os.ReadFile(p.logPath)
		return kill{}, fmt.Errorf("%s ended by itself before it was killed (%v):\n%s", p.identity, err, b)
	}
	return kill{identity: p.identity, at: at}, nil
}

// stopAll kills every replica left and waits for each; it leaves none
// behind.
func (f *fleet) stopAll() {
	for slot, p := range f.live {
		f.lb.set(slot, "")
		p.cmd.Process.Signal(syscall.SIGKILL)
		p.cmd.Wait()
		delete(f.live, slot)
	}
}

// sleepUnlessReady sleeps for d, unless every certificate is issued
// first (it looks every quarter second); it reports whether it slept
// the whole time.
func (f *fleet) sleepUnlessReady(ctx context.Context, store host.Store, d time.Duration) bool {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		time.Sleep(min(250*time.Millisecond, time.Until(end)))
		if n, err := readyCount(ctx, store); err == nil && n == replicaCerts {
			return false
		}
	}
	return true
}

// dumpLogs logs the end of each replica's log.
func (f *fleet) dumpLogs() {
	paths, _ := filepath.Glob(filepath.Join(f.logDir, "*.log"))
	for _, p := range paths {
		b, _ := os.ReadFile(p)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		f.t.Logf("%s (last lines of %d):\n%s", filepath.Base(p), len(lines), strings.Join(lines[max(0, len(lines)-15):], "\n"))
	}
}

// firstLine sends the first line written to it, without its newline.
type firstLine struct {
	ch   chan string
	buf  []byte
	sent bool
}

func (w *firstLine) Write(p []byte) (int, error) {
	if !w.sent {
		w.buf = append(w.buf, p...)
		if i := bytes.IndexByte(w.buf, '\n'); i >= 0 {
			w.ch <- string(w.buf[:i])
			w.sent = true
		}
	}
	return len(p), nil
}

// balancer is the one name the replicas sit behind, for Pebble's HTTP-01
// validation: it sends each request to the live replicas in turn, the
// next one when a replica cannot be reached, as a load balancer does.
type balancer struct {
	mu       sync.Mutex
	addrs    map[int]string
	next     int
	n, fails int
}

var lbClient = &http.Client{Timeout: 5 * time.Second,
	Transport:     &http.Transport{DisableKeepAlives: true},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func (lb *balancer) set(slot int, addr string) {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	if lb.addrs == nil {
		lb.addrs = map[int]string{}
	}
	if addr == "" {
		delete(lb.addrs, slot)
	} else {
		lb.addrs[slot] = addr
	}
}

// order is the live replicas' addresses, starting from the next in turn.
func (lb *balancer) order() []string {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	slots := make([]int, 0, len(lb.addrs))
	for s := range lb.addrs {
		slots = append(slots, s)
	}
	sort.Ints(slots)
	out := make([]string, 0, len(slots))
	for i := range slots {
		out = append(out, lb.addrs[slots[(lb.next+i)%len(slots)]])
	}
	lb.next++
	lb.n++
	return out
}

func (lb *balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for _, addr := range lb.order() {
		req, err := http.NewRequestWithContext(r.Context(), r.Method, "http://"+addr+r.URL.RequestURI(), nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.Host = r.Host
		resp, err := lbClient.Do(req)
		if err != nil {
			lb.mu.Lock()
			lb.fails++
			lb.mu.Unlock()
			continue // killed meanwhile: the next
		}
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
		resp.Body.Close()
		return
	}
	http.Error(w, "no replica answered", http.StatusBadGateway)
}

func (lb *balancer) served() int    { lb.mu.Lock(); defer lb.mu.Unlock(); return lb.n }
func (lb *balancer) failovers() int { lb.mu.Lock(); defer lb.mu.Unlock(); return lb.fails }

func isReady(c *certificate.Certificate) bool {
	r := c.Status.Condition(certificate.ConditionReady)
	return r != nil && r.Status == certificate.StatusTrue
}

func readyCount(ctx context.Context, store host.Store) (int, error) {
	certs, err := store.Certificates().List(ctx, host.ListOptions{Namespace: "default"})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, c := range certs {
		if isReady(c) {
			n++
		}
	}
	return n, nil
}

// notReady says why each certificate not issued is not.
func notReady(ctx context.Context, store host.Store) string {
	certs, err := store.Certificates().List(ctx, host.ListOptions{Namespace: "default"})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, c := range certs {
		if !isReady(c) {
			fmt.Fprintf(&b, "%s: %+v\n", c.Name, c.Status.Conditions)
		}
	}
	return b.String()
}

func verifyChain(t *testing.T, sec *certificate.Secret, name string, roots *x509.CertPool) {
	t.Helper()
	p, err := keys.ParseSecretData(sec.Data)
	require.NoError(t, err, name)
	require.True(t, p.KeyMatches, name)
	chain, err := p.Chain()
	require.NoError(t, err, name)
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	_, err = p.Leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots, Intermediates: inter, CurrentTime: p.Leaf.NotBefore.Add(time.Minute)})
	require.NoError(t, err, name)
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// logLeases records every write of the lease table in a table of the
// test's, with the database server's time: the lease history the test
// checks, complete, without polling.
func logLeases(ctx context.Context, db *sql.DB) error {
	for _, stmt := range []string{
		`CREATE TABLE test_lease_log (
			seq BIGSERIAL PRIMARY KEY,
			at_ns BIGINT NOT NULL,
			op TEXT NOT NULL,
			lease_key TEXT NOT NULL,
			holder TEXT NOT NULL,
			until_ns BIGINT NOT NULL)`,
		`CREATE FUNCTION test_log_lease() RETURNS trigger AS $$
		BEGIN
			IF TG_OP = 'DELETE' THEN
				INSERT INTO test_lease_log (at_ns, op, lease_key, holder, until_ns)
				VALUES ((extract(epoch FROM clock_timestamp()) * 1000000000)::bigint, TG_OP, OLD.lease_key, OLD.holder, OLD.until_ns);
				RETURN OLD;
			END IF;
			INSERT INTO test_lease_log (at_ns, op, lease_key, holder, until_ns)
			VALUES ((extract(epoch FROM clock_timestamp()) * 1000000000)::bigint, TG_OP, NEW.lease_key, NEW.holder, NEW.until_ns);
			RETURN NEW;
		END $$ LANGUAGE plpgsql`,
		`CREATE TRIGGER test_log_lease AFTER INSERT OR UPDATE OR DELETE ON certlife_leases
			FOR EACH ROW EXECUTE FUNCTION test_log_lease()`,
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return nil
}

// leaseWrite is one write of the lease table.
type leaseWrite struct {
	at     time.Time
	op     string // INSERT, UPDATE, DELETE
	key    string
	holder string
	until  time.Time
}

func readLeaseLog(ctx context.Context, db *sql.DB) ([]leaseWrite, error) {
	rows, err := db.QueryContext(ctx, `SELECT at_ns, op, lease_key, holder, until_ns FROM test_lease_log ORDER BY seq`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []leaseWrite
	for rows.Next() {
		var at, until int64
		var w leaseWrite
		if err := rows.Scan(&at, &w.op, &w.key, &w.holder, &until); err != nil {
			return nil, err
		}
		w.at, w.until = time.Unix(0, at), time.Unix(0, until)
		out = append(out, w)
	}
	return out, rows.Err()
}

// answeredRequests are the lease keys of the requests in the store that
// are answered.
func answeredRequests(t *testing.T, ctx context.Context, store host.Store) map[string]bool {
	t.Helper()
	reqs, err := store.Requests().List(ctx, host.ListOptions{})
	require.NoError(t, err)
	out := map[string]bool{}
	for _, r := range reqs {
		if certificate.Answered(r) {
			out[host.LeaseKey(host.KindRequest, r.Namespace, r.Name, r.UID)] = true
		}
	}
	return out
}

// checkLeases checks the lease history against the kills: a killed
// replica's leases last no longer than lease past its death; each it held
// unexpired when it died was taken over by another replica (no sooner
// than it expired) or is of a request it had answered; and no replica
// ever took a lease another held unexpired. It returns the longest a
// request waited, from a kill, for another replica to take it over, the
// longest from the end of the dead replica's lease, and how many
// requests the killed replicas held.
func checkLeases(t *testing.T, log []leaseWrite, kills []kill, lease time.Duration, answered map[string]bool) (longest, lag time.Duration, held int) {
	t.Helper()
	// Mutual exclusion: a write by another holder comes no sooner than
	// the lease it replaced expired, unless that was released.
	type current struct {
		holder string
		until  time.Time
		live   bool
	}
	state := map[string]current{}
	for _, w := range log {
		// No lease is written to run more than lease past the time it is
		// written (its holder's clock, read before the write).
		if w.op != "DELETE" {
			assert.False(t, w.until.After(w.at.Add(lease)), "%s wrote %s at %v until %v: longer than %v",
				w.holder, w.key, w.at.Format(time.RFC3339Nano), w.until.Format(time.RFC3339Nano), lease)
		}
		cur := state[w.key]
		if w.op != "DELETE" && cur.live && cur.holder != w.holder {
			assert.False(t, w.at.Before(cur.until), "%s took %s at %v, held by %s until %v",
				w.holder, w.key, w.at.Format(time.RFC3339Nano), cur.holder, cur.until.Format(time.RFC3339Nano))
		}
		state[w.key] = current{holder: w.holder, until: w.until, live: w.op != "DELETE"}
	}
	for _, k := range kills {
		// The leases as they stood when k's replica died, and every
		// write it made.
		at := map[string]current{}
		var after []leaseWrite
		for _, w := range log {
			if w.holder == k.identity && w.op != "DELETE" {
				assert.False(t, w.until.After(k.at.Add(lease)), "%s (killed at %v) held %s until %v: more than %v after its death",
					k.identity, k.at.Format(time.RFC3339Nano), w.key, w.until.Format(time.RFC3339Nano), lease)
			}
			if w.at.After(k.at) && w.holder != k.identity {
				after = append(after, w)
				continue
			}
			at[w.key] = current{holder: w.holder, until: w.until, live: w.op != "DELETE"}
		}
		for key, cur := range at {
			if !cur.live || cur.holder != k.identity || !cur.until.After(k.at) {
				continue
			}
			held++
			taken := false
			for _, w := range after {
				if w.key == key && w.op != "DELETE" && w.holder != k.identity {
					taken = true
					longest = max(longest, w.at.Sub(k.at))
					lag = max(lag, w.at.Sub(cur.until))
					break
				}
			}
			assert.True(t, taken || answered[key], "%s held %s when it was killed: no other replica took it over, and the request is not answered", k.identity, key)
		}
	}
	return longest, lag, held
}

// tailLog keeps the last max lines written to it.
type tailLog struct {
	mu    sync.Mutex
	max   int
	lines []string
	n     int
	part  []byte
}

func (l *tailLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.part = append(l.part, p...)
	for {
		i := bytes.IndexByte(l.part, '\n')
		if i < 0 {
			break
		}
		l.lines = append(l.lines, string(l.part[:i]))
		l.part = l.part[i+1:]
		l.n++
		if len(l.lines) > l.max {
			l.lines = l.lines[len(l.lines)-l.max:]
		}
	}
	return len(p), nil
}

func (l *tailLog) total() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

func (l *tailLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// pebbleGoroutines are the stacks of this process's goroutines that run
// Pebble's code (it runs in the test's process), to show one that waits.
func pebbleGoroutines() string {
	var buf bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
	var out []string
	for g := range strings.SplitSeq(buf.String(), "\n\n") {
		if strings.Contains(g, "letsencrypt/pebble") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}
