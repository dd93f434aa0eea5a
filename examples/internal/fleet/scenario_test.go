package fleet

import (
	"path/filepath"
	"testing"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/host/hosttest"
)

// The lifecycle scenarios give the same output over the simulation's
// store, with its reads at once, as over host.MemoryStore: the lean
// store is a store the host loop runs the same on.
func TestScenarios(t *testing.T) {
	hosttest.RunScenarios(t, filepath.Join("..", "..", "..", "certificate", "host", "testdata", "scenarios", "*.txt"), hosttest.ScenarioConfig{
		Open: func(t *testing.T, clk *testingclock.FakeClock) host.Store { return newStore(clk) },
	})
}
