package connector

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
	"github.com/agentprotocols/go-sdk/profile"
)

// IdentityCurrent is agent_protocols_identity_current (local read).
func (e *Engine) IdentityCurrent(ctx context.Context) (*IdentityResult, error) {
	h, _ := e.HostsList(ctx)
	return &IdentityResult{AgentID: e.agent.String(), PublicKey: publicKeyText(e.agent), Profiles: append([]string{}, e.opts.Profiles...), Hosts: h.Hosts}, nil
}

// storedHost is what discovery last said about a configured host. It is
// metadata only: the allowlist itself is Options.Hosts.
type storedHost struct {
	Features      []string `json:"features"`
	LastCheckedAt int64    `json:"last_checked_at"`
}

// HostsList is agent_protocols_hosts_list: the operator allowlist with the
// discovery metadata of the last CheckHosts (local read).
func (e *Engine) HostsList(ctx context.Context) (*HostsResult, error) {
	out := &HostsResult{Hosts: []AgentProtocolsHost{}}
	err := e.store.View(func(tx stateTx) error {
		for _, name := range e.hostOrder {
			h := e.hosts[name]
			var sh storedHost
			if _, err := tx.Get(bHosts, name, &sh); err != nil {
				return err
			}
			out.Hosts = append(out.Hosts, AgentProtocolsHost{
				Host: h.name, Label: h.cfg.Label, Allowed: h.client != nil, Features: nonNil(sh.Features),
				ProfileService: h.cfg.ProfileService, LastCheckedAt: sh.LastCheckedAt,
			})
		}
		return nil
	})
	return out, err
}

