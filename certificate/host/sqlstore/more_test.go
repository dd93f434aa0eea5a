package sqlstore_test

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/host/hosttest"
	"github.com/certlife/certlife/certificate/host/sqlstore"
	"github.com/certlife/certlife/certificate/localca"
	"github.com/certlife/certlife/challenge"
	"github.com/certlife/certlife/keys"
	"github.com/certlife/certlife/order"
)

// ACME states round trip, apart per issuer, on both dialects, and
// survive the store being opened again.
func TestACMEStates(t *testing.T) {
	eachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		ctx := t.Context()
		db := newDB(t, d)
		s := db.open(t, nil)
		answered := t0.Add(time.Minute)
		st := &acmeclient.State{
			Request:    acmeclient.RequestRef{Namespace: "default", Name: "web-1", UID: "u1"},
			Order:      order.Order{Name: "web-1-abcd", Namespace: "default"},
			Challenges: []challenge.Challenge{{Name: "web-1-abcd-0"}},
			AnsweredAt: &answered,
		}
		got, err := s.Get(ctx, st.Request, "web-1-abcd")
		require.NoError(t, err)
		assert.Nil(t, got, "none yet")
		require.NoError(t, s.Put(ctx, "web-1-abcd", st))
		staging := s.ACMEStore("staging")
		other := &acmeclient.State{Request: acmeclient.RequestRef{Name: "api-1"}, Order: order.Order{Name: "api-1-ef"}}
		require.NoError(t, staging.Put(ctx, "api-1-ef", other))

		reopened := db.another(t).open(t, nil)
		got, err = reopened.Get(ctx, st.Request, "web-1-abcd")
		require.NoError(t, err)
		assert.Equal(t, st.Order, got.Order)
		assert.Equal(t, st.Request, got.Request)
		assert.True(t, answered.Equal(*got.AnsweredAt))
		all, err := reopened.List(ctx)
		require.NoError(t, err)
		assert.Len(t, all, 1, "the default issuer's only")
		assert.Contains(t, all, "web-1-abcd")
		all, err = reopened.ACMEStore("staging").List(ctx)
		require.NoError(t, err)
		assert.Len(t, all, 1)
		assert.Contains(t, all, "api-1-ef")

		// Put replaces.
		st.Challenges = nil
		require.NoError(t, s.Put(ctx, "web-1-abcd", st))
		got, err = reopened.Get(ctx, st.Request, "web-1-abcd")
		require.NoError(t, err)
		assert.Empty(t, got.Challenges)

		require.NoError(t, s.Delete(ctx, st.Request, "web-1-abcd"))
		require.NoError(t, s.Delete(ctx, st.Request, "web-1-abcd"), "a missing key is no error")
		got, err = s.Get(ctx, st.Request, "web-1-abcd")
		require.NoError(t, err)
		assert.Nil(t, got)
		got, err = staging.Get(ctx, other.Request, "api-1-ef")
		require.NoError(t, err)
		assert.NotNil(t, got, "another issuer's state stays")

		assert.ErrorContains(t, s.Put(ctx, "", st), "needs a key")
		assert.ErrorContains(t, s.Put(ctx, "k", nil), "nil ACME state")
	})
}

