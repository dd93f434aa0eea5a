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

	"github.com/stretchr/testify/require"
)

func newCSR(t *testing.T) (*x509.CertificateRequest, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	return csrFor(t, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "a.example"}, DNSNames: []string{"a.example", "b.example"},
	}, key), key
}

func TestSignChainsToRootAndCertifiesTheRequestKey(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ca, err := New(rand.Reader, "test root", now.Add(-time.Hour))
	require.NoError(t, err)
	csr, key := newCSR(t)
	out, err := ca.Sign(rand.Reader, csr, Options{NotBefore: now, NotAfter: now.Add(90 * 24 * time.Hour)})
	require.NoError(t, err)
	block, _ := pem.Decode(out)
	leaf, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	_, err = leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "b.example", CurrentTime: now.Add(time.Hour)})
	require.NoError(t, err, "leaf does not verify against the root")
	require.True(t, key.PublicKey.Equal(leaf.PublicKey), "leaf does not certify the request's key")
}

func TestSignFaults(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ca, err := New(rand.Reader, "test root", now)
	require.NoError(t, err)
	csr, key := newCSR(t)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	out, err := ca.Sign(rand.Reader, csr, Options{NotBefore: now, NotAfter: now.Add(time.Hour), PublicKey: other.Public()})
	require.NoError(t, err)
	block, _ := pem.Decode(out)
	leaf, _ := x509.ParseCertificate(block.Bytes)
	require.False(t, key.PublicKey.Equal(leaf.PublicKey), "the wrong-key fault certified the request's key")
	require.True(t, other.PublicKey.Equal(leaf.PublicKey), "the wrong-key fault did not certify the other key")
	_, err = ca.Sign(rand.Reader, csr, Options{NotBefore: now, NotAfter: now})
	require.Error(t, err, "an empty validity was signed")
	_, err = ca.Sign(rand.Reader, nil, Options{NotBefore: now, NotAfter: now.Add(time.Hour)})
	require.Error(t, err, "a nil request was signed")
	_, err = New(rand.Reader, "", now)
	require.Error(t, err, "a root with no name was made")
}

func TestEd25519RootAndTrustedRequests(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ca, err := NewEd25519(rand.Reader, "ed root", now.Add(-time.Hour))
	require.NoError(t, err)
	csr, _ := newCSR(t)
	out, err := ca.Sign(rand.Reader, csr, Options{NotBefore: now, NotAfter: now.Add(time.Hour), TrustRequest: true})
	require.NoError(t, err)
	block, _ := pem.Decode(out)
	leaf, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	_, err = leaf.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, DNSName: "a.example"})
	require.NoError(t, err, "an Ed25519 root's leaf does not verify")
	// Without TrustRequest a tampered request is refused.
	csr.Signature[0] ^= 0xff
	_, err = ca.Sign(rand.Reader, csr, Options{NotBefore: now, NotAfter: now.Add(time.Hour)})
	require.Error(t, err, "a request with a bad signature was signed")
}
