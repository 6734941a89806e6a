package adp

import "github.com/agentprotocols/go-sdk/packs"

// payloadLimit is the §21 payload limit for an event of a type with
// definition def (nil for built-in types): the host limit, or for a type
// with a max_payload_hint that hint clamped to the host's hinted ceiling.
// The hint may lower the limit or raise it up to the ceiling; never past
// it (see RoomOptions.MaxHintedPayloadBytes).
func (r *Room) payloadLimit(def *packs.Definition) int64 {
	limit, ceiling := int64(r.opts.MaxPayloadBytes), int64(r.opts.MaxHintedPayloadBytes)
	if limit <= 0 {
		limit = MaxPayloadBytes
		if ceiling <= 0 {
			ceiling = MaxHintedPayloadBytes
		}
	}
	ceiling = max(ceiling, limit)
	if def != nil && def.MaxPayloadHint > 0 {
		return min(def.MaxPayloadHint, ceiling)
	}
	return limit
}
