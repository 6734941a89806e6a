package packs

import (
	"errors"
	"slices"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/internal/fixtures"
)

// Payloads of the seed's JSON examples (ADP 2026-07-04), from the one copy
// in internal/fixtures.
var (
	seedRoomCreate     = string(fixtures.SeedPayload("§9 room.create"))
	seedTypes          = member(seedRoomCreate, "types")
	seedRoomUpdate     = string(fixtures.SeedPayload("§9.4 room.update"))
	seedRoomJoin       = string(fixtures.SeedPayload("§10.2 room.join"))
	seedRoleUpdate     = string(fixtures.SeedPayload("§10.4 room.member.role.update"))
	seedJoinReview     = string(fixtures.SeedPayload("§11 room.join.review"))
	seedJoinRequestObj = member(seedJoinReview, "request")
	seedMessage6       = string(fixtures.SeedPayload("§6 message.create"))
	seedMessage12      = string(fixtures.SeedPayload("§12 message.create"))
	seedTypeDefine     = string(fixtures.SeedPayload("§13.4 type.define"))
	seedFinding        = string(fixtures.SeedPayload("§13.4 review.finding"))
)

// member returns the raw value of a top-level member of a JSON object.
func member(obj, name string) string {
	var m map[string]jsontext.Value
	if err := json.Unmarshal([]byte(obj), &m); err != nil {
		panic(err)
	}
	return string(m[name])
}

func TestBuiltinPayloads(t *testing.T) {
	rows := []struct {
		name, typ, payload string
		badAt              string // "-" for valid
	}{
		{"§9 room.create", "room.create", seedRoomCreate, "-"},
		{"room.create minimal", "room.create", `{"topic":"t","visibility":"private","start_time":1,"end_time":2}`, "-"},
		{"room.create missing end_time", "room.create", `{"topic":"t","visibility":"public","start_time":1}`, ""},
		{"room.create bad visibility", "room.create", `{"topic":"t","visibility":"secret","start_time":1,"end_time":2}`, "/visibility"},
		{"room.create bad declaration", "room.create", `{"topic":"t","visibility":"public","start_time":1,"end_time":2,"types":[{"use":"adp:reactions/1.0","pack":"https://x.example/p.json"}]}`, "/types/0"},
		{"room.create unknown member", "room.create", `{"topic":"t","visibility":"public","start_time":1,"end_time":2,"room_id":"r"}`, ""},
		{"§9.4 room.update", "room.update", seedRoomUpdate, "-"},
		{"room.update clears optional fields", "room.update", `{"tags":[],"agenda":"","policy":{}}`, "-"},
		{"room.update empty", "room.update", `{}`, ""},
		{"room.update visibility", "room.update", `{"visibility":"private"}`, ""},
		{"room.update types", "room.update", `{"types":[]}`, ""},
		{"§10.2 room.join direct", "room.join", seedRoomJoin, "-"},
		{"room.join with request", "room.join", `{"role":"speaker","request_id":"jr_01J8ZM7A3G2T9B4Q6X8R0N1P2Q"}`, "-"},
		{"room.join request and perspective", "room.join", `{"role":"speaker","request_id":"jr_1","perspective":"x"}`, ""},
		{"room.join bad role", "room.join", `{"role":"expert"}`, "/role"},
		{"§11 room.join.review", "room.join.review", seedJoinReview, "-"},
		{"room.join.review reject without role", "room.join.review", `{"request":` + seedJoinRequestObj + `,"decision":"reject","reason":"off topic"}`, "-"},
		{"§11 approve requires role", "room.join.review", `{"request":` + seedJoinRequestObj + `,"decision":"approve"}`, ""},
		{"room.join.review request with token", "room.join.review", `{"request":{"id":"jr_1","room_id":"r","applicant":"` + agentA + `","role":"speaker","created_at":1,"expires_at":2,"jwt":"x"},"decision":"reject"}`, "/request"},
		{"room.leave", "room.leave", `{"reason":"done","references":["` + hashA + `"]}`, "-"},
		{"room.leave empty", "room.leave", `{}`, "-"},
		{"room.leave bad reference", "room.leave", `{"references":["x"]}`, "/references/0"},
		{"§10.4 room.member.role.update", "room.member.role.update", seedRoleUpdate, "-"},
		{"room.member.role.update no role", "room.member.role.update", `{"member":"` + agentA + `"}`, ""},
		{"§10.5 room.member.remove", "room.member.remove", `{"member":"` + agentA + `","ban":true,"reason":"spam","references":["` + hashA + `"],"extra":{}}`, "-"},
		{"room.member.remove bad member", "room.member.remove", `{"member":"alice"}`, "/member"},
		{"room.close", "room.close", `{"reason":"consensus reached"}`, "-"},
		{"room.close extra member", "room.close", `{"summary":"x"}`, ""},
		{"room.cancel", "room.cancel", `{}`, "-"},
		{"room.cancel not object", "room.cancel", `[]`, ""},
		{"§13.4 type.define", "type.define", seedTypeDefine, "-"},
		{"type.define import", "type.define", `{"use":"adp:moderation/1.0","types":["turn.update"],"overrides":{"turn.update":{"roles":["moderator","speaker"]}}}`, "-"},
		{"type.define reserved name", "type.define", `{"type":"room.topic","kind":"signal","title":"x","schema":{}}`, "/type"},
		{"§6 message.create", "message.create", seedMessage6, "-"},
		{"§12 message.create", "message.create", seedMessage12, "-"},
		{"§12 JSON object content", "message.create", `{"content_type":"application/json","content":{"a":[1,2]}}`, "-"},
		{"§12 content is a string or object", "message.create", `{"content_type":"application/json","content":[1,2]}`, "/content"},
		{"§12 content number", "message.create", `{"content_type":"application/json","content":42}`, "/content"},
		{"message.create empty content_type", "message.create", `{"content_type":"","content":"x"}`, "/content_type"},
	}
	covered := map[string]bool{}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			err := ValidateBuiltin(row.typ, []byte(row.payload))
			if row.badAt == "-" {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				covered[row.typ+"+"] = true
				return
			}
			ie := wantCode(t, err, "invalid_event")
			wantLocation(t, err, row.badAt)
			var data struct {
				Instance string `json:"instance_location"`
				Keyword  string `json:"keyword_location"`
			}
			if err := json.Unmarshal(ie.Data, &data); err != nil || data.Instance != row.badAt || data.Keyword == "" {
				t.Fatalf("Data %s: %v", ie.Data, err)
			}
			covered[row.typ+"-"] = true
		})
	}
	for _, typ := range BuiltinTypes() {
		if !covered[typ+"+"] || !covered[typ+"-"] {
			t.Errorf("%s lacks a valid or an invalid row", typ)
		}
	}
}

