package sqlstore_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
	"github.com/certlife/certlife/certificate/host/sqlstore"
	"github.com/certlife/certlife/keys"
)

func newCert(ns, name, secret string) *certificate.Certificate {
	return &certificate.Certificate{
		ObjectMeta: certificate.ObjectMeta{Namespace: ns, Name: name},
		Spec:       certificate.Spec{SecretName: secret, DNSNames: []string{name + ".example"}, IssuerRef: certificate.IssuerRef{Name: "ca"}},
	}
}

// watchLog records a Store's reports, and says when it holds n.
type watchLog struct {
	mu   sync.Mutex
	chs  []host.Change
	wake chan struct{}
}

func watch(s *sqlstore.Store) *watchLog {
	w := &watchLog{wake: make(chan struct{})}
	s.Watch(func(ch host.Change) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.chs = append(w.chs, ch)
		close(w.wake)
		w.wake = make(chan struct{})
	})
	return w
}

// all is every report so far.
func (w *watchLog) all() []host.Change {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.chs)
}

// await waits until cond holds of the reports, at most 10 s.
func (w *watchLog) await(t *testing.T, what string, cond func([]host.Change) bool) []host.Change {
	t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		w.mu.Lock()
		chs, wake := slices.Clone(w.chs), w.wake
		w.mu.Unlock()
		if cond(chs) {
			return chs
		}
		select {
		case <-wake:
		case <-timeout.C:
			t.Fatalf("within 10s, the watch did not report %s; it reported %v", what, describe(chs))
		}
	}
}

func describe(chs []host.Change) []string {
	var out []string
	for _, ch := range chs {
		d := fmt.Sprintf("%s %s@%s", ch.Kind, ch.Name, ch.Meta.ResourceVersion)
		if ch.Deleted {
			d += " deleted"
		}
		out = append(out, d)
	}
	return out
}

// Two Stores over one database, as two processes, increment a counter
// in one certificate's annotations from several goroutines each, reading
// again on every conflict: every increment lands (no lost update), every
// refusal is ErrConflict, and each Store's watch reports the
// certificate's versions in increasing order, ending at the last.
func TestConcurrentWritersLoseNoUpdate(t *testing.T) {
	eachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		ctx := t.Context()
		clk := testingclock.NewFakeClock(t0)
		db := newDB(t, d)
		if d == sqlstore.PostgreSQL {
			// A server whose transactions are serializable by default:
			// the store's writes still wait for each other rather than
			// fail.
			_, err := db.db.ExecContext(ctx, `DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET default_transaction_isolation = %L', current_database(), 'serializable'); END $$`)
			require.NoError(t, err)
		}
		stores := []*sqlstore.Store{db.another(t).open(t, clk), db.another(t).open(t, clk)}
		logs := []*watchLog{watch(stores[0]), watch(stores[1])}
		_, err := stores[0].Certificates().Create(ctx, newCert("default", "web", "web-tls"))
		require.NoError(t, err)
		const goroutines, increments = 3, 15
		var wg sync.WaitGroup
		var mu sync.Mutex
		conflicts := 0
		for i := range 2 * goroutines {
			s := stores[i%2]
			wg.Go(func() {
				for range increments {
					for {
						c, err := s.Certificates().Get(ctx, "default", "web")
						if !assert.NoError(t, err) {
							return
						}
						if c.Annotations == nil {
							c.Annotations = map[string]string{}
						}
						n, _ := strconv.Atoi(c.Annotations["count"])
						c.Annotations["count"] = strconv.Itoa(n + 1)
						_, err = s.Certificates().Update(ctx, c)
						if err == nil {
							break
						}
						if !assert.ErrorIs(t, err, host.ErrConflict) {
							return
						}
						mu.Lock()
						conflicts++
						mu.Unlock()
					}
				}
			})
		}
		wg.Wait()
		final, err := stores[1].Certificates().Get(ctx, "default", "web")
		require.NoError(t, err)
		assert.Equal(t, strconv.Itoa(2*goroutines*increments), final.Annotations["count"], "every increment lands")
		assert.EqualValues(t, 1, final.Generation, "annotations are not the spec")
		t.Logf("%d increments, %d conflicts", 2*goroutines*increments, conflicts)
		for i, w := range logs {
			chs := w.await(t, "the last version", func(chs []host.Change) bool {
				return len(chs) > 0 && chs[len(chs)-1].Meta.ResourceVersion == final.ResourceVersion
			})
			last := int64(0)
			for _, ch := range chs {
				v, err := strconv.ParseInt(ch.Meta.ResourceVersion, 10, 64)
				require.NoError(t, err)
				assert.Greater(t, v, last, "store %d reports versions in increasing order: %v", i, describe(chs))
				last = v
			}
		}
	})
}

