package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/connector"
	"github.com/agentprotocols/go-sdk/connector/mcptools"
)

// MCP 2026-07-28 (no initialize, no session; server/discover,
// subscriptions/listen) over both transports.

// TestResourceUpdatesOverTransports: a client subscribed to the inbox —
// with resources/subscribe up to 2025-11-25, with subscriptions/listen in
// 2026-07-28 — gets notifications/resources/updated when a mention
// arrives, over stdio and HTTP, and re-reads the resource to find it.
func TestResourceUpdatesOverTransports(t *testing.T) {
	alice, bob, roomID := speakers(t, newTestHost(t, &adphost.Options{RateLimits: adphost.Unlimited()}))
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			updates := make(chan string, 64)
			cs := tr.connect(t, bob, &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
				select {
				case updates <- r.Params.URI:
				default:
				}
			}})
			ctx := context.Background()
			// In 2026-07-28 Subscribe opens a subscriptions/listen
			// request that stays open in the background until
			// Unsubscribe.
			if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: connector.URIInboxPending}); err != nil {
				t.Fatal(err)
			}
			defer cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: connector.URIInboxPending})
			// The listen may not be registered yet when the first
			// mention lands; mention until an update arrives.
			deadline := time.Now().Add(20 * time.Second)
			for n := 0; ; n++ {
				if time.Now().After(deadline) {
					t.Fatal("no resources/updated for the inbox after a mention")
				}
				content := tr.name + " ping " + itoa(n)
				alice.call("room_send_message", map[string]any{"room_id": roomID, "content": content, "mentions": []string{bob.agentID}, "on_head_mismatch": "send_anyway"})
				select {
				case uri := <-updates:
					if uri != connector.URIInboxPending {
						continue
					}
					rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
					if err != nil {
						t.Fatal(err)
					}
					if !containsAll(rr.Contents[0].Text, "room.mention", roomID) {
						t.Fatalf("inbox after the update: %.300s", rr.Contents[0].Text)
					}
					return
				case <-time.After(300 * time.Millisecond):
				}
			}
		})
	}
}

// post2026 posts one 2026-07-28 request (its _meta and headers) as a raw
// HTTP client and returns the HTTP response.
func (r *rawHTTP) post2026(id int, method string, params map[string]any) *http.Response {
	r.t.Helper()
	p := map[string]any{"_meta": meta2026()}
	for k, v := range params {
		p[k] = v
	}
	return r.post(requestLine(id, method, p), func(req *http.Request) {
		req.Header.Set("Mcp-Method", method)
		if uri, ok := params["uri"].(string); ok {
			req.Header.Set("Mcp-Name", uri)
		}
		if name, ok := params["name"].(string); ok {
			req.Header.Set("Mcp-Name", name)
		}
	})
}

