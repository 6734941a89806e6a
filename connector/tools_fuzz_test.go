package connector

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentprotocols/go-sdk/internal/strictjson"
	"github.com/agentprotocols/go-sdk/internal/typeschema"
)

// FuzzToolArgs: for any arguments, validation never panics; it gives the
// verdict, and the error an agent sees, of the reference below (strict
// JSON, then depth, then the library's own decoding, three passes), and
// on success the same instance; arguments the published schema accepts
// always decode into the tool's Go input type (the schema and the type
// cannot disagree about a valid call).
func FuzzToolArgs(f *testing.F) {
	for _, s := range []string{
		`{}`, `null`, ``, `{"room_id":"r","content":"x"}`,
		`{"room_id":"r","content":"x","mentions":["did:agent:abcdefgh"],"base_seq":3,"base_hash":"h","on_head_mismatch":"reject","extra":{"a":[1,2]}}`,
		`{"draft_id":"d","action":"revise","content":"","payload":{}}`,
		`{"ids":["a"],"action":"defer","defer_until":9007199254740991}`,
		`{"room_id":"r","room_id":"s"}`, `{"wait_ms":50000,"kinds":["room.mention"]}`,
		`{"room_id":"r","content":"x","extra":{"a":1,"a":1e400}}`,
		`{"room_id":"r","content":"x","base_seq":1.0000000000000001,"extra":{"x":[-0,0.1,1E2]}}`,
		`{"room_id":"r","content":"x","extra":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}`,
		`{"room_id":"r","content":"x","extra":` + strings.Repeat("[", 70) + `1e400` + strings.Repeat("]", 70) + `}`,
		`{"room_id":"r","content":"x","extra":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}`,
		`{"room_id":"\ud800","content":"x"} {}`, "{\"room_id\":\"\xff\"}",
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
		err := validateArgs(tl.schema, json.RawMessage(args))
		refInst, refErr := validateArgsReference(tl.schema, json.RawMessage(args))
		if (err == nil) != (refErr == nil) {
			t.Fatalf("%q: error %v, the reference's %v", args, err, refErr)
		}
		if err != nil {
			if _, ok := err.(*ToolError); !ok {
				t.Fatalf("validation error %T", err)
			}
		}
		if refInst == nil {
			// Refused before the schema: the same words.
			if te := err.(*ToolError); te.Message != refErr.Message || !bytes.Equal(te.Data, refErr.Data) {
				t.Fatalf("%q: error %s, the reference's %s", args, te.Message, refErr.Message)
			}
			return
		}
		// The schema judged the reference's instance: the same instance
		// gets the same judgement (whose words list unexpected members in
		// the library's map order).
		b := []byte(args)
		if t := bytes.TrimSpace(b); len(t) == 0 || string(t) == "null" {
			b = []byte("{}")
		}
		inst, ierr := typeschema.DecodeInstance(b, maxArgsDepth)
		if ierr != nil || !reflect.DeepEqual(inst, refInst) {
			t.Fatalf("%q: instance %#v (%v), the reference's %#v", args, inst, ierr, refInst)
		}
		if err != nil {
			return
		}
		in := reflect.New(tl.in).Interface()
		if err := decodeArgs(json.RawMessage(args), in); err != nil {
			t.Fatalf("schema-valid arguments %s do not decode into %v: %v", args, tl.in, err)
		}
	})
}

// validateArgsReference is validateArgs as three passes (strictjson's
// check, its depth, then the schema library's own decoding with
// encoding/json): the reference FuzzToolArgs holds the one-pass decoding
// to. It returns the instance it validated, if it got that far.
func validateArgsReference(cs *jsonschema.Schema, args json.RawMessage) (any, *ToolError) {
	if len(args) > maxArgsBytes {
		return nil, argError("", "arguments are larger than 1048576 bytes")
	}
	if t := bytes.TrimSpace(args); len(t) == 0 || string(t) == "null" {
		args = json.RawMessage("{}")
	}
	if err := strictjson.Validate(args); err != nil {
		field, reason := "", err.Error()
		if rest, ok := strings.CutPrefix(reason, "json at "); ok {
			if p, r, ok := strings.Cut(rest, ": "); ok && strings.HasPrefix(p, "/") {
				field, reason = p, r
			}
		}
		return nil, argError(field, clipMessage(reason))
	}
	if strictjson.Depth(args) > maxArgsDepth {
		return nil, argError("", "arguments are nested deeper than 64")
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return nil, argError("", clipMessage(err.Error()))
	}
	if err := cs.Validate(inst); err != nil {
		ve, ok := err.(*jsonschema.ValidationError)
		if !ok {
			return inst, argError("", clipMessage(err.Error()))
		}
		field, reason := firstCause(ve)
		return inst, argError(field, clipMessage(reason))
	}
	return inst, nil
}

// BenchmarkToolArgs compares a tool call's argument path (validateArgs,
// then decodeArgs into the input type) with its reference (the three
// passes of validateArgsReference, then a strict check and decode) on
// room_send_message's arguments: as the CPU benchmark of
// cmd/agent-protocols-connector sends them, and with every member.
func BenchmarkToolArgs(b *testing.B) {
	tl, _ := LookupTool(ToolPrefix + "room_send_message")
	for _, args := range []struct{ name, json string }{
		{"short", `{"content":"benchmark message","room_id":"r_01JDBZ6Q8J4V0M5T9XKQ3E7H2C"}`},
		{"full", `{"room_id":"r_01JDBZ6Q8J4V0M5T9XKQ3E7H2C","content":"a longer message that mentions someone and refers to an earlier event","mentions":["did:agent:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"],"references":["sha256:abc"],"base_seq":42,"base_hash":"sha256:def","on_head_mismatch":"hold","extra":{"priority":1,"tags":["a","b"]}}`},
	} {
		raw := json.RawMessage(args.json)
		b.Run(args.name+"/one-pass", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var in SendMessageInput
				if err := validateArgs(tl.schema, raw); err != nil {
					b.Fatal(err)
				}
				if err := decodeArgs(raw, &in); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(args.name+"/reference", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var in SendMessageInput
				if _, err := validateArgsReference(tl.schema, raw); err != nil {
					b.Fatal(err)
				}
				if err := strictjson.Validate(raw); err != nil {
					b.Fatal(err)
				}
				if err := unmarshalArgs(raw, &in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
