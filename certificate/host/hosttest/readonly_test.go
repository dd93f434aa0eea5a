package hosttest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
)

// recordingT is a testing.T whose Errorf records instead of failing.
type recordingT struct {
	*testing.T
	mu   sync.Mutex
	errs []string
}

func (r *recordingT) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recordingT) reported() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errs...)
}

func TestCheckReadOnlyReportsAChangedObject(t *testing.T) {
	var rt *recordingT
	var secretKey string
	t.Run("changes", func(t *testing.T) {
		ctx := t.Context()
		rt = &recordingT{T: t}
		mem := host.NewMemoryStore(testingclock.NewFakeClock(t0))
		st := CheckReadOnly(rt, mem)
		_, watcher := st.(host.Watcher)
		assert.True(t, watcher, "a wrapped Watcher is a Watcher")
		_, leaser := st.(host.Leaser)
		assert.Equal(t, isLeaser(mem), leaser, "a wrapped store is a Leaser exactly when the store is")

		sec, err := st.Secrets().Create(ctx, sampleSecret("ns", "web-tls", 1))
		require.NoError(t, err)
		read, err := st.Secrets().Get(ctx, "ns", "web-tls")
		require.NoError(t, err)
		secretKey = string(read.Data["tls.key"])
		_, err = st.Requests().Create(ctx, sampleRequest("ns", "web-1", 1))
		require.NoError(t, err)
		assert.Empty(t, rt.reported(), "nothing was changed")

		// Changed after a write, and reported at the next.
		read.Data["tls.key"] = []byte("value-not-shown")
		read.Labels = map[string]string{"l": "value-not-shown"}
		_, err = st.Requests().Create(ctx, sampleRequest("ns", "web-2", 2))
		require.NoError(t, err)
		errs := rt.reported()
		require.Len(t, errs, 1, "the next write reports the change: %q", errs)
		assert.Contains(t, errs[0], `Secret ns/web-tls, returned by Get("ns", "web-tls"), was changed`)
		assert.Contains(t, errs[0], "data.tls.key")
		assert.Contains(t, errs[0], "metadata.labels")
		assert.NotContains(t, errs[0], "value-not-shown", "values are not reported")

		// Changed after the last write: reported when the test ends.
		sec.Annotations = map[string]string{"late": "value-not-shown"}
	})
	errs := rt.reported()
	require.Len(t, errs, 2, "%q", errs)
	assert.Contains(t, errs[1], "Secret ns/web-tls, returned by Create, was changed")
	assert.Contains(t, errs[1], "metadata.annotations")
	for _, e := range errs {
		assert.NotContains(t, e, "value-not-shown", "values are not reported")
		if secretKey != "" {
			assert.NotContains(t, e, secretKey, "key material is never reported")
		}
	}
}

func TestCheckReadOnlyIsQuietWhenNothingChanges(t *testing.T) {
	// A certificate created, updated through a copy, listed and deleted,
	// as the loop does: nothing it returned was changed, nothing is
	// reported.
	ctx := t.Context()
	rt := &recordingT{T: t}
	st := CheckReadOnly(rt, host.NewMemoryStore(testingclock.NewFakeClock(t0)))
	c, err := st.Certificates().Create(ctx, sampleCertificate("ns", "web", 1))
	require.NoError(t, err)
	upd := *c
	upd.Status = certificate.Status{Conditions: []certificate.Condition{{Type: certificate.ConditionReady, Status: certificate.StatusTrue}}}
	_, err = st.Certificates().Update(ctx, &upd)
	require.NoError(t, err)
	list, err := st.Certificates().List(ctx, host.ListOptions{Namespace: "ns"})
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.NoError(t, st.Certificates().Delete(ctx, "ns", "web"))
	assert.Empty(t, rt.reported())
}

func isLeaser(st host.Store) bool {
	_, ok := st.(host.Leaser)
	return ok
}
