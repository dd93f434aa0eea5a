// Package fleet is the deterministic fleet simulation: many certificates
// on the reference host over virtual time, with an issuer and a store that
// misbehave, and invariants checked all through the run. examples/fleet is
// its command line.
package fleet

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/examples/internal/fleethost"
	"github.com/certlife/certlife/examples/internal/simca"
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
	// Faults turns on every fault (see Faults).
	Faults bool
	// Jitter spreads renewal times (renewal.Timing.Jitter).
	Jitter bool
	// Shards run in parallel, each its own host, CA and store; the result
	// depends on the shard count, never on the machine.
	Shards int
	// Start of virtual time.
	Start time.Time
	// HeapProfile, when set, receives a heap profile taken at the end of
	// the run while the fleet is still live (examples/fleet -memprofile).
	HeapProfile io.Writer
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

// The fleet's faults, when Config.Faults is on.
const (
	// FailPercent of requests fail.
	FailPercent = 5
	// WrongKeyPermille, ExpiredPermille and RateLimitPermille of requests
	// get a certificate for another key, an expired certificate, or a
	// rate-limit answer with a Retry-After of RateLimitWait.
	WrongKeyPermille  = 5
	ExpiredPermille   = 5
	RateLimitPermille = 5
	RateLimitWait     = 2 * time.Hour
	// StoreLag is how far the host expects reads to lag writes; each write
	// actually shows after between zero and twice that (writes stay in
	// order), so some reads are staler than the host expects.
	StoreLag = 5 * time.Second
	// CrashPermille of actions are preceded by a host crash.
	CrashPermille = 2
	// ManualPerDay certificates are renewed by hand each day.
	ManualPerDay = 5
)

// OutageDays are the days the issuer is down from midnight to midnight.
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
	// MaxRenewalsPerMinute is the invariant's bound on renewals started in
	// any one virtual minute, with jitter on: 1 % of the fleet plus 10.
)

// Summary is what a run found.
type Summary struct {
	Certificates, Days                 int
	Issuances                          int // certificates issued (first issuances and renewals)
	Renewals                           int
	Failures                           int // requests that failed or were rejected
	Requests                           int // requests created
	MaxRequestsPerCert                 int
	MeanRequestsPerCert                float64
	Expiries                           int // certificates that expired
	ExcusedExpiries                    int // expired with every attempt in their renewal period failed, or renewal disabled
	PeakRenewalsPerMinute              int
	Crashes, Conflicts, ManualTriggers int
	// Passes of the certificate controller, and answers from the issuer.
	Passes, Answers int
	// Reasons counts passes by their result's reason.
	Reasons    map[string]int
	Violations []string // each broken invariant, once per kind and certificate
	Wall       time.Duration
	HeapBytes  uint64 // live heap after the run, simulation included
	HostBytes  uint64 // the part of it the hosts hold
	Faults     map[string]int
}

