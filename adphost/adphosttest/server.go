// Package adphosttest starts the reference ADP host ([adphost.Host]) on a
// loopback test server, for tests and examples of code that talks to an
// ADP host over HTTP.
package adphosttest

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/identity"
)

// NewServer starts a Host on a loopback httptest.Server whose URL is the
// host's origin (opts.Origin is ignored) and stops both when the test
// ends. Clients must allow loopback HTTP origins to talk to it.
func NewServer(t testing.TB, opts *adphost.Options) (*adphost.Host, *httptest.Server) {
	t.Helper()
	h, srv, err := NewUnstarted(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(h.Close)
	return h, srv
}

// NewUnstarted creates a Host for a loopback httptest.Server that is not
// started yet: the server's handler is the Host, and its URL will be the
// host's origin (opts.Origin is ignored). A caller may wrap the handler
// before calling srv.Start, and closes srv and the Host when done.
func NewUnstarted(opts *adphost.Options) (*adphost.Host, *httptest.Server, error) {
	srv := httptest.NewUnstartedServer(nil)
	origin, err := identity.ParseOrigin("http://"+srv.Listener.Addr().String(), &identity.OriginOptions{AllowLoopbackHTTP: true})
	if err != nil {
		srv.Listener.Close()
		return nil, nil, fmt.Errorf("adphosttest: %w", err)
	}
	var o adphost.Options
	if opts != nil {
		o = *opts
	}
	o.Origin = origin
	h, err := adphost.New(context.Background(), &o)
	if err != nil {
		srv.Listener.Close()
		return nil, nil, fmt.Errorf("adphosttest: %w", err)
	}
	srv.Config.Handler = h
	return h, srv, nil
}
