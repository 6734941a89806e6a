package connector

import (
	"context"
	"encoding/base32"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"crypto/sha3"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/packs"
)

// storedInbox is an inbox item with its local state.
type storedInbox struct {
	Item       InboxItem `json:"item"`
	State      string    `json:"state"` // pending, handled, dismissed
	DeferUntil int64     `json:"defer_until,omitempty"`
	ClaimedBy  string    `json:"claimed_by,omitempty"`
}

// inboxID is stable: derived from the dedup key (host, room_id, kind, seq,
// event_id), so the same source never yields two items.
func inboxID(host, room, kind string, seq int64, eventID string) string {
	h := sha3.Sum256([]byte(host + "\x00" + room + "\x00" + kind + "\x00" + strconv.FormatInt(seq, 10) + "\x00" + eventID))
	return "inbox_" + base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(h[:16])
}

// Pending items (deferred ones included) live in bPending, acknowledged
// ones in bInbox, so the hot paths (counts, InboxNext) scan only what is
// pending while every id stays known for deduplication.

// getInbox reads an item from either bucket.
func getInbox(tx stateTx, id string) (*storedInbox, bool, error) {
	var it storedInbox
	for _, b := range []string{bPending, bInbox} {
		ok, err := tx.Get(b, id, &it)
		if err != nil || ok {
			return &it, ok, err
		}
	}
	return nil, false, nil
}

// putInbox stores an item in the bucket its state belongs to.
func putInbox(tx stateTx, it *storedInbox) error {
	from, to := bInbox, bPending
	if it.State != "pending" {
		from, to = bPending, bInbox
	}
	if err := tx.Delete(from, it.Item.ID); err != nil {
		return err
	}
	return tx.Put(to, it.Item.ID, it)
}

// addInbox stores an item unless its dedup key exists; true when new.
func addInbox(tx stateTx, it InboxItem) (bool, error) {
	it.ID = inboxID(it.Host, it.RoomID, it.Kind, it.Seq, it.EventID)
	if _, ok, err := getInbox(tx, it.ID); err != nil || ok {
		return false, err
	}
	if it.SuggestedTools == nil {
		it.SuggestedTools = []string{}
	}
	return true, putInbox(tx, &storedInbox{Item: it, State: "pending"})
}