// CheckHosts reads the discovery document of every enabled configured host
// and stores its features (Open runs it in the background). It never adds
// or enables a host.
func (e *Engine) CheckHosts(ctx context.Context) error {
	var errs []error
	for _, name := range e.hostOrder {
		h := e.hosts[name]
		if h.client == nil {
			continue
		}
		d, err := h.client.Discover(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		sh := storedHost{Features: nonNil(d.Features), LastCheckedAt: e.now().UnixMilli()}
		if err := e.store.Update(func(tx stateTx) error { return tx.Put(bHosts, name, &sh) }); err != nil {
			return err
		}
	}
	e.notify(URIHosts)
	return errors.Join(errs...)
}

func summaryOf(host string, s adp.RoomSummary) RoomSummary {
	return RoomSummary{RoomID: s.ID, Host: host, Topic: s.Topic, Status: string(s.Status), Visibility: string(s.Visibility),
		StartTime: s.StartTime, EndTime: s.EndTime, Tags: nonNil(s.Tags), Language: s.Language, Role: string(s.Role)}
}

// RoomsSearch is agent_protocols_rooms_search (remote read of an
// allowlisted host's public room list).
func (e *Engine) RoomsSearch(ctx context.Context, in RoomsSearchInput) (*RoomsResult, error) {
	h, err := e.host(in.Host)
	if err != nil {
		return nil, err
	}
	limit := pageLimit(in.Limit, 20, 100)
	q := adp.RoomQuery{Status: adp.Status(in.Status), Tag: in.Tag, Keyword: in.Keyword, Language: in.Language,
		StartsAfter: in.StartsAfter, EndsBefore: in.EndsBefore}
	if in.Creator != "" {
		id, err := identity.ParseAgentID(in.Creator)
		if err != nil {
			return nil, fmt.Errorf("%w: creator: %v", ErrInvalidInput, err)
		}
		q.Creator = id
	}
	res := &RoomsResult{Rooms: []RoomSummary{}}
	skip, err := offsetCursor(in.Cursor)
	if err != nil {
		return nil, err
	}
	i := 0
	for s, err := range h.client.PublicRooms(ctx, q) {
		if err != nil {
			return nil, err
		}
		if i++; i <= skip {
			continue
		}
		if len(res.Rooms) == limit {
			res.NextCursor = strconv.Itoa(skip + limit)
			break
		}
		res.Rooms = append(res.Rooms, summaryOf(h.name, s))
	}
	return res, nil
}

// RoomsList is agent_protocols_rooms_list (local read of known rooms).
// membership filters by this agent's verified membership: member (active),
// creator, moderator, pending (a join request awaits review) or all.
func (e *Engine) RoomsList(ctx context.Context, in RoomsListInput) (*RoomsResult, error) {
	limit := pageLimit(in.Limit, 50, 100)
	res := &RoomsResult{Rooms: []RoomSummary{}}
	err := e.store.View(func(tx stateTx) error {
		return tx.Scan(bRooms, "", func(key string, raw []byte) error {
			if in.Cursor != "" && key <= in.Cursor {
				return nil
			}
			var sr storedRoom
			if err := unmarshalStored(raw, &sr); err != nil {
				return err
			}
			if h := e.hosts[sr.Host]; h == nil || h.client == nil {
				return nil
			}
			k := roomKey{sr.Host, sr.RoomID}
			s := RoomSummary{RoomID: sr.RoomID, Host: sr.Host, Tags: []string{}}
			var member *adp.Member
			var creator identity.AgentID
			if room := e.hosts[sr.Host].client.Verified(sr.RoomID); room != nil && room.Created() {
				c := room.Contract()
				s.Topic, s.Status, s.Visibility = c.Topic, string(room.Status(e.now())), string(c.Visibility)
				s.StartTime, s.EndTime, s.Tags, s.Language = c.StartTime, c.EndTime, nonNil(c.Tags), c.Language
				if m, ok := room.Member(e.agent); ok {
					member = &m
					if m.Status == adp.MemberActive {
						s.Role = string(m.Role)
					}
				}
				creator, _ = room.Creator()
			}
			active := member != nil && member.Status == adp.MemberActive
			switch in.Membership {
			case "", "all":
			case "member":
				if !active {
					return nil
				}
			case "creator":
				if creator != e.agent {
					return nil
				}
			case "moderator":
				if !active || member.Role != adp.RoleModerator {
					return nil
				}
			case "pending":
				if sr.JoinRequestStatus != string(adp.JoinPending) {
					return nil
				}
			default:
				return fmt.Errorf("%w: membership %q", ErrInvalidInput, clip(in.Membership))
			}
			if in.Status != "" && s.Status != in.Status {
				return nil
			}
			var err error
			s.UnreadCount = sr.Unread
			if s.PendingInboxCount, err = e.pendingCount(tx, k.host, k.room, ""); err != nil {
				return err
			}
			if len(res.Rooms) == limit {
				res.NextCursor = rkey(res.Rooms[len(res.Rooms)-1].Host, res.Rooms[len(res.Rooms)-1].RoomID)
				return errStop
			}
			res.Rooms = append(res.Rooms, s)
			return nil
		})
	})
	return res, err
}

// verifiedRoom returns the stored verified replica of a room and its sync.
func (e *Engine) verifiedRoom(session string, k roomKey) (*adp.Room, SyncState, error) {
	var s SyncState
	if err := e.store.View(func(tx stateTx) error {
		var err error
		s, err = e.syncState(tx, k)
		return err
	}); err != nil {
		return nil, s, err
	}
	room := e.hosts[k.host].client.Verified(k.room)
	if room == nil || !room.Created() {
		return nil, s, fmt.Errorf("%w: %s has no verified state yet", ErrUnknownRoom, clip(k.room))
	}
	if session != "" {
		e.present(session, k, s)
	}
	return room, s, nil
}

// MembersList is agent_protocols_room_members_list (verified local state).
func (e *Engine) MembersList(ctx context.Context, session string, in MembersListInput) (*MembersListResult, error) {
	k, _, err := e.resolve(in.Host, in.RoomID)
	if err != nil {
		return nil, err
	}
	room, s, err := e.verifiedRoom(session, k)
	if err != nil {
		return nil, err
	}
	creator, _ := room.Creator()
	ms := room.Members()
	slices.SortFunc(ms, func(a, b adp.Member) int { return int(a.JoinedSeq - b.JoinedSeq) })
	res := &MembersListResult{Members: []RoomMemberView{}, Sync: s}
	skip, err := offsetCursor(in.Cursor)
	if err != nil {
		return nil, err
	}
	limit := pageLimit(in.Limit, 100, 200)
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
	k, h, id, err := e.resolveAgent(in.Host, in.RoomID, in.AgentID)
	if err != nil {
		return nil, err
	}
	room, s, err := e.verifiedRoom(session, k)
	if err != nil {
		return nil, err
	}
	m, ok := room.Member(id)
	if !ok {
		return nil, fmt.Errorf("%w: %s is not a member", ErrNotFound, id)
	}
	creator, _ := room.Creator()
	res := &MemberGetResult{Member: memberView(m, creator), Sync: s}
	if in.IncludeProfile {
		ms := []RoomMemberView{res.Member}
		e.attachProfiles(ctx, k.host, ms)
		res.Member = ms[0]
	}
	if in.IncludeRecentActivity {
		live := h.client.Verified(k.room)
		err := e.store.View(func(tx stateTx) error {
			return e.records(tx, k, max(0, s.SyncedSeq-200), 0, func(rec *adp.Record) bool {
				if rec.Envelope.Actor() == id {
					res.Recent = append(res.Recent, e.timelineItem(rec, live, false))
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

func (e *Engine) syncOf(k roomKey) *SyncState {
	var s SyncState
	if e.store.View(func(tx stateTx) error { var err error; s, err = e.syncState(tx, k); return err }) != nil {
		return nil
	}
	return &s
}

// AgentStatusList is agent_protocols_agent_status_list (remote read).
func (e *Engine) AgentStatusList(ctx context.Context, session string, in AgentStatusListInput) (*AgentStatusListResult, error) {
	k, h, err := e.resolve(in.Host, in.RoomID)
	if err != nil {
		return nil, err
	}
	sts, err := h.client.AgentStatuses(ctx, k.room)
	if err != nil {
		return nil, err
	}
	res := &AgentStatusListResult{Statuses: []AgentStatus{}, Sync: e.syncOf(k)}
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
	res := &AgentStatusResult{Sync: e.syncOf(k)}
	if errors.Is(err, adp.ErrAgentStatusNotFound) {
		return res, nil
	}
	if err != nil {
		return nil, err
	}
	v := statusView(*st)
	res.Status = &v
	return res, nil
}

// clearGrace is how long a cleared status may still be listed.
const clearGrace = time.Second

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
	// §4.3: expires_at at (or before) the current time clears the status.
	// Hosts refuse an expiry in the past (the seed's host rejects it), so
	// a clear is sent as a status that expires within clearGrace.
	if now := e.now().UnixMilli(); in.ExpiresAt > 0 && in.ExpiresAt < now+clearGrace.Milliseconds() {
		si.ExpiresAt = now + clearGrace.Milliseconds()
	}
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
		return nil, err
	}
	v := statusView(*st)
	e.notify(RoomURI(k.room, "agent-status"))
	return &AgentStatusResult{Status: &v, Sync: e.syncOf(k)}, nil
}

// JoinRequestsList is agent_protocols_join_requests_list (remote read).
func (e *Engine) JoinRequestsList(ctx context.Context, in JoinRequestsListInput) (*JoinRequestsListResult, error) {
	k, h, err := e.resolve(in.Host, in.RoomID)
	if err != nil {
		return nil, err
	}
	jrs, err := h.client.JoinRequests(ctx, k.room)
	if err != nil {
		return nil, err
	}
	res := &JoinRequestsListResult{JoinRequests: []jsontext.Value{}}
	limit := pageLimit(in.Limit, 100, 200)
	for _, jr := range jrs {
		if in.Status != "" && string(jr.Status) != in.Status {
			continue
		}
		if len(res.JoinRequests) == limit {
			break
		}
		raw, err := json.Marshal(jr)
		if err != nil {
			return nil, err
		}
		res.JoinRequests = append(res.JoinRequests, raw)
	}
	return res, nil
}

// profileService returns the profile client of an operator-configured
// profile service (Options.Profiles or a host's ProfileService).
func (e *Engine) profileService(name string) (*profile.Client, error) {
	allowed := slices.Contains(e.opts.Profiles, name)
	for _, h := range e.hosts {
		allowed = allowed || (h.client != nil && h.cfg.ProfileService == name)
	}
	if !allowed || name == "" {
		return nil, fmt.Errorf("%w: profile service %q", ErrHostNotAllowed, clip(name))
	}
	return profile.NewClient(name, &profile.ClientOptions{HTTPClient: e.opts.HTTPClient, AllowLoopbackHTTP: e.opts.AllowLoopbackHTTP})
}

// ProfileUpdate is agent_protocols_profile_update: payload.id is the
// active Agent ID (a different id is refused); the update is signed,
// recorded in the outbox with its nonce, and published.
func (e *Engine) ProfileUpdate(ctx context.Context, in ProfileUpdateInput) (*ProfileUpdateResult, error) {
	c, err := e.profileService(in.ProfileService)
	if err != nil {
		return nil, err
	}
	var obj map[string]jsontext.Value
	if err := strictjson.Unmarshal(in.Profile, &obj); err != nil {
		return nil, fmt.Errorf("%w: profile must be a JSON object: %v", ErrInvalidInput, err)
	}
	if id, ok := obj["id"]; ok {
		var s string
		if json.Unmarshal(id, &s) != nil || s != e.agent.String() {
			return nil, fmt.Errorf("%w: profile id must be the active Agent ID", ErrInvalidInput)
		}
	} else {
		obj["id"], _ = json.Marshal(e.agent.String())
	}
	b, err := json.Marshal(obj, json.Deterministic(true))
	if err != nil {
		return nil, err
	}
	p, err := profile.ParsePayload(b, e.agent, nil)
	if err != nil {
		return nil, err
	}
	if !e.limiter.allow() {
		return nil, ErrRateLimited
	}
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	env, err := profile.NewUpdate(ctx, e.author, *p, nil)
	if err != nil {
		return nil, err
	}
	id, err := e.recordOutbox(env, &outboxEntry{Host: in.ProfileService, Profile: true, Envelope: env.AppendJSON(nil)})
	if err != nil {
		return nil, err
	}
	v, err := c.Publish(ctx, env)
	if err != nil {
		return nil, e.submitFailed(id, err)
	}
	if err := e.dropOutbox(id); err != nil {
		return nil, err
	}
	doc, err := json.Marshal(v.Document)
	if err != nil {
		return nil, err
	}
	return &ProfileUpdateResult{Profile: doc, Envelope: env.AppendJSON(nil)}, nil
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

// pageLimit is a list's page size: the requested n, or def when n is not
// in 1..most.
func pageLimit(n, def, most int) int {
	if n <= 0 || n > most {
		return def
	}
	return n
}

// offsetCursor parses a list cursor that is the count of items already
// returned ("" is the start).
func offsetCursor(cursor string) (int, error) {
	if cursor == "" {
		return 0, nil
	}
	skip, err := strconv.Atoi(cursor)
	if err != nil || skip < 0 {
		return 0, fmt.Errorf("%w: cursor", ErrInvalidInput)
	}
	return skip, nil
}
