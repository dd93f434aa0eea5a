// Package acmeclient carries out the actions of the order and challenge
// machines against an RFC 8555 ACME server. It is the effect side of
// certlife: the decisions stay pure, and this package makes the requests.
//
// Every call is single-shot. It takes the resource's current status and
// the action, makes the requests the action needs — never a poll, never a
// sleep — and returns the status to write back unchanged: what the server
// said, and, when it said so, when to look again (Retry-After). An error
// is returned too, as an *Error whose Kind is one of the sentinel errors
// (ErrRateLimited, ErrUnauthorized, ErrRejectedIdentifier, ErrMalformed,
// ErrServer, ErrNetwork, …); Retryable answers whether a later attempt can
// succeed. A failed call is written into the status with NoteFailure —
// the error, its time, the attempt count, the server's Retry-After — from
// which the machines derive the next attempt; it never moves an order's
// state backwards (a finalize refused as not ready or already finalized,
// or with a bare 403, is recorded as transient, and the order is read
// before anything else). An error a retry cannot fix also marks the order
// or challenge "errored" with the server's words, so the machines record
// the failure instead of asking for the same call again.
//
// The host loop, for an order (see internal/acmeflow for all of it):
//
//	res := order.Decide(o, owned, now, cfg)
//	for _, a := range res.Actions {
//		switch a := a.(type) {
//		case order.CreateOrder:
//			o.Status, err = client.CreateOrder(ctx, o.Status, a)
//		case order.GetAuthorization:
//			o.Status, err = client.GetAuthorization(ctx, o.Status, a)
//		case order.Sync:
//			o.Status, err = client.SyncOrder(ctx, o.Status, a)
//		case order.Finalize:
//			o.Status, err = client.Finalize(ctx, o.Status, a)
//		case order.FetchCertificate:
//			o.Status, err = client.FetchCertificate(ctx, o.Status, a)
//		case order.CreateChallenge, order.DeleteChallenge, order.UpdateStatus, order.DeleteOrder:
//			// the host's own resources
//		}
//		if err != nil {
//			break // the status already says what happened; requeue
//		}
//	}
//
// and for a challenge: SyncChallenge and Accept here, Present, SelfCheck
// and CleanUp with Solvers: one Presenter per challenge type (an
// HTTP01Handler to mount on port 80, a DNS provider's for the zone) and
// its self-check.
//
// Built on golang.org/x/crypto/acme (accounts with external account
// binding, authorizations, challenges, orders, certificates, profiles),
// with two requests it has no single-shot form or option for — finalize,
// and newOrder with "replaces" (RFC 9773 §5) — signed here with go-jose.
// All requests go through one Transport, which counts them by kind and
// passes them on unchanged. Each signer keeps the Replay-Nonce of the
// responses to its own requests for its next one (RFC 8555 §7.2), so a
// newNonce request is made only when a signer has none: the first time
// each signs, and when more requests run at once than it holds nonces.
//
// ARI (RFC 9773): RenewalInfo fetches a certificate's suggested renewal
// window, to pass to the renewal package; CreateOrder sends replaces when
// the order names the certificate it renews, and orders again without it
// when the server answers alreadyReplaced.
//
// Nothing here prints key material: Config, Client and EAB redact
// themselves under every fmt verb.
package acmeclient
