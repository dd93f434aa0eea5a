package keys

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"unicode/utf8"
)

// attributeRule is what RFC 5280 Appendix A (and X.520, RFC 4519, PKCS #9)
// allows of a subject attribute's value.
type attributeRule struct {
	// name is the attribute as messages and literal subjects name it.
	name string
	// max is the upper bound in characters (0: none); exact, when set, is
	// the only length allowed.
	max, exact int
	// bound names the upper bound in the ASN.1 module.
	bound string
	// printable: the value is a PrintableString; ia5: an IA5String.
	printable, ia5 bool
}

// attributeRules by the attribute type's dotted OID. Types not listed
// are DirectoryStrings without a bound certlife checks.
var attributeRules = map[string]attributeRule{
	"2.5.4.3":  {name: "CN", max: 64, bound: "ub-common-name"},
	"2.5.4.4":  {name: "SN", max: 32768, bound: "ub-name"},
	"2.5.4.5":  {name: "SERIALNUMBER", max: 64, bound: "ub-serial-number", printable: true},
	"2.5.4.6":  {name: "C", exact: 2, bound: "ub-country-name-alpha-length", printable: true},
	"2.5.4.7":  {name: "L", max: 128, bound: "ub-locality-name"},
	"2.5.4.8":  {name: "ST", max: 128, bound: "ub-state-name"},
	"2.5.4.9":  {name: "STREET", max: 128, bound: "X.520 ub-street-address"},
	"2.5.4.10": {name: "O", max: 64, bound: "ub-organization-name"},
	"2.5.4.11": {name: "OU", max: 64, bound: "ub-organizational-unit-name"},
	"2.5.4.12": {name: "title", max: 64, bound: "ub-title"},
	"2.5.4.17": {name: "postalCode", max: 16, bound: "ub-postal-code"},
	"2.5.4.42": {name: "givenName", max: 32768, bound: "ub-name"},
	"2.5.4.65": {name: "pseudonym", max: 128, bound: "ub-pseudonym"},
	// PKCS #9 emailAddress (RFC 5280 §4.1.2.6).
	"1.2.840.113549.1.9.1": {name: "emailAddress", max: 255, bound: "ub-emailaddress-length", ia5: true},
	// domainComponent (RFC 4519 §2.4).
	"0.9.2342.19200300.100.1.25": {name: "DC", ia5: true},
}

// attributeProblem says what RFC 5280 forbids in value as an attribute of
// type oid, "" when nothing: a value over its type's upper bound (in
// characters), a country that is not two characters, a character a
// PrintableString or IA5String of its type cannot hold, or a control
// character, which no subject attribute may hold.
func attributeProblem(oid asn1.ObjectIdentifier, value string) string {
	rule, known := attributeRules[oid.String()]
	n := utf8.RuneCountInString(value)
	switch {
	case rule.exact > 0 && n != rule.exact:
		return fmt.Sprintf("%q is %d characters long, not %d (RFC 5280 appendix A, %s: a two-letter ISO 3166 code)", value, n, rule.exact, rule.bound)
	case rule.max > 0 && n > rule.max:
		return fmt.Sprintf("%q is %d characters long, over the upper bound of %d (RFC 5280 appendix A, %s)", value, n, rule.max, rule.bound)
	}
	for _, r := range value {
		switch {
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			return fmt.Sprintf("%q has the control character %U, which no subject attribute may hold (RFC 5280 appendix A)", value, r)
		case known && rule.printable && !isPrintableStringChar(r):
			return fmt.Sprintf("%q has the character %q, which a PrintableString cannot hold: RFC 5280 appendix A makes %s a PrintableString (letters, digits, space and '()+,-./:=?)", value, r, rule.name)
		case known && rule.ia5 && r >= 0x80:
			return fmt.Sprintf("%q has the non-ASCII character %q, which an IA5String cannot hold: %s is an IA5String", value, r, rule.name)
		}
	}
	return ""
}

// isPrintableStringChar reports a character of ASN.1's PrintableString
// (X.680 §41.4).
func isPrintableStringChar(r rune) bool {
	switch {
	case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		return true
	}
	switch r {
	case ' ', '\'', '(', ')', '+', ',', '-', '.', '/', ':', '=', '?':
		return true
	}
	return false
}

