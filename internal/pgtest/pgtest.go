// Package pgtest gives tests and benchmarks a real PostgreSQL server.
//
// # Which server
//
// When AGENT_PROTOCOLS_TEST_POSTGRES is set it is the connection URL of a
// server the caller runs; the role it names must be allowed to create
// databases. Otherwise [Main] starts a throwaway cluster with initdb and
// postgres from PATH or /usr/lib/postgresql/*/bin: in a temporary
// directory, on a free loopback port, as the user nobody when the process
// runs as root (PostgreSQL refuses to run as root), with durable commits
// (fsync and synchronous_commit at their defaults, on). The cluster is
// killed with the test binary and its directory removed afterwards.
//
// # Skips
//
// Where neither is possible, [Database] skips the calling test with one
// line saying why, except when CI=true: there a missing server is a
// failure, so that CI cannot pass without running the PostgreSQL tests.
//
// # Use
//
// One cluster serves the whole test binary, so the package's TestMain calls
// [Main]; every test takes a fresh database from [Database]:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
//	func TestX(t *testing.T) { url := pgtest.Database(t); ... }
//
// The package does not import testing, so that commands (benchmark
// drivers) may start a cluster with [Start] too.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the environment variable with the URL of an existing
// server.
const EnvURL = "AGENT_PROTOCOLS_TEST_POSTGRES"

// ErrUnavailable is wrapped by Start's error when no server can be had
// (no URL given, no server binaries installed).
var ErrUnavailable = errors.New("pgtest: no PostgreSQL server available")

// Cluster is a running server: an external one (EnvURL) or a throwaway
// cluster this package started.
type Cluster struct {
	// URL is the connection URL of the maintenance database, with rights
	// to create databases.
	URL string

	dir  string
	bin  string
	port int
	cred *credential
	cmd  *exec.Cmd
	done chan struct{}
	n    atomic.Int64
}

// Start returns the server EnvURL names, or starts a throwaway cluster.
// The error wraps ErrUnavailable when there is neither.
func Start(ctx context.Context) (*Cluster, error) {
	if u := os.Getenv(EnvURL); u != "" {
		c := &Cluster{URL: u}
		if err := c.ping(ctx, 10*time.Second); err != nil {
			return nil, fmt.Errorf("pgtest: %s=%s: %w", EnvURL, redact(u), err)
		}
		return c, nil
	}
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	return startCluster(ctx, bin)
}

// findBin finds the directory holding initdb and postgres.
func findBin() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		d := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Sort(sort.Reverse(sort.StringSlice(dirs))) // the newest version first
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("%w: %s is not set and initdb/postgres are neither on PATH nor in /usr/lib/postgresql/*/bin", ErrUnavailable, EnvURL)
}

// startCluster runs initdb and postgres in a new temporary directory.
func startCluster(ctx context.Context, bin string) (*Cluster, error) {
	sweepStale()
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir}
	fail := func(err error) (*Cluster, error) {
		c.Stop()
		return nil, err
	}
	var cred *credential
	if os.Geteuid() == 0 {
		// initdb and postgres refuse to run as root.
		u, err := user.Lookup("nobody")
		if err != nil {
			return fail(fmt.Errorf("%w: running as root and there is no user nobody to run PostgreSQL as", ErrUnavailable))
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			return fail(err)
		}
	}
	data := filepath.Join(dir, "data")
	var initOut strings.Builder
	ini := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	ini.Stdout, ini.Stderr = &initOut, &initOut
	ini.Dir = dir
	ini.Env = append(os.Environ(), "HOME="+dir)
	ini.SysProcAttr = initAttr(cred)
	if err := ini.Run(); err != nil {
		return fail(fmt.Errorf("pgtest: initdb: %v: %s", err, lastLines(initOut.String(), 5)))
	}
	port, err := freePort()
	if err != nil {
		return fail(err)
	}
	c.bin, c.port, c.cred = bin, port, cred
	c.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	if err := c.serve(ctx); err != nil {
		return fail(err)
	}
	return c, nil
}

