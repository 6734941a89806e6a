package adp_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/packs"
)

// Helpers that write events the builders would refuse, the way a faulty or
// hostile client could: the payload and room fields are raw JSON.

func (w *world) raw(name, typ string, base *adp.Base, payload string, extra ...envelope.Field) (*envelope.Envelope, error) {
	var ext envelope.Fields
	if base != nil {
		ext = envelope.Fields{
			{Name: "room_id", Value: jsontext.Value(strconv.Quote(base.RoomID))},
			{Name: "base_seq", Value: jsontext.Value(strconv.FormatInt(base.Seq, 10))},
			{Name: "base_hash", Value: jsontext.Value(`"` + base.Hash.String() + `"`)},
		}
	}
	ext = append(ext, extra...)
	return w.a(name).Sign(w.ctx, adp.Protocol, typ, jsontext.Value(payload), ext)
}

func (w *world) custom(name, typ, payload string) (*envelope.Envelope, error) {
	return w.raw(name, typ, ptr(w.base(typ)), payload)
}

func ptr[T any](v T) *T { return &v }

// request is a join request as a host would have stored it.
func (w *world) request(id, applicant string, role adp.Role) adp.JoinRequest {
	return adp.JoinRequest{
		ID: id, RoomID: w.room.ID(), Applicant: w.id(applicant), Role: role,
		CreatedAt: w.now.UnixMilli(), ExpiresAt: w.now.Add(time.Hour).UnixMilli(),
	}
}

func (w *world) review(reviewer string, req adp.JoinRequest, d adp.Decision, role adp.Role) (*adp.Record, error) {
	return w.submit(adp.NewJoinReview(w.ctx, w.a(reviewer), w.base(adp.TypeRoomJoinReview),
		adp.JoinReview{Request: req, Decision: d, Role: role}))
}

func (w *world) joinWith(name, requestID string, role adp.Role) (*adp.Record, error) {
	return w.submit(adp.NewJoin(w.ctx, w.a(name), w.base(adp.TypeRoomJoin), adp.Join{Role: role, RequestID: requestID}))
}

func (w *world) update(name string, p adp.RoomUpdate) (*adp.Record, error) {
	return w.submit(adp.NewRoomUpdate(w.ctx, w.a(name), w.base(adp.TypeRoomUpdate), p))
}

func (w *world) define(name string, decl string) (*adp.Record, error) {
	d, err := packs.ParseDeclaration([]byte(decl))
	if err != nil {
		w.t.Fatalf("declaration: %v", err)
	}
	return w.submit(adp.NewTypeDefine(w.ctx, w.a(name), w.base(adp.TypeTypeDefine), d))
}

func (w *world) reaction(name string, to *adp.Record) (*adp.Record, error) {
	return w.submit(w.custom(name, "reaction.create",
		`{"event_id":"`+to.Envelope.Hash().String()+`","reaction":"agree"}`))
}

func withTypes(decls ...string) func(*adp.RoomCreate) {
	return func(p *adp.RoomCreate) {
		for _, d := range decls {
			decl, err := packs.ParseDeclaration([]byte(d))
			if err != nil {
				panic(err)
			}
			p.Types = append(p.Types, decl)
		}
	}
}

func visibility(v adp.Visibility) func(*adp.RoomCreate) {
	return func(p *adp.RoomCreate) { p.Visibility = v }
}

func policy(pol adp.Policy) func(*adp.RoomCreate) {
	return func(p *adp.RoomCreate) { p.Policy = &pol }
}

func scheduled(p *adp.RoomCreate) {
	p.StartTime += int64(time.Hour / time.Millisecond)
	p.EndTime += int64(time.Hour / time.Millisecond)
}

const reviewFinding = `{"type":"review.finding","kind":"message","title":"Review finding",
 "schema":{"type":"object","required":["severity","summary"],"properties":{
 "severity":{"type":"string","enum":["low","medium","high"]},"summary":{"type":"string","minLength":1}},
 "additionalProperties":false}}`

// rule is one MUST of the seed text: a room built by setup, then one write
// that must be refused with the §20 code want (nil: must be accepted).
type rule struct {
	name  string
	setup func(w *world)
	act   func(w *world) (*adp.Record, error)
	want  error
}

func runRules(t *testing.T, rules []rule) {
	t.Helper()
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			w := newWorld(t, nil)
			w.track = true
			if r.setup != nil {
				r.setup(w)
			}
			_, err := r.act(w)
			if r.want == nil {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			if !errors.Is(err, r.want) {
				t.Fatalf("got %v, want %v", err, r.want)
			}
			// A rejected write changes nothing.
			if after, _ := w.room.Snapshot(); string(after) != string(w.before) {
				t.Fatal("a rejected write changed the room state")
			}
		})
	}
}

func public(w *world) { w.publicRoom() }

func publicWith(opts ...func(*adp.RoomCreate)) func(*world) {
	return func(w *world) { w.publicRoom(opts...) }
}

