package keys

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"
)

// Usage is a key usage or extended key usage, by the names Kubernetes
// operators use.
type Usage string

// Usages.
const (
	UsageSigning           Usage = "signing"
	UsageDigitalSignature  Usage = "digital signature"
	UsageContentCommitment Usage = "content commitment"
	UsageKeyEncipherment   Usage = "key encipherment"
	UsageKeyAgreement      Usage = "key agreement"
	UsageDataEncipherment  Usage = "data encipherment"
	UsageCertSign          Usage = "cert sign"
	UsageCRLSign           Usage = "crl sign"
	UsageEncipherOnly      Usage = "encipher only"
	UsageDecipherOnly      Usage = "decipher only"
	UsageAny               Usage = "any"
	UsageServerAuth        Usage = "server auth"
	UsageClientAuth        Usage = "client auth"
	UsageCodeSigning       Usage = "code signing"
	UsageEmailProtection   Usage = "email protection"
	UsageTimestamping      Usage = "timestamping"
	UsageOCSPSigning       Usage = "ocsp signing"
)

var keyUsages = map[Usage]x509.KeyUsage{
	UsageSigning:           x509.KeyUsageDigitalSignature,
	UsageDigitalSignature:  x509.KeyUsageDigitalSignature,
	UsageContentCommitment: x509.KeyUsageContentCommitment,
	UsageKeyEncipherment:   x509.KeyUsageKeyEncipherment,
	UsageKeyAgreement:      x509.KeyUsageKeyAgreement,
	UsageDataEncipherment:  x509.KeyUsageDataEncipherment,
	UsageCertSign:          x509.KeyUsageCertSign,
	UsageCRLSign:           x509.KeyUsageCRLSign,
	UsageEncipherOnly:      x509.KeyUsageEncipherOnly,
	UsageDecipherOnly:      x509.KeyUsageDecipherOnly,
}

var extKeyUsages = map[Usage]asn1.ObjectIdentifier{
	UsageAny:             {2, 5, 29, 37, 0},
	UsageServerAuth:      {1, 3, 6, 1, 5, 5, 7, 3, 1},
	UsageClientAuth:      {1, 3, 6, 1, 5, 5, 7, 3, 2},
	UsageCodeSigning:     {1, 3, 6, 1, 5, 5, 7, 3, 3},
	UsageEmailProtection: {1, 3, 6, 1, 5, 5, 7, 3, 4},
	UsageTimestamping:    {1, 3, 6, 1, 5, 5, 7, 3, 8},
	UsageOCSPSigning:     {1, 3, 6, 1, 5, 5, 7, 3, 9},
}

var (
	oidKeyUsage         = asn1.ObjectIdentifier{2, 5, 29, 15}
	oidExtKeyUsage      = asn1.ObjectIdentifier{2, 5, 29, 37}
	oidBasicConstraints = asn1.ObjectIdentifier{2, 5, 29, 19}
)

// DefaultUsages returns the usages a request lists when its template names
// none: digital signature and key encipherment (and cert sign for a CA),
// what BuildCSR encodes in the request and what the reference operator
// (cert-manager) expects a CSR to carry when its request lists no usages.
// An issuer does not grant them as they are: it gives the certificate
// DefaultUsagesFor its key, so that an ECDSA or Ed25519 certificate never
// carries key encipherment and a CA carries CRL sign. Each call returns a
// new slice, so a caller may change it without changing the defaults.
func DefaultUsages() []Usage {
	return []Usage{UsageDigitalSignature, UsageKeyEncipherment}
}

// Subject holds the distinguished-name fields of a request beyond the
// common name. Empty fields are left out.
type Subject struct {
	Organizations       []string `json:"organizations,omitempty"`
	Countries           []string `json:"countries,omitempty"`
	OrganizationalUnits []string `json:"organizationalUnits,omitempty"`
	Localities          []string `json:"localities,omitempty"`
	Provinces           []string `json:"provinces,omitempty"`
	StreetAddresses     []string `json:"streetAddresses,omitempty"`
	PostalCodes         []string `json:"postalCodes,omitempty"`
	SerialNumber        string   `json:"serialNumber,omitempty"`
}

