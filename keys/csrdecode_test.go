package keys

import (
	"crypto"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// decodeCSRReference is the plain path DecodeCSR replaced and is held to:
// the PEM layer, then x509.ParseCertificateRequest.
func decodeCSRReference(pemBytes []byte) (*x509.CertificateRequest, error) {
	block, _ := DecodePEM(pemBytes)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	return x509.ParseCertificateRequest(block.Bytes)
}

// csrFields is what DecodeCSR promises to fill as x509 does, PublicKey
// aside (compared with reflect.DeepEqual: its curve has unexported
// fields).
type csrFields struct {
	Raw, RawTBSCertificateRequest, RawSubjectPublicKeyInfo, RawSubject []byte
	Version                                                            int
	Signature                                                          []byte
	SignatureAlgorithm                                                 x509.SignatureAlgorithm
	PublicKeyAlgorithm                                                 x509.PublicKeyAlgorithm
	Subject                                                            pkix.Name
	Extensions                                                         []pkix.Extension
	DNSNames, EmailAddresses                                           []string
	IPAddresses                                                        []string
	URIs                                                               []string
	URIFields                                                          []any
}

func fieldsOf(c *x509.CertificateRequest) csrFields {
	f := csrFields{
		Raw: c.Raw, RawTBSCertificateRequest: c.RawTBSCertificateRequest, RawSubjectPublicKeyInfo: c.RawSubjectPublicKeyInfo,
		RawSubject: c.RawSubject, Version: c.Version, Signature: c.Signature, SignatureAlgorithm: c.SignatureAlgorithm,
		PublicKeyAlgorithm: c.PublicKeyAlgorithm, Subject: c.Subject, Extensions: c.Extensions,
		DNSNames: c.DNSNames, EmailAddresses: c.EmailAddresses,
	}
	// nil and empty stay apart: x509 leaves absent names nil.
	if c.IPAddresses != nil {
		f.IPAddresses = []string{}
		for _, ip := range c.IPAddresses {
			f.IPAddresses = append(f.IPAddresses, string(ip))
		}
	}
	if c.URIs != nil {
		f.URIs = []string{}
		for _, u := range c.URIs {
			f.URIs = append(f.URIs, u.String())
			// Every field of the URL, the user info's unexported ones
			// included.
			f.URIFields = append(f.URIFields, *u, u.User.String())
		}
	}
	return f
}

// requireSameCSR fails unless got has every field of want that DecodeCSR
// promises.
func requireSameCSR(t *testing.T, want, got *x509.CertificateRequest) {
	t.Helper()
	if diff := cmp.Diff(fieldsOf(want), fieldsOf(got), cmp.Exporter(func(reflect.Type) bool { return true })); diff != "" {
		t.Fatalf("the fast decoder differs from x509 (-x509 +fast):\n%s", diff)
	}
	if !reflect.DeepEqual(want.PublicKey, got.PublicKey) {
		t.Fatalf("public key: x509 %T %v, fast %T %v", want.PublicKey, want.PublicKey, got.PublicKey, got.PublicKey)
	}
}

// --- building requests part by part ---

type atv struct {
	oid asn1.ObjectIdentifier
	tag cbasn1.Tag
	val []byte
}

var (
	oidCN     = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidO      = asn1.ObjectIdentifier{2, 5, 4, 10}
	oidOU     = asn1.ObjectIdentifier{2, 5, 4, 11}
	oidC      = asn1.ObjectIdentifier{2, 5, 4, 6}
	oidL      = asn1.ObjectIdentifier{2, 5, 4, 7}
	oidSerial = asn1.ObjectIdentifier{2, 5, 4, 5}
	oidEmail  = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}
)

func der(f func(b *cryptobyte.Builder)) []byte {
	b := cryptobyte.NewBuilder(nil)
	f(b)
	return b.BytesOrPanic()
}

// name builds a Name, one relative distinguished name per slice.
func name(rdns ...[]atv) []byte {
	return der(func(b *cryptobyte.Builder) {
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			for _, rdn := range rdns {
				b.AddASN1(cbasn1.SET, func(b *cryptobyte.Builder) {
					for _, a := range rdn {
						b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
							b.AddASN1ObjectIdentifier(a.oid)
							b.AddASN1(a.tag, func(b *cryptobyte.Builder) { b.AddBytes(a.val) })
						})
					}
				})
			}
		})
	})
}

type ext struct {
	oid      asn1.ObjectIdentifier
	critical *bool
	val      []byte
}

