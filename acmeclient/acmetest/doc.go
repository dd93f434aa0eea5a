// Package acmetest runs a real ACME server inside the process for tests:
// Let's Encrypt's test CA, Pebble, on loopback, in the shape of
// net/http/httptest. A host author tests their own host against it in a
// few lines:
//
//	srv, err := acmetest.Start(acmetest.Options{})
//	if err != nil {
//		t.Fatal(err)
//	}
//	defer srv.Close()
//	client, err := acmeclient.New(srv.ClientConfig(accountKey))
//	issuer, err := acmeclient.NewIssuer(acmeclient.IssuerConfig{Client: client, Solvers: srv.Solvers(), …})
//
// A Server is four servers: the ACME endpoint over TLS on a random port
// (Client trusts its TLS certificate; Roots are the roots of the
// certificates it issues), a DNS server that resolves every name to
// 127.0.0.1 and serves the TXT records DNS-01 presentations set (and,
// for the zones a test adds, SOA, NS and CNAME records, as a libdns
// provider writes them: see DNS), an
// HTTP server on the port Pebble validates HTTP-01 challenges against,
// which answers with the server's own HTTP01Handler, and a TLS server on
// the port Pebble validates TLS-ALPN-01 challenges against, which
// answers with the server's own TLSALPN01Handler (or the caller's TLS
// server on Options.TLSALPN01Port). Solvers and TLSALPN01Solvers wire
// all of it: HTTP-01, DNS-01 and TLS-ALPN-01 presenters and self-checks
// that look where the CA looks.
//
// Pebble's fault knobs are Options: rejected nonces, validation sleep,
// always-valid validation, authorization reuse, chain length, alternate
// roots, profiles, external account binding, Retry-After on
// authorizations and orders, blocked domains. Pebble reads most of them
// from environment variables while its objects are built, so Start sets
// and restores them under a lock: a test that starts servers must not
// change those variables itself (t.Setenv of PEBBLE_*).
//
// Nothing here is a fake of ACME: the protocol, nonces, validation and
// issuance are Pebble's own. Where Pebble cannot show a behaviour (a 503,
// a 429, a request that times out), put a small HTTP server that answers
// with scripted errors in front of it.
package acmetest
