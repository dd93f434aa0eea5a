package certificate

import (
	"crypto"
	"strings"
	"testing"
	"time"

	"github.com/certlife/certlife/backoff"
	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/renewal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// renewing is a healthy certificate at revision 1 in the middle of its
// renewal: Issuing=True since a minute ago, the next private key made, and
// request web-2 for it created and answered with a certificate.
type renewing struct {
	s       *Snapshot
	nextKey crypto.Signer
	req     *CertificateRequest
}

func (f *fixture) renewing() renewing {
	s, _ := f.healthy(t0.Add(-60 * 24 * time.Hour))
	c := s.Certificate
	c.Status.Conditions = setCondition(c.Status.Conditions,
		Condition{Type: ConditionIssuing, Status: StatusTrue, Reason: ReasonRenewing, Message: "renewal due"}, t0.Add(-time.Minute), c.Generation)
	key := f.key(c.Spec.KeySpec())
	name := nextKeySecretName(c, 2, c.Spec.KeySpec())
	keyPEM, _ := keys.EncodePrivateKey(key, keys.EncodingPKCS8)
	c.Status.NextPrivateKeySecretName = name
	s.NextPrivateKeySecrets = []*Secret{{ObjectMeta: ObjectMeta{Name: name, OwnerUID: c.UID, Labels: map[string]string{LabelNextPrivateKey: "true"}},
		Data: map[string][]byte{keys.SecretPrivateKey: keyPEM}}}
	req := f.request(c, 2, key)
	req.CreationTimestamp = t0.Add(-30 * time.Second)
	req.Status.Certificate = f.sign(key.Public(), c.Spec.Template(), t0.Add(-time.Minute), t0.Add(90*24*time.Hour))
	req.Status.CA = f.caPEM
	req.Status.Conditions = []Condition{{Type: RequestConditionReady, Status: StatusTrue, Reason: RequestReasonIssued}}
	s.Requests = append(s.Requests, req)
	return renewing{s: s, nextKey: key, req: req}
}

func failRequest(r *CertificateRequest, cond Condition) {
	r.Status.Certificate, r.Status.CA = nil, nil
	r.Status.FailureTime = ptr(t0.Add(-10 * time.Second))
	r.Status.Conditions = []Condition{cond}
}

func writes(res Result) []WriteSecret {
	var out []WriteSecret
	for _, a := range res.Actions {
		if w, ok := a.(WriteSecret); ok {
			out = append(out, w)
		}
	}
	return out
}

func finalStatus(s *Snapshot, res Result) Status {
	st := s.Certificate.Status
	for _, a := range res.Actions {
		if u, ok := a.(UpdateStatus); ok {
			st = u.Status
		}
	}
	return st
}

// Settle before acting: an answer to a request that no longer matches what
// the certificate asks is neither written nor counted as a failure; the
// requestmanager replaces the request.
func TestIssuingSettlesBeforeActing(t *testing.T) {
	f := newFixture(t)
	tests := map[string]struct {
		mutate func(t *testing.T, r renewing)
		// deleted: the request the pass deletes ("" for none).
		deleted string
		msg     string
	}{
		"a usages change made after the CA answered is not lost": {
			mutate: func(_ *testing.T, r renewing) {
				r.s.Certificate.Spec.Usages = []keys.Usage{keys.UsageDigitalSignature, keys.UsageClientAuth}
			},
			deleted: "web-2", msg: "usages",
		},
		"a key spec change made after the CA answered is not lost": {
			mutate: func(_ *testing.T, r renewing) {
				r.s.Certificate.Spec.PrivateKey = &keys.KeySpec{Algorithm: keys.AlgorithmECDSA, Size: 384}
			},
			msg: "its key does not meet spec.privateKey: size: spec wants 384, key is 256",
		},
		"a duration change made after the CA answered is not lost": {
			mutate: func(_ *testing.T, r renewing) {
				r.s.Certificate.Spec.Duration = &Duration{48 * time.Hour}
			},
			deleted: "web-2", msg: "duration: want 48h0m0s, have the issuer's default",
		},
		"an issuer change made after the CA answered is not lost": {
			mutate:  func(_ *testing.T, r renewing) { r.s.Certificate.Spec.IssuerRef.Name = "other-ca" },
			deleted: "web-2", msg: "issuerRef: want Issuer certlife.dev/other-ca, have Issuer certlife.dev/ca",
		},
		"a next-key secret replaced by hand: the answer is for a key the certificate no longer holds": {
			mutate: func(t *testing.T, r renewing) {
				other, err := keys.EncodePrivateKey(f.key(r.s.Certificate.Spec.KeySpec()), keys.EncodingPKCS8)
				require.NoError(t, err)
				r.s.NextPrivateKeySecrets[0].Data = map[string][]byte{keys.SecretPrivateKey: other}
			},
			deleted: "web-2", msg: "its CSR is not for the next private key web-next-key-2-",
		},
	}
	for name, tc := range tests {
		for _, outcome := range []string{"issued", "failed"} {
			t.Run(name+", "+outcome, func(t *testing.T) {
				r := f.renewing()
				if outcome == "failed" {
					failRequest(r.req, Condition{Type: RequestConditionReady, Status: StatusFalse, Reason: RequestReasonFailed, Message: "CA down"})
				}
				tc.mutate(t, r)
				attempts := r.s.Certificate.Status.FailedIssuanceAttempts

				alone := Issue(r.s, t0, Config{})
				assert.Equal(t, ReasonRequestOutdated, alone.Reason, alone.Message)
				assert.Empty(t, alone.Actions, "the issuing stage acts on an answer that is not settled")
				assert.Contains(t, alone.Message, "request web-2 is answered, but ")
				assert.Contains(t, alone.Message, tc.msg)

				res := Reconcile(r.s, t0, Config{})
				assert.Empty(t, writes(res), "an unsettled answer is written")
				st := finalStatus(r.s, res)
				assert.Equal(t, attempts, st.FailedIssuanceAttempts, "an unsettled failure is counted")
				assert.Nil(t, st.LastFailureTime)
				require.NotNil(t, issuing(&Certificate{Status: st}), "the issuance goes on")
				var deleted []string
				for _, a := range res.Actions {
					if d, ok := a.(DeleteRequest); ok {
						deleted = append(deleted, d.Name)
					}
				}
				if tc.deleted != "" {
					assert.Equal(t, []string{tc.deleted}, deleted, "the requestmanager replaces the request")
				}
				checkEqualsStages(t, r.s, t0, Config{}, res)
			})
		}
	}
}

// A settled answer is acted on: a failure is recorded with the request's
// own reason and a message naming it; a certificate is written, and the
// same status write leaves the certificate Ready.
func TestIssuingActsOnSettledAnswers(t *testing.T) {
	f := newFixture(t)
	tests := map[string]struct {
		mutate func(r renewing)
		reason string
		msg    string
	}{
		"a denied request": {
			mutate: func(r renewing) {
				failRequest(r.req, Condition{Type: RequestConditionDenied, Status: StatusTrue, Reason: "Denied", Message: "policy says no"})
			},
			reason: ReasonDenied, msg: "request web-2 was denied: policy says no",
		},
		"a request the issuer found invalid": {
			mutate: func(r renewing) {
				failRequest(r.req, Condition{Type: RequestConditionInvalidRequest, Status: StatusTrue, Reason: "BadCSR", Message: "no SANs allowed"})
			},
			reason: ReasonInvalidRequest, msg: "request web-2 is invalid: no SANs allowed",
		},
		"a failed request": {
			mutate: func(r renewing) {
				failRequest(r.req, Condition{Type: RequestConditionReady, Status: StatusFalse, Reason: RequestReasonFailed, Message: "rate limited"})
			},
			reason: ReasonFailed, msg: "request web-2 failed: rate limited",
		},
		"a certificate for another key": {
			mutate: func(r renewing) {
				r.req.Status.Certificate = f.sign(f.key(keys.KeySpec{Algorithm: keys.AlgorithmECDSA}).Public(), r.s.Certificate.Spec.Template(), t0, t0.Add(time.Hour))
			},
			reason: ReasonIssuedWrongKey, msg: "request web-2 was issued a certificate for another key than the next private key web-next-key-2-",
		},
		"an expired certificate": {
			mutate: func(r renewing) {
				r.req.Status.Certificate = f.sign(r.nextKey.Public(), r.s.Certificate.Spec.Template(), t0.Add(-2*time.Hour), t0.Add(-time.Hour))
			},
			reason: ReasonIssuedExpired, msg: "request web-2 was issued a certificate that expired at 2026-03-01T11:00:00Z",
		},
		"a certificate for other names": {
			mutate: func(r renewing) {
				r.req.Status.Certificate = f.sign(r.nextKey.Public(), keys.RequestTemplate{CommonName: "evil.example", DNSNames: []string{"evil.example"}}, t0, t0.Add(time.Hour))
			},
			reason: ReasonIssuedOtherNames, msg: "request web-2 was issued a certificate for other names",
		},
		"an old certificate, due for renewal since long before it arrived": {
			mutate: func(r renewing) {
				r.req.Status.Certificate = f.sign(r.nextKey.Public(), r.s.Certificate.Spec.Template(), t0.Add(-80*24*time.Hour), t0.Add(10*24*time.Hour))
			},
			reason: ReasonIssuedDueForRenewal,
			msg:    "request web-2 was issued a certificate already due for renewal on arrival (valid from 2025-12-11T12:00:00Z until 2026-03-11T12:00:00Z): renewal due since 2026-02-09T12:00:00Z (default)",
		},
		"a certificate from a CA whose clock is 40 minutes behind the host's, for an hour renewed 30 minutes before expiry": {
			mutate: func(r renewing) {
				c := r.s.Certificate
				c.Spec.Duration, c.Spec.RenewBefore = &Duration{time.Hour}, &Duration{30 * time.Minute}
				r.req.Spec.Duration = c.Spec.Duration
				r.req.Status.Certificate = f.sign(r.nextKey.Public(), c.Spec.Template(), t0.Add(-40*time.Minute), t0.Add(20*time.Minute))
			},
			reason: ReasonIssuedDueForRenewal,
			msg:    "request web-2 was issued a certificate already due for renewal on arrival (valid from 2026-03-01T11:20:00Z until 2026-03-01T12:20:00Z): renewal due since 2026-03-01T11:50:00Z (renewBefore)",
		},
		"an undecodable chain": {
			mutate: func(r renewing) { r.req.Status.Certificate = []byte("garbage") },
			reason: ReasonIssuedUndecodable, msg: "request web-2 was issued an undecodable chain",
		},
		"an undecodable CA beside a good chain": {
			mutate: func(r renewing) {
				r.req.Status.CA = []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
			},
			reason: ReasonIssuedUndecodable, msg: "request web-2 was issued an undecodable CA",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := f.renewing()
			r.s.Certificate.Status.FailedIssuanceAttempts = ptr(1)
			tc.mutate(r)
			res := Reconcile(r.s, t0, Config{})
			assert.Empty(t, writes(res))
			st := finalStatus(r.s, res)
			cond := st.Condition(ConditionIssuing)
			require.NotNil(t, cond)
			assert.Equal(t, StatusFalse, cond.Status)
			assert.Equal(t, tc.reason, cond.Reason)
			assert.True(t, strings.HasPrefix(cond.Message, tc.msg), "message %q does not start %q", cond.Message, tc.msg)
			require.NotNil(t, st.FailedIssuanceAttempts)
			assert.Equal(t, 2, *st.FailedIssuanceAttempts)
			require.NotNil(t, st.LastFailureTime)
			assert.Equal(t, StageIssuing, res.Stage)
			assert.Equal(t, tc.reason, res.Reason)
			assert.Contains(t, res.Message, "(issuance has failed 2 times in a row)")
			checkEqualsStages(t, r.s, t0, Config{}, res)
		})
	}

	t.Run("an issued certificate is written and the same status write says Ready", func(t *testing.T) {
		r := f.renewing()
		r.s.Certificate.Status.Conditions = setCondition(r.s.Certificate.Status.Conditions,
			Condition{Type: ConditionReady, Status: StatusFalse, Reason: ReasonRenewing}, t0.Add(-time.Minute), 1)
		res := Reconcile(r.s, t0, Config{})
		ws := writes(res)
		require.Len(t, ws, 1)
		assert.Equal(t, r.s.NextPrivateKeySecrets[0].Name, ws[0].KeySecretName)
		assert.Equal(t, r.s.Secret.ResourceVersion, ws[0].ResourceVersion, "the write is conditional on the secret read")
		st := finalStatus(r.s, res)
		require.NotNil(t, st.Revision)
		assert.Equal(t, 2, *st.Revision)
		ready := st.Condition(ConditionReady)
		require.NotNil(t, ready)
		assert.Equal(t, StatusTrue, ready.Status, ready.Message)
		assert.Nil(t, st.Condition(ConditionIssuing))
		assert.Equal(t, StageIssuing, res.Stage)
		assert.Equal(t, ReasonIssued, res.Reason)
		assert.Equal(t, t0, res.RequeueAt, "the next pass cleans up at once")
		checkEqualsStages(t, r.s, t0, Config{}, res)
	})
}

