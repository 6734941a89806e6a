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
// based on (§6): the current room head for message, control and lifecycle
// writes, any accepted record for signals and membership events. A Room
// gives the right one with BaseFor.
type Base struct {
	RoomID string
	Seq    int64
	Hash   envelope.Hash
}

// The builders below sign one event each through an envelope.Author, which
// supplies actor, created_at and nonce. Each validates its payload locally
// — the kernel schema plus every rule that needs no room state — so an
// event a host would reject for its shape is never signed. mentions are the
// event's top-level attention list: at most 32 distinct Agent IDs.

// NewRoomCreate signs a room.create. It carries no room fields and no
// mentions (§6).
func NewRoomCreate(ctx context.Context, a *envelope.Author, p RoomCreate) (*envelope.Envelope, error) {
	return build(ctx, a, nil, TypeRoomCreate, p, nil)
}

// NewRoomUpdate signs a room.update (§9.4); base must be the room head.
func NewRoomUpdate(ctx context.Context, a *envelope.Author, base Base, p RoomUpdate, mentions ...identity.AgentID) (*envelope.Envelope, error) {
	return build(ctx, a, &base, TypeRoomUpdate, p, mentions)
}

// NewJoin signs a room.join (§10.2).
func NewJoin(ctx context.Context, a *envelope.Author, base Base, p Join, mentions ...identity.AgentID) (*envelope.Envelope, error) {
	return build(ctx, a, &base, TypeRoomJoin, p, mentions)
}

// NewJoinReview signs a room.join.review (§11).
func NewJoinReview(ctx context.Context, a *envelope.Author, base Base, p JoinReview, mentions ...identity.AgentID) (*envelope.Envelope, error) {
	return build(ctx, a, &base, TypeRoomJoinReview, p, mentions)
}

// NewLeave signs a room.leave (§10.3).
func NewLeave(ctx context.Context, a *envelope.Author, base Base, p Notice, mentions ...identity.AgentID) (*envelope.Envelope, error) {
	return build(ctx, a, &base, TypeRoomLeave, p, mentions)
}

// NewRoleUpdate signs a room.member.role.update (§10.4).
func NewRoleUpdate(ctx context.Context, a *envelope.Author, base Base, p RoleUpdate, mentions ...identity.AgentID) (*envelope.Envelope, error) {
	return build(ctx, a, &base, TypeMemberRoleUpdate, p, mentions)
}

// NewMemberRemove signs a room.member.remove (§10.5).
func NewMemberRemove(ctx context.Context, a *envelope.Author, base Base, p MemberRemove, mentions ...identity.AgentID) (*envelope.Envelope, error) {
	return build(ctx, a, &base, TypeMemberRemove, p, mentions)
}

// NewClose signs a room.close; base must be the room head.
func NewClose(ctx context.Context, a *envelope.Author, base Base, p Notice, mentions ...identity.AgentID) (*envelope.Envelope, error) {
	return build(ctx, a, &base, TypeRoomClose, p, mentions)
}

// NewCancel signs a room.cancel; base must be the room head.
func NewCancel(ctx context.Context, a *envelope.Author, base Base, p Notice, mentions ...identity.AgentID) (*envelope.Envelope, error) {
	return build(ctx, a, &base, TypeRoomCancel, p, mentions)
}

// NewTypeDefine signs a type.define carrying one declaration (§13.4);
// base must be the room head.
func NewTypeDefine(ctx context.Context, a *envelope.Author, base Base, d packs.Declaration, mentions ...identity.AgentID) (*envelope.Envelope, error) {
	return build(ctx, a, &base, TypeTypeDefine, d, mentions)
}

// NewMessage signs a message.create (§12); base must be the room head.
func NewMessage(ctx context.Context, a *envelope.Author, base Base, p Message, mentions ...identity.AgentID) (*envelope.Envelope, error) {
	return build(ctx, a, &base, TypeMessageCreate, p, mentions)
}

// NewCustom signs an event of a room-defined type. The payload (any value
// json v2 marshals to a JSON object, or a jsontext.Value holding one) is
// validated against the definition in force in reg, so a payload the host
// would refuse with invalid_event (not an object), type_not_defined,
// type_disabled or payload_schema_violation is never signed. Pass the
// room's registry (Room.Registry).
func NewCustom(ctx context.Context, a *envelope.Author, base Base, reg *packs.Registry, typ string, payload any, mentions ...identity.AgentID) (*envelope.Envelope, error) {
	if IsBuiltin(typ) {
		return nil, identity.Errorf(identity.CodeInvalidEvent, "%s is a built-in type; use its builder", typ)
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

func build(ctx context.Context, a *envelope.Author, base *Base, typ string, payload any, mentions []identity.AgentID) (*envelope.Envelope, error) {
	raw, err := marshalPayload(payload)
	if err != nil {
		return nil, err
	}
	if _, err := checkBuiltinPayload(typ, raw); err != nil {
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
