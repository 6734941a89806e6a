package adp

import (
	"slices"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/packs"
)

// Payload types of the built-in events. They marshal with json v2
// (github.com/go-json-experiment/json): optional members are omitted when
// zero, while an explicitly empty, non-nil slice is sent as [] — which
// matters for room.update, where [] clears a field.

// RoomCreate is the room.create payload (seed §9.1, 2026-09-24 §8.1).
type RoomCreate struct {
	// Host is the origin of the host API the room is created on
	// (2026-09-24 only, where it is required; the seed has no such
	// member).
	Host       string              `json:"host,omitzero"`
	Topic      string              `json:"topic"`
	Agenda     string              `json:"agenda,omitzero"`
	Guidance   string              `json:"guidance,omitzero"`
	Visibility Visibility          `json:"visibility"`
	StartTime  int64               `json:"start_time"` // Unix ms
	EndTime    int64               `json:"end_time"`   // Unix ms
	Tags       []string            `json:"tags,omitzero"`
	Language   string              `json:"language,omitzero"`
	Policy     *Policy             `json:"policy,omitzero"`
	Types      []packs.Declaration `json:"types,omitzero"`
	Extra      jsontext.Value      `json:"extra,omitzero"`
}

// Policy is the room policy (seed §9.3, 2026-09-24 §8.3). Each draft's
// kernel schema admits its own members: ModeratorAgentIDs in the seed,
// Invites and OpenRoles in the 2026-09-24 draft.
type Policy struct {
	// ModeratorAgentIDs may join as moderator without a join request
	// (seed only).
	ModeratorAgentIDs []identity.AgentID `json:"moderator_agent_ids,omitzero"`
	// Invites maps Agent IDs to the role each may take by direct
	// room.join, in any visibility (2026-09-24 only).
	Invites map[identity.AgentID]Role `json:"invites,omitzero"`
	// OpenRoles are the roles any agent may take by direct room.join
	// (2026-09-24 only). nil means the default (see EffectiveOpenRoles);
	// an empty, non-nil slice is sent as [] and opens no role.
	OpenRoles []Role `json:"open_roles,omitzero"`
	// MaxSpeakers caps members holding a speaking role; 0 means no cap.
	MaxSpeakers int64 `json:"max_speakers,omitzero"`
	// ObserverAllowed is nil for the default, true.
	ObserverAllowed *bool          `json:"observer_allowed,omitzero"`
	Extra           jsontext.Value `json:"extra,omitzero"`
}

// observersAllowed applies the default of §9.3.
func (p *Policy) observersAllowed() bool {
	return p == nil || p.ObserverAllowed == nil || *p.ObserverAllowed
}

// EffectiveOpenRoles returns the roles any agent may take by direct
// room.join in a room of visibility v under policy p (2026-09-24 §8.3):
// OpenRoles when the policy lists them, else observer in a public room
// that allows observers, else none.
func (p *Policy) EffectiveOpenRoles(v Visibility) []Role {
	switch {
	case p != nil && p.OpenRoles != nil:
		return slices.Clone(p.OpenRoles)
	case v == VisibilityPublic && p.observersAllowed():
		return []Role{RoleObserver}
	}
	return []Role{}
}

// RoomUpdate is the room.update payload (§9.4). A nil field is left
// unchanged; a present one replaces the current value, and an empty value
// ("", an empty non-nil slice, an empty Policy) clears it.
type RoomUpdate struct {
	Topic     *string  `json:"topic,omitzero"`
	Agenda    *string  `json:"agenda,omitzero"`
	Guidance  *string  `json:"guidance,omitzero"`
	Tags      []string `json:"tags,omitzero"`
	Language  *string  `json:"language,omitzero"`
	Policy    *Policy  `json:"policy,omitzero"`
	StartTime *int64   `json:"start_time,omitzero"`
	EndTime   *int64   `json:"end_time,omitzero"`
}

