package adpconform

import (
	"context"
	"slices"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/packs"
)

// future is a room's end time an hour ahead.
func (k *kit) future() int64 { return k.now() + time.Hour.Milliseconds() }

func checkRoomCreate(ctx context.Context, t *T) {
	a := t.k.creator(t)
	def := &packs.Definition{Type: "conform.note", Kind: packs.KindMessage, Title: "Note",
		Schema: jsontext.Value(`{"type":"object","required":["note"],"properties":{"note":{"type":"string"}}}`)}
	p := t.k.createPayload("create")
	p.Types = []packs.Declaration{{Definition: def}}
	// CreateRoom checks the answer: the room ID, seq 1, a null pre_hash
	// and a record hash over the acceptance data.
	rec, err := a.CreateRoom(ctx, p)
	t.ok(err, "room.create")
	if rec.RoomID == "" {
		t.Fatalf("the answer names no room ID")
	}
	res, err := a.GetRoom(ctx, rec.RoomID)
	t.ok(err, "GET the new room")
	if res.Creator != a.AgentID() {
		t.Fatalf("the room resource names creator %s, want %s", res.Creator, a.AgentID())
	}
	i := slices.IndexFunc(res.Types, func(d *packs.Definition) bool { return d.Type == def.Type })
	if i < 0 {
		t.Fatalf("the room resource's types lack the declared %s", def.Type)
	}
	if res.Types[i].Status != packs.StatusActive {
		t.Fatalf("%s has status %q, want active", def.Type, res.Types[i].Status)
	}
	// The creator is an active moderator without joining: moderator-only
	// writes are accepted.
	_, err = a.DefineType(ctx, rec.RoomID, packs.Declaration{Definition: &packs.Definition{Type: "conform.ctl", Kind: packs.KindControl, Title: "Ctl", Schema: jsontext.Value(`{"type":"object"}`)}})
	t.ok(err, "the creator's type.define (a moderator write) without a room.join")
	_, err = a.SendCustom(ctx, rec.RoomID, def.Type, jsontext.Value(`{"note":"by the creator"}`))
	t.ok(err, "the creator's custom message")
	_, err = a.Join(ctx, rec.RoomID, adp.Join{Role: adp.RoleSpeaker})
	t.refusedAny(err, "a room.join by the creator, already an active member")
}

func checkRoomCreateInvalid(ctx context.Context, t *T) {
	now, end := t.k.now(), t.k.future()
	bad := map[string]string{
		"blank topic":                 `{"topic":"  \t","visibility":"public","start_time":%d,"end_time":%d}`,
		"start_time = end_time":       `{"topic":"x","visibility":"public","start_time":%[2]d,"end_time":%[2]d}`,
		"max_speakers 0":              `{"topic":"x","visibility":"public","start_time":%d,"end_time":%d,"policy":{"max_speakers":0}}`,
		"malformed moderator ID":      `{"topic":"x","visibility":"public","start_time":%d,"end_time":%d,"policy":{"moderator_agent_ids":["did:agent:nope"]}}`,
		"type named room.x":           `{"topic":"x","visibility":"public","start_time":%d,"end_time":%d,"types":[{"type":"room.x","kind":"message","title":"X","schema":{"type":"object"}}]}`,
		"unknown registered pack":     `{"topic":"x","visibility":"public","start_time":%d,"end_time":%d,"types":[{"use":"adp:nonexistent/9.9"}]}`,
		"remote $ref in a schema":     `{"topic":"x","visibility":"public","start_time":%d,"end_time":%d,"types":[{"type":"conform.ref","kind":"message","title":"R","schema":{"$ref":"https://example.com/s.json"}}]}`,
		"visibility not a visibility": `{"topic":"x","visibility":"secret","start_time":%d,"end_time":%d}`,
		"an override of a kind":       `{"topic":"x","visibility":"public","start_time":%d,"end_time":%d,"types":[{"use":"adp:reactions/1.0","overrides":{"reaction.create":{"kind":"message"}}}]}`,
	}
	for what, f := range bad {
		a := t.k.newAgent(t)
		p := jsontext.Value(sprintf(f, now, end))
		_, err := a.SubmitCreate(ctx, a.sign(ctx, t, adp.TypeRoomCreate, nil, p))
		t.refusedAny(err, "room.create with "+what)
	}
	a := t.k.newAgent(t)
	base := adp.Base{RoomID: "d8ftedhpqhsusbg001tg", Seq: 1, Hash: envelope.Sum([]byte("x"))}
	_, err := a.SubmitCreate(ctx, a.sign(ctx, t, adp.TypeRoomCreate, &base, t.k.createPayload("room_id present")))
	t.refusedAny(err, "room.create carrying room_id, base_seq and base_hash")
}

