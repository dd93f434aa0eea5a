package certificate

import (
	"encoding/pem"
	"testing"
	"time"

	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/renewal"
	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTrigger(t *testing.T) {
	f := newFixture(t)
	issued := t0.Add(-10 * 24 * time.Hour) // renewal due at issued+60d
	type want struct {
		reason  string
		issuing bool          // an UpdateStatus setting Issuing=True
		requeue time.Duration // after now; 0 = none expected
		msg     string        // a substring of the message
	}
	tests := map[string]struct {
		mutate func(s *Snapshot)
		now    time.Time
		want   want
	}{
		"a healthy certificate is up to date and looks again at its renewal time": {
			mutate: func(*Snapshot) {}, now: t0,
			want: want{reason: ReasonUpToDate, requeue: 50 * 24 * time.Hour, msg: "renewal due at"},
		},
		"a missing secret triggers issuance": {
			mutate: func(s *Snapshot) { s.Secret = nil }, now: t0,
			want: want{reason: ReasonDoesNotExist, issuing: true, msg: "web-tls does not exist"},
		},
		"a secret without tls.key triggers issuance": {
			mutate: func(s *Snapshot) { delete(s.Secret.Data, keys.SecretPrivateKey) }, now: t0,
			want: want{reason: ReasonMissingData, issuing: true, msg: "lacks tls.key"},
		},
		"garbage in tls.crt triggers issuance": {
			mutate: func(s *Snapshot) { s.Secret.Data[keys.SecretCertificate] = []byte("garbage") }, now: t0,
			want: want{reason: ReasonInvalidKeyPair, issuing: true, msg: "cannot be decoded"},
		},
		"a key that is not the certificate's triggers issuance": {
			mutate: func(s *Snapshot) {
				other, _ := keys.EncodePrivateKey(f.key(keys.KeySpec{Algorithm: keys.AlgorithmECDSA}), keys.EncodingPKCS1)
				s.Secret.Data[keys.SecretPrivateKey] = other
			}, now: t0,
			want: want{reason: ReasonInvalidKeyPair, issuing: true, msg: "is not the key of the certificate beside it"},
		},
		"an issuer annotation naming another issuer triggers issuance": {
			mutate: func(s *Snapshot) { s.Secret.Annotations[AnnotationIssuerName] = "old-ca" }, now: t0,
			want: want{reason: ReasonIncorrectIssuer, issuing: true, msg: "issued by Issuer certlife.dev/old-ca"},
		},
		"a certificate-name annotation of a certificate that no longer claims the secret triggers issuance": {
			mutate: func(s *Snapshot) { s.Secret.Annotations[AnnotationCertificateName] = "gone" }, now: t0,
			want: want{reason: ReasonSecretOwnedByOtherCertificate, issuing: true, msg: "certificate gone"},
		},
		"a key spec change to ECDSA 384 triggers issuance": {
			mutate: func(s *Snapshot) { s.Certificate.Spec.PrivateKey.Size = 384 }, now: t0,
			want: want{reason: ReasonPrivateKeyMismatchesSpec, issuing: true, msg: "size: spec wants 384, key is 256"},
		},
		"a secret key that differs from the current request's triggers issuance": {
			mutate: func(s *Snapshot) {
				s.Requests[0] = f.request(s.Certificate, 1, f.key(keys.KeySpec{Algorithm: keys.AlgorithmECDSA}))
			}, now: t0,
			want: want{reason: ReasonSecretKeyMismatchesRequest, issuing: true, msg: "not the key of request web-1"},
		},
		"a new DNS name in the spec triggers issuance through the request check": {
			mutate: func(s *Snapshot) {
				s.Certificate.Spec.DNSNames = append(s.Certificate.Spec.DNSNames, "api.web.example")
			}, now: t0,
			want: want{reason: ReasonRequestChanged, issuing: true, msg: "dnsNames: want [api.web.example web.example www.web.example]"},
		},
		"a current request whose CSR cannot be read triggers issuance": {
			mutate: func(s *Snapshot) { s.Requests[0].Spec.Request = []byte("not a CSR") }, now: t0,
			want: want{reason: ReasonRequestChanged, issuing: true, msg: "request web-1 of revision 1: its CSR cannot be read"},
		},
		"a current request whose CSR signature does not verify is the issuer's to refuse, not a trigger (RFC 2986 §4.2)": {
			mutate: func(s *Snapshot) {
				block, _ := pem.Decode(s.Requests[0].Spec.Request)
				der := append([]byte{}, block.Bytes...)
				der[len(der)-1] ^= 0x01
				s.Requests[0].Spec.Request = pem.EncodeToMemory(&pem.Block{Type: block.Type, Bytes: der})
			}, now: t0,
			want: want{reason: ReasonUpToDate, requeue: 50 * 24 * time.Hour},
		},
		"a new issuer in the spec is caught by the secret's annotations first": {
			mutate: func(s *Snapshot) { s.Certificate.Spec.IssuerRef.Name = "new-ca" }, now: t0,
			want: want{reason: ReasonIncorrectIssuer, issuing: true},
		},
		"with no request, the certificate's names are compared with the spec": {
			mutate: func(s *Snapshot) {
				s.Requests = nil
				s.Certificate.Spec.DNSNames = []string{"web.example"}
			}, now: t0,
			want: want{reason: ReasonCertificateChanged, issuing: true, msg: "commonName+dnsNames"},
		},
		"with no request, a common name that moved into the DNS names is not a change": {
			mutate: func(s *Snapshot) {
				s.Requests = nil
				s.Certificate.Spec.CommonName = ""
			}, now: t0,
			want: want{reason: ReasonUpToDate, requeue: 50 * 24 * time.Hour},
		},
		"renewal due triggers issuance": {
			mutate: func(*Snapshot) {}, now: issued.Add(60 * 24 * time.Hour),
			want: want{reason: ReasonRenewing, issuing: true, msg: "renewal due since"},
		},
		"renewal disabled never triggers, but looks again at expiry": {
			mutate: func(s *Snapshot) { s.Certificate.Spec.Renewal = &renewal.Spec{Policy: renewal.PolicyDisabled} },
			now:    issued.Add(70 * 24 * time.Hour),
			want:   want{reason: ReasonUpToDate, requeue: 20 * 24 * time.Hour, msg: "disabled"},
		},
		"a manual trigger (Issuing=True) makes the trigger stand aside": {
			mutate: func(s *Snapshot) {
				s.Certificate.Status.Conditions = append(s.Certificate.Status.Conditions,
					Condition{Type: ConditionIssuing, Status: StatusTrue, Reason: ReasonManualTrigger, LastTransitionTime: t0})
				s.Secret = nil
			}, now: t0,
			want: want{reason: ReasonIssuingInProgress, msg: "ManualTrigger"},
		},
		"after a failure, issuance waits out the backoff": {
			mutate: func(s *Snapshot) {
				s.Secret = nil
				s.Certificate.Status.LastFailureTime = ptr(t0.Add(-time.Hour))
				s.Certificate.Status.FailedIssuanceAttempts = ptr(3)
			}, now: t0,
			want: want{reason: ReasonBackoff, requeue: 3 * time.Hour, msg: "issuance failed 3 times in a row"},
		},
		"after the backoff has passed, issuance goes ahead": {
			mutate: func(s *Snapshot) {
				s.Secret = nil
				s.Certificate.Status.LastFailureTime = ptr(t0.Add(-4 * time.Hour))
				s.Certificate.Status.FailedIssuanceAttempts = ptr(3)
			}, now: t0,
			want: want{reason: ReasonDoesNotExist, issuing: true},
		},
		"a Retry-After from the CA holds issuance back even past the backoff": {
			mutate: func(s *Snapshot) {
				s.Secret = nil
				s.Certificate.Status.LastFailureTime = ptr(t0.Add(-4 * time.Hour))
				s.Certificate.Status.FailedIssuanceAttempts = ptr(3)
				s.Certificate.Status.RetryAfter = ptr(t0.Add(2 * time.Hour))
			}, now: t0,
			want: want{reason: ReasonBackoff, requeue: 2 * time.Hour, msg: "the CA asked to wait"},
		},
		"a spec fixed after a failure skips the backoff": {
			mutate: func(s *Snapshot) {
				c := s.Certificate
				failed := f.request(c, 2, f.key(keys.KeySpec{Algorithm: keys.AlgorithmECDSA}))
				s.Requests = append(s.Requests, failed)
				c.Status.LastFailureTime = ptr(t0.Add(-time.Hour))
				c.Status.FailedIssuanceAttempts = ptr(5)
				c.Spec.DNSNames = []string{"web.example", "fixed.web.example"}
			}, now: t0,
			want: want{reason: ReasonRequestChanged, issuing: true, msg: "backoff skipped"},
		},
		"an invalid spec issues nothing and says why": {
			mutate: func(s *Snapshot) { s.Certificate.Spec.Duration = &Duration{30 * time.Minute}; s.Secret = nil }, now: t0,
			want: want{reason: ReasonInvalidSpec, msg: "spec.duration: 30m0s is under the minimum"},
		},
		"a secret claimed by an older certificate is left alone and checked later": {
			mutate: func(s *Snapshot) {
				s.Secret = nil
				older := testCertificate()
				older.Name, older.CreationTimestamp = "older", t0.AddDate(-1, 0, 0)
				s.OtherOwners = []*Certificate{older}
			}, now: t0,
			want: want{reason: ReasonSecretInUse, requeue: time.Hour, msg: "belongs to certificate older"},
		},
		"the certificate the secret's annotation names keeps it, even if younger": {
			mutate: func(s *Snapshot) {
				older := testCertificate()
				older.Name, older.CreationTimestamp = "older", t0.AddDate(-1, 0, 0)
				s.OtherOwners = []*Certificate{older}
			}, now: t0,
			want: want{reason: ReasonUpToDate, requeue: 50 * 24 * time.Hour},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, _ := f.healthy(issued)
			tc.mutate(s)
			res := Trigger(s, tc.now, Config{})
			got := want{reason: res.Reason, msg: tc.want.msg}
			if !res.RequeueAt.IsZero() {
				got.requeue = res.RequeueAt.Sub(tc.now)
			}
			require.LessOrEqual(t, len(res.Actions), 1, "the trigger returned more than one action: %v", res.Actions)
			if len(res.Actions) == 1 {
				if u, ok := res.Actions[0].(UpdateStatus); ok {
					if c := u.Status.Condition(ConditionIssuing); c != nil && c.Status == StatusTrue && c.Reason == res.Reason {
						got.issuing = true
					}
				}
			}
			if got.issuing {
				got.requeue = tc.want.requeue // issuing results need no timed requeue
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Fatalf("Trigger() mismatch (-want +got):\n%s\nmessage: %s", diff, res.Message)
			}
			require.Contains(t, res.Message, tc.want.msg, "the message does not say it")
		})
	}
}

