package keys

import (
	"crypto"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
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

// DefaultUsages are the usages of a template that names none.
var DefaultUsages = []Usage{UsageDigitalSignature, UsageKeyEncipherment}

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
	// Usages; empty means DefaultUsages.
	Usages []Usage `json:"usages,omitempty"`
	// IsCA asks for a CA certificate.
	IsCA bool `json:"isCA,omitempty"`
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
		return DefaultUsages
	}
	return t.Usages
}

// extensions returns the key usage, extended key usage and basic
// constraints extensions the template asks for.
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
// with randomness from rand.
func BuildCSR(rand io.Reader, tmpl RequestTemplate, key crypto.Signer) ([]byte, error) {
	if key == nil {
		return nil, errors.New("keys: BuildCSR needs a private key")
	}
	if tmpl.CommonName == "" && len(tmpl.DNSNames)+len(tmpl.IPAddresses)+len(tmpl.URIs)+len(tmpl.EmailAddresses) == 0 {
		return nil, fmt.Errorf("%w: no common name and no subject alternative names", ErrTemplate)
	}
	ips, uris, err := tmpl.parsedNames()
	if err != nil {
		return nil, err
	}
	exts, err := tmpl.extensions()
	if err != nil {
		return nil, err
	}
	der, err := x509.CreateCertificateRequest(rand, &x509.CertificateRequest{
		Subject:         tmpl.subject(),
		DNSNames:        tmpl.DNSNames,
		IPAddresses:     ips,
		URIs:            uris,
		EmailAddresses:  tmpl.EmailAddresses,
		ExtraExtensions: exts,
	}, key)
	if err != nil {
		return nil, fmt.Errorf("keys: signing request: %w", err)
	}
	return encodePEM("CERTIFICATE REQUEST", der), nil
}

// ParseCSR parses the first PEM block of pemBytes as a certificate signing
// request and checks its signature.
func ParseCSR(pemBytes []byte) (*x509.CertificateRequest, error) {
	csr, err := DecodeCSR(pemBytes)
	if err != nil {
		return nil, err
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("keys: request signature: %w", err)
	}
	return csr, nil
}

// DecodeCSR parses the first PEM block of pemBytes as a certificate signing
// request without checking its signature. It is for comparisons on a hot
// path (is this request still what the spec asks, is its key the secret's),
// where the signature was checked when the request was made and will be
// checked again by the issuer; checking it costs ten times the parse.
//
// The request is read with a cryptobyte decoder, several times faster than
// x509.ParseCertificateRequest (which still parses requests by reflection),
// that fills every field x509 fills except the deprecated Attributes (left
// nil; the requested extensions are in Extensions). It is held to x509: for
// any input the two fail together or give equal fields (the package's
// FuzzDecodeCSR checks this), and anything it does not read exactly as x509
// does — RSASSA-PSS signatures, DSA keys, subject values that are not
// strings, non-canonical element forms, every malformed request — is
// passed to x509.ParseCertificateRequest, whose result is returned. Errors
// name the structure at fault and never quote the request's bytes.
func DecodeCSR(pemBytes []byte) (*x509.CertificateRequest, error) {
	block, _ := DecodePEM(pemBytes)
	if block == nil {
		return nil, errors.New("keys: request: no PEM block found")
	}
	if block.Type != "CERTIFICATE REQUEST" && block.Type != "NEW CERTIFICATE REQUEST" {
		return nil, fmt.Errorf("keys: request: PEM block type %q is not a certificate request", block.Type)
	}
	return decodeCSRDER(block.Bytes)
}

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
// subject fields, names (order-insensitive), usages and isCA. Nil means the
// request is what the template asks.
func CompareCSR(csr *x509.CertificateRequest, tmpl RequestTemplate) []Difference {
	if csr == nil {
		return []Difference{{Field: "request", Want: "a request", Have: "none"}}
	}
	var diffs []Difference
	diffs = cmpString(diffs, "commonName", tmpl.CommonName, csr.Subject.CommonName)
	want := tmpl.Subject
	if want == nil {
		want = &noSubject
	}
	diffs = cmpSubject(diffs, want, &csr.Subject)
	diffs = cmpSet(diffs, "dnsNames", tmpl.DNSNames, csr.DNSNames)
	if len(tmpl.IPAddresses)+len(csr.IPAddresses) > 0 {
		diffs = cmpSet(diffs, "ipAddresses", normIPs(tmpl.IPAddresses), ipStrings(csr.IPAddresses))
	}
	if len(tmpl.URIs)+len(csr.URIs) > 0 {
		diffs = cmpSet(diffs, "uris", tmpl.URIs, uriStrings(csr.URIs))
	}
	diffs = cmpSet(diffs, "emailAddresses", tmpl.EmailAddresses, csr.EmailAddresses)

	var wantBuf, haveBuf [8]string
	wantKU, wantEKU, isCA := expectedUsages(tmpl, wantBuf[:0])
	haveKU, haveEKU, haveCA := requestUsages(csr, haveBuf[:0])
	if wantKU != haveKU || !sameSet(wantEKU, haveEKU) {
		diffs = append(diffs, Difference{Field: "usages", Want: describeUsages(wantKU, wantEKU), Have: describeUsages(haveKU, haveEKU)})
	}
	if isCA != haveCA {
		diffs = append(diffs, Difference{Field: "isCA", Want: fmt.Sprint(isCA), Have: fmt.Sprint(haveCA)})
	}
	return diffs
}

