package challenge

import (
	"time"

	"github.com/certlife/certlife/backoff/retry"
)

// Type is an ACME challenge type (RFC 8555 §8).
type Type string

// Challenge types certlife solves.
const (
	TypeHTTP01 Type = "http-01"
	TypeDNS01  Type = "dns-01"
	// TypeTLSALPN01 is answered in the TLS handshake on port 443: a
	// certificate for the identifier that carries the key authorization's
	// digest, sent to a client that offers the ALPN protocol "acme-tls/1"
	// (RFC 8737).
	TypeTLSALPN01 Type = "tls-alpn-01"
)

// State is an ACME challenge or authorization status (RFC 8555 §7.1.6), plus
// "errored" for a failure on our side that will not heal by waiting.
type State string

// States.
const (
	StatePending     State = "pending"
	StateProcessing  State = "processing"
	StateValid       State = "valid"
	StateInvalid     State = "invalid"
	StateExpired     State = "expired"
	StateDeactivated State = "deactivated"
	StateRevoked     State = "revoked"
	StateErrored     State = "errored"
)

// Final reports whether no further change can come from the server: valid,
// invalid, expired, deactivated, revoked, errored. The empty state and any
// unknown one are not final: the machine syncs again rather than stopping.
func (s State) Final() bool {
	switch s {
	case StateValid, StateInvalid, StateExpired, StateDeactivated, StateRevoked, StateErrored:
		return true
	}
	return false
}

// Issuer names the issuer (and so the ACME account) a challenge belongs to.
type Issuer struct {
	Name  string `json:"name"`
	Kind  string `json:"kind,omitempty"`
	Group string `json:"group,omitempty"`
}

// HTTP01Solver configures an HTTP-01 solver (the configuration only:
// acmeclient.HTTP01Handler is what serves the tokens); Options are the
// host's.
type HTTP01Solver struct {
	Options map[string]string `json:"options,omitempty"`
}

// DNS01Solver configures a DNS-01 solver: a provider name and its opaque
// configuration, interpreted by the host.
type DNS01Solver struct {
	Provider string            `json:"provider"`
	Config   map[string]string `json:"config,omitempty"`
}

// TLSALPN01Solver configures a TLS-ALPN-01 solver (the configuration
// only: acmeclient.TLSALPN01Handler is what answers the handshakes);
// Options are the host's.
type TLSALPN01Solver struct {
	Options map[string]string `json:"options,omitempty"`
}

// Solver is the solver chosen for a challenge; exactly one of HTTP01,
// DNS01 and TLSALPN01 is set.
type Solver struct {
	HTTP01    *HTTP01Solver    `json:"http01,omitempty"`
	DNS01     *DNS01Solver     `json:"dns01,omitempty"`
	TLSALPN01 *TLSALPN01Solver `json:"tlsalpn01,omitempty"`
}

// Spec is immutable once the challenge exists.
type Spec struct {
	AuthorizationURL string `json:"authorizationURL"`
	URL              string `json:"url"`
	Type             Type   `json:"type"`
	DNSName          string `json:"dnsName"`
	Token            string `json:"token"`
	// Key is the key authorization (RFC 8555 §8.1) the solver presents.
	Key      string `json:"key"`
	Wildcard bool   `json:"wildcard,omitempty"`
	Solver   Solver `json:"solver"`
	Issuer   Issuer `json:"issuerRef"`
	// Account identifies the ACME account (for example its URL); the
	// scheduler budgets pending authorizations per account.
	Account string `json:"account,omitempty"`
	// Expires is when the challenge's order (or authorization) expires,
	// as the server said; nil when unknown. Nothing about the challenge
	// can succeed after it.
	Expires *time.Time `json:"expires,omitempty"`
}

// Status is what the host writes back after carrying out actions.
type Status struct {
	// Processing is set by the scheduler when the challenge may run, and
	// cleared by the machine when it is done.
	Processing bool `json:"processing"`
	// Presented: the solver serves the key authorization.
	Presented   bool       `json:"presented"`
	PresentedAt *time.Time `json:"presentedAt,omitempty"`
	// State is the server's status of the challenge (or of the
	// authorization once accepted); empty until synced.
	State State `json:"state,omitempty"`
	// Reason says why, in words a person can act on.
	Reason string `json:"reason,omitempty"`
	// SyncedAt is when the host last read the challenge and authorization
	// from the server.
	SyncedAt *time.Time `json:"syncedAt,omitempty"`
	// ChangedAt is when a call last moved the challenge on: accepted it,
	// or found it in a new state. Reads that find it unchanged are spaced
	// out from it (Config.FirstPoll); nil spaces them PollInterval apart.
	ChangedAt *time.Time `json:"changedAt,omitempty"`
	// SelfCheckAt and SelfCheckPassed record the last self-check.
	SelfCheckAt     *time.Time `json:"selfCheckAt,omitempty"`
	SelfCheckPassed bool       `json:"selfCheckPassed,omitempty"`
	// Accepted: the host told the server to validate (RFC 8555 §7.5.1).
	Accepted bool `json:"accepted,omitempty"`
	// Attempts records the failed actions: LastError, Transient,
	// LastErrorTime, FailedAttempts and RetryAfter (see retry.Attempts).
	// FailedAttempts counts the actions that failed since the challenge
	// last moved on (the server's state of it changed, or it was
	// accepted); a success that does not move it on (a read finding the
	// same state, a presentation) clears LastError but keeps the count.
	// RetryAfter is also when the server asks an accepted challenge to be
	// read again.
	retry.Attempts
	// NextAttemptAt is set by the machine when a challenge waiting long
	// for a retry gives its scheduler slot back: Schedule does not start
	// it again before this time.
	NextAttemptAt *time.Time `json:"nextAttemptAt,omitempty"`
}

// Challenge is one ACME challenge the host is solving.
type Challenge struct {
	Name              string    `json:"name"`
	Namespace         string    `json:"namespace,omitempty"`
	UID               string    `json:"uid,omitempty"`
	CreationTimestamp time.Time `json:"creationTimestamp"`
	Spec              Spec      `json:"spec"`
	Status            Status    `json:"status"`
}
