package simca

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/asn1"
	"errors"
	"net"
	"net/url"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// The leaf encoder: the same DER that x509.CreateCertificate writes for the
// leaves this CA signs (TestLeafEncoderMatchesCreateCertificate and
// FuzzLeafEncoder hold it to that, byte for byte), without the signature
// check CreateCertificate makes after signing and without encoding/asn1's
// reflection. With an Ed25519 root, that check costs more than the
// signature itself; a simulation that issues a hundred thousand
// certificates spends a fifth of its time in it. The check guards against
// a faulty signer (a hardware fault, a broken HSM); this CA's key is an
// in-memory Ed25519 key, and tests that need the stdlib path set
// CA.Stdlib.

var (
	oidEd25519           = asn1.ObjectIdentifier{1, 3, 101, 112}
	oidKeyUsage          = asn1.ObjectIdentifier{2, 5, 29, 15}
	oidExtKeyUsage       = asn1.ObjectIdentifier{2, 5, 29, 37}
	oidBasicConstraints  = asn1.ObjectIdentifier{2, 5, 29, 19}
	oidAuthorityKeyID    = asn1.ObjectIdentifier{2, 5, 29, 35}
	oidSubjectAltName    = asn1.ObjectIdentifier{2, 5, 29, 17}
	oidServerAuth        = asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 3, 1}
	emptyRDNSequence     = []byte{0x30, 0x00}
	errLeafNotFastPathed = errors.New("localca: leaf needs the stdlib encoder")
)

// leaf is what a signed leaf certifies; the rest is fixed: version 3,
// digitalSignature key usage, serverAuth, basic constraints with cA false.
type leaf struct {
	serial              int64
	rawSubject          []byte // DER Name, as the request carried it
	spki                []byte // DER SubjectPublicKeyInfo
	notBefore, notAfter time.Time
	dnsNames, emails    []string
	ips                 []net.IP
	uris                []*url.URL
}

// encodeLeaf returns the signed DER of l issued by ca, or
// errLeafNotFastPathed when l needs something the encoder does not write
// (a non-Ed25519 root, a name that is not IA5, a subject equal to the
// root's, times outside what the encoder writes).
func (ca *CA) encodeLeaf(l *leaf) ([]byte, error) {
	key, ok := ca.key.(ed25519.PrivateKey)
	if !ok || l.serial <= 0 || len(l.rawSubject) == 0 || bytes.Equal(l.rawSubject, ca.Cert.RawSubject) {
		return nil, errLeafNotFastPathed
	}
	for _, t := range []time.Time{l.notBefore, l.notAfter} {
		if y := t.UTC().Year(); y < 1950 || y > 9999 {
			return nil, errLeafNotFastPathed
		}
	}
	uris := make([]string, len(l.uris))
	for i, u := range l.uris {
		uris[i] = u.String()
	}
	for _, list := range [][]string{l.dnsNames, l.emails, uris} {
		for _, s := range list {
			if !isASCII(s) {
				return nil, errLeafNotFastPathed
			}
		}
	}
	hasSANs := len(l.dnsNames)+len(l.emails)+len(l.ips)+len(l.uris) > 0

	var tbs cryptobyte.Builder
	tbs.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddASN1(cbasn1.Tag(0).Constructed().ContextSpecific(), func(b *cryptobyte.Builder) {
			b.AddASN1Int64(2) // v3
		})
		b.AddASN1Int64(l.serial)
		addEd25519Algorithm(b)
		b.AddBytes(ca.Cert.RawSubject)
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			addTime(b, l.notBefore)
			addTime(b, l.notAfter)
		})
		b.AddBytes(l.rawSubject)
		b.AddBytes(l.spki)
		b.AddASN1(cbasn1.Tag(3).Constructed().ContextSpecific(), func(b *cryptobyte.Builder) {
			b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
				// keyUsage, critical: digitalSignature, one bit.
				addExtension(b, oidKeyUsage, true, []byte{0x03, 0x02, 0x07, 0x80})
				addExtensionFunc(b, oidExtKeyUsage, false, func(b *cryptobyte.Builder) {
					b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) { b.AddASN1ObjectIdentifier(oidServerAuth) })
				})
				// basicConstraints, critical: cA false and no path
				// length, both defaults, so an empty sequence.
				addExtension(b, oidBasicConstraints, true, []byte{0x30, 0x00})
				if len(ca.Cert.SubjectKeyId) > 0 {
					addExtensionFunc(b, oidAuthorityKeyID, false, func(b *cryptobyte.Builder) {
						b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
							b.AddASN1(cbasn1.Tag(0).ContextSpecific(), func(b *cryptobyte.Builder) { b.AddBytes(ca.Cert.SubjectKeyId) })
						})
					})
				}
				if hasSANs {
					// RFC 5280 4.2.1.6: critical when the subject is empty.
					critical := bytes.Equal(l.rawSubject, emptyRDNSequence)
					addExtensionFunc(b, oidSubjectAltName, critical, func(b *cryptobyte.Builder) {
						b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
							for _, n := range l.dnsNames {
								addName(b, 2, []byte(n))
							}
							for _, n := range l.emails {
								addName(b, 1, []byte(n))
							}
							for _, ip := range l.ips {
								if v4 := ip.To4(); v4 != nil {
									ip = v4
								}
								addName(b, 7, ip)
							}
							for _, n := range uris {
								addName(b, 6, []byte(n))
							}
						})
					})
				}
			})
		})
	})
	tbsDER, err := tbs.Bytes()
	if err != nil {
		return nil, err
	}
	sig := ed25519.Sign(key, tbsDER)
	var cert cryptobyte.Builder
	cert.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddBytes(tbsDER)
		addEd25519Algorithm(b)
		b.AddASN1BitString(sig)
	})
	return cert.Bytes()
}