func extensions(exts ...ext) []byte {
	return der(func(b *cryptobyte.Builder) {
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			for _, e := range exts {
				b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
					b.AddASN1ObjectIdentifier(e.oid)
					if e.critical != nil {
						b.AddASN1Boolean(*e.critical)
					}
					b.AddASN1OctetString(e.val)
				})
			}
		})
	})
}

// attribute builds an Attribute (RFC 2986 §4.1) of the given values.
func attribute(oid asn1.ObjectIdentifier, values ...[]byte) []byte {
	return der(func(b *cryptobyte.Builder) {
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			b.AddASN1ObjectIdentifier(oid)
			b.AddASN1(cbasn1.SET, func(b *cryptobyte.Builder) {
				for _, v := range values {
					b.AddBytes(v)
				}
			})
		})
	})
}

var (
	oidExtReq            = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 14}
	oidChallengePassword = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 7}
	oidSAN               = asn1.ObjectIdentifier{2, 5, 29, 17}
)

// sans builds a GeneralNames value from (tag, bytes) pairs.
func sans(names ...any) []byte {
	return der(func(b *cryptobyte.Builder) {
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			for i := 0; i < len(names); i += 2 {
				v := names[i+1].([]byte)
				b.AddASN1(names[i].(cbasn1.Tag), func(b *cryptobyte.Builder) { b.AddBytes(v) })
			}
		})
	})
}

// csrParts are the pieces of a request; zero parts take a plain value.
type csrParts struct {
	version      int64
	subject      []byte   // DER Name
	spki         []byte   // DER SubjectPublicKeyInfo; the signer's when nil
	attrs        [][]byte // DER Attributes
	sigAlg       []byte   // DER AlgorithmIdentifier; ECDSA with SHA-256 when nil
	tbsTrailer   []byte   // bytes after the attributes, inside the info
	reqTrailer   []byte   // bytes after the signature, inside the request
	afterRequest []byte   // bytes after the request
	signature    []byte   // signature bits; the request is signed when nil
}

var partsKey = func() *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
}()

func (p csrParts) build(t testing.TB) []byte {
	t.Helper()
	if p.subject == nil {
		p.subject = name([]atv{{oidCN, cbasn1.UTF8String, []byte("a.example")}})
	}
	if p.spki == nil {
		spki, err := x509.MarshalPKIXPublicKey(partsKey.Public())
		require.NoError(t, err)
		p.spki = spki
	}
	if p.sigAlg == nil {
		p.sigAlg = der(func(b *cryptobyte.Builder) {
			b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
				b.AddASN1ObjectIdentifier(asn1.ObjectIdentifier{1, 2, 840, 10045, 4, 3, 2})
			})
		})
	}
	tbs := der(func(b *cryptobyte.Builder) {
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			b.AddASN1Int64(p.version)
			b.AddBytes(p.subject)
			b.AddBytes(p.spki)
			b.AddASN1(cbasn1.Tag(0).Constructed().ContextSpecific(), func(b *cryptobyte.Builder) {
				for _, a := range p.attrs {
					b.AddBytes(a)
				}
			})
			b.AddBytes(p.tbsTrailer)
		})
	})
	sig := p.signature
	if sig == nil {
		h := sha256.Sum256(tbs)
		var err error
		sig, err = partsKey.Sign(rand.Reader, h[:], crypto.SHA256)
		require.NoError(t, err)
	}
	out := der(func(b *cryptobyte.Builder) {
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			b.AddBytes(tbs)
			b.AddBytes(p.sigAlg)
			b.AddASN1BitString(sig)
			b.AddBytes(p.reqTrailer)
		})
	})
	return append(out, p.afterRequest...)
}

func extReq(exts ...ext) []byte { return attribute(oidExtReq, extensions(exts...)) }

func boolPtr(b bool) *bool { return &b }

func bmp(s string) []byte {
	var out []byte
	for _, r := range s {
		out = append(out, byte(r>>8), byte(r))
	}
	return out
}

func algorithm(oid asn1.ObjectIdentifier, params ...[]byte) []byte {
	return der(func(b *cryptobyte.Builder) {
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			b.AddASN1ObjectIdentifier(oid)
			for _, p := range params {
				b.AddBytes(p)
			}
		})
	})
}

func spkiOf(alg []byte, key []byte) []byte {
	return der(func(b *cryptobyte.Builder) {
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			b.AddBytes(alg)
			b.AddASN1BitString(key)
		})
	})
}

func builtCSR(t testing.TB, key crypto.Signer, tmpl RequestTemplate) []byte {
	t.Helper()
	p, err := BuildCSR(rand.Reader, tmpl, key)
	require.NoError(t, err)
	block, _ := pem.Decode(p)
	return block.Bytes
}

