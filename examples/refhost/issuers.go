package refhost

import (
	"context"
	"crypto/rand"
	"io"
	"time"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/localca"
	"github.com/certlife/certlife/keys"
)

// LocalCA answers requests with certificates signed by a CA key pair.
type LocalCA struct {
	CA *localca.CA
	// Rand is the randomness for serials and signatures; nil means
	// crypto/rand.
	Rand io.Reader
}

// Answer signs r at once.
func (i LocalCA) Answer(_ context.Context, r *certificate.CertificateRequest, now time.Time) (time.Time, error) {
	return time.Time{}, i.CA.Issue(orCryptoRand(i.Rand), r, now)
}

// SelfSigned answers requests with certificates signed by their own key,
// which it reads from the secret the request's
// certificate.AnnotationPrivateKeySecretName names.
type SelfSigned struct {
	Store *Store
	Rand  io.Reader
}

// Answer self-signs r at once.
func (i SelfSigned) Answer(_ context.Context, r *certificate.CertificateRequest, now time.Time) (time.Time, error) {
	name := r.Annotations[certificate.AnnotationPrivateKeySecretName]
	sec, err := i.Store.Secret(name)
	if err != nil {
		certificate.SetInvalid(r, "the private key secret "+name+" cannot be read: "+err.Error(), now)
		return time.Time{}, nil
	}
	key, err := keys.DecodePrivateKey(sec.Data[keys.SecretPrivateKey])
	if err != nil {
		certificate.SetInvalid(r, "the private key in secret "+name+" cannot be decoded", now)
		return time.Time{}, nil
	}
	return time.Time{}, localca.SelfSign(orCryptoRand(i.Rand), r, key, now)
}

func orCryptoRand(r io.Reader) io.Reader {
	if r != nil {
		return r
	}
	return rand.Reader
}

// ACME answers requests over ACME with an acmeclient.Issuer: one order
// per request, whose state the issuer keeps in its Store, so a restarted
// host resumes the same order. A renewal's request names the certificate
// it replaces (certificate.AnnotationReplaces, set by the decision), and
// its order says so (RFC 9773 §5).
type ACME struct {
	Issuer *acmeclient.Issuer
}

// Answer does the request's next ACME steps and says when to look again.
func (a ACME) Answer(ctx context.Context, r *certificate.CertificateRequest, now time.Time) (time.Time, error) {
	return a.Issuer.Answer(ctx, r, now)
}

// Forget removes what the issuer keeps for a deleted request.
func (a ACME) Forget(ctx context.Context, namespace, name string) error {
	return a.Issuer.Forget(ctx, namespace, name)
}
