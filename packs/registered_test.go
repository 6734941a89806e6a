package packs

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"testing"
)

func allPacksRegistry(t testing.TB) *Registry {
	t.Helper()
	r := NewRegistry(nil)
	var decls []string
	for _, id := range RegisteredPackIDs() {
		decls = append(decls, `{"use":"`+id+`"}`)
	}
	mustDeclare(t, r, 1, decls...)
	return r
}

func TestRegisteredPacksMatchAppendixA(t *testing.T) {
	sum := sha256.Sum256(RegisteredDocument())
	if got := hex.EncodeToString(sum[:8]); got != "bcbc5f57ff2e3519" {
		t.Errorf("embedded packs.json sha256 starts %s, want bcbc5f57ff2e3519 (the seed-era copy)", got)
	}
	wantIDs := []string{"adp:reactions/1.0", "adp:deliberation/1.0", "adp:curation/1.0", "adp:moderation/1.0", "adp:realtime/1.0"}
	if got := RegisteredPackIDs(); !slices.Equal(got, wantIDs) {
		t.Fatalf("RegisteredPackIDs = %v, want %v", got, wantIDs)
	}
	all := []Role{RoleModerator, RoleSpeaker, RoleObserver}
	ms := []Role{RoleModerator, RoleSpeaker}
	mod := []Role{RoleModerator}
	// Appendix A tables: type, kind, default roles, required payload fields.
	want := map[string][]struct {
		typ      string
		kind     Kind
		roles    []Role
		required []string
	}{
		"adp:reactions/1.0": {{"reaction.create", KindSignal, all, []string{"event_id", "reaction"}}},
		"adp:deliberation/1.0": {
			{"question.create", KindMessage, ms, []string{"question"}},
			{"proposal.create", KindMessage, ms, []string{"proposal_id", "title", "body"}},
			{"poll.create", KindMessage, ms, []string{"poll_id", "question", "options"}},
			{"poll.vote", KindSignal, ms, []string{"poll_event_id", "option_ids"}},
		},
		"adp:curation/1.0": {
			{"resource.add", KindMessage, ms, []string{"resource_type"}},
			{"graph.update", KindControl, mod, []string{"operation"}},
			{"artifact.create", KindControl, mod, []string{"artifact_id", "format", "title"}},
		},
		"adp:moderation/1.0": {
			{"turn.update", KindControl, mod, []string{"turn_id", "speaker"}},
			{"steer.create", KindSignal, ms, []string{"instruction"}},
		},
		"adp:realtime/1.0": {
			{"session.offer", KindSignal, ms, []string{"session_id", "session_type", "media", "description"}},
			{"session.answer", KindSignal, ms, []string{"session_id", "offer_event_id", "description"}},
			{"session.candidate", KindSignal, ms, []string{"session_id"}},
			{"session.close", KindSignal, ms, []string{"session_id"}},
		},
	}
	for id, types := range want {
		p, ok := RegisteredPack(id)
		if !ok {
			t.Fatalf("RegisteredPack(%s) missing", id)
		}
		if len(p.Types) != len(types) {
			t.Fatalf("%s has %d types, want %d", id, len(p.Types), len(types))
		}
		for i, w := range types {
			d := p.Types[i]
			if d.Type != w.typ || d.Kind != w.kind || !slices.Equal(d.AllowedRoles(), w.roles) {
				t.Errorf("%s: got %s %s %v, want %s %s %v", id, d.Type, d.Kind, d.AllowedRoles(), w.typ, w.kind, w.roles)
			}
			if d.Status != StatusActive || d.Version != "1.0" {
				t.Errorf("%s: status %q version %q", d.Type, d.Status, d.Version)
			}
			// An empty object must fail exactly on the table's required fields.
			se := d.schema.Validate(map[string]any{})
			if len(w.required) > 0 && (se == nil || !strings.Contains(se.Message, w.required[0])) {
				t.Errorf("%s: {} error %v, want missing %v", d.Type, se, w.required)
			}
		}
	}
	if _, ok := RegisteredPack("adp:reactions/2.0"); ok {
		t.Error("unknown pack resolved")
	}
}

