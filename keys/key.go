package keys

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
)

// ErrDecode is wrapped by every error DecodePrivateKey returns. Its text
// never includes key bytes.
var ErrDecode = errors.New("keys: cannot decode private key")

// Generate makes a private key for spec (after defaults) from rand.
func Generate(rand io.Reader, spec KeySpec) (crypto.Signer, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if rand == nil {
		return nil, errors.New("keys: Generate needs a source of randomness")
	}
	s := spec.WithDefaults()
	switch s.Algorithm {
	case AlgorithmRSA:
		return rsa.GenerateKey(rand, s.Size)
	case AlgorithmECDSA:
		return ecdsa.GenerateKey(curve(s.Size), rand)
	default:
		_, k, err := ed25519.GenerateKey(rand)
		return k, err
	}
}

func curve(size int) elliptic.Curve {
	switch size {
	case 384:
		return elliptic.P384()
	case 521:
		return elliptic.P521()
	default:
		return elliptic.P256()
	}
}

// EncodePrivateKey writes key as PEM in the given encoding (empty means
// PKCS1): PKCS1 writes RSA as PKCS#1 ("RSA PRIVATE KEY"), ECDSA as SEC1
// ("EC PRIVATE KEY") and Ed25519 as PKCS#8 ("PRIVATE KEY"); PKCS8 writes
// PKCS#8 for all.
func EncodePrivateKey(key crypto.Signer, enc Encoding) ([]byte, error) {
	der, typ, err := marshalPrivateKey(key, enc)
	if err != nil {
		return nil, err
	}
	return encodePEM(typ, der), nil
}

// encodePEM encodes one block into a slice of its own and zeroes the
// encoder's buffer, which may hold a private key.
func encodePEM(typ string, der []byte) []byte {
	b := pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
	out := make([]byte, len(b))
	copy(out, b)
	clear(b)
	return out
}

// privateKeyPEMType is the PEM block type EncodePrivateKey writes for key
// in enc: PKCS#1 means the key type's own form (RSA PRIVATE KEY, SEC1's EC
// PRIVATE KEY); Ed25519 has none and is always PKCS#8 (PRIVATE KEY).
func privateKeyPEMType(key crypto.Signer, enc Encoding) (string, error) {
	if enc == "" {
		enc = EncodingPKCS1
	}
	if enc != EncodingPKCS1 && enc != EncodingPKCS8 {
		return "", fmt.Errorf("keys: encoding: %q is not PKCS1 or PKCS8", enc)
	}
	switch key.(type) {
	case *rsa.PrivateKey:
		if enc == EncodingPKCS1 {
			return "RSA PRIVATE KEY", nil
		}
	case *ecdsa.PrivateKey:
		if enc == EncodingPKCS1 {
			return "EC PRIVATE KEY", nil
		}
	case ed25519.PrivateKey:
	case nil:
		return "", errors.New("keys: no private key to encode")
	default:
		return "", fmt.Errorf("keys: unsupported private key type %T", key)
	}
	return "PRIVATE KEY", nil
}

func marshalPrivateKey(key crypto.Signer, enc Encoding) (der []byte, pemType string, err error) {
	pemType, err = privateKeyPEMType(key, enc)
	if err != nil {
		return nil, "", err
	}
	switch pemType {
	case "RSA PRIVATE KEY":
		return x509.MarshalPKCS1PrivateKey(key.(*rsa.PrivateKey)), pemType, nil
	case "EC PRIVATE KEY":
		der, err := x509.MarshalECPrivateKey(key.(*ecdsa.PrivateKey))
		if err != nil {
			return nil, "", fmt.Errorf("keys: encoding ECDSA key: %w", err)
		}
		return der, pemType, nil
	}
	der, err = x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, "", fmt.Errorf("keys: encoding PKCS#8: %w", err)
	}
	return der, "PRIVATE KEY", nil
}

// DecodePrivateKey reads the first PEM block of pemBytes as a PKCS#1
// ("RSA PRIVATE KEY"), SEC1 ("EC PRIVATE KEY") or PKCS#8 ("PRIVATE KEY")
// private key with crypto/x509's parsers. Errors wrap ErrDecode and never
// quote the input; input beyond MaxPrivateKeyBytes is not read, and its
// error wraps ErrTooLarge too.
func DecodePrivateKey(pemBytes []byte) (crypto.Signer, error) {
	key, _, err := decodePrivateKey(pemBytes)
	return key, err
}

