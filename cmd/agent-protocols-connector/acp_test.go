package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentprotocols/go-sdk/cmd/agent-protocols-connector/internal/acp"
	"github.com/agentprotocols/go-sdk/connector"
)

func jsonEq(t *testing.T, what string, got json.RawMessage, want any) {
	t.Helper()
	var g, w any
	wb, _ := json.Marshal(want)
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v in %s", what, err, got)
	}
	json.Unmarshal(wb, &w)
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("%s:\n got %s\nwant %s", what, got, wb)
	}
}

// initializeChain runs the revision's proxy initialize through the proxy
// with the agent's answer advertising (or not) mcpCapabilities.acp: the
// inner initialize goes out in the revision's wrapper with the client's
// params, and the answer is the agent's own result, protocolVersion
// included.
func initializeChain(t *testing.T, ch *acpChain, acp bool) {
	t.Helper()
	initParams := map[string]any{
		"protocolVersion":    1,
		"clientCapabilities": map[string]any{"fs": map[string]any{"readTextFile": true, "writeTextFile": false}, "terminal": false},
		"clientInfo":         map[string]any{"name": "scripted-editor", "version": "1"},
		"_meta":              map[string]any{"trace": "init"},
	}
	ch.clientRequest(1, ch.rev.ProxyInitialize(), initParams)
	fwd := ch.next()
	r := fwd.req()
	if r == nil || !r.IsCall() || r.Method != ch.rev.ProxySuccessor() || fwd.inner != "initialize" {
		t.Fatalf("%s was not forwarded as %s initialize: %s", ch.rev.ProxyInitialize(), ch.rev.ProxySuccessor(), fwd.raw)
	}
	jsonEq(t, "inner initialize", fwd.params, initParams)
	result := map[string]any{
		"protocolVersion":   1,
		"agentCapabilities": map[string]any{"loadSession": true, "mcpCapabilities": map[string]any{"http": false, "sse": false, "acp": acp}},
		"authMethods":       []any{},
		"agentInfo":         map[string]any{"name": "scripted-agent", "version": "1"},
	}
	ch.send(map[string]any{"jsonrpc": "2.0", "id": r.ID.Raw(), "result": result})
	resp := ch.next().resp()
	if resp == nil || resp.ID.Raw() != int64(1) || resp.Error != nil {
		t.Fatalf("initialize answer: %+v", resp)
	}
	jsonEq(t, "initialize result", resp.Result, result)
}

// newSession sends session/new (or another setup method) and answers it
// as the agent; it returns the mcpServers the agent saw.
func newSession(t *testing.T, ch *acpChain, id int, method string, params map[string]any, sessionID string) []map[string]any {
	t.Helper()
	ch.clientRequest(id, method, params)
	fwd := ch.next()
	r := fwd.req()
	if r == nil || !r.IsCall() || fwd.inner != method {
		t.Fatalf("%s not forwarded: %s", method, fwd.raw)
	}
	var inner struct {
		MCPServers []map[string]any `json:"mcpServers"`
		Meta       map[string]any   `json:"_meta"`
		Cwd        string           `json:"cwd"`
	}
	if err := json.Unmarshal(fwd.params, &inner); err != nil {
		t.Fatal(err)
	}
	if fmtJSON(inner.Meta) != fmtJSON(params["_meta"]) && params["_meta"] != nil || inner.Cwd != params["cwd"] {
		t.Fatalf("%s: _meta or cwd changed: %s", method, fwd.params)
	}
	ch.send(map[string]any{"jsonrpc": "2.0", "id": r.ID.Raw(), "result": map[string]any{"sessionId": sessionID}})
	resp := ch.next().resp()
	if resp == nil || resp.ID.Raw() != int64(id) {
		t.Fatalf("%s answer: %+v", method, resp)
	}
	jsonEq(t, method+" result", resp.Result, map[string]any{"sessionId": sessionID})
	return inner.MCPServers
}

