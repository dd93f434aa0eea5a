package localca_test

import (
	"crypto/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/localca"
	"github.com/certlife/certlife/keys"
)

// BenchmarkIssue signs an ECDSA leaf under a root, and under a CA with
// name constraints, which checks every name against them as crypto/x509
// does (a verification of the signed certificate).
func BenchmarkIssue(b *testing.B) {
	root, err := localca.NewRoot(rand.Reader, "root", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, now.Add(-time.Hour), 365*24*time.Hour)
	require.NoError(b, err)
	nc := &keys.NameConstraints{Critical: true, Permitted: &keys.NameConstraintItem{DNSDomains: []string{"corp.example"}, IPRanges: []string{"10.0.0.0/8"}}}
	constrained, _ := constrainedCA(b, root, nc)
	key, err := keys.Generate(rand.Reader, keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
	require.NoError(b, err)
	csr, err := keys.BuildCSR(rand.Reader, keys.RequestTemplate{DNSNames: []string{"app.corp.example", "www.corp.example"}, IPAddresses: []string{"10.1.2.3"}}, key)
	require.NoError(b, err)
	for name, ca := range map[string]*localca.CA{"root": root, "name constraints": constrained} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := &certificate.CertificateRequest{ObjectMeta: certificate.ObjectMeta{Name: "web-1"}, Spec: certificate.RequestSpec{Request: csr}}
				if err := ca.Issue(rand.Reader, r, now); err != nil || !certificate.Answered(r) || len(r.Status.Certificate) == 0 {
					b.Fatalf("not issued: %v %+v", err, r.Status.Conditions)
				}
			}
		})
	}
}
