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
)

// down is an issuer whose CA fails every request while it is down, and
// passes them to another while it is up; it counts what it is asked.
type down struct {
	up    certificate.Issuer
	mu    sync.Mutex
	isUp  bool
	asked map[string]int // requests answered, by certificate
}

func (d *down) Answer(ctx context.Context, r *certificate.CertificateRequest, now time.Time) (time.Time, error) {
	d.mu.Lock()
	d.asked[r.Annotations[certificate.AnnotationCertificateName]]++
	up := d.isUp
	d.mu.Unlock()
	if !up {
		certificate.SetFailed(r, "the CA is down", now, time.Time{})
		return time.Time{}, nil
	}
	return d.up.Answer(ctx, r, now)
}

func (d *down) setUp(up bool) { d.mu.Lock(); d.isUp = up; d.mu.Unlock() }

func (d *down) count(name string) int { d.mu.Lock(); defer d.mu.Unlock(); return d.asked[name] }

// Certificates with a fallback issuer, over a host whose first CA goes
// down: the first two fail on it and open its circuit; a certificate
// made then goes to the second CA at once, and the first two go there on
// their retry; once the circuit is half-open and the first CA is back,
// one probe goes to it, is issued, closes the circuit, and the next
// certificate goes to the first CA again.
func TestLoopSkipsAnIssuerWhoseCircuitIsOpen(t *testing.T) {
	ctx := context.Background()
	clk := testingclock.NewFakeClock(t0)
	store := host.NewMemoryStore(clk)
	first := &down{up: newCA(t, t0).Issuer(nil), asked: map[string]int{}}
	second := newCA(t, t0).Issuer(nil)
	loop, err := host.New(host.Config{Store: store, Clock: clk,
		Issuers:       map[certificate.IssuerRef]certificate.Issuer{{Name: "ca"}: first, {Name: "ca-2"}: second},
		IssuerCircuit: host.CircuitConfig{Failures: 2, Open: 2 * time.Hour}})
	require.NoError(t, err)
	r := loop.Reconciler()
	create := func(name string) {
		c := newCert("default", name, name+"-tls")
		c.Spec.FallbackIssuerRefs = []certificate.IssuerRef{{Name: "ca-2"}}
		_, err := store.Certificates().Create(ctx, c)
		require.NoError(t, err)
	}
	get := func(name string) *certificate.Certificate {
		c, err := store.Certificates().Get(ctx, "default", name)
		require.NoError(t, err)
		return c
	}
	issuedBy := func(name string) string {
		s, err := store.Secrets().Get(ctx, "default", name+"-tls")
		require.NoError(t, err)
		return s.Annotations[certificate.AnnotationIssuerName]
	}
	advance := func(to time.Duration) {
		require.NoError(t, hosttest.Advance(ctx, loop, clk, t0.Add(to), hosttest.AdvanceOptions{}))
	}

	create("a")
	create("b")
	advance(time.Minute)
	assert.Equal(t, 1, first.count("a"))
	assert.Equal(t, 1, first.count("b"))
	states := r.Circuits()
	require.Len(t, states, 1)
	assert.Equal(t, "ca", states[0].IssuerRef.Name)
	assert.Equal(t, t0.Add(2*time.Hour), states[0].OpenUntil, "two failures open the first CA's circuit for 2 h")
	assert.Equal(t, []certificate.IssuerSkip{{IssuerRef: certificate.IssuerRef{Name: "ca"}.WithDefaults(), Until: t0.Add(2 * time.Hour)}}, r.IssuerHealth(clk.Now()))

	create("c")
	advance(2 * time.Minute)
	c := get("c")
	require.True(t, ready(c), "c: %+v", c.Status.Conditions)
	assert.Equal(t, "ca-2", issuedBy("c"), "made while the circuit is open, c goes to the second CA at once")
	assert.Equal(t, certificate.ReasonIssuerUnhealthy, c.Status.Issuer.Reason)
	assert.Zero(t, first.count("c"))

	// a and b retry after the backoff's hour, past the open circuit.
	advance(time.Hour + 5*time.Minute)
	for _, name := range []string{"a", "b"} {
		got := get(name)
		require.True(t, ready(got), "%s: %+v", name, got.Status.Conditions)
		assert.Equal(t, "ca-2", issuedBy(name))
		assert.Equal(t, 1, first.count(name), "%s asked the first CA only once", name)
	}

	// The first CA is back; at 2 h the circuit is half-open: the next
	// request is the probe, is issued, and closes it.
	first.setUp(true)
	advance(2*time.Hour + time.Minute)
	create("d")
	advance(2*time.Hour + 2*time.Minute)
	require.True(t, ready(get("d")))
	assert.Equal(t, "ca", issuedBy("d"), "the probe goes to the first CA")
	assert.Empty(t, r.Circuits(), "an issued probe closes the circuit")
	create("e")
	advance(2*time.Hour + 3*time.Minute)
	require.True(t, ready(get("e")))
	assert.Equal(t, "ca", issuedBy("e"))
	assert.Equal(t, 1, first.count("e"))
}
