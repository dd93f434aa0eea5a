package keys

import (
	"crypto/rand"
	"crypto/x509"
	"testing"
)

func benchSecret(b *testing.B) (map[string][]byte, []byte) {
	ca := newTestCA(b)
	key := mustKey(b, KeySpec{Algorithm: AlgorithmECDSA})
	der := ca.issueDER(b, key.Public(), "a.example", []string{"a.example", "www.a.example"})
	keyPEM, _ := EncodePrivateKey(key, EncodingPKCS1)
	return map[string][]byte{"tls.crt": pemCert(der), "tls.key": keyPEM, "ca.crt": ca.pem}, der
}

// BenchmarkParseCertificateBaseline is the yardstick of the issue's goal:
// one plain x509.ParseCertificate of the same ECDSA P-256 leaf.
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
// and the key, and checks that the key matches. Goal: at most 4.5× the
// baseline.
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
