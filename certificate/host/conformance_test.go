package host_test

import (
	"testing"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/host/hosttest"
)

// Both provided stores keep the whole contract with the zero Config.
func TestStoreConformance(t *testing.T) {
	t.Run("MemoryStore", func(t *testing.T) {
		hosttest.TestStore(t, func(t *testing.T) host.Store {
			return host.NewMemoryStore(testingclock.NewFakeClock(t0))
		}, hosttest.Config{})
	})
	t.Run("FileStore", func(t *testing.T) {
		hosttest.TestStore(t, func(t *testing.T) host.Store {
			s, err := host.OpenFileStore(t.TempDir(), testingclock.NewFakeClock(t0))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}, hosttest.Config{})
	})
}
