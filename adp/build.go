package adp

import (
	"context"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/packs"
)

// Base names the room an event belongs to and the accepted record it is
// based on (seed §6, 2026-09-24 §5), as its draft's freshness rule for the
// event's class asks: in the seed, the current room head for message,
// control and lifecycle writes and any accepted record for signals and
// membership events; in the 2026-09-24 draft, any accepted record for
// contract and signal writes and the head or a later record for message
// and control writes. A Room gives the right one with BaseFor, and
// NextBase computes it from a head and a latest record.
type Base struct {
	RoomID string
	Seq    int64
	Hash   envelope.Hash
	// Draft is the room's draft, whose rules the builders apply to the
	// payload; Room.BaseFor sets it. The zero value is the default draft.
	Draft Draft
}

// The builders below sign one event each through an envelope.Author, which
// supplies actor, created_at and nonce. Each validates its payload locally
// — the kernel schema plus every rule that needs no room state — so an
// event a host would reject for its shape is never signed. mentions are the
// event's top-level attention list: at most 32 distinct Agent IDs.

// NewRoomCreate signs a room.create of the default draft. It carries no
// room fields and no mentions (§6). See [NewRoomCreateIn].
func NewRoomCreate(ctx context.Context, a *envelope.Author, p RoomCreate) (*envelope.Envelope, error) {
	return NewRoomCreateIn(ctx, a, DefaultDraft, p)
}

// NewRoomCreateIn signs a room.create of draft d. In the 2026-09-24 draft
// (§8.1) p.Host must name the origin of the host the room is created on:
// the room is bound to it, and another host refuses the event.
func NewRoomCreateIn(ctx context.Context, a *envelope.Author, d Draft, p RoomCreate) (*envelope.Envelope, error) {
	return build(ctx, a, d, nil, TypeRoomCreate, p, nil)
}

// NewJoinRequest signs a room.join.request of draft d (2026-09-24 §10),
// asking to join room roomID: the event carries room_id and no base or
// mentions, because an applicant may be unable to read the room. It is
// submitted to POST /v1/rooms/{room_id}/join-requests and held by the
// host; a reviewer embeds it in a room.join.review. A draft without
// signed join requests refuses it with invalid_event.
func NewJoinRequest(ctx context.Context, a *envelope.Author, d Draft, roomID string, p JoinRequestPayload) (*envelope.Envelope, error) {
	if !rulesOf(d).signedJoin {
		return nil, identity.Errorf(identity.CodeInvalidEvent, "the %s draft has no room.join.request", d.OrDefault())
	}
	if roomID == "" {
		return nil, identity.NewError(identity.CodeInvalidEvent, "a join request names its room")
	}
	raw, err := marshalPayload(p)
	if err != nil {
		return nil, err
	}
	if _, err := checkBuiltinPayload(d, TypeRoomJoinRequest, raw); err != nil {
		return nil, err
	}
	room, _ := jsontext.AppendQuote(nil, roomID)
	return a.Sign(ctx, Protocol, TypeRoomJoinRequest, raw, envelope.Fields{{Name: FieldRoomID, Value: room}})
}

// NewRoomUpdate signs a room.update (§9.4); base must be the room head.
func NewRoomUpdate(ctx context.Context, a *envelope.Author, base Base, p RoomUpdate, mentions ...identity.AgentID) (*envelope.Envelope, error) {
	return build(ctx, a, base.Draft, &base, TypeRoomUpdate, p, mentions)
}

// NewJoin signs a room.join (§10.2).
func NewJoin(ctx context.Context, a *envelope.Author, base Base, p Join, mentions ...identity.AgentID) (*envelope.Envelope, error) {
	return build(ctx, a, base.Draft, &base, TypeRoomJoin, p, mentions)
}

// NewJoinReview signs a room.join.review of the seed draft (§11), which
// names the reviewed HTTP join request; see [NewSignedJoinReview] for the
// 2026-09-24 draft.
func NewJoinReview(ctx context.Context, a *envelope.Author, base Base, p JoinReview, mentions ...identity.AgentID) (*envelope.Envelope, error) {
	return build(ctx, a, base.Draft, &base, TypeRoomJoinReview, p, mentions)
}

