package operator

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/keys"

	"github.com/certlife/certlife/examples/kubernetes/api/v1alpha1"
)

// Gatherer makes the snapshot a decision reads, in one place. Cache reads
// the operator's cache (Certificates, CertificateRequests, and the Secrets
// labelled LabelManaged); API reads the API server directly, for Secrets
// the cache does not hold.
type Gatherer struct {
	Cache client.Reader
	API   client.Reader
}

// gathered is a snapshot and the objects it was made from, which the
// actions are carried out on.
type gathered struct {
	snap     *certificate.Snapshot
	target   *corev1.Secret // nil when missing
	nextKeys map[string]*corev1.Secret
	requests map[string]*v1alpha1.CertificateRequest
}

// gather reads everything certificate.Reconcile reads about crt: its
// target Secret (from the cache, else from the API server — a Secret the
// operator has not labelled yet, or one the cache has not seen yet), the
// next-private-key Secrets and the requests it owns, the other
// Certificates naming the same Secret, and its keystore passwords. A
// target Secret the API server does not have either is confirmed missing
// (certificate.Snapshot.SecretAbsenceConfirmed): a Secret deleted right
// after an issuance is issued again at once, rather than taken for a
// cache that has not caught up with the write.
func (g Gatherer) gather(ctx context.Context, crt *v1alpha1.Certificate) (*gathered, error) {
	pw, err := g.passwords(ctx, crt)
	if err != nil {
		return nil, err
	}
	out := &gathered{
		snap:     &certificate.Snapshot{Certificate: CertificateToCore(crt, pw)},
		nextKeys: map[string]*corev1.Secret{},
		requests: map[string]*v1alpha1.CertificateRequest{},
	}
	if out.target, err = g.secret(ctx, crt.Namespace, crt.Spec.SecretName); err != nil {
		return nil, err
	}
	if out.target != nil {
		out.snap.Secret = SecretToCore(out.target)
	} else {
		// secret asked the API server after the cache missed it, and
		// after the certificate was read: the Secret is gone.
		out.snap.SecretAbsenceConfirmed = true
	}

	var secrets corev1.SecretList
	if err := g.Cache.List(ctx, &secrets, client.InNamespace(crt.Namespace),
		client.MatchingFields{indexOwner: string(crt.UID)},
		client.MatchingLabels{certificate.LabelNextPrivateKey: "true"}); err != nil {
		return nil, fmt.Errorf("listing next private keys: %w", err)
	}
	for i := range secrets.Items {
		s := &secrets.Items[i]
		out.nextKeys[s.Name] = s
		out.snap.NextPrivateKeySecrets = append(out.snap.NextPrivateKeySecrets, SecretToCore(s))
	}

	var requests v1alpha1.CertificateRequestList
	if err := g.Cache.List(ctx, &requests, client.InNamespace(crt.Namespace), client.MatchingFields{indexOwner: string(crt.UID)}); err != nil {
		return nil, fmt.Errorf("listing requests: %w", err)
	}
	for i := range requests.Items {
		r := &requests.Items[i]
		out.requests[r.Name] = r
		out.snap.Requests = append(out.snap.Requests, RequestToCore(r))
	}

	var others v1alpha1.CertificateList
	if err := g.Cache.List(ctx, &others, client.InNamespace(crt.Namespace), client.MatchingFields{indexSecretName: crt.Spec.SecretName}); err != nil {
		return nil, fmt.Errorf("listing certificates of secret %s: %w", crt.Spec.SecretName, err)
	}
	for i := range others.Items {
		if o := &others.Items[i]; o.UID != crt.UID {
			out.snap.OtherOwners = append(out.snap.OtherOwners, CertificateToCore(o, Passwords{}))
		}
	}

	// The cache lists in no set order; a decision reads in name order.
	byName := func(a, b *certificate.Secret) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(out.snap.NextPrivateKeySecrets, byName)
	slices.SortFunc(out.snap.Requests, func(a, b *certificate.CertificateRequest) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(out.snap.OtherOwners, func(a, b *certificate.Certificate) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// secret reads a Secret from the cache, else from the API server; nil when
// it does not exist.
func (g Gatherer) secret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	key := types.NamespacedName{Namespace: namespace, Name: name}
	var s corev1.Secret
	err := g.Cache.Get(ctx, key, &s)
	if apierrors.IsNotFound(err) {
		err = g.API.Get(ctx, key, &s)
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading secret %s: %w", key, err)
	}
	return &s, nil
}

// passwords reads the keystore passwords spec.keystores names.
func (g Gatherer) passwords(ctx context.Context, crt *v1alpha1.Certificate) (Passwords, error) {
	var pw Passwords
	k := crt.Spec.Keystores
	if k == nil {
		return pw, nil
	}
	read := func(field string, ref v1alpha1.SecretKeySelector) (keys.Password, error) {
		s, err := g.secret(ctx, crt.Namespace, ref.Name)
		if err != nil {
			return "", err
		}
		if s == nil {
			return "", fmt.Errorf("spec.keystores.%s.passwordSecretRef: secret %s does not exist", field, ref.Name)
		}
		v, ok := s.Data[ref.Key]
		if !ok {
			return "", fmt.Errorf("spec.keystores.%s.passwordSecretRef: secret %s has no key %q", field, ref.Name, ref.Key)
		}
		return keys.Password(v), nil
	}
	var err error
	if k.PKCS12 != nil {
		if pw.PKCS12, err = read("pkcs12", k.PKCS12.PasswordSecretRef); err != nil {
			return pw, err
		}
	}
	if k.JKS != nil {
		if pw.JKS, err = read("jks", k.JKS.PasswordSecretRef); err != nil {
			return pw, err
		}
	}
	return pw, nil
}
