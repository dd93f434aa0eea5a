package challenge

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func FuzzChallenge(f *testing.F) {
	f.Add(uint16(0), "pending", int64(0), int64(0), int64(5), "", uint8(0), int64(0), int64(0), int64(0), int64(0), int64(0))
	f.Add(uint16(0xffff), "invalid", int64(-10), int64(3), int64(-100), "503", uint8(3), int64(-2), int64(100), int64(-5), int64(0), int64(0))
	f.Add(uint16(1|2|8|16|32|512|2048), "pending", int64(-60), int64(0), int64(0), "503", uint8(6), int64(0), int64(0), int64(-60), int64(0), int64(0))
	f.Add(uint16(2|16|32|512|1024), "pending", int64(0), int64(0), int64(0), "503", uint8(6), int64(0), int64(160), int64(0), int64(0), int64(0))
	f.Add(uint16(1|2|32|256), "pending", int64(0), int64(0), int64(0), "", uint8(0), int64(0), int64(0), int64(0), int64(0), int64(0))
	f.Add(uint16(1|2|4|16|32|128|512), "processing", int64(-5), int64(0), int64(40), "timeout", uint8(1), int64(-1), int64(0), int64(0), int64(0), int64(0))
	f.Add(uint16(1|2|4|32|2048), "processing", int64(0), int64(0), int64(0), "", uint8(0), int64(0), int64(0), int64(-1), int64(-1500), int64(0))
	f.Add(uint16(1|2|32|64|2048), "pending", int64(-2), int64(0), int64(0), "", uint8(0), int64(0), int64(0), int64(-3), int64(0), int64(0))
	f.Add(uint16(1|2|32|64|2048|8192), "pending", int64(-1), int64(-1), int64(0), "", uint8(0), int64(0), int64(0), int64(-60), int64(0), int64(301))
	f.Add(uint16(1|2|16|32|64|512|2048|16384), "pending", int64(0), int64(-1), int64(0), "503", uint8(1), int64(0), int64(0), int64(-88), int64(0), int64(0))
	f.Fuzz(func(t *testing.T, flags uint16, state string, synced, selfCheck, retry int64, lastErr string, attempts uint8, errOff, nextOff, presentedOff, changedOff, expiresOff int64) {
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
		if flags&8192 != 0 {
			c.Spec.Expires = tp(t0.Add(sec(expiresOff)))
		}
		if flags&16384 != 0 {
			cfg.SelfCheckTimeout = 90 * time.Second
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
				if st.Presented && !a.Status.Presented {
					require.IsType(t, CleanUp{}, res.Actions[0], "marked not presented without cleaning up: %v", res.Actions)
				}
				if a.Status.State == StateErrored && st.State != StateErrored {
					require.False(t, a.Status.Processing, "ended errored but kept the scheduler slot: %+v", a.Status)
					require.NotEmpty(t, a.Status.Reason, "ended errored without a reason: %+v", a.Status)
				}
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
		if at, ok := cfg.RetryAt(&st.Attempts); ok && st.Transient && t0.Before(at) {
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