func TestRulesShape(t *testing.T) {
	runRules(t, []rule{
		{"§6 room.create must not carry room_id", nil, func(w *world) (*adp.Record, error) {
			return w.submit(w.raw("creator", "room.create", nil,
				`{"topic":"t","visibility":"public","start_time":1,"end_time":2}`,
				envelope.Field{Name: "room_id", Value: jsontext.Value(`"r"`)}))
		}, adp.ErrInvalidEvent},
		{"§6 room.create must not carry mentions", nil, func(w *world) (*adp.Record, error) {
			return w.submit(w.raw("creator", "room.create", nil,
				`{"topic":"t","visibility":"public","start_time":1,"end_time":2}`,
				envelope.Field{Name: "mentions", Value: jsontext.Value(`[]`)}))
		}, adp.ErrInvalidEvent},
		{"§6 a room event must carry base_seq and base_hash", public, func(w *world) (*adp.Record, error) {
			return w.submit(w.raw("creator", "message.create", nil, `{"content_type":"text/plain","content":"x"}`,
				envelope.Field{Name: "room_id", Value: jsontext.Value(`"` + w.room.ID() + `"`)}))
		}, adp.ErrInvalidEvent},
		{"§6 base_seq must be a positive safe integer", public, func(w *world) (*adp.Record, error) {
			return w.submit(w.raw("creator", "message.create", &adp.Base{RoomID: w.room.ID(), Seq: 0},
				`{"content_type":"text/plain","content":"x"}`))
		}, adp.ErrInvalidEvent},
		{"§6 mentions over 32 are rejected", public, func(w *world) (*adp.Record, error) {
			// Distinct IDs, so that the limit and not the repeat rule fails.
			var ids []identity.AgentID
			for i := range 33 {
				k, _ := identity.NewKeyFromSeed([]byte(strings.Repeat(string(rune('A'+i)), 32)))
				ids = append(ids, k.AgentID())
			}
			return w.submit(w.raw("creator", "message.create", ptr(w.base("message.create")),
				`{"content_type":"text/plain","content":"x"}`, mentionsField(ids...)))
		}, adp.ErrInvalidEvent},
		{"§6 mentions must be valid Agent IDs", public, func(w *world) (*adp.Record, error) {
			return w.submit(w.raw("creator", "message.create", ptr(w.base("message.create")),
				`{"content_type":"text/plain","content":"x"}`,
				envelope.Field{Name: "mentions", Value: jsontext.Value(`["did:agent:Reviewer-000000000000000000000000000000000="]`)}))
		}, adp.ErrInvalidEvent},
		{"§6 32 mentions are accepted", public, func(w *world) (*adp.Record, error) {
			var ids []identity.AgentID
			for i := range 32 {
				k, _ := identity.NewKeyFromSeed([]byte(strings.Repeat(string(rune('A'+i)), 32)))
				ids = append(ids, k.AgentID())
			}
			return w.submit(adp.NewMessage(w.ctx, w.a("creator"), w.base("message.create"),
				adp.Message{ContentType: "text/plain", Content: adp.TextContent("hi all")}, ids...))
		}, nil},
		{"§5.1 events of another protocol are rejected", public, func(w *world) (*adp.Record, error) {
			b := w.base("message.create")
			env, err := w.a("creator").Sign(w.ctx, "agent-profile/1.0", "message.create", jsontext.Value(`{}`), nil)
			_ = b
			return w.submit(env, err)
		}, adp.ErrInvalidEvent},
		{"§22 event room_id must equal the room", public, func(w *world) (*adp.Record, error) {
			b := w.base("message.create")
			b.RoomID = "another-room"
			return w.submit(adp.NewMessage(w.ctx, w.a("creator"), b, adp.Message{ContentType: "text/plain", Content: adp.TextContent("x")}))
		}, adp.ErrInvalidEvent},
		{"§13.2 a room. type that is not built in is not defined", public, func(w *world) (*adp.Record, error) {
			return w.submit(w.raw("creator", "room.rename", ptr(w.base("message.create")), `{}`))
		}, adp.ErrTypeNotDefined},
		{"§15 one envelope is never accepted twice", publicWith(withTypes(`{"use":"adp:reactions/1.0"}`)), func(w *world) (*adp.Record, error) {
			first, _ := w.say("creator", "x")
			// A signal stays anchored, so only the duplicate rule stops it.
			env, err := w.custom("creator", "reaction.create", `{"event_id":"`+first.Envelope.Hash().String()+`","reaction":"agree"}`)
			w.must(env, err)
			return w.submit(env, nil)
		}, adp.ErrInvalidEvent},
		{"§21 payload over 64 KiB", public, func(w *world) (*adp.Record, error) {
			return w.submit(adp.NewMessage(w.ctx, w.a("creator"), w.base("message.create"),
				adp.Message{ContentType: "text/plain", Content: adp.TextContent(strings.Repeat("x", 64<<10))}))
		}, adp.ErrPayloadTooLarge},
		{"§21 max_payload_hint raises the limit", publicWith(withTypes(`{"type":"blob.put","kind":"message","title":"Blob","max_payload_hint":200000,"schema":{"type":"object"}}`)),
			func(w *world) (*adp.Record, error) {
				return w.submit(w.custom("creator", "blob.put", `{"data":"`+strings.Repeat("x", 100_000)+`"}`))
			}, nil},
	})
}

func TestRulesFreshness(t *testing.T) {
	runRules(t, []rule{
		{"§6.1 a message on a stale head is room_head_mismatch", func(w *world) {
			w.publicRoom()
			w.join("alice", adp.RoleSpeaker)
		}, func(w *world) (*adp.Record, error) {
			stale := w.base("message.create")
			if _, err := w.say("creator", "first"); err != nil {
				w.t.Fatal(err)
			}
			return w.submit(adp.NewMessage(w.ctx, w.a("alice"), stale, adp.Message{ContentType: "text/plain", Content: adp.TextContent("late")}))
		}, adp.ErrRoomHeadMismatch},
		{"§6.1 room.update on a stale head", public, func(w *world) (*adp.Record, error) {
			stale := w.base("room.update")
			w.say("creator", "moves the head")
			return w.submit(adp.NewRoomUpdate(w.ctx, w.a("creator"), stale, adp.RoomUpdate{Guidance: ptr("g")}))
		}, adp.ErrRoomHeadMismatch},
		{"§6.1 type.define on a stale head", public, func(w *world) (*adp.Record, error) {
			stale := w.base("type.define")
			w.say("creator", "moves the head")
			d, _ := packs.ParseDeclaration([]byte(`{"use":"adp:reactions/1.0"}`))
			return w.submit(adp.NewTypeDefine(w.ctx, w.a("creator"), stale, d))
		}, adp.ErrRoomHeadMismatch},
		{"§6.1 a control type on a stale head", publicWith(withTypes(`{"use":"adp:moderation/1.0"}`)), func(w *world) (*adp.Record, error) {
			stale := w.base("turn.update")
			w.say("creator", "moves the head")
			return w.submit(w.raw("creator", "turn.update", &stale, `{"turn_id":1,"speaker":"`+w.id("creator").String()+`"}`))
		}, adp.ErrRoomHeadMismatch},
		{"§6.1 a signal anchored on an old record is accepted", publicWith(withTypes(`{"use":"adp:reactions/1.0"}`)), func(w *world) (*adp.Record, error) {
			first, _ := w.say("creator", "one")
			old := w.base("reaction.create")
			w.say("creator", "two")
			w.say("creator", "three")
			return w.submit(w.raw("creator", "reaction.create", &old, `{"event_id":"`+first.Envelope.Hash().String()+`","reaction":"agree"}`))
		}, nil},
		{"§6.1 a signal with a wrong base_hash is base_record_mismatch", publicWith(withTypes(`{"use":"adp:reactions/1.0"}`)), func(w *world) (*adp.Record, error) {
			first, _ := w.say("creator", "one")
			b := w.base("reaction.create")
			b.Hash = first.Envelope.Hash() // an event hash is not a record hash
			return w.submit(w.raw("creator", "reaction.create", &b, `{"event_id":"`+first.Envelope.Hash().String()+`","reaction":"agree"}`))
		}, adp.ErrBaseRecordMismatch},
		{"§6.1 a membership event anchored past the latest record", public, func(w *world) (*adp.Record, error) {
			b := w.base("room.join")
			b.Seq++
			return w.submit(adp.NewJoin(w.ctx, w.a("alice"), b, adp.Join{Role: adp.RoleSpeaker}))
		}, adp.ErrBaseRecordMismatch},
		{"§6.1 a join anchored before later messages is accepted", public, func(w *world) (*adp.Record, error) {
			old := w.base("room.join")
			w.say("creator", "one")
			w.say("creator", "two")
			return w.submit(adp.NewJoin(w.ctx, w.a("alice"), old, adp.Join{Role: adp.RoleSpeaker}))
		}, nil},
		{"§6.1 a message based on the latest signal, not the head, is rejected", public, func(w *world) (*adp.Record, error) {
			w.join("alice", adp.RoleSpeaker) // a signal: latest moves, head stays
			return w.submit(adp.NewMessage(w.ctx, w.a("alice"), w.base("room.join"), adp.Message{ContentType: "text/plain", Content: adp.TextContent("x")}))
		}, adp.ErrRoomHeadMismatch},
	})
}

