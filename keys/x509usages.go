package keys

import (
	"crypto"
	"crypto/rsa"
	"crypto/x509"
	"fmt"
	"slices"
)

// x509ExtKeyUsages maps each extended usage to crypto/x509's constant.
var x509ExtKeyUsages = map[Usage]x509.ExtKeyUsage{
	UsageAny:             x509.ExtKeyUsageAny,
	UsageServerAuth:      x509.ExtKeyUsageServerAuth,
	UsageClientAuth:      x509.ExtKeyUsageClientAuth,
	UsageCodeSigning:     x509.ExtKeyUsageCodeSigning,
	UsageEmailProtection: x509.ExtKeyUsageEmailProtection,
	UsageTimestamping:    x509.ExtKeyUsageTimeStamping,
	UsageOCSPSigning:     x509.ExtKeyUsageOCSPSigning,
}

// DefaultUsagesFor returns the usages an issuer gives a certificate whose
// request lists none, for the certificate's public key and whether it is
// a CA. Each call returns a new slice.
//
//   - A CA: digital signature, cert sign and CRL sign, whatever its key
//     (a CA signs certificates and CRLs; RFC 5280 §4.2.1.3, RFC 3279
//     §2.3.1, RFC 5480 §3).
//   - A leaf with an RSA key: digital signature and key encipherment (RSA
//     key transport, as TLS 1.2 RSA cipher suites use).
//   - A leaf with any other key (ECDSA, Ed25519): digital signature only.
//     Key encipherment has no meaning for these keys, and RFC 8813 §3
//     forbids it for ECDSA.
//
// DefaultUsages is what a request itself lists when its template names
// none; an issuer grants DefaultUsagesFor instead.
func DefaultUsagesFor(pub crypto.PublicKey, isCA bool) []Usage {
	if isCA {
		return []Usage{UsageDigitalSignature, UsageCertSign, UsageCRLSign}
	}
	if _, ok := pub.(*rsa.PublicKey); ok {
		return []Usage{UsageDigitalSignature, UsageKeyEncipherment}
	}
	return []Usage{UsageDigitalSignature}
}

// X509Usages maps certlife usages to what an issuer writes into a
// certificate for the public key pub: the key usage bits and the extended
// key usages, in the order given and without repeats. No usages means
// DefaultUsagesFor(pub, isCA); isCA adds cert sign, as BuildCSR asks. An
// unknown usage is an error naming it. When usages are listed, a
// certificate made from the result carries the usages CompareCSR expects
// of its request.
func X509Usages(usages []Usage, isCA bool, pub crypto.PublicKey) (x509.KeyUsage, []x509.ExtKeyUsage, error) {
	if len(usages) == 0 {
		usages = DefaultUsagesFor(pub, isCA)
	}
	var ku x509.KeyUsage
	var eku []x509.ExtKeyUsage
	for i, u := range usages {
		if k, ok := keyUsages[u]; ok {
			ku |= k
			continue
		}
		e, ok := x509ExtKeyUsages[u]
		if !ok {
			return 0, nil, fmt.Errorf("keys: usages[%d]: %q is not a known usage", i, u)
		}
		if !slices.Contains(eku, e) {
			eku = append(eku, e)
		}
	}
	if isCA {
		ku |= x509.KeyUsageCertSign
	}
	return ku, eku, nil
}