// A certificate that arrives with a shorter lifetime than the spec asks is
// not due on arrival when renewal adapts to the lifetime it has — a
// renewBefore as long as that lifetime gives way to the lifetime-adaptive
// default — and the ARI window of the certificate it replaces does not
// make it due either: it is written, never counted as a failure.
func TestIssuingWritesACertificateWhoseRenewalAdapts(t *testing.T) {
	f := newFixture(t)
	tests := map[string]struct {
		mutate      func(r renewing)
		renewalTime time.Time
	}{
		"7 days issued where 90 were asked, renewBefore 30 days: renewed at half its life": {
			mutate: func(r renewing) {
				r.s.Certificate.Spec.RenewBefore = &Duration{30 * 24 * time.Hour}
				r.req.Status.Certificate = f.sign(r.nextKey.Public(), r.s.Certificate.Spec.Template(), t0, t0.Add(7*24*time.Hour))
			},
			renewalTime: t0.Add(84 * time.Hour),
		},
		"7 days issued where 90 were asked, renewBeforePercentage 90: renewed when 90% remains, 16.8 hours on": {
			mutate: func(r renewing) {
				r.s.Certificate.Spec.RenewBeforePercentage = ptr(int32(90))
				r.req.Status.Certificate = f.sign(r.nextKey.Public(), r.s.Certificate.Spec.Template(), t0, t0.Add(7*24*time.Hour))
			},
			renewalTime: t0.Add(7 * 24 * time.Hour / 10),
		},
		"the replaced certificate's ARI window is open: it is not the new certificate's": {
			mutate: func(r renewing) {
				r.s.ARI = &renewal.ARIWindow{Start: t0.Add(-time.Hour), End: t0.Add(time.Hour)}
				r.req.Status.Certificate = f.sign(r.nextKey.Public(), r.s.Certificate.Spec.Template(), t0, t0.Add(90*24*time.Hour))
			},
			renewalTime: t0.Add(60 * 24 * time.Hour),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := f.renewing()
			tc.mutate(r)
			res := Reconcile(r.s, t0, Config{})
			checkEqualsStages(t, r.s, t0, Config{}, res)
			require.Len(t, writes(res), 1, "%s: %s", res.Reason, res.Message)
			st := finalStatus(r.s, res)
			require.NotNil(t, st.Revision)
			assert.Equal(t, 2, *st.Revision)
			assert.Nil(t, st.LastFailureTime)
			require.NotNil(t, st.RenewalTime)
			assert.Equal(t, tc.renewalTime, *st.RenewalTime)
		})
	}
}