// NewSignedJoinReview signs a room.join.review of the 2026-09-24 draft
// (§10), embedding the applicant's signed room.join.request, which must
// verify (hash, signature, shape) and name the base's room.
func NewSignedJoinReview(ctx context.Context, a *envelope.Author, base Base, p SignedJoinReview, mentions ...identity.AgentID) (*envelope.Envelope, error) {
	if p.Request != nil {
		if ev, err := ParseEventIn(base.Draft, p.Request); err == nil && ev.RoomID != base.RoomID {
			return nil, identity.NewError(identity.CodeInvalidEvent, "the embedded join request names another room")
		}
	}
	return build(ctx, a, base.Draft, &base, TypeRoomJoinReview, p, mentions)
}

// NewLeave signs a room.leave (§10.3).
func NewLeave(ctx context.Context, a *envelope.Author, base Base, p Notice, mentions ...identity.AgentID) (*envelope.Envelope, error) {
	return build(ctx, a, base.Draft, &base, TypeRoomLeave, p, mentions)
}

// NewRoleUpdate signs a room.member.role.update (§10.4).
func NewRoleUpdate(ctx context.Context, a *envelope.Author, base Base, p RoleUpdate, mentions ...identity.AgentID) (*envelope.Envelope, error) {
	return build(ctx, a, base.Draft, &base, TypeMemberRoleUpdate, p, mentions)
}

// NewMemberRemove signs a room.member.remove (§10.5).
func NewMemberRemove(ctx context.Context, a *envelope.Author, base Base, p MemberRemove, mentions ...identity.AgentID) (*envelope.Envelope, error) {
	return build(ctx, a, base.Draft, &base, TypeMemberRemove, p, mentions)
}

// NewClose signs a room.close; base must be the room head.
func NewClose(ctx context.Context, a *envelope.Author, base Base, p Notice, mentions ...identity.AgentID) (*envelope.Envelope, error) {
	return build(ctx, a, base.Draft, &base, TypeRoomClose, p, mentions)
}

// NewCancel signs a room.cancel; base must be the room head.
func NewCancel(ctx context.Context, a *envelope.Author, base Base, p Notice, mentions ...identity.AgentID) (*envelope.Envelope, error) {
	return build(ctx, a, base.Draft, &base, TypeRoomCancel, p, mentions)
}

// NewTypeDefine signs a type.define carrying one declaration (§13.4);
// base must be the room head.
func NewTypeDefine(ctx context.Context, a *envelope.Author, base Base, d packs.Declaration, mentions ...identity.AgentID) (*envelope.Envelope, error) {
	return build(ctx, a, base.Draft, &base, TypeTypeDefine, d, mentions)
}

// NewMessage signs a message.create (§12); base must be the room head.
func NewMessage(ctx context.Context, a *envelope.Author, base Base, p Message, mentions ...identity.AgentID) (*envelope.Envelope, error) {
	return build(ctx, a, base.Draft, &base, TypeMessageCreate, p, mentions)
}

// NewEvent signs a built-in event of type typ on base from its raw
// payload, for callers that hold the payload as JSON (a tool's arguments,
// a stored draft): the payload is checked against the type's kernel rules
// in base's draft once, as its typed builder would check it (NewMessage,
// NewJoin, …), and signed as given. room.create and room.join.request are
// not written on a base (NewRoomCreate, NewJoinRequest), and a
// room-defined type needs its room's registry (NewCustom); NewEvent
// refuses them with invalid_event.
func NewEvent(ctx context.Context, a *envelope.Author, base Base, typ string, payload jsontext.Value, mentions ...identity.AgentID) (*envelope.Envelope, error) {
	switch {
	case typ == TypeRoomCreate || typ == TypeRoomJoinRequest:
		return nil, identity.Errorf(identity.CodeInvalidEvent, "%s is not written on a base; use its builder", typ)
	case !base.Draft.IsBuiltin(typ):
		return nil, identity.Errorf(identity.CodeInvalidEvent, "%q is not a built-in type of the %s draft; use NewCustom", clip(typ), base.Draft.OrDefault())
	}
	if _, err := checkBuiltinPayload(base.Draft, typ, payload); err != nil {
		return nil, err
	}
	return sign(ctx, a, &base, typ, payload, mentions)
}

