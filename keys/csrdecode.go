package keys

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"math/big"
	"net"
	"net/url"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// decodeCSRDER is DecodeCSR after the PEM layer: the cryptobyte decoder
// when it can read the request exactly as x509.ParseCertificateRequest
// does, x509.ParseCertificateRequest itself otherwise. Every failure is the
// standard library's judgement.
func decodeCSRDER(der []byte) (*x509.CertificateRequest, error) {
	if csr, ok := parseCSRFast(der); ok {
		return csr, nil
	}
	csr, err := x509.ParseCertificateRequest(der)
	if err != nil {
		return nil, &requestError{err: err}
	}
	return csr, nil
}

// requestError is a request that x509.ParseCertificateRequest rejects. Its
// text names the structure at fault and never quotes the request's bytes
// (x509 quotes a malformed URI; that is replaced by the field's name).
type requestError struct{ err error }

func (e *requestError) Error() string {
	msg := e.err.Error()
	if strings.HasPrefix(msg, "x509: cannot parse URI") {
		msg = "x509: a URI subject alternative name is not a valid URI"
	}
	return "keys: request: " + msg
}

func (e *requestError) Unwrap() error { return e.err }

// Tags the decoder reads that cryptobyte/asn1 does not name.
const (
	tagBMPString     = cbasn1.Tag(asn1.TagBMPString)
	tagNumericString = cbasn1.Tag(asn1.TagNumericString)
	tagAttributes    = cbasn1.Tag(0xa0) // [0] constructed
)

// oidContent returns the DER contents (no tag, no length) of an OID, the
// form the decoder compares without building an asn1.ObjectIdentifier.
func oidContent(oid asn1.ObjectIdentifier) string {
	der, err := asn1.Marshal(oid)
	if err != nil {
		panic(err)
	}
	in := cryptobyte.String(der)
	var content cryptobyte.String
	if !in.ReadASN1(&content, cbasn1.OBJECT_IDENTIFIER) {
		panic("keys: cannot read back a marshalled OID")
	}
	return string(content)
}

var (
	// signatureAlgorithms maps the OIDs x509 knows to the algorithm it
	// reports (RFC 3279, RFC 4055, RFC 5758, RFC 8410). RSASSA-PSS is not
	// here: its algorithm depends on its parameters, and such requests go
	// to x509.
	signatureAlgorithms = map[string]x509.SignatureAlgorithm{
		oidContent(asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 4}):     x509.MD5WithRSA,
		oidContent(asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 5}):     x509.SHA1WithRSA,
		oidContent(asn1.ObjectIdentifier{1, 3, 14, 3, 2, 29}):             x509.SHA1WithRSA,
		oidContent(asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 11}):    x509.SHA256WithRSA,
		oidContent(asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 12}):    x509.SHA384WithRSA,
		oidContent(asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 13}):    x509.SHA512WithRSA,
		oidContent(asn1.ObjectIdentifier{1, 2, 840, 10040, 4, 3}):         x509.DSAWithSHA1,
		oidContent(asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 3, 2}): x509.DSAWithSHA256,
		oidContent(asn1.ObjectIdentifier{1, 2, 840, 10045, 4, 1}):         x509.ECDSAWithSHA1,
		oidContent(asn1.ObjectIdentifier{1, 2, 840, 10045, 4, 3, 2}):      x509.ECDSAWithSHA256,
		oidContent(asn1.ObjectIdentifier{1, 2, 840, 10045, 4, 3, 3}):      x509.ECDSAWithSHA384,
		oidContent(asn1.ObjectIdentifier{1, 2, 840, 10045, 4, 3, 4}):      x509.ECDSAWithSHA512,
		oidContent(asn1.ObjectIdentifier{1, 3, 101, 112}):                 x509.PureEd25519,
	}
	oidSignatureRSAPSS = oidContent(asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 10})
	oidSignatureEd     = oidContent(asn1.ObjectIdentifier{1, 3, 101, 112})

	oidPublicKeyRSA     = oidContent(asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 1})
	oidPublicKeyDSA     = oidContent(asn1.ObjectIdentifier{1, 2, 840, 10040, 4, 1})
	oidPublicKeyECDSA   = oidContent(asn1.ObjectIdentifier{1, 2, 840, 10045, 2, 1})
	oidPublicKeyEd25519 = oidContent(asn1.ObjectIdentifier{1, 3, 101, 112})

	// namedCurves maps a whole DER curve OID (RFC 5480 §2.1.1.1), as it
	// appears in ECDSA parameters, to its curve.
	namedCurves = map[string]elliptic.Curve{
		oidElement(asn1.ObjectIdentifier{1, 3, 132, 0, 33}):          elliptic.P224(),
		oidElement(asn1.ObjectIdentifier{1, 2, 840, 10045, 3, 1, 7}): elliptic.P256(),
		oidElement(asn1.ObjectIdentifier{1, 3, 132, 0, 34}):          elliptic.P384(),
		oidElement(asn1.ObjectIdentifier{1, 3, 132, 0, 35}):          elliptic.P521(),
	}

	// The PKCS #9 extensionRequest attribute (RFC 2985 §5.4.2) and the
	// subject alternative name extension (RFC 5280 §4.2.1.6).
	oidExtensionRequest = oidContent(asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 14})
	oidSubjectAltName   = asn1.ObjectIdentifier{2, 5, 29, 17}
)