func checkRoomUpdate(ctx context.Context, t *T) {
	a, room := t.k.room(ctx, t, "update", adp.VisibilityPublic, nil)
	b := t.k.member(ctx, t, room, adp.RoleSpeaker)
	topic := t.k.topic("update, revised")
	rec, err := a.UpdateRoom(ctx, room, adp.RoomUpdate{Topic: &topic})
	t.ok(err, "the creator's room.update of the topic")
	res, err := a.GetRoom(ctx, room)
	t.ok(err, "GET the room")
	if res.Topic != topic {
		t.Fatalf("the room's topic is %q after the update, want %q", res.Topic, topic)
	}
	if res.Head.Seq != rec.Seq || res.Head.Hash != rec.Hash {
		t.Fatalf("the room head is seq %d after the accepted room.update at seq %d: a lifecycle write must move the head", res.Head.Seq, rec.Seq)
	}
	other := "by a speaker"
	_, err = b.UpdateRoom(ctx, room, adp.RoomUpdate{Topic: &other})
	t.refused(err, identity.CodePermissionDenied, "a speaker's room.update")
	for what, p := range map[string]string{
		"an empty payload":        `{}`,
		"visibility":              `{"visibility":"private"}`,
		"a blank topic":           `{"topic":" "}`,
		"start_time while active": sprintf(`{"start_time":%d}`, t.k.now()+time.Minute.Milliseconds()),
		"end_time in the past":    sprintf(`{"end_time":%d}`, t.k.now()-time.Minute.Milliseconds()),
		"a field outside the set": `{"types":[]}`,
		"policy.max_speakers 0":   `{"policy":{"max_speakers":0}}`,
	} {
		base := a.base(ctx, t, room, adp.TypeRoomUpdate)
		_, err := a.Submit(ctx, room, a.sign(ctx, t, adp.TypeRoomUpdate, &base, jsontext.Value(p)))
		t.refusedAny(err, "room.update with "+what)
	}
}

func checkJoinPublic(ctx context.Context, t *T) {
	mod := t.k.newAgent(t)
	no := false
	a, room := t.k.room(ctx, t, "public join", adp.VisibilityPublic, func(p *adp.RoomCreate) {
		p.Policy = &adp.Policy{ModeratorAgentIDs: []identity.AgentID{mod.AgentID()}, ObserverAllowed: &no}
	})
	persp := "conformance"
	b := t.k.newAgent(t)
	rec, err := b.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker, Perspective: &persp})
	t.ok(err, "a direct room.join as speaker with a perspective")
	if rec.Envelope.Type() != adp.TypeRoomJoin {
		t.Fatalf("the join's record holds a %s", rec.Envelope.Type())
	}
	_, err = b.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker})
	t.refusedAny(err, "a second room.join by an active member")
	c := t.k.newAgent(t)
	_, err = c.Join(ctx, room, adp.Join{Role: adp.RoleModerator})
	t.refusedAny(err, "a direct room.join as moderator by an agent not in moderator_agent_ids")
	_, err = mod.Join(ctx, room, adp.Join{Role: adp.RoleModerator})
	t.ok(err, "a direct room.join as moderator by an agent in moderator_agent_ids")
	_, err = c.Join(ctx, room, adp.Join{Role: adp.RoleObserver})
	t.refused(err, adp.CodeRoleNotAllowed, "a room.join as observer with observer_allowed false")
	_, err = a.UpdateRole(ctx, room, adp.RoleUpdate{Member: b.AgentID(), Role: adp.RoleObserver})
	t.refused(err, adp.CodeRoleNotAllowed, "a room.member.role.update to observer with observer_allowed false")
	_, err = c.RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleObserver})
	t.refused(err, adp.CodeRoleNotAllowed, "a join request for observer with observer_allowed false (§11)")
	d := t.k.newAgent(t)
	if jr, err := d.RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleModerator}); err == nil && jr.Status == adp.JoinApproved {
		t.Fatalf("a moderator join request from an agent not in moderator_agent_ids was auto-approved (§11)")
	} else if err != nil {
		t.refusedAny(err, "a moderator join request to a public room")
	}
	if jr, err := t.k.newAgent(t).RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleSpeaker}); err == nil && jr.Status != adp.JoinApproved {
		t.Infof("a valid speaker join request to a public room is %q (SHOULD be auto-approved, §11)", jr.Status)
	} else if err != nil {
		t.Infof("a speaker join request to a public room: %v (public rooms MAY accept requests)", err)
	}

	_, capped := t.k.room(ctx, t, "max speakers", adp.VisibilityPublic, func(p *adp.RoomCreate) {
		p.Policy = &adp.Policy{MaxSpeakers: 1}
	})
	var refusal error
	for i := range 2 {
		_, err := t.k.newAgent(t).Join(ctx, capped, adp.Join{Role: adp.RoleSpeaker})
		if err != nil {
			refusal = err
			t.Infof("max_speakers 1: join %d of a speaker refused (the creator, a moderator, counts when it is the first)", i+1)
			break
		}
	}
	t.refused(refusal, adp.CodeMaxSpeakersExceeded, "a second speaker's room.join with max_speakers 1")
}

