package challenge

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func FuzzChallenge(f *testing.F) {
	f.Add(uint16(0), "pending", int64(0), int64(0), int64(5), "", uint8(0), int64(0), int64(0), int64(0), int64(0))
	f.Add(uint16(0xffff), "invalid", int64(-10), int64(3), int64(-100), "503", uint8(3), int64(-2), int64(100), int64(-5), int64(0))
	f.Add(uint16(1|2|8|16|32|512|2048), "pending", int64(-60), int64(0), int64(0), "503", uint8(6), int64(0), int64(0), int64(-60), int64(0))
	f.Add(uint16(2|16|32|512|1024), "pending", int64(0), int64(0), int64(0), "503", uint8(6), int64(0), int64(160), int64(0), int64(0))
	f.Add(uint16(1|2|32|256), "pending", int64(0), int64(0), int64(0), "", uint8(0), int64(0), int64(0), int64(0), int64(0))
	f.Add(uint16(1|2|4|16|32|128|512), "processing", int64(-5), int64(0), int64(40), "timeout", uint8(1), int64(-1), int64(0), int64(0), int64(0))
	f.Add(uint16(1|2|4|32|2048), "processing", int64(0), int64(0), int64(0), "", uint8(0), int64(0), int64(0), int64(-1), int64(-1500))
	f.Add(uint16(1|2|32|64|2048), "pending", int64(-2), int64(0), int64(0), "", uint8(0), int64(0), int64(0), int64(-3), int64(0))
	f.Fuzz(func(t *testing.T, flags uint16, state string, synced, selfCheck, retry int64, lastErr string, attempts uint8, errOff, nextOff, presentedOff, changedOff int64) {
		c := newChallenge("a", "a.example", TypeDNS01, t0)
		sec := func(n int64) time.Duration { return time.Duration(n%1_000_000) * time.Second }
		st := &c.Status
		st.Processing, st.Presented, st.Accepted = flags&1 != 0, flags&2 != 0, flags&4 != 0
		st.SelfCheckPassed, st.Transient = flags&8 != 0, flags&16 != 0
		st.State, st.LastError = State(state), lastErr
		st.FailedAttempts = int(attempts % 16)
		if flags&32 != 0 {
			st.SyncedAt = tp(t0.Add(sec(synced)))
		}
		if flags&64 != 0 {
			st.SelfCheckAt = tp(t0.Add(sec(selfCheck)))
		}
		if flags&128 != 0 {
			st.RetryAfter = tp(t0.Add(sec(retry)))
		}
		cfg := Config{}
		if flags&256 != 0 {
			cfg.FixedWait = time.Minute
		}
		if flags&512 != 0 {
			st.LastErrorTime = tp(t0.Add(sec(errOff)))
		}
		if flags&1024 != 0 {
			st.NextAttemptAt = tp(t0.Add(sec(nextOff)))
		}
		if flags&2048 != 0 {
			st.PresentedAt = tp(t0.Add(sec(presentedOff)))
		}
		if flags&4096 != 0 {
			c.Spec.URL = ""
		}
		if changedOff != 0 {
			// Milliseconds: polls after a change come less than a
			// second apart.
			st.ChangedAt = tp(t0.Add(time.Duration(changedOff%100_000_000) * time.Millisecond))
		}
		res := Decide(c, t0, cfg)
		require.Equal(t, fmt.Sprint(res), fmt.Sprint(Decide(c, t0, cfg)), "not deterministic")
		for _, a := range res.Actions {
			switch a := a.(type) {
			case Accept:
				require.True(t, st.Processing, "accepted a challenge that is not processing: %+v", st)
				require.True(t, st.Presented, "accepted a challenge that is not presented: %+v", st)
				require.False(t, st.State.Final(), "accepted a challenge that is not pending: %+v", st)
				if cfg.FixedWait > 0 {
					require.NotNil(t, st.PresentedAt, "accepted with a fixed wait but no presentation time: %+v", st)
					require.False(t, t0.Before(st.PresentedAt.Add(cfg.FixedWait)), "accepted before the fixed wait after its presentation: %+v", st)
				}
			case Present, SelfCheck, Sync:
				require.True(t, st.Processing, "%v while not scheduled", a)
			case UpdateStatus:
				if a.Status.State == StateInvalid {
					require.Equal(t, StateInvalid, st.State, "the machine itself made a challenge invalid")
				}
				if a.Status.Processing {
					require.False(t, a.Status.State.Final(), "a final challenge stays processing")
				}
			}
		}
		// No call to the ACME server before the retry is due (cleaning up
		// a solver is local and allowed).
		if at, ok := RetryAt(st, cfg); ok && st.Transient && t0.Before(at) {
			for _, a := range res.Actions {
				switch a.(type) {
				case Sync, Accept:
					t.Fatalf("called the server before its retry at %v: %v", at, res.Actions)
				}
			}
		}
		checkLiveness(t, c, res, t0, cfg)
	})
}