// NewCustom signs an event of a room-defined type. The payload (any value
// json v2 marshals to a JSON object, or a jsontext.Value holding one) is
// validated against the definition in force in reg, so a payload the host
// would refuse with invalid_event (not an object), type_not_defined,
// type_disabled or payload_schema_violation is never signed. Pass the
// room's registry (Room.Registry).
func NewCustom(ctx context.Context, a *envelope.Author, base Base, reg *packs.Registry, typ string, payload any, mentions ...identity.AgentID) (*envelope.Envelope, error) {
	if base.Draft.IsBuiltin(typ) {
		return nil, identity.Errorf(identity.CodeInvalidEvent, "%s is a built-in type; use its builder", typ)
	}
	if reg.Draft() != base.Draft.OrDefault() {
		return nil, identity.Errorf(identity.CodeInvalidEvent, "the registry follows the %s draft; the base the %s draft", reg.Draft(), base.Draft.OrDefault())
	}
	raw, err := marshalPayload(payload)
	if err != nil {
		return nil, err
	}
	if err := checkCustomPayload(raw); err != nil {
		return nil, err
	}
	if err := reg.Validate(typ, raw); err != nil {
		return nil, err
	}
	return sign(ctx, a, &base, typ, raw, mentions)
}

func build(ctx context.Context, a *envelope.Author, d Draft, base *Base, typ string, payload any, mentions []identity.AgentID) (*envelope.Envelope, error) {
	raw, err := marshalPayload(payload)
	if err != nil {
		return nil, err
	}
	if _, err := checkBuiltinPayload(d, typ, raw); err != nil {
		return nil, err
	}
	return sign(ctx, a, base, typ, raw, mentions)
}

func marshalPayload(payload any) (jsontext.Value, error) {
	if v, ok := payload.(jsontext.Value); ok {
		return v, nil
	}
	raw, err := json.Marshal(payload, json.Deterministic(true))
	if err != nil {
		return nil, identity.Wrap(identity.CodeInvalidEvent, "payload", err)
	}
	return raw, nil
}

func sign(ctx context.Context, a *envelope.Author, base *Base, typ string, payload jsontext.Value, mentions []identity.AgentID) (*envelope.Envelope, error) {
	ext, err := baseFields(base, mentions)
	if err != nil {
		return nil, err
	}
	return a.Sign(ctx, Protocol, typ, payload, ext)
}

// baseFields encodes room_id, base_seq, base_hash and mentions.
func baseFields(base *Base, mentions []identity.AgentID) (envelope.Fields, error) {
	if base == nil {
		if len(mentions) > 0 {
			return nil, identity.NewError(identity.CodeInvalidEvent, "room.create carries no mentions")
		}
		return nil, nil
	}
	switch {
	case base.RoomID == "":
		return nil, identity.NewError(identity.CodeInvalidEvent, "base names no room")
	case base.Seq < 1 || base.Seq > identity.MaxNonce:
		return nil, identity.NewError(identity.CodeInvalidEvent, "base_seq must be a positive safe integer")
	case len(mentions) > MaxMentions:
		return nil, identity.Errorf(identity.CodeInvalidEvent, "%d mentions; at most %d", len(mentions), MaxMentions)
	}
	room, _ := jsontext.AppendQuote(nil, base.RoomID)
	hash, _ := base.Hash.MarshalText()
	fields := envelope.Fields{
		{Name: FieldRoomID, Value: room},
		{Name: FieldBaseSeq, Value: strconv.AppendInt(nil, base.Seq, 10)},
		{Name: FieldBaseHash, Value: jsontext.Value(`"` + string(hash) + `"`)},
	}
	if mentions != nil {
		seen := make(map[identity.AgentID]bool, len(mentions))
		list := []byte{'['}
		for i, m := range mentions {
			if m.IsZero() || seen[m] {
				return nil, identity.Errorf(identity.CodeInvalidEvent, "mentions[%d] is empty or repeated", i)
			}
			seen[m] = true
			if i > 0 {
				list = append(list, ',')
			}
			list = append(m.AppendText(append(list, '"')), '"')
		}
		fields = append(fields, envelope.Field{Name: FieldMentions, Value: append(list, ']')})
	}
	return fields, nil
}
