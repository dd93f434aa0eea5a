package fleet

import (
	"fmt"
	"strconv"
	"time"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/renewal"
)

// The bounds the invariants hold the host to.
const (
	// BackoffMin and BackoffMax are the schedule the README claims for
	// retries after failed issuance: 1h·2^(n−1) after the n-th failure in
	// a row, at most 32h, and never before the CA's Retry-After; but a
	// certificate that was valid at the failure is retried by its expiry
	// less the renewal fail-safe margin (24h, a sixth of lifetimes under
	// six days), or within the margin once half the time left has passed.
	// The tracker states it itself rather than asking package backoff.
	BackoffMin = time.Hour
	BackoffMax = 32 * time.Hour
	// RetryBound: once the schedule allows a retry of an issuance that is
	// still due, the retry's request exists within this.
	RetryBound = 15 * time.Minute
	// ReadyBound: a certificate that is not Ready — never issued, expired,
	// or its spec changed — is Ready within this of the later of when it
	// stopped being Ready and when the backoff schedule allows its next
	// attempt. The CA is healthy apart from the failures that schedule
	// accounts for; an order it keeps pending (up to PendingMax) is part
	// of the bound.
	ReadyBound = PendingMax + 30*time.Minute
	// OrphanBound: what a deleted certificate owned (requests, next
	// private keys) is gone within this.
	OrphanBound = time.Hour
	// StateGrace: the CA keeps no order for a request that has been gone
	// longer than this — the loop tells it, retrying a pass that crashed
	// in between (its retries wait 1 s doubling to 5 min).
	StateGrace = 10 * time.Minute
)

// tracker checks the invariants of one shard. It sees every write as it
// lands in the store (the latest state, which no stale read can hide)
// and every answer of the CA, and it checks them with rules of its own
// rather than by asking the decision packages again.
type tracker struct {
	cfg      Config
	index    map[string]int
	certs    []certState
	perMin   map[int64]int
	violated map[string]bool
	list     []string

	// gone are requests that were deleted, or that the CA was asked about
	// while they did not exist, and that the CA may still keep an order
	// for: checked after each step until the order goes or StateGrace
	// passes.
	gone map[objKey]goneRequest
	// leaked are the requests whose orders were reported as outliving
	// them.
	leaked map[objKey]bool

	// With Config.Fallback: the host's circuits (none while its
	// process is down), the requests seen for each half-open circuit's
	// probe, what each CA issued in the first CA's outage and after it,
	// when the first CA issued again after it (Unix seconds; zero:
	// not yet), and the longest a certificate was un-Ready.
	circuits              func() []host.CircuitState
	probes                map[probeKey]int
	inOutage, afterOutage map[string]int
	firstBack, lastSecond int64
	longestUnready        time.Duration

	issuances, renewals, failures, requests, expiries, excused int
	// The longest waits seen against the bounds: a retry after the
	// schedule allowed it, and a certificate un-Ready after its clock
	// started.
	maxRetryLate, maxUnready time.Duration
}

type probeKey struct {
	issuer string
	until  int64
}

type goneRequest struct {
	cert  string
	since int64
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
	uid         string
	lifetime    time.Duration
	revision    int32
	requests    int32
	attemptsDue int32 // attempts since the renewal time
	failures    int32 // status.failedIssuanceAttempts
	policy      policy
	issuing     bool
	expired     bool
	deleted     bool
	// needRevision: the spec changed; Ready=True counts only with a
	// revision issued since.
	needRevision bool
	notAfter     int64
	renewalTime  int64
	lastFailure  int64
	retryAfter   int64
	manualAt     int64
	specAt       int64 // when a user last changed the names asked for
	lastAttempt  int64
	lastRequest  int64
	// unreadySince is when the certificate last stopped being Ready (its
	// creation, a spec change, an expiry, a status that says not Ready);
	// zero while it is Ready: its status says Ready=True, for the current
	// spec, with a certificate that has not expired.
	unreadySince int64
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
	return &tracker{cfg: cfg, index: map[string]int{}, perMin: map[int64]int{}, violated: map[string]bool{}, gone: map[objKey]goneRequest{}, leaked: map[objKey]bool{},
		probes: map[probeKey]int{}, inOutage: map[string]int{}, afterOutage: map[string]int{}}
}

func policyOf(c *certificate.Certificate) policy {
	if r := c.Spec.Renewal; r != nil {
		switch r.Policy {
		case renewal.PolicyDisabled:
			return disabled
		case renewal.PolicyScheduled:
			return scheduled
		}
	}
	return automatic
}

