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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/pavlo-v-chernykh/keystore-go/v4"
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
	if err != nil {
		t.Fatal(err)
	}
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
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), tc.wantField+": "+tc.wantValue) {
				t.Fatalf("Validate() = %v, want ErrInvalidSpec naming %s: %s", err, tc.wantField, tc.wantValue)
			}
		})
	}
}

func TestWithDefaults(t *testing.T) {
	got := KeySpec{}.WithDefaults()
	want := KeySpec{Algorithm: AlgorithmRSA, Size: 2048, Encoding: EncodingPKCS1, RotationPolicy: RotationAlways}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("WithDefaults (-want +got):\n%s", diff)
	}
	if got := (KeySpec{Algorithm: AlgorithmEd25519, Size: 99}).WithDefaults().Size; got != 0 {
		t.Fatalf("Ed25519 size = %d, want 0", got)
	}
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
		if m := SpecMismatches(key.Public(), spec); m != nil {
			t.Fatalf("generated key does not meet %+v: %v", spec, m)
		}
		for _, enc := range []Encoding{EncodingPKCS1, EncodingPKCS8} {
			t.Run(fmt.Sprintf("%s-%d-%s", spec.Algorithm, spec.Size, enc), func(t *testing.T) {
				pemBytes, err := EncodePrivateKey(key, enc)
				if err != nil {
					t.Fatal(err)
				}
				block, _ := pem.Decode(pemBytes)
				if block.Type != wantType[spec.Algorithm][enc] {
					t.Fatalf("PEM type %q, want %q", block.Type, wantType[spec.Algorithm][enc])
				}
				back, err := DecodePrivateKey(pemBytes)
				if err != nil {
					t.Fatal(err)
				}
				if !PublicKeysEqual(back.Public(), key.Public()) {
					t.Fatal("decoded key differs from the encoded one")
				}
			})
		}
	}
}

func TestDecodeErrorsNameNoBytes(t *testing.T) {
	tests := map[string][]byte{
		"no PEM at all":         []byte("hello"),
		"a certificate block":   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1, 2, 3}}),
		"a corrupt PKCS#1 body": pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: []byte("SECRETSECRET")}),
		"a corrupt PKCS#8 body": pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("SECRETSECRET")}),
	}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := DecodePrivateKey(in)
			if !errors.Is(err, ErrDecode) {
				t.Fatalf("err = %v, want ErrDecode", err)
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Fatalf("error quotes the input: %v", err)
			}
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
			if got := PublicKeysEqual(tc.a, tc.b); got != tc.want {
				t.Fatalf("PublicKeysEqual = %v, want %v", got, tc.want)
			}
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
	if err != nil {
		t.Fatal(err)
	}
	csr, err := ParseCSR(csrPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !PublicKeysEqual(csr.PublicKey, key) {
		t.Fatal("the request does not carry the key")
	}
	if d := CompareCSR(csr, tmpl); d != nil {
		t.Fatalf("a request differs from its own template: %v", d)
	}
	reordered := tmpl
	reordered.DNSNames = []string{"b.example", "a.example"}
	reordered.IPAddresses = []string{"::1", "10.0.0.1"}
	if d := CompareCSR(csr, reordered); d != nil {
		t.Fatalf("name order matters: %v", d)
	}

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
		{Field: "isCA", Want: "true", Have: "false"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("CompareCSR reports every difference (-want +got):\n%s", diff)
	}
	if s := got[2].String(); s != "dnsNames: want [a.example], have [a.example b.example]" {
		t.Fatalf("Difference.String() = %q", s)
	}
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
			if !errors.Is(err, ErrTemplate) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("BuildCSR error = %v, want ErrTemplate naming %s", err, tc.want)
			}
		})
	}
	if _, err := BuildCSR(rand.Reader, RequestTemplate{CommonName: "a"}, nil); err == nil {
		t.Fatal("BuildCSR signed with no key")
	}
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
	if d := CompareCertificateNames(nil, RequestTemplate{}); len(d) != 1 {
		t.Fatalf("nil certificate: %v", d)
	}
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
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

