package host_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/host/hosttest"
)

// A spec the host could not build a CSR of (or built one of that read
// back otherwise, replaced on every pass) is refused where the user looks:
// Ready=False, InvalidSpec, the field and its value in the message. No
// request is made, no pass fails, nothing is retried on its own; the
// spec's correction issues the certificate. (A subject that is not UTF-8,
// which Validate refuses too, never reaches a store that keeps JSON.)
func TestSpecThatCannotBeBuiltIsAStatedReason(t *testing.T) {
	tests := map[string]struct {
		mutate func(*certificate.Spec)
		words  string
	}{
		"an email address with non-ASCII characters": {func(s *certificate.Spec) { s.EmailAddresses = []string{"öps@web.example"} },
			`spec.emailAddresses[0]: "öps@web.example" has non-ASCII characters`},
		"a URI that reads back otherwise": {func(s *certificate.Spec) { s.URIs = []string{"SPIFFE://cluster.local/web"} },
			`spec.uris[0]: "SPIFFE://cluster.local/web" is not in the form a certificate carries it: write "spiffe://cluster.local/web"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t, nil, newCA(t, t0).Issuer(nil))
			c := newCert("default", "web", "web-tls")
			tc.mutate(&c.Spec)
			f.create(t, c)
			_, err := hosttest.Settle(ctx, f.loop, 20)
			require.NoError(t, err)

			got := f.cert(t, "web")
			r := got.Status.Condition(certificate.ConditionReady)
			require.NotNil(t, r)
			assert.Equal(t, certificate.StatusFalse, r.Status)
			assert.Equal(t, certificate.ReasonInvalidSpec, r.Reason)
			assert.Contains(t, r.Message, tc.words)
			reqs, err := f.store.Requests().List(ctx, host.ListOptions{Namespace: "default"})
			require.NoError(t, err)
			assert.Empty(t, reqs, "a request was made for a spec that cannot be built")
			for _, e := range f.evs {
				assert.NoError(t, e.Err, "a pass failed instead of stating the reason")
			}
			_, due := f.loop.NextFor(host.KindCertificate, "default", "web")
			assert.False(t, due, "the loop retries a spec only its correction can fix")

			got.Spec = newCert("default", "web", "web-tls").Spec
			_, err = f.store.Certificates().Update(ctx, got)
			require.NoError(t, err)
			_, err = hosttest.Settle(ctx, f.loop, 50)
			require.NoError(t, err)
			assert.True(t, ready(f.cert(t, "web")), "the corrected spec is not issued: %+v", f.cert(t, "web").Status.Conditions)
		})
	}
}