func TestRoomHeadMismatchData(t *testing.T) {
	w := newWorld(t, &adp.RoomOptions{URL: "https://api.al.ink/v1/rooms/d8ftedhpqhsusbg001tg"})
	w.publicRoom()
	stale := w.base("message.create")
	head, _ := w.say("creator", "x")
	_, err := w.submit(adp.NewMessage(w.ctx, w.a("creator"), stale, adp.Message{ContentType: "text/plain", Content: adp.TextContent("y")}))
	var e *identity.Error
	if !errors.As(err, &e) || e.Code != adp.CodeRoomHeadMismatch {
		t.Fatal(err)
	}
	want := `{"base_seq":1,"base_hash":"` + stale.Hash.String() + `","current_seq":2,"current_hash":"` + head.Hash.String() +
		`","events_url":"https://api.al.ink/v1/rooms/d8ftedhpqhsusbg001tg/events?after_seq=1"}`
	if string(e.Data) != want {
		t.Fatalf("data %s\nwant %s", e.Data, want)
	}
}

func TestRulesState(t *testing.T) {
	runRules(t, []rule{
		{"§14 no message before the room starts", publicWith(scheduled), func(w *world) (*adp.Record, error) {
			return w.say("creator", "early")
		}, adp.ErrRoomNotActive},
		{"§14 no custom event before the room starts", publicWith(scheduled, withTypes(reviewFinding)), func(w *world) (*adp.Record, error) {
			return w.submit(w.custom("creator", "review.finding", `{"severity":"low","summary":"s"}`))
		}, adp.ErrRoomNotActive},
		{"§14 joins are allowed before the room starts", publicWith(scheduled), func(w *world) (*adp.Record, error) {
			return w.submit(adp.NewJoin(w.ctx, w.a("alice"), w.base("room.join"), adp.Join{Role: adp.RoleSpeaker}))
		}, nil},
		{"§14 type.define is allowed before the room starts", publicWith(scheduled), func(w *world) (*adp.Record, error) {
			return w.define("creator", reviewFinding)
		}, nil},
		{"§8 the room activates at start_time", publicWith(scheduled), func(w *world) (*adp.Record, error) {
			w.tick(time.Hour)
			return w.say("creator", "now")
		}, nil},
		{"§8 the room ends at end_time", public, func(w *world) (*adp.Record, error) {
			w.tick(time.Hour)
			return w.say("creator", "too late")
		}, adp.ErrRoomEnded},
		{"§8 no writes after room.close", public, func(w *world) (*adp.Record, error) {
			w.must(adp.NewClose(w.ctx, w.a("creator"), w.base("room.close"), adp.Notice{Reason: "done"}))
			return w.submit(adp.NewJoin(w.ctx, w.a("alice"), w.base("room.join"), adp.Join{Role: adp.RoleSpeaker}))
		}, adp.ErrRoomEnded},
		{"§8 no writes after room.cancel", publicWith(scheduled), func(w *world) (*adp.Record, error) {
			w.must(adp.NewCancel(w.ctx, w.a("creator"), w.base("room.cancel"), adp.Notice{}))
			return w.submit(adp.NewJoin(w.ctx, w.a("alice"), w.base("room.join"), adp.Join{Role: adp.RoleSpeaker}))
		}, adp.ErrRoomNotActive},
		{"§13.2 room.close only in an active room", publicWith(scheduled), func(w *world) (*adp.Record, error) {
			return w.submit(adp.NewClose(w.ctx, w.a("creator"), w.base("room.close"), adp.Notice{}))
		}, adp.ErrRoomNotActive},
		{"§13.2 room.cancel only in a scheduled room", public, func(w *world) (*adp.Record, error) {
			return w.submit(adp.NewCancel(w.ctx, w.a("creator"), w.base("room.cancel"), adp.Notice{}))
		}, adp.ErrRoomNotActive},
		{"§13.2 room.close by a speaker", func(w *world) {
			w.publicRoom()
			w.join("alice", adp.RoleSpeaker)
		}, func(w *world) (*adp.Record, error) {
			return w.submit(adp.NewClose(w.ctx, w.a("alice"), w.base("room.close"), adp.Notice{}))
		}, adp.ErrPermissionDenied},
		{"§13.2 room.cancel by a non-member", publicWith(scheduled), func(w *world) (*adp.Record, error) {
			return w.submit(adp.NewCancel(w.ctx, w.a("alice"), w.base("room.cancel"), adp.Notice{}))
		}, adp.ErrPermissionDenied},
		{"§9 writes to a room without room.create", nil, func(w *world) (*adp.Record, error) {
			return w.submit(adp.NewJoin(w.ctx, w.a("alice"), adp.Base{RoomID: w.room.ID(), Seq: 1}, adp.Join{Role: adp.RoleSpeaker}))
		}, adp.ErrRoomNotFound},
	})
}