func x509CSR(t testing.TB, tmpl *x509.CertificateRequest, key crypto.Signer) []byte {
	t.Helper()
	d, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	require.NoError(t, err)
	return d
}

type csrCase struct {
	der []byte
	// fast: the cryptobyte decoder reads it itself, rather than leaving
	// it to x509.
	fast    bool
	wantErr bool
}

// csrCases are requests of every key type and many subjects, names and
// attribute layouts, well-formed and not, each with whether the fast
// decoder reads it itself. They seed FuzzDecodeCSR too.
func csrCases(t testing.TB) map[string]csrCase {
	full := RequestTemplate{
		CommonName:     "a.example",
		DNSNames:       []string{"a.example", "www.a.example"},
		IPAddresses:    []string{"10.0.0.1", "2001:db8::1"},
		URIs:           []string{"spiffe://cluster.local/ns/a/sa/b", "https://user:pw@a.example:8443/p?q=1#f", "urn:uuid:6e8bc430-9c3a-11d9-9669-0800200c9a66"},
		EmailAddresses: []string{"ops@a.example"},
		Subject: &Subject{
			Organizations: []string{"certlife", "Ünïcode AS"}, Countries: []string{"NO"}, OrganizationalUnits: []string{"ops"},
			Localities: []string{"Oslo"}, Provinces: []string{"Oslo"}, StreetAddresses: []string{"Gate 1"},
			PostalCodes: []string{"0150"}, SerialNumber: "42",
		},
		Usages: []Usage{UsageDigitalSignature, UsageKeyEncipherment, UsageServerAuth, UsageClientAuth},
		IsCA:   true,
	}
	ec := mustKey(t, KeySpec{Algorithm: AlgorithmECDSA})
	ec384 := mustKey(t, KeySpec{Algorithm: AlgorithmECDSA, Size: 384})
	ec521 := mustKey(t, KeySpec{Algorithm: AlgorithmECDSA, Size: 521})
	ed := mustKey(t, KeySpec{Algorithm: AlgorithmEd25519})
	rsaK := mustKey(t, KeySpec{})
	p224, err := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	require.NoError(t, err)
	x25519, err := ecdh.X25519().GenerateKey(rand.Reader)
	require.NoError(t, err)
	x25519SPKI, err := x509.MarshalPKIXPublicKey(x25519.PublicKey())
	require.NoError(t, err)
	ecPoint, err := partsKey.PublicKey.Bytes()
	require.NoError(t, err)
	p256Params := oidElement(asn1.ObjectIdentifier{1, 2, 840, 10045, 3, 1, 7})
	ecAlg := asn1.ObjectIdentifier{1, 2, 840, 10045, 2, 1}
	dsaParams := der(func(b *cryptobyte.Builder) {
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) { b.AddASN1Int64(23); b.AddASN1Int64(11); b.AddASN1Int64(4) })
	})
	dsaY := der(func(b *cryptobyte.Builder) { b.AddASN1Int64(8) })
	san := func(names ...any) []byte { return extReq(ext{oid: oidSAN, val: sans(names...)}) }
	cn := func(tag cbasn1.Tag, v []byte) []byte { return name([]atv{{oidCN, tag, v}}) }
	plain := csrParts{}.build(t)

	cases := map[string]csrCase{
		"an ECDSA P-256 request BuildCSR writes, every name and subject field": {der: builtCSR(t, ec, full), fast: true},
		"an ECDSA P-384 request":                     {der: builtCSR(t, ec384, full), fast: true},
		"an ECDSA P-521 request":                     {der: builtCSR(t, ec521, full), fast: true},
		"an Ed25519 request":                         {der: builtCSR(t, ed, full), fast: true},
		"an RSA 2048 request":                        {der: builtCSR(t, rsaK, full), fast: true},
		"an ECDSA P-224 request":                     {der: x509CSR(t, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "a"}}, p224), fast: true},
		"a request with only a common name":          {der: x509CSR(t, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "a.example"}}, ec), fast: true},
		"a request with an empty subject and a name": {der: builtCSR(t, ec, RequestTemplate{DNSNames: []string{"a.example"}}), fast: true},
		"an RSA request signed with SHA-384": {der: x509CSR(t, &x509.CertificateRequest{
			Subject: pkix.Name{CommonName: "a"}, SignatureAlgorithm: x509.SHA384WithRSA}, rsaK), fast: true},
		"an RSASSA-PSS signature is left to x509": {der: x509CSR(t, &x509.CertificateRequest{
			Subject: pkix.Name{CommonName: "a"}, SignatureAlgorithm: x509.SHA256WithRSAPSS}, rsaK)},
		"subject extra names of many types as x509 writes them": {der: x509CSR(t, &x509.CertificateRequest{Subject: pkix.Name{
			CommonName: "a", ExtraNames: []pkix.AttributeTypeAndValue{{Type: oidEmail, Value: "ops@a.example"}, {Type: oidL, Value: "Zürich"}}}}, ec), fast: true},
		"every string type x509 reads, in the subject": {der: csrParts{subject: name(
			[]atv{{oidC, cbasn1.PrintableString, []byte("NO")}},
			[]atv{{oidO, cbasn1.PrintableString, []byte("*.a-b (c)'+,./:=?&")}, {oidO, cbasn1.UTF8String, []byte("Ünï ☃")}},
			[]atv{{oidOU, cbasn1.IA5String, []byte("ops@a")}, {oidOU, cbasn1.T61String, []byte("caf\xe9")}},
			[]atv{{oidL, tagBMPString, bmp("Zürich☃")}, {oidL, tagBMPString, append(bmp("Oslo"), 0, 0)}},
			[]atv{{oidSerial, tagNumericString, []byte("0123 45")}},
			[]atv{{oidCN, cbasn1.UTF8String, nil}},
		)}.build(t), fast: true},
		"an empty relative distinguished name":          {der: csrParts{subject: name(nil, []atv{{oidCN, cbasn1.UTF8String, []byte("a")}})}.build(t), fast: true},
		"a subject attribute of an unknown type":        {der: csrParts{subject: name([]atv{{asn1.ObjectIdentifier{1, 2, 3, 4, 5}, cbasn1.UTF8String, []byte("x")}})}.build(t), fast: true},
		"an INTEGER subject value is left to x509":      {der: csrParts{subject: cn(cbasn1.INTEGER, []byte{5})}.build(t)},
		"an OCTET STRING subject value":                 {der: csrParts{subject: cn(cbasn1.OCTET_STRING, []byte("x"))}.build(t)},
		"a GeneralString subject value (x509: nil)":     {der: csrParts{subject: cn(cbasn1.Tag(27), []byte("x"))}.build(t)},
		"a constructed subject value (x509: nil)":       {der: csrParts{subject: cn(cbasn1.SEQUENCE, nil)}.build(t)},
		"an INTEGER subject value beyond 64 bits fails": {der: csrParts{subject: cn(cbasn1.INTEGER, []byte{1, 0, 0, 0, 0, 0, 0, 0, 0})}.build(t), wantErr: true},
		"a PrintableString with '@' fails":              {der: csrParts{subject: cn(cbasn1.PrintableString, []byte("a@b"))}.build(t), wantErr: true},
		"a UTF8String that is not UTF-8 fails":          {der: csrParts{subject: cn(cbasn1.UTF8String, []byte{0xff})}.build(t), wantErr: true},
		"an IA5String above ASCII fails":                {der: csrParts{subject: cn(cbasn1.IA5String, []byte{0x80})}.build(t), wantErr: true},
		"a NumericString with a letter fails":           {der: csrParts{subject: cn(tagNumericString, []byte("12a"))}.build(t), wantErr: true},
		"a BMPString of odd length fails":               {der: csrParts{subject: cn(tagBMPString, []byte{0, 'a', 0})}.build(t), wantErr: true},
		"a BMPString surrogate fails":                   {der: csrParts{subject: cn(tagBMPString, []byte{0xd8, 0x00})}.build(t), wantErr: true},
		"a BMPString noncharacter fails":                {der: csrParts{subject: cn(tagBMPString, []byte{0xff, 0xfe})}.build(t), wantErr: true},
		"a subject that is not a SEQUENCE fails":        {der: csrParts{subject: der(func(b *cryptobyte.Builder) { b.AddASN1(cbasn1.SET, func(*cryptobyte.Builder) {}) })}.build(t), wantErr: true},
		"a subject attribute without a value fails": {der: csrParts{subject: der(func(b *cryptobyte.Builder) {
			b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
				b.AddASN1(cbasn1.SET, func(b *cryptobyte.Builder) {
					b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) { b.AddASN1ObjectIdentifier(oidCN) })
				})
			})
		})}.build(t), wantErr: true},
		"elements after a subject attribute's value are ignored": {der: csrParts{subject: der(func(b *cryptobyte.Builder) {
			b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
				b.AddASN1(cbasn1.SET, func(b *cryptobyte.Builder) {
					b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
						b.AddASN1ObjectIdentifier(oidCN)
						b.AddASN1(cbasn1.UTF8String, func(b *cryptobyte.Builder) { b.AddBytes([]byte("a")) })
						b.AddASN1Int64(7)
					})
				})
			})
		})}.build(t), fast: true},

		"a challengePassword attribute beside the extensions is skipped": {der: csrParts{attrs: [][]byte{
			attribute(oidChallengePassword, der(func(b *cryptobyte.Builder) {
				b.AddASN1(cbasn1.PrintableString, func(b *cryptobyte.Builder) { b.AddBytes([]byte("pw")) })
			})),
			san(sanDNS, []byte("a.example")),
		}}.build(t), fast: true},
		"an attribute that is not a SEQUENCE is skipped": {der: csrParts{attrs: [][]byte{
			der(func(b *cryptobyte.Builder) { b.AddASN1Int64(1) }), san(sanDNS, []byte("a.example")),
		}}.build(t), fast: true},
		"two extensionRequest attributes give all their extensions": {der: csrParts{attrs: [][]byte{
			san(sanDNS, []byte("a.example")),
			extReq(ext{oid: asn1.ObjectIdentifier{2, 5, 29, 15}, critical: boolPtr(true), val: []byte{3, 2, 5, 160}}),
		}}.build(t), fast: true},
		"an extensionRequest without a value is skipped": {der: csrParts{attrs: [][]byte{attribute(oidExtReq)}}.build(t), fast: true},
		"an extensionRequest with no extensions":         {der: csrParts{attrs: [][]byte{extReq()}}.build(t), fast: true},
		"only the first value of an extensionRequest is read": {der: csrParts{attrs: [][]byte{
			attribute(oidExtReq, extensions(ext{oid: oidSAN, val: sans(sanDNS, []byte("a"))}), []byte{5, 0}),
		}}.build(t), fast: true},
		"an extensionRequest value that is not a SEQUENCE fails": {der: csrParts{attrs: [][]byte{attribute(oidExtReq, []byte{5, 0})}}.build(t), wantErr: true},
		"one extension requested twice fails": {der: csrParts{attrs: [][]byte{
			san(sanDNS, []byte("a.example")), san(sanDNS, []byte("b.example")),
		}}.build(t), wantErr: true},
		"an explicit non-critical flag": {der: csrParts{attrs: [][]byte{
			extReq(ext{oid: oidSAN, critical: boolPtr(false), val: sans(sanDNS, []byte("a"))}),
		}}.build(t), fast: true},
		"a critical flag that is not DER fails": {der: csrParts{attrs: [][]byte{
			attribute(oidExtReq, der(func(b *cryptobyte.Builder) {
				b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
					b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
						b.AddASN1ObjectIdentifier(oidSAN)
						b.AddASN1(cbasn1.BOOLEAN, func(b *cryptobyte.Builder) { b.AddUint8(1) })
						b.AddASN1OctetString(sans())
					})
				})
			})),
		}}.build(t), wantErr: true},
		"an empty extension value": {der: csrParts{attrs: [][]byte{
			extReq(ext{oid: asn1.ObjectIdentifier{1, 2, 3}, val: nil}),
		}}.build(t), fast: true},

		"other names, directory names and registered IDs are skipped": {der: csrParts{attrs: [][]byte{san(
			cbasn1.Tag(0).Constructed().ContextSpecific(), []byte{6, 1, 42, 0xa0, 2, 5, 0},
			cbasn1.Tag(4).Constructed().ContextSpecific(), name(),
			cbasn1.Tag(8).ContextSpecific(), []byte{42},
			sanDNS, []byte("a.example"),
		)}}.build(t), fast: true},
		"an IP address of five bytes fails":        {der: csrParts{attrs: [][]byte{san(sanIP, []byte{1, 2, 3, 4, 5})}}.build(t), wantErr: true},
		"a DNS name above ASCII fails":             {der: csrParts{attrs: [][]byte{san(sanDNS, []byte("ä.example"))}}.build(t), wantErr: true},
		"an email address above ASCII fails":       {der: csrParts{attrs: [][]byte{san(sanEmail, []byte("ä@example"))}}.build(t), wantErr: true},
		"a URI that does not parse fails":          {der: csrParts{attrs: [][]byte{san(sanURI, []byte("http://a b/%zz"))}}.build(t), wantErr: true},
		"a URI host with a trailing dot fails":     {der: csrParts{attrs: [][]byte{san(sanURI, []byte("https://a.example./"))}}.build(t), wantErr: true},
		"a URI host with an empty label fails":     {der: csrParts{attrs: [][]byte{san(sanURI, []byte("https://a..example/"))}}.build(t), wantErr: true},
		"a URI with an IPv6 host and a port":       {der: csrParts{attrs: [][]byte{san(sanURI, []byte("https://[2001:db8::1]:8443/"))}}.build(t), fast: true},
		"a URI without a host":                     {der: csrParts{attrs: [][]byte{san(sanURI, []byte("mailto:ops@a.example"))}}.build(t), fast: true},
		"empty names of every kind":                {der: csrParts{attrs: [][]byte{san(sanDNS, []byte{}, sanEmail, []byte{}, sanURI, []byte{})}}.build(t), fast: true},
		"an empty name list":                       {der: csrParts{attrs: [][]byte{san()}}.build(t), fast: true},
		"a SAN value that is not a SEQUENCE fails": {der: csrParts{attrs: [][]byte{extReq(ext{oid: oidSAN, val: []byte{5, 0}})}}.build(t), wantErr: true},

		"a DSA key is left to x509":                         {der: csrParts{spki: spkiOf(algorithm(asn1.ObjectIdentifier{1, 2, 840, 10040, 4, 1}, dsaParams), dsaY)}.build(t)},
		"an X25519 key is an unknown algorithm with no key": {der: csrParts{spki: x25519SPKI}.build(t), fast: true},
		"a key of an unknown algorithm":                     {der: csrParts{spki: spkiOf(algorithm(asn1.ObjectIdentifier{1, 2, 3, 4}), []byte{1, 2})}.build(t), fast: true},
		"an ECDSA key on an unknown curve fails":            {der: csrParts{spki: spkiOf(algorithm(ecAlg, []byte(oidElement(asn1.ObjectIdentifier{1, 3, 132, 0, 10}))), ecPoint)}.build(t), wantErr: true},
		"an ECDSA key without parameters fails":             {der: csrParts{spki: spkiOf(algorithm(ecAlg), ecPoint)}.build(t), wantErr: true},
		"an ECDSA key off the curve fails":                  {der: csrParts{spki: spkiOf(algorithm(ecAlg, []byte(p256Params)), append(ecPoint[:64:64], 7))}.build(t), wantErr: true},
		"an RSA key without NULL parameters fails": {der: csrParts{spki: spkiOf(algorithm(asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 1}),
			der(func(b *cryptobyte.Builder) {
				b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) { b.AddASN1Int64(77); b.AddASN1Int64(3) })
			}))}.build(t), wantErr: true},
		"an RSA key with a negative exponent fails": {der: csrParts{spki: spkiOf(algorithm(asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 1}, []byte{5, 0}),
			der(func(b *cryptobyte.Builder) {
				b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) { b.AddASN1Int64(77); b.AddASN1Int64(-3) })
			}))}.build(t), wantErr: true},
		"an Ed25519 key with parameters fails": {der: csrParts{spki: spkiOf(algorithm(asn1.ObjectIdentifier{1, 3, 101, 112}, []byte{5, 0}), make([]byte, 32))}.build(t), wantErr: true},

		"an unknown signature algorithm":                 {der: csrParts{sigAlg: algorithm(asn1.ObjectIdentifier{1, 2, 3, 4, 5, 6})}.build(t), fast: true},
		"Ed25519 signatures with parameters are unknown": {der: csrParts{sigAlg: algorithm(asn1.ObjectIdentifier{1, 3, 101, 112}, []byte{5, 0})}.build(t), fast: true},
		"an RSA signature with NULL parameters":          {der: csrParts{sigAlg: algorithm(asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 11}, []byte{5, 0})}.build(t), fast: true},
		"a signature algorithm with a bad OID fails": {der: csrParts{sigAlg: der(func(b *cryptobyte.Builder) {
			b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
				b.AddASN1(cbasn1.OBJECT_IDENTIFIER, func(b *cryptobyte.Builder) { b.AddBytes([]byte{0x80, 1}) })
			})
		})}.build(t), wantErr: true},
		"version 1 is read as it is":                        {der: csrParts{version: 1}.build(t), fast: true},
		"a negative version is read as it is":               {der: csrParts{version: -5}.build(t), fast: true},
		"a version beyond 32 bits is left to x509":          {der: csrParts{version: 1 << 40}.build(t)},
		"elements after the attributes are ignored":         {der: csrParts{tbsTrailer: []byte{5, 0}}.build(t), fast: true},
		"elements after the signature are ignored":          {der: csrParts{reqTrailer: []byte{2, 1, 0}}.build(t), fast: true},
		"bytes after the request fail":                      {der: csrParts{afterRequest: []byte{0}}.build(t), wantErr: true},
		"a request cut short fails":                         {der: plain[:len(plain)-1], wantErr: true},
		"an empty input fails":                              {der: nil, wantErr: true},
		"a request whose length byte claims too much fails": {der: append([]byte{0x30, 0x84, 0x7f, 0xff, 0xff, 0xff}, plain[2:]...), wantErr: true},
	}
	return cases
}

