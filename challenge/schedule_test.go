package challenge

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	mathrand "math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scheduleByTheRules is Schedule as its documentation states the rules,
// done the slow and obvious way, for the fuzz target to hold Schedule to.
// Round after round, each (issuer, account) group in the order of its
// oldest candidate takes its oldest candidate not yet taken whose (DNS
// name, type) is free, if its account has budget left; it stops when the
// pass is full or a round takes nothing.
func scheduleByTheRules(all []*Challenge, now time.Time, cfg SchedulerConfig) []*Challenge {
	limit := cfg.MaxInFlight
	if limit <= 0 {
		limit = 60
	}
	budget := cfg.AccountBudget
	if budget <= 0 {
		budget = 300
	}
	type pair struct {
		name string
		typ  Type
	}
	pairOf := func(c *Challenge) pair { return pair{strings.ToLower(c.Spec.DNSName), c.Spec.Type} }
	type groupOf struct {
		issuer  Issuer
		account string
	}
	taken := map[pair]bool{}
	perAccount := map[string]int{}
	running := 0
	var candidates []*Challenge
	for _, c := range all {
		if c == nil {
			continue
		}
		if c.Status.Processing {
			running++
			taken[pairOf(c)] = true
			perAccount[c.Spec.Account]++
			continue
		}
		waiting := c.Status.NextAttemptAt != nil && c.Status.NextAttemptAt.After(now)
		if !c.Status.State.Final() && !waiting {
			candidates = append(candidates, c)
		}
	}
	room := limit - running
	if cfg.MaxPerPass > 0 && cfg.MaxPerPass < room {
		room = cfg.MaxPerPass
	}
	older := func(a, b *Challenge) bool {
		switch {
		case !a.CreationTimestamp.Equal(b.CreationTimestamp):
			return a.CreationTimestamp.Before(b.CreationTimestamp)
		case a.Name != b.Name:
			return a.Name < b.Name
		case a.Namespace != b.Namespace:
			return a.Namespace < b.Namespace
		}
		return a.UID < b.UID
	}
	members := map[groupOf][]*Challenge{}
	for _, c := range candidates {
		g := groupOf{c.Spec.Issuer, c.Spec.Account}
		members[g] = append(members[g], c)
	}
	var groups []groupOf
	for g, cs := range members {
		sort.SliceStable(cs, func(i, j int) bool { return older(cs[i], cs[j]) })
		groups = append(groups, g)
	}
	sort.Slice(groups, func(i, j int) bool { return older(members[groups[i]][0], members[groups[j]][0]) })

	picked := map[*Challenge]bool{}
	var out []*Challenge
	for {
		tookAny := false
		for _, g := range groups {
			if len(out) >= room {
				return out
			}
			if perAccount[g.account] >= budget {
				continue
			}
			for _, c := range members[g] {
				if !picked[c] && !taken[pairOf(c)] {
					picked[c], taken[pairOf(c)] = true, true
					perAccount[g.account]++
					out = append(out, c)
					tookAny = true
					break
				}
			}
		}
		if !tookAny {
			return out
		}
	}
}

// ids names challenges by namespace and name, in order.
func ids(cs []*Challenge) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Namespace+"/"+c.Name)
	}
	return out
}