func (t *tracker) violation(kind, cert, format string, args ...any) {
	key := kind + "/" + cert
	if t.violated[key] {
		return
	}
	t.violated[key] = true
	t.list = append(t.list, fmt.Sprintf("%s: %s: ", kind, cert)+fmt.Sprintf(format, args...))
}

func (t *tracker) state(name string) *certState {
	if i, ok := t.index[name]; ok {
		return &t.certs[i]
	}
	return nil
}

// manual: a user set Issuing=True (a manual renewal).
func (t *tracker) manual(name string, now time.Time) {
	if st := t.state(name); st != nil {
		st.manualAt = unix(now)
		st.issuing = true
	}
}

// specChanged: a user changed what the certificate asks for; it is not
// Ready for the new spec until a revision is issued for it.
func (t *tracker) specChanged(name string, now time.Time) {
	if st := t.state(name); st != nil {
		t.unready(st, now.Unix())
		st.needRevision = true
		st.specAt = unix(now)
	}
}

func (t *tracker) unready(st *certState, at int64) {
	if st.unreadySince == 0 || at < st.unreadySince {
		st.unreadySince = at
	}
}

// wrote sees a write land in the store.
func (t *tracker) wrote(w write, now time.Time) {
	switch o := w.obj.(type) {
	case *certificate.Certificate:
		switch {
		case w.deleted:
			if st := t.state(o.Name); st != nil {
				st.deleted = true
			}
		case w.created:
			t.created(o, now)
		default:
			if st := t.state(o.Name); st != nil && st.uid == o.UID {
				t.wroteStatus(st, o.Status, now)
			}
		}
	case *certificate.CertificateRequest:
		switch {
		case w.deleted:
			t.gone[objKey{o.Namespace, o.Name}] = goneRequest{o.Annotations[certificate.AnnotationCertificateName], now.Unix()}
		case w.created:
			if st := t.state(o.Annotations[certificate.AnnotationCertificateName]); st != nil && st.uid == o.OwnerUID {
				t.createdRequest(st, o, now)
			}
		}
	}
}

// created: a certificate is created, or created again after a delete (a
// new UID: its history starts over).
func (t *tracker) created(c *certificate.Certificate, now time.Time) {
	st := certState{name: c.Name, uid: c.UID, lifetime: c.Spec.Duration.Duration, policy: policyOf(c), unreadySince: now.Unix()}
	if i, ok := t.index[c.Name]; ok {
		st.requests = t.certs[i].requests
		t.certs[i] = st
		return
	}
	t.index[c.Name] = len(t.certs)
	t.certs = append(t.certs, st)
}

// backoffDelay is the schedule's delay after n failures in a row.
func backoffDelay(n int32) time.Duration {
	d := BackoffMin
	for i := int32(1); i < n && d < BackoffMax; i++ {
		d *= 2
	}
	return min(d, BackoffMax)
}

// safetyMargin is the renewal fail-safe margin of the certificate: 24h,
// or a sixth of a lifetime shorter than six days.
func (st *certState) safetyMargin() time.Duration {
	if st.lifetime > 0 && st.lifetime < 6*24*time.Hour {
		return st.lifetime / 6
	}
	return 24 * time.Hour
}

// expiryDeadline is the latest the schedule lets a retry wait after a
// failure of a certificate that was valid then, ok false for one that was
// not: its expiry less the safety margin while more than the margin was
// left at the failure, else the failure plus half the time left; never
// sooner than a minute after the failure. Times in status are whole
// seconds here and not in the decisions: within two seconds of the
// margin, the earlier of the two.
func (st *certState) expiryDeadline() (int64, bool) {
	if st.notAfter == 0 || st.lastFailure >= st.notAfter {
		return 0, false
	}
	left, margin := st.notAfter-st.lastFailure, int64(st.safetyMargin()/time.Second)
	keep, half := st.notAfter-margin, st.lastFailure+left/2
	var deadline int64
	switch {
	case left > margin+2:
		deadline = keep
	case left < margin-2:
		deadline = half
	default:
		deadline = min(keep, half)
	}
	return max(deadline, st.lastFailure+int64(time.Minute/time.Second)), true
}

