package certificate

import (
	"crypto"
	"crypto/rand"
	"testing"
	"time"

	"github.com/certlife/certlife/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A secret that drifted around a certificate that is in line is rewritten
// from the key and chain it holds: one write, no new key, no new request,
// no backoff. The trigger and readiness say what drifted.
func TestSecretDriftIsRepairedWithoutReissuing(t *testing.T) {
	f := newFixture(t)
	issued := t0.Add(-10 * 24 * time.Hour)
	tests := map[string]struct {
		mutate func(t *testing.T, s *Snapshot)
		drift  string // a part of what the trigger and readiness say drifted
	}{
		"a secretTemplate label the secret lost": {
			mutate: func(_ *testing.T, s *Snapshot) {
				s.Certificate.Spec.SecretTemplate = &SecretTemplate{Labels: map[string]string{"team": "web"}}
			},
			drift: "label team is missing",
		},
		"a secretTemplate annotation with another value": {
			mutate: func(_ *testing.T, s *Snapshot) {
				s.Certificate.Spec.SecretTemplate = &SecretTemplate{Annotations: map[string]string{"owner": "alice"}}
				s.Secret.Annotations["owner"] = "bob"
			},
			drift: `annotation owner is "bob", not "alice"`,
		},
		"issuer annotations removed by hand": {
			mutate: func(_ *testing.T, s *Snapshot) {
				delete(s.Secret.Annotations, AnnotationIssuerName)
				delete(s.Secret.Annotations, AnnotationIssuerKind)
			},
			drift: "annotation certlife.dev/issuer-kind is missing; annotation certlife.dev/issuer-name is missing",
		},
		"certificate details that do not match the certificate": {
			mutate: func(_ *testing.T, s *Snapshot) { s.Secret.Annotations[AnnotationAltNames] = "old.example" },
			drift:  `annotation certlife.dev/alt-names is "old.example", not "web.example,www.web.example"`,
		},
		"no certlife annotations at all on a secret the certificate owns (written before them)": {
			mutate: func(_ *testing.T, s *Snapshot) { s.Secret.Annotations, s.Secret.OwnerUID = nil, s.Certificate.UID },
			drift:  "annotation certlife.dev/alt-names is missing",
		},
		"a combined PEM the spec asks for is missing": {
			mutate: func(_ *testing.T, s *Snapshot) {
				s.Certificate.Spec.AdditionalOutputFormats = []OutputFormat{OutputCombinedPEM}
			},
			drift: "tls-combined.pem is missing",
		},
		"a DER key no longer asked for": {
			mutate: func(_ *testing.T, s *Snapshot) { s.Secret.Data[keys.SecretKeyDER] = []byte{1} },
			drift:  "key.der is no longer asked for",
		},
		"a key encoding changed in the spec": {
			mutate: func(_ *testing.T, s *Snapshot) { s.Certificate.Spec.PrivateKey.Encoding = keys.EncodingPKCS8 },
			drift:  "tls.key is not in the PKCS8 encoding",
		},
		"a PKCS#12 keystore whose password changed": {
			mutate: func(t *testing.T, s *Snapshot) {
				out := testOutputSpec(s)
				out.PKCS12 = &keys.PKCS12Spec{Password: "old-password"}
				data, err := keys.SecretData(rand.Reader, mustKeyOf(t, s), s.Secret.Data[keys.SecretCertificate], s.Secret.Data[keys.SecretCA], out)
				require.NoError(t, err)
				s.Secret.Data = data
				s.Certificate.Spec.Keystores = &Keystores{PKCS12: &keys.PKCS12Spec{Password: "new-password"}}
			},
			drift: "keystore.p12 cannot be opened with the password of spec",
		},
		"a JKS keystore no longer asked for": {
			mutate: func(t *testing.T, s *Snapshot) {
				out := testOutputSpec(s)
				out.JKS = &keys.JKSSpec{Password: "changeit"}
				data, err := keys.SecretData(rand.Reader, mustKeyOf(t, s), s.Secret.Data[keys.SecretCertificate], s.Secret.Data[keys.SecretCA], out)
				require.NoError(t, err)
				s.Secret.Data = data
			},
			drift: "keystore.jks is no longer asked for",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, _ := f.healthy(issued)
			settleStatus(t, s)
			tc.mutate(t, s)

			trig := Trigger(s, t0, Config{})
			assert.Equal(t, ReasonSecretDrifted, trig.Reason)
			assert.Contains(t, trig.Message, tc.drift)
			assert.Empty(t, trig.Actions, "the trigger issues over a drifted secret")

			ready := Readiness(s, t0, Config{})
			require.Len(t, ready.Actions, 1)
			st := ready.Actions[0].(UpdateStatus).Status
			cond := st.Condition(ConditionReady)
			assert.Equal(t, StatusFalse, cond.Status)
			assert.Equal(t, ReasonSecretDrifted, cond.Reason)
			assert.Contains(t, cond.Message, tc.drift)

			res := Reconcile(s, t0, Config{})
			require.Len(t, res.Actions, 1, "one write and nothing else: %v", res.Actions)
			w, ok := res.Actions[0].(WriteSecret)
			require.True(t, ok, "%v", res.Actions[0])
			assert.Equal(t, s.Secret.Name, w.KeySecretName, "rewritten from its own key")
			assert.Equal(t, s.Secret.Data[keys.SecretCertificate], w.Chain)
			assert.Equal(t, s.Secret.ResourceVersion, w.ResourceVersion)
			assert.Equal(t, StageIssuing, res.Stage)
			assert.Equal(t, ReasonSecretRepair, res.Reason)
			assert.Contains(t, res.Message, tc.drift)
			checkEqualsStages(t, s, t0, Config{}, res)

			// Carried out, the secret is in line: the next pass is quiet.
			applyReference(t, s, w)
			again := Reconcile(s, t0, Config{})
			assert.Empty(t, again.Actions)
			assert.Equal(t, ReasonUpToDate, again.Reason, again.Message)
		})
	}
}

