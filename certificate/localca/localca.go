// Package localca is an issuer for certificates a host signs itself: from
// a CA key pair (a cluster's internal CA, webhook serving certificates) or
// self-signed with the request's own key. It answers CertificateRequests
// through the issuer contract of package certificate (SetIssued,
// SetInvalid, SetFailed), honouring the request's duration, isCA, usages,
// subject and subject alternative names as its CSR encodes them, and a
// CA's name constraints; options add CRL distribution points, OCSP
// servers and issuing certificate URLs to every certificate.
//
// What it issues meets the RFC profile the linters CAs run check (RFC
// 5280, RFC 3279, RFC 5480, RFC 8813): usages that fit the key when the
// request lists none (keys.DefaultUsagesFor), a subject key identifier on
// every certificate and an authority key identifier on every one a CA
// signs or that is self-signed, a subject derived from the names where a
// self-signed certificate or a CA would have none, and no name outside
// the signing CA's name constraints. What only the request can get wrong
// it answers invalid, naming why.
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
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/keys"
)

// CA signs requests with a CA certificate and its key.
type CA struct {
	cert    *x509.Certificate
	certPEM []byte
	key     crypto.Signer
	opts    options
}

// An Option adds to every certificate a CA, or a self-signing issuer,
// signs. Options are checked where they are given: an unusable one is an
// error wrapping ErrInvalidOption that names it.
type Option func(*options)

// options are what Options set.
type options struct {
	crlDistributionPoints  []string
	ocspServers            []string
	issuingCertificateURLs []string
}

// CRLDistributionPoints puts the URLs where the CA publishes its
// certificate revocation list into every certificate it signs (the CRL
// distribution points extension, RFC 5280 §4.2.1.13), as cert-manager's CA
// and SelfSigned issuers' crlDistributionPoints do.
func CRLDistributionPoints(urls ...string) Option {
	return func(o *options) { o.crlDistributionPoints = append(o.crlDistributionPoints, urls...) }
}

// OCSPServers puts the URLs of OCSP responders for the CA into every
// certificate it signs (the authority information access extension, RFC
// 5280 §4.2.2.1), as cert-manager's CA issuer's ocspServers do.
func OCSPServers(urls ...string) Option {
	return func(o *options) { o.ocspServers = append(o.ocspServers, urls...) }
}

// IssuingCertificateURLs puts URLs where the CA's own certificate can be
// fetched into every certificate it signs (the authority information
// access extension's caIssuers, RFC 5280 §4.2.2.1), as cert-manager's CA
// issuer's issuingCertificateURLs do.
func IssuingCertificateURLs(urls ...string) Option {
	return func(o *options) { o.issuingCertificateURLs = append(o.issuingCertificateURLs, urls...) }
}

// ErrInvalidOption is wrapped by the error of an option that cannot be
// used.
var ErrInvalidOption = errors.New("localca: invalid option")

// ValidateOptions reports the options that cannot be used, each naming the
// option and the value: every URL must be absolute (scheme:rest) and
// ASCII, as the extensions hold them as IA5Strings. A host checks the
// options of an issuer it configures with it, to report them before any
// request comes.
func ValidateOptions(opts ...Option) error {
	_, err := collect(opts)
	return err
}

func collect(opts []Option) (options, error) {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	var errs []error
	check := func(name string, urls []string) {
		for i, u := range urls {
			p, err := url.Parse(u)
			ascii := true
			for j := 0; j < len(u); j++ {
				ascii = ascii && u[j] < 0x80 && u[j] > ' '
			}
			if err != nil || p.Scheme == "" || !ascii {
				errs = append(errs, fmt.Errorf("%w: %s[%d]: %q is not an absolute URL in ASCII", ErrInvalidOption, name, i, u))
			}
		}
	}
	check("crlDistributionPoints", o.crlDistributionPoints)
	check("ocspServers", o.ocspServers)
	check("issuingCertificateURLs", o.issuingCertificateURLs)
	return o, errors.Join(errs...)
}

