package keys

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// atv is one attribute of an expected subject.
func atv(oid asn1.ObjectIdentifier, v any) pkix.AttributeTypeAndValue {
	return pkix.AttributeTypeAndValue{Type: oid, Value: v}
}

var (
	oidCN  = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidC   = asn1.ObjectIdentifier{2, 5, 4, 6}
	oidO   = asn1.ObjectIdentifier{2, 5, 4, 10}
	oidOU  = asn1.ObjectIdentifier{2, 5, 4, 11}
	oidDC  = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}
	oidUID = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 1}
)

// ParseLiteralSubject reads RFC 4514 strings — the examples of its §4
// among them — into the subject in encoding order (§2.1: the string
// starts with the last RDN), and says what is wrong with the rest.
func TestParseLiteralSubject(t *testing.T) {
	tests := map[string]struct {
		in   string
		want pkix.RDNSequence
		err  string // a part of the error; "" when it parses
	}{
		"RFC 4514 §4: UID=jsmith,DC=example,DC=net": {in: "UID=jsmith,DC=example,DC=net",
			want: pkix.RDNSequence{{atv(oidDC, "net")}, {atv(oidDC, "example")}, {atv(oidUID, "jsmith")}}},
		"RFC 4514 §4: a multi-valued RDN": {in: "OU=Sales+CN=J.  Smith,DC=example,DC=net",
			want: pkix.RDNSequence{{atv(oidDC, "net")}, {atv(oidDC, "example")}, {atv(oidOU, "Sales"), atv(oidCN, "J.  Smith")}}},
		"RFC 4514 §4: escaped quotes and comma": {in: `CN=James \"Jim\" Smith\, III,DC=example,DC=net`,
			want: pkix.RDNSequence{{atv(oidDC, "net")}, {atv(oidDC, "example")}, {atv(oidCN, `James "Jim" Smith, III`)}}},
		"RFC 4514 §4: a carriage return as hex": {in: `CN=Before\0dAfter,DC=example,DC=net`,
			want: pkix.RDNSequence{{atv(oidDC, "net")}, {atv(oidDC, "example")}, {atv(oidCN, "Before\rAfter")}}},
		"RFC 4514 §4: a DER value after #, its contents the string, as the reference operator reads it": {in: "1.3.6.1.4.1.1466.0=#04024869,DC=example,DC=com",
			want: pkix.RDNSequence{{atv(oidDC, "com")}, {atv(oidDC, "example")},
				{atv(asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 1466, 0}, "Hi")}}},
		"a UTF8String after #":              {in: "CN=#0c03666f6f", want: pkix.RDNSequence{{atv(oidCN, "foo")}}},
		"RFC 4514 §4: UTF-8 as hex escapes": {in: `CN=Lu\C4\8Di\C4\87`, want: pkix.RDNSequence{{atv(oidCN, "Lučić")}}},
		"types in any case, spaces around dropped": {in: " cn = web , o = Acme ",
			want: pkix.RDNSequence{{atv(oidO, "Acme")}, {atv(oidCN, "web")}}},
		"an escaped trailing space is kept":           {in: `CN=web\ `, want: pkix.RDNSequence{{atv(oidCN, "web ")}}},
		"an escaped backslash before a dropped space": {in: `CN=web\\ `, want: pkix.RDNSequence{{atv(oidCN, `web\`)}}},
		"a semicolon separates RDNs, as RFC 2253 readers accept": {in: "CN=web;O=Acme",
			want: pkix.RDNSequence{{atv(oidO, "Acme")}, {atv(oidCN, "web")}}},
		"an equals sign inside a value": {in: "CN=a=b", want: pkix.RDNSequence{{atv(oidCN, "a=b")}}},
		"an empty value":                {in: "CN=", want: pkix.RDNSequence{{atv(oidCN, "")}}},

		"empty":                     {in: "  ", err: "it names no attribute"},
		"no equals sign":            {in: "CN", err: `"CN" has no "=" between an attribute type and its value`},
		"no type":                   {in: "=web", err: "an attribute type is missing"},
		"an unknown type":           {in: "FOO=bar", err: `attribute type "FOO" is not one of C, O, OU, CN, SERIALNUMBER, L, ST, STREET, DC, UID, nor a dotted OID`},
		"an OID with one arc":       {in: "2=x", err: "a dotted OID has at least two arcs"},
		"an OID with a first arc 3": {in: "3.1=x", err: "the first arc is 3, not 0, 1 or 2"},
		"an OID with a leading zero": {in: "2.05=x",
			err: `arc 2, "05", is not a decimal number without leading zeros`},
		"an empty RDN":               {in: "CN=a,,O=b", err: `has no "=" between an attribute type and its value`},
		"a trailing comma":           {in: "CN=a,", err: `has no "=" between an attribute type and its value`},
		"a bad escape":               {in: `CN=a\zz`, err: `"\zz" is neither an escaped special character nor two hex digits`},
		"a lone backslash":           {in: `CN=a\`, err: `it ends with a lone "\"`},
		"bytes not UTF-8":            {in: `CN=\ff`, err: "it is not valid UTF-8"},
		"# without hex":              {in: "CN=#zz", err: `"#" must be followed by the hex digits of a DER-encoded value`},
		"# with truncated DER":       {in: "CN=#0402", err: `the hex digits after "#" are not one DER-encoded primitive value`},
		"# with a constructed value": {in: "CN=#3003020101", err: `the hex digits after "#" are not one DER-encoded primitive value`},
		"# with contents not UTF-8":  {in: "CN=#0401ff", err: `the value after "#" is not valid UTF-8`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParseLiteralSubject(tc.in)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("ParseLiteralSubject(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

// A literal subject written in the order crypto/x509/pkix encodes a
// pkix.Name is encoded byte for byte as that pkix.Name: values are
// PrintableStrings where they can be and UTF8Strings otherwise, in both.
func TestLiteralSubjectEncodesAsPkixDoes(t *testing.T) {
	der, cn, err := literalSubjectDER("CN=web*1,OU=Ops,O=Ærlig AS,C=NO")
	require.NoError(t, err)
	want, err := asn1.Marshal(pkix.Name{Country: []string{"NO"}, Organization: []string{"Ærlig AS"}, OrganizationalUnit: []string{"Ops"}, CommonName: "web*1"}.ToRDNSequence())
	require.NoError(t, err)
	assert.Equal(t, want, der)
	assert.Equal(t, "web*1", cn)
}

// FuzzParseLiteralSubject: whatever the string, ParseLiteralSubject does
// not panic; a subject it accepts encodes, reads back as RDNs of the same
// attribute types, and makes a request that crypto/x509 signs and reads
// back with that very encoding.
func FuzzParseLiteralSubject(f *testing.F) {
	key := mustKey(f, KeySpec{Algorithm: AlgorithmECDSA})
	for _, s := range []string{"UID=jsmith,DC=example,DC=net", "OU=Sales+CN=J.  Smith,DC=example,DC=net", `CN=James \"Jim\" Smith\, III`,
		"1.3.6.1.4.1.1466.0=#04024869,DC=example,DC=com", `CN=Lu\C4\8Di\C4\87`, `CN=web\ ;O=a`, "CN=#0c03666f6f", "2.5.4.3=x+2.5.4.3=y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rdns, err := ParseLiteralSubject(s)
		if err != nil {
			require.Nil(t, rdns)
			return
		}
		require.NotEmpty(t, rdns)
		der, err := asn1.Marshal(rdns)
		require.NoError(t, err, "an accepted subject encodes")
		var back pkix.RDNSequence
		rest, err := asn1.Unmarshal(der, &back)
		require.NoError(t, err)
		require.Empty(t, rest)
		require.Len(t, back, len(rdns))
		types := func(rdn pkix.RelativeDistinguishedNameSET) []string {
			var out []string
			for _, a := range rdn {
				out = append(out, a.Type.String())
			}
			slices.Sort(out) // a SET's members are encoded sorted
			return out
		}
		for i := range rdns {
			require.Equal(t, types(rdns[i]), types(back[i]), "RDN %d", i)
		}
		csr, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{RawSubject: der, DNSNames: []string{"a.example"}}, key)
		require.NoError(t, err)
		parsed, err := x509.ParseCertificateRequest(csr)
		require.NoError(t, err)
		require.Equal(t, der, parsed.RawSubject)

		// Validation and CSR building agree: BuildCSR refuses exactly what
		// ValidateSubject names, and what it builds holds only what RFC
		// 5280 allows, IA5Strings where the type asks one.
		tmpl := RequestTemplate{LiteralSubject: s, DNSNames: []string{"a.example"}}
		built, buildErr := BuildCSR(rand.Reader, tmpl, key)
		if tmpl.ValidateSubject() != nil {
			require.Error(t, buildErr, "BuildCSR builds a subject validation refuses")
			return
		}
		require.NoError(t, buildErr, "BuildCSR refuses a subject validation accepts")
		req, err := ParseCSR(built)
		require.NoError(t, err)
		for _, a := range rawAttributes(t, req.RawSubject) {
			if attributeRules[a.Type.String()].ia5 {
				require.Equal(t, asn1.TagIA5String, a.Value.Tag, "%s is an IA5String", typeName(a.Type))
			}
			if !a.Type.Equal(oidCommonName) {
				require.Empty(t, attributeProblem(a.Type, string(a.Value.Bytes)))
			}
		}
	})
}
