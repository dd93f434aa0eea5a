// Package acmeclient takes certificate requests to certificates over ACME
// (RFC 8555): it carries out the actions of the order and challenge
// machines against a real server. The decisions stay pure in packages
// order and challenge; this package makes the requests.
//
// # The issuer
//
// Issuer answers a certificate.CertificateRequest with one ACME order. Its
// Step creates the order, carries out every action of the order machine
// and of the challenge machine for each challenge, starts the challenges
// the scheduler allows (challenge.Schedule, across every request), cleans
// a challenge up before it is deleted, and answers the request through the
// issuer contract of package certificate: SetIssued with the chain,
// SetFailed with the server's words and Retry-After, SetInvalid for a CSR
// that cannot be ordered. The order and challenges live in a Store the
// host implements (MemoryStore for tests), so a restarted host resumes
// each request's order instead of creating another, and presents again
// what the lost process served. A renewal names the certificate it
// replaces (RFC 9773 §5) through the request's AnnotationReplaces, which
// SetReplaces sets.
//
// The loop stays the host's. For each request whose issuer is this one
// and that is not answered:
//
//	res, err := issuer.Step(ctx, req)
//	switch {
//	case err != nil:
//		// the store failed: requeue at res.RequeueAt
//	case res.Changed:
//		// write req.Status back (the status subresource); when
//		// res.Answered, stop stepping it
//	}
//	queue.AddAfter(key, time.Until(res.RequeueAt))
//
// Result.Err carries the error of a failed ACME request of the step
// (typed: errors.Is(err, ErrRateLimited)), and Result.Message says what
// the order waits for; the machines retry on their own, so neither needs
// handling, but a host that gives up waiting can say why. When a request
// is deleted before it is answered, Forget cleans its order up.
//
// At the defaults an issuance costs what RFC 8555 needs when the CA
// answers at once — seven requests: newOrder, the authorization, the
// accept, one read of the authorization, finalize, one read of the order,
// the certificate. Each read comes 200 ms after the call that changed the
// order or challenge, then after waits that double while nothing changes,
// up to 5 s, or when the server's Retry-After says (order.Config.FirstPoll,
// challenge.Config.FirstPoll).
//
// # Solving challenges
//
// One Presenter interface serves both challenge types: Present puts a
// Presentation up where the CA looks, CleanUp takes it down. HTTP01Handler
// is the HTTP-01 presenter and the http.Handler to mount on port 80; a
// DNS-01 presenter publishes the TXT record (DNS01Name, DNS01Value) through
// a DNS provider's API. A Checker is the self-check before the challenge
// is accepted (HTTP01Checker, DNS01Checker). Solvers holds one of each per
// type. Package acmetest runs Pebble, Let's Encrypt's test CA, in process,
// with presenters and self-checks wired to it, for a host's tests.
//
// # Single-shot calls
//
// A host that drives the machines itself calls the Client's methods, one
// per action, each making the requests the action needs — never a poll,
// never a sleep: CreateOrder, GetAuthorization, SyncOrder, Finalize,
// FetchCertificate for the order machine; SyncChallenge and Accept for the
// challenge machine, with Solvers' Present, SelfCheck and CleanUp. Each
// takes the resource's current status and returns the status to write
// back: what the server said and, when it said so, when to look again. An
// error is returned too, as an *Error whose Kind is one of the sentinel
// errors (ErrRateLimited, ErrUnauthorized, ErrRejectedIdentifier,
// ErrMalformed, ErrServer, ErrNetwork, …); Retryable answers whether a
// later attempt can succeed. A failed call is written into the status with
// NoteFailure — the error, its time, the attempt count, the server's
// Retry-After — from which the machines derive the next attempt; it never
// moves an order's state backwards (a finalize refused as not ready or
// already finalized, or with a bare 403, is recorded as transient, and the
// order is read before anything else). An error a retry cannot fix also
// marks the order or challenge "errored" with the server's words, so the
// machines record the failure instead of asking for the same call again.
//
// # The client
//
// Built on golang.org/x/crypto/acme (accounts with external account
// binding, authorizations, challenges, orders, certificates, profiles),
// with two requests it has no single-shot form or option for — finalize,
// and newOrder with "replaces" — signed here with go-jose. All requests go
// through one Transport, which counts them by kind and passes them on
// unchanged. Each signer keeps the Replay-Nonce of the responses to its
// own requests for its next one (RFC 8555 §7.2), so a newNonce request is
// made only when a signer has none: the first time each signs, and when
// more requests run at once than it holds nonces.
//
// ARI (RFC 9773): RenewalInfo fetches a certificate's suggested renewal
// window, to pass to the renewal package; CreateOrder sends replaces when
// the order names the certificate it renews, and orders again without it
// when the server answers alreadyReplaced.
//
// Time comes from Config.Clock, a k8s.io/utils/clock clock: a host on a
// fake clock passes its own. Nothing here prints key material: Config,
// Client and EAB redact themselves under every fmt verb.
package acmeclient
