package main

import (
	"bufio"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strings"
	"testing"

	"github.com/agentprotocols/go-sdk/connector"
)

// The MCP program as a client meets it on the wire: one JSON-RPC request
// at a time over a transport, in a protocol era, and the response message
// exactly as written.

// meta2026 is the per-request _meta of MCP 2026-07-28 (SEP-2575): no
// initialize, every request says its version, client and capabilities.
func meta2026() map[string]any {
	return map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "wire-test", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
	}
}

// rpcCaller sends one request (id chosen by the caller) and returns the
// response message for it.
type rpcCaller func(id int, method string, params map[string]any) json.RawMessage

// mcpWire is one transport in one protocol era.
type mcpWire struct {
	name, version string
	// open connects to c's server; for a session era it initializes
	// first and returns the initialize response too.
	open func(t *testing.T, c *agentConn) (call rpcCaller, initResp json.RawMessage)
}

func requestLine(id int, method string, params map[string]any) string {
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// call sends a request on stdio and returns the line answering it,
// skipping notifications.
func (r *rawStdio) call(id int, method string, params map[string]any) json.RawMessage {
	r.t.Helper()
	r.send(requestLine(id, method, params))
	for {
		line := r.recv()
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && string(m.ID) == itoa(id) {
			return json.RawMessage(line)
		}
	}
}

// call posts a request and returns the response message for it, from a
// JSON body or the SSE stream.
func (r *rawHTTP) call(id int, method string, params map[string]any) json.RawMessage {
	r.t.Helper()
	resp := r.post(requestLine(id, method, params), func(req *http.Request) {
		if r.version >= "2026-07-28" {
			req.Header.Set("Mcp-Method", method)
			if name, ok := params["name"].(string); ok && method == "tools/call" {
				req.Header.Set("Mcp-Name", name)
			}
			if uri, ok := params["uri"].(string); ok && method == "resources/read" {
				req.Header.Set("Mcp-Name", uri)
			}
		}
	})
	defer resp.Body.Close()
	return responseFor(r.t, resp, id)
}

// responseFor reads the JSON-RPC response with id from an HTTP answer.
func responseFor(t *testing.T, resp *http.Response, id int) json.RawMessage {
	t.Helper()
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if ct != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		if ct != "application/json" {
			t.Fatalf("HTTP %d %s: %s", resp.StatusCode, ct, b)
		}
		return b
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 4<<20)
	var data strings.Builder
	for sc.Scan() {
		l := sc.Text()
		if d, ok := strings.CutPrefix(l, "data:"); ok {
			data.WriteString(strings.TrimSpace(d))
			continue
		}
		if l != "" || data.Len() == 0 {
			continue
		}
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		msg := data.String()
		data.Reset()
		if json.Unmarshal([]byte(msg), &m) == nil && string(m.ID) == itoa(id) {
			return json.RawMessage(msg)
		}
	}
	t.Fatalf("the stream ended without a response to %d", id)
	return nil
}

var mcpWires = []mcpWire{
	{"stdio", "2025-11-25", func(t *testing.T, c *agentConn) (rpcCaller, json.RawMessage) {
		r := startRawStdio(t, c.srv, 1<<20)
		init := r.call(1, "initialize", initParams("2025-11-25"))
		r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		return r.call, init
	}},
	{"stdio", "2026-07-28", func(t *testing.T, c *agentConn) (rpcCaller, json.RawMessage) {
		r := startRawStdio(t, c.srv, 1<<20)
		return with2026Meta(r.call), nil
	}},
	{"http", "2025-11-25", func(t *testing.T, c *agentConn) (rpcCaller, json.RawMessage) {
		r := &rawHTTP{t: t, url: serveHTTP(t, c).URL}
		resp := r.post(requestLine(1, "initialize", initParams("2025-11-25")), nil)
		r.session, r.version = resp.Header.Get("Mcp-Session-Id"), "2025-11-25"
		init := responseFor(t, resp, 1)
		resp.Body.Close()
		r.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil).Body.Close()
		return r.call, init
	}},
	{"http", "2026-07-28", func(t *testing.T, c *agentConn) (rpcCaller, json.RawMessage) {
		r := &rawHTTP{t: t, url: serveHTTP(t, c).URL, version: "2026-07-28"}
		return with2026Meta(r.call), nil
	}},
}

