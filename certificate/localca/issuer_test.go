package localca_test

import (
	"context"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/localca"
	"github.com/certlife/certlife/keys"
)

// secrets is a SecretGetter over a map, by namespace/name.
type secrets map[string]*certificate.Secret

func (s secrets) get(_ context.Context, namespace, name string) (*certificate.Secret, error) {
	if sec, ok := s[namespace+"/"+name]; ok {
		return sec, nil
	}
	return nil, errors.New("not found")
}

func caSecret(t *testing.T, ca *localca.CA) *certificate.Secret {
	t.Helper()
	key, err := ca.KeyPEM()
	require.NoError(t, err)
	return &certificate.Secret{Data: map[string][]byte{keys.SecretCertificate: ca.CertificatePEM(), keys.SecretPrivateKey: key}}
}

func TestFromSecretWaitsWhileTheCAIsNotReady(t *testing.T) {
	ctx := context.Background()
	good, err := localca.NewRoot(rand.Reader, "good", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, now.Add(-time.Hour), 24*time.Hour)
	require.NoError(t, err)
	expired, err := localca.NewRoot(rand.Reader, "expired", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, now.Add(-48*time.Hour), 24*time.Hour)
	require.NoError(t, err)
	leafKey, err := keys.Generate(rand.Reader, keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
	require.NoError(t, err)
	leafPEM, err := keys.EncodePrivateKey(leafKey, keys.EncodingPKCS8)
	require.NoError(t, err)
	web := keys.RequestTemplate{CommonName: "web.example", DNSNames: []string{"web.example"}}

	tests := map[string]struct {
		secret *certificate.Secret
		// pending: the words of the Pending message; "" means issued.
		pending string
	}{
		"a missing CA secret leaves the request pending":   {pending: "the issuer is not ready: the CA secret certs/ca cannot be read: not found"},
		"a secret without a CA leaves the request pending": {secret: &certificate.Secret{Data: map[string][]byte{keys.SecretPrivateKey: leafPEM}}, pending: "does not hold a usable CA"},
		"an expired CA leaves the request pending":         {secret: caSecret(t, expired), pending: "the CA certificate in the CA secret certs/ca expired at"},
		"a usable CA signs":                                {secret: caSecret(t, good)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			store := secrets{}
			if tc.secret != nil {
				store["certs/ca"] = tc.secret
			}
			iss := localca.FromSecret(store.get, "certs", "ca", nil)
			r, _ := request(t, web, nil)
			next, err := iss.Answer(ctx, r, now)
			require.NoError(t, err)
			ready := readyOf(r)
			require.NotNil(t, ready)
			if tc.pending != "" {
				assert.Equal(t, certificate.RequestReasonPending, ready.Reason)
				assert.Contains(t, ready.Message, tc.pending)
				assert.Equal(t, now.Add(localca.NotReadyRecheck), next, "asks again after NotReadyRecheck")
				assert.False(t, certificate.Answered(r), "not a failure: nothing backs off")
				return
			}
			assert.Equal(t, certificate.StatusTrue, ready.Status)
			assert.True(t, next.IsZero())
			assert.Equal(t, "good", leafOf(t, r).Issuer.CommonName)
			_, forgets := iss.(certificate.Forgetter)
			assert.False(t, forgets, "it keeps nothing per request, so it is no Forgetter")
		})
	}
}

func TestSelfSignedReadsTheRequestsKey(t *testing.T) {
	ctx := context.Background()
	web := keys.RequestTemplate{CommonName: "web.example", DNSNames: []string{"web.example"}}
	tests := map[string]struct {
		annotate bool
		secret   func(keyPEM []byte) *certificate.Secret
		// reason is the answer: Issued, Pending or InvalidRequest.
		reason string
	}{
		"the request's own key signs it": {annotate: true, reason: certificate.RequestReasonIssued,
			secret: func(k []byte) *certificate.Secret {
				return &certificate.Secret{Data: map[string][]byte{keys.SecretPrivateKey: k}}
			}},
		"no annotation naming the key is invalid": {reason: certificate.RequestConditionInvalidRequest},
		"a key secret not there yet is pending":   {annotate: true, reason: certificate.RequestReasonPending},
		"an undecodable key is invalid": {annotate: true, reason: certificate.RequestConditionInvalidRequest,
			secret: func([]byte) *certificate.Secret {
				return &certificate.Secret{Data: map[string][]byte{keys.SecretPrivateKey: []byte("garbage")}}
			}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r, key := request(t, web, func(r *certificate.CertificateRequest) { r.Namespace = "apps" })
			if tc.annotate {
				r.Annotations = map[string]string{certificate.AnnotationPrivateKeySecretName: "web-next-key"}
			}
			store := secrets{}
			if tc.secret != nil {
				k, err := keys.EncodePrivateKey(key, keys.EncodingPKCS8)
				require.NoError(t, err)
				store["apps/web-next-key"] = tc.secret(k)
			}
			_, err := localca.SelfSigned(store.get, nil).Answer(ctx, r, now)
			require.NoError(t, err)
			switch tc.reason {
			case certificate.RequestReasonIssued:
				leaf := leafOf(t, r)
				assert.Equal(t, leaf.Subject.String(), leaf.Issuer.String(), "self-signed")
				assert.True(t, keys.PublicKeysEqual(leaf.PublicKey, key.Public()))
			case certificate.RequestConditionInvalidRequest:
				c := r.Condition(certificate.RequestConditionInvalidRequest)
				require.NotNil(t, c)
				assert.NotContains(t, c.Message, "garbage", "never quotes the secret")
			case certificate.RequestReasonPending:
				assert.Equal(t, certificate.RequestReasonPending, readyOf(r).Reason)
			}
		})
	}
}

func TestCAIssuerSignsAtOnce(t *testing.T) {
	root, err := localca.NewRoot(rand.Reader, "root", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, now.Add(-time.Hour), 24*time.Hour)
	require.NoError(t, err)
	var iss certificate.Issuer = root.Issuer(nil)
	r, _ := request(t, keys.RequestTemplate{DNSNames: []string{"web.example"}}, nil)
	next, err := iss.Answer(context.Background(), r, now)
	require.NoError(t, err)
	assert.True(t, next.IsZero())
	assert.Equal(t, "root", leafOf(t, r).Issuer.CommonName)
	_, forgets := iss.(certificate.Forgetter)
	assert.False(t, forgets, "it keeps nothing per request, so it is no Forgetter")
}
