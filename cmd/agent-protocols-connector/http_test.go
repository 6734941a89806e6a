package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentprotocols/go-sdk/cmd/agent-protocols-connector/internal/mcphttp"
	"github.com/agentprotocols/go-sdk/connector"
)

const testToken = "test-token-0123456789abcdef"

// serveHTTP serves c's MCP server over the guarded Streamable HTTP
// handler on a loopback listener.
func serveHTTP(t *testing.T, c *agentConn) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(mcphttp.Handler(c.srv, testToken, c.http))
	t.Cleanup(ts.Close)
	return ts
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// TestHTTPGuard pins §3: the loopback endpoint refuses a missing or wrong
// bearer token, a foreign Origin and a rebinding Host, and serves the
// right request.
func TestHTTPGuard(t *testing.T) {
	h := newTestHost(t, nil)
	c := newConnector(t, "http", h)
	ts := serveHTTP(t, c)
	port := ts.Listener.Addr().String()[strings.LastIndex(ts.Listener.Addr().String(), ":"):]

	for _, tc := range []struct {
		name   string
		mutate func(r *http.Request)
		want   int
	}{
		{"ok", func(r *http.Request) {}, http.StatusOK},
		{"ok localhost Host and Origin", func(r *http.Request) {
			r.Host = "localhost" + port
			r.Header.Set("Origin", "http://localhost"+port)
		}, http.StatusOK},
		{"upper-case localhost Host (host names are case-insensitive)", func(r *http.Request) {
			r.Host = "LOCALHOST" + port
			r.Header.Set("Origin", "http://LocalHost"+port)
		}, http.StatusOK},
		{"lower-case scheme", func(r *http.Request) { r.Header.Set("Authorization", "bearer "+testToken) }, http.StatusOK},
		{"missing bearer", func(r *http.Request) { r.Header.Del("Authorization") }, http.StatusUnauthorized},
		{"wrong bearer", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+testToken+"x") }, http.StatusUnauthorized},
		{"empty bearer", func(r *http.Request) { r.Header.Set("Authorization", "Bearer ") }, http.StatusUnauthorized},
		{"token prefix", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+testToken[:10]) }, http.StatusUnauthorized},
		{"basic instead of bearer", func(r *http.Request) { r.SetBasicAuth("a", testToken) }, http.StatusUnauthorized},
		{"foreign Origin", func(r *http.Request) { r.Header.Set("Origin", "https://evil.example") }, http.StatusForbidden},
		{"null Origin", func(r *http.Request) { r.Header.Set("Origin", "null") }, http.StatusForbidden},
		{"rebinding Host", func(r *http.Request) { r.Host = "evil.example" + port }, http.StatusForbidden},
		{"rebinding Host with localhost suffix", func(r *http.Request) { r.Host = "localhost.evil.example" + port }, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", ts.URL, strings.NewReader(initBody))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+testToken)
			tc.mutate(req)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}

