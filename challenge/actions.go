package challenge

import "fmt"

// Action is one effect the host carries out; the set is closed.
//
// When an action fails the host records it with Status.NoteFailure (the
// error, its time, one more failed attempt, the server's Retry-After,
// whether a retry can succeed) and leaves State alone; an error a retry
// cannot fix also sets State to errored with the reason. When it succeeds
// the host calls Status.NoteSuccess, saying whether the challenge moved
// on.
type Action interface {
	isAction()
	String() string
}

// Sync asks the host to read the challenge (URL) and its authorization
// (AuthorizationURL) from the server and write back: Status.State (the
// authorization's status once Accepted, else the challenge's), Reason (the
// server's error detail, if any), SyncedAt = now, ChangedAt = now when the
// state changed, and the server's Retry-After. A challenge URL that the authorization does not list, while
// the authorization is not final, is an error a retry cannot fix: State
// errored, with a reason that says so.
type Sync struct{ URL, AuthorizationURL string }

// Present asks the host to make the solver serve the key authorization
// (HTTP-01: the token's file; DNS-01: the TXT record), then write
// Presented = true and PresentedAt = now.
type Present struct {
	Type           Type
	DNSName, Token string
	Key            string
	Solver         Solver
	Wildcard       bool
}

// SelfCheck asks the host to check, from where it stands, that the key
// authorization is served (an HTTP GET of the token, or a TXT query of the
// authoritative servers), and write SelfCheckAt = now and SelfCheckPassed,
// and, when the check failed, Reason = what failed: a challenge whose
// self-check does not pass in time (Config.SelfCheckTimeout) ends with
// it.
type SelfCheck struct {
	Type           Type
	DNSName, Token string
	Key            string
}

// Accept asks the host to tell the server the challenge is ready (RFC 8555
// §7.5.1: POST {} to the challenge URL) and write Accepted = true, the
// returned state, and SyncedAt = ChangedAt = now.
type Accept struct{ URL string }

// CleanUp asks the host to stop presenting the key authorization: what
// the Present with the same fields put up. Idempotent.
type CleanUp struct {
	Type           Type
	DNSName, Token string
	Key            string
	Solver         Solver
	Wildcard       bool
}

// UpdateStatus asks the host to write Status; always last in a result.
type UpdateStatus struct{ Status Status }

func (Sync) isAction()         {}
func (Present) isAction()      {}
func (SelfCheck) isAction()    {}
func (Accept) isAction()       {}
func (CleanUp) isAction()      {}
func (UpdateStatus) isAction() {}

func (a Sync) String() string      { return "Sync{" + a.URL + "}" }
func (a Present) String() string   { return fmt.Sprintf("Present{%s %s}", a.Type, a.DNSName) }
func (a SelfCheck) String() string { return fmt.Sprintf("SelfCheck{%s %s}", a.Type, a.DNSName) }
func (a Accept) String() string    { return "Accept{" + a.URL + "}" }
func (a CleanUp) String() string   { return fmt.Sprintf("CleanUp{%s %s}", a.Type, a.DNSName) }
func (a UpdateStatus) String() string {
	return fmt.Sprintf("UpdateStatus{processing=%v presented=%v state=%s}", a.Status.Processing, a.Status.Presented, a.Status.State)
}
