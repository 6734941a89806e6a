package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/connector"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestProtocolRejection: a host's rejection reaches the agent as an
// isError result carrying the protocol code (§5), labelled the host's;
// arguments that do not fit the schema are isError results too, naming
// the field (SEP-1303).
func TestProtocolRejection(t *testing.T) {
	h := newTestHost(t, nil)
	alice := newConnector(t, "alice", h)
	bob := newConnector(t, "bob", h)
	roomID := createRoom(t, alice, h, "public")
	bob.call("room_open", map[string]any{"host": h.url, "room_id": roomID})
	bob.call("room_join", map[string]any{"room_id": roomID, "role": "observer"})
	code, m := bob.callErr("room_send_message", map[string]any{"room_id": roomID, "content": "observers cannot speak"})
	if code != "permission_denied" {
		t.Fatalf("observer message: code %q (%v), want permission_denied", code, m)
	}
	// The connector checked that one itself; a room the host does not
	// know is the host's answer, labelled so.
	code, m = bob.callErr("room_open", map[string]any{"host": h.url, "room_id": "d8ftedhpqhsusbg001tg"})
	if code != "room_not_found" || m["source"] != connector.SourceHost {
		t.Fatalf("unknown room: %v, want the host's room_not_found", m)
	}

	for name, tc := range map[string]struct {
		args  map[string]any
		field string
	}{
		"missing content":   {map[string]any{"room_id": roomID}, "/content"},
		"unknown member":    {map[string]any{"room_id": roomID, "content": "x", "actor": bob.agentID}, "/actor"},
		"bad enum":          {map[string]any{"room_id": roomID, "content": "x", "on_head_mismatch": "force"}, "/on_head_mismatch"},
		"bad mention":       {map[string]any{"room_id": roomID, "content": "x", "mentions": []string{"bob"}}, "/mentions/0"},
		"negative base_seq": {map[string]any{"room_id": roomID, "content": "x", "base_seq": -1}, "/base_seq"},
	} {
		if field, reason := bob.callArgErr("room_send_message", tc.args); field != tc.field || reason == "" {
			t.Errorf("%s: field %q reason %q, want field %q", name, field, reason, tc.field)
		}
	}
	// Not a tools/call the connector can read: a JSON-RPC error.
	for name, tc := range map[string]struct {
		tool string
		args any
	}{
		"unknown tool":         {"nope", map[string]any{}},
		"arguments not object": {"room_state", json.RawMessage(`"x"`)},
		"arguments array":      {"room_state", json.RawMessage(`[]`)},
	} {
		_, err := bob.callRaw(tc.tool, tc.args)
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("%s: want JSON-RPC invalid params, got %v", name, err)
		}
	}
}

// TestAmbiguousRoom: a room_id known on two configured hosts is an
// ambiguity error unless host is given (§4.3).
func TestAmbiguousRoom(t *testing.T) {
	same := func() string { return "d8ftedhpqhsusbg001tg" }
	h1 := newTestHost(t, &adphost.Options{NewRoomID: same})
	h2 := newTestHost(t, &adphost.Options{NewRoomID: same})
	alice := newConnector(t, "alice", h1, h2)
	now := time.Now().UnixMilli()
	for _, h := range []*testHost{h1, h2} {
		alice.call("room_create", map[string]any{"host": h.url, "topic": "twin", "visibility": "public", "start_time": now - 60_000, "end_time": now + 3_600_000})
	}
	if code, _ := alice.callErr("room_state", map[string]any{"room_id": same()}); code != string(connector.CodeAmbiguousRoom) {
		t.Fatalf("code %q, want %s", code, connector.CodeAmbiguousRoom)
	}
	if code, _ := alice.callErr("room_send_message", map[string]any{"room_id": same(), "content": "x"}); code != string(connector.CodeAmbiguousRoom) {
		t.Fatalf("write: code %q, want %s", code, connector.CodeAmbiguousRoom)
	}
	st := alice.call("room_state", map[string]any{"room_id": same(), "host": h2.url})
	if get(st, "sync.host") != h2.url {
		t.Fatalf("with host: %v", st["sync"])
	}
}

