package certificate

import (
	"crypto"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/certlife/certlife/keys"
)

// The fallback fixtures: a certificate whose issuers are ca (its
// issuerRef), ca-2 and ca-3, issuing revision 2 (revision 1, in its
// secret, came from ca), its next private key ready.
var (
	refCA  = IssuerRef{Name: "ca"}
	refCA2 = IssuerRef{Name: "ca-2"}
	refCA3 = IssuerRef{Name: "ca-3"}
)

func (f *fixture) fallbackIssuing() (*Snapshot, crypto.Signer) {
	f.t.Helper()
	s, _ := f.healthy(t0.Add(-60 * 24 * time.Hour))
	c := s.Certificate
	c.Spec.FallbackIssuerRefs = []IssuerRef{refCA2, refCA3}
	key := f.key(keys.KeySpec{Algorithm: keys.AlgorithmECDSA})
	c.Status.Conditions = append(c.Status.Conditions, Condition{Type: ConditionIssuing, Status: StatusTrue, Reason: ReasonRenewing,
		Message: "renewal is due", LastTransitionTime: t0.Add(-time.Hour), ObservedGeneration: 1})
	f.putNextKey(s, key)
	return s, key
}

// putNextKey makes key the next private key of the revision being issued.
func (f *fixture) putNextKey(s *Snapshot, key crypto.Signer) {
	f.t.Helper()
	c := s.Certificate
	keyPEM, err := keys.EncodePrivateKey(key, keys.EncodingPKCS8)
	require.NoError(f.t, err)
	name := nextKeySecretName(c, nextRevision(c), c.Spec.KeySpec())
	s.NextPrivateKeySecrets = []*Secret{{
		ObjectMeta: ObjectMeta{Name: name, Namespace: "default", OwnerUID: c.UID, Labels: map[string]string{LabelNextPrivateKey: "true"}},
		Data:       map[string][]byte{keys.SecretPrivateKey: keyPEM},
	}}
	c.Status.NextPrivateKeySecretName = name
}

// request2 is the request of revision 2 to ref, made at created.
func (f *fixture) request2(s *Snapshot, key crypto.Signer, ref IssuerRef, created time.Time) *CertificateRequest {
	r := f.request(s.Certificate, 2, key)
	r.Spec.IssuerRef = ref
	r.Annotations[AnnotationCreatedAt] = created.Format(time.RFC3339Nano)
	r.Annotations[AnnotationPrivateKeySecretName] = s.Certificate.Status.NextPrivateKeySecretName
	return r
}

func chosen(revision, index int, ref IssuerRef, failed int, reason string) *IssuerStatus {
	return &IssuerStatus{Revision: revision, Index: index, IssuerRef: ref.WithDefaults(), FailedAttempts: failed, Reason: reason}
}

// skipping is is with the skipped issuers it records.
func skipping(is *IssuerStatus, skips ...IssuerSkip) *IssuerStatus {
	for _, h := range skips {
		h.IssuerRef = h.IssuerRef.WithDefaults()
		is.Skipped = append(is.Skipped, h)
	}
	return is
}

// statusOf is the status a result writes, nil for none.
func statusOf(res Result) *Status {
	for _, a := range res.Actions {
		if u, ok := a.(UpdateStatus); ok {
			return &u.Status
		}
	}
	return nil
}