// TestHTTPSubscriptionsListen: over HTTP in 2026-07-28 a
// subscriptions/listen request is served (not -32601): its stream is
// acknowledged, then carries notifications/resources/updated for the
// URIs it named, tagged with the listen request's id as the
// subscriptionId; a URI that is none of the connector's is "not found"
// (-32602 with data.uri).
func TestHTTPSubscriptionsListen(t *testing.T) {
	h := newTestHost(t, nil)
	c := newConnector(t, "listen", h)
	r := &rawHTTP{t: t, url: serveHTTP(t, c).URL, version: "2026-07-28"}
	s := mcpSchema(t, "2026-07-28")

	resp := r.post2026(9, "subscriptions/listen", map[string]any{"notifications": map[string]any{"resourceSubscriptions": []string{"agent-protocols://nope"}}})
	msg := responseFor(t, resp, 9)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(msg), `"code":-32602`) || !strings.Contains(string(msg), `"uri":"agent-protocols://nope"`) {
		t.Errorf("listen to an unknown URI: HTTP %d %s, want 400 with -32602 and data.uri", resp.StatusCode, msg)
	}
	if err := s.check("JSONRPCErrorResponse", msg); err != nil {
		t.Errorf("not a 2026-07-28 JSONRPCErrorResponse: %v", err)
	}

	resp = r.post2026(7, "subscriptions/listen", map[string]any{"notifications": map[string]any{"resourceSubscriptions": []string{connector.URIDraftsHeld}}})
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("listen: HTTP %d %s", resp.StatusCode, b)
	}
	events := make(chan [2]string, 16)
	go sseEvents(resp.Body, events)
	next := func() json.RawMessage {
		t.Helper()
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the listen stream ended")
			}
			return json.RawMessage(ev[1])
		case <-time.After(10 * time.Second):
			t.Fatal("nothing on the listen stream")
		}
		return nil
	}
	ack := next()
	if !strings.Contains(string(ack), "notifications/subscriptions/acknowledged") || !strings.Contains(string(ack), connector.URIDraftsHeld) {
		t.Fatalf("first event %s, want the acknowledgement", ack)
	}
	if err := s.check("SubscriptionsAcknowledgedNotification", ack); err != nil {
		t.Errorf("acknowledgement: %v", err)
	}
	ctx := context.Background()
	if err := c.srv.MCP().ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: connector.URIDraftsHeld}); err != nil {
		t.Fatal(err)
	}
	upd := next()
	var n struct {
		Method string `json:"method"`
		Params struct {
			URI  string         `json:"uri"`
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	if err := json.Unmarshal(upd, &n); err != nil || n.Method != "notifications/resources/updated" || n.Params.URI != connector.URIDraftsHeld ||
		n.Params.Meta["io.modelcontextprotocol/subscriptionId"] != float64(7) {
		t.Fatalf("update %s, want resources/updated for %s with subscriptionId 7", upd, connector.URIDraftsHeld)
	}
	if err := s.check("ResourceUpdatedNotification", upd); err != nil {
		t.Errorf("update: %v", err)
	}
}

// TestAdvertisedVersionsAgree: server/discover over stdio and HTTP, the
// HTTP refusal of an unknown MCP-Protocol-Version header, and the
// -32022 refusal of an unknown 2026-era version all list the same
// versions, 2026-07-28 first.
func TestAdvertisedVersionsAgree(t *testing.T) {
	h := newTestHost(t, nil)
	c := newConnector(t, "versions", h)
	want := mcp.SupportedProtocolVersions()
	if want[0] != "2026-07-28" {
		t.Fatalf("the SDK's versions %v do not start with 2026-07-28", want)
	}
	discovered := func(what string, msg json.RawMessage) {
		t.Helper()
		var d struct {
			Result struct {
				SupportedVersions []string `json:"supportedVersions"`
			} `json:"result"`
		}
		if err := json.Unmarshal(msg, &d); err != nil || !slices.Equal(d.Result.SupportedVersions, want) {
			t.Errorf("%s: server/discover lists %v, want %v (%s)", what, d.Result.SupportedVersions, want, msg)
		}
	}
	stdio := startRawStdio(t, c.srv, 1<<20)
	discovered("stdio", with2026Meta(stdio.call)(2, "server/discover", nil))
	ts := serveHTTP(t, c)
	r := &rawHTTP{t: t, url: ts.URL, version: "2026-07-28"}
	discovered("http", with2026Meta(r.call)(2, "server/discover", nil))

	// A header no version matches: HTTP 400 naming the versions.
	bad := &rawHTTP{t: t, url: ts.URL, version: "1999-01-01"}
	resp := bad.post(initBody, nil)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	_, list, _ := strings.Cut(string(b), "supported versions: ")
	list, _, _ = strings.Cut(list, ")")
	if resp.StatusCode != http.StatusBadRequest || !slices.Equal(strings.Split(list, ","), want) {
		t.Errorf("unknown version header: HTTP %d %q, want 400 listing %v", resp.StatusCode, b, want)
	}

	// A later version than any known: -32022 with data.supported.
	later := &rawHTTP{t: t, url: ts.URL, version: "2099-01-01"}
	msg := later.call(3, "tools/list", map[string]any{"_meta": map[string]any{"io.modelcontextprotocol/protocolVersion": "2099-01-01", "io.modelcontextprotocol/clientCapabilities": map[string]any{}}})
	var e struct {
		Error struct {
			Code int64 `json:"code"`
			Data struct {
				Supported []string `json:"supported"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg, &e); err != nil || e.Error.Code != -32022 || !slices.Equal(e.Error.Data.Supported, want) {
		t.Errorf("unknown 2026-era version: %s, want -32022 listing %v", msg, want)
	}
}

// TestHTTPConversations pins what stands in for the MCP session in
// 2026-07-28 over HTTP: the conversation its client names with the
// Agent-Protocols-Conversation header, else the bearer token's default
// one. The presented head (§4.2) of a read lasts to a later write of the
// same conversation, so a message written after the room moved is held,
// while a conversation that read nothing writes against the current
// head; a claim (§4.3) hides an item from other conversations only.
func TestHTTPConversations(t *testing.T) {
	alice, bob, roomID := speakers(t, newTestHost(t, &adphost.Options{RateLimits: adphost.Unlimited()}))
	ts := serveHTTP(t, bob)
	conv := func(name string) rpcCaller {
		r := &rawHTTP{t: t, url: ts.URL, version: "2026-07-28", conversation: name}
		return with2026Meta(r.call)
	}
	tool := func(call rpcCaller, name string, args map[string]any) map[string]any {
		t.Helper()
		msg := call(1, "tools/call", map[string]any{"name": connector.ToolPrefix + name, "arguments": args})
		var m struct {
			Result struct {
				StructuredContent map[string]any `json:"structuredContent"`
			} `json:"result"`
		}
		if err := json.Unmarshal(msg, &m); err != nil || m.Result.StructuredContent == nil {
			t.Fatalf("%s: %s", name, msg)
		}
		return m.Result.StructuredContent
	}

	// Presented heads: the default conversation reads, alice moves the
	// room, the default conversation's write without a base is held.
	// Another conversation, which read nothing, sends against the head.
	tool(conv(""), "room_state", map[string]any{"room_id": roomID, "refresh": true})
	alice.call("room_send_message", map[string]any{"room_id": roomID, "content": "meanwhile"})
	bob.call("room_timeline", map[string]any{"room_id": roomID, "refresh": true}) // bob's connector verifies the new record
	if res := tool(conv(""), "room_send_message", map[string]any{"room_id": roomID, "content": "reply to what I saw"}); res["status"] != "held" {
		t.Errorf("default conversation's write after the room moved: %v, want held", res["status"])
	}
	if res := tool(conv("fresh"), "room_send_message", map[string]any{"room_id": roomID, "content": "first word"}); res["status"] != "sent" {
		t.Errorf("a conversation that read nothing: %v, want sent", res["status"])
	}

	// Claims: conversation "a" claims the mention; "b" and the default
	// conversation do not get it; "a" does again.
	mentionInbox(t, alice, bob, roomID)
	next := func(call rpcCaller) int {
		return len(tool(call, "inbox_next", map[string]any{"room_id": roomID, "kinds": []string{"room.mention"}, "claim": true})["items"].([]any))
	}
	if n := next(conv("a")); n != 1 {
		t.Fatalf("conversation a: %d items, want the mention", n)
	}
	if next(conv("b")) != 0 || next(conv("")) != 0 {
		t.Errorf("an item claimed by conversation a was handed to another conversation")
	}
	if n := next(conv("a")); n != 1 {
		t.Errorf("conversation a no longer sees its own claim")
	}

	// A malformed conversation name is refused before anything runs.
	r := &rawHTTP{t: t, url: ts.URL, version: "2026-07-28", conversation: "no spaces"}
	resp := r.post2026(5, "tools/list", nil)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `"code":-32600`) {
		t.Errorf("malformed Agent-Protocols-Conversation: HTTP %d %s, want 400 with -32600", resp.StatusCode, b)
	}
}

// TestHTTPConversationEndsWithListenStream: a 2026-07-28 conversation
// that had a subscriptions/listen stream open and has no stream left
// (its client went away; there is no DELETE in 2026-07-28) has its
// claims released after the grace, as a session whose GET stream closed.
func TestHTTPConversationEndsWithListenStream(t *testing.T) {
	_, bob, roomID := mentioned(t, newTestHost(t, nil))
	bob.http.Grace = 200 * time.Millisecond

	r := &rawHTTP{t: t, url: serveHTTP(t, bob).URL, version: "2026-07-28", conversation: "agent-1"}
	listen := r.post2026(1, "subscriptions/listen", map[string]any{"notifications": map[string]any{"resourceSubscriptions": []string{connector.URIInboxPending}}})
	if listen.StatusCode != http.StatusOK {
		t.Fatalf("listen: HTTP %d", listen.StatusCode)
	}
	msg := with2026Meta(r.call)(2, "tools/call", map[string]any{"name": connector.ToolPrefix + "inbox_next",
		"arguments": map[string]any{"room_id": roomID, "kinds": []string{"room.mention"}, "claim": true}})
	if !strings.Contains(string(msg), "room.mention") {
		t.Fatalf("claim: %s", msg)
	}
	items := func() int {
		res := bob.call("inbox_next", map[string]any{"room_id": roomID, "kinds": []string{"room.mention"}})
		return len(res["items"].([]any))
	}
	if items() != 0 {
		t.Fatal("a claimed item was handed to another session")
	}
	listen.Body.Close() // the client goes away
	// A long-poll of another session wakes when the released claim makes
	// the item actionable again.
	res := bob.call("inbox_next", map[string]any{"room_id": roomID, "kinds": []string{"room.mention"}, "wait_ms": 10000})
	if n := len(res["items"].([]any)); n != 1 {
		t.Fatalf("the claim outlived the conversation's last stream: %d items after 10 s", n)
	}
}

// TestConversationsBounded: the server keeps at most MaxConversations
// 2026-07-28 conversations over HTTP; a new one ends the least recently
// used, whose claims are released.
func TestConversationsBounded(t *testing.T) {
	h := newTestHost(t, nil)
	alice := newConnector(t, "alice", h)
	bob := newConnectorWith(t, "bob", &connectorOptions{hosts: []connector.HostConfig{{Host: h.url, Label: "adptest"}},
		server: &mcptools.Options{MaxConversations: 2}})
	roomID := createRoom(t, alice, h, "public")
	bob.call("room_open", map[string]any{"host": h.url, "room_id": roomID})
	bob.call("room_join", map[string]any{"room_id": roomID, "role": "speaker"})
	alice.call("room_state", map[string]any{"room_id": roomID, "refresh": true})
	mentionInbox(t, alice, bob, roomID)

	ts := serveHTTP(t, bob)
	call := func(conv, tool string, args map[string]any) string {
		r := &rawHTTP{t: t, url: ts.URL, version: "2026-07-28", conversation: conv}
		return string(with2026Meta(r.call)(1, "tools/call", map[string]any{"name": connector.ToolPrefix + tool, "arguments": args}))
	}
	claim := map[string]any{"room_id": roomID, "kinds": []string{"room.mention"}, "claim": true}
	if !strings.Contains(call("c0", "inbox_next", claim), "room.mention") {
		t.Fatal("conversation c0 did not claim the mention")
	}
	if strings.Contains(call("c1", "inbox_next", claim), "room.mention") {
		t.Fatal("an item claimed by c0 was handed to c1")
	}
	call("c2", "identity_current", nil) // a third conversation: c0, the least recently used, ends
	if !strings.Contains(call("c1", "inbox_next", claim), "room.mention") {
		t.Fatal("the ended conversation's claim still hides the item")
	}
}