// IsEmpty reports a subject with no field set; nil is empty.
func (s *Subject) IsEmpty() bool {
	return s == nil || len(s.Organizations)+len(s.Countries)+len(s.OrganizationalUnits)+len(s.Localities)+
		len(s.Provinces)+len(s.StreetAddresses)+len(s.PostalCodes) == 0 && s.SerialNumber == ""
}

// RequestTemplate is what a certificate asks to be certified.
type RequestTemplate struct {
	// CommonName is the subject common name. Optional.
	CommonName string `json:"commonName,omitempty"`
	// DNSNames, IPAddresses (textual), URIs and EmailAddresses are the
	// subject alternative names.
	DNSNames       []string `json:"dnsNames,omitempty"`
	IPAddresses    []string `json:"ipAddresses,omitempty"`
	URIs           []string `json:"uris,omitempty"`
	EmailAddresses []string `json:"emailAddresses,omitempty"`
	// Subject holds the other subject fields. Nil means none.
	Subject *Subject `json:"subject,omitempty"`
	// LiteralSubject, when set, is the whole subject as an RFC 4514
	// string, encoded as written and in the order written
	// (ParseLiteralSubject); CommonName and Subject must then be empty.
	// Its CN attribute, if any, is the common name.
	LiteralSubject string `json:"literalSubject,omitempty"`
	// OtherNames are subject alternative names of the otherName form
	// with UTF8String values.
	OtherNames []OtherName `json:"otherNames,omitempty"`
	// Usages; empty means DefaultUsages() in the request, and
	// DefaultUsagesFor the key in a certificate an issuer of this package
	// makes (TemporaryCertificate, certificate/localca).
	Usages []Usage `json:"usages,omitempty"`
	// EncodeUsagesInRequest says whether the key usage and extended key
	// usage extensions go into the request; nil means true. Set it to
	// false for an issuer that refuses requests carrying them: the
	// usages still reach the issuer beside the request.
	EncodeUsagesInRequest *bool `json:"encodeUsagesInRequest,omitempty"`
	// IsCA asks for a CA certificate.
	IsCA bool `json:"isCA,omitempty"`
	// NameConstraints, for a CA, are the names it may certify, carried in
	// the request as the extension a CA certificate holds (RFC 5280
	// §4.2.1.10).
	NameConstraints *NameConstraints `json:"nameConstraints,omitempty"`
}

// encodesUsages reports whether the usage extensions go into the request.
func (t RequestTemplate) encodesUsages() bool {
	return t.EncodeUsagesInRequest == nil || *t.EncodeUsagesInRequest
}

// commonName is the template's common name: CommonName, or the CN of
// LiteralSubject.
func (t RequestTemplate) commonName() string {
	if t.LiteralSubject == "" {
		return t.CommonName
	}
	_, cn, _ := literalSubjectDER(t.LiteralSubject)
	return cn
}

// rawSubject is the template's subject in DER.
func (t RequestTemplate) rawSubject() ([]byte, error) {
	if t.LiteralSubject != "" {
		if t.CommonName != "" || !t.Subject.IsEmpty() {
			return nil, fmt.Errorf("%w: literalSubject: may not be set together with commonName or subject", ErrTemplate)
		}
		der, _, err := literalSubjectDER(t.LiteralSubject)
		if err != nil {
			return nil, fmt.Errorf("%w: literalSubject: %q: %v", ErrTemplate, t.LiteralSubject, err)
		}
		return der, nil
	}
	if err := t.Subject.Validate(); err != nil {
		var te *TemplateError
		errors.As(err, &te)
		return nil, &TemplateError{Field: "subject." + te.Field, Message: te.Message}
	}
	return asn1.Marshal(t.subject().ToRDNSequence())
}

