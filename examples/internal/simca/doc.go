// Package simca is the fleet simulation's certificate authority (users
// want certificate/localca): it signs certificate signing requests with a
// self-signed ECDSA P-256 root, and can be told to misbehave the ways real
// issuers have (a certificate for the wrong key, an already expired one) so
// that hosts can prove certlife never loops on them.
package simca
