package adp

import (
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/packs"
)

// The error codes of §20 that ADP adds to the shared Identity codes.
const (
	CodeRoomNotFound            identity.Code = "room_not_found"
	CodeRoomNotActive           identity.Code = "room_not_active"
	CodeRoomEnded               identity.Code = "room_ended"
	CodeApprovalRequired        identity.Code = "approval_required"
	CodeJoinRequestNotFound     identity.Code = "join_request_not_found"
	CodeJoinRequestNotApproved  identity.Code = "join_request_not_approved"
	CodeJoinRequestRoleMismatch identity.Code = "join_request_role_mismatch"
	CodeJoinRequestExpired      identity.Code = "join_request_expired"
	CodeMemberBanned            identity.Code = "member_banned"
	CodeRoleNotAllowed          identity.Code = "role_not_allowed"
	CodeMaxSpeakersExceeded     identity.Code = "max_speakers_exceeded"
	CodeMembershipRequired      identity.Code = "membership_required"
	CodeRoomHeadMismatch        identity.Code = "room_head_mismatch"
	CodeBaseRecordMismatch      identity.Code = "base_record_mismatch"
	CodeAgentStatusNotFound     identity.Code = "agent_status_not_found"
	// CodeHostMismatch and CodeJoinRequestNotPending are codes of the
	// 2026-09-24 draft (§19): a room.create naming another host, and a
	// join request already reviewed, superseded or expired.
	CodeHostMismatch           identity.Code = "host_mismatch"
	CodeJoinRequestNotPending  identity.Code = "join_request_not_pending"
	CodeTypeConflict                         = packs.CodeTypeConflict
	CodeInvalidTypeSchema                    = packs.CodeInvalidTypeSchema
	CodeTypeNotDefined                       = packs.CodeTypeNotDefined
	CodeTypeDisabled                         = packs.CodeTypeDisabled
	CodePayloadSchemaViolation               = packs.CodePayloadSchemaViolation
	CodePackUnavailable                      = packs.CodePackUnavailable
)

// CodeInvalidRecord is not a protocol code: the SDK uses it for a server
// record whose shape, hash or chain link is wrong, which §15 and §19 require
// verifiers to reject but §20 gives no code for. It never appears in an
// error a host sends for a write.
const CodeInvalidRecord identity.Code = "invalid_record"

// Sentinels for errors.Is, one per §20 code. The shared Identity codes are
// re-exported so callers can test every ADP error against this package.
var (
	ErrRoomNotFound            = identity.NewError(CodeRoomNotFound, "room does not exist")
	ErrRoomNotActive           = identity.NewError(CodeRoomNotActive, "room does not accept this write in its current state")
	ErrRoomEnded               = identity.NewError(CodeRoomEnded, "room has ended")
	ErrApprovalRequired        = identity.NewError(CodeApprovalRequired, "room requires an approved join request")
	ErrJoinRequestNotFound     = identity.NewError(CodeJoinRequestNotFound, "join request does not exist or is not visible")
	ErrJoinRequestNotApproved  = identity.NewError(CodeJoinRequestNotApproved, "join request is not approved")
	ErrJoinRequestRoleMismatch = identity.NewError(CodeJoinRequestRoleMismatch, "join role differs from the approved role")
	ErrJoinRequestExpired      = identity.NewError(CodeJoinRequestExpired, "join request is no longer valid")
	ErrMemberBanned            = identity.NewError(CodeMemberBanned, "actor is banned from the room")
	ErrRoleNotAllowed          = identity.NewError(CodeRoleNotAllowed, "role is not allowed by the room policy")
	ErrMaxSpeakersExceeded     = identity.NewError(CodeMaxSpeakersExceeded, "room speaker limit would be exceeded")
	ErrMembershipRequired      = identity.NewError(CodeMembershipRequired, "room membership required")
	ErrRoomHeadMismatch        = identity.NewError(CodeRoomHeadMismatch, "base_seq/base_hash is not the current room head")
	ErrBaseRecordMismatch      = identity.NewError(CodeBaseRecordMismatch, "base_seq/base_hash does not name an accepted record of the room")
	ErrAgentStatusNotFound     = identity.NewError(CodeAgentStatusNotFound, "no current agent status")
	ErrHostMismatch            = identity.NewError(CodeHostMismatch, "room.create names another host")
	ErrJoinRequestNotPending   = identity.NewError(CodeJoinRequestNotPending, "join request was already reviewed, superseded, or has expired")
	ErrTypeConflict            = packs.ErrTypeConflict
	ErrInvalidTypeSchema       = packs.ErrInvalidTypeSchema
	ErrTypeNotDefined          = packs.ErrTypeNotDefined
	ErrTypeDisabled            = packs.ErrTypeDisabled
	ErrPayloadSchemaViolation  = packs.ErrPayloadSchemaViolation
	ErrPackUnavailable         = packs.ErrPackUnavailable
	ErrInvalidRecord           = identity.NewError(CodeInvalidRecord, "invalid server record")

	ErrInvalidEvent         = identity.ErrInvalidEvent
	ErrInvalidEventHash     = identity.ErrInvalidEventHash
	ErrInvalidSignature     = identity.ErrInvalidSignature
	ErrInvalidActor         = identity.ErrInvalidActor
	ErrTimestampOutOfWindow = identity.ErrTimestampOutOfWindow
	ErrNonceNotGreater      = identity.ErrNonceNotGreater
	ErrPermissionDenied     = identity.ErrPermissionDenied
	ErrInvalidToken         = identity.ErrInvalidToken
	ErrRateLimited          = identity.ErrRateLimited
	ErrPayloadTooLarge      = identity.ErrPayloadTooLarge
)

// DefaultStatus is the HTTP status a host sends with an ADP error code. It
// is [identity.DefaultStatus], the SDK's one mapping for every wire code, so
// [identity.WriteError] and a host calling this agree.
func DefaultStatus(code identity.Code) int { return identity.DefaultStatus(code) }
