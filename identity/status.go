package identity

// defaultStatus is the one status table behind DefaultStatus. It names the
// codes that other packages define by their wire strings, because identity
// sits below them and cannot import them; a test over every code constant
// of identity, profile, packs and adp keeps the table complete. It is a
// literal, never filled by registration, so no result depends on which
// packages a program links.
var defaultStatus = map[Code]int{
	// Identity §8.
	CodeInvalidRequest:       400,
	CodeInvalidEvent:         400,
	CodeInvalidEventHash:     400,
	CodeInvalidSignature:     400,
	CodeInvalidActor:         400,
	CodeTimestampOutOfWindow: 400,
	CodeNonceNotGreater:      409,
	CodeInvalidToken:         401,
	CodePermissionDenied:     403,
	CodeNotFound:             404,
	CodeRateLimited:          429,
	CodePayloadTooLarge:      413,
	CodeInternalError:        500,
	CodeServiceUnavailable:   503,

	// Agent Profile: a local verdict on a service's answer, never sent by
	// a service; listed so the table is total.
	"invalid_response": 400,

	// Packs (ADP §20).
	"type_not_defined":         400,
	"type_disabled":            400,
	"payload_schema_violation": 400,
	"pack_unavailable":         400,
	// ADP 2026-09-24 draft §19: a declaration conflicting with the
	// registry, a schema outside the type schema profile.
	"type_conflict":       409,
	"invalid_type_schema": 400,
	// SDK-only: a schema this implementation cannot evaluate (RE2 lacks
	// ECMA-262 look-around); the request was understood, not processable.
	"schema_unsupported": 422,

	// ADP §20.
	"room_not_found":             404,
	"join_request_not_found":     404,
	"agent_status_not_found":     404,
	"room_head_mismatch":         409,
	"base_record_mismatch":       409,
	"room_not_active":            409,
	"room_ended":                 409,
	"member_banned":              403,
	"membership_required":        403,
	"approval_required":          403,
	"join_request_not_approved":  400,
	"join_request_role_mismatch": 400,
	"join_request_expired":       400,
	"role_not_allowed":           400,
	"max_speakers_exceeded":      400,
	// ADP 2026-09-24 draft §19: room.create names another host; the join
	// request was already reviewed, superseded or has expired.
	"host_mismatch":            400,
	"join_request_not_pending": 409,
	// A local verdict on a host's record, never sent by a host.
	"invalid_record": 400,
}
