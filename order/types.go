package order

import (
	"time"

	"github.com/certlife/certlife/backoff/retry"
	"github.com/certlife/certlife/challenge"
)

// State is an ACME order status (RFC 8555 §7.1.6) plus "errored" for a
// failure on our side. Unknown values are handled as "look again", never
// as final.
type State string

// States.
const (
	StatePending    State = "pending"
	StateReady      State = "ready"
	StateProcessing State = "processing"
	StateValid      State = "valid"
	StateInvalid    State = "invalid"
	StateExpired    State = "expired"
	StateErrored    State = "errored"
)

// Failed reports a final failure state: invalid, expired, errored.
func (s State) Failed() bool { return s == StateInvalid || s == StateExpired || s == StateErrored }

// Selector chooses the identifiers a solver applies to. An empty selector
// (or none) is the default solver.
type Selector struct {
	DNSNames    []string          `json:"dnsNames,omitempty"`
	DNSZones    []string          `json:"dnsZones,omitempty"`
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
}

// SolverConfig is one solver with the identifiers it applies to.
type SolverConfig struct {
	Selector *Selector        `json:"selector,omitempty"`
	Solver   challenge.Solver `json:"solver"`
}

// Spec is immutable: an order asks for exactly one certificate.
type Spec struct {
	// CSR is the DER certificate signing request to finalize with.
	CSR         []byte           `json:"csr"`
	Issuer      challenge.Issuer `json:"issuerRef"`
	Account     string           `json:"account,omitempty"`
	CommonName  string           `json:"commonName,omitempty"`
	DNSNames    []string         `json:"dnsNames,omitempty"`
	IPAddresses []string         `json:"ipAddresses,omitempty"`
	Solvers     []SolverConfig   `json:"solvers"`
	// Profile asks the server for a certificate profile (e.g. "shortlived").
	Profile string `json:"profile,omitempty"`
	// NotBefore and NotAfter ask for a validity (RFC 8555 §7.4), when the
	// server honours them (Let's Encrypt does not; Pebble and some private
	// CAs do).
	NotBefore *time.Time `json:"notBefore,omitempty"`
	NotAfter  *time.Time `json:"notAfter,omitempty"`
	// Replaces is the ARI identifier of the certificate this one renews
	// (RFC 9773 §5).
	Replaces string `json:"replaces,omitempty"`
	// PreferredChain is the issuer common name of the chain to prefer.
	PreferredChain string `json:"preferredChain,omitempty"`
}

// OfferedChallenge is one challenge an authorization offers.
type OfferedChallenge struct {
	Type  challenge.Type `json:"type"`
	URL   string         `json:"url"`
	Token string         `json:"token"`
}

// Authorization is what the server said about one identifier.
type Authorization struct {
	URL string `json:"url"`
	// Identifier is empty until the host has fetched the authorization.
	Identifier   string             `json:"identifier,omitempty"`
	Wildcard     bool               `json:"wildcard,omitempty"`
	InitialState State              `json:"initialState,omitempty"`
	Challenges   []OfferedChallenge `json:"challenges,omitempty"`
	// FetchedAt is when the host read the authorization. The Challenges
	// the order creates start from this read (state and time), so the
	// challenge machine does not read it again before presenting.
	FetchedAt *time.Time `json:"fetchedAt,omitempty"`
}

// Status is written back by the host after each action.
type Status struct {
	URL            string          `json:"url,omitempty"`
	FinalizeURL    string          `json:"finalizeURL,omitempty"`
	CertificateURL string          `json:"certificateURL,omitempty"`
	State          State           `json:"state,omitempty"`
	Reason         string          `json:"reason,omitempty"`
	Authorizations []Authorization `json:"authorizations,omitempty"`
	// Certificate is the fetched chain, PEM, leaf first.
	Certificate []byte     `json:"certificate,omitempty"`
	FailureTime *time.Time `json:"failureTime,omitempty"`
	SyncedAt    *time.Time `json:"syncedAt,omitempty"`
	// ChangedAt is when a call last found the order changed: created,
	// in a new state, or with its certificate URL. Reads that find it
	// unchanged are spaced out from it (Config.FirstPoll); nil spaces
	// them PollInterval apart.
	ChangedAt *time.Time `json:"changedAt,omitempty"`
	// Expires is when the server considers the order expired (RFC 8555
	// §7.1.3), as it last said; nil when it has not said. An order that
	// would retry past it fails instead.
	Expires *time.Time `json:"expires,omitempty"`
	// SpecHash is the hash of the spec the order was created from; a
	// different spec later is an error.
	SpecHash string `json:"specHash,omitempty"`
	// Attempts records the failed calls: LastError, Transient,
	// LastErrorTime, FailedAttempts and RetryAfter (see retry.Attempts).
	// Transient errors include, besides network errors, timeouts, 5xx,
	// 429 and bad nonces past their retries, a finalize the server
	// refused as not ready or already done. FailedAttempts counts the
	// calls that failed since the order last moved on: it was created,
	// changed state, got its certificate URL, an authorization was read,
	// or its certificate fetched. RetryAfter is also when to read again
	// an order the server is still working on.
	retry.Attempts
	// KeyAuthorizations maps a challenge token to its key authorization;
	// the host computes them from the account key (RFC 8555 §8.1).
	KeyAuthorizations map[string]string `json:"keyAuthorizations,omitempty"`
	// ReplacesRefused is the server's words when it refused to create the
	// order with Spec.Replaces (RFC 9773 §5): for an order whose names
	// share none with the replaced certificate, one that was replaced
	// already, or any other reason. The host then creates the order again
	// without replaces in the same call and records why here; CreateOrder
	// never asks for replaces again once it is set. Empty when the order
	// was created as asked.
	ReplacesRefused string `json:"replacesRefused,omitempty"`
	// ReadFirst is set with a failure that says the order may have moved
	// on at the server (a finalize refused as not ready or as already
	// finalized, or with a bare 403): the order is read at once, without
	// waiting for the retry delay. A read that finds the order moved on
	// clears it with the failure (NoteSuccess); a read that finds it
	// unchanged clears only ReadFirst, and leaves the failure to its
	// retry delay.
	ReadFirst bool `json:"readFirst,omitempty"`
	// BadCertificate says what was wrong with the certificate of an
	// earlier order for this spec (a chain that does not decode, another
	// public key than the CSR's, other names): such an order is made
	// again once, and a second bad certificate fails it. Empty when no
	// bad certificate was issued.
	BadCertificate string `json:"badCertificate,omitempty"`
}

// NoteSuccess records a call that succeeded: the last error and
// ReadFirst are cleared, and when the call moved the order on (see
// Attempts) the count of failed attempts starts again from zero. Failed
// calls are recorded with NoteFailure (retry.Attempts), which leaves State
// alone: a failed call never moves an order backwards.
func (s *Status) NoteSuccess(movedOn bool) {
	s.Attempts.NoteSuccess(movedOn)
	s.ReadFirst = false
}

// Order is one ACME order.
type Order struct {
	Name              string            `json:"name"`
	Namespace         string            `json:"namespace,omitempty"`
	UID               string            `json:"uid,omitempty"`
	CreationTimestamp time.Time         `json:"creationTimestamp"`
	Labels            map[string]string `json:"labels,omitempty"`
	Spec              Spec              `json:"spec"`
	Status            Status            `json:"status"`
}
