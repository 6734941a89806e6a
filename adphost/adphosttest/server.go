// Package adphosttest starts the reference ADP host ([adphost.Host]) on a
// loopback test server, for tests of code that talks to an ADP host over
// HTTP.
package adphosttest

import (
	"context"
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
	srv := httptest.NewUnstartedServer(nil)
	origin, err := identity.ParseOrigin("http://"+srv.Listener.Addr().String(), &identity.OriginOptions{AllowLoopbackHTTP: true})
	if err != nil {
		srv.Listener.Close()
		t.Fatalf("adphosttest: %v", err)
	}
	var o adphost.Options
	if opts != nil {
		o = *opts
	}
	o.Origin = origin
	h, err := adphost.New(context.Background(), &o)
	if err != nil {
		srv.Listener.Close()
		t.Fatalf("adphosttest: %v", err)
	}
	srv.Config.Handler = h
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(h.Close)
	return h, srv
}
