package host_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/host/hosttest"
)

// records is a slog.Handler that keeps every record it is given, at
// level and above.
type records struct {
	level slog.Level
	mu    sync.Mutex
	got   []record
}

type record struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

func (h *records) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }
func (h *records) Handle(_ context.Context, r slog.Record) error {
	rec := record{level: r.Level, msg: r.Message, attrs: map[string]string{}}
	r.Attrs(func(a slog.Attr) bool {
		rec.attrs[a.Key] = a.Value.Resolve().String()
		return true
	})
	h.mu.Lock()
	h.got = append(h.got, rec)
	h.mu.Unlock()
	return nil
}
func (h *records) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *records) WithGroup(string) slog.Handler      { return h }

// at are the records of level at least min.
func (h *records) at(min slog.Level) []record {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []record
	for _, r := range h.got {
		if r.level >= min {
			out = append(out, r)
		}
	}
	return out
}

// find is the first record with that message and, when kind is set,
// that kind.
func (h *records) find(msg, kind string) (record, bool) {
	for _, r := range h.at(slog.LevelDebug) {
		if r.msg == msg && (kind == "" || r.attrs["kind"] == kind) {
			return r, true
		}
	}
	return record{}, false
}

// unreachable is an issuer whose CA cannot be reached: it leaves each
// request Pending and asks to be called again in a minute.
type unreachable struct{}

func (unreachable) Answer(_ context.Context, r *certificate.CertificateRequest, now time.Time) (time.Time, error) {
	certificate.SetPending(r, "ServerUnreachable: the CA did not answer", now)
	return now.Add(time.Minute), fmt.Errorf("dial tcp 192.0.2.1:443: i/o timeout: %w", certificate.ErrCAUnreachable)
}

func loggingLoop(t *testing.T, iss certificate.Issuer, logger *slog.Logger, store func(*testingclock.FakeClock) host.Store) (*host.Loop, *testingclock.FakeClock) {
	clk := testingclock.NewFakeClock(t0)
	if store == nil {
		store = func(clk *testingclock.FakeClock) host.Store { return host.NewMemoryStore(clk) }
	}
	st := store(clk)
	loop, err := host.New(host.Config{Store: st, Clock: clk, Logger: logger, Issuers: map[certificate.IssuerRef]certificate.Issuer{{Name: "ca"}: iss}})
	require.NoError(t, err)
	_, err = st.Certificates().Create(t.Context(), newCert("default", "web", "web-tls"))
	require.NoError(t, err)
	return loop, clk
}

// Failures are logged at Warn and Error with what a person needs to act:
// which object, why, and when the next attempt is; an issuance that
// works logs nothing at Info and above.
func TestFailuresAreLoggedWithTheirReasonAndNextAttempt(t *testing.T) {
	for name, tc := range map[string]struct {
		issuer certificate.Issuer
		store  func(*testingclock.FakeClock) host.Store
		want   []record // the records at Warn and above, their attributes as far as given
		info   []record // then those at Info
	}{
		"an issuer that fails the request": {issuer: failer{}, want: []record{
			{level: slog.LevelWarn, msg: host.LogRequestFailed, attrs: map[string]string{"kind": "CertificateRequest", "namespace": "default", "name": "web-1",
				"issuer": "Issuer certlife.dev/ca", "reason": "Failed", "message": "the CA is down"}},
			{level: slog.LevelWarn, msg: host.LogIssuanceFailed, attrs: map[string]string{"kind": "Certificate", "namespace": "default", "name": "web",
				"reason": "Failed", "message": "the CA is down"}},
		}, info: []record{
			{level: slog.LevelInfo, msg: host.LogBackoff, attrs: map[string]string{"kind": "Certificate", "name": "web", "reason": "Backoff",
				"next": t0.Add(time.Hour).String()}},
		}},
		"an issuer that cannot reach its CA": {issuer: unreachable{}, want: []record{
			{level: slog.LevelWarn, msg: host.LogPassWarning, attrs: map[string]string{"kind": "CertificateRequest", "name": "web-1",
				"reason": "Pending", "message": "ServerUnreachable: the CA did not answer", "next": t0.Add(time.Minute).String(),
				"warning": "dial tcp 192.0.2.1:443: i/o timeout: the issuer's CA cannot be reached"}},
		}},
		"a store that fails": {issuer: newCA(t, t0).Issuer(nil), store: func(clk *testingclock.FakeClock) host.Store { return &flaky{Store: host.NewMemoryStore(clk), n: 1} },
			want: []record{
				{level: slog.LevelError, msg: host.LogPassFailed, attrs: map[string]string{"kind": "Certificate", "name": "web",
					"error": "GenerateKey{web-next-key-1-", "next": t0.Add(time.Second).String()}},
			}},
		"an issuance that works": {issuer: newCA(t, t0).Issuer(nil)},
	} {
		t.Run(name, func(t *testing.T) {
			h := &records{level: slog.LevelDebug}
			loop, _ := loggingLoop(t, tc.issuer, slog.New(h), tc.store)
			_, err := hosttest.Settle(t.Context(), loop, 100)
			require.NoError(t, err)
			got := h.at(slog.LevelWarn)
			require.Len(t, got, len(tc.want), "%+v", got)
			var info []record
			for _, r := range h.at(slog.LevelInfo) {
				if r.level == slog.LevelInfo {
					info = append(info, r)
				}
			}
			require.Len(t, info, len(tc.info), "%+v", info)
			got = append(got, info...)
			for i, w := range append(tc.want, tc.info...) {
				assert.Equal(t, w.level, got[i].level, "record %d", i)
				assert.Equal(t, w.msg, got[i].msg, "record %d", i)
				for k, v := range w.attrs {
					assert.Contains(t, got[i].attrs[k], v, "record %d: %s", i, k)
				}
			}
			if tc.want == nil {
				_, decided := h.find(host.LogDecision, "Certificate")
				assert.True(t, decided, "decisions at Debug")
				_, answered := h.find(host.LogIssuerAnswer, "CertificateRequest")
				assert.True(t, answered, "issuer answers at Debug")
			}
		})
	}
}