func TestRulesCreate(t *testing.T) {
	create := func(payload string) func(w *world) (*adp.Record, error) {
		return func(w *world) (*adp.Record, error) { return w.submit(w.raw("creator", "room.create", nil, payload)) }
	}
	runRules(t, []rule{
		{"§9.3 topic blank after trimming", nil, create(`{"topic":"  \t","visibility":"public","start_time":1,"end_time":2}`), adp.ErrInvalidEvent},
		{"§9.3 start_time not before end_time", nil, create(`{"topic":"t","visibility":"public","start_time":2,"end_time":2}`), adp.ErrInvalidEvent},
		{"§9.3 max_speakers below 1", nil, create(`{"topic":"t","visibility":"public","start_time":1,"end_time":2,"policy":{"max_speakers":0}}`), adp.ErrInvalidEvent},
		{"§9.3 malformed moderator_agent_ids", nil, create(`{"topic":"t","visibility":"public","start_time":1,"end_time":2,"policy":{"moderator_agent_ids":["did:agent:Moderator-00000000000000000000000000000000001"]}}`), adp.ErrInvalidEvent},
		{"§9.3 invalid type declaration", nil, create(`{"topic":"t","visibility":"public","start_time":1,"end_time":2,"types":[{"type":"room.custom","kind":"message","title":"x","schema":{}}]}`), adp.ErrInvalidEvent},
		{"§9.3 unresolvable registered pack", nil, create(`{"topic":"t","visibility":"public","start_time":1,"end_time":2,"types":[{"use":"adp:unknown/1.0"}]}`), adp.ErrPackUnavailable},
		{"§9.3 external pack the host cannot fetch", nil, create(`{"topic":"t","visibility":"public","start_time":1,"end_time":2,"types":[{"pack":"https://example.com/p.json","digest":"sha256:Mg4SSnKBKXJ1_HhySVqmXv-Pa9WPVvTRm9CfIayMpIo"}]}`), adp.ErrPackUnavailable},
		{"§9.1 unknown payload field", nil, create(`{"topic":"t","visibility":"public","start_time":1,"end_time":2,"mode":"x"}`), adp.ErrInvalidEvent},
		{"§9.1 visibility outside the enum", nil, create(`{"topic":"t","visibility":"secret","start_time":1,"end_time":2}`), adp.ErrInvalidEvent},
		{"§9 a room has one room.create", public, func(w *world) (*adp.Record, error) {
			return w.submit(adp.NewRoomCreate(w.ctx, w.a("alice"), adp.RoomCreate{Topic: "t", Visibility: adp.VisibilityPublic, StartTime: 1, EndTime: 2}))
		}, adp.ErrInvalidEvent},
	})
	// §9: the creator is an active moderator at once.
	w := newWorld(t, nil)
	w.publicRoom()
	if m, ok := w.room.Member(w.id("creator")); !ok || m.Role != adp.RoleModerator || m.Status != adp.MemberActive || m.JoinedSeq != 1 {
		t.Fatalf("creator membership %+v", m)
	}
}

func TestRulesUpdate(t *testing.T) {
	upd := func(name string, p adp.RoomUpdate) func(w *world) (*adp.Record, error) {
		return func(w *world) (*adp.Record, error) { return w.update(name, p) }
	}
	rawUpd := func(payload string) func(w *world) (*adp.Record, error) {
		return func(w *world) (*adp.Record, error) {
			return w.submit(w.raw("creator", "room.update", ptr(w.base("room.update")), payload))
		}
	}
	runRules(t, []rule{
		{"§9.4 only the creator or a moderator", func(w *world) {
			w.publicRoom()
			w.join("alice", adp.RoleSpeaker)
		}, upd("alice", adp.RoomUpdate{Guidance: ptr("mine")}), adp.ErrPermissionDenied},
		{"§9.4 a moderator may update", func(w *world) {
			w.publicRoom(policy(adp.Policy{ModeratorAgentIDs: []identity.AgentID{w.id("mod")}}))
			w.join("mod", adp.RoleModerator)
		}, upd("mod", adp.RoomUpdate{Guidance: ptr("cite sources")}), nil},
		{"§9.4 empty payload", public, rawUpd(`{}`), adp.ErrInvalidEvent},
		{"§9.4 field outside the updatable set", public, rawUpd(`{"visibility":"private"}`), adp.ErrInvalidEvent},
		{"§9.4 blank topic", public, rawUpd(`{"topic":" "}`), adp.ErrInvalidEvent},
		{"§9.4 start_time of an active room", public, upd("creator", adp.RoomUpdate{StartTime: ptr(T0.UnixMilli())}), adp.ErrInvalidEvent},
		{"§9.4 effective start_time not before end_time", publicWith(scheduled), upd("creator", adp.RoomUpdate{EndTime: ptr(T0.Add(30 * time.Minute).UnixMilli())}), adp.ErrInvalidEvent},
		{"§9.4 an active room's end_time not after now", public, func(w *world) (*adp.Record, error) {
			return w.update("creator", adp.RoomUpdate{EndTime: ptr(w.now.UnixMilli())})
		}, adp.ErrInvalidEvent},
		{"§9.4 policy violating §9.3", public, rawUpd(`{"policy":{"max_speakers":0}}`), adp.ErrInvalidEvent},
		{"§9.4 an ended room", public, func(w *world) (*adp.Record, error) {
			w.must(adp.NewClose(w.ctx, w.a("creator"), w.base("room.close"), adp.Notice{}))
			return w.update("creator", adp.RoomUpdate{Guidance: ptr("g")})
		}, adp.ErrRoomEnded},
		{"§9.4 a new start_time in the past activates at once", publicWith(scheduled), func(w *world) (*adp.Record, error) {
			w.ok(w.update("creator", adp.RoomUpdate{StartTime: ptr(w.now.UnixMilli())}))
			return w.say("creator", "started")
		}, nil},
		{"§9.4 lowering max_speakers constrains later joins", func(w *world) {
			w.publicRoom()
			w.join("alice", adp.RoleSpeaker)
			w.ok(w.update("creator", adp.RoomUpdate{Policy: &adp.Policy{MaxSpeakers: 1}}))
		}, func(w *world) (*adp.Record, error) {
			if m, _ := w.room.Member(w.id("alice")); m.Role != adp.RoleSpeaker {
				w.t.Fatal("lowering max_speakers demoted a member")
			}
			return w.submit(adp.NewJoin(w.ctx, w.a("bob"), w.base("room.join"), adp.Join{Role: adp.RoleSpeaker}))
		}, adp.ErrMaxSpeakersExceeded},
	})
	// Present fields replace, empty values clear, absent fields stay (§9.4).
	w := newWorld(t, nil)
	w.publicRoom(func(p *adp.RoomCreate) { p.Tags = []string{"a", "b"}; p.Agenda = "agenda"; p.Language = "en" })
	w.ok(w.update("creator", adp.RoomUpdate{Tags: []string{}, Agenda: ptr(""), Topic: ptr("New topic")}))
	c := w.room.Contract()
	if len(c.Tags) != 0 || c.Agenda != "" || c.Topic != "New topic" || c.Language != "en" {
		t.Fatalf("contract after update: %+v", c)
	}
}

