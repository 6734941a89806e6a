package profile_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/profile"
)

// tsEmptyMembers are the members a TypeScript-based service adds to every
// materialized document when the update left them out.
const tsEmptyMembers = `"capabilities":[],"service_endpoints":[],"links":[],"delegations":[],"extra":{},`

var tsMembers = []string{"capabilities", "delegations", "extra", "links", "service_endpoints"}

// tsStyle rewrites every document in a body the way such a service serves it.
func tsStyle(b []byte) []byte {
	return bytes.ReplaceAll(b, []byte(`{"id":`), []byte(`{`+tsEmptyMembers+`"id":`))
}

// The signed update is the truth (Profile §5). A served document that
// differs from its materialization is reported, not an error, unless the
// client is strict; an update that does not verify still fails.
func TestClientReportsDiscrepancies(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	srv, seed := startServer(t, clk, nil)
	k := key(t, 1)
	a := author(k, clk)
	first, err := seed.Update(ctx, a, minimal("Original"))
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	current, err := seed.Update(ctx, a, minimal("Current"))
	if err != nil {
		t.Fatal(err)
	}
	if current.Discrepancy != nil {
		t.Fatalf("profiletest serves the exact materialization: %v", current.Discrepancy)
	}
	id := k.AgentID()
	want := mustJSON(t, current.Document)
	isDoc := func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, id.String())
	}
	isBatch := func(r *http.Request) bool { return r.URL.Path == "/v1/profiles/batch" }
	isPost := func(r *http.Request) bool { return r.Method == http.MethodPost && r.URL.Path == "/v1/profiles" }
	isEvents := func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/events") }
	client := func(strict bool, rts ...func(http.RoundTripper) http.RoundTripper) *profile.Client {
		rt := srv.Client().Transport
		for _, wrap := range rts {
			rt = wrap(rt)
		}
		return srv.NewClient(&profile.ClientOptions{HTTPClient: &http.Client{Transport: rt}, StrictDocuments: strict})
	}
	rewrite := func(match func(*http.Request) bool, edit func([]byte) []byte) func(http.RoundTripper) http.RoundTripper {
		return func(base http.RoundTripper) http.RoundTripper {
			return &rewriting{base: base, match: match, edit: edit}
		}
	}
	check := func(t *testing.T, v *profile.Verified, err error, members []string, served string) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		assertSameJSON(t, v.Document, want)
		if v.Update.Hash() != current.Update.Hash() {
			t.Fatal("not the latest signed update")
		}
		if v.Discrepancy == nil || !slices.Equal(v.Discrepancy.Members, members) {
			t.Fatalf("discrepancy %+v, want members %v", v.Discrepancy, members)
		}
		if !strings.Contains(string(v.Discrepancy.Served), served) {
			t.Fatalf("served %s lacks %s", v.Discrepancy.Served, served)
		}
	}
	wantStrictErr := func(t *testing.T, err error) {
		t.Helper()
		if !errors.Is(err, profile.ErrInvalidResponse) || !errors.Is(err, profile.ErrDiscrepancy) {
			t.Fatalf("strict: got %v, want invalid_response wrapping ErrDiscrepancy", err)
		}
	}

	t.Run("exact document", func(t *testing.T) {
		v, err := client(false).Get(ctx, id)
		if err != nil || v.Discrepancy != nil {
			t.Fatalf("%v %v", v, err)
		}
	})

	t.Run("TypeScript empty members on Get", func(t *testing.T) {
		v, err := client(false, rewrite(isDoc, tsStyle)).Get(ctx, id)
		check(t, v, err, tsMembers, `"capabilities":[]`)
		if v.Document.Capabilities != nil || v.Document.Extra != nil {
			t.Fatal("the result carries the served empty members")
		}
		_, err = client(true, rewrite(isDoc, tsStyle)).Get(ctx, id)
		wantStrictErr(t, err)
	})

	t.Run("TypeScript empty members on Batch", func(t *testing.T) {
		vs, err := client(false, rewrite(isBatch, tsStyle)).Batch(ctx, []identity.AgentID{id})
		if err != nil || len(vs) != 1 {
			t.Fatalf("%v %v", vs, err)
		}
		check(t, vs[0], nil, tsMembers, `"extra":{}`)
		_, err = client(true, rewrite(isBatch, tsStyle)).Batch(ctx, []identity.AgentID{id})
		wantStrictErr(t, err)
	})

	t.Run("TypeScript empty members on Update", func(t *testing.T) {
		clk.Advance(time.Second)
		v, err := client(false, rewrite(isPost, tsStyle)).Update(ctx, a, minimal("Current"))
		if err != nil {
			t.Fatal(err)
		}
		if v.Document.Name != "Current" || v.Document.EventID != v.Update.Hash() ||
			v.Discrepancy == nil || !slices.Equal(v.Discrepancy.Members, tsMembers) {
			t.Fatalf("update: %+v", v)
		}
		current, want = v, mustJSON(t, v.Document)
		clk.Advance(time.Second)
		_, err = client(true, rewrite(isPost, tsStyle)).Update(ctx, a, minimal("Current"))
		wantStrictErr(t, err)
		v, err = client(false).Get(ctx, id) // the strict client's update was accepted all the same
		if err != nil || v.Discrepancy != nil {
			t.Fatal(err)
		}
		current, want = v, mustJSON(t, v.Document)
	})

	t.Run("forged document", func(t *testing.T) {
		forge := rewrite(isDoc, func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"name":"Current"`), []byte(`"name":"Forged","provider":"evil"`), 1)
		})
		v, err := client(false, forge).Get(ctx, id)
		check(t, v, err, []string{"name", "provider"}, `"Forged"`)
		_, err = client(true, forge).Get(ctx, id)
		wantStrictErr(t, err)
	})

	t.Run("stale document is fetched again, then reported", func(t *testing.T) {
		stale := mustJSON(t, first.Document)
		var docs atomic.Int64
		count := func(base http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				if isDoc(r) {
					docs.Add(1)
				}
				return base.RoundTrip(r)
			})
		}
		v, err := client(false, rewrite(isDoc, func([]byte) []byte { return stale }), count).Get(ctx, id)
		check(t, v, err, []string{"event_id", "name", "updated_at"}, `"Original"`)
		if docs.Load() != 2 {
			t.Fatalf("%d document requests, want 2", docs.Load())
		}
	})

	t.Run("an update that does not verify still fails", func(t *testing.T) {
		tamper := rewrite(isEvents, func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"Current"`), []byte(`"Forged"`), 1)
		})
		for _, strict := range []bool{false, true} {
			_, err := client(strict, rewrite(isDoc, tsStyle), tamper).Get(ctx, id)
			if !errors.Is(err, profile.ErrInvalidResponse) || errors.Is(err, profile.ErrDiscrepancy) {
				t.Fatalf("strict %v: got %v, want invalid_response for the update", strict, err)
			}
		}
	})
}
