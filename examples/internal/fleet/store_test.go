package fleet

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/keys"
)

var t0 = time.Date(2027, 1, 4, 0, 0, 0, 0, time.UTC)

func request(name, owner, cert string) *certificate.CertificateRequest {
	return &certificate.CertificateRequest{
		ObjectMeta: certificate.ObjectMeta{Namespace: "fleet", Name: name, OwnerUID: owner,
			Annotations: map[string]string{certificate.AnnotationCertificateName: cert}},
		Spec: certificate.RequestSpec{Request: []byte("csr"), IssuerRef: issuerRef},
	}
}

func TestStoreWritesCheckTheLatestStateAndReadsAreCopies(t *testing.T) {
	ctx := context.Background()
	s := newStore(testingclock.NewFakeClock(t0))
	reqs := s.Requests()

	r, err := reqs.Create(ctx, request("web-1", "uid-web", "web"))
	require.NoError(t, err)
	assert.Equal(t, int64(1), r.Generation)
	_, err = reqs.Create(ctx, request("web-1", "uid-web", "web"))
	assert.ErrorIs(t, err, host.ErrAlreadyExists)

	r.Status.Conditions = []certificate.Condition{{Type: certificate.RequestConditionReady, Status: certificate.StatusFalse}}
	r2, err := reqs.Update(ctx, r)
	require.NoError(t, err)
	_, err = reqs.Update(ctx, r) // the version it read is gone
	assert.ErrorIs(t, err, host.ErrConflict)

	got, err := reqs.Get(ctx, "fleet", "web-1")
	require.NoError(t, err)
	got.Annotations["x"] = "changed"
	got.Status.Conditions[0].Status = "changed"
	again, err := reqs.Get(ctx, "fleet", "web-1")
	require.NoError(t, err)
	assert.Equal(t, r2, again, "a read's maps and conditions are the caller's: changing them changes nothing stored")

	require.NoError(t, reqs.Delete(ctx, "fleet", "web-1"))
	assert.ErrorIs(t, reqs.Delete(ctx, "fleet", "web-1"), host.ErrNotFound)
	_, err = reqs.Get(ctx, "fleet", "web-1")
	assert.ErrorIs(t, err, host.ErrNotFound)
	_, err = reqs.Update(ctx, r2)
	assert.ErrorIs(t, err, host.ErrNotFound)
}

func TestStoreCertificateGenerationMovesWithTheSpec(t *testing.T) {
	ctx := context.Background()
	s := newStore(testingclock.NewFakeClock(t0))
	c, err := s.Certificates().Create(ctx, fleetCertificate(Defaults(), 1))
	require.NoError(t, err)
	require.Equal(t, int64(1), c.Generation)
	c.Status.Conditions = []certificate.Condition{{Type: certificate.ConditionReady, Status: certificate.StatusTrue}}
	c, err = s.Certificates().Update(ctx, c)
	require.NoError(t, err)
	assert.Equal(t, int64(1), c.Generation, "a status write")
	c.Spec.DNSNames = []string{"other.example"}
	c, err = s.Certificates().Update(ctx, c)
	require.NoError(t, err)
	assert.Equal(t, int64(2), c.Generation, "a spec change")
}

// A secret shares its certificate with the request it came from and its
// CA with the CA's: what makes the store lean.
func TestStoreSecretsShareBytes(t *testing.T) {
	ctx := context.Background()
	s := newStore(testingclock.NewFakeClock(t0))
	caPEM := []byte("-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n")
	s.shared = [][]byte{caPEM}
	r := request("web-1", "uid-web", "web")
	r.Status.Certificate = []byte("leaf")
	_, err := s.Requests().Create(ctx, r)
	require.NoError(t, err)
	_, err = s.Secrets().Create(ctx, &certificate.Secret{
		ObjectMeta: certificate.ObjectMeta{Namespace: "fleet", Name: "web-tls", OwnerUID: "uid-web"},
		Data:       map[string][]byte{keys.SecretCertificate: []byte("leaf"), keys.SecretCA: append([]byte(nil), caPEM...)},
	})
	require.NoError(t, err)
	sec, err := s.Secrets().Get(ctx, "fleet", "web-tls")
	require.NoError(t, err)
	stored, err := s.Requests().Get(ctx, "fleet", "web-1")
	require.NoError(t, err)
	assert.Same(t, &stored.Status.Certificate[0], &sec.Data[keys.SecretCertificate][0], "tls.crt is the request's chain")
	assert.Same(t, &caPEM[0], &sec.Data[keys.SecretCA][0], "ca.crt is the CA's")
}