func TestBuiltinMisc(t *testing.T) {
	want := []string{"room.create", "room.update", "room.join", "room.join.review", "room.leave",
		"room.member.role.update", "room.member.remove", "room.close", "room.cancel", "type.define", "message.create"}
	if !slices.Equal(BuiltinTypes(), want) {
		t.Fatalf("BuiltinTypes = %v", BuiltinTypes())
	}
	for _, typ := range want {
		if !IsBuiltin(typ) || ValidTypeName(typ) {
			t.Errorf("%s: IsBuiltin %v ValidTypeName %v", typ, IsBuiltin(typ), ValidTypeName(typ))
		}
	}
	wantCode(t, ValidateBuiltin("reaction.create", []byte(`{}`)), "invalid_event")
	// Not strict JSON: duplicate names, unsafe numbers, trailing data.
	for _, p := range []string{`{"reason":"a","reason":"b"}`, `{"references":[],"extra":{"n":1e400}}`, `{} {}`, ``} {
		err := ValidateBuiltin("room.close", []byte(p))
		wantCode(t, err, "invalid_event")
	}
	// The Registry routes built-ins to the kernel schemas.
	var r Registry
	if err := r.Validate("message.create", []byte(seedMessage12)); err != nil {
		t.Fatal(err)
	}
	wantCode(t, r.Validate("message.create", []byte(`{"content_type":"text/plain","content":null}`)), "invalid_event")
	wantCode(t, r.Validate("room.leave", []byte(`{"x":1}`)), "invalid_event")
}

func TestTypeNames(t *testing.T) {
	for name, ok := range map[string]bool{
		"review.finding": true, "poll.vote": true, "a.b.c": true, "x1.y_2-z": true, "message.edit": true,
		"review": false, "Review.finding": false, "room.topic": false, "type.alias": false,
		"message.create": false, ".a": false, "a.": false, "a..b": false, "-a.b": false, "a.b ": false, "": false,
	} {
		if ValidTypeName(name) != ok {
			t.Errorf("ValidTypeName(%q) = %v", name, !ok)
		}
		_, err := ParseDeclaration([]byte(`{"type":` + jsonString(name) + `,"kind":"signal","title":"t","schema":{}}`))
		if (err == nil) != ok {
			t.Errorf("declaring %q: %v", name, err)
		}
	}
}

func jsonString(s string) string {
	b, err := jsontext.AppendQuote(nil, s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestSchemaErrorIsAvailable(t *testing.T) {
	err := ValidateBuiltin("room.join", []byte(`{"role":"expert"}`))
	var se *SchemaError
	if !errors.As(err, &se) || se.KeywordLocation != "/$defs/role/enum" {
		t.Fatalf("%#v", se)
	}
}
