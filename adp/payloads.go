package adp

import (
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/packs"
)

// Payload types of the built-in events. They marshal with json v2
// (github.com/go-json-experiment/json): optional members are omitted when
// zero, while an explicitly empty, non-nil slice is sent as [] — which
// matters for room.update, where [] clears a field.

// RoomCreate is the room.create payload (§9.1).
type RoomCreate struct {
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

// Policy is the room policy (§9.3).
type Policy struct {
	// ModeratorAgentIDs may join as moderator without a join request.
	ModeratorAgentIDs []identity.AgentID `json:"moderator_agent_ids,omitzero"`
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

// Decision is a join-review outcome.
type Decision string

// The two review decisions.
const (
	DecisionApprove Decision = "approve"
	DecisionReject  Decision = "reject"
)

// JoinReview is the room.join.review payload (§11).
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
