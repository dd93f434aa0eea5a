// Package sqlstore keeps a host's certificates, secrets and requests, its
// ACME issuer's order state, the challenge presentations its replicas
// answer, and their leases, in a SQL database through database/sql:
// SQLite for a single process (the embedded default), PostgreSQL for
// several processes that share one database (replicas of a service).
//
// The package imports no driver. Open the *sql.DB with the driver of
// your choice and name its dialect:
//
//	import _ "modernc.org/sqlite" // or github.com/jackc/pgx/v5/stdlib ("pgx")
//
//	db, err := sql.Open("sqlite", "file:certlife.db?_pragma=busy_timeout(10000)")
//	store, err := sqlstore.Open(ctx, db, sqlstore.Options{Dialect: sqlstore.SQLite})
//	defer store.Close()
//	loop, err := host.New(host.Config{Store: store, ...})
//
// Open creates the tables (all named certlife_*) and upgrades them when
// an earlier version of this package made them; several processes may
// open one database at once (the upgrade runs in one transaction under a
// lock: PostgreSQL's advisory lock, SQLite's BEGIN IMMEDIATE).
//
// # Objects and resource versions
//
// Each object is a row: its JSON beside the columns it is looked up by
// (namespace and name, its owner's UID, a certificate's secret name), each
// indexed, so List by owner or secret name reads only what it returns.
// Resource versions are numbers, strictly increasing across the whole
// store; writes are serialised by a counter row that each write
// transaction updates first, so they commit in the order of their
// versions, also across processes.
//
// # Watch
//
// Every write is also a row of a change log. A Store reports its own
// writes as soon as they commit; what other processes write it finds by
// reading the change log every Options.PollInterval (1 s by default).
// Each write is reported once, in the order of the versions, except that
// a write older than one of the same object already reported is not
// reported (the newer one was). The change log keeps each change at
// least Options.ChangeRetention (1 h by default): a Store prunes it, at
// most every quarter of that. A Store whose polls fell behind past what
// was pruned reports every object written since it last polled, as it
// is now, and cannot report the deletions among them; the loop's resync
// finds those. Pruning also removes the leases that expired more than
// ChangeRetention ago (their holders died).
//
// # SQLite
//
// Use a file (with many connections, WAL: Open switches the database to
// it) and a busy timeout in the DSN, as above; an in-memory database
// works with db.SetMaxOpenConns(1). Each write transaction begins with
// BEGIN IMMEDIATE, so writers wait for each other instead of failing. A
// write costs an fsync of the WAL at SQLite's default synchronous(FULL);
// _pragma=synchronous(NORMAL) in the DSN about halves its time, and may
// lose the last writes on a power loss (not on a crash of the process).
// Several processes may share a SQLite file; they see each other's writes
// by polling.
//
// # PostgreSQL
//
// Every write transaction updates one counter row first and holds it
// until it commits: writes from all replicas are serialised (a few
// round trips each), which is what keeps resource versions in commit
// order — a sequence would not, and a poll could skip a version that
// commits after a higher one. Leases, ACME states and presentations do
// not take it. To keep certlife's tables apart from others, give the
// connection a schema of its own (search_path in the DSN).
package sqlstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/certlife/certlife/acmeclient"
	"github.com/certlife/certlife/certificate"
	"github.com/certlife/certlife/certificate/host"
)

// Dialect is the SQL dialect of a database.
type Dialect int

// The dialects.
const (
	// SQLite 3.35 or later (RETURNING), as modernc.org/sqlite or
	// github.com/mattn/go-sqlite3 give it.
	SQLite Dialect = iota + 1
	// PostgreSQL 12 or later, as github.com/jackc/pgx/v5/stdlib or
	// github.com/lib/pq give it.
	PostgreSQL
)

func (d Dialect) String() string {
	switch d {
	case SQLite:
		return "SQLite"
	case PostgreSQL:
		return "PostgreSQL"
	}
	return "Dialect(" + strconv.Itoa(int(d)) + ")"
}

