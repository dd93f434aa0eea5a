package simca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"testing"
	"time"
)

func newCSR(t *testing.T) (*x509.CertificateRequest, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return csrFor(t, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "a.example"}, DNSNames: []string{"a.example", "b.example"},
	}, key), key
}

func TestSignChainsToRootAndCertifiesTheRequestKey(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ca, err := New(rand.Reader, "test root", now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	csr, key := newCSR(t)
	out, err := ca.Sign(rand.Reader, csr, Options{NotBefore: now, NotAfter: now.Add(90 * 24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(out)
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "b.example", CurrentTime: now.Add(time.Hour)}); err != nil {
		t.Fatalf("leaf does not verify against the root: %v", err)
	}
	if !key.PublicKey.Equal(leaf.PublicKey) {
		t.Fatal("leaf does not certify the request's key")
	}
}

func TestSignFaults(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ca, err := New(rand.Reader, "test root", now)
	if err != nil {
		t.Fatal(err)
	}
	csr, key := newCSR(t)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	out, err := ca.Sign(rand.Reader, csr, Options{NotBefore: now, NotAfter: now.Add(time.Hour), PublicKey: other.Public()})
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(out)
	leaf, _ := x509.ParseCertificate(block.Bytes)
	if key.PublicKey.Equal(leaf.PublicKey) || !other.PublicKey.Equal(leaf.PublicKey) {
		t.Fatal("the wrong-key fault did not certify the other key")
	}
	if _, err := ca.Sign(rand.Reader, csr, Options{NotBefore: now, NotAfter: now}); err == nil {
		t.Fatal("an empty validity was signed")
	}
	if _, err := ca.Sign(rand.Reader, nil, Options{NotBefore: now, NotAfter: now.Add(time.Hour)}); err == nil {
		t.Fatal("a nil request was signed")
	}
	if _, err := New(rand.Reader, "", now); err == nil {
		t.Fatal("a root with no name was made")
	}
}

func TestEd25519RootAndTrustedRequests(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ca, err := NewEd25519(rand.Reader, "ed root", now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	csr, _ := newCSR(t)
	out, err := ca.Sign(rand.Reader, csr, Options{NotBefore: now, NotAfter: now.Add(time.Hour), TrustRequest: true})
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(out)
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, DNSName: "a.example"}); err != nil {
		t.Fatalf("an Ed25519 root's leaf does not verify: %v", err)
	}
	// Without TrustRequest a tampered request is refused.
	csr.Signature[0] ^= 0xff
	if _, err := ca.Sign(rand.Reader, csr, Options{NotBefore: now, NotAfter: now.Add(time.Hour)}); err == nil {
		t.Fatal("a request with a bad signature was signed")
	}
}
