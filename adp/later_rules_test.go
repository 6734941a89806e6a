package adp_test

import (
	"bytes"
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
	"github.com/agentprotocols/go-sdk/internal/strictjson"
	"github.com/agentprotocols/go-sdk/packs"
)

// laterWorld is a fixture room of the 2026-09-24 draft on the host
// adptest.Host.
func laterWorld(t testing.TB, opts *adp.RoomOptions) *adptest.World {
	o := adp.RoomOptions{Host: adptest.Host}
	if opts != nil {
		o = *opts
	}
	o.Draft = later
	return adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", &o)
}

func openRoles(roles ...adp.Role) func(*adp.RoomCreate) {
	return func(p *adp.RoomCreate) {
		if p.Policy == nil {
			p.Policy = &adp.Policy{}
		}
		p.Policy.OpenRoles = append([]adp.Role{}, roles...)
	}
}

func invite(w *adptest.World, name string, role adp.Role) func(*adp.RoomCreate) {
	return func(p *adp.RoomCreate) {
		if p.Policy == nil {
			p.Policy = &adp.Policy{}
		}
		if p.Policy.Invites == nil {
			p.Policy.Invites = map[identity.AgentID]adp.Role{}
		}
		p.Policy.Invites[w.ID(name)] = role
	}
}

