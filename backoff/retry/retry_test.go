package retry

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func tp(t time.Time) *time.Time { return &t }

const ms = time.Millisecond

// The default schedule, as the package doc states it: retries 5s after the
// first failure, doubling to 5 minutes, and 10 attempts — about 20 minutes
// of a server that keeps failing before the machine gives up.
func TestDefaultRetrySchedule(t *testing.T) {
	var s Schedule
	var delays []time.Duration
	var total time.Duration
	for n := 1; n <= 10; n++ {
		delays = append(delays, s.RetryDelay(n))
		if n < DefaultMaxAttempts {
			total += s.RetryDelay(n)
		}
	}
	want := []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second,
		5 * time.Minute, 5 * time.Minute, 5 * time.Minute, 5 * time.Minute}
	assert.Equal(t, want, delays)
	assert.Equal(t, 20*time.Minute+15*time.Second, total, "the waits between the first and the tenth failed attempt")
	assert.Equal(t, Schedule{FirstPoll: 200 * ms, PollInterval: 5 * time.Second, TransientRetry: 5 * time.Second,
		MaxTransientRetry: 5 * time.Minute, MaxAttempts: 10}, s.WithDefaults())
}

func TestRetryDelay(t *testing.T) {
	tests := map[string]struct {
		s        Schedule
		attempts int
		want     time.Duration
	}{
		"no attempt counted waits as long as the first": {attempts: 0, want: 5 * time.Second},
		"a negative count waits as long as the first":   {attempts: -3, want: 5 * time.Second},
		"each failure doubles the delay":                {attempts: 4, want: 40 * time.Second},
		"the delay stops at MaxTransientRetry":          {attempts: 7, want: 5 * time.Minute},
		"a huge count does not overflow":                {attempts: 1 << 40, want: 5 * time.Minute},
		"TransientRetry sets the first delay":           {s: Schedule{TransientRetry: time.Second}, attempts: 3, want: 4 * time.Second},
		"MaxTransientRetry sets the cap": {s: Schedule{TransientRetry: time.Second, MaxTransientRetry: 3 * time.Second},
			attempts: 3, want: 3 * time.Second},
		"a cap below the first delay is the first delay": {s: Schedule{TransientRetry: time.Minute, MaxTransientRetry: time.Second},
			attempts: 5, want: time.Minute},
		"negative durations are the defaults": {s: Schedule{TransientRetry: -1, MaxTransientRetry: -1}, attempts: 2, want: 10 * time.Second},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.s.RetryDelay(tc.attempts))
		})
	}
}

func TestRetryAt(t *testing.T) {
	tests := map[string]struct {
		a      *Attempts
		want   time.Time
		wantOK bool
	}{
		"nothing recorded is no retry": {a: nil},
		"no error is no retry":         {a: &Attempts{LastErrorTime: tp(t0), FailedAttempts: 3}},
		"the delay counts from the failure's time, by the failed attempts": {
			a: &Attempts{LastError: "503", Transient: true, LastErrorTime: tp(t0), FailedAttempts: 3}, want: t0.Add(20 * time.Second), wantOK: true},
		"a failure not counted waits as long as the first": {
			a: &Attempts{LastError: "503", LastErrorTime: tp(t0)}, want: t0.Add(5 * time.Second), wantOK: true},
		"the server's Retry-After is followed, however many attempts failed (RFC 9110 §10.2.3)": {
			a:    &Attempts{LastError: "429", LastErrorTime: tp(t0), FailedAttempts: 6, RetryAfter: tp(t0.Add(30 * time.Second))},
			want: t0.Add(30 * time.Second), wantOK: true},
		"a Retry-After sooner than TransientRetry after the failure waits TransientRetry": {
			a:    &Attempts{LastError: "429", LastErrorTime: tp(t0), FailedAttempts: 6, RetryAfter: tp(t0.Add(time.Second))},
			want: t0.Add(5 * time.Second), wantOK: true},
		"a Retry-After without the failure's time is followed as it is": {
			a: &Attempts{LastError: "429", RetryAfter: tp(t0.Add(time.Hour))}, want: t0.Add(time.Hour), wantOK: true},
		"neither a time nor a Retry-After gives no time": {a: &Attempts{LastError: "503", FailedAttempts: 2}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := Schedule{}.RetryAt(tc.a)
			assert.Equal(t, tc.wantOK, ok)
			assert.True(t, tc.want.Equal(got), "retry at %v, want %v", got, tc.want)
		})
	}
}

