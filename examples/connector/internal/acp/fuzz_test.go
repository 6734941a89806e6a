package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"testing"
)

// FuzzServe feeds arbitrary outer lines (seeded with every shape the
// proxy handles) to a proxy whose agent advertised acp; whatever comes
// in, the proxy must not panic, and every line it writes is one JSON-RPC
// 2.0 object.
func FuzzServe(f *testing.F) {
	seeds := []string{
		`{"jsonrpc":"2.0","id":1,"method":"_proxy/initialize","params":{"protocolVersion":1}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"agentCapabilities":{"mcpCapabilities":{"acp":true}}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[{"type":"acp","name":"x","serverId":"x:1"}]}}`,
		`{"jsonrpc":"2.0","id":"a","method":"_proxy/successor","params":{"method":"mcp/connect","params":{"serverId":"agent-protocols"}}}`,
		`{"jsonrpc":"2.0","id":"b","method":"_proxy/successor","params":{"method":"mcp/message","params":{"connectionId":"c","method":"tools/list","params":null}}}`,
		`{"jsonrpc":"2.0","method":"_proxy/successor","params":{"method":"mcp/disconnect","params":{"connectionId":"c"}}}`,
		`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":2}}`,
		`{"jsonrpc":"2.0","id":3,"method":"_proxy/successor","params":[1]}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"x"}}`,
		`[{"jsonrpc":"2.0"}]`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		in := bytes.NewBufferString(seeds[0] + "\n" + seeds[1] + "\n" + seeds[2] + "\n")
		in.Write(bytes.ReplaceAll(line, []byte("\n"), []byte(" ")))
		in.WriteByte('\n')
		var out bytes.Buffer
		if err := Serve(context.Background(), in, &out, &Options{Server: testServer(), MaxMessageBytes: 1 << 16}); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(&out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil || string(m["jsonrpc"]) != `"2.0"` {
				t.Fatalf("wrote %q", sc.Bytes())
			}
		}
	})
}
