package certificate

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The result says which stage acted and why the certificate is being
// issued — not only the stage's own reason — and what each stage said.
func TestReconcileSaysWhichStageActedAndWhy(t *testing.T) {
	f := newFixture(t)
	s, _ := f.healthy(t0.Add(-10 * 24 * time.Hour))
	s.Secret = nil
	res := Reconcile(s, t0, Config{})
	assert.Equal(t, StageKeyManager, res.Stage)
	assert.Equal(t, ReasonWaitingForKey, res.Reason)
	assert.Equal(t, ReasonDoesNotExist, res.IssuanceReason)
	assert.Equal(t, "secret web-tls does not exist", res.IssuanceMessage)
	require.Len(t, res.Steps, 5)
	want := []struct {
		stage  Stage
		reason string
		acted  bool
	}{
		{StageTrigger, ReasonDoesNotExist, true},
		{StageKeyManager, ReasonWaitingForKey, true},
		{StageRequestManager, ReasonWaitingForKey, false},
		{StageIssuing, ReasonRequestPending, false},
		{StageReadiness, ReasonDoesNotExist, true},
	}
	for i, w := range want {
		assert.Equal(t, w.stage, res.Steps[i].Stage)
		assert.Equal(t, w.reason, res.Steps[i].Reason, "%s: %s", w.stage, res.Steps[i].Message)
		assert.Equal(t, w.acted, res.Steps[i].Acted, w.stage)
	}

	// A healthy certificate: the trigger's "up to date, renewal due at".
	h, _ := f.healthy(t0.Add(-10 * 24 * time.Hour))
	res = Reconcile(h, t0, Config{})
	assert.Equal(t, StageTrigger, res.Stage)
	assert.Equal(t, ReasonUpToDate, res.Reason)
	assert.Empty(t, res.IssuanceReason)
	assert.Contains(t, res.Message, "renewal due at")
}

// Stages gives a fresh list each call: a host that changes what it got
// changes neither the next list nor the order Reconcile runs the stages in.
func TestStagesCannotBeChangedByAHost(t *testing.T) {
	want := []Stage{StageTrigger, StageKeyManager, StageRequestManager, StageIssuing, StageReadiness}
	got := Stages()
	require.Equal(t, want, got)
	got[0], got[4] = StageReadiness, StageTrigger

	assert.Equal(t, want, Stages(), "a changed list changed the next one")
	f := newFixture(t)
	s, _ := f.healthy(t0.Add(-10 * 24 * time.Hour))
	res := Reconcile(s, t0, Config{})
	ran := make([]Stage, len(res.Steps))
	for i, st := range res.Steps {
		ran[i] = st.Stage
	}
	assert.Equal(t, want, ran, "a changed list changed the order Reconcile runs the stages in")
}
