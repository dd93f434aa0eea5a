package fleet

import (
	"context"
	"os"
	"runtime/pprof"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestProfileFleet(t *testing.T) {
	if os.Getenv("FLEET_PROFILE") == "" {
		t.Skip("FLEET_PROFILE not set")
	}
	cfg := Defaults()
	cfg.Certificates, cfg.Faults = 2000, true
	h, _ := os.Create("/tmp/fleet.heap")
	cfg.HeapProfile = h
	f, _ := os.Create("/tmp/fleet.cpu")
	pprof.StartCPUProfile(f)
	sum, err := Run(context.Background(), cfg)
	pprof.StopCPUProfile()
	require.NoError(t, err)
	t.Log(sum)
	h.Close()
}
