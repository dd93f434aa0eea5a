package order

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/certlife/certlife/backoff/retry"
	"github.com/certlife/certlife/challenge"
)

// Config tunes the order machine. The zero value is the default of each
// field.
type Config struct {
	// Schedule is when the order is read while the server works on it,
	// how long it waits after a failed call, and after how many failed
	// attempts without progress (Status.FailedAttempts) it fails, so that
	// the certificate's own backoff takes over: reads 200ms after a change
	// doubling to 5s, retries 5s after a failure doubling to 5 minutes,
	// and 10 attempts (see package retry).
	retry.Schedule
	// FailedOrderTTL is how long a failed order is kept before it is
	// deleted, for people to read. Zero means 30 minutes.
	FailedOrderTTL time.Duration
	// MaxRetryAfter bounds how long an order waits on the server's
	// Retry-After, its own or one of its challenges': an order the server
	// asks to wait longer (seconds or an HTTP date, however far) fails at
	// once with that Retry-After in its status, so that the request is
	// answered failed with it and the certificate's backoff, which clamps
	// its retries to the certificate's lifetime, takes over. Zero means 1
	// hour.
	MaxRetryAfter time.Duration
}

func (c Config) maxRetryAfter() time.Duration {
	if c.MaxRetryAfter > 0 {
		return c.MaxRetryAfter
	}
	return time.Hour
}

// assumedLifetime is how long an order whose server gave no expiry is
// taken to live, from its creation: Let's Encrypt's authorization
// lifetime.
const assumedLifetime = 7 * 24 * time.Hour

