package host_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/host/hosttest"
	"github.com/certlife/certlife/keys"
)

// held is an issuer that leaves requests pending, asking for no next
// call, until it is released to another.
type held struct {
	mu    sync.Mutex
	inner certificate.Issuer
}

func (h *held) release(to certificate.Issuer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.inner = to
}

func (h *held) Answer(ctx context.Context, r *certificate.CertificateRequest, now time.Time) (time.Time, error) {
	h.mu.Lock()
	inner := h.inner
	h.mu.Unlock()
	if inner == nil {
		certificate.SetPending(r, "held", now)
		return time.Time{}, nil
	}
	return inner.Answer(ctx, r, now)
}

func (*held) Forget(context.Context, string, string) error { return nil }

// The loop carries out WriteTemporaryCertificate: while the issuer has
// not answered the first request, the secret holds a temporary
// certificate for the next private key (with the spec's key encoding and
// outputs, the secretTemplate's metadata, owned by the certificate), and
// the certificate is not Ready; once the issuer answers, the issued
// certificate replaces it, for the same key, and the certificate is Ready.
// On both provided stores.
func TestLoopWritesATemporaryCertificateWhileTheIssuerWorks(t *testing.T) {
	stores(t, func(t *testing.T, s host.Store) {
		ctx := context.Background()
		iss := &held{}
		f := newFixture(t, func(*testingclock.FakeClock) host.Store { return s }, iss)
		c := newCert("default", "web", "web-tls")
		c.Spec.IssueTemporaryCertificate = true
		c.Spec.PrivateKey = &keys.KeySpec{Algorithm: keys.AlgorithmECDSA, Encoding: keys.EncodingPKCS8}
		c.Spec.AdditionalOutputFormats = []certificate.OutputFormat{certificate.OutputCombinedPEM}
		c.Spec.SecretTemplate = &certificate.SecretTemplate{Labels: map[string]string{"app": "web"}}
		f.create(t, c)

		require.NoError(t, hosttest.Advance(ctx, f.loop, f.clk, t0.Add(time.Second), hosttest.AdvanceOptions{}))
		got := f.cert(t, "web")
		sec, err := f.store.Secrets().Get(ctx, "default", "web-tls")
		require.NoError(t, err, "no secret while the issuer works")
		p, err := keys.ParseSecretData(sec.Data)
		require.NoError(t, err)
		require.True(t, p.KeyMatches)
		assert.True(t, keys.IsTemporaryCertificate(p.Leaf), "issued by %s", p.Leaf.Issuer)
		assert.Equal(t, []string{"web.example"}, p.Leaf.DNSNames)
		assert.Contains(t, string(sec.Data[keys.SecretPrivateKey]), "BEGIN PRIVATE KEY", "PKCS#8, as the spec asks")
		assert.NotEmpty(t, sec.Data[keys.SecretCombinedPEM])
		assert.Equal(t, "web", sec.Labels["app"])
		assert.Equal(t, "web", sec.Annotations[certificate.AnnotationCertificateName])
		assert.Empty(t, sec.Annotations[certificate.AnnotationIssuerName], "no issuer signed it")
		assert.Equal(t, got.UID, sec.OwnerUID)
		next, err := f.store.Secrets().Get(ctx, "default", got.Status.NextPrivateKeySecretName)
		require.NoError(t, err)
		nextKey, err := keys.DecodePrivateKey(next.Data[keys.SecretPrivateKey])
		require.NoError(t, err)
		assert.True(t, keys.PublicKeysEqual(p.Key.Public(), nextKey.Public()), "the temporary certificate is for the next private key")
		r := got.Status.Condition(certificate.ConditionReady)
		require.NotNil(t, r)
		assert.Equal(t, certificate.ReasonTemporaryCertificate, r.Reason)
		assert.Nil(t, got.Status.NotAfter)

		// The loop asks again while the issuer works, and writes the
		// temporary certificate no more.
		version := sec.ResourceVersion
		require.NoError(t, hosttest.Advance(ctx, f.loop, f.clk, t0.Add(10*time.Minute), hosttest.AdvanceOptions{}))
		sec, err = f.store.Secrets().Get(ctx, "default", "web-tls")
		require.NoError(t, err)
		assert.Equal(t, version, sec.ResourceVersion, "the secret is written once")

		iss.release(newCA(t, t0).Issuer(nil))
		f.loop.Notify(host.KindRequest, "default", "web-1")
		require.NoError(t, hosttest.Advance(ctx, f.loop, f.clk, t0.Add(12*time.Minute), hosttest.AdvanceOptions{}))
		got = f.cert(t, "web")
		require.True(t, ready(got), "%+v", got.Status.Conditions)
		assert.Equal(t, 1, revision(got))
		sec, err = f.store.Secrets().Get(ctx, "default", "web-tls")
		require.NoError(t, err)
		p, err = keys.ParseSecretData(sec.Data)
		require.NoError(t, err)
		assert.False(t, keys.IsTemporaryCertificate(p.Leaf))
		assert.Equal(t, "certlife test CA", p.Leaf.Issuer.CommonName)
		assert.True(t, keys.PublicKeysEqual(p.Key.Public(), nextKey.Public()), "the issued certificate is for the same key")
		reqs, err := f.store.Requests().List(ctx, host.ListOptions{OwnerUID: got.UID})
		require.NoError(t, err)
		assert.Equal(t, []string{"web-1"}, names(reqs), "one request")
		assertNoNextKeys(t, f.store, got.UID)
	})
}
