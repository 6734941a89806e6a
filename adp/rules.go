package adp

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
	"github.com/agentprotocols/go-sdk/packs"
)

// The rule table (§6.1, §8–§14): the checks Room.check dispatches to, each
// deciding one event against the room state and describing its change.

// statusAt is the room status at time at (Unix ms): the recorded status
// advanced by the clock — scheduled becomes active at start_time, active
// becomes ended at end_time (§8). Transitions only move forward.
func (r *Room) statusAt(at int64) Status {
	s := r.st.Status
	if s == StatusScheduled && at >= r.st.Contract.StartTime {
		s = StatusActive
	}
	if s == StatusActive && at >= r.st.Contract.EndTime {
		s = StatusEnded
	}
	return s
}

// checkBase is the freshness rule (draft-dependent: seed §6.1, 2026-09-24
// §5.1) for a write whose class has base rule rule. The index is asked
// only when the rule needs the anchor.
func (r *Room) checkBase(ev *Event, rule BaseRule) error {
	anchored := false
	if rule == BaseAnchored || rule == BaseAtOrAfterHead {
		anchored = r.index.HasRecord(ev.BaseSeq, ev.BaseHash)
	}
	return checkBaseRule(rule, ev.BaseSeq, ev.BaseHash, anchored, r.st.Head, r.opts.URL)
}

// checkState applies the status restrictions of §8 and §14 (2026-09-24
// §7, §13). Writing to an ended room is room_ended in the seed and
// room_not_active in the 2026-09-24 draft, which has no room_ended
// (draft-dependent).
func (r *Room) checkState(typ string, status Status) error {
	if status == StatusEnded && r.rules.endedCode != CodeRoomEnded {
		return identity.NewError(r.rules.endedCode, "the room has ended and is read-only")
	}
	return checkState(typ, status)
}

// checkState is the seed's checkState.
func checkState(typ string, status Status) error {
	switch status {
	case StatusEnded:
		return identity.NewError(CodeRoomEnded, "the room has ended and is read-only")
	case StatusCancelled:
		return identity.NewError(CodeRoomNotActive, "the room was cancelled and is read-only")
	case StatusScheduled:
		switch typ {
		case TypeRoomJoinRequest, TypeRoomJoin, TypeRoomJoinReview, TypeMemberRoleUpdate, TypeMemberRemove,
			TypeRoomLeave, TypeRoomUpdate, TypeTypeDefine, TypeRoomCancel:
			return nil
		}
		return identity.Errorf(CodeRoomNotActive, "%s is not allowed before the room starts", clip(typ))
	}
	if typ == TypeRoomCancel {
		return identity.NewError(CodeRoomNotActive, "room.cancel is only allowed before the room starts")
	}
	return nil
}

// activeMember returns the actor's membership if it is active.
func (r *Room) activeMember(id identity.AgentID) *Member {
	if m := r.st.Members[id]; m != nil && m.Status == MemberActive {
		return m
	}
	return nil
}

// requireAdmin enforces "creator or moderator" (§13.2): the creator's
// authority is attached to its identity (§9) and survives role changes; a
// moderator must be an active member.
func (r *Room) requireAdmin(ev *Event) error {
	if ev.Actor == r.st.Creator {
		return nil
	}
	if m := r.activeMember(ev.Actor); m != nil && m.Role == RoleModerator {
		return nil
	}
	return identity.Errorf(identity.CodePermissionDenied, "%s requires the room creator or a moderator", ev.Type)
}

// speakers counts active members holding a speaking role.
func (r *Room) speakers() int64 {
	var n int64
	for _, m := range r.st.Members {
		if m.Status == MemberActive && speaking(m.Role) {
			n++
		}
	}
	return n
}

// checkSpeakers enforces max_speakers for one more speaking member.
func (r *Room) checkSpeakers(role Role) error {
	max := r.st.Contract.Policy.MaxSpeakers
	if max > 0 && speaking(role) && r.speakers()+1 > max {
		return identity.Errorf(CodeMaxSpeakersExceeded, "the room allows at most %d speaking members", max)
	}
	return nil
}