// What one replica presents, another serves: presentations round trip
// through the database, looked up as the CA asks (HTTP-01 by token, the
// others by identifier), and a clean-up removes only its own.
func TestPresentations(t *testing.T) {
	eachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		ctx := t.Context()
		db := newDB(t, d)
		a, b := db.open(t, nil), db.another(t).open(t, nil)
		http := acmeclient.Presentation{Type: challenge.TypeHTTP01, Identifier: "web.example", Token: "tok-1", KeyAuthorization: "tok-1.thumb",
			Solver: challenge.Solver{HTTP01: &challenge.HTTP01Solver{}}}
		alpn := acmeclient.Presentation{Type: "tls-alpn-01", Identifier: "web.example", Token: "tok-2", KeyAuthorization: "tok-2.thumb"}
		for _, p := range []acmeclient.Presentation{http, alpn} {
			require.NoError(t, a.PutPresentation(ctx, p))
		}
		got, ok, err := b.LookupPresentation(ctx, challenge.TypeHTTP01, "tok-1")
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, http, got)
		got, ok, err = b.LookupPresentation(ctx, "tls-alpn-01", "web.example")
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, alpn, got)
		_, ok, err = b.LookupPresentation(ctx, challenge.TypeHTTP01, "web.example")
		require.NoError(t, err)
		assert.False(t, ok, "HTTP-01 is looked up by token")

		// A newer order's presentation for the same name replaces the
		// older; the older's clean-up leaves it.
		newer := alpn
		newer.Token, newer.KeyAuthorization = "tok-3", "tok-3.thumb"
		require.NoError(t, b.PutPresentation(ctx, newer))
		require.NoError(t, a.DeletePresentation(ctx, alpn))
		got, ok, err = a.LookupPresentation(ctx, "tls-alpn-01", "web.example")
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, newer, got)
		require.NoError(t, a.DeletePresentation(ctx, newer))
		_, ok, err = a.LookupPresentation(ctx, "tls-alpn-01", "web.example")
		require.NoError(t, err)
		assert.False(t, ok)
		require.NoError(t, a.DeletePresentation(ctx, newer), "none is no error")

		assert.ErrorContains(t, a.PutPresentation(ctx, acmeclient.Presentation{Type: challenge.TypeHTTP01}), "nothing to look it up by")
		assert.ErrorContains(t, a.PutPresentation(ctx, acmeclient.Presentation{Token: "x"}), "no challenge type")
	})
}

// The change log is pruned once its entries are older than
// ChangeRetention; a store whose last poll is older than what was pruned
// reports every object written since as it is now (the deletions among
// them it cannot), and then what is logged after, each once.
func TestPrunedChangeLog(t *testing.T) {
	eachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		ctx := t.Context()
		clk := testingclock.NewFakeClock(t0)
		db := newDB(t, d)
		var logged strings.Builder
		slow := func(o *sqlstore.Options) { o.PollInterval = time.Hour } // polled by hand
		writer := db.open(t, clk, slow)
		reader := db.another(t).open(t, clk, slow, func(o *sqlstore.Options) {
			o.Logger = slog.New(slog.NewTextHandler(&logged, nil))
		})
		w := watch(reader)
		web, err := writer.Certificates().Create(ctx, newCert("default", "web", "web-tls"))
		require.NoError(t, err)
		_, err = writer.Certificates().Create(ctx, newCert("default", "gone", "gone-tls"))
		require.NoError(t, err)
		require.NoError(t, writer.Certificates().Delete(ctx, "default", "gone"))
		web.Spec.DNSNames = append(web.Spec.DNSNames, "www.example")
		web, err = writer.Certificates().Update(ctx, web)
		require.NoError(t, err)
		var entries int
		require.NoError(t, db.db.QueryRowContext(ctx, "SELECT count(*) FROM certlife_changes").Scan(&entries))
		assert.Equal(t, 4, entries)

		require.NoError(t, writer.Prune(ctx))
		require.NoError(t, db.db.QueryRowContext(ctx, "SELECT count(*) FROM certlife_changes").Scan(&entries))
		assert.Equal(t, 4, entries, "nothing is older than ChangeRetention yet")

		clk.Step(sqlstore.DefaultChangeRetention + time.Second)
		api, err := writer.Certificates().Create(ctx, newCert("default", "api", "api-tls"))
		require.NoError(t, err)
		require.NoError(t, writer.Prune(ctx))
		require.NoError(t, db.db.QueryRowContext(ctx, "SELECT count(*) FROM certlife_changes").Scan(&entries))
		assert.Equal(t, 1, entries, "what is older than ChangeRetention is pruned")

		require.NoError(t, reader.Poll(ctx))
		got := w.await(t, "both certificates", func(chs []host.Change) bool { return len(chs) >= 2 })
		assert.Equal(t, []string{"Certificate web@" + web.ResourceVersion, "Certificate api@" + api.ResourceVersion}, describe(got))
		assert.Equal(t, web.UID, got[0].Meta.UID)
		assert.Contains(t, logged.String(), "the change log was pruned past this store's last poll", "the store says what it cannot report")

		// Logged after: reported as usual.
		require.NoError(t, writer.Certificates().Delete(ctx, "default", "api"))
		require.NoError(t, reader.Poll(ctx))
		got = w.await(t, "the deletion", func(chs []host.Change) bool { return len(chs) >= 3 })
		assert.True(t, got[2].Deleted)
		assert.Len(t, got, 3)
	})
}

