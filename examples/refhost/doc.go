// Package refhost is superseded by certificate/host, the host loop to
// import, and will be removed once the quickstart runs on it.
//
// It is the host loop written out in full with plain maps.
//
// certlife decides; a host keeps the objects, carries out the actions and
// owns the loop. This one keeps certificates, secrets and certificate
// requests in a Store — maps whose objects carry resource versions, so an
// update made on a stale read conflicts instead of overwriting — and for
// each certificate that is due:
//
//  1. gathers a certificate.Snapshot: the certificate, its secret, the
//     requests and next-private-key secrets it owns, the other
//     certificates that name the same secret (nil for what is missing);
//  2. decides with certificate.Reconcile at the clock's time;
//  3. carries out the actions in order, exactly as their docs say, and
//     stops at the first that fails: keys are generated and requests built
//     with package keys, a create that meets an existing object of the
//     deterministic name is success, a delete of a missing one too, a
//     secret is written only over the version the decision read, with its
//     labels and annotations merged, and the status is written last with
//     the version read (a conflict ends the pass and looks again);
//  4. looks again at Result.RequeueAt, and whenever the store changes what
//     the certificate's decision reads — the store's writes are the host's
//     watch events, its own writes included.
//
// Issuers answer requests through the issuer contract of package
// certificate: LocalCA (a CA key pair, from package certificate/localca),
// SelfSigned, ACME (over RFC 8555 with acmeclient.Issuer), or any Issuer a
// host provides.
//
// The host is single-threaded and moves only when Step is called, so tests
// and simulations run it on a fake clock: Settle steps until nothing more
// is due, and the caller moves the clock to Next.
package refhost
