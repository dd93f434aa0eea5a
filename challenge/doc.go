// Package challenge is the ACME challenge state machine (RFC 8555 §7.5,
// §8) and the challenge scheduler, as pure decisions.
//
// [Decide] reads one [Challenge] and `now` and returns the actions to carry
// out — [Sync], [Present], [SelfCheck], [Accept], [CleanUp], [UpdateStatus]
// — and when to look again. Each action's doc says what the host writes
// back into [Status]; the next decision reads it. [Schedule] picks, from all
// challenges, which may start: capped in flight and per account, never two
// for one (DNS name, type), oldest first and fair across issuers, and none
// that gave its slot back to wait for a retry before that retry is due.
//
// Deadlines arrive: every RequeueAt is derived from times the status
// records (a read, a presentation, a self-check, a failure), so deciding
// again at RequeueAt with nothing changed acts, or waits for a later time
// for another reason — never for the same deadline moved forward. Reads of
// an accepted challenge and repeats of a failed self-check come FirstPoll
// (200 ms) after the change, then after waits that double while nothing
// changes, up to PollInterval (5 s, both of [retry.Schedule]) or
// [Config.SelfCheckInterval] (10 s), or when the server's Retry-After says.
// Self-checking is itself bounded ([Config.SelfCheckTimeout], 30 minutes,
// and 5 minutes before the order expires): a self-check that never passes
// ends the challenge errored, with a reason that names it, and frees its
// scheduler slot.
//
// The host loop: take the challenges, call Schedule and set Processing on
// the ones it returns; for each processing challenge call Decide, carry out
// its actions in order (an ACME call is one request; no polling inside),
// write the status back, and requeue at RequeueAt. Package acmeclient
// carries out the ACME calls; its Issuer runs this loop, the order's and
// the scheduler for a host that answers certificate requests over ACME.
package challenge
