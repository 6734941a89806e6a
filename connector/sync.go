package connector

import (
	"context"
	"errors"
	"time"
	"unicode/utf8"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
	"github.com/agentprotocols/go-sdk/sse"
)

func unmarshalStored(raw []byte, v any) error { return strictjson.Unmarshal(raw, v) }

// loadRoom reads a room's durable state.
func loadRoom(tx stateTx, k roomKey) (*storedRoom, error) {
	var sr storedRoom
	ok, err := tx.Get(bRooms, rkey(k.host, k.room), &sr)
	if err != nil {
		return nil, err
	}
	if !ok {
		sr = storedRoom{Host: k.host, RoomID: k.room}
	}
	return &sr, nil
}

// openRoom registers a room (allowlisted host only), syncs it from the
// host and optionally subscribes.
func (e *Engine) openRoom(ctx context.Context, h *hostState, roomID string, subscribe bool) (roomKey, error) {
	k := roomKey{h.name, roomID}
	e.mu.Lock()
	fresh := e.rooms[k] == nil
	if fresh {
		e.rooms[k] = &roomRT{}
	}
	e.mu.Unlock()
	if err := e.refresh(ctx, k, h); err != nil {
		if rep := e.openReplica(k); fresh && (rep == nil || rep.Latest().Seq == 0) {
			// A failed first open is not retained: nothing of it
			// was verified or stored.
			e.mu.Lock()
			if r := e.rooms[k]; r != nil && !r.subscribed {
				delete(e.rooms, k)
			}
			e.mu.Unlock()
		}
		return k, err
	}
	if subscribe && !e.opts.NoSubscribe {
		if err := e.store.Update(func(tx stateTx) error {
			sr, err := loadRoom(tx, k)
			if err != nil {
				return err
			}
			sr.Subscribe = true
			return tx.Put(bRooms, rkey(k.host, k.room), sr)
		}); err != nil {
			return k, err
		}
		e.subscribe(k)
	}
	return k, nil
}

// refresh brings the room's replica up to the host's latest record; its
// hook persists what is new, page by page as each page is verified (the
// history is read once and never held whole). The room resource's seq is
// read first (§4.1 reconciliation): it is the host-advertised latest
// record, shown as remote_seq while the history is not fully synced. A
// reader that may not read the resource (a private room before approval)
// skips that hint.
func (e *Engine) refresh(ctx context.Context, k roomKey, h *hostState) error {
	res, err := h.client.GetRoom(ctx, k.room)
	if err == nil {
		e.noteRemote(k, res.Seq)
	}
	rep, err := e.replica(h, k.room)
	if err != nil {
		return err
	}
	if rep.Latest().Seq == 0 {
		// The first sync reads the room's past (Options.BackfillWindow).
		r := e.rt(k)
		e.mu.Lock()
		r.backfill = true
		e.mu.Unlock()
		defer func() {
			e.mu.Lock()
			r.backfill = false
			e.mu.Unlock()
		}()
	}
	if _, err := h.client.Sync(ctx, k.room); err != nil {
		return h.err(err)
	}
	if res != nil {
		e.noteURL(k, res.URL)
	}
	e.noteRemote(k, rep.Latest().Seq)
	return nil
}

// noteURL stores the room URL the host's resource names, when it changed
// (bounded: it is host text shown to the agent).
func (e *Engine) noteURL(k roomKey, u string) {
	if len(u) > 2048 || !utf8.ValidString(u) {
		return
	}
	_ = e.store.Update(func(tx stateTx) error {
		sr, err := loadRoom(tx, k)
		if err != nil || sr.URL == u || sr.SyncedSeq == 0 {
			return err
		}
		sr.URL = u
		return tx.Put(bRooms, rkey(k.host, k.room), sr)
	})
}

func (e *Engine) rt(k roomKey) *roomRT {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.rooms[k]
	if r == nil {
		r = &roomRT{}
		e.rooms[k] = r
	}
	return r
}

func (e *Engine) noteRemote(k roomKey, seq int64) {
	r := e.rt(k)
	e.mu.Lock()
	if seq > r.remoteSeq {
		r.remoteSeq = seq
	}
	e.mu.Unlock()
}

