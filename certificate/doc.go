// Package certificate is a certificate controller as pure decisions. The
// controller is split into five stages that talk to each other only
// through the Certificate's [Status]: each reads a [Snapshot] and `now` and
// returns a [Result] — the actions to carry out, when to look again, and
// why.
//
// The stages are [Trigger], [KeyManager], [RequestManager], [Issue] and
// [Readiness]; [Reconcile] runs them in order on one snapshot, each with the
// effects of the ones before it applied, and returns one result with a
// single UpdateStatus last. Calling the stages one after another, with the
// host carrying out each one's actions in between, gives exactly the same.
//
// The actions are a closed set: [UpdateStatus], [GenerateKey],
// [DeleteSecret], [CreateRequest], [DeleteRequest], [WriteSecret] and
// [WriteTemporaryCertificate]. Each type's doc says what the host does.
// Effects that need randomness (key generation, CSR signing, temporary
// certificates, keystore salts) are the host's, with package keys.
//
// # The trigger
//
// [Trigger] decides whether a certificate must be (re)issued. While the
// Issuing condition is True it stands aside — that is how a manual trigger
// works: set Issuing=True and the stages issue, backoff or not. Otherwise it
// runs an ordered chain of named checks, the first violation winning:
//
//  1. SecretDoesNotExist
//  2. SecretMissingData (tls.crt or tls.key)
//  3. SecretInvalidKeyPair (undecodable, or the key is not the certificate's)
//  4. SecretHoldsTemporaryCertificate (a placeholder written while an
//     issuance ran, spec.issueTemporaryCertificate, or the reference
//     operator's: keys.IsTemporaryCertificate)
//  5. SecretIssuerMismatch (issuer annotations vs spec.issuerRef)
//  6. SecretCertificateNameMismatch (the secret was issued for another
//     certificate that no longer claims it)
//  7. SecretKeyMismatchesSpec (spec.privateKey)
//  8. SecretKeyMismatchesRequest (the key of the request that issued the
//     current revision)
//  9. RequestOrCertificateChanged (that request vs the spec — names, other
//     names, the subject or literal subject, usages and whether they are
//     encoded in the CSR, isCA, name constraints, issuer, duration, key
//     spec; with no request, the issued certificate's names vs the spec, a
//     name may move between the common name and the DNS names, and a
//     common name that repeats one of the certificate's IP addresses is
//     the issuer's naming of the subject)
//
// then asks package renewal whether renewal is due (renewal time, ARI,
// Disabled / Scheduled windows, fail-safe). Every check is safe on missing
// input, so the chain can be reordered without a panic. Before setting
// Issuing after a failure it applies package backoff, unless the failed
// request no longer matches the spec. When another certificate owns the
// target secret (the one its annotation names, else the oldest), the trigger
// writes nothing and looks again later, so two certificates never overwrite
// one secret in turn.
//
// # Nothing lost
//
// A target secret that already holds data, is not owned by the
// certificate, and carries neither certlife's annotations nor the
// reference operator's (cert-manager.io/certificate-name,
// cert-manager.io/issuer-name) — a CA key pair a user made by hand, say —
// is never written: no key is made for it, no request created, and Ready
// is False, ReasonSecretNotOwned, with a message that names the secret and
// how to hand it over: the annotation certlife.dev/allow-takeover: "true"
// on the secret (AnnotationAllowTakeover). The secret's change brings the
// next pass through the host's watch; the decision also looks again on
// fixed ticks of Config.SecretInUseRecheck. An empty secret, or one with
// only labels and annotations, is filled as before, so secrets made
// beforehand keep working. A WriteSecret names the version of the secret
// it was decided on, and none when the decision saw no secret: a host
// never writes a secret the decision did not see.
//
// # Settled before acted on
//
// A request is used only while it still matches what the certificate asks
// — everything it was made from, its key spec, and its CSR's key being the
// next private key. One function answers that question for every stage: the
// requestmanager replaces a request that does not match, and the issuing
// stage leaves its answer alone, neither writing it nor counting it as a
// failure.
//
// # The secret kept in line
//
// When the certificate in the secret is right but the secret around it is
// not what the spec asks — secretTemplate labels and annotations,
// certlife's annotations, tls.key's encoding, additional output formats,
// keystores — the trigger and readiness say what drifted
// (ReasonSecretDrifted) and the issuing stage rewrites the secret from the
// key and chain it holds: one write, no new key, no new request.
//
// # Why and when, where users look
//
// While an issuance waits for the issuer, the Issuing condition keeps its
// reason (why the certificate is issued) and its message says what it
// waits for: the message the issuer recorded on the request, or, once
// Config.IssuerGrace has passed with no issuer touching the request, that
// none answers its issuerRef. Ready's message says the same while the
// certificate is not Ready. Right after an issuance a missing secret is
// taken for a read cache behind the write until Config.CacheGrace ends,
// and Ready is Unknown meanwhile; a host that read the secret's absence
// from the source of truth says so (Snapshot.SecretAbsenceConfirmed), and
// the certificate is issued again at once. A certificate that arrives
// already due for renewal is a failed issuance that backs off
// (ReasonIssuedDueForRenewal), and Validate refuses a spec that would make
// every certificate due on arrival (MinTimeBeforeRenewal).
//
// # The host loop
//
// A host, for each certificate key taken from its queue:
//
//  1. gathers a Snapshot in one place: the certificate, its target secret,
//     its requests and next-private-key secrets, other certificates naming
//     the same secret, the ARI window; nil for anything missing, and
//     whether a missing secret was read as missing from the source of
//     truth rather than a cache;
//  2. calls the decision with now from its clock;
//  3. carries out Result.Actions in order, stopping at the first error
//     (a conflict on a stale write is an error: the next pass repairs it);
//  4. requeues the key at Result.RequeueAt when it is set, and on any
//     change to the resources in the snapshot (its own writes included:
//     watch events bring the next pass);
//  5. shows Result.Stage, Reason and Message as the "why and when", and
//     Result.IssuanceReason while a certificate is being issued.
//
// Decisions never read the clock, never draw randomness and never do I/O,
// and keep nothing between calls: the same snapshot and time give the same
// result, parsed from the snapshot's bytes each time — or taken from
// Config.ParseCache, a keys.ParseCache keyed by those bytes, which a host
// keeps across decisions so that a key, a certificate or a request is
// parsed once, not on every pass; the result is the same either way. A
// secret with keystores takes milliseconds to decide on, since each
// keystore is opened with its password to check it.
package certificate
