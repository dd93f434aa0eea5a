package keys

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawATV is a subject attribute as encoded: its type and its value with
// the value's string type.
type rawATV struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// rawAttributes reads a DER subject into its attributes as encoded.
func rawAttributes(t testing.TB, der []byte) []rawATV {
	t.Helper()
	var sets []asn1.RawValue
	rest, err := asn1.Unmarshal(der, &sets)
	require.NoError(t, err)
	require.Empty(t, rest)
	var out []rawATV
	for _, set := range sets {
		var atvs []rawATV
		_, err := asn1.UnmarshalWithParams(set.FullBytes, &atvs, "set")
		require.NoError(t, err)
		out = append(out, atvs...)
	}
	return out
}

// RFC 4519 §2.4: a domainComponent is an IA5String, and so is PKCS #9's
// emailAddress; a literal subject encodes them so, and every other value
// as crypto/x509/pkix would (PrintableString, else UTF8String).
func TestLiteralSubjectEncodesDomainComponentsAsIA5Strings(t *testing.T) {
	der, cn, err := literalSubjectDER("CN=app,OU=web,DC=corp_1,DC=example,1.2.840.113549.1.9.1=ops@corp.example")
	require.NoError(t, err)
	assert.Equal(t, "app", cn)
	tags := map[string]int{}
	for _, a := range rawAttributes(t, der) {
		tags[typeName(a.Type)+"="+string(a.Value.Bytes)] = a.Value.Tag
	}
	assert.Equal(t, map[string]int{
		"CN=app": asn1.TagPrintableString, "OU=web": asn1.TagPrintableString,
		"DC=corp_1": asn1.TagIA5String, "DC=example": asn1.TagIA5String,
		"1.2.840.113549.1.9.1=ops@corp.example": asn1.TagIA5String,
	}, tags)
}

// A request made before domain components were IA5Strings still matches
// its template: no re-issue of every certificate with a DC on upgrade.
func TestARequestWithLegacyDomainComponentsStillMatches(t *testing.T) {
	key := mustKey(t, KeySpec{Algorithm: AlgorithmECDSA})
	tmpl := RequestTemplate{LiteralSubject: "CN=app,DC=corp,DC=example", DNSNames: []string{"app.corp.example"}}
	legacy, _, err := literalSubjectEncoding(tmpl.LiteralSubject, true)
	require.NoError(t, err)
	now, _, err := literalSubjectDER(tmpl.LiteralSubject)
	require.NoError(t, err)
	require.NotEqual(t, legacy, now, "the encodings differ")
	for name, raw := range map[string][]byte{"legacy": legacy, "current": now} {
		der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{RawSubject: raw, DNSNames: tmpl.DNSNames,
			ExtraExtensions: mustExtensions(t, tmpl)}, key)
		require.NoError(t, err)
		csr, err := x509.ParseCertificateRequest(der)
		require.NoError(t, err)
		assert.Empty(t, CompareCSR(csr, tmpl), name)
	}
	// Another subject still differs.
	other, _, err := literalSubjectDER("CN=app,DC=other,DC=example")
	require.NoError(t, err)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{RawSubject: other, DNSNames: tmpl.DNSNames, ExtraExtensions: mustExtensions(t, tmpl)}, key)
	require.NoError(t, err)
	csr, err := x509.ParseCertificateRequest(der)
	require.NoError(t, err)
	require.Len(t, CompareCSR(csr, tmpl), 1)
	assert.Equal(t, "literalSubject", CompareCSR(csr, tmpl)[0].Field)
}

func mustExtensions(t *testing.T, tmpl RequestTemplate) []pkix.Extension {
	t.Helper()
	exts, err := tmpl.extensions()
	require.NoError(t, err)
	return exts
}

