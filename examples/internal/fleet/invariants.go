package fleet

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/certlife/certlife/backoff"
	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/examples/internal/fleethost"
	"github.com/certlife/certlife/renewal"
)

// tracker checks the invariants of one shard from the host's events. It
// keeps its own record of what was written (the authoritative state), so
// a stale read cannot fool it, and it checks with rules of its own rather
// than by asking the decision packages again.
type tracker struct {
	cfg      Config
	index    map[string]int
	certs    []certState
	perMin   map[int64]int
	violated map[string]bool
	list     []string

	issuances, renewals, failures, requests, expiries, excused int
}

type policy uint8

const (
	automatic policy = iota
	disabled
	scheduled
)

// certState is what the tracker knows of one certificate: a few words, so
// that it does not dominate the memory figure. Times are Unix seconds,
// zero for unset.
type certState struct {
	name        string
	lifetime    time.Duration
	revision    int32
	requests    int32
	attemptsDue int32 // attempts since the renewal time
	policy      policy
	issuing     bool
	expired     bool
	notAfter    int64
	renewalTime int64
	lastFailure int64
	retryAfter  int64
	manualAt    int64
	lastAttempt int64
}

func unix(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

func fromUnix(s int64) time.Time {
	if s == 0 {
		return time.Time{}
	}
	return time.Unix(s, 0).UTC()
}

func newTracker(cfg Config) *tracker {
	return &tracker{cfg: cfg, index: map[string]int{}, perMin: map[int64]int{}, violated: map[string]bool{}}
}

func (t *tracker) add(c *certificate.Certificate) {
	st := certState{name: c.Name, lifetime: c.Spec.Duration.Duration}
	if r := c.Spec.Renewal; r != nil {
		switch r.Policy {
		case renewal.PolicyDisabled:
			st.policy = disabled
		case renewal.PolicyScheduled:
			st.policy = scheduled
		}
	}
	t.index[c.Name] = len(t.certs)
	t.certs = append(t.certs, st)
}

func (t *tracker) violation(kind, cert, format string, args ...any) {
	key := kind + "/" + cert
	if t.violated[key] {
		return
	}
	t.violated[key] = true
	t.list = append(t.list, fmt.Sprintf("%s: %s: ", kind, cert)+fmt.Sprintf(format, args...))
}

func (t *tracker) manual(name string, now time.Time) {
	if i, ok := t.index[name]; ok {
		t.certs[i].manualAt = unix(now)
		t.certs[i].issuing = true
	}
}

func (t *tracker) observe(e fleethost.Event) {
	if e.Certificate == nil {
		return
	}
	i, ok := t.index[e.Certificate.Name]
	if !ok {
		return
	}
	st := &t.certs[i]
	for _, a := range e.Done {
		switch a := a.(type) {
		case certificate.CreateRequest:
			if slices.Contains(e.Created, a.Request.Name) {
				t.createdRequest(st, a, e.Time)
			}
		case certificate.UpdateStatus:
			t.wroteStatus(st, a.Status, e.Time)
		}
	}
}

// createdRequest: never a request for a revision already issued; never a
// retry before the backoff's floor (1 h after the last failure) or the
// CA's Retry-After, unless renewed by hand since.
func (t *tracker) createdRequest(st *certState, a certificate.CreateRequest, now time.Time) {
	t.requests++
	st.requests++
	rev, _ := strconv.Atoi(a.Request.Annotations[certificate.AnnotationRevision])
	if int32(rev) <= st.revision {
		t.violation("duplicate revision", st.name, "request %s for revision %d, already issued (status revision %d)", a.Request.Name, rev, st.revision)
	}
	lastFailure := fromUnix(st.lastFailure)
	manualSince := st.manualAt != 0 && st.manualAt > st.lastFailure
	if st.lastFailure != 0 && !manualSince {
		if now.Before(lastFailure.Add(backoff.DefaultMin)) {
			t.violation("backoff", st.name, "request %s at %s, %v after the failure at %s (the floor is %v)",
				a.Request.Name, stamp(now), now.Sub(lastFailure), stamp(lastFailure), backoff.DefaultMin)
		}
		if st.retryAfter != 0 && now.Unix() < st.retryAfter {
			t.violation("retry-after", st.name, "request %s at %s, before the CA's Retry-After %s", a.Request.Name, stamp(now), stamp(fromUnix(st.retryAfter)))
		}
	}
	if st.renewalTime != 0 && now.Unix() >= st.renewalTime {
		st.attemptsDue++
		st.lastAttempt = now.Unix()
	}
}

func (t *tracker) wroteStatus(st *certState, s certificate.Status, now time.Time) {
	issuing := false
	reason := ""
	if c := s.Condition(certificate.ConditionIssuing); c != nil && c.Status == certificate.StatusTrue {
		issuing, reason = true, c.Reason
	}
	if issuing && !st.issuing && reason == certificate.ReasonRenewing {
		t.renewalStarted(st, now)
	}
	st.issuing = issuing
	if s.Revision != nil && int32(*s.Revision) > st.revision {
		t.issuances++
		if st.revision > 0 {
			t.renewals++
		}
		st.revision = int32(*s.Revision)
		st.attemptsDue, st.lastAttempt = 0, 0
	}
	switch {
	case s.LastFailureTime == nil:
		st.lastFailure = 0
	case s.LastFailureTime.Unix() != st.lastFailure:
		t.failures++
		st.lastFailure = s.LastFailureTime.Unix()
	}
	st.retryAfter = 0
	if s.RetryAfter != nil {
		st.retryAfter = s.RetryAfter.Unix()
	}
	if s.NotAfter != nil {
		st.notAfter = s.NotAfter.Unix()
	}
	if s.RenewalTime != nil {
		st.renewalTime = s.RenewalTime.Unix()
	}
}

// renewalStarted counts a renewal in its minute, and for a certificate
// with windows checks that it started inside one (weekdays 09:00–17:00
// UTC) or within the fail-safe margin of expiry.
func (t *tracker) renewalStarted(st *certState, now time.Time) {
	t.perMin[now.Unix()/60]++
	if st.policy != scheduled || st.notAfter == 0 {
		return
	}
	wd, hour := now.UTC().Weekday(), now.UTC().Hour()
	inWindow := wd >= time.Monday && wd <= time.Friday && hour >= 9 && hour < 17
	margin := 24 * time.Hour
	if st.lifetime > 0 && st.lifetime < 6*24*time.Hour {
		margin = st.lifetime / 6
	}
	notAfter := fromUnix(st.notAfter)
	if !inWindow && now.Before(notAfter.Add(-margin)) {
		t.violation("window", st.name, "renewal started %s (%s), outside its windows and %v before expiry", stamp(now), wd, notAfter.Sub(now))
	}
}

// sweep finds certificates that have expired. An expiry is excused when
// renewal is disabled, or when the host kept trying — at least one attempt
// since the renewal time, the last one within the longest backoff of the
// expiry — and the issuer failed every one.
func (t *tracker) sweep(now time.Time) {
	n := now.Unix()
	for i := range t.certs {
		st := &t.certs[i]
		if st.expired && n < st.notAfter {
			st.expired = false // renewed since it expired
		}
		if st.expired || st.notAfter == 0 || n < st.notAfter {
			continue
		}
		st.expired = true
		t.expiries++
		switch {
		case st.policy == disabled:
			t.excused++
		case st.attemptsDue > 0 && st.notAfter-st.lastAttempt <= int64((backoff.DefaultMax+time.Hour)/time.Second):
			t.excused++
		default:
			t.violation("expiry", st.name, "expired at %s: %d attempts since the renewal time %s (last %s)",
				stamp(fromUnix(st.notAfter)), st.attemptsDue, stamp(fromUnix(st.renewalTime)), stamp(fromUnix(st.lastAttempt)))
		}
	}
}

func (t *tracker) mergeInto(s *Summary, perMinute map[int64]int) {
	s.Issuances += t.issuances
	s.Renewals += t.renewals
	s.Failures += t.failures
	s.Requests += t.requests
	s.Expiries += t.expiries
	s.ExcusedExpiries += t.excused
	for _, st := range t.certs {
		s.MaxRequestsPerCert = max(s.MaxRequestsPerCert, int(st.requests))
	}
	for m, n := range t.perMin {
		perMinute[m] += n
	}
	s.Violations = append(s.Violations, t.list...)
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}
