package keys

import (
	"bytes"
	"errors"
	"fmt"
)

// Bounds on what certlife reads of a secret's data. A decision reads the
// secret of each certificate on every pass, and whoever can write a
// secret can put anything in it: unbounded, a tls.crt of 50,000
// certificates costs a decision seconds and a hundred MiB, and a host
// decides for every certificate on one machine. A value beyond a bound is
// not parsed at all: it is an error wrapping ErrTooLarge, as undecodable
// data is (tls.crt or tls.key beyond a bound is an invalid key pair, which
// the certificate's next issuance replaces). The bounds are far above
// what a real TLS secret holds, so no secret that works with TLS
// software is refused.
const (
	// MaxSecretValueBytes bounds a certificate bundle (tls.crt, ca.crt,
	// the chain and CA an issuer answers with) and a keystore
	// (keystore.p12, truststore.p12, keystore.jks, truststore.jks): 1 MiB,
	// the most a Kubernetes Secret holds in all of its data. A chain of a
	// leaf and a few intermediates is a few KiB.
	MaxSecretValueBytes = 1 << 20
	// MaxCertificates bounds the PEM blocks of a certificate bundle: 100.
	// Chains in use hold a leaf and at most a handful of intermediates
	// (cross-signed paths included, under 10), and a CA bundle a few
	// certificates; every block parsed costs tens of microseconds and a
	// few KiB.
	MaxCertificates = 100
	// MaxPrivateKeyBytes bounds tls.key and a next private key: 64 KiB,
	// ten times the PEM of an RSA-8192 key (6.3 KiB), the largest key
	// certlife makes.
	MaxPrivateKeyBytes = 64 << 10
)

// ErrTooLarge is wrapped by the error for data beyond MaxSecretValueBytes,
// MaxCertificates or MaxPrivateKeyBytes.
var ErrTooLarge = errors.New("too large")

// pemBegin starts every PEM block (RFC 7468 §2).
var pemBegin = []byte("-----BEGIN ")

// checkBundle refuses a certificate bundle beyond MaxSecretValueBytes or
// MaxCertificates before anything parses it. Counting the blocks is one
// scan of at most MaxSecretValueBytes, without allocation.
func checkBundle(b []byte) error {
	if len(b) > MaxSecretValueBytes {
		return tooLarge(len(b), "bytes", MaxSecretValueBytes)
	}
	if n := bytes.Count(b, pemBegin); n > MaxCertificates {
		return tooLarge(n, "PEM blocks", MaxCertificates)
	}
	return nil
}

// checkKey refuses a private key beyond MaxPrivateKeyBytes.
func checkKey(b []byte) error {
	if len(b) > MaxPrivateKeyBytes {
		return tooLarge(len(b), "bytes", MaxPrivateKeyBytes)
	}
	return nil
}

func tooLarge(n int, unit string, limit int) error {
	return fmt.Errorf("%w: %d %s, over the limit of %d: not read", ErrTooLarge, n, unit, limit)
}
