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
	"github.com/agentprotocols/go-sdk/adp/adptest"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/packs"
)

// Helpers that write events the builders would refuse, the way a faulty or
// hostile client could: the payload and room fields are raw JSON.

func raw(w *adptest.World, name, typ string, base *adp.Base, payload string, extra ...envelope.Field) (*envelope.Envelope, error) {
	var ext envelope.Fields
	if base != nil {
		ext = envelope.Fields{
			{Name: "room_id", Value: jsontext.Value(strconv.Quote(base.RoomID))},
			{Name: "base_seq", Value: jsontext.Value(strconv.FormatInt(base.Seq, 10))},
			{Name: "base_hash", Value: jsontext.Value(`"` + base.Hash.String() + `"`)},
		}
	}
	ext = append(ext, extra...)
	return w.Author(name).Sign(w.Ctx, adp.Protocol, typ, jsontext.Value(payload), ext)
}

func custom(w *adptest.World, name, typ, payload string) (*envelope.Envelope, error) {
	return raw(w, name, typ, ptr(w.Base(typ)), payload)
}

func ptr[T any](v T) *T { return &v }

// request is a join request as a host would have stored it.
func request(w *adptest.World, id, applicant string, role adp.Role) adp.JoinRequest {
	return adp.JoinRequest{
		ID: id, RoomID: w.Room.ID(), Applicant: w.ID(applicant), Role: role,
		CreatedAt: w.Now.UnixMilli(), ExpiresAt: w.Now.Add(time.Hour).UnixMilli(),
	}
}

func review(w *adptest.World, reviewer string, req adp.JoinRequest, d adp.Decision, role adp.Role) (*adp.Record, error) {
	return w.Submit(adp.NewJoinReview(w.Ctx, w.Author(reviewer), w.Base(adp.TypeRoomJoinReview),
		adp.JoinReview{Request: req, Decision: d, Role: role}))
}

func joinWith(w *adptest.World, name, requestID string, role adp.Role) (*adp.Record, error) {
	return w.Submit(adp.NewJoin(w.Ctx, w.Author(name), w.Base(adp.TypeRoomJoin), adp.Join{Role: role, RequestID: requestID}))
}

func update(w *adptest.World, name string, p adp.RoomUpdate) (*adp.Record, error) {
	return w.Submit(adp.NewRoomUpdate(w.Ctx, w.Author(name), w.Base(adp.TypeRoomUpdate), p))
}

func define(w *adptest.World, name string, decl string) (*adp.Record, error) {
	d, err := packs.ParseDeclaration([]byte(decl))
	if err != nil {
		w.TB.Fatalf("declaration: %v", err)
	}
	return w.Submit(adp.NewTypeDefine(w.Ctx, w.Author(name), w.Base(adp.TypeTypeDefine), d))
}

func reaction(w *adptest.World, name string, to *adp.Record) (*adp.Record, error) {
	return w.Submit(custom(w, name, "reaction.create",
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
	setup func(w *adptest.World)
	act   func(w *adptest.World) (*adp.Record, error)
	want  error
}

func runRules(t *testing.T, rules []rule) {
	t.Helper()
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", nil)
			w.Track = true
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
			if after, _ := w.Room.Snapshot(); string(after) != string(w.Before) {
				t.Fatal("a rejected write changed the room state")
			}
		})
	}
}

func public(w *adptest.World) { w.PublicRoom() }

func publicWith(opts ...func(*adp.RoomCreate)) func(*adptest.World) {
	return func(w *adptest.World) { w.PublicRoom(opts...) }
}