// After a failed issuance, the next attempt's issuer: the same one until
// it has failed Config.FallbackAfterFailures issuances in a row, or at
// once when its CA asks to wait longer than Config.FallbackRetryAfter;
// after the last issuer, the first again.
func TestFallbackAfterFailure(t *testing.T) {
	f := newFixture(t)
	failedAt := t0.Add(-10 * time.Minute)
	tests := map[string]struct {
		cfg        Config
		in         *IssuerStatus // status.issuer before the failure
		failedBy   IssuerRef
		retryAfter time.Duration // after failedAt; zero for none
		want       *IssuerStatus
		// wantRetryAfter: the CA's Retry-After stays in status.
		wantRetryAfter bool
		wantMoved      string // in the Issuing=False message; "" for no move
	}{
		"by default, a first failure moves the next attempt to the second issuer": {
			failedBy:  refCA,
			want:      chosen(2, 1, refCA2, 0, ReasonIssuerFailedRepeatedly),
			wantMoved: "the next attempt goes to Issuer certlife.dev/ca-2, as Issuer certlife.dev/ca failed an issuance",
		},
		"two failures allowed, a first failure: the same issuer is tried again": {
			cfg: Config{FallbackAfterFailures: 2}, failedBy: refCA,
			want: chosen(2, 0, refCA, 1, ReasonFirstIssuer),
		},
		"two failures allowed, a second in a row: the next attempt goes to the second issuer": {
			cfg: Config{FallbackAfterFailures: 2}, in: chosen(2, 0, refCA, 1, ReasonFirstIssuer), failedBy: refCA,
			want:      chosen(2, 1, refCA2, 0, ReasonIssuerFailedRepeatedly),
			wantMoved: "the next attempt goes to Issuer certlife.dev/ca-2, as Issuer certlife.dev/ca failed 2 issuances in a row",
		},
		"the last issuer failing: back to the first": {
			in: chosen(2, 2, refCA3, 0, ReasonIssuerFailedRepeatedly), failedBy: refCA3,
			want:      chosen(2, 0, refCA, 0, ReasonIssuerFailedRepeatedly),
			wantMoved: "the next attempt goes to Issuer certlife.dev/ca",
		},
		"three failures allowed: the second stays": {
			cfg: Config{FallbackAfterFailures: 3}, in: chosen(2, 0, refCA, 1, ReasonFirstIssuer), failedBy: refCA,
			want: chosen(2, 0, refCA, 2, ReasonFirstIssuer),
		},
		"the failure rule off: the fifth stays": {
			cfg: Config{FallbackAfterFailures: -1}, in: chosen(2, 0, refCA, 4, ReasonFirstIssuer), failedBy: refCA,
			want: chosen(2, 0, refCA, 5, ReasonFirstIssuer),
		},
		"a Retry-After of a day: the next issuer at once, without the old issuer's Retry-After": {
			failedBy: refCA, retryAfter: 24 * time.Hour,
			want:      chosen(2, 1, refCA2, 0, ReasonIssuerRetryAfter),
			wantMoved: "asked to wait until",
		},
		"a Retry-After of half an hour: the same issuer, after it": {
			cfg: Config{FallbackAfterFailures: 2}, failedBy: refCA, retryAfter: 30 * time.Minute,
			want: chosen(2, 0, refCA, 1, ReasonFirstIssuer), wantRetryAfter: true,
		},
		"a Retry-After of a day with the rule off: the same issuer, after it": {
			cfg: Config{FallbackRetryAfter: -1, FallbackAfterFailures: 2}, failedBy: refCA, retryAfter: 24 * time.Hour,
			want: chosen(2, 0, refCA, 1, ReasonFirstIssuer), wantRetryAfter: true,
		},
		"a failure of the previous revision's choice counts for this one from scratch": {
			cfg: Config{FallbackAfterFailures: 2}, in: chosen(1, 1, refCA2, 1, ReasonIssuerFailedRepeatedly), failedBy: refCA,
			want: chosen(2, 0, refCA, 1, ReasonFirstIssuer),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, key := f.fallbackIssuing()
			s.Certificate.Status.Issuer = tc.in
			req := f.request2(s, key, tc.failedBy, t0.Add(-30*time.Minute))
			var ra time.Time
			if tc.retryAfter > 0 {
				ra = failedAt.Add(tc.retryAfter)
			}
			SetFailed(req, "the CA is down", failedAt, ra)
			s.Requests = append(s.Requests, req)

			res := Issue(s, t0, tc.cfg)
			require.Equal(t, ReasonFailed, res.Reason, res.Message)
			st := statusOf(res)
			require.NotNil(t, st)
			got := *st.Issuer
			got.Message = ""
			assert.Equal(t, *tc.want, got)
			assert.Equal(t, tc.wantRetryAfter, st.RetryAfter != nil, "status.retryAfter")
			assert.Equal(t, 1, *st.FailedIssuanceAttempts, "the backoff counts every failure, whatever the issuer")
			cond := st.Condition(ConditionIssuing)
			if tc.wantMoved == "" {
				assert.NotContains(t, cond.Message, "the next attempt goes to")
			} else {
				assert.Contains(t, cond.Message, tc.wantMoved)
			}
		})
	}
}