// Defaults of Options.
const (
	DefaultPollInterval    = time.Second
	DefaultChangeRetention = time.Hour
	// DefaultMaxObjectBytes bounds the JSON of one object, ACME state or
	// presentation, written or read: 16 MiB, twice what the largest
	// secret within package keys' bounds encodes to (a tls.crt, ca.crt
	// and four keystores of keys.MaxSecretValueBytes each, in base64).
	DefaultMaxObjectBytes = 16 << 20
)

// Options configure a Store.
type Options struct {
	// Dialect is the database's: SQLite or PostgreSQL. Required.
	Dialect Dialect
	// Clock stamps the creation time of objects and the time of each
	// change log entry; nil means the real clock.
	Clock clock.PassiveClock
	// PollInterval is how often the store reads the change log for what
	// other processes wrote (on the real clock, whatever Clock is): one
	// small query each time, and a read of the new entries. Zero means
	// DefaultPollInterval.
	PollInterval time.Duration
	// ChangeRetention is how long the change log keeps each change
	// (by Clock): a process whose polls fall further behind than that
	// misses deletions. Zero means DefaultChangeRetention.
	ChangeRetention time.Duration
	// MaxObjectBytes bounds the JSON of one object, ACME state or
	// presentation: a write beyond it fails, and so does a read of one a
	// hand (or another program) wrote beyond it, naming the row,
	// without reading it. Zero means DefaultMaxObjectBytes.
	MaxObjectBytes int
	// Logger receives the failures of background polls (which are
	// retried at the next). Nil means slog.Default().
	Logger *slog.Logger
}