// Nothing of a key, a CSR or a certificate reaches a record, at any
// level.
func TestLogsHoldNoKeyMaterial(t *testing.T) {
	h := &records{level: slog.LevelDebug}
	loop, clk := loggingLoop(t, newCA(t, t0).Issuer(nil), slog.New(h), nil)
	require.NoError(t, hosttest.Advance(t.Context(), loop, clk, t0.Add(100*24*time.Hour), hosttest.AdvanceOptions{}))
	all := h.at(slog.LevelDebug)
	require.NotEmpty(t, all)
	for _, r := range all {
		for k, v := range r.attrs {
			assert.NotContains(t, v, "-----BEGIN", "%s: %s", r.msg, k)
			assert.NotContains(t, v, "MII", "%s: %s", r.msg, k) // DER in base64
		}
	}
}

// With no Logger, failures go to slog.Default(); a host opts out with a
// logger that discards.
func TestFailuresGoToTheDefaultLoggerUnlessTheHostOptsOut(t *testing.T) {
	h := &records{level: slog.LevelInfo}
	was := slog.Default()
	slog.SetDefault(slog.New(h))
	t.Cleanup(func() { slog.SetDefault(was) })

	loop, _ := loggingLoop(t, failer{}, nil, nil)
	_, err := hosttest.Settle(t.Context(), loop, 100)
	require.NoError(t, err)
	_, ok := h.find(host.LogIssuanceFailed, "Certificate")
	assert.True(t, ok, "the failure went to slog.Default(): %+v", h.at(slog.LevelDebug))
	n := len(h.at(slog.LevelDebug))

	loop, _ = loggingLoop(t, failer{}, slog.New(slog.DiscardHandler), nil)
	_, err = hosttest.Settle(t.Context(), loop, 100)
	require.NoError(t, err)
	assert.Len(t, h.at(slog.LevelDebug), n, "nothing more")
}

// The records of an Observe built with SlogObserver are LogEvent's.
func TestSlogObserver(t *testing.T) {
	h := &records{level: slog.LevelWarn}
	observe := host.SlogObserver(slog.New(h))
	observe(host.Event{Time: t0, Kind: host.KindCertificate, Namespace: "default", Name: "web", Err: errors.New("the disk is full")})
	observe(host.Event{Time: t0, Kind: host.KindCertificate, Namespace: "default", Name: "web", Err: fmt.Errorf("status: %w", host.ErrConflict)})
	got := h.at(slog.LevelDebug)
	require.Len(t, got, 1, "a conflict is retried at once, at Debug")
	assert.Equal(t, slog.LevelError, got[0].level)
	assert.Equal(t, "the disk is full", got[0].attrs["error"])
	assert.True(t, strings.HasPrefix(got[0].attrs["at"], "2026-11-26 09:00:00"), got[0].attrs["at"])
}
