package operator_test

import (
	"context"
	"maps"
	"strings"
	"sync"
	"testing"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/keys"

	"github.com/certlife/certlife/examples/kubernetes/operator"
)

// readyCondition is a certificate's Ready condition, nil if it has none.
func (h *harness) readyCondition(name string) *cmapi.CertificateCondition {
	c := &cmapi.Certificate{}
	if err := k8s.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: name}, c); err != nil {
		return nil
	}
	return condition(c.Status.Conditions, certificate.ConditionReady)
}

// waitNotOwned waits until the certificate says, on Ready, that it
// leaves its Secret alone, and returns the message.
func (h *harness) waitNotOwned(name string) string {
	h.t.Helper()
	var msg string
	h.eventually(name+" Ready=False "+certificate.ReasonSecretNotOwned, func() bool {
		c := h.readyCondition(name)
		if c == nil || c.Status != cmmeta.ConditionFalse || c.Reason != certificate.ReasonSecretNotOwned {
			return false
		}
		msg = c.Message
		return true
	})
	return msg
}

// The user's own CA key pair, which an Issuer signs with, named as a
// Certificate's secretName: the Certificate does not take it. Ready is
// False with reason SecretNotOwned naming the Secret and the annotation
// that hands it over, a Warning Event says so, no key or request is
// made, the Secret's data is what the user put there and the Issuer stays
// Ready. Annotated certlife.dev/allow-takeover=true, the Secret is issued
// into (at the Certificate's next look: an unlabelled Secret is not in
// the operator's cache, so its change brings no pass of its own).
func TestUnownedSecretIsNotOverwritten(t *testing.T) {
	h := newHarness(t)
	r := h.start()
	h.caIssuer("ca") // the Issuer ca signs with Secret ca-ca
	h.eventually("issuer ca Ready", func() bool {
		var iss cmapi.Issuer
		if k8s.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "ca"}, &iss) != nil {
			return false
		}
		c := condition(iss.Status.Conditions, "Ready")
		return c != nil && c.Status == cmmeta.ConditionTrue
	})
	before, err := h.secret("ca-ca")
	require.NoError(t, err)

	h.create(h.certificate("web", "ca", func(s *cmapi.CertificateSpec) { s.SecretName = "ca-ca" }))
	msg := h.waitNotOwned("web")
	assert.Contains(t, msg, "secret ca-ca holds tls.crt, tls.key")
	assert.Contains(t, msg, "kubectl annotate secret -n "+h.ns+" ca-ca "+certificate.AnnotationAllowTakeover+"=true")
	h.eventually("a Warning Event SecretNotOwned", func() bool {
		return len(h.eventNotesOfType("web", corev1.EventTypeWarning, certificate.ReasonSecretNotOwned)) > 0
	})
	h.settle(r)

	after, err := h.secret("ca-ca")
	require.NoError(t, err)
	assert.Equal(t, before.Data, after.Data, "the user's CA key pair is untouched")
	assert.Equal(t, before.ResourceVersion, after.ResourceVersion, "the Secret is not written at all")
	assert.Empty(t, h.requests(), "no request for a Secret that cannot be written")
	var secrets corev1.SecretList
	require.NoError(t, k8s.List(h.ctx, &secrets, client.InNamespace(h.ns)))
	assert.Len(t, secrets.Items, 1, "no next private key made")
	var iss cmapi.Issuer
	require.NoError(t, k8s.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "ca"}, &iss))
	c := condition(iss.Status.Conditions, "Ready")
	require.NotNil(t, c)
	assert.Equal(t, cmmeta.ConditionTrue, c.Status, "the Issuer on the user's CA stays Ready")

	// Handed over.
	cur, err := h.secret("ca-ca")
	require.NoError(t, err)
	cur.Annotations = map[string]string{certificate.AnnotationAllowTakeover: "true"}
	require.NoError(t, k8s.Update(h.ctx, cur))
	h.clock.Step(operator.SecretRecheck) // the Certificate's next look: the annotation brings no watch event
	h.waitReady("web", 1)
	got, err := h.secret("ca-ca")
	require.NoError(t, err)
	assert.NotEqual(t, before.Data[keys.SecretPrivateKey], got.Data[keys.SecretPrivateKey], "the Certificate's own key, once handed over")
	assert.Equal(t, "true", got.Labels[operator.LabelManaged])
	assert.Equal(t, "web", got.Annotations[certificate.AnnotationCertManagerCertificateName])
}

