package keys

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// extension returns the request's extension of that OID, nil when it has
// none.
func extension(csr *x509.CertificateRequest, oid asn1.ObjectIdentifier) *pkix.Extension {
	for i := range csr.Extensions {
		if csr.Extensions[i].Id.Equal(oid) {
			return &csr.Extensions[i]
		}
	}
	return nil
}

func buildAndParse(t *testing.T, tmpl RequestTemplate) *x509.CertificateRequest {
	t.Helper()
	p, err := BuildCSR(rand.Reader, tmpl, mustKey(t, KeySpec{Algorithm: AlgorithmECDSA}))
	require.NoError(t, err)
	csr, err := ParseCSR(p)
	require.NoError(t, err)
	return csr
}

var (
	upn        = OtherName{OID: "1.3.6.1.4.1.311.20.2.3", UTF8Value: "user@corp.example"}
	caLimits   = &NameConstraints{Critical: true, Permitted: &NameConstraintItem{DNSDomains: []string{"example.com", ".corp.example"}, IPRanges: []string{"10.0.0.0/8", "fd00::/8"}, EmailAddresses: []string{"example.com"}, URIDomains: []string{".spiffe.example"}}, Excluded: &NameConstraintItem{DNSDomains: []string{"bad.example.com"}}}
	oidKU      = asn1.ObjectIdentifier{2, 5, 29, 15}
	oidEKU     = asn1.ObjectIdentifier{2, 5, 29, 37}
	oidBC      = asn1.ObjectIdentifier{2, 5, 29, 19}
	oidSAN     = asn1.ObjectIdentifier{2, 5, 29, 17}
	oidNC      = asn1.ObjectIdentifier{2, 5, 29, 30}
	falseValue = false
)

// The subject alternative names of a request with other names are those
// the reference operator (cert-manager v1.21.2, pkg/util/pki.GenerateCSR)
// writes for the same names, byte for byte: DNS names, email addresses, IP
// addresses and URIs in crypto/x509's order, then each other name as
// [0] { type-id, [0] EXPLICIT UTF8String } (RFC 5280 §4.2.1.6).
func TestOtherNamesAreEncodedAsTheReferenceDoes(t *testing.T) {
	const reference = "3081818209612e6578616d706c658209622e6578616d706c65810f6f7073406578616d706c652e636f6d87040a000001871000000000000000000000000000000001860c7370696666653a2f2f632f78a021060a2b060104018237140203a0130c117573657240636f72702e6578616d706c65a00f06032a0304a0080c06c386726c6967"
	csr := buildAndParse(t, RequestTemplate{
		DNSNames: []string{"a.example", "b.example"}, EmailAddresses: []string{"ops@example.com"}, IPAddresses: []string{"10.0.0.1", "::1"}, URIs: []string{"spiffe://c/x"},
		OtherNames: []OtherName{upn, {OID: "1.2.3.4", UTF8Value: "Ærlig"}},
	})
	san := extension(csr, oidSAN)
	require.NotNil(t, san)
	assert.Equal(t, reference, hex.EncodeToString(san.Value))
	assert.True(t, san.Critical, "the request has no subject: its names extension is critical (RFC 5280 §4.2.1.6)")
	// crypto/x509 still reads the names it knows.
	assert.Equal(t, []string{"a.example", "b.example"}, csr.DNSNames)
	assert.Equal(t, []string{"ops@example.com"}, csr.EmailAddresses)
	assert.Equal(t, "[10.0.0.1 ::1]", fmtIPs(csr.IPAddresses))
	assert.Equal(t, []string{"1.3.6.1.4.1.311.20.2.3=user@corp.example", "1.2.3.4=Ærlig"}, otherNamesIn(csr.Extensions))
}

func fmtIPs(ips []net.IP) string {
	s := "["
	for i, ip := range ips {
		if i > 0 {
			s += " "
		}
		s += ip.String()
	}
	return s + "]"
}

