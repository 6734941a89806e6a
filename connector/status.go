package connector

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
)

func statusView(s adp.AgentStatus) AgentStatus {
	v := AgentStatus{RoomID: s.RoomID, AgentID: s.AgentID.String(), State: s.State, Summary: s.Summary, SeenSeq: s.SeenSeq,
		ClaimID: s.ClaimID, Activity: s.Activity, ExpiresAt: s.ExpiresAt, UpdatedAt: s.UpdatedAt, Extra: s.Extra}
	if s.SeenHash != nil {
		v.SeenHash = s.SeenHash.String()
	}
	if v.Extra == nil {
		v.Extra = jsontext.Value("{}")
	}
	return v
}

// AgentStatusList is agent_protocols_agent_status_list (remote read).
func (e *Engine) AgentStatusList(ctx context.Context, session string, in AgentStatusListInput) (*AgentStatusListResult, error) {
	k, h, err := e.resolve(in.Host, in.RoomID)
	if err != nil {
		return nil, err
	}
	sts, err := h.client.AgentStatuses(ctx, k.room)
	if err != nil {
		return nil, h.err(err)
	}
	res := &AgentStatusListResult{Statuses: []AgentStatus{}, Sync: e.syncOf(session, k)}
	for _, s := range sts {
		res.Statuses = append(res.Statuses, statusView(s))
	}
	return res, nil
}

// AgentStatusGet is agent_protocols_agent_status_get (remote read).
func (e *Engine) AgentStatusGet(ctx context.Context, session string, in AgentStatusGetInput) (*AgentStatusResult, error) {
	k, h, id, err := e.resolveAgent(in.Host, in.RoomID, in.AgentID)
	if err != nil {
		return nil, err
	}
	st, err := h.client.AgentStatus(ctx, k.room, id)
	res := &AgentStatusResult{Sync: e.syncOf(session, k)}
	if errors.Is(err, adp.ErrAgentStatusNotFound) {
		return res, nil
	}
	if err != nil {
		return nil, h.err(err)
	}
	v := statusView(*st)
	res.Status = &v
	return res, nil
}

// AgentStatusSet is agent_protocols_agent_status_set: a request-JWT PUT of
// this agent's own transient status; never a signed event. seen_seq /
// seen_hash default to the session's presented head.
func (e *Engine) AgentStatusSet(ctx context.Context, session string, in AgentStatusSetInput) (*AgentStatusResult, error) {
	k, h, err := e.resolve(in.Host, in.RoomID)
	if err != nil {
		return nil, err
	}
	if in.State == "" {
		return nil, fmt.Errorf("%w: state is required", ErrInvalidInput)
	}
	si := adp.AgentStatusInput{State: in.State, Summary: in.Summary, ClaimID: in.ClaimID, Activity: in.Activity,
		ExpiresAt: in.ExpiresAt, Extra: in.Extra}
	// §4.3: expires_at at (or before) the current time clears the status;
	// it is sent as given (the host stores it expired and lists it no
	// more).
	if in.SeenSeq != nil {
		si.SeenSeq = *in.SeenSeq
		if in.SeenHash != "" {
			hh, err := parseHash(in.SeenHash)
			if err != nil {
				return nil, fmt.Errorf("%w: seen_hash: %v", ErrInvalidInput, err)
			}
			si.SeenHash = &hh
		}
	} else {
		e.mu.Lock()
		p, ok := e.presented[presKey{session, k}]
		e.mu.Unlock()
		if ok {
			si.SeenSeq, si.SeenHash = p.Seq, &p.Hash
		}
	}
	st, err := h.client.PutAgentStatus(ctx, k.room, si)
	if err != nil {
		return nil, h.err(err)
	}
	v := statusView(*st)
	e.notify(RoomURI(k.room, "agent-status"))
	return &AgentStatusResult{Status: &v, Sync: e.syncOf(session, k)}, nil
}