// Which issuer a new request names: the one the status records for the
// revision (a new revision: the first), recorded before any request
// names it, moved on past issuers the host skips (Snapshot.IssuerHealth);
// none while the host skips them all. A request already made stays with
// its issuer, unless it has gone unanswered for Config.FallbackPending.
func TestFallbackNextRequest(t *testing.T) {
	f := newFixture(t)
	skip := func(ref IssuerRef, until time.Time) IssuerSkip { return IssuerSkip{IssuerRef: ref, Until: until} }
	type want struct {
		reason    string
		issuer    *IssuerStatus // recorded in this pass; nil: none
		createFor string        // the issuer a request is created for; "" for none
		deletes   bool          // the request of revision 2 is deleted
		requeueAt time.Time
	}
	recorded := func(s *Snapshot, is *IssuerStatus) {
		s.Certificate.Status.Issuer = is
		cond := s.Certificate.Status.Condition(ConditionIssuing)
		cond.Message = withChoice(cond.Message, *is)
	}
	tests := map[string]struct {
		setup func(s *Snapshot, key crypto.Signer)
		cfg   Config
		want  want
	}{
		"a new revision starts with the first issuer, recorded first": {
			setup: func(s *Snapshot, _ crypto.Signer) {
				s.Certificate.Status.Issuer = chosen(1, 1, refCA2, 0, ReasonIssuerFailedRepeatedly) // how revision 1 was issued
			},
			want: want{reason: ReasonRequestPending, issuer: chosen(2, 0, refCA, 0, ReasonFirstIssuer), requeueAt: t0},
		},
		"the recorded choice is used": {
			setup: func(s *Snapshot, _ crypto.Signer) { recorded(s, chosen(2, 1, refCA2, 0, ReasonIssuerFailedRepeatedly)) },
			want:  want{reason: ReasonRequestCreated, createFor: "ca-2"},
		},
		"the first issuer skipped by the host: the second": {
			setup: func(s *Snapshot, _ crypto.Signer) {
				recorded(s, chosen(2, 0, refCA, 0, ReasonFirstIssuer))
				s.IssuerHealth = []IssuerSkip{skip(IssuerRef{Name: "ca", Kind: DefaultIssuerKind, Group: DefaultIssuerGroup}, t0.Add(time.Hour))}
			},
			want: want{reason: ReasonRequestPending, issuer: skipping(chosen(2, 1, refCA2, 0, ReasonIssuerUnhealthy), skip(refCA, t0.Add(time.Hour))), requeueAt: t0},
		},
		"the first two skipped: the third": {
			setup: func(s *Snapshot, _ crypto.Signer) {
				recorded(s, chosen(2, 0, refCA, 0, ReasonFirstIssuer))
				s.IssuerHealth = []IssuerSkip{skip(refCA, t0.Add(time.Hour)), skip(refCA2, t0.Add(time.Hour))}
			},
			want: want{reason: ReasonRequestPending, issuer: skipping(chosen(2, 2, refCA3, 0, ReasonIssuerUnhealthy), skip(refCA, t0.Add(time.Hour)), skip(refCA2, t0.Add(time.Hour))), requeueAt: t0},
		},
		"the first issuer's deadline has come (half-open): the first": {
			setup: func(s *Snapshot, _ crypto.Signer) {
				recorded(s, chosen(2, 0, refCA, 0, ReasonFirstIssuer))
				s.IssuerHealth = []IssuerSkip{skip(refCA, t0)}
			},
			want: want{reason: ReasonRequestCreated, createFor: "ca"},
		},
		"a skipped issuer that is not the certificate's changes nothing": {
			setup: func(s *Snapshot, _ crypto.Signer) {
				recorded(s, chosen(2, 0, refCA, 0, ReasonFirstIssuer))
				s.IssuerHealth = []IssuerSkip{skip(IssuerRef{Name: "ca", Kind: "ClusterIssuer"}, t0.Add(time.Hour))}
			},
			want: want{reason: ReasonRequestCreated, createFor: "ca"},
		},
		"every issuer skipped: no request until the first may be tried": {
			setup: func(s *Snapshot, _ crypto.Signer) {
				recorded(s, chosen(2, 0, refCA, 0, ReasonFirstIssuer))
				s.IssuerHealth = []IssuerSkip{skip(refCA, t0.Add(3*time.Hour)), skip(refCA2, t0.Add(2*time.Hour)), skip(refCA3, t0.Add(4*time.Hour))}
			},
			want: want{reason: ReasonAllIssuersUnhealthy, requeueAt: t0.Add(2 * time.Hour)},
		},
		"a skip another host recorded counts with the host's own: every issuer skipped, nothing undone": {
			setup: func(s *Snapshot, _ crypto.Signer) {
				recorded(s, skipping(chosen(2, 1, refCA2, 0, ReasonIssuerUnhealthy), skip(refCA, t0.Add(time.Hour))))
				s.Certificate.Spec.FallbackIssuerRefs = s.Certificate.Spec.FallbackIssuerRefs[:1]
				s.IssuerHealth = []IssuerSkip{skip(refCA2, t0.Add(2*time.Hour))}
			},
			want: want{reason: ReasonAllIssuersUnhealthy, requeueAt: t0.Add(time.Hour)},
		},
		"a recorded skip that has run out is not one": {
			setup: func(s *Snapshot, _ crypto.Signer) {
				recorded(s, skipping(chosen(2, 1, refCA2, 0, ReasonIssuerUnhealthy), skip(refCA, t0)))
				s.Certificate.Spec.FallbackIssuerRefs = s.Certificate.Spec.FallbackIssuerRefs[:1]
				s.IssuerHealth = []IssuerSkip{skip(refCA2, t0.Add(2*time.Hour))}
			},
			want: want{reason: ReasonRequestPending, issuer: skipping(chosen(2, 0, refCA, 0, ReasonIssuerUnhealthy), skip(refCA2, t0.Add(2*time.Hour))), requeueAt: t0},
		},
		"a request made is not abandoned when its issuer is skipped": {
			setup: func(s *Snapshot, key crypto.Signer) {
				recorded(s, chosen(2, 0, refCA, 0, ReasonFirstIssuer))
				s.Requests = append(s.Requests, f.request2(s, key, refCA, t0.Add(-10*time.Minute)))
				s.IssuerHealth = []IssuerSkip{skip(refCA, t0.Add(time.Hour))}
			},
			want: want{reason: ReasonRequestPending, requeueAt: t0.Add(50 * time.Minute)},
		},
		"a request unanswered for an hour: replaced, the next to the second issuer": {
			setup: func(s *Snapshot, key crypto.Signer) {
				recorded(s, chosen(2, 0, refCA, 0, ReasonFirstIssuer))
				r := f.request2(s, key, refCA, t0.Add(-61*time.Minute))
				SetPending(r, "the CA cannot be reached", t0.Add(-time.Minute))
				s.Requests = append(s.Requests, r)
			},
			want: want{reason: ReasonRequestPending, issuer: chosen(2, 1, refCA2, 0, ReasonIssuerNotReady), deletes: true, requeueAt: t0.Add(deletedRequestRecheck)},
		},
		"a request unanswered for an hour with the rule off: kept": {
			cfg: Config{FallbackPending: -1},
			setup: func(s *Snapshot, key crypto.Signer) {
				recorded(s, chosen(2, 0, refCA, 0, ReasonFirstIssuer))
				s.Requests = append(s.Requests, f.request2(s, key, refCA, t0.Add(-61*time.Minute)))
			},
			want: want{reason: ReasonRequestPending},
		},
		"a request to an issuer the status does not record is replaced": {
			setup: func(s *Snapshot, key crypto.Signer) {
				recorded(s, chosen(2, 1, refCA2, 0, ReasonIssuerFailedRepeatedly))
				s.Requests = append(s.Requests, f.request2(s, key, refCA, t0.Add(-time.Minute)))
			},
			want: want{reason: ReasonRequestPending, deletes: true, requeueAt: t0.Add(deletedRequestRecheck)},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, key := f.fallbackIssuing()
			tc.setup(s, key)
			res := RequestManager(s, t0, tc.cfg)
			assert.Equal(t, tc.want.reason, res.Reason, res.Message)
			assert.Equal(t, tc.want.requeueAt, res.RequeueAt, "requeue")
			var gotIssuer *IssuerStatus
			if st := statusOf(res); st != nil && st.Issuer != nil {
				is := *st.Issuer
				is.Message = ""
				gotIssuer = &is
				assert.Contains(t, st.Condition(ConditionIssuing).Message, "renewal is due; using "+describeRef(is.IssuerRef),
					"the Issuing condition says which issuer and why")
			}
			assert.Equal(t, tc.want.issuer, gotIssuer, "status.issuer")
			createFor, deletes := "", false
			for _, a := range res.Actions {
				switch a := a.(type) {
				case CreateRequest:
					createFor = a.Request.Spec.IssuerRef.Name
				case DeleteRequest:
					deletes = true
				}
			}
			assert.Equal(t, tc.want.createFor, createFor, "request created for")
			assert.Equal(t, tc.want.deletes, deletes, "request deleted")
		})
	}
}

