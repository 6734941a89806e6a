package profile_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/profile"
	"github.com/agentprotocols/go-sdk/profile/profiletest"
)

func TestClientRoundTrip(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	srv, c := startServer(t, clk, nil)
	k1, k2, k3 := key(t, 1), key(t, 2), key(t, 3)
	a1, a3 := author(k1, clk), author(k3, clk)

	t.Run("discovery", func(t *testing.T) {
		d, err := c.Discover(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d.Protocol != profile.Protocol || d.Service != srv.Origin {
			t.Fatalf("discovery %+v", d)
		}
		if !d.HasFeature(profile.FeatureBatchRead) || !d.HasFeature(profile.FeatureEventHistory) {
			t.Fatalf("features %v", d.Features)
		}
	})

	var first *profile.Verified
	t.Run("update", func(t *testing.T) {
		v, err := c.Update(ctx, a1, fullPayload())
		if err != nil {
			t.Fatal(err)
		}
		want := fullPayload()
		want.ID = k1.AgentID()
		assertSameJSON(t, &v.Document.Payload, mustJSON(t, &want))
		if !v.Document.UpdatedTime().Equal(t0) || c.Service() != srv.Origin {
			t.Fatalf("updated %v service %s", v.Document.UpdatedTime(), c.Service())
		}
		if v.Document.EventID != v.Update.Hash() || v.Document.UpdatedAt != t0.UnixMilli() {
			t.Fatalf("event_id %s updated_at %d", v.Document.EventID, v.Document.UpdatedAt)
		}
		first = v
	})

	t.Run("get", func(t *testing.T) {
		v, err := c.Get(ctx, k1.AgentID())
		if err != nil {
			t.Fatal(err)
		}
		assertSameJSON(t, v.Document, mustJSON(t, first.Document))
		if v.Update.Hash() != first.Update.Hash() {
			t.Fatal("different update")
		}
		u, err := c.GetUnverifiedUnsafe(ctx, k1.AgentID())
		if err != nil {
			t.Fatal(err)
		}
		assertSameJSON(t, u, mustJSON(t, first.Document))
	})

	var second *profile.Verified
	t.Run("full replacement", func(t *testing.T) {
		clk.Advance(time.Second)
		v, err := c.Update(ctx, a1, minimal("Renamed"))
		if err != nil {
			t.Fatal(err)
		}
		g, err := c.Get(ctx, k1.AgentID())
		if err != nil {
			t.Fatal(err)
		}
		d := g.Document
		if d.Name != "Renamed" || d.Description != nil || d.Capabilities != nil || d.Extra != nil || d.Delegations != nil {
			t.Fatalf("fields of the earlier update survived: %+v", d)
		}
		if d.EventID != v.Update.Hash() || d.UpdatedAt != clk.Now().UnixMilli() {
			t.Fatal("wrong materialization")
		}
		second = v
	})

	t.Run("events", func(t *testing.T) {
		p1, err := c.Events(ctx, k1.AgentID(), 0, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(p1.Updates) != 1 || p1.Updates[0].Hash() != second.Update.Hash() || p1.NextCursor == "" {
			t.Fatalf("default page: %d updates, cursor %q", len(p1.Updates), p1.NextCursor)
		}
		p2, err := c.Events(ctx, k1.AgentID(), 5, p1.NextCursor)
		if err != nil {
			t.Fatal(err)
		}
		if len(p2.Updates) != 1 || p2.Updates[0].Hash() != first.Update.Hash() || p2.NextCursor != "" {
			t.Fatalf("second page: %d updates, cursor %q", len(p2.Updates), p2.NextCursor)
		}
		var got []envelope.Hash
		for env, err := range c.AllEvents(ctx, k1.AgentID(), 1) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, env.Hash())
		}
		if !slices.Equal(got, []envelope.Hash{second.Update.Hash(), first.Update.Hash()}) {
			t.Fatalf("AllEvents: %v", got)
		}
		if _, err := c.Events(ctx, k2.AgentID(), 1, ""); !errors.Is(err, identity.ErrNotFound) {
			t.Fatalf("unknown agent: %v", err)
		}
	})

	t.Run("batch", func(t *testing.T) {
		if _, err := c.Update(ctx, a3, minimal("Third")); err != nil {
			t.Fatal(err)
		}
		ids := []identity.AgentID{k3.AgentID(), k2.AgentID(), k1.AgentID(), k3.AgentID()}
		vs, err := c.Batch(ctx, ids)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, v := range vs {
			names = append(names, v.Document.Name)
			if v.Document.EventID != v.Update.Hash() {
				t.Fatal("unverified batch entry")
			}
		}
		if !slices.Equal(names, []string{"Third", "Renamed"}) {
			t.Fatalf("batch order/omission: %v", names)
		}
		docs, err := c.BatchUnverifiedUnsafe(ctx, []identity.AgentID{k1.AgentID(), k2.AgentID(), k3.AgentID()})
		if err != nil || len(docs) != 2 || docs[0].Name != "Renamed" || docs[1].Name != "Third" {
			t.Fatalf("unverified batch: %v %v", docs, err)
		}
		if vs, err := c.Batch(ctx, nil); err != nil || len(vs) != 0 {
			t.Fatalf("empty batch: %v %v", vs, err)
		}
	})

	t.Run("publish resubmission", func(t *testing.T) {
		// The superseded first update, resubmitted exactly: a lookup that
		// answers with the current document.
		v, err := c.Publish(ctx, first.Update)
		if err != nil {
			t.Fatal(err)
		}
		if v.Update.Hash() != second.Update.Hash() || v.Document.Name != "Renamed" {
			t.Fatalf("resubmission answered %s", v.Document.Name)
		}
		v, err = c.Publish(ctx, second.Update)
		if err != nil || v.Update.Hash() != second.Update.Hash() {
			t.Fatalf("resubmitting the current update: %v", err)
		}
		page, _ := c.Events(ctx, k1.AgentID(), 10, "")
		if len(page.Updates) != 2 {
			t.Fatalf("resubmission changed history: %d updates", len(page.Updates))
		}
	})

	t.Run("not found", func(t *testing.T) {
		_, err := c.Get(ctx, k2.AgentID())
		if !errors.Is(err, identity.ErrNotFound) {
			t.Fatalf("got %v", err)
		}
		var ie *identity.Error
		if !errors.As(err, &ie) || ie.Status != 404 {
			t.Fatalf("status %v", err)
		}
	})
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The discovery document's endpoints override the default paths.
func TestClientDiscoveryEndpoints(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	srv, c := startServer(t, clk, &profiletest.Options{PathPrefix: "/alt/"})
	k := key(t, 1)
	if _, err := c.Update(ctx, author(k, clk), minimal("Alt")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, k.AgentID()); err != nil {
		t.Fatal(err)
	}
	if vs, err := c.Batch(ctx, []identity.AgentID{k.AgentID()}); err != nil || len(vs) != 1 {
		t.Fatalf("batch: %v", err)
	}
	// The default path is not served: the client must have used discovery.
	wantHTTPError(t, get(t, srv, "/v1/profiles/"+k.AgentID().String()), 404, identity.CodeNotFound)
	resp := get(t, srv, "/alt/v1/profiles/"+k.AgentID().String())
	if resp.StatusCode != 200 {
		t.Fatalf("prefixed path: %d", resp.StatusCode)
	}
}

// Without a discovery document the client falls back to the default paths.
func TestClientNoDiscovery(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	_, c := startServer(t, clk, &profiletest.Options{NoDiscovery: true})
	k := key(t, 1)
	if _, err := c.Discover(ctx); !errors.Is(err, identity.ErrNotFound) {
		t.Fatalf("Discover: %v", err)
	}
	if _, err := c.Update(ctx, author(k, clk), minimal("Plain")); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get(ctx, k.AgentID()); err != nil || v.Document.Name != "Plain" {
		t.Fatalf("get: %v", err)
	}
}

// A service without event history cannot prove a profile: Get refuses.
func TestClientNoHistory(t *testing.T) {
	ctx := context.Background()
	for _, discovery := range []bool{true, false} {
		name := map[bool]string{true: "features listed", false: "no discovery"}[discovery]
		t.Run(name, func(t *testing.T) {
			clk := newClock(t0)
			_, c := startServer(t, clk, &profiletest.Options{DisableHistory: true, NoDiscovery: !discovery})
			k := key(t, 1)
			if _, err := c.Update(ctx, author(k, clk), minimal("Unprovable")); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Get(ctx, k.AgentID()); !errors.Is(err, profile.ErrUnsupported) {
				t.Fatalf("Get: %v", err)
			}
			if _, err := c.Batch(ctx, []identity.AgentID{k.AgentID()}); !errors.Is(err, profile.ErrUnsupported) {
				t.Fatalf("Batch: %v", err)
			}
			d, err := c.GetUnverifiedUnsafe(ctx, k.AgentID())
			if err != nil || d.Name != "Unprovable" {
				t.Fatalf("GetUnverifiedUnsafe: %v", err)
			}
			if discovery {
				if _, err := c.Events(ctx, k.AgentID(), 1, ""); !errors.Is(err, profile.ErrUnsupported) {
					t.Fatalf("Events: %v", err)
				}
			}
		})
	}
	t.Run("no batch", func(t *testing.T) {
		clk := newClock(t0)
		_, c := startServer(t, clk, &profiletest.Options{DisableBatch: true})
		if _, err := c.BatchUnverifiedUnsafe(ctx, []identity.AgentID{key(t, 1).AgentID()}); !errors.Is(err, profile.ErrUnsupported) {
			t.Fatalf("Batch: %v", err)
		}
	})
}

func TestClientTLS(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	srv, c := startServer(t, clk, &profiletest.Options{TLS: true})
	if srv.Origin.Scheme() != "https" {
		t.Fatalf("origin %s", srv.Origin)
	}
	// A strict client (no loopback HTTP) works against the TLS server.
	strict, err := profile.NewClient(srv.URL, &profile.ClientOptions{HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	k := key(t, 1)
	if _, err := c.Update(ctx, author(k, clk), minimal("TLS")); err != nil {
		t.Fatal(err)
	}
	if v, err := strict.Get(ctx, k.AgentID()); err != nil || v.Document.Name != "TLS" {
		t.Fatalf("get: %v", err)
	}
	// Plain HTTP loopback needs the opt-in.
	if _, err := profile.NewClient("http://127.0.0.1:1", nil); !errors.Is(err, identity.ErrInvalidRequest) {
		t.Fatalf("loopback without opt-in: %v", err)
	}
}

// The vectors' history, imported, then served and verified over HTTP.
func TestVectorsOverHTTP(t *testing.T) {
	ctx := context.Background()
	v := loadVectors(t)
	clk := newClock(t0.Add(2 * time.Second))
	srv, c := startServer(t, clk, nil)
	for _, raw := range v.History.Envelopes {
		env, err := envelope.Verify(raw)
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Import(env); err != nil {
			t.Fatal(err)
		}
	}
	actor := identity.MustParseAgentID(v.Payloads.Valid[0].Actor)
	got, err := c.Get(ctx, actor)
	if err != nil {
		t.Fatal(err)
	}
	if got.Document.Name != "Agent-v9" || got.Update.Event().Nonce != 9 {
		t.Fatalf("current %s nonce %d", got.Document.Name, got.Update.Event().Nonce)
	}
	var nonces []int64
	for env, err := range c.AllEvents(ctx, actor, 2) {
		if err != nil {
			t.Fatal(err)
		}
		nonces = append(nonces, env.Event().Nonce)
	}
	if !slices.Equal(nonces, []int64{9, 7, 5}) {
		t.Fatalf("history nonces %v", nonces)
	}
	// Re-posting the imported nonce-7 update live is an exact
	// resubmission: the current (nonce 9) document comes back.
	resp := post(t, srv, "/v1/profiles", v.History.Envelopes[2])
	if d, err := profile.ParseDocument(readAll(t, resp)); resp.StatusCode != 200 || err != nil || d.Name != "Agent-v9" {
		t.Fatalf("resubmission: %d %v", resp.StatusCode, err)
	}
	// explicit_empty (nonce 11) is a fresh live write within the window.
	env, err := envelope.Verify(v.ExplicitEmpty.Envelope)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Publish(ctx, env); err != nil {
		t.Fatal(err)
	}
	got, err = c.Get(ctx, actor)
	if err != nil {
		t.Fatal(err)
	}
	assertSameJSON(t, got.Document, v.ExplicitEmpty.Document)
	raw := get(t, srv, "/v1/profiles/"+actor.String())
	body := readAll(t, raw)
	if !sameCanonical(t, body, v.ExplicitEmpty.Document) {
		t.Fatalf("served document %s", body)
	}
}

// TestAllEventsBounded: a listing is bounded, here the profile history:
// one AllEvents ends with invalid_response once it passes
// MaxHistoryPages pages or MaxHistoryEvents updates.
func TestAllEventsBounded(t *testing.T) {
	ctx := context.Background()
	v := loadVectors(t)
	clk := newClock(t0.Add(2 * time.Second))
	srv, _ := startServer(t, clk, nil)
	for _, raw := range v.History.Envelopes {
		env, err := envelope.Verify(raw)
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Import(env); err != nil {
			t.Fatal(err)
		}
	}
	actor := identity.MustParseAgentID(v.Payloads.Valid[0].Actor)
	for _, o := range []*profile.ClientOptions{{MaxHistoryPages: 2}, {MaxHistoryEvents: 1}} {
		c := srv.NewClient(o)
		var n int
		var last error
		for _, err := range c.AllEvents(ctx, actor, 1) {
			if err != nil {
				last = err
				break
			}
			n++
		}
		if !errors.Is(last, profile.ErrInvalidResponse) || n != 2 {
			t.Fatalf("%+v: %d updates, then %v", o, n, last)
		}
	}
}
