package adp

import (
	"strconv"

	"github.com/go-json-experiment/json"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/packs"
)

// Draft is the dated draft of ADP 1.0 a room, a record or an archive
// follows: [Draft20260704] (the seed, the default; the zero Draft means
// it) or [Draft20260924]. It is [packs.Draft]; see there for the parts of
// the type system that differ.
//
// Both drafts use the protocol value "agent-discourse/1.0", so nothing in
// an event says which one it follows: a host serves the draft it is
// configured for ([RoomOptions.Draft]), and a verifier takes the draft
// from its configuration or an archive manifest. Every rule below that
// differs between the drafts is read from one table, draftTable, whose
// rows are the drafts; the rule table in rules.go marks each place that
// consults it.
type Draft = packs.Draft

// The drafts; see [packs.Draft20260704] and [packs.Draft20260924].
const (
	Draft20260704 = packs.Draft20260704
	Draft20260924 = packs.Draft20260924
	// DefaultDraft is the draft the zero Draft stands for.
	DefaultDraft = packs.DefaultDraft
)

// ParseDraft reads a draft's date, "2026-07-04" or "2026-09-24".
func ParseDraft(s string) (Draft, error) { return packs.ParseDraft(s) }

// Class is an event type's freshness class: how a host checks the event's
// base_seq/base_hash and whether the record moves the room head (2026-09-24
// §5.1; seed §6.1 and §13.2).
//
// The 2026-09-24 draft defines the five classes. The seed's rules fit
// them too: room.create is genesis, its lifecycle types (room.update,
// room.close, room.cancel) are contract, type.define is control,
// membership events are signal, message.create is message, and custom
// types take their kind; only the base rule per class differs (see
// [Class.Rule]).
type Class string

// The five freshness classes.
const (
	ClassGenesis  Class = "genesis"
	ClassContract Class = "contract"
	ClassControl  Class = "control"
	ClassMessage  Class = "message"
	ClassSignal   Class = "signal"
)

// BaseRule is how a draft checks the base of one class of write.
type BaseRule uint8

// The base rules.
const (
	// BaseNone: the write carries no base (room.create).
	BaseNone BaseRule = iota
	// BaseAnchored: base_seq/base_hash name an accepted record, else
	// base_record_mismatch.
	BaseAnchored
	// BaseAtHead: the base is the current room head exactly, else
	// room_head_mismatch (seed §6.1: every write but signals).
	BaseAtHead
	// BaseAtOrAfterHead: anchored (base_record_mismatch), and base_seq not
	// before the head's seq (room_head_mismatch), atomically with
	// acceptance (2026-09-24 §5.1: message and control writes).
	BaseAtOrAfterHead
)

// Freshness is one draft's rule for one class: how the base is checked,
// and whether an accepted record of the class becomes the room head.
type Freshness struct {
	Base     BaseRule
	Advances bool
}

// draftRules are the rules of the room state machine that differ between
// drafts, one field per difference, each naming the sections of both
// texts. draftTable has a row per draft.
type draftRules struct {
	// timeField is the record's acceptance-time member: received_at (seed
	// §15), accepted_at (2026-09-24 §14). It is part of the record hash.
	timeField string
	// typeDefineClass is type.define's freshness class: control in the
	// seed (§13.2), contract in the 2026-09-24 draft (§12.2). The other
	// built-in types have one class in both (builtinClass).
	typeDefineClass Class
	// freshness is the base rule and head advance per class (seed §6.1:
	// exact head for every class but signal; 2026-09-24 §5.1).
	freshness map[Class]Freshness
	// redaction: records may carry a redacted envelope (2026-09-24 §14.1).
	redaction bool
	// signedJoin: joining past open roles and invitations is a signed
	// room.join.request the host holds, embedded in the room.join.review
	// that itself makes the applicant a member (2026-09-24 §10); the seed
	// has HTTP join requests and a room.join naming request_id (§11).
	signedJoin bool
	// policyJoin: direct room.join is governed by policy.open_roles and
	// policy.invites in every visibility (2026-09-24 §9.2); the seed lets
	// anyone join a public room and moderators listed in
	// moderator_agent_ids (§10.2).
	policyJoin bool
	// hostBound: room.create names the host it is created on, and a host
	// refuses another with host_mismatch (2026-09-24 §8.1).
	hostBound bool
	// creatorStays: the creator cannot leave (2026-09-24 §9.3).
	creatorStays bool
	// endedCode is the code for a write to an ended room: room_ended
	// (seed §20); room_not_active in the 2026-09-24 draft, which has no
	// room_ended (§19).
	endedCode identity.Code
}

// builtinClass is the freshness class of the built-in types that can be
// records and have one class in every draft (seed §13.2 categories;
// 2026-09-24 §12.2); type.define's is per draft.
var builtinClass = map[string]Class{
	TypeRoomCreate: ClassGenesis,
	TypeRoomUpdate: ClassContract, TypeRoomClose: ClassContract, TypeRoomCancel: ClassContract,
	TypeRoomJoin: ClassSignal, TypeRoomJoinReview: ClassSignal, TypeRoomLeave: ClassSignal,
	TypeMemberRoleUpdate: ClassSignal, TypeMemberRemove: ClassSignal,
	TypeMessageCreate: ClassMessage,
}