// A certificate issued by a fallback issuer is in line with the spec: the
// secret names that issuer, nothing re-issues it or rewrites the secret,
// and its renewal starts again with the first issuer.
func TestFallbackIssuedAndRenewed(t *testing.T) {
	f := newFixture(t)
	s, key := f.fallbackIssuing()
	is := chosen(2, 1, refCA2, 0, ReasonIssuerFailedRepeatedly)
	s.Certificate.Status.Issuer = is
	req := f.request2(s, key, refCA2, t0.Add(-10*time.Minute))
	chain := f.sign(key.Public(), s.Certificate.Spec.Template(), t0.Add(-time.Minute), t0.Add(90*24*time.Hour))
	SetIssued(req, chain, f.caPEM, t0.Add(-time.Minute))
	s.Requests = append(s.Requests, req)

	res := Reconcile(s, t0, Config{})
	require.Equal(t, ReasonIssued, res.Reason, res.Message)
	var write *WriteSecret
	for _, a := range res.Actions {
		if w, ok := a.(WriteSecret); ok {
			write = &w
		}
	}
	require.NotNil(t, write)
	assert.Equal(t, "ca-2", write.Annotations[AnnotationIssuerName], "the secret names the issuer that issued it")
	st := statusOf(res)
	require.NotNil(t, st)
	assert.Equal(t, 2, *st.Revision)
	assert.Equal(t, 2, st.Issuer.Revision)
	assert.Equal(t, 1, st.Issuer.Index)

	// The next pass, on what the host wrote: up to date, no drift.
	keyPEM, err := keys.EncodePrivateKey(key, keys.EncodingPKCS1)
	require.NoError(t, err)
	s.Secret = &Secret{ObjectMeta: ObjectMeta{Name: "web-tls", Namespace: "default", ResourceVersion: "8", Labels: write.Labels, Annotations: write.Annotations},
		Data: map[string][]byte{keys.SecretCertificate: chain, keys.SecretPrivateKey: keyPEM, keys.SecretCA: f.caPEM}}
	s.Certificate.Status = *st
	s.NextPrivateKeySecrets = nil
	assert.Equal(t, "ca-2", IssuedBy(s.Certificate, s.Secret).Name)
	res = Reconcile(s, t0.Add(time.Minute), Config{})
	assert.Equal(t, ReasonUpToDate, res.Steps[0].Reason, res.Steps[0].Message)
	for _, a := range res.Actions {
		switch a.(type) {
		case WriteSecret, CreateRequest, GenerateKey:
			t.Fatalf("a certificate issued by its fallback issuer is acted on: %v", a)
		}
	}

	// Renewal, once due: revision 3 starts with the first issuer.
	renewAt := t0.Add(61 * 24 * time.Hour)
	c := s.Certificate
	c.Status.Conditions = setCondition(c.Status.Conditions, Condition{Type: ConditionIssuing, Status: StatusTrue, Reason: ReasonRenewing, Message: "renewal is due"}, renewAt, 1)
	f.putNextKey(s, f.key(keys.KeySpec{Algorithm: keys.AlgorithmECDSA}))
	res = RequestManager(s, renewAt, Config{})
	st = statusOf(res)
	require.NotNil(t, st, res.Message)
	assert.Equal(t, 3, st.Issuer.Revision)
	assert.Equal(t, 0, st.Issuer.Index, "the renewal goes back to the first issuer")
	assert.Equal(t, ReasonFirstIssuer, st.Issuer.Reason)
}