func TestRulesJoin(t *testing.T) {
	join := func(name string, role adp.Role) func(w *world) (*adp.Record, error) {
		return func(w *world) (*adp.Record, error) {
			return w.submit(adp.NewJoin(w.ctx, w.a(name), w.base("room.join"), adp.Join{Role: role}))
		}
	}
	restricted := publicWith(visibility(adp.VisibilityRestricted))
	approved := func(role adp.Role) func(w *world) {
		return func(w *world) {
			w.publicRoom(visibility(adp.VisibilityRestricted))
			w.ok(w.review("creator", w.request("jr_1", "alice", role), adp.DecisionApprove, role))
		}
	}
	runRules(t, []rule{
		{"§10.2 a public room accepts a direct join with perspective", public, func(w *world) (*adp.Record, error) {
			return w.submit(adp.NewJoin(w.ctx, w.a("alice"), w.base("room.join"), adp.Join{Role: adp.RoleSpeaker, Perspective: ptr("distributed-systems reviewer")}))
		}, nil},
		{"§10.2 an active member cannot join again", func(w *world) {
			w.publicRoom()
			w.join("alice", adp.RoleSpeaker)
		}, join("alice", adp.RoleObserver), adp.ErrInvalidEvent},
		{"§10.2 a banned agent cannot join", func(w *world) {
			w.publicRoom()
			w.must(adp.NewMemberRemove(w.ctx, w.a("creator"), w.base("room.member.remove"), adp.MemberRemove{Member: w.id("alice"), Ban: true}))
		}, join("alice", adp.RoleSpeaker), adp.ErrMemberBanned},
		{"§10.2 max_speakers", publicWith(policy(adp.Policy{MaxSpeakers: 2})), func(w *world) (*adp.Record, error) {
			w.join("alice", adp.RoleSpeaker) // the creator is the first speaking member
			return join("bob", adp.RoleSpeaker)(w)
		}, adp.ErrMaxSpeakersExceeded},
		{"§10.2 observers do not count toward max_speakers", publicWith(policy(adp.Policy{MaxSpeakers: 1})), join("bob", adp.RoleObserver), nil},
		{"§10.2 observer_allowed false", publicWith(policy(adp.Policy{ObserverAllowed: ptr(false)})), join("alice", adp.RoleObserver), adp.ErrRoleNotAllowed},
		{"§10.2 a restricted room needs a join request", restricted, join("alice", adp.RoleSpeaker), adp.ErrApprovalRequired},
		{"§10.2 a private room needs a join request", publicWith(visibility(adp.VisibilityPrivate)), join("alice", adp.RoleObserver), adp.ErrApprovalRequired},
		{"§10.2 a direct moderator join needs moderator_agent_ids", public, join("mod", adp.RoleModerator), adp.ErrRoleNotAllowed},
		{"§10.2 a listed moderator joins directly", publicWith(func(p *adp.RoomCreate) {
			k, _ := identity.NewKeyFromSeed([]byte(strings.Repeat("\x12", 32)))
			p.Policy = &adp.Policy{ModeratorAgentIDs: []identity.AgentID{k.AgentID()}}
		}), join("mod", adp.RoleModerator), nil},
		{"§10.2 an approved request admits", approved(adp.RoleSpeaker), func(w *world) (*adp.Record, error) {
			return w.joinWith("alice", "jr_1", adp.RoleSpeaker)
		}, nil},
		{"§10.2 an unknown request", restricted, func(w *world) (*adp.Record, error) {
			return w.joinWith("alice", "jr_nope", adp.RoleSpeaker)
		}, adp.ErrJoinRequestNotFound},
		{"§10.2 another actor's request", approved(adp.RoleSpeaker), func(w *world) (*adp.Record, error) {
			return w.joinWith("bob", "jr_1", adp.RoleSpeaker)
		}, adp.ErrJoinRequestNotFound},
		{"§10.2 a rejected request", func(w *world) {
			w.publicRoom(visibility(adp.VisibilityRestricted))
			w.ok(w.review("creator", w.request("jr_1", "alice", adp.RoleSpeaker), adp.DecisionReject, ""))
		}, func(w *world) (*adp.Record, error) { return w.joinWith("alice", "jr_1", adp.RoleSpeaker) }, adp.ErrJoinRequestNotApproved},
		{"§10.2 an expired request", approved(adp.RoleSpeaker), func(w *world) (*adp.Record, error) {
			w.ok(w.update("creator", adp.RoomUpdate{EndTime: ptr(w.now.Add(3 * time.Hour).UnixMilli())}))
			w.tick(time.Hour)
			return w.joinWith("alice", "jr_1", adp.RoleSpeaker)
		}, adp.ErrJoinRequestExpired},
		{"§10.2 a consumed request cannot readmit", approved(adp.RoleSpeaker), func(w *world) (*adp.Record, error) {
			w.ok(w.joinWith("alice", "jr_1", adp.RoleSpeaker))
			w.must(adp.NewLeave(w.ctx, w.a("alice"), w.base("room.leave"), adp.Notice{}))
			return w.joinWith("alice", "jr_1", adp.RoleSpeaker)
		}, adp.ErrJoinRequestExpired},
		{"§10.2 the join role must equal the approved role", approved(adp.RoleObserver), func(w *world) (*adp.Record, error) {
			return w.joinWith("alice", "jr_1", adp.RoleSpeaker)
		}, adp.ErrJoinRequestRoleMismatch},
		{"§10.2 request_id excludes perspective", approved(adp.RoleSpeaker), func(w *world) (*adp.Record, error) {
			return w.submit(w.raw("alice", "room.join", ptr(w.base("room.join")), `{"role":"speaker","request_id":"jr_1","perspective":"p"}`))
		}, adp.ErrInvalidEvent},
		{"§10.2 the request's perspective is the member's", approved(adp.RoleSpeaker), func(w *world) (*adp.Record, error) {
			return w.joinWith("alice", "jr_1", adp.RoleSpeaker)
		}, nil},
		{"§10.2 no join into an ended room", public, func(w *world) (*adp.Record, error) {
			w.tick(2 * time.Hour)
			return join("alice", adp.RoleSpeaker)(w)
		}, adp.ErrRoomEnded},
		{"§10.2 unknown role", public, func(w *world) (*adp.Record, error) {
			return w.submit(w.raw("alice", "room.join", ptr(w.base("room.join")), `{"role":"expert"}`))
		}, adp.ErrInvalidEvent},
	})
}

