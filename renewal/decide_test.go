package renewal

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

func TestDecide(t *testing.T) {
	day := 24 * time.Hour
	nb := utc("2026-01-01T00:00:00Z")
	na := nb.Add(90 * day) // renewal due 2026-03-02T00:00:00Z (a Monday)
	due := utc("2026-03-02T00:00:00Z")
	night := Window{DaysOfWeek: []string{"Tuesday"}, Start: "01:00", End: "03:00"}
	type want struct {
		renew, deferred, bypassed bool
		reason                    string
		nextCheck                 string
		conditions                []string
		matched                   string
		msg                       string
	}
	tests := map[string]struct {
		in   Input
		now  time.Time
		opts Options
		want want
	}{
		"automatic before the renewal time waits for it": {
			in: Input{NotBefore: nb, NotAfter: na}, now: due.Add(-time.Hour),
			want: want{reason: ReasonNotDue, nextCheck: "2026-03-02T00:00:00Z", msg: "renewal due at 2026-03-02T00:00:00Z (default)"},
		},
		"automatic at the renewal time renews": {
			in: Input{NotBefore: nb, NotAfter: na}, now: due,
			want: want{renew: true, reason: ReasonDue},
		},
		"automatic with windows ignores them and says so": {
			in:  Input{NotBefore: nb, NotAfter: na, Spec: Spec{Windows: []Window{night}}},
			now: due, want: want{renew: true, reason: ReasonDue, conditions: []string{ConditionRenewalWindowsIgnored}},
		},
		"disabled never renews and never asks to look again": {
			in:  Input{NotBefore: nb, NotAfter: na, Spec: Spec{Policy: PolicyDisabled}},
			now: na.Add(-time.Minute), want: want{reason: ReasonDisabled, conditions: []string{ConditionRenewalDisabled}, msg: "a manual trigger still renews"},
		},
		"scheduled and not yet due waits for the renewal time": {
			in:  Input{NotBefore: nb, NotAfter: na, Spec: Spec{Policy: PolicyScheduled, Windows: []Window{night}}},
			now: due.Add(-day), want: want{reason: ReasonNotDue, nextCheck: "2026-03-02T00:00:00Z"},
		},
		"scheduled, due, outside the window defers to the next start": {
			in:  Input{NotBefore: nb, NotAfter: na, Spec: Spec{Policy: PolicyScheduled, Windows: []Window{night}}},
			now: due, want: want{deferred: true, reason: ReasonDeferred, nextCheck: "2026-03-03T01:00:00Z",
				conditions: []string{ConditionRenewalDeferred}, msg: "opens at 2026-03-03T01:00:00Z"},
		},
		"scheduled, due, inside the window renews and names it": {
			in:  Input{NotBefore: nb, NotAfter: na, Spec: Spec{Policy: PolicyScheduled, Windows: []Window{{Start: "00:00", End: "06:00"}, night}}},
			now: utc("2026-03-03T01:30:00Z"), want: want{renew: true, reason: ReasonDue, matched: "windows[0]"},
		},
		"scheduled near expiry bypasses the windows (fail-safe)": {
			in:  Input{NotBefore: nb, NotAfter: na, Spec: Spec{Policy: PolicyScheduled, Windows: []Window{night}}},
			now: na.Add(-20 * time.Hour), want: want{renew: true, bypassed: true, reason: ReasonWindowBypassed,
				conditions: []string{ConditionRenewalWindowBypassed}, msg: "within the 24h0m0s safety margin"},
		},
		"the deferral wakes up at the fail-safe point when it comes before the window": {
			in:   Input{NotBefore: nb, NotAfter: na, Spec: Spec{Policy: PolicyScheduled, Windows: []Window{night}}},
			now:  utc("2026-03-30T12:00:00Z"), // Monday; the window opens Tuesday 01:00, the fail-safe point is Tuesday 00:00
			want: want{deferred: true, reason: ReasonDeferred, nextCheck: "2026-03-31T00:00:00Z", conditions: []string{ConditionRenewalDeferred}},
		},
		"strict mode keeps the windows even past the margin and says the certificate may expire": {
			in:  Input{NotBefore: nb, NotAfter: na, Spec: Spec{Policy: PolicyScheduled, Windows: []Window{night}}},
			now: na.Add(-2 * time.Hour), opts: Options{Strict: true},
			want: want{deferred: true, reason: ReasonDeferred, nextCheck: "2026-04-07T01:00:00Z", conditions: []string{ConditionRenewalDeferred},
				msg: "strict mode keeps the windows although the certificate expires"},
		},
		"invalid windows stop windowed renewal but wake up at the fail-safe point": {
			in:  Input{NotBefore: nb, NotAfter: na, Spec: Spec{Policy: PolicyScheduled, Windows: []Window{{Start: "99:00", End: "01:00"}}}},
			now: due, want: want{reason: ReasonConfigInvalid, nextCheck: "2026-03-31T00:00:00Z", conditions: []string{ConditionRenewalConfigInvalid},
				msg: "the fail-safe renews at 2026-03-31T00:00:00Z"},
		},
		"invalid windows near expiry still renew (fail-safe)": {
			in:  Input{NotBefore: nb, NotAfter: na, Spec: Spec{Policy: PolicyScheduled, Windows: []Window{{Start: "99:00", End: "01:00"}}}},
			now: na.Add(-time.Hour), want: want{renew: true, bypassed: true, reason: ReasonWindowBypassed,
				conditions: []string{ConditionRenewalConfigInvalid, ConditionRenewalWindowBypassed}},
		},
		"a short-lived certificate's margin is a sixth of its life": {
			in:  Input{NotBefore: nb, NotAfter: nb.Add(72 * time.Hour), Spec: Spec{Policy: PolicyScheduled, Windows: []Window{night}}},
			now: nb.Add(61 * time.Hour), want: want{renew: true, bypassed: true, reason: ReasonWindowBypassed,
				conditions: []string{ConditionRenewalWindowBypassed}, msg: "12h0m0s safety margin"},
		},
		"an ARI window replaces the renewal time": {
			in:  Input{NotBefore: nb, NotAfter: na, ARI: &ARIWindow{Start: utc("2026-02-10T00:00:00Z"), End: utc("2026-02-11T00:00:00Z")}, JitterKey: "uid-1"},
			now: utc("2026-02-01T00:00:00Z"), want: want{reason: ReasonNotDue, msg: "(ARI)"},
		},
		"an ARI window whose end has passed renews now (RFC 9773 §4.2)": {
			in:  Input{NotBefore: nb, NotAfter: na, ARI: &ARIWindow{Start: utc("2026-01-20T00:00:00Z"), End: utc("2026-01-21T00:00:00Z")}, JitterKey: "uid-1"},
			now: utc("2026-01-21T00:00:00Z"), want: want{renew: true, reason: ReasonDue, msg: "(ARI); chosen in the ARI window 2026-01-20T00:00:00Z–2026-01-21T00:00:00Z"},
		},
		"an ARI window the CA put wholly in the past renews now (RFC 9773 §4.2)": {
			in:  Input{NotBefore: nb, NotAfter: na, ARI: &ARIWindow{Start: nb, End: nb.Add(time.Minute)}, JitterKey: "uid-1"},
			now: utc("2026-01-20T12:00:00Z"), want: want{renew: true, reason: ReasonDue, msg: "(ARI)"},
		},
		"an ARI window starting at notAfter is ignored": {
			in:  Input{NotBefore: nb, NotAfter: na, ARI: &ARIWindow{Start: na, End: na.Add(day)}},
			now: utc("2026-01-20T12:00:00Z"), want: want{reason: ReasonNotDue, nextCheck: "2026-03-02T00:00:00Z", msg: "starts at or after the certificate's notAfter"},
		},
		"a malformed ARI window is ignored, saying why": {
			in:  Input{NotBefore: nb, NotAfter: na, ARI: &ARIWindow{Start: utc("2026-01-21T00:00:00Z"), End: utc("2026-01-20T00:00:00Z")}},
			now: utc("2026-01-20T12:00:00Z"), want: want{reason: ReasonNotDue, nextCheck: "2026-03-02T00:00:00Z", msg: "malformed"},
		},
		"a stale ARI window (ending before notBefore) is ignored": {
			in:  Input{NotBefore: nb, NotAfter: na, ARI: &ARIWindow{Start: utc("2025-10-01T00:00:00Z"), End: utc("2025-10-02T00:00:00Z")}},
			now: utc("2026-01-20T12:00:00Z"), want: want{reason: ReasonNotDue, nextCheck: "2026-03-02T00:00:00Z", msg: "ends before the certificate's notBefore"},
		},
		"an unknown policy renews as Automatic and says so": {
			in:  Input{NotBefore: nb, NotAfter: na, Spec: Spec{Policy: "Sometimes"}},
			now: due, want: want{renew: true, reason: ReasonDue, conditions: []string{ConditionRenewalConfigInvalid}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := Decide(tc.in, tc.now, tc.opts)
			var conds []string
			for _, c := range d.Conditions {
				conds = append(conds, c.Type)
			}
			got := want{renew: d.Renew, deferred: d.Deferred, bypassed: d.Bypassed, reason: d.Reason, conditions: conds, msg: tc.want.msg}
			if !d.NextCheck.IsZero() && tc.want.nextCheck != "" {
				got.nextCheck = stamp(d.NextCheck)
			}
			if d.Status.Windows != nil {
				got.matched = d.Status.Windows.MatchedWindow
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Fatalf("Decide() mismatch (-want +got):\n%s\nmessage: %s", diff, d.Message)
			}
			require.Contains(t, d.Message, tc.want.msg, "the message does not say it")
			if d.Renew && !d.NextCheck.IsZero() {
				require.False(t, d.NextCheck.After(tc.now), "a renewing decision asks to look again later: %v", d.NextCheck)
			}
		})
	}
}

