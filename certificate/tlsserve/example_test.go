package tlsserve_test

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"fmt"
	"log/slog"
	"time"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/localca"
	"github.com/certlife/certlife/certificate/tlsserve"
	"github.com/certlife/certlife/keys"
)

// A server over a store that holds one certificate, issued here by a
// local CA (a host's loop writes it in a real service). Its TLSConfig
// goes to an http.Server; each handshake gets the certificate for the
// name it asks for.
func Example() {
	ctx := context.Background()
	store := host.NewMemoryStore(nil)
	_, _ = store.Certificates().Create(ctx, &certificate.Certificate{
		ObjectMeta: certificate.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: certificate.Spec{SecretName: "web-tls", DNSNames: []string{"web.example", "*.web.example"},
			IssuerRef: certificate.IssuerRef{Name: "internal-ca"}},
	})
	// What the loop would write: the certificate and its key.
	ca, _ := localca.NewRoot(rand.Reader, "Example CA", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, time.Now(), 24*time.Hour)
	key, _ := keys.Generate(rand.Reader, keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
	csr, _ := keys.BuildCSR(rand.Reader, keys.RequestTemplate{DNSNames: []string{"web.example", "*.web.example"}}, key)
	req := &certificate.CertificateRequest{ObjectMeta: certificate.ObjectMeta{Namespace: "default", Name: "web-1"},
		Spec: certificate.RequestSpec{Request: csr}}
	_ = ca.Issue(rand.Reader, req, time.Now())
	data, _ := keys.SecretData(rand.Reader, key, req.Status.Certificate, req.Status.CA, keys.OutputSpec{})
	_, _ = store.Secrets().Create(ctx, &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Namespace: "default", Name: "web-tls"}, Data: data})

	srv, err := tlsserve.New(store, tlsserve.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	cfg := srv.TLSConfig() // for http.Server{TLSConfig: cfg}.ServeTLS(ln, "", "")
	fmt.Println(cfg.NextProtos)
	for _, name := range []string{"web.example", "api.web.example", "other.example"} {
		c, err := srv.GetCertificate(&tls.ClientHelloInfo{ServerName: name})
		if err != nil {
			fmt.Println(name, "→ no certificate")
			continue
		}
		fmt.Println(name, "→", c.Leaf.DNSNames)
	}
	// Output:
	// [h2 http/1.1]
	// web.example → [web.example *.web.example]
	// api.web.example → [web.example *.web.example]
	// other.example → no certificate
}
