package mcptools

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentprotocols/go-sdk/connector"
)

// sdkEncoding is a result as the go-sdk's JSON-RPC layer encodes it
// (marshalToRaw: encoding/json without HTML escaping of its own).
func sdkEncoding(t testing.TB, res any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(res); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// checkToolResult compares asToolResult's encoding with the go-sdk's encoding of
// the same result, for a tool result out (any JSON value) and a refusal.
func checkToolResult(t testing.TB, out []byte) {
	t.Helper()
	b, err := json.Marshal(json.RawMessage(out)) // as connector.Tool.Call encodes
	if err != nil {
		return
	}
	for _, isErr := range []bool{false, true} {
		r := &mcp.CallToolResult{StructuredContent: encodedJSON(b), Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, IsError: isErr}
		tr, ok := asToolResult(r)
		if !ok {
			t.Fatalf("%q not taken", b)
		}
		if got, want := sdkEncoding(t, tr), sdkEncoding(t, r); !bytes.Equal(got, want) {
			t.Fatalf("asToolResult:\n got %s\nwant %s", got, want)
		}
	}
}

func TestEncodeToolResult(t *testing.T) {
	for _, s := range toolResultSeeds {
		checkToolResult(t, []byte(s))
	}
	// A refusal as toolResultError makes it.
	r, err := toolResultError(&connector.ToolError{Code: "x", Message: "<a & \u2028 \"b\">", Source: connector.SourceConnector})
	if err != nil {
		t.Fatal(err)
	}
	tr, ok := asToolResult(r)
	if !ok || !bytes.Equal(sdkEncoding(t, tr), sdkEncoding(t, r)) {
		t.Fatalf("refusal: %v", ok)
	}
	// Anything else is left to the go-sdk.
	for _, r := range []mcp.Result{
		&mcp.CallToolResult{StructuredContent: json.RawMessage(`{}`), Content: []mcp.Content{&mcp.TextContent{Text: "{}"}}},
		&mcp.CallToolResult{StructuredContent: encodedJSON(`{}`), Content: []mcp.Content{&mcp.TextContent{Text: "{}"}}, Meta: mcp.Meta{"a": 1}},
		&mcp.CallToolResult{StructuredContent: encodedJSON(`{}`), Content: []mcp.Content{&mcp.TextContent{Text: "{}", Meta: mcp.Meta{"a": 1}}}},
		&mcp.CallToolResult{StructuredContent: encodedJSON(`{}`), Content: []mcp.Content{&mcp.ImageContent{}}},
		&mcp.CallToolResult{StructuredContent: encodedJSON(`{}`)},
		&mcp.CallToolResult{StructuredContent: encodedJSON(`{"a":"\u003c"}`), Content: []mcp.Content{&mcp.TextContent{Text: `{"a":"<"}`}}},
		&mcp.ListToolsResult{},
	} {
		if _, ok := asToolResult(r); ok {
			t.Errorf("%#v encoded", r)
		}
	}
}

var toolResultSeeds = []string{
	`{}`, `[]`, `null`, `1`, `"s"`,
	`{"status":"sent","record":{"seq":52,"hash":"6xh8"},"item":{"content":"benchmark message","mentions":[]}}`,
	`{"a":"<script>&amp;</script>","b":"\u2028\u2029","c":"quote \" backslash \\ tab \t nl \n","d":"\u0000\u001f\u007f","e":"é😀"}`,
	"{\"raw\":\"\xff invalid utf-8\"}",
	` { "spaced" : [ 1 , 2.5e3 , true , false , null ] } `,
}

func FuzzEncodeToolResult(f *testing.F) {
	for _, s := range toolResultSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		if !json.Valid(out) {
			return
		}
		checkToolResult(t, out)
	})
}