// nextAllowed is when the schedule allows the next attempt: zero when no
// failure is recorded, and the time of a manual renewal that came since
// the last failure (which allows an attempt at once), or of a spec
// change since (which does too). A retry of a certificate that was valid
// at the failure is brought forward to its expiry deadline.
func (st *certState) nextAllowed() int64 {
	switch {
	case st.lastFailure == 0:
		return 0
	case st.manualAt > st.lastFailure:
		return st.manualAt
	case st.specAt > st.lastFailure:
		// The failed request is not for the spec any more: the fix is
		// not held back.
		return st.specAt
	}
	next := st.lastFailure + int64(backoffDelay(max(st.failures, 1))/time.Second)
	next = max(next, st.retryAfter)
	if deadline, ok := st.expiryDeadline(); ok {
		next = min(next, deadline)
	}
	return next
}

// retryOwed is when a retry of a failed issuance became owed: when the
// schedule allowed it and the certificate needed issuing (it was not
// Ready, or its renewal was due); zero when none is owed. Only for
// certificates under automatic renewal: windows may hold a renewal back.
func (st *certState) retryOwed() int64 {
	next := st.nextAllowed()
	if next == 0 || st.policy != automatic || st.lastRequest >= st.lastFailure {
		return 0
	}
	switch {
	case st.unreadySince != 0:
		return max(next, st.unreadySince)
	case st.renewalTime != 0:
		return max(next, st.renewalTime)
	}
	return 0
}

// createdRequest: never a request for a revision already issued; never a
// retry before the schedule allows, unless renewed by hand since.
func (t *tracker) createdRequest(st *certState, r *certificate.CertificateRequest, now time.Time) {
	t.requests++
	st.requests++
	rev, _ := strconv.Atoi(r.Annotations[certificate.AnnotationRevision])
	if int32(rev) <= st.revision {
		t.violation("duplicate revision", st.name, "request %s for revision %d, already issued (status revision %d)", r.Name, rev, st.revision)
	}
	if next := st.nextAllowed(); next != 0 {
		if now.Unix() < next {
			t.violation("backoff", st.name, "request %s at %s; %d failures in a row, the last at %s, Retry-After %s: the schedule allows %s",
				r.Name, stamp(now), st.failures, stamp(fromUnix(st.lastFailure)), stamp(fromUnix(st.retryAfter)), stamp(fromUnix(next)))
		}
		if owed := st.retryOwed(); owed != 0 && st.lastRequest < st.lastFailure {
			t.maxRetryLate = max(t.maxRetryLate, now.Sub(fromUnix(owed)))
		}
	}
	if t.circuits != nil {
		t.checkCircuit(st, r, now)
	}
	st.lastRequest = now.Unix()
	if st.renewalTime != 0 && now.Unix() >= st.renewalTime {
		st.attemptsDue++
		st.lastAttempt = now.Unix()
	}
}

// checkCircuit: with fallback issuers, never a request to an issuer
// whose circuit is open, and while it is half-open, one (the probe) until
// its answer or its probe time.
func (t *tracker) checkCircuit(st *certState, r *certificate.CertificateRequest, now time.Time) {
	ref := r.Spec.IssuerRef.WithDefaults()
	for _, c := range t.circuits() {
		if c.IssuerRef != ref || c.OpenUntil.IsZero() {
			continue
		}
		if now.Before(c.OpenUntil) {
			t.violation("open circuit", st.name, "request %s to %s at %s, whose circuit is open until %s", r.Name, ref.Name, stamp(now), stamp(c.OpenUntil))
			return
		}
		k := probeKey{ref.Name, c.ProbeUntil.UnixNano()}
		if t.probes[k]++; t.probes[k] > 1 || !now.Before(c.ProbeUntil) {
			t.violation("open circuit", st.name, "request %s to %s at %s, whose circuit is half-open and whose probe is out (until %s)", r.Name, ref.Name, stamp(now), stamp(c.ProbeUntil))
		}
	}
}

// issued counts an issuance by the CA that made it, for Config.Fallback.
func (t *tracker) issued(s certificate.Status, now time.Time) {
	if !t.cfg.Fallback || len(t.cfg.outageDays) == 0 {
		return
	}
	by := issuerRef.Name
	if s.Issuer != nil {
		by = s.Issuer.IssuerRef.Name
	}
	from := t.cfg.Start.Add(time.Duration(t.cfg.outageDays[0]) * 24 * time.Hour)
	to := from.Add(24 * time.Hour)
	switch {
	case now.Before(from):
	case now.Before(to):
		t.inOutage[by]++
	default:
		t.afterOutage[by]++
		switch {
		case by == issuerRef.Name && t.firstBack == 0:
			t.firstBack = now.Unix()
		case by == fallbackRef.Name:
			t.lastSecond = now.Unix()
		}
	}
}

