package hosttest

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/keys"
)

// certlifeScenarios are certlife's own scenarios.
var certlifeScenarios = filepath.Join("..", "testdata", "scenarios", "*.txt")

// runScenariosFake runs RunScenarios and returns what it reported.
func runScenariosFake(t *testing.T, pattern string, cfg ScenarioConfig) []string {
	var errs []string
	f := fakeT{real: t, name: "RunScenarios", mu: &sync.Mutex{}, errs: &errs}
	f.Run("", func(t tb) { runScenarios(t, pattern, cfg) })
	return errs
}

// watchOnly is a MemoryStore that reports its writes but does not claim
// that its reads show them at once: the loop reads it through
// host.ReadYourWrites.
type watchOnly struct{ plainStore }

func (w watchOnly) Watch(f func(host.Change)) { w.s.Watch(f) }

// certlife's scenarios give the same output over a store the loop reads
// through host.ReadYourWrites; and over a store that reports no writes,
// the scenario tells the loop of its own (a deleted secret is issued
// again at once, not at the hourly resync).
func TestScenariosOverOtherStores(t *testing.T) {
	t.Run("Watcher", func(t *testing.T) {
		RunScenarios(t, certlifeScenarios, ScenarioConfig{Open: func(_ *testing.T, clk *testingclock.FakeClock) host.Store {
			return watchOnly{plainStore{host.NewMemoryStore(clk)}}
		}})
	})
	t.Run("NotWatcher", func(t *testing.T) {
		RunScenarios(t, filepath.Join("..", "testdata", "scenarios", "secret-deleted-by-hand.txt"), ScenarioConfig{Open: func(_ *testing.T, clk *testingclock.FakeClock) host.Store {
			return plainStore{host.NewMemoryStore(clk)}
		}})
	})
}

// writeScenario writes a scenario file in a directory of the test's own.
func writeScenario(t *testing.T, text string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "s.txt")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

const firstPass = "day   0 12:00:00  web   keymanager     WaitingForKey          GenerateKey{web-next-key-1-e9e66078, ECDSA 256}"

