// Package pgtest starts a real PostgreSQL server for tests: the
// machine's own (initdb and postgres from the postgresql package, as
// Debian installs them under /usr/lib/postgresql/VERSION/bin), in a
// temporary directory, listening only on a Unix socket there, and stops
// it when the tests are done. Each test gets an empty database of its
// own. It imports no driver: the DSNs it gives are in the key=value form
// that github.com/jackc/pgx/v5/stdlib (and libpq) take.
//
// A test binary starts one server, on the first Start, when its TestMain
// runs the tests through Main:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
// Without Main, each Start starts a server of its own and stops it in
// the test's clean-up.
//
// initdb refuses to run as root: run as root, the server runs as the
// user "nobody", who owns its directory. A test that cannot start the
// server fails; it does not skip. CERTLIFE_POSTGRES_BIN names the
// directory of the binaries when they are elsewhere.
package pgtest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// StartTimeout bounds how long a server may take to initialise its
// directory and come up.
const StartTimeout = 2 * time.Minute

// Server is a PostgreSQL server in a temporary directory.
type Server struct {
	bin  string // the directory of the binaries
	dir  string // the temporary directory: data/ and the socket
	cmd  *exec.Cmd
	done chan struct{} // closed when the server exited
	log  *tailBuffer   // what it printed, last part
	n    atomic.Int64  // databases made

	stopOnce sync.Once
	stopErr  error
}

// StartServer initialises a data directory in a new temporary directory
// and starts a server on it, returning once it accepts connections. Stop
// it with Stop.
func StartServer() (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	cred, err := credential(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	initdb := command(ctx, cred, filepath.Join(bin, "initdb"), "-D", filepath.Join(dir, "data"),
		"-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: initdb: %w\n%s", err, out)
	}
	s := &Server{bin: bin, dir: dir, done: make(chan struct{}), log: &tailBuffer{max: 64 << 10}}
	s.cmd = command(context.Background(), cred, filepath.Join(bin, "postgres"), "-D", filepath.Join(dir, "data"),
		"-k", dir, // the socket's directory
		"-c", "listen_addresses=", // no TCP: no port to collide on
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "lc_messages=C", "-c", "max_connections=200", "-c", "shared_buffers=32MB")
	// Should the test binary die, the server goes with it.
	s.cmd.SysProcAttr.Pdeathsig = syscall.SIGQUIT
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	s.cmd.Stdout = s.log
	if err := s.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: starting postgres: %w", err)
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			s.log.Write([]byte(line + "\n"))
			if !signalled && strings.Contains(line, "database system is ready to accept connections") {
				signalled = true
				close(ready)
			}
		}
		io.Copy(s.log, stderr)
	}()
	go func() {
		s.cmd.Wait()
		close(s.done)
	}()
	select {
	case <-ready:
		return s, nil
	case <-s.done:
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: postgres exited before it accepted connections: %v\n%s", s.cmd.ProcessState, s.log)
	case <-ctx.Done():
		s.Stop()
		return nil, fmt.Errorf("pgtest: postgres did not accept connections within %v\n%s", StartTimeout, s.log)
	}
}

// DSN is the DSN of the database name on the server.
func (s *Server) DSN(name string) string {
	return fmt.Sprintf("host=%s user=postgres dbname=%s sslmode=disable", s.dir, name)
}

// NewDatabase makes an empty database on the server and returns its DSN.
func (s *Server) NewDatabase() (string, error) {
	name := fmt.Sprintf("test%d", s.n.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, "createdb"), "-h", s.dir, "-U", "postgres", name)
	cmd.Env = cleanEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("pgtest: createdb %s: %w\n%s", name, err, out)
	}
	return s.DSN(name), nil
}

// Stop shuts the server down (fast shutdown: open sessions are ended),
// waits for it to exit, and removes its directory. Calling it again does
// nothing more.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		s.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-s.done:
		case <-time.After(30 * time.Second):
			s.cmd.Process.Kill()
			<-s.done
			s.stopErr = fmt.Errorf("pgtest: postgres did not shut down within 30s; killed\n%s", s.log)
		}
		if err := os.RemoveAll(s.dir); err != nil && s.stopErr == nil {
			s.stopErr = fmt.Errorf("pgtest: %w", err)
		}
	})
	return s.stopErr
}

// The package's server, when Main runs the tests.
var shared struct {
	mu   sync.Mutex
	main bool
	srv  *Server
	err  error
}

// Main runs the tests of m, starting the package's server on the first
// Start and stopping it once they are done; it returns m.Run's code.
// Call it from TestMain.
func Main(m *testing.M) int {
	shared.mu.Lock()
	shared.main = true
	shared.mu.Unlock()
	code := m.Run()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.srv != nil {
		if err := shared.srv.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
		shared.srv = nil
	}
	return code
}

// Start returns the DSN of a new, empty database: on the package's
// server when Main runs the tests (started on first use), else on a
// server started for t and stopped in its clean-up. It fails t when the
// server cannot be started.
func Start(t testing.TB) string {
	t.Helper()
	srv, err := server(t)
	if err != nil {
		t.Fatal(err)
	}
	dsn, err := srv.NewDatabase()
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

func server(t testing.TB) (*Server, error) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.main {
		srv, err := StartServer()
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() {
			if err := srv.Stop(); err != nil {
				t.Error(err)
			}
		})
		return srv, nil
	}
	if shared.srv == nil && shared.err == nil {
		shared.srv, shared.err = StartServer()
	}
	return shared.srv, shared.err
}

// binDir finds the directory of initdb and postgres: CERTLIFE_POSTGRES_BIN,
// else the newest /usr/lib/postgresql/*/bin, else the PATH's.
func binDir() (string, error) {
	if d := os.Getenv("CERTLIFE_POSTGRES_BIN"); d != "" {
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) })
	if len(dirs) > 0 {
		return filepath.Dir(dirs[0]), nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("pgtest: no PostgreSQL server binaries: found no /usr/lib/postgresql/*/bin/initdb and no initdb on the PATH; install the postgresql package (apt-get install postgresql) or set CERTLIFE_POSTGRES_BIN")
}

// version is the major version in /usr/lib/postgresql/VERSION/bin/initdb.
func version(path string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(path))))
	return v
}

// credential is who the server runs as: the current user, or, for root
// (whom initdb refuses), "nobody", given dir.
func credential(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root, the server runs as nobody: %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("pgtest: the user nobody: %w", err)
	}
	if err := os.Chown(dir, int(uid), int(gid)); err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

func command(ctx context.Context, cred *syscall.Credential, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = cleanEnv()
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	return cmd
}

// cleanEnv is the environment of the commands: no PG* variable of the
// caller's reaches them.
func cleanEnv() []string {
	return []string{"PATH=/usr/bin:/bin", "LANG=C", "LC_ALL=C", "TZ=UTC"}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = bytes.Clone(t.b[len(t.b)-t.max:])
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// Dir is the server's temporary directory (removed by Stop).
func (s *Server) Dir() string { return s.dir }
