package host_test

import (
	"log/slog"
	"os"
	"testing"
)

// TestMain sends the host's default log (Config.Logger nil:
// slog.Default(), which shows every failure a fault test provokes) to
// nowhere unless the tests run with -v; the tests of the log itself give
// their own logger.
func TestMain(m *testing.M) {
	verbose := false
	for _, a := range os.Args[1:] {
		if a == "-test.v" || a == "-test.v=true" {
			verbose = true
		}
	}
	if !verbose {
		slog.SetDefault(slog.New(slog.DiscardHandler))
	}
	os.Exit(m.Run())
}