// checkRole enforces the policy's role rules (§9.3): observers only when
// observer_allowed is not false.
func (r *Room) checkRole(role Role) error {
	if role == RoleObserver && !r.st.Contract.Policy.observersAllowed() {
		return identity.NewError(CodeRoleNotAllowed, "the room policy does not allow observers")
	}
	return nil
}

// checkSize enforces the payload limit on the canonical payload (§21).
func (r *Room) checkSize(ev *Event, def *packs.Definition) error {
	limit := r.payloadLimit(def)
	n := int64(len(ev.Payload))
	// Canonical form is at most four times the raw form under the number
	// policy (an exponent like 9e15 spelled out), so only payloads that
	// could exceed the limit pay for canonicalization.
	if n*4 > limit {
		// The envelope holds the canonical event, and in it the
		// canonical payload: measure that rather than canonicalize again.
		n = int64(len(ev.canonicalPayload()))
	}
	if n > limit {
		return identity.Errorf(identity.CodePayloadTooLarge, "payload is %d bytes; the limit is %d", n, limit)
	}
	return nil
}

// checkCustom is §13.6 for a room-defined type.
func (r *Room) checkCustom(ev *Event, def *packs.Definition) error {
	if err := checkCustomPayload(ev.Payload); err != nil {
		return err
	}
	if def.Status == packs.StatusDisabled {
		return identity.Errorf(CodeTypeDisabled, "type %q is disabled in this room", ev.Type)
	}
	m := r.activeMember(ev.Actor)
	if m == nil {
		return identity.Errorf(identity.CodePermissionDenied, "%s requires active membership", ev.Type)
	}
	if ev.Actor != r.st.Creator && !def.Allows(m.Role) {
		return identity.Errorf(identity.CodePermissionDenied, "role %s may not send %s", m.Role, ev.Type)
	}
	if err := r.checkSize(ev, def); err != nil {
		return err
	}
	return r.st.Registry.Validate(ev.Type, ev.Payload)
}

// checkCreate is §9: the first record of a room.
func (r *Room) checkCreate(ctx context.Context, ev *Event, at int64) (*change, error) {
	if r.st.Created {
		return nil, identity.NewError(identity.CodeInvalidEvent, "the room already has its room.create")
	}
	v, err := checkBuiltinPayload(r.draft, TypeRoomCreate, ev.Payload)
	if err != nil {
		return nil, err
	}
	if err := r.checkSize(ev, nil); err != nil {
		return nil, err
	}
	p := v.(*RoomCreate)
	if r.rules.hostBound { // draft-dependent (2026-09-24 §8.1)
		if err := r.checkHost(p.Host); err != nil {
			return nil, err
		}
	}
	reg := packs.NewRegistry(r.packOptions())
	if len(p.Types) > 0 {
		if err := reg.Declare(ctx, 1, p.Types...); err != nil {
			return nil, err
		}
	}
	c := &change{ev: ev, advances: true, registry: reg}
	c.apply = func(s *state, seq int64) {
		s.Created, s.Creator, s.CreatedAt = true, ev.Actor, ev.CreatedAt
		s.Contract = Contract{
			Host: p.Host, Topic: p.Topic, Agenda: p.Agenda, Guidance: p.Guidance, Visibility: p.Visibility,
			StartTime: p.StartTime, EndTime: p.EndTime, Tags: p.Tags, Language: p.Language, Extra: p.Extra,
		}
		if p.Policy != nil {
			s.Contract.Policy = *p.Policy
		}
		s.Status = StatusScheduled
		s.Status = r.statusAt(at)
		s.Members[ev.Actor] = &Member{ID: ev.Actor, Role: RoleModerator, Status: MemberActive, JoinedSeq: seq}
	}
	return c, nil
}

// checkHost binds room.create to this host (2026-09-24 §8.1, §21): a
// loopback HTTP origin only where the room allows it, and the host's own
// origin when the room knows it.
func (r *Room) checkHost(host string) error {
	if strings.HasPrefix(host, "http:") && !r.opts.AllowLoopbackHTTP {
		return identity.Errorf(identity.CodeInvalidEvent, "room.create host %q is plain HTTP; only a host that allows loopback HTTP accepts it", clip(host))
	}
	if r.opts.Host != "" && host != r.opts.Host {
		return identity.Errorf(CodeHostMismatch, "room.create names host %q; this host is %q", clip(host), clip(r.opts.Host))
	}
	return nil
}