func initParams(version string) map[string]any {
	return map[string]any{"protocolVersion": version, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "wire-test", "version": "1"}}
}

// with2026Meta adds the 2026-07-28 _meta to every request's params.
func with2026Meta(call rpcCaller) rpcCaller {
	return func(id int, method string, params map[string]any) json.RawMessage {
		p := map[string]any{"_meta": meta2026()}
		for k, v := range params {
			p[k] = v
		}
		return call(id, method, p)
	}
}

// TestWireResultsFitMCPSchema: what the program serves, over each
// transport in each protocol era, is valid against the official MCP
// schema of that version — above all the whole tools/list result (every
// tool's inputSchema and outputSchema root "type": "object" in
// 2025-11-25), which clients such as the TypeScript SDK validate before
// showing any tool. The resource lists, a read, a tool result,
// initialize (2025) and server/discover (2026) are checked too, and the
// session era's results carry none of 2026-07-28's cache fields.
func TestWireResultsFitMCPSchema(t *testing.T) {
	h := newTestHost(t, nil)
	c := newConnector(t, "wire-schema", h)
	for _, w := range mcpWires {
		t.Run(w.name+"-"+w.version, func(t *testing.T) {
			s := mcpSchema(t, w.version)
			call, initResp := w.open(t, c)
			check := func(what, def string, resp json.RawMessage) {
				t.Helper()
				var m struct {
					Result json.RawMessage `json:"result"`
				}
				if err := json.Unmarshal(resp, &m); err != nil || m.Result == nil {
					t.Fatalf("%s: not a result: %.300s", what, resp)
				}
				if err := s.check("JSONRPCResultResponse", resp); err != nil {
					t.Errorf("%s: the response is not a %s JSONRPCResultResponse: %v", what, w.version, err)
				}
				if err := s.check(def, m.Result); err != nil {
					t.Errorf("%s: the result is not a %s %s: %v", what, w.version, def, err)
				}
				// The cache fields are 2026-07-28's (required there);
				// earlier versions do not have them.
				var members map[string]json.RawMessage
				_ = json.Unmarshal(m.Result, &members)
				_, ttl := members["ttlMs"]
				_, scope := members["cacheScope"]
				if w.version < "2026-07-28" && (ttl || scope) {
					t.Errorf("%s: a %s result with 2026-07-28's ttlMs or cacheScope: %.200s", what, w.version, m.Result)
				}
			}
			if initResp != nil {
				check("initialize", "InitializeResult", initResp)
			} else {
				check("server/discover", "DiscoverResult", call(2, "server/discover", map[string]any{}))
			}
			tools := call(3, "tools/list", map[string]any{})
			check("tools/list", "ListToolsResult", tools)
			if n := strings.Count(string(tools), `"outputSchema"`); n != len(connector.Tools()) {
				t.Errorf("tools/list has %d output schemas, want one per tool (%d)", n, len(connector.Tools()))
			}
			check("resources/list", "ListResourcesResult", call(4, "resources/list", map[string]any{}))
			check("resources/templates/list", "ListResourceTemplatesResult", call(5, "resources/templates/list", map[string]any{}))
			check("resources/read", "ReadResourceResult", call(6, "resources/read", map[string]any{"uri": connector.URIIdentity}))
			check("tools/call", "CallToolResult", call(7, "tools/call", map[string]any{"name": connector.ToolPrefix + "identity_current", "arguments": map[string]any{}}))
			check("tools/call refused", "CallToolResult", call(8, "tools/call", map[string]any{"name": connector.ToolPrefix + "room_state", "arguments": map[string]any{"room_id": 7}}))
			if t.Failed() {
				t.Logf("tools/list: %.2000s", tools)
			}
		})
	}
}
