package engine

import (
	"context"

	"github.com/agentprotocols/go-sdk/envelope"
)

func parseHash(s string) (envelope.Hash, error) { return envelope.ParseHash(s) }

// SendMessage is agent_protocols_room_send_message (signs and submits).
func (e *Engine) SendMessage(ctx context.Context, session string, in SendMessageInput) (*WriteResult, error) {
	return nil, ErrNotImplemented
}

// SubmitEvent is agent_protocols_room_submit_event (signs and submits).
func (e *Engine) SubmitEvent(ctx context.Context, session string, in SubmitEventInput) (*WriteResult, error) {
	return nil, ErrNotImplemented
}

// DraftsList is agent_protocols_drafts_list (local state).
func (e *Engine) DraftsList(ctx context.Context, in DraftsListInput) (*DraftsListResult, error) {
	return nil, ErrNotImplemented
}

// DraftGet is agent_protocols_draft_get (local state).
func (e *Engine) DraftGet(ctx context.Context, session, draftID string) (*DraftGetResult, error) {
	return nil, ErrNotImplemented
}

// DraftCommit is agent_protocols_draft_commit.
func (e *Engine) DraftCommit(ctx context.Context, session string, in DraftCommitInput) (*WriteResult, error) {
	return nil, ErrNotImplemented
}

// DraftDrop is agent_protocols_draft_drop (local state).
func (e *Engine) DraftDrop(ctx context.Context, draftID string) (*DraftDropResult, error) {
	return nil, ErrNotImplemented
}

// CreateRoom is agent_protocols_room_create (signs and submits room.create).
func (e *Engine) CreateRoom(ctx context.Context, session string, in RoomCreateInput) (*RoomCreateResult, error) {
	return nil, ErrNotImplemented
}

// Join is agent_protocols_room_join: a direct join, or the approval flow.
func (e *Engine) Join(ctx context.Context, session string, in RoomJoinInput) (*RoomJoinResult, error) {
	return nil, ErrNotImplemented
}

// Leave is agent_protocols_room_leave (signs and submits room.leave).
func (e *Engine) Leave(ctx context.Context, session string, in RoomLeaveInput) (*RecordResult, error) {
	return nil, ErrNotImplemented
}

// Review is agent_protocols_join_request_review (signs room.join.review).
func (e *Engine) Review(ctx context.Context, session string, in JoinReviewInput) (*RecordResult, error) {
	return nil, ErrNotImplemented
}

// ReplayOutbox re-sends every signed, unacknowledged envelope exactly as
// signed (Open runs it).
func (e *Engine) ReplayOutbox(ctx context.Context) error {
	return nil
}
