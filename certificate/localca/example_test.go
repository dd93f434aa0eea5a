package localca_test

import (
	"crypto/rand"
	"fmt"
	"time"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/localca"
	"github.com/certlife/certlife/keys"
)

// An internal CA answers a request the way the certificate stages read it.
func Example() {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ca, err := localca.NewRoot(rand.Reader, "cluster CA", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, now, 10*365*24*time.Hour)
	if err != nil {
		panic(err)
	}
	// What the requestmanager asks a host to create, with its CSR.
	key, _ := keys.Generate(rand.Reader, keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
	csr, _ := keys.BuildCSR(rand.Reader, keys.RequestTemplate{DNSNames: []string{"webhook.system.svc"}}, key)
	req := &certificate.CertificateRequest{
		ObjectMeta: certificate.ObjectMeta{Name: "webhook-1"},
		Spec:       certificate.RequestSpec{Request: csr, Duration: &certificate.Duration{Duration: 30 * 24 * time.Hour}},
	}
	if err := ca.Issue(rand.Reader, req, now); err != nil {
		panic(err)
	}
	ready := req.Condition(certificate.RequestConditionReady)
	fmt.Println(ready.Type, ready.Status, ready.Reason, certificate.Answered(req))
	// Output: Ready True Issued true
}
