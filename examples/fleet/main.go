// Command fleet runs certlife's deterministic fleet simulation: many
// certificates on the public host loop (certificate/host) over virtual
// time, optionally with a CA, a store, a host and users that misbehave,
// and checks the invariants all through the run. It prints a summary whose
// last line is "violations: N" and exits non-zero when N > 0; -all prints
// every violation, and -trace NAME the story of one certificate.
//
//	go run ./examples/fleet -certificates 10000 -days 365 -faults
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"

	"github.com/certlife/certlife/examples/internal/fleet"
)

func main() {
	cfg := fleet.Defaults()
	flag.IntVar(&cfg.Certificates, "certificates", cfg.Certificates, "certificates in the fleet")
	flag.IntVar(&cfg.Days, "days", cfg.Days, "days of virtual time")
	flag.BoolVar(&cfg.Faults, "faults", cfg.Faults, "CA failures, outages, wrong-key and expired certificates, rate limits; a lagging store; host crashes and restarts; manual renewals, spec changes and re-creations mid-order")
	flag.BoolVar(&cfg.Jitter, "jitter", cfg.Jitter, "spread renewal times deterministically")
	flag.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "the run's seed")
	flag.IntVar(&cfg.Shards, "shards", cfg.Shards, "independent hosts run in parallel (the result depends on this, not on the machine)")
	all := flag.Bool("all", false, "print every violation (the summary shows the first 20)")
	flag.StringVar(&cfg.TraceName, "trace", "", "print every write, loop pass and CA answer of this certificate (and its secrets and requests)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	memProfile := flag.String("memprofile", "", "write a heap profile, taken at the end with the fleet live, to this file")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fleet:", err)
			os.Exit(2)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "fleet:", err)
			os.Exit(2)
		}
		defer pprof.StopCPUProfile()
	}
	if *memProfile != "" {
		f, err := os.Create(*memProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fleet:", err)
			os.Exit(2)
		}
		defer f.Close()
		cfg.HeapProfile = f
		runtime.MemProfileRate = 4096 // a finer sample than the default 512 KB
	}
	if cfg.TraceName != "" {
		cfg.Trace = os.Stdout
	}
	// A batch run: trade memory headroom for less time in the collector.
	// The memory figure is the live heap after a full collection, which
	// this does not change.
	debug.SetGCPercent(400)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	sum, err := fleet.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(2)
	}
	fmt.Print(sum)
	if *all {
		for _, v := range sum.Violations {
			fmt.Println(v)
		}
	}
	if len(sum.Violations) > 0 {
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}
