package host_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	mathrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/localca"
	"github.com/certlife/certlife/keys"
)

// The kill test: a child process runs the loop over a FileStore, renewing
// three certificates again and again by manual trigger, and is killed
// (SIGKILL) at random moments and started again, until every certificate
// reaches killTarget revisions. After each kill the store must open, hold
// every certificate with a revision that never went back, and a secret
// whose key is its certificate's; over the whole run each revision of
// each certificate must have had exactly one request.
const (
	killEnv      = "CERTLIFE_KILL9_DIR"
	killTarget   = 30
	killCerts    = 3
	requestsFile = "requests.log"
)

func TestFileStoreSurvivesKill9(t *testing.T) {
	if dir := os.Getenv(killEnv); dir != "" {
		killChild(dir)
		return
	}
	kills := 30
	if testing.Short() {
		kills = 8
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("CERTLIFE_KILL9_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (CERTLIFE_KILL9_SEED repeats it)", seed)
	rnd := mathrand.New(mathrand.NewPCG(seed, 0))
	dir := t.TempDir()

	ca, err := localca.NewRoot(rand.Reader, "kill test CA", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, time.Now().Add(-time.Hour), 24*time.Hour)
	require.NoError(t, err)
	keyPEM, err := ca.KeyPEM()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ca.crt"), ca.CertificatePEM(), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ca.key"), keyPEM, 0o600))
	store, err := host.OpenFileStore(filepath.Join(dir, "store"), nil)
	require.NoError(t, err)
	for i := range killCerts {
		c := newCert("default", fmt.Sprintf("web%d", i), fmt.Sprintf("web%d-tls", i))
		_, err := store.Certificates().Create(context.Background(), c)
		require.NoError(t, err)
	}
	require.NoError(t, store.Close())

	revisions := map[string]int{}
	killed, finished := 0, false
	for run := 0; !finished; run++ {
		require.Less(t, run, kills+20, "the child never finished")
		cmd := exec.Command(os.Args[0], "-test.run=^TestFileStoreSurvivesKill9$")
		cmd.Env = append(os.Environ(), killEnv+"="+dir)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		require.NoError(t, cmd.Start())
		if killed < kills {
			time.Sleep(time.Duration(rnd.Int64N(int64(120 * time.Millisecond))))
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			if cmd.ProcessState.Exited() && cmd.ProcessState.ExitCode() == 0 {
				finished = true
			} else {
				killed++
			}
		} else {
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				require.NoError(t, err, "the last run: %s", out.String())
			case <-time.After(2 * time.Minute):
				_ = cmd.Process.Kill()
				t.Fatalf("the last run did not finish: %s", out.String())
			}
			finished = true
		}
		checkAfterKill(t, filepath.Join(dir, "store"), revisions)
	}
	for name, rev := range revisions {
		require.GreaterOrEqual(t, rev, killTarget, "certificate %s", name)
	}
	require.GreaterOrEqual(t, killed, kills/2, "most runs must end in a kill, not finish first: raise killTarget")
	duplicates := countDuplicateRequests(t, dir)
	require.Zero(t, duplicates, "a revision had more than one request")
	t.Logf("%d kills, %d certificates at %d revisions; 0 losses, %d duplicate requests", killed, killCerts, killTarget, duplicates)
}

// checkAfterKill opens the store as a restarted host would and checks it
// lost nothing: every certificate is there, its revision did not go
// back, and a Ready certificate's secret holds a key pair that matches.
func checkAfterKill(t *testing.T, dir string, revisions map[string]int) {
	t.Helper()
	ctx := context.Background()
	s, err := host.OpenFileStore(dir, nil)
	require.NoError(t, err, "the store opens after a kill")
	defer s.Close()
	certs, err := s.Certificates().List(ctx, host.ListOptions{})
	require.NoError(t, err)
	require.Len(t, certs, killCerts)
	for _, c := range certs {
		rev := revision(c)
		require.GreaterOrEqual(t, rev, revisions[c.Name], "certificate %s went back from revision %d", c.Name, revisions[c.Name])
		revisions[c.Name] = rev
		if rev == 0 {
			continue
		}
		sec, err := s.Secrets().Get(ctx, c.Namespace, c.Spec.SecretName)
		require.NoError(t, err, "certificate %s at revision %d has no secret", c.Name, rev)
		p, err := keys.ParseSecretData(sec.Data)
		require.NoError(t, err)
		require.True(t, p.KeyMatches, "secret %s: the key is not the certificate's", sec.Name)
	}
}

// countDuplicateRequests reads the child's log of requests — name, UID —
// and counts the revisions that had more than one request.
func countDuplicateRequests(t *testing.T, dir string) int {
	f, err := os.Open(filepath.Join(dir, requestsFile))
	require.NoError(t, err)
	defer f.Close()
	uids := map[string]map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, uid, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue // a line cut by a kill
		}
		if uids[name] == nil {
			uids[name] = map[string]bool{}
		}
		uids[name][uid] = true
	}
	require.NoError(t, sc.Err())
	require.GreaterOrEqual(t, len(uids), killCerts*killTarget, "every revision's request is logged")
	dup := 0
	for name, set := range uids {
		if len(set) > 1 {
			t.Errorf("request %s was made %d times", name, len(set))
			dup++
		}
	}
	return dup
}

// killChild is the child process: it runs the loop until every
// certificate has killTarget revisions, triggering each renewal by hand as
// soon as the last is done, and logs every request it sees made.
func killChild(dir string) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(3)
	}
	caCert, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		fail(err)
	}
	caKey, err := os.ReadFile(filepath.Join(dir, "ca.key"))
	if err != nil {
		fail(err)
	}
	ca, err := localca.FromPEM(caCert, caKey)
	if err != nil {
		fail(err)
	}
	store, err := host.OpenFileStore(filepath.Join(dir, "store"), nil)
	if err != nil {
		fail(err)
	}
	log, err := os.OpenFile(filepath.Join(dir, requestsFile), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		fail(err)
	}
	store.Watch(func(ch host.Change) {
		if ch.Kind == host.KindRequest && !ch.Deleted {
			fmt.Fprintf(log, "%s %s\n", ch.Name, ch.Meta.UID)
		}
	})
	loop, err := host.New(host.Config{Store: store, Issuers: map[certificate.IssuerRef]certificate.Issuer{{Name: "ca"}: ca.Issuer(nil)}})
	if err != nil {
		fail(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for ctx.Err() == nil {
			if done, err := triggerRenewals(ctx, store, loop); err != nil {
				fail(err)
			} else if done {
				cancel()
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	_ = loop.Run(ctx)
	os.Exit(0)
}

// triggerRenewals sets Issuing=True by hand on each certificate that is
// Ready, not issuing and below the target; done reports every
// certificate at the target.
func triggerRenewals(ctx context.Context, store host.Store, loop *host.Loop) (done bool, err error) {
	certs, err := store.Certificates().List(ctx, host.ListOptions{})
	if err != nil {
		return false, err
	}
	done = true
	for _, c := range certs {
		if revision(c) >= killTarget {
			continue
		}
		done = false
		if !ready(c) || c.Status.Condition(certificate.ConditionIssuing) != nil {
			continue
		}
		c.Status.Conditions = append(c.Status.Conditions, certificate.Condition{Type: certificate.ConditionIssuing,
			Status: certificate.StatusTrue, Reason: certificate.ReasonManualTrigger, LastTransitionTime: time.Now()})
		_, _ = store.Certificates().Update(ctx, c) // a conflict: the next round tries again
	}
	return done, nil
}
