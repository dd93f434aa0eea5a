package host

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/certificate"
)

// silent is an issuer that never answers: these tests look at where
// requests go, not at what comes back.
type silent struct{}

func (silent) Answer(context.Context, *certificate.CertificateRequest, time.Time) (time.Time, error) {
	return time.Time{}, nil
}

// Two replicas whose circuits disagree — each has seen the other's pick
// fail — take turns over a certificate with a fallback issuer: the
// request is made, to one of them, within a few passes; neither undoes
// the other's choice back and forth.
func TestReplicasWithOppositeCircuitsMakeTheRequest(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	clk := testingclock.NewFakeClock(t0)
	store := NewMemoryStore(clk)
	ca, ca2 := certificate.IssuerRef{Name: "ca"}, certificate.IssuerRef{Name: "ca-2"}
	replica := func(id string, failing certificate.IssuerRef) *Reconciler {
		r, err := NewReconciler(Config{Store: store, Clock: clk, Identity: id,
			Issuers:       map[certificate.IssuerRef]certificate.Issuer{ca: silent{}, ca2: silent{}},
			IssuerCircuit: CircuitConfig{Failures: 1}})
		require.NoError(t, err)
		r.circuits.failed(failing, t0)
		return r
	}
	a, b := replica("a", ca), replica("b", ca2)
	_, err := store.Certificates().Create(ctx, &certificate.Certificate{
		ObjectMeta: certificate.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: certificate.Spec{SecretName: "web-tls", DNSNames: []string{"web.example"}, IssuerRef: ca,
			FallbackIssuerRefs: []certificate.IssuerRef{ca2}},
	})
	require.NoError(t, err)
	var choices []string
	for pass := range 40 {
		r := []*Reconciler{a, b}[pass%2]
		ev, err := r.Certificate(ctx, "default", "web")
		require.NoError(t, err)
		if ev.Certificate != nil && ev.Certificate.Status.Issuer != nil {
			choices = append(choices, r.Identity()+":"+ev.Certificate.Status.Issuer.IssuerRef.Name)
		}
		reqs, err := store.Requests().List(ctx, ListOptions{Namespace: "default"})
		require.NoError(t, err)
		if len(reqs) > 0 {
			t.Logf("request %s to %s after %d passes; choices seen: %v", reqs[0].Name, reqs[0].Spec.IssuerRef.Name, pass+1, choices)
			return
		}
		clk.Step(time.Millisecond)
	}
	t.Fatalf("no request after 40 passes taken in turn; the choice went %v", choices)
}
