package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/adphosttest"
	"github.com/agentprotocols/go-sdk/cmd/agent-protocols-connector/internal/mcphttp"
	"github.com/agentprotocols/go-sdk/connector"
	"github.com/agentprotocols/go-sdk/connector/mcptools"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// testHost is an adphost host on a loopback httptest server.
type testHost struct {
	host *adphost.Host
	url  string
}

func newTestHost(t testing.TB, opts *adphost.Options) *testHost {
	t.Helper()
	h, srv := adphosttest.NewServer(t, opts)
	return &testHost{host: h, url: srv.URL}
}

// agentConn is one connector (engine + MCP server) and one in-memory MCP
// client session driving it, as an agent's MCP client would.
type agentConn struct {
	t       testing.TB
	name    string
	eng     *connector.Engine
	srv     *mcptools.Server
	http    *mcphttp.Options // for serveHTTP
	client  *mcp.ClientSession
	updates chan string // resources/updated URIs this client received
	agentID string
}

type connectorOptions struct {
	hosts  []connector.HostConfig
	dir    string
	server *mcptools.Options
}

// seedFor derives a fixed key seed from a name, so transcripts are stable.
func seedFor(name string) []byte {
	s := sha256.Sum256([]byte("connector test key " + name))
	return s[:]
}

// newConnector opens an engine for name against hosts and connects an
// in-memory MCP client to its server.
func newConnector(t testing.TB, name string, hosts ...*testHost) *agentConn {
	t.Helper()
	var hc []connector.HostConfig
	for _, h := range hosts {
		hc = append(hc, connector.HostConfig{Host: h.url, Label: "adptest"})
	}
	return newConnectorWith(t, name, &connectorOptions{hosts: hc})
}

func newConnectorWith(t testing.TB, name string, o *connectorOptions) *agentConn {
	t.Helper()
	ctx := context.Background()
	dir := o.dir
	if dir == "" {
		dir = t.TempDir()
	}
	keyPath := filepath.Join(dir, "key.dev")
	if _, err := connector.ImportKeyFileUnencryptedDev(keyPath, seedFor(name)); err != nil {
		t.Fatalf("%s: key: %v", name, err)
	}
	k, err := connector.LoadKeyFileUnencryptedDev(keyPath)
	if err != nil {
		t.Fatalf("%s: key: %v", name, err)
	}
	n := mcptools.NewNotifier()
	eng, err := connector.Open(ctx, &connector.Options{
		Dir:               filepath.Join(dir, "state"),
		Key:               k,
		Hosts:             o.hosts,
		AllowLoopbackHTTP: true,
		WritesPerMinute:   -1,
		Notify:            n.Notify,
	})
	if err != nil {
		t.Fatalf("%s: engine: %v", name, err)
	}
	srv := mcptools.NewServer(eng, o.server)
	nctx, cancel := context.WithCancel(ctx)
	go n.Run(nctx, srv.MCP())
	c := &agentConn{t: t, name: name, eng: eng, srv: srv, http: &mcphttp.Options{}, updates: make(chan string, 1024), agentID: k.AgentID().String()}
	c.client = connectClient(t, srv, c.updates)
	t.Cleanup(func() {
		c.client.Close()
		cancel()
		eng.Close()
	})
	return c
}

// connectClient connects a new in-memory client session to srv (server
// side first, as the go-sdk requires), pinned to the 2025-11-25 protocol
// the connector spec names.
func connectClient(t testing.TB, srv *mcptools.Server, updates chan string) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	if _, err := srv.MCP().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			if updates != nil {
				select {
				case updates <- r.Params.URI:
				default:
				}
			}
		},
	})
	cs, err := cl.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// callRaw calls a tool and returns the raw result and the JSON-RPC error.
func (c *agentConn) callRaw(tool string, args any) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.client.CallTool(ctx, &mcp.CallToolParams{Name: connector.ToolPrefix + tool, Arguments: args})
}

// call calls a tool that must succeed and decodes its structured content.
func (c *agentConn) call(tool string, args any) map[string]any {
	c.t.Helper()
	res, err := c.callRaw(tool, args)
	if err != nil {
		c.t.Fatalf("%s: %s: JSON-RPC error: %v", c.name, tool, err)
	}
	m := structured(c.t, res)
	if res.IsError {
		c.t.Fatalf("%s: %s: isError: %v", c.name, tool, m)
	}
	checkOutput(c.t, tool, m)
	return m
}

// outputSchemas are the tools' published output schemas, compiled with
// the project's JSON Schema implementation.
var outputSchemas = sync.OnceValue(func() map[string]*jsonschema.Schema {
	out := map[string]*jsonschema.Schema{}
	for _, tl := range connector.Tools() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(tl.OutputSchema))
		if err != nil {
			panic(err)
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource("urn:out:"+tl.Name, doc); err != nil {
			panic(err)
		}
		out[tl.Name] = c.MustCompile("urn:out:" + tl.Name)
	}
	return out
})

