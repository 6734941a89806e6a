package main

import (
	"context"
	"errors"

	"github.com/agentprotocols/go-sdk/examples/connector/engine"
	"github.com/agentprotocols/go-sdk/identity"
)

// One tool is one engine method (engine's doc): the handlers only decode
// the validated arguments into the engine's input type, name the session
// (the presented head is per session, §4.2) and map errors.

// withSession adapts an engine method that reads or writes a room.
func withSession[In, Out any](m func(*engine.Engine, context.Context, string, In) (Out, error)) handler {
	return func(ctx context.Context, c *call) (any, error) {
		var in In
		if err := c.decode(&in); err != nil {
			return nil, err
		}
		return m(c.srv.eng, ctx, c.srv.sessionID(c.sess), in)
	}
}

// noSession adapts an engine method that needs no session.
func noSession[In, Out any](m func(*engine.Engine, context.Context, In) (Out, error)) handler {
	return func(ctx context.Context, c *call) (any, error) {
		var in In
		if err := c.decode(&in); err != nil {
			return nil, err
		}
		return m(c.srv.eng, ctx, in)
	}
}

// noInput adapts an engine method without input.
func noInput[Out any](m func(*engine.Engine, context.Context) (Out, error)) handler {
	return func(ctx context.Context, c *call) (any, error) {
		var in struct{}
		if err := c.decode(&in); err != nil {
			return nil, err
		}
		return m(c.srv.eng, ctx)
	}
}

var (
	hIdentityCurrent = noInput((*engine.Engine).IdentityCurrent)
	hHostsList       = noInput((*engine.Engine).HostsList)
	hRoomsSearch     = noSession((*engine.Engine).RoomsSearch)
	hRoomsList       = noSession((*engine.Engine).RoomsList)
	hRoomOpen        = withSession((*engine.Engine).RoomOpen)
	hRoomState       = withSession((*engine.Engine).RoomState)
	hMembersList     = withSession((*engine.Engine).MembersList)
	hMemberGet       = withSession((*engine.Engine).MemberGet)
	hStatusList      = withSession((*engine.Engine).AgentStatusList)
	hStatusGet       = withSession((*engine.Engine).AgentStatusGet)
	hStatusSet       = withSession((*engine.Engine).AgentStatusSet)
	hTimeline        = withSession((*engine.Engine).Timeline)
	hMarkRead        = noSession((*engine.Engine).MarkRead)
	hInboxNext       = withSession((*engine.Engine).InboxNext)
	hInboxAck        = withSession((*engine.Engine).InboxAck)
	hDraftsList      = noSession((*engine.Engine).DraftsList)
	hDraftGet        = withSession(func(e *engine.Engine, ctx context.Context, session string, in draftIDInput) (*engine.DraftGetResult, error) {
		return e.DraftGet(ctx, session, in.DraftID)
	})
	hDraftCommit = withSession((*engine.Engine).DraftCommit)
	hDraftDrop   = noSession(func(e *engine.Engine, ctx context.Context, in draftIDInput) (*engine.DraftDropResult, error) {
		return e.DraftDrop(ctx, in.DraftID)
	})
	hProfileUpdate     = noSession((*engine.Engine).ProfileUpdate)
	hRoomCreate        = withSession((*engine.Engine).CreateRoom)
	hRoomJoin          = withSession((*engine.Engine).Join)
	hRoomLeave         = withSession((*engine.Engine).Leave)
	hSendMessage       = withSession((*engine.Engine).SendMessage)
	hSubmitEvent       = withSession((*engine.Engine).SubmitEvent)
	hJoinRequestsList  = noSession((*engine.Engine).JoinRequestsList)
	hJoinRequestReview = withSession((*engine.Engine).Review)
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
	{engine.ErrAmbiguousRoom, CodeAmbiguousRoom},
	{engine.ErrHostNotAllowed, CodeHostNotAllowed},
	{engine.ErrUnknownRoom, CodeUnknownRoom},
	{engine.ErrRoleMismatch, CodeRoleMismatch},
	{engine.ErrNotFound, CodeNotFound},
	{engine.ErrRateLimited, "rate_limited"},
	{engine.ErrPendingOutbox, "pending_outbox"},
	{engine.ErrNotImplemented, "not_implemented"},
}

// classify turns an engine error into what toolResultError maps: a
// protocol error keeps its code; a local refusal gets its code; a bad
// input is a malformed call.
func classify(err error) error {
	var ie *identity.Error
	if errors.As(err, &ie) {
		return err
	}
	if errors.Is(err, engine.ErrInvalidInput) {
		return &malformedError{msg: err.Error()}
	}
	for _, ec := range engineCodes {
		if errors.Is(err, ec.err) {
			return &identity.Error{Code: ec.code, Message: err.Error(), Err: err}
		}
	}
	return err
}
