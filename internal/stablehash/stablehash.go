package stablehash

import "math/bits"

const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// Sum64 returns a well-mixed 64-bit hash of domain and key. The domain
// separates independent uses of one key (for example "renewal" and
// "backoff"), so that a certificate that renews early does not also retry
// early.
func Sum64(domain, key string) uint64 {
	h := uint64(fnvOffset64)
	for i := 0; i < len(domain); i++ {
		h ^= uint64(domain[i])
		h *= fnvPrime64
	}
	// A separator keeps ("ab","c") and ("a","bc") apart.
	h ^= 0xff
	h *= fnvPrime64
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= fnvPrime64
	}
	return mix(h)
}

// Fraction returns a deterministic value in [0, 1) for domain and key.
// The empty key gives a well-defined value too; callers that treat "no key"
// as "no jitter" must check for it themselves.
func Fraction(domain, key string) float64 {
	// Use the top 53 bits so that every value is exactly representable.
	return float64(Sum64(domain, key)>>11) / (1 << 53)
}

// Scale returns a deterministic integer in [0, n) for domain and key, or 0
// when n <= 0. It is exact for every n (no float rounding) and is the form
// to use for durations: Scale(d, "renewal", uid) nanoseconds.
func Scale(n int64, domain, key string) int64 {
	if n <= 0 {
		return 0
	}
	hi, _ := bits.Mul64(Sum64(domain, key), uint64(n))
	return int64(hi)
}

// mix is the SplitMix64 finaliser.
func mix(z uint64) uint64 {
	z ^= z >> 30
	z *= 0xbf58476d1ce4e5b9
	z ^= z >> 27
	z *= 0x94d049bb133111eb
	z ^= z >> 31
	return z
}
