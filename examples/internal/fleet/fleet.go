// Package fleet is the deterministic fleet simulation: many certificates
// on the public host loop (package certificate/host) over virtual time,
// with a CA, a store and a host that misbehave, and invariants checked all
// through the run. examples/fleet is its command line.
//
// Each shard is one host.Loop over the simulation's own host.Store (lean,
// and with faults on, lagging and crashing) with one simulated CA as its
// issuer, driven on a fake clock: the shard moves the clock to the next
// thing due — the loop's next pass, a write showing in reads, a user's
// action, the daily sweep — and steps the loop.
package fleet

import (
	"container/heap"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/backoff"
	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/renewal"
)

// Config is one simulation. The zero value is not runnable: use Defaults.
type Config struct {
	// Seed makes the run: the same seed gives the same run.
	Seed uint64
	// Certificates in the fleet.
	Certificates int
	// Days of virtual time.
	Days int
	// Faults turns on every fault (see the constants).
	Faults bool
	// Jitter spreads renewal times (renewal.Timing.Jitter).
	Jitter bool
	// Shards run in parallel, each its own loop, store and CA; the result
	// depends on the shard count, never on the machine.
	Shards int
	// Start of virtual time.
	Start time.Time
	// HeapProfile, when set, receives a heap profile taken at the end of
	// the run while the fleet is still live (examples/fleet -memprofile).
	HeapProfile io.Writer

	// Fallback gives each shard a second CA, and every certificate that
	// CA as its fallback issuer (spec.fallbackIssuerRefs): the hosts keep
	// a circuit per CA (host.CircuitConfig, the defaults), and the
	// summary counts what each CA issued over the first CA's outage and
	// after it. Every request is checked against the circuits: none goes
	// to a CA whose circuit is open, and while it is half-open, one.
	Fallback bool

	// Trace, when set, receives a line for each write, loop pass and CA
	// answer that concerns the certificate named TraceName (and its
	// secrets and requests): how to read a violation's story.
	Trace     io.Writer
	TraceName string

	// For tests of the invariants: the CA is told of no deleted request
	// (forgetless), the loop's backoff is another (backoff), every order
	// stays pending this long (slowCA), the CA is down on these days
	// instead of OutageDays (outageDays), the lagging store tells the loop
	// that its reads show every write (claimAuthoritative), so the loop
	// reads it without host.ReadYourWrites.
	forgetless         bool
	backoff            backoff.Policy
	slowCA             time.Duration
	outageDays         []int
	claimAuthoritative bool
	// For the fallback scenario: arrivals certificates are created
	// evenly over the first of outageDays and the day after (the first
	// half's first issuance meets the outage, the second half's comes
	// when the first CA is back); noFallbackRefs leaves the certificates of a Fallback
	// run without their fallback issuer, so that they keep asking the
	// first CA whatever its circuit says, and the invariants must catch
	// it.
	arrivals       int
	noFallbackRefs bool
}

// Defaults are the command's defaults: 10,000 certificates for a year,
// jitter on, two shards.
func Defaults() Config {
	return Config{Seed: 1, Certificates: 10_000, Days: 365, Jitter: true, Shards: 2,
		Start: time.Date(2027, 1, 4, 0, 0, 0, 0, time.UTC)}
}

// Validate names every bad field.
func (c Config) Validate() error {
	var errs []error
	if c.Certificates < 1 {
		errs = append(errs, fmt.Errorf("fleet: Certificates: %d is not positive", c.Certificates))
	}
	if c.Days < 1 {
		errs = append(errs, fmt.Errorf("fleet: Days: %d is not positive", c.Days))
	}
	if c.Shards < 1 || c.Shards > 64 {
		errs = append(errs, fmt.Errorf("fleet: Shards: %d is not in 1–64", c.Shards))
	}
	if c.Start.IsZero() {
		errs = append(errs, errors.New("fleet: Start is not set"))
	}
	return errors.Join(errs...)
}

// The CA keeps an order per request; PendingPercent of orders stay pending
// for between PendingMin and PendingMax before the CA answers, as an
// external CA's do. This is the CA's way, with or without faults.
const (
	PendingPercent = 10
	PendingMin     = time.Minute
	PendingMax     = 30 * time.Minute
)

// The fleet's faults, when Config.Faults is on.
const (
	// FailPercent of orders fail.
	FailPercent = 5
	// WrongKeyPermille, ExpiredPermille and RateLimitPermille of orders
	// get a certificate for another key, an expired certificate, or a
	// rate-limit answer with a Retry-After of RateLimitWait.
	WrongKeyPermille  = 5
	ExpiredPermille   = 5
	RateLimitPermille = 5
	RateLimitWait     = 2 * time.Hour
	// StoreLag is how far reads lag writes on average: each write shows
	// (and is reported to the loop) after between zero and twice that,
	// each kind's writes in order.
	StoreLag = 5 * time.Second
	// CrashPermille of the loop's writes meet a crash: about half of them
	// fail before the write, half after it landed (the host never heard
	// back). One crash in RestartEvery kills the host process before the
	// write, and everything it writes after in the same step: its loop is gone,
	// and a new one over the same store starts RestartDelay later — before
	// its predecessor's last writes show, so its first passes read stale
	// state.
	CrashPermille = 2
	RestartEvery  = 100
	RestartDelay  = 2 * time.Second
	// ManualPerDay certificates are renewed by hand each day.
	ManualPerDay = 5
	// Of the orders the CA keeps pending, SpecChangePercent see their
	// certificate's names changed by its user halfway through, and
	// RecreatePercent their certificate deleted and created again (at once,
	// or up to half a minute later), as kubectl replace does.
	SpecChangePercent = 2
	RecreatePercent   = 1
)

