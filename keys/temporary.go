package keys

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"time"
)

// TemporaryIssuerName is the common name of the issuer of every temporary
// certificate (TemporaryCertificate).
const TemporaryIssuerName = "certlife temporary issuer"

// The reference operator's temporary certificates (cert-manager's
// cert-manager.io/issue-temporary-certificate annotation) are issued by
// "cert-manager.local" with this subject serial number.
const (
	referenceTemporaryIssuer = "cert-manager.local"
	referenceTemporarySerial = "1234567890"
)

// TemporaryCertificate returns, in PEM, a placeholder certificate for key
// and the names tmpl asks (its subject, subject alternative names, usages
// and isCA), valid from notBefore until notAfter: what a host writes into
// a certificate's secret while the first issuance runs, so that workloads
// that mount the secret can start. It is signed by a throwaway issuer
// named TemporaryIssuerName whose key, a new P-256 key from rand, is
// dropped: no client trusts it, and IsTemporaryCertificate tells it from
// an issued one. Errors name the template field at fault.
func TemporaryCertificate(rand io.Reader, key crypto.Signer, tmpl RequestTemplate, notBefore, notAfter time.Time) ([]byte, error) {
	if key == nil || rand == nil {
		return nil, errors.New("keys: TemporaryCertificate needs a private key and randomness")
	}
	if !notAfter.After(notBefore) {
		return nil, fmt.Errorf("keys: a temporary certificate valid from %v until %v is never valid", notBefore, notAfter)
	}
	if err := tmpl.Validate(); err != nil {
		return nil, err
	}
	rawSubject, err := tmpl.rawSubject()
	if err != nil {
		return nil, err
	}
	ips, uris, err := tmpl.parsedNames()
	if err != nil {
		return nil, err
	}
	ku, eku, err := X509Usages(tmpl.Usages, tmpl.IsCA, key.Public())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTemplate, err)
	}
	issuerKey, err := ecdsa.GenerateKey(elliptic.P256(), rand)
	if err != nil {
		return nil, fmt.Errorf("keys: the temporary issuer's key: %w", err)
	}
	serial := make([]byte, 16)
	if _, err := io.ReadFull(rand, serial); err != nil {
		return nil, fmt.Errorf("keys: a serial number: %w", err)
	}
	serial[0] &= 0x7f
	serial[0] |= 0x01 // never zero
	cert := &x509.Certificate{
		SerialNumber: new(big.Int).SetBytes(serial),
		RawSubject:   rawSubject,
		DNSNames:     tmpl.DNSNames, IPAddresses: ips, URIs: uris, EmailAddresses: tmpl.EmailAddresses,
		NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage: ku, ExtKeyUsage: eku,
		BasicConstraintsValid: true, IsCA: tmpl.IsCA,
	}
	if len(tmpl.OtherNames) > 0 {
		san, err := marshalSANs(tmpl, ips, bytes.Equal(rawSubject, emptySubject))
		if err != nil {
			return nil, err
		}
		cert.ExtraExtensions = []pkix.Extension{san}
	}
	issuer := &x509.Certificate{Subject: pkix.Name{CommonName: TemporaryIssuerName}}
	der, err := x509.CreateCertificate(rand, cert, issuer, key.Public(), issuerKey)
	if err != nil {
		return nil, fmt.Errorf("keys: signing the temporary certificate: %w", err)
	}
	return encodePEM("CERTIFICATE", der), nil
}

// IsTemporaryCertificate reports a placeholder certificate, one that
// TemporaryCertificate made (its issuer is TemporaryIssuerName) or that
// the reference operator (cert-manager) wrote for its
// issue-temporary-certificate annotation: issuer "cert-manager.local",
// subject serial number "1234567890". Neither is an issued certificate.
func IsTemporaryCertificate(cert *x509.Certificate) bool {
	if cert == nil {
		return false
	}
	switch cert.Issuer.CommonName {
	case TemporaryIssuerName:
		return true
	case referenceTemporaryIssuer:
		return cert.Subject.SerialNumber == referenceTemporarySerial
	}
	return false
}
