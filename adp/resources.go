package adp

import (
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/packs"
)

// The HTTP shapes of §9, §11, §16–§18. The seed text gives examples, not
// schemas, for most of them; where it is silent the SDK's choice is said
// in the comment. They are the host's unsigned answers, which the client
// decodes strictly as JSON but openly as schemas (§6 keeps unknown members
// of service documents): a member the SDK does not know lands in Unknown.
// Records and envelopes inside them are parsed strictly. Client and
// reference host (adphost) share these types, so the two cannot drift
// apart.

// CreateResponse is the answer to POST /v1/rooms (§9): the room ID and the
// acceptance fields of the room.create record. PreHash is always null.
type CreateResponse struct {
	ID         string         `json:"id"`
	Status     Status         `json:"status"`
	URL        string         `json:"url"`
	Seq        int64          `json:"seq"`
	PreHash    *envelope.Hash `json:"pre_hash"`
	Hash       envelope.Hash  `json:"hash"`
	ReceivedAt int64          `json:"received_at"`
	// Unknown keeps the members the SDK does not know (§6: the host's
	// service documents stay open), for debugging.
	Unknown jsontext.Value `json:",embed"`
}

// RoomResource is GET /v1/rooms/{room_id} (§16): status, the current
// contract, the materialized type registry, the latest record's acceptance
// fields and the room head. The host asserts these values; a client that
// needs them verified replays the history.
type RoomResource struct {
	ID         string           `json:"id"`
	Status     Status           `json:"status"`
	URL        string           `json:"url"`
	Creator    identity.AgentID `json:"creator"`
	CreatedAt  int64            `json:"created_at"`
	Contract   `json:",inline"`
	Types      []*packs.Definition `json:"types"`
	Seq        int64               `json:"seq"`
	PreHash    *envelope.Hash      `json:"pre_hash"`
	Hash       envelope.Hash       `json:"hash"`
	ReceivedAt int64               `json:"received_at"`
	Head       RecordRef           `json:"head"`
	// Unknown keeps the members the SDK does not know (§6: the host's
	// service documents stay open), for debugging.
	Unknown jsontext.Value `json:",embed"`
}

// JoinRequestInput is the body of POST /v1/rooms/{room_id}/join-requests
// (§11). Role is required; the applicant is the request JWT's subject.
type JoinRequestInput struct {
	Role        Role           `json:"role"`
	Perspective *string        `json:"perspective,omitzero"`
	Reason      *string        `json:"reason,omitzero"`
	Extra       jsontext.Value `json:"extra,omitzero"`
}

// JoinRequestResource is a join request with its review state (§11): the
// immutable request object, which a room.join.review must carry verbatim,
// and the host's status. ReviewedBy is null for an auto-approval and
// while the request is pending.
type JoinRequestResource struct {
	Request      JoinRequest       `json:"request"`
	Status       JoinRequestStatus `json:"status"`
	ApprovedRole Role              `json:"approved_role,omitzero"`
	ReviewReason string            `json:"review_reason,omitzero"`
	ReviewedBy   *identity.AgentID `json:"reviewed_by"`
	ReviewedAt   int64             `json:"reviewed_at,omitzero"`
	// Signed and ReviewEventID are a 2026-09-24 request as a host keeps it
	// (§10): the applicant's signed room.join.request, whose event ID is
	// Request.ID, and the event ID of the review that decided it. A seed
	// request has neither. A host answers such a request in its draft's
	// shape, [SignedJoinRequestResource].
	Signed        *envelope.Envelope `json:"signed,omitzero"`
	ReviewEventID *envelope.Hash     `json:"review_event_id,omitzero"`
	// Unknown keeps the members the SDK does not know (§6: the host's
	// service documents stay open), for debugging.
	Unknown jsontext.Value `json:",embed"`
}

// SignedJoinRequestResource is a join request of the 2026-09-24 draft
// (§10), as POST …/join-requests answers and every join-request read
// returns it: its ID is the request's event ID, Request the applicant's
// signed room.join.request, and the review members are null until a
// room.join.review decides it.
type SignedJoinRequestResource struct {
	ID            envelope.Hash      `json:"id"`
	Request       *envelope.Envelope `json:"request"`
	Status        JoinRequestStatus  `json:"status"`
	ExpiresAt     int64              `json:"expires_at"`
	ReviewedBy    *identity.AgentID  `json:"reviewed_by"`
	ReviewedAt    *int64             `json:"reviewed_at"`
	ReviewEventID *envelope.Hash     `json:"review_event_id"`
	// Unknown keeps the members the SDK does not know (§6: the host's
	// service documents stay open), for debugging.
	Unknown jsontext.Value `json:",embed"`
}

// AgentStatusInput is the body of PUT /v1/rooms/{room_id}/agent-status
// (§17.4). State is required; the host clamps ExpiresAt to its TTL.
type AgentStatusInput struct {
	State     string         `json:"state"`
	Summary   string         `json:"summary,omitzero"`
	SeenSeq   int64          `json:"seen_seq,omitzero"`
	SeenHash  *envelope.Hash `json:"seen_hash,omitzero"`
	ClaimID   string         `json:"claim_id,omitzero"`
	Activity  string         `json:"activity,omitzero"`
	ExpiresAt int64          `json:"expires_at,omitzero"`
	Extra     jsontext.Value `json:"extra,omitzero"`
}