// ValidateSubject names each subject attribute of the template that RFC
// 5280 forbids, as *TemplateError values whose Field is a path such as
// "subject.organizations[0]" or "literalSubject", joined; nil when there
// is none: the values Subject.Validate refuses, and the same in a literal
// subject, whose DC (and emailAddress) values must also be ASCII, being
// IA5Strings. The common name is not checked here. A literal subject that
// does not parse is ParseLiteralSubject's to report, not this method's.
// BuildCSR refuses what it names.
func (t RequestTemplate) ValidateSubject() error {
	if t.LiteralSubject != "" {
		rdns, err := ParseLiteralSubject(t.LiteralSubject)
		if err != nil {
			return nil
		}
		if why := rdnsProblem(rdns); why != "" {
			return errors.Join(&TemplateError{Field: "literalSubject", Message: why})
		}
		return nil
	}
	var errs []error
	for _, e := range templateErrors(t.Subject.Validate()) {
		errs = append(errs, &TemplateError{Field: "subject." + e.Field, Message: e.Message})
	}
	return errors.Join(errs...)
}

// ErrTemplate is wrapped by every error about a malformed template.
var ErrTemplate = errors.New("keys: invalid request template")

func (t RequestTemplate) subject() pkix.Name {
	n := pkix.Name{CommonName: t.CommonName}
	if s := t.Subject; s != nil {
		n.Organization = s.Organizations
		n.Country = s.Countries
		n.OrganizationalUnit = s.OrganizationalUnits
		n.Locality = s.Localities
		n.Province = s.Provinces
		n.StreetAddress = s.StreetAddresses
		n.PostalCode = s.PostalCodes
		n.SerialNumber = s.SerialNumber
	}
	return n
}

func (t RequestTemplate) usages() []Usage {
	if len(t.Usages) == 0 {
		return DefaultUsages()
	}
	return t.Usages
}

// extensions returns the key usage, extended key usage (unless
// EncodeUsagesInRequest is false), basic constraints and name constraints
// extensions the template asks for.
func (t RequestTemplate) extensions() ([]pkix.Extension, error) {
	var ku x509.KeyUsage
	var eku []asn1.ObjectIdentifier
	for i, u := range t.usages() {
		if k, ok := keyUsages[u]; ok {
			ku |= k
			continue
		}
		if oid, ok := extKeyUsages[u]; ok {
			eku = append(eku, oid)
			continue
		}
		return nil, fmt.Errorf("%w: usages[%d]: %q is not a known usage", ErrTemplate, i, u)
	}
	if t.IsCA {
		ku |= x509.KeyUsageCertSign
	}
	if !t.encodesUsages() {
		ku, eku = 0, nil
	}
	var exts []pkix.Extension
	if ku != 0 {
		v, err := marshalKeyUsage(ku)
		if err != nil {
			return nil, err
		}
		exts = append(exts, pkix.Extension{Id: oidKeyUsage, Critical: true, Value: v})
	}
	if len(eku) > 0 {
		v, err := asn1.Marshal(eku)
		if err != nil {
			return nil, err
		}
		exts = append(exts, pkix.Extension{Id: oidExtKeyUsage, Value: v})
	}
	if t.IsCA {
		v, err := asn1.Marshal(struct {
			IsCA bool `asn1:"optional"`
		}{true})
		if err != nil {
			return nil, err
		}
		exts = append(exts, pkix.Extension{Id: oidBasicConstraints, Critical: true, Value: v})
	}
	if nc, ok, err := marshalNameConstraints(t.NameConstraints); err != nil {
		return nil, err
	} else if ok {
		exts = append(exts, nc)
	}
	return exts, nil
}

func marshalKeyUsage(ku x509.KeyUsage) ([]byte, error) {
	var a [2]byte
	a[0] = reverseBits(byte(ku))
	a[1] = reverseBits(byte(ku >> 8))
	l := 1
	if a[1] != 0 {
		l = 2
	}
	bs := a[:l]
	return asn1.Marshal(asn1.BitString{Bytes: bs, BitLength: asn1BitLength(bs)})
}

func reverseBits(b byte) byte {
	var r byte
	for i := 0; i < 8; i++ {
		r = r<<1 | b&1
		b >>= 1
	}
	return r
}