func oidElement(oid asn1.ObjectIdentifier) string {
	der, err := asn1.Marshal(oid)
	if err != nil {
		panic(err)
	}
	return string(der)
}

// readElement reads one element of the given tag, returning it whole
// (full) and its contents (body).
func readElement(s *cryptobyte.String, tag cbasn1.Tag, full, body *cryptobyte.String) bool {
	if !s.ReadASN1Element(full, tag) {
		return false
	}
	*body = *full
	return body.ReadASN1(body, tag)
}

// lowTagForm reports whether the next element's identifier is a single
// octet. encoding/asn1 reads the multi-octet form too and cryptobyte does
// not; the decoder leaves such input to x509.
func lowTagForm(s cryptobyte.String) bool { return len(s) > 0 && s[0]&0x1f != 0x1f }

// parseCSRFast decodes a DER PKCS #10 request (RFC 2986 §4) with
// cryptobyte into what x509.ParseCertificateRequest gives, except the
// deprecated Attributes, which it leaves nil. ok is false for anything it
// does not read exactly as x509 (which parses requests with encoding/asn1)
// does: every malformed request, and well-formed ones it leaves to x509
// (RSASSA-PSS, DSA keys, subject values that are not strings, non-canonical
// element forms). It never accepts what x509 rejects.
func parseCSRFast(der []byte) (_ *x509.CertificateRequest, ok bool) {
	in := cryptobyte.String(der)
	var raw, req cryptobyte.String
	// encoding/asn1 accepts bytes after the last field inside each
	// SEQUENCE it maps to a struct, without reading them; so does the
	// decoder. After the outermost SEQUENCE, x509 rejects any byte.
	if !readElement(&in, cbasn1.SEQUENCE, &raw, &req) || !in.Empty() {
		return nil, false
	}
	var tbsRaw, tbs, sigAI cryptobyte.String
	var sig asn1.BitString
	if !readElement(&req, cbasn1.SEQUENCE, &tbsRaw, &tbs) ||
		!req.ReadASN1(&sigAI, cbasn1.SEQUENCE) ||
		!req.ReadASN1BitString(&sig) {
		return nil, false
	}
	sigAlg, ok := signatureAlgorithmOf(sigAI)
	if !ok {
		return nil, false
	}

	var version int64
	var subject, spkiRaw, spki, attrs cryptobyte.String
	var subjectTag cbasn1.Tag
	if !tbs.ReadASN1Integer(&version) || int64(int32(version)) != version ||
		!lowTagForm(tbs) || !tbs.ReadAnyASN1Element(&subject, &subjectTag) || subjectTag != cbasn1.SEQUENCE ||
		!readElement(&tbs, cbasn1.SEQUENCE, &spkiRaw, &spki) ||
		!tbs.ReadASN1(&attrs, tagAttributes) {
		return nil, false
	}

	csr := &x509.CertificateRequest{
		Raw:                      raw,
		RawTBSCertificateRequest: tbsRaw,
		RawSubjectPublicKeyInfo:  spkiRaw,
		RawSubject:               subject,
		Version:                  int(version),
		Signature:                sig.RightAlign(),
		SignatureAlgorithm:       sigAlg,
	}
	if !parsePublicKeyInfo(csr, spki) || !parseSubject(&csr.Subject, subject) ||
		!parseRequestedExtensions(csr, attrs) {
		return nil, false
	}
	for i := range csr.Extensions {
		if csr.Extensions[i].Id.Equal(oidSubjectAltName) && !parseSANs(csr, csr.Extensions[i].Value) {
			return nil, false
		}
	}
	return csr, true
}

