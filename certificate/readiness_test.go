package certificate

import (
	"testing"
	"time"

	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/renewal"
	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

func TestReadiness(t *testing.T) {
	f := newFixture(t)
	issued := t0.Add(-10 * 24 * time.Hour)
	type want struct {
		status, reason string
		renewalConds   []string
		write          bool
		requeue        bool
	}
	tests := map[string]struct {
		mutate func(s *Snapshot)
		now    time.Time
		want   want
	}{
		"a healthy certificate is Ready and records its validity": {
			mutate: func(*Snapshot) {}, now: t0,
			want: want{status: StatusTrue, reason: ReasonReady, write: true, requeue: true},
		},
		"a missing secret is not Ready": {
			mutate: func(s *Snapshot) { s.Secret = nil }, now: t0,
			want: want{status: StatusFalse, reason: ReasonDoesNotExist, write: true},
		},
		"a key of another certificate is not Ready": {
			mutate: func(s *Snapshot) {
				k, _ := keys.EncodePrivateKey(f.key(keys.KeySpec{Algorithm: keys.AlgorithmECDSA}), keys.EncodingPKCS8)
				s.Secret.Data[keys.SecretPrivateKey] = k
			}, now: t0,
			want: want{status: StatusFalse, reason: ReasonInvalidKeyPair, write: true, requeue: true},
		},
		"an expired certificate is not Ready (Expired)": {
			mutate: func(*Snapshot) {}, now: issued.Add(91 * 24 * time.Hour),
			want: want{status: StatusFalse, reason: ReasonExpired, write: true},
		},
		"a disabled renewal policy shows the RenewalDisabled condition": {
			mutate: func(s *Snapshot) { s.Certificate.Spec.Renewal = &renewal.Spec{Policy: renewal.PolicyDisabled} }, now: t0,
			want: want{status: StatusTrue, reason: ReasonReady, write: true, requeue: true, renewalConds: []string{renewal.ConditionRenewalDisabled}},
		},
		"a stale renewal condition is removed": {
			mutate: func(s *Snapshot) {
				s.Certificate.Status.Conditions = append(s.Certificate.Status.Conditions, Condition{Type: renewal.ConditionRenewalDeferred, Status: StatusTrue})
			}, now: t0,
			want: want{status: StatusTrue, reason: ReasonReady, write: true, requeue: true},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, _ := f.healthy(issued)
			tc.mutate(s)
			res := Readiness(s, tc.now, Config{})
			got := want{reason: res.Reason, requeue: !res.RequeueAt.IsZero()}
			if len(res.Actions) == 1 {
				got.write = true
				st := res.Actions[0].(UpdateStatus).Status
				if c := st.Condition(ConditionReady); c != nil {
					got.status = c.Status
				}
				for _, c := range st.Conditions {
					if isRenewalCondition(c.Type) {
						got.renewalConds = append(got.renewalConds, c.Type)
					}
				}
				if tc.want.status == StatusTrue {
					require.NotNil(t, st.NotAfter, "a Ready certificate's status lacks notAfter")
					require.NotNil(t, st.RenewalTime, "a Ready certificate's status lacks renewalTime")
				}
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Fatalf("Readiness() mismatch (-want +got):\n%s\nmessage: %s", diff, res.Message)
			}
		})
	}
}

// TestReadinessWritesNothingTwice: applying the status it asks for and
// deciding again yields no write — a healthy certificate causes no write
// loop.
func TestReadinessWritesNothingTwice(t *testing.T) {
	f := newFixture(t)
	s, _ := f.healthy(t0.Add(-10 * 24 * time.Hour))
	res := Readiness(s, t0, Config{})
	require.Len(t, res.Actions, 1, "first pass")
	s.Certificate.Status = res.Actions[0].(UpdateStatus).Status
	again := Readiness(s, t0.Add(time.Minute), Config{})
	require.Empty(t, again.Actions, "second pass wrote again")
	require.True(t, again.RequeueAt.Equal(*s.Certificate.Status.NotAfter), "requeue at %v, want notAfter %v", again.RequeueAt, *s.Certificate.Status.NotAfter)
}

