// Package backoff decides when a certificate may be issued again after a
// failed issuance (certlife's take on cert-manager's design "Exponential
// Backoff for Certificate Issuance").
//
// The issuing stage records two facts in the Certificate's status after every
// failed issuance: the time of the failure and the count of consecutive
// failures. From those, a [Policy] and `now`, [Policy.Decide] says whether the
// trigger must wait and until when:
//
//	delay(n) = Min · 2^(n−1), at most Max     (defaults: 1h and 32h)
//	next     = later of (lastFailure + delay(n)) and the CA's Retry-After
//
// so the 1st failure waits 1h, the 2nd 2h, then 4h, 8h, 16h and 32h from the
// 6th failure on. Retry is allowed at the exact boundary.
//
// Edge cases are decided in favour of the CA and of the certificate:
//
//   - A failure time with no count (a status written before counts existed)
//     waits the minimum (the upgrade fallback), so an upgrade
//     never releases every failing certificate at once.
//   - A negative or overflowing count waits the maximum.
//   - A Retry-After from the CA (a rate limit) is honoured even beyond Max,
//     but not past the expiry of a valid certificate (below).
//   - A certificate that failed to renew while still valid is retried before
//     it expires, whatever the backoff or the CA's Retry-After say, and
//     early enough that a failure of that retry still leaves room: the
//     next attempt is brought forward to notAfter minus the safety margin
//     ([Policy.SafetyMargin]; by default the renewal package's fail-safe
//     margin, 24h, or a sixth of the lifetime of a certificate shorter
//     than six days), and once within the margin to half the time left at
//     the failure, but no closer than [RetryFloor] (1m) to the failure, so
//     that it never loops. A 90-day certificate whose renewal keeps
//     failing is retried a day before it expires, then 12h, 6h, 3h …
//     before; a 1-hour one 10 minutes before, then 5, 2.5 …. The reason
//     is then RetryBeforeExpiry and the message names the expiry. A
//     certificate that had already expired at the failure keeps the
//     schedule: retrying sooner cannot save it.
//   - Opt-in deterministic jitter ([Policy.Jitter]) lengthens each delay by a
//     fraction derived from a stable key such as the certificate's UID, never
//     shortening it, so that certificates that failed in the same minute (an
//     issuer outage) do not all retry in the same minute, and a controller
//     restart re-rolls nothing.
//   - Opt-in short-lived bounding ([Policy.ShortLivedFraction]) caps the delay
//     at a fraction of the current certificate's remaining validity, never
//     below Min, so that a 6-day certificate is not left to expire behind a
//     32h wait. The cost is more attempts against the CA while a short-lived
//     certificate is near expiry: with the fraction 1/4, a certificate with
//     2 days left retries at most every 12h, then every 6h, down to every Min.
//
// A manual trigger (a host setting Issuing=True itself) bypasses backoff; the
// certificate package's trigger stage is where that happens.
//
// Decisions are pure: no clock, randomness or I/O.
package backoff
