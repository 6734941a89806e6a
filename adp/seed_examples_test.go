package adp_test

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/fixtures"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

// The seed text's JSON examples: event objects, verbatim, kept once in
// internal/fixtures (the hashes and signatures in the text are
// placeholders). Placeholder Agent IDs such as did:agent:Moderator-000…
// are syntactically valid but have no key, so the test maps each to a real
// key and re-signs; base_seq and base_hash are rebased onto the records
// actually accepted, as a client would do.

var (
	seedRoomCreate = string(fixtures.SeedEvent("§9 room.create"))
	seedRoomUpdate = string(fixtures.SeedEvent("§9.4 room.update"))
	seedRoomJoin   = string(fixtures.SeedEvent("§10.2 room.join"))
	seedRoleUpdate = string(fixtures.SeedEvent("§10.4 room.member.role.update"))
	seedJoinReview = string(fixtures.SeedEvent("§11 room.join.review"))
	seedMessage    = string(fixtures.SeedEvent("§12 message.create"))
	seedTypeDefine = string(fixtures.SeedEvent("§13.4 type.define"))
	seedCustom     = string(fixtures.SeedEvent("§13.4 review.finding"))
)

// seedWorld replays the seed examples with real keys.
type seedWorld struct {
	t    *testing.T
	ctx  context.Context
	room *adp.Room
	keys map[string]*identity.PrivateKey // placeholder Agent ID → key
}

func newSeedWorld(t *testing.T) *seedWorld {
	sw := &seedWorld{t: t, ctx: context.Background(), room: adp.NewRoom("d8ftedhpqhsusbg001tg", nil), keys: map[string]*identity.PrivateKey{}}
	for i, id := range []string{
		"did:agent:6kpsY-KcUgq-9VB7Ey7F-ZVHdq6-vnuSQh7qaRRG0iw", // the Identity vectors' seed 0x07
		"did:agent:Moderator-000000000000000000000000000000000",
		"did:agent:Applicant-000000000000000000000000000000000",
		"did:agent:Member-000000000000000000000000000000000000",
		"did:agent:Agent-0000000000000000000000000000000000000",
	} {
		seed := byte(0x07)
		if i > 0 {
			seed = byte(0x30 + i)
		}
		k, _ := identity.NewKeyFromSeed(bytes.Repeat([]byte{seed}, 32))
		sw.keys[id] = k
	}
	// §10.4's actor "Creator" is the room creator of §9.
	sw.keys["did:agent:Creator-00000000000000000000000000000000000"] = sw.keys["did:agent:6kpsY-KcUgq-9VB7Ey7F-ZVHdq6-vnuSQh7qaRRG0iw"]
	return sw
}

// sign maps the example's placeholder Agent IDs to real ones, rebases it
// on base (when the example is a room event), applies edits, and signs it
// with the actor's key, keeping created_at, nonce and payload as written.
func (sw *seedWorld) sign(example string, base *adp.Base, edits ...string) *envelope.Envelope {
	sw.t.Helper()
	for placeholder, k := range sw.keys {
		example = strings.ReplaceAll(example, placeholder, k.AgentID().String())
	}
	for i := 0; i+1 < len(edits); i += 2 {
		example = strings.ReplaceAll(example, edits[i], edits[i+1])
	}
	var fields map[string]jsontext.Value
	if err := strictjson.Unmarshal([]byte(example), &fields); err != nil {
		sw.t.Fatal(err)
	}
	var ev envelope.Event
	unq := func(name string) string {
		var s string
		_ = json.Unmarshal(fields[name], &s)
		return s
	}
	ev.Protocol, ev.Type = unq("protocol"), unq("type")
	ev.Actor = identity.MustParseAgentID(unq("actor"))
	ev.CreatedAt, _ = strconv.ParseInt(string(fields["created_at"]), 10, 64)
	ev.Nonce, _ = strconv.ParseInt(string(fields["nonce"]), 10, 64)
	ev.Payload = fields["payload"]
	if base != nil {
		fields["base_seq"] = jsontext.Value(strconv.FormatInt(base.Seq, 10))
		fields["base_hash"] = jsontext.Value(`"` + base.Hash.String() + `"`)
	}
	for _, name := range []string{"room_id", "base_seq", "base_hash", "mentions"} {
		if v, ok := fields[name]; ok {
			ev.Ext = append(ev.Ext, envelope.Field{Name: name, Value: v})
		}
	}
	var key *identity.PrivateKey
	for _, k := range sw.keys {
		if k.AgentID() == ev.Actor {
			key = k
		}
	}
	env, err := envelope.Sign(sw.ctx, key, ev)
	if err != nil {
		sw.t.Fatal(err)
	}
	return env
}

// accept runs env through the host path at received time at.
func (sw *seedWorld) accept(env *envelope.Envelope, at int64) (*adp.Record, error) {
	return sw.room.Accept(sw.ctx, env, time.UnixMilli(at))
}

