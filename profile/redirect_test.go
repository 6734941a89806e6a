package profile_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentprotocols/go-sdk/internal/httpc"
	"github.com/agentprotocols/go-sdk/profile"
)

// The profile client follows no redirect to another origin,
// even through the caller's own *http.Client (internal/httpc tests the
// policy in full).
func TestClientRedirects(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	srv, seed := startServer(t, clk, nil)
	k := key(t, 1)
	if _, err := seed.Update(ctx, author(k, clk), minimal("Here")); err != nil {
		t.Fatal(err)
	}
	away := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, srv.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	defer away.Close()
	before := srv.Requests()
	permissive := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return nil }}
	for _, hc := range []*http.Client{nil, permissive} {
		c, err := profile.NewClient(away.URL, &profile.ClientOptions{HTTPClient: hc, AllowLoopbackHTTP: true, Retries: -1})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.GetUnverifiedUnsafe(ctx, k.AgentID())
		if !errors.Is(err, profile.ErrInvalidResponse) || !errors.Is(err, httpc.ErrRedirectRefused) {
			t.Fatalf("got %v", err)
		}
	}
	if n := srv.Requests() - before; n != 0 {
		t.Fatalf("%d requests reached the other origin", n)
	}

}
