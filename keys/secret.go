package keys

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// Keys of a secret's data map.
const (
	SecretCertificate   = "tls.crt"
	SecretPrivateKey    = "tls.key"
	SecretCA            = "ca.crt"
	SecretCombinedPEM   = "tls-combined.pem"
	SecretKeyDER        = "key.der"
	SecretPKCS12        = "keystore.p12"
	SecretPKCS12Trust   = "truststore.p12"
	SecretJKS           = "keystore.jks"
	SecretJKSTrust      = "truststore.jks"
	DefaultJKSAlias     = "certificate"
	redacted            = "[redacted]"
	minKeystorePassword = 1
)

// Password is a keystore password. It prints as "[redacted]" through
// String, GoString and every fmt verb; JSON keeps the value, because hosts
// store the spec.
type Password string

// String returns "[redacted]".
func (Password) String() string { return redacted }

// GoString returns "[redacted]".
func (Password) GoString() string { return redacted }

// Format prints "[redacted]" for every verb.
func (Password) Format(f fmt.State, _ rune) { io.WriteString(f, redacted) }

// PKCS12Profile selects the PKCS#12 encryption.
type PKCS12Profile string

// PKCS#12 profiles.
const (
	// PKCS12Modern: AES-256-CBC with PBKDF2 and an HMAC-SHA-256 MAC. The
	// default; needs Java 11.0.12 or later, OpenSSL 1.1.1 or later.
	PKCS12Modern PKCS12Profile = "Modern2023"
	// PKCS12LegacyRC2: RC2-40 for certificates, 3DES for keys, SHA-1 MAC:
	// for old Java and old Windows.
	PKCS12LegacyRC2 PKCS12Profile = "LegacyRC2"
	// PKCS12LegacyDES: 3DES for certificates and keys, SHA-1 MAC.
	PKCS12LegacyDES PKCS12Profile = "LegacyDES"
)

// PKCS12Spec asks for keystore.p12 (and truststore.p12 when a CA exists).
type PKCS12Spec struct {
	// Password protects the keystore. Required.
	Password Password `json:"password"`
	// Profile; empty means PKCS12Modern.
	Profile PKCS12Profile `json:"profile,omitempty"`
}

// JKSSpec asks for keystore.jks (and truststore.jks when a CA exists).
type JKSSpec struct {
	// Password protects the keystore and its key entry. Required.
	Password Password `json:"password"`
	// Alias of the key entry; empty means "certificate".
	Alias string `json:"alias,omitempty"`
}

// OutputSpec says what a certificate's secret holds beyond tls.crt,
// tls.key and ca.crt. The zero value writes those three only, with the key
// in PKCS#1.
type OutputSpec struct {
	// KeyEncoding of tls.key; empty means PKCS1.
	KeyEncoding Encoding `json:"keyEncoding,omitempty"`
	// CombinedPEM adds tls-combined.pem: the key, then the chain.
	CombinedPEM bool `json:"combinedPEM,omitempty"`
	// DER adds key.der: the key as PKCS#8 DER.
	DER bool `json:"der,omitempty"`
	// PKCS12, when set, adds keystore.p12 and truststore.p12.
	PKCS12 *PKCS12Spec `json:"pkcs12,omitempty"`
	// JKS, when set, adds keystore.jks and truststore.jks.
	JKS *JKSSpec `json:"jks,omitempty"`
}

// ErrOutputSpec is wrapped by every error OutputSpec.Validate returns.
var ErrOutputSpec = errors.New("keys: invalid output spec")

// Validate names the first field of the spec that cannot be honoured.
func (o OutputSpec) Validate() error {
	if o.KeyEncoding != "" && o.KeyEncoding != EncodingPKCS1 && o.KeyEncoding != EncodingPKCS8 {
		return fmt.Errorf("%w: keyEncoding: %q is not PKCS1 or PKCS8", ErrOutputSpec, o.KeyEncoding)
	}
	if p := o.PKCS12; p != nil {
		if len(p.Password) < minKeystorePassword {
			return fmt.Errorf("%w: pkcs12.password: a keystore password is required", ErrOutputSpec)
		}
		switch p.Profile {
		case "", PKCS12Modern, PKCS12LegacyRC2, PKCS12LegacyDES:
		default:
			return fmt.Errorf("%w: pkcs12.profile: %q is not Modern2023, LegacyRC2 or LegacyDES", ErrOutputSpec, p.Profile)
		}
	}
	if j := o.JKS; j != nil && len(j.Password) < minKeystorePassword {
		return fmt.Errorf("%w: jks.password: a keystore password is required", ErrOutputSpec)
	}
	return nil
}

