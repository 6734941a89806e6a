package engine

import (
	"context"
)

// IdentityCurrent is agent_protocols_identity_current (local read).
func (e *Engine) IdentityCurrent(ctx context.Context) (*IdentityResult, error) {
	h, _ := e.HostsList(ctx)
	return &IdentityResult{AgentID: e.agent.String(), PublicKey: publicKeyText(e.agent), Profiles: append([]string{}, e.opts.Profiles...), Hosts: h.Hosts}, nil
}

// HostsList is agent_protocols_hosts_list: the operator allowlist (local read).
func (e *Engine) HostsList(ctx context.Context) (*HostsResult, error) {
	out := &HostsResult{Hosts: []AgentProtocolsHost{}}
	for _, name := range e.hostOrder {
		h := e.hosts[name]
		out.Hosts = append(out.Hosts, AgentProtocolsHost{
			Host: h.name, Label: h.cfg.Label, Allowed: h.client != nil, Features: []string{"rooms", "sse-event-stream"},
			ProfileService: h.cfg.ProfileService,
		})
	}
	return out, nil
}

// RoomsSearch is agent_protocols_rooms_search (remote read of a host's
// public room list).
func (e *Engine) RoomsSearch(ctx context.Context, in RoomsSearchInput) (*RoomsResult, error) {
	return nil, ErrNotImplemented
}

// RoomsList is agent_protocols_rooms_list (local read of known rooms).
func (e *Engine) RoomsList(ctx context.Context, in RoomsListInput) (*RoomsResult, error) {
	return nil, ErrNotImplemented
}

// MembersList is agent_protocols_room_members_list (verified local state).
func (e *Engine) MembersList(ctx context.Context, session string, in MembersListInput) (*MembersListResult, error) {
	return nil, ErrNotImplemented
}

// MemberGet is agent_protocols_room_member_get (verified local state).
func (e *Engine) MemberGet(ctx context.Context, session string, in MemberGetInput) (*MemberGetResult, error) {
	return nil, ErrNotImplemented
}

// AgentStatusList is agent_protocols_agent_status_list (remote read).
func (e *Engine) AgentStatusList(ctx context.Context, session string, in AgentStatusListInput) (*AgentStatusListResult, error) {
	return nil, ErrNotImplemented
}

// AgentStatusGet is agent_protocols_agent_status_get (remote read).
func (e *Engine) AgentStatusGet(ctx context.Context, session string, in AgentStatusGetInput) (*AgentStatusResult, error) {
	return nil, ErrNotImplemented
}

// AgentStatusSet is agent_protocols_agent_status_set: a request-JWT PUT of
// this agent's own transient status; never a signed event.
func (e *Engine) AgentStatusSet(ctx context.Context, session string, in AgentStatusSetInput) (*AgentStatusResult, error) {
	return nil, ErrNotImplemented
}

// ProfileUpdate is agent_protocols_profile_update.
func (e *Engine) ProfileUpdate(ctx context.Context, in ProfileUpdateInput) (*ProfileUpdateResult, error) {
	return nil, ErrNotImplemented
}

// JoinRequestsList is agent_protocols_join_requests_list (remote read).
func (e *Engine) JoinRequestsList(ctx context.Context, in JoinRequestsListInput) (*JoinRequestsListResult, error) {
	return nil, ErrNotImplemented
}