func TestStoreCrashPoints(t *testing.T) {
	ctx := context.Background()
	for name, tc := range map[string]struct {
		point    crashPoint
		wantKept bool
	}{
		"a crash before a write leaves nothing":               {crashBefore, false},
		"a crash after a write leaves it, and still an error": {crashAfter, true},
	} {
		t.Run(name, func(t *testing.T) {
			s := newStore(testingclock.NewFakeClock(t0))
			s.crash = func(host.Kind, string) crashPoint { return tc.point }
			_, err := s.Requests().Create(ctx, request("web-1", "uid-web", "web"))
			assert.ErrorIs(t, err, errCrash)
			assert.Equal(t, tc.wantKept, s.hasRequest("fleet", "web-1"))
			require.NoError(t, s.userWrite(fleetCertificate(Defaults(), 1), true), "a user's write never crashes")
		})
	}
}

// With a lag, a write shows in reads, lists and watch events only later;
// each kind's writes show in order; an update still checks the latest
// version.
func TestStoreLaggingReads(t *testing.T) {
	ctx := context.Background()
	clk := testingclock.NewFakeClock(t0)
	s := newStore(clk)
	lags := map[string]time.Duration{"web-1": 10 * time.Second, "web-2": time.Second}
	s.lagOf = func(_ host.Kind, name string, _ uint64) time.Duration { return lags[name] }
	var seen []string
	s.Watch(func(ch host.Change) { seen = append(seen, fmt.Sprintf("%s deleted=%v", ch.Name, ch.Deleted)) })
	reqs := s.Requests()

	r1, err := reqs.Create(ctx, request("web-1", "uid-web", "web"))
	require.NoError(t, err)
	_, err = reqs.Create(ctx, request("web-2", "uid-web", "web"))
	require.NoError(t, err)
	_, err = reqs.Get(ctx, "fleet", "web-1")
	assert.ErrorIs(t, err, host.ErrNotFound, "not shown yet")
	assert.Equal(t, 1, s.staleReads, "the read is counted as behind")
	_, err = reqs.Create(ctx, request("web-1", "uid-web", "web"))
	assert.ErrorIs(t, err, host.ErrAlreadyExists, "a create checks the latest state, not what reads show")

	clk.Step(5 * time.Second)
	s.show()
	listed, err := reqs.List(ctx, host.ListOptions{OwnerUID: "uid-web"})
	require.NoError(t, err)
	assert.Empty(t, listed, "web-2's lag is shorter, but it shows after web-1, written before it")
	assert.Empty(t, seen)

	clk.Step(5 * time.Second)
	s.show()
	listed, err = reqs.List(ctx, host.ListOptions{OwnerUID: "uid-web"})
	require.NoError(t, err)
	assert.Equal(t, []string{"web-1", "web-2"}, names(listed))
	assert.Equal(t, []string{"web-1 deleted=false", "web-2 deleted=false"}, seen)

	require.NoError(t, reqs.Delete(ctx, "fleet", "web-1"))
	_, err = reqs.Update(ctx, r1)
	assert.ErrorIs(t, err, host.ErrNotFound, "an update checks the latest state")
	got, err := reqs.Get(ctx, "fleet", "web-1")
	require.NoError(t, err, "the delete does not show yet")
	assert.Equal(t, "web-1", got.Name)
	clk.Step(10 * time.Second)
	s.show()
	listed, err = reqs.List(ctx, host.ListOptions{OwnerUID: "uid-web"})
	require.NoError(t, err)
	assert.Equal(t, []string{"web-2"}, names(listed))
	assert.Equal(t, "web-1 deleted=true", seen[len(seen)-1])
}

func names[T host.Object](objs []T) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.Meta().Name)
	}
	return out
}