func (ca *testCA) issue(t testing.TB, pub crypto.PublicKey, cn string, dns []string) *x509.Certificate {
	t.Helper()
	der := ca.issueDER(t, pub, cn, dns)
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (ca *testCA) issueDER(t testing.TB, pub crypto.PublicKey, cn string, dns []string) []byte {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn}, DNSNames: dns,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, pub, ca.key)
	if err != nil {
		t.Fatal(err)
	}
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
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for k := range data {
		names = append(names, k)
	}
	want := []string{"ca.crt", "key.der", "keystore.jks", "keystore.p12", "tls-combined.pem", "tls.crt", "tls.key", "truststore.jks", "truststore.p12"}
	if diff := cmp.Diff(want, sorted(names)); diff != "" {
		t.Fatalf("data keys (-want +got):\n%s", diff)
	}
	if block, _ := pem.Decode(data[SecretPrivateKey]); block.Type != "PRIVATE KEY" {
		t.Fatalf("tls.key is %q, want PKCS#8", block.Type)
	}
	if !bytes.HasPrefix(data[SecretCombinedPEM], data[SecretPrivateKey]) || !bytes.HasSuffix(data[SecretCombinedPEM], chain) {
		t.Fatal("tls-combined.pem is not key then chain")
	}
	if k, err := x509.ParsePKCS8PrivateKey(data[SecretKeyDER]); err != nil || !PublicKeysEqual(k, key) {
		t.Fatalf("key.der: %v", err)
	}
	p12Key, p12Leaf, _, err := pkcs12.DecodeChain(data[SecretPKCS12], "changeit")
	if err != nil || !PublicKeysEqual(p12Key, key) || !PublicKeysEqual(p12Leaf.PublicKey, key) {
		t.Fatalf("keystore.p12 does not round-trip: %v", err)
	}
	if certs, err := pkcs12.DecodeTrustStore(data[SecretPKCS12Trust], "changeit"); err != nil || len(certs) != 1 || !certs[0].Equal(ca.cert) {
		t.Fatalf("truststore.p12: %v", err)
	}
	ks := keystore.New()
	if err := ks.Load(bytes.NewReader(data[SecretJKS]), []byte("changeit")); err != nil {
		t.Fatal(err)
	}
	entry, err := ks.GetPrivateKeyEntry(DefaultJKSAlias, []byte("changeit"))
	if err != nil {
		t.Fatalf("keystore.jks has no %q entry: %v", DefaultJKSAlias, err)
	}
	if k, err := x509.ParsePKCS8PrivateKey(entry.PrivateKey); err != nil || !PublicKeysEqual(k, key) {
		t.Fatalf("keystore.jks key: %v", err)
	}

	for _, profile := range []PKCS12Profile{PKCS12LegacyRC2, PKCS12LegacyDES} {
		d, err := SecretData(rand.Reader, key, chain, nil, OutputSpec{PKCS12: &PKCS12Spec{Password: "pw", Profile: profile}})
		if err != nil {
			t.Fatalf("%s: %v", profile, err)
		}
		if _, ok := d[SecretPKCS12Trust]; ok {
			t.Fatalf("%s: a truststore without a CA", profile)
		}
		if k, _, err := pkcs12.Decode(d[SecretPKCS12], "pw"); err != nil || !PublicKeysEqual(k, key) {
			t.Fatalf("%s keystore: %v", profile, err)
		}
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
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("SecretData error = %v, want one naming %q", err, tc.want)
			}
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
			if p == nil {
				t.Fatal("nil ParsedSecret")
			}
			if (p.Leaf != nil) != tc.want.leaf || (p.Key != nil) != tc.want.key || p.KeyMatches != tc.want.matches {
				t.Fatalf("got leaf %v key %v matches %v, want %+v", p.Leaf != nil, p.Key != nil, p.KeyMatches, tc.want)
			}
			checkFieldErr(t, p.CertErr, "tls.crt", tc.want.certErr)
			checkFieldErr(t, p.KeyErr, "tls.key", tc.want.keyErr)
			if (err == nil) != (tc.want.certErr == nil && tc.want.keyErr == nil) {
				t.Fatalf("joined error %v", err)
			}
		})
	}
	p, _ := ParseSecretData(map[string][]byte{"tls.crt": chain, "tls.key": keyPEM, "ca.crt": ca.pem})
	full, err := p.Chain()
	if err != nil || len(full) != 2 || !full[1].Equal(ca.cert) {
		t.Fatalf("Chain() = %d certificates, %v", len(full), err)
	}
	cas, err := p.CA()
	if err != nil || len(cas) != 1 {
		t.Fatalf("CA() = %v, %v", cas, err)
	}
}