// checkUpdate is §9.4.
func (r *Room) checkUpdate(c *change, p *RoomUpdate, status Status, at int64) error {
	if err := r.requireAdmin(c.ev); err != nil {
		return err
	}
	// Draft-dependent: the 2026-09-24 policy rules that need the room's
	// visibility (§8.3, §8.4).
	if err := checkPolicy(r.draft, p.Policy, r.st.Contract.Visibility); err != nil {
		return err
	}
	cur := r.st.Contract
	start, end := cur.StartTime, cur.EndTime
	if p.StartTime != nil {
		if status == StatusActive {
			return invalid("room.update cannot change start_time of an active room")
		}
		start = *p.StartTime
	}
	if p.EndTime != nil {
		end = *p.EndTime
	}
	if start >= end {
		return invalid("room.update would make start_time not before end_time")
	}
	if status == StatusActive && end <= at {
		return invalid("room.update cannot end an active room; use room.close")
	}
	c.apply = func(s *state, _ int64) {
		k := &s.Contract
		setIf(&k.Topic, p.Topic)
		setIf(&k.Agenda, p.Agenda)
		setIf(&k.Guidance, p.Guidance)
		setIf(&k.Language, p.Language)
		setIf(&k.StartTime, p.StartTime)
		setIf(&k.EndTime, p.EndTime)
		if p.Tags != nil {
			k.Tags = p.Tags
		}
		if p.Policy != nil {
			k.Policy = *p.Policy
		}
	}
	return nil
}

