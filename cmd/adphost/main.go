// Command adphost runs the ADP reference host (package adphost):
//
//	adphost [--addr 127.0.0.1:8787] [--data DIR | --postgres URL] [--origin URL] [--draft DATE] [--room-cache N] [--no-quotas]
//
// installed with go install ./cmd/adphost from a clone (the module is not
// on the module proxy yet). The first line on standard output is the
// origin it serves (with the bound port when --addr asks for port 0), for
// scripts to read; standard error carries one structured line at start-up
// — the listen address, the origin, the store and where it is (a file, or
// a database's host and name, never its credentials), the store's schema
// version, the room cache and the ADP draft — and the host's log after
// it.
//
// Without --data or --postgres the state lives in memory. --data keeps
// the rooms, join requests, statuses and nonce cache in DIR/host.db
// (bbolt), so that the host survives a restart; one process at a time
// uses a file, and a second one fails within seconds saying so.
// --postgres (or the environment variable AGENT_PROTOCOLS_POSTGRES) keeps
// them in a PostgreSQL database instead (adphost/pgstore): several
// processes on one database, behind one origin, serve as one host.
// --room-cache bounds the rooms kept in memory; --no-quotas lifts the
// per-agent quotas, for load tests. --origin sets the public origin the
// host announces (discovery, URLs) and requires as the request-JWT
// audience, for a host behind a reverse proxy; by default it is
// http://ADDR, which only a loopback address may use. --draft selects
// the ADP draft the host serves by its date: 2026-07-04 (the seed, the
// default) or 2026-09-24, whose rooms name this origin as their host.
//
// Exit status: 0 after an interrupt or SIGTERM (the host shuts down
// cleanly), 1 when it cannot serve (the address is taken, the store
// cannot be opened), 2 for a usage error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/boltstore"
	"github.com/agentprotocols/go-sdk/adphost/pgstore"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/cli"
)

const synopsis = `usage: adphost [--addr ADDR] [--data DIR | --postgres URL] [--origin URL] [--draft DATE] [--room-cache N] [--no-quotas]

adphost serves the ADP reference host. It prints the origin it serves on
standard output and logs a start-up line, then requests, to standard error.
The state lives in memory, in DIR/host.db (--data), or in a PostgreSQL
database several adphost processes may share (--postgres).

exit status: 0 stopped by an interrupt, 1 cannot serve, 2 usage error
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	var ue usageError
	switch {
	case errors.As(err, &ue):
		if ue.msg != "" {
			fmt.Fprintf(os.Stderr, "adphost: %s (see adphost --help)\n", ue.msg)
		}
		os.Exit(cli.StatusUsage)
	case err != nil:
		fmt.Fprintln(os.Stderr, "adphost:", err)
		os.Exit(1)
	}
}

// usageError is a command line the program cannot run; msg is "" when the
// flag package's line was printed already.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// run is the whole command: it serves until ctx is cancelled. --help
// prints the usage to out and returns nil; the log goes to standard error.
func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("adphost", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8787", "listen address")
	data := fs.String("data", "", "directory for the bbolt state file host.db (default: in memory)")
	originFlag := fs.String("origin", "", "public origin announced and required as JWT aud (default http://ADDR)")
	pgURL := cli.StringEnv(fs, "postgres", "AGENT_PROTOCOLS_POSTGRES", "PostgreSQL connection URL for a store shared by several processes")
	draftFlag := fs.String("draft", adp.DefaultDraft.String(), "ADP draft served, by its date: 2026-07-04 or 2026-09-24")
	roomCache := fs.Int("room-cache", 0, "rooms kept in memory (default 1000)")
	noQuotas := fs.Bool("no-quotas", false, "disable the per-agent quotas of §21 (load tests only)")
	if status, done := cli.Parse(fs, args, synopsis, out, os.Stderr); done {
		if status == 0 {
			return nil
		}
		return usageError{}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	draft, err := adp.ParseDraft(*draftFlag)
	if err != nil {
		return usageError{fmt.Sprintf("--draft %q: the drafts are %s and %s", *draftFlag, adp.Draft20260704, adp.Draft20260924)}
	}
	if *data != "" && pgURL.Value() != "" {
		return usageError{fmt.Sprintf("--data and %s exclude each other", pgURL.Source())}
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	raw := *originFlag
	if raw == "" {
		raw = "http://" + ln.Addr().String()
	}
	origin, err := identity.ParseOrigin(raw, &identity.OriginOptions{AllowLoopbackHTTP: true})
	if err != nil {
		return fmt.Errorf("--origin: %w", err)
	}
	opts := &adphost.Options{Origin: origin, Draft: draft, RoomCache: *roomCache, Logger: log}
	if *noQuotas {
		opts.RateLimits = adphost.Unlimited()
	}
	store := []any{"store", "memory"}
	switch {
	case pgURL.Value() != "":
		st, err := pgstore.Open(ctx, pgURL.Value(), nil)
		if err != nil {
			return fmt.Errorf("%s: %w", pgURL.Source(), err)
		}
		defer st.Close()
		opts.Store = st
		store = []any{"store", "postgres", "database", databaseName(pgURL.Value()), "schema", pgstore.SchemaVersion()}
	case *data != "":
		if err := os.MkdirAll(*data, 0o700); err != nil {
			return err
		}
		path := filepath.Join(*data, "host.db")
		st, err := boltstore.Open(path, nil)
		if errors.Is(err, boltstore.ErrLocked) {
			return fmt.Errorf("--data %s: %w; one adphost uses a data directory at a time (several processes share a store with --postgres)", *data, err)
		}
		if err != nil {
			return fmt.Errorf("--data %s: %w", *data, err)
		}
		defer st.Close()
		opts.Store = st
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		store = []any{"store", "bbolt", "file", path, "schema", "unversioned"}
	}
	h, err := adphost.New(ctx, opts)
	if err != nil {
		return err
	}
	// The server bounds the headers and idle connections; the Host bounds
	// each request body (Options.BodyTimeout) and each live-stream write
	// (Options.StreamWriteTimeout) itself. No ReadTimeout or WriteTimeout:
	// they would cut every live stream at that age.
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	log.Info("adphost serving", append(append([]any{"addr", ln.Addr().String(), "origin", origin.String()}, store...),
		"room_cache", cacheSize(*roomCache), "draft", draft.String())...)
	fmt.Fprintln(out, origin.String())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	h.Close() // end live streams, which Shutdown would wait for
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// cacheSize is the room cache adphost.Options.RoomCache gives: n, or the
// default 1000 for 0.
func cacheSize(n int) int {
	if n <= 0 {
		return 1000
	}
	return n
}

// databaseName is where a PostgreSQL connection string points, for the
// log: host:port/database, without the user, the password or any other
// parameter.
func databaseName(url string) string {
	c, err := pgconn.ParseConfig(url)
	if err != nil {
		return "(unparsed)"
	}
	return net.JoinHostPort(c.Host, fmt.Sprint(c.Port)) + "/" + c.Database
}
