package keys

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"encoding/asn1"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

var (
	tagCurve     = cbasn1.Tag(0).Constructed().ContextSpecific()
	tagPublicKey = cbasn1.Tag(1).Constructed().ContextSpecific()
)

// parseSEC1Fast reads a SEC 1 ECPrivateKey (RFC 5915 §3) with cryptobyte
// and derives the key as x509.ParseECPrivateKey does. curve, when not nil,
// is the curve named outside the structure (PKCS #8 parameters), which
// x509 uses instead of the structure's own. ok is false for anything it
// does not read exactly as x509 (which parses the structure with
// encoding/asn1) does: every malformed or unsupported key, and well-formed
// ones it leaves to x509 (elements in a non-canonical order or form, an
// OID that names no curve x509 knows). It never accepts what x509 rejects,
// and the key it gives is x509's: ecdsa.ParseRawPrivateKey of the same
// fixed-length scalar.
func parseSEC1Fast(der []byte, curve elliptic.Curve) (_ *ecdsa.PrivateKey, ok bool) {
	in := cryptobyte.String(der)
	var seq, d cryptobyte.String
	var version int64
	// x509 reads only the first element of der, and in it, no further
	// than it needs; both are kept here.
	if !in.ReadASN1(&seq, cbasn1.SEQUENCE) || !seq.ReadASN1Integer(&version) || version != 1 ||
		!seq.ReadASN1(&d, cbasn1.OCTET_STRING) {
		return nil, false
	}
	if seq.PeekASN1Tag(tagCurve) {
		var wrapper, oid cryptobyte.String
		var tag cbasn1.Tag
		// Exactly one OID in the [0] wrapper: encoding/asn1 reads the
		// element after an explicit tag without bounding it by the
		// wrapper's length, so anything else is x509's to judge.
		if !seq.ReadASN1(&wrapper, tagCurve) || !lowTagForm(wrapper) ||
			!wrapper.ReadAnyASN1Element(&oid, &tag) || tag != cbasn1.OBJECT_IDENTIFIER || !wrapper.Empty() {
			return nil, false
		}
		own := namedCurves[string(oid)]
		if own == nil {
			return nil, false
		}
		if curve == nil {
			curve = own
		}
	}
	if seq.PeekASN1Tag(tagPublicKey) {
		// x509 derives the public key; the encoded one must only read as a
		// BIT STRING.
		var wrapper cryptobyte.String
		var bits asn1.BitString
		if !seq.ReadASN1(&wrapper, tagPublicKey) || !wrapper.ReadASN1BitString(&bits) || !wrapper.Empty() {
			return nil, false
		}
	}
	if !seq.Empty() || curve == nil {
		return nil, false
	}
	size := (curve.Params().N.BitLen() + 7) / 8
	// Leading zeros beyond the curve's size are ignored, and a scalar
	// shorter than it is padded, as x509 and OpenSSL do.
	for len(d) > size {
		if d[0] != 0 {
			return nil, false
		}
		d = d[1:]
	}
	var buf [66]byte // P-521's 66 bytes at most
	scalar := buf[:size]
	copy(scalar[size-len(d):], d)
	key, err := ecdsa.ParseRawPrivateKey(curve, scalar)
	clear(scalar)
	if err != nil {
		return nil, false
	}
	return key, true
}

// parsePKCS8ECFast reads a PKCS #8 PrivateKeyInfo (RFC 5208 §5) holding an
// ECDSA key as x509.ParsePKCS8PrivateKey does: the curve from the
// algorithm's parameters when they are an OID, else from the SEC 1 key
// inside. ok is false for keys of other algorithms and for anything it
// does not read exactly as x509 does.
func parsePKCS8ECFast(der []byte) (_ *ecdsa.PrivateKey, ok bool) {
	in := cryptobyte.String(der)
	var seq, ai, key cryptobyte.String
	var version int64
	// x509 does not check the version; it must only be an int.
	if !in.ReadASN1(&seq, cbasn1.SEQUENCE) || !seq.ReadASN1Integer(&version) || int64(int32(version)) != version ||
		!seq.ReadASN1(&ai, cbasn1.SEQUENCE) || !seq.ReadASN1(&key, cbasn1.OCTET_STRING) {
		return nil, false
	}
	oid, params, ok := readAlgorithmIdentifier(ai)
	if !ok || string(oid) != oidPublicKeyECDSA {
		return nil, false
	}
	var curve elliptic.Curve
	if len(params) > 0 && params[0] == byte(cbasn1.OBJECT_IDENTIFIER) {
		// Parameters that are an OID name the curve, whatever the inner
		// key says; x509 reads anything else as no curve.
		if curve = namedCurves[string(params)]; curve == nil {
			return nil, false
		}
	}
	return parseSEC1Fast(key, curve)
}