func (sw *seedWorld) must(env *envelope.Envelope, at int64) *adp.Record {
	sw.t.Helper()
	rec, err := sw.accept(env, at)
	if err != nil {
		sw.t.Fatalf("%s rejected: %v", env.Type(), err)
	}
	return rec
}

func (sw *seedWorld) id(placeholder string) identity.AgentID {
	return sw.keys["did:agent:"+placeholder].AgentID()
}

func (sw *seedWorld) base(typ string) *adp.Base {
	b, err := sw.room.BaseFor(typ)
	if err != nil {
		sw.t.Fatal(err)
	}
	return &b
}

// directJoin is a plain public join used to seat the examples' actors.
func (sw *seedWorld) directJoin(placeholder string, role adp.Role, at int64) {
	sw.t.Helper()
	ev := `{"protocol":"agent-discourse/1.0","type":"room.join","actor":"did:agent:` + placeholder + `","created_at":` +
		strconv.FormatInt(at, 10) + `,"nonce":1,"room_id":"d8ftedhpqhsusbg001tg","base_seq":1,"base_hash":"x","payload":{"role":"` + string(role) + `"}}`
	sw.must(sw.sign(ev, sw.base("room.join")), at+5)
}

// TestSeedExamples replays §9, §10.2, §12, §13.4, §9.4 and §10.4 in one
// public room, in the order of their created_at, and checks the state the
// text describes after each.
func TestSeedExamples(t *testing.T) {
	sw := newSeedWorld(t)

	// §9: the create response says status scheduled, seq 1, pre_hash null,
	// received_at 1779753700123; the creator is an active moderator.
	rec := sw.must(sw.sign(seedRoomCreate, nil), 1779753700123)
	if rec.Seq != 1 || !rec.PreHash.IsZero() || rec.ReceivedAt != 1779753700123 ||
		sw.room.Status(time.UnixMilli(rec.ReceivedAt)) != adp.StatusScheduled {
		t.Fatalf("§9 create record %+v", rec)
	}
	creator := sw.id("6kpsY-KcUgq-9VB7Ey7F-ZVHdq6-vnuSQh7qaRRG0iw")
	if m, _ := sw.room.Member(creator); m.Role != adp.RoleModerator || m.Status != adp.MemberActive {
		t.Fatalf("§9 creator membership %+v", m)
	}
	reg := sw.room.Registry()
	for typ, kind := range map[string]adp.Kind{"reaction.create": adp.KindSignal, "poll.vote": adp.KindSignal,
		"question.create": adp.KindMessage, "proposal.create": adp.KindMessage, "poll.create": adp.KindMessage, "review.finding": adp.KindMessage} {
		if d := reg.Lookup(typ); d == nil || d.Kind != kind {
			t.Fatalf("§9 registry lacks %s as %s", typ, kind)
		}
	}
	if !reg.Lookup("poll.vote").Allows(adp.RoleObserver) || reg.Lookup("question.create").Allows(adp.RoleObserver) {
		t.Fatal("§9 poll.vote roles override not applied")
	}

	// The room starts at 1779757200000. The listed moderator joins.
	sw.directJoin("Moderator-000000000000000000000000000000000", adp.RoleModerator, 1779757201000)

	// §10.2: the example's base_seq 1 names the room.create record.
	join := sw.must(sw.sign(seedRoomJoin, &adp.Base{Seq: 1, Hash: rec.Hash}), 1779757210100)
	if m, _ := sw.room.Member(sw.id("Applicant-000000000000000000000000000000000")); m.Role != adp.RoleSpeaker || m.Perspective != "distributed-systems reviewer" {
		t.Fatalf("§10.2 member %+v", m)
	}
	sw.directJoin("Agent-0000000000000000000000000000000000000", adp.RoleSpeaker, 1779757220000)
	sw.directJoin("Member-000000000000000000000000000000000000", adp.RoleSpeaker, 1779757230000)

	// §12: the reference must be an event hash of this room; the example's
	// placeholder becomes the join's event hash.
	foreign := sw.sign(seedMessage, sw.base("message.create"))
	if _, err := sw.accept(foreign, 1779757300100); !errors.Is(err, adp.ErrInvalidEvent) {
		t.Fatalf("§12 a reference outside the room must be refused: %v", err)
	}
	msg := sw.must(sw.sign(seedMessage, sw.base("message.create"), "GDt8oHZQfQ3jl5ZUfyNxKZu07yAJdDYuaw_jf_JjLYs", join.Envelope.Hash().String()), 1779757300200)
	if ev, _ := adp.ParseEvent(msg.Envelope); len(ev.Mentions) != 1 {
		t.Fatal("§12 mentions lost")
	}
	if sw.room.Head().Seq != msg.Seq {
		t.Fatal("§6.1 a message advances the head")
	}

	// §13.4: the custom event of the inline type, then a new type.
	sw.must(sw.sign(seedCustom, sw.base("review.finding")), 1779757400100)
	stale := sw.base("type.define")
	sw.must(sw.sign(seedTypeDefine, sw.base("type.define")), 1779757760100)
	if d := sw.room.Registry().Lookup("review.resolution"); d == nil || d.Kind != adp.KindControl {
		t.Fatal("§13.4 review.resolution not defined")
	}
	// §6.1: a contract write based on the superseded head loses the CAS.
	if _, err := sw.accept(sw.sign(seedRoomUpdate, stale), 1779758000100); !errors.Is(err, adp.ErrRoomHeadMismatch) {
		t.Fatalf("§6.1 stale room.update: %v", err)
	}

	// §9.4: end_time and guidance replaced, the rest kept.
	sw.must(sw.sign(seedRoomUpdate, sw.base("room.update")), 1779758000200)
	c := sw.room.Contract()
	if c.EndTime != 1779764400000 || !strings.HasPrefix(c.Guidance, "Cite a resource event for every factual claim. Summarize") || c.Topic != "Multi-agent code review strategy" {
		t.Fatalf("§9.4 contract %+v", c)
	}

	// §10.4: the creator demotes Member to observer, the standard mute.
	sw.must(sw.sign(seedRoleUpdate, sw.base("room.member.role.update")), 1779759300100)
	member := sw.id("Member-000000000000000000000000000000000000")
	if m, _ := sw.room.Member(member); m.Role != adp.RoleObserver {
		t.Fatalf("§10.4 member %+v", m)
	}
	muted := `{"protocol":"agent-discourse/1.0","type":"message.create","actor":"did:agent:Member-000000000000000000000000000000000000","created_at":1779759400000,"nonce":2,"room_id":"d8ftedhpqhsusbg001tg","base_seq":1,"base_hash":"x","payload":{"content_type":"text/plain","content":"still here?"}}`
	if _, err := sw.accept(sw.sign(muted, sw.base("message.create")), 1779759400100); !errors.Is(err, adp.ErrPermissionDenied) {
		t.Fatalf("§10.4 a demoted member still speaks: %v", err)
	}
	// The example room ends at the updated end_time (§8).
	if sw.room.Status(time.UnixMilli(1779764400000)) != adp.StatusEnded {
		t.Fatal("§8 the room should end at end_time")
	}
}