// serve starts postgres on the cluster's directory and port, and waits
// until it accepts connections.
func (c *Cluster) serve(ctx context.Context) error {
	logf, err := os.OpenFile(filepath.Join(c.dir, "postgres.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	c.done = make(chan struct{})
	c.cmd = exec.Command(filepath.Join(c.bin, "postgres"), "-D", filepath.Join(c.dir, "data"), "-p", strconv.Itoa(c.port), "-k", c.dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200", "-c", "shared_buffers=64MB")
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	c.cmd.Dir = c.dir
	c.cmd.Env = append(os.Environ(), "HOME="+c.dir)
	// Pdeathsig: a test binary that is killed takes its cluster with it.
	c.cmd.SysProcAttr = serverAttr(c.cred)
	if err := c.cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: postgres: %w", err)
	}
	go func(cmd *exec.Cmd, done chan struct{}) { cmd.Wait(); close(done) }(c.cmd, c.done)
	if err := c.ping(ctx, 30*time.Second); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "postgres.log"))
		return fmt.Errorf("pgtest: postgres did not come up: %v: %s", err, lastLines(string(log), 5))
	}
	return nil
}

// ErrNotOwned is returned by Crash and Restart for a server this package
// did not start (EnvURL's).
var ErrNotOwned = errors.New("pgtest: the server was not started by this package")

// Crash stops the cluster's server as a crash would (an immediate
// shutdown: no checkpoint, every connection cut, recovery from the WAL at
// the next start) and keeps its data for Restart.
func (c *Cluster) Crash() error {
	if c.cmd == nil || c.cmd.Process == nil {
		return ErrNotOwned
	}
	c.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		killGroup(c.cmd.Process.Pid)
		<-c.done
	}
	return nil
}

// Restart starts a server Crash stopped, on the same port and data, and
// waits until it accepts connections (after its crash recovery).
func (c *Cluster) Restart(ctx context.Context) error {
	if c.cmd == nil {
		return ErrNotOwned
	}
	return c.serve(ctx)
}

// Own starts a cluster of the caller's own, which it may Crash and
// Restart without disturbing the binary's shared one, and stops it when
// the test ends. It needs the server binaries (EnvURL's server cannot be
// crashed): without them it skips the test, or fails it when CI=true.
func Own(tb TB) *Cluster {
	tb.Helper()
	bin, err := findBin()
	if err == nil {
		var c *Cluster
		if c, err = startCluster(tb.Context(), bin); err == nil {
			tb.Cleanup(c.Stop)
			return c
		}
	}
	if os.Getenv("CI") == "true" {
		tb.Fatal("PostgreSQL server binaries are required under CI=true: " + err.Error())
	}
	tb.Skip(err.Error())
	return nil
}

// sweepStale removes the directories of clusters whose test binary died
// without cleaning up (a panic skips TestMain's Stop; Pdeathsig killed the
// server): older than ten minutes and without a live postmaster.
func sweepStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "pgtest-*"))
	for _, d := range dirs {
		fi, err := os.Stat(d)
		if err != nil || time.Since(fi.ModTime()) < 10*time.Minute {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(d, "data", "postmaster.pid")); err == nil {
			if pid, err := strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0]); err == nil {
				if running(pid) {
					continue
				}
			}
		}
		os.RemoveAll(d)
	}
}