func asn1BitLength(b []byte) int {
	l := len(b) * 8
	for i := range b {
		c := b[len(b)-i-1]
		for j := 0; j < 8; j++ {
			if (c>>j)&1 == 1 {
				return l
			}
			l--
		}
	}
	return 0
}

// parsedNames returns the template's IPs and URIs parsed, naming the field
// of the first bad one.
func (t RequestTemplate) parsedNames() ([]net.IP, []*url.URL, error) {
	var ips []net.IP
	for i, s := range t.IPAddresses {
		ip := net.ParseIP(s)
		if ip == nil {
			return nil, nil, fmt.Errorf("%w: ipAddresses[%d]: %q is not an IP address", ErrTemplate, i, s)
		}
		ips = append(ips, ip)
	}
	var uris []*url.URL
	for i, s := range t.URIs {
		u, err := url.Parse(s)
		if err != nil || u.Scheme == "" {
			return nil, nil, fmt.Errorf("%w: uris[%d]: %q is not an absolute URI", ErrTemplate, i, s)
		}
		uris = append(uris, u)
	}
	return ips, uris, nil
}

// BuildCSR builds a PEM certificate signing request for tmpl, signed by key
// with randomness from rand: its subject (LiteralSubject as written, or
// CommonName and Subject), its subject alternative names (other names
// included), the key usage and extended key usage extensions unless
// EncodeUsagesInRequest is false, basic constraints for a CA, and the
// name constraints. A template it cannot encode is refused with the
// errors of tmpl.Validate (*TemplateError, naming the field and value).
func BuildCSR(rand io.Reader, tmpl RequestTemplate, key crypto.Signer) ([]byte, error) {
	if key == nil {
		return nil, errors.New("keys: BuildCSR needs a private key")
	}
	if err := tmpl.Validate(); err != nil {
		return nil, err
	}
	rawSubject, err := tmpl.rawSubject()
	if err != nil {
		return nil, err
	}
	ips, uris, err := tmpl.parsedNames()
	if err != nil {
		return nil, err
	}
	exts, err := tmpl.extensions()
	if err != nil {
		return nil, err
	}
	req := &x509.CertificateRequest{
		RawSubject:      rawSubject,
		DNSNames:        tmpl.DNSNames,
		IPAddresses:     ips,
		URIs:            uris,
		EmailAddresses:  tmpl.EmailAddresses,
		ExtraExtensions: exts,
	}
	if len(tmpl.OtherNames) > 0 {
		// crypto/x509 writes no other names: the extension holds every
		// name, and the fields are left for it to replace.
		san, err := marshalSANs(tmpl, ips, bytes.Equal(rawSubject, emptySubject))
		if err != nil {
			return nil, err
		}
		req.DNSNames, req.IPAddresses, req.URIs, req.EmailAddresses = nil, nil, nil, nil
		req.ExtraExtensions = append([]pkix.Extension{san}, req.ExtraExtensions...)
	}
	der, err := x509.CreateCertificateRequest(rand, req, key)
	if err != nil {
		return nil, fmt.Errorf("keys: signing request: %w", err)
	}
	return encodePEM("CERTIFICATE REQUEST", der), nil
}

// ParseCSR reads the first PEM block of pemBytes as a certificate signing
// request ("CERTIFICATE REQUEST", or "NEW CERTIFICATE REQUEST" as some
// tools still write it, RFC 7468 §7) with x509.ParseCertificateRequest, and
// checks its signature: a request that parses is signed by the key it
// names. Errors name the structure at fault and never quote the request's
// bytes.
func ParseCSR(pemBytes []byte) (*x509.CertificateRequest, error) {
	csr, err := DecodeCertificateRequest(pemBytes)
	if err != nil {
		return nil, err
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("keys: request signature: %w", err)
	}
	return csr, nil
}

