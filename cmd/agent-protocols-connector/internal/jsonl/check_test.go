package jsonl

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Request ids the go-sdk would answer under another id (a fraction, an
// exponent, beyond 2^53, -0, null, not a string or number), and ids it
// echoes exactly.
var (
	unechoableIDs = []string{"1.5", "1e3", "-0", "1.0", "123456789012345678901234567890", "9007199254740993", "-9007199254740992", "null", "true", "[1]", "{}"}
	echoableIDs   = []string{"0", "7", "-5", "9007199254740991", "-9007199254740991", `"a"`, `""`, `"1.5"`}
)

// TestCheckRequestID: CheckRequestID refuses exactly the requests whose
// id the go-sdk could not echo; notifications and responses pass.
func TestCheckRequestID(t *testing.T) {
	for _, id := range unechoableIDs {
		if CheckRequestID([]byte(`{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`)) == nil {
			t.Errorf("id %s passed", id)
		}
	}
	for _, id := range echoableIDs {
		if err := CheckRequestID([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)); err != nil {
			t.Errorf("id %s: %v", id, err)
		}
	}
	for _, msg := range []string{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, `{"jsonrpc":"2.0","id":null,"result":{}}`, `[1]`} {
		if err := CheckRequestID([]byte(msg)); err != nil {
			t.Errorf("%s: %v", msg, err)
		}
	}
}

// FuzzRequestID: whatever id a request carries, the connector either
// refuses it (checkRequestID) or the go-sdk answers under exactly that id.
func FuzzRequestID(f *testing.F) {
	for _, id := range append(unechoableIDs, echoableIDs...) {
		f.Add(id)
	}
	f.Fuzz(func(t *testing.T, id string) {
		line := []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
		if !json.Valid(line) || CheckRequestID(line) != nil {
			return
		}
		msg, err := jsonrpc.DecodeMessage(line)
		if err != nil {
			return
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok || !req.ID.IsValid() {
			return
		}
		out, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: req.ID, Result: json.RawMessage("{}")})
		if err != nil {
			t.Fatal(err)
		}
		var sent, echoed struct {
			ID any `json:"id"`
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		if err := dec.Decode(&sent); err != nil {
			return
		}
		dec = json.NewDecoder(bytes.NewReader(out))
		dec.UseNumber()
		if err := dec.Decode(&echoed); err != nil {
			t.Fatal(err)
		}
		if sent.ID != echoed.ID {
			t.Fatalf("id %s answered under %s", id, out)
		}
	})
}
