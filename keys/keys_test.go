package keys

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"github.com/stretchr/testify/require"
	"software.sslmate.com/src/go-pkcs12"
)

var (
	rsaOnce sync.Once
	rsaKey  *rsa.PrivateKey
)

// testRSAKey generates one RSA 2048 key for the whole package: RSA
// generation is slow.
func testRSAKey(t testing.TB) *rsa.PrivateKey {
	rsaOnce.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		rsaKey = k
	})
	return rsaKey
}

func mustKey(t testing.TB, spec KeySpec) crypto.Signer {
	t.Helper()
	if spec.WithDefaults().Algorithm == AlgorithmRSA && spec.WithDefaults().Size == 2048 {
		return testRSAKey(t)
	}
	k, err := Generate(rand.Reader, spec)
	require.NoError(t, err)
	return k
}

func TestKeySpecValidate(t *testing.T) {
	tests := map[string]struct {
		spec      KeySpec
		wantField string // "" = valid
		wantValue string
	}{
		"the zero spec is RSA 2048":               {spec: KeySpec{}},
		"RSA 4096 is valid":                       {spec: KeySpec{Algorithm: AlgorithmRSA, Size: 4096}},
		"RSA 8192 is valid":                       {spec: KeySpec{Algorithm: AlgorithmRSA, Size: 8192}},
		"RSA 1024 is too small":                   {spec: KeySpec{Algorithm: AlgorithmRSA, Size: 1024}, wantField: "size", wantValue: "1024"},
		"RSA 8193 is too large":                   {spec: KeySpec{Algorithm: AlgorithmRSA, Size: 8193}, wantField: "size", wantValue: "8193"},
		"ECDSA defaults to 256":                   {spec: KeySpec{Algorithm: AlgorithmECDSA}},
		"ECDSA 384 is valid":                      {spec: KeySpec{Algorithm: AlgorithmECDSA, Size: 384}},
		"ECDSA 521 is valid":                      {spec: KeySpec{Algorithm: AlgorithmECDSA, Size: 521}},
		"ECDSA 512 is not a curve":                {spec: KeySpec{Algorithm: AlgorithmECDSA, Size: 512}, wantField: "size", wantValue: "512"},
		"Ed25519 ignores the size":                {spec: KeySpec{Algorithm: AlgorithmEd25519, Size: 12345}},
		"an unknown algorithm is named":           {spec: KeySpec{Algorithm: "DSA"}, wantField: "algorithm", wantValue: `"DSA"`},
		"an unknown encoding is named":            {spec: KeySpec{Encoding: "PEM"}, wantField: "encoding", wantValue: `"PEM"`},
		"an unknown rotation policy is named":     {spec: KeySpec{RotationPolicy: "Sometimes"}, wantField: "rotationPolicy", wantValue: `"Sometimes"`},
		"lower-case algorithm names are rejected": {spec: KeySpec{Algorithm: "rsa"}, wantField: "algorithm", wantValue: `"rsa"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := tc.spec.Validate()
			if tc.wantField == "" {
				require.NoError(t, err, "Validate()")
				return
			}
			require.ErrorIs(t, err, ErrInvalidSpec, "Validate()")
			require.ErrorContains(t, err, tc.wantField+": "+tc.wantValue, "Validate() names the field and value")
		})
	}
}

func TestWithDefaults(t *testing.T) {
	got := KeySpec{}.WithDefaults()
	want := KeySpec{Algorithm: AlgorithmRSA, Size: 2048, Encoding: EncodingPKCS1, RotationPolicy: RotationAlways}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("WithDefaults (-want +got):\n%s", diff)
	}
	require.Equal(t, 0, (KeySpec{Algorithm: AlgorithmEd25519, Size: 99}).WithDefaults().Size, "Ed25519 size")
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	specs := []KeySpec{
		{Algorithm: AlgorithmRSA},
		{Algorithm: AlgorithmECDSA, Size: 256},
		{Algorithm: AlgorithmECDSA, Size: 384},
		{Algorithm: AlgorithmECDSA, Size: 521},
		{Algorithm: AlgorithmEd25519},
	}
	wantType := map[Algorithm]map[Encoding]string{
		AlgorithmRSA:     {EncodingPKCS1: "RSA PRIVATE KEY", EncodingPKCS8: "PRIVATE KEY"},
		AlgorithmECDSA:   {EncodingPKCS1: "EC PRIVATE KEY", EncodingPKCS8: "PRIVATE KEY"},
		AlgorithmEd25519: {EncodingPKCS1: "PRIVATE KEY", EncodingPKCS8: "PRIVATE KEY"},
	}
	for _, spec := range specs {
		key := mustKey(t, spec)
		require.Nil(t, SpecMismatches(key.Public(), spec), "generated key does not meet %+v", spec)
		for _, enc := range []Encoding{EncodingPKCS1, EncodingPKCS8} {
			t.Run(fmt.Sprintf("%s-%d-%s", spec.Algorithm, spec.Size, enc), func(t *testing.T) {
				pemBytes, err := EncodePrivateKey(key, enc)
				require.NoError(t, err)
				block, _ := pem.Decode(pemBytes)
				require.Equal(t, wantType[spec.Algorithm][enc], block.Type, "PEM type")
				back, err := DecodePrivateKey(pemBytes)
				require.NoError(t, err)
				require.True(t, PublicKeysEqual(back.Public(), key.Public()), "decoded key differs from the encoded one")
			})
		}
	}
}

func TestDecodeErrorsNameNoBytes(t *testing.T) {
	tests := map[string][]byte{
		"no PEM at all":         []byte("hello"),
		"a certificate block":   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1, 2, 3}}),
		"a corrupt PKCS#1 body": pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: []byte("SECRETSECRET")}),
		"a corrupt SEC1 body":   pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: []byte("SECRETSECRET")}),
		"a corrupt PKCS#8 body": pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("SECRETSECRET")}),
	}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := DecodePrivateKey(in)
			require.ErrorIs(t, err, ErrDecode)
			require.NotContains(t, err.Error(), "SECRET", "error quotes the input")
		})
	}
}

func TestSpecMismatchesAndPublicKeysEqual(t *testing.T) {
	ec := mustKey(t, KeySpec{Algorithm: AlgorithmECDSA})
	ec2 := mustKey(t, KeySpec{Algorithm: AlgorithmECDSA})
	ec384 := mustKey(t, KeySpec{Algorithm: AlgorithmECDSA, Size: 384})
	rsa := mustKey(t, KeySpec{})
	ed := mustKey(t, KeySpec{Algorithm: AlgorithmEd25519})

	mism := map[string]struct {
		pub  crypto.PublicKey
		spec KeySpec
		want []string
	}{
		"a P-256 key meets an ECDSA spec":         {ec.Public(), KeySpec{Algorithm: AlgorithmECDSA}, nil},
		"a P-256 key fails an ECDSA 384 spec":     {ec.Public(), KeySpec{Algorithm: AlgorithmECDSA, Size: 384}, []string{"size: spec wants 384, key is 256"}},
		"an RSA key fails an ECDSA spec":          {rsa.Public(), KeySpec{Algorithm: AlgorithmECDSA}, []string{"algorithm: spec wants ECDSA, key is RSA"}},
		"an Ed25519 key meets an Ed25519 spec":    {ed.Public(), KeySpec{Algorithm: AlgorithmEd25519}, nil},
		"a private key is read by its public key": {ec384, KeySpec{Algorithm: AlgorithmECDSA, Size: 384}, nil},
		"nil fails every spec":                    {nil, KeySpec{}, []string{"algorithm: spec wants RSA, key is of unsupported type <nil>"}},
	}
	for name, tc := range mism {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, SpecMismatches(tc.pub, tc.spec)); diff != "" {
				t.Fatalf("SpecMismatches (-want +got):\n%s", diff)
			}
		})
	}

	eq := map[string]struct {
		a, b crypto.PublicKey
		want bool
	}{
		"a key equals itself":                {ec.Public(), ec.Public(), true},
		"a private key equals its public":    {ec, ec.Public(), true},
		"two P-256 keys differ":              {ec.Public(), ec2.Public(), false},
		"different algorithms differ":        {ec.Public(), rsa.Public(), false},
		"Ed25519 equals itself":              {ed.Public(), ed, true},
		"nil is never equal":                 {nil, nil, false},
		"a typed nil never panics":           {(*ecdsa.PublicKey)(nil), ec.Public(), false},
		"an empty RSA key never panics":      {&rsaPublicKeyZero, &rsaPublicKeyZero, false},
		"a short Ed25519 key is never equal": {ed25519.PublicKey{1, 2}, ed25519.PublicKey{1, 2}, false},
	}
	for name, tc := range eq {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, PublicKeysEqual(tc.a, tc.b), "PublicKeysEqual")
		})
	}
}

var rsaPublicKeyZero = rsaPublicKey()

func rsaPublicKey() rsa.PublicKey { return rsa.PublicKey{} }

func TestBuildAndCompareCSR(t *testing.T) {
	key := mustKey(t, KeySpec{Algorithm: AlgorithmECDSA})
	tmpl := RequestTemplate{
		CommonName:     "a.example",
		DNSNames:       []string{"a.example", "b.example"},
		IPAddresses:    []string{"10.0.0.1", "::1"},
		URIs:           []string{"spiffe://cluster.local/ns/a/sa/b"},
		EmailAddresses: []string{"ops@example.com"},
		Subject:        &Subject{Organizations: []string{"certlife"}, Countries: []string{"NO"}},
		Usages:         []Usage{UsageDigitalSignature, UsageKeyEncipherment, UsageServerAuth},
	}
	csrPEM, err := BuildCSR(rand.Reader, tmpl, key)
	require.NoError(t, err)
	csr, err := ParseCSR(csrPEM)
	require.NoError(t, err)
	require.True(t, PublicKeysEqual(csr.PublicKey, key), "the request does not carry the key")
	require.Nil(t, CompareCSR(csr, tmpl), "a request differs from its own template")
	reordered := tmpl
	reordered.DNSNames = []string{"b.example", "a.example"}
	reordered.IPAddresses = []string{"::1", "10.0.0.1"}
	require.Nil(t, CompareCSR(csr, reordered), "name order matters")

	changed := tmpl
	changed.CommonName = "c.example"
	changed.DNSNames = []string{"a.example"}
	changed.Usages = []Usage{UsageDigitalSignature}
	changed.IsCA = true
	changed.Subject = &Subject{Organizations: []string{"other"}, Countries: []string{"NO"}}
	got := CompareCSR(csr, changed)
	want := []Difference{
		{Field: "commonName", Want: `"c.example"`, Have: `"a.example"`},
		{Field: "subject.organizations", Want: "[other]", Have: "[certlife]"},
		{Field: "dnsNames", Want: "[a.example]", Have: "[a.example b.example]"},
		{Field: "usages", Want: "[cert sign, digital signature]", Have: "[digital signature, key encipherment, server auth]"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("CompareCSR reports every difference (-want +got):\n%s", diff)
	}
	require.Equal(t, "dnsNames: want [a.example], have [a.example b.example]", got[2].String(), "Difference.String()")

	// isCA is read from the request's basic constraints when it carries
	// them (RFC 5280 §4.2.1.9); a request without them — the reference
	// operator writes none by default — leaves isCA to the request's spec.
	ca := tmpl
	ca.IsCA = true
	caCSRPEM, err := BuildCSR(rand.Reader, ca, key)
	require.NoError(t, err)
	caCSR, err := ParseCSR(caCSRPEM)
	require.NoError(t, err)
	require.Nil(t, CompareCSR(caCSR, ca))
	notCA := ca
	notCA.IsCA = false
	notCA.Usages = append([]Usage{UsageCertSign}, tmpl.Usages...)
	require.Equal(t, []Difference{{Field: "isCA", Want: "false", Have: "true"}}, CompareCSR(caCSR, notCA))
	withoutBC := csrDER(t, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "ca"}, ExtraExtensions: []pkix.Extension{
		{Id: oidKeyUsage, Critical: true, Value: []byte{0x03, 0x02, 0x02, 0x04}}}}, key) // cert sign
	noBC, err := x509.ParseCertificateRequest(withoutBC)
	require.NoError(t, err)
	require.Nil(t, CompareCSR(noBC, RequestTemplate{CommonName: "ca", IsCA: true, Usages: []Usage{UsageCertSign}}))
}

func TestBuildCSRRejectsBadTemplates(t *testing.T) {
	key := mustKey(t, KeySpec{Algorithm: AlgorithmECDSA})
	tests := map[string]struct {
		tmpl RequestTemplate
		want string
	}{
		"no names at all":   {RequestTemplate{}, "no common name"},
		"a bad IP":          {RequestTemplate{DNSNames: []string{"a"}, IPAddresses: []string{"300.1.1.1"}}, `ipAddresses[0]: "300.1.1.1"`},
		"a relative URI":    {RequestTemplate{DNSNames: []string{"a"}, URIs: []string{"no-scheme"}}, `uris[0]: "no-scheme"`},
		"an unknown usage":  {RequestTemplate{DNSNames: []string{"a"}, Usages: []Usage{"teleport"}}, `usages[0]: "teleport"`},
		"a second bad name": {RequestTemplate{DNSNames: []string{"a"}, IPAddresses: []string{"1.1.1.1", "x"}}, `ipAddresses[1]: "x"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := BuildCSR(rand.Reader, tc.tmpl, key)
			require.ErrorIs(t, err, ErrTemplate, "BuildCSR error")
			require.ErrorContains(t, err, tc.want, "BuildCSR error names the field")
		})
	}
	_, err := BuildCSR(rand.Reader, RequestTemplate{CommonName: "a"}, nil)
	require.Error(t, err, "BuildCSR signed with no key")
}

