package adp

import (
	"slices"

	"github.com/agentprotocols/go-sdk/internal/untrusted"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

// Event is the ADP view of a parsed envelope: the Identity event plus the
// room fields of §6, decoded and checked for shape.
type Event struct {
	envelope.Event
	// Hash is the event hash (event ID).
	Hash envelope.Hash
	// RoomID, BaseSeq and BaseHash are zero on room.create.
	RoomID   string
	BaseSeq  int64
	BaseHash envelope.Hash
	// Mentions is the top-level attention list (nil when absent).
	Mentions []identity.AgentID

	env   *envelope.Envelope // the envelope parsed, for its canonical form
	draft Draft              // the draft it was read in

	// The typed payload of a built-in type, decoded by the first call of
	// Builtin (or the room's rule table), and the error it found.
	typed    any
	typedErr error
	decoded  bool
}

// Builtin returns the typed payload of a built-in event in the draft the
// event was read in (*RoomCreate, *Join, *JoinReview, *RoleUpdate,
// *MemberRemove, …; the types [Room] judges), checked against its kernel
// schema and the payload rules that need no room state. It is decoded
// once: later calls, and a [Room] judging the event with
// [Room.Prepare], reuse the result, so a host's own policy reads the
// payload the rule table reads. A type the draft does not build in
// returns nil, nil.
//
// The result is shared: do not modify it. An Event is one goroutine's
// until its first Builtin call returns.
func (e *Event) Builtin() (any, error) {
	if !e.decoded {
		if e.draft.OrDefault().IsBuiltin(e.Type) {
			e.typed, e.typedErr = checkBuiltinPayload(e.draft, e.Type, e.Payload)
		}
		e.decoded = true
	}
	return e.typed, e.typedErr
}

// canonicalPayload is the payload's RFC 8785 form, taken from the
// envelope's canonical event when the Event came from ParseEvent.
func (e *Event) canonicalPayload() []byte {
	if e.env != nil {
		return e.env.CanonicalPayload()
	}
	canon, err := strictjson.Canonicalize(e.Payload)
	if err != nil {
		return e.Payload // not reached for a parsed payload
	}
	return canon
}

// ParseEvent checks the ADP shape of an envelope's event (§6): the protocol
// is agent-discourse/1.0; room.create carries none of room_id, base_seq,
// base_hash and mentions; every other event carries the first three, with
// base_seq a positive safe integer and base_hash a canonical hash; mentions
// holds at most 32 distinct valid Agent IDs. Failures are invalid_event.
// It reads the event in the default draft; see [ParseEventIn].
//
// It does not verify the signature; see [envelope.Verify].
func ParseEvent(env *envelope.Envelope) (*Event, error) { return ParseEventIn(DefaultDraft, env) }

// ParseEventIn is [ParseEvent] in draft d. In the 2026-09-24 draft (§5) a
// room.join.request carries room_id and none of base_seq, base_hash and
// mentions.
func ParseEventIn(d Draft, env *envelope.Envelope) (*Event, error) {
	e := &Event{Event: env.Event(), Hash: env.Hash(), env: env, draft: d.OrDefault()}
	if e.Protocol != Protocol {
		return nil, identity.Errorf(identity.CodeInvalidEvent, "protocol %q is not %s", clip(e.Protocol), Protocol)
	}
	var seen uint8
	for _, f := range e.Ext {
		var err error
		switch f.Name {
		case FieldRoomID:
			seen |= 1
			e.RoomID, err = strictjson.String(f.Value)
			if err == nil && e.RoomID == "" {
				err = strictjson.ErrWrongKind
			}
		case FieldBaseSeq:
			seen |= 2
			e.BaseSeq, err = strictjson.Int(f.Value)
			if err == nil && e.BaseSeq < 1 {
				err = strictjson.ErrNegativeOrZero
			}
		case FieldBaseHash:
			seen |= 4
			e.BaseHash, err = jsonHash(f.Value)
		case FieldMentions:
			seen |= 8
			e.Mentions, err = parseMentions(f.Value)
		}
		if err != nil {
			return nil, identity.Wrap(identity.CodeInvalidEvent, "event."+f.Name, err)
		}
	}
	switch {
	case e.Type == TypeRoomCreate:
		if seen != 0 {
			return nil, identity.NewError(identity.CodeInvalidEvent, "room.create must not carry room_id, base_seq, base_hash or mentions")
		}
	case e.Type == TypeRoomJoinRequest && d.IsBuiltin(TypeRoomJoinRequest):
		// Its author may be unable to read the room (2026-09-24 §5).
		if seen != 1 {
			return nil, identity.NewError(identity.CodeInvalidEvent, "room.join.request must carry room_id and no base_seq, base_hash or mentions")
		}
	case seen&7 != 7:
		return nil, identity.Errorf(identity.CodeInvalidEvent, "%s must carry room_id, base_seq and base_hash", clip(e.Type))
	}
	return e, nil
}

// parseMentions decodes mentions: an array of at most MaxMentions distinct
// Agent IDs. The seed-era kernel schema's mentions carries uniqueItems, so
// a repeat is invalid_event like any other structural fault; the builders
// never produce one.
func parseMentions(v jsontext.Value) ([]identity.AgentID, error) {
	d := strictjson.NewDecoder(v)
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '[' {
		return nil, strictjson.ErrWrongKind
	}
	out := []identity.AgentID{}
	for d.PeekKind() != ']' {
		item, err := d.ReadValue()
		if err != nil {
			return nil, err
		}
		s, err := strictjson.String(item)
		if err != nil {
			return nil, err
		}
		id, err := identity.ParseAgentID(s)
		if err != nil {
			return nil, err
		}
		if len(out) == MaxMentions {
			return nil, identity.Errorf(identity.CodeInvalidEvent, "more than %d mentions", MaxMentions)
		}
		// At most 32 items: a linear scan beats a map.
		if slices.Contains(out, id) {
			return nil, identity.Errorf(identity.CodeInvalidEvent, "mentions[%d] repeats %s", len(out), id)
		}
		out = append(out, id)
	}
	return out, nil
}

// clip bounds untrusted text quoted in an error message.
func clip(s string) string { return untrusted.Clip(s, 64) }
