package keys

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"testing"
	"time"
)

func mustOID(b *testing.B, s string) x509.OID {
	oid, err := x509.ParseOID(s)
	if err != nil {
		b.Fatal(err)
	}
	return oid
}

// benchSecret builds the benchmark secret: an ECDSA P-256 leaf
// shaped like a public CA's (key usage, EKU, basic constraints, SKI/AKI,
// two DNS names, AIA, CRL distribution point, a policy), its CA, and the key.
func benchSecret(b *testing.B) (map[string][]byte, []byte) {
	ca := newTestCA(b)
	key := mustKey(b, KeySpec{Algorithm: AlgorithmECDSA})
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(0x0312_3456_789a_bcde),
		Subject:               pkix.Name{CommonName: "a.example"},
		DNSNames:              []string{"a.example", "www.a.example"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(90 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		SubjectKeyId:          []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20},
		OCSPServer:            []string{"http://o.ca.example"},
		IssuingCertificateURL: []string{"http://i.ca.example/"},
		CRLDistributionPoints: []string{"http://c.ca.example/1.crl"},
		Policies:              []x509.OID{mustOID(b, "2.23.140.1.2.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		b.Fatal(err)
	}
	keyPEM, _ := EncodePrivateKey(key, EncodingPKCS1)
	return map[string][]byte{"tls.crt": pemCert(der), "tls.key": keyPEM, "ca.crt": ca.pem}, der
}

// BenchmarkParseCertificateBaseline is the yardstick: one plain
// x509.ParseCertificate of the same ECDSA P-256 leaf.
func BenchmarkParseCertificateBaseline(b *testing.B) {
	_, der := benchSecret(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := x509.ParseCertificate(der); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseSecretData parses a secret with an ECDSA P-256 leaf, its CA
// and the key, and checks that the key matches.
func BenchmarkParseSecretData(b *testing.B) {
	data, _ := benchSecret(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p, err := ParseSecretData(data)
		if err != nil || !p.KeyMatches {
			b.Fatal(err)
		}
	}
}

func BenchmarkCompareCSR(b *testing.B) {
	key := mustKey(b, KeySpec{Algorithm: AlgorithmECDSA})
	tmpl := RequestTemplate{CommonName: "a.example", DNSNames: []string{"a.example", "www.a.example"}}
	pemBytes, _ := BuildCSR(rand.Reader, tmpl, key)
	csr, _ := ParseCSR(pemBytes)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if d := CompareCSR(csr, tmpl); d != nil {
			b.Fatal(d)
		}
	}
}

// BenchmarkCompareCSRCertManagerFields compares a request with a template
// that sets every field cert-manager users write beside the names: a
// literal subject, other names and a CA's name constraints, each read back
// from the request on every call.
func BenchmarkCompareCSRCertManagerFields(b *testing.B) {
	key := mustKey(b, KeySpec{Algorithm: AlgorithmECDSA})
	tmpl := RequestTemplate{LiteralSubject: "CN=a.example,OU=web,DC=corp", DNSNames: []string{"a.example", "www.a.example"},
		OtherNames: []OtherName{{OID: "1.3.6.1.4.1.311.20.2.3", UTF8Value: "a@corp.example"}}, IsCA: true,
		NameConstraints: &NameConstraints{Permitted: &NameConstraintItem{DNSDomains: []string{"corp.example"}, IPRanges: []string{"10.0.0.0/8"}}}}
	pemBytes, err := BuildCSR(rand.Reader, tmpl, key)
	if err != nil {
		b.Fatal(err)
	}
	csr, _ := ParseCSR(pemBytes)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if d := CompareCSR(csr, tmpl); d != nil {
			b.Fatal(d)
		}
	}
}

// BenchmarkDataMismatches checks a secret that is in line: with the default
// outputs, with the outputs compared byte for byte, and with PKCS#12 and
// JKS keystores (each opened with its password).
func BenchmarkDataMismatches(b *testing.B) {
	f := newDriftFixture(b)
	plain := f.out
	plain.PKCS12, plain.JKS = nil, nil
	plainData := f.write(plain)
	defaults := f.write(OutputSpec{})
	for name, c := range map[string]struct {
		data map[string][]byte
		out  OutputSpec
	}{"defaults": {defaults, OutputSpec{}}, "pkcs8+combined+der": {plainData, plain}, "pkcs12+jks": {f.data, f.out}} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if m := DataMismatches(c.data, f.parsed, c.out); m != nil {
					b.Fatal(m)
				}
			}
		})
	}
}