func TestDecodeCSRMatchesX509(t *testing.T) {
	for name, tc := range csrCases(t) {
		t.Run(name, func(t *testing.T) {
			want, wantErr := x509.ParseCertificateRequest(tc.der)
			_, fast := parseCSRFast(tc.der)
			require.Equal(t, tc.fast, fast, "read by the fast decoder")
			got, err := decodeCSRDER(tc.der)
			if tc.wantErr {
				require.Error(t, wantErr, "x509 rejects it")
				require.Error(t, err)
				require.Equal(t, wantErr.Error(), errors.Unwrap(err).Error(), "x509's error is wrapped")
				require.True(t, strings.HasPrefix(err.Error(), "keys: request: "), err.Error())
				return
			}
			require.NoError(t, wantErr, "x509 reads it")
			require.NoError(t, err)
			requireSameCSR(t, want, got)
		})
	}
}

func TestDecodeCSRErrorsNameTheStructure(t *testing.T) {
	tests := map[string]struct {
		pem     []byte
		want    string
		secrets []string // text the error must not quote
	}{
		"no PEM block": {pem: []byte("garbage"), want: "keys: request: no PEM block found"},
		"a PEM block of another type": {
			pem:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1}}),
			want: `keys: request: PEM block type "CERTIFICATE" is not a certificate request`,
		},
		"a URI that does not parse (x509 quotes it)": {
			pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csrParts{attrs: [][]byte{
				extReq(ext{oid: oidSAN, val: sans(sanURI, []byte("http://secret host/"))}),
			}}.build(t)}),
			want:    "keys: request: x509: a URI subject alternative name is not a valid URI",
			secrets: []string{"secret"},
		},
		"a DNS name above ASCII": {
			pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csrParts{attrs: [][]byte{
				extReq(ext{oid: oidSAN, val: sans(sanDNS, []byte("hemmelig-ä"))}),
			}}.build(t)}),
			want:    "keys: request: x509: SAN dNSName is malformed",
			secrets: []string{"hemmelig"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := DecodeCSR(tc.pem)
			require.EqualError(t, err, tc.want)
			for _, s := range tc.secrets {
				require.NotContains(t, err.Error(), s)
			}
		})
	}
}

