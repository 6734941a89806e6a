package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoArgs struct {
	Text string `json:"text"`
}

func echoServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
	})
	return s
}

// lineConn is a raw newline-delimited JSON-RPC peer on a pair of pipes.
type lineConn struct {
	w  io.Writer
	sc *bufio.Scanner
}

func (c *lineConn) roundTrip(b testing.TB, line string) map[string]any {
	if _, err := io.WriteString(c.w, line+"\n"); err != nil {
		b.Fatal(err)
	}
	for c.sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(c.sc.Bytes(), &m); err != nil {
			b.Fatal(err)
		}
		if m["id"] != nil {
			return m
		}
	}
	b.Fatal("stream ended")
	return nil
}

func pipes(b testing.TB, serve func(io.Reader, io.Writer)) *lineConn {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() { serve(inR, outW); outW.Close() }()
	b.Cleanup(func() { inW.Close() })
	sc := bufio.NewScanner(outR)
	sc.Buffer(nil, 1<<20)
	return &lineConn{w: inW, sc: sc}
}

const mcpInit = `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}`

// BenchmarkToolCall measures one MCP tools/call round trip over stdio
// framing (the go-sdk IOTransport that `connector serve` uses) and the
// same call as mcp/message through the ACP proxy, both over in-process
// pipes with the same trivial tool: the difference is the proxy's cost.
func BenchmarkToolCall(b *testing.B) {
	call := `{"name":"echo","arguments":{"text":"hello"}}`
	b.Run("stdio", func(b *testing.B) {
		c := pipes(b, func(r io.Reader, w io.Writer) {
			t := &mcp.IOTransport{Reader: io.NopCloser(r), Writer: nopCloser{w}}
			echoServer().Run(context.Background(), t)
		})
		c.roundTrip(b, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":`+mcpInit+`}`)
		io.WriteString(c.w, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
		b.ResetTimer()
		for i := range b.N {
			if m := c.roundTrip(b, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, i+1, call)); m["result"] == nil {
				b.Fatal(m)
			}
		}
	})
	b.Run("acp", func(b *testing.B) {
		c := pipes(b, func(r io.Reader, w io.Writer) { Serve(context.Background(), r, w, &Options{Server: echoServer()}) })
		fwd := c.roundTrip(b, `{"jsonrpc":"2.0","id":"i","method":"_proxy/initialize","params":{"protocolVersion":1}}`)
		c.roundTrip(b, fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"agentCapabilities":{"mcpCapabilities":{"acp":true}}}}`, fwd["id"]))
		fwd = c.roundTrip(b, `{"jsonrpc":"2.0","id":"s","method":"session/new","params":{"cwd":"/","mcpServers":[]}}`)
		sid := dig(fwd, "params", "params", "mcpServers").([]any)[0].(map[string]any)["serverId"]
		c.roundTrip(b, fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"sessionId":"s"}}`, fwd["id"]))
		conn := c.roundTrip(b, fmt.Sprintf(`{"jsonrpc":"2.0","id":"c","method":"_proxy/successor","params":{"method":"mcp/connect","params":{"serverId":%q}}}`, sid))
		cid := dig(conn, "result", "connectionId").(string)
		msg := func(id any, method, params string) string {
			return fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"method":"_proxy/successor","params":{"method":"mcp/message","params":{"connectionId":%q,"method":%q,"params":%s}}}`, id, cid, method, params)
		}
		c.roundTrip(b, msg(0, "initialize", mcpInit))
		io.WriteString(c.w, fmt.Sprintf(`{"jsonrpc":"2.0","method":"_proxy/successor","params":{"method":"mcp/message","params":{"connectionId":%q,"method":"notifications/initialized"}}}`, cid)+"\n")
		b.ResetTimer()
		for i := range b.N {
			if m := c.roundTrip(b, msg(i+1, "tools/call", call)); m["result"] == nil {
				b.Fatal(m)
			}
		}
	})
}

// BenchmarkToolCallStateless is BenchmarkToolCall's acp case in the
// proxy/* revision: each tools/call is one stateless mcp/message of MCP
// 2026-07-28, answered with the outcome carrier.
func BenchmarkToolCallStateless(b *testing.B) {
	c := pipes(b, func(r io.Reader, w io.Writer) { Serve(context.Background(), r, w, &Options{Server: echoServer()}) })
	fwd := c.roundTrip(b, `{"jsonrpc":"2.0","id":"i","method":"proxy/initialize","params":{"protocolVersion":1}}`)
	c.roundTrip(b, fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"agentCapabilities":{"mcpCapabilities":{"acp":true}}}}`, fwd["id"]))
	fwd = c.roundTrip(b, `{"jsonrpc":"2.0","id":"s","method":"session/new","params":{"cwd":"/","mcpServers":[]}}`)
	sid := dig(fwd, "params", "params", "mcpServers").([]any)[0].(map[string]any)["serverId"]
	c.roundTrip(b, fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"sessionId":"s"}}`, fwd["id"]))
	msg := func(i int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"proxy/successor","params":{"method":"mcp/message","params":{"serverId":%q,"requestId":"r-%d","method":"tools/call",`+
			`"params":{"name":"echo","arguments":{"text":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}}}`, i, sid, i)
	}
	c.roundTrip(b, msg(0))
	b.ResetTimer()
	for i := range b.N {
		if m := c.roundTrip(b, msg(i+1)); dig(m, "result", "result") == nil {
			b.Fatal(m)
		}
	}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
