package adp

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
	"github.com/agentprotocols/go-sdk/packs"
)

// RoomOptions configures a Room. A nil *RoomOptions means defaults, which
// suit a verifier replaying history: no network, no host policy beyond the
// protocol's MUSTs and the §21 payload limit.
type RoomOptions struct {
	// Packs configures the type registry: hosts pass an HTTPS fetcher for
	// external packs, archive verifiers a static fetcher over the archived
	// pack documents. nil refuses external packs (pack_unavailable).
	Packs *packs.Options
	// Index remembers record and event hashes; nil means a MemoryIndex.
	Index Index
	// JoinRequests lets a host check reviews and request-based joins
	// against its join-request store (§11). nil trusts the log, which is
	// what a verifier replaying history must do: the join requests
	// themselves are not part of it.
	JoinRequests JoinRequestStore
	// AcceptContentType is the host's message content_type policy (§12);
	// nil accepts every non-empty content type.
	AcceptContentType func(contentType string) bool
	// MaxPayloadBytes is the host's limit on the canonical payload of an
	// event whose type carries no max_payload_hint (every built-in type
	// included); 0 means MaxPayloadBytes (64 KiB, §21).
	MaxPayloadBytes int
	// MaxHintedPayloadBytes is the host's ceiling for types that carry a
	// max_payload_hint (§21 "带类型提示的 payload 上限"): such a type's
	// limit is its hint, clamped to this ceiling, so a hint moves the limit
	// within the host's bounds and never past them. 0 means
	// MaxHintedPayloadBytes (256 KiB) when MaxPayloadBytes is 0 too — the
	// SDK host's defaults — and the effective MaxPayloadBytes otherwise, so
	// a host that set its own limit and nothing for hints keeps that
	// limit. A ceiling below the effective MaxPayloadBytes is raised to it.
	MaxHintedPayloadBytes int
	// URL is the room's canonical URL (§7.2). When set, room_head_mismatch
	// errors carry an events_url for catching up.
	URL string
}

// JoinRequestStatus is the review state of a join request (§11).
type JoinRequestStatus string

// The four join-request states.
const (
	JoinPending  JoinRequestStatus = "pending"
	JoinApproved JoinRequestStatus = "approved"
	JoinRejected JoinRequestStatus = "rejected"
	JoinExpired  JoinRequestStatus = "expired"
)

// JoinRequestStore is a host's store of join requests (HTTP resources, not
// room events). Lookup returns the stored immutable request and its status,
// or an error with code join_request_not_found. A public room's automatic
// approvals (§11) leave no room.join.review in the log, so the store is
// where a join naming one finds it: Lookup reports it approved, and its
// role is the approved role.
type JoinRequestStore interface {
	Lookup(ctx context.Context, roomID, requestID string) (JoinRequest, JoinRequestStatus, error)
}

// Contract is the room's current contract (§9, §16): what room.create
// established and room.update revised.
type Contract struct {
	Topic      string         `json:"topic"`
	Agenda     string         `json:"agenda,omitzero"`
	Guidance   string         `json:"guidance,omitzero"`
	Visibility Visibility     `json:"visibility"`
	StartTime  int64          `json:"start_time"`
	EndTime    int64          `json:"end_time"`
	Tags       []string       `json:"tags,omitzero"`
	Language   string         `json:"language,omitzero"`
	Policy     Policy         `json:"policy"`
	Extra      jsontext.Value `json:"extra,omitzero"`
}

// Member is one agent's membership (§10). Seq fields name records.
type Member struct {
	ID           identity.AgentID `json:"id"`
	Role         Role             `json:"role"`
	Status       MemberStatus     `json:"status"`
	Perspective  string           `json:"perspective,omitzero"`
	JoinedSeq    int64            `json:"joined_seq"`
	LeftSeq      int64            `json:"left_seq,omitzero"`
	LastEventSeq int64            `json:"last_event_seq"`
}

// RecordRef names an accepted record: the room head and latest record.
type RecordRef struct {
	Seq  int64         `json:"seq"`
	Hash envelope.Hash `json:"hash"`
}

// review is a room.join.review decision the log recorded, keyed by request,
// or (Auto) a public room's automatic approval (§11), which the log shows
// only as the room.join that consumed it.
type review struct {
	Applicant   identity.AgentID `json:"applicant"`
	Decision    Decision         `json:"decision"`
	Role        Role             `json:"role,omitzero"`
	Perspective string           `json:"perspective,omitzero"`
	ExpiresAt   int64            `json:"expires_at"`
	Seq         int64            `json:"seq"`
	Consumed    bool             `json:"consumed,omitzero"`
	Auto        bool             `json:"auto,omitzero"`
}

