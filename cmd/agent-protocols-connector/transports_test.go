package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/cmd/agent-protocols-connector/internal/jsonl"
	"github.com/agentprotocols/go-sdk/connector"
	"github.com/agentprotocols/go-sdk/connector/mcptools"
)

// transports connects the official go-sdk client to c's server over the
// two transports the connector serves, its stdio framing (through pipes)
// and the guarded Streamable HTTP endpoint, in both protocol eras: the
// session era (2025-11-25, initialize) and 2026-07-28 (server/discover,
// no session).
var transports = []struct {
	name, version string
	connect       func(t *testing.T, c *agentConn, opts *mcp.ClientOptions) *mcp.ClientSession
}{
	{"stdio", "2025-11-25", connectStdio("2025-11-25")},
	{"http", "2025-11-25", connectHTTP("2025-11-25")},
	{"stdio-2026", "2026-07-28", connectStdio("2026-07-28")},
	{"http-2026", "2026-07-28", connectHTTP("2026-07-28")},
}

func connectStdio(version string) func(t *testing.T, c *agentConn, opts *mcp.ClientOptions) *mcp.ClientSession {
	return func(t *testing.T, c *agentConn, opts *mcp.ClientOptions) *mcp.ClientSession {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = c.srv.MCP().Run(ctx, &jsonl.Transport{R: inR, W: outW, MaxLine: mcp.DefaultMaxRequestBodyBytes})
			outW.Close()
		}()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "stdio-client", Version: "1"}, opts).Connect(ctx,
			&mcp.IOTransport{Reader: outR, Writer: inW}, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		checkNegotiated(t, cs, version)
		t.Cleanup(func() { cs.Close(); inW.Close(); cancel(); <-done })
		return cs
	}
}

func connectHTTP(version string) func(t *testing.T, c *agentConn, opts *mcp.ClientOptions) *mcp.ClientSession {
	return func(t *testing.T, c *agentConn, opts *mcp.ClientOptions) *mcp.ClientSession {
		cs := dialHTTP(t, serveHTTP(t, c).URL, "http-client", opts, version)
		checkNegotiated(t, cs, version)
		t.Cleanup(func() { cs.Close() })
		return cs
	}
}

// dialHTTP connects a go-sdk Streamable HTTP client named name to the
// connector's --http front at url, with the test bearer token and no
// retries, asking for version ("" leaves the client's default). The
// caller closes the session.
func dialHTTP(t *testing.T, url, name string, opts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	var so *mcp.ClientSessionOptions
	if version != "" {
		so = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, opts).Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint:   url,
		HTTPClient: &http.Client{Transport: bearer{testToken, http.DefaultTransport}},
		MaxRetries: -1,
	}, so)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// checkNegotiated fails unless the client speaks the version it asked
// for (a 2026-07-28 client falls back to 2025-11-25 silently otherwise).
func checkNegotiated(t *testing.T, cs *mcp.ClientSession, version string) {
	t.Helper()
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		cs.Close()
		t.Fatalf("negotiated %s, want %s", got, version)
	}
}