// The watch of one Store reports what another writes, in the order of
// its writes, deletions included, each once.
func TestWatchSeesAnotherStoresWritesInOrder(t *testing.T) {
	eachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		ctx := t.Context()
		clk := testingclock.NewFakeClock(t0)
		db := newDB(t, d)
		writer, reader := db.open(t, clk), db.another(t).open(t, clk)
		w := watch(reader)
		var want []string
		note := func(kind host.Kind, name, rv string, deleted bool) {
			want = append(want, describe([]host.Change{{Kind: kind, Name: name, Deleted: deleted, Meta: certificate.ObjectMeta{ResourceVersion: rv}}})...)
		}
		c, err := writer.Certificates().Create(ctx, newCert("default", "web", "web-tls"))
		require.NoError(t, err)
		note(host.KindCertificate, "web", c.ResourceVersion, false)
		sec, err := writer.Secrets().Create(ctx, &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Namespace: "default", Name: "web-tls", OwnerUID: c.UID}})
		require.NoError(t, err)
		note(host.KindSecret, "web-tls", sec.ResourceVersion, false)
		for i := range 3 {
			c.Spec.DNSNames = append(c.Spec.DNSNames, fmt.Sprintf("n%d.example", i))
			c, err = writer.Certificates().Update(ctx, c)
			require.NoError(t, err)
			note(host.KindCertificate, "web", c.ResourceVersion, false)
		}
		require.NoError(t, writer.Secrets().Delete(ctx, "default", "web-tls"))
		deletion, err := writer.Certificates().Create(ctx, newCert("default", "after", "after-tls"))
		require.NoError(t, err)
		// The deletion's version is between the writes around it.
		rv, _ := strconv.ParseInt(deletion.ResourceVersion, 10, 64)
		note(host.KindSecret, "web-tls", strconv.FormatInt(rv-1, 10), true)
		note(host.KindCertificate, "after", deletion.ResourceVersion, false)

		got := w.await(t, "every write", func(chs []host.Change) bool { return len(chs) >= len(want) })
		assert.Equal(t, want, describe(got))
		assert.Equal(t, c.UID, got[0].Meta.UID)
		assert.Equal(t, c.UID, got[1].Meta.OwnerUID, "the secret's owner")
		require.NoError(t, reader.Poll(ctx))
		assert.Len(t, describe(w.all()), len(want), "nothing reported twice")
	})
}

// A watcher that writes to the store from its callback is not deadlocked:
// callbacks run outside the store's locks, and the write it makes is
// reported after the one it was told of.
func TestAWatcherMayWrite(t *testing.T) {
	eachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		ctx := t.Context()
		s := newDB(t, d).open(t, testingclock.NewFakeClock(t0))
		s.Watch(func(ch host.Change) {
			if ch.Kind == host.KindCertificate && !ch.Deleted {
				_, err := s.Secrets().Create(ctx, &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Namespace: ch.Namespace, Name: ch.Name + "-tls", OwnerUID: ch.Meta.UID}})
				assert.NoError(t, err)
			}
		})
		w := watch(s)
		_, err := s.Certificates().Create(ctx, newCert("default", "web", "web-tls"))
		require.NoError(t, err)
		got := w.await(t, "both writes", func(chs []host.Change) bool { return len(chs) >= 2 })
		assert.Equal(t, []string{"Certificate web@1", "Secret web-tls@2"}, describe(got))
	})
}