// TestTriggerChecksAreNilSafeInAnyOrder runs every check alone on snapshots
// with pieces missing: none may panic, whatever ran before it.
func TestTriggerChecksAreNilSafeInAnyOrder(t *testing.T) {
	f := newFixture(t)
	snaps := []*Snapshot{}
	s, _ := f.healthy(t0)
	snaps = append(snaps, s)
	s2, _ := f.healthy(t0)
	s2.Secret = nil
	snaps = append(snaps, s2)
	s3, _ := f.healthy(t0)
	s3.Secret.Data = nil
	s3.Certificate.Status.Revision = nil
	snaps = append(snaps, s3)
	s4, _ := f.healthy(t0)
	s4.Requests[0].Spec.Request = []byte("garbage")
	s4.Secret.Data[keys.SecretPrivateKey] = []byte("garbage")
	snaps = append(snaps, s4)
	for i, s := range snaps {
		for j := len(checks) - 1; j >= 0; j-- {
			ch := checks[j]
			require.NotPanics(t, func() { ch.fn(newPass(s, t0, Config{})) }, "snapshot %d: check %s panicked", i, ch.name)
		}
	}
}

func TestTriggerIsDeterministic(t *testing.T) {
	f := newFixture(t)
	s, _ := f.healthy(t0.Add(-80 * 24 * time.Hour))
	a := Trigger(s, t0, Config{})
	b := Trigger(s, t0, Config{})
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatalf("same snapshot, different results:\n%s", diff)
	}
}