// Join is the room.join payload (§10.2). A public-room join names a role
// and may declare a perspective; a join into a restricted or private room
// names the approved join request instead of a perspective.
type Join struct {
	Role        Role    `json:"role"`
	RequestID   string  `json:"request_id,omitzero"`
	Perspective *string `json:"perspective,omitzero"`
}

// JoinRequest is the immutable join-request object (§11), carried inside a
// room.join.review so the log proves what was reviewed.
type JoinRequest struct {
	ID          string           `json:"id"`
	RoomID      string           `json:"room_id"`
	Applicant   identity.AgentID `json:"applicant"`
	Role        Role             `json:"role"`
	Perspective *string          `json:"perspective,omitzero"`
	Reason      *string          `json:"reason,omitzero"`
	CreatedAt   int64            `json:"created_at"`
	ExpiresAt   int64            `json:"expires_at"`
	Extra       jsontext.Value   `json:"extra,omitzero"`
}

// JoinRequestPayload is the payload of a room.join.request (2026-09-24
// §10): the role asked for, and optionally a perspective, a reason and
// opaque data. The event carries room_id and no base.
type JoinRequestPayload struct {
	Role        Role           `json:"role"`
	Perspective *string        `json:"perspective,omitzero"`
	Reason      *string        `json:"reason,omitzero"`
	Extra       jsontext.Value `json:"extra,omitzero"`
}

// SignedJoinReview is the room.join.review payload of the 2026-09-24 draft
// (§10): it embeds the applicant's signed room.join.request, which the log
// and the archive then verify without any external resource. An approval
// makes the applicant a member with Role and the request's perspective.
type SignedJoinReview struct {
	Request  *envelope.Envelope `json:"request"`
	Decision Decision           `json:"decision"`
	Role     Role               `json:"role,omitzero"` // required to approve
	Reason   string             `json:"reason,omitzero"`
	Extra    jsontext.Value     `json:"extra,omitzero"`
}

// Decision is a join-review outcome.
type Decision string

// The two review decisions.
const (
	DecisionApprove Decision = "approve"
	DecisionReject  Decision = "reject"
)

// JoinReview is the room.join.review payload of the seed draft (§11); see
// [SignedJoinReview] for the 2026-09-24 draft's.
type JoinReview struct {
	Request  JoinRequest    `json:"request"`
	Decision Decision       `json:"decision"`
	Role     Role           `json:"role,omitzero"` // required to approve
	Reason   string         `json:"reason,omitzero"`
	Extra    jsontext.Value `json:"extra,omitzero"`
}

// Notice is the payload of room.leave, room.close and room.cancel: an
// optional reason and the events that support it.
type Notice struct {
	Reason     string          `json:"reason,omitzero"`
	References []envelope.Hash `json:"references,omitzero"`
	Extra      jsontext.Value  `json:"extra,omitzero"`
}

// RoleUpdate is the room.member.role.update payload (§10.4).
type RoleUpdate struct {
	Member identity.AgentID `json:"member"`
	Role   Role             `json:"role"`
	Reason string           `json:"reason,omitzero"`
	Extra  jsontext.Value   `json:"extra,omitzero"`
}

// MemberRemove is the room.member.remove payload (§10.5).
type MemberRemove struct {
	Member     identity.AgentID `json:"member"`
	Ban        bool             `json:"ban,omitzero"`
	Reason     string           `json:"reason,omitzero"`
	References []envelope.Hash  `json:"references,omitzero"`
	Extra      jsontext.Value   `json:"extra,omitzero"`
}

// Message is the message.create payload (§12). Content is a JSON string or
// object matching ContentType; see TextContent.
type Message struct {
	ContentType string          `json:"content_type"`
	Content     jsontext.Value  `json:"content"`
	References  []envelope.Hash `json:"references,omitzero"`
	Extra       jsontext.Value  `json:"extra,omitzero"`
}

// TextContent returns s as a JSON string, for Message.Content.
func TextContent(s string) jsontext.Value {
	b, _ := jsontext.AppendQuote(nil, s)
	return b
}
