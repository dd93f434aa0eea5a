package fleet

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/keys"
)

// csrRequest is a request for name with a new Ed25519 key.
func csrRequest(t *testing.T, name string) (*certificate.CertificateRequest, ed25519.PublicKey) {
	t.Helper()
	key, err := keys.Generate(rand.Reader, keys.KeySpec{Algorithm: keys.AlgorithmEd25519})
	require.NoError(t, err)
	csr, err := keys.BuildCSR(rand.Reader, keys.RequestTemplate{DNSNames: []string{name + ".fleet.example"}}, key)
	require.NoError(t, err)
	r := request(name, "uid-"+name, name)
	r.Spec.Request = csr
	r.Spec.Duration = &certificate.Duration{Duration: 90 * 24 * time.Hour}
	return r, key.Public().(ed25519.PublicKey)
}

func leafOf(t *testing.T, r *certificate.CertificateRequest) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(r.Status.Certificate)
	require.NotNil(t, b, "a PEM certificate")
	leaf, err := x509.ParseCertificate(b.Bytes)
	require.NoError(t, err)
	return leaf
}

// The CA answers each fault as planned; a certificate it issues chains to
// its root, names the CSR's names and is for the CSR's key, unless the
// fault says otherwise.
func TestCAAnswers(t *testing.T) {
	ctx := context.Background()
	now := t0.Add(time.Hour)
	for name, tc := range map[string]struct {
		fault fault
		check func(t *testing.T, c *ca, r *certificate.CertificateRequest, pub ed25519.PublicKey)
	}{
		"a good certificate": {faultNone, func(t *testing.T, c *ca, r *certificate.CertificateRequest, pub ed25519.PublicKey) {
			leaf := leafOf(t, r)
			roots := x509.NewCertPool()
			roots.AddCert(c.cert)
			_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, DNSName: "web.fleet.example"})
			require.NoError(t, err)
			assert.True(t, pub.Equal(leaf.PublicKey), "for the CSR's key")
			assert.Equal(t, now.Add(90*24*time.Hour), leaf.NotAfter, "for the request's duration")
			assert.Equal(t, c.certPEM, r.Status.CA)
		}},
		"a certificate for another key": {faultWrongKey, func(t *testing.T, _ *ca, r *certificate.CertificateRequest, pub ed25519.PublicKey) {
			assert.False(t, pub.Equal(leafOf(t, r).PublicKey))
		}},
		"an expired certificate": {faultExpired, func(t *testing.T, _ *ca, r *certificate.CertificateRequest, _ ed25519.PublicKey) {
			assert.True(t, leafOf(t, r).NotAfter.Before(now))
		}},
		"a failure": {faultFail, func(t *testing.T, _ *ca, r *certificate.CertificateRequest, _ ed25519.PublicKey) {
			assert.Equal(t, now, *r.Status.FailureTime)
			assert.Nil(t, r.Status.RetryAfter)
		}},
		"a rate limit with a Retry-After": {faultRateLimited, func(t *testing.T, _ *ca, r *certificate.CertificateRequest, _ ed25519.PublicKey) {
			require.NotNil(t, r.Status.RetryAfter)
			assert.Equal(t, now.Add(RateLimitWait), *r.Status.RetryAfter)
		}},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := newCA(rand.Reader, "test CA", t0)
			require.NoError(t, err)
			c.retryAfter = RateLimitWait
			c.plan = func(*certificate.CertificateRequest, time.Time) (fault, time.Duration) { return tc.fault, 0 }
			r, pub := csrRequest(t, "web")
			next, err := c.Answer(ctx, r, now)
			require.NoError(t, err)
			assert.Zero(t, next)
			require.True(t, certificate.Answered(r))
			tc.check(t, c, r, pub)
			assert.Equal(t, 1, c.faults[tc.fault])
		})
	}
}

// An order the CA keeps pending answers at its time; the CA keeps every
// order, answered or not, until it is told to forget it.
func TestCAKeepsOrdersUntilTold(t *testing.T) {
	ctx := context.Background()
	c, err := newCA(rand.Reader, "test CA", t0)
	require.NoError(t, err)
	c.plan = func(*certificate.CertificateRequest, time.Time) (fault, time.Duration) {
		return faultNone, 10 * time.Minute
	}
	r, _ := csrRequest(t, "web")

	next, err := c.Answer(ctx, r, t0)
	require.NoError(t, err)
	assert.Equal(t, t0.Add(10*time.Minute), next)
	ready := r.Condition(certificate.RequestConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, certificate.RequestReasonPending, ready.Reason)
	assert.Contains(t, ready.Message, "answers at 2027-01-04T00:10:00Z")

	next, err = c.Answer(ctx, r, t0.Add(5*time.Minute))
	require.NoError(t, err)
	assert.Equal(t, t0.Add(10*time.Minute), next, "the same order, the same time")
	_, err = c.Answer(ctx, r, next)
	require.NoError(t, err)
	assert.True(t, certificate.Answered(r))
	assert.True(t, c.holds("fleet", "web"), "kept once answered")
	assert.Equal(t, []objKey{{"fleet", "web"}}, c.takeMade())

	require.NoError(t, c.Forget(ctx, "fleet", "web"))
	assert.False(t, c.holds("fleet", "web"))
	assert.Zero(t, c.orderCount())
	require.NoError(t, c.Forget(ctx, "fleet", "never-seen"), "a request it never saw is no error")
	assert.Equal(t, 1, c.forgets)
}