// CompareCertificateNames compares an issued certificate's names with tmpl,
// order-insensitively. It is the fallback when no request exists: a name may
// move between the common name and the DNS names (issuers copy the common
// name into the DNS names, or drop it), so the common name and DNS names are
// compared as one set.
func CompareCertificateNames(cert *x509.Certificate, tmpl RequestTemplate) []Difference {
	if cert == nil {
		return []Difference{{Field: "certificate", Want: "a certificate", Have: "none"}}
	}
	var diffs []Difference
	wantNames := withCN(tmpl.DNSNames, tmpl.CommonName)
	haveNames := withCN(cert.DNSNames, cert.Subject.CommonName)
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

// cmpSet is small enough to inline: most of a template's lists are empty.
func cmpSet(diffs []Difference, field string, want, have []string) []Difference {
	if len(want) == 0 && len(have) == 0 {
		return diffs
	}
	return cmpSetSlow(diffs, field, want, have)
}

func cmpSetSlow(diffs []Difference, field string, want, have []string) []Difference {
	if !sameSet(want, have) {
		diffs = append(diffs, Difference{Field: field, Want: fmt.Sprint(sorted(want)), Have: fmt.Sprint(sorted(have))})
	}
	return diffs
}

// sameSet compares two string lists as sets, without allocating for the
// small lists certificates carry.
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

// keyUsageOf is keyUsages[u] as a switch, for the hot comparison path.
func keyUsageOf(u Usage) (x509.KeyUsage, bool) {
	switch u {
	case UsageSigning, UsageDigitalSignature:
		return x509.KeyUsageDigitalSignature, true
	case UsageContentCommitment:
		return x509.KeyUsageContentCommitment, true
	case UsageKeyEncipherment:
		return x509.KeyUsageKeyEncipherment, true
	case UsageKeyAgreement:
		return x509.KeyUsageKeyAgreement, true
	case UsageDataEncipherment:
		return x509.KeyUsageDataEncipherment, true
	case UsageCertSign:
		return x509.KeyUsageCertSign, true
	case UsageCRLSign:
		return x509.KeyUsageCRLSign, true
	case UsageEncipherOnly:
		return x509.KeyUsageEncipherOnly, true
	case UsageDecipherOnly:
		return x509.KeyUsageDecipherOnly, true
	}
	return 0, false
}

// ekuDotted holds each known extended key usage's dotted OID, and
// ekuByDER the same keyed by the OID's DER content bytes, so that reading a
// request's usages allocates nothing for the usages BuildCSR writes.
var ekuDotted, ekuByDER = func() (map[Usage]string, map[string]string) {
	dotted, byDER := map[Usage]string{}, map[string]string{}
	for u, oid := range extKeyUsages {
		dotted[u] = oid.String()
		if der, err := asn1.Marshal(oid); err == nil {
			in := cryptobyte.String(der)
			var content cryptobyte.String
			if in.ReadASN1(&content, cbasn1.OBJECT_IDENTIFIER) {
				byDER[string(content)] = oid.String()
			}
		}
	}
	return dotted, byDER
}()

// expectedUsages appends the template's extended key usages (dotted OIDs)
// to eku and returns its key usages and isCA.
func expectedUsages(t RequestTemplate, eku []string) (x509.KeyUsage, []string, bool) {
	var ku x509.KeyUsage
	for _, u := range t.usages() {
		if k, ok := keyUsageOf(u); ok {
			ku |= k
		} else if oid, ok := ekuDotted[u]; ok {
			eku = append(eku, oid)
		} else {
			eku = append(eku, "unknown:"+string(u))
		}
	}
	if t.IsCA {
		ku |= x509.KeyUsageCertSign
	}
	return ku, eku, t.IsCA
}

// requestUsages reads a request's key usage, extended key usage and basic
// constraints extensions, appending the extended usages to eku. It reads
// DER directly (encoding/asn1's reflection was most of a comparison's
// cost); an extension it cannot read contributes nothing, as before.
func requestUsages(csr *x509.CertificateRequest, eku []string) (ku x509.KeyUsage, _ []string, isCA bool) {
	for i := range csr.Extensions {
		ext := &csr.Extensions[i]
		// The three are id-ce arcs (2.5.29.x): one look at the OID instead
		// of three comparisons.
		if id := ext.Id; len(id) != 4 || id[0] != 2 || id[1] != 5 || id[2] != 29 {
			continue
		}
		switch ext.Id[3] {
		case oidKeyUsage[3]:
			in := cryptobyte.String(ext.Value)
			var bs asn1.BitString
			if in.ReadASN1BitString(&bs) {
				for i := 0; i < 9; i++ {
					if bs.At(i) != 0 {
						ku |= 1 << uint(i)
					}
				}
			}
		case oidExtKeyUsage[3]:
			in := cryptobyte.String(ext.Value)
			var seq cryptobyte.String
			if !in.ReadASN1(&seq, cbasn1.SEQUENCE) {
				continue
			}
			start := len(eku)
			for !seq.Empty() {
				var content cryptobyte.String
				if !seq.ReadASN1(&content, cbasn1.OBJECT_IDENTIFIER) {
					eku = eku[:start] // unreadable: as if absent
					break
				}
				dotted, ok := ekuByDER[string(content)]
				if !ok {
					// An OID BuildCSR never writes: read the extension the
					// general way.
					eku = appendEKUSlow(eku[:start], ext.Value)
					break
				}
				eku = append(eku, dotted)
			}
		case oidBasicConstraints[3]:
			in := cryptobyte.String(ext.Value)
			var seq cryptobyte.String
			if in.ReadASN1(&seq, cbasn1.SEQUENCE) {
				var ca bool
				if seq.PeekASN1Tag(cbasn1.BOOLEAN) {
					if seq.ReadASN1Boolean(&ca) {
						isCA = ca
					}
				} else {
					isCA = false
				}
			}
		}
	}
	return ku, eku, isCA
}

func appendEKUSlow(eku []string, der []byte) []string {
	var oids []asn1.ObjectIdentifier
	if _, err := asn1.Unmarshal(der, &oids); err == nil {
		for _, o := range oids {
			eku = append(eku, o.String())
		}
	}
	return eku
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

// KnownUsage reports whether u is a usage BuildCSR understands.
func KnownUsage(u Usage) bool {
	_, ku := keyUsages[u]
	_, eku := extKeyUsages[u]
	return ku || eku
}

// CSRPublicKeyInfo returns the DER SubjectPublicKeyInfo of a PEM
// certificate signing request by walking its outer ASN.1 structure only:
// about a tenth of the cost of x509.ParseCertificateRequest. ok is false
// for anything it cannot read.
func CSRPublicKeyInfo(pemBytes []byte) (spki []byte, ok bool) {
	block, _ := DecodePEM(pemBytes)
	if block == nil {
		return nil, false
	}
	in := cryptobyte.String(block.Bytes)
	var req, info cryptobyte.String
	if !in.ReadASN1(&req, cbasn1.SEQUENCE) || !req.ReadASN1(&info, cbasn1.SEQUENCE) {
		return nil, false
	}
	var version int64
	var subject cryptobyte.String
	var key cryptobyte.String
	if !info.ReadASN1Integer(&version) || !info.ReadASN1Element(&subject, cbasn1.SEQUENCE) ||
		!info.ReadASN1Element(&key, cbasn1.SEQUENCE) {
		return nil, false
	}
	return key, true
}