// A Secret made beforehand with only labels and annotations (as a user
// does to set them, or a tool that reserves the name) is filled, and
// keeps what it had.
func TestEmptyPrecreatedSecretIsFilled(t *testing.T) {
	h := newHarness(t)
	h.start()
	h.caIssuer("ca")
	h.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "web-tls", Labels: map[string]string{"team": "web"},
		Annotations: map[string]string{"reflector.example/allowed": "true"}}})
	h.create(h.certificate("web", "ca"))
	h.waitReady("web", 1)
	s, err := h.secret("web-tls")
	require.NoError(t, err)
	assert.NotEmpty(t, s.Data[keys.SecretCertificate])
	assert.NotEmpty(t, s.Data[keys.SecretPrivateKey])
	assert.Equal(t, "web", s.Labels["team"], "the Secret's own label stays")
	assert.Equal(t, "true", s.Annotations["reflector.example/allowed"], "the Secret's own annotation stays")
}

// racingClient wraps the operator's client (the counting one) so that
// just before the operator's first write of kind op ("create" or
// "patch") to Secret name, race runs: someone else writes the Secret
// between the decision and the operator's write.
func racingClient(op, name string, race func(context.Context)) func(*manager.Options, *operator.Options) {
	return func(mo *manager.Options, _ *operator.Options) {
		inner := mo.NewClient
		mo.NewClient = func(cfg *rest.Config, o client.Options) (client.Client, error) {
			c, err := inner(cfg, o)
			if err != nil {
				return nil, err
			}
			var once sync.Once
			before := func(ctx context.Context, obj client.Object) {
				if _, ok := obj.(*corev1.Secret); ok && obj.GetName() == name {
					once.Do(func() { race(ctx) })
				}
			}
			return interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					if op == "create" {
						before(ctx, obj)
					}
					return c.Create(ctx, obj, opts...)
				},
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
					if op == "patch" {
						before(ctx, obj)
					}
					return c.Patch(ctx, obj, p, opts...)
				},
			}), nil
		}
	}
}

// Writes to a Secret carry the resource version read: a Secret someone
// else fills between the decision and the write — created where the
// decision saw none, or written over the empty one it saw — is never
// overwritten. The operator's write fails (AlreadyExists, Conflict), the
// next decision reads the Secret as it is now, and refuses it
// (SecretNotOwned): no blind update after AlreadyExists, no write over a
// newer version.
func TestSecretWrittenMeanwhileIsNotOverwritten(t *testing.T) {
	userData := map[string][]byte{keys.SecretCertificate: []byte("the user's certificate"), keys.SecretPrivateKey: []byte("the user's key")}
	tests := map[string]struct {
		op         string
		precreated bool
	}{
		"a Secret created after the decision found none":   {op: "create"},
		"a Secret filled after the decision read it empty": {op: "patch", precreated: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			race := func(ctx context.Context) {
				var s corev1.Secret
				err := k8s.Get(ctx, client.ObjectKey{Namespace: h.ns, Name: "web-tls"}, &s)
				// On the operator's goroutine: assert, not require.
				if tc.precreated {
					assert.NoError(t, err)
					s.Data = maps.Clone(userData)
					assert.NoError(t, k8s.Update(ctx, &s))
					return
				}
				assert.NoError(t, k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "web-tls", Namespace: h.ns}, Data: maps.Clone(userData)}))
			}
			r := h.start(racingClient(tc.op, "web-tls", race))
			h.caIssuer("ca")
			if tc.precreated {
				h.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "web-tls", Labels: map[string]string{"team": "web"}}})
			}
			h.create(h.certificate("web", "ca"))
			msg := h.waitNotOwned("web")
			assert.Contains(t, msg, "secret web-tls holds tls.crt, tls.key")
			h.settle(r)
			s, err := h.secret("web-tls")
			require.NoError(t, err)
			assert.Equal(t, userData, s.Data, "what the user wrote meanwhile is kept")
			_, failed := r.writes.take()
			want := map[string]string{"create": "create Secret", "patch": "patch Secret"}[tc.op]
			assert.Equal(t, 1, failed[want], "the operator's one write at the version it read failed: %v", failed)
			assert.False(t, strings.Contains(s.Annotations[certificate.AnnotationCertManagerCertificateName], "web"), "nothing of the operator's is on the Secret")
		})
	}
}