// readAlgorithmIdentifier reads an AlgorithmIdentifier (RFC 5280 §4.1.1.2)
// as encoding/asn1 reads pkix.AlgorithmIdentifier: the OID's contents, and
// the parameters element whole (empty when absent). Elements after the
// parameters are not read.
func readAlgorithmIdentifier(ai cryptobyte.String) (oid, params cryptobyte.String, ok bool) {
	if !ai.ReadASN1(&oid, cbasn1.OBJECT_IDENTIFIER) {
		return nil, nil, false
	}
	if !ai.Empty() {
		var tag cbasn1.Tag
		if !lowTagForm(ai) || !ai.ReadAnyASN1Element(&params, &tag) {
			return nil, nil, false
		}
	}
	return oid, params, true
}

// validOID reports whether encoding/asn1 reads these OID contents.
func validOID(content []byte) bool {
	b := cryptobyte.NewBuilder(make([]byte, 0, len(content)+6))
	b.AddASN1(cbasn1.OBJECT_IDENTIFIER, func(b *cryptobyte.Builder) { b.AddBytes(content) })
	der, err := b.Bytes()
	if err != nil {
		return false
	}
	s := cryptobyte.String(der)
	var oid asn1.ObjectIdentifier
	return s.ReadASN1ObjectIdentifier(&oid)
}

func signatureAlgorithmOf(ai cryptobyte.String) (x509.SignatureAlgorithm, bool) {
	oid, params, ok := readAlgorithmIdentifier(ai)
	if !ok || string(oid) == oidSignatureRSAPSS {
		return 0, false
	}
	alg, known := signatureAlgorithms[string(oid)]
	switch {
	case !known:
		// x509 reports an OID it does not know as unknown, and rejects
		// one it cannot read.
		return x509.UnknownSignatureAlgorithm, validOID(oid)
	case string(oid) == oidSignatureEd && len(params) != 0:
		// RFC 8410 §3: the parameters MUST be absent.
		return x509.UnknownSignatureAlgorithm, true
	}
	return alg, true
}

