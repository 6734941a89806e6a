// Command host is the smallest ADP host program: package adphost's Host,
// an http.Handler, inside an http.Server, with its state in memory. It
// shows how to embed the host; the host to run is cmd/adphost, which adds
// a bbolt file or PostgreSQL, a public origin behind a proxy, quotas and
// a start-up log line.
//
//	go run ./examples/host [--addr 127.0.0.1:8787]
//
// It prints the origin it serves, http://ADDR: an http origin must be a
// loopback address.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/identity"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8787", "loopback listen address")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *addr, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "host:", err)
		os.Exit(1)
	}
}

// run serves the host on addr until ctx ends.
func run(ctx context.Context, addr string, out io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	origin, err := identity.ParseOrigin("http://"+ln.Addr().String(), &identity.OriginOptions{AllowLoopbackHTTP: true})
	if err != nil {
		ln.Close()
		return err
	}
	h, err := adphost.New(ctx, &adphost.Options{Origin: origin})
	if err != nil {
		ln.Close()
		return err
	}
	// The Host bounds each request body and live-stream write itself; the
	// server bounds headers and idle connections. No WriteTimeout: it
	// would cut every live stream at that age.
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	go func() {
		<-ctx.Done()
		h.Close() // ends the live streams, which Shutdown would wait for
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	fmt.Fprintln(out, origin)
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