// OutageDays are the days the CA is down from midnight to midnight: every
// order it is asked for then fails.
var OutageDays = []int{100, 250}

// The fleet's shape.
const (
	// Lifetimes: 73 % 90 days, 25 % 45 days, 2 % 6 days. A 6-day
	// certificate renews every 3 days, 20 times as often as a 90-day one:
	// at 2 % of the fleet it is already a third of the issuances.
	shortLivedPercent = 2
	midPercent        = 25
	// ScheduledPercent have renewal windows (weekdays 09:00–17:00 UTC);
	// DisabledPercent have automatic renewal disabled.
	ScheduledPercent = 10
	DisabledPercent  = 2
)

// Summary is what a run found.
type Summary struct {
	Certificates, Days    int
	Issuances             int // certificates issued (first issuances and renewals)
	Renewals              int
	Failures              int // issuances that failed
	Requests              int // requests created
	MaxRequestsPerCert    int
	MeanRequestsPerCert   float64
	Expiries              int // certificates that expired
	ExcusedExpiries       int // expired with every attempt in their renewal period failed, or renewal disabled
	PeakRenewalsPerMinute int
	// Faults met: crashes of the loop's writes, of them process restarts,
	// passes that met a conflict (a stale read), manual renewals, spec
	// changes and re-creations mid-order.
	Crashes, Restarts, Conflicts, ManualTriggers, SpecChanges, Recreations int
	// StaleReads are the objects the store's reads (gets and list
	// entries) gave older than their latest write, or gave when deleted
	// or not when created: the lag ReadYourWrites meets.
	StaleReads int
	// Passes of the loop over certificates, and its calls to the CA.
	Passes, Answers int
	// Parses is what the loops' parse caches did (hits, misses,
	// evictions), summed over shards and restarts.
	Parses keys.ParseCacheStats
	// The CA: orders kept at most at once, orders answered after a delay,
	// orders the loop told it to forget.
	OrdersPeak, Delayed, Forgets int
	// The longest a retry came after the backoff schedule allowed it, and
	// the longest a certificate was not Ready past the start of its
	// ReadyBound.
	MaxRetryLate, MaxUnready time.Duration
	// With Fallback: the certificates each CA issued (by issuer name)
	// during the first CA's outage and after it; how long after the
	// outage the first CA issued again, and the second CA issued last
	// (-1: never); and the longest a certificate was not Ready, from
	// when it stopped being Ready (its creation, an expiry) to when it
	// was again.
	IssuedInOutage, IssuedAfterOutage   map[string]int
	FirstCABackAfter, SecondCALastAfter time.Duration
	LongestUnready                      time.Duration
	// Reasons counts passes by their result's reason.
	Reasons    map[string]int
	Violations []string // each broken invariant, once per kind and certificate
	Wall       time.Duration
	HeapBytes  uint64 // live heap after the run, simulation included
	HostBytes  uint64 // the part of it the hosts hold
	Faults     map[string]int
}

// BytesPerCertificate is the hosts' live heap after the run (stores,
// loops, CAs) per certificate.
func (s Summary) BytesPerCertificate() float64 { return float64(s.HostBytes) / float64(s.Certificates) }