// Room replays one room's records into its state and judges new writes by
// every rule a host must enforce (§6–§15). Hosts call Accept before
// appending a write; verifiers call Apply for each record of a history.
// Both run the same rule table (check), so a room verified offline is
// judged exactly as its host had to judge it, and Apply never accepts what
// Check refuses.
//
// A Room is safe for concurrent use: writes are serialized (the head
// precondition is a compare-and-swap), reads see a consistent state.
type Room struct {
	mu   sync.RWMutex
	id   string
	opts RoomOptions

	st    state
	index Index
}

// state is everything a snapshot holds besides the index.
type state struct {
	Created   bool                         `json:"created"`
	Creator   identity.AgentID             `json:"creator"`
	CreatedAt int64                        `json:"created_at"`
	Status    Status                       `json:"status"`
	Contract  Contract                     `json:"contract"`
	Members   map[identity.AgentID]*Member `json:"members"`
	Bans      map[identity.AgentID]bool    `json:"bans,omitzero"`
	Reviews   map[string]*review           `json:"reviews,omitzero"`
	Latest    Latest                       `json:"latest"`
	Head      RecordRef                    `json:"head"`
	Registry  *packs.Registry              `json:"-"`
}

// Latest holds the latest accepted record's acceptance fields (§16). Its
// JSON form has pre_hash null at seq 1 (see Latest.MarshalJSON).
type Latest struct {
	Seq        int64         `json:"seq"`
	PreHash    envelope.Hash `json:"pre_hash"`
	Hash       envelope.Hash `json:"hash"`
	ReceivedAt int64         `json:"received_at"`
}

// NewRoom returns an empty room with the host-assigned id. Its first write
// must be the room.create.
func NewRoom(id string, opts *RoomOptions) *Room {
	r := &Room{id: id}
	if opts != nil {
		r.opts = *opts
	}
	r.index = r.opts.Index
	if r.index == nil {
		r.index = NewMemoryIndex()
	}
	r.st.Members = map[identity.AgentID]*Member{}
	r.st.Registry = packs.NewRegistry(r.opts.Packs)
	return r
}

// ID returns the room ID.
func (r *Room) ID() string { return r.id }

// Check reports whether the host may accept env at time at, without
// changing anything. The envelope's hash and signature are verified (once:
// envelope remembers a successful verification).
func (r *Room) Check(ctx context.Context, env *envelope.Envelope, at time.Time) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, err := r.check(ctx, env, r.clock(at))
	return err
}

// clock is the acceptance time of a write offered at at, in Unix ms: at,
// but never before the latest record's received_at. received_at must not
// decrease along the chain (Apply refuses it), so a host whose clock
// steps back keeps writing the latest received_at until its clock catches
// up, rather than backdating a record — which could, for instance, make
// an expired join request count.
func (r *Room) clock(at time.Time) int64 {
	return max(at.UnixMilli(), r.st.Latest.ReceivedAt)
}

// Accept is the host path (§6.1, §15): it checks env at time at, assigns
// the next seq with received_at = at, links the record into the chain and
// commits the state change atomically. On error nothing changes.
//
// received_at never decreases: if at is before the latest record's
// received_at (the host clock stepped back), Accept uses the latest
// received_at instead, and judges the write at that time. Check does the
// same, so the two agree.
//
// Run the envelope through an [envelope.Verifier] first: Accept enforces room
// rules, not the live-write window or nonce replay protection.
func (r *Room) Accept(ctx context.Context, env *envelope.Envelope, at time.Time) (*Record, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ms := r.clock(at)
	c, err := r.check(ctx, env, ms)
	if err != nil {
		return nil, err
	}
	rec := &Record{RoomID: r.id, Seq: r.st.Latest.Seq + 1, ReceivedAt: ms, Envelope: env}
	if rec.Seq > 1 {
		rec.PreHash = r.st.Latest.Hash
	}
	rec.Hash = rec.ComputeHash()
	r.commit(c, rec)
	return rec, nil
}

// Apply replays one record of a history (§19 step 3): the record must be
// the next link of the chain, with a correct record hash and a received_at
// not before the previous record's, and its envelope must verify and be
// acceptable at its received_at. On error nothing changes; the error
// carries the §20 code the host should have answered (or invalid_record
// for a broken chain or a received_at that goes back).
func (r *Room) Apply(ctx context.Context, rec *Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.checkLink(rec); err != nil {
		return err
	}
	c, err := r.check(ctx, rec.Envelope, rec.ReceivedAt)
	if err != nil {
		return err
	}
	r.commit(c, rec)
	return nil
}

