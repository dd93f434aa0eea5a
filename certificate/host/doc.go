// Package host carries out certlife's certificate decisions against a
// Store of yours: import it, give it a Store and your issuers, and drive
// it from your queue or from its Loop. The examples, the lifecycle
// scenarios and the fleet simulation all run on it, so every invariant
// they check guards it.
//
// # Two layers
//
// Reconciler is the per-object core, in the shape of controller-runtime's
// reconciler contract. Reconciler.Certificate makes one pass over one
// certificate:
//
//  1. it gathers a certificate.Snapshot from the Store: the certificate,
//     its secret, the requests and next-private-key secrets it owns, the
//     other certificates that name the same secret (nil for what is
//     missing), and the CA's suggested renewal window (Config.ARI, or
//     the certificate's issuer when it is a certificate.RenewalAdvisor,
//     as the ACME issuer is);
//  2. it decides with certificate.Reconcile at the clock's time;
//  3. it carries out the actions in order, exactly as their docs say, and
//     stops at the first that fails: keys are generated, requests built
//     and temporary certificates made with package keys; a create that
//     meets an object of the same (deterministic) name is success, and so
//     is a delete of a missing one; a deleted request's issuer is told
//     after the deletion (certificate.Forgetter); a secret is written
//     only over the version the decision read, with its labels and
//     annotations merged, and never when the decision saw none and one is
//     there by then (a conflict: the next decision reads it); the status
//     is written last, with the version read;
//  4. it returns what it did (an Event) — Event.Next is when to look
//     again, now when the pass wrote anything — and an error when a read
//     or an action failed (errors.Is(err, ErrConflict): someone wrote in
//     between, look again at once).
//
// Reconciler.Request hands one request to the issuer its issuerRef names
// (Config.Issuers, or Config.IssuerFor) at the clock's time and writes
// back the status it leaves, returning when the issuer asked to be
// called again. Reconciler.RemoveOwned removes what a deleted certificate
// owned, for a store that has no garbage collector; Reconciler.Sweep
// sweeps the issuers that keep state (certificate.Sweeper).
//
// The Reconciler keeps no queue and starts no goroutine: whoever owns the
// queue owns the retries. A Kubernetes operator calls it from its
// controller-runtime workqueues, which bring their rate limiting, error
// metrics and one worker per key. Two calls may run at once for different
// objects, never for the same one.
//
// Loop is the queue for a host that has none: one goroutine (Run on the
// clock's own time) owns all its state — a schedule of what is due, the
// retries of failed passes (a conflict at once a few times, then after a
// delay that doubles from a second to five minutes), the requests it has
// seen and their issuers. It queues a certificate whenever a write
// concerns it (its own, its secret's, one of its requests'), a request
// whenever it changes, an issuer's request that someone else deleted for
// telling the issuer, and what a deleted certificate owned for removal.
// Under Run, each issuer answers its requests on a goroutine of its own
// and hands the answers back, so a slow issuer holds up only its own
// requests. A request whose issuer waits for a secret to be written
// (certificate.SecretAwaiter: a local CA's key pair, on the first start
// of a host that issues its own CA) is answered again as soon as that
// secret is written, by the loop or anyone else, not only when the
// issuer asked to be called again. Nothing waits without a deadline.
//
// # Logs
//
// Every pass that did something is an Event: Config.Observe sees it, and
// Config.Logger (slog.Default() when nil) gets it as a structured record
// (LogEvent): failures at Warn and Error, decisions and issuer answers at
// Debug, never key material.
//
// # Storage
//
// Store is three Collections — certificates, secrets, requests — with
// get, list, create, update and delete, each object carrying a resource
// version that an update must name (ErrConflict otherwise). Implement it
// over your storage and check it with hosttest.TestStore, or use
// MemoryStore (tests, simulations), FileStore (a directory on the local
// disk that survives a crash at any point) or package sqlstore's (SQLite,
// or PostgreSQL shared by replicas). A store that implements
// Watcher reports writes made by anyone, and a Loop reacts at once; one
// that is Authoritative lets the decisions trust that a secret it did not
// find is gone, and one that is not can say so of one miss
// (ErrAbsenceConfirmed).
//
// # Reading your own writes
//
// A store whose reads may lag behind its writes (not Authoritative: an
// informer cache, a replica) is read through ReadYourWrites, which the
// Reconciler puts in front of it: every read shows at least the
// Reconciler's own last write of the object, at once, without waiting
// for the store's watch to show it. A pass that follows its own writes
// therefore decides on what it wrote, whether the store's watch event of
// the write arrives before the write returns, after it, folded into a
// later version, or never. Past MaxPending writes in flight it keeps
// only their versions, and a read from before one fails with ErrConflict
// (the pass is tried again) rather than show the past.
//
// A store whose reads may not show, when the host starts, what was
// written before it — by the previous process, say — implements Syncer:
// nothing is decided on it until it has synced, as a controller waits
// for its informers' first list.
//
// # Replicas
//
// Several processes of one service may share one Store — a database —
// each with a Reconciler (or Loop) of its own. Every replica decides on
// every certificate: a certificate's writes name the version they read,
// and its requests are named after their revision, so two replicas that
// decide at once make one request per revision, and the one that loses
// reads again. A request is different: two issuers answering it at once
// would each order a certificate. So over a Store that implements Leaser,
// a replica hands a request to its issuer only while it holds the
// request's lease, which it takes or renews on every pass (for
// Config.LeaseDuration, under Config.Identity) and releases when the
// request is answered or deleted; the others' passes say who holds it
// until when (Event.Held) and look again just after. A replica that dies
// holding a lease holds it until its deadline; then another takes the
// request over and carries on the same order, whose state the issuers
// keep in the store the replicas share (the ACME issuers of all replicas
// use one account, whose orders they are). MemoryStore and FileStore are
// Leasers for the hosts of one process; hosttest.TestStore checks a
// Leaser of yours.
//
// # Time
//
// The clock is the host's (Config.Clock); decisions and issuers are given
// its time. Run sleeps on it until the next thing is due or a write wakes
// it. A test or a simulation moves a fake clock itself with the drivers
// of package hosttest (Settle, Advance). With an ACME server that really
// validates (acmeclient/acmetest), move a fake clock no faster than real
// time while orders are in flight (hosttest.AdvanceOptions.Pace): the
// server's own clock does not move with yours.
//
// # Stability
//
// The interfaces Store, Collection, Watcher, Authoritative and Leaser,
// and the exported fields and methods of Config, Event, Reconciler, Loop,
// ReadYourWrites, MemoryStore and FileStore, change only with a note in
// CHANGELOG.md; new fields and methods may be added.
package host
