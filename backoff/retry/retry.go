// Package retry is the schedule of the ACME order and challenge machines
// (packages order and challenge): how often they read a resource the
// server is working on, how long they wait after a call that failed, and
// when they give up. Both machines embed a [Schedule] in their Config and
// an [Attempts] in their Status, so the two follow one schedule, written
// once.
//
// Polls after a change come quickly and slow down while nothing changes:
//
//	next read = last read + how long the resource had then been unchanged,
//	            at least FirstPoll, at most PollInterval   (200ms … 5s)
//
// so reads come 200ms, 400ms, 800ms … after a change, then every 5s. A
// Retry-After the server sends with a resource is followed, but never
// sooner than FirstPoll after the read.
//
// After a call that failed transiently (network, timeout, 5xx, 429):
//
//	delay(n) = TransientRetry · 2^(n−1), at most MaxTransientRetry   (5s … 5min)
//	next     = failure time + delay(n), or the server's Retry-After,
//	           but never sooner than failure time + TransientRetry
//
// and after MaxAttempts (10) failed attempts without progress the machine
// gives up: about 20 minutes of a server that keeps failing.
//
// Everything is derived from what a status records (the failure's time,
// the count, the server's Retry-After), never from the time of a later
// decision, so deciding again at the returned time carries the retry out.
package retry

import (
	"fmt"
	"time"
)

// Schedule is the poll and retry timing of a machine. The zero value is
// the default of each field; order.Config and challenge.Config embed it,
// so its fields are theirs.
type Schedule struct {
	// FirstPoll is how long after a call that moved a resource on (see
	// the machine's Status.ChangedAt) it is read again while the server
	// works on it; each read that finds it unchanged waits as long as it
	// has been unchanged, so the wait doubles, up to PollInterval. A
	// Retry-After the server sends with the resource is followed
	// instead, but never sooner than FirstPoll after the read. Zero means
	// 200ms.
	FirstPoll time.Duration
	// PollInterval is the longest wait between reads of a resource the
	// server is working on. Zero means 5s.
	PollInterval time.Duration
	// TransientRetry is the delay after the first transient failure that
	// came without a Retry-After; it doubles with each further failed
	// attempt up to MaxTransientRetry. The delay counts from the recorded
	// time of the failure (Attempts.LastErrorTime). A Retry-After is
	// honoured as the server gave it, but never sooner than
	// TransientRetry after the failure. Zero means 5s.
	TransientRetry time.Duration
	// MaxTransientRetry caps the growing delay. Zero means 5 minutes.
	MaxTransientRetry time.Duration
	// MaxAttempts is how many failed attempts without progress (see
	// Attempts.FailedAttempts) a machine makes before it gives up: an
	// order fails, so that the certificate's own backoff takes over; a
	// challenge ends errored, which fails its order. Zero means 10: with
	// the default delays, about 20 minutes of a server that keeps failing.
	MaxAttempts int
}

// Defaults.
const (
	DefaultFirstPoll         = 200 * time.Millisecond
	DefaultPollInterval      = 5 * time.Second
	DefaultTransientRetry    = 5 * time.Second
	DefaultMaxTransientRetry = 5 * time.Minute
	DefaultMaxAttempts       = 10
)

// WithDefaults is the schedule with each field that is zero or negative
// set to its default.
func (s Schedule) WithDefaults() Schedule {
	return Schedule{
		FirstPoll:         orDefault(s.FirstPoll, DefaultFirstPoll),
		PollInterval:      orDefault(s.PollInterval, DefaultPollInterval),
		TransientRetry:    orDefault(s.TransientRetry, DefaultTransientRetry),
		MaxTransientRetry: orDefault(s.MaxTransientRetry, DefaultMaxTransientRetry),
		MaxAttempts:       orDefault(s.MaxAttempts, DefaultMaxAttempts),
	}
}