// Output that differs from the expected is reported with the lines that
// differ; Rewrite writes the output, keeping the comments, and the file
// then passes.
func TestScenarioOutput(t *testing.T) {
	text := "# A first issuance.\ncertificate web dns=web.example\n----\nnothing\n\n# Its data.\ndata web-tls\n----\n"
	file := writeScenario(t, text)
	errs := runScenariosFake(t, file, ScenarioConfig{})
	if len(errs) != 1 || !strings.Contains(errs[0], "certificate web dns=web.example: the output differs") ||
		!strings.Contains(errs[0], "\n- nothing\n") || !strings.Contains(errs[0], "\n+ "+firstPass) {
		t.Fatalf("wrong output: got %q, want the lines that differ", errs)
	}

	if errs := runScenariosFake(t, file, ScenarioConfig{Rewrite: true}); len(errs) > 0 {
		t.Fatalf("Rewrite: %q", errs)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{"# A first issuance.\ncertificate web dns=web.example\n----\n" + firstPass, "\n# Its data.\ndata web-tls\n----\nsecret web-tls: ca.crt tls.crt tls.key\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("the rewritten file lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "nothing") || !strings.HasSuffix(got, "tls.key\n") {
		t.Errorf("the rewritten file keeps the old output or ends badly:\n%s", got)
	}
	if errs := runScenariosFake(t, file, ScenarioConfig{}); len(errs) > 0 {
		t.Errorf("the rewritten file: %q", errs)
	}
}

// The invariants are checked whatever the output: a store that lets a
// Ready certificate's secret go bad, or holds two requests for one
// revision, fails the scenario.
func TestScenarioInvariants(t *testing.T) {
	for name, tc := range map[string]struct {
		spoil func(t *testing.T, st host.Store)
		want  string
	}{
		"secret gone": {
			spoil: func(t *testing.T, st host.Store) {
				if err := st.Secrets().Delete(t.Context(), "default", "web-tls"); err != nil {
					t.Fatal(err)
				}
			},
			want: "web is Ready without a secret",
		},
		"another key": {
			spoil: func(t *testing.T, st host.Store) {
				sec, err := st.Secrets().Get(t.Context(), "default", "web-tls")
				if err != nil {
					t.Fatal(err)
				}
				k, err := keys.Generate(rand.Reader, keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
				if err != nil {
					t.Fatal(err)
				}
				if sec.Data[keys.SecretPrivateKey], err = keys.EncodePrivateKey(k, keys.EncodingPKCS1); err != nil {
					t.Fatal(err)
				}
				if _, err := st.Secrets().Update(t.Context(), sec); err != nil {
					t.Fatal(err)
				}
			},
			want: "web is Ready but its secret does not hold a matching key pair",
		},
		"other names": {
			spoil: func(t *testing.T, st host.Store) {
				c, err := st.Certificates().Get(t.Context(), "default", "web")
				if err != nil {
					t.Fatal(err)
				}
				c.Spec.DNSNames = []string{"other.example"}
				if _, err := st.Certificates().Update(t.Context(), c); err != nil {
					t.Fatal(err)
				}
			},
			want: "web is Ready but its secret's certificate is not for its names",
		},
		"two requests for a revision": {
			spoil: func(t *testing.T, st host.Store) {
				r, err := st.Requests().Get(t.Context(), "default", "web-1")
				if err != nil {
					t.Fatal(err)
				}
				r.Name, r.ResourceVersion = "web-1-again", ""
				if _, err := st.Requests().Create(t.Context(), r); err != nil {
					t.Fatal(err)
				}
			},
			want: "requests web-1 and web-1-again are both for revision 1 of web",
		},
	} {
		t.Run(name, func(t *testing.T) {
			var errs []string
			f := fakeT{real: t, name: "scenario", mu: &sync.Mutex{}, errs: &errs}
			f.Run("", func(ft tb) {
				s := newScenario(ft, ScenarioConfig{})
				s.do("certificate web dns=web.example")
				s.checkInvariants("certificate")
				if len(errs) > 0 {
					t.Fatalf("before the store was spoilt: %q", errs)
				}
				tc.spoil(t, s.store)
				s.checkInvariants("spoilt")
			})
			if len(errs) != 1 || !strings.Contains(errs[0], tc.want) {
				t.Errorf("got %q, want %q", errs, tc.want)
			}
		})
	}
}

// A file that is not a scenario, and a command that is not one, are
// reported by file and line or by command, not with a panic.
func TestScenarioBadInput(t *testing.T) {
	for name, tc := range map[string]struct {
		text, want string
	}{
		"output without a command": {"----\nx\n", "s.txt:1: ---- without a command"},
		"two commands":             {"run\nrun\n----\n", `s.txt:2: "run" follows the command "run" without ----`},
		"unknown command":          {"renew web\n----\n", `unknown scenario command "renew web"`},
		"too few arguments":        {"status\n----\n", `"status": 0 arguments, want 1`},
		"issuer mode":              {"issuer ca slow\n----\n", `not "slow"`},
		"store-fails kind":         {"store-fails 1 create disks\n----\n", `the kind "disks" is not certificates, secrets or requests`},
		"store-fails count":        {"store-fails x create secrets\n----\n", `the count "x" is not a number of writes`},
		"spec field":               {"certificate web dns=a.example colour=blue\n----\n", `unknown spec field "colour"`},
		"duration":                 {"advance soon\n----\n", `duration "soon"`},
		"window":                   {"certificate web dns=a.example window=Tue\n----\n", `window="Tue": want a day`},
		"user secret kind":         {"user-secret s pem\n----\n", "the kind is keypair, ca, empty or labels"},
	} {
		t.Run(name, func(t *testing.T) {
			errs := runScenariosFake(t, writeScenario(t, tc.text), ScenarioConfig{})
			if len(errs) != 1 || !strings.Contains(errs[0], tc.want) {
				t.Errorf("got %q, want %q", errs, tc.want)
			}
		})
	}
	if errs := runScenariosFake(t, filepath.Join(t.TempDir(), "*.txt"), ScenarioConfig{}); len(errs) != 1 || !strings.Contains(errs[0], "no scenario files match") {
		t.Errorf("no files: got %q", errs)
	}
	if errs := runScenariosFake(t, certlifeScenarios, ScenarioConfig{Open: func(*testing.T, *testingclock.FakeClock) host.Store { return nil }}); len(errs) == 0 || !strings.Contains(errs[0], "Open returned a nil store") {
		t.Errorf("a nil store: got %q", errs)
	}
}

var _ certificate.Issuer = (*scenarioCA)(nil)
