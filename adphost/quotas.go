package adphost

import (
	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/packs"
)

// QuotaPolicy is the host's published quota policy (§21 "host SHOULD
// 公布配额策略"): the "quotas" member of its discovery document (§16.1),
// which the seed text leaves open to members it does not define (a
// client that does not know it ignores it; adp.Discovery keeps it in
// Extra). Rates are per agent per sliding minute; sizes are bytes;
// durations milliseconds. A limit the host does not apply is absent.
//
// The document states the limits this process enforces; a host may still
// refuse a write with rate_limited for reasons of its own (a busy room,
// Retry-After).
type QuotaPolicy struct {
	// Message, Signal and Control are the per-kind event quotas;
	// lifecycle writes count as control.
	Message int `json:"message_per_minute,omitzero"`
	Signal  int `json:"signal_per_minute,omitzero"`
	Control int `json:"control_per_minute,omitzero"`
	// MaxHinted caps a type's rate_hint and is the one ceiling all of an
	// agent's hinted events share.
	MaxHinted int `json:"hinted_per_minute,omitzero"`
	// JoinRequests and StatusWrites are the quotas of the two
	// JWT-authenticated writes.
	JoinRequests int `json:"join_requests_per_minute,omitzero"`
	StatusWrites int `json:"status_writes_per_minute,omitzero"`

	// MaxPayloadBytes bounds a payload; MaxHintedPayloadBytes is the
	// ceiling of a type's max_payload_hint.
	MaxPayloadBytes       int `json:"max_payload_bytes,omitzero"`
	MaxHintedPayloadBytes int `json:"max_hinted_payload_bytes,omitzero"`
	MaxMentions           int `json:"max_mentions,omitzero"`
	MaxSchemaBytes        int `json:"max_schema_bytes,omitzero"`
	MaxTypes              int `json:"max_types_per_room,omitzero"`

	// MinRoomDuration and MaxRoomDuration bound end_time − start_time.
	MinRoomDuration int64 `json:"min_room_duration_ms,omitzero"`
	MaxRoomDuration int64 `json:"max_room_duration_ms,omitzero"`
	// MaxSpeakers counts active moderators and speakers.
	MaxSpeakers  int `json:"max_speakers_per_room,omitzero"`
	MaxObservers int `json:"max_observers_per_room,omitzero"`
	// MaxPendingJoinRequests bounds a room's pending requests.
	MaxPendingJoinRequests int   `json:"max_pending_join_requests_per_room,omitzero"`
	JoinRequestTTL         int64 `json:"join_request_ttl_ms,omitzero"`
	MaxStatusTTL           int64 `json:"max_status_ttl_ms,omitzero"`

	// MaxEventsPage and MaxPageBytes bound one page of a list.
	MaxEventsPage int `json:"max_events_per_page,omitzero"`
	MaxPageBytes  int `json:"max_page_bytes,omitzero"`
	// Live streams open at once: per agent and room, per agent, in all.
	MaxStreamsPerRoom  int `json:"max_live_streams_per_agent_room,omitzero"`
	MaxStreamsPerAgent int `json:"max_live_streams_per_agent,omitzero"`
	MaxStreams         int `json:"max_live_streams,omitzero"`
}

// Quotas returns the policy the host enforces, as its discovery document
// publishes it.
func (h *Host) Quotas() QuotaPolicy {
	pos := func(n int) int { return max(n, 0) } // unlimited (negative) is absent
	payload, hinted := adp.MaxPayloadBytes, adp.MaxHintedPayloadBytes
	if h.roomOpts.MaxPayloadBytes > 0 {
		// adp.RoomOptions: a host's own payload limit is also the hinted
		// ceiling unless that is set too (adphost does not set it).
		payload, hinted = h.roomOpts.MaxPayloadBytes, h.roomOpts.MaxPayloadBytes
	}
	schema, types := packs.MaxSchemaBytes, packs.MaxDefinitions
	if p := h.roomOpts.Packs; p != nil {
		if p.MaxSchemaBytes > 0 {
			schema = p.MaxSchemaBytes
		}
		if p.MaxDefinitions > 0 {
			types = p.MaxDefinitions
		}
	}
	l := h.limits
	return QuotaPolicy{
		Message: pos(l.Message), Signal: pos(l.Signal), Control: pos(l.Control), MaxHinted: pos(l.MaxHinted),
		JoinRequests: pos(l.JoinRequests), StatusWrites: pos(l.StatusWrites),
		MaxPayloadBytes: payload, MaxHintedPayloadBytes: hinted, MaxMentions: adp.MaxMentions,
		MaxSchemaBytes: schema, MaxTypes: types,
		MinRoomDuration: h.roomLimits.minDuration.Milliseconds(), MaxRoomDuration: h.roomLimits.maxDuration.Milliseconds(),
		MaxSpeakers: h.roomLimits.speakers, MaxObservers: h.roomLimits.observers,
		MaxPendingJoinRequests: h.maxPending, JoinRequestTTL: h.jrTTL.Milliseconds(), MaxStatusTTL: h.statusTTL.Milliseconds(),
		MaxEventsPage: MaxEventsLimit, MaxPageBytes: h.pageBytes,
		MaxStreamsPerRoom: h.streams.perRoom, MaxStreamsPerAgent: h.streams.perAgent, MaxStreams: h.streams.total,
	}
}