// Without fallback issuers, nothing of the above applies: the host's
// health report changes no decision, and no status records an issuer.
func TestFallbackNoneIsUnchanged(t *testing.T) {
	f := newFixture(t)
	s, key := f.fallbackIssuing()
	s.Certificate.Spec.FallbackIssuerRefs = nil
	cases := map[string]func(s *Snapshot){
		"about to request": func(*Snapshot) {},
		"a request unanswered for a day": func(s *Snapshot) {
			s.Requests = append(s.Requests, f.request2(s, key, refCA, t0.Add(-24*time.Hour)))
		},
		"a failed request with a long Retry-After": func(s *Snapshot) {
			r := f.request2(s, key, refCA, t0.Add(-30*time.Minute))
			SetFailed(r, "rate limited", t0.Add(-time.Minute), t0.Add(48*time.Hour))
			s.Requests = append(s.Requests, r)
		},
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			plain := cloneSnapshot(s)
			mutate(plain)
			withHealth := cloneSnapshot(plain)
			withHealth.IssuerHealth = []IssuerSkip{{IssuerRef: refCA, Until: t0.Add(time.Hour)}}
			a, b := Reconcile(plain, t0, Config{}), Reconcile(withHealth, t0, Config{})
			if d := cmp.Diff(a, b); d != "" {
				t.Fatalf("the health report changed the decision:\n%s", d)
			}
			if st := statusOf(a); st != nil {
				assert.Nil(t, st.Issuer)
			}
		})
	}
}