func TestRulesShape(t *testing.T) {
	runRules(t, []rule{
		{"§6 room.create must not carry room_id", nil, func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(raw(w, "creator", "room.create", nil,
				`{"topic":"t","visibility":"public","start_time":1,"end_time":2}`,
				envelope.Field{Name: "room_id", Value: jsontext.Value(`"r"`)}))
		}, adp.ErrInvalidEvent},
		{"§6 room.create must not carry mentions", nil, func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(raw(w, "creator", "room.create", nil,
				`{"topic":"t","visibility":"public","start_time":1,"end_time":2}`,
				envelope.Field{Name: "mentions", Value: jsontext.Value(`[]`)}))
		}, adp.ErrInvalidEvent},
		{"§6 a room event must carry base_seq and base_hash", public, func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(raw(w, "creator", "message.create", nil, `{"content_type":"text/plain","content":"x"}`,
				envelope.Field{Name: "room_id", Value: jsontext.Value(`"` + w.Room.ID() + `"`)}))
		}, adp.ErrInvalidEvent},
		{"§6 base_seq must be a positive safe integer", public, func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(raw(w, "creator", "message.create", &adp.Base{RoomID: w.Room.ID(), Seq: 0},
				`{"content_type":"text/plain","content":"x"}`))
		}, adp.ErrInvalidEvent},
		{"§6 mentions over 32 are rejected", public, func(w *adptest.World) (*adp.Record, error) {
			// Distinct IDs, so that the limit and not the repeat rule fails.
			var ids []identity.AgentID
			for i := range 33 {
				k, _ := identity.NewKeyFromSeed([]byte(strings.Repeat(string(rune('A'+i)), 32)))
				ids = append(ids, k.AgentID())
			}
			return w.Submit(raw(w, "creator", "message.create", ptr(w.Base("message.create")),
				`{"content_type":"text/plain","content":"x"}`, mentionsField(ids...)))
		}, adp.ErrInvalidEvent},
		{"§6 mentions must be valid Agent IDs", public, func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(raw(w, "creator", "message.create", ptr(w.Base("message.create")),
				`{"content_type":"text/plain","content":"x"}`,
				envelope.Field{Name: "mentions", Value: jsontext.Value(`["did:agent:Reviewer-000000000000000000000000000000000="]`)}))
		}, adp.ErrInvalidEvent},
		{"§6 32 mentions are accepted", public, func(w *adptest.World) (*adp.Record, error) {
			var ids []identity.AgentID
			for i := range 32 {
				k, _ := identity.NewKeyFromSeed([]byte(strings.Repeat(string(rune('A'+i)), 32)))
				ids = append(ids, k.AgentID())
			}
			return w.Submit(adp.NewMessage(w.Ctx, w.Author("creator"), w.Base("message.create"),
				adp.Message{ContentType: "text/plain", Content: adp.TextContent("hi all")}, ids...))
		}, nil},
		{"§5.1 events of another protocol are rejected", public, func(w *adptest.World) (*adp.Record, error) {
			b := w.Base("message.create")
			env, err := w.Author("creator").Sign(w.Ctx, "agent-profile/1.0", "message.create", jsontext.Value(`{}`), nil)
			_ = b
			return w.Submit(env, err)
		}, adp.ErrInvalidEvent},
		{"§22 event room_id must equal the room", public, func(w *adptest.World) (*adp.Record, error) {
			b := w.Base("message.create")
			b.RoomID = "another-room"
			return w.Submit(adp.NewMessage(w.Ctx, w.Author("creator"), b, adp.Message{ContentType: "text/plain", Content: adp.TextContent("x")}))
		}, adp.ErrInvalidEvent},
		{"§13.2 a room. type that is not built in is not defined", public, func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(raw(w, "creator", "room.rename", ptr(w.Base("message.create")), `{}`))
		}, adp.ErrTypeNotDefined},
		{"§15 one envelope is never accepted twice", publicWith(withTypes(`{"use":"adp:reactions/1.0"}`)), func(w *adptest.World) (*adp.Record, error) {
			first, _ := w.Say("creator", "x")
			// A signal stays anchored, so only the duplicate rule stops it.
			env, err := custom(w, "creator", "reaction.create", `{"event_id":"`+first.Envelope.Hash().String()+`","reaction":"agree"}`)
			w.Must(env, err)
			return w.Submit(env, nil)
		}, adp.ErrInvalidEvent},
		{"§21 payload over 64 KiB", public, func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(adp.NewMessage(w.Ctx, w.Author("creator"), w.Base("message.create"),
				adp.Message{ContentType: "text/plain", Content: adp.TextContent(strings.Repeat("x", 64<<10))}))
		}, adp.ErrPayloadTooLarge},
		{"§21 max_payload_hint raises the limit", publicWith(withTypes(`{"type":"blob.put","kind":"message","title":"Blob","max_payload_hint":200000,"schema":{"type":"object"}}`)),
			func(w *adptest.World) (*adp.Record, error) {
				return w.Submit(custom(w, "creator", "blob.put", `{"data":"`+strings.Repeat("x", 100_000)+`"}`))
			}, nil},
	})
}

func TestRulesFreshness(t *testing.T) {
	runRules(t, []rule{
		{"§6.1 a message on a stale head is room_head_mismatch", func(w *adptest.World) {
			w.PublicRoom()
			w.Join("alice", adp.RoleSpeaker)
		}, func(w *adptest.World) (*adp.Record, error) {
			stale := w.Base("message.create")
			if _, err := w.Say("creator", "first"); err != nil {
				w.TB.Fatal(err)
			}
			return w.Submit(adp.NewMessage(w.Ctx, w.Author("alice"), stale, adp.Message{ContentType: "text/plain", Content: adp.TextContent("late")}))
		}, adp.ErrRoomHeadMismatch},
		{"§6.1 room.update on a stale head", public, func(w *adptest.World) (*adp.Record, error) {
			stale := w.Base("room.update")
			w.Say("creator", "moves the head")
			return w.Submit(adp.NewRoomUpdate(w.Ctx, w.Author("creator"), stale, adp.RoomUpdate{Guidance: ptr("g")}))
		}, adp.ErrRoomHeadMismatch},
		{"§6.1 type.define on a stale head", public, func(w *adptest.World) (*adp.Record, error) {
			stale := w.Base("type.define")
			w.Say("creator", "moves the head")
			d, _ := packs.ParseDeclaration([]byte(`{"use":"adp:reactions/1.0"}`))
			return w.Submit(adp.NewTypeDefine(w.Ctx, w.Author("creator"), stale, d))
		}, adp.ErrRoomHeadMismatch},
		{"§6.1 a control type on a stale head", publicWith(withTypes(`{"use":"adp:moderation/1.0"}`)), func(w *adptest.World) (*adp.Record, error) {
			stale := w.Base("turn.update")
			w.Say("creator", "moves the head")
			return w.Submit(raw(w, "creator", "turn.update", &stale, `{"turn_id":1,"speaker":"`+w.ID("creator").String()+`"}`))
		}, adp.ErrRoomHeadMismatch},
		{"§6.1 a signal anchored on an old record is accepted", publicWith(withTypes(`{"use":"adp:reactions/1.0"}`)), func(w *adptest.World) (*adp.Record, error) {
			first, _ := w.Say("creator", "one")
			old := w.Base("reaction.create")
			w.Say("creator", "two")
			w.Say("creator", "three")
			return w.Submit(raw(w, "creator", "reaction.create", &old, `{"event_id":"`+first.Envelope.Hash().String()+`","reaction":"agree"}`))
		}, nil},
		{"§6.1 a signal with a wrong base_hash is base_record_mismatch", publicWith(withTypes(`{"use":"adp:reactions/1.0"}`)), func(w *adptest.World) (*adp.Record, error) {
			first, _ := w.Say("creator", "one")
			b := w.Base("reaction.create")
			b.Hash = first.Envelope.Hash() // an event hash is not a record hash
			return w.Submit(raw(w, "creator", "reaction.create", &b, `{"event_id":"`+first.Envelope.Hash().String()+`","reaction":"agree"}`))
		}, adp.ErrBaseRecordMismatch},
		{"§6.1 a membership event anchored past the latest record", public, func(w *adptest.World) (*adp.Record, error) {
			b := w.Base("room.join")
			b.Seq++
			return w.Submit(adp.NewJoin(w.Ctx, w.Author("alice"), b, adp.Join{Role: adp.RoleSpeaker}))
		}, adp.ErrBaseRecordMismatch},
		{"§6.1 a join anchored before later messages is accepted", public, func(w *adptest.World) (*adp.Record, error) {
			old := w.Base("room.join")
			w.Say("creator", "one")
			w.Say("creator", "two")
			return w.Submit(adp.NewJoin(w.Ctx, w.Author("alice"), old, adp.Join{Role: adp.RoleSpeaker}))
		}, nil},
		{"§6.1 a message based on the latest signal, not the head, is rejected", public, func(w *adptest.World) (*adp.Record, error) {
			w.Join("alice", adp.RoleSpeaker) // a signal: latest moves, head stays
			return w.Submit(adp.NewMessage(w.Ctx, w.Author("alice"), w.Base("room.join"), adp.Message{ContentType: "text/plain", Content: adp.TextContent("x")}))
		}, adp.ErrRoomHeadMismatch},
	})
}