// DecodeCertificateRequest is ParseCSR without the signature check: it
// reads a request as ParseCSR does, with the same errors, and leaves the
// signature to whoever answers the request. Certificate decisions read
// requests with it: a request whose signature does not verify is the
// issuer's to refuse.
func DecodeCertificateRequest(pemBytes []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, errors.New("keys: request: no PEM block found")
	}
	if block.Type != "CERTIFICATE REQUEST" && block.Type != "NEW CERTIFICATE REQUEST" {
		return nil, fmt.Errorf("keys: request: PEM block type %q is not a certificate request", block.Type)
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
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

// Difference is one way a request or certificate differs from a template.
type Difference struct {
	// Field is the template's JSON field name, e.g. "dnsNames".
	Field string
	// Want is what the template asks, Have what was found.
	Want, Have string
}

// String renders "dnsNames: want [a b], have [a]".
func (d Difference) String() string {
	return fmt.Sprintf("%s: want %s, have %s", d.Field, d.Want, d.Have)
}

// CompareCSR returns every difference between a parsed request and tmpl:
// the subject (field by field, or, for a literal subject, its encoding
// byte for byte), names and other names (order-insensitive), the usages
// encoded in the request (none when EncodeUsagesInRequest is false),
// isCA when the request carries basic constraints (the reference operator
// writes none by default; a request's isCA beside its CSR says it), and
// name constraints. Nil means the request is what the template asks.
func CompareCSR(csr *x509.CertificateRequest, tmpl RequestTemplate) []Difference {
	if csr == nil {
		return []Difference{{Field: "request", Want: "a request", Have: "none"}}
	}
	var diffs []Difference
	if tmpl.LiteralSubject != "" {
		// A request made before DC and emailAddress were IA5Strings still
		// matches: its subject is the literal subject as encoded then.
		if want, err := tmpl.rawSubject(); err != nil || !bytes.Equal(want, csr.RawSubject) && !matchesLegacySubject(tmpl.LiteralSubject, csr.RawSubject) {
			diffs = append(diffs, Difference{Field: "literalSubject", Want: fmt.Sprintf("%q", tmpl.LiteralSubject), Have: fmt.Sprintf("%q", subjectString(csr))})
		}
	} else {
		diffs = cmpString(diffs, "commonName", tmpl.CommonName, csr.Subject.CommonName)
		want := tmpl.Subject
		if want == nil {
			want = &noSubject
		}
		diffs = cmpSubject(diffs, want, &csr.Subject)
	}
	diffs = cmpSet(diffs, "dnsNames", tmpl.DNSNames, csr.DNSNames)
	diffs = cmpSet(diffs, "ipAddresses", normIPs(tmpl.IPAddresses), ipStrings(csr.IPAddresses))
	diffs = cmpSet(diffs, "uris", tmpl.URIs, uriStrings(csr.URIs))
	diffs = cmpSet(diffs, "emailAddresses", tmpl.EmailAddresses, csr.EmailAddresses)
	diffs = cmpSet(diffs, "otherNames", otherNameStrings(tmpl.OtherNames), otherNamesIn(csr.Extensions))

	wantKU, wantEKU, isCA := expectedUsages(tmpl)
	haveKU, haveEKU, haveCA := requestUsages(csr)
	if !tmpl.encodesUsages() {
		if haveKU != 0 || len(haveEKU) > 0 {
			diffs = append(diffs, Difference{Field: "usages", Want: "none in the request (encodeUsagesInRequest is false)", Have: describeUsages(haveKU, haveEKU)})
		}
	} else if wantKU != haveKU || !sameSet(wantEKU, haveEKU) {
		diffs = append(diffs, Difference{Field: "usages", Want: describeUsages(wantKU, wantEKU), Have: describeUsages(haveKU, haveEKU)})
	}
	// A request without basic constraints does not say whether it is for
	// a CA: the reference operator leaves them out by default, and the
	// request's own isCA says it beside the CSR.
	if isCA != haveCA && (haveCA || hasExtension(csr, oidBasicConstraints)) {
		diffs = append(diffs, Difference{Field: "isCA", Want: fmt.Sprint(isCA), Have: fmt.Sprint(haveCA)})
	}
	if nc, present := requestNameConstraints(csr.Extensions); !sameNameConstraints(tmpl.NameConstraints, nc) || (present && nc == nil) {
		have := describeNameConstraints(nc)
		if present && nc == nil {
			have = "an extension that cannot be read"
		}
		diffs = append(diffs, Difference{Field: "nameConstraints", Want: describeNameConstraints(tmpl.NameConstraints), Have: have})
	}
	return diffs
}

// CompareCertificateNames compares an issued certificate's names with tmpl,
// order-insensitively: the common name (CommonName, or the CN of
// LiteralSubject), DNS names, IP addresses, URIs and email addresses.
// Other names are not compared: issuers may leave them out. It is the fallback when no request exists: a name may
// move between the common name and the DNS names (issuers copy the common
// name into the DNS names, or drop it), so the common name and DNS names are
// compared as one set. A common name the template does not ask that is
// one of the certificate's own IP addresses is not counted as a DNS name:
// issuers name a subject by its IP address when it has no DNS name
// (certificate/localca does for a self-signed certificate).
func CompareCertificateNames(cert *x509.Certificate, tmpl RequestTemplate) []Difference {
	if cert == nil {
		return []Difference{{Field: "certificate", Want: "a certificate", Have: "none"}}
	}
	var diffs []Difference
	wantNames := withCN(tmpl.DNSNames, tmpl.commonName())
	haveCN := cert.Subject.CommonName
	if haveCN != tmpl.commonName() && slices.Contains(ipStrings(cert.IPAddresses), haveCN) {
		haveCN = "" // an issuer named the subject by one of its IP addresses
	}
	haveNames := withCN(cert.DNSNames, haveCN)
	diffs = cmpSet(diffs, "commonName+dnsNames", wantNames, haveNames)
	diffs = cmpSet(diffs, "ipAddresses", normIPs(tmpl.IPAddresses), ipStrings(cert.IPAddresses))
	diffs = cmpSet(diffs, "uris", tmpl.URIs, uriStrings(cert.URIs))
	diffs = cmpSet(diffs, "emailAddresses", tmpl.EmailAddresses, cert.EmailAddresses)
	return diffs
}

func withCN(names []string, cn string) []string {
	if cn == "" || slices.Contains(names, cn) {
		return names
	}
	return append(slices.Clip(names), cn)
}

func cmpString(diffs []Difference, field, want, have string) []Difference {
	if want != have {
		diffs = append(diffs, Difference{Field: field, Want: fmt.Sprintf("%q", want), Have: fmt.Sprintf("%q", have)})
	}
	return diffs
}

var noSubject Subject

// subjectString is a request's subject in RFC 4514 form, multi-valued
// RDNs kept.
func subjectString(csr *x509.CertificateRequest) string {
	var seq pkix.RDNSequence
	if rest, err := asn1.Unmarshal(csr.RawSubject, &seq); err != nil || len(rest) > 0 {
		return csr.Subject.String()
	}
	return seq.String()
}

// matchesLegacySubject reports a request subject that is the literal
// subject as certlife encoded it before DC and emailAddress were
// IA5Strings.
func matchesLegacySubject(literal string, raw []byte) bool {
	legacy, _, err := literalSubjectEncoding(literal, true)
	return err == nil && bytes.Equal(legacy, raw)
}

// emptySubject is the DER of a subject with no attribute.
var emptySubject = []byte{0x30, 0}

func cmpSubject(diffs []Difference, want *Subject, have *pkix.Name) []Difference {
	diffs = cmpSet(diffs, "subject.organizations", want.Organizations, have.Organization)
	diffs = cmpSet(diffs, "subject.countries", want.Countries, have.Country)
	diffs = cmpSet(diffs, "subject.organizationalUnits", want.OrganizationalUnits, have.OrganizationalUnit)
	diffs = cmpSet(diffs, "subject.localities", want.Localities, have.Locality)
	diffs = cmpSet(diffs, "subject.provinces", want.Provinces, have.Province)
	diffs = cmpSet(diffs, "subject.streetAddresses", want.StreetAddresses, have.StreetAddress)
	diffs = cmpSet(diffs, "subject.postalCodes", want.PostalCodes, have.PostalCode)
	return cmpString(diffs, "subject.serialNumber", want.SerialNumber, have.SerialNumber)
}

// cmpSet compares two lists as sets and records a difference under field.
func cmpSet(diffs []Difference, field string, want, have []string) []Difference {
	if !sameSet(want, have) {
		diffs = append(diffs, Difference{Field: field, Want: fmt.Sprint(sorted(want)), Have: fmt.Sprint(sorted(have))})
	}
	return diffs
}

// sameSet compares two string lists as sets: order and repeats do not
// count.
func sameSet(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			return false
		}
	}
	return true
}

