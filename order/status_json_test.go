package order

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An order stored before its failed-call record became retry.Attempts
// reads back whole and is written back byte for byte: the five fields keep
// their keys, their place and their meaning.
func TestStatusStoredBeforeAttemptsReadsTheSame(t *testing.T) {
	stored := `{"url":"https://ca/order/1","state":"pending","specHash":"v1:00","lastError":"503","transient":true,` +
		`"lastErrorTime":"2026-03-01T12:00:00Z","failedAttempts":2,"retryAfter":"2026-03-01T12:01:00Z","readFirst":true}`
	var st Status
	require.NoError(t, json.Unmarshal([]byte(stored), &st))
	assert.Equal(t, "503", st.LastError)
	assert.True(t, st.Transient)
	assert.Equal(t, t0, *st.LastErrorTime)
	assert.Equal(t, 2, st.FailedAttempts)
	assert.Equal(t, t0.Add(time.Minute), *st.RetryAfter)
	again, err := json.Marshal(st)
	require.NoError(t, err)
	assert.Equal(t, stored, string(again))
}