func TestCompareCertificateNamesLetsTheCommonNameMove(t *testing.T) {
	ca := newTestCA(t)
	key := mustKey(t, KeySpec{Algorithm: AlgorithmECDSA})
	leaf := ca.issue(t, key.Public(), "a.example", []string{"a.example", "b.example"})
	tests := map[string]struct {
		tmpl RequestTemplate
		want []Difference
	}{
		"the same names match": {RequestTemplate{CommonName: "a.example", DNSNames: []string{"a.example", "b.example"}}, nil},
		"the common name only in the DNS names matches": {
			RequestTemplate{DNSNames: []string{"b.example", "a.example"}}, nil,
		},
		"a DNS name only as the common name matches": {
			RequestTemplate{CommonName: "a.example", DNSNames: []string{"b.example"}}, nil,
		},
		"a missing name is reported": {
			RequestTemplate{DNSNames: []string{"a.example", "b.example", "c.example"}},
			[]Difference{{Field: "commonName+dnsNames", Want: "[a.example b.example c.example]", Have: "[a.example b.example]"}},
		},
		"an IP address the certificate lacks is reported": {
			RequestTemplate{DNSNames: []string{"a.example", "b.example"}, IPAddresses: []string{"10.0.0.1"}},
			[]Difference{{Field: "ipAddresses", Want: "[10.0.0.1]", Have: "[]"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, CompareCertificateNames(leaf, tc.tmpl)); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
	require.Len(t, CompareCertificateNames(nil, RequestTemplate{}), 1, "nil certificate")
}

type testCA struct {
	cert *x509.Certificate
	pem  []byte
	key  *ecdsa.PrivateKey
}

func newTestCA(t testing.TB) *testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	require.NoError(t, err)
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

func (ca *testCA) issue(t testing.TB, pub crypto.PublicKey, cn string, dns []string) *x509.Certificate {
	t.Helper()
	der := ca.issueDER(t, pub, cn, dns)
	c, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return c
}

func (ca *testCA) issueDER(t testing.TB, pub crypto.PublicKey, cn string, dns []string) []byte {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn}, DNSNames: dns,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, pub, ca.key)
	require.NoError(t, err)
	return der
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestSecretDataFormats(t *testing.T) {
	ca := newTestCA(t)
	key := mustKey(t, KeySpec{Algorithm: AlgorithmECDSA})
	chain := pemCert(ca.issueDER(t, key.Public(), "a.example", []string{"a.example"}))

	data, err := SecretData(rand.Reader, key, chain, ca.pem, OutputSpec{
		KeyEncoding: EncodingPKCS8, CombinedPEM: true, DER: true,
		PKCS12: &PKCS12Spec{Password: "changeit"},
		JKS:    &JKSSpec{Password: "changeit"},
	})
	require.NoError(t, err)
	var names []string
	for k := range data {
		names = append(names, k)
	}
	want := []string{"ca.crt", "key.der", "keystore.jks", "keystore.p12", "tls-combined.pem", "tls.crt", "tls.key", "truststore.jks", "truststore.p12"}
	if diff := cmp.Diff(want, sorted(names)); diff != "" {
		t.Fatalf("data keys (-want +got):\n%s", diff)
	}
	block, _ := pem.Decode(data[SecretPrivateKey])
	require.Equal(t, "PRIVATE KEY", block.Type, "tls.key is not PKCS#8")
	require.True(t, bytes.HasPrefix(data[SecretCombinedPEM], data[SecretPrivateKey]), "tls-combined.pem does not start with the key")
	require.True(t, bytes.HasSuffix(data[SecretCombinedPEM], chain), "tls-combined.pem does not end with the chain")
	derKey, err := x509.ParsePKCS8PrivateKey(data[SecretKeyDER])
	require.NoError(t, err, "key.der")
	require.True(t, PublicKeysEqual(derKey, key), "key.der holds another key")
	p12Key, p12Leaf, _, err := pkcs12.DecodeChain(data[SecretPKCS12], "changeit")
	require.NoError(t, err, "keystore.p12 does not round-trip")
	require.True(t, PublicKeysEqual(p12Key, key), "keystore.p12 holds another key")
	require.True(t, PublicKeysEqual(p12Leaf.PublicKey, key), "keystore.p12 holds a leaf for another key")
	certs, err := pkcs12.DecodeTrustStore(data[SecretPKCS12Trust], "changeit")
	require.NoError(t, err, "truststore.p12")
	require.Len(t, certs, 1, "truststore.p12")
	require.True(t, certs[0].Equal(ca.cert), "truststore.p12 holds another CA")
	ks := keystore.New()
	require.NoError(t, ks.Load(bytes.NewReader(data[SecretJKS]), []byte("changeit")))
	entry, err := ks.GetPrivateKeyEntry(DefaultJKSAlias, []byte("changeit"))
	require.NoError(t, err, "keystore.jks has no %q entry", DefaultJKSAlias)
	jksKey, err := x509.ParsePKCS8PrivateKey(entry.PrivateKey)
	require.NoError(t, err, "keystore.jks key")
	require.True(t, PublicKeysEqual(jksKey, key), "keystore.jks holds another key")

	for _, profile := range []PKCS12Profile{PKCS12LegacyRC2, PKCS12LegacyDES} {
		d, err := SecretData(rand.Reader, key, chain, nil, OutputSpec{PKCS12: &PKCS12Spec{Password: "pw", Profile: profile}})
		require.NoError(t, err, "%s", profile)
		_, ok := d[SecretPKCS12Trust]
		require.False(t, ok, "%s: a truststore without a CA", profile)
		k, _, err := pkcs12.Decode(d[SecretPKCS12], "pw")
		require.NoError(t, err, "%s keystore", profile)
		require.True(t, PublicKeysEqual(k, key), "%s keystore holds another key", profile)
	}
}

func TestSecretDataRejects(t *testing.T) {
	ca := newTestCA(t)
	key := mustKey(t, KeySpec{Algorithm: AlgorithmECDSA})
	other := mustKey(t, KeySpec{Algorithm: AlgorithmECDSA})
	chain := pemCert(ca.issueDER(t, key.Public(), "a.example", []string{"a.example"}))
	tests := map[string]struct {
		key   crypto.Signer
		chain []byte
		out   OutputSpec
		want  string
	}{
		"an empty PKCS#12 password":         {key, chain, OutputSpec{PKCS12: &PKCS12Spec{}}, "pkcs12.password"},
		"an empty JKS password":             {key, chain, OutputSpec{JKS: &JKSSpec{}}, "jks.password"},
		"an unknown PKCS#12 profile":        {key, chain, OutputSpec{PKCS12: &PKCS12Spec{Password: "x", Profile: "Best"}}, `pkcs12.profile: "Best"`},
		"a key that is not the leaf's":      {other, chain, OutputSpec{}, "tls.crt: private key does not match"},
		"no certificate":                    {key, nil, OutputSpec{}, "tls.crt: no certificate"},
		"a chain that is not a certificate": {key, []byte("junk"), OutputSpec{}, "tls.crt: no PEM block"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := SecretData(rand.Reader, tc.key, tc.chain, nil, tc.out)
			require.ErrorContains(t, err, tc.want, "SecretData error")
		})
	}
}

func TestParseSecretDataTellsFieldsApart(t *testing.T) {
	ca := newTestCA(t)
	key := mustKey(t, KeySpec{Algorithm: AlgorithmECDSA})
	other := mustKey(t, KeySpec{Algorithm: AlgorithmECDSA})
	chain := append(pemCert(ca.issueDER(t, key.Public(), "a.example", []string{"a.example"})), ca.pem...)
	keyPEM, _ := EncodePrivateKey(key, EncodingPKCS1)
	otherPEM, _ := EncodePrivateKey(other, EncodingPKCS8)

	type want struct {
		leaf, key, matches bool
		certErr, keyErr    error
	}
	tests := map[string]struct {
		data map[string][]byte
		want want
	}{
		"a good secret parses":         {map[string][]byte{"tls.crt": chain, "tls.key": keyPEM}, want{leaf: true, key: true, matches: true}},
		"a key of another certificate": {map[string][]byte{"tls.crt": chain, "tls.key": otherPEM}, want{leaf: true, key: true}},
		"no data at all":               {nil, want{certErr: ErrMissing, keyErr: ErrMissing}},
		"no key":                       {map[string][]byte{"tls.crt": chain}, want{leaf: true, keyErr: ErrMissing}},
		"garbage key":                  {map[string][]byte{"tls.crt": chain, "tls.key": []byte("garbage")}, want{leaf: true, keyErr: ErrDecode}},
		"garbage certificate":          {map[string][]byte{"tls.crt": []byte("garbage"), "tls.key": keyPEM}, want{key: true, certErr: errAny}},
		"a key where the certificate goes": {
			map[string][]byte{"tls.crt": keyPEM, "tls.key": keyPEM}, want{key: true, certErr: errAny},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p, err := ParseSecretData(tc.data)
			require.NotNil(t, p, "nil ParsedSecret")
			require.Equal(t, tc.want.leaf, p.Leaf != nil, "leaf parsed")
			require.Equal(t, tc.want.key, p.Key != nil, "key parsed")
			require.Equal(t, tc.want.matches, p.KeyMatches, "KeyMatches")
			checkFieldErr(t, p.CertErr, "tls.crt", tc.want.certErr)
			checkFieldErr(t, p.KeyErr, "tls.key", tc.want.keyErr)
			require.Equal(t, tc.want.certErr == nil && tc.want.keyErr == nil, err == nil, "joined error %v", err)
		})
	}
	p, _ := ParseSecretData(map[string][]byte{"tls.crt": chain, "tls.key": keyPEM, "ca.crt": ca.pem})
	full, err := p.Chain()
	require.NoError(t, err, "Chain()")
	require.Len(t, full, 2, "Chain()")
	require.True(t, full[1].Equal(ca.cert), "Chain() ends with another CA")
	cas, err := p.CA()
	require.NoError(t, err, "CA()")
	require.Len(t, cas, 1, "CA()")
}

