package jsonl

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// framingSeeds are inputs the framing must survive: good and bad
// messages, blank lines of JSON and of other white space, long lines.
var framingSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"ping"}`, "hello", "{}", `[{"jsonrpc":"2.0","id":78,"method":"ping"}]`,
	`{"jsonrpc":"1.0","id":5,"method":"ping"}`, `{"jsonrpc":"2.0","id":null,"method":"ping"}`,
	`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`, "\r\n\n", strings.Repeat("x", 300),
	`{"jsonrpc":"2.0","id":"a","result":{}}`, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\r\n{", "\v\n \t\n\u00a0",
	strings.Repeat(" ", 300) + "\n{}", strings.Repeat("\v", 300), "a\r\r\n" + strings.Repeat("b", 257) + "\r\n",
}

// FuzzReader holds the Reader to a model of the framing: the input split
// at LF; a segment of JSON white space only is skipped whatever its
// length; one longer than the bound (its line ending counted, up to CRLF)
// is ErrTooLong; any other is returned without its trailing CRs.
func FuzzReader(f *testing.F) {
	for _, s := range framingSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, input string) {
		const max = 256
		var want []string
		segs := strings.Split(input, "\n")
		for i, seg := range segs {
			n := len(seg)
			if i < len(segs)-1 {
				n++ // its LF
			}
			switch {
			case Blank([]byte(seg)):
			case n > max+2:
				want = append(want, "TOO LONG")
			default:
				want = append(want, strings.TrimRight(seg, "\r"))
			}
		}
		r := NewReader(strings.NewReader(input), max)
		var got []string
		for {
			line, err := r.Next()
			if errors.Is(err, ErrTooLong) {
				got = append(got, "TOO LONG")
				continue
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, string(line))
		}
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") || len(got) != len(want) {
			t.Fatalf("lines %q, want %q", got, want)
		}
	})
}

// FuzzTransport: any input is split into lines, each non-blank line
// becomes either exactly one message for the server or exactly one
// JSON-RPC error answer, every answer is one well-formed JSON-RPC line,
// and nothing panics or stops early.
func FuzzTransport(f *testing.F) {
	for _, s := range framingSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, input string) {
		const maxLine = 256
		var out bytes.Buffer
		c := newConn(&out)
		var msgs int
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range c.in {
				msgs++
			}
		}()
		c.readLoop(NewReader(strings.NewReader(input), maxLine), maxLine)
		wg.Wait()
		lines := 0
		for _, l := range strings.Split(input, "\n") {
			if !Blank([]byte(l)) {
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
