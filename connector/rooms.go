package connector

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/identity"
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
	// Draft is the ADP draft the host's discovery document had at first
	// contact (absent in stores written before it was recorded).
	Draft adp.Draft `json:"draft,omitzero"`
}

// learnDraft records the draft h's client learned from the host's
// discovery document with the host's stored metadata, once: a restart
// then tells the client, and needs no discovery read to speak it. Never
// call it within a store transaction.
func (e *Engine) learnDraft(h *hostState) error {
	d, ok := h.client.KnownDraft()
	if !ok || d == adp.Draft(h.stored.Load()) {
		return nil
	}
	err := e.store.Update(func(tx stateTx) error {
		var sh storedHost
		if _, err := tx.Get(bHosts, h.name, &sh); err != nil {
			return err
		}
		sh.Draft = d
		return tx.Put(bHosts, h.name, &sh)
	})
	if err == nil {
		h.stored.Store(int32(d))
	}
	return err
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
		sh := storedHost{Features: nonNil(d.Features), LastCheckedAt: e.now().UnixMilli(), Draft: d.Draft}
		if err := e.store.Update(func(tx stateTx) error { return tx.Put(bHosts, name, &sh) }); err != nil {
			return err
		}
		h.stored.Store(int32(d.Draft))
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
	limit := pageRoomsSearch.of(in.Limit)
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
			return nil, h.err(err)
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
	limit := pageRoomsList.of(in.Limit)
	res := &RoomsResult{Rooms: []RoomSummary{}}
	// The cursor is the last listed room's store key, base64url-encoded
	// so that it is printable.
	after, err := base64.RawURLEncoding.DecodeString(in.Cursor)
	if err != nil {
		return nil, fmt.Errorf("%w: cursor", ErrInvalidInput)
	}
	// The verified facts of the known rooms, read before the store
	// transaction (a replica's hook writes the store under its lock).
	type facts struct {
		summary RoomSummary
		member  *adp.Member
		creator identity.AgentID
	}
	e.mu.Lock()
	keys := make([]roomKey, 0, len(e.rooms))
	for k := range e.rooms {
		keys = append(keys, k)
	}
	e.mu.Unlock()
	known := map[roomKey]facts{}
	for _, k := range keys {
		e.verified(k, func(room *adp.Room) {
			if room == nil || !room.Created() {
				return
			}
			var f facts
			s := &f.summary
			c := room.Contract()
			s.Topic, s.Status, s.Visibility = c.Topic, string(room.Status(e.now())), string(c.Visibility)
			s.StartTime, s.EndTime, s.Tags, s.Language = c.StartTime, c.EndTime, nonNil(c.Tags), c.Language
			if m, ok := room.Member(e.agent); ok {
				f.member = &m
				if m.Status == adp.MemberActive {
					s.Role = string(m.Role)
				}
			}
			f.creator, _ = room.Creator()
			known[k] = f
		})
	}
	err = e.store.View(func(tx stateTx) error {
		return tx.ScanFrom(bRooms, "", string(after), func(key string, raw []byte) error {
			if in.Cursor != "" && key <= string(after) {
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
			if f, ok := known[k]; ok {
				f.summary.RoomID, f.summary.Host = s.RoomID, s.Host
				s, member, creator = f.summary, f.member, f.creator
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
				res.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(rkey(res.Rooms[len(res.Rooms)-1].Host, res.Rooms[len(res.Rooms)-1].RoomID)))
				return errStop
			}
			res.Rooms = append(res.Rooms, s)
			return nil
		})
	})
	return res, err
}

// members is the membership of a verified room, read under its replica's
// lock.
type members struct {
	creator identity.AgentID
	members []adp.Member
}

// verifiedMembers returns the membership of a room's verified replica and
// its sync.
func (e *Engine) verifiedMembers(session string, k roomKey) (members, SyncState, error) {
	var s SyncState
	if err := e.store.View(func(tx stateTx) error {
		var err error
		s, err = e.syncState(tx, k)
		return err
	}); err != nil {
		return members{}, s, err
	}
	var vm members
	created := false
	e.verified(k, func(room *adp.Room) {
		if created = room != nil && room.Created(); created {
			vm.creator, _ = room.Creator()
			vm.members = room.Members()
		}
	})
	if !created {
		return members{}, s, fmt.Errorf("%w: %s has no verified state yet", ErrUnknownRoom, clip(k.room))
	}
	if session != "" {
		e.present(session, k, s)
	}
	return vm, s, nil
}

// syncOf is the room's sync for a result, presented to the session (§4.2:
// the presented head follows every result that carries sync).
func (e *Engine) syncOf(session string, k roomKey) *SyncState {
	var s SyncState
	if e.store.View(func(tx stateTx) error { var err error; s, err = e.syncState(tx, k); return err }) != nil {
		return nil
	}
	if session != "" {
		e.present(session, k, s)
	}
	return &s
}

// page is a list's page size: the default and the maximum of its tool's
// limit argument (tools.go states the same numbers; a test keeps them
// equal).
type page struct{ def, max int }

// Page sizes of the seven lists.
var (
	pageRoomsSearch  = page{20, 100}
	pageRoomsList    = page{50, 200}
	pageMembers      = page{50, 200}
	pageTimeline     = page{50, 500}
	pageInbox        = page{10, 100}
	pageDrafts       = page{20, 100}
	pageJoinRequests = page{50, 200}
)

// of is the page size for a requested limit n: the default when n is
// unset, else n clamped to the maximum.
func (p page) of(n int) int {
	if n <= 0 {
		return p.def
	}
	return min(n, p.max)
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