func laterDecl(t testing.TB, s string) packs.Declaration {
	t.Helper()
	d, err := later.ParseDeclaration([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func laterTypes(t testing.TB, decls ...string) func(*adp.RoomCreate) {
	return func(p *adp.RoomCreate) {
		for _, d := range decls {
			p.Types = append(p.Types, laterDecl(t, d))
		}
	}
}

// joinRequest signs name's room.join.request for role.
func joinRequest(w *adptest.World, name string, role adp.Role, perspective string) *envelope.Envelope {
	w.TB.Helper()
	p := adp.JoinRequestPayload{Role: role}
	if perspective != "" {
		p.Perspective = &perspective
	}
	env, err := adp.NewJoinRequest(w.Ctx, w.Author(name), later, w.Room.ID(), p)
	if err != nil {
		w.TB.Fatal(err)
	}
	return env
}

func signedReview(w *adptest.World, reviewer string, req *envelope.Envelope, d adp.Decision, role adp.Role) (*adp.Record, error) {
	return w.Submit(adp.NewSignedJoinReview(w.Ctx, w.Author(reviewer), w.Base(adp.TypeRoomJoinReview),
		adp.SignedJoinReview{Request: req, Decision: d, Role: role}))
}

func create(w *adptest.World, mutate ...func(*adp.RoomCreate)) (*adp.Record, error) {
	p := adp.RoomCreate{Host: adptest.Host, Topic: "t", Visibility: adp.VisibilityPublic,
		StartTime: w.Now.UnixMilli(), EndTime: w.Now.Add(time.Hour).UnixMilli()}
	for _, f := range mutate {
		f(&p)
	}
	return w.Submit(adp.NewRoomCreateIn(w.Ctx, w.Author("creator"), later, p))
}

// rawCreate signs a 2026-09-24 room.create from a raw payload, as a
// client the builders would stop could.
func rawCreate(w *adptest.World, payload string) (*adp.Record, error) {
	return w.Submit(raw(w, "creator", adp.TypeRoomCreate, nil, payload))
}

func createPayload(w *adptest.World, host, vis, policy string) string {
	p := `{"host":"` + host + `","topic":"t","visibility":"` + vis + `","start_time":` + strconv.FormatInt(w.Now.UnixMilli(), 10) +
		`,"end_time":` + strconv.FormatInt(w.Now.Add(time.Hour).UnixMilli(), 10)
	if policy != "" {
		p += `,"policy":` + policy
	}
	return p + "}"
}

func message(w *adptest.World, name string, base adp.Base) (*adp.Record, error) {
	return w.Submit(adp.NewMessage(w.Ctx, w.Author(name), base, adp.Message{ContentType: "text/plain", Content: adp.TextContent("x")}))
}

func claim(w *adptest.World, name, id string, base adp.Base) (*adp.Record, error) {
	return w.Submit(adp.NewCustom(w.Ctx, w.Author(name), base, w.Room.Registry(), "claim.update",
		jsontext.Value(`{"claim_id":"`+id+`","owner":"`+w.ID(name).String()+`","state":"claimed"}`)))
}

func ref(rec *adp.Record) adp.Base {
	return adp.Base{RoomID: rec.RoomID, Seq: rec.Seq, Hash: rec.Hash, Draft: rec.Draft}
}

// The MUSTs of the 2026-09-24 draft that differ from the seed, each a
// write refused with its code (or accepted), on a room changed by nothing
// it refused.
func TestLaterRules(t *testing.T) {
	rules := []rule{
		{"§8.1 room.create names this host", nil, func(w *adptest.World) (*adp.Record, error) { return create(w) }, nil},
		{"§8.1 a room.create naming another host is host_mismatch", nil, func(w *adptest.World) (*adp.Record, error) {
			return create(w, func(p *adp.RoomCreate) { p.Host = "https://other.example" })
		}, adp.ErrHostMismatch},
		{"§8.1 room.create names its host", nil, func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(raw(w, "creator", adp.TypeRoomCreate, nil, `{"topic":"t","visibility":"public","start_time":1,"end_time":2}`))
		}, adp.ErrInvalidEvent},
		{"§8.1 host is a serialized origin", nil, func(w *adptest.World) (*adp.Record, error) {
			return rawCreate(w, createPayload(w, "https://API.example.com/", "public", ""))
		}, adp.ErrInvalidEvent},
		{"§8.1 a loopback HTTP host only where allowed", nil, func(w *adptest.World) (*adp.Record, error) {
			return create(w, func(p *adp.RoomCreate) { p.Host = "http://127.0.0.1:8080" })
		}, adp.ErrInvalidEvent},
		{"§8.3 a private room opens no role", nil, func(w *adptest.World) (*adp.Record, error) {
			return rawCreate(w, createPayload(w, adptest.Host, "private", `{"open_roles":["observer"]}`))
		}, adp.ErrInvalidEvent},
		{"§8.3 no observer invitation where observers are disallowed", nil, func(w *adptest.World) (*adp.Record, error) {
			return rawCreate(w, createPayload(w, adptest.Host, "public", `{"observer_allowed":false,"invites":{"`+w.ID("bob").String()+`":"observer"}}`))
		}, adp.ErrInvalidEvent},
		{"§8.4 room.update opens no role in a private room", func(w *adptest.World) { w.PublicRoom(visibility(adp.VisibilityPrivate)) }, func(w *adptest.World) (*adp.Record, error) {
			return update(w, "creator", adp.RoomUpdate{Policy: &adp.Policy{OpenRoles: []adp.Role{adp.RoleSpeaker}}})
		}, adp.ErrInvalidEvent},
		{"§9.2 a public room opens observer by default", func(w *adptest.World) { w.PublicRoom() }, func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(adp.NewJoin(w.Ctx, w.Author("bob"), w.Base(adp.TypeRoomJoin), adp.Join{Role: adp.RoleObserver}))
		}, nil},
		{"§9.2 speaking needs an open role or an invitation", func(w *adptest.World) { w.PublicRoom() }, func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(adp.NewJoin(w.Ctx, w.Author("bob"), w.Base(adp.TypeRoomJoin), adp.Join{Role: adp.RoleSpeaker}))
		}, adp.ErrApprovalRequired},
		{"§9.2 an invited agent joins a private room directly", func(w *adptest.World) {
			w.PublicRoom(visibility(adp.VisibilityPrivate), invite(w, "bob", adp.RoleModerator))
		}, func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(adp.NewJoin(w.Ctx, w.Author("bob"), w.Base(adp.TypeRoomJoin), adp.Join{Role: adp.RoleModerator}))
		}, nil},
		{"§9.2 an invitation is for exactly its role", func(w *adptest.World) {
			w.PublicRoom(visibility(adp.VisibilityRestricted), invite(w, "bob", adp.RoleSpeaker))
		}, func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(adp.NewJoin(w.Ctx, w.Author("bob"), w.Base(adp.TypeRoomJoin), adp.Join{Role: adp.RoleModerator}))
		}, adp.ErrApprovalRequired},
		{"§9.2 an invitation does not override a ban", func(w *adptest.World) {
			w.PublicRoom(invite(w, "bob", adp.RoleSpeaker))
			w.Must(adp.NewMemberRemove(w.Ctx, w.Author("creator"), w.Base(adp.TypeMemberRemove), adp.MemberRemove{Member: w.ID("bob"), Ban: true}))
		}, func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(adp.NewJoin(w.Ctx, w.Author("bob"), w.Base(adp.TypeRoomJoin), adp.Join{Role: adp.RoleSpeaker}))
		}, adp.ErrMemberBanned},
		{"§9.2 room.join names no request", func(w *adptest.World) { w.PublicRoom() }, func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(raw(w, "bob", adp.TypeRoomJoin, ptr(w.Base(adp.TypeRoomJoin)), `{"role":"observer","request_id":"jr_1"}`))
		}, adp.ErrInvalidEvent},
		{"§9.3 the creator cannot leave", func(w *adptest.World) { w.PublicRoom() }, func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(adp.NewLeave(w.Ctx, w.Author("creator"), w.Base(adp.TypeRoomLeave), adp.Notice{}))
		}, adp.ErrPermissionDenied},
		{"§10 an approval makes the applicant a member", func(w *adptest.World) { w.PublicRoom() }, func(w *adptest.World) (*adp.Record, error) {
			rec, err := signedReview(w, "creator", joinRequest(w, "bob", adp.RoleSpeaker, "tester"), adp.DecisionApprove, adp.RoleSpeaker)
			if m, ok := w.Room.Member(w.ID("bob")); err == nil && (!ok || m.Status != adp.MemberActive || m.Role != adp.RoleSpeaker || m.Perspective != "tester") {
				w.TB.Fatalf("bob is %+v", m)
			}
			return rec, err
		}, nil},
		{"§10 a request is reviewed once", func(w *adptest.World) {
			w.PublicRoom()
			w.OK(signedReview(w, "creator", joinRequest(w, "bob", adp.RoleSpeaker, ""), adp.DecisionReject, ""))
		}, func(w *adptest.World) (*adp.Record, error) {
			var p adp.SignedJoinReview
			if err := strictjson.Unmarshal(w.Records[len(w.Records)-1].Envelope.Event().Payload, &p); err != nil {
				w.TB.Fatal(err)
			}
			return signedReview(w, "creator", p.Request, adp.DecisionApprove, adp.RoleSpeaker)
		}, adp.ErrJoinRequestNotPending},
		{"§10 the embedded request must verify", func(w *adptest.World) { w.PublicRoom() }, func(w *adptest.World) (*adp.Record, error) {
			req := joinRequest(w, "bob", adp.RoleSpeaker, "").AppendJSON(nil)
			i := bytes.LastIndex(req, []byte(`"signature":"`)) + len(`"signature":"`)
			req[i] ^= 'A' ^ 'B'
			return w.Submit(raw(w, "creator", adp.TypeRoomJoinReview, ptr(w.Base(adp.TypeRoomJoinReview)),
				`{"request":`+string(req)+`,"decision":"approve","role":"speaker"}`))
		}, adp.ErrInvalidSignature},
		{"§10 the embedded request is for this room", func(w *adptest.World) { w.PublicRoom() }, func(w *adptest.World) (*adp.Record, error) {
			req, err := adp.NewJoinRequest(w.Ctx, w.Author("bob"), later, "another-room", adp.JoinRequestPayload{Role: adp.RoleSpeaker})
			if err != nil {
				w.TB.Fatal(err)
			}
			return w.Submit(raw(w, "creator", adp.TypeRoomJoinReview, ptr(w.Base(adp.TypeRoomJoinReview)),
				`{"request":`+string(req.AppendJSON(nil))+`,"decision":"approve","role":"speaker"}`))
		}, adp.ErrInvalidEvent},
		{"§10 only the creator or a moderator reviews", func(w *adptest.World) { w.PublicRoom(); w.Join("alice", adp.RoleObserver) }, func(w *adptest.World) (*adp.Record, error) {
			return signedReview(w, "alice", joinRequest(w, "bob", adp.RoleSpeaker, ""), adp.DecisionApprove, adp.RoleSpeaker)
		}, adp.ErrPermissionDenied},
		{"§10 an approval keeps within max_speakers", func(w *adptest.World) {
			w.PublicRoom(policy(adp.Policy{MaxSpeakers: 1}))
		}, func(w *adptest.World) (*adp.Record, error) {
			return signedReview(w, "creator", joinRequest(w, "bob", adp.RoleSpeaker, ""), adp.DecisionApprove, adp.RoleSpeaker)
		}, adp.ErrMaxSpeakersExceeded},
		{"§10 an approval lifts a ban", func(w *adptest.World) {
			w.PublicRoom()
			w.Must(adp.NewMemberRemove(w.Ctx, w.Author("creator"), w.Base(adp.TypeMemberRemove), adp.MemberRemove{Member: w.ID("bob"), Ban: true}))
		}, func(w *adptest.World) (*adp.Record, error) {
			rec, err := signedReview(w, "creator", joinRequest(w, "bob", adp.RoleObserver, ""), adp.DecisionApprove, adp.RoleObserver)
			if err == nil && w.Room.Banned(w.ID("bob")) {
				w.TB.Fatal("still banned")
			}
			return rec, err
		}, nil},
		{"§12.2 room.join.request is never a record", func(w *adptest.World) { w.PublicRoom() }, func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(joinRequest(w, "bob", adp.RoleSpeaker, ""), nil)
		}, adp.ErrInvalidEvent},
		{"§5 room.join.request carries no base", func(w *adptest.World) { w.PublicRoom() }, func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(raw(w, "bob", adp.TypeRoomJoinRequest, ptr(w.Base(adp.TypeRoomJoin)), `{"role":"speaker"}`))
		}, adp.ErrInvalidEvent},
		{"§5.1 messages on one head are all accepted", func(w *adptest.World) {
			w.PublicRoom(openRoles(adp.RoleSpeaker))
			w.Join("alice", adp.RoleSpeaker)
		}, func(w *adptest.World) (*adp.Record, error) {
			head := w.Room.Head()
			base := adp.Base{RoomID: w.Room.ID(), Seq: head.Seq, Hash: head.Hash, Draft: later}
			w.OK(message(w, "alice", base))
			rec, err := message(w, "creator", base)
			if w.Room.Head() != head {
				w.TB.Fatal("a message moved the head")
			}
			return rec, err
		}, nil},
		{"§5.1 a message based before a later contract write", func(w *adptest.World) {
			w.PublicRoom(openRoles(adp.RoleSpeaker))
			w.Join("alice", adp.RoleSpeaker)
		}, func(w *adptest.World) (*adp.Record, error) {
			stale := w.Base(adp.TypeMessageCreate)
			w.OK(update(w, "creator", adp.RoomUpdate{Guidance: ptr("cite sources")}))
			return message(w, "alice", stale)
		}, adp.ErrRoomHeadMismatch},
		{"§5.1 control writes on one head: the first wins", func(w *adptest.World) {
			w.PublicRoom(laterTypes(w.TB, `{"use":"adp:moderation/1.0"}`))
		}, func(w *adptest.World) (*adp.Record, error) {
			base := w.Base("claim.update")
			w.OK(claim(w, "creator", "a", base))
			return claim(w, "creator", "b", base)
		}, adp.ErrRoomHeadMismatch},
		{"§5.1 a control write based on a message after the head", func(w *adptest.World) {
			w.PublicRoom(laterTypes(w.TB, `{"use":"adp:moderation/1.0"}`))
		}, func(w *adptest.World) (*adp.Record, error) {
			w.OK(w.Say("creator", "hello"))
			return claim(w, "creator", "a", w.Base("claim.update"))
		}, nil},
		{"§5.1 a contract write based before the head", func(w *adptest.World) {
			w.PublicRoom(laterTypes(w.TB, `{"use":"adp:moderation/1.0"}`))
		}, func(w *adptest.World) (*adp.Record, error) {
			first := ref(w.Records[0])
			w.OK(claim(w, "creator", "a", w.Base("claim.update")))
			return w.Submit(adp.NewRoomUpdate(w.Ctx, w.Author("creator"), first, adp.RoomUpdate{Guidance: ptr("g")}))
		}, nil},
		{"§5.1 a signal on an unanchored base", func(w *adptest.World) { w.PublicRoom() }, func(w *adptest.World) (*adp.Record, error) {
			bad := w.Base(adp.TypeRoomJoin)
			bad.Hash[0] ^= 1
			return w.Submit(adp.NewJoin(w.Ctx, w.Author("bob"), bad, adp.Join{Role: adp.RoleObserver}))
		}, adp.ErrBaseRecordMismatch},
		{"§12.4 a redefinition keeps its kind", func(w *adptest.World) {
			w.PublicRoom(laterTypes(w.TB, `{"use":"adp:reactions/1.0"}`))
		}, func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(adp.NewTypeDefine(w.Ctx, w.Author("creator"), w.Base(adp.TypeTypeDefine),
				laterDecl(w.TB, `{"type":"reaction.create","kind":"control","title":"x","schema":{}}`)))
		}, adp.ErrTypeConflict},
		{"§12.3.1 a type schema outside the profile", func(w *adptest.World) { w.PublicRoom() }, func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(raw(w, "creator", adp.TypeTypeDefine, ptr(w.Base(adp.TypeTypeDefine)),
				`{"type":"x.ticket","kind":"signal","title":"x","schema":{"type":"object","properties":{"id":{"pattern":"\\d+"}}}}`))
		}, adp.ErrInvalidTypeSchema},
		{"§7 an ended room is room_not_active", func(w *adptest.World) { w.PublicRoom(); w.Tick(2 * time.Hour) }, func(w *adptest.World) (*adp.Record, error) {
			return w.Say("creator", "late")
		}, adp.ErrRoomNotActive},
	}
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			w := laterWorld(t, nil)
			w.Track = true
			if r.setup != nil {
				r.setup(w)
			}
			_, err := r.act(w)
			if r.want == nil {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				w.Replay(nil)
				return
			}
			if !errors.Is(err, r.want) {
				t.Fatalf("got %v, want %v", err, r.want)
			}
			if after, _ := w.Room.Snapshot(); string(after) != string(w.Before) {
				t.Fatal("a rejected write changed the room state")
			}
		})
	}
}