// TestErrorSplitOverTransports (MCP 2025-11-25, tools: error handling):
// over stdio and HTTP, in
// both protocol eras, with the official client: argument errors are
// isError results naming the field; an unknown tool is a JSON-RPC error;
// reading a resource that is not the connector's or a room that is not
// open is "not found" with data.uri, in the negotiated version's code;
// only tools and subscribable resources are advertised.
func TestErrorSplitOverTransports(t *testing.T) {
	h := newTestHost(t, nil)
	c := newConnector(t, "split", h)
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			cs := tr.connect(t, c, nil)
			ctx := context.Background()
			caps := cs.InitializeResult().Capabilities
			if caps.Tools == nil || caps.Tools.ListChanged || caps.Resources == nil || !caps.Resources.Subscribe || caps.Resources.ListChanged ||
				caps.Prompts != nil || caps.Completions != nil || strings.Contains(fmtJSON(caps), "logging") {
				t.Errorf("capabilities %+v", caps)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: connector.ToolPrefix + "room_state", Arguments: map[string]any{"room_id": 7}})
			if err != nil || !res.IsError || get(structured(t, res), "data.field") != "/room_id" || get(structured(t, res), "code") != "invalid_arguments" {
				t.Errorf("argument error: %v %+v", err, res)
			}
			_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: connector.ToolPrefix + "nope", Arguments: map[string]any{}})
			var je *jsonrpc.Error
			if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
				t.Errorf("unknown tool: %v", err)
			}
			// Not found: -32002 up to 2025-11-25, -32602 from 2026-07-28
			// on, both with data.uri.
			notFound := int64(-32002)
			if tr.version >= "2026-07-28" {
				notFound = jsonrpc.CodeInvalidParams
			}
			for _, uri := range []string{"agent-protocols://rooms/nosuchroom", "agent-protocols://rooms/nosuchroom/timeline", "file:///etc/passwd", "agent-protocols://keys"} {
				_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
				if !errors.As(err, &je) || je.Code != notFound || !strings.Contains(string(je.Data), `"uri":"`+uri+`"`) {
					t.Errorf("read %s: %v (data %s), want %d with data.uri", uri, err, dataOf(je), notFound)
				}
			}
			if _, err := cs.ListPrompts(ctx, nil); !errors.As(err, &je) || je.Code != jsonrpc.CodeMethodNotFound {
				t.Errorf("prompts/list: %v", err)
			}
		})
	}
}

func dataOf(je *jsonrpc.Error) string {
	if je == nil {
		return ""
	}
	return string(je.Data)
}

// TestLongPollProgress (MCP 2025-11-25, progress): a long-poll that carries a progressToken
// gets notifications/progress while it waits, over stdio and HTTP, so a
// client that resets its timeout on progress keeps waiting.
func TestLongPollProgress(t *testing.T) {
	h := newTestHost(t, nil)
	c := newConnectorWith(t, "progress", &connectorOptions{hosts: []connector.HostConfig{{Host: h.url, Label: "adptest"}},
		server: &mcptools.Options{ProgressInterval: 40 * time.Millisecond}})
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			var got atomic.Int32
			cs := tr.connect(t, c, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
				if r.Params.ProgressToken == "poll-1" {
					got.Add(1)
				}
			}})
			ctx := context.Background()
			p := &mcp.CallToolParams{Name: connector.ToolPrefix + "inbox_next", Arguments: map[string]any{"wait_ms": 400}}
			p.SetProgressToken("poll-1")
			if res, err := cs.CallTool(ctx, p); err != nil || res.IsError {
				t.Fatalf("inbox_next: %v %+v", err, res)
			}
			if n := got.Load(); n < 3 {
				t.Fatalf("%d progress notifications during a 400 ms poll at a 40 ms interval", n)
			}
		})
	}
}

// TestResourcesShowNewest: the timeline resource shows the newest
// records, not seq 1–100; the rooms resource lists every known room.
func TestResourcesShowNewest(t *testing.T) {
	h := newTestHost(t, &adphost.Options{RateLimits: adphost.Unlimited()})
	c := newConnector(t, "newest", h)
	roomID := createRoom(t, c, h, "public")
	for i := range 120 {
		c.call("room_send_message", map[string]any{"room_id": roomID, "content": fmt.Sprintf("m%d", i)})
	}
	for range 54 {
		createRoom(t, c, h, "public")
	}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			cs := tr.connect(t, c, nil)
			ctx := context.Background()
			rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: connector.RoomURI(roomID, "timeline")})
			if err != nil {
				t.Fatal(err)
			}
			text := rr.Contents[0].Text
			if !strings.Contains(text, `"m119"`) || strings.Contains(text, `"seq":1,`) {
				t.Errorf("timeline resource lacks the newest record or starts at seq 1: %.300s", text)
			}
			rr, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: connector.URIRooms})
			if err != nil {
				t.Fatal(err)
			}
			var rooms struct {
				Rooms []json.RawMessage `json:"rooms"`
			}
			if err := json.Unmarshal([]byte(rr.Contents[0].Text), &rooms); err != nil || len(rooms.Rooms) != 55 {
				t.Errorf("rooms resource lists %d rooms, want 55 (%v)", len(rooms.Rooms), err)
			}
		})
	}
}
