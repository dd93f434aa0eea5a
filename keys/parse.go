package keys

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Errors of secret parsing, for errors.Is.
var (
	// ErrMissing: the field is absent or empty.
	ErrMissing = errors.New("missing")
	// ErrKeyMismatch: the private key does not match the certificate.
	ErrKeyMismatch = errors.New("private key does not match the certificate")
)

// FieldError is a problem with one field of a secret's data. Its text names
// the field and never includes the field's bytes.
type FieldError struct {
	// Field is the data key, e.g. "tls.key".
	Field string
	// Err is the cause; ErrMissing for an absent field.
	Err error
}

func (e *FieldError) Error() string { return fmt.Sprintf("keys: %s: %v", e.Field, e.Err) }

// Unwrap returns the cause.
func (e *FieldError) Unwrap() error { return e.Err }

// ParsedSecret is a secret's data parsed once: the leaf certificate and the
// private key, with the rest of the chain and the CA parsed only on request.
// It is immutable after ParseSecretData returns, so a host may cache it by
// the secret's resource version and share it between goroutines.
//
// It never prints the key: String and every fmt verb show only the leaf's
// subject, serial and whether the key matches.
type ParsedSecret struct {
	// Leaf is the first certificate of tls.crt; nil when CertErr is set.
	Leaf *x509.Certificate
	// Key is the private key of tls.key; nil when KeyErr is set.
	Key crypto.Signer
	// CertErr is a *FieldError for tls.crt (ErrMissing when absent).
	CertErr error
	// KeyErr is a *FieldError for tls.key (ErrMissing when absent).
	KeyErr error
	// KeyMatches is true when both parsed and the key is the leaf's.
	KeyMatches bool

	chainRest []byte // PEM after the leaf
	caPEM     []byte
	keyPEM    []byte // tls.key, when Key is set
	keyType   string // its PEM block type

	once     sync.Once
	chain    []*x509.Certificate
	chainErr error
}

// ParseSecretData parses tls.crt (its first certificate only) and tls.key.
// A tls.crt beyond MaxSecretValueBytes or MaxCertificates, or a tls.key
// beyond MaxPrivateKeyBytes, is not parsed: its error wraps ErrTooLarge.
// The result is never nil: a caller tells "missing" from "undecodable" from
// "key does not match" by CertErr, KeyErr and KeyMatches. The returned
// error joins CertErr and KeyErr (nil when both parsed; a mismatch is not an
// error here, it is KeyMatches false).
func ParseSecretData(data map[string][]byte) (*ParsedSecret, error) {
	return parseSecretData(data, parseLeaf, decodePrivateKey)
}

// parseSecretData is ParseSecretData with the leaf and the key read by the
// functions given (a ParseCache's, or the plain parsers).
func parseSecretData(data map[string][]byte, leafOf func([]byte) (*x509.Certificate, int, error), keyOf func([]byte) (crypto.Signer, string, error)) (*ParsedSecret, error) {
	p := &ParsedSecret{caPEM: data[SecretCA]}
	if crt := data[SecretCertificate]; len(crt) == 0 {
		p.CertErr = &FieldError{Field: SecretCertificate, Err: ErrMissing}
	} else if err := checkBundle(crt); err != nil {
		p.CertErr = &FieldError{Field: SecretCertificate, Err: err}
	} else if leaf, restAt, err := leafOf(crt); err != nil {
		p.CertErr = &FieldError{Field: SecretCertificate, Err: err}
	} else {
		p.Leaf, p.chainRest = leaf, crt[restAt:]
	}
	if k := data[SecretPrivateKey]; len(k) == 0 {
		p.KeyErr = &FieldError{Field: SecretPrivateKey, Err: ErrMissing}
	} else if err := checkKey(k); err != nil {
		p.KeyErr = &FieldError{Field: SecretPrivateKey, Err: fmt.Errorf("%w: %w", ErrDecode, err)}
	} else if key, typ, err := keyOf(k); err != nil {
		p.KeyErr = &FieldError{Field: SecretPrivateKey, Err: err}
	} else {
		p.Key, p.keyPEM, p.keyType = key, k, typ
	}
	if p.Leaf != nil && p.Key != nil {
		p.KeyMatches = PublicKeysEqual(p.Leaf.PublicKey, p.Key.Public())
	}
	return p, errors.Join(p.CertErr, p.KeyErr)
}

// parseLeaf parses the first PEM block of a non-empty tls.crt as a
// certificate; restAt is where the blocks after it begin.
func parseLeaf(crt []byte) (leaf *x509.Certificate, restAt int, err error) {
	return parseLeafWith(crt, x509.ParseCertificate)
}

// parseLeafWith is parseLeaf with the leaf's DER parsed by parse.
func parseLeafWith(crt []byte, parse func([]byte) (*x509.Certificate, error)) (leaf *x509.Certificate, restAt int, err error) {
	block, rest := pem.Decode(crt)
	switch {
	case block == nil:
		return nil, 0, errors.New("no PEM block found")
	case block.Type != "CERTIFICATE":
		return nil, 0, fmt.Errorf("PEM block type %q is not CERTIFICATE", block.Type)
	}
	leaf, err = parse(block.Bytes)
	if err != nil {
		return nil, 0, err
	}
	return leaf, len(crt) - len(rest), nil
}

// Chain returns the whole chain of tls.crt, leaf first, parsing the
// certificates after the leaf on the first call. A tls.crt beyond the
// bounds never has a Leaf, so Chain parses at most MaxCertificates.
func (p *ParsedSecret) Chain() ([]*x509.Certificate, error) {
	if p == nil || p.Leaf == nil {
		return nil, &FieldError{Field: SecretCertificate, Err: ErrMissing}
	}
	p.once.Do(func() {
		rest, err := parseCertificates(p.chainRest)
		if err != nil {
			p.chainErr = &FieldError{Field: SecretCertificate, Err: err}
			return
		}
		p.chain = append([]*x509.Certificate{p.Leaf}, rest...)
	})
	return p.chain, p.chainErr
}

// CA parses ca.crt; an absent ca.crt gives nil and no error, one beyond
// MaxSecretValueBytes or MaxCertificates an error wrapping ErrTooLarge,
// without parsing it.
func (p *ParsedSecret) CA() ([]*x509.Certificate, error) {
	if p == nil {
		return nil, nil
	}
	cas, err := parseCertificates(p.caPEM)
	if err != nil {
		return nil, &FieldError{Field: SecretCA, Err: err}
	}
	return cas, nil
}

// String describes the secret without key material.
func (p *ParsedSecret) String() string {
	if p == nil {
		return "ParsedSecret(nil)"
	}
	leaf := "none"
	if p.Leaf != nil {
		leaf = fmt.Sprintf("%q serial %s", p.Leaf.Subject.CommonName, p.Leaf.SerialNumber)
	}
	key := "none"
	if p.Key != nil {
		alg, size := describePublicKey(p.Key.Public())
		key = fmt.Sprintf("%s %d %s", alg, size, redacted)
	}
	return fmt.Sprintf("ParsedSecret{leaf: %s, key: %s, keyMatches: %v}", leaf, key, p.KeyMatches)
}

// Format prints String for every verb, so %v, %+v and %#v never reach the
// key's fields.
func (p *ParsedSecret) Format(f fmt.State, _ rune) { io.WriteString(f, p.String()) }
