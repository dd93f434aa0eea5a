package fleet

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
)

// The un-Ready bound counts from the later of when a certificate stopped
// being Ready and when its next attempt was allowed: by the backoff
// schedule, or at once by a manual renewal that came since the last
// failure.
func TestTrackerUnreadyBoundStartsWhenAnAttemptIsAllowed(t *testing.T) {
	// Created at t0, failed for the fifth time in a row a minute later:
	// the schedule allows the next attempt 16 h after that failure.
	failedAt := t0.Add(time.Minute)
	allowed := failedAt.Add(16 * time.Hour)
	for name, tc := range map[string]struct {
		manualAt time.Time // zero: none
		readyAt  time.Time
		want     []string // violation kinds
	}{
		"Ready a minute after a manual renewal during the backoff is on time": {
			manualAt: t0.Add(10 * time.Hour), readyAt: t0.Add(10*time.Hour + time.Minute)},
		"Ready half an hour after the backoff allowed an attempt is on time": {
			readyAt: allowed.Add(30 * time.Minute)},
		"Ready two hours after the backoff allowed an attempt is late": {
			readyAt: allowed.Add(2 * time.Hour), want: []string{"not ready"}},
		"Ready two hours after a manual renewal during the backoff is late": {
			manualAt: t0.Add(10 * time.Hour), readyAt: t0.Add(12 * time.Hour), want: []string{"not ready"}},
	} {
		t.Run(name, func(t *testing.T) {
			tr := newTracker(Defaults())
			c := fleetCertificate(Defaults(), 1)
			c.UID = "uid-1"
			tr.wrote(write{kind: host.KindCertificate, created: true, obj: c}, t0)

			failed := *c
			failed.Status = certificate.Status{
				Conditions:             []certificate.Condition{{Type: certificate.ConditionReady, Status: certificate.StatusFalse}},
				LastFailureTime:        &failedAt,
				FailedIssuanceAttempts: ptr(5),
			}
			tr.wrote(write{kind: host.KindCertificate, obj: &failed}, failedAt)
			if !tc.manualAt.IsZero() {
				tr.manual(c.Name, tc.manualAt)
			}

			notAfter := tc.readyAt.Add(90 * 24 * time.Hour)
			ready := *c
			ready.Status = certificate.Status{
				Conditions: []certificate.Condition{{Type: certificate.ConditionReady, Status: certificate.StatusTrue}},
				Revision:   ptr(1), NotAfter: &notAfter,
			}
			tr.wrote(write{kind: host.KindCertificate, obj: &ready}, tc.readyAt)
			var kinds []string
			for kind := range violationKinds(tr.list) {
				kinds = append(kinds, kind)
			}
			assert.Equal(t, tc.want, kinds, "violations: %v", tr.list)
		})
	}
}

func ptr[T any](v T) *T { return &v }

// A certificate that was valid when its renewal failed is retried by its
// expiry less the renewal fail-safe margin (a day, for a 6-day
// certificate), or within the margin once half the time left has passed,
// whatever the backoff says: the tracker flags a retry before that
// (backoff) and one that does not come within RetryBound of it (retry), as
// it does for the backoff's own schedule.
func TestTrackerHoldsRetriesToTheExpiryDeadline(t *testing.T) {
	const day = 24 * time.Hour
	for name, tc := range map[string]struct {
		lifetime time.Duration
		left     time.Duration // before expiry at the failure, the 5th in a row (backoff 16h)
		request  time.Duration // after the failure; zero for none
		sweep    time.Duration // after the failure
		want     []string
	}{
		"a 6-day certificate retried when the day before expiry begins": {
			lifetime: 6 * day, left: 33 * time.Hour, request: 9 * time.Hour, sweep: 9*time.Hour + 20*time.Minute},
		"a 6-day certificate retried a minute before that": {
			lifetime: 6 * day, left: 33 * time.Hour, request: 9*time.Hour - time.Minute, sweep: 9 * time.Hour, want: []string{"backoff"}},
		"a 6-day certificate not retried within the bound of that": {
			lifetime: 6 * day, left: 33 * time.Hour, sweep: 9*time.Hour + RetryBound + time.Minute, want: []string{"retry"}},
		"a 6-day certificate retried on the backoff's schedule, past the margin": {
			lifetime: 6 * day, left: 33 * time.Hour, request: 16 * time.Hour, sweep: 9*time.Hour + RetryBound + time.Minute, want: []string{"retry"}},
		"a 6-day certificate not yet retried within the bound": {
			lifetime: 6 * day, left: 33 * time.Hour, sweep: 9*time.Hour + RetryBound - time.Minute},
		"a 90-day certificate failing within the margin, retried when half the time left has passed": {
			lifetime: 90 * day, left: 20 * time.Hour, request: 10 * time.Hour, sweep: 10*time.Hour + 20*time.Minute},
		"a 90-day certificate failing within the margin, retried before half the time left has passed": {
			lifetime: 90 * day, left: 20 * time.Hour, request: 10*time.Hour - time.Minute, sweep: 10 * time.Hour, want: []string{"backoff"}},
		"a 3-day certificate keeps a sixth of its lifetime, 12h": {
			lifetime: 3 * day, left: 20 * time.Hour, request: 8*time.Hour - time.Minute, sweep: 8*time.Hour + RetryBound + time.Minute, want: []string{"backoff"}},
		"a 3-day certificate not retried within the bound of its deadline": {
			lifetime: 3 * day, left: 20 * time.Hour, sweep: 8*time.Hour + RetryBound + time.Minute, want: []string{"retry"}},
	} {
		t.Run(name, func(t *testing.T) {
			tr := newTracker(Defaults())
			c := fleetCertificate(Defaults(), 1)
			c.UID, c.Spec.Duration, c.Spec.Renewal = "uid-1", &certificate.Duration{Duration: tc.lifetime}, nil
			tr.wrote(write{kind: host.KindCertificate, created: true, obj: c}, t0)

			notAfter := t0.Add(tc.lifetime)
			renewAt := t0.Add(tc.lifetime * 2 / 3)
			issued := *c
			issued.Status = certificate.Status{
				Conditions: []certificate.Condition{{Type: certificate.ConditionReady, Status: certificate.StatusTrue}},
				Revision:   ptr(1), NotAfter: &notAfter, RenewalTime: &renewAt,
			}
			tr.wrote(write{kind: host.KindCertificate, obj: &issued}, t0.Add(time.Minute))
			failedAt := notAfter.Add(-tc.left)
			failed := issued
			failed.Status.LastFailureTime, failed.Status.FailedIssuanceAttempts = &failedAt, ptr(5)
			tr.wrote(write{kind: host.KindCertificate, obj: &failed}, failedAt)
			request := func() {
				r := &certificate.CertificateRequest{ObjectMeta: certificate.ObjectMeta{Namespace: c.Namespace, Name: c.Name + "-2", OwnerUID: c.UID,
					Annotations: map[string]string{certificate.AnnotationCertificateName: c.Name, certificate.AnnotationRevision: "2"}}}
				tr.wrote(write{kind: host.KindRequest, created: true, obj: r}, failedAt.Add(tc.request))
			}
			// In the order they happen.
			if tc.request > 0 && tc.request <= tc.sweep {
				request()
			}
			tr.sweep(failedAt.Add(tc.sweep))
			if tc.request > tc.sweep {
				request()
			}
			var kinds []string
			for kind := range violationKinds(tr.list) {
				kinds = append(kinds, kind)
			}
			assert.ElementsMatch(t, tc.want, kinds, "violations: %v", tr.list)
		})
	}
}