// decodePrivateKey is DecodePrivateKey that also returns the key's PEM
// block type.
func decodePrivateKey(pemBytes []byte) (crypto.Signer, string, error) {
	if err := checkKey(pemBytes); err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrDecode, err)
	}
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, "", fmt.Errorf("%w: no PEM block found", ErrDecode)
	}
	key, err := parsePrivateKeyBlock(block)
	if err != nil {
		return nil, "", err
	}
	return key, block.Type, nil
}

func parsePrivateKeyBlock(block *pem.Block) (crypto.Signer, error) {
	var (
		key any
		err error
	)
	switch block.Type {
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("%w: PEM block type %q is not a private key", ErrDecode, block.Type)
	}
	if err != nil {
		// The x509 errors name the structure, not the bytes.
		return nil, fmt.Errorf("%w: %s: %v", ErrDecode, block.Type, err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%w: unsupported key type %T", ErrDecode, key)
	}
	return signer, nil
}

// SpecMismatches returns, for a public key, every way it differs from spec
// (after defaults): "algorithm: spec wants ECDSA, key is RSA" or
// "size: spec wants 384, key is 256". Nil means the key meets the spec.
// Encoding and rotation policy are not properties of a key.
func SpecMismatches(pub crypto.PublicKey, spec KeySpec) []string {
	s := spec.WithDefaults()
	alg, size := describePublicKey(pub)
	if alg == "" {
		return []string{fmt.Sprintf("algorithm: spec wants %s, key is of unsupported type %T", s.Algorithm, pub)}
	}
	if alg != s.Algorithm {
		return []string{fmt.Sprintf("algorithm: spec wants %s, key is %s", s.Algorithm, alg)}
	}
	if alg != AlgorithmEd25519 && size != s.Size {
		return []string{fmt.Sprintf("size: spec wants %d, key is %d", s.Size, size)}
	}
	return nil
}

// describePublicKey returns the algorithm and size of a public or private
// key, or "" for an unknown type.
func describePublicKey(pub crypto.PublicKey) (Algorithm, int) {
	if s, ok := pub.(crypto.Signer); ok {
		pub = s.Public()
	}
	switch k := pub.(type) {
	case *rsa.PublicKey:
		if k == nil || k.N == nil {
			return "", 0
		}
		return AlgorithmRSA, k.N.BitLen()
	case *ecdsa.PublicKey:
		if k == nil || k.Curve == nil {
			return "", 0
		}
		return AlgorithmECDSA, k.Curve.Params().BitSize
	case ed25519.PublicKey:
		return AlgorithmEd25519, 0
	}
	return "", 0
}

// PublicKeysEqual reports whether a and b are the same public key. Either
// may also be a private key (its public half is compared). Nil, mismatched
// or unknown types are not equal; it never panics.
func PublicKeysEqual(a, b crypto.PublicKey) bool {
	a, b = publicOf(a), publicOf(b)
	switch ka := a.(type) {
	case *rsa.PublicKey:
		kb, ok := b.(*rsa.PublicKey)
		return ok && ka != nil && kb != nil && ka.N != nil && kb.N != nil && ka.E == kb.E && ka.N.Cmp(kb.N) == 0
	case *ecdsa.PublicKey:
		kb, ok := b.(*ecdsa.PublicKey)
		if !ok || ka == nil || kb == nil || ka.X == nil || kb.X == nil || ka.Y == nil || kb.Y == nil || ka.Curve == nil || kb.Curve == nil {
			return false
		}
		return ka.Curve.Params().Name == kb.Curve.Params().Name && ka.X.Cmp(kb.X) == 0 && ka.Y.Cmp(kb.Y) == 0
	case ed25519.PublicKey:
		kb, ok := b.(ed25519.PublicKey)
		return ok && len(ka) == ed25519.PublicKeySize && bytes.Equal(ka, kb)
	}
	return false
}

func publicOf(k crypto.PublicKey) crypto.PublicKey {
	switch s := k.(type) {
	case *rsa.PrivateKey:
		if s == nil {
			return nil
		}
		return &s.PublicKey
	case *ecdsa.PrivateKey:
		if s == nil {
			return nil
		}
		return &s.PublicKey
	case ed25519.PrivateKey:
		if len(s) != ed25519.PrivateKeySize {
			return nil
		}
		return s.Public()
	}
	return k
}
