package keys

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// sec1Parts are the pieces of an ECPrivateKey (RFC 5915 §3).
type sec1Parts struct {
	version int64
	d       []byte
	curve   []byte // whole element inside [0]; absent when nil
	pub     []byte // BIT STRING contents inside [1]; absent when nil
	inside  []byte // bytes after the last field, inside the SEQUENCE
	after   []byte // bytes after the SEQUENCE
	swap    bool   // [1] before [0]
}

func (p sec1Parts) build() []byte {
	out := der(func(b *cryptobyte.Builder) {
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			b.AddASN1Int64(p.version)
			b.AddASN1OctetString(p.d)
			curve := func() {
				if p.curve != nil {
					b.AddASN1(tagCurve, func(b *cryptobyte.Builder) { b.AddBytes(p.curve) })
				}
			}
			pub := func() {
				if p.pub != nil {
					b.AddASN1(tagPublicKey, func(b *cryptobyte.Builder) { b.AddASN1BitString(p.pub) })
				}
			}
			if p.swap {
				pub()
				curve()
			} else {
				curve()
				pub()
			}
			b.AddBytes(p.inside)
		})
	})
	return append(out, p.after...)
}

// pkcs8 wraps an inner key in a PrivateKeyInfo (RFC 5208 §5).
func pkcs8(version int64, alg, inner, inside []byte) []byte {
	return der(func(b *cryptobyte.Builder) {
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			b.AddASN1Int64(version)
			b.AddBytes(alg)
			b.AddASN1OctetString(inner)
			b.AddBytes(inside)
		})
	})
}

type ecKeyCase struct {
	pemType string
	der     []byte
	fast    bool // read by the cryptobyte decoder rather than left to x509
	wantErr bool
}

func curveOID(c elliptic.Curve) []byte {
	oids := map[elliptic.Curve]asn1.ObjectIdentifier{
		elliptic.P224(): {1, 3, 132, 0, 33}, elliptic.P256(): {1, 2, 840, 10045, 3, 1, 7},
		elliptic.P384(): {1, 3, 132, 0, 34}, elliptic.P521(): {1, 3, 132, 0, 35},
	}
	return []byte(oidElement(oids[c]))
}

