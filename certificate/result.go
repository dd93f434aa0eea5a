package certificate

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/certlife/certlife/backoff"
	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/renewal"
)

// Config is a host's settings for every certificate. The zero value is the
// documented default of each part.
type Config struct {
	// Backoff after failed issuance. Zero: 1h·2^(n−1) ≤ 32h. Its
	// SafetyMargin, when zero, is Renewal.SafetyMargin: the retries of a
	// certificate whose renewal keeps failing leave the fail-safe margin
	// before it expires (24h by default, less for short-lived ones).
	Backoff backoff.Policy
	// Renewal options: short-lived timing, jitter, fail-safe margin,
	// strict windows.
	Renewal renewal.Options
	// SecretInUseRecheck is how often a certificate that does not write
	// its secret looks again, on fixed ticks from its creation time: one
	// that lost a shared secret to another (ReasonSecretInUse), or whose
	// secret holds data certlife did not write (ReasonSecretNotOwned). A
	// change to the secret, which a host's watch brings, is seen at once.
	// Zero means 1h.
	SecretInUseRecheck time.Duration
	// CacheGrace is how long after a request was created a secret that
	// does not yet hold its certificate — missing, or holding an older
	// one — is taken for a read cache that has not caught up with the
	// write, rather than for a problem to re-issue over. Zero means 5
	// minutes; negative turns the grace off. A host that read a missing
	// secret from the source of truth says so (Snapshot.SecretAbsenceConfirmed),
	// and the grace does not apply to it.
	CacheGrace time.Duration
	// IssuerGrace is how long a request may go without any issuer touching
	// it — no Ready condition, not even Pending — before the certificate
	// says that no issuer answers its issuerRef: on the Issuing condition's
	// message, and on Ready's while the certificate is not Ready
	// (ReasonIssuerNotAnswering). It is not a failure: nothing backs off,
	// and the request stays for an issuer that comes up late. Timed from
	// the request's creation. Zero means 5 minutes.
	IssuerGrace time.Duration
	// FallbackAfterFailures, FallbackRetryAfter and FallbackPending move
	// the next request of a certificate with fallback issuers
	// (Spec.FallbackIssuerRefs) from the issuer in use to the next one.
	// They leave certificates without fallback issuers alone.
	//
	// FallbackAfterFailures is how many issuances in a row may fail with
	// one issuer: after that many, the next attempt — when the backoff
	// allows it — goes to the next issuer. Zero means 1: every failed
	// issuance moves the next attempt on (one that failed on an issuer
	// that is down then does not meet it again, as its circuit's probe,
	// when the host's circuit half-opens); negative turns the rule off.
	FallbackAfterFailures int
	// FallbackRetryAfter: a failure whose Retry-After from the CA is
	// further than this after the failure moves the next attempt to the
	// next issuer at once, and that Retry-After, the old issuer's, no
	// longer holds it back (the backoff still does). Zero means 1 hour;
	// negative turns the rule off.
	FallbackRetryAfter time.Duration
	// FallbackPending is how long a request may stay unanswered — no
	// issuer touched it, or its issuer keeps it pending — before it is
	// replaced by a request to the next issuer: an issuer that is not
	// ready (not running, its CA unreachable). Not a failure: nothing
	// backs off. Zero means 1 hour; negative turns the rule off.
	FallbackPending time.Duration
	// ParseCache, when set, keeps what decisions parse of the snapshot's
	// bytes — private keys, certificates, requests — by content, so a
	// host that decides on the same objects pass after pass parses each
	// once. A decision gives the same result with it as without it. One
	// cache serves every decision of a host, at once from several
	// goroutines. Nil means every decision parses everything it reads.
	ParseCache *keys.ParseCache
}

// backoffPolicy is Backoff with the renewal fail-safe margin filled in.
func (c Config) backoffPolicy() backoff.Policy {
	p := c.Backoff
	if p.SafetyMargin == 0 {
		p.SafetyMargin = c.Renewal.SafetyMargin
	}
	return p
}

func (c Config) issuerGrace() time.Duration {
	if c.IssuerGrace > 0 {
		return c.IssuerGrace
	}
	return 5 * time.Minute
}

func (c Config) fallbackAfterFailures() int {
	if c.FallbackAfterFailures == 0 {
		return 1
	}
	return c.FallbackAfterFailures
}

func (c Config) fallbackRetryAfter() time.Duration {
	if c.FallbackRetryAfter == 0 {
		return time.Hour
	}
	return c.FallbackRetryAfter
}

func (c Config) fallbackPending() time.Duration {
	if c.FallbackPending == 0 {
		return time.Hour
	}
	return c.FallbackPending
}

func (c Config) cacheGrace() time.Duration {
	switch {
	case c.CacheGrace < 0:
		return 0
	case c.CacheGrace == 0:
		return 5 * time.Minute
	}
	return c.CacheGrace
}

func (c Config) secretInUseRecheck() time.Duration {
	if c.SecretInUseRecheck > 0 {
		return c.SecretInUseRecheck
	}
	return time.Hour
}

// Action is one effect the host carries out, in the order the result
// lists them. The set is closed: hosts switch over the concrete types.
type Action interface {
	isAction()
	// String describes the action for logs; it never prints key material.
	String() string
}