func FuzzSchedule(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, uint8(5), uint8(0), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, maxInFlight, perPass, budget uint8) {
		var all []*Challenge
		for i, b := range data {
			c := newChallenge(fmt.Sprintf("c%d", i), fmt.Sprintf("n%d.example", b%7), []Type{TypeHTTP01, TypeDNS01}[b>>3&1], t0.Add(time.Duration(b>>4)*time.Second))
			c.Spec.Issuer.Name = fmt.Sprintf("i%d", b>>5&1)
			c.Spec.Account = fmt.Sprintf("a%d", b>>6&1)
			c.Status.Processing = b&0x80 != 0 && i%3 == 0
			if i%5 == 4 {
				c.Status.State = StateValid
			}
			all = append(all, c)
		}
		cfg := SchedulerConfig{MaxInFlight: int(maxInFlight % 20), MaxPerPass: int(perPass % 10), AccountBudget: int(budget % 10)}
		got := Schedule(all, t0, cfg)
		limit := cfg.MaxInFlight
		if limit == 0 {
			limit = DefaultMaxInFlight
		}
		inFlight := map[string]bool{}
		perAccount := map[string]int{}
		running := 0
		for _, c := range all {
			if c.Status.Processing {
				running++
				inFlight[strings.ToLower(c.Spec.DNSName)+"/"+string(c.Spec.Type)] = true
				perAccount[c.Spec.Account]++
			}
		}
		if len(got) > 0 {
			require.LessOrEqual(t, running+len(got), limit, "%d running + %d started exceeds the in-flight limit", running, len(got))
		}
		if cfg.MaxPerPass > 0 {
			require.LessOrEqual(t, len(got), cfg.MaxPerPass, "started in one pass over the per-pass cap")
		}
		b := cfg.AccountBudget
		if b == 0 {
			b = DefaultAccountBudget
		}
		for _, c := range got {
			k := strings.ToLower(c.Spec.DNSName) + "/" + string(c.Spec.Type)
			require.False(t, inFlight[k], "two challenges for %s at once", k)
			inFlight[k] = true
			require.False(t, c.Status.Processing, "scheduled a processing challenge")
			require.False(t, c.Status.State.Final(), "scheduled a final challenge")
			perAccount[c.Spec.Account]++
			// Only what this pass added may not exceed the budget.
			require.LessOrEqual(t, perAccount[c.Spec.Account], b, "account %s over its budget", c.Spec.Account)
		}
	})
}

func benchChallenges(n int) []*Challenge {
	all := make([]*Challenge, 0, n)
	for i := 0; i < n; i++ {
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
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if got := Schedule(all, t0, cfg); len(got) != 30 {
			b.Fatal(len(got))
		}
	}
}

// BenchmarkSchedule10k: 10,000 pending challenges over 5,000 DNS names and
// four issuers, 30 in flight. Goal: at most 90× BenchmarkParseCertificateBaseline.
func BenchmarkSchedule10k(b *testing.B)  { benchSchedule(b, 10_000) }
func BenchmarkSchedule1k(b *testing.B)   { benchSchedule(b, 1_000) }
func BenchmarkSchedule100k(b *testing.B) { benchSchedule(b, 100_000) }

// BenchmarkParseCertificateBaseline: one x509.ParseCertificate of an ECDSA
// P-256 leaf, the yardstick of the scheduler goal.
func BenchmarkParseCertificateBaseline(b *testing.B) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "a.example"}, DNSNames: []string{"a.example", "www.a.example"},
		NotBefore: t0, NotAfter: t0.Add(90 * 24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := x509.ParseCertificate(der); err != nil {
			b.Fatal(err)
		}
	}
}
