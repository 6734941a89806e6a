package packs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/raceflag"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
	"github.com/agentprotocols/go-sdk/internal/typeschema"
)

// declarationSeeds seed the declaration fuzz targets.
var declarationSeeds = []string{
	`{"use":"adp:reactions/1.0"}`,
	`{"use":"adp:deliberation/1.0","types":["poll.vote"],"overrides":{"poll.vote":{"roles":["moderator","speaker","observer"],"instructions":"","rate_hint":3}}}`,
	`{"pack":"https://p.example/x.json","digest":"sha256:Mg4SSnKBKXJ1_HhySVqmXv-Pa9WPVvTRm9CfIayMpIo"}`,
	seedTypeDefine,
	`{"type":"a.b","kind":"signal","title":"t","schema":{"$defs":{"n":{"items":{"$ref":"#/$defs/n"}}},"$ref":"#/$defs/n"},"extra":{"z":1,"a":[0.5]},"status":"disabled","max_payload_hint":9}`,
	`{"type":"a.b","kind":"signal","title":"t","schema":{"$ref":"file:///etc/passwd"}}`,
	`{"type":"a.b","kind":"message","title":"t","schema":{"$schema":"http://json-schema.org/draft-07/schema#"}}`,
	`{"type":"room.b","kind":"message","title":"t","schema":{}}`,
	`{"use":"adp:reactions/1.0","overrides":{"reaction.create":{"kind":"message"}}}`,
}

// FuzzParseDeclaration: parsing never panics and fails only with
// invalid_event; an accepted declaration re-serializes to a fixed point,
// and when it applies, the registry snapshot survives JSON and Restore
// unchanged.
func FuzzParseDeclaration(f *testing.F) {
	for _, s := range declarationSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseDeclaration(b)
		if err != nil {
			var ie *identity.Error
			if !errors.As(err, &ie) || ie.Code != identity.CodeInvalidEvent {
				t.Fatalf("rejection is not invalid_event: %v", err)
			}
			return
		}
		m, err := d.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON: %v", err)
		}
		d2, err := ParseDeclaration(m)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", m, err)
		}
		if m2, _ := d2.MarshalJSON(); string(m2) != string(m) {
			t.Fatalf("not a fixed point:\n%s\n%s", m, m2)
		}
		var r Registry
		if err := r.Declare(context.Background(), 1, d); err != nil {
			var ie *identity.Error
			if !errors.As(err, &ie) || (ie.Code != identity.CodeInvalidEvent && ie.Code != CodePackUnavailable) {
				t.Fatalf("Declare: %v", err)
			}
			return
		}
		s1, err := json.Marshal(r.Snapshot(), json.Deterministic(true))
		if err != nil {
			t.Fatal(err)
		}
		var snap Snapshot
		if err := strictjson.Unmarshal(s1, &snap); err != nil {
			t.Fatalf("snapshot %s does not re-parse: %v", s1, err)
		}
		r2, err := Restore(snap, nil)
		if err != nil {
			t.Fatalf("Restore(%s): %v", s1, err)
		}
		if s2, _ := json.Marshal(r2.Snapshot(), json.Deterministic(true)); string(s2) != string(s1) {
			t.Fatalf("snapshot round trip:\n%s\n%s", s1, s2)
		}
	})
}

// FuzzValidatePayload validates a payload against a fuzzed schema and
// against every registered and kernel schema. It checks that validation
// never panics, stays fast, and that the single-pass decoder accepts
// exactly what strictjson.Validate accepts.
func FuzzValidatePayload(f *testing.F) {
	reg := allPacksRegistry(f)
	var schemas []*typeschema.Schema
	for _, d := range reg.Definitions() {
		schemas = append(schemas, d.schema)
	}
	for _, b := range DefaultDraft.rules().builtins {
		schemas = append(schemas, DefaultDraft.kernel().payload[b.typ])
	}
	for _, p := range []string{benchReaction, benchPoll, seedRoomCreate, seedJoinReview, seedMessage12, seedTypeDefine, seedFinding,
		`{"operation":"merge_nodes","node_ids":["a"],"node_id":"b"}`, `{"session_id":"s","end_of_candidates":true}`,
		`{"event_id":"` + hashA + `","reaction":"x","score":-1.0000001}`, `[1,1.0]`, `{"a":{"a":"\u0061"}}`} {
		f.Add([]byte(`{"type":"object","properties":{"a":{"type":"integer","maximum":3}},"additionalProperties":false}`), []byte(p))
	}
	f.Add([]byte(`{"anyOf":[{"type":"string","pattern":"^a+$"},{"not":{"enum":[1,"x",null]}}],"uniqueItems":true,"items":{"const":{"k":[1]}}}`), []byte(`[{"k":[1.0]}]`))
	f.Add([]byte(`{"$defs":{"n":{"oneOf":[{"type":"array","items":{"$ref":"#/$defs/n"}},{"type":"number","exclusiveMinimum":0}]}},"$ref":"#/$defs/n"}`), []byte(`[[1,[2]],3]`))
	f.Add([]byte(`{"if":{"required":["a"]},"then":{"minProperties":2},"else":{"maxLength":2,"minLength":1}}`), []byte(`"éé"`))
	f.Add([]byte(`{"$ref":"#"}`), []byte(`1`))

	f.Fuzz(func(t *testing.T, schema, payload []byte) {
		start := time.Now()
		defer func() {
			if d := time.Since(start); d > 500*time.Millisecond && !raceflag.Enabled {
				t.Fatalf("slow (%v): schema %q payload %q", d, schema, payload)
			}
		}()
		v, err := typeschema.Decode(payload)
		if (err == nil) != (strictjson.Validate(payload) == nil) {
			t.Fatalf("typeschema.Decode and strictjson.Validate disagree on %q: %v", payload, err)
		}
		if err != nil {
			return
		}
		check := func(cs *typeschema.Schema) {
			if se := cs.Validate(v); se != nil && se.Message == "" {
				t.Fatalf("schema error without a message: %+v", se)
			}
		}
		for _, cs := range schemas {
			check(cs)
		}
		if cs, _, err := NewSchemaCache(1).compile(schema, defaultLimits); err == nil {
			check(cs)
		}
		for _, d := range reg.Definitions() {
			if err := reg.Validate(d.Type, payload); err != nil {
				var ie *identity.Error
				if !errors.As(err, &ie) || ie.Code != CodePayloadSchemaViolation {
					t.Fatalf("%s: %v", d.Type, err)
				}
			}
		}
	})
}