// UpdateStatus asks the host to write Status as the certificate's status
// (the status subresource), with the resource version it read. On a
// conflict the host drops the rest of the pass and requeues: the next
// decision runs on fresh state.
//
// Ordering: status is written after every other action of the same result,
// so that a crash in between leaves the old status, and the next pass
// repeats the work instead of believing it done.
type UpdateStatus struct {
	Status Status
}

func (UpdateStatus) isAction() {}

func (a UpdateStatus) String() string {
	s := "UpdateStatus{"
	for i, c := range a.Status.Conditions {
		if i > 0 {
			s += ", "
		}
		s += c.Type + "=" + c.Status
		if c.Reason != "" {
			s += "(" + c.Reason + ")"
		}
	}
	if a.Status.Revision != nil {
		s += fmt.Sprintf(", revision=%d", *a.Status.Revision)
	}
	return s + "}"
}

// Stage names a stage of the certificate controller.
type Stage string

// The stages, in the order Reconcile runs them.
const (
	StageTrigger        Stage = "trigger"
	StageKeyManager     Stage = "keymanager"
	StageRequestManager Stage = "requestmanager"
	StageIssuing        Stage = "issuing"
	StageReadiness      Stage = "readiness"
)

// stageOrder is the order Reconcile runs the stages in.
var stageOrder = [...]Stage{StageTrigger, StageKeyManager, StageRequestManager, StageIssuing, StageReadiness}

// Stages lists the stages in the order Reconcile runs them, in a new
// slice each call: changing it changes nothing else.
func Stages() []Stage { return slices.Clone(stageOrder[:]) }

// Result is a decision: the actions to carry out in order, when to look
// again, and why.
type Result struct {
	// Actions to carry out in order; stop at the first error.
	Actions []Action
	// RequeueAt is when to run the decision again even if nothing changes;
	// zero means only on a change.
	RequeueAt time.Time
	// Stage is the stage that Reason and Message come from: for a stage
	// called alone, that stage; for Reconcile, the last of keymanager,
	// requestmanager and issuing that acted, else the trigger.
	Stage Stage
	// Reason is a constant from reasons.go; Message says why and when.
	Reason, Message string
	// IssuanceReason and IssuanceMessage are the Issuing condition's
	// reason and message once the decision's status is written, and are
	// empty when it is not issuing. The reason says why the certificate is
	// being (re)issued (the trigger's check, such as DoesNotExist, Renewing
	// or RequestChanged, or ManualTrigger); the message says why at first,
	// and what the issuance waits for once its request is made and an
	// issuer records progress on it, or no issuer answers it.
	IssuanceReason, IssuanceMessage string
	// Steps is, for Reconcile, what each stage said in the order they ran;
	// nil for a stage called alone.
	Steps []Step
	// Renewal is the renewal decision the last stage that consulted it
	// used, when one did.
	Renewal *renewal.Decision
	// Err is set when the snapshot or the time cannot be decided on (see
	// ErrInvalidInput); the result then has no actions and no requeue.
	Err error
}

// Step is what one stage said during Reconcile.
type Step struct {
	Stage           Stage
	Reason, Message string
	// Acted is true when the stage asked for any action, a status change
	// included.
	Acted bool
	// Actions are what the stage asked for, in order, its status change
	// included: Result.Actions is every stage's, with the status changes
	// folded into one UpdateStatus at the end.
	Actions   []Action
	RequeueAt time.Time
}

// setCondition returns conds with c set: the transition time is kept when
// the status does not change.
func setCondition(conds []Condition, c Condition, now time.Time, generation int64) []Condition {
	c.ObservedGeneration = generation
	c.LastTransitionTime = now
	out := make([]Condition, 0, len(conds)+1)
	found := false
	for _, old := range conds {
		if old.Type != c.Type {
			out = append(out, old)
			continue
		}
		found = true
		if old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		out = append(out, c)
	}
	if !found {
		out = append(out, c)
	}
	return out
}

// cloneStatus deep-copies what the stages change.
func cloneStatus(s Status) Status {
	s.Conditions = append([]Condition(nil), s.Conditions...)
	if s.RenewalInfo != nil {
		ri := *s.RenewalInfo
		s.RenewalInfo = &ri
	}
	return s
}

// ErrInvalidConfig is wrapped by every error Config.Validate returns.
var ErrInvalidConfig = errors.New("certificate: invalid config")

// Validate reports settings that cannot be applied, each naming its field;
// nil when the config is valid. The zero value is valid.
func (c Config) Validate() error {
	var errs []error
	if err := c.Backoff.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%w: backoff: %v", ErrInvalidConfig, err))
	}
	if f := c.Renewal.Timing.JitterFraction; f < 0 || f > 0.5 || f != f {
		errs = append(errs, fmt.Errorf("%w: renewal.timing.jitterFraction: %v is outside (0, 0.5]", ErrInvalidConfig, f))
	}
	if c.Renewal.SafetyMargin < 0 {
		errs = append(errs, fmt.Errorf("%w: renewal.safetyMargin: %v is negative", ErrInvalidConfig, c.Renewal.SafetyMargin))
	}
	if c.SecretInUseRecheck < 0 {
		errs = append(errs, fmt.Errorf("%w: secretInUseRecheck: %v is negative", ErrInvalidConfig, c.SecretInUseRecheck))
	}
	if c.IssuerGrace < 0 {
		errs = append(errs, fmt.Errorf("%w: issuerGrace: %v is negative", ErrInvalidConfig, c.IssuerGrace))
	}
	return errors.Join(errs...)
}