// Several processes opening a new database at once make its schema once;
// a database whose schema is newer than the package knows is refused.
func TestSchemaOpenedConcurrently(t *testing.T) {
	eachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		ctx := t.Context()
		db := newDB(t, d)
		const n = 4
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			other := db.another(t)
			wg.Go(func() {
				s, err := sqlstore.Open(ctx, other.db, sqlstore.Options{Dialect: d})
				if err == nil {
					s.Close()
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for _, err := range errs {
			assert.NoError(t, err)
		}
		var version, rows int
		require.NoError(t, db.db.QueryRowContext(ctx, "SELECT max(version), count(*) FROM certlife_schema").Scan(&version, &rows))
		assert.Equal(t, sqlstore.SchemaVersion, version)
		assert.Equal(t, 1, rows)

		// Opened again, nothing is made twice.
		s := db.open(t, nil)
		_, err := s.Certificates().Create(ctx, newCert("", "web", "web-tls"))
		require.NoError(t, err)
		s2 := db.open(t, nil)
		_, err = s2.Certificates().Get(ctx, "", "web")
		assert.NoError(t, err)

		_, err = db.db.ExecContext(ctx, "UPDATE certlife_schema SET version = 99")
		require.NoError(t, err)
		_, err = sqlstore.Open(ctx, db.db, sqlstore.Options{Dialect: d})
		assert.ErrorContains(t, err, "schema is at version 99, newer than this certlife knows")
	})
}

// Open refuses options it cannot work with, naming the field.
func TestOpenRefusesBadOptions(t *testing.T) {
	db := newDB(t, sqlstore.SQLite)
	for _, tc := range []struct {
		opts sqlstore.Options
		want string
	}{
		{sqlstore.Options{}, "Options.Dialect"},
		{sqlstore.Options{Dialect: 7}, "Options.Dialect is Dialect(7)"},
		{sqlstore.Options{Dialect: sqlstore.SQLite, PollInterval: -1}, "Options.PollInterval"},
		{sqlstore.Options{Dialect: sqlstore.SQLite, ChangeRetention: -1}, "Options.ChangeRetention"},
		{sqlstore.Options{Dialect: sqlstore.SQLite, MaxObjectBytes: -1}, "Options.MaxObjectBytes"},
	} {
		_, err := sqlstore.Open(t.Context(), db.db, tc.opts)
		assert.ErrorContains(t, err, tc.want)
	}
	_, err := sqlstore.Open(t.Context(), nil, sqlstore.Options{Dialect: sqlstore.SQLite})
	assert.ErrorContains(t, err, "nil *sql.DB")
}

// What is read is bounded: a row beyond Options.MaxObjectBytes, written
// by hand, is an error naming it and wrapping keys.ErrTooLarge, without
// being read; and the store writes none.
func TestReadsAndWritesAreBounded(t *testing.T) {
	eachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		ctx := t.Context()
		db := newDB(t, d)
		s := db.open(t, nil, func(o *sqlstore.Options) { o.MaxObjectBytes = 4096 })
		small := &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Namespace: "default", Name: "small"}, Data: map[string][]byte{"tls.crt": make([]byte, 100)}}
		_, err := s.Secrets().Create(ctx, small)
		require.NoError(t, err)
		big := &certificate.Secret{ObjectMeta: certificate.ObjectMeta{Namespace: "default", Name: "big"}, Data: map[string][]byte{"tls.crt": make([]byte, 4096)}}
		_, err = s.Secrets().Create(ctx, big)
		assert.ErrorIs(t, err, keys.ErrTooLarge)
		assert.ErrorContains(t, err, "Secret default/big")

		// Grown beyond the bound behind the store's back.
		q := "UPDATE certlife_secrets SET data = ? WHERE name = ?"
		if d == sqlstore.PostgreSQL {
			q = "UPDATE certlife_secrets SET data = $1 WHERE name = $2"
		}
		_, err = db.db.ExecContext(ctx, q, []byte(`{"metadata":{"name":"small"},"data":{"tls.crt":"`+strings.Repeat("A", 8000)+`"}}`), "small")
		require.NoError(t, err)
		_, err = s.Secrets().Get(ctx, "default", "small")
		assert.ErrorIs(t, err, keys.ErrTooLarge)
		assert.ErrorContains(t, err, "Secret default/small in certlife_secrets is 80")
		_, err = s.Secrets().List(ctx, host.ListOptions{})
		assert.ErrorIs(t, err, keys.ErrTooLarge)
	})
}

// List by owner and by secret name reads an index, not the table.
func TestListUsesIndexes(t *testing.T) {
	db := newDB(t, sqlstore.SQLite)
	s := db.open(t, nil)
	type planCase struct {
		query string
		args  []any
		index string
	}
	var cases []planCase
	add := func(index string) func(string, []any) {
		return func(q string, args []any) { cases = append(cases, planCase{q, args, index}) }
	}
	add("certlife_secrets_owner")(sqlstore.ListQuery(s.Secrets(), host.ListOptions{OwnerUID: "u"}))
	add("")(sqlstore.ListQuery(s.Requests(), host.ListOptions{OwnerUID: "u", Namespace: "default"}))
	add("certlife_certificates_secret")(sqlstore.ListQuery(s.Certificates(), host.ListOptions{Namespace: "default", SecretName: "web-tls"}))
	add("")(sqlstore.ListQuery(s.Certificates(), host.ListOptions{Namespace: "default"}))
	for _, tc := range cases {
		rows, err := db.db.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+tc.query, tc.args...)
		require.NoError(t, err)
		var plan []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			require.NoError(t, rows.Scan(&id, &parent, &notused, &detail))
			plan = append(plan, detail)
		}
		require.NoError(t, rows.Err())
		rows.Close()
		joined := strings.Join(plan, "; ")
		assert.NotContains(t, joined, "SCAN certlife_", "%s: the plan is %s", tc.query, joined)
		assert.Contains(t, joined, "USING", "%s: the plan is %s", tc.query, joined)
		if tc.index != "" {
			assert.Contains(t, joined, tc.index, "%s: the plan is %s", tc.query, joined)
		}
	}
}