func TestDecideARIPointIsDeterministicAndInside(t *testing.T) {
	w := &ARIWindow{Start: utc("2026-02-10T00:00:00Z"), End: utc("2026-02-12T00:00:00Z")}
	in := Input{NotBefore: utc("2026-01-01T00:00:00Z"), NotAfter: utc("2026-04-01T00:00:00Z"), ARI: w}
	seen := map[time.Time]bool{}
	for _, key := range []string{"a", "b", "c", "d", "e", "f"} {
		in.JitterKey = key
		d1 := Decide(in, utc("2026-01-15T00:00:00Z"), Options{})
		d2 := Decide(in, utc("2026-02-01T00:00:00Z"), Options{})
		require.True(t, d1.RenewalTime.Equal(d2.RenewalTime), "the ARI point moved between calls")
		require.False(t, d1.RenewalTime.Before(w.Start), "ARI point %v before the window", d1.RenewalTime)
		require.True(t, d1.RenewalTime.Before(w.End), "ARI point %v at or after the window's end", d1.RenewalTime)
		seen[d1.RenewalTime] = true
	}
	require.GreaterOrEqual(t, len(seen), 5, "keys do not spread inside the ARI window")
}

// TestARIRenewsAtTheChosenPoint: RFC 9773 §4.2 — a client picks a time in
// the suggested window and renews when that time has passed, not when the
// window opens. 1,000 certificates given one 48h window spread over it
// (no hour holds more than twice its share), each certificate's point is the
// same on every call, and each renews exactly from its point on.
func TestARIRenewsAtTheChosenPoint(t *testing.T) {
	w := &ARIWindow{Start: utc("2026-02-10T00:00:00Z"), End: utc("2026-02-12T00:00:00Z")}
	const keys, hours = 1000, 48
	in := Input{NotBefore: utc("2026-01-01T00:00:00Z"), NotAfter: utc("2026-04-01T00:00:00Z"), ARI: w}
	buckets := make([]int, hours)
	for i := range keys {
		in.JitterKey = fmt.Sprintf("6f1c2b0e-8d4a-4b7e-9a51-%012d", i)
		at := Decide(in, w.Start.Add(-time.Hour), Options{}).RenewalTime
		require.False(t, at.Before(w.Start), "key %d: point %v before the window", i, at)
		require.True(t, at.Before(w.End), "key %d: point %v at or after the window's end", i, at)
		for _, now := range []time.Time{w.Start, at, w.End.Add(time.Hour)} {
			require.True(t, Decide(in, now, Options{}).RenewalTime.Equal(at), "key %d: the point moved when asked at %v", i, now)
		}
		if at.After(w.Start) {
			before := Decide(in, at.Add(-time.Second), Options{})
			require.False(t, before.Renew, "key %d: renews a second before its point %v: %s", i, at, before.Message)
			require.True(t, before.NextCheck.Equal(at), "key %d: asks to look again at %v, not at its point %v", i, before.NextCheck, at)
		}
		require.True(t, Decide(in, at, Options{}).Renew, "key %d: does not renew at its point %v", i, at)
		require.True(t, Decide(in, w.End, Options{}).Renew, "key %d: does not renew once the window has ended", i)
		// When a host polling every second first sees it due.
		first := w.Start.Add(time.Duration(sort.Search(int(w.End.Sub(w.Start)/time.Second), func(s int) bool {
			return Decide(in, w.Start.Add(time.Duration(s)*time.Second), Options{}).Renew
		})) * time.Second)
		require.True(t, first.Equal(at), "key %d: first due at %v, its point is %v", i, first, at)
		buckets[int(first.Sub(w.Start)/time.Hour)]++
	}
	mean := keys / hours
	for h, n := range buckets {
		require.LessOrEqual(t, n, 2*mean, "hour %d of the window renews %d of %d certificates: %v", h, n, keys, buckets)
		require.Positive(t, n, "hour %d of the window renews none: %v", h, buckets)
	}
}