// parsePublicKeyInfo fills the public key algorithm and key from a
// SubjectPublicKeyInfo's contents, with x509's checks.
func parsePublicKeyInfo(csr *x509.CertificateRequest, spki cryptobyte.String) bool {
	var ai cryptobyte.String
	var bits asn1.BitString
	if !spki.ReadASN1(&ai, cbasn1.SEQUENCE) || !spki.ReadASN1BitString(&bits) {
		return false
	}
	oid, params, ok := readAlgorithmIdentifier(ai)
	if !ok {
		return false
	}
	data := bits.RightAlign()
	switch string(oid) {
	case oidPublicKeyECDSA:
		curve := namedCurves[string(params)]
		if curve == nil {
			return false
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(curve, data)
		if err != nil {
			return false
		}
		csr.PublicKeyAlgorithm, csr.PublicKey = x509.ECDSA, pub
	case oidPublicKeyEd25519:
		// RFC 8410 §3: no parameters.
		if len(params) != 0 || len(data) != ed25519.PublicKeySize {
			return false
		}
		csr.PublicKeyAlgorithm, csr.PublicKey = x509.Ed25519, ed25519.PublicKey(data)
	case oidPublicKeyRSA:
		// RFC 3279 §2.3.1: NULL parameters, then RSAPublicKey.
		if string(params) != string(asn1.NullBytes) {
			return false
		}
		der := cryptobyte.String(data)
		n, e := new(big.Int), 0
		if !der.ReadASN1(&der, cbasn1.SEQUENCE) || !der.ReadASN1Integer(n) || !der.ReadASN1Integer(&e) ||
			n.Sign() <= 0 || e <= 0 {
			return false
		}
		csr.PublicKeyAlgorithm, csr.PublicKey = x509.RSA, &rsa.PublicKey{N: n, E: e}
	case oidPublicKeyDSA:
		return false // deprecated; x509 reads it
	default:
		if !validOID(oid) {
			return false
		}
		csr.PublicKeyAlgorithm = x509.UnknownPublicKeyAlgorithm
	}
	return true
}

// parseSubject fills name from a Name's DER (RFC 5280 §4.1.2.4) as x509
// does for a request: the attribute values read as encoding/asn1 reads
// them, then pkix.Name.FillFromRDNSequence. Only the six string types are
// read here; any other value (encoding/asn1 gives numbers, times, byte
// slices or nil for them) goes to x509.
func parseSubject(name *pkix.Name, der cryptobyte.String) bool {
	var rdns cryptobyte.String
	if !der.ReadASN1(&rdns, cbasn1.SEQUENCE) {
		return false
	}
	// The attributes are gathered on the stack for the few a request
	// has: FillFromRDNSequence copies them into Names.
	var buf [8]pkix.AttributeTypeAndValue
	atvs := buf[:0]
	for !rdns.Empty() {
		var set cryptobyte.String
		if !rdns.ReadASN1(&set, cbasn1.SET) {
			return false
		}
		for !set.Empty() {
			var atv, value cryptobyte.String
			var tag cbasn1.Tag
			var typ asn1.ObjectIdentifier
			if !set.ReadASN1(&atv, cbasn1.SEQUENCE) || !atv.ReadASN1ObjectIdentifier(&typ) ||
				!lowTagForm(atv) || !atv.ReadAnyASN1(&value, &tag) {
				return false
			}
			s, ok := parseDirectoryString(tag, value)
			if !ok {
				return false
			}
			atvs = append(atvs, pkix.AttributeTypeAndValue{Type: typ, Value: s})
		}
	}
	if len(atvs) > 0 {
		// FillFromRDNSequence reads the attributes in order whatever
		// their grouping into relative distinguished names.
		name.FillFromRDNSequence(&pkix.RDNSequence{atvs})
	}
	return true
}

// parseDirectoryString reads a string attribute value with encoding/asn1's
// rules for each type (X.680 §41); ok is false for any other type or an
// invalid string.
func parseDirectoryString(tag cbasn1.Tag, v []byte) (string, bool) {
	switch tag {
	case cbasn1.PrintableString:
		for _, b := range v {
			if !printable(b) {
				return "", false
			}
		}
		return string(v), true
	case cbasn1.UTF8String:
		return string(v), utf8.Valid(v)
	case cbasn1.IA5String:
		for _, b := range v {
			if b >= utf8.RuneSelf {
				return "", false
			}
		}
		return string(v), true
	case tagNumericString:
		for _, b := range v {
			if (b < '0' || b > '9') && b != ' ' {
				return "", false
			}
		}
		return string(v), true
	case cbasn1.T61String:
		// Read as Latin-1, each byte one code point.
		buf := make([]byte, 0, len(v)*2)
		for _, b := range v {
			buf = utf8.AppendRune(buf, rune(b))
		}
		return string(buf), true
	case tagBMPString:
		return bmpString(v)
	}
	return "", false
}

// printable is the PrintableString alphabet (X.680 §41.4) with '*' and
// '&', which certificates use and encoding/asn1 accepts.
func printable(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' ||
		'\'' <= b && b <= ')' || '+' <= b && b <= '/' ||
		b == ' ' || b == ':' || b == '=' || b == '?' || b == '*' || b == '&'
}

// bmpString reads UCS-2 (big-endian 16-bit code points of the Basic
// Multilingual Plane), dropping one trailing NUL and rejecting surrogates
// and the permanent noncharacters U+FFFE, U+FFFF, U+FDD0–U+FDEF.
func bmpString(v []byte) (string, bool) {
	if len(v)%2 != 0 {
		return "", false
	}
	if l := len(v); l >= 2 && v[l-1] == 0 && v[l-2] == 0 {
		v = v[:l-2]
	}
	s := make([]uint16, 0, len(v)/2)
	for ; len(v) > 0; v = v[2:] {
		p := uint16(v[0])<<8 | uint16(v[1])
		if p == 0xfffe || p == 0xffff || p >= 0xfdd0 && p <= 0xfdef || p >= 0xd800 && p <= 0xdfff {
			return "", false
		}
		s = append(s, p)
	}
	return string(utf16.Decode(s)), true
}

// parseRequestedExtensions fills Extensions from the request's attributes
// (RFC 2986 §4.1): the extensions of every extensionRequest attribute
// (RFC 2985 §5.4.2), in order. Like x509 it skips attributes of other
// types and extensionRequest attributes without a value, and it refuses a
// request that asks for one extension twice.
func parseRequestedExtensions(csr *x509.CertificateRequest, attrs cryptobyte.String) bool {
	var seen map[string]bool
	for !attrs.Empty() {
		var attr cryptobyte.String
		var tag cbasn1.Tag
		if !lowTagForm(attrs) || !attrs.ReadAnyASN1(&attr, &tag) {
			return false
		}
		var oid cryptobyte.String
		if tag != cbasn1.SEQUENCE || !attr.ReadASN1(&oid, cbasn1.OBJECT_IDENTIFIER) ||
			string(oid) != oidExtensionRequest {
			// x509 ignores what is not an extensionRequest attribute,
			// readable or not: it fills no field read here.
			continue
		}
		var values, first cryptobyte.String
		if !attr.ReadASN1(&values, cbasn1.SET) {
			return false
		}
		for i := 0; !values.Empty(); i++ {
			var v cryptobyte.String
			var vtag cbasn1.Tag
			if !lowTagForm(values) || !values.ReadAnyASN1Element(&v, &vtag) {
				return false
			}
			if i == 0 {
				first = v
			}
		}
		if first == nil {
			continue // no value: x509 skips the attribute
		}
		var exts cryptobyte.String
		if !first.ReadASN1(&exts, cbasn1.SEQUENCE) {
			return false
		}
		for !exts.Empty() {
			var ext, value cryptobyte.String
			var e pkix.Extension
			if !exts.ReadASN1(&ext, cbasn1.SEQUENCE) || !ext.ReadASN1ObjectIdentifier(&e.Id) {
				return false
			}
			if ext.PeekASN1Tag(cbasn1.BOOLEAN) && !ext.ReadASN1Boolean(&e.Critical) {
				return false
			}
			if !ext.ReadASN1(&value, cbasn1.OCTET_STRING) {
				return false
			}
			e.Value = value
			if requested(csr.Extensions, e.Id, &seen) {
				return false // x509 refuses duplicates
			}
			if csr.Extensions == nil {
				csr.Extensions = make([]pkix.Extension, 0, 4) // what BuildCSR writes at most
			}
			csr.Extensions = append(csr.Extensions, e)
		}
	}
	return true
}

// requested reports whether exts already holds an extension of that OID:
// by comparing with each for the few extensions requests carry, through a
// set of their OIDs once there are many.
func requested(exts []pkix.Extension, id asn1.ObjectIdentifier, seen *map[string]bool) bool {
	const few = 16
	if len(exts) < few {
		for i := range exts {
			if exts[i].Id.Equal(id) {
				return true
			}
		}
		return false
	}
	if *seen == nil {
		*seen = make(map[string]bool, 2*few)
		for i := range exts {
			(*seen)[exts[i].Id.String()] = true
		}
	}
	key := id.String()
	if (*seen)[key] {
		return true
	}
	(*seen)[key] = true
	return false
}

// General name tags (RFC 5280 §4.2.1.6) x509 reads.
const (
	sanEmail = cbasn1.Tag(0x81) // [1] rfc822Name
	sanDNS   = cbasn1.Tag(0x82) // [2] dNSName
	sanURI   = cbasn1.Tag(0x86) // [6] uniformResourceIdentifier
	sanIP    = cbasn1.Tag(0x87) // [7] iPAddress
)

// parseSANs fills the names of a subject alternative name extension as
// x509 does: email, DNS and URI names must be IA5 strings, URIs must parse
// with a valid host, IP addresses must be 4 or 16 bytes; other names are
// skipped.
func parseSANs(csr *x509.CertificateRequest, der []byte) bool {
	in := cryptobyte.String(der)
	var seq cryptobyte.String
	if !in.ReadASN1(&seq, cbasn1.SEQUENCE) {
		return false
	}
	for !seq.Empty() {
		var v cryptobyte.String
		var tag cbasn1.Tag
		if !seq.ReadAnyASN1(&v, &tag) {
			return false
		}
		switch tag {
		case sanEmail:
			if !ia5(v) {
				return false
			}
			csr.EmailAddresses = append(csr.EmailAddresses, string(v))
		case sanDNS:
			if !ia5(v) {
				return false
			}
			csr.DNSNames = append(csr.DNSNames, string(v))
		case sanURI:
			if !ia5(v) {
				return false
			}
			u, err := url.Parse(string(v))
			if err != nil || len(u.Host) > 0 && !sanHostValid(u.Host) {
				return false
			}
			csr.URIs = append(csr.URIs, u)
		case sanIP:
			if len(v) != net.IPv4len && len(v) != net.IPv6len {
				return false
			}
			csr.IPAddresses = append(csr.IPAddresses, net.IP(v))
		}
	}
	return true
}

func ia5(v []byte) bool {
	return !slices.ContainsFunc(v, func(b byte) bool { return b >= utf8.RuneSelf })
}

// sanHostValid is x509's check of a URI's host: no trailing dot, only
// printable ASCII other than space, no empty label.
func sanHostValid(h string) bool {
	if h[len(h)-1] == '.' {
		return false
	}
	label := 0
	for i := 0; i < len(h); i++ {
		c := h[i]
		if c < 33 || c > 126 {
			return false
		}
		if c == '.' {
			if label == 0 {
				return false
			}
			label = 0
			continue
		}
		label++
	}
	return label > 0
}
