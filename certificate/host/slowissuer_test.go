package host_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/utils/clock"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
)

// blockingIssuer answers nothing until released (or its context ends),
// then fails the request.
type blockingIssuer struct {
	release chan struct{}
	calls   int
}

func (b *blockingIssuer) Answer(ctx context.Context, r *certificate.CertificateRequest, now time.Time) (time.Time, error) {
	b.calls++
	select {
	case <-b.release:
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
	certificate.SetFailed(r, "the slow issuer gave up", now, time.Time{})
	return time.Time{}, nil
}

// Under Run, an issuer that does not answer holds up its own requests
// only: a certificate of another issuer beside it is issued while the
// first issuer's answer is still in flight, and the slow issuer is asked
// about one request at a time.
func TestASlowIssuerHoldsUpOnlyItsOwnRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		st := host.NewMemoryStore(clock.RealClock{})
		slow := &blockingIssuer{release: make(chan struct{})}
		loop, err := host.New(host.Config{Store: st, Issuers: map[certificate.IssuerRef]certificate.Issuer{
			{Name: "slow"}: slow,
			{Name: "ca"}:   newCA(t, time.Now()).Issuer(nil),
		}})
		require.NoError(t, err)
		for _, name := range []string{"slow-a", "slow-b"} {
			c := newCert("default", name, name+"-tls")
			c.Spec.IssuerRef = certificate.IssuerRef{Name: "slow"}
			_, err = st.Certificates().Create(ctx, c)
			require.NoError(t, err)
		}
		_, err = st.Certificates().Create(ctx, newCert("default", "web", "web-tls"))
		require.NoError(t, err)

		done := make(chan error, 1)
		go func() { done <- loop.Run(ctx) }()
		synctest.Wait() // everything that can happen without the slow issuer has

		web, err := st.Certificates().Get(ctx, "default", "web")
		require.NoError(t, err)
		require.True(t, ready(web), "web is issued while the slow issuer's answer is in flight: %+v", web.Status.Conditions)
		require.Equal(t, 1, slow.calls, "the slow issuer is asked about one request at a time")
		require.True(t, loop.Answering(), "an answer is in flight")

		close(slow.release) // the slow issuer answers, and then the other request
		synctest.Wait()
		require.Equal(t, 2, slow.calls)
		for _, name := range []string{"slow-a", "slow-b"} {
			c, err := st.Certificates().Get(ctx, "default", name)
			require.NoError(t, err)
			require.False(t, ready(c), "%s", name)
			require.Equal(t, certificate.ReasonFailed, c.Status.Condition(certificate.ConditionIssuing).Reason, "%s: %+v", name, c.Status.Conditions)
		}
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
	})
}