// inboxFromRecord creates the inbox items of one verified record (§4.2
// table) and updates the room's local projections (active turn, join
// request status); the second result says the room state changed. With
// backfill set — the first sync of a room, which reads its past — history
// is not news: only mentions of this agent and live turn assignments to it
// received within Options.BackfillWindow become items (an agent invited
// by mention before its connector opened the room is still woken).
func (e *Engine) inboxFromRecord(tx stateTx, k roomKey, reg *packs.Registry, sr *storedRoom, rec *adp.Record, backfill bool) (bool, bool, error) {
	ev := rec.Envelope.Event()
	base := InboxItem{Host: k.host, RoomID: k.room, Seq: rec.Seq, EventID: rec.Envelope.Hash().String(),
		Actor: ev.Actor.String(), CreatedAt: rec.ReceivedAt}
	var items []InboxItem
	stateChanged := false
	mine := ev.Actor == e.agent
	pe, _ := adp.ParseEvent(rec.Envelope)
	mentioned := pe != nil && slices.Contains(pe.Mentions, e.agent)
	var summary string
	if ev.Type == adp.TypeMessageCreate && !mine { // an item's summary; none for the agent's own
		summary = e.timelineItem(rec, reg, false).Summary
	}
	switch {
	case mine:
	case mentioned:
		it := base
		it.Kind, it.Priority, it.RequiresResponse, it.Reason = KindMention, "high", true, "mentioned"
		it.SuggestedTools = []string{"agent_protocols_room_timeline", "agent_protocols_room_send_message"}
		if summary != "" {
			it.Message = &InboxMessage{Summary: summary}
		}
		items = append(items, it)
	case messageLike(ev.Type, reg):
		it := base
		it.Kind, it.Priority, it.Reason = KindMessageNew, "low", "new_message"
		it.SuggestedTools = []string{"agent_protocols_room_timeline"}
		if summary != "" {
			it.Message = &InboxMessage{Summary: summary}
		}
		items = append(items, it)
	}
	// Payload fields read leniently: room content is data, and a
	// malformed or foreign-typed member just yields no item.
	var fields map[string]jsontext.Value
	_ = json.Unmarshal(ev.Payload, &fields)
	str := func(name string) string {
		var v string
		if json.Unmarshal(fields[name], &v) != nil {
			if raw := fields[name]; len(raw) > 0 && raw.Kind() == '0' {
				return string(raw)
			}
		}
		return v
	}
	var p struct {
		Speaker, TurnID, Instruction, Member string
		ExpiresAt                            *int64
	}
	p.Speaker, p.TurnID, p.Instruction, p.Member = str("speaker"), str("turn_id"), str("instruction"), str("member")
	var exp int64
	if json.Unmarshal(fields["expires_at"], &exp) == nil {
		p.ExpiresAt = &exp
	}
	registered := func(typ string) bool { return reg != nil && reg.Lookup(typ) != nil }
	switch ev.Type {
	case "turn.update":
		if registered(ev.Type) {
			sr.ActiveTurn = &ActiveTurn{TurnID: p.TurnID, Speaker: p.Speaker, AssignedSeq: rec.Seq, ExpiresAt: p.ExpiresAt,
				Instruction: p.Instruction, SourceEventID: base.EventID}
			if p.Speaker == e.agent.String() {
				it := base
				it.Kind, it.Priority, it.RequiresResponse, it.Reason = KindTurnAssigned, "high", true, "turn_assigned"
				it.Deadline = p.ExpiresAt
				it.SuggestedTools = []string{"agent_protocols_room_send_message"}
				if p.Instruction != "" {
					it.Message = &InboxMessage{Summary: summarize(p.Instruction)}
				}
				items = append(items, it)
			}
		}
	case "steer.create":
		if registered(ev.Type) && !mine {
			it := base
			it.Kind, it.Priority, it.RequiresResponse, it.Reason = KindSteer, "normal", true, "steer"
			it.SuggestedTools = []string{"agent_protocols_room_timeline"}
			items = append(items, it)
		}
	case adp.TypeRoomJoinReview:
		var rv adp.JoinReview
		if json.Unmarshal(ev.Payload, &rv, json.RejectUnknownMembers(false)) == nil && rv.Request.Applicant == e.agent {
			if rv.Decision == adp.DecisionApprove {
				sr.JoinRequestStatus, sr.JoinApprovedRole = "approved", string(rv.Role)
				// The applicant usually learns of the approval by polling
				// its request (it cannot read the log yet): that local item,
				// keyed by the request id, stands for this record too.
				if _, ok, err := getInbox(tx, inboxID(k.host, k.room, KindJoinApproved, 0, rv.Request.ID)); err != nil || ok {
					return false, false, err
				}
				it := base
				it.Kind, it.Priority, it.RequiresResponse, it.Reason = KindJoinApproved, "high", true, "join_approved"
				it.SuggestedTools = []string{"agent_protocols_room_join"}
				items = append(items, it)
			} else {
				sr.JoinRequestStatus = "rejected"
			}
		}
	case adp.TypeMemberRoleUpdate:
		stateChanged = true
		if p.Member == e.agent.String() && !mine {
			it := base
			it.Kind, it.Priority, it.Reason = KindRoleChanged, "normal", "role_changed"
			it.SuggestedTools = []string{"agent_protocols_room_state"}
			items = append(items, it)
		}
	case adp.TypeMemberRemove:
		stateChanged = true
		if p.Member == e.agent.String() {
			it := base
			it.Kind, it.Priority, it.Reason = KindMemberRemoved, "high", "removed"
			items = append(items, it)
		}
	case adp.TypeRoomUpdate, adp.TypeRoomClose, adp.TypeRoomCancel, adp.TypeTypeDefine:
		stateChanged = true
		if !mine {
			it := base
			it.Kind, it.Priority, it.Reason = KindStateChanged, "normal", "room_state_changed"
			it.SuggestedTools = []string{"agent_protocols_room_state"}
			items = append(items, it)
		}
	case adp.TypeRoomJoin, adp.TypeRoomLeave:
		stateChanged = true
	default:
		if !mine && !adp.IsBuiltin(ev.Type) && slices.Contains(e.opts.Watch, ev.Type) {
			it := base
			it.Kind, it.Priority, it.Reason = KindEventCustom, "normal", "watched_type"
			it.SuggestedTools = []string{"agent_protocols_room_timeline"}
			items = append(items, it)
		}
	}
	if backfill {
		// History is not news, except what asks this agent to respond: a
		// mention, or a turn assigned to it that has not expired, received
		// within Options.BackfillWindow before this first sync.
		now := e.now()
		recent := e.opts.BackfillWindow > 0 && rec.ReceivedAt >= now.Add(-e.opts.BackfillWindow).UnixMilli()
		kept := items[:0]
		for _, it := range items {
			live := it.Kind == KindMention || it.Kind == KindTurnAssigned && (it.Deadline == nil || *it.Deadline > now.UnixMilli())
			if recent && live {
				kept = append(kept, it)
			}
		}
		items = kept
	}
	added := false
	for _, it := range items {
		n, err := addInbox(tx, it)
		if err != nil {
			return false, false, err
		}
		added = added || n
	}
	return added, stateChanged, nil
}

