package fleet

import (
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/host/hosttest"
)

// The simulation's store keeps the contract, with its reads at once and
// lagging as with -faults (each write showing up to 2*StoreLag later);
// what it is given shares byte slices, pointers and a certificate's spec
// with what it holds, by design (SharesValues).
func TestStoreConformance(t *testing.T) {
	t.Run("AtOnce", func(t *testing.T) {
		hosttest.TestStore(t, func(t *testing.T) host.Store {
			return newStore(testingclock.NewFakeClock(t0))
		}, hosttest.Config{SharesValues: true})
	})
	t.Run("Lagging", func(t *testing.T) {
		clocks := map[*store]*testingclock.FakeClock{}
		hosttest.TestStore(t, func(t *testing.T) host.Store {
			clk := testingclock.NewFakeClock(t0)
			s := newStore(clk)
			s.lagOf = func(_ host.Kind, name string, version uint64) time.Duration {
				return time.Duration((version*7+uint64(len(name)))%4) * StoreLag / 2
			}
			clocks[s] = clk
			return s
		}, hosttest.Config{SharesValues: true, Settle: func(s host.Store) {
			st := s.(*store)
			clocks[st].Step(2 * StoreLag)
			st.show()
		}})
	})
}
