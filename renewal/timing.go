package renewal

import (
	"math/big"
	"time"

	"github.com/certlife/certlife/internal/stablehash"
)

// ShortLivedThreshold: certificates valid for less than this renew at half
// their lifetime by default (Let's Encrypt's guidance for short-lived
// certificates), instead of when one third remains.
const ShortLivedThreshold = 10 * 24 * time.Hour

// DefaultJitterFraction bounds jitter to a twentieth of the lifetime.
const DefaultJitterFraction = 0.05

// Timing options that apply to every certificate of a host. The zero value
// is the lifetime-adaptive default with no jitter.
type Timing struct {
	// TwoThirdsForAll turns the short-lived rule off: every certificate
	// without renewBefore or a percentage renews when one third of its
	// lifetime remains, as the reference operator does. With it off (the
	// default), certificates shorter than ShortLivedThreshold renew at half
	// their lifetime.
	TwoThirdsForAll bool

	// Jitter moves each renewal time earlier by a deterministic amount
	// derived from the stable key (Input.JitterKey), never later, so that a
	// fleet whose certificates expire in the same second does not renew in
	// the same second. Off by default.
	Jitter bool

	// JitterFraction bounds the jitter as a fraction of the lifetime, in
	// (0, 0.5]. Zero means DefaultJitterFraction (1/20).
	JitterFraction float64
}

// Source says which rule chose a renewal time.
type Source string

// Sources of a renewal time.
const (
	SourceRenewBefore Source = "renewBefore"
	SourcePercentage  Source = "renewBeforePercentage"
	SourceDefault     Source = "default"           // one third of the lifetime remains
	SourceShortLived  Source = "shortLivedDefault" // half the lifetime, under 10 days
	SourceARI         Source = "ARI"
)

// Time returns when a certificate valid from notBefore to notAfter should
// renew, before jitter and ARI:
//
//   - notAfter − renewBefore, if 0 < renewBefore < lifetime;
//   - else notBefore + lifetime·(100−pct)/100, if 0 < pct < 100;
//   - else, for a lifetime under 10 days (unless t.TwoThirdsForAll), half
//     the lifetime;
//   - else when one third of the lifetime remains.
//
// The result is truncated to whole seconds, towards notBefore, so that a
// host that stores it with second precision never sees a time that has not
// quite come. An empty or inverted validity renews at notBefore.
func Time(notBefore, notAfter time.Time, renewBefore time.Duration, pct int32, t Timing) (time.Time, Source) {
	lifetime := notAfter.Sub(notBefore)
	if lifetime <= 0 {
		return notBefore.Truncate(time.Second), SourceDefault
	}
	var at time.Time
	var src Source
	switch {
	case renewBefore > 0 && renewBefore < lifetime:
		at, src = notAfter.Add(-renewBefore), SourceRenewBefore
	case pct > 0 && pct < 100:
		at, src = notBefore.Add(scale(lifetime, int64(100-pct), 100)), SourcePercentage
	case lifetime < ShortLivedThreshold && !t.TwoThirdsForAll:
		at, src = notBefore.Add(lifetime/2), SourceShortLived
	default:
		at, src = notBefore.Add(scale(lifetime, 2, 3)), SourceDefault
	}
	return truncate(at, notBefore), src
}

// scale returns d·num/den without overflow for any duration.
func scale(d time.Duration, num, den int64) time.Duration {
	if d < (1<<62)/time.Duration(num+1) {
		return d * time.Duration(num) / time.Duration(den)
	}
	r := new(big.Int).Mul(big.NewInt(int64(d)), big.NewInt(num))
	return time.Duration(r.Quo(r, big.NewInt(den)).Int64())
}

// truncate rounds at down to a whole second, but never before floor.
func truncate(at, floor time.Time) time.Time {
	t := at.Truncate(time.Second)
	if t.Before(floor) {
		return floor
	}
	return t
}

// jitter moves at earlier by a deterministic amount in
// [0, fraction·lifetime), never before notBefore.
func (t Timing) jitter(at, notBefore, notAfter time.Time, key string) time.Time {
	if !t.Jitter || key == "" {
		return at
	}
	f := t.JitterFraction
	if !(f > 0 && f <= 0.5) {
		f = DefaultJitterFraction
	}
	lifetime := notAfter.Sub(notBefore)
	spread := time.Duration(float64(lifetime) * f)
	back := time.Duration(stablehash.Scale(int64(spread), "renewal", key))
	return truncate(at.Add(-back), notBefore)
}