// BuildCSR carries the fields cert-manager users write: a literal subject
// encoded as written (RFC 4514 §2.1), other names, the usages left out on
// request, and a CA's name constraints in the form a CA certificate holds
// them (RFC 5280 §4.2.1.10).
func TestBuildCSRCarriesCertManagerFields(t *testing.T) {
	tests := map[string]struct {
		tmpl  RequestTemplate
		check func(t *testing.T, csr *x509.CertificateRequest)
	}{
		"a literal subject is encoded as written, last RDN first in the string": {
			tmpl: RequestTemplate{LiteralSubject: "CN=app+UID=a1,OU=web,DC=corp,DC=example", DNSNames: []string{"app.example"}},
			check: func(t *testing.T, csr *x509.CertificateRequest) {
				der, cn, err := literalSubjectDER("CN=app+UID=a1,OU=web,DC=corp,DC=example")
				require.NoError(t, err)
				assert.Equal(t, der, csr.RawSubject)
				assert.Equal(t, "app", cn)
				assert.Equal(t, "app", csr.Subject.CommonName)
				assert.Equal(t, "CN=app+0.9.2342.19200300.100.1.1=#13026131,OU=web,0.9.2342.19200300.100.1.25=#1304636f7270,0.9.2342.19200300.100.1.25=#13076578616d706c65", subjectString(csr))
			},
		},
		"a literal subject with only a CN names the request": {
			tmpl: RequestTemplate{LiteralSubject: "CN=app"},
			check: func(t *testing.T, csr *x509.CertificateRequest) {
				assert.Equal(t, "app", csr.Subject.CommonName)
				assert.Nil(t, extension(csr, oidSAN))
			},
		},
		"other names alone, no subject: the names extension is critical (RFC 5280 §4.2.1.6)": {
			tmpl: RequestTemplate{OtherNames: []OtherName{upn}},
			check: func(t *testing.T, csr *x509.CertificateRequest) {
				assert.Equal(t, emptySubject, csr.RawSubject)
				san := extension(csr, oidSAN)
				require.NotNil(t, san)
				assert.True(t, san.Critical)
				assert.Equal(t, []string{"1.3.6.1.4.1.311.20.2.3=user@corp.example"}, otherNamesIn(csr.Extensions))
			},
		},
		"an address holding the byte other names start with (0xa0) is no other name": {
			tmpl: RequestTemplate{DNSNames: []string{"a.example"}, IPAddresses: []string{"160.160.160.160"}},
			check: func(t *testing.T, csr *x509.CertificateRequest) {
				assert.Nil(t, otherNamesIn(csr.Extensions))
				assert.Equal(t, []Difference{{Field: "otherNames", Want: "[1.3.6.1.4.1.311.20.2.3=user@corp.example]", Have: "[]"}},
					CompareCSR(csr, RequestTemplate{DNSNames: []string{"a.example"}, IPAddresses: []string{"160.160.160.160"}, OtherNames: []OtherName{upn}}))
			},
		},
		"encodeUsagesInRequest false leaves the usage extensions out, and a CA's basic constraints in": {
			tmpl: RequestTemplate{DNSNames: []string{"a.example"}, Usages: []Usage{UsageServerAuth, UsageDigitalSignature}, EncodeUsagesInRequest: &falseValue, IsCA: true},
			check: func(t *testing.T, csr *x509.CertificateRequest) {
				assert.Nil(t, extension(csr, oidKU))
				assert.Nil(t, extension(csr, oidEKU))
				assert.NotNil(t, extension(csr, oidBC))
			},
		},
		"encodeUsagesInRequest unset encodes them, as cert-manager's default does": {
			tmpl: RequestTemplate{DNSNames: []string{"a.example"}, Usages: []Usage{UsageServerAuth, UsageDigitalSignature}},
			check: func(t *testing.T, csr *x509.CertificateRequest) {
				assert.NotNil(t, extension(csr, oidKU))
				assert.NotNil(t, extension(csr, oidEKU))
			},
		},
		"name constraints read back by crypto/x509 from the CA certificate made with them": {
			tmpl: RequestTemplate{CommonName: "corp CA", IsCA: true, NameConstraints: caLimits},
			check: func(t *testing.T, csr *x509.CertificateRequest) {
				nc := extension(csr, oidNC)
				require.NotNil(t, nc)
				assert.True(t, nc.Critical)
				key := mustKey(t, KeySpec{Algorithm: AlgorithmECDSA})
				tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "corp CA"}, IsCA: true, BasicConstraintsValid: true,
					NotBefore: time.Unix(0, 0), NotAfter: time.Unix(3600, 0)}
				require.NoError(t, ParseNameConstraints(*nc, tmpl))
				der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
				require.NoError(t, err)
				ca, err := x509.ParseCertificate(der)
				require.NoError(t, err)
				assert.True(t, ca.PermittedDNSDomainsCritical)
				assert.Equal(t, []string{"example.com", ".corp.example"}, ca.PermittedDNSDomains)
				assert.Equal(t, "[10.0.0.0/8 fd00::/8]", fmtNets(ca.PermittedIPRanges))
				assert.Equal(t, []string{"example.com"}, ca.PermittedEmailAddresses)
				assert.Equal(t, []string{".spiffe.example"}, ca.PermittedURIDomains)
				assert.Equal(t, []string{"bad.example.com"}, ca.ExcludedDNSDomains)
				assert.Empty(t, ca.ExcludedIPRanges)
				// crypto/x509 writes the same extension back.
				for _, e := range ca.Extensions {
					if e.Id.Equal(oidNC) {
						assert.Equal(t, hex.EncodeToString(nc.Value), hex.EncodeToString(e.Value))
					}
				}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			csr := buildAndParse(t, tc.tmpl)
			tc.check(t, csr)
			assert.Empty(t, CompareCSR(csr, tc.tmpl), "a request matches the template it was built from")
		})
	}
}

