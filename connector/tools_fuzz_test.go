package connector

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzToolArgs: for any arguments, validation never panics, and arguments
// the published schema accepts always decode into the tool's Go input
// type (the schema and the type cannot disagree about a valid call).
func FuzzToolArgs(f *testing.F) {
	for _, s := range []string{
		`{}`, `null`, ``, `{"room_id":"r","content":"x"}`,
		`{"room_id":"r","content":"x","mentions":["did:agent:abcdefgh"],"base_seq":3,"base_hash":"h","on_head_mismatch":"reject","extra":{"a":[1,2]}}`,
		`{"draft_id":"d","action":"revise","content":"","payload":{}}`,
		`{"ids":["a"],"action":"defer","defer_until":9007199254740991}`,
		`{"room_id":"r","room_id":"s"}`, `{"wait_ms":50000,"kinds":["room.mention"]}`,
	} {
		f.Add("room_send_message", s)
		f.Add("draft_commit", s)
		f.Add("inbox_ack", s)
		f.Add("inbox_next", s)
	}
	f.Fuzz(func(t *testing.T, name, args string) {
		tl, ok := LookupTool(ToolPrefix + name)
		if !ok {
			return
		}
		if err := validateArgs(tl.schema, json.RawMessage(args)); err != nil {
			if _, ok := err.(*ToolError); !ok {
				t.Fatalf("validation error %T", err)
			}
			return
		}
		in := reflect.New(tl.in).Interface()
		if err := decodeArgs(json.RawMessage(args), in); err != nil {
			t.Fatalf("schema-valid arguments %s do not decode into %v: %v", args, tl.in, err)
		}
	})
}
