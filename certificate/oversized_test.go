package certificate

import (
	"bytes"
	"encoding/pem"
	"testing"
	"time"

	"github.com/certlife/certlife/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// oversized is a Ready certificate whose secret's data value field is
// grown: tls.crt and ca.crt to n certificates (the CA's, after what they
// hold), tls.key to one PEM block of n bytes. drift removes an
// annotation, so that the secret is to be rewritten from what it holds
// (which parses its whole tls.crt and ca.crt).
func (f *fixture) oversized(tb testing.TB, field string, n int, drift bool) *Snapshot {
	tb.Helper()
	s, _ := f.healthy(t0.Add(-10 * 24 * time.Hour))
	for range 2 { // readiness, then nothing
		res := Reconcile(s, t0, Config{})
		for _, a := range res.Actions {
			u, ok := a.(UpdateStatus)
			require.True(tb, ok, "a healthy certificate asked for %v", a)
			s.Certificate.Status = u.Status
		}
	}
	d := s.Secret.Data
	switch field {
	case keys.SecretCertificate, keys.SecretCA:
		have := bytes.Count(d[field], []byte("-----BEGIN "))
		d[field] = append(bytes.Clone(d[field]), bytes.Repeat(f.caPEM, n-have)...)
	case keys.SecretPrivateKey:
		d[field] = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: make([]byte, n*3/4)})
	}
	if drift {
		delete(s.Secret.Annotations, AnnotationCommonName)
	}
	return s
}

// A secret whose data is beyond keys' bounds (keys.MaxSecretValueBytes,
// keys.MaxCertificates, keys.MaxPrivateKeyBytes) is not read: its
// tls.crt or tls.key is an invalid key pair, which the next issuance
// replaces, and a ca.crt beyond them keeps a drifted secret from being
// rewritten, with the reason in the Ready condition. At the bounds,
// nothing changes.
func TestOversizedSecretIsInvalidData(t *testing.T) {
	f := newFixture(t)
	tests := map[string]struct {
		field string
		n     int
		drift bool
		// reason is the trigger's (or, when ready is set, readiness's)
		reason, msg string
		ready       string
	}{
		"tls.crt of exactly MaxCertificates certificates": {
			field: keys.SecretCertificate, n: keys.MaxCertificates, drift: true,
			reason: ReasonSecretRepair,
		},
		"tls.crt of one certificate more than MaxCertificates": {
			field: keys.SecretCertificate, n: keys.MaxCertificates + 1,
			reason: ReasonInvalidKeyPair, msg: "keys: tls.crt: too large: 101 PEM blocks, over the limit of 100",
		},
		"tls.crt of 50,000 certificates": {
			field: keys.SecretCertificate, n: 50000,
			reason: ReasonInvalidKeyPair, msg: "bytes, over the limit of 1048576",
		},
		"tls.key of MaxPrivateKeyBytes and more": {
			field: keys.SecretPrivateKey, n: keys.MaxPrivateKeyBytes,
			reason: ReasonInvalidKeyPair, msg: "bytes, over the limit of 65536",
		},
		"ca.crt of exactly MaxCertificates certificates, drifted": {
			field: keys.SecretCA, n: keys.MaxCertificates, drift: true,
			reason: ReasonSecretRepair,
		},
		"ca.crt of 50,000 certificates": {
			field: keys.SecretCA, n: 50000,
			reason: ReasonReady, ready: StatusTrue,
		},
		"ca.crt of 50,000 certificates, drifted": {
			field: keys.SecretCA, n: 50000, drift: true,
			reason: ReasonSecretDrifted, ready: StatusFalse,
			msg: "it is not rewritten from what it holds: keys: ca.crt: too large: 26100000 bytes, over the limit of 1048576: not read",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			s := f.oversized(t, tt.field, tt.n, tt.drift)
			res := Reconcile(s, t0, Config{})
			require.NoError(t, res.Err)
			if tt.ready != "" {
				var ready *Condition
				for _, a := range res.Actions {
					_, isWrite := a.(WriteSecret)
					assert.False(t, isWrite, "a secret beyond the bounds is not rewritten: %v", a)
					if u, ok := a.(UpdateStatus); ok {
						ready = u.Status.Condition(ConditionReady)
					}
				}
				if ready == nil {
					ready = s.Certificate.Status.Condition(ConditionReady)
				}
				require.NotNil(t, ready)
				assert.Equal(t, tt.ready, ready.Status)
				assert.Equal(t, tt.reason, ready.Reason)
				assert.Contains(t, ready.Message, tt.msg)
				return
			}
			trig := Trigger(s, t0, Config{})
			if tt.reason == ReasonSecretRepair {
				assert.Equal(t, ReasonSecretRepair, res.Reason, res.Message)
				return
			}
			assert.Equal(t, tt.reason, trig.Reason)
			assert.Contains(t, trig.Message, tt.msg)
			assert.NotContains(t, trig.Message, "-----BEGIN", "the message quotes no data")
			cond := s.Certificate.Status.Condition(ConditionIssuing)
			for _, a := range res.Actions {
				if u, ok := a.(UpdateStatus); ok && u.Status.Condition(ConditionIssuing) != nil {
					cond = u.Status.Condition(ConditionIssuing)
				}
			}
			require.NotNil(t, cond, "the certificate is issued again")
			assert.Equal(t, StatusTrue, cond.Status)
			assert.Equal(t, ReasonInvalidKeyPair, cond.Reason)
		})
	}
}
