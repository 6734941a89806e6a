package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/connector"
)

// rawHTTP is a raw JSON-RPC client of the Streamable HTTP endpoint, for
// what the go-sdk client cannot send or does not show (status codes, a
// cancel for a call still in flight, SSE ids).
type rawHTTP struct {
	t       *testing.T
	url     string
	session string
	version string // the MCP-Protocol-Version header, when set
	// conversation is the Agent-Protocols-Conversation header, when set.
	conversation string
}

func newRawHTTP(t *testing.T, ts *httptest.Server) *rawHTTP {
	t.Helper()
	r := &rawHTTP{t: t, url: ts.URL}
	resp := r.post(initBody, nil)
	r.session, r.version = resp.Header.Get("Mcp-Session-Id"), "2025-11-25"
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || r.session == "" {
		t.Fatalf("initialize: %d, session %q", resp.StatusCode, r.session)
	}
	resp = r.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
	resp.Body.Close()
	return r
}

// post sends one message on the session (mut may change the request).
func (r *rawHTTP) post(body string, mut func(*http.Request)) *http.Response {
	r.t.Helper()
	resp, err := http.DefaultClient.Do(r.request(body, mut))
	if err != nil {
		r.t.Fatal(err)
	}
	return resp
}

// request is the POST of one message on the session.
func (r *rawHTTP) request(body string, mut func(*http.Request)) *http.Request {
	req, _ := http.NewRequest("POST", r.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+testToken)
	if r.session != "" {
		req.Header.Set("Mcp-Session-Id", r.session)
	}
	if r.version != "" {
		req.Header.Set("Mcp-Protocol-Version", r.version)
	}
	if r.conversation != "" {
		req.Header.Set("Agent-Protocols-Conversation", r.conversation)
	}
	if mut != nil {
		mut(req)
	}
	return req
}

// getStream opens the session's GET stream (resuming after lastID, when
// set) and reads its events into the returned channel.
func (r *rawHTTP) getStream(lastID string) (*http.Response, chan [2]string) {
	r.t.Helper()
	req, _ := http.NewRequest("GET", r.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Mcp-Session-Id", r.session)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		r.t.Fatalf("GET with Last-Event-ID %q: HTTP %d %s, want a stream", lastID, resp.StatusCode, b)
	}
	ch := make(chan [2]string, 8)
	go sseEvents(resp.Body, ch)
	return resp, ch
}

// sseEvents reads SSE events (id and data) from body until it ends.
func sseEvents(body io.Reader, out chan<- [2]string) {
	defer close(out)
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 1<<20)
	var id, data string
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "id:"):
			id = strings.TrimSpace(l[3:])
		case strings.HasPrefix(l, "data:"):
			data += strings.TrimSpace(l[5:])
		case l == "":
			if data != "" {
				out <- [2]string{id, data}
			}
			id, data = "", ""
		}
	}
}

// TestHTTPJSONRPCErrors: over HTTP an unknown method gets a JSON-RPC
// -32601 body, as over stdio; a session-era POST without Mcp-Session-Id
// is HTTP 400; unadvertised capabilities (prompts, logging) are -32601
// too (MCP 2025-11-25, lifecycle: only negotiated capabilities are used).
func TestHTTPJSONRPCErrors(t *testing.T) {
	h := newTestHost(t, nil)
	c := newConnector(t, "http-rpc", h)
	r := newRawHTTP(t, serveHTTP(t, c))
	for _, method := range []string{"tasks/list", "nonexistent/method", "prompts/list", "logging/setLevel"} {
		resp := r.post(`{"jsonrpc":"2.0","id":7,"method":"`+method+`","params":{}}`, nil)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"code":-32601`) || !strings.Contains(string(b), `"id":7`) {
			t.Errorf("%s: HTTP %d %s, want a -32601 JSON-RPC error", method, resp.StatusCode, b)
		}
	}
	resp := r.post(`{"jsonrpc":"2.0","id":8,"method":"tools/list"}`, func(req *http.Request) {
		req.Header.Del("Mcp-Session-Id")
	})
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("POST without session id: HTTP %d %s, want 400", resp.StatusCode, b)
	}
}

// TestHTTPCancelledGetsNoResponse (MCP 2025-11-25, cancellation: the
// receiver of a cancelled request sends no response): after notifications/cancelled the
// long-poll's response stream ends without a response for it.
func TestHTTPCancelledGetsNoResponse(t *testing.T) {
	h := newTestHost(t, nil)
	c := newConnector(t, "http-cancel", h)
	r := newRawHTTP(t, serveHTTP(t, c))
	events := make(chan [2]string, 8)
	go func() {
		resp := r.post(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"`+connector.ToolPrefix+`inbox_next","arguments":{"wait_ms":20000}}}`, nil)
		defer resp.Body.Close()
		sseEvents(resp.Body, events)
	}()
	// The cancel may overtake the call; repeating it is harmless (a
	// cancel for no request in flight is ignored).
	start := time.Now()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				if time.Since(start) > 10*time.Second {
					t.Fatal("the cancelled poll did not end promptly")
				}
				return
			}
			if strings.Contains(ev[1], `"id":42`) {
				t.Fatalf("a cancelled request got a response: %s", ev[1])
			}
		case <-tick.C:
			r.post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":42}}`, nil).Body.Close()
		case <-time.After(15 * time.Second):
			t.Fatal("the cancelled request's stream did not end")
		}
	}
}

