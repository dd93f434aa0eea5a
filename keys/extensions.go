package keys

import (
	"bytes"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"slices"
	"strings"
	"unicode/utf8"
)

// TemplateError is one problem of a request template, at a field path
// such as "nameConstraints.permitted.dnsDomains[0]" ("" for the template
// as a whole).
type TemplateError struct {
	Field   string
	Message string
}

func (e *TemplateError) Error() string {
	if e.Field == "" {
		return "keys: " + e.Message
	}
	return "keys: " + e.Field + ": " + e.Message
}

// Unwrap lets errors.Is(err, ErrTemplate) match.
func (e *TemplateError) Unwrap() error { return ErrTemplate }

// OtherName is a subject alternative name of the otherName form (RFC 5280
// §4.2.1.6) whose value is a UTF8String, such as a Microsoft user
// principal name (OID 1.3.6.1.4.1.311.20.2.3). The OID must be one whose
// value is a string: certlife does not check what the OID means.
type OtherName struct {
	// OID is the name's type as a dotted OID, such as
	// "1.3.6.1.4.1.311.20.2.3".
	OID string `json:"oid,omitempty"`
	// UTF8Value is the name; it must not be empty.
	UTF8Value string `json:"utf8Value,omitempty"`
}

func (o OtherName) String() string { return o.OID + "=" + o.UTF8Value }

// Validate names what is wrong with the other name, as *TemplateError
// values whose Field is "oid" or "utf8Value", joined; nil when it is
// valid.
func (o OtherName) Validate() error {
	var errs []error
	if o.OID == "" {
		errs = append(errs, &TemplateError{Field: "oid", Message: "is required"})
	} else if _, err := parseOID(o.OID); err != nil {
		errs = append(errs, &TemplateError{Field: "oid", Message: fmt.Sprintf("%q is not a dotted OID: %v", o.OID, err)})
	}
	if o.UTF8Value == "" {
		errs = append(errs, &TemplateError{Field: "utf8Value", Message: "is required"})
	} else if !utf8.ValidString(o.UTF8Value) {
		errs = append(errs, &TemplateError{Field: "utf8Value", Message: "is not valid UTF-8"})
	}
	return errors.Join(errs...)
}

// NameConstraints is the name constraints extension of a CA certificate
// (RFC 5280 §4.2.1.10): the names a CA may certify below it. A name within
// an excluded subtree is refused whatever the permitted ones say.
type NameConstraints struct {
	// Critical marks the extension critical, so that a client that does
	// not understand it refuses the CA.
	Critical bool `json:"critical,omitempty"`
	// Permitted are the subtrees names must be in.
	Permitted *NameConstraintItem `json:"permitted,omitempty"`
	// Excluded are the subtrees names must not be in.
	Excluded *NameConstraintItem `json:"excluded,omitempty"`
}

// NameConstraintItem lists subtrees of each name form.
type NameConstraintItem struct {
	// DNSDomains are domains such as "example.com" (the domain and every
	// name below it) or ".example.com" (only names below it).
	DNSDomains []string `json:"dnsDomains,omitempty"`
	// IPRanges are address ranges in CIDR notation, such as "10.0.0.0/8".
	IPRanges []string `json:"ipRanges,omitempty"`
	// EmailAddresses are mailboxes ("ops@example.com"), hosts
	// ("example.com": every mailbox on it) or domains (".example.com").
	EmailAddresses []string `json:"emailAddresses,omitempty"`
	// URIDomains are the hosts of URIs, as DNSDomains are for DNS names.
	URIDomains []string `json:"uriDomains,omitempty"`
}

func (i *NameConstraintItem) empty() bool {
	return i == nil || len(i.DNSDomains)+len(i.IPRanges)+len(i.EmailAddresses)+len(i.URIDomains) == 0
}

