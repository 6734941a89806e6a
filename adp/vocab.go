package adp

import (
	"slices"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/packs"
)

// Protocol is the event "protocol" value of ADP 1.0. Its closed field set
// is [envelope.DiscourseProtocol], the one table [envelope.Parse] applies.
const Protocol = envelope.DiscourseName

// The top-level event fields ADP adds to the Identity event object (§6).
const (
	FieldRoomID   = "room_id"
	FieldBaseSeq  = "base_seq"
	FieldBaseHash = "base_hash"
	FieldMentions = "mentions"
)

// MaxMentions is the most Agent IDs an event's mentions may list (§6, §21).
const MaxMentions = 32

// The built-in event types: the seed's eleven (§13.2), and
// room.join.request, the twelfth of the 2026-09-24 draft (§12.2), which is
// never a record. [packs.Draft.BuiltinTypes] lists a draft's.
const (
	TypeRoomCreate       = "room.create"
	TypeRoomUpdate       = "room.update"
	TypeRoomJoin         = "room.join"
	TypeRoomJoinReview   = "room.join.review"
	TypeRoomLeave        = "room.leave"
	TypeMemberRoleUpdate = "room.member.role.update"
	TypeMemberRemove     = "room.member.remove"
	TypeRoomClose        = "room.close"
	TypeRoomCancel       = "room.cancel"
	TypeTypeDefine       = "type.define"
	TypeMessageCreate    = "message.create"
	TypeRoomJoinRequest  = "room.join.request"
)

// Category is the class of a built-in type in the §13.2 table. For custom
// types the category is their kind.
type Category string

// The four categories of §13.2.
const (
	CategoryLifecycle Category = "lifecycle"
	CategorySignal    Category = "signal"
	CategoryControl   Category = "control"
	CategoryMessage   Category = "message"
)

// BuiltinCategory returns the §13.2 category of a built-in type, or "" for
// any other type.
func BuiltinCategory(typ string) Category {
	switch typ {
	case TypeRoomCreate, TypeRoomUpdate, TypeRoomClose, TypeRoomCancel:
		return CategoryLifecycle
	case TypeRoomJoin, TypeRoomJoinReview, TypeRoomLeave, TypeMemberRoleUpdate, TypeMemberRemove:
		return CategorySignal
	case TypeTypeDefine:
		return CategoryControl
	case TypeMessageCreate:
		return CategoryMessage
	}
	return ""
}

// builtinTypes lists the built-in types in §13.2 table order.
var builtinTypes = [...]string{
	TypeRoomCreate, TypeRoomUpdate, TypeRoomJoin, TypeRoomJoinReview, TypeRoomLeave,
	TypeMemberRoleUpdate, TypeMemberRemove, TypeRoomClose, TypeRoomCancel,
	TypeTypeDefine, TypeMessageCreate,
}

// BuiltinTypes returns the eleven built-in types of the default draft in
// §13.2 table order; [packs.Draft.BuiltinTypes] gives any draft's. Adding one is
// a checklist; see the package documentation.
func BuiltinTypes() []string { return slices.Clone(builtinTypes[:]) }

// IsBuiltin reports whether typ is one of the default draft's eleven
// built-in types; [packs.Draft.IsBuiltin] answers for any draft.
func IsBuiltin(typ string) bool { return BuiltinCategory(typ) != "" }

// Kind is an event type's permission class; see [packs.Kind].
type Kind = packs.Kind

// The three kinds (§13.1).
const (
	KindMessage = packs.KindMessage
	KindSignal  = packs.KindSignal
	KindControl = packs.KindControl
)

// Role is a member's participation role; see [packs.Role].
type Role = packs.Role

// The three roles (§10.1).
const (
	RoleModerator = packs.RoleModerator
	RoleSpeaker   = packs.RoleSpeaker
	RoleObserver  = packs.RoleObserver
)

// speaking reports whether a role counts toward max_speakers: the roles
// that may send discussion content.
func speaking(r Role) bool { return r == RoleModerator || r == RoleSpeaker }

// Status is a room's lifecycle state (§8).
type Status string

// The four room states.
const (
	StatusScheduled Status = "scheduled"
	StatusActive    Status = "active"
	StatusEnded     Status = "ended"
	StatusCancelled Status = "cancelled"
)

// Visibility controls discovery and joining (seed §9.2); in the
// 2026-09-24 draft it controls discovery and reading only, and the policy
// controls joining (§8.2).
type Visibility string

// The three visibilities.
const (
	VisibilityPublic     Visibility = "public"
	VisibilityRestricted Visibility = "restricted"
	VisibilityPrivate    Visibility = "private"
)

// MemberStatus is a member's standing in the room.
type MemberStatus string

// Member states. A removed member with ban: true is Banned.
const (
	MemberActive  MemberStatus = "active"
	MemberLeft    MemberStatus = "left"
	MemberRemoved MemberStatus = "removed"
	MemberBanned  MemberStatus = "banned"
)

// Default limits of §21 that the replayer enforces. They are the SDK
// host's defaults; RoomOptions sets a room's own.
const (
	// MaxPayloadBytes is the default payload limit (64 KiB).
	MaxPayloadBytes = 64 << 10
	// MaxHintedPayloadBytes is the default ceiling for types with a
	// max_payload_hint (256 KiB): a hint adjusts the limit up to it.
	MaxHintedPayloadBytes = 256 << 10
)