func (t *tracker) wroteStatus(st *certState, s certificate.Status, now time.Time) {
	allowed := st.nextAllowed() // before this write clears the failure
	issuing := false
	reason := ""
	if c := s.Condition(certificate.ConditionIssuing); c != nil && c.Status == certificate.StatusTrue {
		issuing, reason = true, c.Reason
	}
	if issuing && !st.issuing && reason == certificate.ReasonRenewing {
		t.renewalStarted(st, now)
	}
	st.issuing = issuing
	newRevision := false
	if s.Revision != nil && int32(*s.Revision) > st.revision {
		t.issuances++
		if st.revision > 0 {
			t.renewals++
		}
		st.revision = int32(*s.Revision)
		st.attemptsDue, st.lastAttempt = 0, 0
		newRevision = true
		t.issued(s, now)
	}
	switch {
	case s.LastFailureTime == nil:
		st.lastFailure = 0
	case s.LastFailureTime.Unix() != st.lastFailure:
		t.failures++
		st.lastFailure = s.LastFailureTime.Unix()
	}
	st.failures = 0
	if s.FailedIssuanceAttempts != nil {
		st.failures = int32(*s.FailedIssuanceAttempts)
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
	ready := false
	if c := s.Condition(certificate.ConditionReady); c != nil && c.Status == certificate.StatusTrue {
		ready = s.NotAfter != nil && now.Before(*s.NotAfter)
	}
	switch {
	case !ready:
		t.unready(st, now.Unix())
	case st.unreadySince != 0 && (newRevision || !st.needRevision):
		// Ready again. After a spec change only with a revision issued
		// since: until the loop sees the change, the status says Ready
		// for the old spec.
		t.readyAgain(st, allowed, now)
	}
}

// readyAgain: a certificate that was not Ready is; it took no longer than
// ReadyBound from when its clock started.
func (t *tracker) readyAgain(st *certState, allowed int64, now time.Time) {
	start := max(st.unreadySince, allowed)
	if late := now.Sub(fromUnix(start)); late > 0 && st.policy != disabled {
		if late > ReadyBound {
			t.violation("not ready", st.name, "Ready at %s, %v after %s (un-Ready since %s, next attempt allowed %s); the bound is %v",
				stamp(now), late, stamp(fromUnix(start)), stamp(fromUnix(st.unreadySince)), stamp(fromUnix(allowed)), ReadyBound)
		}
		t.maxUnready = max(t.maxUnready, late)
	}
	if st.policy != disabled {
		t.longestUnready = max(t.longestUnready, now.Sub(fromUnix(st.unreadySince)))
	}
	st.unreadySince, st.needRevision = 0, false
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
	margin := st.safetyMargin()
	notAfter := fromUnix(st.notAfter)
	if !inWindow && now.Before(notAfter.Add(-margin)) {
		t.violation("window", st.name, "renewal started %s (%s), outside its windows and %v before expiry", stamp(now), wd, notAfter.Sub(now))
	}
}

// afterStep checks the CA's orders after a step of the loop: no order
// outlives its request by more than StateGrace — the loop tells the CA of
// every request it deletes, and a request the CA was asked about while it
// did not exist (a stale read) is deleted and told of in turn.
func (t *tracker) afterStep(s *store, cas []*ca, now time.Time) {
	holds := func(k objKey) bool {
		for _, c := range cas {
			if c.holds(k.namespace, k.name) {
				return true
			}
		}
		return false
	}
	for _, c := range cas {
		for _, k := range c.takeMade() {
			if !s.hasRequest(k.namespace, k.name) {
				if _, ok := t.gone[k]; !ok {
					t.gone[k] = goneRequest{k.name, now.Unix()}
				}
			}
		}
	}
	for k, g := range t.gone {
		switch {
		case !holds(k) || s.hasRequest(k.namespace, k.name):
			delete(t.gone, k)
		case now.Unix()-g.since > int64(StateGrace/time.Second):
			t.violation("issuer state", g.cert, "request %s has been gone since %s and the CA still keeps its order at %s: nobody told it",
				k, stamp(fromUnix(g.since)), stamp(now))
			delete(t.gone, k)
			t.leaked[k] = true
		}
	}
	for _, c := range cas {
		leaked := 0
		for k := range t.leaked {
			if c.holds(k.namespace, k.name) {
				leaked++
			}
		}
		if n, live := c.orderCount(), s.liveRequests(); n > live+len(t.gone)+leaked {
			t.violation("issuer states", "the CA", "%d orders kept for %d live requests at %s", n, live, stamp(now))
		}
	}
}

// sweep checks every certificate at now: expiries (excused when renewal
// is disabled, or when the host kept trying — at least one attempt since
// the renewal time, the last one within the longest backoff of the
// expiry — and the CA failed every one), certificates un-Ready past
// ReadyBound, and retries the schedule allows that have not come within
// RetryBound.
func (t *tracker) sweep(now time.Time) {
	n := now.Unix()
	for i := range t.certs {
		st := &t.certs[i]
		if st.deleted {
			continue
		}
		if st.expired && n < st.notAfter {
			st.expired = false // renewed since it expired
		}
		if !st.expired && st.notAfter != 0 && n >= st.notAfter {
			st.expired = true
			t.unready(st, st.notAfter)
			t.expiries++
			switch {
			case st.policy == disabled:
				t.excused++
			case st.attemptsDue > 0 && st.notAfter-st.lastAttempt <= int64((BackoffMax+time.Hour)/time.Second):
				t.excused++
			default:
				t.violation("expiry", st.name, "expired at %s: %d attempts since the renewal time %s (last %s)",
					stamp(fromUnix(st.notAfter)), st.attemptsDue, stamp(fromUnix(st.renewalTime)), stamp(fromUnix(st.lastAttempt)))
			}
		}
		if st.policy == disabled {
			continue
		}
		if st.unreadySince != 0 {
			start := max(st.unreadySince, st.nextAllowed())
			if late := n - start; late > int64(ReadyBound/time.Second) {
				t.violation("not ready", st.name, "still not Ready at %s, %v after %s (un-Ready since %s, next attempt allowed %s); the bound is %v",
					stamp(now), time.Duration(late)*time.Second, stamp(fromUnix(start)), stamp(fromUnix(st.unreadySince)), stamp(fromUnix(st.nextAllowed())), ReadyBound)
			}
		}
		if owed := st.retryOwed(); owed != 0 && n-owed > int64(RetryBound/time.Second) {
			t.violation("retry", st.name, "no retry by %s; %d failures in a row, the last at %s: a retry was owed from %s; the bound is %v",
				stamp(now), st.failures, stamp(fromUnix(st.lastFailure)), stamp(fromUnix(owed)), RetryBound)
		}
	}
}

// orphans checks that what deleted certificates owned went within
// OrphanBound: their requests and next private keys (their secrets stay,
// as a deleted Kubernetes Certificate's do). gone is each deleted
// certificate's UID and when it went; the UIDs past the bound with
// nothing left go from it.
func (t *tracker) orphans(s *store, gone map[string]time.Time, now time.Time) {
	due := false
	for _, at := range gone {
		if now.Sub(at) > OrphanBound {
			due = true
			break
		}
	}
	if !due {
		return // nothing can be an orphan yet: no scan
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	left := map[string]bool{}
	for _, tab := range s.tables[1:] {
		for k, e := range tab.items {
			if tab.kind == host.KindSecret && e.maps.label(certificate.LabelNextPrivateKey) != "true" {
				continue
			}
			at, ok := gone[e.meta.OwnerUID]
			if ok && now.Sub(at) > OrphanBound {
				left[e.meta.OwnerUID] = true
				t.violation("orphan", k.name, "%s %s of certificate UID %s, deleted at %s, is still there at %s", tab.kind, k, e.meta.OwnerUID, stamp(at), stamp(now))
			}
		}
	}
	// A certificate past the bound with nothing left of it never has
	// again (a UID is never given twice): it is checked no more.
	for uid, at := range gone {
		if now.Sub(at) > OrphanBound && !left[uid] {
			delete(gone, uid)
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
	s.MaxRetryLate = max(s.MaxRetryLate, t.maxRetryLate)
	s.MaxUnready = max(s.MaxUnready, t.maxUnready)
	s.LongestUnready = max(s.LongestUnready, t.longestUnready)
	if s.IssuedInOutage != nil {
		for k, n := range t.inOutage {
			s.IssuedInOutage[k] += n
		}
		for k, n := range t.afterOutage {
			s.IssuedAfterOutage[k] += n
		}
		end := t.cfg.Start.Add(time.Duration(t.cfg.outageDays[0]+1) * 24 * time.Hour)
		if t.firstBack != 0 {
			if back := fromUnix(t.firstBack).Sub(end); s.FirstCABackAfter < 0 || back < s.FirstCABackAfter {
				s.FirstCABackAfter = back
			}
		}
		if t.lastSecond != 0 {
			s.SecondCALastAfter = max(s.SecondCALastAfter, fromUnix(t.lastSecond).Sub(end))
		}
	}
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