// TestDecodeCSRAcceptsNewCertificateRequest: the PEM type some tools still
// write (RFC 7468 §7) reads as the usual one.
func TestDecodeCSRAcceptsNewCertificateRequest(t *testing.T) {
	d := builtCSR(t, mustKey(t, KeySpec{Algorithm: AlgorithmECDSA}), RequestTemplate{CommonName: "a.example"})
	for _, typ := range []string{"CERTIFICATE REQUEST", "NEW CERTIFICATE REQUEST"} {
		got, err := DecodeCSR(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: d}))
		require.NoError(t, err, typ)
		want, err := x509.ParseCertificateRequest(d)
		require.NoError(t, err)
		requireSameCSR(t, want, got)
		require.NoError(t, got.CheckSignature(), "the fields the signature check reads are x509's")
	}
}

// FuzzDecodeCSR holds DecodeCSR to x509.ParseCertificateRequest: for any
// bytes both fail, or both succeed with every field DecodeCSR promises
// equal. The fast decoder is checked on its own too: whatever it accepts,
// x509 must accept with the same fields.
func FuzzDecodeCSR(f *testing.F) {
	cases := csrCases(f)
	for _, tc := range cases {
		f.Add(tc.der)
	}
	// Mutations of a full request: cut at every few bytes, one byte
	// changed, lengths off by one.
	base := cases["an ECDSA P-256 request BuildCSR writes, every name and subject field"].der
	for i := 0; i < len(base); i += 37 {
		f.Add(base[:i])
		m := append([]byte{}, base...)
		m[i] ^= 0x01
		f.Add(m)
		m = append([]byte{}, base...)
		m[i]++
		f.Add(m)
	}
	f.Fuzz(requireDecodeCSRIsX509)
}