// TestRegisteredTypePayloads: one row per registered type, a realistic
// payload that must validate and a malformed one that must fail at the
// given instance location.
func TestRegisteredTypePayloads(t *testing.T) {
	r := allPacksRegistry(t)
	rows := []struct {
		typ, good, bad, badAt string
	}{
		{"reaction.create",
			`{"event_id":"` + hashA + `","reaction":"agree","score":0.75}`,
			`{"event_id":"` + hashA + `","reaction":"agree","score":1.25}`, "/score"},
		{"question.create",
			`{"question":"How do retries interact with the writer queue?","question_id":"q-1","target_perspectives":["security-reviewer"],"basis":"graph_gap","resource_event_ids":["` + hashA + `"],"priority":0.6}`,
			`{"question":"Why?","basis":"hunch"}`, "/basis"},
		{"proposal.create",
			`{"proposal_id":"p-1","title":"Two-stage review","body":"Run a fast lint pass, then a human-style review.","content_type":"text/markdown","references":["` + hashA + `"]}`,
			`{"proposal_id":"p-1","title":"Two-stage review"}`, ""},
		{"poll.create", benchPoll,
			`{"poll_id":"poll-7","question":"Which?","options":[]}`, "/options"},
		{"poll.vote",
			`{"poll_event_id":"` + hashA + `","option_ids":["a","b"]}`,
			`{"poll_event_id":"` + hashA + `","option_ids":["a","a"]}`, "/option_ids"},
		{"resource.add",
			`{"resource_type":"paper","uri":"https://arxiv.org/abs/2402.14207","title":"Assisting in Writing Wikipedia-like Articles","retrieved_at":1779757300000,"content_digest":"sha256:Mg4SSnKBKXJ1_HhySVqmXv-Pa9WPVvTRm9CfIayMpIo","excerpt":"Co-STORM…","references":["` + hashB + `"]}`,
			`{"resource_type":"paper","retrieved_at":-5}`, "/retrieved_at"},
		{"graph.update",
			`{"operation":"upsert_node","node":{"id":"n1","title":"Retry policy","status":"open","children":[{"id":"n2","parent_id":"n1","title":"Backoff","resource_event_ids":["` + hashA + `"]}]}}`,
			`{"operation":"move_node","node_id":"n2"}`, ""},
		{"artifact.create",
			`{"artifact_id":"a-1","format":"markdown","title":"Review summary","uri":"https://example.com/a.md","resource_event_ids":["` + hashA + `"],"discussion_event_ids":["` + hashB + `"],"graph_event_id":"` + hashA + `"}`,
			`{"artifact_id":"a-1","format":"markdown","title":"Review summary","graph_event_id":"not-a-hash"}`, "/graph_event_id"},
		{"turn.update",
			`{"turn_id":3,"speaker":"` + agentA + `","scope":"task","claim_id":"ticket-123","state":"assigned","lease_until":1779760000000,"expires_at":1779760000000}`,
			`{"turn_id":0,"speaker":"` + agentA + `"}`, "/turn_id"},
		{"steer.create",
			`{"instruction":"Focus on failure modes before performance.","target":"security","priority":0.8}`,
			`{"instruction":""}`, "/instruction"},
		{"session.offer",
			`{"session_id":"s-1","session_type":"webrtc","media":["audio","data"],"description":{"type":"offer","sdp":"v=0\r\no=- 4611731 2 IN IP4 127.0.0.1\r\n"},"to":["` + agentB + `"],"topology":"peer_to_peer","transfers":[{"transfer_id":"t-1","file_name":"trace.json","size_bytes":2048,"mime_type":"application/json"}]}`,
			`{"session_id":"s-1","session_type":"webrtc","media":["audio"],"description":{"type":"answer","sdp":"v=0"}}`, "/description/type"},
		{"session.answer",
			`{"session_id":"s-1","offer_event_id":"` + hashA + `","description":{"type":"answer","sdp":"v=0\r\n"},"accepted_media":["audio"]}`,
			`{"session_id":"s-1","description":{"type":"answer","sdp":"v=0"}}`, ""},
		{"session.candidate",
			`{"session_id":"s-1","candidate":{"candidate":"candidate:1 1 UDP 2122252543 192.0.2.1 54400 typ host","sdp_mid":"0","sdp_mline_index":0}}`,
			`{"session_id":"s-1","end_of_candidates":false}`, ""},
		{"session.close",
			`{"session_id":"s-1","reason":"call finished"}`,
			`{"session_id":"s-1","extra":[]}`, "/extra"},
	}
	seen := map[string]bool{}
	for _, row := range rows {
		t.Run(row.typ, func(t *testing.T) {
			seen[row.typ] = true
			if err := r.Validate(row.typ, []byte(row.good)); err != nil {
				t.Fatalf("valid payload rejected: %v", err)
			}
			err := r.Validate(row.typ, []byte(row.bad))
			wantCode(t, err, CodePayloadSchemaViolation)
			wantLocation(t, err, row.badAt)
		})
	}
	for _, d := range r.Definitions() {
		if !seen[d.Type] {
			t.Errorf("no row for registered type %s", d.Type)
		}
	}
}

func TestNumbersValidateAsDoubles(t *testing.T) {
	r := allPacksRegistry(t)
	for _, tc := range []struct {
		score string
		ok    bool
	}{
		{"0.75", true}, {"-1", true}, {"1", true}, {"1.0", true}, {"-0", true}, {"1e0", true},
		{"0.1", true}, {"-0.999999", true},
		// The same double as 1; JCS would sign it as 1.
		{"1.0000000000000001", true},
		{"1.000001", false}, {"-1.5", false}, {"2", false},
	} {
		err := r.Validate("reaction.create", []byte(`{"event_id":"`+hashA+`","reaction":"x","score":`+tc.score+`}`))
		if (err == nil) != tc.ok {
			t.Errorf("score %s: %v", tc.score, err)
		}
	}
	// integer keywords accept integral doubles.
	if err := r.Validate("turn.update", []byte(`{"turn_id":3.0,"speaker":"`+agentA+`"}`)); err != nil {
		t.Errorf("turn_id 3.0: %v", err)
	}
	if err := r.Validate("turn.update", []byte(`{"turn_id":3.5,"speaker":"`+agentA+`"}`)); err == nil {
		t.Error("turn_id 3.5 accepted")
	}
	// Unsafe integers never reach the schema.
	err := r.Validate("turn.update", []byte(`{"turn_id":9007199254740993,"speaker":"`+agentA+`"}`))
	wantCode(t, err, "invalid_event")
}
