package connector

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/identity"
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
	if e.rooms[k] == nil {
		e.rooms[k] = &roomRT{}
	}
	e.mu.Unlock()
	if err := e.refresh(ctx, k, h); err != nil {
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

// refresh brings the room's replica up to the host's latest record
// (verifying every record) and persists what is new.
func (e *Engine) refresh(ctx context.Context, k roomKey, h *hostState) error {
	latest, err := h.client.Sync(ctx, k.room)
	if err != nil {
		return err
	}
	e.noteRemote(k, latest.Seq)
	return e.ingest(ctx, k, h, nil)
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
		defer func() {
			e.mu.Lock()
			r.subscribed = false
			e.mu.Unlock()
			cancel()
		}()
		retried := false
		for ctx.Err() == nil {
			err := e.follow(ctx, k, h)
			e.logf("connector: room %s on %s: subscription ended: %v", k.room, k.host, err)
			if ctx.Err() != nil {
				return
			}
			switch {
			case !isPermanent(err):
				retried = false
			case !retried && e.refreshedActive(ctx, k, h):
				// A stream opened before this agent's join was accepted
				// (room_open, then room_join) is refused after the join
				// already asked for a subscription and found this one
				// still running. One more attempt tells such a stale
				// refusal from a lost membership.
				retried = true
			default:
				e.membershipLost(ctx, k, h, err)
				return
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
	opts := &sse.Options{API: h.name + "/v1", RoomID: k.room, Signer: e.key.k,
		History: sse.HistoryFunc(h.client.Events), Start: start, HTTPClient: e.opts.HTTPClient,
		Origins: &identity.OriginOptions{AllowLoopbackHTTP: e.opts.AllowLoopbackHTTP}}
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
			e.logf("connector: room %s: %v", k.room, it.Err)
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
	return e.ingestDrop(ctx, k, h, recs, "")
}

// ingestDrop is ingest that also removes an outbox entry (the write whose
// record is being ingested) in the same transaction.
func (e *Engine) ingestDrop(ctx context.Context, k roomKey, h *hostState, recs []*adp.Record, outboxID string) error {
	var uris []string
	err := func() error {
		r := e.rt(k)
		r.mu.Lock()
		defer r.mu.Unlock()
		var err error
		uris, err = e.ingestLocked(ctx, k, h, recs, outboxID)
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

// ingestLocked is ingestDrop under the room's ingest lock; it returns the
// resource URIs whose state changed.
func (e *Engine) ingestLocked(ctx context.Context, k roomKey, h *hostState, recs []*adp.Record, outboxID string) ([]string, error) {
	var synced int64
	if err := e.store.View(func(tx stateTx) error {
		sr, err := loadRoom(tx, k)
		synced = sr.SyncedSeq
		return err
	}); err != nil {
		return nil, err
	}
	room := h.client.Verified(k.room)
	if room == nil {
		return nil, nil
	}
	var add []*adp.Record
	next := synced + 1
	for _, rec := range recs {
		if rec.Seq == next {
			add = append(add, rec)
			next++
		}
	}
	for range 4 {
		if next > room.Latest().Seq {
			break
		}
		for rec, err := range h.client.Events(ctx, k.room, next-1) {
			if err != nil {
				return nil, err
			}
			if rec.Seq == next {
				add = append(add, rec)
				next++
			}
		}
	}
	if len(add) == 0 && synced != 0 {
		if outboxID != "" {
			return nil, e.dropOutbox(outboxID)
		}
		return nil, nil
	}
	head := room.Head()
	every := int64(e.opts.SnapshotEvery)
	if every <= 0 {
		every = 256
	}
	var newInbox bool
	var changedState bool
	err := e.store.Update(func(tx stateTx) error {
		sr, err := loadRoom(tx, k)
		if err != nil {
			return err
		}
		if outboxID != "" {
			if err := tx.Delete(bOutbox, outboxID); err != nil {
				return err
			}
		}
		for _, rec := range add {
			if err := tx.Put(bRecords, reckey(k.host, k.room, rec.Seq), jsontext.Value(rec.AppendJSON(nil))); err != nil {
				return err
			}
			n, sc, err := e.inboxFromRecord(tx, k, room, sr, rec, synced == 0)
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
	if err != nil {
		return nil, err
	}
	var uris []string
	if len(add) > 0 {
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
	h, err := parseHash(s.HeadHash)
	if err != nil {
		return
	}
	e.mu.Lock()
	e.presented[presKey{session, k}] = adp.RecordRef{Seq: s.HeadSeq, Hash: h}
	e.mu.Unlock()
}

// messageLike reports whether a record counts as unread content.
func messageLike(typ string, room *adp.Room) bool {
	if typ == adp.TypeMessageCreate {
		return true
	}
	if adp.IsBuiltin(typ) {
		return false
	}
	if room != nil {
		if d := room.Registry().Lookup(typ); d != nil {
			return d.Kind == adp.KindMessage
		}
	}
	return false
}

func (e *Engine) unreadCount(tx stateTx, k roomKey, readSeq int64) (int, error) {
	n := 0
	var room *adp.Room
	if h := e.hosts[k.host]; h != nil && h.client != nil {
		room = h.client.Verified(k.room)
	}
	err := e.records(tx, k, readSeq, 0, func(rec *adp.Record) bool {
		if e.unread(rec, room, readSeq) {
			n++
		}
		return true
	})
	return n, err
}

// unread reports whether a record counts as unread content.
func (e *Engine) unread(rec *adp.Record, room *adp.Room, readSeq int64) bool {
	return rec.Seq > readSeq && rec.Envelope.Actor() != e.agent && messageLike(rec.Envelope.Type(), room)
}

// timelineItem is the §4.2 view of a verified record.
func (e *Engine) timelineItem(rec *adp.Record, room *adp.Room, withRecord bool) TimelineItem {
	ev := rec.Envelope.Event()
	it := TimelineItem{RoomID: rec.RoomID, Seq: rec.Seq, EventID: rec.Envelope.Hash().String(), Type: ev.Type,
		Actor: ev.Actor.String(), CreatedAt: ev.CreatedAt, ReceivedAt: rec.ReceivedAt, Payload: ev.Payload}
	switch c := adp.BuiltinCategory(ev.Type); {
	case c != "":
		it.Kind = string(c)
	case room != nil && room.Registry().Lookup(ev.Type) != nil:
		it.Kind = string(room.Registry().Lookup(ev.Type).Kind)
	}
	if pe, err := adp.ParseEvent(rec.Envelope); err == nil {
		for _, m := range pe.Mentions {
			it.Mentions = append(it.Mentions, m.String())
		}
	}
	it.Summary = ev.Type
	if ev.Type == adp.TypeMessageCreate {
		var m adp.Message
		if json.Unmarshal(ev.Payload, &m, json.RejectUnknownMembers(false)) == nil {
			it.ContentType, it.Content = m.ContentType, m.Content
			it.References = []string{}
			for _, r := range m.References {
				it.References = append(it.References, r.String())
			}
			if it.Mentions == nil {
				it.Mentions = []string{}
			}
			var s string
			if json.Unmarshal(m.Content, &s) == nil {
				it.Summary = summarize(s)
			}
		}
	}
	if withRecord {
		it.Record = rec.AppendJSON(nil)
	}
	return it
}

func summarize(s string) string {
	const max = 280
	if len(s) <= max {
		return s
	}
	s = s[:max]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

// records reads stored records of a room with after < seq < before (0: no bound).
func (e *Engine) records(tx stateTx, k roomKey, after, before int64, fn func(*adp.Record) bool) error {
	return tx.ScanFrom(bRecords, rkey(k.host, k.room), reckey(k.host, k.room, after+1), func(key string, raw []byte) error {
		rec, err := adp.ParseRecord(raw)
		if err != nil {
			return err
		}
		if before > 0 && rec.Seq >= before {
			return errStop
		}
		if rec.Seq <= after {
			return nil
		}
		if !fn(rec) {
			return errStop
		}
		return nil
	})
}

// RoomOpen is agent_protocols_room_open: register and sync a room of an
// allowlisted host (remote read), optionally subscribing to its live
// stream, and present its head to the session.
func (e *Engine) RoomOpen(ctx context.Context, session string, in RoomOpenInput) (*RoomOpenResult, error) {
	h, err := e.host(in.Host)
	if err != nil {
		return nil, err
	}
	if in.RoomID == "" {
		return nil, fmt.Errorf("%w: room_id is required", ErrInvalidInput)
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

// resolveRefreshed resolves (host, room_id) like resolve and, when refresh
// is set, first brings the room up to date from the host.
func (e *Engine) resolveRefreshed(ctx context.Context, host, roomID string, refresh bool) (roomKey, *hostState, error) {
	k, h, err := e.resolve(host, roomID)
	if err != nil {
		return roomKey{}, nil, err
	}
	if refresh {
		if err := e.refresh(ctx, k, h); err != nil {
			return roomKey{}, nil, err
		}
	}
	return k, h, nil
}

// RoomState is agent_protocols_room_state (local read; refresh reads the host).
func (e *Engine) RoomState(ctx context.Context, session string, in RoomStateInput) (*RoomStateResult, error) {
	k, h, err := e.resolveRefreshed(ctx, in.Host, in.RoomID, in.Refresh)
	if err != nil {
		return nil, err
	}
	view, s, err := e.roomView(k, h, in.IncludeTypes)
	if err != nil {
		return nil, err
	}
	e.present(session, k, s)
	return &RoomStateResult{Room: *view, Sync: s}, nil
}

// roomView projects the stored verified replica.
func (e *Engine) roomView(k roomKey, h *hostState, types bool) (*RoomStateView, SyncState, error) {
	var s SyncState
	var sr *storedRoom
	err := e.store.View(func(tx stateTx) error {
		var err error
		if sr, err = loadRoom(tx, k); err != nil {
			return err
		}
		s, err = e.syncState(tx, k)
		return err
	})
	if err != nil {
		return nil, s, err
	}
	room := h.client.Verified(k.room)
	if room == nil || !room.Created() {
		return nil, s, fmt.Errorf("%w: %s has no verified state yet", ErrUnknownRoom, clip(k.room))
	}
	c := room.Contract()
	creator, createdAt := room.Creator()
	pol, _ := json.Marshal(c.Policy)
	v := &RoomStateView{Host: k.host, RoomID: k.room, Status: string(room.Status(e.now())), Visibility: string(c.Visibility),
		Topic: c.Topic, Agenda: c.Agenda, Guidance: c.Guidance, Creator: creator.String(), CreatedAt: createdAt,
		StartTime: c.StartTime, EndTime: c.EndTime, Tags: nonNil(c.Tags), Language: c.Language, Policy: pol,
		UnreadCount: s.UnreadCount, PendingInboxCount: s.PendingInboxCount, ActiveTurn: sr.ActiveTurn}
	l := room.Latest()
	v.Seq, v.Hash = l.Seq, l.Hash.String()
	hd := room.Head()
	v.Head = RecordRefView{Seq: hd.Seq, Hash: hd.Hash.String()}
	for _, m := range room.Members() {
		if m.Status == adp.MemberActive {
			v.MembersCount++
		}
		if m.ID == e.agent {
			mv := memberView(m, creator)
			v.SelfMember = &mv
		}
	}
	if types {
		v.Types, _ = json.Marshal(room.Registry().Definitions())
	}
	return v, s, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func memberView(m adp.Member, creator identity.AgentID) RoomMemberView {
	v := RoomMemberView{AgentID: m.ID.String(), Role: string(m.Role), Status: string(m.Status), IsCreator: m.ID == creator,
		Perspective: m.Perspective, JoinedSeq: m.JoinedSeq, LastEventSeq: m.LastEventSeq, Extra: jsontext.Value("{}")}
	if m.LeftSeq != 0 {
		ls := m.LeftSeq
		v.LeftSeq = &ls
	}
	return v
}

// Timeline is agent_protocols_room_timeline (local read of verified
// records; refresh reads the host first; mark_read advances the cursor).
func (e *Engine) Timeline(ctx context.Context, session string, in TimelineInput) (*TimelineResult, error) {
	k, h, err := e.resolveRefreshed(ctx, in.Host, in.RoomID, in.Refresh)
	if err != nil {
		return nil, err
	}
	limit := pageLimit(in.Limit, 50, 200)
	room := h.client.Verified(k.room)
	res := &TimelineResult{Items: []TimelineItem{}}
	var maxSeq int64
	err = e.store.Update(func(tx stateTx) error {
		sr, err := loadRoom(tx, k)
		if err != nil {
			return err
		}
		var after, before int64
		if in.AfterSeq != nil {
			after = *in.AfterSeq
		}
		if in.BeforeSeq != nil {
			before = *in.BeforeSeq
		}
		if in.UnreadOnly {
			after = max(after, sr.ReadSeq)
		}
		more := false
		err = e.records(tx, k, after, before, func(rec *adp.Record) bool {
			if len(res.Items) == limit {
				more = true
				return false
			}
			maxSeq = rec.Seq
			typ := rec.Envelope.Type()
			if len(in.Types) > 0 && !slices.Contains(in.Types, typ) {
				return true
			}
			if len(in.Actors) > 0 && !slices.Contains(in.Actors, rec.Envelope.Actor().String()) {
				return true
			}
			if in.UnreadOnly && (rec.Envelope.Actor() == e.agent || !messageLike(typ, room)) {
				return true
			}
			res.Items = append(res.Items, e.timelineItem(rec, room, in.IncludeRecords))
			return true
		})
		if err != nil {
			return err
		}
		if more {
			n := maxSeq
			res.NextAfterSeq = &n
		}
		// mark_read covers what was returned; records skipped by a type or
		// actor filter stay unread, while those unread_only skipped are
		// not unread content anyway.
		markSeq := maxSeq
		if len(in.Types) > 0 || len(in.Actors) > 0 {
			markSeq = 0
			if n := len(res.Items); n > 0 {
				markSeq = res.Items[n-1].Seq
			}
		}
		if in.MarkRead && markSeq > sr.ReadSeq {
			sr.ReadSeq = markSeq
			if sr.Unread, err = e.unreadCount(tx, k, sr.ReadSeq); err != nil {
				return err
			}
			if err := tx.Put(bRooms, rkey(k.host, k.room), sr); err != nil {
				return err
			}
		}
		res.Sync, err = e.syncState(tx, k)
		return err
	})
	if err != nil {
		return nil, err
	}
	e.present(session, k, res.Sync)
	return res, nil
}

// MarkRead is agent_protocols_room_mark_read (local state).
func (e *Engine) MarkRead(ctx context.Context, in MarkReadInput) (*MarkReadResult, error) {
	k, _, err := e.resolve(in.Host, in.RoomID)
	if err != nil {
		return nil, err
	}
	res := &MarkReadResult{RoomID: k.room}
	err = e.store.Update(func(tx stateTx) error {
		sr, err := loadRoom(tx, k)
		if err != nil {
			return err
		}
		if in.ThroughSeq > sr.ReadSeq {
			sr.ReadSeq = min(in.ThroughSeq, sr.SyncedSeq)
			if sr.Unread, err = e.unreadCount(tx, k, sr.ReadSeq); err != nil {
				return err
			}
			if err := tx.Put(bRooms, rkey(k.host, k.room), sr); err != nil {
				return err
			}
		}
		res.ReadSeq, res.UnreadCount = sr.ReadSeq, sr.Unread
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func (e *Engine) logf(format string, args ...any) {
	if e.opts.Logf != nil {
		e.opts.Logf(format, args...)
	}
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