func (r *Room) checkLink(rec *Record) error {
	switch {
	case rec.RoomID != r.id:
		return identity.Errorf(CodeInvalidRecord, "record %d: room_id %q is not %q", rec.Seq, clip(rec.RoomID), clip(r.id))
	case rec.Seq != r.st.Latest.Seq+1:
		return identity.Errorf(CodeInvalidRecord, "record seq %d does not follow %d", rec.Seq, r.st.Latest.Seq)
	case rec.Seq > 1 && rec.PreHash != r.st.Latest.Hash:
		return identity.Errorf(CodeInvalidRecord, "record %d: pre_hash is not the hash of record %d", rec.Seq, r.st.Latest.Seq)
	case rec.Envelope == nil:
		return identity.Errorf(CodeInvalidRecord, "record %d has no envelope", rec.Seq)
	case rec.ReceivedAt < r.st.Latest.ReceivedAt:
		// Acceptance times follow acceptance order (§15); a record dated
		// before its predecessor would be judged at a time the host had
		// already passed.
		return identity.Errorf(CodeInvalidRecord, "record %d: received_at %d is before the previous record's %d", rec.Seq, rec.ReceivedAt, r.st.Latest.ReceivedAt)
	}
	return rec.CheckHash()
}

// change is the outcome of a successful check: the effects to commit.
type change struct {
	ev       *Event
	advances bool            // the record becomes the room head
	registry *packs.Registry // replaces the registry when set
	apply    func(s *state, seq int64)
}