// Reads after a change come FirstPoll, 2·FirstPoll, 4·FirstPoll … after
// it, each as long after the last read as the resource had been unchanged,
// and never longer apart than PollInterval.
func TestPollsSlowDownWhileNothingChanges(t *testing.T) {
	var reads []time.Duration
	read := t0 // the call that moved the resource on read it
	for range 8 {
		next, ok := Schedule{}.PollAt(nil, tp(read), tp(t0))
		require.True(t, ok)
		read = next
		reads = append(reads, read.Sub(t0))
	}
	want := []time.Duration{200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3200 * ms, 6400 * ms, 11400 * ms, 16400 * ms}
	assert.Equal(t, want, reads, "the reads after a change, counted from it")
}

func TestPollAt(t *testing.T) {
	tests := map[string]struct {
		s               Schedule
		a               *Attempts
		synced, changed *time.Time
		want            time.Time
		wantOK          bool
	}{
		"a resource never read has no poll time": {changed: tp(t0)},
		"the first read after a change is FirstPoll after it": {
			synced: tp(t0), changed: tp(t0), want: t0.Add(200 * ms), wantOK: true},
		"without a recorded change the reads are PollInterval apart": {
			synced: tp(t0), want: t0.Add(5 * time.Second), wantOK: true},
		"reads are never more than PollInterval apart": {
			synced: tp(t0), changed: tp(t0.Add(-time.Hour)), want: t0.Add(5 * time.Second), wantOK: true},
		"the server's Retry-After is followed (RFC 8555 §7.1.3)": {
			a: &Attempts{RetryAfter: tp(t0.Add(40 * time.Second))}, synced: tp(t0), changed: tp(t0), want: t0.Add(40 * time.Second), wantOK: true},
		"a Retry-After sooner than FirstPoll after the read waits FirstPoll": {
			a: &Attempts{RetryAfter: tp(t0.Add(-time.Second))}, synced: tp(t0), changed: tp(t0), want: t0.Add(200 * ms), wantOK: true},
		"the Retry-After of a failed call is the retry's, not the poll's": {
			a: &Attempts{LastError: "503", RetryAfter: tp(t0.Add(40 * time.Second))}, synced: tp(t0), changed: tp(t0), want: t0.Add(200 * ms), wantOK: true},
		"a Retry-After is followed no sooner than a FirstPoll cut to PollInterval": {
			s: Schedule{FirstPoll: 10 * time.Second, PollInterval: 2 * time.Second}, a: &Attempts{RetryAfter: tp(t0.Add(time.Second))},
			synced: tp(t0), changed: tp(t0), want: t0.Add(2 * time.Second), wantOK: true},
		"a FirstPoll longer than PollInterval is PollInterval": {
			s: Schedule{FirstPoll: 10 * time.Second, PollInterval: 2 * time.Second}, synced: tp(t0), changed: tp(t0), want: t0.Add(2 * time.Second), wantOK: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := tc.s.PollAt(tc.a, tc.synced, tc.changed)
			assert.Equal(t, tc.wantOK, ok)
			assert.True(t, tc.want.Equal(got), "poll at %v, want %v", got, tc.want)
		})
	}
}