// String is the summary a person reads at a glance; the last line is
// "violations: N".
func (s Summary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "certificates:            %d\n", s.Certificates)
	fmt.Fprintf(&b, "virtual days:            %d\n", s.Days)
	fmt.Fprintf(&b, "issuances:               %d (%d renewals)\n", s.Issuances, s.Renewals)
	fmt.Fprintf(&b, "requests:                %d, failed %d\n", s.Requests, s.Failures)
	fmt.Fprintf(&b, "requests per cert:       max %d, mean %.2f\n", s.MaxRequestsPerCert, s.MeanRequestsPerCert)
	fmt.Fprintf(&b, "expiries:                %d (%d excused: renewal disabled, or the CA failed every attempt)\n", s.Expiries, s.ExcusedExpiries)
	fmt.Fprintf(&b, "peak renewals/minute:    %d\n", s.PeakRenewalsPerMinute)
	if s.Issuances > 0 {
		fmt.Fprintf(&b, "loop passes:             %d (%.1f per issuance), %d calls to the CA\n", s.Passes, float64(s.Passes)/float64(s.Issuances), s.Answers)
	}
	fmt.Fprintf(&b, "parse cache:             %d hits, %d misses, %d evictions\n", s.Parses.Hits, s.Parses.Misses, s.Parses.Evictions)
	fmt.Fprintf(&b, "CA orders:               at most %d at once, %d answered after a delay, %d forgotten when their request went\n", s.OrdersPeak, s.Delayed, s.Forgets)
	fmt.Fprintf(&b, "longest waits:           retry %v after the backoff allowed it (bound %v), un-Ready %v (bound %v)\n",
		s.MaxRetryLate, RetryBound, s.MaxUnready, ReadyBound)
	if s.IssuedInOutage != nil {
		fmt.Fprintf(&b, "fallback:                issued in the first CA's outage: %s; after it: %s\n", describeCounts(s.IssuedInOutage), describeCounts(s.IssuedAfterOutage))
		fmt.Fprintf(&b, "                         after the outage, the first CA issued again after %v, the second last after %v; longest un-Ready %v\n",
			s.FirstCABackAfter, s.SecondCALastAfter, s.LongestUnready)
	}
	if len(s.Faults) > 0 {
		keys := make([]string, 0, len(s.Faults))
		for k := range s.Faults {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + " " + strconv.Itoa(s.Faults[k])
		}
		fmt.Fprintf(&b, "faults:                  CA: %s\n", strings.Join(parts, ", "))
		fmt.Fprintf(&b, "                         host: %d crashed writes (%d process restarts), %d passes met a conflict, %d reads behind the latest write\n", s.Crashes, s.Restarts, s.Conflicts, s.StaleReads)
		fmt.Fprintf(&b, "                         users: %d manual renewals, %d spec changes and %d re-creations mid-order\n", s.ManualTriggers, s.SpecChanges, s.Recreations)
	}
	fmt.Fprintf(&b, "wall time:               %.1fs\n", s.Wall.Seconds())
	fmt.Fprintf(&b, "memory per certificate:  %.0f bytes held by the host (%.0f with the simulation's bookkeeping)\n",
		s.BytesPerCertificate(), float64(s.HeapBytes)/float64(s.Certificates))
	for i, v := range s.Violations {
		if i == 20 {
			fmt.Fprintf(&b, "  … and %d more\n", len(s.Violations)-20)
			break
		}
		fmt.Fprintf(&b, "  violation: %s\n", v)
	}
	fmt.Fprintf(&b, "violations: %d\n", len(s.Violations))
	return b.String()
}

func describeCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + " " + strconv.Itoa(m[k])
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// Run runs the simulation.
func Run(ctx context.Context, cfg Config) (Summary, error) {
	if err := cfg.Validate(); err != nil {
		return Summary{}, err
	}
	began := time.Now()
	shards := make([]*shard, cfg.Shards)
	errs := make([]error, cfg.Shards)
	var wg sync.WaitGroup
	for i := range shards {
		s, err := newShard(cfg, i)
		if err != nil {
			return Summary{}, err
		}
		shards[i] = s
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.run(ctx)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return Summary{}, err
	}
	sum := Summary{Certificates: cfg.Certificates + cfg.arrivals, Days: cfg.Days, Faults: map[string]int{}, Reasons: map[string]int{}}
	if cfg.Fallback {
		sum.IssuedInOutage, sum.IssuedAfterOutage, sum.FirstCABackAfter, sum.SecondCALastAfter = map[string]int{}, map[string]int{}, -1, -1
	}
	perMinute := map[int64]int{}
	for _, s := range shards {
		s.track.mergeInto(&sum, perMinute)
		if cfg.Faults {
			for f, n := range s.ca.faults {
				if fault(f) != faultNone {
					sum.Faults[fault(f).String()] += n
				}
			}
		}
		sum.Crashes += s.crashes
		sum.Restarts += s.restarts
		sum.Conflicts += s.conflicts
		sum.StaleReads += s.st.staleReads
		sum.ManualTriggers += s.manual
		sum.SpecChanges += s.specChanges
		sum.Recreations += s.recreations
		sum.Passes += s.passes
		s.keepParses()
		addParses(&sum.Parses, s.parses)
		sum.Answers += s.answers
		sum.OrdersPeak += s.ca.ordersPeak
		sum.Delayed += s.delayed
		sum.Forgets += s.ca.forgets
		if s.ca2 != nil {
			sum.OrdersPeak += s.ca2.ordersPeak
			sum.Forgets += s.ca2.forgets
			if cfg.Faults {
				for f, n := range s.ca2.faults {
					if fault(f) != faultNone {
						sum.Faults[fault(f).String()] += n
					}
				}
			}
		}
		for r, n := range s.reasons {
			sum.Reasons[r] += n
		}
	}
	for _, n := range perMinute {
		sum.PeakRenewalsPerMinute = max(sum.PeakRenewalsPerMinute, n)
	}
	if cfg.Jitter {
		bound := cfg.Certificates/100 + 10
		if sum.PeakRenewalsPerMinute > bound {
			sum.Violations = append(sum.Violations, fmt.Sprintf("renewal peak: %d renewals started in one minute, above the bound of %d with jitter on",
				sum.PeakRenewalsPerMinute, bound))
		}
	}
	if sum.Requests > 0 {
		sum.MeanRequestsPerCert = float64(sum.Requests) / float64(cfg.Certificates)
	}
	sort.Strings(sum.Violations)
	sum.Wall = time.Since(began)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	sum.HeapBytes = ms.HeapAlloc
	if cfg.HeapProfile != nil {
		if err := pprof.WriteHeapProfile(cfg.HeapProfile); err != nil {
			return sum, err
		}
	}
	// The host's share: what the heap drops by when the hosts (stores,
	// loops, CAs) go, the simulation's own bookkeeping staying.
	for _, s := range shards {
		s.drop()
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	if ms.HeapAlloc < sum.HeapBytes {
		sum.HostBytes = sum.HeapBytes - ms.HeapAlloc
	}
	runtime.KeepAlive(shards)
	return sum, nil
}

// issuerRef is the fleet's issuer; fallbackRef, with Config.Fallback,
// its second, every certificate's fallback issuer.
var (
	issuerRef    = certificate.IssuerRef{Name: "fleet-ca"}
	fallbackRef  = certificate.IssuerRef{Name: "fleet-ca-2"}
	fallbackRefs = []certificate.IssuerRef{fallbackRef}
)

// shard is one host — a loop over a store, with a CA — and its
// certificates, on its own clock.
type shard struct {
	cfg   Config
	index int
	clk   *testingclock.FakeClock
	st    *store
	ca    *ca
	ca2   *ca // with Config.Fallback: the second CA
	loop  *host.Loop
	names []string
	track *tracker
	users userEvents
	// gone are the UIDs of deleted certificates, and when they went.
	gone map[string]time.Time

	// The host process: dead from a crash until restartAt, when a new loop
	// starts; stop ends the step it died in.
	dead      bool
	restartAt time.Time
	// procCtx is the running process's: a restart cancels it (stop),
	// ending the step in flight, and the next process gets a new one.
	procCtx context.Context
	stop    context.CancelFunc
	writes  uint64

	crashes, restarts, conflicts, manual, specChanges, recreations int
	passes, answers, delayed                                       int
	reasons                                                        map[string]int
	// parses is what the loops' parse caches did, summed over restarts.
	parses keys.ParseCacheStats
	pc     *keys.ParseCache
}

func newShard(cfg Config, index int) (*shard, error) {
	clk := testingclock.NewFakeClock(cfg.Start)
	s := &shard{cfg: cfg, index: index, clk: clk, reasons: map[string]int{}, gone: map[string]time.Time{}}
	var err error
	if s.ca, err = newCA(rand.Reader, fmt.Sprintf("fleet CA %d", index), cfg.Start.AddDate(-1, 0, 0)); err != nil {
		return nil, err
	}
	s.ca.plan, s.ca.retryAfter = s.plan, RateLimitWait
	s.track = newTracker(cfg)
	s.st = newStore(clk)
	s.st.shared = [][]byte{s.ca.certPEM}
	if cfg.Fallback {
		if s.ca2, err = newCA(rand.Reader, fmt.Sprintf("fleet CA %d, the second", index), cfg.Start.AddDate(-1, 0, 0)); err != nil {
			return nil, err
		}
		s.ca2.plan, s.ca2.retryAfter = s.planSecond, RateLimitWait
		s.st.shared = append(s.st.shared, s.ca2.certPEM)
		s.track.circuits = func() []host.CircuitState {
			if s.loop == nil {
				return nil
			}
			return s.loop.Reconciler().Circuits()
		}
	}
	s.st.observe = func(w write) {
		if name := w.obj.Meta().Name; s.traced(name) {
			s.trace(name, "write", describeWrite(w))
		}
		s.track.wrote(w, clk.Now())
	}
	if cfg.Faults {
		s.st.lagOf = func(kind host.Kind, name string, version uint64) time.Duration {
			key := strconv.FormatUint(cfg.Seed, 10) + "/" + string(kind) + "/" + name + "/" + strconv.FormatUint(version, 10)
			return time.Duration(int64(float64(2*StoreLag) * fraction("fleet-lag", key)))
		}
		s.st.crash = s.crash
	}
	if err := s.start(); err != nil {
		return nil, err
	}
	for i := index; i < cfg.Certificates; i += cfg.Shards {
		c := fleetCertificate(cfg, i)
		s.names = append(s.names, c.Name)
		if err := s.st.userWrite(c, true); err != nil {
			return nil, err
		}
	}
	if cfg.arrivals > 0 && len(cfg.outageDays) > 0 {
		// Created evenly over the first outage day and the day after.
		from := cfg.Start.Add(time.Duration(cfg.outageDays[0]) * 24 * time.Hour)
		for i := index; i < cfg.arrivals; i += cfg.Shards {
			c := fleetCertificate(cfg, cfg.Certificates+i)
			s.users.add(userEvent{at: from.Add(time.Duration(i) * 48 * time.Hour / time.Duration(cfg.arrivals)), kind: createCert, name: c.Name, spec: c.Spec})
		}
	}
	return s, nil
}

// start starts the host: a new loop over the store.
func (s *shard) start() error {
	var iss certificate.Issuer = s.ca
	if s.cfg.forgetless {
		iss = forgetless{s.ca}
	}
	issuers := map[certificate.IssuerRef]certificate.Issuer{issuerRef: iss}
	if s.ca2 != nil {
		var iss2 certificate.Issuer = s.ca2
		if s.cfg.forgetless {
			iss2 = forgetless{s.ca2}
		}
		issuers[fallbackRef] = iss2
	}
	s.st.reopen()
	s.keepParses()
	// A restarted process starts with an empty cache, as a real one does.
	s.pc = keys.NewParseCache(0)
	var st host.Store = s.st
	if s.cfg.claimAuthoritative {
		st = authoritative{s.st}
	}
	loop, err := host.New(host.Config{
		Store: st, Clock: s.clk, Rand: rand.Reader,
		Issuers:     issuers,
		Certificate: certificate.Config{Renewal: renewal.Options{Timing: renewal.Timing{Jitter: s.cfg.Jitter}}, Backoff: s.cfg.backoff, ParseCache: s.pc},
		Observe:     s.observe,
		// The simulation counts and checks every failure it provokes
		// itself (Observe); a log line for each is noise.
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return err
	}
	s.loop, s.dead, s.restartAt = loop, false, time.Time{}
	return nil
}

// keepParses adds what the loop's parse cache did to the shard's count.
func (s *shard) keepParses() {
	if s.pc == nil {
		return
	}
	addParses(&s.parses, s.pc.Stats())
	s.pc = nil
}

// addParses adds st's lookups and evictions to sum (what a cache holds now
// is no count).
func addParses(sum *keys.ParseCacheStats, st keys.ParseCacheStats) {
	sum.Hits += st.Hits
	sum.Misses += st.Misses
	sum.Evictions += st.Evictions
}

// drop lets the host go, for the memory figure.
func (s *shard) drop() {
	s.loop, s.st, s.ca, s.ca2 = nil, nil, nil, nil
}

// forgetless is the CA without its Forget (no certificate.Forgetter): it
// is never told of deleted requests, and the invariants must catch it.
type forgetless struct{ ca *ca }

func (f forgetless) Answer(ctx context.Context, r *certificate.CertificateRequest, now time.Time) (time.Time, error) {
	return f.ca.Answer(ctx, r, now)
}

// authoritative is the store claiming that its reads show every write,
// lagging or not: the invariants must catch the loop deciding on reads
// that do not show its own last writes.
type authoritative struct{ *store }

func (authoritative) Authoritative() bool { return true }

// chance is a deterministic draw: true with probability num/den for the
// given parts and the seed.
func (s *shard) chance(num, den uint64, parts ...string) bool {
	key := strconv.FormatUint(s.cfg.Seed, 10) + "/" + strings.Join(parts, "/")
	return hash64("fleet", key)%den < num
}

// crash decides whether a write of the loop meets a crash.
func (s *shard) crash(kind host.Kind, name string) crashPoint {
	if s.dead {
		return crashBefore // the process is gone: nothing it does lands
	}
	s.writes++
	n := strconv.Itoa(s.index) + "/" + strconv.FormatUint(s.writes, 10)
	if !s.chance(CrashPermille, 1000, "crash", n) {
		return noCrash
	}
	s.crashes++
	if s.chance(1, RestartEvery, "restart", n) {
		s.restarts++
		s.dead, s.restartAt = true, s.clk.Now().Add(RestartDelay)
		s.stop()
		return crashBefore
	}
	if s.chance(1, 2, "after", n) {
		return crashAfter
	}
	return crashBefore
}

// The parts of the fleet's specs that many certificates share: the
// store shares specs with what it returns, and nothing changes them in
// place.
var (
	lifetimes  = map[time.Duration]*certificate.Duration{}
	ed25519Key = &keys.KeySpec{Algorithm: keys.AlgorithmEd25519}
	noRenewal  = &renewal.Spec{Policy: renewal.PolicyDisabled}
	weekdays   = &renewal.Spec{Policy: renewal.PolicyScheduled, Windows: []renewal.Window{
		{DaysOfWeek: []string{"Mon", "Tue", "Wed", "Thu", "Fri"}, Start: "09:00", End: "17:00"}}}
)

func init() {
	for _, d := range []time.Duration{6 * 24 * time.Hour, 45 * 24 * time.Hour, 90 * 24 * time.Hour} {
		lifetimes[d] = &certificate.Duration{Duration: d}
	}
}

// fleetCertificate is certificate i: its lifetime, policy and names.
func fleetCertificate(cfg Config, i int) *certificate.Certificate {
	name := fmt.Sprintf("c%05d", i)
	pick := hash64("fleet-shape", strconv.FormatUint(cfg.Seed, 10)+"/"+name) % 100
	d := 90 * 24 * time.Hour
	switch {
	case pick < shortLivedPercent:
		d = 6 * 24 * time.Hour
	case pick < shortLivedPercent+midPercent:
		d = 45 * 24 * time.Hour
	}
	c := &certificate.Certificate{
		ObjectMeta: certificate.ObjectMeta{Name: name, Namespace: "fleet", UID: "uid-" + name},
		Spec: certificate.Spec{SecretName: name + "-tls", DNSNames: []string{name + ".fleet.example"},
			Duration: lifetimes[d], IssuerRef: issuerRef, PrivateKey: ed25519Key},
	}
	if cfg.Fallback && !cfg.noFallbackRefs {
		c.Spec.FallbackIssuerRefs = fallbackRefs
	}
	policy := hash64("fleet-policy", strconv.FormatUint(cfg.Seed, 10)+"/"+name) % 100
	switch {
	case policy < DisabledPercent:
		c.Spec.Renewal = noRenewal
	case policy < DisabledPercent+ScheduledPercent:
		c.Spec.Renewal = weekdays
	}
	return c
}

// plan decides a new order of the CA, deterministically: when it answers
// (and, for an order kept pending, whether its certificate's user acts
// meanwhile), and with faults on, how.
func (s *shard) plan(r *certificate.CertificateRequest, now time.Time) (fault, time.Duration) {
	return s.planFor(r, now, false)
}

// planSecond plans an order of the second CA (Config.Fallback): as the
// first's, but never down.
func (s *shard) planSecond(r *certificate.CertificateRequest, now time.Time) (fault, time.Duration) {
	return s.planFor(r, now, true)
}

func (s *shard) planFor(r *certificate.CertificateRequest, now time.Time, second bool) (fault, time.Duration) {
	key := strconv.FormatUint(s.cfg.Seed, 10) + "/" + r.Name + "/" + strconv.FormatInt(now.Unix(), 10)
	if second {
		key += "/second"
	}
	var wait time.Duration
	if hash64("fleet-pending", key)%100 < PendingPercent {
		wait = PendingMin + time.Duration(float64(PendingMax-PendingMin)*fraction("fleet-wait", key))
	}
	if s.cfg.slowCA > 0 {
		wait = s.cfg.slowCA
	}
	if wait > 0 {
		s.delayed++
	}
	outages := s.cfg.outageDays
	if outages == nil && s.cfg.Faults {
		outages = OutageDays
	}
	day := int(now.Sub(s.cfg.Start) / (24 * time.Hour))
	for _, d := range outages {
		if day == d && !second {
			return faultOutage, wait
		}
	}
	if !s.cfg.Faults {
		return faultNone, wait
	}
	if wait > 0 {
		cert := r.Annotations[certificate.AnnotationCertificateName]
		switch user := hash64("fleet-user", key) % 100; {
		case user < SpecChangePercent:
			s.users.add(userEvent{at: now.Add(wait / 2), kind: specChange, name: cert})
		case user < SpecChangePercent+RecreatePercent:
			s.users.add(userEvent{at: now.Add(wait / 2), kind: deleteCert, name: cert})
		}
	}
	switch r := hash64("fleet-fault", key) % 1000; {
	case r < FailPercent*10:
		return faultFail, wait
	case r < FailPercent*10+WrongKeyPermille:
		return faultWrongKey, wait
	case r < FailPercent*10+WrongKeyPermille+ExpiredPermille:
		return faultExpired, wait
	case r < FailPercent*10+WrongKeyPermille+ExpiredPermille+RateLimitPermille:
		return faultRateLimited, wait
	}
	return faultNone, wait
}

// run drives the shard to the end of virtual time.
func (s *shard) run(ctx context.Context) error {
	end := s.cfg.Start.Add(time.Duration(s.cfg.Days) * 24 * time.Hour)
	nextDay := s.cfg.Start.Add(24 * time.Hour)
	var stuckAt time.Time
	stuck := 0
	defer func() {
		if s.procCtx != nil {
			s.stop()
		}
	}()
	for ctx.Err() == nil {
		next := nextDay
		if s.loop != nil {
			if t, ok := s.loop.Next(); ok && t.Before(next) {
				next = t
			}
		} else if s.restartAt.Before(next) {
			next = s.restartAt
		}
		if t, ok := s.st.nextVisible(); ok && t.Before(next) {
			next = t
		}
		if t, ok := s.users.next(); ok && t.Before(next) {
			next = t
		}
		final := next.After(end)
		if final {
			next = end
		}
		if next.After(s.clk.Now()) {
			s.clk.SetTime(next)
		}
		now := s.clk.Now()
		s.st.show()
		if s.loop == nil && !now.Before(s.restartAt) {
			if err := s.start(); err != nil {
				return err
			}
		}
		if !nextDay.After(now) {
			s.daily(now)
			nextDay = nextDay.Add(24 * time.Hour)
		}
		for _, ev := range s.users.due(now) {
			if err := s.act(ev, now); err != nil {
				return err
			}
		}
		if err := s.step(ctx); err != nil {
			return err
		}
		if final {
			s.finish(now)
			return nil
		}
		// Nothing may keep the loop busy at one instant.
		if now.Equal(stuckAt) {
			if stuck++; stuck > 10_000 {
				return fmt.Errorf("fleet: shard %d: the loop is still busy after %d steps at %s", s.index, stuck, stamp(now))
			}
		} else {
			stuckAt, stuck = now, 0
		}
	}
	return ctx.Err()
}

// step steps the loop once, if the host is alive, and checks the CA's
// orders after it. A crash that kills the host ends the step and the
// loop.
func (s *shard) step(ctx context.Context) error {
	if s.loop == nil {
		return nil
	}
	if s.procCtx == nil {
		s.procCtx, s.stop = context.WithCancel(ctx)
	}
	_, err := s.loop.Step(s.procCtx)
	if s.dead {
		s.loop = nil // a new one starts at restartAt
		s.stop()
		s.procCtx = nil
		err = nil
	}
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("fleet: shard %d: %w", s.index, err)
	}
	s.track.afterStep(s.st, s.cas(), s.clk.Now())
	return nil
}

// cas are the shard's CAs: the first, and with Config.Fallback the
// second.
func (s *shard) cas() []*ca {
	if s.ca2 != nil {
		return []*ca{s.ca, s.ca2}
	}
	return []*ca{s.ca}
}

// finish: the last checks, at the end of virtual time.
func (s *shard) finish(now time.Time) {
	s.track.sweep(now)
	s.track.orphans(s.st, s.gone, now)
	var orders []objKey
	for _, c := range s.cas() {
		c.mu.Lock()
		for k := range c.orders {
			orders = append(orders, k)
		}
		c.mu.Unlock()
	}
	for _, k := range orders {
		if !s.st.hasRequest(k.namespace, k.name) && !s.track.leaked[k] {
			s.track.violation("issuer state", k.name, "at the end the CA keeps an order for request %s, which does not exist", k)
		}
	}
}

// daily: the sweep, the orphan check, and manual renewals.
func (s *shard) daily(now time.Time) {
	s.track.sweep(now)
	s.track.orphans(s.st, s.gone, now)
	if !s.cfg.Faults {
		return
	}
	day := strconv.Itoa(int(now.Sub(s.cfg.Start) / (24 * time.Hour)))
	want := ManualPerDay * len(s.names) / s.cfg.Certificates
	for i := 0; i < want; i++ {
		name := s.names[hash64("fleet-manual", strconv.FormatUint(s.cfg.Seed, 10)+"/"+day+"/"+strconv.Itoa(i))%uint64(len(s.names))]
		c := s.st.latestCertificate("fleet", name)
		if c == nil {
			continue
		}
		c.Status.Conditions = setCondition(c.Status.Conditions, certificate.Condition{Type: certificate.ConditionIssuing, Status: certificate.StatusTrue,
			Reason: certificate.ReasonManualTrigger, Message: "renewed by hand (simulation)", LastTransitionTime: now, ObservedGeneration: c.Generation})
		if err := s.st.userWrite(c, false); err == nil {
			s.manual++
			s.track.manual(name, now)
		}
	}
}

func setCondition(conds []certificate.Condition, c certificate.Condition) []certificate.Condition {
	out := conds[:0:0]
	for _, cd := range conds {
		if cd.Type != c.Type {
			out = append(out, cd)
		}
	}
	return append(out, c)
}

// act carries out a user's action.
func (s *shard) act(ev userEvent, now time.Time) error {
	switch ev.kind {
	case specChange:
		c := s.st.latestCertificate("fleet", ev.name)
		if c == nil {
			return nil
		}
		s.specChanges++
		c.Spec.DNSNames = []string{fmt.Sprintf("%s-v%d.fleet.example", ev.name, s.specChanges)}
		if err := s.st.userWrite(c, false); err != nil {
			return err
		}
		s.track.specChanged(ev.name, now)
	case deleteCert:
		c := s.st.latestCertificate("fleet", ev.name)
		if c == nil {
			return nil
		}
		s.recreations++
		if err := s.st.userDelete(c.Namespace, c.Name); err != nil {
			return err
		}
		s.gone[c.UID] = now
		// Created again at once (kubectl replace --force) or a little later.
		after := time.Duration(hash64("fleet-recreate", ev.name+"/"+strconv.FormatInt(now.Unix(), 10))%3) * 15 * time.Second
		s.users.add(userEvent{at: now.Add(after), kind: createCert, name: ev.name, spec: c.Spec})
	case createCert:
		c := &certificate.Certificate{ObjectMeta: certificate.ObjectMeta{Name: ev.name, Namespace: "fleet"}, Spec: ev.spec}
		if err := s.st.userWrite(c, true); err != nil && !errors.Is(err, host.ErrAlreadyExists) {
			return err
		}
	}
	return nil
}

func (s *shard) observe(e host.Event) {
	if s.traced(e.Name) {
		s.trace(e.Name, "loop", describeEvent(e))
	}
	switch {
	case errors.Is(e.Err, host.ErrConflict):
		s.conflicts++
	}
	if e.Kind == host.KindCertificate && e.Result != nil {
		s.passes++
		s.reasons[e.Result.Reason]++
	}
	if e.Kind == host.KindRequest && e.Request != nil {
		s.answers++
	}
}

// User actions, in time order.

type userKind uint8

const (
	specChange userKind = iota
	deleteCert
	createCert
)

type userEvent struct {
	at   time.Time
	seq  int
	kind userKind
	name string
	spec certificate.Spec // createCert
}

type userEvents struct {
	h   eventHeap
	seq int
}

type eventHeap []userEvent

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(userEvent)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

func (u *userEvents) add(e userEvent) {
	u.seq++
	e.seq = u.seq
	heap.Push(&u.h, e)
}

func (u *userEvents) next() (time.Time, bool) {
	if len(u.h) == 0 {
		return time.Time{}, false
	}
	return u.h[0].at, true
}

func (u *userEvents) due(now time.Time) []userEvent {
	var out []userEvent
	for len(u.h) > 0 && !u.h[0].at.After(now) {
		out = append(out, heap.Pop(&u.h).(userEvent))
	}
	return out
}

// hash64 is the simulation's deterministic draw: FNV-1a of the domain and
// the key, mixed by murmur3's finaliser (FNV's low bits alone correlate
// across keys that differ in a counter), the same on every run and
// machine.
func hash64(domain, key string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(domain))
	h.Write([]byte{0})
	h.Write([]byte(key))
	x := h.Sum64()
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// fraction is a deterministic draw in [0, 1).
func fraction(domain, key string) float64 {
	return float64(hash64(domain, key)>>11) / (1 << 53)
}

// traced reports whether the story of the object name is printed: the
// traced certificate's and its secrets' and requests'.
func (s *shard) traced(name string) bool {
	if s.cfg.Trace == nil || !strings.HasPrefix(name, s.cfg.TraceName) {
		return false
	}
	rest := name[len(s.cfg.TraceName):]
	return rest == "" || rest[0] == '-' // not another certificate whose name starts the same
}

// trace writes a line about the object named name when it concerns the
// traced certificate; callers check traced first, so that a line nobody
// reads is not formatted.
func (s *shard) trace(name, what, line string) {
	if !s.traced(name) {
		return
	}
	fmt.Fprintf(s.cfg.Trace, "%s shard %d %-5s %s\n", s.clk.Now().UTC().Format("2006-01-02 15:04:05.000"), s.index, what, line)
}

func describeWrite(w write) string {
	m := w.obj.Meta()
	op := "update"
	switch {
	case w.deleted:
		op = "delete"
	case w.created:
		op = "create"
	}
	out := fmt.Sprintf("%s %s %s rv=%s", op, kindOf(w.obj), m.Name, m.ResourceVersion)
	switch o := w.obj.(type) {
	case *certificate.Certificate:
		out += " " + describeStatus(o.Status)
	case *certificate.CertificateRequest:
		for _, c := range o.Status.Conditions {
			out += " " + c.Type + "=" + c.Status + "(" + c.Reason + ")"
		}
	}
	return out
}

func describeStatus(st certificate.Status) string {
	var b strings.Builder
	for _, c := range st.Conditions {
		fmt.Fprintf(&b, "%s=%s(%s) ", c.Type, c.Status, c.Reason)
	}
	if st.Revision != nil {
		fmt.Fprintf(&b, "rev=%d ", *st.Revision)
	}
	if st.LastFailureTime != nil {
		fmt.Fprintf(&b, "lastFailure=%s ", stamp(*st.LastFailureTime))
	}
	if st.FailedIssuanceAttempts != nil {
		fmt.Fprintf(&b, "failed=%d ", *st.FailedIssuanceAttempts)
	}
	if st.NotAfter != nil {
		fmt.Fprintf(&b, "notAfter=%s ", stamp(*st.NotAfter))
	}
	if st.NextPrivateKeySecretName != "" {
		fmt.Fprintf(&b, "nextKey=%s ", st.NextPrivateKeySecretName)
	}
	return strings.TrimSpace(b.String())
}

func describeEvent(e host.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", e.Kind, e.Name)
	if e.Result != nil {
		fmt.Fprintf(&b, " %s/%s: %s;", e.Result.Stage, e.Result.Reason, e.Result.Message)
		for _, a := range e.Result.Actions {
			fmt.Fprintf(&b, " %v", a)
		}
		if len(e.Done) != len(e.Result.Actions) {
			fmt.Fprintf(&b, " (done %d)", len(e.Done))
		}
	}
	if e.Request != nil {
		for _, c := range e.Request.Status.Conditions {
			fmt.Fprintf(&b, " %s=%s(%s)", c.Type, c.Status, c.Reason)
		}
	}
	if !e.Next.IsZero() {
		fmt.Fprintf(&b, " next=%s", e.Next.UTC().Format("2006-01-02 15:04:05.000"))
	}
	if e.Err != nil {
		fmt.Fprintf(&b, " err=%v", e.Err)
	}
	return b.String()
}