func fmtNets(ns []*net.IPNet) string {
	s := "["
	for i, n := range ns {
		if i > 0 {
			s += " "
		}
		s += n.String()
	}
	return s + "]"
}

// BuildCSR refuses a template it cannot honour, naming the field.
func TestBuildCSRRefusesCertManagerFields(t *testing.T) {
	tests := map[string]struct {
		tmpl RequestTemplate
		err  string
	}{
		"a literal subject beside a common name": {tmpl: RequestTemplate{LiteralSubject: "CN=a", CommonName: "a"},
			err: "literalSubject: may not be set together with commonName or subject"},
		"a literal subject beside subject fields": {tmpl: RequestTemplate{LiteralSubject: "CN=a", Subject: &Subject{Organizations: []string{"o"}}},
			err: "literalSubject: may not be set together with commonName or subject"},
		"a literal subject that does not parse": {tmpl: RequestTemplate{LiteralSubject: "FOO=a", DNSNames: []string{"a.example"}},
			err: `literalSubject: "FOO=a": at byte 0: attribute type "FOO" is not one of`},
		"a literal subject without a CN and no names": {tmpl: RequestTemplate{LiteralSubject: "O=acme"},
			err: "no common name and no subject alternative names"},
		"an other name whose OID does not parse": {tmpl: RequestTemplate{OtherNames: []OtherName{{OID: "upn", UTF8Value: "x"}}},
			err: `otherNames[0].oid: "upn" is not a dotted OID: a dotted OID has at least two arcs`},
		"an email address that is not ASCII, beside other names": {tmpl: RequestTemplate{EmailAddresses: []string{"bø@example.com"}, OtherNames: []OtherName{upn}},
			err: `emailAddresses[0]: "bø@example.com" has non-ASCII characters`},
		"an email address that is not ASCII, alone": {tmpl: RequestTemplate{EmailAddresses: []string{"bø@example.com"}},
			err: `emailAddresses[0]: "bø@example.com" has non-ASCII characters`},
		"name constraints naming nothing": {tmpl: RequestTemplate{CommonName: "ca", IsCA: true, NameConstraints: &NameConstraints{Permitted: &NameConstraintItem{}}}},
		"a name constraint that is no CIDR": {tmpl: RequestTemplate{CommonName: "ca", IsCA: true, NameConstraints: &NameConstraints{Permitted: &NameConstraintItem{IPRanges: []string{"10.0.0.1"}}}},
			err: `permitted.ipRanges[0]: "10.0.0.1" is not an IP range in CIDR notation`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := BuildCSR(rand.Reader, tc.tmpl, mustKey(t, KeySpec{Algorithm: AlgorithmECDSA}))
			if tc.err == "" {
				require.NoError(t, err, "empty constraints are left out, as cert-manager leaves them out")
				return
			}
			require.ErrorIs(t, err, ErrTemplate)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}

// CompareCSR sees every change of the fields cert-manager users write, so
// that a spec change re-issues, and nothing else: the same names in
// another order, a range written from another address of the same
// network, or a common name that encodes as the literal subject would.
func TestCompareCSRCertManagerFields(t *testing.T) {
	base := RequestTemplate{LiteralSubject: "CN=app,O=acme", DNSNames: []string{"app.example"}, OtherNames: []OtherName{upn, {OID: "1.2.3.4", UTF8Value: "x"}},
		Usages: []Usage{UsageDigitalSignature, UsageServerAuth}, IsCA: true, NameConstraints: caLimits}
	csr := buildAndParse(t, base)
	tests := map[string]struct {
		mutate func(*RequestTemplate)
		fields []string // the differences' fields; none when nil
	}{
		"the template it was built from": {mutate: func(*RequestTemplate) {}},
		"the other names in another order": {mutate: func(t *RequestTemplate) {
			t.OtherNames = []OtherName{{OID: "1.2.3.4", UTF8Value: "x"}, upn}
		}},
		"an IP range written from another address of the network": {mutate: func(t *RequestTemplate) {
			c := *caLimits
			p := *c.Permitted
			p.IPRanges = []string{"10.9.8.7/8", "fd00::1/8"}
			c.Permitted = &p
			t.NameConstraints = &c
		}},
		"another literal subject":              {mutate: func(t *RequestTemplate) { t.LiteralSubject = "CN=app,O=other" }, fields: []string{"literalSubject"}},
		"the same attributes in another order": {mutate: func(t *RequestTemplate) { t.LiteralSubject = "O=acme,CN=app" }, fields: []string{"literalSubject"}},
		"the literal subject replaced by commonName and subject": {mutate: func(t *RequestTemplate) {
			t.LiteralSubject, t.CommonName, t.Subject = "", "app", &Subject{Organizations: []string{"acme"}}
		}},
		"an other name's value changed":       {mutate: func(t *RequestTemplate) { t.OtherNames = []OtherName{upn, {OID: "1.2.3.4", UTF8Value: "y"}} }, fields: []string{"otherNames"}},
		"an other name removed":               {mutate: func(t *RequestTemplate) { t.OtherNames = []OtherName{upn} }, fields: []string{"otherNames"}},
		"name constraints removed":            {mutate: func(t *RequestTemplate) { t.NameConstraints = nil }, fields: []string{"nameConstraints"}},
		"name constraints no longer critical": {mutate: func(t *RequestTemplate) { c := *caLimits; c.Critical = false; t.NameConstraints = &c }, fields: []string{"nameConstraints"}},
		"a permitted domain added": {mutate: func(t *RequestTemplate) {
			c := *caLimits
			p := *c.Permitted
			p.DNSDomains = append([]string{"new.example"}, p.DNSDomains...)
			c.Permitted = &p
			t.NameConstraints = &c
		}, fields: []string{"nameConstraints"}},
		"encodeUsagesInRequest turned off": {mutate: func(t *RequestTemplate) { t.EncodeUsagesInRequest = &falseValue }, fields: []string{"usages"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tmpl := base
			tc.mutate(&tmpl)
			var fields []string
			for _, d := range CompareCSR(csr, tmpl) {
				fields = append(fields, d.Field)
			}
			assert.Equal(t, tc.fields, fields, "%v", CompareCSR(csr, tmpl))
		})
	}

	t.Run("encodeUsagesInRequest turned back on", func(t *testing.T) {
		off := base
		off.EncodeUsagesInRequest = &falseValue
		d := CompareCSR(buildAndParse(t, off), base)
		require.Len(t, d, 1)
		assert.Equal(t, Difference{Field: "usages", Want: "[cert sign, digital signature, server auth]", Have: "[]"}, d[0])
		assert.Empty(t, CompareCSR(buildAndParse(t, off), off))
	})
}

// A certificate's common name may come from its literal subject: the
// names of an issued certificate are compared with it.
func TestCompareCertificateNamesReadsTheLiteralCN(t *testing.T) {
	tmpl := RequestTemplate{LiteralSubject: "CN=app,O=acme", DNSNames: []string{"app.example"}}
	cert := &x509.Certificate{Subject: pkix.Name{CommonName: "app"}, DNSNames: []string{"app.example"}}
	assert.Empty(t, CompareCertificateNames(cert, tmpl))
	cert.Subject.CommonName = "other"
	assert.NotEmpty(t, CompareCertificateNames(cert, tmpl))
}

// Validate names each problem of an other name or of name constraints at
// its field, and accepts what crypto/x509 reads back.
func TestValidateOtherNamesAndNameConstraints(t *testing.T) {
	tests := map[string]struct {
		err  error
		want []string // "field: message"
	}{
		"a user principal name":   {err: upn.Validate()},
		"an other name with none": {err: OtherName{}.Validate(), want: []string{"oid: is required", "utf8Value: is required"}},
		"an OID with a bad arc": {err: OtherName{OID: "1.3.x", UTF8Value: "v"}.Validate(),
			want: []string{`oid: "1.3.x" is not a dotted OID: arc 3, "x", is not a decimal number without leading zeros`}},
		"a value that is not UTF-8": {err: OtherName{OID: "1.2.3", UTF8Value: "\xff"}.Validate(), want: []string{"utf8Value: is not valid UTF-8"}},
		"usable constraints":        {err: caLimits.Validate()},
		"neither permitted nor excluded": {err: (&NameConstraints{Critical: true}).Validate(),
			want: []string{"nameConstraints: sets neither permitted nor excluded (RFC 5280 §4.2.1.10)"}},
		"an empty permitted, as cert-manager accepts (no extension is written)": {err: (&NameConstraints{Permitted: &NameConstraintItem{}}).Validate()},
		"bad values of every form": {err: (&NameConstraints{Excluded: &NameConstraintItem{
			DNSDomains: []string{"a..b", "bü.example"}, IPRanges: []string{"10.0.0.0/33"}, EmailAddresses: []string{"x@", "Ops <o@example.com>"}, URIDomains: []string{"10.0.0.1", "."}}}).Validate(),
			want: []string{
				`excluded.dnsDomains[0]: "a..b" has an empty label`,
				`excluded.dnsDomains[1]: "bü.example" has a character that is not printable ASCII`,
				`excluded.ipRanges[0]: "10.0.0.0/33" is not an IP range in CIDR notation, such as 10.0.0.0/8`,
				`excluded.emailAddresses[0]: "x@" is not a mailbox in ASCII (local-part@domain)`,
				`excluded.emailAddresses[1]: "Ops <o@example.com>" is not a mailbox in ASCII (local-part@domain)`,
				`excluded.uriDomains[0]: "10.0.0.1" is an IP address: a URI constraint is a domain`,
				`excluded.uriDomains[1]: "." is not a domain`,
			}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var got []string
			if tc.err != nil {
				for _, e := range tc.err.(interface{ Unwrap() []error }).Unwrap() {
					var te *TemplateError
					require.ErrorAs(t, e, &te)
					require.ErrorIs(t, e, ErrTemplate)
					got = append(got, te.Field+": "+te.Message)
				}
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// ParseNameConstraints refuses an extension it cannot carry into a
// certificate: unreadable, a name form crypto/x509 does not constrain, an
// IP range whose mask is not a prefix (RFC 5280 §4.2.1.10).
func TestParseNameConstraintsRefuses(t *testing.T) {
	subtrees := func(rv asn1.RawValue) []byte {
		b, err := asn1.Marshal(nameConstraintsDER{Permitted: []generalSubtree{{Base: rv}}})
		require.NoError(t, err)
		return b
	}
	tests := map[string]struct {
		value []byte
		err   string
	}{
		"bytes that are not the extension": {value: []byte{0x01, 0x02}, err: "cannot be read"},
		"a directory name":                 {value: subtrees(asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 4, IsCompound: true, Bytes: []byte{0x30, 0}}), err: "a name form certlife does not read"},
		"a registered ID":                  {value: subtrees(asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 8, Bytes: []byte{0x2a}}), err: "a name form (tag 8) certlife does not read"},
		"an IP range with a mask that is no prefix": {value: subtrees(asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 7, Bytes: []byte{10, 0, 0, 0, 255, 0, 255, 0}}),
			err: "an IP range whose mask is not a prefix"},
		"an IP range of five bytes": {value: subtrees(asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 7, Bytes: []byte{10, 0, 0, 0, 255}}), err: "an IP range of 5 bytes"},
		"an empty extension":        {value: []byte{0x30, 0}, err: "names no subtree (RFC 5280 §4.2.1.10)"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var c x509.Certificate
			err := ParseNameConstraints(pkix.Extension{Id: oidNC, Value: tc.value}, &c)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
			assert.Nil(t, c.PermittedDNSDomains)
		})
	}
}