func orDefault[T time.Duration | int](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// RetryDelay is the delay before the next attempt after the given number
// of failed attempts, when the server sent no Retry-After:
// TransientRetry·2^(attempts−1), capped at MaxTransientRetry (never below
// TransientRetry).
func (s Schedule) RetryDelay(attempts int) time.Duration {
	d := s.WithDefaults()
	ceiling := max(d.MaxTransientRetry, d.TransientRetry)
	delay := d.TransientRetry
	for i := 1; i < attempts && delay < ceiling; i++ {
		delay *= 2
	}
	return min(delay, ceiling)
}

// RetryAt is when a machine whose last call failed may try again, derived
// from what a records: the server's Retry-After (never sooner than
// TransientRetry after the failure), else the failure's time plus
// RetryDelay of the failed attempts. ok is false when a is nil or records
// no error, or neither a Retry-After nor the time of the failure.
func (s Schedule) RetryAt(a *Attempts) (at time.Time, ok bool) {
	if a == nil || a.LastError == "" {
		return time.Time{}, false
	}
	switch {
	case a.LastErrorTime != nil && a.RetryAfter != nil:
		return later(*a.RetryAfter, a.LastErrorTime.Add(s.RetryDelay(1))), true
	case a.LastErrorTime != nil:
		return a.LastErrorTime.Add(s.RetryDelay(max(a.FailedAttempts, 1))), true
	case a.RetryAfter != nil:
		return *a.RetryAfter, true
	}
	return time.Time{}, false
}

// PollAt is when a resource the server is working on is read next, from
// the time of the last read (syncedAt), the time the resource last moved
// on (changedAt) and a: the server's Retry-After from the last read, when
// that read did not fail, but no sooner than FirstPoll after it; else
// Spaced from the last read and the last change, between FirstPoll and
// PollInterval — so reads after a change come at FirstPoll, 2·FirstPoll,
// 4·FirstPoll … — or PollInterval after the read when changedAt is nil.
// FirstPoll longer than PollInterval counts as PollInterval. ok is false
// when the resource was never read.
func (s Schedule) PollAt(a *Attempts, syncedAt, changedAt *time.Time) (at time.Time, ok bool) {
	if syncedAt == nil {
		return time.Time{}, false
	}
	d := s.WithDefaults()
	first := min(d.FirstPoll, d.PollInterval)
	if a != nil && a.RetryAfter != nil && a.LastError == "" {
		return later(*a.RetryAfter, syncedAt.Add(first)), true // the server said when
	}
	return Spaced(*syncedAt, changedAt, first, d.PollInterval), true
}

// Spaced is the next look after one at last at something unchanged since
// since: as long after last as it had then been unchanged, at least first
// and at most ceiling; ceiling after last when since is nil. Looks spaced
// so come at first, 2·first, 4·first … after a change, then every ceiling.
func Spaced(last time.Time, since *time.Time, first, ceiling time.Duration) time.Time {
	if since == nil {
		return last.Add(ceiling)
	}
	return last.Add(min(max(last.Sub(*since), first), ceiling))
}

// Gate is where a machine whose last call failed stands at a moment; see
// Schedule.Gate.
type Gate int

// Gates.
const (
	// Proceed: no transient failure holds the machine back.
	Proceed Gate = iota
	// Due: the retry of a transient failure is due.
	Due
	// Wait: the retry is not due yet.
	Wait
	// Record: the failure was stored without its time. The machine
	// stores Attempts.Timed(now), so that the retry stays put from then
	// on, and waits.
	Record
	// GiveUp: MaxAttempts attempts failed without progress.
	GiveUp
)

// Gate says where a machine whose last call failed stands at now, when its
// next call is due (for Due, Wait and Record), and why, in words for the
// machine's message (for Wait, Record and GiveUp). A failure that is not
// transient is not held back here: the machine reads the resource, or
// fails, by its own rules.
func (s Schedule) Gate(a *Attempts, now time.Time) (g Gate, at time.Time, why string) {
	if a == nil || a.LastError == "" || !a.Transient {
		return Proceed, time.Time{}, ""
	}
	maxAttempts := s.WithDefaults().MaxAttempts
	if a.FailedAttempts >= maxAttempts {
		return GiveUp, time.Time{}, fmt.Sprintf("gave up after %d failed attempts without progress; the last: %s", a.FailedAttempts, a.LastError)
	}
	at, ok := s.RetryAt(a)
	if !ok {
		timed := a.Timed(now)
		at, _ = s.RetryAt(&timed)
		return Record, at, "a transient error (" + a.LastError + ") without a recorded time: recording it; retrying at " + stamp(at)
	}
	if !now.Before(at) {
		return Due, at, ""
	}
	return Wait, at, fmt.Sprintf("a transient error (%s), attempt %d of %d; retrying at %s", a.LastError, a.FailedAttempts, maxAttempts, stamp(at))
}

// Attempts is what a machine's status records about its failed calls.
// order.Status and challenge.Status embed it, so its fields are theirs
// (and their JSON: the same keys, at the top level of the status).
type Attempts struct {
	// LastError is the last failed call's error, in words; empty after a
	// call succeeds. Transient says a later attempt can succeed (network
	// error, timeout, 5xx, 429, bad nonces past their retries, and
	// whatever else the host records as transient).
	LastError string `json:"lastError,omitempty"`
	Transient bool   `json:"transient,omitempty"`
	// LastErrorTime is when LastError happened: the next attempt is
	// counted from it, never from the time of a later decision.
	LastErrorTime *time.Time `json:"lastErrorTime,omitempty"`
	// FailedAttempts counts the calls that failed since the resource
	// last moved on (what that means is the machine's: see its Status).
	// A call that succeeds without moving it on (a read that finds the
	// same state) clears LastError but keeps the count, so a server that
	// answers a read and then fails the write again is met with a growing
	// delay and, at Schedule.MaxAttempts, a machine that gives up.
	FailedAttempts int `json:"failedAttempts,omitempty"`
	// RetryAfter is the server's Retry-After from the last response: the
	// earliest next attempt after an error, or when to read again a
	// resource the server is still working on.
	RetryAfter *time.Time `json:"retryAfter,omitempty"`
}

// NoteFailure records a failed call at now: its words, whether a later
// attempt can succeed, the server's Retry-After (nil when it sent none),
// and one more failed attempt. Hosts call it for every failed call.
func (a *Attempts) NoteFailure(err string, transient bool, retryAfter *time.Time, now time.Time) {
	t := now
	a.LastError, a.Transient, a.LastErrorTime = err, transient, &t
	a.RetryAfter = nil
	if retryAfter != nil {
		ra := *retryAfter
		a.RetryAfter = &ra
	}
	a.FailedAttempts++
}

// NoteSuccess records a call that succeeded: the last error and the
// server's Retry-After are cleared, and when the call moved the resource
// on (see FailedAttempts) the count of failed attempts starts again from
// zero.
func (a *Attempts) NoteSuccess(movedOn bool) {
	a.LastError, a.Transient, a.LastErrorTime, a.RetryAfter = "", false, nil, nil
	if movedOn {
		a.FailedAttempts = 0
	}
}

// Timed is a with its failure dated now and counted at least once: what a
// machine records for a failure its host stored without a time.
func (a Attempts) Timed(now time.Time) Attempts {
	t := now
	a.LastErrorTime = &t
	a.FailedAttempts = max(a.FailedAttempts, 1)
	return a
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// String names the gate.
func (g Gate) String() string {
	switch g {
	case Proceed:
		return "Proceed"
	case Due:
		return "Due"
	case Wait:
		return "Wait"
	case Record:
		return "Record"
	case GiveUp:
		return "GiveUp"
	}
	return fmt.Sprintf("Gate(%d)", int(g))
}
