package localca

import (
	"context"
	"crypto/rand"

	"fmt"
	"io"
	"time"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/keys"
)

// NotReadyRecheck is how soon an issuer whose CA secret is missing or
// unusable asks to answer a request again: the request stays Pending with
// the reason meanwhile, so that fixing the secret lets issuance go on,
// with no failure and no backoff.
const NotReadyRecheck = time.Minute

// SecretGetter reads a secret, returning an error when it cannot; a
// host's store gives one (certificate/host: store.Secrets().Get).
type SecretGetter func(ctx context.Context, namespace, name string) (*certificate.Secret, error)

// Issuer returns ca as a certificate.Issuer: Answer signs each request at
// once (Issue), with randomness from rnd (nil means crypto/rand). It
// keeps nothing between answers, so it is no certificate.Forgetter.
func (ca *CA) Issuer(rnd io.Reader) certificate.Issuer { return caIssuer{ca: ca, rand: orRand(rnd)} }

type caIssuer struct {
	ca   *CA
	rand io.Reader
}

func (i caIssuer) Answer(_ context.Context, r *certificate.CertificateRequest, now time.Time) (time.Time, error) {
	return time.Time{}, i.ca.Issue(i.rand, r, now)
}

// FromSecret returns an issuer that signs with the CA key pair the secret
// namespace/name holds (tls.crt, tls.key), read at each answer, and puts
// what opts ask into every certificate. While the secret is missing, does
// not hold a CA and its key, or holds a CA that has expired, or while the
// options cannot be used, requests stay Pending with the reason, and
// Answer asks to be called again after NotReadyRecheck: replacing the
// secret lets issuance go on, with no failure recorded and no backoff.
// The issuer is a certificate.SecretAwaiter: a host that runs it answers
// such requests again as soon as the CA secret is written (package host
// does), and NotReadyRecheck is only the backstop.
func FromSecret(get SecretGetter, namespace, name string, rnd io.Reader, opts ...Option) certificate.Issuer {
	return secretIssuer{get: get, namespace: namespace, name: name, rand: orRand(rnd), opts: opts}
}

type secretIssuer struct {
	get             SecretGetter
	namespace, name string
	rand            io.Reader
	opts            []Option
}

// AwaitedSecret implements certificate.SecretAwaiter: a request the
// issuer left unanswered waits for the CA secret.
func (i secretIssuer) AwaitedSecret(*certificate.CertificateRequest) (namespace, name string) {
	return i.namespace, i.name
}

func (i secretIssuer) Answer(ctx context.Context, r *certificate.CertificateRequest, now time.Time) (time.Time, error) {
	if certificate.Answered(r) {
		return time.Time{}, nil
	}
	if err := ValidateOptions(i.opts...); err != nil {
		certificate.SetPending(r, "the issuer is not ready: "+err.Error(), now)
		return now.Add(NotReadyRecheck), nil
	}
	where := "the CA secret " + qualified(i.namespace, i.name)
	sec, err := i.get(ctx, i.namespace, i.name)
	if err != nil {
		certificate.SetPending(r, fmt.Sprintf("the issuer is not ready: %s cannot be read: %v", where, err), now)
		return now.Add(NotReadyRecheck), nil
	}
	ca, err := FromPEM(sec.Data[keys.SecretCertificate], sec.Data[keys.SecretPrivateKey], i.opts...)
	if err != nil {
		certificate.SetPending(r, fmt.Sprintf("the issuer is not ready: %s does not hold a usable CA: %v", where, err), now)
		return now.Add(NotReadyRecheck), nil
	}
	if na := ca.Certificate().NotAfter; !now.Before(na) {
		certificate.SetPending(r, fmt.Sprintf("the issuer is not ready: the CA certificate in %s expired at %s", where, na.UTC().Format(time.RFC3339)), now)
		return now.Add(NotReadyRecheck), nil
	}
	return time.Time{}, ca.Issue(i.rand, r, now)
}

// SelfSigned returns an issuer that signs each request with its own key,
// read from the secret the request's certificate.
// AnnotationPrivateKeySecretName names, in the request's namespace, and
// puts what opts ask into every certificate. While the options cannot be
// used, requests stay Pending with the reason, looked at again after
// NotReadyRecheck; so do they while the key's secret cannot be read, and
// the issuer is a certificate.SecretAwaiter of that secret: a host that
// runs it answers them again as soon as the secret is written.
func SelfSigned(get SecretGetter, rnd io.Reader, opts ...Option) certificate.Issuer {
	return selfSigned{get: get, rand: orRand(rnd), opts: opts}
}

type selfSigned struct {
	get  SecretGetter
	rand io.Reader
	opts []Option
}

// AwaitedSecret implements certificate.SecretAwaiter: a request the
// issuer left unanswered waits for its private key's secret.
func (i selfSigned) AwaitedSecret(r *certificate.CertificateRequest) (namespace, name string) {
	return r.Namespace, r.Annotations[certificate.AnnotationPrivateKeySecretName]
}

func (i selfSigned) Answer(ctx context.Context, r *certificate.CertificateRequest, now time.Time) (time.Time, error) {
	if certificate.Answered(r) {
		return time.Time{}, nil
	}
	if err := ValidateOptions(i.opts...); err != nil {
		certificate.SetPending(r, "the issuer is not ready: "+err.Error(), now)
		return now.Add(NotReadyRecheck), nil
	}
	name := r.Annotations[certificate.AnnotationPrivateKeySecretName]
	if name == "" {
		certificate.SetInvalid(r, "annotation "+certificate.AnnotationPrivateKeySecretName+" is missing: no key to self-sign with", now)
		return time.Time{}, nil
	}
	sec, err := i.get(ctx, r.Namespace, name)
	if err != nil {
		certificate.SetPending(r, fmt.Sprintf("the private key secret %s cannot be read: %v", qualified(r.Namespace, name), err), now)
		return now.Add(NotReadyRecheck), nil
	}
	key, err := keys.DecodePrivateKey(sec.Data[keys.SecretPrivateKey])
	if err != nil {
		certificate.SetInvalid(r, "the private key in secret "+qualified(r.Namespace, name)+" cannot be decoded", now)
		return time.Time{}, nil
	}
	return time.Time{}, SelfSign(i.rand, r, key, now, i.opts...)
}

func qualified(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

func orRand(r io.Reader) io.Reader {
	if r == nil {
		return rand.Reader
	}
	return r
}

var (
	_ certificate.SecretAwaiter = secretIssuer{}
	_ certificate.SecretAwaiter = selfSigned{}
)