// ping waits until the server accepts a connection, at most d.
func (c *Cluster) ping(ctx context.Context, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var err error
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		var conn *pgx.Conn
		if conn, err = pgx.Connect(ctx, c.URL); err == nil {
			conn.Close(ctx)
			return nil
		}
		if c.done != nil {
			select {
			case <-c.done:
				return errors.New("postgres exited")
			default:
			}
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// Stop stops a cluster Start started and removes its directory; for an
// external server it does nothing.
func (c *Cluster) Stop() {
	if c.cmd != nil && c.cmd.Process != nil {
		c.cmd.Process.Signal(syscall.SIGQUIT) // immediate shutdown: the data is thrown away
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			killGroup(c.cmd.Process.Pid)
			<-c.done
		}
	}
	if c.dir != "" {
		os.RemoveAll(c.dir)
	}
}

// CreateDatabase creates a new, empty database and returns its URL and a
// function that drops it.
func (c *Cluster) CreateDatabase(ctx context.Context) (string, func(), error) {
	name := fmt.Sprintf("pgtest_%d_%d", os.Getpid(), c.n.Add(1))
	conn, err := pgx.Connect(ctx, c.URL)
	if err != nil {
		return "", nil, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, fmt.Errorf("pgtest: %w", err)
	}
	u, err := url.Parse(c.URL)
	if err != nil {
		return "", nil, err
	}
	u.Path = "/" + name
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if conn, err := pgx.Connect(ctx, c.URL); err == nil {
			conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			conn.Close(ctx)
		}
	}
	return u.String(), drop, nil
}

// TB is the part of testing.TB that Database uses.
type TB interface {
	Helper()
	Skip(args ...any)
	Fatal(args ...any)
	Cleanup(func())
	Context() context.Context
}

// M is the part of testing.M that Main uses.
type M interface{ Run() int }

var (
	mu      sync.Mutex
	shared  *Cluster
	missing error
	started bool
)

// Main starts the binary's cluster (or finds EnvURL's server), runs the
// tests and stops it; TestMain passes its result to os.Exit. A server
// that cannot be had is not an error here: Database reports it per test.
func Main(m M) int {
	mu.Lock()
	started = true
	shared, missing = Start(context.Background())
	mu.Unlock()
	code := m.Run()
	if shared != nil {
		shared.Stop()
	}
	return code
}

// Database returns the URL of a fresh database on the binary's server,
// dropped when the test ends. Without a server it skips the test with one
// line, or fails it when CI=true.
func Database(tb TB) string {
	tb.Helper()
	c := Shared(tb)
	u, drop, err := c.CreateDatabase(tb.Context())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(drop)
	return u
}

// Shared returns the binary's server, skipping or failing tb as Database
// does when there is none.
func Shared(tb TB) *Cluster {
	tb.Helper()
	mu.Lock()
	c, err, ok := shared, missing, started
	mu.Unlock()
	if !ok {
		tb.Fatal("pgtest: the package's TestMain must call pgtest.Main")
	}
	if c == nil {
		if os.Getenv("CI") == "true" {
			tb.Fatal("PostgreSQL is required under CI=true: " + err.Error())
		}
		tb.Skip(err.Error())
	}
	return c
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// redact hides a URL's password.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// CPUTime returns the CPU time (user + system) used so far by the
// processes of a cluster this package started (the postmaster's process
// group, from /proc); false for an external server or off Linux.
func (c *Cluster) CPUTime() (time.Duration, bool) {
	if c.cmd == nil || c.cmd.Process == nil {
		return 0, false
	}
	return GroupCPUTime(c.cmd.Process.Pid)
}

// GroupCPUTime sums the CPU time of the live processes in process group
// pgid and of the direct children of process pgid, from /proc (Linux);
// false when /proc cannot be read.
func GroupCPUTime(pgid int) (time.Duration, bool) {
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	var ticks int64
	for _, d := range dirs {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue
		}
		// The fields after the parenthesized command: state ppid pgrp
		// ... utime (14th field overall) stime (15th).
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 13 {
			continue
		}
		// PostgreSQL's backends call setsid: they are the postmaster's
		// children, not its group.
		pid, _ := strconv.Atoi(d.Name())
		pp, _ := strconv.Atoi(f[1])
		if g, _ := strconv.Atoi(f[2]); g != pgid && pp != pgid && pid != pgid {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + st
	}
	return time.Duration(ticks) * time.Second / 100, true // USER_HZ is 100 on Linux
}

// Current returns the binary's server when Main found or started one, else
// nil; for code without a TB (benchmark bookkeeping).
func Current() *Cluster {
	mu.Lock()
	defer mu.Unlock()
	return shared
}
