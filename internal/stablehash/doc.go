// Package stablehash turns a stable key (a certificate's UID, a serial
// number, a DNS name) into a deterministic fraction in [0, 1).
//
// Decisions in certlife must be pure: the same snapshot always gives the same
// result, and a restart never re-rolls a random choice. Where a decision needs
// to spread a fleet in time (renewal jitter, backoff jitter, a point inside an
// ARI window), it derives the spread from a stable key with this package
// instead of drawing from a random source.
//
// The hash is FNV-1a over the domain and the key, finished with the
// SplitMix64 mixer so that keys differing in one character land far apart.
// It is not a cryptographic hash and must not be used as one.
package stablehash
