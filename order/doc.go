// Package order is the ACME order state machine (RFC 8555 §7.4), as a pure
// decision: [Decide] reads an [Order], the Challenge resources it owns and
// `now`, and returns the ACME calls and resource changes to make next —
// [CreateOrder], [GetAuthorization], [CreateChallenge], [DeleteChallenge],
// [Sync], [Finalize], [FetchCertificate], [UpdateStatus], [DeleteOrder] —
// and when to look again. The host carries each out (package acmeclient
// does the ACME calls, one request each) and writes the answer into
// [Status] as the action's doc says, recording failures with
// NoteFailure ([retry.Attempts], which [Status] embeds). [ChooseSolver] picks the solver for an identifier;
// [Identifiers] lists what an order asks for; [CheckCertificate] checks
// the certificate the server issued against the order before it is
// handed over.
//
// Deadlines arrive: every RequeueAt is derived from times the status
// records (a read, a failure and its attempt count, the server's
// Retry-After, a failure time), so deciding again at RequeueAt with nothing
// changed acts, or waits for a later time for another reason — never for
// the same deadline moved forward with the clock ([retry.Schedule.RetryAt],
// [retry.Schedule.PollAt], which [Config] embeds).
// And every wait ends: a decision without actions that is not final says
// why and until when, never longer than the order's expiry, nor longer
// than [Config.MaxRetryAfter] (1 h) on the server's Retry-After — past
// that the order fails with it, and the certificate's backoff takes over.
//
// Polls are fast and polite: an order the server is working on is read
// FirstPoll (200 ms) after the call that changed it, then after waits that
// double while nothing changes, up to PollInterval (5 s), or when the
// server's Retry-After says ([retry.Schedule]).
package order