// A window that runs past the certificate's expiry renews before it.
func TestARIPointIsBeforeExpiry(t *testing.T) {
	nb, na := utc("2026-01-01T00:00:00Z"), utc("2026-01-07T00:00:00Z")
	w := &ARIWindow{Start: na.Add(-time.Hour), End: na.Add(47 * time.Hour)}
	for i := range 200 {
		d := Decide(Input{NotBefore: nb, NotAfter: na, ARI: w, JitterKey: fmt.Sprint(i)}, nb, Options{})
		require.Equal(t, SourceARI, d.Source)
		require.False(t, d.RenewalTime.Before(w.Start), "point %v before the window", d.RenewalTime)
		require.True(t, d.RenewalTime.Before(na), "point %v not before notAfter %v", d.RenewalTime, na)
	}
}

func TestSpecValidate(t *testing.T) {
	require.NoError(t, (Spec{Policy: PolicyScheduled, Windows: []Window{{Start: "01:00", End: "02:00"}}}).Validate())
	err := Spec{Policy: "Weekly", Windows: []Window{{Start: "1", End: "02:00"}}}.Validate()
	require.ErrorContains(t, err, `policy: "Weekly"`, "Validate() names the policy")
	require.ErrorContains(t, err, "windows[0].start", "Validate() names the window")
}

