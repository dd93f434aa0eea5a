package order

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/certlife/certlife/challenge"
)

// Config tunes the order machine. The zero value is the default of each
// field.
type Config struct {
	// PollInterval between reads of an order waiting on the server. Zero
	// means 5s.
	PollInterval time.Duration
	// FailedOrderTTL is how long a failed order is kept before it is
	// deleted. Zero means 30 minutes (seed 002).
	FailedOrderTTL time.Duration
	// TransientRetry after a transient error without Retry-After. Zero
	// means 30s.
	TransientRetry time.Duration
}

func (c Config) poll() time.Duration {
	if c.PollInterval > 0 {
		return c.PollInterval
	}
	return 5 * time.Second
}

func (c Config) ttl() time.Duration {
	if c.FailedOrderTTL > 0 {
		return c.FailedOrderTTL
	}
	return 30 * time.Minute
}

func (c Config) transientRetry() time.Duration {
	if c.TransientRetry > 0 {
		return c.TransientRetry
	}
	return 30 * time.Second
}

// Reasons of a Result.
const (
	ReasonCreating     = "Creating"
	ReasonAuthorizing  = "FetchingAuthorizations"
	ReasonChallenges   = "ManagingChallenges"
	ReasonWaiting      = "WaitingForChallenges"
	ReasonFinalizing   = "Finalizing"
	ReasonFetching     = "FetchingCertificate"
	ReasonSyncing      = "Syncing"
	ReasonDone         = "Done"
	ReasonFailed       = "Failed"
	ReasonRetrying     = "RetryingAfterError"
	ReasonSpecChanged  = "SpecChanged"
	ReasonInvalidSpec  = "InvalidSpec"
	ReasonNoSolver     = "NoSolver"
	ReasonNoOrderState = "NoOrder"
)

// Result lists the actions in order, when to look again, and why.
type Result struct {
	Actions   []Action
	RequeueAt time.Time
	Reason    string
	Message   string
}