// Validate names what is wrong with the name constraints, as
// *TemplateError values whose Field is a path below nameConstraints (such
// as "permitted.dnsDomains[0]"), joined; nil when they are valid. Every
// value it accepts is one crypto/x509 reads back from a certificate.
// Permitted or Excluded must be set; when both list nothing, as
// cert-manager accepts, no extension is written.
func (nc *NameConstraints) Validate() error {
	if nc == nil {
		return nil
	}
	if nc.Permitted == nil && nc.Excluded == nil {
		return errors.Join(&TemplateError{Field: "nameConstraints", Message: "sets neither permitted nor excluded (RFC 5280 §4.2.1.10)"})
	}
	var errs []error
	for _, side := range []struct {
		path string
		item *NameConstraintItem
	}{{"permitted", nc.Permitted}, {"excluded", nc.Excluded}} {
		if side.item == nil {
			continue
		}
		add := func(field string, i int, v, problem string) {
			errs = append(errs, &TemplateError{Field: fmt.Sprintf("%s.%s[%d]", side.path, field, i), Message: fmt.Sprintf("%q %s", v, problem)})
		}
		for i, d := range side.item.DNSDomains {
			if why := domainConstraintProblem(d); why != "" {
				add("dnsDomains", i, d, why)
			}
		}
		for i, r := range side.item.IPRanges {
			if _, _, err := net.ParseCIDR(r); err != nil {
				add("ipRanges", i, r, "is not an IP range in CIDR notation, such as 10.0.0.0/8")
			}
		}
		for i, e := range side.item.EmailAddresses {
			if strings.Contains(e, "@") {
				if a, err := mail.ParseAddress(e); err != nil || a.Name != "" || a.Address != e || !isASCII(e) {
					add("emailAddresses", i, e, "is not a mailbox in ASCII (local-part@domain)")
				}
			} else if why := domainConstraintProblem(e); why != "" {
				add("emailAddresses", i, e, why)
			}
		}
		for i, u := range side.item.URIDomains {
			if net.ParseIP(u) != nil {
				add("uriDomains", i, u, "is an IP address: a URI constraint is a domain")
			} else if why := domainConstraintProblem(u); why != "" {
				add("uriDomains", i, u, why)
			}
		}
	}
	return errors.Join(errs...)
}

// domainConstraintProblem says what makes d unusable as a domain
// constraint, "" when it is usable: an optional leading dot, then labels
// of printable ASCII, none empty.
func domainConstraintProblem(d string) string {
	if d == "" || d == "." {
		return "is not a domain"
	}
	for _, l := range strings.Split(strings.TrimPrefix(d, "."), ".") {
		if l == "" {
			return "has an empty label"
		}
		for _, c := range l {
			if c < '!' || c > '~' {
				return "has a character that is not printable ASCII"
			}
		}
	}
	return ""
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// GeneralName tags (RFC 5280 §4.2.1.6).
const (
	tagOtherName  = 0
	tagRFC822Name = 1
	tagDNSName    = 2
	tagURI        = 6
	tagIPAddress  = 7
)

// otherNameTag is the first byte of every other name in a subject
// alternative name extension: [0], context-specific, constructed.
const otherNameTag = 0xa0

var (
	oidSubjectAltName  = asn1.ObjectIdentifier{2, 5, 29, 17}
	oidNameConstraints = asn1.ObjectIdentifier{2, 5, 29, 30}
)

// otherName is OtherName ::= SEQUENCE { type-id OBJECT IDENTIFIER,
// value [0] EXPLICIT ANY DEFINED BY type-id } (RFC 5280 §4.2.1.6).
type otherName struct {
	TypeID asn1.ObjectIdentifier
	Value  asn1.RawValue
}

// marshalSANs encodes a subject alternative name extension holding the
// template's names, other names included, in the order crypto/x509 writes
// them (DNS names, email addresses, IP addresses, URIs) and the other
// names last. It is critical when the subject is empty (RFC 5280
// §4.2.1.6).
func marshalSANs(t RequestTemplate, ips []net.IP, emptySubject bool) (pkix.Extension, error) {
	var names []asn1.RawValue
	ia5 := func(field string, tag int, vs []string) error {
		for i, v := range vs {
			if !isASCII(v) {
				return fmt.Errorf("%w: %s[%d]: %q cannot be encoded as an IA5String", ErrTemplate, field, i, v)
			}
			names = append(names, asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: tag, Bytes: []byte(v)})
		}
		return nil
	}
	if err := ia5("dnsNames", tagDNSName, t.DNSNames); err != nil {
		return pkix.Extension{}, err
	}
	if err := ia5("emailAddresses", tagRFC822Name, t.EmailAddresses); err != nil {
		return pkix.Extension{}, err
	}
	for _, ip := range ips {
		if v4 := ip.To4(); v4 != nil {
			ip = v4
		}
		names = append(names, asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: tagIPAddress, Bytes: ip})
	}
	if err := ia5("uris", tagURI, t.URIs); err != nil {
		return pkix.Extension{}, err
	}
	for i, o := range t.OtherNames {
		oid, err := parseOID(o.OID)
		if err != nil {
			return pkix.Extension{}, fmt.Errorf("%w: otherNames[%d].oid: %q: %v", ErrTemplate, i, o.OID, err)
		}
		value, err := asn1.MarshalWithParams(o.UTF8Value, "utf8")
		if err != nil {
			return pkix.Extension{}, fmt.Errorf("%w: otherNames[%d].utf8Value: %v", ErrTemplate, i, err)
		}
		der, err := asn1.MarshalWithParams(otherName{TypeID: oid,
			Value: asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 0, IsCompound: true, Bytes: value}}, "tag:0")
		if err != nil {
			return pkix.Extension{}, fmt.Errorf("%w: otherNames[%d]: %v", ErrTemplate, i, err)
		}
		names = append(names, asn1.RawValue{FullBytes: der})
	}
	v, err := asn1.Marshal(names)
	if err != nil {
		return pkix.Extension{}, err
	}
	return pkix.Extension{Id: oidSubjectAltName, Critical: emptySubject, Value: v}, nil
}

