package keys

import (
	"errors"
	"fmt"
)

// Algorithm is a private key algorithm.
type Algorithm string

// Algorithms.
const (
	AlgorithmRSA     Algorithm = "RSA"
	AlgorithmECDSA   Algorithm = "ECDSA"
	AlgorithmEd25519 Algorithm = "Ed25519"
)

// Encoding is how a private key is written to a secret's tls.key.
type Encoding string

// Encodings.
const (
	// EncodingPKCS1 writes RSA keys as PKCS#1, ECDSA keys as SEC1 and
	// Ed25519 keys as PKCS#8 (Ed25519 has no other standard form).
	EncodingPKCS1 Encoding = "PKCS1"
	// EncodingPKCS8 writes every key as PKCS#8.
	EncodingPKCS8 Encoding = "PKCS8"
)

// RotationPolicy says whether a re-issuance gets a new private key.
type RotationPolicy string

// Rotation policies.
const (
	// RotationAlways generates a new key for every issuance.
	RotationAlways RotationPolicy = "Always"
	// RotationNever reuses the key in the target secret while it matches
	// the spec.
	RotationNever RotationPolicy = "Never"
)

// Defaults of KeySpec, as the reference operator has them today.
const (
	DefaultAlgorithm      = AlgorithmRSA
	DefaultRSASize        = 2048
	DefaultECDSASize      = 256
	DefaultEncoding       = EncodingPKCS1
	DefaultRotationPolicy = RotationAlways
)

// ErrInvalidSpec is wrapped by every error KeySpec.Validate returns.
var ErrInvalidSpec = errors.New("keys: invalid key spec")

// KeySpec says what private key a certificate wants. The zero value is an
// RSA 2048 key in PKCS#1, rotated on every issuance.
type KeySpec struct {
	// Algorithm is RSA, ECDSA or Ed25519. Empty means RSA.
	Algorithm Algorithm `json:"algorithm,omitempty"`
	// Size is the RSA modulus in bits (2048 to 8192, default 2048) or the
	// ECDSA curve size (256, 384 or 521, default 256). Ignored for Ed25519.
	Size int `json:"size,omitempty"`
	// Encoding of tls.key. Empty means PKCS1.
	Encoding Encoding `json:"encoding,omitempty"`
	// RotationPolicy. Empty means Always.
	RotationPolicy RotationPolicy `json:"rotationPolicy,omitempty"`
}

// WithDefaults returns s with every empty field set to its default. An
// Ed25519 spec keeps Size zero.
func (s KeySpec) WithDefaults() KeySpec {
	if s.Algorithm == "" {
		s.Algorithm = DefaultAlgorithm
	}
	if s.Size == 0 {
		switch s.Algorithm {
		case AlgorithmRSA:
			s.Size = DefaultRSASize
		case AlgorithmECDSA:
			s.Size = DefaultECDSASize
		}
	}
	if s.Algorithm == AlgorithmEd25519 {
		s.Size = 0
	}
	if s.Encoding == "" {
		s.Encoding = DefaultEncoding
	}
	if s.RotationPolicy == "" {
		s.RotationPolicy = DefaultRotationPolicy
	}
	return s
}

// Validate reports the first field of the spec (after defaults) that
// cannot be honoured, naming the field and the value.
func (s KeySpec) Validate() error {
	d := s.WithDefaults()
	switch d.Algorithm {
	case AlgorithmRSA:
		if d.Size < 2048 || d.Size > 8192 {
			return fmt.Errorf("%w: size: %d is not an RSA size between 2048 and 8192", ErrInvalidSpec, s.Size)
		}
	case AlgorithmECDSA:
		if d.Size != 256 && d.Size != 384 && d.Size != 521 {
			return fmt.Errorf("%w: size: %d is not an ECDSA curve size (256, 384 or 521)", ErrInvalidSpec, s.Size)
		}
	case AlgorithmEd25519:
	default:
		return fmt.Errorf("%w: algorithm: %q is not RSA, ECDSA or Ed25519", ErrInvalidSpec, s.Algorithm)
	}
	if d.Encoding != EncodingPKCS1 && d.Encoding != EncodingPKCS8 {
		return fmt.Errorf("%w: encoding: %q is not PKCS1 or PKCS8", ErrInvalidSpec, s.Encoding)
	}
	if d.RotationPolicy != RotationAlways && d.RotationPolicy != RotationNever {
		return fmt.Errorf("%w: rotationPolicy: %q is not Always or Never", ErrInvalidSpec, s.RotationPolicy)
	}
	return nil
}