// BytesPerCertificate is the hosts' live heap after the run (stores,
// caches, queues, indexes) per certificate.
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
	fmt.Fprintf(&b, "expiries:                %d (%d excused: renewal disabled, or the issuer failed every attempt)\n", s.Expiries, s.ExcusedExpiries)
	fmt.Fprintf(&b, "peak renewals/minute:    %d\n", s.PeakRenewalsPerMinute)
	if s.Issuances > 0 {
		fmt.Fprintf(&b, "controller passes:       %d (%.1f per issuance)\n", s.Passes, float64(s.Passes)/float64(s.Issuances))
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
		fmt.Fprintf(&b, "faults:                  %s; host crashes %d, stale-read retries %d, manual renewals %d\n", strings.Join(parts, ", "), s.Crashes, s.Conflicts, s.ManualTriggers)
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
	sum := Summary{Certificates: cfg.Certificates, Days: cfg.Days, Faults: map[string]int{}}
	perMinute := map[int64]int{}
	for _, s := range shards {
		s.track.mergeInto(&sum, perMinute)
		for f, n := range s.ca.Count {
			if f != fleethost.FaultNone {
				sum.Faults[f.String()] += n
			}
		}
		sum.Crashes += s.crashes
		sum.Conflicts += s.conflicts
		sum.ManualTriggers += s.manual
		sum.Passes += s.passes
		sum.Answers += s.answers
		if sum.Reasons == nil {
			sum.Reasons = map[string]int{}
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
	// caches, queues, CAs) go, the simulation's own bookkeeping staying.
	for _, s := range shards {
		s.h, s.ca = nil, nil
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	if ms.HeapAlloc < sum.HeapBytes {
		sum.HostBytes = sum.HeapBytes - ms.HeapAlloc
	}
	runtime.KeepAlive(shards)
	return sum, nil
}

// shard is one host with its own clock, CA and certificates.
type shard struct {
	cfg   Config
	index int
	clk   *testingclock.FakePassiveClock
	h     *fleethost.Host
	ca    *fleethost.LocalCA
	names []string
	track *tracker

	crashes, conflicts, manual int
	passes, answers            int
	reasons                    map[string]int
}

func newShard(cfg Config, index int) (*shard, error) {
	clk := testingclock.NewFakePassiveClock(cfg.Start)
	root, err := simca.NewEd25519(rand.Reader, fmt.Sprintf("fleet CA %d", index), cfg.Start.AddDate(-1, 0, 0))
	if err != nil {
		return nil, err
	}
	s := &shard{cfg: cfg, index: index, clk: clk, ca: &fleethost.LocalCA{CA: root, Rand: rand.Reader, RetryAfter: RateLimitWait, TrustRequests: true}}
	s.track = newTracker(cfg)
	opts := fleethost.Options{Clock: clk, Rand: rand.Reader,
		Config:  certificate.Config{Renewal: renewal.Options{Timing: renewal.Timing{Jitter: cfg.Jitter}}},
		Observe: s.observe,
	}
	if cfg.Faults {
		opts.Lag = StoreLag
		s.ca.Fault = s.fault
		// A host restarts in two seconds, before its last writes show (they
		// show within ten): its first passes read stale state.
		opts.RestartDelay = 2 * time.Second
		opts.Crash = func(cert string, action int) bool {
			if s.chance(CrashPermille, 1000, "crash", cert, strconv.FormatInt(clk.Now().UnixNano(), 10), strconv.Itoa(action)) {
				s.crashes++
				return true
			}
			return false
		}
	}
	if s.h, err = fleethost.New(opts); err != nil {
		return nil, err
	}
	s.h.SetIssuer("fleet-ca", s.ca)
	if cfg.Faults {
		lag := func(name string, version uint64) time.Duration {
			key := strconv.FormatUint(cfg.Seed, 10) + "/" + name + "/" + strconv.FormatUint(version, 10)
			return time.Duration(int64(float64(2*StoreLag) * fraction("fleet-lag", key)))
		}
		s.h.Certificates.LagOf, s.h.Secrets.LagOf, s.h.Requests.LagOf = lag, lag, lag
	}
	for i := index; i < cfg.Certificates; i += cfg.Shards {
		c := fleetCertificate(cfg, i)
		s.names = append(s.names, c.Name)
		s.track.add(c)
		if err := s.h.Apply(c); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// chance is a deterministic draw: true with probability num/den for the
// given parts and the seed.
func (s *shard) chance(num, den uint64, parts ...string) bool {
	key := strconv.FormatUint(s.cfg.Seed, 10) + "/" + strings.Join(parts, "/")
	return hash64("fleet", key)%den < num
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
			Duration: &certificate.Duration{Duration: d}, IssuerRef: certificate.IssuerRef{Name: "fleet-ca"},
			PrivateKey: &keys.KeySpec{Algorithm: keys.AlgorithmEd25519}},
	}
	policy := hash64("fleet-policy", strconv.FormatUint(cfg.Seed, 10)+"/"+name) % 100
	switch {
	case policy < DisabledPercent:
		c.Spec.Renewal = &renewal.Spec{Policy: renewal.PolicyDisabled}
	case policy < DisabledPercent+ScheduledPercent:
		c.Spec.Renewal = &renewal.Spec{Policy: renewal.PolicyScheduled, Windows: []renewal.Window{
			{DaysOfWeek: []string{"Mon", "Tue", "Wed", "Thu", "Fri"}, Start: "09:00", End: "17:00"}}}
	}
	return c
}

// fault is the issuer's misbehaviour for one request, deterministic.
func (s *shard) fault(req *certificate.CertificateRequest, now time.Time) fleethost.Fault {
	day := int(now.Sub(s.cfg.Start) / (24 * time.Hour))
	for _, d := range OutageDays {
		if day == d {
			return fleethost.FaultFail
		}
	}
	at := strconv.FormatInt(now.Unix(), 10)
	r := hash64("fleet-fault", strconv.FormatUint(s.cfg.Seed, 10)+"/"+req.Name+"/"+at) % 1000
	switch {
	case r < FailPercent*10:
		return fleethost.FaultFail
	case r < FailPercent*10+WrongKeyPermille:
		return fleethost.FaultWrongKey
	case r < FailPercent*10+WrongKeyPermille+ExpiredPermille:
		return fleethost.FaultExpired
	case r < FailPercent*10+WrongKeyPermille+ExpiredPermille+RateLimitPermille:
		return fleethost.FaultRateLimited
	}
	return fleethost.FaultNone
}

func (s *shard) run(ctx context.Context) error {
	end := s.cfg.Start.Add(time.Duration(s.cfg.Days) * 24 * time.Hour)
	nextDay := s.cfg.Start.Add(24 * time.Hour)
	for ctx.Err() == nil {
		next, ok := s.h.Next()
		if !ok || nextDay.Before(next) {
			next = nextDay
		}
		if next.After(end) {
			s.clk.SetTime(end)
			s.h.Step(ctx)
			s.track.sweep(end)
			return nil
		}
		if next.After(s.clk.Now()) {
			s.clk.SetTime(next)
		}
		if !nextDay.After(next) {
			s.daily(next)
			nextDay = nextDay.Add(24 * time.Hour)
		}
		s.h.Step(ctx)
	}
	return ctx.Err()
}

// daily: the expiry sweep, and manual renewals.
func (s *shard) daily(now time.Time) {
	s.track.sweep(now)
	if !s.cfg.Faults {
		return
	}
	day := strconv.Itoa(int(now.Sub(s.cfg.Start) / (24 * time.Hour)))
	want := ManualPerDay * len(s.names) / s.cfg.Certificates
	for i := 0; i < want; i++ {
		name := s.names[hash64("fleet-manual", strconv.FormatUint(s.cfg.Seed, 10)+"/"+day+"/"+strconv.Itoa(i))%uint64(len(s.names))]
		if err := s.h.Trigger(name, "renewed by hand (simulation)"); err == nil {
			s.manual++
			s.track.manual(name, now)
		}
	}
}

func (s *shard) observe(e fleethost.Event) {
	if e.Err != nil {
		s.conflicts++
	}
	if e.Result != nil {
		s.passes++
		if s.reasons == nil {
			s.reasons = map[string]int{}
		}
		s.reasons[e.Result.Reason]++
	} else {
		s.answers++
	}
	s.track.observe(e)
}

// hash64 is the simulation's deterministic draw: FNV-1a of the domain and
// the key, the same on every run and machine.
func hash64(domain, key string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(domain))
	h.Write([]byte{0})
	h.Write([]byte(key))
	return h.Sum64()
}

// fraction is a deterministic draw in [0, 1).
func fraction(domain, key string) float64 {
	return float64(hash64(domain, key)>>11) / (1 << 53)
}
