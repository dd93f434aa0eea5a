package localca

import (
	"time"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/keys"
)

// RootValidity is how long the CA certificate RootCertificate asks for is
// valid: ten years.
const RootValidity = 10 * 365 * 24 * time.Hour

// RootCertificate returns the Certificate of a root CA that a host issues
// and renews itself, like any other certificate: namespace/name, issued
// by the issuer selfSigned names (a SelfSigned issuer the host runs)
// into the secret name, which FromSecret(get, namespace, name) signs
// with. It asks for a CA certificate with commonName as its subject,
// valid for RootValidity, with an ECDSA P-256 key in PKCS#8 that is kept
// across renewals (rotation policy Never). Change what you need in the
// returned value before you create it; a host creates it once, taking
// host.ErrAlreadyExists as success on later starts.
//
// With a host that answers a request as soon as the secret its issuer
// waits for is written (package host does, through
// certificate.SecretAwaiter), the certificates the CA signs are issued as
// soon as it is, on the first start too.
//
// Renewal follows the spec's renewal policy, as for any certificate: by
// default when a third of the lifetime remains (some three years before
// it ends). The renewed CA certificate has the same key and subject, so
// the certificates the CA signed before it still verify against it, and
// those it signs after verify against the one before: nothing is issued
// again because the CA was renewed. Each certificate it signed renews on
// its own schedule, and its secret's ca.crt holds the CA certificate of
// the day it was issued until then. A certificate the CA signs never
// outlives the CA certificate that signed it (Issue shortens it). A
// client that trusts the CA keeps working across renewals as long as it
// trusts either CA certificate; with a new key — after spec.privateKey
// changes, or with the rotation policy set back to Always — the
// certificates signed before verify only against the CA certificate
// before, until each is renewed.
func RootCertificate(namespace, name, commonName string, selfSigned certificate.IssuerRef) *certificate.Certificate {
	return &certificate.Certificate{
		ObjectMeta: certificate.ObjectMeta{Namespace: namespace, Name: name},
		Spec: certificate.Spec{
			SecretName: name,
			CommonName: commonName,
			IsCA:       true,
			IssuerRef:  selfSigned,
			Duration:   &certificate.Duration{Duration: RootValidity},
			PrivateKey: &keys.KeySpec{Algorithm: keys.AlgorithmECDSA, Size: 256, Encoding: keys.EncodingPKCS8, RotationPolicy: keys.RotationNever},
		},
	}
}
