// Package host is the host loop that carries out certlife's certificate
// decisions: import it, give it a Store and your issuers, and drive it.
// The examples, the lifecycle scenarios and the fleet simulation all run
// on it, so every invariant they check guards this loop.
//
// certlife decides; the loop keeps the objects and does the work. For
// each certificate that is due it
//
//  1. gathers a certificate.Snapshot from the Store: the certificate, its
//     secret, the requests and next-private-key secrets it owns, the other
//     certificates that name the same secret (nil for what is missing),
//     and, with Config.ARI, the CA's suggested renewal window;
//  2. decides with certificate.Reconcile at the clock's time;
//  3. carries out the actions in order, exactly as their docs say, and
//     stops at the first that fails: keys are generated, requests built
//     and temporary certificates made with package keys; a create that meets an object of the same
//     (deterministic) name is success, and so is a delete of a missing
//     one; a deleted request's issuer is told (certificate.Forgetter);
//     a secret is written only over the version the decision read, with
//     its labels and annotations merged, and never when the decision saw
//     none and one is there by then (a conflict: the next decision reads
//     it); the status is written last, with the version read;
//  4. looks again at Result.RequeueAt, and whenever a write concerns the
//     certificate — its own, its secret's, one of its requests' — at once.
//
// For each request that is not answered and whose issuerRef names one of
// Config.Issuers (or one Config.IssuerFor gives), it calls the issuer's Answer and writes the request's
// status back when it changed, looking again when the issuer asks. It
// never answers a request it is deleting or whose issuer it told to forget
// it, never tells an issuer to forget a request while an answer of it is
// under way, and, over a store whose reads lag, does not answer again
// while the store still reads the version the last answer wrote over.
//
// A pass that fails is tried again: at once after a conflict (someone
// wrote in between; the next read sees it), a few times, and otherwise
// after a delay that doubles from a second to five minutes. Nothing waits
// without a deadline.
//
// # Storage
//
// Store is three Collections — certificates, secrets, requests — with
// get, list, create, update and delete, each object carrying a resource
// version that an update must name (ErrConflict otherwise). Implement it
// over your storage, or use MemoryStore (tests, simulations) or FileStore
// (a directory on the local disk that survives a crash at any point).
// A store that implements Watcher reports writes made by anyone, and the
// loop reacts at once; one that is Authoritative lets the decisions trust
// that a secret it did not find is gone, and one that is not can say so of
// one miss (ErrAbsenceConfirmed). Both provided stores also keep
// an ACME issuer's states (ACME), so a restart resumes every order.
//
// # Time
//
// The clock is the host's (Config.Clock). Run sleeps on it until the next
// thing is due or a write wakes it; Step, Settle and Next let a test or a
// simulation move a fake clock itself. With an ACME server that really
// validates (acmeclient/acmetest), move a fake clock no faster than real
// time while orders are in flight: the server's own clock does not move
// with yours.
//
// # Stability
//
// The interfaces Store, Collection, Watcher and Authoritative, and the
// exported fields and methods of Config, Event, Loop, MemoryStore and
// FileStore, change only with a note in the README's list of changes; new
// fields and methods may be added.
package host
