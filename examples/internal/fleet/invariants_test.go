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