func TestGate(t *testing.T) {
	failed := func(attempts int, at time.Duration) *Attempts {
		return &Attempts{LastError: "503 Service Unavailable", Transient: true, FailedAttempts: attempts, LastErrorTime: tp(t0.Add(at))}
	}
	tests := map[string]struct {
		a       *Attempts
		gate    Gate
		at      time.Time
		message string
	}{
		"nothing recorded proceeds":                        {a: nil, gate: Proceed},
		"a call that succeeded proceeds":                   {a: &Attempts{FailedAttempts: 4}, gate: Proceed},
		"a failure that is not transient is not held back": {a: &Attempts{LastError: "badCSR", LastErrorTime: tp(t0)}, gate: Proceed},
		"a retry not yet due waits, counted from the failure": {
			a: failed(2, -time.Second), gate: Wait, at: t0.Add(9 * time.Second),
			message: "a transient error (503 Service Unavailable), attempt 2 of 10; retrying at 2026-03-01T12:00:09Z"},
		"a retry is due at its time exactly": {a: failed(2, -10*time.Second), gate: Due, at: t0},
		"a failure without its time is dated now and waits the first delay": {
			a: &Attempts{LastError: "timeout", Transient: true}, gate: Record, at: t0.Add(5 * time.Second),
			message: "a transient error (timeout) without a recorded time: recording it; retrying at 2026-03-01T12:00:05Z"},
		"MaxAttempts failed attempts give up": {
			a: failed(10, 0), gate: GiveUp, message: "gave up after 10 failed attempts without progress; the last: 503 Service Unavailable"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			gate, at, msg := Schedule{}.Gate(tc.a, t0)
			assert.Equal(t, tc.gate, gate, "gate %v", gate)
			assert.True(t, tc.at.Equal(at), "at %v, want %v", at, tc.at)
			assert.Equal(t, tc.message, msg)
		})
	}
}

func TestNoteFailureAndSuccess(t *testing.T) {
	ra := t0.Add(time.Minute)
	var a Attempts
	a.NoteFailure("429 rate limited", true, &ra, t0)
	ra = t0.Add(time.Hour) // the caller's variable is not kept
	a.NoteFailure("503", true, nil, t0.Add(time.Second))
	want := Attempts{LastError: "503", Transient: true, LastErrorTime: tp(t0.Add(time.Second)), FailedAttempts: 2}
	require.Empty(t, cmp.Diff(want, a), "a failure replaces the last one's words, time and Retry-After, and counts")

	a.NoteFailure("429 rate limited", true, &ra, t0.Add(2*time.Second))
	ra = ra.Add(time.Hour)
	assert.Equal(t, t0.Add(time.Hour), *a.RetryAfter, "the Retry-After is copied, not aliased")

	a.NoteSuccess(false)
	assert.Empty(t, cmp.Diff(Attempts{FailedAttempts: 3}, a), "a success that does not move on clears the error and keeps the count")
	a.NoteSuccess(true)
	assert.Empty(t, cmp.Diff(Attempts{}, a), "a success that moves on starts the count again")
}

func TestTimed(t *testing.T) {
	a := Attempts{LastError: "timeout", Transient: true}
	got := a.Timed(t0)
	assert.Equal(t, Attempts{LastError: "timeout", Transient: true, LastErrorTime: tp(t0), FailedAttempts: 1}, got)
	assert.Nil(t, a.LastErrorTime, "the receiver is left alone")
	assert.Equal(t, 3, Attempts{FailedAttempts: 3}.Timed(t0).FailedAttempts, "a count is kept")
}

// A status that embeds Attempts stores its fields at its own top level,
// under the keys they had before there was an Attempts.
func TestEmbeddedAttemptsKeepTheirKeys(t *testing.T) {
	type status struct {
		State string `json:"state,omitempty"`
		Attempts
		Later bool `json:"later,omitempty"`
	}
	stored := `{"state":"pending","lastError":"503","transient":true,"lastErrorTime":"2026-03-01T12:00:00Z","failedAttempts":2,"retryAfter":"2026-03-01T12:01:00Z","later":true}`
	var got status
	require.NoError(t, json.Unmarshal([]byte(stored), &got))
	want := status{State: "pending", Later: true, Attempts: Attempts{LastError: "503", Transient: true, LastErrorTime: tp(t0),
		FailedAttempts: 2, RetryAfter: tp(t0.Add(time.Minute))}}
	require.Empty(t, cmp.Diff(want, got))
	again, err := json.Marshal(got)
	require.NoError(t, err)
	assert.JSONEq(t, stored, string(again))
	empty, err := json.Marshal(status{})
	require.NoError(t, err)
	assert.Equal(t, `{}`, string(empty), "an empty record writes no key")
}

func TestGateString(t *testing.T) {
	for g, want := range map[Gate]string{Proceed: "Proceed", Due: "Due", Wait: "Wait", Record: "Record", GiveUp: "GiveUp", Gate(9): "Gate(9)"} {
		assert.Equal(t, want, g.String())
	}
}
