package adp

import (
	"errors"
	"slices"
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
// with a nil result. It reads the payload in the default draft; see
// [ParsePayloadIn].
func ParsePayload(typ string, payload []byte) (any, error) {
	return ParsePayloadIn(DefaultDraft, typ, payload)
}

// ParsePayloadIn is [ParsePayload] in draft d. The 2026-09-24 draft's
// types and views differ where its payloads do:
//
//	room.join.request                     *JoinRequestPayload
//	room.join.review                      *SignedJoinReview
//
// and room.create, room.update and room.join follow its kernel schema
// (host, invites, open_roles; no request_id).
func ParsePayloadIn(d Draft, typ string, payload []byte) (any, error) {
	v, err := checkBuiltinPayload(d, typ, payload)
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
func checkBuiltinPayload(d Draft, typ string, raw jsontext.Value) (any, error) {
	return checkBuiltinWith(d, typ, raw, onePass)
}

// payloadDecoders check a built-in payload against its kernel schema and
// decode it: packs' one-pass functions, or in tests the two-pass
// reference they replaced.
type payloadDecoders struct {
	// decode checks the payload of typ in draft d and, when v is not
	// nil, decodes it into v.
	decode func(d Draft, typ string, raw []byte, v any) error
	// typeDefine checks a type.define payload and parses its declaration.
	typeDefine func(d Draft, raw []byte) (packs.Declaration, error)
}

var onePass = payloadDecoders{Draft.DecodeBuiltin, Draft.ParseTypeDefine}

// checkBuiltinWith is checkBuiltinPayload with the schema check and
// decoding done by pd.
func checkBuiltinWith(d Draft, typ string, raw jsontext.Value, pd payloadDecoders) (any, error) {
	d = d.OrDefault()
	dec := func(typ string, raw []byte, v any) error { return pd.decode(d, typ, raw, v) }
	rules := rulesOf(d)
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
		if rules.hostBound {
			if err := checkHostOrigin(p.Host); err != nil {
				return nil, err
			}
		}
		return p, checkPolicy(d, p.Policy, p.Visibility)
	case TypeRoomUpdate:
		p := new(RoomUpdate)
		if err := dec(typ, raw, p); err != nil {
			return nil, err
		}
		if p.Topic != nil && strings.TrimSpace(*p.Topic) == "" {
			return nil, invalid("room.update topic is blank")
		}
		// The visibility-dependent rules need the room (checkUpdate).
		return p, checkPolicy(d, p.Policy, "")
	case TypeRoomJoin:
		p := new(Join)
		if err := dec(typ, raw, p); err != nil {
			return nil, err
		}
		if p.RequestID != "" && p.Perspective != nil {
			return nil, invalid("room.join with request_id must not carry perspective")
		}
		return p, nil
	case TypeRoomJoinRequest:
		if !rules.signedJoin {
			break
		}
		p := new(JoinRequestPayload)
		return p, dec(typ, raw, p)
	case TypeRoomJoinReview:
		if rules.signedJoin {
			p := new(SignedJoinReview)
			if err := dec(typ, raw, p); err != nil {
				return nil, err
			}
			return p, checkEmbeddedRequest(d, p)
		}
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
		decl, err := pd.typeDefine(d, raw)
		if err != nil {
			return nil, err
		}
		return &decl, nil
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

// checkPolicy applies the policy rules beyond the schema (which already
// requires max_speakers ≥ 1 and well-formed Agent IDs, re-checked by
// decoding): seed §9.3, and 2026-09-24 §8.3, whose open_roles must be
// empty in a private room (v; "" when the visibility is not at hand) and
// whose observer_allowed false forbids open roles and invitations
// granting observer.
func checkPolicy(d Draft, p *Policy, v Visibility) error {
	if p == nil {
		return nil
	}
	if p.MaxSpeakers < 0 {
		return invalid("policy.max_speakers must be at least 1")
	}
	if !rulesOf(d).policyJoin {
		return nil
	}
	if v == VisibilityPrivate && len(p.OpenRoles) > 0 {
		return invalid("policy.open_roles must be empty in a private room")
	}
	if !p.observersAllowed() {
		if slices.Contains(p.OpenRoles, RoleObserver) {
			return invalid("policy.open_roles grants observer while observer_allowed is false")
		}
		for id, r := range p.Invites {
			if r == RoleObserver {
				return identity.Errorf(identity.CodeInvalidEvent, "policy.invites grants observer to %s while observer_allowed is false", id)
			}
		}
	}
	return nil
}

// checkHostOrigin checks room.create's host structurally (2026-09-24 §8.1,
// Agent Identity §4.4): an origin that parsing and serialization
// reproduce, HTTPS or, for a loopback development host, HTTP. Whether a
// loopback host is acceptable, and whether the origin is this host's, are
// the room's questions (RoomOptions).
func checkHostOrigin(host string) error {
	o, err := identity.ParseOrigin(host, &identity.OriginOptions{AllowLoopbackHTTP: true})
	if err != nil {
		return identity.Wrap(identity.CodeInvalidEvent, "room.create host", err)
	}
	if o.String() != host {
		return identity.Errorf(identity.CodeInvalidEvent, "room.create host %q is not a serialized origin (%s)", clip(host), o)
	}
	return nil
}

// checkEmbeddedRequest verifies the signed room.join.request a review
// embeds (2026-09-24 §10): Agent Identity hash, signature and closed
// shape, historically — without the live window or nonce — and the
// request's own shape. The embedded envelope's failure keeps its code.
func checkEmbeddedRequest(d Draft, p *SignedJoinReview) error {
	if p.Request == nil {
		return invalid("room.join.review carries no request")
	}
	if err := p.Request.Verify(); err != nil {
		return recode(err, "room.join.review request")
	}
	ev, err := ParseEventIn(d, p.Request)
	if err != nil {
		return recode(err, "room.join.review request")
	}
	if ev.Type != TypeRoomJoinRequest {
		return identity.Errorf(identity.CodeInvalidEvent, "room.join.review request is a %s, not a room.join.request", clip(ev.Type))
	}
	if _, err := checkBuiltinPayload(d, TypeRoomJoinRequest, ev.Payload); err != nil {
		return recode(err, "room.join.review request")
	}
	return nil
}

// recode prefixes an *identity.Error's message, keeping its code.
func recode(err error, context string) error {
	var ie *identity.Error
	if errors.As(err, &ie) {
		out := *ie
		out.Message = context + ": " + out.Message
		out.Err = err
		return &out
	}
	return identity.Wrap(identity.CodeInvalidEvent, context, err)
}

func invalid(msg string) error { return identity.NewError(identity.CodeInvalidEvent, msg) }
