package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentprotocols/go-sdk/adpconform"
	"github.com/agentprotocols/go-sdk/adpconform/adpconformtest"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/pgstore"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/pgtest"
)

// TestMain gives the PostgreSQL tests a real server; the re-executed host
// process of TestConformanceProcess needs none.
func TestMain(m *testing.M) {
	if os.Getenv(envHostArgs) != "" {
		os.Exit(m.Run())
	}
	os.Exit(pgtest.Main(m))
}

// pgHosts starts n adphost instances, each with its own pgstore pool on
// one fresh database, behind one origin; each request goes to the next
// instance, as a reverse proxy in front of n processes would.
func pgHosts(t *testing.T, n int) *httptest.Server {
	url := pgtest.Database(t)
	srv := httptest.NewUnstartedServer(nil)
	origin, err := identity.ParseOrigin("http://"+srv.Listener.Addr().String(), &identity.OriginOptions{AllowLoopbackHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	var hosts []http.Handler
	for range n {
		st, err := pgstore.Open(context.Background(), url, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		h, err := adphost.New(context.Background(), &adphost.Options{Origin: origin, Store: st})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(h.Close)
		hosts = append(hosts, h)
	}
	var next atomic.Uint64
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hosts[next.Add(1)%uint64(n)].ServeHTTP(w, r)
	})
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// TestConformancePostgres runs the conformance suite against adphost on
// the PostgreSQL store.
func TestConformancePostgres(t *testing.T) {
	srv := pgHosts(t, 1)
	adpconformtest.Run(t, srv.URL, &adpconformtest.Options{
		Options: adpconform.Options{AllowLoopbackHTTP: true, HTTPClient: srv.Client()},
	})
}

// TestConformancePostgresTwoInstances runs the suite against two adphost
// instances on one database behind one origin, which pgstore promises
// serve as one host.
//
// KNOWN FAILURE (issue 21): a second instance judges writes and answers
// reads from its own replica without catching up from the Store first, so
// MUST checks fail — which ones depends on when the LISTEN/NOTIFY catch-up
// lands (a join anchored on a record the stale replica lacks is
// base_record_mismatch, a closed room reads as active, a fresh member is
// refused as a non-member; between 1 and 10 per run here). Since a run may
// pass by the luck of timing, the test records the verdict instead of
// requiring either; once the instances catch up before judging, it should
// call adpconformtest.Run like TestConformancePostgres.
func TestConformancePostgresTwoInstances(t *testing.T) {
	srv := pgHosts(t, 2)
	rep, err := adpconform.Run(context.Background(), srv.URL, &adpconform.Options{AllowLoopbackHTTP: true, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	rep.WriteTable(&b, false)
	if rep.OK {
		t.Logf("two instances conformed this run (the known failure is timing-dependent)\n%s", b.String())
		return
	}
	t.Logf("KNOWN FAILURE (issue 21: a second instance answers from a stale replica); failed %v\n%s", rep.Failed(), b.String())
}