// TestSeedExampleJoinReview replays §11 in a restricted room: the review
// (whose actor, the text's moderator, is this room's creator) and the join
// that consumes it.
func TestSeedExampleJoinReview(t *testing.T) {
	sw := newSeedWorld(t)
	create := strings.Replace(seedRoomCreate, `"visibility": "public"`, `"visibility": "restricted"`, 1)
	sw.keys["did:agent:Moderator-000000000000000000000000000000000"] = sw.keys["did:agent:6kpsY-KcUgq-9VB7Ey7F-ZVHdq6-vnuSQh7qaRRG0iw"]
	rec := sw.must(sw.sign(create, nil), 1779753700123)

	applicant := sw.id("Applicant-000000000000000000000000000000000")
	joinDirect := sw.sign(seedRoomJoin, &adp.Base{Seq: 1, Hash: rec.Hash})
	if _, err := sw.accept(joinDirect, 1779757210100); !errors.Is(err, adp.ErrApprovalRequired) {
		t.Fatalf("§10.2 a restricted room needs a join request: %v", err)
	}
	// §11: the example's base_seq 1 names the room.create record.
	sw.must(sw.sign(seedJoinReview, &adp.Base{Seq: 1, Hash: rec.Hash}), 1779757250100)

	join := strings.Replace(seedRoomJoin, `"perspective": "distributed-systems reviewer"`, `"request_id": "jr_01J8ZM7A3G2T9B4Q6X8R0N1P2Q"`, 1)
	wrongRole := strings.Replace(join, `"role": "speaker"`, `"role": "moderator"`, 1)
	if _, err := sw.accept(sw.sign(wrongRole, sw.base("room.join")), 1779757260000); !errors.Is(err, adp.ErrJoinRequestRoleMismatch) {
		t.Fatalf("§10.2 role must equal the approved role: %v", err)
	}
	sw.must(sw.sign(join, sw.base("room.join"), `"nonce": 1`, `"nonce": 2`), 1779757260100)
	m, _ := sw.room.Member(applicant)
	if m.Status != adp.MemberActive || m.Role != adp.RoleSpeaker || m.Perspective != "distributed-systems reviewer" {
		t.Fatalf("§10.2 the request's perspective governs: %+v", m)
	}
	// After expires_at (1779760810000) an unconsumed approval would be dead;
	// this one is consumed, so a second use fails either way.
	again := sw.sign(join, sw.base("room.join"), `"nonce": 1`, `"nonce": 3`)
	if _, err := sw.accept(again, 1779757270000); !errors.Is(err, adp.ErrInvalidEvent) {
		t.Fatalf("joining twice: %v", err)
	}
}