// The issuer contract: each answer an issuer gives with the Set functions
// is read by the certificate stages as that answer.
func TestIssuerContractIsReadByTheStages(t *testing.T) {
	f := newFixture(t)
	retry := t0.Add(6 * time.Hour)
	tests := map[string]struct {
		answer  func(r renewing)
		reason  string // the Issuing condition's reason after the pass; "" for issued
		retryAt *time.Time
	}{
		"SetIssued": {answer: func(r renewing) {
			SetIssued(r.req, f.sign(r.nextKey.Public(), r.s.Certificate.Spec.Template(), t0, t0.Add(90*24*time.Hour)), f.caPEM, t0)
		}},
		"SetFailed with a Retry-After": {answer: func(r renewing) { SetFailed(r.req, "rate limited", t0, retry) },
			reason: ReasonFailed, retryAt: &retry},
		"SetDenied":  {answer: func(r renewing) { SetDenied(r.req, "not allowed", t0) }, reason: ReasonDenied},
		"SetInvalid": {answer: func(r renewing) { SetInvalid(r.req, "bad CSR", t0) }, reason: ReasonInvalidRequest},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := f.renewing()
			r.req.Status = RequestStatus{}
			require.False(t, Answered(r.req))
			SetPending(r.req, "waiting for the CA", t0)
			require.False(t, Answered(r.req))
			pending := Issue(r.s, t0, Config{})
			assert.Equal(t, ReasonRequestPending, pending.Reason)
			assert.Contains(t, pending.Message, "waiting for the CA")

			tc.answer(r)
			require.True(t, Answered(r.req))
			res := Reconcile(r.s, t0, Config{})
			st := finalStatus(r.s, res)
			if tc.reason == "" {
				require.NotNil(t, st.Revision)
				assert.Equal(t, 2, *st.Revision)
				assert.Len(t, writes(res), 1)
				return
			}
			cond := st.Condition(ConditionIssuing)
			require.NotNil(t, cond)
			assert.Equal(t, tc.reason, cond.Reason)
			assert.Contains(t, cond.Message, "request web-2")
			assert.Equal(t, tc.retryAt, st.RetryAfter)
		})
	}
}