// SecretData builds a secret's data from a private key, the certificate
// chain (PEM, leaf first) and the CA (PEM, may be empty), as out asks.
// rand supplies keystore salts; it is only read when a keystore is asked
// for. Errors name the input at fault and never include key material. A
// chain or CA beyond MaxSecretValueBytes or MaxCertificates is an error
// wrapping ErrTooLarge: the secret could not be read back.
func SecretData(rand io.Reader, key crypto.Signer, chainPEM, caPEM []byte, out OutputSpec) (map[string][]byte, error) {
	return secretData(rand, key, chainPEM, caPEM, out, parseCertificates, EncodePrivateKey)
}

// secretData is SecretData with the bundles parsed by parse and the key
// encoded by encode.
func secretData(rand io.Reader, key crypto.Signer, chainPEM, caPEM []byte, out OutputSpec,
	parse func([]byte) ([]*x509.Certificate, error), encode func(crypto.Signer, Encoding) ([]byte, error)) (map[string][]byte, error) {
	if err := out.Validate(); err != nil {
		return nil, err
	}
	if key == nil {
		return nil, errors.New("keys: SecretData needs a private key")
	}
	chain, err := parse(chainPEM)
	if err != nil || len(chain) == 0 {
		if err == nil {
			err = errors.New("no certificate")
		}
		return nil, &FieldError{Field: SecretCertificate, Err: err}
	}
	if !PublicKeysEqual(chain[0].PublicKey, key.Public()) {
		return nil, &FieldError{Field: SecretCertificate, Err: ErrKeyMismatch}
	}
	var cas []*x509.Certificate
	if len(bytes.TrimSpace(caPEM)) > 0 {
		if cas, err = parse(caPEM); err != nil {
			return nil, &FieldError{Field: SecretCA, Err: err}
		}
	}
	keyPEM, err := encode(key, out.KeyEncoding)
	if err != nil {
		return nil, err
	}
	data := map[string][]byte{
		SecretCertificate: bytes.Clone(chainPEM),
		SecretPrivateKey:  keyPEM,
		SecretCA:          bytes.Clone(caPEM),
	}
	if out.CombinedPEM {
		data[SecretCombinedPEM] = combinedPEM(keyPEM, chainPEM)
	}
	if out.DER {
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return nil, fmt.Errorf("keys: key.der: %w", err)
		}
		data[SecretKeyDER] = der
	}
	if p := out.PKCS12; p != nil {
		if rand == nil {
			return nil, errors.New("keys: a PKCS#12 keystore needs a source of randomness")
		}
		enc := pkcs12Encoder(p.Profile).WithRand(rand)
		ks, err := enc.Encode(key, chain[0], chain[1:], string(p.Password))
		if err != nil {
			return nil, fmt.Errorf("keys: %s: %w", SecretPKCS12, err)
		}
		data[SecretPKCS12] = ks
		if len(cas) > 0 {
			ts, err := enc.EncodeTrustStore(cas, string(p.Password))
			if err != nil {
				return nil, fmt.Errorf("keys: %s: %w", SecretPKCS12Trust, err)
			}
			data[SecretPKCS12Trust] = ts
		}
	}
	if j := out.JKS; j != nil {
		if rand == nil {
			return nil, errors.New("keys: a JKS keystore needs a source of randomness")
		}
		ks, ts, err := jksStores(rand, key, chain, cas, j)
		if err != nil {
			return nil, err
		}
		data[SecretJKS] = ks
		if ts != nil {
			data[SecretJKSTrust] = ts
		}
	}
	return data, nil
}

