package adptest

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/agentprotocols/go-sdk/identity"
)

// NewServer starts a Host on a loopback httptest.Server whose URL is the
// host's origin (opts.Origin is ignored) and stops both when the test
// ends. Clients must allow loopback HTTP origins to talk to it.
func NewServer(t testing.TB, opts *Options) (*Host, *httptest.Server) {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	origin, err := identity.ParseOrigin("http://"+srv.Listener.Addr().String(), &identity.OriginOptions{AllowLoopbackHTTP: true})
	if err != nil {
		srv.Listener.Close()
		t.Fatalf("adptest: %v", err)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	o.Origin = origin
	h, err := New(context.Background(), &o)
	if err != nil {
		srv.Listener.Close()
		t.Fatalf("adptest: %v", err)
	}
	srv.Config.Handler = h
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(h.Close)
	return h, srv
}

// Close ends every live stream, so that a server shutting down does not
// wait for subscribers. The Host keeps serving other requests.
func (h *Host) Close() {
	for _, hr := range h.allRooms() {
		hr.subMu.Lock()
		for s := range hr.subs {
			s.close()
		}
		hr.subMu.Unlock()
	}
}
