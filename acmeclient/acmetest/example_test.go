package acmetest_test

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"time"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/acmeclient/acmetest"
	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/keys"
)

// A host's test against a real ACME server: Pebble on loopback, a client
// configured for it, its HTTP-01 and DNS-01 solvers, and its roots to
// verify what it issued.
func Example() {
	srv, err := acmetest.Start(acmetest.Options{})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	accountKey, _ := keys.Generate(rand.Reader, keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
	client, err := acmeclient.New(srv.ClientConfig(accountKey))
	if err != nil {
		panic(err)
	}
	issuer, err := acmeclient.NewIssuer(acmeclient.IssuerConfig{Client: client, Account: acmeclient.AccountOptions{AgreeToTerms: true},
		Store: acmeclient.NewMemoryStore(), Solvers: srv.Solvers()})
	if err != nil {
		panic(err)
	}

	// The host under test would make this request; here, by hand.
	key, _ := keys.Generate(rand.Reader, keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
	csr, _ := keys.BuildCSR(rand.Reader, keys.RequestTemplate{DNSNames: []string{"*.apps.example", "apps.example"}}, key)
	req := &certificate.CertificateRequest{ObjectMeta: certificate.ObjectMeta{Name: "apps-1"}, Spec: certificate.RequestSpec{Request: csr}}
	for !certificate.Answered(req) {
		res, err := issuer.Step(context.Background(), req)
		if err != nil {
			panic(err)
		}
		time.Sleep(time.Until(res.RequeueAt))
	}

	// The chain verifies against the server's roots.
	block, rest := pem.Decode(req.Status.Certificate)
	leaf, _ := x509.ParseCertificate(block.Bytes)
	inter := x509.NewCertPool()
	inter.AppendCertsFromPEM(rest)
	_, err = leaf.Verify(x509.VerifyOptions{DNSName: "x.apps.example", Roots: srv.RootPool(), Intermediates: inter})
	fmt.Println(leaf.DNSNames, err)
	// Output: [*.apps.example apps.example] <nil>
}
