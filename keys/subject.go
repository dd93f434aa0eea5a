package keys

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// literalSubjectTypes are the attribute type names a literal subject may
// use (RFC 4514 §3, and SERIALNUMBER as crypto/x509/pkix prints it),
// matched without regard to case; any other type is written as a dotted
// OID.
var literalSubjectTypes = map[string]asn1.ObjectIdentifier{
	"C":            {2, 5, 4, 6},
	"O":            {2, 5, 4, 10},
	"OU":           {2, 5, 4, 11},
	"CN":           {2, 5, 4, 3},
	"SERIALNUMBER": {2, 5, 4, 5},
	"L":            {2, 5, 4, 7},
	"ST":           {2, 5, 4, 8},
	"STREET":       {2, 5, 4, 9},
	"DC":           {0, 9, 2342, 19200300, 100, 1, 25},
	"UID":          {0, 9, 2342, 19200300, 100, 1, 1},
}

// ParseLiteralSubject reads a distinguished name in its RFC 4514 string
// form, such as "CN=app,OU=web,DC=corp,DC=example", into the subject a
// request or certificate encodes, in encoding order: RFC 4514 §2.1 writes
// the last RDN first, so the result starts with DC=example. Attribute types
// are C, O, OU, CN, SERIALNUMBER, L, ST, STREET, DC and UID (any case) or
// dotted OIDs; "+" joins the attributes of a multi-valued RDN; "," (or ";",
// as RFC 2253 readers accept) separates RDNs; spaces around types and
// values are dropped. A value is a string, with "\" escaping a special
// character or giving a byte as two hex digits (RFC 4514 §2.4), and must
// be UTF-8; a request or certificate encodes it as a PrintableString when
// it can be and as a UTF8String otherwise, as crypto/x509/pkix encodes
// names, but for DC and the PKCS #9 emailAddress (1.2.840.113549.1.9.1),
// whose syntax is an IA5String and which are encoded as one. The values
// RFC 5280 forbids (over their type's upper bound, a country that is not
// two characters, a serial number that is no PrintableString, a DC that is
// not ASCII, a control character) parse, and are refused where the
// subject is encoded (BuildCSR) and validated (certificate.Validate). A value written
// "#" and hex digits is the DER encoding of a primitive value, whose
// contents are taken as the string, as the reference operator
// (cert-manager) reads it. Errors say what is wrong and where.
func ParseLiteralSubject(s string) (pkix.RDNSequence, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("it names no attribute")
	}
	var (
		rdns  pkix.RDNSequence
		rdn   []pkix.AttributeTypeAndValue
		start int // where the current type or value begins
		typ   *asn1.ObjectIdentifier
		esc   bool // the previous byte was an unescaped backslash
	)
	end := func(i int, last bool) error {
		if typ == nil {
			return fmt.Errorf("at byte %d: %q has no \"=\" between an attribute type and its value", i, strings.TrimSpace(s[start:i]))
		}
		v, err := literalValue(s[start:i])
		if err != nil {
			return fmt.Errorf("the value of %s ending at byte %d: %w", typeName(*typ), i, err)
		}
		rdn = append(rdn, pkix.AttributeTypeAndValue{Type: *typ, Value: v})
		typ = nil
		start = i + 1
		if last {
			rdns = append(rdns, rdn)
			rdn = nil
		}
		return nil
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case esc:
			esc = false
		case c == '\\':
			esc = true
		case c == '=' && typ == nil:
			t, err := literalType(s[start:i])
			if err != nil {
				return nil, fmt.Errorf("at byte %d: %w", start, err)
			}
			typ, start = &t, i+1
		case c == ',' || c == ';' || c == '+':
			if err := end(i, c != '+'); err != nil {
				return nil, err
			}
		}
	}
	if err := end(len(s), true); err != nil {
		return nil, err
	}
	// RFC 4514 §2.1: the string starts with the last RDN of the sequence.
	for i, j := 0, len(rdns)-1; i < j; i, j = i+1, j-1 {
		rdns[i], rdns[j] = rdns[j], rdns[i]
	}
	return rdns, nil
}

// literalType reads an attribute type: a name literalSubjectTypes holds,
// or a dotted OID.
func literalType(s string) (asn1.ObjectIdentifier, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("an attribute type is missing before \"=\"")
	}
	if t, ok := literalSubjectTypes[strings.ToUpper(s)]; ok {
		return t, nil
	}
	if s[0] >= '0' && s[0] <= '9' {
		oid, err := parseOID(s)
		if err != nil {
			return nil, fmt.Errorf("attribute type %q: %w", s, err)
		}
		return oid, nil
	}
	return nil, fmt.Errorf("attribute type %q is not one of C, O, OU, CN, SERIALNUMBER, L, ST, STREET, DC, UID, nor a dotted OID", s)
}

