package sqlstore_test

import (
	"path/filepath"
	"testing"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/host/hosttest"
	"github.com/certlife/certlife/certificate/host/sqlstore"
)

// The host's lifecycle scenarios (certificate/host/testdata/scenarios)
// give over the store, on both dialects, the output they give over
// host.MemoryStore.
func TestScenarios(t *testing.T) {
	eachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		hosttest.RunScenarios(t, filepath.Join("..", "testdata", "scenarios", "*.txt"), hosttest.ScenarioConfig{
			Open: func(t *testing.T, clk *testingclock.FakeClock) host.Store {
				return newDB(t, d).open(t, clk)
			},
		})
	})
}