// otherNamesIn reads the other names of the subject alternative name
// extension among exts, each as "oid=value"; a value that is not a
// UTF8String reads "oid (not a UTF8String)", so that it matches no
// template. An extension it cannot read counts as absent.
func otherNamesIn(exts []pkix.Extension) []string {
	var out []string
	for _, ext := range exts {
		if !ext.Id.Equal(oidSubjectAltName) {
			continue
		}
		if bytes.IndexByte(ext.Value, otherNameTag) < 0 {
			// The tag of an other name appears nowhere in the extension:
			// there is none to read, and nothing to decode.
			return nil
		}
		var names []asn1.RawValue
		if rest, err := asn1.Unmarshal(ext.Value, &names); err != nil || len(rest) > 0 {
			return nil
		}
		for _, n := range names {
			if n.Class != asn1.ClassContextSpecific || n.Tag != tagOtherName {
				continue
			}
			var on otherName
			if _, err := asn1.UnmarshalWithParams(n.FullBytes, &on, "tag:0"); err != nil {
				continue
			}
			var s string
			if on.Value.Class == asn1.ClassContextSpecific && on.Value.Tag == 0 {
				if rest, err := asn1.UnmarshalWithParams(on.Value.Bytes, &s, "utf8"); err == nil && len(rest) == 0 {
					out = append(out, on.TypeID.String()+"="+s)
					continue
				}
			}
			out = append(out, on.TypeID.String()+" (not a UTF8String)")
		}
	}
	return out
}

// otherNameStrings are a template's other names as otherNamesIn reads
// them back, with the OID in its canonical form.
func otherNameStrings(ons []OtherName) []string {
	out := make([]string, 0, len(ons))
	for _, o := range ons {
		if oid, err := parseOID(o.OID); err == nil {
			out = append(out, oid.String()+"="+o.UTF8Value)
		} else {
			out = append(out, o.String())
		}
	}
	return out
}

// generalSubtree is GeneralSubtree ::= SEQUENCE { base GeneralName, ... }
// (RFC 5280 §4.2.1.10), with the minimum and maximum left at their
// defaults, as RFC 5280 requires.
type generalSubtree struct {
	Base asn1.RawValue
}

// nameConstraintsDER is NameConstraints ::= SEQUENCE { permittedSubtrees
// [0] GeneralSubtrees OPTIONAL, excludedSubtrees [1] GeneralSubtrees
// OPTIONAL }.
type nameConstraintsDER struct {
	Permitted []generalSubtree `asn1:"optional,tag:0"`
	Excluded  []generalSubtree `asn1:"optional,tag:1"`
}