// ecKeyCases are SEC 1 and PKCS #8 keys of every curve, well-formed and
// not, each with whether the fast decoder reads it itself. They seed
// FuzzDecodeECPrivateKey too.
func ecKeyCases(t testing.TB) map[string]ecKeyCase {
	cases := map[string]ecKeyCase{}
	var p256 *ecdsa.PrivateKey
	for _, c := range []elliptic.Curve{elliptic.P224(), elliptic.P256(), elliptic.P384(), elliptic.P521()} {
		k, err := ecdsa.GenerateKey(c, rand.Reader)
		require.NoError(t, err)
		if c == elliptic.P256() {
			p256 = k
		}
		sec1, err := x509.MarshalECPrivateKey(k)
		require.NoError(t, err)
		p8, err := x509.MarshalPKCS8PrivateKey(k)
		require.NoError(t, err)
		cases["SEC 1 on "+c.Params().Name] = ecKeyCase{pemType: "EC PRIVATE KEY", der: sec1, fast: true}
		cases["PKCS #8 on "+c.Params().Name] = ecKeyCase{pemType: "PRIVATE KEY", der: p8, fast: true}
	}
	ed := mustKey(t, KeySpec{Algorithm: AlgorithmEd25519})
	edDER, err := x509.MarshalPKCS8PrivateKey(ed)
	require.NoError(t, err)
	rsaDER, err := x509.MarshalPKCS8PrivateKey(mustKey(t, KeySpec{}))
	require.NoError(t, err)
	cases["PKCS #8 Ed25519 is left to x509"] = ecKeyCase{pemType: "PRIVATE KEY", der: edDER}
	cases["PKCS #8 RSA is left to x509"] = ecKeyCase{pemType: "PRIVATE KEY", der: rsaDER}

	d, err := p256.Bytes()
	require.NoError(t, err)
	pub, err := p256.PublicKey.Bytes()
	require.NoError(t, err)
	oid256, oid384 := curveOID(elliptic.P256()), curveOID(elliptic.P384())
	n := p256.Curve.Params().N.Bytes()
	ecAlg := func(params ...[]byte) []byte {
		return algorithm(asn1.ObjectIdentifier{1, 2, 840, 10045, 2, 1}, params...)
	}
	sec1 := func(p sec1Parts) ecKeyCase { return ecKeyCase{pemType: "EC PRIVATE KEY", der: p.build()} }
	fast := func(c ecKeyCase) ecKeyCase { c.fast = true; return c }
	fails := func(c ecKeyCase) ecKeyCase { c.wantErr = true; return c }
	p8 := func(version int64, alg []byte, inner sec1Parts, inside []byte) ecKeyCase {
		return ecKeyCase{pemType: "PRIVATE KEY", der: pkcs8(version, alg, inner.build(), inside)}
	}
	for name, c := range map[string]ecKeyCase{
		"SEC 1 without the public key":                              fast(sec1(sec1Parts{version: 1, d: d, curve: oid256})),
		"SEC 1 with a one-byte scalar (leading zeros dropped)":      fast(sec1(sec1Parts{version: 1, d: []byte{1}, curve: oid256})),
		"SEC 1 with a leading zero beyond the curve's size":         fast(sec1(sec1Parts{version: 1, d: append([]byte{0, 0}, d...), curve: oid256, pub: pub})),
		"SEC 1 with a non-zero byte beyond the curve's size fails":  fails(sec1(sec1Parts{version: 1, d: append([]byte{1}, d...), curve: oid256})),
		"SEC 1 with a zero scalar fails":                            fails(sec1(sec1Parts{version: 1, d: []byte{0}, curve: oid256})),
		"SEC 1 with the group order as scalar fails":                fails(sec1(sec1Parts{version: 1, d: n, curve: oid256})),
		"SEC 1 with an empty scalar fails":                          fails(sec1(sec1Parts{version: 1, d: []byte{}, curve: oid256})),
		"SEC 1 version 2 fails":                                     fails(sec1(sec1Parts{version: 2, d: d, curve: oid256})),
		"SEC 1 version 0 fails":                                     fails(sec1(sec1Parts{version: 0, d: d, curve: oid256})),
		"SEC 1 without a curve fails":                               fails(sec1(sec1Parts{version: 1, d: d, pub: pub})),
		"SEC 1 on an unknown curve fails":                           fails(sec1(sec1Parts{version: 1, d: d, curve: []byte(oidElement(asn1.ObjectIdentifier{1, 3, 132, 0, 10}))})),
		"SEC 1 with a curve that is not an OID fails":               fails(sec1(sec1Parts{version: 1, d: d, curve: []byte{5, 0}})),
		"SEC 1 whose [1] holds no BIT STRING (x509: no public key)": {pemType: "EC PRIVATE KEY", der: sec1Parts{version: 1, d: d, curve: oid256, inside: []byte{0xa1, 2, 5, 0}}.build()},
		"SEC 1 with a malformed public key BIT STRING fails":        fails(sec1(sec1Parts{version: 1, d: d, curve: oid256, inside: []byte{0xa1, 3, 3, 1, 8}})),
		"SEC 1 with bytes after it (x509 reads only the first)":     fast(sec1(sec1Parts{version: 1, d: d, curve: oid256, pub: pub, after: []byte{0xde, 0xad}})),
		"SEC 1 with an element after the public key":                sec1(sec1Parts{version: 1, d: d, curve: oid256, pub: pub, inside: []byte{2, 1, 0}}),
		"SEC 1 with the public key before the curve fails":          fails(sec1(sec1Parts{version: 1, d: d, curve: oid256, pub: pub, swap: true})),
		"SEC 1 with a NULL inside the curve's wrapper fails":        fails(sec1(sec1Parts{version: 1, d: d, curve: append(append([]byte{}, oid256...), 5, 0)})),
		"SEC 1 cut short fails":                                     fails(ecKeyCase{pemType: "EC PRIVATE KEY", der: sec1Parts{version: 1, d: d, curve: oid256}.build()[:20]}),

		"PKCS #8 whose parameters are NULL takes the inner curve":    fast(p8(0, ecAlg([]byte{5, 0}), sec1Parts{version: 1, d: d, curve: oid256}, nil)),
		"PKCS #8 without parameters takes the inner curve":           fast(p8(0, ecAlg(), sec1Parts{version: 1, d: d, curve: oid256}, nil)),
		"PKCS #8 parameters name the curve over the inner one":       fast(p8(0, ecAlg(oid384), sec1Parts{version: 1, d: d, curve: oid256}, nil)),
		"PKCS #8 with no curve anywhere fails":                       fails(p8(0, ecAlg(), sec1Parts{version: 1, d: d}, nil)),
		"PKCS #8 parameters naming an unknown curve fail":            fails(p8(0, ecAlg([]byte(oidElement(asn1.ObjectIdentifier{1, 2, 3}))), sec1Parts{version: 1, d: d, curve: oid256}, nil)),
		"PKCS #8 of any version":                                     fast(p8(7, ecAlg(oid256), sec1Parts{version: 1, d: d}, nil)),
		"PKCS #8 with attributes after the key":                      fast(p8(0, ecAlg(oid256), sec1Parts{version: 1, d: d}, []byte{0xa0, 0})),
		"PKCS #8 around a SEC 1 key of version 2 fails":              fails(p8(0, ecAlg(oid256), sec1Parts{version: 2, d: d}, nil)),
		"PKCS #8 with an unknown algorithm fails":                    fails(ecKeyCase{pemType: "PRIVATE KEY", der: pkcs8(0, algorithm(asn1.ObjectIdentifier{1, 2, 3}), []byte{1}, nil)}),
		"PKCS #8 with a version beyond 32 bits is left to x509":      p8(1<<40, ecAlg(oid256), sec1Parts{version: 1, d: d}, nil),
		"PKCS #8 read as SEC 1 fails":                                fails(ecKeyCase{pemType: "EC PRIVATE KEY", der: pkcs8(0, ecAlg(oid256), sec1Parts{version: 1, d: d}.build(), nil)}),
		"SEC 1 read as PKCS #8 fails":                                fails(ecKeyCase{pemType: "PRIVATE KEY", der: sec1Parts{version: 1, d: d, curve: oid256}.build()}),
		"PKCS #8 around a SEC 1 key with bytes after it inside":      fast(ecKeyCase{pemType: "PRIVATE KEY", der: pkcs8(0, ecAlg(oid256), sec1Parts{version: 1, d: d, after: []byte{0}}.build(), nil)}),
		"PKCS #8 around a SEC 1 key with a short scalar and the key": fast(p8(0, ecAlg(oid256), sec1Parts{version: 1, d: []byte{0, 0, 5}, pub: pub}, nil)),
	} {
		cases[name] = c
	}
	return cases
}