// The store against a plain model: random creates, updates and deletes
// of requests of a few owners, with lags that vary by write; after each,
// every read, list by owner and the watch events agree with the model.
func TestStoreMatchesModel(t *testing.T) {
	ctx := context.Background()
	clk := testingclock.NewFakeClock(t0)
	s := newStore(clk)
	s.lagOf = func(_ host.Kind, name string, version uint64) time.Duration {
		return time.Duration((version*7+uint64(len(name)))%4) * time.Second
	}
	type modelWrite struct {
		name, owner string
		deleted     bool
		at          time.Time
	}
	latest := map[string]string{} // name → owner
	shown := map[string]string{}
	var pending []modelWrite
	var events, wantEvents []string
	s.Watch(func(ch host.Change) { events = append(events, ch.Name+"/"+ch.Meta.OwnerUID+fmt.Sprint(ch.Deleted)) })
	write := func(name, owner string, deleted bool, version uint64) {
		at := clk.Now().Add(s.lagOf(host.KindRequest, name, version))
		if n := len(pending); n > 0 && at.Before(pending[n-1].at) {
			at = pending[n-1].at
		}
		if deleted {
			delete(latest, name)
		} else {
			latest[name] = owner
		}
		pending = append(pending, modelWrite{name, owner, deleted, at})
	}
	reqNames := []string{"a", "bb", "ccc", "dddd"}
	owners := []string{"uid-1", "uid-2"}
	rng := uint64(1)
	next := func(n uint64) uint64 { rng = rng*6364136223846793005 + 1442695040888963407; return (rng >> 33) % n }
	for step := 0; step < 5000; step++ {
		name, owner := reqNames[next(4)], owners[next(2)]
		switch next(5) {
		case 0:
			if _, err := s.Requests().Create(ctx, request(name, owner, "c")); err == nil {
				write(name, owner, false, s.version)
			} else {
				require.Contains(t, latest, name, "step %d: create %s failed: %v", step, name, err)
			}
		case 1:
			r, err := s.Requests().Get(ctx, "fleet", name) // maybe stale: the update may conflict
			if err == nil {
				r.OwnerUID = owner
				if _, err := s.Requests().Update(ctx, r); err == nil {
					write(name, owner, false, s.version)
				} else {
					require.True(t, errors.Is(err, host.ErrConflict) || errors.Is(err, host.ErrNotFound), "step %d: %v", step, err)
				}
			}
		case 2:
			if err := s.Requests().Delete(ctx, "fleet", name); err == nil {
				write(name, latest[name], true, s.version)
			} else {
				require.NotContains(t, latest, name, "step %d: delete %s failed: %v", step, name, err)
			}
		case 3:
			clk.Step(time.Duration(next(2500)) * time.Millisecond)
			s.show()
		}
		for len(pending) > 0 && !pending[0].at.After(clk.Now()) {
			p := pending[0]
			pending = pending[1:]
			if p.deleted {
				delete(shown, p.name)
			} else {
				shown[p.name] = p.owner
			}
			wantEvents = append(wantEvents, p.name+"/"+p.owner+fmt.Sprint(p.deleted))
		}
		require.Equal(t, wantEvents, events, "step %d: watch events against the model", step)
		for _, n := range reqNames {
			r, err := s.Requests().Get(ctx, "fleet", n)
			owner, ok := shown[n]
			require.Equal(t, ok, err == nil, "step %d: read %s: found, against the model", step, n)
			if ok {
				require.Equal(t, owner, r.OwnerUID, "step %d: read %s, against the model", step, n)
			}
		}
		for _, o := range owners {
			listed, err := s.Requests().List(ctx, host.ListOptions{OwnerUID: o})
			require.NoError(t, err)
			var want []string
			for _, n := range reqNames {
				if shown[n] == o {
					want = append(want, n)
				}
			}
			require.Equal(t, want, names(listed), "step %d: list of owner %s against the model", step, o)
		}
		require.Equal(t, len(latest), s.liveRequests(), "step %d: live requests against the model", step)
	}
	tab := s.tables[2]
	assert.LessOrEqual(t, len(tab.behind), len(reqNames), "names held behind")
	for owner, set := range tab.byOwner {
		assert.LessOrEqual(t, len(set.names()), len(reqNames), "index of %s", owner)
		for _, n := range set.names() {
			assert.True(t, tab.items[objKey{owner.namespace, n}] != nil || tab.behind[objKey{owner.namespace, n}] != nil, "index of %s names %s, which is neither stored nor seen", owner, n)
		}
	}
}
