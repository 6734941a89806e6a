// Command roundrobin is a reverse proxy on a loopback address that sends
// each request to the next of its backends in turn and streams every
// answer as it comes, so that live streams (SSE) pass through. It stands
// in for Caddy or nginx in the README's recipe of two host processes on
// one PostgreSQL on one machine, where there is no DNS name or TLS
// certificate; it is not a production proxy (no health checks, no TLS).
//
//	go run ./examples/roundrobin --addr 127.0.0.1:8800 http://127.0.0.1:8801 http://127.0.0.1:8802
//
// The Host header is passed through, as Caddy and nginx are configured to
// do in front of a host; the hosts' public origin is the proxy's,
// http://127.0.0.1:8800 here.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"sync/atomic"
	"time"

	"github.com/agentprotocols/go-sdk/internal/cli"
)

const usage = `usage: roundrobin [--addr 127.0.0.1:PORT] BACKEND...

roundrobin listens on a loopback address and sends each request to the
next BACKEND (an http:// URL) in turn, streaming the answers.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole command; it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("roundrobin", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8800", "loopback address to listen on")
	if status, done := cli.Parse(fs, args, usage, stdout, stderr); done {
		return status
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "roundrobin: no BACKEND (see roundrobin --help)")
		return cli.StatusUsage
	}
	proxy, err := newProxy(fs.Args())
	if err != nil {
		fmt.Fprintln(stderr, "roundrobin:", err)
		return cli.StatusUsage
	}
	if ap, err := netip.ParseAddrPort(*addr); err != nil || !ap.Addr().IsLoopback() {
		fmt.Fprintf(stderr, "roundrobin: --addr %q is not a loopback address and port\n", *addr)
		return cli.StatusUsage
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(stderr, "roundrobin:", err)
		return 1
	}
	fmt.Fprintf(stdout, "http://%s\n", ln.Addr())
	srv := &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close() // live streams would hold a graceful shutdown open
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(stderr, "roundrobin:", err)
		return 1
	}
	return 0
}

// newProxy returns a handler that sends request i to backends[i mod n].
func newProxy(backends []string) (http.Handler, error) {
	targets := make([]*url.URL, len(backends))
	for i, b := range backends {
		u, err := url.Parse(b)
		if err != nil || u.Scheme != "http" || u.Host == "" {
			return nil, fmt.Errorf("backend %q is not an http:// URL", b)
		}
		targets[i] = u
	}
	var next atomic.Uint64
	return &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(targets[(next.Add(1)-1)%uint64(len(targets))])
			r.Out.Host = r.In.Host // the public origin's host, as the hosts expect
		},
		FlushInterval: -1, // stream: an SSE event reaches the client when the backend writes it
	}, nil
}