// check runs the full rule table for env at time at (Unix ms). It never
// mutates r.
func (r *Room) check(ctx context.Context, env *envelope.Envelope, at int64) (*change, error) {
	if err := env.Verify(); err != nil {
		return nil, err
	}
	ev, err := ParseEvent(env)
	if err != nil {
		return nil, err
	}
	if ev.Type == TypeRoomCreate {
		return r.checkCreate(ctx, ev, at)
	}
	s := &r.st
	if !s.Created {
		return nil, identity.Errorf(CodeRoomNotFound, "room %q has no room.create yet", clip(r.id))
	}
	if ev.RoomID != r.id {
		return nil, identity.Errorf(identity.CodeInvalidEvent, "event room_id %q is not this room (%q)", clip(ev.RoomID), clip(r.id))
	}
	if r.index.HasEvent(ev.Hash) {
		return nil, identity.Errorf(identity.CodeInvalidEvent, "envelope %s is already accepted in this room", ev.Hash)
	}

	// Resolve the type: built-in, or a definition in force (§13.2, §13.6).
	cat := BuiltinCategory(ev.Type)
	var def *packs.Definition
	if cat == "" {
		if def = s.Registry.Lookup(ev.Type); def == nil {
			return nil, identity.Errorf(CodeTypeNotDefined, "type %q is not defined in this room", clip(ev.Type))
		}
		cat = Category(def.Kind)
	}

	// Freshness (§6.1) comes before state, permission and payload checks.
	signal := cat == CategorySignal
	if err := r.checkBase(ev, signal); err != nil {
		return nil, err
	}

	// State restrictions (§8, §14).
	status := r.statusAt(at)
	if err := checkState(ev.Type, status); err != nil {
		return nil, err
	}

	c := &change{ev: ev, advances: !signal}
	if def != nil {
		return c, r.checkCustom(ev, def)
	}
	payload, err := checkBuiltinPayload(ev.Type, ev.Payload)
	if err != nil {
		return nil, err
	}
	if err := r.checkSize(ev, def); err != nil {
		return nil, err
	}
	switch p := payload.(type) {
	case *RoomUpdate:
		err = r.checkUpdate(c, p, status, at)
	case *Join:
		err = r.checkJoin(ctx, c, p, at)
	case *JoinReview:
		err = r.checkReview(ctx, c, p, at)
	case *RoleUpdate:
		err = r.checkRoleUpdate(c, p)
	case *MemberRemove:
		err = r.checkRemove(c, p)
	case *packs.Declaration:
		err = r.checkTypeDefine(ctx, c, p)
	case *Message:
		err = r.checkMessage(c, p)
	case *Notice:
		err = r.checkNotice(c)
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// commit applies a checked change and links rec into the history.
func (r *Room) commit(c *change, rec *Record) {
	s := &r.st
	if c.ev.Type != TypeRoomCreate {
		s.Status = r.statusAt(rec.ReceivedAt)
	}
	if c.registry != nil {
		s.Registry = c.registry
	}
	if c.apply != nil {
		c.apply(s, rec.Seq)
	}
	if m := s.Members[c.ev.Actor]; m != nil {
		m.LastEventSeq = rec.Seq
	}
	s.Latest = Latest{Seq: rec.Seq, PreHash: rec.PreHash, Hash: rec.Hash, ReceivedAt: rec.ReceivedAt}
	if c.advances {
		s.Head = RecordRef{Seq: rec.Seq, Hash: rec.Hash}
	}
	r.index.Add(rec.Seq, rec.Hash, c.ev.Hash)
}

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

// checkBase is the head precondition of §6.1.
func (r *Room) checkBase(ev *Event, signal bool) error {
	s := &r.st
	if signal {
		if !r.index.HasRecord(ev.BaseSeq, ev.BaseHash) {
			return identity.Errorf(CodeBaseRecordMismatch, "base_seq %d / base_hash %s is not an accepted record of this room", ev.BaseSeq, ev.BaseHash)
		}
		return nil
	}
	if ev.BaseSeq == s.Head.Seq && ev.BaseHash == s.Head.Hash {
		return nil
	}
	data := struct {
		BaseSeq     int64         `json:"base_seq"`
		BaseHash    envelope.Hash `json:"base_hash"`
		CurrentSeq  int64         `json:"current_seq"`
		CurrentHash envelope.Hash `json:"current_hash"`
		EventsURL   string        `json:"events_url,omitzero"`
	}{ev.BaseSeq, ev.BaseHash, s.Head.Seq, s.Head.Hash, ""}
	if r.opts.URL != "" {
		data.EventsURL = r.opts.URL + "/events?after_seq=" + strconv.FormatInt(ev.BaseSeq, 10)
	}
	raw, _ := json.Marshal(data, json.Deterministic(true))
	return &identity.Error{
		Code:    CodeRoomHeadMismatch,
		Message: "base_seq " + strconv.FormatInt(ev.BaseSeq, 10) + " is not the room head " + strconv.FormatInt(s.Head.Seq, 10),
		Data:    raw,
	}
}

// checkState applies the status restrictions of §8 and §14.
func checkState(typ string, status Status) error {
	switch status {
	case StatusEnded:
		return identity.NewError(CodeRoomEnded, "the room has ended and is read-only")
	case StatusCancelled:
		return identity.NewError(CodeRoomNotActive, "the room was cancelled and is read-only")
	case StatusScheduled:
		switch typ {
		case TypeRoomJoin, TypeRoomJoinReview, TypeMemberRoleUpdate, TypeMemberRemove,
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
		canon, err := strictjson.Canonicalize(ev.Payload)
		if err != nil {
			return identity.Wrap(identity.CodeInvalidEvent, "payload", err)
		}
		n = int64(len(canon))
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
	v, err := checkBuiltinPayload(TypeRoomCreate, ev.Payload)
	if err != nil {
		return nil, err
	}
	if err := r.checkSize(ev, nil); err != nil {
		return nil, err
	}
	p := v.(*RoomCreate)
	reg := packs.NewRegistry(r.opts.Packs)
	if len(p.Types) > 0 {
		if err := reg.Declare(ctx, 1, p.Types...); err != nil {
			return nil, err
		}
	}
	c := &change{ev: ev, advances: true, registry: reg}
	c.apply = func(s *state, seq int64) {
		s.Created, s.Creator, s.CreatedAt = true, ev.Actor, ev.CreatedAt
		s.Contract = Contract{
			Topic: p.Topic, Agenda: p.Agenda, Guidance: p.Guidance, Visibility: p.Visibility,
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

// checkUpdate is §9.4.
func (r *Room) checkUpdate(c *change, p *RoomUpdate, status Status, at int64) error {
	if err := r.requireAdmin(c.ev); err != nil {
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
	if p.RequestID == "" {
		if s.Contract.Visibility != VisibilityPublic {
			return identity.NewError(CodeApprovalRequired, "this room requires an approved join request")
		}
		if p.Role == RoleModerator && !slices.Contains(s.Contract.Policy.ModeratorAgentIDs, ev.Actor) {
			return identity.NewError(CodeRoleNotAllowed, "joining as moderator requires a join request or policy.moderator_agent_ids")
		}
	} else {
		var err error
		if rv, err = r.approvedRequest(ctx, ev, p, at); err != nil {
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
func (r *Room) approvedRequest(ctx context.Context, ev *Event, p *Join, at int64) (*review, error) {
	rv := r.st.Reviews[p.RequestID]
	if rv == nil {
		return r.autoApproved(ctx, ev, p, at)
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
func (r *Room) autoApproved(ctx context.Context, ev *Event, p *Join, at int64) (*review, error) {
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
		switch status {
		case JoinApproved:
		case JoinPending:
			return nil, identity.NewError(CodeJoinRequestNotApproved, "the join request is still pending")
		case JoinRejected:
			return nil, identity.NewError(CodeJoinRequestNotApproved, "the join request was rejected")
		case JoinExpired:
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
		switch status {
		case JoinPending:
		case JoinExpired:
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
