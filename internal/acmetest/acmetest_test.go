package acmetest

import (
	"net"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Close frees every port and leaves no goroutine behind except Pebble's
// idle validation-queue reader, which Pebble gives no way to stop.
func TestCloseLeaksNothing(t *testing.T) {
	before := goroutines()
	for range 3 {
		s, err := Start(Options{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.HTTPClient().Get(s.DirectoryURL)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		u, _ := url.Parse(s.DirectoryURL)
		addrs := []string{u.Host, s.HTTP01Addr(), s.DNS().Addr()}
		s.HTTPClient().CloseIdleConnections()
		s.Close()
		for _, a := range addrs {
			ln, err := net.Listen("tcp", a)
			if err != nil {
				t.Fatalf("port %s still held after Close: %v", a, err)
			}
			ln.Close()
		}
		pc, err := net.ListenPacket("udp", s.DNS().Addr())
		if err != nil {
			t.Fatalf("DNS UDP port still held: %v", err)
		}
		pc.Close()
	}
	var after map[string]int
	for range 50 { // let exiting goroutines finish
		after = goroutines()
		if extra(before, after) == "" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if e := extra(before, after); e != "" {
		t.Fatalf("goroutines left behind:\n%s", e)
	}
}

// goroutines counts live goroutines by their top function, leaving out
// Pebble's validation-queue reader.
func goroutines() map[string]int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	out := map[string]int{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		lines := strings.Split(g, "\n")
		if len(lines) < 2 || strings.Contains(g, "va.VAImpl.processTasks") || strings.Contains(g, "testing.") && strings.Contains(g, "tRunner") && strings.Contains(g, "TestCloseLeaksNothing") {
			continue
		}
		fn := lines[1]
		if i := strings.Index(fn, "("); i > 0 {
			fn = fn[:i]
		}
		out[fn]++
	}
	return out
}

func extra(before, after map[string]int) string {
	var b strings.Builder
	for fn, n := range after {
		if n > before[fn] {
			b.WriteString(fn + "\n")
		}
	}
	return b.String()
}

func TestOptionsAreCheckedByField(t *testing.T) {
	for _, o := range []Options{{NonceRejectPercent: 100}, {AuthzReusePercent: -1}, {Intermediates: -2}} {
		if _, err := Start(o); err == nil {
			t.Fatalf("%+v started", o)
		}
	}
	_, err := Start(Options{NonceRejectPercent: 120, AlternateRoots: -1})
	if err == nil || !strings.Contains(err.Error(), "NonceRejectPercent: 120") || !strings.Contains(err.Error(), "AlternateRoots (-1)") {
		t.Fatalf("every bad field is not named: %v", err)
	}
}