// Bounds of join-request notices: the longest request id kept, and the
// most pending room.join.requested items per room.
const (
	maxRequestIDLen = 64
	maxJoinNotices  = 100
)

// joinRequested turns a live join-request notice into a review item when
// this agent is the creator or an active moderator (verified state).
func (e *Engine) joinRequested(k roomKey, h *hostState, jr *adp.JoinRequestNotice) {
	reviews := false
	e.verified(k, func(room *adp.Room) { reviews = room != nil && e.reviews(room) })
	if jr == nil || !reviews {
		return
	}
	// The notice is an unsigned host hint (§17.5): its id must look like an
	// id, and a room holds at most maxJoinNotices pending ones (the
	// authoritative list is join_requests_list).
	if checkRoomID(jr.RequestID) != nil || len(jr.RequestID) > maxRequestIDLen {
		e.opts.Logger.Warn("connector: join-request notice with a malformed request id dropped", "room", k.room)
		return
	}
	it := InboxItem{Kind: KindJoinRequested, Priority: "normal", Host: k.host, RoomID: k.room, EventID: jr.RequestID,
		Actor: jr.Applicant.String(), CreatedAt: e.now().UnixMilli(), RequiresResponse: true, Reason: "join_request",
		SuggestedTools: []string{"agent_protocols_join_requests_list", "agent_protocols_join_request_review"}}
	var added bool
	if err := e.store.Update(func(tx stateTx) error {
		n := 0
		if err := tx.Scan(bPending, "", func(_ string, raw []byte) error {
			var it storedInbox
			if err := unmarshalStored(raw, &it); err != nil {
				return err
			}
			if it.Item.Kind == KindJoinRequested && it.Item.Host == k.host && it.Item.RoomID == k.room {
				n++
			}
			return nil
		}); err != nil {
			return err
		}
		if n >= maxJoinNotices {
			return nil
		}
		var err error
		added, err = addInbox(tx, it)
		return err
	}); err == nil && added {
		e.notify(URIInboxPending)
		e.wakeInbox()
	}
}

// actionable reports whether an item is pending and visible to a session
// now: unclaimed, claimed by this session, or claimed by a session whose
// lease has lapsed (a claim is a lease: a client that went away without ending its
// session must not hide what it claimed).
func (e *Engine) actionable(it *storedInbox, session string, now int64) bool {
	return it.State == "pending" && it.DeferUntil <= now &&
		(it.ClaimedBy == "" || it.ClaimedBy == session || !e.claimHeld(it.ClaimedBy))
}

func (e *Engine) pendingCount(tx stateTx, host, room, session string) (int, error) {
	now := e.now().UnixMilli()
	n := 0
	err := tx.Scan(bPending, "", func(_ string, raw []byte) error {
		var it storedInbox
		if err := unmarshalStored(raw, &it); err != nil {
			return err
		}
		if (room == "" || it.Item.RoomID == room && it.Item.Host == host) && it.State == "pending" && it.DeferUntil <= now {
			n++
		}
		return nil
	})
	return n, err
}

// testHookInboxWait, when set by a test, is called each time an InboxNext
// long-poll has found nothing and is about to wait.
var testHookInboxWait atomic.Pointer[func(*Engine)]

// InboxNext is agent_protocols_inbox_next (local state): pending items,
// oldest first, high priority first; claim marks them for this session
// (a lease, see Options.ClaimLease); wait_ms long-polls (at most
// MaxInboxWait) when nothing is pending.
func (e *Engine) InboxNext(ctx context.Context, session string, in InboxNextInput) (*InboxNextResult, error) {
	e.touch(session)
	defer e.touch(session)
	limit := pageInbox.of(in.Limit)
	wait := min(time.Duration(in.WaitMS)*time.Millisecond, MaxInboxWait)
	var deadline <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		deadline = t.C
	}
	host, room, err := e.filterRoom(in.Host, in.RoomID)
	if err != nil {
		return nil, err
	}
	for {
		e.mu.Lock()
		poll := e.now().Sub(e.lastJoinPoll) >= 2*time.Second
		if poll {
			e.lastJoinPoll = e.now()
		}
		wake := e.inboxWake
		e.mu.Unlock()
		if poll {
			e.pollJoinRequests(ctx)
		}
		res := &InboxNextResult{Items: []InboxItem{}}
		err := e.store.Update(func(tx stateTx) error {
			now := e.now().UnixMilli()
			var all []storedInbox
			if err := tx.Scan(bPending, "", func(_ string, raw []byte) error {
				var it storedInbox
				if err := unmarshalStored(raw, &it); err != nil {
					return err
				}
				if !e.actionable(&it, session, now) || (room != "" && it.Item.RoomID != room) ||
					(host != "" && it.Item.Host != host) || (len(in.Kinds) > 0 && !slices.Contains(in.Kinds, it.Item.Kind)) {
					return nil
				}
				all = append(all, it)
				return nil
			}); err != nil {
				return err
			}
			sort.SliceStable(all, func(i, j int) bool {
				pi, pj := all[i].Item.Priority == "high", all[j].Item.Priority == "high"
				if pi != pj {
					return pi
				}
				if all[i].Item.CreatedAt != all[j].Item.CreatedAt {
					return all[i].Item.CreatedAt < all[j].Item.CreatedAt
				}
				return all[i].Item.ID < all[j].Item.ID
			})
			for i := range all {
				if len(res.Items) == limit {
					break
				}
				if in.Claim && all[i].ClaimedBy != session {
					all[i].ClaimedBy = session
					if err := putInbox(tx, &all[i]); err != nil {
						return err
					}
				}
				res.Items = append(res.Items, all[i].Item)
			}
			var err error
			res.PendingCount, err = e.pendingCount(tx, "", "", session)
			return err
		})
		if err != nil {
			return nil, err
		}
		if room != "" && host != "" {
			if _, known := e.knownRoom(roomKey{host, room}); known {
				res.Sync = e.syncOf(session, roomKey{host, room})
			}
		}
		if len(res.Items) > 0 || deadline == nil {
			return res, nil
		}
		if hook := testHookInboxWait.Load(); hook != nil {
			(*hook)(e)
		}
		select {
		case <-ctx.Done():
			return res, nil
		case <-e.ctx.Done():
			return res, nil
		case <-deadline:
			return res, nil
		case <-wake:
		case <-time.After(2 * time.Second): // re-poll join requests
		}
	}
}