// A host holds join requests (§10): CheckJoinRequest judges one.
func TestLaterCheckJoinRequest(t *testing.T) {
	w := laterWorld(t, nil)
	w.PublicRoom(policy(adp.Policy{ObserverAllowed: ptr(false)}), openRoles(adp.RoleSpeaker))
	w.Join("alice", adp.RoleSpeaker)
	w.Must(adp.NewMemberRemove(w.Ctx, w.Author("creator"), w.Base(adp.TypeMemberRemove), adp.MemberRemove{Member: w.ID("carol"), Ban: true}))
	check := func(env *envelope.Envelope) error {
		_, err := w.Room.CheckJoinRequest(w.Ctx, env, w.Now)
		return err
	}
	if err := check(joinRequest(w, "bob", adp.RoleSpeaker, "p")); err != nil {
		t.Fatal(err)
	}
	if err := check(joinRequest(w, "carol", adp.RoleModerator, "")); err != nil {
		t.Fatalf("a banned agent may still ask: %v", err)
	}
	if err := check(joinRequest(w, "alice", adp.RoleModerator, "")); !errors.Is(err, adp.ErrInvalidEvent) {
		t.Fatalf("an active member asked: %v", err)
	}
	if err := check(joinRequest(w, "bob", adp.RoleObserver, "")); !errors.Is(err, adp.ErrRoleNotAllowed) {
		t.Fatalf("observer where observers are disallowed: %v", err)
	}
	msg, err := adp.NewMessage(w.Ctx, w.Author("alice"), w.Base(adp.TypeMessageCreate), adp.Message{ContentType: "text/plain", Content: adp.TextContent("x")})
	if err != nil {
		t.Fatal(err)
	}
	if err := check(msg); !errors.Is(err, adp.ErrInvalidEvent) {
		t.Fatalf("a message as a join request: %v", err)
	}
	w.Tick(2 * time.Hour)
	if err := check(joinRequest(w, "bob", adp.RoleSpeaker, "")); !errors.Is(err, adp.ErrRoomNotActive) {
		t.Fatalf("join request to an ended room: %v", err)
	}
	// The seed has no such event.
	if _, err := adp.NewJoinRequest(w.Ctx, w.Author("bob"), adp.Draft20260704, w.Room.ID(), adp.JoinRequestPayload{Role: adp.RoleSpeaker}); !errors.Is(err, adp.ErrInvalidEvent) {
		t.Fatalf("seed join request: %v", err)
	}
}

