package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzStdioFraming: any input is split into lines, each non-blank line
// becomes either exactly one message for the server or exactly one
// JSON-RPC error answer, every answer is one well-formed JSON-RPC line,
// and nothing panics or stops early.
func FuzzStdioFraming(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`, "hello", "{}", `[{"jsonrpc":"2.0","id":78,"method":"ping"}]`,
		`{"jsonrpc":"1.0","id":5,"method":"ping"}`, `{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`, "\r\n\n", strings.Repeat("x", 300),
		`{"jsonrpc":"2.0","id":"a","result":{}}`, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\r\n{", "\v\n \t\n\u00a0",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, input string) {
		const maxLine = 256
		var out bytes.Buffer
		c := &stdioConn{w: &out, in: make(chan jsonrpc.Message), done: make(chan struct{}),
			inflight: map[jsonrpc.ID]bool{}, cancelled: map[jsonrpc.ID]bool{}}
		var msgs int
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range c.in {
				msgs++
			}
		}()
		c.readLoop(bufio.NewReaderSize(strings.NewReader(input), 16), maxLine)
		wg.Wait()
		lines := 0
		for _, l := range strings.Split(input, "\n") {
			if !blank([]byte(l)) {
				lines++
			}
		}
		answers := 0
		for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
			if l == "" {
				continue
			}
			answers++
			var a struct {
				JSONRPC string         `json:"jsonrpc"`
				Error   *jsonrpc.Error `json:"error"`
			}
			var members map[string]json.RawMessage
			_ = json.Unmarshal([]byte(l), &members)
			if err := json.Unmarshal([]byte(l), &a); err != nil || a.JSONRPC != "2.0" || members["id"] == nil || a.Error == nil || a.Error.Code == 0 {
				t.Fatalf("answer %q is not a JSON-RPC error response with an id: %v", l, err)
			}
		}
		if msgs+answers != lines {
			t.Fatalf("%d lines gave %d messages and %d answers", lines, msgs, answers)
		}
	})
}