func TestRulesReview(t *testing.T) {
	restricted := func(w *world) { w.publicRoom(visibility(adp.VisibilityRestricted)) }
	runRules(t, []rule{
		{"§11 only the creator or a moderator reviews", func(w *world) {
			w.publicRoom()
			w.join("bob", adp.RoleSpeaker)
		}, func(w *world) (*adp.Record, error) {
			return w.review("bob", w.request("jr_1", "alice", adp.RoleSpeaker), adp.DecisionApprove, adp.RoleSpeaker)
		}, adp.ErrPermissionDenied},
		{"§11 request.room_id must be the event's room", restricted, func(w *world) (*adp.Record, error) {
			req := w.request("jr_1", "alice", adp.RoleSpeaker)
			req.RoomID = "elsewhere"
			return w.review("creator", req, adp.DecisionApprove, adp.RoleSpeaker)
		}, adp.ErrInvalidEvent},
		{"§11 a request is reviewed once", func(w *world) {
			restricted(w)
			w.ok(w.review("creator", w.request("jr_1", "alice", adp.RoleSpeaker), adp.DecisionReject, ""))
		}, func(w *world) (*adp.Record, error) {
			return w.review("creator", w.request("jr_1", "alice", adp.RoleSpeaker), adp.DecisionApprove, adp.RoleSpeaker)
		}, adp.ErrJoinRequestNotFound},
		{"§11 approve must name a role", restricted, func(w *world) (*adp.Record, error) {
			req := w.request("jr_1", "alice", adp.RoleSpeaker)
			return w.submit(w.raw("creator", "room.join.review", ptr(w.base("room.join.review")),
				`{"request":{"id":"jr_1","room_id":"`+req.RoomID+`","applicant":"`+req.Applicant.String()+`","role":"speaker","created_at":1,"expires_at":2},"decision":"approve"}`))
		}, adp.ErrInvalidEvent},
		{"§11 approve a role the policy forbids", publicWith(visibility(adp.VisibilityRestricted), policy(adp.Policy{ObserverAllowed: ptr(false)})), func(w *world) (*adp.Record, error) {
			return w.review("creator", w.request("jr_1", "alice", adp.RoleObserver), adp.DecisionApprove, adp.RoleObserver)
		}, adp.ErrRoleNotAllowed},
		{"§11 approve beyond max_speakers", publicWith(visibility(adp.VisibilityRestricted), policy(adp.Policy{MaxSpeakers: 1})), func(w *world) (*adp.Record, error) {
			return w.review("creator", w.request("jr_1", "alice", adp.RoleSpeaker), adp.DecisionApprove, adp.RoleSpeaker)
		}, adp.ErrMaxSpeakersExceeded},
		{"§11 a review may approve another role than requested", restricted, func(w *world) (*adp.Record, error) {
			w.ok(w.review("creator", w.request("jr_1", "alice", adp.RoleSpeaker), adp.DecisionApprove, adp.RoleObserver))
			return w.joinWith("alice", "jr_1", adp.RoleObserver)
		}, nil},
		{"§10.5 approving a banned agent's request lifts the ban", func(w *world) {
			restricted(w)
			w.must(adp.NewMemberRemove(w.ctx, w.a("creator"), w.base("room.member.remove"), adp.MemberRemove{Member: w.id("alice"), Ban: true}))
			w.ok(w.review("creator", w.request("jr_1", "alice", adp.RoleSpeaker), adp.DecisionApprove, adp.RoleSpeaker))
		}, func(w *world) (*adp.Record, error) {
			if w.room.Banned(w.id("alice")) {
				w.t.Fatal("ban not lifted")
			}
			return w.joinWith("alice", "jr_1", adp.RoleSpeaker)
		}, nil},
	})
}

// joinStore is a host's join-request store for the host-mode rules.
type joinStore map[string]struct {
	req    adp.JoinRequest
	status adp.JoinRequestStatus
}

func (s joinStore) Lookup(_ context.Context, _, id string) (adp.JoinRequest, adp.JoinRequestStatus, error) {
	e, ok := s[id]
	if !ok {
		return adp.JoinRequest{}, "", adp.ErrJoinRequestNotFound
	}
	return e.req, e.status, nil
}

func TestRulesReviewHostStore(t *testing.T) {
	store := joinStore{}
	w := newWorld(t, &adp.RoomOptions{JoinRequests: store})
	w.publicRoom(visibility(adp.VisibilityRestricted))
	req := w.request("jr_1", "alice", adp.RoleSpeaker)
	store["jr_1"] = struct {
		req    adp.JoinRequest
		status adp.JoinRequestStatus
	}{req, adp.JoinPending}

	if _, err := w.joinWith("alice", "jr_1", adp.RoleSpeaker); !errors.Is(err, adp.ErrJoinRequestNotApproved) {
		t.Errorf("§10.2 join on a pending request: %v", err)
	}
	if _, err := w.review("creator", w.request("jr_2", "bob", adp.RoleSpeaker), adp.DecisionApprove, adp.RoleSpeaker); !errors.Is(err, adp.ErrJoinRequestNotFound) {
		t.Errorf("§11 review of a request the host does not hold: %v", err)
	}
	forged := req
	forged.Role = adp.RoleModerator
	if _, err := w.review("creator", forged, adp.DecisionApprove, adp.RoleModerator); !errors.Is(err, adp.ErrInvalidEvent) {
		t.Errorf("§11 review whose request differs from the stored one: %v", err)
	}
	if _, err := w.review("creator", req, adp.DecisionApprove, adp.RoleSpeaker); err != nil {
		t.Fatalf("§11 valid review: %v", err)
	}
}

