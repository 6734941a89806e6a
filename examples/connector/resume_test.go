package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentprotocols/go-sdk/connector"
)

// TestHTTPResumableStream (R9): the standalone SSE stream carries event
// ids; a notification sent while the client is away is replayed when it
// reconnects with Last-Event-ID.
func TestHTTPResumableStream(t *testing.T) {
	h := newTestHost(t, nil)
	c := newConnector(t, "http-resume", h)
	r := newRawHTTP(t, serveHTTP(t, c))
	get := func(lastID string) (*http.Response, chan [2]string) {
		req, _ := http.NewRequest("GET", r.url, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Mcp-Session-Id", r.session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET: %v %v", err, resp)
		}
		ch := make(chan [2]string, 8)
		go sseEvents(resp.Body, ch)
		return resp, ch
	}
	next := func(ch chan [2]string) [2]string {
		t.Helper()
		for {
			select {
			case ev := <-ch:
				if strings.Contains(ev[1], "resources/updated") {
					return ev
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no notification")
			}
		}
	}
	notify := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := c.srv.MCP().ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: connector.URIDraftsHeld}); err != nil {
			t.Logf("ResourceUpdated: %v", err)
		}
	}
	r.post(`{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"`+connector.URIDraftsHeld+`"}}`, nil).Body.Close()
	resp, ch := get("")
	// The stream may not be attached yet when GET's headers arrive; a
	// notification before that is stored, not lost, but only a resumed
	// stream replays it, so poke until the live stream carries one.
	var ev [2]string
	for deadline := time.Now().Add(10 * time.Second); ev[1] == ""; {
		notify()
		select {
		case e := <-ch:
			if strings.Contains(e[1], "resources/updated") {
				ev = e
			}
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no notification on the GET stream")
		}
	}
	t.Logf("first event %q", ev[0])
	if ev[0] == "" {
		t.Fatalf("SSE event without id: %v", ev)
	}
	resp.Body.Close()
	time.Sleep(50 * time.Millisecond)
	notify()
	resp, ch = get(ev[0])
	defer resp.Body.Close()
	if ev2 := next(ch); ev2[0] == ev[0] {
		t.Fatalf("replayed the already-seen event %v", ev2)
	}
}