// The status records what the CA said of the renewal window, in whole
// seconds: asked again later, from the host's memory (the same next
// check), it writes nothing, nor when another host's next check differs
// while the record is not yet due; a new check writes the new times, and
// a new certificate its own at once; an issuer that gives no renewal
// information leaves none.
func TestReadinessRecordsRenewalInfo(t *testing.T) {
	f := newFixture(t)
	s, _ := f.healthy(t0.Add(-10 * 24 * time.Hour))
	now := t0.Add(1500 * time.Millisecond)
	s.ARI = &renewal.ARIWindow{Start: t0.Add(40*24*time.Hour + 300*time.Millisecond), End: t0.Add(41 * 24 * time.Hour), ExplanationURL: "https://ca.example/why"}
	s.ARINextCheck = now.Add(6*time.Hour + 700*time.Millisecond)
	res := Readiness(s, now, Config{})
	require.Len(t, res.Actions, 1)
	st := res.Actions[0].(UpdateStatus).Status
	second := func(d time.Duration) *time.Time { v := t0.Add(d).UTC(); return &v }
	want := &RenewalInfoStatus{
		SuggestedWindow: &renewal.ARIWindow{Start: *second(40 * 24 * time.Hour), End: *second(41 * 24 * time.Hour), ExplanationURL: "https://ca.example/why"},
		LastChecked:     second(time.Second),
		NextCheck:       second(6*time.Hour + 2*time.Second),
	}
	require.Equal(t, want, st.RenewalInfo)

	// Answered from the host's memory: the same next check, nothing to write.
	s.Certificate.Status = st
	require.Empty(t, Readiness(s, now.Add(time.Hour), Config{}).Actions, "a pass that did not ask the CA wrote the status")

	// Another host (a replica, or this one restarted) asked the CA at its
	// own time, so its next check differs: while the record's next check
	// is ahead, the record stands, or hosts sharing the certificate would
	// overwrite one another on every pass.
	other := s
	other.ARINextCheck = now.Add(7 * time.Hour)
	require.Empty(t, Readiness(other, now.Add(2*time.Hour), Config{}).Actions, "another host's next check overwrote a record not yet due")

	// A new check that failed, when the host's next check came (the
	// record's, to the second, is not later): the window kept, the error
	// and the new times recorded.
	later := s.ARINextCheck
	s.ARINextCheck, s.ARIError = later.Add(time.Minute), "renewal information: 503 Service Unavailable"
	res = Readiness(s, later, Config{})
	require.Len(t, res.Actions, 1)
	got := res.Actions[0].(UpdateStatus).Status.RenewalInfo
	require.Equal(t, want.SuggestedWindow, got.SuggestedWindow)
	require.Equal(t, "renewal information: 503 Service Unavailable", got.LastError)
	require.Equal(t, later.Truncate(time.Second).UTC(), *got.LastChecked)
	require.Equal(t, later.Add(time.Minute).Truncate(time.Second).UTC(), *got.NextCheck)

	// A new certificate: its check is recorded at once, though the old
	// one's record is not yet due.
	renewed, _ := f.healthy(t0.Add(-time.Hour))
	renewed.Certificate.Status = res.Actions[0].(UpdateStatus).Status
	renewed.ARI = &renewal.ARIWindow{Start: t0.Add(50 * 24 * time.Hour), End: t0.Add(51 * 24 * time.Hour)}
	renewed.ARINextCheck = later.Add(6 * time.Hour)
	res = Readiness(renewed, later.Add(time.Second), Config{})
	require.Len(t, res.Actions, 1)
	got = res.Actions[0].(UpdateStatus).Status.RenewalInfo
	require.Equal(t, t0.Add(50*24*time.Hour).UTC(), got.SuggestedWindow.Start)
	require.Empty(t, got.LastError)
	require.Equal(t, later.Add(6*time.Hour).Truncate(time.Second).UTC(), *got.NextCheck)

	// No renewal information (another issuer): none recorded.
	s.ARI, s.ARINextCheck, s.ARIError = nil, time.Time{}, ""
	res = Readiness(s, later, Config{})
	require.Len(t, res.Actions, 1)
	require.Nil(t, res.Actions[0].(UpdateStatus).Status.RenewalInfo)
}