func TestRoomHeadMismatchData(t *testing.T) {
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", &adp.RoomOptions{URL: "https://api.al.ink/v1/rooms/d8ftedhpqhsusbg001tg"})
	w.PublicRoom()
	stale := w.Base("message.create")
	head, _ := w.Say("creator", "x")
	_, err := w.Submit(adp.NewMessage(w.Ctx, w.Author("creator"), stale, adp.Message{ContentType: "text/plain", Content: adp.TextContent("y")}))
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
		{"§14 no message before the room starts", publicWith(scheduled), func(w *adptest.World) (*adp.Record, error) {
			return w.Say("creator", "early")
		}, adp.ErrRoomNotActive},
		{"§14 no custom event before the room starts", publicWith(scheduled, withTypes(reviewFinding)), func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(custom(w, "creator", "review.finding", `{"severity":"low","summary":"s"}`))
		}, adp.ErrRoomNotActive},
		{"§14 joins are allowed before the room starts", publicWith(scheduled), func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(adp.NewJoin(w.Ctx, w.Author("alice"), w.Base("room.join"), adp.Join{Role: adp.RoleSpeaker}))
		}, nil},
		{"§14 type.define is allowed before the room starts", publicWith(scheduled), func(w *adptest.World) (*adp.Record, error) {
			return define(w, "creator", reviewFinding)
		}, nil},
		{"§8 the room activates at start_time", publicWith(scheduled), func(w *adptest.World) (*adp.Record, error) {
			w.Tick(time.Hour)
			return w.Say("creator", "now")
		}, nil},
		{"§8 the room ends at end_time", public, func(w *adptest.World) (*adp.Record, error) {
			w.Tick(time.Hour)
			return w.Say("creator", "too late")
		}, adp.ErrRoomEnded},
		{"§8 no writes after room.close", public, func(w *adptest.World) (*adp.Record, error) {
			w.Must(adp.NewClose(w.Ctx, w.Author("creator"), w.Base("room.close"), adp.Notice{Reason: "done"}))
			return w.Submit(adp.NewJoin(w.Ctx, w.Author("alice"), w.Base("room.join"), adp.Join{Role: adp.RoleSpeaker}))
		}, adp.ErrRoomEnded},
		{"§8 no writes after room.cancel", publicWith(scheduled), func(w *adptest.World) (*adp.Record, error) {
			w.Must(adp.NewCancel(w.Ctx, w.Author("creator"), w.Base("room.cancel"), adp.Notice{}))
			return w.Submit(adp.NewJoin(w.Ctx, w.Author("alice"), w.Base("room.join"), adp.Join{Role: adp.RoleSpeaker}))
		}, adp.ErrRoomNotActive},
		{"§13.2 room.close only in an active room", publicWith(scheduled), func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(adp.NewClose(w.Ctx, w.Author("creator"), w.Base("room.close"), adp.Notice{}))
		}, adp.ErrRoomNotActive},
		{"§13.2 room.cancel only in a scheduled room", public, func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(adp.NewCancel(w.Ctx, w.Author("creator"), w.Base("room.cancel"), adp.Notice{}))
		}, adp.ErrRoomNotActive},
		{"§13.2 room.close by a speaker", func(w *adptest.World) {
			w.PublicRoom()
			w.Join("alice", adp.RoleSpeaker)
		}, func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(adp.NewClose(w.Ctx, w.Author("alice"), w.Base("room.close"), adp.Notice{}))
		}, adp.ErrPermissionDenied},
		{"§13.2 room.cancel by a non-member", publicWith(scheduled), func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(adp.NewCancel(w.Ctx, w.Author("alice"), w.Base("room.cancel"), adp.Notice{}))
		}, adp.ErrPermissionDenied},
		{"§9 writes to a room without room.create", nil, func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(adp.NewJoin(w.Ctx, w.Author("alice"), adp.Base{RoomID: w.Room.ID(), Seq: 1}, adp.Join{Role: adp.RoleSpeaker}))
		}, adp.ErrRoomNotFound},
	})
}

func TestRulesCreate(t *testing.T) {
	create := func(payload string) func(w *adptest.World) (*adp.Record, error) {
		return func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(raw(w, "creator", "room.create", nil, payload))
		}
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
		{"§9 a room has one room.create", public, func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(adp.NewRoomCreate(w.Ctx, w.Author("alice"), adp.RoomCreate{Topic: "t", Visibility: adp.VisibilityPublic, StartTime: 1, EndTime: 2}))
		}, adp.ErrInvalidEvent},
	})
	// §9: the creator is an active moderator at once.
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", nil)
	w.PublicRoom()
	if m, ok := w.Room.Member(w.ID("creator")); !ok || m.Role != adp.RoleModerator || m.Status != adp.MemberActive || m.JoinedSeq != 1 {
		t.Fatalf("creator membership %+v", m)
	}
}

