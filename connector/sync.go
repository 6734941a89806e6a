package connector

import (
	"context"
	"errors"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

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
		if room := h.client.Verified(k.room); fresh && (room == nil || room.Latest().Seq == 0) {
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

// refresh brings the room's replica up to the host's latest record and
// persists what is new, page by page as each page is verified (the
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
	if err := e.ingestDrop(ctx, k, h, nil, "", true); err != nil {
		return err
	}
	if res != nil {
		e.noteURL(k, res.URL)
	}
	if room := h.client.Verified(k.room); room != nil {
		e.noteRemote(k, room.Latest().Seq)
	}
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
	room := h.client.Verified(k.room)
	if room == nil {
		return false
	}
	m, ok := room.Member(e.agent)
	return ok && m.Status == adp.MemberActive
}

func isPermanent(err error) bool {
	return errors.Is(err, adp.ErrMembershipRequired) || errors.Is(err, adp.ErrRoomNotFound) ||
		errors.Is(err, adp.ErrPermissionDenied) || errors.Is(err, adp.ErrInvalidToken)
}

// follow runs one sse.Follow session: records are admitted to the
// client's verified replica and persisted; join-request notices become
// inbox items for reviewers.
func (e *Engine) follow(ctx context.Context, k roomKey, h *hostState) error {
	if err := e.ingest(ctx, k, h, nil); err != nil {
		return err
	}
	var start adp.RecordRef
	if room := h.client.Verified(k.room); room != nil {
		l := room.Latest()
		start = adp.RecordRef{Seq: l.Seq, Hash: l.Hash}
	}
	opts := &sse.Options{Client: h.client, RoomID: k.room, Start: start}
	for it, err := range sse.Follow(ctx, opts) {
		if err != nil {
			return err
		}
		switch it.Kind {
		case sse.KindRecord:
			if err := h.client.Admit(ctx, k.room, it.Record); err != nil {
				return err
			}
			e.noteRemote(k, it.Record.Seq)
			if err := e.ingest(ctx, k, h, []*adp.Record{it.Record}); err != nil {
				return err
			}
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

// ingest persists the verified records the store does not hold yet, up to
// the replica's latest record, in one transaction with the inbox items they
// create, the new synced_seq and the replica snapshot. recs are records the
// caller already verified (admitted); gaps are read from history.
func (e *Engine) ingest(ctx context.Context, k roomKey, h *hostState, recs []*adp.Record) error {
	return e.ingestDrop(ctx, k, h, recs, "", false)
}

// ingestDrop is ingest that also removes an outbox entry (the write whose
// record is being ingested) in its last transaction; toHost reads the
// host's history to its end (see ingestLocked).
func (e *Engine) ingestDrop(ctx context.Context, k roomKey, h *hostState, recs []*adp.Record, outboxID string, toHost bool) error {
	var uris []string
	err := func() error {
		r := e.rt(k)
		r.mu.Lock()
		defer r.mu.Unlock()
		var err error
		uris, err = e.ingestLocked(ctx, k, h, recs, outboxID, toHost)
		return err
	}()
	// Notify and wake outside the room lock: Notify may call back in.
	for _, u := range uris {
		if u == URIInboxPending {
			e.wakeInbox()
		}
	}
	e.notify(uris...)
	return err
}

// ingestBatch is how many records one ingest transaction persists: a long
// history is stored page by page as it is verified, never held whole,
// so a big room costs a page of memory, not the room.
const ingestBatch = 64

// ingestLocked is ingestDrop under the room's ingest lock; it returns the
// resource URIs whose state changed. toHost reads the host's history to
// its end even when the replica holds nothing newer (refresh); otherwise
// history is read only to fill the gap up to the replica's latest record.
func (e *Engine) ingestLocked(ctx context.Context, k roomKey, h *hostState, recs []*adp.Record, outboxID string, toHost bool) ([]string, error) {
	var synced int64
	if err := e.store.View(func(tx stateTx) error {
		sr, err := loadRoom(tx, k)
		synced = sr.SyncedSeq
		return err
	}); err != nil {
		return nil, err
	}
	if !toHost && h.client.Verified(k.room) == nil {
		return nil, nil
	}
	// The first sync reads the room's past: only recent mentions and turn
	// assignments in it are news (Options.BackfillWindow).
	backfill := synced == 0
	var batch []*adp.Record
	var added, newInbox, changedState, wrote bool
	next := synced + 1
	flush := func(final bool) error {
		if len(batch) == 0 && !(final && (outboxID != "" || !wrote && backfill)) {
			return nil
		}
		n, sc, err := e.persist(k, h, batch, final, outboxID, backfill)
		if err != nil {
			return err
		}
		added = added || len(batch) > 0
		newInbox, changedState, wrote = newInbox || n, changedState || sc, true
		batch = batch[:0]
		return nil
	}
	for _, rec := range recs {
		if rec.Seq == next {
			batch = append(batch, rec)
			next++
		}
	}
	for i := range 4 {
		if room := h.client.Verified(k.room); !(toHost && i == 0) && (room == nil || next > room.Latest().Seq) {
			break
		}
		for rec, err := range h.client.Events(ctx, k.room, next-1) {
			if err != nil {
				return nil, h.err(err)
			}
			if rec.Seq == next {
				batch = append(batch, rec)
				next++
			}
			if len(batch) >= ingestBatch {
				if err := flush(false); err != nil {
					return nil, err
				}
			}
		}
	}
	if err := flush(true); err != nil {
		return nil, err
	}
	var uris []string
	if added {
		uris = append(uris, RoomURI(k.room, "timeline"), RoomURI(k.room))
		if changedState {
			uris = append(uris, RoomURI(k.room, "members"), RoomURI(k.room, "types"))
		}
	}
	if newInbox {
		uris = append(uris, URIInboxPending)
	}
	return uris, nil
}

// persist stores verified records in one transaction with the inbox items
// they create, the new synced_seq and head, and a replica snapshot when one
// is due (or final and none is stored yet); final also removes outboxID.
func (e *Engine) persist(k roomKey, h *hostState, add []*adp.Record, final bool, outboxID string, backfill bool) (bool, bool, error) {
	room := h.client.Verified(k.room)
	if room == nil {
		return false, false, nil
	}
	head := room.Head()
	every := int64(e.opts.SnapshotEvery)
	if every <= 0 {
		every = 256
	}
	var newInbox, changedState bool
	err := e.store.Update(func(tx stateTx) error {
		sr, err := loadRoom(tx, k)
		if err != nil {
			return err
		}
		if final && outboxID != "" {
			if err := tx.Delete(bOutbox, outboxID); err != nil {
				return err
			}
		}
		if len(add) == 0 && sr.SyncedSeq != 0 {
			return nil
		}
		for _, rec := range add {
			if err := tx.Put(bRecords, reckey(k.host, k.room, rec.Seq), jsontext.Value(rec.AppendJSON(nil))); err != nil {
				return err
			}
			n, sc, err := e.inboxFromRecord(tx, k, room, sr, rec, backfill)
			if err != nil {
				return err
			}
			newInbox = newInbox || n
			changedState = changedState || sc
			sr.SyncedSeq = rec.Seq
			if e.unread(rec, room, sr.ReadSeq) {
				sr.Unread++
			}
		}
		if head.Seq <= sr.SyncedSeq {
			sr.HeadSeq, sr.HeadHash = head.Seq, head.Hash.String()
		}
		if len(sr.Snapshot) == 0 || sr.SyncedSeq-sr.SnapSeq >= every {
			snap, err := room.Snapshot()
			if err != nil {
				return err
			}
			sr.Snapshot, sr.SnapSeq = snap, room.Latest().Seq
		}
		if sr.RemoteSeq < sr.SyncedSeq {
			sr.RemoteSeq = sr.SyncedSeq
		}
		return tx.Put(bRooms, rkey(k.host, k.room), sr)
	})
	return newInbox, changedState, err
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
