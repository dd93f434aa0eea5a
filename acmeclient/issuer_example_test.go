package acmeclient_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/acmeclient/acmetest"
	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/keys"
)

// An ACME issuer answers a certificate request: the host steps it, and
// steps it again when the result says, until it is answered. Pebble, in
// process, stands in for the CA; its Solvers answer HTTP-01 and DNS-01
// where it looks.
func ExampleIssuer() {
	srv, err := acmetest.Start(acmetest.Options{})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	accountKey, err := keys.Generate(rand.Reader, keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
	if err != nil {
		panic(err)
	}
	client, err := acmeclient.New(srv.ClientConfig(accountKey))
	if err != nil {
		panic(err)
	}
	issuer, err := acmeclient.NewIssuer(acmeclient.IssuerConfig{
		Client:  client,
		Account: acmeclient.AccountOptions{AgreeToTerms: true},
		Store:   acmeclient.NewMemoryStore(), // a host keeps the states where they survive a restart
		Solvers: srv.Solvers(),               // a host: an HTTP01Handler on port 80, or its DNS provider
	})
	if err != nil {
		panic(err)
	}

	// A request as the certificate stages ask for it, with its CSR.
	key, _ := keys.Generate(rand.Reader, keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
	csr, _ := keys.BuildCSR(rand.Reader, keys.RequestTemplate{DNSNames: []string{"web.example"}}, key)
	req := &certificate.CertificateRequest{
		ObjectMeta: certificate.ObjectMeta{Name: "web-1", Namespace: "default"},
		Spec:       certificate.RequestSpec{Request: csr, IssuerRef: certificate.IssuerRef{Name: "letsencrypt"}},
	}

	// The host loop: step, write the request back when it changed, and
	// step again at RequeueAt (a workqueue's AddAfter; here, a sleep).
	ctx := context.Background()
	for {
		res, err := issuer.Step(ctx, req)
		if err != nil {
			panic(err) // the store failed; a host requeues
		}
		if res.Answered {
			break
		}
		time.Sleep(time.Until(res.RequeueAt))
	}
	ready := req.Condition(certificate.RequestConditionReady)
	fmt.Println(ready.Type, ready.Status, ready.Reason, certificate.Answered(req))
	// Output: Ready True Issued true
}
