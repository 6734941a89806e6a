package sse_test

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/sse"
)

// stallOptions follows a room on url with a short idle limit and an empty
// history.
func stallOptions(t *testing.T, url string) *sse.Options {
	return &sse.Options{
		API: url + "/v1", RoomID: "r1", Signer: key(t, 9),
		History: sse.HistoryFunc(func(context.Context, string, int64) iter.Seq2[*adp.Record, error] {
			return func(func(*adp.Record, error) bool) {}
		}),
		Origins:     &identity.OriginOptions{AllowLoopbackHTTP: true},
		IdleTimeout: 150 * time.Millisecond,
		Backoff:     sse.Backoff{Initial: 5 * time.Millisecond, Max: 10 * time.Millisecond},
	}
}

// TestFollowStallBeforeHeaders: every wait on a host is bounded. A host that
// accepts the connection and never sends headers, or sends a 5xx error's
// headers and then stalls inside its body, is timed out by the idle limit
// and retried; it no longer holds the subscription silently.
func TestFollowStallBeforeHeaders(t *testing.T) {
	for _, c := range []struct {
		name    string
		handler func(w http.ResponseWriter, r *http.Request)
	}{
		{"no headers", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }},
		{"stalled 503 body", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"error":{"code":"unavail`))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var connects atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				connects.Add(1)
				c.handler(w, r)
			}))
			defer srv.Close()
			defer srv.CloseClientConnections()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for it, err := range sse.Follow(ctx, stallOptions(t, srv.URL)) {
				if err != nil {
					t.Fatalf("ended with %v after %d connections", err, connects.Load())
				}
				if it.Kind == sse.KindError && errors.Is(it.Err, sse.ErrIdle) && connects.Load() >= 2 {
					break
				}
			}
			if ctx.Err() != nil {
				t.Fatal("the stall held the subscription until the deadline")
			}
		})
	}
}

// TestFollowStalledRefusal: a 403 whose error body stalls ends the
// subscription within the idle limit instead of never.
func TestFollowStalledRefusal(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte(`{"error":{"code":"membership_required","mess`))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	defer srv.CloseClientConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var final error
	for _, err := range sse.Follow(ctx, stallOptions(t, srv.URL)) {
		if err != nil {
			final = err
		}
	}
	if final == nil || ctx.Err() != nil {
		t.Fatalf("final error %v, context %v", final, ctx.Err())
	}
}
