package adpconformtest_test

import (
	"net/http/httptest"
	"testing"

	"github.com/agentprotocols/go-sdk/adpconform"
	"github.com/agentprotocols/go-sdk/adpconform/adpconformtest"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/identity"
)

// conformance is a host team's conformance test, with adphost standing in
// for the team's host. The test server is created unstarted: it listens
// already, so its address, which is the host's origin, is known before the
// host is built. TestConformanceExample runs it; README.md shows it.
func conformance(t *testing.T) {
	srv := httptest.NewUnstartedServer(nil) // listening already: its address is the host's origin
	origin, err := identity.ParseOrigin("http://"+srv.Listener.Addr().String(), &identity.OriginOptions{AllowLoopbackHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	host, err := adphost.New(t.Context(), &adphost.Options{Origin: origin}) // your host
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = host
	srv.Start()
	defer srv.Close()
	defer host.Close()
	adpconformtest.Run(t, srv.URL, &adpconformtest.Options{
		Options: adpconform.Options{AllowLoopbackHTTP: true, HTTPClient: srv.Client()},
	})
}

// A host's tests run the suite with Run, one subtest per check; an
// example has no *testing.T, so the test is the function above.
func ExampleRun() {
	_ = conformance
}