func TestRulesMembers(t *testing.T) {
	withAlice := func(w *world) {
		w.publicRoom()
		w.join("alice", adp.RoleSpeaker)
	}
	roleUpd := func(by, member string, role adp.Role) func(w *world) (*adp.Record, error) {
		return func(w *world) (*adp.Record, error) {
			return w.submit(adp.NewRoleUpdate(w.ctx, w.a(by), w.base("room.member.role.update"), adp.RoleUpdate{Member: w.id(member), Role: role}))
		}
	}
	remove := func(by, member string, ban bool) func(w *world) (*adp.Record, error) {
		return func(w *world) (*adp.Record, error) {
			return w.submit(adp.NewMemberRemove(w.ctx, w.a(by), w.base("room.member.remove"), adp.MemberRemove{Member: w.id(member), Ban: ban}))
		}
	}
	runRules(t, []rule{
		{"§10.4 only the creator or a moderator changes roles", func(w *world) {
			withAlice(w)
			w.join("bob", adp.RoleSpeaker)
		}, roleUpd("alice", "bob", adp.RoleObserver), adp.ErrPermissionDenied},
		{"§10.4 the target must be an active member", public, roleUpd("creator", "alice", adp.RoleObserver), adp.ErrInvalidEvent},
		{"§10.4 the target role must be allowed", func(w *world) {
			w.publicRoom(policy(adp.Policy{ObserverAllowed: ptr(false)}))
			w.join("alice", adp.RoleSpeaker)
		}, roleUpd("creator", "alice", adp.RoleObserver), adp.ErrRoleNotAllowed},
		{"§10.4 max_speakers", func(w *world) {
			w.publicRoom(policy(adp.Policy{MaxSpeakers: 1}))
			w.join("alice", adp.RoleObserver)
		}, roleUpd("creator", "alice", adp.RoleSpeaker), adp.ErrMaxSpeakersExceeded},
		{"§10.4 demotion to observer mutes", withAlice, func(w *world) (*adp.Record, error) {
			w.ok(roleUpd("creator", "alice", adp.RoleObserver)(w))
			return w.say("alice", "can I?")
		}, adp.ErrPermissionDenied},
		{"§9 creator authority survives the creator's own demotion", withAlice, func(w *world) (*adp.Record, error) {
			w.ok(roleUpd("creator", "creator", adp.RoleObserver)(w))
			if _, err := w.say("creator", "still here"); err != nil {
				w.t.Fatalf("creator bypasses role checks: %v", err)
			}
			return roleUpd("creator", "alice", adp.RoleObserver)(w)
		}, nil},
		{"§10.5 only the creator or a moderator removes", func(w *world) {
			withAlice(w)
			w.join("bob", adp.RoleSpeaker)
		}, remove("alice", "bob", false), adp.ErrPermissionDenied},
		{"§10.5 the creator cannot be removed", func(w *world) {
			w.publicRoom(policy(adp.Policy{ModeratorAgentIDs: []identity.AgentID{w.id("mod")}}))
			w.join("mod", adp.RoleModerator)
		}, remove("mod", "creator", true), adp.ErrPermissionDenied},
		{"§10.5 removing oneself is room.leave's job", func(w *world) {
			w.publicRoom(policy(adp.Policy{ModeratorAgentIDs: []identity.AgentID{w.id("mod")}}))
			w.join("mod", adp.RoleModerator)
		}, remove("mod", "mod", false), adp.ErrInvalidEvent},
		{"§10.5 a non-member can only be banned", public, remove("creator", "alice", false), adp.ErrInvalidEvent},
		{"§10.5 a preventive ban of a non-member", public, remove("creator", "alice", true), nil},
		{"§10.5 a removed member can no longer write", withAlice, func(w *world) (*adp.Record, error) {
			w.ok(remove("creator", "alice", false)(w))
			return w.say("alice", "hello?")
		}, adp.ErrPermissionDenied},
		{"§10.3 only members leave", public, func(w *world) (*adp.Record, error) {
			return w.submit(adp.NewLeave(w.ctx, w.a("alice"), w.base("room.leave"), adp.Notice{}))
		}, adp.ErrPermissionDenied},
		{"§10.3 a member who left may rejoin a public room", withAlice, func(w *world) (*adp.Record, error) {
			w.must(adp.NewLeave(w.ctx, w.a("alice"), w.base("room.leave"), adp.Notice{Reason: "brb"}))
			return w.submit(adp.NewJoin(w.ctx, w.a("alice"), w.base("room.join"), adp.Join{Role: adp.RoleSpeaker}))
		}, nil},
	})
}

func TestRulesMessage(t *testing.T) {
	withObserver := func(w *world) {
		w.publicRoom()
		w.join("alice", adp.RoleObserver)
	}
	msg := func(name string, m adp.Message) func(w *world) (*adp.Record, error) {
		return func(w *world) (*adp.Record, error) {
			return w.submit(adp.NewMessage(w.ctx, w.a(name), w.base("message.create"), m))
		}
	}
	rawMsg := func(payload string) func(w *world) (*adp.Record, error) {
		return func(w *world) (*adp.Record, error) {
			return w.submit(w.raw("creator", "message.create", ptr(w.base("message.create")), payload))
		}
	}
	runRules(t, []rule{
		{"§12 observers cannot send messages", withObserver, msg("alice", adp.Message{ContentType: "text/plain", Content: adp.TextContent("x")}), adp.ErrPermissionDenied},
		{"§12 non-members cannot send messages", public, msg("bob", adp.Message{ContentType: "text/plain", Content: adp.TextContent("x")}), adp.ErrPermissionDenied},
		{"§12 empty content_type", public, rawMsg(`{"content_type":"","content":"x"}`), adp.ErrInvalidEvent},
		{"§12 content must be a string or an object", public, rawMsg(`{"content_type":"application/json","content":[1,2]}`), adp.ErrInvalidEvent},
		{"§12 JSON object content", public, rawMsg(`{"content_type":"application/json","content":{"k":[1,2]}}`), nil},
		{"§12 references must be events of this room", public, func(w *world) (*adp.Record, error) {
			var foreign envelope.Hash
			foreign[0] = 1
			return msg("creator", adp.Message{ContentType: "text/plain", Content: adp.TextContent("x"), References: []envelope.Hash{foreign}})(w)
		}, adp.ErrInvalidEvent},
		{"§12 a record hash is not an event hash", public, func(w *world) (*adp.Record, error) {
			first, _ := w.say("creator", "one")
			return msg("creator", adp.Message{ContentType: "text/plain", Content: adp.TextContent("x"), References: []envelope.Hash{first.Hash}})(w)
		}, adp.ErrInvalidEvent},
		{"§12 references to events of this room", public, func(w *world) (*adp.Record, error) {
			first, _ := w.say("creator", "one")
			return msg("creator", adp.Message{ContentType: "text/markdown", Content: adp.TextContent("## Proposal"), References: []envelope.Hash{first.Envelope.Hash()}})(w)
		}, nil},
		{"§12 mentions name any Agent ID", public, func(w *world) (*adp.Record, error) {
			return w.submit(adp.NewMessage(w.ctx, w.a("creator"), w.base("message.create"),
				adp.Message{ContentType: "text/plain", Content: adp.TextContent("ping")}, w.id("bob")))
		}, nil},
	})
	// A host's content_type policy (§12 "not supported by host policy").
	w := newWorld(t, &adp.RoomOptions{AcceptContentType: func(ct string) bool { return ct == "text/plain" }})
	w.publicRoom()
	if _, err := w.submit(adp.NewMessage(w.ctx, w.a("creator"), w.base("message.create"),
		adp.Message{ContentType: "text/html", Content: adp.TextContent("<b>x</b>")})); !errors.Is(err, adp.ErrInvalidEvent) {
		t.Errorf("unsupported content_type: %v", err)
	}
}