var draftTable = [...]draftRules{
	Draft20260704: {
		timeField:       "received_at",
		typeDefineClass: ClassControl,
		freshness: map[Class]Freshness{
			ClassGenesis:  {BaseNone, true},
			ClassContract: {BaseAtHead, true},
			ClassControl:  {BaseAtHead, true},
			ClassMessage:  {BaseAtHead, true},
			ClassSignal:   {BaseAnchored, false},
		},
		endedCode: CodeRoomEnded,
	},
	Draft20260924: {
		timeField:       "accepted_at",
		typeDefineClass: ClassContract,
		freshness: map[Class]Freshness{
			ClassGenesis:  {BaseNone, true},
			ClassContract: {BaseAnchored, true},
			ClassControl:  {BaseAtOrAfterHead, true},
			ClassMessage:  {BaseAtOrAfterHead, false},
			ClassSignal:   {BaseAnchored, false},
		},
		redaction:    true,
		signedJoin:   true,
		policyJoin:   true,
		hostBound:    true,
		creatorStays: true,
		endedCode:    CodeRoomNotActive,
	},
}

// rulesOf returns d's row of draftTable.
func rulesOf(d Draft) *draftRules {
	d = d.OrDefault()
	if !d.Known() {
		panic("adp: unknown ADP draft " + strconv.Itoa(int(d)))
	}
	return &draftTable[d]
}

// ClassOf returns the freshness class of event type typ in draft d: the
// built-in table's, or for a custom type its kind (def, the definition in
// force; nil when typ is built in). It reports false for a built-in type
// that is never a record (room.join.request) and for a custom type
// without a definition.
func ClassOf(d Draft, typ string, def *packs.Definition) (Class, bool) {
	return classOf(d, typ, d.IsBuiltin(typ), def)
}

// classOf is ClassOf with whether typ is built in already known.
func classOf(d Draft, typ string, builtin bool, def *packs.Definition) (Class, bool) {
	if builtin {
		if typ == TypeTypeDefine {
			return rulesOf(d).typeDefineClass, true
		}
		c, ok := builtinClass[typ]
		return c, ok
	}
	if def == nil {
		return "", false
	}
	return Class(def.Kind), true
}

// Rule returns the draft's freshness rule for the class; the zero
// Freshness for a class the draft does not know.
func (c Class) Rule(d Draft) Freshness { return rulesOf(d).freshness[c] }

// NextBase returns the base a new write of class c should carry in a room
// whose head and latest record are head and latest (the helper behind
// [Room.BaseFor]): the head for a class that must be based exactly on it
// (the seed's contract, control and message writes), otherwise the latest
// record, the freshest view of the room, which every other rule admits
// (any accepted record for contract and signal writes, the head or later
// for message and control writes). A room.create carries no base.
func NextBase(d Draft, c Class, roomID string, head, latest RecordRef) Base {
	switch c.Rule(d).Base {
	case BaseNone:
		return Base{Draft: d}
	case BaseAtHead:
		return Base{RoomID: roomID, Seq: head.Seq, Hash: head.Hash, Draft: d}
	}
	return Base{RoomID: roomID, Seq: latest.Seq, Hash: latest.Hash, Draft: d}
}

// CheckBase applies the draft's freshness rule for class c to a write based
// on baseSeq/baseHash (seed §6.1, 2026-09-24 §5.1): anchored reports
// whether the base names an accepted record of the room, head is the
// current room head. It returns nil, base_record_mismatch, or
// room_head_mismatch carrying the §5.1 data (events_url when eventsURL,
// the room URL, is not empty).
func CheckBase(d Draft, c Class, baseSeq int64, baseHash envelope.Hash, anchored bool, head RecordRef, roomURL string) error {
	if _, ok := rulesOf(d).freshness[c]; !ok {
		return identity.Errorf(identity.CodeInvalidEvent, "no freshness rule for class %q in the %s draft", clip(string(c)), d.OrDefault())
	}
	return checkBaseRule(c.Rule(d).Base, baseSeq, baseHash, anchored, head, roomURL)
}

// checkBaseRule is CheckBase for one base rule.
func checkBaseRule(rule BaseRule, baseSeq int64, baseHash envelope.Hash, anchored bool, head RecordRef, roomURL string) error {
	switch rule {
	case BaseNone:
		return nil
	case BaseAnchored:
		if !anchored {
			return baseMismatch(baseSeq, baseHash)
		}
		return nil
	case BaseAtHead:
		if baseSeq == head.Seq && baseHash == head.Hash {
			return nil
		}
		return headMismatchError(baseSeq, baseHash, head, roomURL, "is not the room head")
	case BaseAtOrAfterHead:
		if !anchored {
			return baseMismatch(baseSeq, baseHash)
		}
		if baseSeq < head.Seq {
			return headMismatchError(baseSeq, baseHash, head, roomURL, "is before the room head")
		}
		return nil
	}
	return nil
}

func baseMismatch(seq int64, hash envelope.Hash) error {
	return identity.Errorf(CodeBaseRecordMismatch, "base_seq %d / base_hash %s is not an accepted record of this room", seq, hash)
}

// headMismatchError is room_head_mismatch with the data §6.1 (seed) and §5.1
// (2026-09-24) describe.
func headMismatchError(baseSeq int64, baseHash envelope.Hash, head RecordRef, roomURL, what string) error {
	data := struct {
		BaseSeq     int64         `json:"base_seq"`
		BaseHash    envelope.Hash `json:"base_hash"`
		CurrentSeq  int64         `json:"current_seq"`
		CurrentHash envelope.Hash `json:"current_hash"`
		EventsURL   string        `json:"events_url,omitzero"`
	}{baseSeq, baseHash, head.Seq, head.Hash, ""}
	if roomURL != "" {
		data.EventsURL = roomURL + "/events?after_seq=" + strconv.FormatInt(baseSeq, 10)
	}
	raw, _ := json.Marshal(data, json.Deterministic(true))
	return &identity.Error{
		Code:    CodeRoomHeadMismatch,
		Message: "base_seq " + strconv.FormatInt(baseSeq, 10) + " " + what + " " + strconv.FormatInt(head.Seq, 10),
		Data:    raw,
	}
}
