package connector

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/identity"
)

// MembersList is agent_protocols_room_members_list (verified local state).
func (e *Engine) MembersList(ctx context.Context, session string, in MembersListInput) (*MembersListResult, error) {
	k, _, err := e.resolve(in.Host, in.RoomID)
	if err != nil {
		return nil, err
	}
	vm, s, err := e.verifiedMembers(session, k)
	if err != nil {
		return nil, err
	}
	creator, ms := vm.creator, vm.members
	slices.SortFunc(ms, func(a, b adp.Member) int { return int(a.JoinedSeq - b.JoinedSeq) })
	res := &MembersListResult{Members: []RoomMemberView{}, Sync: s}
	skip, err := offsetCursor(in.Cursor)
	if err != nil {
		return nil, err
	}
	limit := pageMembers.of(in.Limit)
	i := 0
	defer func() {
		if in.IncludeProfiles && len(res.Members) > 0 {
			e.attachProfiles(ctx, k.host, res.Members)
		}
	}()
	for _, m := range ms {
		status := in.Status
		if status == "" {
			status = string(adp.MemberActive)
		}
		if status != "all" && string(m.Status) != status || in.Role != "" && string(m.Role) != in.Role {
			continue
		}
		if i++; i <= skip {
			continue
		}
		if len(res.Members) == limit {
			res.NextCursor = strconv.Itoa(skip + limit)
			break
		}
		res.Members = append(res.Members, memberView(m, creator))
	}
	return res, nil
}

// resolveAgent resolves (host, room_id) like resolve and parses the
// input's agent_id.
func (e *Engine) resolveAgent(host, roomID, agentID string) (roomKey, *hostState, identity.AgentID, error) {
	k, h, err := e.resolve(host, roomID)
	if err != nil {
		return roomKey{}, nil, identity.AgentID{}, err
	}
	id, err := identity.ParseAgentID(agentID)
	if err != nil {
		return roomKey{}, nil, identity.AgentID{}, fmt.Errorf("%w: agent_id: %v", ErrInvalidInput, err)
	}
	return k, h, id, nil
}

// MemberGet is agent_protocols_room_member_get (verified local state).
func (e *Engine) MemberGet(ctx context.Context, session string, in MemberGetInput) (*MemberGetResult, error) {
	k, _, id, err := e.resolveAgent(in.Host, in.RoomID, in.AgentID)
	if err != nil {
		return nil, err
	}
	vm, s, err := e.verifiedMembers(session, k)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(vm.members, func(m adp.Member) bool { return m.ID == id })
	if i < 0 {
		return nil, fmt.Errorf("%w: %s is not a member", ErrNotFound, id)
	}
	res := &MemberGetResult{Member: memberView(vm.members[i], vm.creator), Sync: s}
	if in.IncludeProfile {
		ms := []RoomMemberView{res.Member}
		e.attachProfiles(ctx, k.host, ms)
		res.Member = ms[0]
	}
	if in.IncludeRecentActivity {
		reg := e.registry(k)
		err := e.store.View(func(tx stateTx) error {
			return e.records(tx, k, max(0, s.SyncedSeq-200), 0, func(rec *adp.Record) bool {
				if rec.Envelope.Actor() == id {
					res.Recent = append(res.Recent, e.timelineItem(rec, reg, false))
				}
				return true
			})
		})
		if err != nil {
			return nil, err
		}
		if n := len(res.Recent); n > 20 {
			res.Recent = res.Recent[n-20:]
		}
	}
	return res, nil
}

// attachProfiles adds best-effort verified profiles (descriptive only,
// never a substitute for Agent ID signatures) from the profile service
// configured for the host, or the first of Options.Profiles. Failures
// leave profile null.
func (e *Engine) attachProfiles(ctx context.Context, host string, ms []RoomMemberView) {
	svc := ""
	if h := e.hosts[host]; h != nil {
		svc = h.cfg.ProfileService
	}
	if svc == "" && len(e.opts.Profiles) > 0 {
		svc = e.opts.Profiles[0]
	}
	c, err := e.profileService(svc)
	if err != nil {
		return
	}
	ids := make([]identity.AgentID, 0, len(ms))
	for _, m := range ms {
		if id, err := identity.ParseAgentID(m.AgentID); err == nil {
			ids = append(ids, id)
		}
	}
	vs, err := c.Batch(ctx, ids)
	if err != nil {
		return
	}
	byID := map[string]*MemberProfile{}
	for _, v := range vs {
		if v == nil || v.Document == nil {
			continue
		}
		p := &MemberProfile{Name: v.Document.Name, AvatarURL: v.Document.AvatarURL}
		if v.Document.Description != nil {
			p.Description = *v.Document.Description
		}
		byID[v.Document.ID.String()] = p
	}
	for i := range ms {
		ms[i].Profile = byID[ms[i].AgentID]
	}
}