// SpecHash hashes the spec, so a later change can be told apart.
func SpecHash(s *Spec) string {
	h := sha256.New()
	fmt.Fprintf(h, "%x|%s|%s|%s|%s|%q|%q|%s|%s|%s|", s.CSR, s.Issuer.Name, s.Issuer.Kind, s.Issuer.Group, s.CommonName,
		s.DNSNames, s.IPAddresses, s.Profile, s.Replaces, s.PreferredChain)
	if s.NotAfter != nil {
		fmt.Fprint(h, s.NotAfter.UTC().Format(time.RFC3339Nano))
	}
	if s.NotBefore != nil {
		fmt.Fprint(h, "|nb|", s.NotBefore.UTC().Format(time.RFC3339Nano))
	}
	for _, sv := range s.Solvers {
		fmt.Fprintf(h, "|%+v|%+v|%+v", sv.Selector, sv.Solver.HTTP01, sv.Solver.DNS01)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// ChallengeName is the deterministic name of the Challenge for the i-th
// authorization of an order.
func ChallengeName(order string, i int) string { return fmt.Sprintf("%s-%d", order, i) }

// Decide is the order machine (seed 002). From the order and the Challenge
// resources it owns it returns the next ACME calls and resource changes:
// create the order; fetch authorizations; create one Challenge per
// authorization that is not already valid (authorization reuse), with the
// most specific solver; delete Challenges no longer needed; finalize when
// ready (RFC 8555 §7.4); fetch the certificate when valid; on a final
// failure, say why in words a user can act on and delete the order after
// FailedOrderTTL. An order whose Challenges are all final while it still
// says pending is read again shortly, never waited on forever. A spec that
// changed after creation is an error, not something to follow.
func Decide(o *Order, owned []*challenge.Challenge, now time.Time, cfg Config) Result {
	if o == nil {
		return Result{Reason: ReasonNoOrderState, Message: "no order"}
	}
	st := o.Status
	if st.State.Failed() {
		return failed(o, owned, now, cfg)
	}
	if st.SpecHash != "" && st.SpecHash != SpecHash(&o.Spec) {
		return fail(o, now, ReasonSpecChanged, "the order's spec changed after it was created; an order is immutable, so a new one must be made")
	}
	if st.State == StateValid && len(st.Certificate) > 0 {
		return Result{Actions: deleteAll(owned, "the order is valid"), Reason: ReasonDone, Message: "the certificate is issued"}
	}
	if st.LastError != "" && st.Transient {
		at := now.Add(cfg.transientRetry())
		if st.RetryAfter != nil {
			at = *st.RetryAfter
		}
		if now.Before(at) {
			return Result{RequeueAt: at, Reason: ReasonRetrying, Message: "transient error (" + st.LastError + "); retrying at " + at.UTC().Format(time.RFC3339)}
		}
	}
	if st.URL == "" {
		if len(o.Spec.DNSNames)+len(o.Spec.IPAddresses) == 0 || len(o.Spec.CSR) == 0 {
			return fail(o, now, ReasonInvalidSpec, "the order names no identifier or has no CSR")
		}
		return Result{Actions: []Action{CreateOrder{DNSNames: o.Spec.DNSNames, IPAddresses: o.Spec.IPAddresses, Profile: o.Spec.Profile,
			NotBefore: o.Spec.NotBefore, NotAfter: o.Spec.NotAfter, Replaces: o.Spec.Replaces, SpecHash: SpecHash(&o.Spec)}},
			Reason: ReasonCreating, Message: "creating the ACME order (RFC 8555 §7.4)"}
	}
	switch st.State {
	case StateReady:
		return Result{Actions: append(deleteAll(owned, "the order is ready"), Finalize{URL: st.FinalizeURL, CSR: o.Spec.CSR}),
			Reason: ReasonFinalizing, Message: "all authorizations are valid: finalizing with the CSR (RFC 8555 §7.4)"}
	case StateValid:
		if st.CertificateURL == "" {
			return Result{Actions: []Action{Sync{URL: st.URL}}, Reason: ReasonSyncing, Message: "the order is valid; reading its certificate URL"}
		}
		return Result{Actions: []Action{FetchCertificate{URL: st.CertificateURL, PreferredChain: o.Spec.PreferredChain}},
			Reason: ReasonFetching, Message: "downloading the certificate (RFC 8555 §7.4.2)"}
	case StateProcessing:
		return poll(o, now, cfg, "the server is issuing the certificate")
	}

	// pending, or a state we do not know: work on the authorizations.
	var fetch []Action
	for _, a := range st.Authorizations {
		if a.Identifier == "" {
			fetch = append(fetch, GetAuthorization{URL: a.URL})
		}
	}
	if len(fetch) > 0 {
		return Result{Actions: fetch, Reason: ReasonAuthorizing, Message: fmt.Sprintf("fetching %d authorization(s)", len(fetch))}
	}
	want, problem := wantedChallenges(o)
	if problem != "" {
		return fail(o, now, ReasonNoSolver, problem)
	}
	var acts []Action
	have := map[string]*challenge.Challenge{}
	for _, c := range owned {
		if c == nil {
			continue
		}
		w, ok := want[c.Name]
		if !ok || w.Spec.URL != c.Spec.URL || w.Spec.Type != c.Spec.Type {
			acts = append(acts, DeleteChallenge{Name: c.Name, Reason: "not needed by the order's authorizations"})
			continue
		}
		have[c.Name] = c
	}
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	allFinal, anyInvalid := true, ""
	for _, n := range names {
		c, ok := have[n]
		if !ok {
			acts = append(acts, CreateChallenge{Challenge: want[n]})
			allFinal = false
			continue
		}
		if !c.Status.State.Final() {
			allFinal = false
		} else if c.Status.State != challenge.StateValid && anyInvalid == "" {
			anyInvalid = fmt.Sprintf("the challenge for %s is %s: %s", c.Spec.DNSName, c.Status.State, c.Status.Reason)
		}
	}
	if len(acts) > 0 {
		return Result{Actions: acts, Reason: ReasonChallenges, Message: "creating and deleting challenges for the authorizations"}
	}
	if allFinal && anyInvalid == "" && st.LastError == "" && len(st.Authorizations) > 0 {
		// Every challenge is valid. RFC 8555 §7.4: the client finalizes
		// once it believes the server's requirements are met; reading the
		// order first to see "ready" would cost a request per issuance.
		// Should the server not be ready yet (orderNotReady), the error is
		// recorded and the order is read before the next attempt.
		return Result{Actions: append(deleteAll(owned, "every challenge is valid"), Finalize{URL: st.FinalizeURL, CSR: o.Spec.CSR}),
			Reason: ReasonFinalizing, Message: "every challenge is valid: finalizing with the CSR (RFC 8555 §7.4)"}
	}
	if allFinal {
		// Every challenge is done but the order still says pending: the
		// server moves the order on its own; read it again shortly.
		msg := "every challenge is final; reading the order's new state"
		if anyInvalid != "" {
			msg = anyInvalid + "; reading the order's state"
		}
		return poll(o, now, cfg, msg)
	}
	return Result{RequeueAt: now.Add(time.Minute), Reason: ReasonWaiting, Message: "waiting for the challenges to finish"}
}

func poll(o *Order, now time.Time, cfg Config, msg string) Result {
	if s := o.Status.SyncedAt; s != nil {
		next := s.Add(cfg.poll())
		if ra := o.Status.RetryAfter; ra != nil && o.Status.LastError == "" && ra.After(next) {
			next = *ra // the server asked to be polled no sooner
		}
		if now.Before(next) {
			return Result{RequeueAt: next, Reason: ReasonSyncing, Message: msg + "; looking again at " + next.UTC().Format(time.RFC3339)}
		}
	}
	return Result{Actions: []Action{Sync{URL: o.Status.URL}}, Reason: ReasonSyncing, Message: msg}
}

// wantedChallenges builds the Challenge for every authorization that is not
// already valid.
func wantedChallenges(o *Order) (map[string]challenge.Challenge, string) {
	want := map[string]challenge.Challenge{}
	for i, a := range o.Status.Authorizations {
		if a.InitialState == StateValid {
			continue // authorization reuse
		}
		solver, ok := ChooseSolver(o.Spec.Solvers, a.Identifier, a.Wildcard, o.Labels)
		if !ok {
			need := "any solver"
			if a.Wildcard {
				need = "a DNS-01 solver (wildcard names need DNS-01)"
			}
			return nil, fmt.Sprintf("no solver applies to %s: configure %s whose selector matches it", display(a), need)
		}
		typ := challenge.TypeHTTP01
		if solver.DNS01 != nil {
			typ = challenge.TypeDNS01
		}
		var offered *OfferedChallenge
		for j := range a.Challenges {
			if a.Challenges[j].Type == typ {
				offered = &a.Challenges[j]
				break
			}
		}
		if offered == nil {
			return nil, fmt.Sprintf("the server offers no %s challenge for %s; choose another solver type", typ, display(a))
		}
		name := ChallengeName(o.Name, i)
		ch := challenge.Challenge{
			Name: name, Namespace: o.Namespace, CreationTimestamp: o.CreationTimestamp,
			Spec: challenge.Spec{
				AuthorizationURL: a.URL, URL: offered.URL, Type: typ, DNSName: a.Identifier, Token: offered.Token,
				Key: o.Status.KeyAuthorizations[offered.Token], Wildcard: a.Wildcard, Solver: solver,
				Issuer: o.Spec.Issuer, Account: o.Spec.Account,
			},
		}
		if a.FetchedAt != nil {
			// The authorization was just read: the challenge starts from
			// that read instead of reading it again.
			t := *a.FetchedAt
			ch.Status.State, ch.Status.SyncedAt = challenge.State(a.InitialState), &t
		}
		want[name] = ch
	}
	return want, ""
}

func display(a Authorization) string {
	if a.Wildcard {
		return "*." + strings.TrimPrefix(a.Identifier, "*.")
	}
	return a.Identifier
}

func deleteAll(owned []*challenge.Challenge, why string) []Action {
	var acts []Action
	for _, c := range owned {
		if c != nil {
			acts = append(acts, DeleteChallenge{Name: c.Name, Reason: why})
		}
	}
	return acts
}

// fail records a final failure with a reason a user can act on.
func fail(o *Order, now time.Time, reason, msg string) Result {
	st := o.Status
	st.State, st.Reason = StateErrored, msg
	t := now
	st.FailureTime = &t
	return Result{Actions: []Action{UpdateStatus{Status: st}}, Reason: reason, Message: msg}
}

// failed handles an order in a final failure state: record the failure
// time, delete its challenges, and delete the order after the TTL.
func failed(o *Order, owned []*challenge.Challenge, now time.Time, cfg Config) Result {
	st := o.Status
	msg := "the order is " + string(st.State)
	if st.Reason != "" {
		msg += ": " + st.Reason
	}
	acts := deleteAll(owned, "the order failed")
	if st.FailureTime == nil {
		t := now
		st.FailureTime = &t
		return Result{Actions: append(acts, UpdateStatus{Status: st}), RequeueAt: now.Add(cfg.ttl()), Reason: ReasonFailed, Message: msg}
	}
	removeAt := st.FailureTime.Add(cfg.ttl())
	if now.Before(removeAt) {
		return Result{Actions: acts, RequeueAt: removeAt, Reason: ReasonFailed, Message: msg + "; the order is removed at " + removeAt.UTC().Format(time.RFC3339)}
	}
	return Result{Actions: append(acts, DeleteOrder{Reason: "failed more than " + cfg.ttl().String() + " ago"}), Reason: ReasonFailed, Message: msg}
}