var errAny = errors.New("any error")

func checkFieldErr(t *testing.T, err error, field string, want error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("%s: unexpected error %v", field, err)
		}
		return
	}
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != field {
		t.Fatalf("%s: error %v is not a FieldError for %s", field, err, field)
	}
	if want != errAny && !errors.Is(err, want) {
		t.Fatalf("%s: error %v, want %v", field, err, want)
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
					if strings.Contains(out, secret) {
						t.Fatalf("%s %s prints key material or a password: %s", spec.Algorithm, name+" "+verb, out)
					}
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

func TestDataHash(t *testing.T) {
	a := DataHash(map[string][]byte{"tls.crt": []byte("x"), "tls.key": []byte("y")})
	b := DataHash(map[string][]byte{"tls.key": []byte("y"), "tls.crt": []byte("x")})
	c := DataHash(map[string][]byte{"tls.crt": []byte("xt"), "ls.key": []byte("y")})
	if a != b || a == c {
		t.Fatal("DataHash must depend on content, not on map order or key boundaries")
	}
}

func TestCSRPublicKeyInfo(t *testing.T) {
	key := mustKey(t, KeySpec{Algorithm: AlgorithmECDSA})
	csrPEM, err := BuildCSR(rand.Reader, RequestTemplate{CommonName: "a"}, key)
	if err != nil {
		t.Fatal(err)
	}
	spki, ok := CSRPublicKeyInfo(csrPEM)
	want, _ := x509.MarshalPKIXPublicKey(key.Public())
	if !ok || !bytes.Equal(spki, want) {
		t.Fatal("CSRPublicKeyInfo does not return the request's SubjectPublicKeyInfo")
	}
	for _, bad := range [][]byte{nil, []byte("junk"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: []byte{0x30, 0x03, 0x02, 0x01}})} {
		if _, ok := CSRPublicKeyInfo(bad); ok {
			t.Fatalf("CSRPublicKeyInfo(%q) reported ok", bad)
		}
	}
}

func TestKeyUsageOfMatchesTable(t *testing.T) {
	for u, want := range keyUsages {
		if got, ok := keyUsageOf(u); !ok || got != want {
			t.Errorf("keyUsageOf(%q) = %v, %v; the table says %v", u, got, ok, want)
		}
	}
	for u := range extKeyUsages {
		if _, ok := keyUsageOf(u); ok {
			t.Errorf("keyUsageOf(%q) claims an extended usage", u)
		}
	}
}

// A known key is used only when it is the secret's key; any other is
// ignored and tls.key decoded, so the parse is the same either way.
func TestParseSecretDataKnownKey(t *testing.T) {
	for _, spec := range []KeySpec{{Algorithm: AlgorithmECDSA}, {Algorithm: AlgorithmEd25519}} {
		for _, enc := range []Encoding{EncodingPKCS1, EncodingPKCS8} {
			key := mustKey(t, spec)
			other := mustKey(t, spec)
			keyPEM, _ := EncodePrivateKey(key, enc)
			data := map[string][]byte{SecretPrivateKey: keyPEM}
			p, _ := ParseSecretDataKnownKey(data, key)
			same := func(a, b crypto.Signer) bool { return fmt.Sprintf("%p", a) == fmt.Sprintf("%p", b) } // the same object
			if !same(p.Key, key) {
				t.Fatalf("%v %s: the known key was not used", spec.Algorithm, enc)
			}
			p, _ = ParseSecretDataKnownKey(data, other)
			if same(p.Key, other) || !PublicKeysEqual(p.Key.Public(), key.Public()) {
				t.Fatalf("%v %s: another key was taken for the secret's", spec.Algorithm, enc)
			}
		}
	}
}