// Two requests for one revision (a host whose names are not
// deterministic): the requestmanager keeps the oldest that matches and
// deletes the other, and the issuing stage acts on the one kept.
func TestOneRequestPerRevision(t *testing.T) {
	f := newFixture(t)
	r := f.renewing()
	younger := *r.req
	younger.Name = "web-2-again"
	younger.CreationTimestamp = r.req.CreationTimestamp.Add(time.Second)
	younger.Status.Certificate = f.sign(r.nextKey.Public(), r.s.Certificate.Spec.Template(), t0, t0.Add(90*24*time.Hour))
	r.s.Requests = append([]*CertificateRequest{&younger}, r.s.Requests...) // the host lists it first

	res := Reconcile(r.s, t0, Config{})
	var deleted []string
	for _, a := range res.Actions {
		if d, ok := a.(DeleteRequest); ok {
			deleted = append(deleted, d.Name+": "+d.Reason)
		}
	}
	assert.Equal(t, []string{"web-2-again: request web-2 is the current one for revision 2"}, deleted)
	ws := writes(res)
	require.Len(t, ws, 1)
	assert.Equal(t, r.req.Status.Certificate, ws[0].Chain, "the kept request's answer is written")
	checkEqualsStages(t, r.s, t0, Config{}, res)
}

