package challenge

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A challenge stored before its failed-call record became retry.Attempts
// reads back whole and is written back with the same keys and values (the
// record's keys now come in the order LastError, Transient, LastErrorTime,
// FailedAttempts, RetryAfter).
func TestStatusStoredBeforeAttemptsReadsTheSame(t *testing.T) {
	stored := `{"processing":true,"presented":false,"state":"processing","accepted":true,"lastError":"503","transient":true,` +
		`"retryAfter":"2026-03-01T12:01:00Z","lastErrorTime":"2026-03-01T12:00:00Z","failedAttempts":2,"nextAttemptAt":"2026-03-01T12:02:00Z"}`
	var st Status
	require.NoError(t, json.Unmarshal([]byte(stored), &st))
	assert.Equal(t, "503", st.LastError)
	assert.True(t, st.Transient)
	assert.Equal(t, t0, *st.LastErrorTime)
	assert.Equal(t, 2, st.FailedAttempts)
	assert.Equal(t, t0.Add(time.Minute), *st.RetryAfter)
	again, err := json.Marshal(st)
	require.NoError(t, err)
	assert.JSONEq(t, stored, string(again))
}
