// Package localca is an issuer for certificates a host signs itself: from
// a CA key pair (a cluster's internal CA, webhook serving certificates) or
// self-signed with the request's own key. It answers CertificateRequests
// through the issuer contract of package certificate (SetIssued,
// SetInvalid, SetFailed), honouring the request's duration, isCA and
// usages.
//
// Signing needs randomness (serial numbers, ECDSA signatures), so it is
// an effect a host carries out, beside the decisions: for each request
// whose issuerRef names this CA and that is not Answered, call Issue (or
// SelfSign) and write the request's status back.
package localca

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"time"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/keys"
)

// CA signs requests with a CA certificate and its key.
type CA struct {
	cert    *x509.Certificate
	certPEM []byte
	key     crypto.Signer
}

// Errors of New and FromPEM, for errors.Is.
var (
	// ErrNotCA: the certificate is not a CA (basic constraints).
	ErrNotCA = errors.New("localca: the certificate is not a CA")
	// ErrKeyMismatch: the key is not the certificate's.
	ErrKeyMismatch = errors.New("localca: the key is not the CA certificate's")
)

// New returns a CA for a CA certificate and its private key.
func New(cert *x509.Certificate, key crypto.Signer) (*CA, error) {
	if cert == nil || key == nil {
		return nil, errors.New("localca: New needs a certificate and a key")
	}
	if !cert.IsCA || !cert.BasicConstraintsValid {
		return nil, fmt.Errorf("%w: %s", ErrNotCA, cert.Subject)
	}
	if !keys.PublicKeysEqual(cert.PublicKey, key.Public()) {
		return nil, ErrKeyMismatch
	}
	return &CA{cert: cert, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), key: key}, nil
}

// FromPEM returns a CA from a CA certificate and its key in PEM, as a
// Kubernetes TLS secret holds them (tls.crt, tls.key). Errors name the
// input and never quote the key.
func FromPEM(certPEM, keyPEM []byte) (*CA, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("localca: the CA certificate is not a PEM CERTIFICATE")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("localca: the CA certificate: %w", err)
	}
	key, err := keys.DecodePrivateKey(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("localca: the CA key: %w", err)
	}
	return New(cert, key)
}

// NewRoot makes a self-signed root CA with a new key of spec, valid from
// notBefore for validity: for tests, and for hosts that bootstrap their
// own internal CA.
func NewRoot(rnd io.Reader, commonName string, spec keys.KeySpec, notBefore time.Time, validity time.Duration) (*CA, error) {
	key, err := keys.Generate(rnd, spec)
	if err != nil {
		return nil, err
	}
	serial, err := serialNumber(rnd)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: commonName},
		NotBefore: notBefore, NotAfter: notBefore.Add(validity),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rnd, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("localca: making the root: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return New(cert, key)
}

// Certificate is the CA's certificate.
func (ca *CA) Certificate() *x509.Certificate { return ca.cert }

// CertificatePEM is the CA's certificate in PEM: what ca.crt holds.
func (ca *CA) CertificatePEM() []byte { return bytes.Clone(ca.certPEM) }

// KeyPEM is the CA's private key in PKCS#8 PEM, for a host that stores the
// CA it made with NewRoot.
func (ca *CA) KeyPEM() ([]byte, error) { return keys.EncodePrivateKey(ca.key, keys.EncodingPKCS8) }

// Issue answers r: it checks the CSR (it must parse and carry a valid
// signature) and what r asks (usages), and signs a certificate for the
// CSR's subject, names and key, valid from now for r's duration
// (certificate.DefaultDuration when unset) but never past the CA's own
// expiry, with r's usages and isCA. The chain is the leaf, followed by the
// CA certificate when the CA is not a root; ca.crt is the CA certificate.
//
// A request that cannot be signed as asked is answered invalid; a CA that
// has expired answers failed. Issue does nothing to a request already
// answered, and returns an error only when signing itself fails (rnd).
func (ca *CA) Issue(rnd io.Reader, r *certificate.CertificateRequest, now time.Time) error {
	return issue(rnd, r, now, ca.cert, ca.key, ca.chainSuffix(), ca.certPEM)
}

