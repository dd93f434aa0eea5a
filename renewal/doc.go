// Package renewal answers "when may this certificate renew?" as pure
// functions of its validity, its renewal spec, the host's options, `now`,
// and a stable key for jitter (RFC 9773, Let's Encrypt's
// integration guidance).
//
// # Renewal time
//
// [Time] picks, in order: notAfter − renewBefore when 0 < renewBefore <
// lifetime; the percentage of the lifetime when 0 < pct < 100; half the
// lifetime for certificates shorter than 10 days ([ShortLivedThreshold],
// Let's Encrypt's advice for short-lived certificates); otherwise when one
// third of the lifetime remains. [Timing.TwoThirdsForAll] turns the
// short-lived rule off, giving the reference operator's 2/3 for every
// lifetime (a 3h certificate then renews at +2h instead of +1h30m). Times
// are truncated to whole seconds.
//
// Opt-in jitter ([Timing.Jitter]) moves the time earlier, never later, by a
// deterministic amount of at most a twentieth of the lifetime, derived from
// the certificate's stable key: ten thousand certificates that expire in
// the same second renew spread over days, and a restart re-rolls nothing.
//
// # ARI (RFC 9773)
//
// A suggested window from the CA replaces the computed time: [Decide] picks
// a point in [start, end) from the stable key — the same point on every
// call for the same window — and renews once that point has passed (RFC
// 9773 §4.2), not as soon as the window opens: a thousand certificates
// given one 48-hour window renew spread over its 48 hours. A window that
// has ended, or that the CA put wholly in the past, renews at once; one
// that runs past notAfter has its point chosen before notAfter. A
// malformed window (end not after start) or a stale one (ending before
// notBefore, starting at or after notAfter) is ignored, and the message
// says so. [CertID] computes the
// certificate identifier, and [NextPoll] when to ask again: Retry-After
// clamped to [MinPoll, MaxPoll], DefaultPoll without one.
//
// # Policies and windows
//
// Automatic renews at the renewal time (windows given with it are ignored,
// and a RenewalWindowsIgnored condition says so). Disabled never renews on
// its own (RenewalDisabled); a manual trigger still works. Scheduled renews
// only inside a [Window]: days of the week, a start and end "HH:MM" with
// rollover past midnight, an IANA time zone. When a due renewal is outside
// every window it is deferred to the next window start (RenewalDeferred),
// unless expiry is within the safety margin, when it renews anyway
// (RenewalWindowBypassed) — the fail-safe, off only in strict mode. Invalid
// windows set RenewalConfigInvalid and stop windowed renewal until
// corrected; the fail-safe still protects against expiry.
//
// Daylight saving is defined: a window starting at a wall time that occurs
// twice opens at the first occurrence; one starting in a skipped hour opens
// when the clocks jump (02:30 on the spring-forward day in Europe/Oslo opens
// at 03:00 CEST). A window left empty by a jump does not open that day.
//
// Time zones come from the IANA time zone database embedded in the package
// (release [TimeZoneDatabase]), never from the machine's files: windows
// behave the same on every machine, with or without /usr/share/zoneinfo,
// and compiling them reads no file.
package renewal