func setIf[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// checkJoin is §10.2.
func (r *Room) checkJoin(ctx context.Context, c *change, p *Join, at int64) error {
	s := &r.st
	ev := c.ev
	if r.activeMember(ev.Actor) != nil {
		return invalid("the actor is already an active member")
	}
	if s.Bans[ev.Actor] {
		return identity.NewError(CodeMemberBanned, "the actor is banned from this room")
	}
	if err := r.checkSpeakers(p.Role); err != nil {
		return err
	}
	if err := r.checkRole(p.Role); err != nil {
		return err
	}
	perspective := ""
	if p.Perspective != nil {
		perspective = *p.Perspective
	}
	var rv *review
	switch {
	case r.rules.policyJoin:
		// Draft-dependent (2026-09-24 §9.2): an open role, or the role
		// the actor is invited to, in any visibility.
		k := &s.Contract
		if !slices.Contains(k.Policy.EffectiveOpenRoles(k.Visibility), p.Role) && k.Policy.Invites[ev.Actor] != p.Role {
			return identity.Errorf(CodeApprovalRequired, "role %s is neither open nor the actor's invitation: submit a room.join.request", p.Role)
		}
	case p.RequestID == "":
		if s.Contract.Visibility != VisibilityPublic {
			return identity.NewError(CodeApprovalRequired, "this room requires an approved join request")
		}
		if p.Role == RoleModerator && !slices.Contains(s.Contract.Policy.ModeratorAgentIDs, ev.Actor) {
			return identity.NewError(CodeRoleNotAllowed, "joining as moderator requires a join request or policy.moderator_agent_ids")
		}
	default:
		var err error
		if rv, err = r.approvedRequest(ctx, c, p, at); err != nil {
			return err
		}
		perspective = rv.Perspective
	}
	c.apply = func(s *state, seq int64) {
		switch {
		case rv == nil:
		case rv.Auto:
			if s.Reviews == nil {
				s.Reviews = map[string]*review{}
			}
			auto := *rv
			auto.Seq, auto.Consumed = seq, true
			s.Reviews[p.RequestID] = &auto
		default:
			s.Reviews[p.RequestID].Consumed = true
		}
		s.Members[ev.Actor] = &Member{ID: ev.Actor, Role: p.Role, Status: MemberActive, Perspective: perspective, JoinedSeq: seq}
	}
	return nil
}

// approvedRequest finds the approved, unexpired, unconsumed join request a
// room.join names (§10.2): reviewed in the log, or automatically approved
// in a public room (autoApproved).
func (r *Room) approvedRequest(ctx context.Context, c *change, p *Join, at int64) (*review, error) {
	ev := c.ev
	rv := r.st.Reviews[p.RequestID]
	if rv == nil {
		return r.autoApproved(ctx, c, p, at)
	}
	if rv.Applicant != ev.Actor {
		return nil, requestNotFound(p.RequestID)
	}
	switch {
	case rv.Decision != DecisionApprove:
		return nil, identity.NewError(CodeJoinRequestNotApproved, "the join request was rejected")
	case rv.Consumed:
		return nil, identity.NewError(CodeJoinRequestExpired, "the join request was already used")
	case rv.ExpiresAt <= at:
		return nil, identity.NewError(CodeJoinRequestExpired, "the join request has expired")
	case rv.Role != p.Role:
		return nil, identity.Errorf(CodeJoinRequestRoleMismatch, "the approved role is %s", rv.Role)
	}
	return rv, nil
}

func requestNotFound(id string) error {
	return identity.Errorf(CodeJoinRequestNotFound, "no join request %q for this actor in this room", clip(id))
}

// autoApproved judges a room.join naming a request the log never
// reviewed. Public rooms approve valid requests automatically, with
// reviewed_by null and no room.join.review (§9.2, §11), so the log alone
// cannot show the approval: replay accepts the request_id in a public room
// once, for the actor who first uses it, after the bans, role policy and
// max_speakers checks of checkJoin — the request's expiry and its
// perspective are not in the log, and replay cannot judge or keep them.
// A request for moderator is approved only for an Agent ID in
// policy.moderator_agent_ids (§11). Restricted and private rooms keep
// requests pending until reviewed, so there an unreviewed request_id is
// refused.
//
// A host passes its JoinRequestStore and is held to more: the stored
// request must be approved, for this room and actor, unexpired at the
// join, and for the joining role; the member keeps its perspective.
func (r *Room) autoApproved(ctx context.Context, c *change, p *Join, at int64) (*review, error) {
	ev := c.ev
	s := &r.st
	auto := &review{Applicant: ev.Actor, Decision: DecisionApprove, Role: p.Role, Auto: true}
	if store := r.opts.JoinRequests; store != nil {
		req, status, err := store.Lookup(ctx, r.id, p.RequestID)
		if err != nil && !errors.Is(err, ErrJoinRequestNotFound) {
			return nil, err // the store failed: no verdict on the write
		}
		if err != nil || req.RoomID != r.id || req.Applicant != ev.Actor {
			return nil, requestNotFound(p.RequestID)
		}
		switch {
		case c.replay, status == JoinApproved: // a replayed join consumed it
		case status == JoinPending:
			return nil, identity.NewError(CodeJoinRequestNotApproved, "the join request is still pending")
		case status == JoinRejected:
			return nil, identity.NewError(CodeJoinRequestNotApproved, "the join request was rejected")
		case status == JoinExpired:
			return nil, identity.NewError(CodeJoinRequestExpired, "the join request has expired")
		default:
			return nil, requestNotFound(p.RequestID)
		}
		if s.Contract.Visibility != VisibilityPublic {
			return nil, identity.NewError(CodeJoinRequestNotApproved, "a restricted or private room approves join requests only by a room.join.review")
		}
		if req.ExpiresAt <= at {
			return nil, identity.NewError(CodeJoinRequestExpired, "the join request has expired")
		}
		if req.Role != p.Role {
			return nil, identity.Errorf(CodeJoinRequestRoleMismatch, "the approved role is %s", req.Role)
		}
		if req.Perspective != nil {
			auto.Perspective = *req.Perspective
		}
		auto.ExpiresAt = req.ExpiresAt
	}
	if s.Contract.Visibility != VisibilityPublic {
		return nil, requestNotFound(p.RequestID)
	}
	if p.Role == RoleModerator && !slices.Contains(s.Contract.Policy.ModeratorAgentIDs, ev.Actor) {
		return nil, identity.NewError(CodeRoleNotAllowed, "a moderator join request is approved automatically only for policy.moderator_agent_ids")
	}
	return auto, nil
}

// checkReview is §11. The request must still be pending at the review:
// not reviewed before, and not expired (its expires_at, which the request
// object carries, after the review's acceptance time).
func (r *Room) checkReview(ctx context.Context, c *change, p *JoinReview, at int64) error {
	if err := r.requireAdmin(c.ev); err != nil {
		return err
	}
	req := &p.Request
	if req.RoomID != r.id {
		return invalid("the reviewed request belongs to another room")
	}
	if rv := r.st.Reviews[req.ID]; rv != nil {
		how := "reviewed"
		if rv.Auto {
			how = "approved automatically and used"
		}
		return identity.Errorf(CodeJoinRequestNotFound, "join request %q was already %s", clip(req.ID), how)
	}
	if store := r.opts.JoinRequests; store != nil {
		stored, status, err := store.Lookup(ctx, r.id, req.ID)
		if err != nil {
			return err
		}
		switch {
		case c.replay, status == JoinPending: // a replayed review decided it
		case status == JoinExpired:
			return identity.Errorf(CodeJoinRequestExpired, "join request %q has expired", clip(req.ID))
		default:
			return identity.Errorf(CodeJoinRequestNotFound, "join request %q is %s, not pending", clip(req.ID), status)
		}
		if !sameRequest(stored, *req) {
			return invalid("the reviewed request differs from the stored join request")
		}
	}
	if req.ExpiresAt <= at {
		return identity.Errorf(CodeJoinRequestExpired, "join request %q expired before the review", clip(req.ID))
	}
	if p.Decision == DecisionApprove {
		if err := r.checkRole(p.Role); err != nil {
			return err
		}
		if r.activeMember(req.Applicant) == nil {
			if err := r.checkSpeakers(p.Role); err != nil {
				return err
			}
		}
	}
	perspective := ""
	if req.Perspective != nil {
		perspective = *req.Perspective
	}
	c.apply = func(s *state, seq int64) {
		if s.Reviews == nil {
			s.Reviews = map[string]*review{}
		}
		s.Reviews[req.ID] = &review{
			Applicant: req.Applicant, Decision: p.Decision, Role: p.Role,
			Perspective: perspective, ExpiresAt: req.ExpiresAt, Seq: seq,
		}
		if p.Decision == DecisionApprove {
			// Approving a banned agent's request lifts the ban (§10.5).
			delete(s.Bans, req.Applicant)
			if m := s.Members[req.Applicant]; m != nil && m.Status == MemberBanned {
				m.Status = MemberRemoved
			}
		}
	}
	return nil
}

// sameRequest compares the immutable fields of two join requests.
func sameRequest(a, b JoinRequest) bool {
	eq := func(x, y *string) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	ea, _ := strictjson.Canonicalize(orEmpty(a.Extra))
	eb, _ := strictjson.Canonicalize(orEmpty(b.Extra))
	return a.ID == b.ID && a.RoomID == b.RoomID && a.Applicant == b.Applicant && a.Role == b.Role &&
		eq(a.Perspective, b.Perspective) && eq(a.Reason, b.Reason) &&
		a.CreatedAt == b.CreatedAt && a.ExpiresAt == b.ExpiresAt && string(ea) == string(eb)
}

func orEmpty(v jsontext.Value) jsontext.Value {
	if len(v) == 0 {
		return jsontext.Value("{}")
	}
	return v
}

// checkRoleUpdate is §10.4.
func (r *Room) checkRoleUpdate(c *change, p *RoleUpdate) error {
	if err := r.requireAdmin(c.ev); err != nil {
		return err
	}
	m := r.activeMember(p.Member)
	if m == nil {
		return invalid("room.member.role.update target is not an active member")
	}
	if err := r.checkRole(p.Role); err != nil {
		return err
	}
	if !speaking(m.Role) {
		if err := r.checkSpeakers(p.Role); err != nil {
			return err
		}
	}
	c.apply = func(s *state, _ int64) { s.Members[p.Member].Role = p.Role }
	return nil
}

// checkRemove is §10.5.
func (r *Room) checkRemove(c *change, p *MemberRemove) error {
	if err := r.requireAdmin(c.ev); err != nil {
		return err
	}
	switch {
	case p.Member == r.st.Creator:
		return identity.NewError(identity.CodePermissionDenied, "the room creator cannot be removed or banned")
	case p.Member == c.ev.Actor:
		return invalid("room.member.remove cannot target the actor; use room.leave")
	case r.activeMember(p.Member) == nil && !p.Ban:
		return invalid("room.member.remove target is not an active member (only a ban may target a non-member)")
	}
	c.apply = func(s *state, seq int64) {
		if m := s.Members[p.Member]; m != nil {
			if m.Status == MemberActive {
				m.Status, m.LeftSeq = MemberRemoved, seq
			}
			if p.Ban {
				m.Status = MemberBanned
			}
		}
		if p.Ban {
			if s.Bans == nil {
				s.Bans = map[identity.AgentID]bool{}
			}
			s.Bans[p.Member] = true
		}
	}
	return nil
}

// checkTypeDefine is §13.4: one declaration, applied to a copy of the
// registry so that a refusal changes nothing.
func (r *Room) checkTypeDefine(ctx context.Context, c *change, d *packs.Declaration) error {
	if err := r.requireAdmin(c.ev); err != nil {
		return err
	}
	next := r.st.Registry.Clone()
	if err := next.Declare(ctx, r.st.Latest.Seq+1, *d); err != nil {
		return err
	}
	c.registry = next
	return nil
}

// checkMessage is §12.
func (r *Room) checkMessage(c *change, p *Message) error {
	ev := c.ev
	m := r.activeMember(ev.Actor)
	if m == nil || (!speaking(m.Role) && ev.Actor != r.st.Creator) {
		return identity.NewError(identity.CodePermissionDenied, "message.create requires an active member with a speaking role")
	}
	if accept := r.opts.AcceptContentType; accept != nil && !accept(p.ContentType) {
		return identity.Errorf(identity.CodeInvalidEvent, "content_type %q is not supported by this host", clip(p.ContentType))
	}
	for i, h := range p.References {
		if !r.index.HasEvent(h) {
			return identity.Errorf(identity.CodeInvalidEvent, "references[%d] %s is not an event of this room", i, h)
		}
	}
	return nil
}

// checkNotice covers room.leave, room.close and room.cancel.
func (r *Room) checkNotice(c *change) error {
	ev := c.ev
	switch ev.Type {
	case TypeRoomLeave:
		if r.activeMember(ev.Actor) == nil {
			return identity.NewError(identity.CodePermissionDenied, "room.leave requires active membership")
		}
		if r.rules.creatorStays && ev.Actor == r.st.Creator { // draft-dependent (2026-09-24 §9.3)
			return identity.NewError(identity.CodePermissionDenied, "the room creator cannot leave; it ends its participation by closing or cancelling the room")
		}
		c.apply = func(s *state, seq int64) {
			m := s.Members[ev.Actor]
			m.Status, m.LeftSeq = MemberLeft, seq
		}
		return nil
	case TypeRoomClose:
		if err := r.requireAdmin(ev); err != nil {
			return err
		}
		c.apply = func(s *state, _ int64) { s.Status = StatusEnded }
		return nil
	default: // room.cancel
		if err := r.requireAdmin(ev); err != nil {
			return err
		}
		c.apply = func(s *state, _ int64) { s.Status = StatusCancelled }
		return nil
	}
}

// checkSignedReview is a review in the 2026-09-24 draft (§10), which
// embeds the applicant's signed request (verified by the payload rules):
// the request must be for this room and pending — not reviewed before in
// the log, and, for a host with a join-request store, pending there —
// and an approval must leave the applicant a new active member within the
// policy's roles and max_speakers. The approval itself is the applicant's
// membership event, with the request's perspective, and lifts any ban.
func (r *Room) checkSignedReview(ctx context.Context, c *change, p *SignedJoinReview) error {
	if err := r.requireAdmin(c.ev); err != nil {
		return err
	}
	req, err := ParseEventIn(r.draft, p.Request)
	if err != nil {
		return err
	}
	if req.RoomID != r.id {
		return invalid("the reviewed join request belongs to another room")
	}
	id := req.Hash.String()
	if r.st.Reviews[id] != nil {
		return identity.Errorf(CodeJoinRequestNotPending, "join request %s was already reviewed", id)
	}
	if store := r.opts.JoinRequests; store != nil {
		_, status, err := store.Lookup(ctx, r.id, id)
		if err != nil {
			return err
		}
		if status != JoinPending && !c.replay { // a replayed review decided it
			return identity.Errorf(CodeJoinRequestNotPending, "join request %s is %s, not pending", id, status)
		}
	}
	v, err := checkBuiltinPayload(r.draft, TypeRoomJoinRequest, req.Payload)
	if err != nil {
		return err
	}
	jp := v.(*JoinRequestPayload)
	applicant := req.Actor
	if p.Decision == DecisionApprove {
		if r.activeMember(applicant) != nil {
			return invalid("the applicant is already an active member")
		}
		if err := r.checkRole(p.Role); err != nil {
			return err
		}
		if err := r.checkSpeakers(p.Role); err != nil {
			return err
		}
	}
	perspective := ""
	if jp.Perspective != nil {
		perspective = *jp.Perspective
	}
	c.apply = func(s *state, seq int64) {
		if s.Reviews == nil {
			s.Reviews = map[string]*review{}
		}
		s.Reviews[id] = &review{Applicant: applicant, Decision: p.Decision, Role: p.Role, Perspective: perspective, Seq: seq}
		if p.Decision == DecisionApprove {
			delete(s.Bans, applicant)
			// The review is the member's membership event (§10).
			s.Members[applicant] = &Member{ID: applicant, Role: p.Role, Status: MemberActive, Perspective: perspective, JoinedSeq: seq, LastEventSeq: seq}
		}
	}
	return nil
}

// checkRedacted judges a redacted record (2026-09-24 §14.1) as far as it
// can be judged: a type that may be redacted, for a custom type one
// defined and not disabled at its seq (its class depends on it), allowed
// in the room's state at its acceptance time, with an event ID new to
// the room. Its class decides whether it moves the head.
func (r *Room) checkRedacted(rec *Record) (*change, error) {
	x := rec.Redacted
	if err := checkRedaction(r.draft, x); err != nil {
		return nil, err
	}
	s := &r.st
	if !s.Created {
		return nil, identity.Errorf(CodeRoomNotFound, "room %q has no room.create yet", clip(r.id))
	}
	var def *packs.Definition
	if !r.draft.IsBuiltin(x.Type) {
		if def = s.Registry.Lookup(x.Type); def == nil {
			return nil, identity.Errorf(CodeTypeNotDefined, "redacted record %d has type %q, which is not defined at its seq", rec.Seq, clip(x.Type))
		}
		if def.Status == packs.StatusDisabled {
			return nil, identity.Errorf(CodeTypeDisabled, "redacted record %d has type %q, which is disabled at its seq", rec.Seq, clip(x.Type))
		}
	}
	class, _ := ClassOf(r.draft, x.Type, def)
	if r.index.HasEvent(x.Hash) {
		return nil, identity.Errorf(identity.CodeInvalidEvent, "envelope %s is already accepted in this room", x.Hash)
	}
	if err := r.checkState(x.Type, r.statusAt(rec.ReceivedAt)); err != nil {
		return nil, err
	}
	return &change{advances: class.Rule(r.draft).Advances}, nil
}

// payloadLimit is the §21 payload limit for an event of a type with
// definition def (nil for built-in types): the host limit, or for a type
// with a max_payload_hint that hint clamped to the host's hinted ceiling.
// The hint may lower the limit or raise it up to the ceiling; never past
// it (see RoomOptions.MaxHintedPayloadBytes).
func (r *Room) payloadLimit(def *packs.Definition) int64 {
	limit, ceiling := int64(r.opts.MaxPayloadBytes), int64(r.opts.MaxHintedPayloadBytes)
	if limit <= 0 {
		limit = MaxPayloadBytes
		if ceiling <= 0 {
			ceiling = MaxHintedPayloadBytes
		}
	}
	ceiling = max(ceiling, limit)
	if def != nil && def.MaxPayloadHint > 0 {
		return min(def.MaxPayloadHint, ceiling)
	}
	return limit
}