// Leases on both dialects: taken, renewed and shortened by their holder,
// refused to another while unexpired, taken over once expired, released
// by their holder only.
func TestLeases(t *testing.T) {
	eachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		ctx := t.Context()
		db := newDB(t, d)
		// The store's clock prunes leases expired long ago: that of the
		// callers, as in a real host.
		clk := testingclock.NewFakeClock(t0)
		a, b := db.open(t, clk), db.another(t).open(t, clk)
		at := func(s time.Duration) time.Time { return t0.Add(s * time.Second) }
		steps := []struct {
			what      string
			s         *sqlstore.Store
			holder    string
			now, till time.Time
			release   bool
			want      host.Lease
		}{
			{what: "a free lease is taken", s: a, holder: "a", now: at(0), till: at(60), want: host.Lease{Holder: "a", Until: at(60)}},
			{what: "another is refused while it is unexpired", s: b, holder: "b", now: at(30), till: at(90), want: host.Lease{Holder: "a", Until: at(60)}},
			{what: "its holder renews it", s: a, holder: "a", now: at(30), till: at(120), want: host.Lease{Holder: "a", Until: at(120)}},
			{what: "its holder shortens it", s: b, holder: "a", now: at(40), till: at(50), want: host.Lease{Holder: "a", Until: at(50)}},
			{what: "another takes it over once expired", s: b, holder: "b", now: at(50), till: at(110), want: host.Lease{Holder: "b", Until: at(110)}},
			{what: "a release by another is no error and changes nothing", s: a, holder: "a", release: true},
			{what: "still b's", s: a, holder: "c", now: at(60), till: at(70), want: host.Lease{Holder: "b", Until: at(110)}},
			{what: "its holder releases it", s: b, holder: "b", release: true},
			{what: "released, anyone takes it", s: a, holder: "c", now: at(61), till: at(70), want: host.Lease{Holder: "c", Until: at(70)}},
		}
		for _, st := range steps {
			if st.release {
				require.NoError(t, st.s.Release(ctx, "order/web-1", st.holder), st.what)
				continue
			}
			got, err := st.s.Lease(ctx, "order/web-1", st.holder, st.now, st.till)
			require.NoError(t, err, st.what)
			st.want.Key = "order/web-1"
			assert.Equal(t, st.want, got, st.what)
		}
		for _, bad := range []struct {
			key, holder string
			now, until  time.Time
			want        string
		}{
			{"", "a", at(0), at(1), "needs a key"},
			{"k", "", at(0), at(1), "needs a holder"},
			{"k", "a", at(1), at(1), "must be after now"},
		} {
			_, err := a.Lease(ctx, bad.key, bad.holder, bad.now, bad.until)
			assert.ErrorContains(t, err, bad.want)
		}

		// Many ask at once for a free lease: one gets it, and every one
		// is told who.
		const n = 8
		got := make([]host.Lease, n)
		var wg sync.WaitGroup
		for i := range n {
			s := []*sqlstore.Store{a, b}[i%2]
			wg.Go(func() {
				l, err := s.Lease(ctx, "race", fmt.Sprintf("h%d", i), at(0), at(60))
				assert.NoError(t, err)
				got[i] = l
			})
		}
		wg.Wait()
		for _, l := range got {
			assert.Equal(t, got[0].Holder, l.Holder, "one holder for all: %v", got)
		}
	})
}

// A Store reports its own write before the call returns; a write of
// another process that its poll finds later, older than a version of the
// same object it reported already, is not reported after it: each
// object's reports go up in version.
func TestWatchNeverGoesBackInVersion(t *testing.T) {
	eachDialect(t, func(t *testing.T, d sqlstore.Dialect) {
		ctx := t.Context()
		clk := testingclock.NewFakeClock(t0)
		db := newDB(t, d)
		manual := func(o *sqlstore.Options) { o.PollInterval = time.Hour } // polled by hand
		a, b := db.open(t, clk, manual), db.another(t).open(t, clk, manual)
		w := watch(b)
		c, err := a.Certificates().Create(ctx, newCert("default", "web", "web-tls"))
		require.NoError(t, err)
		other, err := a.Certificates().Create(ctx, newCert("default", "other", "other-tls"))
		require.NoError(t, err)
		// b reads and writes web before its poll finds a's writes.
		c, err = b.Certificates().Get(ctx, "default", "web")
		require.NoError(t, err)
		c.Status.Conditions = []certificate.Condition{{Type: "Ready", Status: certificate.StatusFalse}}
		c, err = b.Certificates().Update(ctx, c)
		require.NoError(t, err)
		assert.Equal(t, []string{"Certificate web@" + c.ResourceVersion}, describe(w.all()), "its own write, reported before Update returned")
		require.NoError(t, b.Poll(ctx))
		assert.Equal(t, []string{"Certificate web@" + c.ResourceVersion, "Certificate other@" + other.ResourceVersion}, describe(w.all()),
			"a's creation of web is older than what b reported of it")
	})
}