func sorted(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	c = slices.Compact(c)
	if c == nil {
		c = []string{}
	}
	return c
}

func normIPs(s []string) []string {
	out := make([]string, 0, len(s))
	for _, v := range s {
		if ip := net.ParseIP(v); ip != nil {
			out = append(out, ip.String())
		} else {
			out = append(out, v)
		}
	}
	return out
}

func ipStrings(ips []net.IP) []string {
	out := make([]string, 0, len(ips))
	for _, ip := range ips {
		out = append(out, ip.String())
	}
	return out
}

func uriStrings(us []*url.URL) []string {
	out := make([]string, 0, len(us))
	for _, u := range us {
		out = append(out, u.String())
	}
	return out
}

// expectedUsages returns the template's key usages, its extended key
// usages as dotted OIDs ("unknown:<name>" for a usage BuildCSR does not
// know, so that it never matches a request) and isCA.
func expectedUsages(t RequestTemplate) (ku x509.KeyUsage, eku []string, isCA bool) {
	for _, u := range t.usages() {
		if k, ok := keyUsages[u]; ok {
			ku |= k
		} else if oid, ok := extKeyUsages[u]; ok {
			eku = append(eku, oid.String())
		} else {
			eku = append(eku, "unknown:"+string(u))
		}
	}
	if t.IsCA {
		ku |= x509.KeyUsageCertSign
	}
	return ku, eku, t.IsCA
}