// Redacted records (§14.1): the chain still verifies, a replay keeps the
// record's class, and only message.create and custom types may be
// redacted.
func TestLaterRedaction(t *testing.T) {
	w := laterWorld(t, nil)
	w.PublicRoom(openRoles(adp.RoleSpeaker), laterTypes(t, `{"use":"adp:moderation/1.0"}`, `{"use":"adp:reactions/1.0"}`))
	join := w.Join("alice", adp.RoleSpeaker)
	msg := w.OK(w.Say("alice", "private detail"))
	ctl := w.OK(claim(w, "creator", "a", w.Base("claim.update")))
	w.OK(reaction(w, "creator", msg))
	if ctl.Seq != w.Room.Head().Seq {
		t.Fatal("the claim did not move the head")
	}
	redact := func(rec *adp.Record) *adp.Record {
		t.Helper()
		x, err := rec.Redact()
		if err != nil {
			t.Fatal(err)
		}
		// The redacted record survives its canonical form.
		y, err := adp.ParseRecordIn(later, x.AppendJSON(nil))
		if err != nil || y.Redacted == nil || y.Hash != rec.Hash || y.CheckHash() != nil {
			t.Fatalf("redacted record does not round-trip: %v", err)
		}
		return y
	}
	recs := append([]*adp.Record{}, w.Records...)
	recs[msg.Seq-1] = redact(msg)
	recs[ctl.Seq-1] = redact(ctl)
	r := adp.NewRoom(w.Room.ID(), &adp.RoomOptions{Draft: later})
	for _, rec := range recs {
		if err := r.Apply(w.Ctx, rec); err != nil {
			t.Fatalf("seq %d: %v", rec.Seq, err)
		}
	}
	if r.Head() != w.Room.Head() || r.Latest() != w.Room.Latest() {
		t.Fatalf("redacted replay: head %v latest %v; host %v %v", r.Head(), r.Latest(), w.Room.Head(), w.Room.Latest())
	}
	// A membership record determines state: it cannot be redacted.
	if _, err := join.Redact(); !errors.Is(err, adp.ErrInvalidRecord) {
		t.Fatalf("redacting room.join: %v", err)
	}
	forged := strings.Replace(string(msg.AppendJSON(nil)), string(msg.Envelope.AppendJSON(nil)),
		`{"hash":"`+join.Envelope.Hash().String()+`","redacted":true,"type":"room.join"}`, 1)
	if _, err := adp.ParseRecordIn(later, []byte(forged)); !errors.Is(err, adp.ErrInvalidRecord) {
		t.Fatalf("a redacted room.join parsed: %v", err)
	}
	// A redacted custom record must name a type defined at its seq.
	undefined := *recs[ctl.Seq-1]
	undefined.Redacted = &adp.Redaction{Hash: ctl.Envelope.Hash(), Type: "ticket.close"}
	r2 := adp.NewRoom(w.Room.ID(), &adp.RoomOptions{Draft: later})
	for _, rec := range recs[:ctl.Seq-1] {
		if err := r2.Apply(w.Ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := r2.Apply(w.Ctx, &undefined); !errors.Is(err, adp.ErrTypeNotDefined) {
		t.Fatalf("redacted record of an undefined type: %v", err)
	}
	// The seed has no redaction.
	seedRec := adptest.VectorRecords(t, "main")[2]
	if _, err := seedRec.Redact(); !errors.Is(err, adp.ErrInvalidRecord) {
		t.Fatalf("redacting a seed record: %v", err)
	}
}

// A room of the 2026-09-24 draft persists and restores, and a snapshot is
// never restored into a room of the other draft.
func TestLaterSnapshot(t *testing.T) {
	w := laterWorld(t, nil)
	w.PublicRoom(invite(w, "bob", adp.RoleSpeaker))
	w.OK(signedReview(w, "creator", joinRequest(w, "alice", adp.RoleSpeaker, ""), adp.DecisionApprove, adp.RoleSpeaker))
	snap, err := w.Room.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	r, err := adp.RestoreRoom(snap, &adp.RoomOptions{Draft: later})
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := r.Snapshot(); !bytes.Equal(again, snap) || r.Draft() != later {
		t.Fatal("the restored room differs")
	}
	if _, err := adp.RestoreRoom(snap, nil); !errors.Is(err, identity.ErrInvalidRequest) || !strings.Contains(err.Error(), "2026-09-24") {
		t.Fatalf("a 2026-09-24 snapshot restored as the seed: %v", err)
	}
	// The restored room goes on judging by its draft.
	w.Room = r
	if _, err := w.Submit(adp.NewJoin(w.Ctx, w.Author("bob"), w.Base(adp.TypeRoomJoin), adp.Join{Role: adp.RoleSpeaker})); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Submit(adp.NewLeave(w.Ctx, w.Author("creator"), w.Base(adp.TypeRoomLeave), adp.Notice{})); !errors.Is(err, adp.ErrPermissionDenied) {
		t.Fatalf("creator leave: %v", err)
	}
}

// BaseFor follows the class rules: in the 2026-09-24 draft every type is
// based on the latest record; in the seed, non-signals on the head.
func TestLaterBaseFor(t *testing.T) {
	w := laterWorld(t, nil)
	w.PublicRoom(openRoles(adp.RoleSpeaker))
	w.Join("alice", adp.RoleSpeaker)
	w.OK(w.Say("alice", "hi"))
	latest := w.Room.Latest()
	for _, typ := range []string{adp.TypeMessageCreate, adp.TypeRoomUpdate, adp.TypeRoomJoin} {
		b := w.Base(typ)
		if b.Seq != latest.Seq || b.Hash != latest.Hash || b.Draft != later {
			t.Errorf("%s: base %+v, latest %+v", typ, b, latest)
		}
	}
	if _, err := w.Room.BaseFor(adp.TypeRoomJoinRequest); !errors.Is(err, adp.ErrInvalidEvent) {
		t.Errorf("room.join.request base: %v", err)
	}
	head := w.Room.Head()
	if got := adp.NextBase(adp.Draft20260704, adp.ClassMessage, "r", head, adp.RecordRef{Seq: latest.Seq, Hash: latest.Hash}); got.Seq != head.Seq {
		t.Errorf("seed message base %+v, head %+v", got, head)
	}
	_ = context.Background()
}