// Close stops the poller, and a watcher is not called after.
func TestCloseStopsThePoller(t *testing.T) {
	eachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		db := newDB(t, d)
		s := db.open(t, nil)
		assert.False(t, s.PollerStopped())
		require.NoError(t, s.Close())
		assert.True(t, s.PollerStopped())
		require.NoError(t, s.Close(), "again")
	})
}

// A certificate issued by the host loop with a local CA over the store,
// on a fake clock, on both dialects: the loop watches the store, and the
// issuance takes the writes logged.
func TestIssuanceThroughTheLoop(t *testing.T) {
	eachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		ctx := t.Context()
		clk := testingclock.NewFakeClock(t0)
		db := newDB(t, d)
		s := db.open(t, clk)
		writes := issue(t, ctx, s, newLoop(t, s, clk), clk, "web")
		t.Logf("%v: %d writes for one issuance", d, writes)
		// The certificate's creation; the next key's secret; the
		// certificate's status (issuing); the request; its answer; the
		// secret; the certificate's status (Ready); the next key's secret
		// removed; the certificate's status: 9 today. More would be the
		// store writing twice for one call.
		assert.LessOrEqual(t, writes, 12)
		sec, err := s.Secrets().Get(ctx, "default", "web-tls")
		require.NoError(t, err)
		block, _ := pem.Decode(sec.Data["tls.crt"])
		require.NotNil(t, block, "tls.crt")
		crt, err := x509.ParseCertificate(block.Bytes)
		require.NoError(t, err)
		assert.Equal(t, []string{"web.example"}, crt.DNSNames)
	})
}

// newLoop is a host loop with a local CA (issuer "ca") over s on clk.
func newLoop(t testing.TB, s *sqlstore.Store, clk *testingclock.FakeClock) *host.Loop {
	t.Helper()
	ca, err := localca.NewRoot(rand.Reader, "sqlstore test CA", keys.KeySpec{Algorithm: keys.AlgorithmECDSA}, clk.Now().Add(-time.Hour), 10*365*24*time.Hour)
	require.NoError(t, err)
	loop, err := host.New(host.Config{
		Store:   s,
		Clock:   clk,
		Issuers: map[certificate.IssuerRef]certificate.Issuer{{Name: "ca"}: ca.Issuer(nil)},
	})
	require.NoError(t, err)
	return loop
}

// issue creates a certificate named name and drives loop until it is
// Ready and settled; it returns the store's writes meanwhile, the
// creation included.
func issue(t testing.TB, ctx context.Context, s *sqlstore.Store, loop *host.Loop, clk *testingclock.FakeClock, name string) int {
	t.Helper()
	before := version(t, ctx, s)
	_, err := s.Certificates().Create(ctx, newCert("default", name, name+"-tls"))
	require.NoError(t, err)
	ready := func() bool {
		c, err := s.Certificates().Get(ctx, "default", name)
		require.NoError(t, err)
		cond := c.Status.Condition(certificate.ConditionReady)
		return cond != nil && cond.Status == certificate.StatusTrue
	}
	require.NoError(t, hosttest.Advance(ctx, loop, clk, clk.Now().Add(time.Hour), hosttest.AdvanceOptions{Until: ready}))
	require.True(t, ready(), "issued within the hour")
	// What the loop does once it is Ready (the next key's secret removed).
	_, err = hosttest.Settle(ctx, loop, 100)
	require.NoError(t, err)
	return int(version(t, ctx, s) - before)
}

// version is the store's last resource version.
func version(t testing.TB, ctx context.Context, s *sqlstore.Store) int64 {
	t.Helper()
	var v int64
	require.NoError(t, sqlstore.DB(s).QueryRowContext(ctx, "SELECT version FROM certlife_counter").Scan(&v))
	return v
}