func pkcs12Encoder(p PKCS12Profile) *pkcs12.Encoder {
	switch p {
	case PKCS12LegacyRC2:
		return pkcs12.LegacyRC2
	case PKCS12LegacyDES:
		return pkcs12.LegacyDES
	default:
		return pkcs12.Modern2023
	}
}

func jksStores(rand io.Reader, key crypto.Signer, chain, cas []*x509.Certificate, j *JKSSpec) (ks, ts []byte, err error) {
	alias := j.Alias
	if alias == "" {
		alias = DefaultJKSAlias
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("keys: %s: %w", SecretJKS, err)
	}
	// The leaf's NotBefore stands in for "creation time": a decision must
	// not read the clock, and the same inputs should give the same store.
	created := chain[0].NotBefore
	entry := keystore.PrivateKeyEntry{CreationTime: created, PrivateKey: pkcs8}
	for _, c := range chain {
		entry.CertificateChain = append(entry.CertificateChain, keystore.Certificate{Type: "X509", Content: c.Raw})
	}
	for _, c := range cas {
		entry.CertificateChain = append(entry.CertificateChain, keystore.Certificate{Type: "X509", Content: c.Raw})
	}
	store := keystore.New(keystore.WithCustomRandomNumberGenerator(rand))
	if err := store.SetPrivateKeyEntry(alias, entry, []byte(j.Password)); err != nil {
		return nil, nil, fmt.Errorf("keys: %s: %w", SecretJKS, err)
	}
	var buf bytes.Buffer
	if err := store.Store(&buf, []byte(j.Password)); err != nil {
		return nil, nil, fmt.Errorf("keys: %s: %w", SecretJKS, err)
	}
	if len(cas) == 0 {
		return buf.Bytes(), nil, nil
	}
	trust := keystore.New(keystore.WithCustomRandomNumberGenerator(rand))
	for i, c := range cas {
		name := "ca"
		if i > 0 {
			name = fmt.Sprintf("ca-%d", i)
		}
		if err := trust.SetTrustedCertificateEntry(name, keystore.TrustedCertificateEntry{
			CreationTime: created, Certificate: keystore.Certificate{Type: "X509", Content: c.Raw},
		}); err != nil {
			return nil, nil, fmt.Errorf("keys: %s: %w", SecretJKSTrust, err)
		}
	}
	var tbuf bytes.Buffer
	if err := trust.Store(&tbuf, []byte(j.Password)); err != nil {
		return nil, nil, fmt.Errorf("keys: %s: %w", SecretJKSTrust, err)
	}
	return buf.Bytes(), tbuf.Bytes(), nil
}

// parseCertificates parses every CERTIFICATE block of a PEM bundle, within
// MaxSecretValueBytes and MaxCertificates.
func parseCertificates(pemBytes []byte) ([]*x509.Certificate, error) {
	return parseBundle(pemBytes, x509.ParseCertificate)
}

// parseBundle is parseCertificates with each block's DER parsed by parse.
func parseBundle(pemBytes []byte, parse func([]byte) (*x509.Certificate, error)) ([]*x509.Certificate, error) {
	if err := checkBundle(pemBytes); err != nil {
		return nil, err
	}
	var out []*x509.Certificate
	rest := pemBytes
	for i := 0; ; i++ {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("PEM block %d has type %q, not CERTIFICATE", i, block.Type)
		}
		c, err := parse(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", i, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 && len(bytes.TrimSpace(pemBytes)) > 0 {
		return nil, errors.New("no PEM block found")
	}
	return out, nil
}

// String describes the spec with the password redacted.
func (p PKCS12Spec) String() string {
	return fmt.Sprintf("PKCS12Spec{password: %s, profile: %q}", redacted, p.Profile)
}

// Format prints String for every verb.
func (p PKCS12Spec) Format(f fmt.State, _ rune) { io.WriteString(f, p.String()) }

// String describes the spec with the password redacted.
func (j JKSSpec) String() string {
	return fmt.Sprintf("JKSSpec{password: %s, alias: %q}", redacted, j.Alias)
}

// Format prints String for every verb.
func (j JKSSpec) Format(f fmt.State, _ rune) { io.WriteString(f, j.String()) }
