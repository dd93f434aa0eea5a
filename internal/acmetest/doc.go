// Package acmetest runs Let's Encrypt's test ACME server, Pebble, inside
// the process on loopback, for integration tests and the quickstart: the
// ACME endpoint over TLS on a random port, a DNS server that resolves every
// name to 127.0.0.1 and serves the TXT records a DNS-01 solver sets, and an
// HTTP server on the port Pebble validates HTTP-01 challenges against.
//
// Pebble's fault knobs (rejected nonces, validation sleep, authorization
// reuse, chain length, alternate roots, profiles, external account binding,
// Retry-After) are Options; Pebble reads them from environment variables
// while its objects are built, so Start sets and restores them under a
// lock. Tests that start servers must not use t.Setenv for the same
// variables.
//
// Nothing here is a fake of ACME: the protocol, nonces, validation and
// issuance are Pebble's own.
package acmetest
