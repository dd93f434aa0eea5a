package renewal

import (
	"errors"
	"fmt"
	"time"

	"github.com/certlife/certlife/internal/stablehash"
)

// Policy says how a certificate renews.
type Policy string

// Policies.
const (
	// PolicyAutomatic renews at the renewal time. The zero value means
	// Automatic.
	PolicyAutomatic Policy = "Automatic"
	// PolicyDisabled never renews on its own; a manual trigger still works,
	// and the certificate may expire.
	PolicyDisabled Policy = "Disabled"
	// PolicyScheduled renews at or after the renewal time, inside one of
	// the windows only — unless expiry is near (the fail-safe).
	PolicyScheduled Policy = "Scheduled"
)

// Spec is a certificate's renewal stanza (spec.renewal).
type Spec struct {
	// Policy; empty means Automatic.
	Policy Policy `json:"policy,omitempty"`
	// Windows during which a Scheduled certificate may renew; ORed. Ignored
	// (with a condition saying so) under Automatic and Disabled.
	Windows []Window `json:"windows,omitempty"`
}

// ErrInvalidSpec is wrapped by Spec.Validate's errors about the policy.
var ErrInvalidSpec = errors.New("renewal: invalid spec")

// Validate reports every problem of the spec, each naming its field.
func (s Spec) Validate() error {
	var errs []error
	switch s.Policy {
	case "", PolicyAutomatic, PolicyDisabled, PolicyScheduled:
	default:
		errs = append(errs, fmt.Errorf("%w: policy: %q is not Automatic, Disabled or Scheduled", ErrInvalidSpec, s.Policy))
	}
	if _, err := Compile(s.Windows); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Options are a host's renewal settings, for every certificate. The zero
// value is the documented default.
type Options struct {
	// Timing of the renewal time: short-lived rule and jitter.
	Timing Timing

	// SafetyMargin is the fail-safe: when a Scheduled certificate is due
	// and now + SafetyMargin passes its notAfter, it renews outside its
	// windows. Zero means the default: 24h, or a sixth of the lifetime for
	// certificates shorter than six days (a 3-day certificate gets 12h), so
	// that the margin never swallows most of a short certificate's life.
	SafetyMargin time.Duration

	// Strict keeps the windows even when expiry is near: the certificate
	// may expire, and the RenewalDeferred condition says so.
	Strict bool
}

// Input is what a renewal decision reads from one certificate.
type Input struct {
	// NotBefore and NotAfter of the current certificate.
	NotBefore, NotAfter time.Time
	// RenewBefore; zero means unset.
	RenewBefore time.Duration
	// RenewBeforePercentage of the lifetime; zero means unset.
	RenewBeforePercentage int32
	// Spec is the certificate's renewal stanza.
	Spec Spec
	// Schedule, when set, is Spec.Windows already compiled by the host (a
	// cache); nil means compile Spec.Windows here.
	Schedule *Schedule
	// ARI is the CA's suggested window; nil means none. The certificate
	// renews once a point chosen in it from JitterKey has passed (RFC 9773
	// §4.2).
	ARI *ARIWindow
	// JitterKey is a stable key for jitter and for the point chosen in an
	// ARI window, such as the certificate's UID. Certificates with the same
	// key (an empty one included) share that point.
	JitterKey string
}

// Condition types a renewal decision may ask the host to set.
// A host sets the ones in Decision.Conditions and removes the others.
const (
	ConditionRenewalDisabled       = "RenewalDisabled"
	ConditionRenewalDeferred       = "RenewalDeferred"
	ConditionRenewalWindowBypassed = "RenewalWindowBypassed"
	ConditionRenewalConfigInvalid  = "RenewalConfigInvalid"
	// ConditionRenewalWindowsIgnored: windows were given with a policy that
	// does not use them.
	ConditionRenewalWindowsIgnored = "RenewalWindowsIgnored"
)

// Reasons of a Decision. Each constant is named after its value, without
// the "Renewal" the values begin with where they would stutter:
// renewal.ReasonDue is "RenewalDue", renewal.ReasonNotDue is "NotDue".
const (
	// ReasonNotDue: the renewal time has not come.
	ReasonNotDue = "NotDue"
	// ReasonDue: the renewal time has come and the policy allows it.
	ReasonDue = "RenewalDue"
	// ReasonDisabled: the policy is Disabled.
	ReasonDisabled = "RenewalDisabled"
	// ReasonDeferred: due, but outside every window.
	ReasonDeferred = "RenewalDeferred"
	// ReasonWindowBypassed: due, outside the windows, and expiry is near.
	ReasonWindowBypassed = "RenewalWindowBypassed"
	// ReasonConfigInvalid: the windows are invalid and expiry is not near.
	ReasonConfigInvalid = "RenewalConfigInvalid"
)

// Condition is one status condition to set, Kubernetes style.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"` // "True"
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Status is a certificate's status.renewal: the policy in effect and its
// windows.
type Status struct {
	Policy  Policy         `json:"policy"`
	Windows *WindowsStatus `json:"windows,omitempty"`
}

// WindowsStatus reports the windows of a Scheduled certificate.
type WindowsStatus struct {
	// Valid is "True" or "False".
	Valid string `json:"valid"`
	// MatchedWindow names the window a renewal happened in, e.g.
	// "windows[1]"; empty otherwise.
	MatchedWindow string `json:"matchedWindow,omitempty"`
}

// Decision is the answer to "may this certificate renew now, and if not,
// when to look again".
type Decision struct {
	// RenewalTime is when renewal is due by timing alone (after jitter, or
	// the point chosen in the ARI window). Hosts show it as
	// status.renewalTime.
	RenewalTime time.Time
	// Source is the rule that chose RenewalTime.
	Source Source
	// Renew is true when the certificate should renew now.
	Renew bool
	// NextCheck is when the answer may change: the renewal time, the next
	// window start, the fail-safe point. Zero means nothing will change on
	// its own (Disabled).
	NextCheck time.Time
	// NextWindowStart is the next time a window opens, for a deferral.
	NextWindowStart time.Time
	// Conditions to set; every renewal condition not listed is removed.
	Conditions []Condition
	// Status is the renewal status to record.
	Status Status
	// Deferred and Bypassed count, for metrics, a renewal held back by a
	// window and one let through by the fail-safe.
	Deferred, Bypassed bool
	// Reason is one of the Reason constants; Message says why and when.
	Reason, Message string
}

// Decide answers, at now, whether the certificate in may renew. It reads
// nothing but its arguments.
func Decide(in Input, now time.Time, opts Options) Decision {
	var d Decision
	policy := in.Spec.Policy
	if policy == "" {
		policy = PolicyAutomatic
	}
	d.Status.Policy = policy

	d.RenewalTime, d.Source = Time(in.NotBefore, in.NotAfter, in.RenewBefore, in.RenewBeforePercentage, opts.Timing)
	d.RenewalTime = opts.Timing.jitter(d.RenewalTime, in.NotBefore, in.NotAfter, in.JitterKey)
	ariNote := ""
	if c := chooseInWindow(in.ARI, in.NotBefore, in.NotAfter, in.JitterKey); c.ok {
		// RFC 9773 §4.2: renew once the point chosen in the window has
		// passed — not when the window opens, which would renew a whole
		// fleet in its first second.
		d.RenewalTime, d.Source = c.at, SourceARI
		ariNote = c.note
	} else if c.reason != "" {
		ariNote = "; " + c.reason
	}
	due := !now.Before(d.RenewalTime)

	switch policy {
	case PolicyDisabled:
		d.Reason = ReasonDisabled
		d.Message = fmt.Sprintf("automatic renewal is disabled; it would have been due at %s (%s); a manual trigger still renews; the certificate expires at %s",
			stamp(d.RenewalTime), d.Source, stamp(in.NotAfter))
		d.Conditions = append(d.Conditions, Condition{Type: ConditionRenewalDisabled, Status: "True", Reason: ReasonDisabled, Message: d.Message})
		d.Conditions = appendIgnored(d.Conditions, in.Spec, policy)
		return d
	case PolicyAutomatic:
		d.Conditions = appendIgnored(d.Conditions, in.Spec, policy)
		timed(&d, due, now, ariNote)
		return d
	case PolicyScheduled:
	default:
		// An unknown policy must not stop renewals: treat it as Automatic
		// and say so.
		msg := fmt.Sprintf("policy %q is not Automatic, Disabled or Scheduled; renewing as Automatic", policy)
		d.Conditions = append(d.Conditions, Condition{Type: ConditionRenewalConfigInvalid, Status: "True", Reason: ReasonConfigInvalid, Message: msg})
		timed(&d, due, now, ariNote+"; "+msg)
		return d
	}

	sched, err := in.Schedule, error(nil)
	if sched == nil {
		sched, err = Compile(in.Spec.Windows)
	}
	if err == nil && sched.Len() == 0 {
		// Scheduled with no windows: renewal may happen at any time.
		timed(&d, due, now, ariNote+"; policy Scheduled lists no windows, so any time is allowed")
		return d
	}
	d.Status.Windows = &WindowsStatus{Valid: "True"}
	if err != nil {
		d.Status.Windows.Valid = "False"
		d.Conditions = append(d.Conditions, Condition{Type: ConditionRenewalConfigInvalid, Status: "True", Reason: ReasonConfigInvalid,
			Message: "renewal windows are invalid, so no windowed renewal happens until they are corrected: " + err.Error()})
	}
	if !due {
		timed(&d, false, now, ariNote)
		return d
	}
	margin := opts.SafetyMargin
	if margin <= 0 {
		margin = defaultMargin(in.NotAfter.Sub(in.NotBefore))
	}
	failSafeAt := in.NotAfter.Add(-margin)
	nearExpiry := !now.Before(failSafeAt)
	if err == nil {
		if start, end, i, ok := sched.Occurrence(now); ok {
			d.Status.Windows.MatchedWindow = fmt.Sprintf("windows[%d]", i)
			if slot, spread := windowSlot(start, end, in.JitterKey); opts.Timing.Jitter && d.RenewalTime.Before(start) && now.Before(slot) && !nearExpiry {
				// Due before the window opened: every certificate held
				// back for it would renew in its first minute. With jitter
				// on, each takes a deterministic slot in the window's first
				// part instead.
				d.Deferred, d.Reason, d.NextWindowStart = true, ReasonDeferred, slot
				d.NextCheck = slot
				d.Message = fmt.Sprintf("renewal due since %s (%s); windows[%d] opened at %s and its renewals are spread over %v: this one renews at %s%s",
					stamp(d.RenewalTime), d.Source, i, stamp(start), spread, stamp(slot), ariNote)
				d.Conditions = append(d.Conditions, Condition{Type: ConditionRenewalDeferred, Status: "True", Reason: ReasonDeferred, Message: d.Message})
				return d
			}
			d.Renew, d.Reason = true, ReasonDue
			d.Message = fmt.Sprintf("renewal due since %s (%s) and now is inside windows[%d]%s", stamp(d.RenewalTime), d.Source, i, ariNote)
			return d
		}
	}

	// Due, but no window is open (or the windows are invalid).
	if nearExpiry && !opts.Strict {
		d.Renew, d.Bypassed, d.Reason = true, true, ReasonWindowBypassed
		d.Message = fmt.Sprintf("renewal due since %s, outside every window, and the certificate expires at %s, within the %v safety margin: renewing outside the windows%s",
			stamp(d.RenewalTime), stamp(in.NotAfter), margin, ariNote)
		d.Conditions = append(d.Conditions, Condition{Type: ConditionRenewalWindowBypassed, Status: "True", Reason: ReasonWindowBypassed, Message: d.Message})
		return d
	}
	if err != nil {
		d.Reason = ReasonConfigInvalid
		d.Message = fmt.Sprintf("renewal due since %s but the windows are invalid; the fail-safe renews at %s", stamp(d.RenewalTime), stamp(failSafeAt))
		if opts.Strict {
			d.Message = fmt.Sprintf("renewal due since %s but the windows are invalid and strict mode keeps them: the certificate expires at %s unless they are corrected", stamp(d.RenewalTime), stamp(in.NotAfter))
		} else {
			d.NextCheck = failSafeAt
		}
		return d
	}
	next, idx, _ := sched.NextStart(now)
	d.Deferred, d.Reason, d.NextWindowStart = true, ReasonDeferred, next
	d.NextCheck = next
	if !opts.Strict && failSafeAt.Before(next) {
		d.NextCheck = failSafeAt
	}
	d.Message = fmt.Sprintf("renewal due since %s (%s) but outside every window; the next window, windows[%d], opens at %s", stamp(d.RenewalTime), d.Source, idx, stamp(next))
	if opts.Strict && next.After(in.NotAfter) {
		d.Message += fmt.Sprintf("; strict mode keeps the windows although the certificate expires at %s, before then", stamp(in.NotAfter))
	} else if !opts.Strict {
		d.Message += fmt.Sprintf("; the fail-safe renews regardless at %s", stamp(failSafeAt))
	}
	d.Message += ariNote
	d.Conditions = append(d.Conditions, Condition{Type: ConditionRenewalDeferred, Status: "True", Reason: ReasonDeferred, Message: d.Message})
	return d
}

// timed finishes a decision that depends on the renewal time alone.
func timed(d *Decision, due bool, now time.Time, note string) {
	when := "renewal due at "
	if due {
		d.Renew, d.Reason = true, ReasonDue
		when = "renewal due since "
	} else {
		d.Reason, d.NextCheck = ReasonNotDue, d.RenewalTime
	}
	d.Message = when + stamp(d.RenewalTime) + " (" + string(d.Source) + ")" + note
}

func appendIgnored(cs []Condition, s Spec, p Policy) []Condition {
	if len(s.Windows) == 0 {
		return cs
	}
	return append(cs, Condition{Type: ConditionRenewalWindowsIgnored, Status: "True", Reason: "WindowsIgnored",
		Message: fmt.Sprintf("%d renewal window(s) are ignored: policy %s does not use windows; set policy Scheduled to use them", len(s.Windows), p)})
}

// MaxWindowSpread bounds how long after a window opens the renewals held
// back for it are spread (with jitter on): half the window, at most this.
const MaxWindowSpread = 4 * time.Hour

// windowSlot is the deterministic instant, in the first half of a window
// occurrence (at most MaxWindowSpread), at which a certificate held back
// for it renews.
func windowSlot(start, end time.Time, key string) (time.Time, time.Duration) {
	spread := min(end.Sub(start)/2, MaxWindowSpread)
	if key == "" || spread <= 0 {
		return start, 0
	}
	off := time.Duration(stablehash.Scale(int64(spread), "window", key)).Truncate(time.Second)
	return start.Add(off), spread
}

// DefaultSafetyMargin is the fail-safe margin Options.SafetyMargin
// defaults to for a certificate of the given lifetime (notAfter −
// notBefore): 24h, or a sixth of a lifetime shorter than six days (a
// 3-day certificate gets 12h, a 1-hour one 10 minutes). A lifetime of zero
// or less (unknown) gets 24h. Package backoff leaves the same margin
// before expiry when it brings retries forward.
func DefaultSafetyMargin(lifetime time.Duration) time.Duration { return defaultMargin(lifetime) }

// defaultMargin is 24h, or a sixth of a lifetime shorter than six days.
func defaultMargin(lifetime time.Duration) time.Duration {
	const day = 24 * time.Hour
	if lifetime > 0 && lifetime < 6*day {
		return lifetime / 6
	}
	return day
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
