package host_test

import (
	"flag"
	"path/filepath"
	"testing"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/host/hosttest"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output in testdata/scenarios/*.txt (from the MemoryStore run)")

// scenarios are the lifecycle scenarios; hosttest.RunScenarios documents
// their language.
var scenarios = filepath.Join("testdata", "scenarios", "*.txt")

// TestScenarios runs the lifecycle scenarios over a MemoryStore and over
// a FileStore: both must give the output written in the files. -rewrite
// writes the output the MemoryStore run gives now, and the FileStore run
// is then compared with it.
func TestScenarios(t *testing.T) {
	t.Run("MemoryStore", func(t *testing.T) {
		hosttest.RunScenarios(t, scenarios, hosttest.ScenarioConfig{Rewrite: *rewrite})
	})
	t.Run("FileStore", func(t *testing.T) {
		hosttest.RunScenarios(t, scenarios, hosttest.ScenarioConfig{
			Open: func(t *testing.T, clk *testingclock.FakeClock) host.Store {
				s, err := host.OpenFileStore(t.TempDir(), clk)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			},
		})
	})
}