// requestUsages reads a request's key usage, extended key usage (as dotted
// OIDs) and basic constraints extensions. An extension it cannot read
// counts as absent.
func requestUsages(csr *x509.CertificateRequest) (ku x509.KeyUsage, eku []string, isCA bool) {
	for _, ext := range csr.Extensions {
		switch {
		case ext.Id.Equal(oidKeyUsage):
			var bs asn1.BitString
			if _, err := asn1.Unmarshal(ext.Value, &bs); err == nil {
				for i := 0; i < 9; i++ {
					if bs.At(i) != 0 {
						ku |= 1 << uint(i)
					}
				}
			}
		case ext.Id.Equal(oidExtKeyUsage):
			var oids []asn1.ObjectIdentifier
			if _, err := asn1.Unmarshal(ext.Value, &oids); err == nil {
				for _, o := range oids {
					eku = append(eku, o.String())
				}
			}
		case ext.Id.Equal(oidBasicConstraints):
			var bc struct {
				IsCA bool `asn1:"optional"`
			}
			if _, err := asn1.Unmarshal(ext.Value, &bc); err == nil {
				isCA = bc.IsCA
			}
		}
	}
	return ku, eku, isCA
}

func describeUsages(ku x509.KeyUsage, eku []string) string {
	var names []string
	for u, k := range keyUsages {
		if u != UsageSigning && ku&k != 0 {
			names = append(names, string(u))
		}
	}
	for _, o := range eku {
		name := o
		for u, oid := range extKeyUsages {
			if oid.String() == o {
				name = string(u)
			}
		}
		names = append(names, name)
	}
	slices.Sort(names)
	return "[" + strings.Join(names, ", ") + "]"
}

// hasExtension reports whether the request carries an extension of that
// OID.
func hasExtension(csr *x509.CertificateRequest, oid asn1.ObjectIdentifier) bool {
	for _, ext := range csr.Extensions {
		if ext.Id.Equal(oid) {
			return true
		}
	}
	return false
}

// KnownUsage reports whether u is a usage BuildCSR understands.
func KnownUsage(u Usage) bool {
	_, ku := keyUsages[u]
	_, eku := extKeyUsages[u]
	return ku || eku
}
