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
// issuer contract of package certificate (certificate.Issuer): SetIssued
// with the chain, once it checks out against the CSR (a certificate that
// does not decode, or is for another key or other names, is ordered again
// once, then fails the request saying what was wrong); SetFailed with the
// server's words and Retry-After; SetInvalid for a CSR that cannot be
// ordered. The order and challenges live in a Store the host implements
// (MemoryStore for tests) and the Issuer owns, so a restarted host
// resumes each request's order instead of creating another, and presents
// again what the lost process served — even an order whose newOrder
// answer it never wrote down, which it finds among the account's orders
// where the server lists them (Client.FindOrder). A renewal names the certificate it
// replaces (RFC 9773 §5) when the request carries
// certificate.AnnotationReplaces — the certificate stages set it on a
// renewal from the same issuer that shares a name with the certificate it
// replaces; should the server refuse replaces for any reason, the order
// is made again without it in the same step.
//
// The loop stays the host's. For each request whose issuer is this one
// and that is not answered:
//
//	next, err := issuer.Answer(ctx, req, now) // or Step, for its Result
//	// write req.Status back when it changed (the status subresource);
//	// an error is recorded on req too when the store failed
//	if !next.IsZero() {
//		queue.AddAfter(key, next.Sub(now))
//	}
//
// and for each request it deletes (certificate.DeleteRequest names the
// issuer): issuer.Forget(ctx, namespace, name), which takes down what its
// challenges present and removes its state at once.
//
// Nothing waits without end, whatever the host forgets: a state the host
// stops stepping without Forget (it crashed in between) is removed
// StaleAfter (15 minutes) past the time it asked to be stepped again, one
// whose order expired with no step since at once, an answered one after
// KeepAnswered (10 minutes) — by any later Step, Forget or Sweep — and
// none of them holds a scheduler slot meanwhile. The server's Retry-After
// is followed up to an hour (order.Config.MaxRetryAfter); a longer one
// fails the request with it, for the certificate's backoff — except a
// newOrder refused for a rate limit: the issuer paces its orders by the
// CA's limits (IssuerConfig.Limits: Let's Encrypt's by default for its directories,
// none but what the CA's refusals say for any other; see
// RateLimits), so an order that would pass one is not sent, and one the
// CA refuses anyway waits for its slot; either way the request stays
// Pending, saying when its order goes. A context
// that ends (shutdown, lost leadership) ends the step with ctx.Err() and
// counts as no failed attempt.
//
// Step's Result.Err carries the error of a failed ACME request of the
// step (typed: errors.Is(err, ErrRateLimited)), and Result.Message says
// what the order waits for; the machines retry on their own, so neither
// needs handling, but a host that gives up waiting can say why.
//
// At the defaults an issuance costs what RFC 8555 needs when the CA
// answers at once — seven requests: newOrder, the authorization, the
// accept, one read of the authorization, finalize, one read of the order,
// the certificate. Each read comes 200 ms after the call that changed the
// order or challenge, then after waits that double while nothing changes,
// up to 5 s, or when the server's Retry-After says (FirstPoll and
// PollInterval of retry.Schedule, in order.Config and challenge.Config).
//
// # Solving challenges
//
// One Presenter interface serves every challenge type: Present puts a
// Presentation up where the CA looks, CleanUp takes it down. HTTP01Handler
// is the HTTP-01 presenter and the http.Handler to mount on port 80;
// TLSALPN01Handler is the TLS-ALPN-01 presenter (RFC 8737) whose
// GetCertificate answers the CA's handshake on port 443 (package
// certificate/tlsserve puts it beside the certificates a service
// serves); a DNS-01 presenter publishes the TXT record (DNS01Name,
// DNS01Value) through a DNS provider's API — LibDNSPresenter through any
// provider of github.com/libdns/libdns, following aliases (CNAME) when
// asked. Given a PresentationStore
// that replicas share, HTTP01Handler and TLSALPN01Handler answer on
// every replica what any one presented. A Checker is the self-check
// before the challenge is accepted (HTTP01Checker, TLSALPN01Checker,
// DNS01Checker). Solvers holds one of each per type. Package acmetest
// runs Pebble, Let's Encrypt's test CA, in process, with presenters and
// self-checks wired to it, for a host's tests.
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
// ErrMalformed, ErrServer, ErrNetwork, ErrInsecureURL, …); Retryable answers whether a
// later attempt can succeed. A failed call is written into the status with
// NoteFailure — the error, its time, the attempt count, the server's
// Retry-After — from which the machines derive the next attempt; it never
// moves an order's state backwards (a finalize refused as not ready or
// already finalized, or with a bare 403, is recorded as transient, and the
// order is read at once, before anything else). A call cut short by its
// own context returns the status unchanged. An error a retry cannot fix also
// marks the order or challenge "errored" with the server's words, so the
// machines record the failure instead of asking for the same call again.
//
// # The client
//
// Built on golang.org/x/crypto/acme (accounts with external account
// binding, authorizations, challenges, orders, certificates, profiles),
// with two requests it has no single-shot form or option for — finalize,
// and newOrder with "replaces" — signed here with go-jose. All requests go
// through one Transport, which counts them by kind, holds the edges
// below, and otherwise passes them on unchanged. Each signer keeps the Replay-Nonce of the responses to its
// own requests for its next one (RFC 8555 §7.2), so a newNonce request is
// made only when a signer has none: the first time each signs, and when
// more requests run at once than it holds nonces.
//
// It talks to the server it was given, and to the URLs that server hands
// out, over https only. RFC 8555 lets a CA keep its resources on other
// hosts than its directory's, so the URLs in the directory, the Location
// of what it creates, its orders, authorizations and Link headers are
// followed wherever they point — but one that is not https:// is refused
// with ErrInsecureURL, naming the URL and where it came from, before
// anything is sent to it (Config.InsecureAllowHTTP accepts http:// for a
// test server on loopback). A redirect to another scheme, host or port is
// refused with ErrRedirect rather than followed: a resource moves by the
// server naming it, not by a redirect. No retry gets past either.
//
// Nothing the server sends can hold the client or its host without end.
// Each request has a deadline, from sending it to the last byte of the
// answer: Config.RequestTimeout, 30 s by default (DefaultRequestTimeout),
// so that a server that accepts a request and never answers fails the
// call with ErrNetwork, which the machines retry and a request being
// answered shows. Each answer is read up to a bound by its kind
// (ResponseLimit: 64 KiB for a directory or an account, 1 MiB for an
// order, 4 MiB for a certificate chain …): a larger one fails the call
// with ErrServer, saying so, and is not read further; an error answer is
// cut at 64 KiB, and the server's words an error or a status keeps are
// cut to a readable length. Both hold whether HTTPClient is the user's
// or not.
//
// ARI (RFC 9773): RenewalInfo fetches a certificate's suggested renewal
// window, to pass to the renewal package; CreateOrder sends replaces when
// the order names the certificate it renews, and orders again without it
// when the server refuses it (already replaced, no name in common, or any
// other refusal but a rate limit or an unavailable server), recording
// that in the order's status so that no retry sends it again.
//
// Time comes from Config.Clock, a k8s.io/utils/clock clock: a host on a
// fake clock passes its own. Nothing here prints key material: Config,
// Client and EAB redact themselves under every fmt verb and flag (%v, %+v,
// %#v, %s, %q, %x, %X, %d …), and so do the structs that hold them in
// exported fields (AccountOptions, IssuerConfig). The one exception is
// fmt's own: %p of a value that is not a pointer prints the value raw,
// past every method, so never print a Config or an EAB with %p.
package acmeclient