// marshalNameConstraints encodes the name constraints extension; ok is
// false when nc names no subtree.
func marshalNameConstraints(nc *NameConstraints) (ext pkix.Extension, ok bool, err error) {
	if nc == nil || (nc.Permitted.empty() && nc.Excluded.empty()) {
		return pkix.Extension{}, false, nil
	}
	if err := nc.Validate(); err != nil {
		return pkix.Extension{}, false, err
	}
	subtrees := func(it *NameConstraintItem) []generalSubtree {
		if it.empty() {
			return nil
		}
		var out []generalSubtree
		add := func(tag int, b []byte) {
			out = append(out, generalSubtree{Base: asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: tag, Bytes: b}})
		}
		for _, d := range it.DNSDomains {
			add(tagDNSName, []byte(d))
		}
		for _, r := range it.IPRanges {
			_, n, _ := net.ParseCIDR(r) // validated
			add(tagIPAddress, append(slices.Clone([]byte(n.IP)), n.Mask...))
		}
		for _, e := range it.EmailAddresses {
			add(tagRFC822Name, []byte(e))
		}
		for _, u := range it.URIDomains {
			add(tagURI, []byte(u))
		}
		return out
	}
	v, err := asn1.Marshal(nameConstraintsDER{Permitted: subtrees(nc.Permitted), Excluded: subtrees(nc.Excluded)})
	if err != nil {
		return pkix.Extension{}, false, fmt.Errorf("%w: nameConstraints: %v", ErrTemplate, err)
	}
	return pkix.Extension{Id: oidNameConstraints, Critical: nc.Critical, Value: v}, true, nil
}

// ParseNameConstraints reads a name constraints extension (RFC 5280
// §4.2.1.10), as a request carries it, into the fields of a CA certificate
// template, for an issuer that signs the request as a CA: it sets the
// Permitted* and Excluded* fields and PermittedDNSDomainsCritical, which
// crypto/x509 writes back as the same extension. It refuses name forms
// other than DNS domains, IP ranges, email addresses and URI domains, and
// values crypto/x509 would not read back.
func ParseNameConstraints(ext pkix.Extension, into *x509.Certificate) error {
	nc, err := parseNameConstraints(ext)
	if err != nil {
		return err
	}
	if err := nc.Validate(); err != nil {
		return fmt.Errorf("keys: the name constraints extension: %w", err)
	}
	into.PermittedDNSDomainsCritical = nc.Critical
	set := func(it *NameConstraintItem, dns, emails, uris *[]string, ips *[]*net.IPNet) {
		if it == nil {
			return
		}
		*dns, *emails, *uris = it.DNSDomains, it.EmailAddresses, it.URIDomains
		for _, r := range it.IPRanges {
			_, n, _ := net.ParseCIDR(r) // made by parseNameConstraints
			*ips = append(*ips, n)
		}
	}
	set(nc.Permitted, &into.PermittedDNSDomains, &into.PermittedEmailAddresses, &into.PermittedURIDomains, &into.PermittedIPRanges)
	set(nc.Excluded, &into.ExcludedDNSDomains, &into.ExcludedEmailAddresses, &into.ExcludedURIDomains, &into.ExcludedIPRanges)
	return nil
}