// A secret the read cache has not caught up with is not repaired: the
// write would be made from an old secret.
func TestSecretDriftWaitsForTheCache(t *testing.T) {
	f := newFixture(t)
	old, _ := f.healthy(t0.Add(-50 * 24 * time.Hour))
	fresh, _ := f.healthy(t0.Add(-time.Minute))
	settleStatus(t, fresh)
	fresh.Requests[0].CreationTimestamp = t0.Add(-time.Minute)
	fresh.Secret = old.Secret
	delete(fresh.Secret.Annotations, AnnotationAltNames)
	res := Reconcile(fresh, t0, Config{})
	assert.Empty(t, res.Actions)
	assert.Equal(t, ReasonSecretNotCaughtUp, res.Reason)
}

// testOutputSpec is what the test's certificate asks of the secret's data.
func testOutputSpec(s *Snapshot) keys.OutputSpec { return outputSpec(&s.Certificate.Spec) }

func mustKeyOf(t *testing.T, s *Snapshot) crypto.Signer {
	k, err := keys.DecodePrivateKey(s.Secret.Data[keys.SecretPrivateKey])
	require.NoError(t, err)
	return k
}

// settleStatus writes the status a healthy certificate's first pass asks.
func settleStatus(t *testing.T, s *Snapshot) {
	res := Reconcile(s, t0, Config{})
	for _, a := range res.Actions {
		u, ok := a.(UpdateStatus)
		require.True(t, ok, "a healthy certificate asked for %v", a)
		s.Certificate.Status = u.Status
	}
}

// The drift check holds the secret to what secretMetadata writes: a secret
// with exactly those labels and annotations has no drift, and each one
// missing or changed is named — for certificates with every kind of name
// and a secretTemplate that overlaps certlife's annotations.
func TestSecretDriftAgreesWithSecretMetadata(t *testing.T) {
	f := newFixture(t)
	templates := map[string]keys.RequestTemplate{
		"DNS names":       {CommonName: "web.example", DNSNames: []string{"web.example", "www.web.example"}},
		"no names at all": {CommonName: "just a CN"},
		"IPs, URIs and emails": {DNSNames: []string{"a.example"}, IPAddresses: []string{"10.0.0.1", "::1"},
			URIs: []string{"spiffe://cluster.local/ns/a"}, EmailAddresses: []string{"ops@a.example", "sec@a.example"}},
	}
	for name, tmpl := range templates {
		t.Run(name, func(t *testing.T) {
			s, _ := f.healthy(t0.Add(-time.Hour))
			c := s.Certificate
			c.Spec.CommonName, c.Spec.DNSNames, c.Spec.IPAddresses, c.Spec.URIs, c.Spec.EmailAddresses =
				tmpl.CommonName, tmpl.DNSNames, tmpl.IPAddresses, tmpl.URIs, tmpl.EmailAddresses
			c.Spec.SecretTemplate = &SecretTemplate{Labels: map[string]string{"team": "web", "tier": "1"},
				Annotations: map[string]string{"owner": "alice", AnnotationCommonName: "the template's, overridden"}}
			key, err := keys.DecodePrivateKey(s.Secret.Data[keys.SecretPrivateKey])
			require.NoError(t, err)
			chain := f.sign(key.Public(), tmpl, t0.Add(-time.Hour), t0.Add(90*24*time.Hour))
			s.Secret.Data[keys.SecretCertificate] = chain
			leaf, err := firstCertificate(chain)
			require.NoError(t, err)
			// f.sign certifies the template's names but not its IPs, URIs and
			// emails: take the leaf's as they are.
			labels, annotations := secretMetadata(c, leaf)
			s.Secret.Labels, s.Secret.Annotations = labels, annotations
			require.Empty(t, newPass(s, t0, Config{}).drift)

			for _, kind := range []string{"label", "annotation"} {
				m := labels
				if kind == "annotation" {
					m = annotations
				}
				for k, v := range m {
					delete(m, k)
					assert.Contains(t, newPass(s, t0, Config{}).drift, kind+" "+k+" is missing")
					m[k] = v + "x"
					assert.Contains(t, newPass(s, t0, Config{}).drift, kind+" "+k+" is "+quote(v+"x")+", not "+quote(v))
					m[k] = v
				}
			}
			require.Empty(t, newPass(s, t0, Config{}).drift)
		})
	}
}