func TestRulesUpdate(t *testing.T) {
	upd := func(name string, p adp.RoomUpdate) func(w *adptest.World) (*adp.Record, error) {
		return func(w *adptest.World) (*adp.Record, error) { return update(w, name, p) }
	}
	rawUpd := func(payload string) func(w *adptest.World) (*adp.Record, error) {
		return func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(raw(w, "creator", "room.update", ptr(w.Base("room.update")), payload))
		}
	}
	runRules(t, []rule{
		{"§9.4 only the creator or a moderator", func(w *adptest.World) {
			w.PublicRoom()
			w.Join("alice", adp.RoleSpeaker)
		}, upd("alice", adp.RoomUpdate{Guidance: ptr("mine")}), adp.ErrPermissionDenied},
		{"§9.4 a moderator may update", func(w *adptest.World) {
			w.PublicRoom(policy(adp.Policy{ModeratorAgentIDs: []identity.AgentID{w.ID("mod")}}))
			w.Join("mod", adp.RoleModerator)
		}, upd("mod", adp.RoomUpdate{Guidance: ptr("cite sources")}), nil},
		{"§9.4 empty payload", public, rawUpd(`{}`), adp.ErrInvalidEvent},
		{"§9.4 field outside the updatable set", public, rawUpd(`{"visibility":"private"}`), adp.ErrInvalidEvent},
		{"§9.4 blank topic", public, rawUpd(`{"topic":" "}`), adp.ErrInvalidEvent},
		{"§9.4 start_time of an active room", public, upd("creator", adp.RoomUpdate{StartTime: ptr(adptest.T0.UnixMilli())}), adp.ErrInvalidEvent},
		{"§9.4 effective start_time not before end_time", publicWith(scheduled), upd("creator", adp.RoomUpdate{EndTime: ptr(adptest.T0.Add(30 * time.Minute).UnixMilli())}), adp.ErrInvalidEvent},
		{"§9.4 an active room's end_time not after now", public, func(w *adptest.World) (*adp.Record, error) {
			return update(w, "creator", adp.RoomUpdate{EndTime: ptr(w.Now.UnixMilli())})
		}, adp.ErrInvalidEvent},
		{"§9.4 policy violating §9.3", public, rawUpd(`{"policy":{"max_speakers":0}}`), adp.ErrInvalidEvent},
		{"§9.4 an ended room", public, func(w *adptest.World) (*adp.Record, error) {
			w.Must(adp.NewClose(w.Ctx, w.Author("creator"), w.Base("room.close"), adp.Notice{}))
			return update(w, "creator", adp.RoomUpdate{Guidance: ptr("g")})
		}, adp.ErrRoomEnded},
		{"§9.4 a new start_time in the past activates at once", publicWith(scheduled), func(w *adptest.World) (*adp.Record, error) {
			w.OK(update(w, "creator", adp.RoomUpdate{StartTime: ptr(w.Now.UnixMilli())}))
			return w.Say("creator", "started")
		}, nil},
		{"§9.4 lowering max_speakers constrains later joins", func(w *adptest.World) {
			w.PublicRoom()
			w.Join("alice", adp.RoleSpeaker)
			w.OK(update(w, "creator", adp.RoomUpdate{Policy: &adp.Policy{MaxSpeakers: 1}}))
		}, func(w *adptest.World) (*adp.Record, error) {
			if m, _ := w.Room.Member(w.ID("alice")); m.Role != adp.RoleSpeaker {
				w.TB.Fatal("lowering max_speakers demoted a member")
			}
			return w.Submit(adp.NewJoin(w.Ctx, w.Author("bob"), w.Base("room.join"), adp.Join{Role: adp.RoleSpeaker}))
		}, adp.ErrMaxSpeakersExceeded},
	})
	// Present fields replace, empty values clear, absent fields stay (§9.4).
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", nil)
	w.PublicRoom(func(p *adp.RoomCreate) { p.Tags = []string{"a", "b"}; p.Agenda = "agenda"; p.Language = "en" })
	w.OK(update(w, "creator", adp.RoomUpdate{Tags: []string{}, Agenda: ptr(""), Topic: ptr("New topic")}))
	c := w.Room.Contract()
	if len(c.Tags) != 0 || c.Agenda != "" || c.Topic != "New topic" || c.Language != "en" {
		t.Fatalf("contract after update: %+v", c)
	}
}