// firstIssuance is a certificate being issued for the first time: no
// secret, Issuing=True (DoesNotExist) since a minute ago, the next private
// key made, and request web-1 for it created 30 seconds ago and not
// touched by any issuer.
func (f *fixture) firstIssuance() renewing {
	c := testCertificate()
	why := "secret web-tls does not exist"
	c.Status.Conditions = []Condition{
		{Type: ConditionIssuing, Status: StatusTrue, Reason: ReasonDoesNotExist, Message: why, LastTransitionTime: t0.Add(-time.Minute), ObservedGeneration: 1},
		{Type: ConditionReady, Status: StatusFalse, Reason: ReasonDoesNotExist, Message: why, LastTransitionTime: t0.Add(-time.Minute), ObservedGeneration: 1},
	}
	key := f.key(c.Spec.KeySpec())
	name := nextKeySecretName(c, 1, c.Spec.KeySpec())
	keyPEM, err := keys.EncodePrivateKey(key, keys.EncodingPKCS8)
	require.NoError(f.t, err)
	c.Status.NextPrivateKeySecretName = name
	req := f.request(c, 1, key)
	req.CreationTimestamp = t0.Add(-30 * time.Second)
	return renewing{
		s: &Snapshot{Certificate: c, Requests: []*CertificateRequest{req},
			NextPrivateKeySecrets: []*Secret{{ObjectMeta: ObjectMeta{Name: name, OwnerUID: c.UID, Labels: map[string]string{LabelNextPrivateKey: "true"}},
				Data: map[string][]byte{keys.SecretPrivateKey: keyPEM}}}},
		nextKey: key, req: req,
	}
}