// Errors of New and FromPEM, for errors.Is.
var (
	// ErrNotCA: the certificate is not a CA (basic constraints).
	ErrNotCA = errors.New("localca: the certificate is not a CA")
	// ErrKeyMismatch: the key is not the certificate's.
	ErrKeyMismatch = errors.New("localca: the key is not the CA certificate's")
)

// New returns a CA for a CA certificate and its private key, which puts
// what opts ask into every certificate it signs.
func New(cert *x509.Certificate, key crypto.Signer, opts ...Option) (*CA, error) {
	if cert == nil || key == nil {
		return nil, errors.New("localca: New needs a certificate and a key")
	}
	if !cert.IsCA || !cert.BasicConstraintsValid {
		return nil, fmt.Errorf("%w: %s", ErrNotCA, cert.Subject)
	}
	if !keys.PublicKeysEqual(cert.PublicKey, key.Public()) {
		return nil, ErrKeyMismatch
	}
	o, err := collect(opts)
	if err != nil {
		return nil, err
	}
	return &CA{cert: cert, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), key: key, opts: o}, nil
}

// FromPEM returns a CA from a CA certificate and its key in PEM, as a
// Kubernetes TLS secret holds them (tls.crt, tls.key), which puts what
// opts ask into every certificate it signs. Errors name the input and
// never quote the key.
func FromPEM(certPEM, keyPEM []byte, opts ...Option) (*CA, error) {
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
	return New(cert, key, opts...)
}