// AgentStatus is a stored, unsigned, short-lived status (§17.4). It is a
// collaboration hint: never a record, never evidence for permissions.
// UpdatedAt is the SDK's addition (the seed-era schema has it, the text
// does not define it). It is the data of a room.agent_status SSE item
// (§17.4) too, as sse.Follow delivers it.
type AgentStatus struct {
	RoomID    string           `json:"room_id"`
	AgentID   identity.AgentID `json:"agent_id"`
	State     string           `json:"state"`
	Summary   string           `json:"summary,omitzero"`
	SeenSeq   int64            `json:"seen_seq,omitzero"`
	SeenHash  *envelope.Hash   `json:"seen_hash,omitzero"`
	ClaimID   string           `json:"claim_id,omitzero"`
	Activity  string           `json:"activity,omitzero"`
	ExpiresAt int64            `json:"expires_at"`
	UpdatedAt int64            `json:"updated_at,omitzero"`
	Extra     jsontext.Value   `json:"extra,omitzero"`
	// Unknown keeps the members of the host's answer the SDK does not
	// know (§6: service documents stay open), for debugging.
	Unknown jsontext.Value `json:",embed"`
}

// AgentStatusList is GET /v1/rooms/{room_id}/agent-status: every current
// status, at most one per agent (seed-era schema agentStatusListResponse).
type AgentStatusList struct {
	Statuses []AgentStatus `json:"statuses"`
	// Unknown keeps the members the SDK does not know (§6: the host's
	// service documents stay open), for debugging.
	Unknown jsontext.Value `json:",embed"`
}

// AgentStatusResponse is GET /v1/rooms/{room_id}/agent-status/{agent_id}
// and the answer to a PUT.
type AgentStatusResponse struct {
	Status AgentStatus `json:"status"`
	// Unknown keeps the members the SDK does not know (§6: the host's
	// service documents stay open), for debugging.
	Unknown jsontext.Value `json:",embed"`
}

// RoomSummary is one room in GET /v1/rooms/public and GET /v1/me/rooms
// (§16, §18; the text leaves the shape open). LastActivity is the latest
// record's received_at. Role and MemberStatus are set only in /v1/me/rooms
// (MemberStatus "pending" for a pending join request, with RequestID).
type RoomSummary struct {
	ID           string           `json:"id"`
	Status       Status           `json:"status"`
	URL          string           `json:"url"`
	Creator      identity.AgentID `json:"creator"`
	Topic        string           `json:"topic"`
	Visibility   Visibility       `json:"visibility"`
	StartTime    int64            `json:"start_time"`
	EndTime      int64            `json:"end_time"`
	Tags         []string         `json:"tags,omitzero"`
	Language     string           `json:"language,omitzero"`
	Seq          int64            `json:"seq"`
	LastActivity int64            `json:"last_activity"`
	Members      int              `json:"members"`
	Role         Role             `json:"role,omitzero"`
	MemberStatus string           `json:"member_status,omitzero"`
	RequestID    string           `json:"request_id,omitzero"`
	// Unknown keeps the members the SDK does not know (§6: the host's
	// service documents stay open), for debugging.
	Unknown jsontext.Value `json:",embed"`
}

// The SSE event names of §17 and the feature names of §16.1.
const (
	SSERoomEvent       = "room.event"
	SSEAgentStatus     = "room.agent_status"
	SSEJoinRequest     = "room.join_request"
	DiscoveryPathADP   = "/.well-known/agent-discourse"
	FeatureRooms       = "rooms"
	FeatureRestricted  = "restricted-rooms"
	FeaturePrivate     = "private-rooms"
	FeatureJoinRequest = "join-requests"
	FeatureJoinReview  = "join-review"
	FeatureSSE         = "sse-event-stream"
	FeatureAgentStatus = "agent-status"
	FeatureArchives    = "archives"
	FeatureRegistered  = "registered-packs"
	FeatureExternal    = "external-packs"
)

// JoinRequestNotice is the data of a room.join_request SSE item (§17.5),
// sent to subscribed creators and moderators: a hint that a request was
// created, not a record; the authoritative list stays GET
// /v1/rooms/{room_id}/join-requests. The host sends it, sse.Follow
// delivers it. Unknown keeps members the SDK does not know.
type JoinRequestNotice struct {
	RoomID    string           `json:"room_id"`
	RequestID string           `json:"request_id"`
	Applicant identity.AgentID `json:"applicant"`
	Role      Role             `json:"role"`
	CreatedAt int64            `json:"created_at"`
	ExpiresAt int64            `json:"expires_at"`
	Unknown   jsontext.Value   `json:",embed"`
}

// HeadMismatch is the data of a room_head_mismatch error (§16): the base
// the write named, the current head, and where to catch up.
type HeadMismatch struct {
	BaseSeq     int64         `json:"base_seq"`
	BaseHash    envelope.Hash `json:"base_hash"`
	CurrentSeq  int64         `json:"current_seq"`
	CurrentHash envelope.Hash `json:"current_hash"`
	EventsURL   string        `json:"events_url,omitzero"`
}