func TestRulesJoin(t *testing.T) {
	join := func(name string, role adp.Role) func(w *adptest.World) (*adp.Record, error) {
		return func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(adp.NewJoin(w.Ctx, w.Author(name), w.Base("room.join"), adp.Join{Role: role}))
		}
	}
	restricted := publicWith(visibility(adp.VisibilityRestricted))
	approved := func(role adp.Role) func(w *adptest.World) {
		return func(w *adptest.World) {
			w.PublicRoom(visibility(adp.VisibilityRestricted))
			w.OK(review(w, "creator", request(w, "jr_1", "alice", role), adp.DecisionApprove, role))
		}
	}
	runRules(t, []rule{
		{"§10.2 a public room accepts a direct join with perspective", public, func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(adp.NewJoin(w.Ctx, w.Author("alice"), w.Base("room.join"), adp.Join{Role: adp.RoleSpeaker, Perspective: ptr("distributed-systems reviewer")}))
		}, nil},
		{"§10.2 an active member cannot join again", func(w *adptest.World) {
			w.PublicRoom()
			w.Join("alice", adp.RoleSpeaker)
		}, join("alice", adp.RoleObserver), adp.ErrInvalidEvent},
		{"§10.2 a banned agent cannot join", func(w *adptest.World) {
			w.PublicRoom()
			w.Must(adp.NewMemberRemove(w.Ctx, w.Author("creator"), w.Base("room.member.remove"), adp.MemberRemove{Member: w.ID("alice"), Ban: true}))
		}, join("alice", adp.RoleSpeaker), adp.ErrMemberBanned},
		{"§10.2 max_speakers", publicWith(policy(adp.Policy{MaxSpeakers: 2})), func(w *adptest.World) (*adp.Record, error) {
			w.Join("alice", adp.RoleSpeaker) // the creator is the first speaking member
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
		{"§10.2 an approved request admits", approved(adp.RoleSpeaker), func(w *adptest.World) (*adp.Record, error) {
			return joinWith(w, "alice", "jr_1", adp.RoleSpeaker)
		}, nil},
		{"§10.2 an unknown request", restricted, func(w *adptest.World) (*adp.Record, error) {
			return joinWith(w, "alice", "jr_nope", adp.RoleSpeaker)
		}, adp.ErrJoinRequestNotFound},
		{"§10.2 another actor's request", approved(adp.RoleSpeaker), func(w *adptest.World) (*adp.Record, error) {
			return joinWith(w, "bob", "jr_1", adp.RoleSpeaker)
		}, adp.ErrJoinRequestNotFound},
		{"§10.2 a rejected request", func(w *adptest.World) {
			w.PublicRoom(visibility(adp.VisibilityRestricted))
			w.OK(review(w, "creator", request(w, "jr_1", "alice", adp.RoleSpeaker), adp.DecisionReject, ""))
		}, func(w *adptest.World) (*adp.Record, error) { return joinWith(w, "alice", "jr_1", adp.RoleSpeaker) }, adp.ErrJoinRequestNotApproved},
		{"§10.2 an expired request", approved(adp.RoleSpeaker), func(w *adptest.World) (*adp.Record, error) {
			w.OK(update(w, "creator", adp.RoomUpdate{EndTime: ptr(w.Now.Add(3 * time.Hour).UnixMilli())}))
			w.Tick(time.Hour)
			return joinWith(w, "alice", "jr_1", adp.RoleSpeaker)
		}, adp.ErrJoinRequestExpired},
		{"§10.2 a consumed request cannot readmit", approved(adp.RoleSpeaker), func(w *adptest.World) (*adp.Record, error) {
			w.OK(joinWith(w, "alice", "jr_1", adp.RoleSpeaker))
			w.Must(adp.NewLeave(w.Ctx, w.Author("alice"), w.Base("room.leave"), adp.Notice{}))
			return joinWith(w, "alice", "jr_1", adp.RoleSpeaker)
		}, adp.ErrJoinRequestExpired},
		{"§10.2 the join role must equal the approved role", approved(adp.RoleObserver), func(w *adptest.World) (*adp.Record, error) {
			return joinWith(w, "alice", "jr_1", adp.RoleSpeaker)
		}, adp.ErrJoinRequestRoleMismatch},
		{"§10.2 request_id excludes perspective", approved(adp.RoleSpeaker), func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(raw(w, "alice", "room.join", ptr(w.Base("room.join")), `{"role":"speaker","request_id":"jr_1","perspective":"p"}`))
		}, adp.ErrInvalidEvent},
		{"§10.2 the request's perspective is the member's", approved(adp.RoleSpeaker), func(w *adptest.World) (*adp.Record, error) {
			return joinWith(w, "alice", "jr_1", adp.RoleSpeaker)
		}, nil},
		{"§10.2 no join into an ended room", public, func(w *adptest.World) (*adp.Record, error) {
			w.Tick(2 * time.Hour)
			return join("alice", adp.RoleSpeaker)(w)
		}, adp.ErrRoomEnded},
		{"§10.2 unknown role", public, func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(raw(w, "alice", "room.join", ptr(w.Base("room.join")), `{"role":"expert"}`))
		}, adp.ErrInvalidEvent},
	})
}