// acpServers returns the {"type":"acp"} entries of servers.
func acpServers(servers []map[string]any) []map[string]any {
	var out []map[string]any
	for _, s := range servers {
		if s["type"] == "acp" {
			out = append(out, s)
		}
	}
	return out
}

func wantRPCError(t *testing.T, what string, r *jsonrpc.Response, code int64) {
	t.Helper()
	var je *jsonrpc.Error
	if r == nil || !errors.As(r.Error, &je) || je.Code != code {
		t.Fatalf("%s: want JSON-RPC error %d, got %+v", what, code, r)
	}
}

// TestACPChain runs `connector acp` between a scripted conductor/client
// and a scripted agent with an MCP client: initialize, session setup
// gaining exactly one acp server, forwarding both ways, MCP-over-ACP with
// tools/list, a signed tools/call against an adphost test server, a
// subscription whose update arrives as an outer mcp/message
// notification, two connections keeping separate sessions, disconnect,
// and errors for unknown ids and malformed messages.
func TestACPChain(t *testing.T) {
	h := newTestHost(t, nil)
	cfg, key := acpConfig(t, h)
	ch := startACP(t, cfg, acp.Connected)
	initializeChain(t, ch, true)

	// session/new gains exactly one acp server; the client's own servers
	// and _meta are kept.
	stdio := map[string]any{"name": "other", "command": "/bin/other-mcp", "args": []any{}, "env": []any{}}
	params := map[string]any{"cwd": "/home/me/project", "mcpServers": []any{stdio}, "_meta": map[string]any{"trace": "s1"}}
	servers := newSession(t, ch, 2, "session/new", params, "sess-1")
	acps := acpServers(servers)
	if len(servers) != 2 || len(acps) != 1 || acps[0]["name"] != "agent-protocols" || !reflect.DeepEqual(servers[0], stdio) {
		t.Fatalf("session/new mcpServers: %v", servers)
	}
	serverID, _ := acps[0]["serverId"].(string)
	if serverID == "" || len(acps[0]) != 3 {
		t.Fatalf("acp server declaration: %v", acps[0])
	}
	// Every session setup gets its own, never reused server id.
	load := newSession(t, ch, 3, "session/load", map[string]any{"cwd": "/home/me/project", "sessionId": "sess-0", "mcpServers": []any{}}, "sess-0")
	if a := acpServers(load); len(a) != 1 || a[0]["serverId"] == serverID {
		t.Fatalf("session/load mcpServers: %v", load)
	}

	// Client notifications are forwarded wrapped, without an id.
	ch.send(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": "sess-1"}})
	if w := ch.next(); w.req() == nil || w.req().IsCall() || w.inner != "session/cancel" {
		t.Fatalf("session/cancel: %s", w.raw)
	}
	// The agent's messages arrive wrapped and go to the client unwrapped:
	// a notification as it is, a request under the proxy's id, whose
	// answer returns to the agent's id.
	update := map[string]any{"sessionId": "sess-1", "update": map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": "hi"}}}
	ch.agentNotify("session/update", update)
	if w := ch.next(); w.req() == nil || w.req().Method != "session/update" || w.req().IsCall() {
		t.Fatalf("session/update: %s", w.raw)
	} else {
		jsonEq(t, "session/update params", w.req().Params, update)
	}
	perm := map[string]any{"sessionId": "sess-1", "toolCall": map[string]any{"toolCallId": "c1"}, "options": []any{map[string]any{"optionId": "ok", "name": "Allow", "kind": "allow_once"}}}
	permAnswer := make(chan *jsonrpc.Response, 1)
	ch.agentRequestAsync("session/request_permission", perm, func(r *jsonrpc.Response) { permAnswer <- r })
	w := ch.next()
	if w.req() == nil || !w.req().IsCall() || w.req().Method != "session/request_permission" {
		t.Fatalf("session/request_permission: %s", w.raw)
	}
	permResult := map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "ok"}}
	ch.send(map[string]any{"jsonrpc": "2.0", "id": w.req().ID.Raw(), "result": permResult})
	select {
	case r := <-permAnswer:
		jsonEq(t, "permission answer", r.Result, permResult)
	case <-time.After(20 * time.Second):
		t.Fatal("no permission answer")
	}

	// MCP over ACP: connect, initialize, tools/list.
	ctx := context.Background()
	cidA, csA, aA := ch.connectMCP(serverID)
	tools, err := csA.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 27 {
		t.Fatalf("tools/list: %v (%d tools)", err, len(tools.Tools))
	}
	for _, tl := range tools.Tools {
		for _, bad := range []string{"key", "token", "allowlist", "config", "sign_bytes"} {
			if strings.Contains(tl.Name, bad) {
				t.Errorf("tool %s reaches %s", tl.Name, bad)
			}
		}
	}
	// A tools/call that signs and submits against the host.
	now := time.Now().UnixMilli()
	res, err := csA.CallTool(ctx, &mcp.CallToolParams{Name: connector.ToolPrefix + "room_create", Arguments: map[string]any{
		"host": h.url, "topic": "Over ACP", "visibility": "public",
		"start_time": now - 60_000, "end_time": now + 3_600_000, "agenda": "Test.", "tags": []string{"acp"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	created := structured(t, res)
	roomID, _ := get(created, "room.room_id").(string)
	if res.IsError || roomID == "" || get(created, "envelope") == nil {
		t.Fatalf("room_create over ACP: %v", created)
	}
	// A subscription on connection A; the room's updates arrive as outer
	// mcp/message notifications.
	for _, uri := range []string{connector.RoomURI(roomID), connector.RoomURI(roomID, "timeline"), connector.RoomURI(roomID, "members")} {
		if err := csA.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
	}

	// A second connection to the same server is a separate MCP session:
	// its own presented head (and no subscription of A's).
	cidB, csB, aB := ch.connectMCP(serverID)
	if cidB == cidA {
		t.Fatal("mcp/connect reused a connection id")
	}
	bob := newConnector(t, "bob", h)
	bob.call("room_open", map[string]any{"host": h.url, "room_id": roomID})
	bob.call("room_join", map[string]any{"room_id": roomID, "role": "speaker"})
	call := func(cs *mcp.ClientSession, tool string, args map[string]any) map[string]any {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: connector.ToolPrefix + tool, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", tool, err, res)
		}
		return structured(t, res)
	}
	select {
	case uri := <-aA.updates:
		if !strings.HasPrefix(uri, "agent-protocols://") || aA.outerNotifications() == 0 {
			t.Fatalf("update %q (%d outer notifications)", uri, aA.outerNotifications())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no notifications/resources/updated over mcp/message")
	}

	presentedHeadsApart(t, bob, roomID, map[string]any{"room_id": roomID, "content": "news"},
		func(tool string, args map[string]any) map[string]any { return call(csA, tool, args) },
		func(tool string, args map[string]any) map[string]any { return call(csB, tool, args) })
	if n := len(aB.updates); n != 0 || aB.outerNotifications() != 0 {
		t.Fatalf("connection B got %d updates without subscribing", n)
	}

	// Nothing through mcp/message reaches the key, tokens or allowlist.
	if r, err := csB.CallTool(ctx, &mcp.CallToolParams{Name: connector.ToolPrefix + "hosts_add", Arguments: map[string]any{"host": "https://evil.example"}}); err == nil && !r.IsError {
		t.Fatal("an unknown allowlist tool was accepted")
	}
	for _, uri := range []string{"file://" + cfg, "agent-protocols://keys", "agent-protocols://config"} {
		if _, err := csB.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err == nil {
			t.Fatalf("resources/read %s accepted", uri)
		}
	}

	// mcp/disconnect releases A: {} and then A's id is refused.
	r := ch.agentRequest("mcp/disconnect", map[string]any{"connectionId": cidA})
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	jsonEq(t, "mcp/disconnect result", r.Result, map[string]any{})
	aA.Close()
	csA.Close()
	wantRPCError(t, "mcp/message on a closed connection", ch.agentRequest("mcp/message", map[string]any{"connectionId": cidA, "method": "tools/list"}), jsonrpc.CodeInvalidParams)
	wantRPCError(t, "second mcp/disconnect", ch.agentRequest("mcp/disconnect", map[string]any{"connectionId": cidA}), jsonrpc.CodeInvalidParams)
	// B still works.
	if tl, err := csB.ListTools(ctx, nil); err != nil || len(tl.Tools) != 27 {
		t.Fatalf("connection B after A's disconnect: %v", err)
	}

	// Unknown ids and malformed messages get JSON-RPC errors.
	wantRPCError(t, "unknown serverId", ch.agentRequest("mcp/connect", map[string]any{"serverId": "nobody:1"}), jsonrpc.CodeInvalidParams)
	wantRPCError(t, "serverId not a string", ch.agentRequest("mcp/connect", map[string]any{"serverId": 7}), jsonrpc.CodeInvalidParams)
	wantRPCError(t, "unknown connectionId", ch.agentRequest("mcp/message", map[string]any{"connectionId": "nobody:1", "method": "tools/list"}), jsonrpc.CodeInvalidParams)
	wantRPCError(t, "positional inner params", ch.agentRequest("mcp/message", map[string]any{"connectionId": cidB, "method": "tools/list", "params": []any{1}}), jsonrpc.CodeInvalidParams)
	wantRPCError(t, "no inner method", ch.agentRequest("mcp/message", map[string]any{"connectionId": cidB}), jsonrpc.CodeInvalidParams)
	wantRPCError(t, "mcp/connect without params", ch.agentRequest("mcp/connect", nil), jsonrpc.CodeInvalidParams)

	ch.send(map[string]any{"jsonrpc": "2.0", "id": "bad-1", "method": ch.rev.ProxySuccessor(), "params": map[string]any{"params": map[string]any{}}})
	ch.mu.Lock()
	ch.methods["bad-1"] = ""
	ch.mu.Unlock()
	if w := ch.next(); w.resp() == nil || w.resp().ID.Raw() != "bad-1" {
		t.Fatalf("_proxy/successor without method: %s", w.raw)
	} else {
		wantRPCError(t, "_proxy/successor without method", w.resp(), jsonrpc.CodeInvalidParams)
	}
	ch.sendRaw([]byte(`{"jsonrpc":"2.0","id":9,"method":`))
	if w := ch.next(); !bytes.Contains(w.raw, []byte(`"id":null`)) {
		t.Fatalf("broken JSON: %s", w.raw)
	} else {
		wantRPCError(t, "broken JSON", w.resp(), jsonrpc.CodeParseError)
	}
	ch.sendRaw([]byte(`{"jsonrpc":"1.0","id":10,"method":"session/new"}`))
	if w := ch.next(); w.resp() == nil || w.resp().ID.Raw() != int64(10) {
		t.Fatalf("wrong jsonrpc version: %s", w.raw)
	}
	ch.clientRequest(11, "initialize", map[string]any{"protocolVersion": 1})
	if w := ch.next(); w.resp() == nil || w.resp().ID.Raw() != int64(11) {
		t.Fatalf("plain initialize: %s", w.raw)
	} else {
		wantRPCError(t, "plain initialize", w.resp(), jsonrpc.CodeInvalidRequest)
	}

	csB.Close()
	aB.Close()
	ch.stop()
	assertKeyNeverSent(t, ch, key)
}

// presentedHeadsApart checks that two MCP sessions, a and b (tool
// callers), keep their own presented heads (§4.2), and keep them across
// calls: both read the room, bob writes msg, b re-reads and its write is
// sent; a, whose presented head is now stale, is held.
func presentedHeadsApart(t *testing.T, bob *agentConn, roomID string, msg map[string]any, a, b func(tool string, args map[string]any) map[string]any) {
	t.Helper()
	a("room_state", map[string]any{"room_id": roomID, "refresh": true})
	b("room_state", map[string]any{"room_id": roomID, "refresh": true})
	bob.call("room_send_message", msg)
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(fmtJSON(b("room_timeline", map[string]any{"room_id": roomID, "refresh": true})), fmt.Sprint(msg["content"])) {
		if time.Now().After(deadline) {
			t.Fatal("bob's message never synced")
		}
	}
	if r := b("room_send_message", map[string]any{"room_id": roomID, "content": "seen it"}); r["status"] != "sent" {
		t.Fatalf("the session that re-read: %v", r)
	}
	if r := a("room_send_message", map[string]any{"room_id": roomID, "content": "stale view"}); r["status"] != "held" {
		t.Fatalf("the session that did not re-read: want held, got %v", r)
	}
}

// assertKeyNeverSent checks that the key never crossed the wire: neither
// the seed (base64url, as the key file holds it) nor its hex form appears
// in any outer message the proxy wrote.
func assertKeyNeverSent(t *testing.T, ch *acpChain, key []byte) {
	t.Helper()
	_, b64, _ := strings.Cut(strings.TrimSpace(string(key)), "agentprotocols-ed25519-seed-v1:")
	seed, err := base64.RawURLEncoding.DecodeString(b64)
	if err != nil || len(seed) != 32 {
		t.Fatalf("key file seed: %v", err)
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	for _, line := range ch.all {
		if bytes.Contains(line, []byte(b64)) || bytes.Contains(line, []byte(hex.EncodeToString(seed))) {
			t.Fatalf("the key crossed the ACP connection: %s", line)
		}
	}
}

// TestACPChainWithoutCapability: an agent that does not advertise
// mcpCapabilities.acp gets session/new unchanged, the operator a note on
// standard error, and an mcp/connect is refused.
func TestACPChainWithoutCapability(t *testing.T) {
	h := newTestHost(t, nil)
	cfg, _ := acpConfig(t, h)
	ch := startACP(t, cfg, acp.Connected)
	initializeChain(t, ch, false)
	params := map[string]any{"cwd": "/home/me/project", "mcpServers": []any{}, "_meta": map[string]any{"k": "v"}}
	ch.clientRequest(2, "session/new", params)
	fwd := ch.next()
	if fwd.inner != "session/new" {
		t.Fatalf("session/new: %s", fwd.raw)
	}
	jsonEq(t, "unchanged session/new", fwd.params, params)
	ch.send(map[string]any{"jsonrpc": "2.0", "id": fwd.req().ID.Raw(), "result": map[string]any{"sessionId": "s"}})
	ch.next()
	if s := ch.stderr.String(); !strings.Contains(s, "mcpCapabilities.acp") {
		t.Fatalf("no note on stderr: %q", s)
	}
	wantRPCError(t, "mcp/connect", ch.agentRequest("mcp/connect", map[string]any{"serverId": "agent-protocols:1"}), jsonrpc.CodeInvalidParams)
	ch.stop()
}

// TestReadmeACPChain: the README's conductor chain example is valid JSON
// that runs `agent-protocols-connector acp`, and the README names the wire methods the
// connector speaks, in both revisions.
func TestReadmeACPChain(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "### Inside an ACP chain")
	if i < 0 {
		t.Fatal("no ACP chain section")
	}
	j := strings.Index(s[i:], "```json\n")
	k := strings.Index(s[i+j+8:], "```")
	if j < 0 || k < 0 {
		t.Fatal("no conductor example")
	}
	var cfg struct {
		AgentServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"agent_servers"`
	}
	if err := json.Unmarshal([]byte(s[i+j+8:i+j+8+k]), &cfg); err != nil || len(cfg.AgentServers) != 1 {
		t.Fatalf("conductor example: %v", err)
	}
	for _, a := range cfg.AgentServers {
		if len(a.Args) < 3 || a.Args[0] != "agent" || !strings.HasPrefix(a.Args[1], "agent-protocols-connector acp") {
			t.Fatalf("conductor example args %q", a.Args)
		}
	}
	for _, name := range []string{acp.Connected.ProxyInitialize(), acp.Connected.ProxySuccessor(), "mcp/connect", "mcp/message", "mcp/disconnect", "connectionId", "1.5",
		acp.Stateless.ProxyInitialize(), acp.Stateless.ProxySuccessor(), "serverId", "requestId", "2026-07-28", "2.4"} {
		if !strings.Contains(s, "`"+name+"`") && !strings.Contains(s, name) {
			t.Errorf("README does not name %s", name)
		}
	}
}

// TestACPSchemaRejects: the vendored schemas the chain tests validate
// with are not vacuous: they refuse the shapes a wrong proxy would emit.
func TestACPSchemaRejects(t *testing.T) {
	schemas := map[acp.Revision]*acpSchema{acp.Connected: loadACPSchema(t, acp.Connected), acp.Stateless: loadACPSchema(t, acp.Stateless)}
	for _, c := range []struct {
		rev    acp.Revision
		def, v string
		ok     bool
	}{
		{acp.Connected, "ConnectMcpResponse", `{"connectionId":"c"}`, true},
		{acp.Connected, "ConnectMcpResponse", `{}`, false},
		{acp.Connected, "ConnectMcpResponse", `{"connectionId":7}`, false},
		{acp.Connected, "MessageMcpNotification", `{"connectionId":"c","method":"notifications/resources/updated","params":{"uri":"u"}}`, true},
		{acp.Connected, "MessageMcpNotification", `{"connectionId":"c","method":"x","params":[1]}`, false},
		{acp.Connected, "DisconnectMcpResponse", `{}`, true},
		{acp.Connected, "DisconnectMcpResponse", `[]`, false},
		{acp.Connected, "NewSessionRequest", `{"cwd":"/","mcpServers":[{"type":"acp","name":"agent-protocols","serverId":"s"}]}`, true},
		{acp.Connected, "NewSessionRequest", `{"cwd":"/","mcpServers":[{"type":"acp","name":"agent-protocols"}]}`, false},
		{acp.Connected, "Error", `{"code":-32602,"message":"m"}`, true},
		{acp.Connected, "Error", `{"code":"x","message":"m"}`, false},
		{acp.Stateless, "MessageMcpResponse", `{"result":null}`, true},
		{acp.Stateless, "MessageMcpResponse", `{"error":{"code":-32602,"message":"m"}}`, true},
		{acp.Stateless, "MessageMcpResponse", `{"tools":[]}`, false},
		{acp.Stateless, "MessageMcpResponse", `{"error":{"code":"x","message":"m"}}`, false},
		{acp.Stateless, "MessageMcpNotification", `{"serverId":"s","requestId":"r","method":"notifications/progress"}`, true},
		{acp.Stateless, "MessageMcpNotification", `{"serverId":"s","method":"notifications/progress"}`, false},
		{acp.Stateless, "MessageMcpRequest", `{"serverId":"s","requestId":7,"method":"tools/list"}`, false},
		{acp.Stateless, "ProxySuccessorRequest", `{"method":"initialize","params":{"protocolVersion":1}}`, true},
		{acp.Stateless, "ProxySuccessorRequest", `{"params":{}}`, false},
		{acp.Stateless, "NewSessionRequest", `{"cwd":"/","mcpServers":[{"type":"acp","name":"agent-protocols"}]}`, false},
	} {
		err := schemas[c.rev].check(c.def, json.RawMessage(c.v))
		if (err == nil) != c.ok {
			t.Errorf("%s %s %s: valid=%v, want %v (%v)", c.rev, c.def, c.v, err == nil, c.ok, err)
		}
	}
}
