package main

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentprotocols/go-sdk/cmd/agent-protocols-connector/internal/acp"
	"github.com/agentprotocols/go-sdk/connector"
)

// TestACPChainStateless runs `connector acp` under a conductor that
// speaks the proxy/* revision of @agentclientprotocol/sdk 2.4:
// proxy/initialize answered with the agent's own result, session/new
// gaining exactly one acp server, and stateless mcp/message {serverId,
// requestId} carrying MCP 2026-07-28 requests (server/discover,
// tools/list, a read tool, a signed write), answered with the outcome
// carrier; the serverId stands in for the MCP session (presented heads
// and inbox claims per serverId); errors are the binding's.
func TestACPChainStateless(t *testing.T) {
	h := newTestHost(t, nil)
	cfg, key := acpConfig(t, h)
	_, whoami, _ := runCmd(t, nil, "whoami", "--config", cfg)
	agentID, _, _ := strings.Cut(whoami, "\n")
	ch := startACP(t, cfg, acp.Stateless)
	initializeChain(t, ch, true)

	stdio := map[string]any{"name": "other", "command": "/bin/other-mcp", "args": []any{}, "env": []any{}}
	servers := newSession(t, ch, 2, "session/new", map[string]any{"cwd": "/home/me/project", "mcpServers": []any{stdio}, "_meta": map[string]any{"trace": "s1"}}, "sess-1")
	acps := acpServers(servers)
	if len(servers) != 2 || len(acps) != 1 || acps[0]["name"] != "agent-protocols" || len(acps[0]) != 3 || !reflect.DeepEqual(servers[0], stdio) {
		t.Fatalf("session/new mcpServers: %v", servers)
	}
	a := ch.statelessServer(acps[0]["serverId"].(string))

	// server/discover offers the one MCP version the binding carries.
	oc := a.call("server/discover", nil)
	var disc struct {
		SupportedVersions []string `json:"supportedVersions"`
	}
	if oc.Error != nil || json.Unmarshal(oc.Result, &disc) != nil || !reflect.DeepEqual(disc.SupportedVersions, []string{"2026-07-28"}) {
		t.Fatalf("server/discover: %s %v", oc.Result, oc.Error)
	}
	oc = a.call("tools/list", nil)
	var tools mcp.ListToolsResult
	if oc.Error != nil || json.Unmarshal(oc.Result, &tools) != nil || len(tools.Tools) != 27 {
		t.Fatalf("tools/list: %.200s %v", oc.Result, oc.Error)
	}
	if got := a.tool("identity_current", map[string]any{}); got["agent_id"] != agentID {
		t.Fatalf("identity_current: %v", got)
	}
	now := time.Now().UnixMilli()
	created := a.tool("room_create", map[string]any{
		"host": h.url, "topic": "Over stateless ACP", "visibility": "public",
		"start_time": now - 60_000, "end_time": now + 3_600_000, "agenda": "Test.", "tags": []string{"acp"},
	})
	roomID, _ := get(created, "room.room_id").(string)
	if roomID == "" || get(created, "envelope") == nil {
		t.Fatalf("room_create over stateless ACP: %v", created)
	}
	// An inner MCP error is an outcome, not an outer error.
	if oc := a.call("tools/call", map[string]any{"name": "nope", "arguments": map[string]any{}}); oc.Error == nil || oc.Error.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("unknown tool: %+v", oc)
	}

	// subscriptions/listen: its notifications arrive as mcp/message
	// notifications naming its serverId and requestId, and their
	// subscriptionId is that requestId, which the agent knows.
	ridL := a.requestID()
	listenDone := make(chan *jsonrpc.Response, 2)
	outerL := a.callAsync(ridL, "subscriptions/listen", map[string]any{"notifications": map[string]any{
		"resourceSubscriptions": []string{connector.RoomURI(roomID), connector.RoomURI(roomID, "timeline")},
	}}, func(r *jsonrpc.Response) { listenDone <- r })
	ack := waitNote(t, a, "notifications/subscriptions/acknowledged")
	if ack.RequestID != ridL || subscriptionID(t, ack.Params) != ridL {
		t.Fatalf("acknowledgement: %+v %s", ack, ack.Params)
	}
	// A second request under an active requestId is refused.
	dup := make(chan *jsonrpc.Response, 1)
	a.callAsync(ridL, "tools/list", nil, func(r *jsonrpc.Response) { dup <- r })
	wantRPCError(t, "duplicate active requestId", waitResp(t, dup), jsonrpc.CodeInvalidParams)

	// A second session's server is a second MCP session.
	servers = newSession(t, ch, 3, "session/new", map[string]any{"cwd": "/home/me/project", "mcpServers": []any{}}, "sess-2")
	acpsB := acpServers(servers)
	if len(servers) != 1 || len(acpsB) != 1 || acpsB[0]["serverId"] == acps[0]["serverId"] {
		t.Fatalf("second session/new mcpServers: %v", servers)
	}
	b := ch.statelessServer(acpsB[0]["serverId"].(string))

	bob := newConnector(t, "bob", h)
	bob.call("room_open", map[string]any{"host": h.url, "room_id": roomID})
	bob.call("room_join", map[string]any{"room_id": roomID, "role": "speaker"})
	upd := waitNote(t, a, "notifications/resources/updated")
	if upd.RequestID != ridL || subscriptionID(t, upd.Params) != ridL {
		t.Fatalf("update: %+v %s", upd, upd.Params)
	}

	// Presented heads are per serverId, and last across requests: A and
	// B read, bob writes, B re-reads and may write; A, whose presented
	// head is stale, is held.
	presentedHeadsApart(t, bob, roomID, map[string]any{"room_id": roomID, "content": "news", "mentions": []string{agentID}}, a.tool, b.tool)
	// Inbox claims are per serverId: A claims the mention; B is not
	// handed it; A still is.
	mention := map[string]any{"room_id": roomID, "kinds": []string{"room.mention"}}
	claim := map[string]any{"room_id": roomID, "kinds": []string{"room.mention"}, "claim": true, "wait_ms": 2000}
	deadline := time.Now().Add(20 * time.Second)
	for len(a.tool("inbox_next", claim)["items"].([]any)) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("no mention in the inbox")
		}
	}
	if items := b.tool("inbox_next", mention)["items"].([]any); len(items) != 0 {
		t.Fatalf("serverId B was handed A's claimed item: %v", items)
	}
	if items := a.tool("inbox_next", mention)["items"].([]any); len(items) != 1 {
		t.Fatalf("serverId A lost its claim between requests: %v", items)
	}

	// Cancelling the outer request ends the listen: -32800, once.
	ch.send(map[string]any{"jsonrpc": "2.0", "method": "$/cancel_request", "params": map[string]any{"requestId": outerL}})
	wantRPCError(t, "cancelled subscriptions/listen", waitResp(t, listenDone), -32800)
	if oc := a.call("tools/list", nil); oc.Error != nil {
		t.Fatalf("after cancel: %v", oc.Error)
	}
	select {
	case r := <-listenDone:
		t.Fatalf("a second answer to the cancelled listen: %+v", r)
	default:
	}

	// The binding's errors.
	unknown := ch.agentRequest("mcp/message", a.message("r-x", "tools/list", nil).withServer("nobody:1"))
	wantRPCError(t, "unknown serverId", unknown, -33001)
	noMeta := ch.agentRequest("mcp/message", statelessMCPMessage{ServerID: a.serverID, RequestID: "r-nometa", Method: "tools/list"})
	if oc := decodeOutcome(t, noMeta.Result); noMeta.Error != nil || oc.Error == nil || oc.Error.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("no _meta protocol version: %+v", noMeta)
	}
	old := a.message("r-old", "tools/list", nil)
	old.Params = bytes.Replace(old.Params, []byte(`"2026-07-28"`), []byte(`"2025-11-25"`), 1)
	r := ch.agentRequest("mcp/message", old)
	if oc := decodeOutcome(t, r.Result); r.Error != nil || oc.Error == nil || oc.Error.Code != -32022 || string(oc.Error.Data) != `{"supported":["2026-07-28"],"requested":"2025-11-25"}` {
		t.Fatalf("2025-11-25 over stateless MCP-over-ACP: %+v %s", r, r.Result)
	}
	wantRPCError(t, "requestId not a string", ch.agentRequest("mcp/message", map[string]any{"serverId": a.serverID, "requestId": 7, "method": "tools/list"}), jsonrpc.CodeInvalidParams)
	wantRPCError(t, "positional inner params", ch.agentRequest("mcp/message", map[string]any{"serverId": a.serverID, "requestId": "r-p", "method": "tools/list", "params": []any{1}}), jsonrpc.CodeInvalidParams)
	wantRPCError(t, "duplicate member", ch.agentRequestRaw(`{"serverId":"nobody:1","serverId":`+quoteJSON(a.serverID)+`,"requestId":"r-d","method":"tools/list"}`), jsonrpc.CodeInvalidParams)
	wantRPCError(t, "mcp/connect under proxy/*", ch.agentRequest("mcp/connect", map[string]any{"serverId": a.serverID}), jsonrpc.CodeMethodNotFound)
	for i, m := range []string{"_proxy/successor", "_proxy/initialize", "proxy/unknown"} {
		ch.clientRequest(20+i, m, map[string]any{"method": "session/list", "params": map[string]any{}})
		if w := ch.next(); w.resp() == nil || w.resp().ID.Raw() != int64(20+i) {
			t.Fatalf("%s: %s", m, w.raw)
		} else {
			wantRPCError(t, m, w.resp(), jsonrpc.CodeMethodNotFound)
		}
	}

	ch.stop()
	assertKeyNeverSent(t, ch, key)
}