func TestRulesTypes(t *testing.T) {
	seedTypes := withTypes(`{"use":"adp:reactions/1.0"}`,
		`{"use":"adp:deliberation/1.0","overrides":{"poll.vote":{"roles":["moderator","speaker","observer"]}}}`,
		reviewFinding)
	withObserver := func(w *world) {
		w.publicRoom(seedTypes)
		w.join("alice", adp.RoleObserver)
		w.join("bob", adp.RoleSpeaker)
	}
	runRules(t, []rule{
		{"§13.2 an undefined custom type", public, func(w *world) (*adp.Record, error) {
			return w.submit(w.raw("creator", "review.finding", ptr(w.base("message.create")), `{"severity":"low","summary":"s"}`))
		}, adp.ErrTypeNotDefined},
		{"§13.6 payload_schema_violation", publicWith(seedTypes), func(w *world) (*adp.Record, error) {
			return w.submit(w.custom("creator", "review.finding", `{"severity":"critical","summary":"s"}`))
		}, adp.ErrPayloadSchemaViolation},
		{"§13.6 a valid custom payload", publicWith(seedTypes), func(w *world) (*adp.Record, error) {
			return w.submit(w.custom("creator", "review.finding", `{"severity":"high","summary":"The retry loop can starve the writer queue."}`))
		}, nil},
		{"§13.6 kind roles: observers cannot send message kinds", withObserver, func(w *world) (*adp.Record, error) {
			return w.submit(w.custom("alice", "question.create", `{"question":"why?"}`))
		}, adp.ErrPermissionDenied},
		{"§13.6 a roles override grants observers poll.vote", withObserver, func(w *world) (*adp.Record, error) {
			poll := w.must(w.custom("creator", "poll.create", `{"poll_id":"p1","question":"Which?","options":[{"id":"a","label":"A"},{"id":"b","label":"B"}]}`))
			return w.submit(w.custom("alice", "poll.vote", `{"poll_event_id":"`+poll.Envelope.Hash().String()+`","option_ids":["a"]}`))
		}, nil},
		{"§13.6 observers may send signals", withObserver, func(w *world) (*adp.Record, error) {
			first, _ := w.say("bob", "x")
			return w.reaction("alice", first)
		}, nil},
		{"§13.1 types grant nothing to non-members", publicWith(seedTypes), func(w *world) (*adp.Record, error) {
			first, _ := w.say("creator", "x")
			return w.reaction("carol", first)
		}, adp.ErrPermissionDenied},
		{"§13.6 a disabled type", publicWith(withTypes(`{"use":"adp:reactions/1.0","overrides":{"reaction.create":{"status":"disabled"}}}`)), func(w *world) (*adp.Record, error) {
			first, _ := w.say("creator", "x")
			return w.reaction("creator", first)
		}, adp.ErrTypeDisabled},
		{"§13.2 type.define only by the creator or a moderator", withObserver, func(w *world) (*adp.Record, error) {
			return w.define("bob", `{"use":"adp:curation/1.0"}`)
		}, adp.ErrPermissionDenied},
		{"§13.4 a redefinition must keep the kind", publicWith(seedTypes), func(w *world) (*adp.Record, error) {
			return w.define("creator", strings.Replace(reviewFinding, `"kind":"message"`, `"kind":"control"`, 1))
		}, adp.ErrInvalidEvent},
		{"§13.4 the latest definition governs later events", publicWith(seedTypes), func(w *world) (*adp.Record, error) {
			w.ok(w.define("creator", strings.Replace(reviewFinding, `"low","medium","high"`, `"low","high"`, 1)))
			return w.submit(w.custom("creator", "review.finding", `{"severity":"medium","summary":"s"}`))
		}, adp.ErrPayloadSchemaViolation},
		{"§13.3 names must not start with room. or type.", public, func(w *world) (*adp.Record, error) {
			return w.submit(w.raw("creator", "type.define", ptr(w.base("type.define")), `{"type":"type.alias","kind":"signal","title":"x","schema":{}}`))
		}, adp.ErrInvalidEvent},
		{"§13.5 overrides cannot change the kind", public, func(w *world) (*adp.Record, error) {
			return w.submit(w.raw("creator", "type.define", ptr(w.base("type.define")), `{"use":"adp:reactions/1.0","overrides":{"reaction.create":{"kind":"message"}}}`))
		}, adp.ErrInvalidEvent},
		{"§13.5 a control kind from a pack is moderator-only", func(w *world) {
			w.publicRoom(withTypes(`{"use":"adp:moderation/1.0"}`))
			w.join("bob", adp.RoleSpeaker)
		}, func(w *world) (*adp.Record, error) {
			return w.submit(w.custom("bob", "turn.update", `{"turn_id":1,"speaker":"`+w.id("bob").String()+`"}`))
		}, adp.ErrPermissionDenied},
	})
}

func TestApplyRejectsBrokenRecords(t *testing.T) {
	w := newWorld(t, nil)
	w.publicRoom()
	w.join("alice", adp.RoleSpeaker)
	w.say("alice", "hi")
	good := w.records

	replay := func(recs []*adp.Record) error {
		r := adp.NewRoom(w.room.ID(), nil)
		for _, rec := range recs {
			if err := r.Apply(w.ctx, rec); err != nil {
				return err
			}
		}
		return nil
	}
	if err := replay(good); err != nil {
		t.Fatal(err)
	}
	mut := func(i int, f func(r *adp.Record)) []*adp.Record {
		out := append([]*adp.Record(nil), good...)
		c := *out[i]
		f(&c)
		out[i] = &c
		return out
	}
	cases := []struct {
		name string
		recs []*adp.Record
		want error
	}{
		{"§15 seq must increase by one", mut(1, func(r *adp.Record) { r.Seq = 3; r.Hash = r.ComputeHash() }), adp.ErrInvalidRecord},
		{"§15 pre_hash must be the previous hash", mut(2, func(r *adp.Record) { r.PreHash[0] ^= 1; r.Hash = r.ComputeHash() }), adp.ErrInvalidRecord},
		{"§15 record hash must match", mut(1, func(r *adp.Record) { r.ReceivedAt++ }), adp.ErrInvalidRecord},
		{"§15 the chain starts at seq 1", good[1:], adp.ErrInvalidRecord},
		{"§15 room_id must be the room's", mut(0, func(r *adp.Record) { r.RoomID = "x"; r.Hash = r.ComputeHash() }), adp.ErrInvalidRecord},
		{"§19 a record the host should have refused", mut(2, func(r *adp.Record) { r.Envelope = good[1].Envelope; r.Hash = r.ComputeHash() }), adp.ErrInvalidEvent},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := replay(c.recs); !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
}