// Subject values RFC 5280 forbids (appendix A) are refused by Validate,
// ValidateSubject and BuildCSR alike, naming the field; the bounds count
// characters, not bytes.
func TestSubjectValuesRFC5280Forbids(t *testing.T) {
	tests := map[string]struct {
		tmpl  RequestTemplate
		field string // "" when valid
		want  string
	}{
		"the bounds exactly": {tmpl: RequestTemplate{Subject: &Subject{Organizations: []string{strings.Repeat("å", 64)}, OrganizationalUnits: []string{strings.Repeat("u", 64)},
			Localities: []string{strings.Repeat("l", 128)}, Provinces: []string{strings.Repeat("p", 128)}, StreetAddresses: []string{strings.Repeat("s", 128)},
			PostalCodes: []string{strings.Repeat("0", 16)}, Countries: []string{"NO"}, SerialNumber: strings.Repeat("9", 64)}}},
		"an organization over 64": {tmpl: RequestTemplate{Subject: &Subject{Organizations: []string{strings.Repeat("o", 65)}}},
			field: "subject.organizations[0]", want: "is 65 characters long, over the upper bound of 64 (RFC 5280 appendix A, ub-organization-name)"},
		"an organizational unit over 64": {tmpl: RequestTemplate{Subject: &Subject{OrganizationalUnits: []string{"a", strings.Repeat("u", 65)}}},
			field: "subject.organizationalUnits[1]", want: "ub-organizational-unit-name"},
		"a locality over 128": {tmpl: RequestTemplate{Subject: &Subject{Localities: []string{strings.Repeat("l", 129)}}},
			field: "subject.localities[0]", want: "ub-locality-name"},
		"a province over 128": {tmpl: RequestTemplate{Subject: &Subject{Provinces: []string{strings.Repeat("p", 129)}}},
			field: "subject.provinces[0]", want: "ub-state-name"},
		"a street address over 128": {tmpl: RequestTemplate{Subject: &Subject{StreetAddresses: []string{strings.Repeat("s", 129)}}},
			field: "subject.streetAddresses[0]", want: "ub-street-address"},
		"a postal code over 16": {tmpl: RequestTemplate{Subject: &Subject{PostalCodes: []string{strings.Repeat("0", 17)}}},
			field: "subject.postalCodes[0]", want: "ub-postal-code"},
		"a country of one letter": {tmpl: RequestTemplate{Subject: &Subject{Countries: []string{"N"}}},
			field: "subject.countries[0]", want: `"N" is 1 characters long, not 2`},
		"a country that is no PrintableString": {tmpl: RequestTemplate{Subject: &Subject{Countries: []string{"NØ"}}},
			field: "subject.countries[0]", want: "which a PrintableString cannot hold"},
		"a serial number over 64": {tmpl: RequestTemplate{Subject: &Subject{SerialNumber: strings.Repeat("9", 65)}},
			field: "subject.serialNumber", want: "ub-serial-number"},
		"a serial number with an at sign": {tmpl: RequestTemplate{Subject: &Subject{SerialNumber: "a@b"}},
			field: "subject.serialNumber", want: `"a@b" has the character '@', which a PrintableString cannot hold`},
		"a serial number with an asterisk": {tmpl: RequestTemplate{Subject: &Subject{SerialNumber: "a*b"}},
			field: "subject.serialNumber", want: "PrintableString"},
		"a control character": {tmpl: RequestTemplate{Subject: &Subject{Localities: []string{"Oslo\x7f"}}},
			field: "subject.localities[0]", want: "control character U+007F"},
		"a C1 control character": {tmpl: RequestTemplate{Subject: &Subject{Provinces: []string{"Oslo\u0085"}}},
			field: "subject.provinces[0]", want: "control character U+0085"},
		"a literal subject over a bound": {tmpl: RequestTemplate{LiteralSubject: "CN=a,OU=" + strings.Repeat("u", 65)},
			field: "literalSubject", want: "its OU attribute"},
		"a literal subject's DC that is not ASCII": {tmpl: RequestTemplate{LiteralSubject: "CN=a,DC=bø"},
			field: "literalSubject", want: "its DC attribute \"bø\" has the non-ASCII character"},
		"a literal subject's country of three": {tmpl: RequestTemplate{LiteralSubject: "CN=a,C=NOR"},
			field: "literalSubject", want: "its C attribute \"NOR\" is 3 characters long"},
		"a literal subject with another attribute type is not bounded": {tmpl: RequestTemplate{LiteralSubject: "CN=a,UID=" + strings.Repeat("u", 300)}},
	}
	key := mustKey(t, KeySpec{Algorithm: AlgorithmECDSA})
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tc.tmpl.DNSNames = []string{"a.example"}
			err := tc.tmpl.ValidateSubject()
			_, buildErr := BuildCSR(rand.Reader, tc.tmpl, key)
			if tc.field == "" {
				assert.NoError(t, err)
				assert.NoError(t, buildErr)
				return
			}
			errs := templateErrors(err)
			require.Len(t, errs, 1, "%v", err)
			assert.Equal(t, tc.field, errs[0].Field)
			assert.Contains(t, errs[0].Message, tc.want)
			assert.ErrorIs(t, err, ErrTemplate)
			require.Error(t, buildErr, "BuildCSR builds what validation refuses")
			assert.ErrorIs(t, buildErr, ErrTemplate)
			assert.Contains(t, buildErr.Error(), tc.want)
		})
	}
}

// A certificate an issuer names by one of its IP addresses (a
// self-signed certificate without a DNS name) still matches a template
// that asks no common name; a common name that is an IP address the
// certificate does not carry is still a difference.
func TestCertificateNamedByItsIPAddressMatches(t *testing.T) {
	tmpl := RequestTemplate{IPAddresses: []string{"10.0.0.1", "2001:db8::1"}}
	cert := &x509.Certificate{Subject: pkix.Name{CommonName: "2001:db8::1"}, IPAddresses: []net.IP{net.ParseIP("10.0.0.1"), net.ParseIP("2001:db8::1")}}
	assert.Empty(t, CompareCertificateNames(cert, tmpl))
	cert.Subject.CommonName = "10.0.0.2"
	assert.NotEmpty(t, CompareCertificateNames(cert, tmpl))
	cert.Subject.CommonName = "10.0.0.1"
	asked := RequestTemplate{CommonName: "web.example", IPAddresses: []string{"10.0.0.1"}}
	assert.NotEmpty(t, CompareCertificateNames(cert, asked), "the common name asked is missing")
}