func TestScheduleRules(t *testing.T) {
	in := func(issuer, account string, c *Challenge) *Challenge {
		c.Spec.Issuer, c.Spec.Account = Issuer{Name: issuer}, account
		return c
	}
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	tests := map[string]struct {
		all  func() []*Challenge
		cfg  SchedulerConfig
		want []string // names, in the order picked
	}{
		"every group is served: the oldest challenge, in the 300th group, goes first": {
			all: func() []*Challenge {
				var all []*Challenge
				for i := 1; i <= 300; i++ {
					created := t0
					if i == 300 {
						created = t0.Add(-time.Hour)
					}
					all = append(all, in(fmt.Sprintf("issuer-%03d", i), fmt.Sprintf("acct-%03d", i),
						newChallenge(fmt.Sprintf("c%03d", i), fmt.Sprintf("n%d.example", i), TypeHTTP01, created)))
				}
				return all
			},
			cfg:  SchedulerConfig{MaxInFlight: 3},
			want: []string{"c300", "c001", "c002"},
		},
		"groups take turns in the order of their oldest candidate, oldest first within each": {
			all: func() []*Challenge {
				return []*Challenge{
					in("a", "1", newChallenge("a-new", "a2.example", TypeHTTP01, at(5))),
					in("a", "1", newChallenge("a-old", "a1.example", TypeHTTP01, at(1))),
					in("b", "1", newChallenge("b-old", "b1.example", TypeHTTP01, at(0))),
					in("b", "1", newChallenge("b-new", "b2.example", TypeHTTP01, at(9))),
					in("b", "2", newChallenge("b2-only", "b3.example", TypeHTTP01, at(3))),
				}
			},
			want: []string{"b-old", "a-old", "b2-only", "b-new", "a-new"},
		},
		"a backlog in one group cannot starve another": {
			all: func() []*Challenge {
				var all []*Challenge
				for i := range 10 {
					all = append(all, in("failing", "1", newChallenge(fmt.Sprintf("old-%d", i), fmt.Sprintf("old%d.example", i), TypeHTTP01, at(i))))
				}
				return append(all, in("new", "2", newChallenge("new", "new.example", TypeHTTP01, at(100))))
			},
			cfg:  SchedulerConfig{MaxInFlight: 2},
			want: []string{"old-0", "new"},
		},
		"two challenges for one name and type never run at once, whatever the case of the name": {
			all: func() []*Challenge {
				return []*Challenge{
					newChallenge("first", "Shop.Example", TypeHTTP01, at(0)),
					newChallenge("same", "shop.example", TypeHTTP01, at(1)),
					newChallenge("other-type", "shop.example", TypeDNS01, at(2)),
				}
			},
			want: []string{"first", "other-type"},
		},
		"a processing challenge counts against the cap and holds its name": {
			all: func() []*Challenge {
				running := newChallenge("running", "busy.example", TypeHTTP01, at(0))
				running.Status.Processing = true
				return []*Challenge{running,
					newChallenge("blocked", "busy.example", TypeHTTP01, at(1)),
					newChallenge("free-1", "free1.example", TypeHTTP01, at(2)),
					newChallenge("free-2", "free2.example", TypeHTTP01, at(3)),
				}
			},
			cfg:  SchedulerConfig{MaxInFlight: 2},
			want: []string{"free-1"},
		},
		"an account out of budget stops only its own groups": {
			all: func() []*Challenge {
				running := in("x", "full", newChallenge("running", "r.example", TypeHTTP01, at(0)))
				running.Status.Processing = true
				return []*Challenge{running,
					in("y", "full", newChallenge("full-1", "f1.example", TypeHTTP01, at(1))),
					in("y", "full", newChallenge("full-2", "f2.example", TypeHTTP01, at(2))),
					in("z", "full", newChallenge("full-3", "f3.example", TypeHTTP01, at(3))),
					in("y", "spare", newChallenge("spare-1", "s1.example", TypeHTTP01, at(4))),
					in("y", "spare", newChallenge("spare-2", "s2.example", TypeHTTP01, at(5))),
				}
			},
			cfg:  SchedulerConfig{AccountBudget: 2},
			want: []string{"full-1", "spare-1", "spare-2"},
		},
		"final, processing and waiting challenges are not started; one whose retry is due is": {
			all: func() []*Challenge {
				valid := newChallenge("valid", "v.example", TypeHTTP01, at(0))
				valid.Status.State = StateValid
				waiting := newChallenge("waiting", "w.example", TypeHTTP01, at(1))
				waiting.Status.NextAttemptAt = tp(t0.Add(time.Second))
				due := newChallenge("due", "d.example", TypeHTTP01, at(2))
				due.Status.NextAttemptAt = tp(t0)
				running := newChallenge("running", "r.example", TypeHTTP01, at(3))
				running.Status.Processing = true
				return []*Challenge{valid, waiting, due, running, nil}
			},
			want: []string{"due"},
		},
		"a pass starts no more than MaxPerPass": {
			all: func() []*Challenge {
				var all []*Challenge
				for i := range 5 {
					all = append(all, newChallenge(fmt.Sprintf("c%d", i), fmt.Sprintf("n%d.example", i), TypeDNS01, at(i)))
				}
				return all
			},
			cfg:  SchedulerConfig{MaxPerPass: 2},
			want: []string{"c0", "c1"},
		},
		"equal creation times go to the name": {
			all: func() []*Challenge {
				return []*Challenge{
					newChallenge("b", "b.example", TypeHTTP01, t0),
					newChallenge("a", "a.example", TypeHTTP01, t0),
				}
			},
			cfg:  SchedulerConfig{MaxInFlight: 1},
			want: []string{"a"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			all := tc.all()
			got := Schedule(all, t0, tc.cfg)
			assert.Equal(t, tc.want, names(got), "Schedule()")
			assert.Equal(t, names(scheduleByTheRules(all, t0, tc.cfg)), names(got), "the reference disagrees")
			slices.Reverse(all)
			assert.Equal(t, tc.want, names(Schedule(all, t0, tc.cfg)), "Schedule() of the same challenges in reverse order")
		})
	}
}