func (o Options) withDefaults() (Options, error) {
	if o.Dialect != SQLite && o.Dialect != PostgreSQL {
		return o, fmt.Errorf("sqlstore: Options.Dialect is %v: want SQLite or PostgreSQL", o.Dialect)
	}
	if o.PollInterval < 0 {
		return o, fmt.Errorf("sqlstore: Options.PollInterval is %v: it must not be negative", o.PollInterval)
	}
	if o.ChangeRetention < 0 {
		return o, fmt.Errorf("sqlstore: Options.ChangeRetention is %v: it must not be negative", o.ChangeRetention)
	}
	if o.MaxObjectBytes < 0 {
		return o, fmt.Errorf("sqlstore: Options.MaxObjectBytes is %d: it must not be negative", o.MaxObjectBytes)
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.PollInterval == 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.ChangeRetention == 0 {
		o.ChangeRetention = DefaultChangeRetention
	}
	if o.MaxObjectBytes == 0 {
		o.MaxObjectBytes = DefaultMaxObjectBytes
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}

// Store is a host.Store in a SQL database; see the package
// documentation. It is Authoritative (reads go to the database), a
// Watcher, a host.Leaser, an acmeclient.Store (for one ACME issuer; see
// ACMEStore for more) and an acmeclient.PresentationStore. Safe for
// concurrent use; Close it when done.
type Store struct {
	db    *sql.DB
	opts  Options
	clock clock.PassiveClock

	// wmu serialises this store's writes, as the counter row serialises
	// those of every process: a write's report is queued in the order of
	// the versions.
	wmu sync.Mutex

	// mu guards the watch state below; callbacks are never called under
	// it.
	mu        sync.Mutex
	watchers  []func(host.Change)
	queue     []host.Change
	draining  bool
	cursor    int64            // the poller has seen every change up to it
	lastSent  map[objKey]int64 // versions reported past cursor, by object
	lastPrune time.Time

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	done   chan struct{} // closed when the poller returned
	pollMu sync.Mutex    // one poll at a time
}

var (
	_ host.Store                   = (*Store)(nil)
	_ host.Watcher                 = (*Store)(nil)
	_ host.Authoritative           = (*Store)(nil)
	_ host.Leaser                  = (*Store)(nil)
	_ acmeclient.Store             = (*Store)(nil)
	_ acmeclient.PresentationStore = (*Store)(nil)
)

// objKey names an object of a kind.
type objKey struct {
	kind            host.Kind
	namespace, name string
}

// Open returns the store in db, creating its tables or upgrading them
// first, and starts polling its change log. db stays the caller's: Close
// does not close it.
func Open(ctx context.Context, db *sql.DB, opts Options) (*Store, error) {
	if db == nil {
		return nil, errors.New("sqlstore: a nil *sql.DB")
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, opts: opts, clock: opts.Clock, lastSent: map[objKey]int64{},
		done: make(chan struct{})}
	if err := s.migrate(ctx); err != nil {
		return nil, err
	}
	if err := s.db.QueryRowContext(ctx, "SELECT version FROM certlife_counter WHERE id = 1").Scan(&s.cursor); err != nil {
		return nil, fmt.Errorf("sqlstore: reading the version: %w", err)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	go s.poller()
	return s, nil
}

// Close stops the poller, waiting for a poll in progress (so not from a
// watcher's callback). The store must not be used after. It does not
// close the *sql.DB.
func (s *Store) Close() error {
	s.cancel()
	<-s.done
	return nil
}

// Authoritative implements host.Authoritative: every read goes to the
// database.
func (s *Store) Authoritative() bool { return true }

// rebind turns the ? placeholders of q into $1, $2, ... for PostgreSQL.
// No query of this package holds a ? in a literal.
func (s *Store) rebind(q string) string {
	if s.opts.Dialect != PostgreSQL || !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// querier is what a transaction and the database have in common.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// tx is a transaction on a connection of its own, begun by hand so that
// SQLite's can be IMMEDIATE (taking the write lock at once, rather than
// failing at its first write when another took it meanwhile).
type tx struct {
	s    *Store
	conn *sql.Conn
	ctx  context.Context
}

func (t *tx) exec(q string, args ...any) (sql.Result, error) {
	return t.conn.ExecContext(t.ctx, t.s.rebind(q), args...)
}

func (t *tx) queryRow(q string, args ...any) *sql.Row {
	return t.conn.QueryRowContext(t.ctx, t.s.rebind(q), args...)
}

// inTx runs f in a transaction that holds the database's write lock
// (SQLite) or that serialises with every other through lock (PostgreSQL:
// an advisory lock's key; 0 for none), and commits when f returns nil.
func (s *Store) inTx(ctx context.Context, lock int64, f func(t *tx) error) (err error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	t := &tx{s: s, conn: conn, ctx: ctx}
	if s.opts.Dialect == SQLite {
		// The caller's DSN may set none: without one, a second process's
		// BEGIN IMMEDIATE fails at once rather than waiting its turn.
		if _, err := conn.ExecContext(ctx, "PRAGMA busy_timeout = 10000"); err != nil {
			return err
		}
		_, err = conn.ExecContext(ctx, "BEGIN IMMEDIATE")
	} else {
		// Whatever the server's default: a writer that waited for the
		// counter row reads what the one before it wrote.
		_, err = conn.ExecContext(ctx, "BEGIN ISOLATION LEVEL READ COMMITTED")
	}
	if err != nil {
		return err
	}
	committed := false
	defer func() {
		if committed {
			return
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, rerr := conn.ExecContext(rctx, "ROLLBACK"); rerr != nil {
			// The connection's state is unknown: it is not given back to
			// the pool.
			conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	if lock != 0 && s.opts.Dialect == PostgreSQL {
		if _, err := t.exec("SELECT pg_advisory_xact_lock(?)", lock); err != nil {
			return err
		}
	}
	if err := f(t); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return err
	}
	committed = true
	return nil
}

// newUID returns a random UUID (version 4).
func newUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// checkNames refuses an object without a name, and a name or namespace
// no object can have.
func checkNames(kind host.Kind, namespace, name string) error {
	if name == "" {
		return fmt.Errorf("sqlstore: a %s needs metadata.name", kind)
	}
	if err := certificate.ValidateNamespace(namespace); err != nil {
		return fmt.Errorf("sqlstore: %s: metadata.namespace: %w", kind, err)
	}
	if err := certificate.ValidateObjectName(name); err != nil {
		return fmt.Errorf("sqlstore: %s: metadata.name: %w", kind, err)
	}
	return nil
}

func objectName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}
