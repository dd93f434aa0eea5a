package certificate

import (
	"testing"
	"time"

	"github.com/certlife/certlife/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Nothing lost: a target secret that holds data neither certlife nor the
// reference operator wrote — not owned by the certificate, with neither's
// annotations — is never written, no key is made for it and no request
// created; Ready is False, SecretNotOwned, naming the secret and how to
// hand it over, and the decision looks again on a fixed tick (the
// secret's own change comes through the host's watch). An empty secret,
// one with only labels and annotations, one the certificate owns, one
// either operator wrote, and one handed over with
// certlife.dev/allow-takeover: "true" are written as before.
func TestASecretCertlifeDidNotWriteIsNeverOverwritten(t *testing.T) {
	f := newFixture(t)
	// userSecret is a CA key pair a user made by hand: a key and a
	// certificate that match, under the name the certificate asks for.
	userSecret := func() *Secret {
		key := f.key(keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
		keyPEM, err := keys.EncodePrivateKey(key, keys.EncodingPKCS1)
		require.NoError(t, err)
		return &Secret{ObjectMeta: ObjectMeta{Name: "web-tls", Namespace: "default", ResourceVersion: "3"},
			Data: map[string][]byte{keys.SecretPrivateKey: keyPEM, keys.SecretCertificate: f.sign(key.Public(), keys.RequestTemplate{CommonName: "my own CA"}, t0.AddDate(-1, 0, 0), t0.AddDate(1, 0, 0)), keys.SecretCA: f.caPEM}}
	}
	first := func(sec *Secret) *Snapshot { return &Snapshot{Certificate: testCertificate(), Secret: sec} }
	withSecret := func(mutate func(*Secret)) func() *Snapshot {
		return func() *Snapshot {
			sec := userSecret()
			mutate(sec)
			return first(sec)
		}
	}
	tests := map[string]struct {
		snapshot func() *Snapshot
		// held: the secret is left alone, and says what it holds.
		held  bool
		holds string
	}{
		"a key pair a user made by hand is left alone": {
			snapshot: func() *Snapshot { return first(userSecret()) }, held: true, holds: "holds ca.crt, tls.crt, tls.key,"},
		"a secret with only a CA certificate is left alone": {
			snapshot: withSecret(func(s *Secret) { s.Data = map[string][]byte{keys.SecretCA: f.caPEM} }), held: true, holds: "holds ca.crt,"},
		"a secret with other data (a password) is left alone: a write would replace it": {
			snapshot: withSecret(func(s *Secret) { s.Data = map[string][]byte{"password": []byte("hunter2")} }), held: true, holds: "holds password,"},
		"a secret another object owns is left alone": {
			snapshot: withSecret(func(s *Secret) { s.OwnerUID = "uid-of-a-helm-release" }), held: true},
		"an allow-takeover annotation other than \"true\" hands nothing over": {
			snapshot: withSecret(func(s *Secret) { s.Annotations = map[string]string{AnnotationAllowTakeover: "yes"} }), held: true},
		"other annotations a user set do not make it certlife's": {
			snapshot: withSecret(func(s *Secret) {
				s.Annotations = map[string]string{"owner": "platform-team", AnnotationCommonName: "my own CA"}
			}), held: true},
		"under rotation policy Never the key of a held secret is not reused": {
			snapshot: func() *Snapshot {
				s := first(userSecret())
				s.Certificate.Spec.PrivateKey.RotationPolicy = keys.RotationNever
				return s
			}, held: true},
		"a certificate that was Ready, whose secret a user replaced with their own, does not renew over it": {
			snapshot: func() *Snapshot {
				s, _ := f.healthy(t0.Add(-80 * 24 * time.Hour)) // due for renewal
				s.Secret = userSecret()
				return s
			}, held: true},
		"a manual trigger does not make it writable": {
			snapshot: func() *Snapshot {
				s := first(userSecret())
				s.Certificate.Status.Conditions = []Condition{{Type: ConditionIssuing, Status: StatusTrue, Reason: ReasonManualTrigger, LastTransitionTime: t0.Add(-time.Minute)}}
				return s
			}, held: true},
		"an issuance in progress whose request is answered writes nothing into it": {
			snapshot: func() *Snapshot {
				r := f.renewing()
				r.s.Secret = userSecret()
				return r.s
			}, held: true},

		"an empty secret made beforehand is filled": {
			snapshot: withSecret(func(s *Secret) { s.Data = nil })},
		"a secret with only labels and annotations is filled": {
			snapshot: withSecret(func(s *Secret) {
				s.Data = nil
				s.Labels, s.Annotations = map[string]string{"team": "web"}, map[string]string{"owner": "platform-team"}
			})},
		"a kubernetes.io/tls secret with empty tls.crt and tls.key is filled": {
			snapshot: withSecret(func(s *Secret) {
				s.Data = map[string][]byte{keys.SecretCertificate: {}, keys.SecretPrivateKey: {}}
			})},
		"a secret the certificate owns is written": {
			snapshot: withSecret(func(s *Secret) { s.OwnerUID = "uid-web" })},
		"a secret certlife wrote (certificate-name annotation) is written": {
			snapshot: withSecret(func(s *Secret) { s.Annotations = map[string]string{AnnotationCertificateName: "web"} })},
		"a secret certlife wrote (issuer-name annotation) is written": {
			snapshot: withSecret(func(s *Secret) { s.Annotations = map[string]string{AnnotationIssuerName: "ca"} })},
		"a secret cert-manager wrote (cert-manager.io/certificate-name) is taken over": {
			snapshot: withSecret(func(s *Secret) { s.Annotations = map[string]string{AnnotationCertManagerCertificateName: "web"} })},
		"a secret cert-manager wrote (cert-manager.io/issuer-name) is taken over": {
			snapshot: withSecret(func(s *Secret) { s.Annotations = map[string]string{AnnotationCertManagerIssuerName: "ca"} })},
		"a secret handed over with certlife.dev/allow-takeover: \"true\" is taken over": {
			snapshot: withSecret(func(s *Secret) { s.Annotations = map[string]string{AnnotationAllowTakeover: "true"} })},
		"an answered issuance into a secret handed over is written": {
			snapshot: func() *Snapshot {
				r := f.renewing()
				r.s.Secret = userSecret()
				r.s.Secret.Annotations = map[string]string{AnnotationAllowTakeover: "true"}
				return r.s
			}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := tc.snapshot()
			res := Reconcile(s, t0, Config{})
			checkEqualsStages(t, s, t0, Config{}, res)
			checkLiveness(t, s, t0, Config{})
			st := finalStatus(s, res)
			ready := st.Condition(ConditionReady)
			if !tc.held {
				require.NotEqual(t, ReasonSecretNotOwned, res.Reason, res.Message)
				require.NotNil(t, ready)
				assert.NotEqual(t, ReasonSecretNotOwned, ready.Reason, ready.Message)
				issuing := false
				for _, a := range res.Actions {
					switch a.(type) {
					case GenerateKey, WriteSecret:
						issuing = true
					}
				}
				assert.True(t, issuing, "the secret is not issued into: %v (%s: %s)", res.Actions, res.Reason, res.Message)
				return
			}

			// The decision, and every stage alone, touch nothing.
			for _, r := range []Result{res, Trigger(s, t0, Config{}), KeyManager(s, t0, Config{}), RequestManager(s, t0, Config{}), Issue(s, t0, Config{}), Readiness(s, t0, Config{})} {
				for _, a := range r.Actions {
					switch a.(type) {
					case UpdateStatus:
					case DeleteSecret:
						// next private keys a certificate that is not
						// issuing no longer needs: its own
					default:
						t.Fatalf("%s asked for %v on a secret certlife did not write", r.Stage, a)
					}
				}
			}
			assert.Equal(t, ReasonSecretNotOwned, res.Reason)
			assert.Equal(t, StageTrigger, res.Stage)
			require.NotNil(t, ready)
			assert.Equal(t, StatusFalse, ready.Status)
			assert.Equal(t, ReasonSecretNotOwned, ready.Reason)
			for _, want := range []string{"secret web-tls " + tc.holds, "neither certlife nor cert-manager wrote",
				"kubectl annotate secret -n default web-tls certlife.dev/allow-takeover=true"} {
				assert.Contains(t, ready.Message, want)
			}
			// It looks again on the hourly tick from the certificate's
			// creation, and says so.
			tick := nextTick(s.Certificate.CreationTimestamp, time.Hour, t0)
			assert.Equal(t, tick, res.RequeueAt)
			assert.Contains(t, res.Message, "looking again when the secret changes, or at "+stamp(tick))

			// Handed over, the same snapshot issues into it.
			handed := *s.Secret
			handed.Annotations = map[string]string{AnnotationAllowTakeover: "true"}
			s.Secret = &handed
			again := Reconcile(s, t0, Config{})
			assert.NotEqual(t, ReasonSecretNotOwned, again.Reason, again.Message)
			st = finalStatus(s, again)
			assert.NotEqual(t, ReasonSecretNotOwned, st.Condition(ConditionReady).Reason)
		})
	}
}