// bearer adds the Authorization header, as an MCP client configured with
// a bearer header for a remote server does.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// TestHTTPStreamableClient drives the connector over --http with the
// go-sdk's Streamable HTTP client and a bearer header: tools/list, a tool
// call, a protocol rejection (isError with its code) and a malformed call
// (a JSON-RPC error) — never the other way round.
func TestHTTPStreamableClient(t *testing.T) {
	h := newTestHost(t, nil)
	c := newConnector(t, "http-client", h)
	ts := serveHTTP(t, c)
	ctx := context.Background()

	cs := dialHTTP(t, ts.URL, "agentd-like", nil, "2025-11-25")
	defer cs.Close()

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 27 {
		t.Fatalf("%d tools over HTTP", len(tools.Tools))
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: connector.ToolPrefix + "identity_current", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("identity_current: %v %v", err, res)
	}
	if got := structured(t, res)["agent_id"]; got != c.agentID {
		t.Fatalf("agent_id %v, want %s", got, c.agentID)
	}

	// A host's rejection: an observer may not speak (permission_denied).
	alice := newConnector(t, "alice", h)
	roomID := createRoom(t, alice, h, "public")
	for _, step := range []struct {
		tool string
		args map[string]any
	}{
		{"room_open", map[string]any{"host": h.url, "room_id": roomID}},
		{"room_join", map[string]any{"room_id": roomID, "role": "observer"}},
	} {
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: connector.ToolPrefix + step.tool, Arguments: step.args}); err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", step.tool, err, res)
		}
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: connector.ToolPrefix + "room_send_message", Arguments: map[string]any{"room_id": roomID, "content": "hi"}})
	if err != nil {
		t.Fatalf("rejection came as a JSON-RPC error: %v", err)
	}
	if !res.IsError || structured(t, res)["code"] != "permission_denied" {
		t.Fatalf("want isError permission_denied, got %+v", structured(t, res))
	}

	// A connector rejection: a host that is not on the allowlist.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: connector.ToolPrefix + "room_open", Arguments: map[string]any{"host": "https://evil.example", "room_id": "d8ftedhpqhsusbg001tg"}})
	if err != nil {
		t.Fatalf("rejection came as a JSON-RPC error: %v", err)
	}
	if !res.IsError || structured(t, res)["code"] != string(connector.CodeHostNotAllowed) {
		t.Fatalf("want isError host_not_allowed, got %+v", structured(t, res))
	}

	// Arguments that do not fit the schema (a required member missing, an
	// unknown member, a wrong type): isError naming the field (SEP-1303).
	for field, args := range map[string]map[string]any{
		"/host":    {"room_id": "x"},
		"/bogus":   {"host": h.url, "room_id": "x", "bogus": 1},
		"/room_id": {"host": h.url, "room_id": 7},
	} {
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: connector.ToolPrefix + "room_open", Arguments: args})
		if err != nil || !res.IsError || get(structured(t, res), "data.field") != field {
			t.Fatalf("args %v: want isError invalid_arguments at %s, got %v %+v", args, field, err, res)
		}
	}
	// An unknown tool stays a JSON-RPC error.
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: connector.ToolPrefix + "nope", Arguments: map[string]any{}})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("unknown tool: want JSON-RPC invalid params, got %v", err)
	}
}

// TestHTTPDefaultClientVersion: a go-sdk client left at its default
// protocol version (2026-07-28 first) still reaches the tools over --http.
func TestHTTPDefaultClientVersion(t *testing.T) {
	h := newTestHost(t, nil)
	c := newConnector(t, "http-default", h)
	ts := serveHTTP(t, c)
	ctx := context.Background()
	cs := dialHTTP(t, ts.URL, "default", nil, "")
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: connector.ToolPrefix + "hosts_list", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("hosts_list: %v %+v", err, res)
	}
}

// TestHTTPSubscription: over Streamable HTTP a subscribed client gets
// notifications/resources/updated for the inbox when a mention arrives
// (notify-then-read, as the 002 seed's clients use subscriptions).
func TestHTTPSubscription(t *testing.T) {
	h := newTestHost(t, nil)
	alice := newConnector(t, "alice", h)
	bob := newConnector(t, "bob", h)
	ts := serveHTTP(t, bob)
	ctx := context.Background()
	updates := make(chan string, 64)
	cs := dialHTTP(t, ts.URL, "sub", &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			select {
			case updates <- r.Params.URI:
			default:
			}
		},
	}, "2025-11-25")
	defer cs.Close()
	roomID := createRoom(t, alice, h, "public")
	bob.call("room_open", map[string]any{"host": h.url, "room_id": roomID})
	bob.call("room_join", map[string]any{"room_id": roomID, "role": "speaker"})
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: connector.URIInboxPending}); err != nil {
		t.Fatal(err)
	}
	alice.call("room_state", map[string]any{"room_id": roomID, "refresh": true})
	alice.call("room_send_message", map[string]any{"room_id": roomID, "content": "ping", "mentions": []string{bob.agentID}})
	deadline := time.After(20 * time.Second)
	for {
		select {
		case uri := <-updates:
			if uri != connector.URIInboxPending {
				continue
			}
			rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
			if err == nil && len(rr.Contents) == 1 && containsAll(rr.Contents[0].Text, "room.mention", roomID) {
				return
			}
		case <-deadline:
			t.Fatal("no resources/updated over HTTP after a mention")
		}
	}
}