func BenchmarkNextWindow7(b *testing.B) {
	var ws []Window
	for _, d := range []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"} {
		ws = append(ws, Window{DaysOfWeek: []string{d}, Start: "23:00", End: "05:00", TimeZone: "Europe/Oslo"})
	}
	s := mustCompile(b, ws...)
	now := utc("2026-03-04T12:00:00Z")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, ok := s.NextStart(now); !ok {
			b.Fatal("no next start")
		}
	}
}

func BenchmarkDecideAutomaticNotDue(b *testing.B) {
	in := Input{NotBefore: t0, NotAfter: t0.Add(90 * 24 * time.Hour), JitterKey: "6f1c2b0e-8d4a-4b7e-9a51-0c3f2d9e7a11"}
	opts := Options{Timing: Timing{Jitter: true}}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = Decide(in, t0.Add(time.Hour), opts)
	}
}

// BenchmarkDecideARINotDue: a pass over a certificate waiting for its
// point in a suggested window, the path every ARI certificate takes.
func BenchmarkDecideARINotDue(b *testing.B) {
	w := &ARIWindow{Start: t0.Add(60 * 24 * time.Hour), End: t0.Add(62 * 24 * time.Hour)}
	in := Input{NotBefore: t0, NotAfter: t0.Add(90 * 24 * time.Hour), ARI: w, JitterKey: "6f1c2b0e-8d4a-4b7e-9a51-0c3f2d9e7a11"}
	b.ReportAllocs()
	for b.Loop() {
		_ = Decide(in, t0.Add(time.Hour), Options{})
	}
}