// waitNote is the next mcp/message notification of method for a.
func waitNote(t *testing.T, a *statelessAgent, method string) statelessMCPMessage {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case n := <-a.notes:
			if n.ServerID != a.serverID {
				t.Fatalf("notification for %q routed to %q", n.ServerID, a.serverID)
			}
			if n.Method == method {
				return n
			}
		case <-deadline:
			t.Fatalf("no %s over mcp/message\nstderr:\n%s", method, a.ch.stderr.String())
		}
	}
}

func waitResp(t *testing.T, c chan *jsonrpc.Response) *jsonrpc.Response {
	t.Helper()
	select {
	case r := <-c:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("no answer")
		return nil
	}
}

// subscriptionID is the subscriptionId in an inner notification's _meta.
func subscriptionID(t *testing.T, params json.RawMessage) any {
	t.Helper()
	var p struct {
		Meta map[string]any `json:"_meta"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		t.Fatalf("%s: %v", params, err)
	}
	return p.Meta["io.modelcontextprotocol/subscriptionId"]
}

// withServer is m addressed to serverID.
func (m statelessMCPMessage) withServer(serverID string) statelessMCPMessage {
	m.ServerID = serverID
	return m
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestACPConnectedSubscriptionID: in the _proxy/* revision, a
// connection may speak MCP 2026-07-28, and the subscriptionId of its
// subscriptions/listen (in the acknowledgement and the result) is the id
// the agent knows the request by, its outer id, not the proxy's inner
// one; cancelling the outer request ends the listen with -32800.
func TestACPConnectedSubscriptionID(t *testing.T) {
	h := newTestHost(t, nil)
	cfg, _ := acpConfig(t, h)
	ch := startACP(t, cfg, acp.Connected)
	initializeChain(t, ch, true)
	sid := acpServers(newSession(t, ch, 2, "session/new", map[string]any{"cwd": "/", "mcpServers": []any{}}, "s"))[0]["serverId"]
	r := ch.agentRequest("mcp/connect", map[string]any{"serverId": sid})
	var conn struct {
		ConnectionID string `json:"connectionId"`
	}
	if r.Error != nil || strictUnmarshal(r.Result, &conn) != nil {
		t.Fatalf("mcp/connect: %+v", r)
	}
	params, _ := json.Marshal(map[string]any{"notifications": map[string]any{"resourceSubscriptions": []string{connector.URIRooms}}, "_meta": mcp2026Meta()})
	done := make(chan *jsonrpc.Response, 2)
	outer := ch.agentRequestAsync("mcp/message", connectedMCPMessage{ConnectionID: conn.ConnectionID, Method: "subscriptions/listen", Params: params}, func(r *jsonrpc.Response) { done <- r })
	w := ch.next()
	var ack connectedMCPMessage
	if w.req() == nil || w.req().IsCall() || w.inner != "mcp/message" || strictUnmarshal(w.params, &ack) != nil ||
		ack.ConnectionID != conn.ConnectionID || ack.Method != "notifications/subscriptions/acknowledged" {
		t.Fatalf("acknowledgement: %s", w.raw)
	}
	if got := subscriptionID(t, ack.Params); got != outer {
		t.Fatalf("subscriptionId %v, want the outer id %q", got, outer)
	}
	ch.send(map[string]any{"jsonrpc": "2.0", "method": "$/cancel_request", "params": map[string]any{"requestId": outer}})
	wantRPCError(t, "cancelled subscriptions/listen", waitResp(t, done), -32800)

	// A listen to nothing ends at once; its result names it the same way.
	params, _ = json.Marshal(map[string]any{"notifications": map[string]any{}, "_meta": mcp2026Meta()})
	outer = ch.agentRequestAsync("mcp/message", connectedMCPMessage{ConnectionID: conn.ConnectionID, Method: "subscriptions/listen", Params: params}, func(r *jsonrpc.Response) { done <- r })
	ch.next() // its acknowledgement
	if r := waitResp(t, done); r.Error != nil || subscriptionID(t, r.Result) != outer {
		t.Fatalf("listen result: %s, want subscriptionId %q", r.Result, outer)
	}
	ch.stop()
}