// SelfSign answers r with a certificate signed by the key of its own CSR:
// key must be that private key (the secret the request's
// certificate.AnnotationPrivateKeySecretName names holds it). The
// certificate is its own issuer; ca.crt is the certificate itself. A key
// that is not the CSR's is answered invalid.
func SelfSign(rnd io.Reader, r *certificate.CertificateRequest, key crypto.Signer, now time.Time) error {
	if certificate.Answered(r) {
		return nil
	}
	if key == nil {
		certificate.SetInvalid(r, "no private key to self-sign with", now)
		return nil
	}
	return issue(rnd, r, now, nil, key, nil, nil)
}

func (ca *CA) chainSuffix() []byte {
	if bytes.Equal(ca.cert.RawIssuer, ca.cert.RawSubject) && ca.cert.CheckSignatureFrom(ca.cert) == nil {
		return nil // a root: clients hold it already
	}
	return ca.certPEM
}

// issue signs r with parent and key (parent nil: self-signed).
func issue(rnd io.Reader, r *certificate.CertificateRequest, now time.Time, parent *x509.Certificate, key crypto.Signer, chainSuffix, caPEM []byte) error {
	if r == nil || certificate.Answered(r) {
		return nil
	}
	if rnd == nil {
		rnd = rand.Reader
	}
	csr, err := keys.ParseCSR(r.Spec.Request)
	if err != nil {
		certificate.SetInvalid(r, "the CSR cannot be used: "+err.Error(), now)
		return nil
	}
	ku, eku, err := keys.X509Usages(r.Spec.Usages, r.Spec.IsCA)
	if err != nil {
		certificate.SetInvalid(r, err.Error(), now)
		return nil
	}
	if parent == nil && !keys.PublicKeysEqual(csr.PublicKey, key.Public()) {
		certificate.SetInvalid(r, "the private key to self-sign with is not the CSR's", now)
		return nil
	}
	duration := certificate.DefaultDuration
	if r.Spec.Duration != nil && r.Spec.Duration.Duration > 0 {
		duration = r.Spec.Duration.Duration
	}
	notAfter := now.Add(duration)
	if parent != nil {
		if !now.Before(parent.NotAfter) {
			certificate.SetFailed(r, fmt.Sprintf("the CA certificate %s expired at %s", parent.Subject, parent.NotAfter.UTC().Format(time.RFC3339)), now, time.Time{})
			return nil
		}
		if notAfter.After(parent.NotAfter) {
			notAfter = parent.NotAfter
		}
	}
	serial, err := serialNumber(rnd)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		RawSubject:   csr.RawSubject, Subject: csr.Subject,
		DNSNames: csr.DNSNames, IPAddresses: csr.IPAddresses, EmailAddresses: csr.EmailAddresses, URIs: csr.URIs,
		NotBefore: now, NotAfter: notAfter,
		KeyUsage: ku, ExtKeyUsage: eku,
		BasicConstraintsValid: true, IsCA: r.Spec.IsCA,
	}
	self := parent == nil
	if self {
		parent = tmpl
	}
	der, err := x509.CreateCertificate(rnd, tmpl, parent, csr.PublicKey, key)
	if err != nil {
		return fmt.Errorf("localca: signing request %s: %w", r.Name, err)
	}
	leaf := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if self {
		caPEM = leaf
	}
	certificate.SetIssued(r, append(leaf, chainSuffix...), bytes.Clone(caPEM), now)
	return nil
}

// serialNumber is a random positive 128-bit serial, as CAs use.
func serialNumber(rnd io.Reader) (*big.Int, error) {
	b := make([]byte, 16)
	if _, err := io.ReadFull(rnd, b); err != nil {
		return nil, fmt.Errorf("localca: serial number: %w", err)
	}
	b[0] &= 0x7f
	n := new(big.Int).SetBytes(b)
	if n.Sign() == 0 {
		n.SetInt64(1)
	}
	return n, nil
}
