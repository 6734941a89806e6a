package main

import (
	"context"
	"errors"

	"github.com/agentprotocols/go-sdk/connector"
	"github.com/agentprotocols/go-sdk/identity"
)

// One tool is one engine method (engine's doc): the handlers only decode
// the validated arguments into the engine's input type, name the session
// (the presented head is per session, §4.2) and map errors.

// withSession adapts an engine method that reads or writes a room.
func withSession[In, Out any](m func(*connector.Engine, context.Context, string, In) (Out, error)) handler {
	return func(ctx context.Context, c *call) (any, error) {
		var in In
		if err := c.decode(&in); err != nil {
			return nil, err
		}
		return m(c.srv.eng, ctx, c.srv.sessionID(c.sess), in)
	}
}

// noSession adapts an engine method that needs no session.
func noSession[In, Out any](m func(*connector.Engine, context.Context, In) (Out, error)) handler {
	return func(ctx context.Context, c *call) (any, error) {
		var in In
		if err := c.decode(&in); err != nil {
			return nil, err
		}
		return m(c.srv.eng, ctx, in)
	}
}

// noInput adapts an engine method without input.
func noInput[Out any](m func(*connector.Engine, context.Context) (Out, error)) handler {
	return func(ctx context.Context, c *call) (any, error) {
		var in struct{}
		if err := c.decode(&in); err != nil {
			return nil, err
		}
		return m(c.srv.eng, ctx)
	}
}

var (
	hIdentityCurrent = noInput((*connector.Engine).IdentityCurrent)
	hHostsList       = noInput((*connector.Engine).HostsList)
	hRoomsSearch     = noSession((*connector.Engine).RoomsSearch)
	hRoomsList       = noSession((*connector.Engine).RoomsList)
	hRoomOpen        = withSession((*connector.Engine).RoomOpen)
	hRoomState       = withSession((*connector.Engine).RoomState)
	hMembersList     = withSession((*connector.Engine).MembersList)
	hMemberGet       = withSession((*connector.Engine).MemberGet)
	hStatusList      = withSession((*connector.Engine).AgentStatusList)
	hStatusGet       = withSession((*connector.Engine).AgentStatusGet)
	hStatusSet       = withSession((*connector.Engine).AgentStatusSet)
	hTimeline        = withSession((*connector.Engine).Timeline)
	hMarkRead        = noSession((*connector.Engine).MarkRead)
	hInboxNext       = withSession((*connector.Engine).InboxNext)
	hInboxAck        = withSession((*connector.Engine).InboxAck)
	hDraftsList      = noSession((*connector.Engine).DraftsList)
	hDraftGet        = withSession(func(e *connector.Engine, ctx context.Context, session string, in draftIDInput) (*connector.DraftGetResult, error) {
		return e.DraftGet(ctx, session, in.DraftID)
	})
	hDraftCommit = withSession((*connector.Engine).DraftCommit)
	hDraftDrop   = noSession(func(e *connector.Engine, ctx context.Context, in draftIDInput) (*connector.DraftDropResult, error) {
		return e.DraftDrop(ctx, in.DraftID)
	})
	hProfileUpdate     = noSession((*connector.Engine).ProfileUpdate)
	hRoomCreate        = withSession((*connector.Engine).CreateRoom)
	hRoomJoin          = withSession((*connector.Engine).Join)
	hRoomLeave         = withSession((*connector.Engine).Leave)
	hSendMessage       = withSession((*connector.Engine).SendMessage)
	hSubmitEvent       = withSession((*connector.Engine).SubmitEvent)
	hJoinRequestsList  = noSession((*connector.Engine).JoinRequestsList)
	hJoinRequestReview = withSession((*connector.Engine).Review)
)

// draftIDInput is agent_protocols_draft_get's and _drop's input.
type draftIDInput struct {
	DraftID string `json:"draft_id"`
}

// engineCodes gives the engine's local refusals a machine-readable code
// for the isError result (§5), beside the protocol codes hosts send.
var engineCodes = []struct {
	err  error
	code identity.Code
}{
	{connector.ErrAmbiguousRoom, CodeAmbiguousRoom},
	{connector.ErrHostNotAllowed, CodeHostNotAllowed},
	{connector.ErrUnknownRoom, CodeUnknownRoom},
	{connector.ErrRoleMismatch, CodeRoleMismatch},
	{connector.ErrNotFound, CodeNotFound},
	{connector.ErrRateLimited, "rate_limited"},
	{connector.ErrPendingOutbox, "pending_outbox"},
}

// classify turns an engine error into what toolResultError maps: a
// protocol error keeps its code; a local refusal gets its code; a bad
// input is a malformed call.
func classify(err error) error {
	var ie *identity.Error
	if errors.As(err, &ie) {
		return err
	}
	if errors.Is(err, connector.ErrInvalidInput) {
		return &malformedError{msg: err.Error()}
	}
	for _, ec := range engineCodes {
		if errors.Is(err, ec.err) {
			return &identity.Error{Code: ec.code, Message: err.Error(), Err: err}
		}
	}
	return err
}