func TestRulesReview(t *testing.T) {
	restricted := func(w *adptest.World) { w.PublicRoom(visibility(adp.VisibilityRestricted)) }
	runRules(t, []rule{
		{"§11 only the creator or a moderator reviews", func(w *adptest.World) {
			w.PublicRoom()
			w.Join("bob", adp.RoleSpeaker)
		}, func(w *adptest.World) (*adp.Record, error) {
			return review(w, "bob", request(w, "jr_1", "alice", adp.RoleSpeaker), adp.DecisionApprove, adp.RoleSpeaker)
		}, adp.ErrPermissionDenied},
		{"§11 request.room_id must be the event's room", restricted, func(w *adptest.World) (*adp.Record, error) {
			req := request(w, "jr_1", "alice", adp.RoleSpeaker)
			req.RoomID = "elsewhere"
			return review(w, "creator", req, adp.DecisionApprove, adp.RoleSpeaker)
		}, adp.ErrInvalidEvent},
		{"§11 a request is reviewed once", func(w *adptest.World) {
			restricted(w)
			w.OK(review(w, "creator", request(w, "jr_1", "alice", adp.RoleSpeaker), adp.DecisionReject, ""))
		}, func(w *adptest.World) (*adp.Record, error) {
			return review(w, "creator", request(w, "jr_1", "alice", adp.RoleSpeaker), adp.DecisionApprove, adp.RoleSpeaker)
		}, adp.ErrJoinRequestNotFound},
		{"§11 approve must name a role", restricted, func(w *adptest.World) (*adp.Record, error) {
			req := request(w, "jr_1", "alice", adp.RoleSpeaker)
			return w.Submit(raw(w, "creator", "room.join.review", ptr(w.Base("room.join.review")),
				`{"request":{"id":"jr_1","room_id":"`+req.RoomID+`","applicant":"`+req.Applicant.String()+`","role":"speaker","created_at":1,"expires_at":2},"decision":"approve"}`))
		}, adp.ErrInvalidEvent},
		{"§11 approve a role the policy forbids", publicWith(visibility(adp.VisibilityRestricted), policy(adp.Policy{ObserverAllowed: ptr(false)})), func(w *adptest.World) (*adp.Record, error) {
			return review(w, "creator", request(w, "jr_1", "alice", adp.RoleObserver), adp.DecisionApprove, adp.RoleObserver)
		}, adp.ErrRoleNotAllowed},
		{"§11 approve beyond max_speakers", publicWith(visibility(adp.VisibilityRestricted), policy(adp.Policy{MaxSpeakers: 1})), func(w *adptest.World) (*adp.Record, error) {
			return review(w, "creator", request(w, "jr_1", "alice", adp.RoleSpeaker), adp.DecisionApprove, adp.RoleSpeaker)
		}, adp.ErrMaxSpeakersExceeded},
		{"§11 a review may approve another role than requested", restricted, func(w *adptest.World) (*adp.Record, error) {
			w.OK(review(w, "creator", request(w, "jr_1", "alice", adp.RoleSpeaker), adp.DecisionApprove, adp.RoleObserver))
			return joinWith(w, "alice", "jr_1", adp.RoleObserver)
		}, nil},
		{"§10.5 approving a banned agent's request lifts the ban", func(w *adptest.World) {
			restricted(w)
			w.Must(adp.NewMemberRemove(w.Ctx, w.Author("creator"), w.Base("room.member.remove"), adp.MemberRemove{Member: w.ID("alice"), Ban: true}))
			w.OK(review(w, "creator", request(w, "jr_1", "alice", adp.RoleSpeaker), adp.DecisionApprove, adp.RoleSpeaker))
		}, func(w *adptest.World) (*adp.Record, error) {
			if w.Room.Banned(w.ID("alice")) {
				w.TB.Fatal("ban not lifted")
			}
			return joinWith(w, "alice", "jr_1", adp.RoleSpeaker)
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
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", &adp.RoomOptions{JoinRequests: store})
	w.PublicRoom(visibility(adp.VisibilityRestricted))
	req := request(w, "jr_1", "alice", adp.RoleSpeaker)
	store["jr_1"] = struct {
		req    adp.JoinRequest
		status adp.JoinRequestStatus
	}{req, adp.JoinPending}

	if _, err := joinWith(w, "alice", "jr_1", adp.RoleSpeaker); !errors.Is(err, adp.ErrJoinRequestNotApproved) {
		t.Errorf("§10.2 join on a pending request: %v", err)
	}
	if _, err := review(w, "creator", request(w, "jr_2", "bob", adp.RoleSpeaker), adp.DecisionApprove, adp.RoleSpeaker); !errors.Is(err, adp.ErrJoinRequestNotFound) {
		t.Errorf("§11 review of a request the host does not hold: %v", err)
	}
	forged := req
	forged.Role = adp.RoleModerator
	if _, err := review(w, "creator", forged, adp.DecisionApprove, adp.RoleModerator); !errors.Is(err, adp.ErrInvalidEvent) {
		t.Errorf("§11 review whose request differs from the stored one: %v", err)
	}
	if _, err := review(w, "creator", req, adp.DecisionApprove, adp.RoleSpeaker); err != nil {
		t.Fatalf("§11 valid review: %v", err)
	}
}

// TestApplyReadsStoredRequestContentNotStatus: a host that loads a room
// from its log replays each review and join against its join-request
// store, whose requests now show the outcome (approved after the review):
// Apply checks what a stored request says, not its status, and the
// replayed room equals the host's. A stored request that differs from the
// one the log reviewed is still refused.
func TestApplyReadsStoredRequestContentNotStatus(t *testing.T) {
	store := joinStore{}
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", &adp.RoomOptions{JoinRequests: store})
	w.Track = true
	w.PublicRoom(visibility(adp.VisibilityRestricted))
	req := request(w, "jr_1", "alice", adp.RoleSpeaker)
	type entry = struct {
		req    adp.JoinRequest
		status adp.JoinRequestStatus
	}
	store["jr_1"] = entry{req, adp.JoinPending}
	w.OK(review(w, "creator", req, adp.DecisionApprove, adp.RoleSpeaker))
	store["jr_1"] = entry{req, adp.JoinApproved} // the host records the review
	w.OK(joinWith(w, "alice", "jr_1", adp.RoleSpeaker))

	w.Replay(&adp.RoomOptions{JoinRequests: store})

	forged := req
	forged.Role = adp.RoleModerator
	store["jr_1"] = entry{forged, adp.JoinApproved}
	r := adp.NewRoom(w.Room.ID(), &adp.RoomOptions{JoinRequests: store})
	var err error
	for _, rec := range w.Records {
		if err = r.Apply(w.Ctx, rec); err != nil {
			break
		}
	}
	if !errors.Is(err, adp.ErrInvalidEvent) {
		t.Fatalf("replay against a stored request that differs from the reviewed one: %v", err)
	}
}

func TestRulesMembers(t *testing.T) {
	withAlice := func(w *adptest.World) {
		w.PublicRoom()
		w.Join("alice", adp.RoleSpeaker)
	}
	roleUpd := func(by, member string, role adp.Role) func(w *adptest.World) (*adp.Record, error) {
		return func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(adp.NewRoleUpdate(w.Ctx, w.Author(by), w.Base("room.member.role.update"), adp.RoleUpdate{Member: w.ID(member), Role: role}))
		}
	}
	remove := func(by, member string, ban bool) func(w *adptest.World) (*adp.Record, error) {
		return func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(adp.NewMemberRemove(w.Ctx, w.Author(by), w.Base("room.member.remove"), adp.MemberRemove{Member: w.ID(member), Ban: ban}))
		}
	}
	runRules(t, []rule{
		{"§10.4 only the creator or a moderator changes roles", func(w *adptest.World) {
			withAlice(w)
			w.Join("bob", adp.RoleSpeaker)
		}, roleUpd("alice", "bob", adp.RoleObserver), adp.ErrPermissionDenied},
		{"§10.4 the target must be an active member", public, roleUpd("creator", "alice", adp.RoleObserver), adp.ErrInvalidEvent},
		{"§10.4 the target role must be allowed", func(w *adptest.World) {
			w.PublicRoom(policy(adp.Policy{ObserverAllowed: ptr(false)}))
			w.Join("alice", adp.RoleSpeaker)
		}, roleUpd("creator", "alice", adp.RoleObserver), adp.ErrRoleNotAllowed},
		{"§10.4 max_speakers", func(w *adptest.World) {
			w.PublicRoom(policy(adp.Policy{MaxSpeakers: 1}))
			w.Join("alice", adp.RoleObserver)
		}, roleUpd("creator", "alice", adp.RoleSpeaker), adp.ErrMaxSpeakersExceeded},
		{"§10.4 demotion to observer mutes", withAlice, func(w *adptest.World) (*adp.Record, error) {
			w.OK(roleUpd("creator", "alice", adp.RoleObserver)(w))
			return w.Say("alice", "can I?")
		}, adp.ErrPermissionDenied},
		{"§9 creator authority survives the creator's own demotion", withAlice, func(w *adptest.World) (*adp.Record, error) {
			w.OK(roleUpd("creator", "creator", adp.RoleObserver)(w))
			if _, err := w.Say("creator", "still here"); err != nil {
				w.TB.Fatalf("creator bypasses role checks: %v", err)
			}
			return roleUpd("creator", "alice", adp.RoleObserver)(w)
		}, nil},
		{"§10.5 only the creator or a moderator removes", func(w *adptest.World) {
			withAlice(w)
			w.Join("bob", adp.RoleSpeaker)
		}, remove("alice", "bob", false), adp.ErrPermissionDenied},
		{"§10.5 the creator cannot be removed", func(w *adptest.World) {
			w.PublicRoom(policy(adp.Policy{ModeratorAgentIDs: []identity.AgentID{w.ID("mod")}}))
			w.Join("mod", adp.RoleModerator)
		}, remove("mod", "creator", true), adp.ErrPermissionDenied},
		{"§10.5 removing oneself is room.leave's job", func(w *adptest.World) {
			w.PublicRoom(policy(adp.Policy{ModeratorAgentIDs: []identity.AgentID{w.ID("mod")}}))
			w.Join("mod", adp.RoleModerator)
		}, remove("mod", "mod", false), adp.ErrInvalidEvent},
		{"§10.5 a non-member can only be banned", public, remove("creator", "alice", false), adp.ErrInvalidEvent},
		{"§10.5 a preventive ban of a non-member", public, remove("creator", "alice", true), nil},
		{"§10.5 a removed member can no longer write", withAlice, func(w *adptest.World) (*adp.Record, error) {
			w.OK(remove("creator", "alice", false)(w))
			return w.Say("alice", "hello?")
		}, adp.ErrPermissionDenied},
		{"§10.3 only members leave", public, func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(adp.NewLeave(w.Ctx, w.Author("alice"), w.Base("room.leave"), adp.Notice{}))
		}, adp.ErrPermissionDenied},
		{"§10.3 a member who left may rejoin a public room", withAlice, func(w *adptest.World) (*adp.Record, error) {
			w.Must(adp.NewLeave(w.Ctx, w.Author("alice"), w.Base("room.leave"), adp.Notice{Reason: "brb"}))
			return w.Submit(adp.NewJoin(w.Ctx, w.Author("alice"), w.Base("room.join"), adp.Join{Role: adp.RoleSpeaker}))
		}, nil},
	})
}

func TestRulesMessage(t *testing.T) {
	withObserver := func(w *adptest.World) {
		w.PublicRoom()
		w.Join("alice", adp.RoleObserver)
	}
	msg := func(name string, m adp.Message) func(w *adptest.World) (*adp.Record, error) {
		return func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(adp.NewMessage(w.Ctx, w.Author(name), w.Base("message.create"), m))
		}
	}
	rawMsg := func(payload string) func(w *adptest.World) (*adp.Record, error) {
		return func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(raw(w, "creator", "message.create", ptr(w.Base("message.create")), payload))
		}
	}
	runRules(t, []rule{
		{"§12 observers cannot send messages", withObserver, msg("alice", adp.Message{ContentType: "text/plain", Content: adp.TextContent("x")}), adp.ErrPermissionDenied},
		{"§12 non-members cannot send messages", public, msg("bob", adp.Message{ContentType: "text/plain", Content: adp.TextContent("x")}), adp.ErrPermissionDenied},
		{"§12 empty content_type", public, rawMsg(`{"content_type":"","content":"x"}`), adp.ErrInvalidEvent},
		{"§12 content must be a string or an object", public, rawMsg(`{"content_type":"application/json","content":[1,2]}`), adp.ErrInvalidEvent},
		{"§12 JSON object content", public, rawMsg(`{"content_type":"application/json","content":{"k":[1,2]}}`), nil},
		{"§12 references must be events of this room", public, func(w *adptest.World) (*adp.Record, error) {
			var foreign envelope.Hash
			foreign[0] = 1
			return msg("creator", adp.Message{ContentType: "text/plain", Content: adp.TextContent("x"), References: []envelope.Hash{foreign}})(w)
		}, adp.ErrInvalidEvent},
		{"§12 a record hash is not an event hash", public, func(w *adptest.World) (*adp.Record, error) {
			first, _ := w.Say("creator", "one")
			return msg("creator", adp.Message{ContentType: "text/plain", Content: adp.TextContent("x"), References: []envelope.Hash{first.Hash}})(w)
		}, adp.ErrInvalidEvent},
		{"§12 references to events of this room", public, func(w *adptest.World) (*adp.Record, error) {
			first, _ := w.Say("creator", "one")
			return msg("creator", adp.Message{ContentType: "text/markdown", Content: adp.TextContent("## Proposal"), References: []envelope.Hash{first.Envelope.Hash()}})(w)
		}, nil},
		{"§12 mentions name any Agent ID", public, func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(adp.NewMessage(w.Ctx, w.Author("creator"), w.Base("message.create"),
				adp.Message{ContentType: "text/plain", Content: adp.TextContent("ping")}, w.ID("bob")))
		}, nil},
	})
	// A host's content_type policy (§12 "not supported by host policy").
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", &adp.RoomOptions{AcceptContentType: func(ct string) bool { return ct == "text/plain" }})
	w.PublicRoom()
	if _, err := w.Submit(adp.NewMessage(w.Ctx, w.Author("creator"), w.Base("message.create"),
		adp.Message{ContentType: "text/html", Content: adp.TextContent("<b>x</b>")})); !errors.Is(err, adp.ErrInvalidEvent) {
		t.Errorf("unsupported content_type: %v", err)
	}
}

