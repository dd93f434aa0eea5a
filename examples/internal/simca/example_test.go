package simca_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"time"

	"github.com/certlife/certlife/examples/internal/simca"
)

func ExampleCA_Sign() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ca, _ := simca.New(rand.Reader, "example root", now)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "app.example"}, DNSNames: []string{"app.example"},
	}, key)
	csr, _ := x509.ParseCertificateRequest(der)
	chain, err := ca.Sign(rand.Reader, csr, simca.Options{NotBefore: now, NotAfter: now.Add(24 * time.Hour)})
	fmt.Println(err == nil, len(chain) > 0)
	// Output: true true
}