// NewRoot makes a self-signed root CA with a new key of spec, valid from
// notBefore for validity, which puts what opts ask into every certificate
// it signs: for tests, and for hosts that bootstrap their own internal CA.
func NewRoot(rnd io.Reader, commonName string, spec keys.KeySpec, notBefore time.Time, validity time.Duration, opts ...Option) (*CA, error) {
	if err := ValidateOptions(opts...); err != nil {
		return nil, err
	}
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
	return New(cert, key, opts...)
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
// CSR's subject (as encoded), subject alternative names (the CSR's
// extension as it is, other names included) and key, valid from now for
// r's duration (certificate.DefaultDuration when unset) but never past the
// CA's own expiry, with r's usages (keys.DefaultUsagesFor the CSR's key
// when r lists none) and isCA, and, for a CA, the name constraints its
// CSR asks (RFC 5280 §4.2.1.10). Every certificate carries a subject key
// identifier (RFC 5280 §4.2.1.2) and an authority key identifier, the
// CA's (§4.2.1.1). What the CA's options ask (CRL distribution points,
// OCSP servers, issuing certificate URLs) goes into every certificate.
// The chain is the leaf, followed by the CA certificate when the CA is not
// a root; ca.crt is the CA certificate.
//
// A request that cannot be signed as asked is answered invalid, naming
// what forbids it: among others, a name outside the CA's own name
// constraints (permitted and excluded DNS domains, IP ranges, email
// addresses and URI domains, as crypto/x509 checks them: a client would
// refuse the certificate), the usage "cert sign" in a request that is not
// for a CA (RFC 5280 §4.2.1.3), name constraints in the CSR of a request
// that is not for a CA, or that cannot be read, and an isCA request under
// a CA whose path length constraint is 0 (RFC 5280 §4.2.1.9: it may sign
// no further CA). A CA signed under a CA whose constraint is n > 0 gets
// n−1, so that it refuses in its turn what a validator would. A CA that
// has expired answers failed. Issue does nothing to a request already
// answered, and returns an error only when signing itself fails (rnd).
//
// Name constraints that are not critical, as a request may ask
// (keys.NameConstraints.Critical false), are kept as asked; the issued
// request's Ready message says that RFC 5280 requires them critical.
//
// A certificate never has an empty subject where RFC 5280 requires one
// (§4.1.2.6): a CA certificate's subject must name it, so an isCA request
// with an empty subject gets one derived from its names (see SelfSign);
// a leaf may have an empty subject beside its names, whose extension is
// then critical; a request with neither a subject nor a name is invalid.
func (ca *CA) Issue(rnd io.Reader, r *certificate.CertificateRequest, now time.Time) error {
	return issue(rnd, r, now, ca.cert, ca.key, ca.chainSuffix(), ca.certPEM, ca.opts)
}

// SelfSign answers r with a certificate signed by the key of its own CSR:
// key must be that private key (the secret the request's
// certificate.AnnotationPrivateKeySecretName names holds it). The
// certificate is its own issuer; ca.crt is the certificate itself. It
// carries what the request asks as Issue's do, and what opts ask. A key
// that is not the CSR's is answered invalid; options that cannot be used
// are an error wrapping ErrInvalidOption, and r is left as it was.
//
// Its issuer is its subject, and an issuer must not be empty (RFC 5280
// §4.1.2.4): a request with an empty subject gets one derived from its
// first name that fits, in this order:
//
//  1. the first DNS name of at most 64 characters (the upper bound of a
//     common name), as the common name;
//  2. else the first IP address, in its textual form, as the common name;
//  3. else the first email address, as the emailAddress attribute (an
//     IA5String of at most 255 characters, RFC 5280 §4.1.2.6);
//  4. else the first DNS name (longer than 64 characters), else the first
//     URI, as the UID attribute (RFC 4519 §2.39).
//
// A common name so derived is one of the certificate's own DNS names or
// IP addresses, which the certificate stages and the reference operator's
// conformance suite accept as such, so the certificate still matches what
// was asked. A request with only other names is answered invalid, asking
// for a spec.commonName or spec.subject. A self-signed certificate carries
// an authority key identifier, its own subject key identifier (RFC 5280
// §4.2.1.1).
func SelfSign(rnd io.Reader, r *certificate.CertificateRequest, key crypto.Signer, now time.Time, opts ...Option) error {
	if certificate.Answered(r) {
		return nil
	}
	o, err := collect(opts)
	if err != nil {
		return err
	}
	if key == nil {
		certificate.SetInvalid(r, "no private key to self-sign with", now)
		return nil
	}
	return issue(rnd, r, now, nil, key, nil, nil, o)
}

func (ca *CA) chainSuffix() []byte {
	if bytes.Equal(ca.cert.RawIssuer, ca.cert.RawSubject) && ca.cert.CheckSignatureFrom(ca.cert) == nil {
		return nil // a root: clients hold it already
	}
	return ca.certPEM
}

// issue signs r with parent and key (parent nil: self-signed).

func issue(rnd io.Reader, r *certificate.CertificateRequest, now time.Time, parent *x509.Certificate, key crypto.Signer, chainSuffix, caPEM []byte, o options) error {
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
	ku, eku, err := keys.X509Usages(r.Spec.Usages, r.Spec.IsCA, csr.PublicKey)
	if err != nil {
		certificate.SetInvalid(r, err.Error(), now)
		return nil
	}
	if ku&x509.KeyUsageCertSign != 0 && !r.Spec.IsCA {
		certificate.SetInvalid(r, "the request asks for the usage \"cert sign\" and is not for a CA: only a CA certificate may sign certificates (RFC 5280 §4.2.1.3, §4.2.1.9); set isCA, or drop the usage", now)
		return nil
	}
	if parent == nil && !keys.PublicKeysEqual(csr.PublicKey, key.Public()) {
		certificate.SetInvalid(r, "the private key to self-sign with is not the CSR's", now)
		return nil
	}
	if parent != nil && r.Spec.IsCA && pathLenExhausted(parent) {
		certificate.SetInvalid(r, fmt.Sprintf("the CA %s may sign no further CA: its path length constraint is 0 (RFC 5280 §4.2.1.9); "+
			"have this CA signed by a CA whose path length allows it", describeName(parent.Subject)), now)
		return nil
	}
	subject, problem := subjectOf(csr, parent == nil, r.Spec.IsCA)
	if problem != "" {
		certificate.SetInvalid(r, problem, now)
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
	skid, err := subjectKeyID(csr.RawSubjectPublicKeyInfo)
	if err != nil {
		certificate.SetInvalid(r, "the CSR's public key cannot be read: "+err.Error(), now)
		return nil
	}
	tmpl := &x509.Certificate{
		SubjectKeyId: skid,
		SerialNumber: serial,
		RawSubject:   csr.RawSubject, Subject: csr.Subject,
		DNSNames: csr.DNSNames, IPAddresses: csr.IPAddresses, EmailAddresses: csr.EmailAddresses, URIs: csr.URIs,
		NotBefore: now, NotAfter: notAfter,
		KeyUsage: ku, ExtKeyUsage: eku,
		BasicConstraintsValid: true, IsCA: r.Spec.IsCA,
		CRLDistributionPoints: o.crlDistributionPoints, OCSPServer: o.ocspServers, IssuingCertificateURL: o.issuingCertificateURLs,
	}
	nonCriticalNC := false
	for _, ext := range csr.Extensions {
		switch {
		case ext.Id.Equal(oidSubjectAltName):
			// As the CSR has them, other names included, which the
			// x509 fields cannot hold; critical when the subject is
			// empty (RFC 5280 §4.2.1.6) and stays so.
			ext.Critical = subject == nil && bytes.Equal(csr.RawSubject, emptySubject)
			tmpl.ExtraExtensions = append(tmpl.ExtraExtensions, ext)
		case ext.Id.Equal(oidNameConstraints):
			if !r.Spec.IsCA {
				certificate.SetInvalid(r, "the CSR asks for name constraints, which only a CA certificate may carry (RFC 5280 §4.2.1.10), and the request is not for a CA", now)
				return nil
			}
			if err := keys.ParseNameConstraints(ext, tmpl); err != nil {
				certificate.SetInvalid(r, "the CSR's name constraints cannot be used: "+err.Error(), now)
				return nil
			}
			nonCriticalNC = !ext.Critical && len(tmpl.PermittedDNSDomains)+len(tmpl.ExcludedDNSDomains)+len(tmpl.PermittedIPRanges)+len(tmpl.ExcludedIPRanges)+
				len(tmpl.PermittedEmailAddresses)+len(tmpl.ExcludedEmailAddresses)+len(tmpl.PermittedURIDomains)+len(tmpl.ExcludedURIDomains) > 0
		}
	}
	if subject != nil {
		tmpl.RawSubject, tmpl.Subject = nil, *subject
	}
	if parent != nil && r.Spec.IsCA && parent.MaxPathLen > 0 {
		tmpl.MaxPathLen = parent.MaxPathLen - 1
		tmpl.MaxPathLenZero = tmpl.MaxPathLen == 0
	}
	self := parent == nil
	if !self && len(parent.SubjectKeyId) == 0 {
		// A CA certificate without a subject key identifier: crypto/x509
		// writes the template's authority key identifier, which names the
		// CA's key as its own would (RFC 5280 §4.2.1.1 MUST).
		if akid, err := subjectKeyID(parent.RawSubjectPublicKeyInfo); err == nil {
			tmpl.AuthorityKeyId = akid
		}
	}
	if self {
		// RFC 5280 §4.2.1.1: the authority key identifier is a MUST but
		// for a self-signed CA; it is the certificate's own key.
		tmpl.AuthorityKeyId = skid
		parent = tmpl
	}
	der, err := x509.CreateCertificate(rnd, tmpl, parent, csr.PublicKey, key)
	if err != nil {
		return fmt.Errorf("localca: signing request %s: %w", r.Name, err)
	}
	if !self {
		if problem := outsideNameConstraints(der, parent, now); problem != "" {
			certificate.SetInvalid(r, problem, now)
			return nil
		}
	}
	leaf := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if self {
		caPEM = leaf
	}
	certificate.SetIssued(r, append(leaf, chainSuffix...), bytes.Clone(caPEM), now)
	if nonCriticalNC {
		if c := r.Condition(certificate.RequestConditionReady); c != nil {
			c.Message += "; note: its name constraints are not critical, as the request asks (nameConstraints.critical is false): " +
				"RFC 5280 §4.2.1.10 requires them critical, and a client that does not understand them accepts this CA for any name"
		}
	}
	return nil
}

var (
	oidSubjectAltName  = asn1.ObjectIdentifier{2, 5, 29, 17}
	oidNameConstraints = asn1.ObjectIdentifier{2, 5, 29, 30}
	// emptySubject is the DER of a subject with no attribute.
	emptySubject = []byte{0x30, 0}
)

// pathLenExhausted reports a CA certificate whose path length constraint
// is 0: it may sign no further CA. A parsed certificate's MaxPathLen is −1
// when it sets no constraint, and 0 only for a constraint of 0
// (MaxPathLenZero).
func pathLenExhausted(ca *x509.Certificate) bool {
	return ca.MaxPathLenZero || (ca.MaxPathLen == 0 && len(ca.Raw) > 0)
}

// Upper bounds of RFC 5280 Appendix A: ub-common-name and
// ub-emailaddress-length.
const (
	maxCommonName   = 64
	maxEmailAddress = 255
)

var (
	// oidEmailAddress is the PKCS #9 emailAddress attribute (RFC 5280
	// §4.1.2.6), an IA5String.
	oidEmailAddress = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}
	// oidUID is the userid attribute (RFC 4519 §2.39), a DirectoryString.
	oidUID = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 1}
)