// TestHostileArguments: oversized or deeply nested arguments are refused
// (isError invalid_arguments) before the schema evaluator recurses into
// them.
func TestHostileArguments(t *testing.T) {
	h := newTestHost(t, nil)
	c := newConnector(t, "hostile", h)
	deep := strings.Repeat("[", 500) + strings.Repeat("]", 500)
	big := `"` + strings.Repeat("a", 2<<20) + `"`
	for name, extra := range map[string]string{"deep": deep, "big": big} {
		args := json.RawMessage(`{"room_id":"x","content":"y","extra":` + extra + `}`)
		if field, reason := c.callArgErr("room_send_message", args); field != "" || reason == "" {
			t.Errorf("%s: field %q reason %q", name, field, reason)
		}
	}
}

// TestPresentedHeadPerSession: two MCP sessions on one connector keep
// their own presented head (§4.2). Both read the room; another agent
// speaks; only the session that re-read may write without a base — the
// other one's write is held, measured against what it actually saw.
func TestPresentedHeadPerSession(t *testing.T) {
	h := newTestHost(t, nil)
	alice := newConnector(t, "alice", h)
	bob := newConnector(t, "bob", h)
	roomID := createRoom(t, alice, h, "public")
	bob.call("room_open", map[string]any{"host": h.url, "room_id": roomID})
	bob.call("room_join", map[string]any{"room_id": roomID, "role": "speaker"})

	second := &agentConn{t: t, name: "alice-2", eng: alice.eng, srv: alice.srv, client: connectClient(t, alice.srv, nil), agentID: alice.agentID}
	t.Cleanup(func() { second.client.Close() })
	alice.call("room_state", map[string]any{"room_id": roomID, "refresh": true})
	second.call("room_state", map[string]any{"room_id": roomID, "refresh": true})

	bob.call("room_send_message", map[string]any{"room_id": roomID, "content": "news"})
	// The second session re-reads (and sees bob's message); the first does not.
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := second.call("room_timeline", map[string]any{"room_id": roomID, "refresh": true})
		if strings.Contains(fmtJSON(st), "news") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("bob's message never synced")
		}
	}
	if res := second.call("room_send_message", map[string]any{"room_id": roomID, "content": "seen it"}); res["status"] != "sent" {
		t.Fatalf("session that re-read: %v", res)
	}
	if res := alice.call("room_send_message", map[string]any{"room_id": roomID, "content": "stale view"}); res["status"] != "held" {
		t.Fatalf("session that did not re-read: want held, got %v", res)
	}
}

func fmtJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestDefaultProtocolVersion: a go-sdk client at its default version
// (2026-07-28, stateless discovery) gets the same tools and results as
// the 2025-11-25 client the other tests pin.
func TestDefaultProtocolVersion(t *testing.T) {
	h := newTestHost(t, nil)
	c := newConnector(t, "default-version", h)
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	if _, err := c.srv.MCP().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 27 {
		t.Fatalf("tools/list: %v", err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: connector.ToolPrefix + "identity_current", Arguments: map[string]any{}})
	if err != nil || res.IsError || structured(t, res)["agent_id"] != c.agentID {
		t.Fatalf("identity_current: %v %+v", err, res)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: connector.ToolPrefix + "room_state", Arguments: map[string]any{}})
	if err != nil || !res.IsError || structured(t, res)["code"] != string(connector.CodeInvalidArguments) {
		t.Fatalf("argument error: %v %+v", err, res)
	}
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: connector.ToolPrefix + "nope", Arguments: map[string]any{}})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("unknown tool: %v", err)
	}
}

// TestClaimReleasedWhenSessionEnds: an item claimed by one MCP session is
// not handed to another (§4.3 claim) until the claiming session ends.
func TestClaimReleasedWhenSessionEnds(t *testing.T) {
	_, bob, roomID := mentioned(t, newTestHost(t, nil))

	other := &agentConn{t: t, name: "bob-2", eng: bob.eng, srv: bob.srv, client: connectClient(t, bob.srv, nil), agentID: bob.agentID}
	claimed := bob.call("inbox_next", map[string]any{"room_id": roomID, "kinds": []string{"room.mention"}, "claim": true})
	if len(claimed["items"].([]any)) != 1 {
		t.Fatalf("claim: %v", claimed)
	}
	if res := other.call("inbox_next", map[string]any{"room_id": roomID, "kinds": []string{"room.mention"}}); len(res["items"].([]any)) != 0 {
		t.Fatalf("a claimed item was handed to another session: %v", res)
	}
	bob.client.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		res := other.call("inbox_next", map[string]any{"room_id": roomID, "kinds": []string{"room.mention"}, "wait_ms": 200})
		if len(res["items"].([]any)) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the claim outlived its session")
		}
	}
	other.client.Close()
}
