package order

import (
	"fmt"
	"time"

	"github.com/certlife/certlife/challenge"
)

// Action is one effect the host carries out; the set is closed.
//
// Every ACME call writes back what the server said. When a call fails the
// host records it with Status.NoteFailure (the error, its time, one more
// failed attempt, the server's Retry-After, whether a retry can succeed)
// and leaves State alone; an error a retry cannot fix also sets State to
// errored with the server's words as Reason. When a call succeeds the host
// calls Status.NoteSuccess, saying whether the order moved on.
type Action interface {
	isAction()
	String() string
}

// CreateOrder asks the host to create the ACME order (RFC 8555 §7.4) for
// exactly these identifiers (the spec's, with its common name: see
// Identifiers) and write back URL, FinalizeURL, State, Expires, one
// Authorization{URL} per authorization URL, SpecHash, and SyncedAt and
// ChangedAt (the time of the call). Replaces, when set, names the
// certificate the order renews (RFC 9773 §5); when the server refuses the
// order with it, for whatever reason, the host creates it again without
// in the same call and records the server's words in
// Status.ReplacesRefused, after which the machine never asks for replaces
// again.
type CreateOrder struct {
	DNSNames    []string
	IPAddresses []string
	Profile     string
	NotBefore   *time.Time
	NotAfter    *time.Time
	Replaces    string
	SpecHash    string
}

// GetAuthorization asks the host to fetch an authorization and fill its
// entry: Identifier, Wildcard, InitialState, Challenges, and the key
// authorizations of the offered challenges.
type GetAuthorization struct{ URL string }

// CreateChallenge asks the host to create the Challenge resource
// (deterministic name; AlreadyExists is success).
type CreateChallenge struct{ Challenge challenge.Challenge }

// DeleteChallenge asks the host to delete a Challenge it no longer needs.
type DeleteChallenge struct{ Name, Reason string }

// Sync asks the host to fetch the order and write State, Reason,
// CertificateURL, Expires, SyncedAt, ChangedAt (when the state or the
// certificate URL changed) and the server's Retry-After. A read made for
// Status.ReadFirst that finds the order unchanged clears ReadFirst only,
// keeping the failure (and so its retry delay); any other successful read
// calls NoteSuccess.
type Sync struct{ URL string }

// Finalize asks the host to finalize the order with the CSR (RFC 8555
// §7.4) and write the returned State and CertificateURL, SyncedAt, and
// ChangedAt when the state changed. A refusal that
// says the order is not ready or already finalized (orderNotReady, or a
// bare 403 without a problem type) is recorded as a transient failure
// with Status.ReadFirst and leaves State alone: the machine reads the
// order at once, before anything else.
type Finalize struct {
	URL string
	CSR []byte
}

// FetchCertificate asks the host to download the certificate and write it
// to Status.Certificate, choosing the alternate chain whose top issuer's
// common name is PreferredChain when there is one (else the default).
type FetchCertificate struct {
	URL            string
	PreferredChain string
}

// UpdateStatus asks the host to write Status; always last.
type UpdateStatus struct{ Status Status }

// DeleteOrder asks the host to delete the order (a failed order is kept 30
// minutes for people to read, then removed).
type DeleteOrder struct{ Reason string }

func (CreateOrder) isAction()      {}
func (GetAuthorization) isAction() {}
func (CreateChallenge) isAction()  {}
func (DeleteChallenge) isAction()  {}
func (Sync) isAction()             {}
func (Finalize) isAction()         {}
func (FetchCertificate) isAction() {}
func (UpdateStatus) isAction()     {}
func (DeleteOrder) isAction()      {}

func (a CreateOrder) String() string {
	return fmt.Sprintf("CreateOrder{%v}", append(append([]string(nil), a.DNSNames...), a.IPAddresses...))
}
func (a GetAuthorization) String() string { return "GetAuthorization{" + a.URL + "}" }
func (a CreateChallenge) String() string {
	return fmt.Sprintf("CreateChallenge{%s %s %s}", a.Challenge.Name, a.Challenge.Spec.Type, a.Challenge.Spec.DNSName)
}
func (a DeleteChallenge) String() string  { return "DeleteChallenge{" + a.Name + ": " + a.Reason + "}" }
func (a Sync) String() string             { return "Sync{" + a.URL + "}" }
func (a Finalize) String() string         { return "Finalize{" + a.URL + "}" }
func (a FetchCertificate) String() string { return "FetchCertificate{" + a.URL + "}" }
func (a UpdateStatus) String() string     { return fmt.Sprintf("UpdateStatus{state=%s}", a.Status.State) }
func (a DeleteOrder) String() string      { return "DeleteOrder{" + a.Reason + "}" }