// checkOutput: every successful result a test sees fits the tool's
// published outputSchema, which clients (the TypeScript SDK) enforce.
func checkOutput(t testing.TB, tool string, m map[string]any) {
	t.Helper()
	if err := outputSchemas()[connector.ToolPrefix+tool].Validate(m); err != nil {
		t.Fatalf("%s: result does not fit its outputSchema: %v", tool, err)
	}
}

// callArgErr calls a tool whose arguments do not fit its input schema:
// the refusal is an isError result (SEP-1303) with code
// invalid_arguments and data.field; it returns data.field and data.reason.
func (c *agentConn) callArgErr(tool string, args any) (field, reason string) {
	c.t.Helper()
	code, m := c.callErr(tool, args)
	if code != string(connector.CodeInvalidArguments) || m["source"] != connector.SourceConnector {
		c.t.Fatalf("%s: %s: want invalid_arguments, got %v", c.name, tool, m)
	}
	field, _ = get(m, "data.field").(string)
	reason, _ = get(m, "data.reason").(string)
	return field, reason
}

// callErr calls a tool that must be refused with an isError result and
// returns its protocol code.
func (c *agentConn) callErr(tool string, args any) (code string, m map[string]any) {
	c.t.Helper()
	res, err := c.callRaw(tool, args)
	if err != nil {
		c.t.Fatalf("%s: %s: want an isError result, got JSON-RPC error %v", c.name, tool, err)
	}
	m = structured(c.t, res)
	if !res.IsError {
		c.t.Fatalf("%s: %s: want isError, got %v", c.name, tool, m)
	}
	code, _ = m["code"].(string)
	return code, m
}

func structured(t testing.TB, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	var m map[string]any
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("structuredContent %s: %v", b, err)
	}
	// §5: the one text item carries the same JSON.
	if len(res.Content) != 1 {
		t.Fatalf("want one content item, got %d", len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content[0] is %T", res.Content[0])
	}
	var m2 map[string]any
	if err := json.Unmarshal([]byte(tc.Text), &m2); err != nil {
		t.Fatalf("text content is not the JSON result: %v", err)
	}
	return m
}

// get walks a decoded JSON value by keys and array indexes ("items.0.kind").
func get(v any, path string) any {
	for _, p := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			i := 0
			for _, ch := range p {
				i = i*10 + int(ch-'0')
			}
			if i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

func num(v any) int64 {
	f, _ := v.(float64)
	return int64(f)
}

// createRoom has c create an active public room on h through the tool
// and returns its room_id.
func createRoom(t testing.TB, c *agentConn, h *testHost, visibility string) string {
	t.Helper()
	now := time.Now().UnixMilli()
	res := c.call("room_create", map[string]any{
		"host": h.url, "topic": "Which signature scheme?", "visibility": visibility,
		"start_time": now - 60_000, "end_time": now + 3_600_000,
		"agenda": "Pick one.", "tags": []string{"crypto"},
	})
	id, _ := get(res, "room.room_id").(string)
	if id == "" || get(res, "sync.head_hash") == "" || get(res, "envelope") == nil {
		t.Fatalf("room_create: %v", res)
	}
	return id
}

// waitInbox long-polls inbox_next until an item of kind arrives.
func waitInbox(t testing.TB, c *agentConn, roomID, kind string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		res := c.call("inbox_next", map[string]any{"room_id": roomID, "kinds": []string{kind}, "wait_ms": 2000})
		if items, _ := res["items"].([]any); len(items) > 0 {
			return items[0].(map[string]any)
		}
	}
	t.Fatalf("%s: no %s inbox item", c.name, kind)
	return nil
}

// speakers has alice create a public room on h that bob opens and joins
// as a speaker; alice's view is then refreshed, so her writes go against
// the head.
func speakers(t testing.TB, h *testHost) (alice, bob *agentConn, roomID string) {
	t.Helper()
	alice = newConnector(t, "alice", h)
	bob = newConnector(t, "bob", h)
	roomID = createRoom(t, alice, h, "public")
	bob.call("room_open", map[string]any{"host": h.url, "room_id": roomID})
	bob.call("room_join", map[string]any{"room_id": roomID, "role": "speaker"})
	alice.call("room_state", map[string]any{"room_id": roomID, "refresh": true})
	return alice, bob, roomID
}

// mentionInbox has alice mention bob in roomID and waits for bob's inbox
// item.
func mentionInbox(t testing.TB, alice, bob *agentConn, roomID string) {
	t.Helper()
	alice.call("room_send_message", map[string]any{"room_id": roomID, "content": "ping", "mentions": []string{bob.agentID}, "on_head_mismatch": "send_anyway"})
	waitInbox(t, bob, roomID, "room.mention")
}