// subjectOf is the subject to give a certificate for csr in place of the
// CSR's own, or nil to keep it; problem says why the request cannot be
// signed. An empty subject is kept for a leaf signed by a CA when the CSR
// names something (the names' extension is then critical, RFC 5280
// §4.1.2.6; crypto/x509 marks it so). A self-signed certificate, whose
// issuer is its subject (§4.1.2.4), and a CA certificate (§4.1.2.6) need
// one, derived from the first of its names that fits, in this order:
//
//  1. the first DNS name of at most 64 characters, as the common name;
//  2. else the first IP address, as the common name (its textual form);
//  3. else the first email address (ASCII, at most 255 characters), as
//     the emailAddress attribute;
//  4. else the first DNS name (longer than 64 characters), else the first
//     URI, as the UID attribute.
//
// A common name is always one of the certificate's own DNS names or IP
// addresses, so the certificate still matches what was asked; the other
// attributes name nothing a client matches. Other names alone give no
// subject: crypto/x509 does not read them.
func subjectOf(csr *x509.CertificateRequest, selfSigned, isCA bool) (subject *pkix.Name, problem string) {
	if len(csr.Subject.Names) > 0 {
		return nil, ""
	}
	names := len(csr.DNSNames) + len(csr.IPAddresses) + len(csr.URIs) + len(csr.EmailAddresses)
	for _, ext := range csr.Extensions {
		if ext.Id.Equal(oidSubjectAltName) {
			names++ // other names, which crypto/x509 does not list, count too
		}
	}
	if !selfSigned && !isCA {
		if names == 0 {
			return nil, "the request has neither a subject nor a name (DNS name, IP address, URI, email address or other name): a certificate must identify its subject (RFC 5280 §4.1.2.6)"
		}
		return nil, ""
	}
	for _, n := range csr.DNSNames {
		if n != "" && len(n) <= maxCommonName {
			return &pkix.Name{CommonName: n}, ""
		}
	}
	if len(csr.IPAddresses) > 0 {
		return &pkix.Name{CommonName: csr.IPAddresses[0].String()}, ""
	}
	for _, e := range csr.EmailAddresses {
		if e != "" && len(e) <= maxEmailAddress && isASCII(e) {
			return &pkix.Name{ExtraNames: []pkix.AttributeTypeAndValue{{Type: oidEmailAddress,
				Value: asn1.RawValue{Tag: asn1.TagIA5String, Bytes: []byte(e)}}}}, ""
		}
	}
	uid := ""
	for _, n := range csr.DNSNames {
		if uid == "" {
			uid = n
		}
	}
	for _, u := range csr.URIs {
		if uid == "" {
			uid = u.String()
		}
	}
	if uid != "" {
		return &pkix.Name{ExtraNames: []pkix.AttributeTypeAndValue{{Type: oidUID, Value: uid}}}, ""
	}
	what := "a CA certificate must name its subject (RFC 5280 §4.1.2.6)"
	if selfSigned {
		what = "a self-signed certificate's issuer is its subject, which must not be empty (RFC 5280 §4.1.2.4)"
	}
	return nil, "the request has an empty subject and no DNS name, IP address, email address or URI to derive one from: " + what + "; set spec.commonName or spec.subject"
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// describeName is a distinguished name for messages.
func describeName(n pkix.Name) string {
	if s := n.String(); s != "" {
		return s
	}
	return "with an empty subject"
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

// subjectKeyID is the subject key identifier of a public key (RFC 5280
// §4.2.1.2), as crypto/x509 makes a CA's: the leftmost 160 bits of the
// SHA-256 hash of the subjectPublicKey bits (RFC 7093 §2, method 1).
func subjectKeyID(spki []byte) ([]byte, error) {
	var info struct {
		Algorithm pkix.AlgorithmIdentifier
		PublicKey asn1.BitString
	}
	if rest, err := asn1.Unmarshal(spki, &info); err != nil || len(rest) > 0 {
		return nil, errors.New("its subject public key info is not one DER structure")
	}
	h := sha256.Sum256(info.PublicKey.Bytes)
	return h[:20], nil
}

// outsideNameConstraints says why ca may not sign the certificate der
// under its name constraints (RFC 5280 §4.2.1.10), naming the name and the
// constraint, or "" when it may: what crypto/x509 checks when it verifies
// the certificate against ca.
func outsideNameConstraints(der []byte, ca *x509.Certificate, now time.Time) string {
	if !hasNameConstraints(ca) {
		return ""
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return "" // what crypto/x509 cannot read is not a name it refuses
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	at := now
	if ca.NotBefore.After(at) {
		at = ca.NotBefore
	}
	_, err = cert.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: at, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	var invalid x509.CertificateInvalidError
	if !errors.As(err, &invalid) || invalid.Reason != x509.CANotAuthorizedForThisName {
		return ""
	}
	return fmt.Sprintf("the CA %s may not certify a name the request asks: %s (its name constraints, RFC 5280 §4.2.1.10: %s); "+
		"ask only for names within them, or have the certificate signed by a CA that may certify the name", describeName(ca.Subject), invalid.Detail, describeNameConstraints(ca))
}

func hasNameConstraints(c *x509.Certificate) bool {
	return len(c.PermittedDNSDomains)+len(c.ExcludedDNSDomains)+len(c.PermittedIPRanges)+len(c.ExcludedIPRanges)+
		len(c.PermittedEmailAddresses)+len(c.ExcludedEmailAddresses)+len(c.PermittedURIDomains)+len(c.ExcludedURIDomains) > 0
}

// describeNameConstraints lists a CA's name constraints for messages.
func describeNameConstraints(c *x509.Certificate) string {
	var parts []string
	add := func(what string, values []string) {
		if len(values) > 0 {
			parts = append(parts, what+" "+strings.Join(values, ", "))
		}
	}
	ipRanges := func(nets []*net.IPNet) []string {
		var out []string
		for _, n := range nets {
			out = append(out, n.String())
		}
		return out
	}
	add("permitted DNS domains", c.PermittedDNSDomains)
	add("excluded DNS domains", c.ExcludedDNSDomains)
	add("permitted IP ranges", ipRanges(c.PermittedIPRanges))
	add("excluded IP ranges", ipRanges(c.ExcludedIPRanges))
	add("permitted email addresses", c.PermittedEmailAddresses)
	add("excluded email addresses", c.ExcludedEmailAddresses)
	add("permitted URI domains", c.PermittedURIDomains)
	add("excluded URI domains", c.ExcludedURIDomains)
	return strings.Join(parts, "; ")
}
