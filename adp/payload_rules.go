package adp

import (
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/packs"
)

// ParsePayload decodes the payload of a built-in event type into its typed
// view, strictly, after checking it exactly as a host does without room
// state: strict JSON, the kernel schema, unknown members refused, Agent
// IDs and hashes parsed, and the payload rules of §9–§12. Renderers and
// clients read built-in payloads through it rather than through structs of
// their own. The result's dynamic type, per type:
//
//	room.create                           *RoomCreate
//	room.update                           *RoomUpdate
//	room.join                             *Join
//	room.join.review                      *JoinReview
//	room.leave, room.close, room.cancel   *Notice
//	room.member.role.update               *RoleUpdate
//	room.member.remove                    *MemberRemove
//	type.define                           *packs.Declaration
//	message.create                        *Message
//
// A type that is not built in, or a payload that fails, is invalid_event
// with a nil result.
func ParsePayload(typ string, payload []byte) (any, error) {
	v, err := checkBuiltinPayload(typ, payload)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// checkBuiltinPayload validates a built-in payload without room state: the
// kernel schema, then the rules of §9–§12 that need only the payload. It
// returns the decoded payload. Builders and the replayer share it, so an
// event signed by the builders never fails a host for its shape.
//
// The payload is parsed once: packs.DecodeBuiltin builds the kernel
// schema's tree and the typed struct from the same parse.
func checkBuiltinPayload(typ string, raw jsontext.Value) (any, error) {
	return checkBuiltinWith(typ, raw, onePass)
}

// payloadDecoders check a built-in payload against its kernel schema and
// decode it: packs' one-pass functions, or in tests the two-pass
// reference they replaced.
type payloadDecoders struct {
	// decode checks the payload of typ and, when v is not nil, decodes it
	// into v.
	decode func(typ string, raw []byte, v any) error
	// typeDefine checks a type.define payload and parses its declaration.
	typeDefine func(raw []byte) (packs.Declaration, error)
}

var onePass = payloadDecoders{packs.DecodeBuiltin, packs.ParseTypeDefine}

// checkBuiltinWith is checkBuiltinPayload with the schema check and
// decoding done by pd.
func checkBuiltinWith(typ string, raw jsontext.Value, pd payloadDecoders) (any, error) {
	dec := pd.decode
	switch typ {
	case TypeRoomCreate:
		p := new(RoomCreate)
		if err := dec(typ, raw, p); err != nil {
			return nil, err
		}
		switch {
		case strings.TrimSpace(p.Topic) == "":
			return nil, invalid("room.create topic is blank")
		case p.StartTime >= p.EndTime:
			return nil, invalid("room.create start_time must be before end_time")
		}
		return p, checkPolicy(p.Policy)
	case TypeRoomUpdate:
		p := new(RoomUpdate)
		if err := dec(typ, raw, p); err != nil {
			return nil, err
		}
		if p.Topic != nil && strings.TrimSpace(*p.Topic) == "" {
			return nil, invalid("room.update topic is blank")
		}
		return p, checkPolicy(p.Policy)
	case TypeRoomJoin:
		p := new(Join)
		if err := dec(typ, raw, p); err != nil {
			return nil, err
		}
		if p.RequestID != "" && p.Perspective != nil {
			return nil, invalid("room.join with request_id must not carry perspective")
		}
		return p, nil
	case TypeRoomJoinReview:
		p := new(JoinReview)
		if err := dec(typ, raw, p); err != nil {
			return nil, err
		}
		switch {
		case p.Decision == DecisionApprove && p.Role == "":
			return nil, invalid("an approving room.join.review must name the role")
		case p.Request.ExpiresAt <= p.Request.CreatedAt:
			// A request that expires when it is made was never pending
			// (§11): no review can see it so.
			return nil, invalid("the reviewed join request's expires_at is not after its created_at")
		}
		return p, nil
	case TypeRoomLeave, TypeRoomClose, TypeRoomCancel:
		p := new(Notice)
		return p, dec(typ, raw, p)
	case TypeMemberRoleUpdate:
		p := new(RoleUpdate)
		return p, dec(typ, raw, p)
	case TypeMemberRemove:
		p := new(MemberRemove)
		return p, dec(typ, raw, p)
	case TypeTypeDefine:
		d, err := pd.typeDefine(raw)
		if err != nil {
			return nil, err
		}
		return &d, nil
	case TypeMessageCreate:
		p := new(Message)
		if err := dec(typ, raw, p); err != nil {
			return nil, err
		}
		if k := p.Content.Kind(); k != '"' && k != '{' {
			return nil, invalid("message.create content must be a JSON string or object")
		}
		return p, nil
	}
	if err := dec(typ, raw, nil); err != nil { // not built in
		return nil, err
	}
	return nil, identity.Errorf(identity.CodeInvalidEvent, "%q is not a built-in type", clip(typ))
}

// checkCustomPayload is the kernel schema's rule for every event of a
// room-defined type (customEvent: payload is an object), which holds
// whatever the type's own schema says. A violation is a fault of the
// event's structure, so its code is invalid_event (§20), not
// payload_schema_violation, which §13.6 step 4 reserves for the type's
// schema — a schema that may well accept an array or a string.
func checkCustomPayload(raw jsontext.Value) error {
	if raw.Kind() != '{' {
		return invalid("the payload of a room-defined type must be a JSON object")
	}
	return nil
}

// checkPolicy applies §9.3 beyond the schema (which already requires
// max_speakers ≥ 1 and well-formed Agent IDs, re-checked by decoding).
func checkPolicy(p *Policy) error {
	if p != nil && p.MaxSpeakers < 0 {
		return invalid("policy.max_speakers must be at least 1")
	}
	return nil
}

func invalid(msg string) error { return identity.NewError(identity.CodeInvalidEvent, msg) }