func (c Config) ttl() time.Duration {
	if c.FailedOrderTTL > 0 {
		return c.FailedOrderTTL
	}
	return 30 * time.Minute
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// Reasons of a Result. Each constant is named after its value: ReasonX is
// "X".
const (
	ReasonCreating               = "Creating"
	ReasonFetchingAuthorizations = "FetchingAuthorizations"
	ReasonManagingChallenges     = "ManagingChallenges"
	ReasonWaitingForChallenges   = "WaitingForChallenges"
	ReasonFinalizing             = "Finalizing"
	ReasonFetchingCertificate    = "FetchingCertificate"
	ReasonSyncing                = "Syncing"
	ReasonDone                   = "Done"
	ReasonFailed                 = "Failed"
	ReasonRetryingAfterError     = "RetryingAfterError"
	ReasonSpecChanged            = "SpecChanged"
	ReasonInvalidSpec            = "InvalidSpec"
	ReasonNoSolver               = "NoSolver"
	ReasonNoOrder                = "NoOrder"
	// ReasonWaitingForServer: the server's answer leaves the machine nothing
	// to do (an order valid without a certificate URL, or still pending
	// after every challenge finished); it reads the order again after a
	// growing delay.
	ReasonWaitingForServer = "WaitingForServer"
	// ReasonRetriesExhausted: the order failed after Config.MaxAttempts
	// failed attempts without progress.
	ReasonRetriesExhausted = "RetriesExhausted"
	// ReasonOrderExpired: the order's next attempt would come after its
	// expiry, or the expiry has passed, before it was issued.
	ReasonOrderExpired = "OrderExpired"
	// ReasonChallengeFailed: one of the order's challenges failed on our
	// side (errored), so the order cannot be authorized.
	ReasonChallengeFailed = "ChallengeFailed"
	// ReasonRetryAfterTooLong: the server asked the order, or one of its
	// challenges, to wait longer than Config.MaxRetryAfter; the order
	// failed with that Retry-After, for the certificate's backoff.
	ReasonRetryAfterTooLong = "RetryAfterTooLong"
	// ReasonBadCertificate: the server issued a certificate that cannot be
	// used (see CheckCertificate): the order is made again once, and fails
	// with this reason when the second is bad too.
	ReasonBadCertificate = "BadCertificate"
)

// Result lists the actions in order, when to look again, and why. A zero
// RequeueAt means nothing is due by time alone: the decision changes only
// when the snapshot does (a challenge finishes, the host writes a status).
type Result struct {
	Actions   []Action
	RequeueAt time.Time
	Reason    string
	Message   string
}

// SpecHashVersion is the version of the encoding SpecHash hashes; it
// prefixes every hash ("v1:…").
const SpecHashVersion = "v1"

// SpecHash hashes the spec, so that a later change can be told apart: the
// SHA-256 of an explicit encoding of the spec — each field by name, length
// prefixed, in a fixed order — behind the version, "v1:" and 32 hex
// digits. A field added to Spec or to a type it holds later is hashed only
// when it is set, after the fields before it, so a spec that does not set
// it keeps the hash it had; a change to the encoding of the fields hashed
// now takes a new version. Decide compares a stored hash only with one of
// the same version: an order created by an older version is never failed
// for a spec that did not change.
func SpecHash(s *Spec) string {
	var e specEncoder
	e.h = sha256.New()
	e.bytes("csr", s.CSR)
	e.str("issuer.name", s.Issuer.Name)
	e.str("issuer.kind", s.Issuer.Kind)
	e.str("issuer.group", s.Issuer.Group)
	e.str("account", s.Account)
	e.str("commonName", s.CommonName)
	e.strs("dnsNames", s.DNSNames)
	e.strs("ipAddresses", s.IPAddresses)
	e.str("profile", s.Profile)
	e.time("notBefore", s.NotBefore)
	e.time("notAfter", s.NotAfter)
	e.str("replaces", s.Replaces)
	e.str("preferredChain", s.PreferredChain)
	e.count("solvers", len(s.Solvers))
	for _, sv := range s.Solvers {
		e.flag("selector", sv.Selector != nil)
		if sel := sv.Selector; sel != nil {
			e.strs("selector.dnsNames", sel.DNSNames)
			e.strs("selector.dnsZones", sel.DNSZones)
			e.labels("selector.matchLabels", sel.MatchLabels)
		}
		e.flag("http01", sv.Solver.HTTP01 != nil)
		if h := sv.Solver.HTTP01; h != nil {
			e.labels("http01.options", h.Options)
		}
		e.flag("dns01", sv.Solver.DNS01 != nil)
		if d := sv.Solver.DNS01; d != nil {
			e.str("dns01.provider", d.Provider)
			e.labels("dns01.config", d.Config)
		}
		if t := sv.Solver.TLSALPN01; t != nil {
			// Added after v1's first fields: hashed only when set.
			e.flag("tlsalpn01", true)
			e.labels("tlsalpn01.options", t.Options)
		}
	}
	return SpecHashVersion + ":" + hex.EncodeToString(e.h.Sum(nil)[:16])
}

// specHashVersion is the version of a stored hash: its prefix before ":",
// or "v0" for the unversioned hashes of certlife before versions.
func specHashVersion(h string) string {
	if v, _, ok := strings.Cut(h, ":"); ok {
		return v
	}
	return "v0"
}

// specEncoder writes fields as name, then value, each prefixed by its
// length, so no two specs write the same bytes.
type specEncoder struct {
	h   hash.Hash
	buf [8]byte
}

func (e *specEncoder) raw(b []byte) {
	binary.BigEndian.PutUint64(e.buf[:], uint64(len(b)))
	e.h.Write(e.buf[:])
	e.h.Write(b)
}

func (e *specEncoder) bytes(name string, v []byte) { e.raw([]byte(name)); e.raw(v) }
func (e *specEncoder) str(name, v string)          { e.bytes(name, []byte(v)) }
func (e *specEncoder) count(name string, n int)    { e.str(name, strconv.Itoa(n)) }

func (e *specEncoder) flag(name string, v bool) {
	e.str(name, strconv.FormatBool(v))
}

func (e *specEncoder) strs(name string, v []string) {
	e.count(name, len(v))
	for _, s := range v {
		e.raw([]byte(s))
	}
}

func (e *specEncoder) time(name string, t *time.Time) {
	if t == nil {
		e.str(name, "")
		return
	}
	e.str(name, t.UTC().Format(time.RFC3339Nano))
}

// labels writes a map in the order of its keys.
func (e *specEncoder) labels(name string, m map[string]string) {
	e.count(name, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		e.raw([]byte(k))
		e.raw([]byte(m[k]))
	}
}

// ChallengeName is the deterministic name of the Challenge for the i-th
// authorization of an order.
func ChallengeName(order string, i int) string { return fmt.Sprintf("%s-%d", order, i) }

// Decide is the order machine. From the order and the Challenge
// resources it owns it returns the next ACME calls and resource changes:
// create the order for its identifiers (the common name is one of them:
// an IP address as an IP identifier, anything else as a DNS name); fetch
// authorizations; create one Challenge per authorization that is not
// already valid (authorization reuse), with the most specific solver of a
// challenge type the authorization offers; delete Challenges no longer
// needed; finalize when ready (RFC 8555 §7.4); follow a processing or
// valid order to its certificate (§7.4.2); delete its Challenges only once
// the certificate is fetched or the order failed, so a recovered order
// never re-creates, re-presents or re-accepts them; on a final failure,
// say why in words a user can act on and delete the order after
// FailedOrderTTL. A spec that changed after creation is an error, not
// something to follow (see SpecHash). A fetched certificate is checked
// against the order (CheckCertificate) before the order is done: a bad one
// is ordered again once, then fails the order with what was wrong.
//
// Retries arrive: after a transient failure the next attempt is at
// Config.RetryAt, derived from the status alone, so deciding again at the
// returned RequeueAt carries it out. After a failed call the order is read
// before it is finalized again. An order that keeps failing fails once
// MaxAttempts attempts failed without progress, or when its next attempt
// would come after its expiry. A server answer that leaves nothing to do
// (valid without a certificate URL, pending after every challenge
// finished) is recorded like a failure, and the order is read again after
// the same growing delay — never at the same instant.
//
// Nothing waits without end: an order the server asks — itself or
// through a challenge — to wait longer than MaxRetryAfter fails with that
// Retry-After, for the certificate's backoff; an order past its expiry
// (see Expiry) before it was
// finalized fails; while it waits for its challenges it is looked at
// again at its expiry at the latest. A refusal that says the order may
// have moved on (Status.ReadFirst) is followed by a read at once.
func Decide(o *Order, owned []*challenge.Challenge, now time.Time, cfg Config) Result {
	if o == nil {
		return Result{Reason: ReasonNoOrder, Message: "no order"}
	}
	st := o.Status
	if st.State.Failed() {
		return failed(o, owned, now, cfg)
	}
	if st.SpecHash != "" && specHashVersion(st.SpecHash) == SpecHashVersion && st.SpecHash != SpecHash(&o.Spec) {
		return fail(o, now, ReasonSpecChanged, "the order's spec changed after it was created; an order is immutable, so a new one must be made")
	}
	if st.State == StateValid && len(st.Certificate) > 0 {
		if bad := CheckCertificate(&o.Spec, st.Certificate); bad != "" {
			return badCertificate(o, owned, now, bad)
		}
		return Result{Actions: deleteAll(owned, "the order has its certificate"), Reason: ReasonDone, Message: "the certificate is issued"}
	}
	if res, stop := retryAfterTooLong(o, owned, now, cfg); stop {
		return res
	}
	if st.URL != "" && st.State != StateValid && st.State != StateProcessing {
		if exp, ok := Expiry(o); ok && !now.Before(exp) {
			msg := "the order expired at " + stamp(exp) + " before it was finalized"
			if st.LastError != "" {
				msg += "; the last error: " + st.LastError
			}
			return fail(o, now, ReasonOrderExpired, msg)
		}
	}
	if res, stop := retryGate(o, now, cfg); stop {
		return res
	}
	if st.URL == "" {
		dnsNames, ips, problem := Identifiers(&o.Spec)
		if problem == "" && len(o.Spec.CSR) == 0 {
			problem = "spec.csr: the order has no CSR"
		}
		if problem != "" {
			return fail(o, now, ReasonInvalidSpec, problem)
		}
		replaces, msg := o.Spec.Replaces, "creating the ACME order (RFC 8555 §7.4)"
		if replaces != "" && st.ReplacesRefused != "" {
			replaces = ""
			msg = "creating the ACME order without replaces, which the server refused (" + st.ReplacesRefused + ") (RFC 8555 §7.4, RFC 9773 §5)"
		}
		return Result{Actions: []Action{CreateOrder{DNSNames: dnsNames, IPAddresses: ips, Profile: o.Spec.Profile,
			NotBefore: o.Spec.NotBefore, NotAfter: o.Spec.NotAfter, Replaces: replaces, SpecHash: SpecHash(&o.Spec)}},
			Reason: ReasonCreating, Message: msg}
	}
	readFirst := "the last call failed (" + st.LastError + "); reading the order before anything else (RFC 8555 §7.1.3)"
	switch st.State {
	case StateReady:
		if st.LastError != "" {
			return sync(o, ReasonSyncing, readFirst)
		}
		return Result{Actions: []Action{Finalize{URL: st.FinalizeURL, CSR: o.Spec.CSR}},
			Reason: ReasonFinalizing, Message: "all authorizations are valid: finalizing with the CSR (RFC 8555 §7.4)"}
	case StateValid:
		switch {
		case st.CertificateURL != "":
			return Result{Actions: []Action{FetchCertificate{URL: st.CertificateURL, PreferredChain: o.Spec.PreferredChain}},
				Reason: ReasonFetchingCertificate, Message: "downloading the certificate (RFC 8555 §7.4.2)"}
		case st.LastError != "":
			return sync(o, ReasonSyncing, readFirst)
		case st.SyncedAt == nil:
			return sync(o, ReasonSyncing, "the order is valid; reading its certificate URL")
		}
		return stuck(o, now, cfg, "the server says the order is valid but gives no certificate URL (RFC 8555 §7.1.3)")
	case StateProcessing:
		if st.LastError != "" {
			return sync(o, ReasonSyncing, readFirst)
		}
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
		return Result{Actions: fetch, Reason: ReasonFetchingAuthorizations, Message: fmt.Sprintf("fetching %d authorization(s)", len(fetch))}
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
		switch {
		case c.Status.State == challenge.StateErrored:
			// Our side gave up on it; the authorization stays pending.
			return fail(o, now, ReasonChallengeFailed, fmt.Sprintf("the challenge for %s failed: %s", display(authzOf(o, c)), c.Status.Reason))
		case !c.Status.State.Final():
			allFinal = false
		case c.Status.State != challenge.StateValid && anyInvalid == "":
			anyInvalid = fmt.Sprintf("the challenge for %s is %s: %s", c.Spec.DNSName, c.Status.State, c.Status.Reason)
		}
	}
	if len(acts) > 0 {
		return Result{Actions: acts, Reason: ReasonManagingChallenges, Message: "creating and deleting challenges for the authorizations"}
	}
	if !allFinal {
		res := Result{Reason: ReasonWaitingForChallenges, Message: "waiting for the challenges to finish; the order is looked at again when one does"}
		if exp, ok := Expiry(o); ok {
			res.RequeueAt = exp
			res.Message += ", or at its expiry at " + stamp(exp)
		}
		return res
	}
	switch {
	case st.LastError != "":
		return sync(o, ReasonSyncing, readFirst)
	case readSinceChallengesFinished(o, have):
		// The server was asked after every challenge finished and still
		// says pending.
		why := "every challenge is final but the server still says the order is " + string(st.State)
		if anyInvalid != "" {
			why = anyInvalid + "; the server still says the order is " + string(st.State)
		}
		return stuck(o, now, cfg, why)
	case anyInvalid != "":
		return sync(o, ReasonSyncing, anyInvalid+"; reading the order's state")
	case len(st.Authorizations) == 0:
		return sync(o, ReasonSyncing, "the order lists no authorization; reading it again")
	}
	// Every challenge is valid. RFC 8555 §7.4: the client finalizes once
	// it believes the server's requirements are met; reading the order
	// first to see "ready" would cost a request per issuance. Should the
	// server not be ready yet (orderNotReady), the error is recorded and
	// the order is read before the next attempt.
	return Result{Actions: []Action{Finalize{URL: st.FinalizeURL, CSR: o.Spec.CSR}},
		Reason: ReasonFinalizing, Message: "every challenge is valid: finalizing with the CSR (RFC 8555 §7.4)"}
}

// retryGate holds an order whose last call failed transiently until its
// next attempt is due (Config.Gate); it fails the order when the attempts
// are used up or the order would expire first. stop is false when the
// decision goes on (no error, or the attempt is due).
func retryGate(o *Order, now time.Time, cfg Config) (Result, bool) {
	st := o.Status
	gate, at, why := cfg.Gate(&st.Attempts, now)
	switch gate {
	case retry.Proceed:
		return Result{}, false
	case retry.GiveUp:
		return fail(o, now, ReasonRetriesExhausted, why), true
	}
	if st.ReadFirst && st.URL != "" {
		// The refusal says the order may have moved on: reading it
		// waits for nothing.
		return sync(o, ReasonSyncing, "the server refused the last call ("+st.LastError+"), which says the order may have moved on: reading it at once (RFC 8555 §7.1.3)"), true
	}
	if gate == retry.Record {
		next := st
		next.Attempts = st.Attempts.Timed(now)
		return Result{Actions: []Action{UpdateStatus{Status: next}}, RequeueAt: at, Reason: ReasonRetryingAfterError, Message: why}, true
	}
	if exp, ok := Expiry(o); ok && st.State != StateValid && (!at.Before(exp) || !now.Before(exp)) {
		return fail(o, now, ReasonOrderExpired, fmt.Sprintf("the order expires at %s, before its next attempt at %s; the last error: %s",
			stamp(exp), stamp(at), st.LastError)), true
	}
	if gate == retry.Wait {
		return Result{RequeueAt: at, Reason: ReasonRetryingAfterError, Message: why}, true
	}
	return Result{}, false
}

// stuck records a server answer that leaves the machine nothing to do as a
// transient failure, so the order is read again after a growing delay and
// fails after MaxAttempts such answers.
func stuck(o *Order, now time.Time, cfg Config, why string) Result {
	next := o.Status
	next.NoteFailure(why, true, nil, now)
	if next.FailedAttempts >= cfg.WithDefaults().MaxAttempts {
		return fail(o, now, ReasonRetriesExhausted, fmt.Sprintf("gave up after %d attempts without progress: %s", next.FailedAttempts, why))
	}
	at, _ := cfg.RetryAt(&next.Attempts)
	return Result{Actions: []Action{UpdateStatus{Status: next}}, RequeueAt: at, Reason: ReasonWaitingForServer,
		Message: why + "; reading the order again at " + stamp(at)}
}

// readSinceChallengesFinished reports whether the order was read after
// every challenge and authorization read that the decision stands on.
func readSinceChallengesFinished(o *Order, have map[string]*challenge.Challenge) bool {
	s := o.Status.SyncedAt
	if s == nil {
		return false
	}
	for _, c := range have {
		if c.Status.SyncedAt == nil || !s.After(*c.Status.SyncedAt) {
			return false
		}
	}
	for _, a := range o.Status.Authorizations {
		if a.FetchedAt != nil && !s.After(*a.FetchedAt) {
			return false
		}
	}
	return true
}

func sync(o *Order, reason, msg string) Result {
	return Result{Actions: []Action{Sync{URL: o.Status.URL}}, Reason: reason, Message: msg}
}

// poll reads an order the server is working on when Config.PollAt says.
func poll(o *Order, now time.Time, cfg Config, msg string) Result {
	if next, ok := cfg.PollAt(&o.Status.Attempts, o.Status.SyncedAt, o.Status.ChangedAt); ok && now.Before(next) {
		return Result{RequeueAt: next, Reason: ReasonSyncing, Message: msg + "; looking again at " + stampMilli(next)}
	}
	return sync(o, ReasonSyncing, msg)
}

// stampMilli is a time for messages, to the millisecond: polls come less
// than a second apart.
func stampMilli(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// Identifiers returns the identifiers an order asks for: its DNS names and
// IP addresses as the spec lists them, and the common name as one more
// when neither list holds it — an IP address as an IP identifier (RFC
// 8738), never a DNS name; anything else as a DNS name. Names compare
// without case, addresses in their canonical form. problem names the
// field and value of an address that does not parse, or says that there
// is no identifier at all.
func Identifiers(s *Spec) (dnsNames, ips []string, problem string) {
	dnsNames = append([]string(nil), s.DNSNames...)
	ips = append([]string(nil), s.IPAddresses...)
	for i, ip := range s.IPAddresses {
		if _, err := netip.ParseAddr(ip); err != nil {
			return nil, nil, fmt.Sprintf("spec.ipAddresses[%d]: %q is not an IP address", i, ip)
		}
	}
	if cn := strings.TrimSpace(s.CommonName); cn != "" {
		if addr, err := netip.ParseAddr(cn); err == nil {
			have := false
			for _, ip := range s.IPAddresses {
				a, _ := netip.ParseAddr(ip)
				have = have || a.Unmap() == addr.Unmap()
			}
			if !have {
				ips = append(ips, addr.String())
			}
		} else {
			have := false
			for _, n := range s.DNSNames {
				have = have || strings.EqualFold(strings.TrimSuffix(n, "."), strings.TrimSuffix(cn, "."))
			}
			if !have {
				dnsNames = append(dnsNames, cn)
			}
		}
	}
	if len(dnsNames)+len(ips) == 0 {
		return nil, nil, "the order names no identifier: set spec.commonName, spec.dnsNames or spec.ipAddresses"
	}
	return dnsNames, ips, ""
}

// wantedChallenges builds the Challenge for every authorization that is not
// already valid.
func wantedChallenges(o *Order) (map[string]challenge.Challenge, string) {
	want := map[string]challenge.Challenge{}
	for i, a := range o.Status.Authorizations {
		if a.InitialState == StateValid {
			continue // authorization reuse
		}
		offered := make([]challenge.Type, 0, len(a.Challenges))
		for _, c := range a.Challenges {
			offered = append(offered, c.Type)
		}
		solver, ok := ChooseSolver(o.Spec.Solvers, a.Identifier, a.Wildcard, offered, o.Labels)
		if !ok {
			need := "a solver"
			if a.Wildcard {
				need = "a DNS-01 solver (wildcard names need DNS-01)"
			}
			return nil, fmt.Sprintf("no solver applies to %s among the challenge types the server offers for it (%s): configure %s whose selector matches it",
				display(a), typeList(offered), need)
		}
		typ, _ := solverType(solver)
		var offer *OfferedChallenge
		for j := range a.Challenges {
			if a.Challenges[j].Type == typ {
				offer = &a.Challenges[j]
				break
			}
		}
		name := ChallengeName(o.Name, i)
		ch := challenge.Challenge{
			Name: name, Namespace: o.Namespace, CreationTimestamp: o.CreationTimestamp,
			Spec: challenge.Spec{
				AuthorizationURL: a.URL, URL: offer.URL, Type: typ, DNSName: a.Identifier, Token: offer.Token,
				Key: o.Status.KeyAuthorizations[offer.Token], Wildcard: a.Wildcard, Solver: solver,
				Issuer: o.Spec.Issuer, Account: o.Spec.Account, Expires: expiresOf(o),
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

// authzOf is the authorization a challenge was made for (by URL), for
// messages.
func authzOf(o *Order, c *challenge.Challenge) Authorization {
	for _, a := range o.Status.Authorizations {
		if a.URL == c.Spec.AuthorizationURL {
			return a
		}
	}
	return Authorization{Identifier: c.Spec.DNSName, Wildcard: c.Spec.Wildcard}
}

func typeList(ts []challenge.Type) string {
	if len(ts) == 0 {
		return "none"
	}
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = string(t)
	}
	return strings.Join(out, ", ")
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

// fail records a final failure with a reason a user can act on. The
// server's Retry-After stays in the status, for the certificate's backoff.
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
		return Result{Actions: acts, RequeueAt: removeAt, Reason: ReasonFailed, Message: msg + "; the order is removed at " + stamp(removeAt)}
	}
	return Result{Actions: append(acts, DeleteOrder{Reason: "failed more than " + cfg.ttl().String() + " ago"}), Reason: ReasonFailed, Message: msg}
}

// Expiry is when the order expires, as the machine reckons it: when the
// server said (Status.Expires) — unless that is before the order was
// created here, which only a clock that disagrees with the server's can
// make, and which is then not believed — else 7 days (Let's Encrypt's
// authorization lifetime) after its creation. ok is false when neither is
// known. The machine fails an order past its expiry before it was
// finalized, and gives it to the order's challenges (challenge.Spec.Expires).
func Expiry(o *Order) (time.Time, bool) {
	if o == nil {
		return time.Time{}, false
	}
	created := o.CreationTimestamp
	switch {
	case o.Status.Expires != nil && (created.IsZero() || o.Status.Expires.After(created)):
		return *o.Status.Expires, true
	case !created.IsZero():
		return created.Add(assumedLifetime), true
	}
	return time.Time{}, false
}

func expiresOf(o *Order) *time.Time {
	if t, ok := Expiry(o); ok {
		return &t
	}
	return nil
}

// retryAfterTooLong fails an order that the server asks — itself, or
// through one of its challenges that is not final — to wait longer than
// Config.MaxRetryAfter. The latest such Retry-After stays in the status,
// for the certificate's backoff.
func retryAfterTooLong(o *Order, owned []*challenge.Challenge, now time.Time, cfg Config) (Result, bool) {
	limit := now.Add(cfg.maxRetryAfter())
	var at time.Time
	from := ""
	if ra := o.Status.RetryAfter; ra != nil && ra.After(limit) {
		at, from = *ra, "the order"
	}
	for _, c := range owned {
		if c == nil || c.Status.State.Final() || c.Status.RetryAfter == nil {
			continue
		}
		if ra := *c.Status.RetryAfter; ra.After(limit) && ra.After(at) {
			at, from = ra, "the challenge for "+c.Spec.DNSName
		}
	}
	if at.IsZero() {
		return Result{}, false
	}
	msg := fmt.Sprintf("the server asks %s to wait until %s (Retry-After), longer than the %v an order waits; "+
		"the request fails with that Retry-After and the certificate's backoff tries again", from, stamp(at), cfg.maxRetryAfter())
	if o.Status.LastError != "" {
		msg += "; the last error: " + o.Status.LastError
	}
	for _, c := range owned {
		if c != nil && c.Status.LastError != "" && c.Status.RetryAfter != nil && c.Status.RetryAfter.Equal(at) {
			msg += "; the challenge's last error: " + c.Status.LastError
			break
		}
	}
	res := fail(o, now, ReasonRetryAfterTooLong, msg)
	u := res.Actions[0].(UpdateStatus)
	u.Status.RetryAfter = &at
	res.Actions[0] = u
	return res, true
}

// badCertificate handles a certificate that cannot be used: the first
// time, the order is made again (its challenges deleted, its status
// started afresh with why); the second time, it fails.
func badCertificate(o *Order, owned []*challenge.Challenge, now time.Time, bad string) Result {
	st := o.Status
	if st.BadCertificate != "" {
		return fail(o, now, ReasonBadCertificate, "the server issued a certificate that cannot be used, for the second order in a row: "+bad+
			" (the first: "+st.BadCertificate+")")
	}
	next := Status{BadCertificate: bad, ReplacesRefused: st.ReplacesRefused}
	return Result{Actions: append(deleteAll(owned, "the order's certificate cannot be used"), UpdateStatus{Status: next}),
		Reason: ReasonBadCertificate, Message: "the server issued a certificate that cannot be used: " + bad + "; ordering it again, once"}
}