// parseECReference is x509's reading of a block DecodePrivateKey reads
// with the fast decoder.
func parseECReference(pemType string, der []byte) (any, error) {
	if pemType == "EC PRIVATE KEY" {
		return x509.ParseECPrivateKey(der)
	}
	return x509.ParsePKCS8PrivateKey(der)
}

func parseECFast(pemType string, der []byte) (*ecdsa.PrivateKey, bool) {
	if pemType == "EC PRIVATE KEY" {
		return parseSEC1Fast(der, nil)
	}
	return parsePKCS8ECFast(der)
}

// requireSameKey fails unless got is x509's key: same type, same private
// and public values on the same curve.
func requireSameKey(t *testing.T, want, got any) {
	t.Helper()
	type equaler interface{ Equal(crypto.PrivateKey) bool }
	w, ok := want.(equaler)
	require.True(t, ok, "x509 gave %T", want)
	require.IsType(t, want, got)
	require.True(t, w.Equal(got), "the keys differ")
	if wk, ok := want.(*ecdsa.PrivateKey); ok {
		gk := got.(*ecdsa.PrivateKey)
		require.Equal(t, wk.Curve, gk.Curve)
		require.True(t, wk.PublicKey.Equal(&gk.PublicKey), "the public keys differ")
	}
}

func TestDecodeECPrivateKeyMatchesX509(t *testing.T) {
	for name, tc := range ecKeyCases(t) {
		t.Run(name, func(t *testing.T) {
			want, wantErr := parseECReference(tc.pemType, tc.der)
			_, fast := parseECFast(tc.pemType, tc.der)
			require.Equal(t, tc.fast, fast, "read by the fast decoder")
			got, err := DecodePrivateKey(pem.EncodeToMemory(&pem.Block{Type: tc.pemType, Bytes: tc.der}))
			if tc.wantErr {
				require.Error(t, wantErr, "x509 rejects it")
				require.ErrorIs(t, err, ErrDecode)
				return
			}
			require.NoError(t, wantErr, "x509 reads it")
			require.NoError(t, err)
			requireSameKey(t, want, got)
		})
	}
}

// FuzzDecodeECPrivateKey holds the cryptobyte SEC 1 and PKCS #8 decoders
// to x509.ParseECPrivateKey and x509.ParsePKCS8PrivateKey: for any bytes,
// whatever the fast decoder reads x509 reads as the same key, and
// DecodePrivateKey fails exactly when x509 does.
func FuzzDecodeECPrivateKey(f *testing.F) {
	for _, tc := range ecKeyCases(f) {
		f.Add(tc.der, tc.pemType == "PRIVATE KEY")
	}
	f.Fuzz(func(t *testing.T, der []byte, isPKCS8 bool) {
		pemType := "EC PRIVATE KEY"
		if isPKCS8 {
			pemType = "PRIVATE KEY"
		}
		want, wantErr := parseECReference(pemType, der)
		if fast, ok := parseECFast(pemType, der); ok {
			if wantErr != nil {
				t.Fatalf("the fast decoder reads what x509 rejects (%v)", wantErr)
			}
			requireSameKey(t, want, fast)
		}
		got, err := parsePrivateKeyBlock(&pem.Block{Type: pemType, Bytes: der})
		if wantErr != nil {
			if err == nil || !errors.Is(err, ErrDecode) {
				t.Fatalf("x509 rejects it (%v), DecodePrivateKey gives %v", wantErr, err)
			}
			return
		}
		if _, signer := want.(crypto.Signer); !signer {
			if err == nil {
				t.Fatalf("DecodePrivateKey reads a %T, which is no signer", want)
			}
			return
		}
		if err != nil {
			t.Fatalf("x509 reads it, DecodePrivateKey fails: %v", err)
		}
		requireSameKey(t, want, got)
	})
}