// Certificates held back for a window do not all renew as it opens: with
// jitter on, each takes a deterministic slot in the window's first half
// (at most MaxWindowSpread); without jitter, or when expiry is near, they
// renew at once.
func TestWindowOpeningIsSpread(t *testing.T) {
	// Due on Saturday; the window is weekdays 09:00–17:00 UTC. t0 is a
	// Monday at midnight.
	spec := Spec{Policy: PolicyScheduled, Windows: []Window{{DaysOfWeek: []string{"Mon", "Tue", "Wed", "Thu", "Fri"}, Start: "09:00", End: "17:00"}}}
	opening := t0.Add(7*24*time.Hour + 9*time.Hour) // the next Monday 09:00
	in := func(key string) Input {
		return Input{NotBefore: t0.Add(-55 * 24 * time.Hour), NotAfter: t0.Add(35 * 24 * time.Hour), RenewBefore: 30 * 24 * time.Hour,
			Spec: spec, JitterKey: key}
	}
	jitter := Options{Timing: Timing{Jitter: true}}
	perMinute := map[time.Time]int{}
	for i := range 200 {
		key := "cert-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		d := Decide(in(key), opening, jitter)
		var at time.Time
		switch {
		case d.Renew:
			at = opening
		case d.Reason == ReasonDeferred:
			at = d.NextCheck
		default:
			t.Fatalf("%s: neither renews nor defers: %s %s", key, d.Reason, d.Message)
		}
		require.False(t, at.Before(opening), "%s renews at %v, before the window opens", key, at)
		require.True(t, at.Before(opening.Add(MaxWindowSpread)), "%s renews at %v, outside the first %v of the window", key, at, MaxWindowSpread)
		if !d.Renew {
			got := Decide(in(key), at, jitter)
			require.True(t, got.Renew, "%s at its slot %v: %s", key, at, got.Message)
		}
		perMinute[at.Truncate(time.Minute)]++
	}
	// 200 over 240 minutes: about 135 distinct minutes, a handful at most
	// in any one (all 200 in one without the spread).
	peak := 0
	for _, n := range perMinute {
		peak = max(peak, n)
	}
	require.GreaterOrEqual(t, len(perMinute), 100, "200 certificates in too few distinct minutes: not spread")
	require.LessOrEqual(t, peak, 6, "200 certificates in %d minutes, too many in the busiest: not spread", len(perMinute))
	noJitter := Decide(in("x"), opening, Options{})
	require.True(t, noJitter.Renew, "without jitter the window's opening renews at once: %s", noJitter.Message)
	near := in("x")
	near.NotAfter = opening.Add(time.Hour)
	nearExpiry := Decide(near, opening, jitter)
	require.True(t, nearExpiry.Renew, "near expiry, no slot waits: %s", nearExpiry.Message)
	// A certificate that falls due inside the open window renews at once:
	// find keys whose jittered renewal time lands in Monday's window.
	found := 0
	for i := range 400 {
		k := in("inside-" + string(rune('a'+i%26)) + string(rune('a'+i/26)))
		k.RenewBefore = 28*24*time.Hour - 17*time.Hour // 17:00 Monday before jitter
		at := Decide(k, t0, jitter).RenewalTime
		if at.Before(opening) || !at.Before(opening.Add(8*time.Hour)) {
			continue
		}
		found++
		d := Decide(k, at, jitter)
		require.True(t, d.Renew, "a certificate that fell due inside the window waits: %s", d.Message)
	}
	require.NotZero(t, found, "no key fell due inside the window: the test checks nothing")
}