// The spec's fallback issuers are checked as its issuerRef is, with
// their count bounded and no issuer named twice.
func TestValidateFallbackIssuers(t *testing.T) {
	many := make([]IssuerRef, MaxFallbackIssuers+1)
	for i := range many {
		many[i] = IssuerRef{Name: "ca-" + string(rune('a'+i))}
	}
	tests := map[string]struct {
		refs []IssuerRef
		want []string // field paths
	}{
		"none":                    {},
		"two others":              {refs: []IssuerRef{refCA2, {Name: "ca", Kind: "ClusterIssuer"}}},
		"an empty name":           {refs: []IssuerRef{refCA2, {Kind: "ClusterIssuer"}}, want: []string{"spec.fallbackIssuerRefs[1].name"}},
		"the issuerRef again":     {refs: []IssuerRef{{Name: "ca", Kind: DefaultIssuerKind}}, want: []string{"spec.fallbackIssuerRefs[0]"}},
		"one fallback twice":      {refs: []IssuerRef{refCA2, refCA3, {Name: "ca-2", Group: DefaultIssuerGroup}}, want: []string{"spec.fallbackIssuerRefs[2]"}},
		"more than the maximum":   {refs: many, want: []string{"spec.fallbackIssuerRefs"}},
		"the maximum is accepted": {refs: many[:MaxFallbackIssuers]},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			spec := testCertificate().Spec
			spec.FallbackIssuerRefs = tc.refs
			var got []string
			if err := Validate(&spec); err != nil {
				for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
					got = append(got, e.(*FieldError).Path)
				}
				if len(tc.want) > 0 {
					assert.True(t, strings.Contains(err.Error(), "fallbackIssuerRefs"), err.Error())
				}
			}
			assert.Equal(t, tc.want, got)
		})
	}
}