// The pick does not depend on the order the host lists its challenges
// in: ties in creation time and name, across groups and within one, go
// to the namespace, then the UID.
func TestScheduleDoesNotDependOnInputOrder(t *testing.T) {
	var all []*Challenge
	for i, ns := range []string{"ns-c", "ns-a", "ns-b"} {
		for _, uid := range []string{"u2", "u1"} {
			c := newChallenge("same", fmt.Sprintf("%s-%s.example", ns, uid), TypeHTTP01, t0)
			c.Namespace, c.UID = ns, uid
			c.Spec.Issuer.Name = fmt.Sprintf("issuer-%d", i%2)
			all = append(all, c)
		}
	}
	want := []string{"ns-a/same", "ns-b/same", "ns-a/same", "ns-b/same"}
	wantUIDs := []string{"u1", "u1", "u2", "u2"}
	r := mathrand.New(mathrand.NewPCG(1, 2))
	for i := range 20 {
		got := Schedule(all, t0, SchedulerConfig{MaxInFlight: 4})
		require.Equal(t, want, ids(got), "permutation %d: %v", i, ids(all))
		uids := make([]string, len(got))
		for j, c := range got {
			uids[j] = c.UID
		}
		require.Equal(t, wantUIDs, uids, "permutation %d: %v", i, ids(all))
		r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	}
}

// FuzzSchedule generates many challenges — hundreds of (issuer, account)
// groups, shared and differently cased DNS names, both types, running,
// final and waiting ones, ties in creation time — and holds Schedule to
// scheduleByTheRules, to the same answer for any order of its input, and
// to the invariants the rules imply.
func FuzzSchedule(f *testing.F) {
	f.Add(uint64(1), uint16(600), uint16(300), uint8(1), uint16(200), uint16(0), uint8(0), uint8(0), uint8(3), uint8(0x21))
	f.Add(uint64(2), uint16(1200), uint16(40), uint8(4), uint16(30), uint16(300), uint8(17), uint8(5), uint8(0), uint8(0x88))
	f.Add(uint64(3), uint16(50), uint16(3), uint8(2), uint16(10), uint16(8), uint8(0), uint8(2), uint8(60), uint8(0xff))
	f.Fuzz(func(t *testing.T, seed uint64, n, issuers uint16, accounts uint8, dnsNames, maxInFlight uint16, perPass, budget, spread, mix uint8) {
		r := mathrand.New(mathrand.NewPCG(seed, uint64(mix)))
		n %= 1500
		nIssuers := 1 + int(issuers%400)
		nAccounts := 1 + int(accounts%8)
		nNames := 1 + int(dnsNames%512)
		chance := func(bits uint8) bool { return r.IntN(8) < int(bits&7) }
		var all []*Challenge
		for i := range int(n) {
			dns := fmt.Sprintf("n%d.example", r.IntN(nNames))
			if r.IntN(4) == 0 {
				dns = strings.ToUpper(dns)
			}
			created := t0.Add(time.Duration(r.IntN(int(spread)+1)) * time.Second)
			c := newChallenge(fmt.Sprintf("c%d", r.IntN(int(n)/2+1)), dns, []Type{TypeHTTP01, TypeDNS01}[r.IntN(2)], created)
			c.Namespace = fmt.Sprintf("ns%d", i) // (namespace, name) is unique, as in a store
			c.UID = fmt.Sprintf("u%d", r.IntN(3))
			c.Spec.Issuer = Issuer{Name: fmt.Sprintf("i%d", r.IntN(nIssuers)), Kind: []string{"Issuer", "ClusterIssuer"}[r.IntN(2)]}
			c.Spec.Account = fmt.Sprintf("a%d", r.IntN(nAccounts))
			c.Status.Processing = chance(mix)
			if chance(mix >> 3) {
				c.Status.State = []State{StateValid, StateInvalid, StateErrored, StateProcessing, StatePending}[r.IntN(5)]
			}
			if chance(mix >> 5) {
				c.Status.NextAttemptAt = tp(t0.Add(time.Duration(r.IntN(3)-1) * time.Second))
			}
			all = append(all, c)
			if r.IntN(64) == 0 {
				all = append(all, nil)
			}
		}
		cfg := SchedulerConfig{MaxInFlight: int(maxInFlight % 400), MaxPerPass: int(perPass % 64), AccountBudget: int(budget % 64)}

		got := Schedule(all, t0, cfg)
		require.Equal(t, ids(scheduleByTheRules(all, t0, cfg)), ids(got), "Schedule() differs from the rules")
		shuffled := slices.Clone(all)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		require.Equal(t, ids(got), ids(Schedule(shuffled, t0, cfg)), "Schedule() depends on the order of its input")

		// The invariants, stated on their own.
		limit, b := cmpOr(cfg.MaxInFlight, DefaultMaxInFlight), cmpOr(cfg.AccountBudget, DefaultAccountBudget)
		busy := map[string]bool{}
		perAccount := map[string]int{}
		running := 0
		for _, c := range all {
			if c != nil && c.Status.Processing {
				running++
				busy[strings.ToLower(c.Spec.DNSName)+"/"+string(c.Spec.Type)] = true
				perAccount[c.Spec.Account]++
			}
		}
		room := limit - running
		if cfg.MaxPerPass > 0 {
			room = min(room, cfg.MaxPerPass)
		}
		require.LessOrEqual(t, len(got), max(room, 0), "%d running, %d started: over the in-flight cap %d or the per-pass cap %d",
			running, len(got), limit, cfg.MaxPerPass)
		chosen := map[*Challenge]bool{}
		for _, c := range got {
			require.NotNil(t, c, "scheduled a nil challenge")
			require.False(t, c.Status.Processing, "scheduled a processing challenge")
			require.False(t, c.Status.State.Final(), "scheduled a final challenge")
			require.False(t, c.Status.NextAttemptAt != nil && t0.Before(*c.Status.NextAttemptAt), "scheduled a challenge before its retry")
			k := strings.ToLower(c.Spec.DNSName) + "/" + string(c.Spec.Type)
			require.False(t, busy[k], "two challenges for %s at once", k)
			busy[k] = true
			perAccount[c.Spec.Account]++
			require.LessOrEqual(t, perAccount[c.Spec.Account], max(b, 0), "account %s over its budget", c.Spec.Account)
			chosen[c] = true
		}
		if len(got) < room {
			// Room was left: every challenge left waiting is blocked.
			for _, c := range all {
				if c == nil || chosen[c] || c.Status.Processing || c.Status.State.Final() ||
					(c.Status.NextAttemptAt != nil && t0.Before(*c.Status.NextAttemptAt)) {
					continue
				}
				k := strings.ToLower(c.Spec.DNSName) + "/" + string(c.Spec.Type)
				require.True(t, busy[k] || perAccount[c.Spec.Account] >= b,
					"%s/%s was left waiting with room in the pass, its name free and its account under budget", c.Namespace, c.Name)
			}
		}
	})
}

func cmpOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

func benchChallenges(n int) []*Challenge {
	all := make([]*Challenge, 0, n)
	for i := range n {
		c := newChallenge(fmt.Sprintf("ch-%06d", i), fmt.Sprintf("host%05d.example", i%(n/2)), []Type{TypeHTTP01, TypeDNS01}[i%2],
			t0.Add(time.Duration(n-i)*time.Second))
		c.Spec.Issuer.Name = fmt.Sprintf("issuer-%d", i%4)
		c.Spec.Account = fmt.Sprintf("acct-%d", i%4)
		all = append(all, c)
	}
	return all
}

func benchSchedule(b *testing.B, n int) {
	all := benchChallenges(n)
	cfg := SchedulerConfig{MaxInFlight: 30}
	b.ReportAllocs()
	for b.Loop() {
		if got := Schedule(all, t0, cfg); len(got) != 30 {
			b.Fatal(len(got))
		}
	}
}

// BenchmarkSchedule10k: one pass over 10,000 pending challenges on 5,000
// DNS names and four issuers, 30 in flight.
func BenchmarkSchedule10k(b *testing.B)  { benchSchedule(b, 10_000) }
func BenchmarkSchedule1k(b *testing.B)   { benchSchedule(b, 1_000) }
func BenchmarkSchedule100k(b *testing.B) { benchSchedule(b, 100_000) }

// BenchmarkParseCertificateBaseline: one x509.ParseCertificate of an ECDSA
// P-256 leaf, a yardstick to read the scheduler's figures against.
func BenchmarkParseCertificateBaseline(b *testing.B) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "a.example"}, DNSNames: []string{"a.example", "www.a.example"},
		NotBefore: t0, NotAfter: t0.Add(90 * 24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := x509.ParseCertificate(der); err != nil {
			b.Fatal(err)
		}
	}
}
