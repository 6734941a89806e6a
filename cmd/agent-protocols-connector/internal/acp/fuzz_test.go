package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
)

// fuzzSeeds are outer lines of both revisions, as the tests send them;
// "$SID" stands for the serverId the proxy declared in the session the
// fuzz target sets up first.
var fuzzSeeds = []string{
	// Connected.
	`{"jsonrpc":"2.0","id":"a","method":"_proxy/successor","params":{"method":"mcp/connect","params":{"serverId":"$SID"}}}`,
	`{"jsonrpc":"2.0","id":"b","method":"_proxy/successor","params":{"method":"mcp/message","params":{"connectionId":"c","method":"tools/list","params":null}}}`,
	`{"jsonrpc":"2.0","method":"_proxy/successor","params":{"method":"mcp/disconnect","params":{"connectionId":"c"}}}`,
	`{"jsonrpc":"2.0","id":3,"method":"_proxy/successor","params":[1]}`,
	`{"jsonrpc":"2.0","id":4,"method":"_proxy/successor","params":{"method":"session/request_permission","params":{"sessionId":"s"},"_meta":{"k":1}}}`,
	// Stateless.
	`{"jsonrpc":"2.0","id":"m","method":"proxy/successor","params":{"method":"mcp/message","params":{"serverId":"$SID","requestId":"r-1","method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}}}`,
	`{"jsonrpc":"2.0","id":"m","method":"proxy/successor","params":{"method":"mcp/message","params":{"serverId":"$SID","requestId":"r-1","method":"tools/call","params":{"name":"progress","arguments":{},"_meta":{"progressToken":7,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}}}`,
	`{"jsonrpc":"2.0","id":"m","method":"proxy/successor","params":{"method":"mcp/message","params":{"serverId":"$SID","requestId":"r-1","method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}}}`,
	`{"jsonrpc":"2.0","id":"m","method":"proxy/successor","params":{"method":"mcp/message","params":{"serverId":"$SID","serverId":"x","requestId":"r","method":"tools/list"}}}`,
	`{"jsonrpc":"2.0","id":"m","method":"proxy/successor","params":{"method":"mcp/message","params":{"serverId":"$SID","requestId":7,"method":"tools/list"}}}`,
	`{"jsonrpc":"2.0","method":"proxy/successor","params":{"method":"mcp/message","params":{"serverId":"$SID","requestId":"r","method":"notifications/cancelled"}}}`,
	`{"jsonrpc":"2.0","id":"m","method":"proxy/successor","params":{"method":"mcp/connect","params":{"serverId":"$SID"}}}`,
	// Either.
	`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[{"type":"acp","name":"x","serverId":"x:1"}]}}`,
	`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"m"}}`,
	`{"jsonrpc":"2.0","id":5,"method":"proxy/initialize","params":{}}`,
	`{"jsonrpc":"2.0","id":5,"method":"_proxy/initialize","params":{}}`,
	`{"jsonrpc":"2.0","id":6,"method":"proxy/unknown"}`,
	`{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"x"}}`,
	`[{"jsonrpc":"2.0"}]`,
}

// FuzzServe feeds an arbitrary outer line to a proxy of either revision
// whose agent advertised acp and which declared a server in a session
// ("$SID" in the line becomes its serverId); a second line may cancel
// it. Whatever comes in, the proxy must not panic or hang, and every line
// it writes is one JSON-RPC 2.0 object.
func FuzzServe(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(false, []byte(s))
		f.Add(true, []byte(s))
	}
	f.Fuzz(func(t *testing.T, stateless bool, line []byte) {
		rev := Connected
		if stateless {
			rev = Stateless
		}
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		done := make(chan error, 1)
		go func() {
			done <- Serve(context.Background(), inR, outW, &Options{Server: testServer(), MaxMessageBytes: 1 << 16})
			outW.Close()
		}()
		out := bufio.NewScanner(outR)
		out.Buffer(nil, 1<<20)
		lines := make(chan []byte, 64)
		go func() {
			for out.Scan() {
				lines <- append([]byte(nil), out.Bytes()...)
			}
			close(lines)
		}()
		next := func() map[string]any {
			select {
			case b, ok := <-lines:
				if !ok {
					t.Fatal("output ended")
				}
				var m map[string]any
				if err := json.Unmarshal(b, &m); err != nil || m["jsonrpc"] != "2.0" {
					t.Fatalf("wrote %q", b)
				}
				return m
			case <-time.After(10 * time.Second):
				t.Fatal("no output")
				return nil
			}
		}
		write := func(s string) { io.WriteString(inW, s+"\n") }
		write(`{"jsonrpc":"2.0","id":1,"method":"` + rev.ProxyInitialize() + `","params":{"protocolVersion":1}}`)
		write(`{"jsonrpc":"2.0","id":` + jsonNum(next()["id"]) + `,"result":{"agentCapabilities":{"mcpCapabilities":{"acp":true}}}}`)
		next()
		write(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`)
		fwd := next()
		sid, _ := dig(fwd, "params", "params", "mcpServers").([]any)[0].(map[string]any)["serverId"].(string)
		write(`{"jsonrpc":"2.0","id":` + jsonNum(fwd["id"]) + `,"result":{"sessionId":"s"}}`)
		next()
		in := bytes.ReplaceAll(bytes.ReplaceAll(line, []byte("\n"), []byte(" ")), []byte("$SID"), []byte(sid))
		inW.Write(append(in, '\n'))
		write(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"m"}}`)
		inW.Close()
		for b := range lines {
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil || m["jsonrpc"] != "2.0" {
				t.Fatalf("wrote %q", b)
			}
		}
		select {
		case err := <-done:
			if err != nil && !strings.Contains(err.Error(), "closed pipe") {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Serve did not end at EOF")
		}
	})
}

func jsonNum(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
