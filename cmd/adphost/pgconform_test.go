package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adpconform"
	"github.com/agentprotocols/go-sdk/adpconform/adpconformtest"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/pgstore"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/pgtest"
)

// pgHosts starts n adphost instances, each with its own pgstore pool on
// one fresh database, behind one origin; each request goes to the next
// instance, as a reverse proxy in front of n processes would.
func pgHosts(t *testing.T, n int) *httptest.Server { return pgHostsIn(t, n, adp.Draft20260704) }

// pgHostsIn is pgHosts serving draft d.
func pgHostsIn(t *testing.T, n int, d adp.Draft) *httptest.Server {
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
		h, err := adphost.New(context.Background(), &adphost.Options{Origin: origin, Store: st, Draft: d})
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
// serve as one host: each request goes to the other instance, whose
// replica catches up from the Store before it answers.
func TestConformancePostgresTwoInstances(t *testing.T) {
	srv := pgHosts(t, 2)
	adpconformtest.Run(t, srv.URL, &adpconformtest.Options{
		Options: adpconform.Options{AllowLoopbackHTTP: true, HTTPClient: srv.Client()},
	})
}

// TestConformancePostgresLater runs the 2026-09-24 draft's suite against
// two adphost instances serving that draft on one database.
func TestConformancePostgresLater(t *testing.T) {
	srv := pgHostsIn(t, 2, adp.Draft20260924)
	rep := adpconformtest.Run(t, srv.URL, &adpconformtest.Options{
		Options: adpconform.Options{AllowLoopbackHTTP: true, HTTPClient: srv.Client()},
	})
	if rep.Draft != adpconform.DraftLater {
		t.Errorf("the suite checked %q", rep.Draft)
	}
}