// While an issuance waits for the issuer, the certificate says what it
// waits for where users look: the Issuing condition keeps its reason (why
// the certificate is issued) and its message quotes the request — the
// issuer's own progress, or, once Config.IssuerGrace has passed with no
// issuer touching the request, that none answers its issuerRef. Ready's
// message says the same while the certificate is not Ready. Nothing of it
// is a failure, and the status is written only when it changes.
func TestIssuingSaysWhatItWaitsFor(t *testing.T) {
	f := newFixture(t)
	const acme = "waiting for the ACME order web-1-51937a3b: self-check for a.example failing: connection refused"
	created := t0.Add(-30 * time.Second)
	noIssuer := "no issuer has answered request web-1 for issuerRef Issuer certlife.dev/ca since 2026-03-01T11:59:30Z: is an issuer for it running?"
	tests := map[string]struct {
		renewal bool // a renewal of a Ready certificate, else a first issuance
		mutate  func(r renewing)
		now     time.Time
		cfg     Config
		// reason is the issuing stage's (the result's headline when it
		// writes); issuing and ready are the conditions' messages after the
		// pass; requeue is when the pass asks to look again.
		reason, issuing, ready string
		requeue                time.Time
	}{
		"the issuer recorded progress: Issuing and Ready quote it": {
			mutate:  func(r renewing) { SetPending(r.req, acme, t0.Add(-10*time.Second)) },
			now:     t0,
			reason:  ReasonRequestPending,
			issuing: "secret web-tls does not exist; request web-1 is waiting for the issuer: " + acme,
			ready:   "secret web-tls does not exist; request web-1 is waiting for the issuer: " + acme,
		},
		"the issuer recorded Pending without a message: its reason is quoted": {
			mutate: func(r renewing) {
				r.req.Status.Conditions = []Condition{{Type: RequestConditionReady, Status: StatusFalse, Reason: RequestReasonPending}}
			},
			now:     t0,
			reason:  ReasonRequestPending,
			issuing: "secret web-tls does not exist; request web-1 is waiting for the issuer (Pending)",
			ready:   "secret web-tls does not exist; request web-1 is waiting for the issuer (Pending)",
		},
		"no issuer has touched the request within the grace: nothing to report yet, and a look again when it ends": {
			now:     t0,
			reason:  ReasonRequestPending,
			issuing: "secret web-tls does not exist",
			ready:   "secret web-tls does not exist",
			requeue: created.Add(5 * time.Minute),
		},
		"no issuer has touched the request when the grace ends: the certificate says so": {
			now:     created.Add(5 * time.Minute),
			reason:  ReasonIssuerNotAnswering,
			issuing: "secret web-tls does not exist; " + noIssuer,
			ready:   "secret web-tls does not exist; " + noIssuer,
		},
		"a longer IssuerGrace is waited out": {
			now:     created.Add(5 * time.Minute),
			cfg:     Config{IssuerGrace: time.Hour},
			reason:  ReasonRequestPending,
			issuing: "secret web-tls does not exist",
			ready:   "secret web-tls does not exist",
			requeue: created.Add(time.Hour),
		},
		"an issuerRef of another kind and group is named in full": {
			mutate: func(r renewing) {
				ref := IssuerRef{Name: "vault", Kind: "ClusterIssuer", Group: "example.com"}
				r.s.Certificate.Spec.IssuerRef, r.req.Spec.IssuerRef = ref, ref
			},
			now:     created.Add(5 * time.Minute),
			reason:  ReasonIssuerNotAnswering,
			issuing: "secret web-tls does not exist; no issuer has answered request web-1 for issuerRef ClusterIssuer example.com/vault since 2026-03-01T11:59:30Z: is an issuer for it running?",
			ready:   "secret web-tls does not exist; no issuer has answered request web-1 for issuerRef ClusterIssuer example.com/vault since 2026-03-01T11:59:30Z: is an issuer for it running?",
		},
		"a request without a creation time is timed from the start of the issuance": {
			mutate:  func(r renewing) { r.req.CreationTimestamp = time.Time{} },
			now:     t0.Add(4 * time.Minute),
			reason:  ReasonIssuerNotAnswering,
			issuing: "secret web-tls does not exist; no issuer has answered request web-1 for issuerRef Issuer certlife.dev/ca since 2026-03-01T11:59:00Z: is an issuer for it running?",
			ready:   "secret web-tls does not exist; no issuer has answered request web-1 for issuerRef Issuer certlife.dev/ca since 2026-03-01T11:59:00Z: is an issuer for it running?",
		},
		"a renewal: Issuing quotes the issuer, and Ready stays True with its own message": {
			renewal: true,
			mutate: func(r renewing) {
				r.req.Status = RequestStatus{}
				SetPending(r.req, "waiting for the ACME order web-2-2a10b336", t0.Add(-10*time.Second))
			},
			now:     t0,
			reason:  ReasonRequestPending,
			issuing: "renewal due; request web-2 is waiting for the issuer: waiting for the ACME order web-2-2a10b336",
			ready:   "Certificate is up to date and has not expired",
			requeue: t0.Add(30 * 24 * time.Hour), // readiness: when the certificate in use expires
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := f.firstIssuance()
			if tc.renewal {
				r = f.renewing()
			}
			if tc.mutate != nil {
				tc.mutate(r)
			}
			before := *r.s.Certificate.Status.Condition(ConditionIssuing)
			res := Reconcile(r.s, tc.now, tc.cfg)
			checkEqualsStages(t, r.s, tc.now, tc.cfg, res)
			assert.Equal(t, tc.reason, res.Steps[3].Reason, "the issuing stage's reason (%s)", res.Steps[3].Message)
			assert.Equal(t, tc.requeue, res.RequeueAt, "requeue")

			st := finalStatus(r.s, res)
			issuingCond, readyCond := st.Condition(ConditionIssuing), st.Condition(ConditionReady)
			require.NotNil(t, issuingCond)
			require.NotNil(t, readyCond)
			assert.Equal(t, StatusTrue, issuingCond.Status)
			assert.Equal(t, before.Reason, issuingCond.Reason, "the Issuing condition's reason is why the certificate is issued")
			assert.Equal(t, before.LastTransitionTime, issuingCond.LastTransitionTime, "a new message is not a transition")
			assert.Equal(t, tc.issuing, issuingCond.Message)
			assert.Equal(t, tc.ready, readyCond.Message)
			assert.Equal(t, tc.issuing, res.IssuanceMessage)
			if issuingCond.Message != before.Message {
				assert.Equal(t, StageIssuing, res.Stage, "the headline is the stage that wrote the message")
				assert.Equal(t, tc.reason, res.Reason)
			}
			// Not a failure: nothing backs off, the request stays.
			assert.Nil(t, st.LastFailureTime)
			assert.Nil(t, st.FailedIssuanceAttempts)
			for _, a := range res.Actions {
				_, ok := a.(UpdateStatus)
				assert.True(t, ok, "waiting for the issuer does %v", a)
			}

			// Each stage alone says the same.
			stIssuing, stReady := finalStatus(r.s, Issue(r.s, tc.now, tc.cfg)), finalStatus(r.s, Readiness(r.s, tc.now, tc.cfg))
			aloneIssuing := stIssuing.Condition(ConditionIssuing)
			require.NotNil(t, aloneIssuing)
			assert.Equal(t, tc.issuing, aloneIssuing.Message, "the issuing stage alone")
			aloneReady := stReady.Condition(ConditionReady)
			require.NotNil(t, aloneReady)
			assert.Equal(t, tc.ready, aloneReady.Message, "the readiness stage alone")

			// Written once: the next pass on the status written writes
			// nothing, and looks again at the same time.
			again := *r.s
			again.Certificate = &Certificate{ObjectMeta: r.s.Certificate.ObjectMeta, Spec: r.s.Certificate.Spec, Status: st}
			next := Reconcile(&again, tc.now, tc.cfg)
			assert.Empty(t, next.Actions, "a second pass with nothing changed writes again")
			assert.Equal(t, tc.requeue, next.RequeueAt, "the second pass's requeue")
		})
	}
}

