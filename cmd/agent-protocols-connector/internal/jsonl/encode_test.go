package jsonl

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// checkEncodeResult fails unless encodeResult writes resp exactly as
// jsonrpc.EncodeMessage does, or declines it.
func checkEncodeResult(t *testing.T, resp *jsonrpc.Response) {
	t.Helper()
	got, ok := encodeResult(resp)
	want, err := jsonrpc.EncodeMessage(resp)
	if !ok {
		return
	}
	if err != nil {
		t.Fatalf("encodeResult wrote %s where EncodeMessage fails: %v", got, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encodeResult:\n%s\nEncodeMessage:\n%s", got, want)
	}
}

// TestEncodeResult: the connector's responses are written byte for byte
// as the go-sdk's EncodeMessage writes them, ids and results that need
// escaping included; error responses and results with line breaks are
// left to EncodeMessage.
func TestEncodeResult(t *testing.T) {
	result, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": `{"a":"<b>&\u2028"}`}}, "structuredContent": map[string]any{"a": "<b>&"}})
	for _, id := range []any{float64(0), float64(-7), float64(1 << 60), "", "x", `<a href="&">`, "é\u2028\x01", "\\"} {
		mid, err := jsonrpc.MakeID(id)
		if err != nil {
			t.Fatal(err)
		}
		resp := &jsonrpc.Response{ID: mid, Result: result}
		if _, ok := encodeResult(resp); !ok {
			t.Fatalf("id %#v: declined", id)
		}
		checkEncodeResult(t, resp)
	}
	one, _ := jsonrpc.MakeID(float64(1))
	for _, resp := range []*jsonrpc.Response{
		{ID: one, Error: errors.New("x"), Result: result},
		{ID: one},
		{ID: one, Result: json.RawMessage("{\n}")},
		{Result: result},
	} {
		if b, ok := encodeResult(resp); ok {
			t.Errorf("%+v: wrote %s, want it declined", resp, b)
		}
	}
}

// FuzzEncodeResult: for any string id and any JSON result as the go-sdk
// marshals it, encodeResult agrees with EncodeMessage.
func FuzzEncodeResult(f *testing.F) {
	f.Add("1", `{"content":[{"type":"text","text":"<&>"}]}`)
	f.Add("\u2028", `"x"`)
	f.Add("", `[1,2.5e3,null,true,{"k":"\u0000"}]`)
	f.Fuzz(func(t *testing.T, id, result string) {
		var v any
		if json.Unmarshal([]byte(result), &v) != nil {
			return
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf) // as the go-sdk marshals a result
		enc.SetEscapeHTML(false)
		if enc.Encode(v) != nil {
			return
		}
		raw := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		mid, err := jsonrpc.MakeID(id)
		if err != nil {
			return
		}
		checkEncodeResult(t, &jsonrpc.Response{ID: mid, Result: raw})
	})
}
