package simca

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/url"
	"time"
)

// CA signs requests. It is not safe for concurrent use.
type CA struct {
	// Cert is the self-signed root.
	Cert *x509.Certificate
	// CertPEM is Cert in PEM, the ca.crt a host writes.
	CertPEM []byte

	// Stdlib, when set, signs every leaf with x509.CreateCertificate, which
	// checks each signature after making it. By default leaves this CA can
	// encode itself (Ed25519 root, not a CA, ASCII names) skip that check;
	// see leaf.go.
	Stdlib bool

	key    crypto.Signer
	serial int64
}

// New creates a root named commonName with an ECDSA P-256 key, valid from
// notBefore for ten years. rand supplies the key and signature randomness.
func New(rand io.Reader, commonName string, notBefore time.Time) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand)
	if err != nil {
		return nil, fmt.Errorf("localca: generating root key: %w", err)
	}
	return newCA(rand, commonName, notBefore, key)
}

// NewEd25519 is New with an Ed25519 root key: signing and the signature
// check Go makes after signing cost about two thirds of ECDSA P-256's,
// which matters to a simulation that issues a hundred thousand
// certificates.
func NewEd25519(rand io.Reader, commonName string, notBefore time.Time) (*CA, error) {
	_, key, err := ed25519.GenerateKey(rand)
	if err != nil {
		return nil, fmt.Errorf("localca: generating root key: %w", err)
	}
	return newCA(rand, commonName, notBefore, key)
}

func newCA(rand io.Reader, commonName string, notBefore time.Time, key crypto.Signer) (*CA, error) {
	if commonName == "" {
		return nil, errors.New("localca: commonName is empty")
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             notBefore,
		NotAfter:              notBefore.AddDate(10, 0, 0),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("localca: self-signing root: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("localca: parsing root: %w", err)
	}
	return &CA{
		Cert:    cert,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		key:     key,
		serial:  1,
	}, nil
}

// Options shape one signature. The zero value signs the request as asked.
type Options struct {
	// NotBefore and NotAfter set the validity. Both are required.
	NotBefore, NotAfter time.Time
	// PublicKey, when set, is certified instead of the request's key: the
	// "issuer returned a certificate for the wrong key" fault.
	PublicKey crypto.PublicKey
	// IsCA marks the certificate as a CA.
	IsCA bool
	// TrustRequest skips the check of the request's signature, for a
	// simulation whose requests are built in the same process (the check
	// costs as much as a signature).
	TrustRequest bool
}

// Sign issues a leaf certificate for the request's subject, names and key,
// and returns it in PEM (the chain a host writes to tls.crt; the root is
// CertPEM). The request's signature is checked first.
func (ca *CA) Sign(rand io.Reader, csr *x509.CertificateRequest, opts Options) ([]byte, error) {
	if csr == nil {
		return nil, errors.New("localca: no request to sign")
	}
	if !opts.TrustRequest {
		if err := csr.CheckSignature(); err != nil {
			return nil, fmt.Errorf("localca: request signature: %w", err)
		}
	}
	if opts.NotBefore.IsZero() || opts.NotAfter.IsZero() || !opts.NotAfter.After(opts.NotBefore) {
		return nil, fmt.Errorf("localca: validity %v..%v is empty", opts.NotBefore, opts.NotAfter)
	}
	pub := csr.PublicKey
	if opts.PublicKey != nil {
		pub = opts.PublicKey
	}
	ca.serial++
	var der []byte
	if !opts.IsCA && !ca.Stdlib {
		spki, err := marshalSPKI(pub)
		if err != nil {
			return nil, fmt.Errorf("localca: public key: %w", err)
		}
		der, err = ca.encodeLeaf(&leaf{serial: ca.serial, rawSubject: csr.RawSubject, spki: spki,
			notBefore: opts.NotBefore, notAfter: opts.NotAfter,
			dnsNames: csr.DNSNames, emails: csr.EmailAddresses, ips: csr.IPAddresses, uris: csr.URIs})
		if err != nil && err != errLeafNotFastPathed {
			return nil, fmt.Errorf("localca: signing: %w", err)
		}
	}
	if der == nil {
		var err error
		if der, err = x509.CreateCertificate(rand, ca.template(csr, pub, opts), ca.Cert, pub, ca.key); err != nil {
			return nil, fmt.Errorf("localca: signing: %w", err)
		}
	}
	// An exact-size copy: the encoder's buffer has spare capacity, and
	// hosts keep these bytes for the certificate's life.
	b := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return append(make([]byte, 0, len(b)), b...), nil
}

// template is the leaf Sign issues, for x509.CreateCertificate. The
// subject is the request's, as encoded in it.
func (ca *CA) template(csr *x509.CertificateRequest, pub crypto.PublicKey, opts Options) *x509.Certificate {
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(ca.serial),
		RawSubject:            csr.RawSubject,
		Subject:               csr.Subject,
		DNSNames:              csr.DNSNames,
		IPAddresses:           csr.IPAddresses,
		EmailAddresses:        csr.EmailAddresses,
		URIs:                  append([]*url.URL(nil), csr.URIs...),
		NotBefore:             opts.NotBefore,
		NotAfter:              opts.NotAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  opts.IsCA,
	}
	if opts.IsCA {
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	}
	return tmpl
}
