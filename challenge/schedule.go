package challenge

import (
	"strings"
	"time"
)

// Scheduler defaults.
const (
	DefaultMaxInFlight   = 60
	DefaultAccountBudget = 300 // Let's Encrypt: pending authorizations per account
)

// SchedulerConfig bounds the scheduler. The zero value is the default of
// each field.
type SchedulerConfig struct {
	// MaxInFlight caps challenges with Processing set. Zero means 60.
	MaxInFlight int
	// MaxPerPass caps how many one pass starts. Zero means no cap beyond
	// MaxInFlight.
	MaxPerPass int
	// AccountBudget caps in-flight challenges per ACME account (pending
	// authorizations). Zero means 300.
	AccountBudget int
}

// Schedule chooses which challenges to start now (to set Processing on),
// deterministically for the same input:
//
//   - never more than MaxInFlight processing at once, nor MaxPerPass per pass;
//   - never two for the same (DNS name, type) at once;
//   - never more than AccountBudget in flight for one account;
//   - oldest first within an issuer and account, and round-robin across
//     (issuer, account) groups, so one issuer's failing backlog cannot
//     starve another's new certificates.
//
// Challenges already final or processing are never returned, nor one that
// gave its slot back to wait for a retry (Status.NextAttemptAt after now).
// It runs in time linear in len(all), plus a heap pop per pick.
func Schedule(all []*Challenge, now time.Time, cfg SchedulerConfig) []*Challenge {
	maxInFlight := cfg.MaxInFlight
	if maxInFlight <= 0 {
		maxInFlight = DefaultMaxInFlight
	}
	budget := cfg.AccountBudget
	if budget <= 0 {
		budget = DefaultAccountBudget
	}

	type key struct {
		name string
		typ  Type
	}
	busy := map[key]bool{}
	perAccount := map[string]int{}
	inFlight := 0
	var groups []*group
	var slots [16]*group // a direct-mapped cache of groups by account
	gid := make([]uint8, len(all))
	total := 0
	for i, c := range all {
		if c == nil {
			continue
		}
		if c.Status.Processing {
			inFlight++
			busy[key{strings.ToLower(c.Spec.DNSName), c.Spec.Type}] = true
			perAccount[c.Spec.Account]++
			continue
		}
		if c.Status.State.Final() {
			continue
		}
		if at := c.Status.NextAttemptAt; at != nil && now.Before(*at) {
			continue // waiting for its retry
		}
		slot := slotOf(c.Spec.Account)
		g := slots[slot]
		if g == nil || !g.holds(&c.Spec) {
			g = nil
			for _, h := range groups {
				if h.holds(&c.Spec) {
					g = h
					break
				}
			}
			if g == nil {
				if len(groups) == 255 {
					continue // more groups than any host has; the rest wait for the next pass
				}
				g = &group{issuer: c.Spec.Issuer, account: c.Spec.Account, all: all, id: uint8(len(groups) + 1)}
				groups = append(groups, g)
			}
			slots[slot] = g
		}
		gid[i] = g.id
		g.count++
		total++
	}
	capacity := maxInFlight - inFlight
	if cfg.MaxPerPass > 0 && cfg.MaxPerPass < capacity {
		capacity = cfg.MaxPerPass
	}
	if capacity <= 0 || total == 0 {
		return nil
	}
	buf := make([]cand, total)
	off := 0
	for _, g := range groups {
		g.idx = buf[off : off : off+g.count]
		off += g.count
	}
	for i, id := range gid {
		if id != 0 {
			g := groups[id-1]
			g.idx = append(g.idx, cand{at: all[i].CreationTimestamp.UnixNano(), i: int32(i)})
		}
	}
	for _, g := range groups {
		g.init()
	}
	// Groups take turns in the order of their oldest candidate.
	sortGroups(groups)

	var out []*Challenge
	for len(out) < capacity {
		progressed := false
		for _, g := range groups {
			if len(out) >= capacity {
				break
			}
			for g.len() > 0 {
				c := all[g.pop()]
				k := key{strings.ToLower(c.Spec.DNSName), c.Spec.Type}
				if busy[k] {
					continue // another challenge for this name and type runs
				}
				if perAccount[c.Spec.Account] >= budget {
					g.idx = g.idx[:0] // the account is out of budget this pass
					break
				}
				busy[k] = true
				perAccount[c.Spec.Account]++
				out = append(out, c)
				progressed = true
				break
			}
		}
		if !progressed {
			break
		}
	}
	return out
}

func slotOf(account string) int {
	if account == "" {
		return 0
	}
	return (len(account)*31 + int(account[len(account)-1])) & 15
}

// group is the candidates of one (issuer, account), as a min-heap ordered
// oldest first (creation time, then name). The creation time is copied
// into the heap so that ordering stays within one small array.
type group struct {
	issuer  Issuer
	account string
	all     []*Challenge
	idx     []cand
	id      uint8
	count   int
}

type cand struct {
	at int64 // creation time, Unix nanoseconds
	i  int32 // index into all
}

// holds reports whether s belongs to the group; the account is compared
// first, as it differs most often.
func (g *group) holds(s *Spec) bool {
	return g.account == s.Account && g.issuer.Name == s.Issuer.Name && g.issuer.Kind == s.Issuer.Kind && g.issuer.Group == s.Issuer.Group
}

func (g *group) less(a, b cand) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return g.all[a.i].Name < g.all[b.i].Name
}

func (g *group) len() int { return len(g.idx) }

func (g *group) init() {
	for i := len(g.idx)/2 - 1; i >= 0; i-- {
		g.down(i)
	}
}

func (g *group) down(i int) {
	n := len(g.idx)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && g.less(g.idx[r], g.idx[l]) {
			m = r
		}
		if !g.less(g.idx[m], g.idx[i]) {
			return
		}
		g.idx[i], g.idx[m] = g.idx[m], g.idx[i]
		i = m
	}
}

func (g *group) pop() int32 {
	top := g.idx[0].i
	n := len(g.idx) - 1
	g.idx[0] = g.idx[n]
	g.idx = g.idx[:n]
	if n > 0 {
		g.down(0)
	}
	return top
}

// oldest is the creation time of the group's oldest candidate.
func (g *group) oldest() (time.Time, string) {
	c := g.all[g.idx[0].i]
	return c.CreationTimestamp, c.Name
}

func sortGroups(gs []*group) {
	// Few groups: insertion sort.
	for i := 1; i < len(gs); i++ {
		for j := i; j > 0; j-- {
			ta, na := gs[j].oldest()
			tb, nb := gs[j-1].oldest()
			if ta.Before(tb) || (ta.Equal(tb) && na < nb) {
				gs[j], gs[j-1] = gs[j-1], gs[j]
				continue
			}
			break
		}
	}
}