// TestHTTPClaimReleasedWhenStreamsClose (a claim is a lease; over MCP
// HTTP): a client that
// claimed an inbox item and went away without DELETE (its GET stream
// closed, nothing in flight) has its claim released after the grace, so
// another session is handed the item; within the grace it is not.
func TestHTTPClaimReleasedWhenStreamsClose(t *testing.T) {
	h := newTestHost(t, nil)
	_, bob, roomID := mentioned(t, h)
	bob.http.Grace = 200 * time.Millisecond

	r := newRawHTTP(t, serveHTTP(t, bob))
	get, _ := r.getStream("")
	resp := r.post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"`+connector.ToolPrefix+`inbox_next","arguments":{"room_id":"`+roomID+`","kinds":["room.mention"],"claim":true}}}`, nil)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `room.mention`) {
		t.Fatalf("claim: %s", b)
	}
	items := func() int {
		res := bob.call("inbox_next", map[string]any{"room_id": roomID, "kinds": []string{"room.mention"}})
		return len(res["items"].([]any))
	}
	if n := items(); n != 0 {
		t.Fatalf("a claimed item was handed to another session")
	}
	get.Body.Close() // the client goes away, no DELETE
	// A long-poll of another session wakes when the released claim makes
	// the item actionable again.
	res := bob.call("inbox_next", map[string]any{"room_id": roomID, "kinds": []string{"room.mention"}, "wait_ms": 10000})
	if n := len(res["items"].([]any)); n != 1 {
		t.Fatalf("the claim outlived the client's last stream: %d items after 10 s", n)
	}
}

// TestHTTPAbandonedLongPollClaimsNothing: a long-poll with claim whose
// client goes away (its response stream closes; in the session era the
// session has no other stream open) ends at once: the mention that
// arrives next is not claimed by it, and another session gets it — not
// after the claim lease.
func TestHTTPAbandonedLongPollClaimsNothing(t *testing.T) {
	alice, bob, roomID := speakers(t, newTestHost(t, &adphost.Options{RateLimits: adphost.Unlimited()}))
	ts := serveHTTP(t, bob)
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			var r *rawHTTP
			if version < "2026-07-28" {
				r = newRawHTTP(t, ts)
			} else {
				r = &rawHTTP{t: t, url: ts.URL, version: version}
			}
			poll := requestLine(3, "tools/call", map[string]any{"name": connector.ToolPrefix + "inbox_next",
				"arguments": map[string]any{"room_id": roomID, "kinds": []string{"room.mention"}, "claim": true, "wait_ms": 20000}})
			if version >= "2026-07-28" {
				var m map[string]any
				_ = json.Unmarshal([]byte(poll), &m)
				m["params"].(map[string]any)["_meta"] = meta2026()
				b, _ := json.Marshal(m)
				poll = string(b)
			}
			ctx, cancel := context.WithCancel(context.Background())
			req := r.request(poll, func(req *http.Request) {
				req.Header.Set("Mcp-Method", "tools/call")
				req.Header.Set("Mcp-Name", connector.ToolPrefix+"inbox_next")
			}).WithContext(ctx)
			ended := make(chan struct{})
			go func() {
				defer close(ended)
				if resp, err := http.DefaultClient.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}()
			time.Sleep(300 * time.Millisecond) // the poll is waiting
			cancel()                           // the client goes away
			<-ended
			time.Sleep(200 * time.Millisecond)
			alice.call("room_send_message", map[string]any{"room_id": roomID, "content": "ping " + version, "mentions": []string{bob.agentID}, "on_head_mismatch": "send_anyway"})
			deadline := time.Now().Add(3 * time.Second)
			for {
				res := bob.call("inbox_next", map[string]any{"room_id": roomID, "kinds": []string{"room.mention"}, "claim": true, "wait_ms": 500})
				if items, _ := res["items"].([]any); len(items) > 0 {
					bob.call("inbox_ack", map[string]any{"ids": []string{get(items[0], "id").(string)}, "action": "handled"})
					return
				}
				if time.Now().After(deadline) {
					t.Fatal("the mention was claimed by the abandoned long-poll")
				}
			}
		})
	}
}

// mentioned is speakers with a mention of bob in his inbox.
func mentioned(t testing.TB, h *testHost) (alice, bob *agentConn, roomID string) {
	t.Helper()
	alice, bob, roomID = speakers(t, h)
	mentionInbox(t, alice, bob, roomID)
	return alice, bob, roomID
}
