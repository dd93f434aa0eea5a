package host_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/renewal"
)

// ARI is on by default where the CA offers it: a host that builds no
// Config.ARI asks the ACME issuer (a certificate.RenewalAdvisor) about
// each certificate it issued, once per the CA's Retry-After (6 h at
// Pebble) however often it looks at the certificate, and renews in the
// window the CA suggests. The issuer's DisableRenewalInfo turns it off.
func TestARIIsOnByDefaultWhereTheCAOffersIt(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Pebble")
	}
	t.Run("on", func(t *testing.T) {
		e := newMatrixEnv(t, matrixOptions{})
		e.create("web", "web.example")
		e.run("issue", 10*time.Minute, e.ready("web"))
		issued := e.clk.Now()
		next := e.nextAttempt("web") // settled
		require.Equal(t, 1, e.wire.count("renewalInfo"), "asked once the certificate is in its secret")
		assert.Equal(t, issued.Add(renewal.DefaultPoll), next, "looked at again to ask again at Pebble's Retry-After")

		// Passes in between — a write to the certificate, say — ask
		// nothing.
		for range 3 {
			e.update("web", func(c *certificate.Certificate) { c.Labels = map[string]string{"touched": e.clk.Now().String()} })
			e.advance("a pass", e.clk.Now().Add(time.Hour))
		}
		assert.Equal(t, 1, e.wire.count("renewalInfo"), "answered from memory until the next poll")
		assert.Equal(t, 1, revision(e.cert("web")))

		// The CA moves the window to hours from now: the next poll sees
		// it, and the certificate is renewed in it.
		start, end := issued.Add(7*time.Hour), issued.Add(8*time.Hour)
		require.NoError(t, e.srv.SetRenewalInfo(e.leafOf("web"), start, end, "https://ca.example/incident"))
		e.advance("the next poll", issued.Add(renewal.DefaultPoll+time.Minute))
		assert.Equal(t, 2, e.wire.count("renewalInfo"))
		c := e.cert("web")
		require.NotNil(t, c.Status.RenewalTime)
		assert.False(t, c.Status.RenewalTime.Before(start), "renewal in the window: %v", c.Status.RenewalTime)
		assert.True(t, c.Status.RenewalTime.Before(end), "renewal in the window: %v", c.Status.RenewalTime)
		e.advance("through the window", end.Add(time.Minute))
		assert.Equal(t, 2, revision(e.cert("web")), "renewed in the CA's window, 60 days early")
		t.Logf("renewalInfo requests over %v of fake time: %d", e.clk.Now().Sub(issued), e.wire.count("renewalInfo"))
		assert.LessOrEqual(t, e.wire.count("renewalInfo"), 4, "once per certificate per poll")
	})
	t.Run("off", func(t *testing.T) {
		e := newMatrixEnv(t, matrixOptions{tune: func(c *acmeclient.IssuerConfig) { c.DisableRenewalInfo = true }})
		e.create("web", "web.example")
		e.run("issue", 10*time.Minute, e.ready("web"))
		next := e.nextAttempt("web")
		e.advance("a day", e.clk.Now().Add(24*time.Hour))
		assert.Zero(t, e.wire.count("renewalInfo"))
		assert.Greater(t, next.Sub(e.clk.Now()), 30*24*time.Hour, "looked at again at the renewal time only")
	})
}