// requireDecodeCSRIsX509 fails unless DecodeCSR reads der as x509 does:
// both fail, or both give the same fields; and whatever the fast decoder
// reads on its own, x509 reads the same.
func requireDecodeCSRIsX509(t *testing.T, der []byte) {
	want, wantErr := x509.ParseCertificateRequest(der)
	if fast, ok := parseCSRFast(der); ok {
		if wantErr != nil {
			t.Fatalf("the fast decoder reads what x509 rejects (%v)", wantErr)
		}
		requireSameCSR(t, want, fast)
	}
	got, err := decodeCSRDER(der)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("DecodeCSR error %v, x509 error %v", err, wantErr)
	}
	if err != nil {
		if !strings.HasPrefix(err.Error(), "keys: request: ") || strings.Contains(err.Error(), "cannot parse URI") {
			t.Fatalf("error %q", err)
		}
		return
	}
	requireSameCSR(t, want, got)
}

// Where FuzzDecodeCSRParts puts its bytes in a request.
const (
	partSubject = iota
	partSANs
	partExtensions
	partAttribute
	partPublicKeyInfo
	partSignatureAlgorithm
	partCount
)

// FuzzDecodeCSRParts is FuzzDecodeCSR with the fuzzed bytes placed inside
// an otherwise well-formed request — as its subject, its subject
// alternative names, its requested extensions, an attribute, its public
// key info or its signature algorithm — so that the fuzzer explores each
// inner structure without having to keep the outer lengths right.
func FuzzDecodeCSRParts(f *testing.F) {
	spki, err := x509.MarshalPKIXPublicKey(partsKey.Public())
	require.NoError(f, err)
	ed := mustKey(f, KeySpec{Algorithm: AlgorithmEd25519})
	edSPKI, err := x509.MarshalPKIXPublicKey(ed.Public())
	require.NoError(f, err)
	rsaSPKI, err := x509.MarshalPKIXPublicKey(mustKey(f, KeySpec{}).Public())
	require.NoError(f, err)
	seeds := map[uint8][][]byte{
		partSubject: {
			name([]atv{{oidCN, cbasn1.UTF8String, []byte("a.example")}}, []atv{{oidO, cbasn1.PrintableString, []byte("certlife")}, {oidC, cbasn1.PrintableString, []byte("NO")}}),
			name([]atv{{oidOU, cbasn1.T61String, []byte("caf\xe9")}, {oidL, tagBMPString, bmp("Zürich")}, {oidSerial, tagNumericString, []byte("12 3")}, {oidEmail, cbasn1.IA5String, []byte("a@b")}}),
			name([]atv{{oidCN, cbasn1.INTEGER, []byte{1}}}),
		},
		partSANs: {
			sans(sanDNS, []byte("a.example"), sanEmail, []byte("a@a.example"), sanIP, []byte{10, 0, 0, 1}, sanURI, []byte("https://a.example:8443/x")),
			sans(sanURI, []byte("spiffe://c/ns"), sanIP, make([]byte, 16), cbasn1.Tag(8).ContextSpecific(), []byte{42}),
		},
		partExtensions: {
			extensions(ext{oid: oidSAN, val: sans(sanDNS, []byte("a"))}, ext{oid: asn1.ObjectIdentifier{2, 5, 29, 15}, critical: boolPtr(true), val: []byte{3, 2, 5, 160}}),
			extensions(ext{oid: asn1.ObjectIdentifier{2, 5, 29, 19}, critical: boolPtr(false), val: []byte{0x30, 0}}),
		},
		partAttribute: {
			extReq(ext{oid: oidSAN, val: sans(sanDNS, []byte("a"))}),
			attribute(oidChallengePassword, []byte{0x13, 2, 'p', 'w'}),
			attribute(oidExtReq),
		},
		partPublicKeyInfo:      {spki, edSPKI, rsaSPKI},
		partSignatureAlgorithm: {algorithm(asn1.ObjectIdentifier{1, 2, 840, 10045, 4, 3, 2}), algorithm(asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 11}, []byte{5, 0})},
	}
	for where, parts := range seeds {
		for _, p := range parts {
			f.Add(p, where)
		}
	}
	f.Fuzz(func(t *testing.T, part []byte, where uint8) {
		p := csrParts{signature: []byte{0x30, 0}}
		switch where % partCount {
		case partSubject:
			p.subject = append([]byte{}, part...)
		case partSANs:
			p.attrs = [][]byte{extReq(ext{oid: oidSAN, val: part})}
		case partExtensions:
			p.attrs = [][]byte{attribute(oidExtReq, part)}
		case partAttribute:
			p.attrs = [][]byte{part}
		case partPublicKeyInfo:
			p.spki = append([]byte{}, part...)
		case partSignatureAlgorithm:
			p.sigAlg = append([]byte{}, part...)
		}
		requireDecodeCSRIsX509(t, p.build(t))
	})
}
