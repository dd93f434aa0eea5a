// Package tlsserve serves the certificates a host.Store keeps over TLS:
// a GetCertificate, and a ready tls.Config, that answer each handshake
// with the current certificate for the name the client asks for.
//
//	srv, err := tlsserve.New(store, tlsserve.Options{TLSALPN01: alpn})
//	if err != nil { … }
//	defer srv.Close()
//	web := &http.Server{Handler: mux, TLSConfig: srv.TLSConfig()}
//	web.ServeTLS(ln, "", "")
//
// Names come from the store's Certificates: each certificate's
// spec.dnsNames and spec.ipAddresses are served from the secret its
// spec.secretName names (tls.crt, tls.key), read with package keys.
// A wildcard name ("*.example.com") serves names one label below it,
// as crypto/tls matches them. A hello without a server name (a client
// that dialled an IP address) is answered for the address it reached.
//
// Renewals are served as soon as they are written: a store that reports
// its writes (host.Watcher) tells the server which secrets and
// certificates changed, and the next handshake for such a name gets the
// new certificate — read in the background, or by that handshake if it
// comes first. Every store is read again on a bounded interval as well
// (Options.Resync), the only way to see changes in one that does not
// report them. Each secret is parsed once per resource version, never
// per handshake; a handshake waits on storage only for a certificate it
// has never loaded, or one the store reported changed and that is not
// loaded yet, and never longer than Options.LoadTimeout.
//
// The last good certificate of each secret is kept: while a renewal is
// pending or failing, and while the secret is missing or holds data
// that does not parse, or a key that is not the certificate's, the
// certificate served before goes on being served, and the problem is
// logged. A certificate whose key does not match is never served. A
// name for which there is no certificate gets an error that names it,
// and the handshake fails.
//
// A hello that offers the ALPN protocol "acme-tls/1" alone is a CA
// validating a TLS-ALPN-01 challenge (RFC 8737): it is answered by
// Options.TLSALPN01 (an *acmeclient.TLSALPN01Handler), so that the same
// listener serves the certificates and the challenges that issue them.
package tlsserve