// subscribe starts the room's live subscription (once).
func (e *Engine) subscribe(k roomKey) {
	r := e.rt(k)
	e.mu.Lock()
	if r.subscribed || e.ctx.Err() != nil {
		e.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(e.ctx)
	r.subscribed, r.stop = true, cancel
	e.mu.Unlock()
	h := e.hosts[k.host]
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		nonMember := false
		defer func() {
			e.mu.Lock()
			r.subscribed = false
			e.mu.Unlock()
			cancel()
			// A join that landed while this non-member's subscription
			// was ending found it still running: start the member's.
			if nonMember && e.ctx.Err() == nil && e.activeMember(k, h) {
				e.subscribe(k)
			}
		}()
		retried := false
		for ctx.Err() == nil {
			err := e.follow(ctx, k, h)
			if ctx.Err() != nil {
				return // Close or an unsubscribe ended it: nothing to report
			}
			e.opts.Logger.Warn("connector: subscription ended", "room", k.room, "host", k.host, "err", err)
			if !isPermanent(err) {
				retried = false
			} else {
				switch active := e.refreshedActive(ctx, k, h); {
				case active && !retried:
					// A stream opened before this agent's join was
					// accepted (room_open, then room_join) is refused
					// after the join already asked for a subscription and
					// found this one still running. One more attempt
					// tells such a stale refusal from a lost membership.
					retried = true
				case !active && !retried:
					// A reader that is not a member (yet): nothing was
					// lost, whatever a join meanwhile stored.
					nonMember = true
					return
				default:
					e.membershipLost(ctx, k, h, err)
					return
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}()
}

// refreshedActive refreshes the room's replica and reports whether it
// shows this agent as an active member.
func (e *Engine) refreshedActive(ctx context.Context, k roomKey, h *hostState) bool {
	_ = e.refresh(ctx, k, h) // a failed refresh leaves the replica as it was
	return e.activeMember(k, h)
}

// activeMember reports whether the verified replica of the room shows this
// agent as an active member.
func (e *Engine) activeMember(k roomKey, h *hostState) bool {
	active := false
	e.verified(k, func(room *adp.Room) {
		if room != nil {
			m, ok := room.Member(e.agent)
			active = ok && m.Status == adp.MemberActive
		}
	})
	return active
}

func isPermanent(err error) bool {
	return errors.Is(err, adp.ErrMembershipRequired) || errors.Is(err, adp.ErrRoomNotFound) ||
		errors.Is(err, adp.ErrPermissionDenied) || errors.Is(err, adp.ErrInvalidToken)
}

// follow runs one sse.Follow session into the room's replica, whose hook
// persists each record; join-request notices become inbox items for
// reviewers.
func (e *Engine) follow(ctx context.Context, k roomKey, h *hostState) error {
	rep, err := e.replica(h, k.room)
	if err != nil {
		return err
	}
	opts := &sse.Options{Client: h.client, Replica: rep}
	for it, err := range sse.Follow(ctx, opts) {
		if err != nil {
			return err
		}
		if f := e.liveSeen.Load(); f != nil {
			(*f)(k, it)
		}
		switch it.Kind {
		case sse.KindRecord:
			e.noteRemote(k, it.Record.Seq)
		case sse.KindJoinRequest:
			e.joinRequested(k, h, it.JoinRequest)
		case sse.KindAgentStatus:
			e.notify(RoomURI(k.room, "agent-status"))
		case sse.KindError:
			e.opts.Logger.Warn("connector: live stream error", "room", k.room, "err", it.Err)
			if it.Err != nil && isPermanent(it.Err) {
				return it.Err
			}
		}
	}
	return nil
}

// syncState computes SyncState from the durable state and the replica.
func (e *Engine) syncState(tx stateTx, k roomKey) (SyncState, error) {
	sr, err := loadRoom(tx, k)
	if err != nil {
		return SyncState{}, err
	}
	s := SyncState{Host: k.host, RoomID: k.room, SyncedSeq: sr.SyncedSeq, RemoteSeq: sr.RemoteSeq}
	s.HeadSeq, s.HeadHash = sr.HeadSeq, sr.HeadHash
	e.mu.Lock()
	if r := e.rooms[k]; r != nil {
		s.Subscribed = r.subscribed
		s.RemoteSeq = max(s.RemoteSeq, r.remoteSeq)
	}
	e.mu.Unlock()
	s.UnreadCount = sr.Unread
	s.PendingInboxCount, err = e.pendingCount(tx, k.host, k.room, "")
	return s, err
}

// present records the head returned to a session for a room.
func (e *Engine) present(session string, k roomKey, s SyncState) {
	e.touch(session)
	h, err := parseHash(s.HeadHash)
	if err != nil {
		return
	}
	e.mu.Lock()
	e.presented[presKey{session, k}] = adp.RecordRef{Seq: s.HeadSeq, Hash: h}
	e.mu.Unlock()
}

// RoomOpen is agent_protocols_room_open: register and sync a room of an
// allowlisted host (remote read), optionally subscribing to its live
// stream, and present its head to the session.
func (e *Engine) RoomOpen(ctx context.Context, session string, in RoomOpenInput) (*RoomOpenResult, error) {
	h, err := e.host(in.Host)
	if err != nil {
		return nil, err
	}
	if err := checkRoomID(in.RoomID); err != nil {
		return nil, err
	}
	sub := in.Subscribe == nil || *in.Subscribe
	k, err := e.openRoom(ctx, h, in.RoomID, sub)
	if err != nil {
		return nil, err
	}
	view, s, err := e.roomView(k, h, false)
	if err != nil {
		return nil, err
	}
	e.present(session, k, s)
	return &RoomOpenResult{Room: *view, Sync: s, ActiveTurn: view.ActiveTurn}, nil
}

// membershipLost handles a subscription the host ended for good: the
// history is read once more (the removal record, when still readable);
// otherwise the loss itself becomes a local room.member.removed item.
func (e *Engine) membershipLost(ctx context.Context, k roomKey, h *hostState, cause error) {
	var before int64
	_ = e.store.View(func(tx stateTx) error {
		sr, err := loadRoom(tx, k)
		before = sr.SyncedSeq
		return err
	})
	if err := e.refresh(ctx, k, h); err == nil {
		var after int64
		_ = e.store.View(func(tx stateTx) error {
			sr, err := loadRoom(tx, k)
			after = sr.SyncedSeq
			return err
		})
		if after > before {
			return // the records explain it (and created their items)
		}
	}
	if !errors.Is(cause, adp.ErrMembershipRequired) {
		return
	}
	// Only a membership the verified state shows active can be lost; a
	// reader who never joined (or already left) has nothing to report.
	if !e.activeMember(k, h) {
		return
	}
	var added bool
	_ = e.store.Update(func(tx stateTx) error {
		var err error
		added, err = addInbox(tx, InboxItem{Kind: KindMemberRemoved, Priority: "high", Host: k.host, RoomID: k.room,
			Actor: e.agent.String(), CreatedAt: e.now().UnixMilli(), Reason: "membership_lost",
			SuggestedTools: []string{"agent_protocols_room_state"}})
		return err
	})
	if added {
		e.notify(URIInboxPending)
		e.wakeInbox()
	}
}
