package hosttest_test

import (
	"path/filepath"
	"testing"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/host/hosttest"
)

// openStore opens an empty store for one subtest. Here it is a FileStore
// in a directory of the subtest's own; yours opens your database (a new
// schema, a new file) and closes it in t.Cleanup.
func openStore(t *testing.T) host.Store {
	s, err := host.OpenFileStore(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// A store's own tests run the suite: each subtest opens a new store, and
// every departure from the contract fails the test naming its rule. This
// is the test of ExampleTestStore, run.
func TestExampleStore(t *testing.T) {
	hosttest.TestStore(t, openStore, hosttest.Config{})
}

// Run the suite from a test of the package that implements your store.
// The zero Config suits a store that copies what it takes and
// whose reads show every write at once. A store whose reads lag says how
// to wait for them (Config.Settle, or its Watcher's reports); a store over
// an API where users create certificates and updates write only the
// status says so (Config.CreateCertificate, Config.StatusOnly).
func ExampleTestStore() {
	// In your store's package, in a _test.go file:
	conformance := func(t *testing.T) {
		hosttest.TestStore(t, openStore, hosttest.Config{})
	}

	_ = conformance
}

// openScenarioStore opens an empty store for one scenario, on the
// scenario's clock. Here it is a FileStore; yours opens your database.
func openScenarioStore(t *testing.T, clk *testingclock.FakeClock) host.Store {
	s, err := host.OpenFileStore(t.TempDir(), clk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// A store's own tests run certlife's scenarios over it: the loop over
// the store must print what it prints over a MemoryStore. This is the
// test of ExampleRunScenarios, run over one of certlife's scenarios.
func TestExampleScenarios(t *testing.T) {
	hosttest.RunScenarios(t, filepath.Join("..", "testdata", "scenarios", "first-issuance.txt"), hosttest.ScenarioConfig{Open: openScenarioStore})
}

// Run the scenarios from a test of the package that implements your
// store, with certlife's scenario files (certificate/host/testdata/
// scenarios in its module) copied into your testdata, beside your own.
// Write a new scenario's commands each followed by "----" and a blank
// line, run once with Rewrite to fill in their output, and review it.
func ExampleRunScenarios() {
	// In your store's package, in a _test.go file:
	scenarios := func(t *testing.T) {
		hosttest.RunScenarios(t, "testdata/scenarios/*.txt", hosttest.ScenarioConfig{
			Open:    openScenarioStore,
			Rewrite: false, // from a flag of your test's, to fill in new scenarios
		})
	}

	_ = scenarios
}