// A failed issuance says in its Issuing=False condition when it is tried
// again, and why when it is not the backoff's own delay: the CA's
// Retry-After, or a retry brought forward so that it comes before the
// certificate in use expires.
func TestAFailureSaysWhenItIsTriedAgain(t *testing.T) {
	f := newFixture(t)
	tests := map[string]struct {
		renewal    bool // a renewal (the secret holds a certificate until t0+30d); else a first issuance
		attempts   int  // failed attempts recorded before this one
		retryAfter time.Duration
		cfg        Config
		want       string
	}{
		"a first failure: an hour later": {want: "; next attempt at 2026-03-01T12:59:50Z"},
		"the CA's Retry-After is later than the backoff": {retryAfter: 3 * time.Hour,
			want: "; next attempt at 2026-03-01T15:00:00Z, as the CA asked (Retry-After)"},
		"a renewal the CA asks to wait ten years for is brought forward to a day before the certificate expires": {renewal: true, retryAfter: 10 * 365 * 24 * time.Hour,
			want: "; next attempt at 2026-03-30T12:00:00Z, brought forward to come before the certificate in use expires at 2026-03-31T12:00:00Z"},
		"the host's fail-safe margin is the margin the retry leaves": {renewal: true, retryAfter: 10 * 365 * 24 * time.Hour,
			cfg:  Config{Renewal: renewal.Options{SafetyMargin: 72 * time.Hour}},
			want: "; next attempt at 2026-03-28T12:00:00Z, brought forward to come before the certificate in use expires at 2026-03-31T12:00:00Z"},
		"the backoff's own safety margin comes first": {renewal: true, retryAfter: 10 * 365 * 24 * time.Hour,
			cfg:  Config{Backoff: backoff.Policy{SafetyMargin: 48 * time.Hour}, Renewal: renewal.Options{SafetyMargin: 72 * time.Hour}},
			want: "; next attempt at 2026-03-29T12:00:00Z, brought forward to come before the certificate in use expires at 2026-03-31T12:00:00Z"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := f.firstIssuance()
			if tc.renewal {
				r = f.renewing()
			}
			if tc.attempts > 0 {
				r.s.Certificate.Status.FailedIssuanceAttempts = ptr(tc.attempts)
				r.s.Certificate.Status.LastFailureTime = ptr(t0.Add(-time.Hour))
			}
			failRequest(r.req, Condition{Type: RequestConditionReady, Status: StatusFalse, Reason: RequestReasonFailed, Message: "the CA is down"})
			if tc.retryAfter > 0 {
				r.req.Status.RetryAfter = ptr(t0.Add(tc.retryAfter))
			}
			res := Issue(r.s, t0, tc.cfg)
			st := finalStatus(r.s, res)
			c := st.Condition(ConditionIssuing)
			require.NotNil(t, c)
			assert.Equal(t, StatusFalse, c.Status)
			assert.Equal(t, ReasonFailed, c.Reason)
			assert.True(t, strings.HasSuffix(c.Message, tc.want), "Issuing: %s", c.Message)
			// What the condition says is what the trigger then does.
			next := Trigger(&Snapshot{Certificate: &Certificate{ObjectMeta: r.s.Certificate.ObjectMeta, Spec: r.s.Certificate.Spec, Status: st},
				Secret: r.s.Secret, Requests: r.s.Requests, NextPrivateKeySecrets: r.s.NextPrivateKeySecrets}, t0, tc.cfg)
			assert.Equal(t, ReasonBackoff, next.Reason, next.Message)
			assert.Contains(t, tc.want, stamp(next.RequeueAt), "the trigger's next attempt")
		})
	}
}