// filterRoom resolves the host and room_id filters of inbox_next and
// drafts_list: room_id alone that is known on several hosts is
// ErrAmbiguousRoom (§4.3); a room_id known on exactly one host names that
// host; an unknown one filters by id (and host, if given).
func (e *Engine) filterRoom(host, roomID string) (string, string, error) {
	if roomID != "" {
		k, _, err := e.resolve(host, roomID)
		switch {
		case err == nil:
			return k.host, k.room, nil
		case !errors.Is(err, ErrUnknownRoom):
			return "", "", err
		}
	}
	if host != "" {
		h, err := e.host(host)
		if err != nil {
			return "", "", err
		}
		host = h.name
	}
	return host, roomID, nil
}

// knownRoom reports whether the room is registered.
func (e *Engine) knownRoom(k roomKey) (*roomRT, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.rooms[k]
	return r, ok
}

// InboxAck is agent_protocols_inbox_ack (local state).
func (e *Engine) InboxAck(ctx context.Context, session string, in InboxAckInput) (*InboxAckResult, error) {
	e.touch(session)
	switch in.Action {
	case AckHandled, AckDismissed:
	case AckDefer:
		if in.DeferUntil <= 0 {
			return nil, fmt.Errorf("%w: defer needs defer_until", ErrInvalidInput)
		}
	default:
		return nil, fmt.Errorf("%w: unknown action %q", ErrInvalidInput, clip(in.Action))
	}
	res := &InboxAckResult{Acknowledged: []string{}}
	err := e.store.Update(func(tx stateTx) error {
		for _, id := range in.IDs {
			it, ok, err := getInbox(tx, id)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			switch in.Action {
			case AckDefer:
				it.DeferUntil, it.ClaimedBy = in.DeferUntil, ""
			default:
				it.State, it.ClaimedBy = in.Action, ""
			}
			if err := putInbox(tx, it); err != nil {
				return err
			}
			res.Acknowledged = append(res.Acknowledged, id)
		}
		var err error
		res.PendingCount, err = e.pendingCount(tx, "", "", session)
		return err
	})
	if err != nil {
		return nil, err
	}
	e.notify(URIInboxPending)
	return res, nil
}

// InboxPending lists every pending item (the inbox/pending resource).
func (e *Engine) InboxPending(ctx context.Context) ([]InboxItem, error) {
	out := []InboxItem{}
	err := e.store.View(func(tx stateTx) error {
		now := e.now().UnixMilli()
		return tx.Scan(bPending, "", func(_ string, raw []byte) error {
			var it storedInbox
			if err := unmarshalStored(raw, &it); err != nil {
				return err
			}
			if it.State == "pending" && it.DeferUntil <= now {
				out = append(out, it.Item)
			}
			return nil
		})
	})
	return out, err
}

// reviews reports whether this agent reviews join requests of the room:
// its creator or an active moderator, while the room is open.
func (e *Engine) reviews(room *adp.Room) bool {
	if st := room.Status(e.now()); st == adp.StatusEnded || st == adp.StatusCancelled {
		return false
	}
	creator, _ := room.Creator()
	m, ok := room.Member(e.agent)
	return ok && m.Status == adp.MemberActive && (creator == e.agent || m.Role == adp.RoleModerator)
}