// typeName is an attribute type as a literal subject may write it.
func typeName(oid asn1.ObjectIdentifier) string {
	for name, t := range literalSubjectTypes {
		if t.Equal(oid) {
			return name
		}
	}
	return oid.String()
}

// literalValue reads an attribute value (RFC 4514 §2.4, §3): a string
// with escapes, or "#" and the hex digits of a DER value.
func literalValue(s string) (any, error) {
	s = strings.TrimLeft(s, " ")
	if strings.HasPrefix(s, "#") {
		der, err := hex.DecodeString(strings.TrimRight(s[1:], " "))
		if err != nil || len(der) == 0 {
			return nil, errors.New(`"#" must be followed by the hex digits of a DER-encoded value`)
		}
		var v asn1.RawValue
		if rest, err := asn1.Unmarshal(der, &v); err != nil || len(rest) > 0 || v.IsCompound {
			return nil, errors.New(`the hex digits after "#" are not one DER-encoded primitive value`)
		}
		if !utf8.Valid(v.Bytes) {
			return nil, errors.New(`the value after "#" is not valid UTF-8`)
		}
		return string(v.Bytes), nil
	}
	out := make([]byte, 0, len(s))
	keep := 0 // out[:keep] ends with a byte that is not an unescaped space
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			out = append(out, c)
			if c != ' ' {
				keep = len(out)
			}
			continue
		}
		if i+1 == len(s) {
			return nil, errors.New(`it ends with a lone "\"`)
		}
		switch n := s[i+1]; n {
		case ' ', '"', '#', '+', ',', ';', '<', '=', '>', '\\':
			out = append(out, n)
			i++
		default:
			if i+2 >= len(s) {
				return nil, fmt.Errorf(`"\%c" is neither an escaped special character nor two hex digits`, n)
			}
			b, err := hex.DecodeString(s[i+1 : i+3])
			if err != nil {
				return nil, fmt.Errorf(`"\%s" is neither an escaped special character nor two hex digits`, s[i+1:i+3])
			}
			out = append(out, b[0])
			i += 2
		}
		keep = len(out)
	}
	out = out[:keep]
	if !utf8.Valid(out) {
		return nil, errors.New("it is not valid UTF-8")
	}
	return string(out), nil
}

// parseOID reads a dotted OID such as "1.3.6.1.4.1.311.20.2.3": at least
// two arcs, decimal without leading zeros, the first 0, 1 or 2 and, when
// it is 0 or 1, the second under 40 (X.660), so that encoding/asn1 can
// encode it.
func parseOID(s string) (asn1.ObjectIdentifier, error) {
	parts := strings.Split(s, ".")
	if len(parts) < 2 {
		return nil, errors.New("a dotted OID has at least two arcs")
	}
	oid := make(asn1.ObjectIdentifier, len(parts))
	for i, p := range parts {
		n, err := strconv.ParseUint(p, 10, 31)
		if err != nil || (len(p) > 1 && p[0] == '0') {
			return nil, fmt.Errorf("arc %d, %q, is not a decimal number without leading zeros", i+1, p)
		}
		oid[i] = int(n)
	}
	if oid[0] > 2 {
		return nil, fmt.Errorf("the first arc is %d, not 0, 1 or 2", oid[0])
	}
	if oid[0] < 2 && oid[1] >= 40 {
		return nil, fmt.Errorf("the second arc is %d, over 39 under first arc %d", oid[1], oid[0])
	}
	return oid, nil
}

// literalSubjectDER is the DER subject of a literal subject (encodeRDNs),
// and its common name ("" for none): the last CN attribute with a string
// value, as crypto/x509/pkix reads it. An attribute RFC 5280 forbids
// (rdnsProblem) is an error.
func literalSubjectDER(s string) (der []byte, commonName string, err error) {
	return literalSubjectEncoding(s, false)
}

// literalSubjectEncoding is literalSubjectDER, legacy choosing the
// encoding of encodeRDNs.
func literalSubjectEncoding(s string, legacy bool) (der []byte, commonName string, err error) {
	rdns, err := ParseLiteralSubject(s)
	if err != nil {
		return nil, "", err
	}
	if why := rdnsProblem(rdns); why != "" {
		return nil, "", errors.New(why)
	}
	der, err = encodeRDNs(rdns, legacy)
	if err != nil {
		return nil, "", fmt.Errorf("it cannot be encoded: %w", err)
	}
	var name pkix.Name
	name.FillFromRDNSequence(&rdns)
	return der, name.CommonName, nil
}