// applyFor creates a join request as a and checks the answer.
func applyFor(ctx context.Context, t *T, a *agent, room string, role adp.Role) *adp.JoinRequestResource {
	reason := "conformance"
	jr, err := a.RequestJoin(ctx, room, adp.JoinRequestInput{Role: role, Reason: &reason})
	t.ok(err, "POST …/join-requests")
	if jr.Request.Applicant != a.AgentID() || jr.Request.RoomID != room || jr.Request.ID == "" {
		t.Fatalf("the join request names applicant %s, room %q, id %q", jr.Request.Applicant, jr.Request.RoomID, jr.Request.ID)
	}
	return jr
}

// joinOn submits who's room.join on the base member sees: an agent that
// may not read the room yet (pending, rejected, outsider) still sends
// a well-anchored join, so that only what the check varies is wrong.
func joinOn(ctx context.Context, t *T, who, member *agent, room string, p adp.Join) (*adp.Record, error) {
	base := member.base(ctx, t, room, adp.TypeRoomJoin)
	return who.Submit(ctx, room, who.sign(ctx, t, adp.TypeRoomJoin, &base, p))
}

// checkApproval runs the approval flow of a restricted or private room.
func checkApproval(ctx context.Context, t *T, vis adp.Visibility) {
	a, room := t.k.room(ctx, t, string(vis)+" join", vis, nil)
	b := t.k.newAgent(t)
	// An outsider cannot read a private room's records; its join names
	// the true head (as one told by a member would), so that only the
	// missing request_id is wrong. A join on a base it cannot know is the
	// privacy check's.
	_, err := joinOn(ctx, t, b, a, room, adp.Join{Role: adp.RoleSpeaker})
	t.refused(err, adp.CodeApprovalRequired, "a direct room.join into a "+string(vis)+" room")
	jr := applyFor(ctx, t, b, room, adp.RoleSpeaker)
	if jr.Status != adp.JoinPending {
		t.Fatalf("the join request is %q, want pending until reviewed", jr.Status)
	}
	got, err := b.JoinRequest(ctx, room, jr.Request.ID)
	t.ok(err, "the applicant reads its join request")
	if got.Status != adp.JoinPending {
		t.Fatalf("the applicant reads status %q, want pending", got.Status)
	}
	c := t.k.newAgent(t)
	_, err = c.JoinRequest(ctx, room, jr.Request.ID)
	t.refusedAny(err, "another agent reads the join request")
	_, err = b.JoinRequests(ctx, room)
	t.refusedAny(err, "the applicant lists the room's join requests")
	list, err := a.JoinRequests(ctx, room)
	t.ok(err, "the creator lists the join requests")
	if !slices.ContainsFunc(list, func(r adp.JoinRequestResource) bool { return r.Request.ID == jr.Request.ID }) {
		t.Fatalf("the creator's list lacks request %s", jr.Request.ID)
	}
	_, err = joinOn(ctx, t, b, a, room, adp.Join{Role: adp.RoleSpeaker, RequestID: jr.Request.ID})
	t.refused(err, adp.CodeJoinRequestNotApproved, "a room.join naming a pending request")

	// A rejected request cannot be used.
	d := t.k.newAgent(t)
	djr := applyFor(ctx, t, d, room, adp.RoleSpeaker)
	_, err = a.ReviewJoin(ctx, room, adp.JoinReview{Request: djr.Request, Decision: adp.DecisionReject, Reason: "conformance"})
	t.ok(err, "the creator's room.join.review rejecting a request")
	_, err = joinOn(ctx, t, d, a, room, adp.Join{Role: adp.RoleSpeaker, RequestID: djr.Request.ID})
	t.refused(err, adp.CodeJoinRequestNotApproved, "a room.join naming a rejected request")
	// A review must carry the request as it was made, by a reviewer.
	tampered := jr.Request
	tampered.Role = adp.RoleModerator
	_, err = a.ReviewJoin(ctx, room, adp.JoinReview{Request: tampered, Decision: adp.DecisionApprove, Role: adp.RoleSpeaker})
	t.refusedAny(err, "a room.join.review whose request object differs from the request (role)")
	// Another agent's approved request cannot be used.
	_, err = a.ReviewJoin(ctx, room, adp.JoinReview{Request: jr.Request, Decision: adp.DecisionApprove, Role: adp.RoleSpeaker})
	t.ok(err, "the creator's room.join.review approving as speaker")
	_, err = a.ReviewJoin(ctx, room, adp.JoinReview{Request: jr.Request, Decision: adp.DecisionReject})
	t.refusedAny(err, "a second room.join.review of a reviewed request")
	got, err = b.JoinRequest(ctx, room, jr.Request.ID)
	t.ok(err, "the applicant reads its reviewed request")
	if got.Status != adp.JoinApproved || got.ApprovedRole != adp.RoleSpeaker {
		t.Fatalf("the reviewed request is %q with role %q, want approved speaker", got.Status, got.ApprovedRole)
	}
	res, err := b.GetRoom(ctx, room)
	t.ok(err, "the approved applicant reads the room resource (§11 MUST)")
	if res.Head.Seq == 0 {
		t.Fatalf("the room resource shows the approved applicant no head")
	}
	_, err = joinOn(ctx, t, c, a, room, adp.Join{Role: adp.RoleSpeaker, RequestID: jr.Request.ID})
	t.refusedAny(err, "a room.join naming another agent's approved request")
	_, err = b.Join(ctx, room, adp.Join{Role: adp.RoleObserver, RequestID: jr.Request.ID})
	t.refused(err, adp.CodeJoinRequestRoleMismatch, "a room.join whose role differs from the approved one")
	_, err = b.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker, RequestID: jr.Request.ID})
	t.ok(err, "the approved applicant's room.join naming its request_id")
	_, err = b.SendMessage(ctx, room, text("joined through review"))
	t.ok(err, "the new member's message")
	_, err = b.Leave(ctx, room, adp.Notice{})
	t.ok(err, "the member's room.leave")
	_, err = joinOn(ctx, t, b, a, room, adp.Join{Role: adp.RoleSpeaker, RequestID: jr.Request.ID})
	t.refusedAny(err, "a second room.join naming the consumed request")
}