// Validate names each subject field value RFC 5280 forbids, as
// *TemplateError values whose Field is the field and index (such as
// "organizations[0]"), joined; nil when there is none. Each value must
// fit its type's upper bound (RFC 5280 appendix A, in characters):
// organizations and organizational units 64, localities, provinces and
// street addresses 128, postal codes 16, the serial number 64; a country
// is exactly two characters. Countries and the serial number are
// PrintableStrings, so they may hold only letters, digits, space and
// '()+,-./:=?. No value may hold a control character.
func (s *Subject) Validate() error {
	if s == nil {
		return nil
	}
	var errs []error
	list := func(field string, oid asn1.ObjectIdentifier, values []string) {
		for i, v := range values {
			if why := attributeProblem(oid, v); why != "" {
				errs = append(errs, &TemplateError{Field: fmt.Sprintf("%s[%d]", field, i), Message: why})
			}
		}
	}
	list("organizations", oidOrganization, s.Organizations)
	list("countries", oidCountry, s.Countries)
	list("organizationalUnits", oidOrganizationalUnit, s.OrganizationalUnits)
	list("localities", oidLocality, s.Localities)
	list("provinces", oidProvince, s.Provinces)
	list("streetAddresses", oidStreetAddress, s.StreetAddresses)
	list("postalCodes", oidPostalCode, s.PostalCodes)
	if s.SerialNumber != "" {
		if why := attributeProblem(oidSerialNumber, s.SerialNumber); why != "" {
			errs = append(errs, &TemplateError{Field: "serialNumber", Message: why})
		}
	}
	return errors.Join(errs...)
}

var (
	oidCountry            = asn1.ObjectIdentifier{2, 5, 4, 6}
	oidOrganization       = asn1.ObjectIdentifier{2, 5, 4, 10}
	oidOrganizationalUnit = asn1.ObjectIdentifier{2, 5, 4, 11}
	oidLocality           = asn1.ObjectIdentifier{2, 5, 4, 7}
	oidProvince           = asn1.ObjectIdentifier{2, 5, 4, 8}
	oidStreetAddress      = asn1.ObjectIdentifier{2, 5, 4, 9}
	oidPostalCode         = asn1.ObjectIdentifier{2, 5, 4, 17}
	oidSerialNumber       = asn1.ObjectIdentifier{2, 5, 4, 5}
)

// rdnsProblem says what RFC 5280 forbids in a literal subject's
// attributes (attributeProblem), naming the attribute; "" when nothing.
// The common name is left out: its bound is checked where the common name
// is read (certificate.Validate).
func rdnsProblem(rdns pkix.RDNSequence) string {
	for _, rdn := range rdns {
		for _, atv := range rdn {
			v, ok := atv.Value.(string)
			if !ok || atv.Type.Equal(oidCommonName) {
				continue
			}
			if why := attributeProblem(atv.Type, v); why != "" {
				return "its " + typeName(atv.Type) + " attribute " + why
			}
		}
	}
	return ""
}

var oidCommonName = asn1.ObjectIdentifier{2, 5, 4, 3}

// encodeRDNs is the DER of a literal subject: each value a PrintableString
// when it can be and a UTF8String otherwise, as crypto/x509/pkix encodes
// names, but for the types whose syntax is an IA5String (domainComponent,
// RFC 4519 §2.4; PKCS #9 emailAddress), which are written as one. legacy
// writes those as the others, as certlife did before: a request made then
// still matches its template.
func encodeRDNs(rdns pkix.RDNSequence, legacy bool) ([]byte, error) {
	if legacy {
		return asn1.Marshal(rdns)
	}
	out := make(pkix.RDNSequence, len(rdns))
	for i, rdn := range rdns {
		out[i] = make([]pkix.AttributeTypeAndValue, len(rdn))
		for j, atv := range rdn {
			if v, ok := atv.Value.(string); ok && attributeRules[atv.Type.String()].ia5 {
				atv.Value = asn1.RawValue{Tag: asn1.TagIA5String, Bytes: []byte(v)}
			}
			out[i][j] = atv
		}
	}
	return asn1.Marshal(out)
}