func TestRulesTypes(t *testing.T) {
	seedTypes := withTypes(`{"use":"adp:reactions/1.0"}`,
		`{"use":"adp:deliberation/1.0","overrides":{"poll.vote":{"roles":["moderator","speaker","observer"]}}}`,
		reviewFinding)
	withObserver := func(w *adptest.World) {
		w.PublicRoom(seedTypes)
		w.Join("alice", adp.RoleObserver)
		w.Join("bob", adp.RoleSpeaker)
	}
	runRules(t, []rule{
		{"§13.2 an undefined custom type", public, func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(raw(w, "creator", "review.finding", ptr(w.Base("message.create")), `{"severity":"low","summary":"s"}`))
		}, adp.ErrTypeNotDefined},
		{"§13.6 payload_schema_violation", publicWith(seedTypes), func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(custom(w, "creator", "review.finding", `{"severity":"critical","summary":"s"}`))
		}, adp.ErrPayloadSchemaViolation},
		{"§13.6 a valid custom payload", publicWith(seedTypes), func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(custom(w, "creator", "review.finding", `{"severity":"high","summary":"The retry loop can starve the writer queue."}`))
		}, nil},
		{"§13.6 kind roles: observers cannot send message kinds", withObserver, func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(custom(w, "alice", "question.create", `{"question":"why?"}`))
		}, adp.ErrPermissionDenied},
		{"§13.6 a roles override grants observers poll.vote", withObserver, func(w *adptest.World) (*adp.Record, error) {
			poll := w.Must(custom(w, "creator", "poll.create", `{"poll_id":"p1","question":"Which?","options":[{"id":"a","label":"A"},{"id":"b","label":"B"}]}`))
			return w.Submit(custom(w, "alice", "poll.vote", `{"poll_event_id":"`+poll.Envelope.Hash().String()+`","option_ids":["a"]}`))
		}, nil},
		{"§13.6 observers may send signals", withObserver, func(w *adptest.World) (*adp.Record, error) {
			first, _ := w.Say("bob", "x")
			return reaction(w, "alice", first)
		}, nil},
		{"§13.1 types grant nothing to non-members", publicWith(seedTypes), func(w *adptest.World) (*adp.Record, error) {
			first, _ := w.Say("creator", "x")
			return reaction(w, "carol", first)
		}, adp.ErrPermissionDenied},
		{"§13.6 a disabled type", publicWith(withTypes(`{"use":"adp:reactions/1.0","overrides":{"reaction.create":{"status":"disabled"}}}`)), func(w *adptest.World) (*adp.Record, error) {
			first, _ := w.Say("creator", "x")
			return reaction(w, "creator", first)
		}, adp.ErrTypeDisabled},
		{"§13.2 type.define only by the creator or a moderator", withObserver, func(w *adptest.World) (*adp.Record, error) {
			return define(w, "bob", `{"use":"adp:curation/1.0"}`)
		}, adp.ErrPermissionDenied},
		{"§13.4 a redefinition must keep the kind", publicWith(seedTypes), func(w *adptest.World) (*adp.Record, error) {
			return define(w, "creator", strings.Replace(reviewFinding, `"kind":"message"`, `"kind":"control"`, 1))
		}, adp.ErrInvalidEvent},
		{"§13.4 the latest definition governs later events", publicWith(seedTypes), func(w *adptest.World) (*adp.Record, error) {
			w.OK(define(w, "creator", strings.Replace(reviewFinding, `"low","medium","high"`, `"low","high"`, 1)))
			return w.Submit(custom(w, "creator", "review.finding", `{"severity":"medium","summary":"s"}`))
		}, adp.ErrPayloadSchemaViolation},
		{"§13.3 names must not start with room. or type.", public, func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(raw(w, "creator", "type.define", ptr(w.Base("type.define")), `{"type":"type.alias","kind":"signal","title":"x","schema":{}}`))
		}, adp.ErrInvalidEvent},
		{"§13.5 overrides cannot change the kind", public, func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(raw(w, "creator", "type.define", ptr(w.Base("type.define")), `{"use":"adp:reactions/1.0","overrides":{"reaction.create":{"kind":"message"}}}`))
		}, adp.ErrInvalidEvent},
		{"§13.5 a control kind from a pack is moderator-only", func(w *adptest.World) {
			w.PublicRoom(withTypes(`{"use":"adp:moderation/1.0"}`))
			w.Join("bob", adp.RoleSpeaker)
		}, func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(custom(w, "bob", "turn.update", `{"turn_id":1,"speaker":"`+w.ID("bob").String()+`"}`))
		}, adp.ErrPermissionDenied},
	})
}

func TestApplyRejectsBrokenRecords(t *testing.T) {
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", nil)
	w.PublicRoom()
	w.Join("alice", adp.RoleSpeaker)
	w.Say("alice", "hi")
	good := w.Records

	replay := func(recs []*adp.Record) error {
		r := adp.NewRoom(w.Room.ID(), nil)
		for _, rec := range recs {
			if err := r.Apply(w.Ctx, rec); err != nil {
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
