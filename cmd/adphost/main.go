// Command adphost runs the ADP reference host (adphost) for development:
//
//	go run ./cmd/adphost --addr 127.0.0.1:8787 [--data DIR | --postgres URL] [--origin URL]
//
// It prints the origin it serves. --data keeps the rooms, join requests,
// statuses and nonce cache in DIR/host.db (bbolt), so that the host
// survives a restart; without it, state lives in memory. --postgres (or
// the environment variable AGENT_PROTOCOLS_POSTGRES) keeps them in a
// PostgreSQL database instead (adphost/pgstore): several processes on one
// database, behind one origin, serve as one host. --room-cache bounds the
// rooms kept in memory; --no-quotas lifts the per-agent quotas, for load
// tests. --origin sets the
// public origin the host announces (discovery, URLs) and requires as the
// request-JWT audience, for a host behind a reverse proxy; by default it
// is http://<addr>, which only loopback addresses may use.
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
	"time"

	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/boltstore"
	"github.com/agentprotocols/go-sdk/adphost/pgstore"

	"github.com/agentprotocols/go-sdk/identity"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "host:", err)
		os.Exit(1)
	}
}

// run is the whole command: it serves until ctx is cancelled.
func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("host", flag.ContinueOnError)
	fs.SetOutput(out)
	addr := fs.String("addr", "127.0.0.1:8787", "listen address")
	data := fs.String("data", "", "directory for the bbolt state file (default: in memory)")
	originFlag := fs.String("origin", "", "public origin announced and required as JWT aud (default http://<addr>)")
	pgURL := fs.String("postgres", os.Getenv("AGENT_PROTOCOLS_POSTGRES"), "PostgreSQL connection URL for a store shared by several processes (default $AGENT_PROTOCOLS_POSTGRES)")
	roomCache := fs.Int("room-cache", 0, "rooms kept in memory (default 1000)")
	noQuotas := fs.Bool("no-quotas", false, "disable the per-agent quotas of §21 (load tests only)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *data != "" && *pgURL != "" {
		return errors.New("--data and --postgres exclude each other")
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
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
		return err
	}
	opts := &adphost.Options{Origin: origin, RoomCache: *roomCache, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	if *noQuotas {
		opts.RateLimits = adphost.Unlimited()
	}
	if *pgURL != "" {
		st, err := pgstore.Open(ctx, *pgURL, nil)
		if err != nil {
			return err
		}
		defer st.Close()
		opts.Store = st
	}
	if *data != "" {
		if err := os.MkdirAll(*data, 0o700); err != nil {
			return err
		}
		st, err := boltstore.Open(filepath.Join(*data, "host.db"), nil)
		if err != nil {
			return err
		}
		defer st.Close()
		opts.Store = st
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