var errAny = errors.New("any error")

func checkFieldErr(t *testing.T, err error, field string, want error) {
	t.Helper()
	if want == nil {
		require.NoError(t, err, field)
		return
	}
	var fe *FieldError
	require.ErrorAs(t, err, &fe, "%s: not a FieldError", field)
	require.Equal(t, field, fe.Field, "FieldError for another field")
	if want != errAny {
		require.ErrorIs(t, err, want, field)
	}
}

// TestNoKeyMaterialInOutput proves that no exported type that holds a key
// or a password prints it, through String, %v, %+v, %#v or %s.
func TestNoKeyMaterialInOutput(t *testing.T) {
	ca := newTestCA(t)
	for _, spec := range []KeySpec{{}, {Algorithm: AlgorithmECDSA}, {Algorithm: AlgorithmEd25519}} {
		key := mustKey(t, spec)
		chain := pemCert(ca.issueDER(t, key.Public(), "a.example", []string{"a.example"}))
		keyPEM, _ := EncodePrivateKey(key, EncodingPKCS8)
		der, _ := x509.MarshalPKCS8PrivateKey(key)
		p, _ := ParseSecretData(map[string][]byte{"tls.crt": chain, "tls.key": keyPEM})
		secrets := secretStrings(key, der)
		values := map[string]any{
			"ParsedSecret":  p,
			"Password":      Password("hunter2-very-secret"),
			"PKCS12Spec":    PKCS12Spec{Password: "hunter2-very-secret"},
			"JKSSpec":       &JKSSpec{Password: "hunter2-very-secret"},
			"OutputSpec":    OutputSpec{PKCS12: &PKCS12Spec{Password: "hunter2-very-secret"}},
			"bad key error": mustErr(DecodePrivateKey(keyPEM[:len(keyPEM)/2])),
		}
		secrets = append(secrets, "hunter2-very-secret")
		for name, v := range values {
			for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
				out := fmt.Sprintf(verb, v)
				if s, ok := v.(fmt.Stringer); ok {
					out += s.String()
				}
				for _, secret := range secrets {
					require.NotContains(t, out, secret, "%s %s prints key material or a password", spec.Algorithm, name+" "+verb)
				}
			}
		}
	}
}

func mustErr(_ any, err error) error { return err }

// secretStrings returns textual forms of a private key's secret part that
// must never appear in output.
func secretStrings(key crypto.Signer, der []byte) []string {
	var out []string
	switch k := key.(type) {
	case *rsa.PrivateKey:
		out = append(out, k.D.String(), k.D.Text(16), k.Primes[0].String())
	case *ecdsa.PrivateKey:
		b, _ := k.Bytes()
		out = append(out, new(big.Int).SetBytes(b).String(), fmt.Sprintf("%x", b))
	case ed25519.PrivateKey:
		out = append(out, fmt.Sprintf("%x", k.Seed()), fmt.Sprint([]byte(k.Seed())))
	}
	out = append(out, fmt.Sprintf("%x", der[len(der)-16:]))
	return out
}
