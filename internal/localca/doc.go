// Package localca is a small certificate authority for tests, examples and
// the fleet simulation: it signs certificate signing requests with a
// self-signed ECDSA P-256 root, and can be told to misbehave the ways real
// issuers have (a certificate for the wrong key, an already expired one) so
// that hosts can prove certlife never loops on them.
package localca