// BenchmarkParseCSR reads the request of a healthy certificate (common
// name, two DNS names, the default usages) with ParseCSR, for each key
// type: the PEM layer, x509.ParseCertificateRequest and the signature
// check.
func BenchmarkParseCSR(b *testing.B) {
	tmpl := RequestTemplate{CommonName: "a.example", DNSNames: []string{"a.example", "www.a.example"}}
	for _, k := range []struct {
		name string
		spec KeySpec
	}{
		{"ecdsa-p256", KeySpec{Algorithm: AlgorithmECDSA}},
		{"rsa-2048", KeySpec{Algorithm: AlgorithmRSA}},
		{"ed25519", KeySpec{Algorithm: AlgorithmEd25519}},
	} {
		pemBytes, err := BuildCSR(rand.Reader, tmpl, mustKey(b, k.spec))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(k.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseCSR(pemBytes); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodePrivateKey reads an ECDSA P-256 key in SEC 1 and in
// PKCS#8. Most of it is deriving the public key (a scalar
// multiplication).
func BenchmarkDecodePrivateKey(b *testing.B) {
	key := mustKey(b, KeySpec{Algorithm: AlgorithmECDSA})
	for _, enc := range []struct {
		name string
		enc  Encoding
	}{{"sec1", EncodingPKCS1}, {"pkcs8", EncodingPKCS8}} {
		pemBytes, err := EncodePrivateKey(key, enc.enc)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(enc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := DecodePrivateKey(pemBytes); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTemplateValidate is what every decision adds to check that the
// host can build a spec's CSR (certificate.Validate).
func BenchmarkTemplateValidate(b *testing.B) {
	tmpl := RequestTemplate{CommonName: "web.example", DNSNames: []string{"web.example", "www.web.example"},
		URIs: []string{"spiffe://cluster.local/ns/web/sa/app"}, EmailAddresses: []string{"ops@web.example"},
		Subject: &Subject{Organizations: []string{"Example"}}}
	b.ReportAllocs()
	for b.Loop() {
		if err := tmpl.Validate(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckTemplate is what a decision that asks for a request adds:
// a trial build, signed with Ed25519.
func BenchmarkCheckTemplate(b *testing.B) {
	tmpl := RequestTemplate{CommonName: "web.example", DNSNames: []string{"web.example", "www.web.example"}}
	b.ReportAllocs()
	for b.Loop() {
		if err := CheckTemplate(tmpl); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIssuedSecret is what a host does with a certificate its request
// was just answered with: parse the chain (the issuing decision), build the
// secret's data (SecretData), and read the secret back on its next pass
// (ParseSecretData). "plain" parses each time; "cache" goes through a new
// ParseCache each iteration, as a host meets each issued certificate once.
func BenchmarkIssuedSecret(b *testing.B) {
	data, _ := benchSecret(b)
	key, err := DecodePrivateKey(data[SecretPrivateKey])
	if err != nil {
		b.Fatal(err)
	}
	chain, ca := data[SecretCertificate], data[SecretCA]
	for _, cached := range []bool{false, true} {
		name := "plain"
		if cached {
			name = "cache"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var c *ParseCache
				if cached {
					c = NewParseCache(0)
				}
				if _, err := c.ParseCertificates(chain); err != nil {
					b.Fatal(err)
				}
				out, err := c.SecretData(nil, key, chain, ca, OutputSpec{})
				if err != nil {
					b.Fatal(err)
				}
				p, err := c.ParseSecretData(out)
				if err != nil || !p.KeyMatches {
					b.Fatal(err)
				}
			}
		})
	}
}