// parseNameConstraints reads a name constraints extension back into the
// form a template writes, its values unchecked (ParseNameConstraints
// checks them).
func parseNameConstraints(ext pkix.Extension) (*NameConstraints, error) {
	var der nameConstraintsDER
	if rest, err := asn1.Unmarshal(ext.Value, &der); err != nil || len(rest) > 0 {
		return nil, errors.New("keys: the name constraints extension cannot be read")
	}
	item := func(subtrees []generalSubtree) (*NameConstraintItem, error) {
		if len(subtrees) == 0 {
			return nil, nil
		}
		it := &NameConstraintItem{}
		for _, st := range subtrees {
			b := st.Base
			if b.Class != asn1.ClassContextSpecific || b.IsCompound {
				return nil, errors.New("keys: the name constraints extension holds a name form certlife does not read")
			}
			switch b.Tag {
			case tagDNSName:
				it.DNSDomains = append(it.DNSDomains, string(b.Bytes))
			case tagRFC822Name:
				it.EmailAddresses = append(it.EmailAddresses, string(b.Bytes))
			case tagURI:
				it.URIDomains = append(it.URIDomains, string(b.Bytes))
			case tagIPAddress:
				if len(b.Bytes) != 2*net.IPv4len && len(b.Bytes) != 2*net.IPv6len {
					return nil, fmt.Errorf("keys: the name constraints extension holds an IP range of %d bytes", len(b.Bytes))
				}
				half := len(b.Bytes) / 2
				mask := net.IPMask(b.Bytes[half:])
				if ones, bits := mask.Size(); ones == 0 && bits == 0 {
					return nil, errors.New("keys: the name constraints extension holds an IP range whose mask is not a prefix")
				}
				n := net.IPNet{IP: net.IP(b.Bytes[:half]).Mask(mask), Mask: mask}
				it.IPRanges = append(it.IPRanges, n.String())
			default:
				return nil, fmt.Errorf("keys: the name constraints extension holds a name form (tag %d) certlife does not read", b.Tag)
			}
		}
		return it, nil
	}
	nc := &NameConstraints{Critical: ext.Critical}
	var err error
	if nc.Permitted, err = item(der.Permitted); err != nil {
		return nil, err
	}
	if nc.Excluded, err = item(der.Excluded); err != nil {
		return nil, err
	}
	if nc.Permitted == nil && nc.Excluded == nil {
		return nil, errors.New("keys: the name constraints extension names no subtree (RFC 5280 §4.2.1.10)")
	}
	return nc, nil
}

// sameNameConstraints reports whether two name constraints mean the same:
// each list the same set (IP ranges by the network they name), and, when
// there are any, the same criticality. Nil and empty ones are the same.
func sameNameConstraints(a, b *NameConstraints) bool {
	aEmpty, bEmpty := a == nil || (a.Permitted.empty() && a.Excluded.empty()), b == nil || (b.Permitted.empty() && b.Excluded.empty())
	if aEmpty || bEmpty {
		return aEmpty == bEmpty
	}
	sameItem := func(x, y *NameConstraintItem) bool {
		if x.empty() || y.empty() {
			return x.empty() == y.empty()
		}
		return sameSet(x.DNSDomains, y.DNSDomains) && sameSet(x.EmailAddresses, y.EmailAddresses) &&
			sameSet(x.URIDomains, y.URIDomains) && sameSet(normCIDRs(x.IPRanges), normCIDRs(y.IPRanges))
	}
	return a.Critical == b.Critical && sameItem(a.Permitted, b.Permitted) && sameItem(a.Excluded, b.Excluded)
}

// describeNameConstraints renders name constraints for a Difference, each
// list sorted, so that two that mean the same read the same.
func describeNameConstraints(nc *NameConstraints) string {
	if nc == nil || (nc.Permitted.empty() && nc.Excluded.empty()) {
		return "none"
	}
	item := func(it *NameConstraintItem) string {
		if it.empty() {
			return "{}"
		}
		var parts []string
		for _, f := range []struct {
			name string
			vs   []string
		}{{"dnsDomains", it.DNSDomains}, {"ipRanges", normCIDRs(it.IPRanges)}, {"emailAddresses", it.EmailAddresses}, {"uriDomains", it.URIDomains}} {
			if len(f.vs) > 0 {
				parts = append(parts, f.name+": "+fmt.Sprint(sorted(f.vs)))
			}
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprintf("permitted %s, excluded %s, critical %v", item(nc.Permitted), item(nc.Excluded), nc.Critical)
}

// normCIDRs writes each range as its network and prefix, as a certificate
// holds it ("10.1.2.3/8" is "10.0.0.0/8").
func normCIDRs(rs []string) []string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		if _, n, err := net.ParseCIDR(r); err == nil {
			out = append(out, n.String())
		} else {
			out = append(out, r)
		}
	}
	return out
}

// requestNameConstraints reads the name constraints among a request's
// extensions: present says whether it carries the extension, and nc is
// nil when it does not or when the extension cannot be read.
func requestNameConstraints(exts []pkix.Extension) (nc *NameConstraints, present bool) {
	for _, ext := range exts {
		if ext.Id.Equal(oidNameConstraints) {
			nc, err := parseNameConstraints(ext)
			if err != nil {
				return nil, true
			}
			return nc, true
		}
	}
	return nil, false
}