func checkJoinRestricted(ctx context.Context, t *T) { checkApproval(ctx, t, adp.VisibilityRestricted) }
func checkJoinPrivate(ctx context.Context, t *T)    { checkApproval(ctx, t, adp.VisibilityPrivate) }

func checkRemove(ctx context.Context, t *T) {
	mod := t.k.newAgent(t)
	a, room := t.k.room(ctx, t, "remove", adp.VisibilityPublic, func(p *adp.RoomCreate) {
		p.Policy = &adp.Policy{ModeratorAgentIDs: []identity.AgentID{mod.AgentID()}}
	})
	_, err := mod.Join(ctx, room, adp.Join{Role: adp.RoleModerator})
	t.ok(err, "a listed moderator joins")
	b := t.k.member(ctx, t, room, adp.RoleSpeaker)
	c := t.k.member(ctx, t, room, adp.RoleSpeaker)
	_, err = a.RemoveMember(ctx, room, adp.MemberRemove{Member: c.AgentID()})
	t.ok(err, "the creator removes a speaker")
	_, err = c.SendMessage(ctx, room, text("after removal"))
	t.refusedAny(err, "a removed member's message")
	_, err = c.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker})
	t.ok(err, "a removed (not banned) agent joins again")
	_, err = a.RemoveMember(ctx, room, adp.MemberRemove{Member: b.AgentID(), Ban: true, Reason: "conformance"})
	t.ok(err, "the creator removes and bans a speaker")
	_, err = b.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker})
	t.refused(err, adp.CodeMemberBanned, "a banned agent's direct room.join")
	jr, err := b.RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleSpeaker})
	if err == nil && jr.Status == adp.JoinApproved {
		t.Fatalf("a banned agent's join request to a public room was auto-approved")
	}
	if err != nil {
		t.refusedAny(err, "a banned agent's join request")
	} else {
		// Approving the request lifts the ban (§10.5).
		_, err = a.ReviewJoin(ctx, room, adp.JoinReview{Request: jr.Request, Decision: adp.DecisionApprove, Role: adp.RoleSpeaker})
		t.ok(err, "the creator approves the banned agent's request")
		_, err = b.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker, RequestID: jr.Request.ID})
		t.ok(err, "the re-admitted agent joins with its approved request")
	}
	_, err = mod.RemoveMember(ctx, room, adp.MemberRemove{Member: a.AgentID()})
	t.refusedAny(err, "a moderator removes the creator")
	_, err = mod.RemoveMember(ctx, room, adp.MemberRemove{Member: mod.AgentID()})
	t.refusedAny(err, "a moderator removes itself")
	_, err = mod.RemoveMember(ctx, room, adp.MemberRemove{Member: t.k.newAgent(t).AgentID()})
	t.refusedAny(err, "a removal of a non-member without ban")
	_, err = c.RemoveMember(ctx, room, adp.MemberRemove{Member: mod.AgentID()})
	t.refused(err, identity.CodePermissionDenied, "a speaker's room.member.remove")
}