// A host reads secrets and certificates through separate caches: right
// after an issuance a pass can see the new revision in status and the old
// secret (or none). Within the cache grace of the request that is not a
// reason to issue again; after it, it is. A secret that is missing is not
// a silent Ready=True meanwhile but Ready=Unknown until the grace ends, and
// a host that read its absence from the source of truth gets the
// re-issuance at once.
func TestSecretNotCaughtUpIsNotReissuedOver(t *testing.T) {
	f := newFixture(t)
	old, _ := f.healthy(t0.Add(-50 * 24 * time.Hour)) // the previous revision's secret
	fresh, _ := f.healthy(t0.Add(-time.Minute))       // status and request of the new revision
	fresh.Requests[0].CreationTimestamp = t0.Add(-time.Minute)
	graceEnd := t0.Add(4 * time.Minute)
	cases := map[string]struct {
		secret    *Secret
		confirmed bool // Snapshot.SecretAbsenceConfirmed
		at        time.Time
		want      string // the reason: the Issuing condition's once issuing
		// ready is the Ready condition the pass leaves ("" to leave it as
		// the issuance wrote it, True).
		ready string
	}{
		"the old secret, a minute after the request: wait, Ready as the issuance left it": {
			secret: old.Secret, at: t0, want: ReasonSecretNotCaughtUp},
		"no secret yet, a minute after the request: wait, Ready=Unknown until the grace ends": {
			at: t0, want: ReasonSecretNotCaughtUp, ready: StatusUnknown},
		"no secret, confirmed missing by the host, a minute after the request: issue again now": {
			confirmed: true, at: t0, want: ReasonDoesNotExist, ready: StatusFalse},
		"the old secret with a confirmation the host cannot mean: the secret wins, wait": {
			secret: old.Secret, confirmed: true, at: t0, want: ReasonSecretNotCaughtUp},
		"the old secret, after the grace: issue again": {
			secret: old.Secret, at: graceEnd, want: ReasonSecretKeyMismatchesRequest, ready: StatusFalse},
		"no secret, after the grace: issue again": {
			at: graceEnd, want: ReasonDoesNotExist, ready: StatusFalse},
		"the new secret: nothing to wait for": {
			secret: fresh.Secret, at: t0, want: ReasonUpToDate, ready: StatusTrue},
		"garbage in the secret is not a cache: issue again now": {
			secret: &Secret{ObjectMeta: fresh.Secret.ObjectMeta, Data: map[string][]byte{keys.SecretCertificate: []byte("x"), keys.SecretPrivateKey: []byte("y")}},
			at:     t0, want: ReasonInvalidKeyPair, ready: StatusFalse},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := *fresh
			s.Secret, s.SecretAbsenceConfirmed = tc.secret, tc.confirmed
			res := Reconcile(&s, tc.at, Config{})
			checkEqualsStages(t, &s, tc.at, Config{}, res)
			got := res.Reason
			if c := issuingCondOf(res); c != nil {
				got = c.Reason
			}
			require.Equal(t, tc.want, got, "reason %s (%s)", res.Reason, res.Message)

			st := finalStatus(&s, res)
			ready := st.Condition(ConditionReady)
			wantReady := fresh.Certificate.Status
			require.NotNil(t, ready)
			if tc.ready == "" {
				assert.Equal(t, *wantReady.Condition(ConditionReady), *ready, "Ready is not as the issuance left it")
			} else {
				assert.Equal(t, tc.ready, ready.Status, "Ready (%s: %s)", ready.Reason, ready.Message)
			}
			// Readiness run alone says what Reconcile's status says.
			aloneStatus := finalStatus(&s, Readiness(&s, tc.at, Config{}))
			alone := aloneStatus.Condition(ConditionReady)
			require.NotNil(t, alone)
			assert.Equal(t, ready.Status, alone.Status, "Readiness alone")
			assert.Equal(t, ready.Reason, alone.Reason, "Readiness alone")

			if tc.want == ReasonSecretNotCaughtUp {
				for _, a := range res.Actions {
					_, ok := a.(UpdateStatus)
					require.True(t, ok, "waiting for the cache does %v", a)
				}
				assert.Nil(t, issuingCondOf(res), "waiting for the cache started an issuance")
				want := fresh.Requests[0].CreationTimestamp.Add(5 * time.Minute)
				require.True(t, res.RequeueAt.Equal(want), "looks again at %v, want the end of the grace %v", res.RequeueAt, want)
			}
			if tc.ready == StatusUnknown {
				assert.Equal(t, ReasonSecretNotCaughtUp, ready.Reason)
				assert.Equal(t, "secret web-tls is not visible yet, not yet revision 1's from request web-1: a read cache behind the write, taken as such until 2026-03-01T12:04:00Z; if it is still missing then, the certificate is issued again", ready.Message)
				assert.Equal(t, ready.Message, alone.Message, "Readiness alone")
				again := s
				again.Certificate = &Certificate{ObjectMeta: s.Certificate.ObjectMeta, Spec: s.Certificate.Spec, Status: st}
				assert.Empty(t, Reconcile(&again, tc.at.Add(time.Minute), Config{}).Actions, "Ready=Unknown is written again on the next pass")
			}
		})
	}
	// With the grace off, the stale view is acted on at once.
	s := *fresh
	s.Secret = old.Secret
	c := issuingCondOf(Reconcile(&s, t0, Config{CacheGrace: -1}))
	require.NotNil(t, c, "grace off: Issuing is not set")
	require.Equal(t, ReasonSecretKeyMismatchesRequest, c.Reason, "grace off")
}

func issuingCondOf(res Result) *Condition {
	for _, a := range res.Actions {
		if u, ok := a.(UpdateStatus); ok {
			if c := u.Status.Condition(ConditionIssuing); c != nil && c.Status == StatusTrue {
				return c
			}
		}
	}
	return nil
}