func addEd25519Algorithm(b *cryptobyte.Builder) {
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) { b.AddASN1ObjectIdentifier(oidEd25519) })
}

// addTime writes t as encoding/asn1 does: UTCTime for 1950–2049, else
// GeneralizedTime, to the second, in UTC.
func addTime(b *cryptobyte.Builder, t time.Time) {
	t = t.UTC()
	if y := t.Year(); y >= 1950 && y < 2050 {
		b.AddASN1UTCTime(t)
		return
	}
	b.AddASN1GeneralizedTime(t)
}

func addExtension(b *cryptobyte.Builder, id asn1.ObjectIdentifier, critical bool, value []byte) {
	addExtensionFunc(b, id, critical, func(b *cryptobyte.Builder) { b.AddBytes(value) })
}

func addExtensionFunc(b *cryptobyte.Builder, id asn1.ObjectIdentifier, critical bool, value cryptobyte.BuilderContinuation) {
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddASN1ObjectIdentifier(id)
		if critical {
			b.AddASN1Boolean(true)
		}
		b.AddASN1(cbasn1.OCTET_STRING, value)
	})
}

// addName writes a GeneralName of the given context tag, primitive.
func addName(b *cryptobyte.Builder, tag uint8, value []byte) {
	b.AddASN1(cbasn1.Tag(tag).ContextSpecific(), func(b *cryptobyte.Builder) { b.AddBytes(value) })
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// marshalSPKI is x509.MarshalPKIXPublicKey, with Ed25519 keys written
// directly (the common case in the simulation).
func marshalSPKI(pub any) ([]byte, error) {
	if k, ok := pub.(ed25519.PublicKey); ok && len(k) == ed25519.PublicKeySize {
		var b cryptobyte.Builder
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			addEd25519Algorithm(b)
			b.AddASN1BitString(k)
		})
		return b.Bytes()
	}
	return x509.MarshalPKIXPublicKey(pub)
}
