package acmeclient

import (
	"context"
	"crypto"
	"crypto/rand"
	"errors"
	"fmt"
	"io"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/keys"
)

// SecretGetter reads a secret, returning an error when it cannot (a
// host's store gives one: certificate/host's Store.Secrets().Get).
type SecretGetter func(ctx context.Context, namespace, name string) (*certificate.Secret, error)

// SecretCreator stores a new secret and returns it as stored, returning
// an error when it cannot — one of them when a secret of that namespace
// and name exists already (a host's store gives one: certificate/host's
// Store.Secrets().Create).
type SecretCreator func(ctx context.Context, s *certificate.Secret) (*certificate.Secret, error)

// LabelAccountKey marks the secret AccountKey keeps an ACME account key
// in, with the value "true".
const LabelAccountKey = "certlife.dev/acme-account-key"

// AccountKey returns the ACME account key kept in the secret
// namespace/name, for Config.Key: the private key in the secret's
// tls.key (keys.SecretPrivateKey), read with get. When the secret cannot
// be read, it makes a new key (ECDSA P-256, with randomness from rnd; nil
// means crypto/rand), creates the secret with it (PKCS#8 PEM in tls.key,
// labelled LabelAccountKey) and returns it; when that create fails — as
// it does when another process created the secret first — it reads the
// secret again and returns the key in it, so that processes that start
// together over one store all use the key of the one that created it.
// It returns an error when neither gives a key: the store's errors, or a
// secret whose tls.key is not a private key (it is never overwritten).
//
//	key, err := acmeclient.AccountKey(ctx, store.Secrets().Get, store.Secrets().Create, "default", "acme-account", nil)
func AccountKey(ctx context.Context, get SecretGetter, create SecretCreator, namespace, name string, rnd io.Reader) (crypto.Signer, error) {
	if get == nil || create == nil {
		return nil, fmt.Errorf("%w: AccountKey needs a SecretGetter and a SecretCreator", ErrConfig)
	}
	if err := certificate.ValidateNamespace(namespace); err != nil {
		return nil, fmt.Errorf("%w: AccountKey: the secret's namespace: %w", ErrConfig, err)
	}
	if err := certificate.ValidateObjectName(name); err != nil {
		return nil, fmt.Errorf("%w: AccountKey: the secret's name: %w", ErrConfig, err)
	}
	where := "secret " + namespace + "/" + name
	s, getErr := get(ctx, namespace, name)
	if getErr == nil {
		return accountKeyOf(s, where)
	}
	if rnd == nil {
		rnd = rand.Reader
	}
	key, err := keys.Generate(rnd, keys.KeySpec{Algorithm: keys.AlgorithmECDSA, Size: 256})
	if err != nil {
		return nil, fmt.Errorf("acmeclient: making the ACME account key: %w", err)
	}
	pemKey, err := keys.EncodePrivateKey(key, keys.EncodingPKCS8)
	if err != nil {
		return nil, fmt.Errorf("acmeclient: encoding the ACME account key: %w", err)
	}
	_, createErr := create(ctx, &certificate.Secret{
		ObjectMeta: certificate.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{LabelAccountKey: "true"}},
		Data:       map[string][]byte{keys.SecretPrivateKey: pemKey},
	})
	if createErr == nil {
		return key, nil
	}
	// Someone else created it first, or the store failed: what is
	// there, if anything, is the key.
	s, err = get(ctx, namespace, name)
	if err != nil {
		return nil, fmt.Errorf("acmeclient: the ACME account key in %s: %w", where, errors.Join(getErr, createErr, err))
	}
	return accountKeyOf(s, where)
}

// accountKeyOf is the private key in a secret's tls.key.
func accountKeyOf(s *certificate.Secret, where string) (crypto.Signer, error) {
	if s == nil {
		return nil, fmt.Errorf("acmeclient: the ACME account key in %s: the store returned no secret", where)
	}
	key, err := keys.DecodePrivateKey(s.Data[keys.SecretPrivateKey])
	if err != nil {
		return nil, fmt.Errorf("acmeclient: the ACME account key in %s: %s holds no usable private key: %w", where, keys.SecretPrivateKey, err)
	}
	return key, nil
}
