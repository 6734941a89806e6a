package connector

import (
	"context"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
	"github.com/agentprotocols/go-sdk/packs"
)

// messageLike reports whether a record counts as unread content.
func messageLike(typ string, reg *packs.Registry) bool {
	if typ == adp.TypeMessageCreate {
		return true
	}
	if adp.IsBuiltin(typ) {
		return false
	}
	if reg != nil {
		if d := reg.Lookup(typ); d != nil {
			return d.Kind == adp.KindMessage
		}
	}
	return false
}

// unreadCount counts the unread records after readSeq; reg is the room's
// registry (Engine.registry, read before the transaction).
func (e *Engine) unreadCount(tx stateTx, k roomKey, readSeq int64, reg *packs.Registry) (int, error) {
	n := 0
	err := e.records(tx, k, readSeq, 0, func(rec *adp.Record) bool {
		if e.unread(rec, reg, readSeq) {
			n++
		}
		return true
	})
	return n, err
}

// unread reports whether a record counts as unread content.
func (e *Engine) unread(rec *adp.Record, reg *packs.Registry, readSeq int64) bool {
	return rec.Seq > readSeq && rec.Envelope.Actor() != e.agent && messageLike(rec.Envelope.Type(), reg)
}

// timelineItem is the §4.2 view of a verified record.
func (e *Engine) timelineItem(rec *adp.Record, reg *packs.Registry, withRecord bool) TimelineItem {
	ev := rec.Envelope.Event()
	it := TimelineItem{RoomID: rec.RoomID, Seq: rec.Seq, EventID: rec.Envelope.Hash().String(), Type: ev.Type,
		Actor: ev.Actor.String(), CreatedAt: ev.CreatedAt, ReceivedAt: rec.ReceivedAt, Payload: ev.Payload}
	switch c := adp.BuiltinCategory(ev.Type); {
	case c != "":
		it.Kind = string(c)
	case reg != nil && reg.Lookup(ev.Type) != nil:
		it.Kind = string(reg.Lookup(ev.Type).Kind)
	}
	// The record was verified, its mentions and payload checked then:
	// they are read here as the strings they hold, not parsed again.
	if raw, ok := ev.Ext.Get(adp.FieldMentions); ok {
		if json.Unmarshal(raw, &it.Mentions) != nil || len(it.Mentions) == 0 {
			it.Mentions = nil
		}
	}
	it.Summary = ev.Type
	if ev.Type == adp.TypeMessageCreate {
		// adp.Message's view: the content as it stands, references as text.
		var m struct {
			ContentType string         `json:"content_type"`
			Content     jsontext.Value `json:"content"`
			References  []string       `json:"references"`
		}
		if json.Unmarshal(ev.Payload, &m) == nil {
			it.ContentType, it.Content = m.ContentType, m.Content
			it.References = m.References
			if it.References == nil {
				it.References = []string{}
			}
			if it.Mentions == nil {
				it.Mentions = []string{}
			}
			if s, err := strictjson.String(m.Content); err == nil {
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
	d := e.draftOf(k.host)
	return tx.ScanFrom(bRecords, rkey(k.host, k.room), reckey(k.host, k.room, after+1), func(key string, raw []byte) error {
		rec, err := adp.ParseRecordIn(d, raw)
		if err != nil {
			return err
		}
		if rec.RoomID != k.room || key != reckey(k.host, k.room, rec.Seq) {
			return fmt.Errorf("connector: stored record %q is not record %d of room %s", clip(key), rec.Seq, clip(k.room))
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
	var v *RoomStateView
	e.verified(k, func(room *adp.Room) {
		if room != nil && room.Created() {
			v = e.stateView(k, room, sr, s, types)
		}
	})
	if v == nil {
		return nil, s, fmt.Errorf("%w: %s has no verified state yet", ErrUnknownRoom, clip(k.room))
	}
	return v, s, nil
}

// stateView is the room state view of a verified room (under its
// replica's read lock) and its stored state.
func (e *Engine) stateView(k roomKey, room *adp.Room, sr *storedRoom, s SyncState, types bool) *RoomStateView {
	c := room.Contract()
	creator, createdAt := room.Creator()
	pol, _ := json.Marshal(c.Policy)
	v := &RoomStateView{Host: k.host, RoomID: k.room, Status: string(room.Status(e.now())), Visibility: string(c.Visibility),
		Topic: c.Topic, Agenda: c.Agenda, Guidance: c.Guidance, Creator: creator.String(), CreatedAt: createdAt,
		StartTime: c.StartTime, EndTime: c.EndTime, Tags: nonNil(c.Tags), Language: c.Language, Policy: pol,
		UnreadCount: s.UnreadCount, PendingInboxCount: s.PendingInboxCount, ActiveTurn: sr.ActiveTurn}
	l := room.Latest()
	v.Seq, v.Hash, v.ReceivedAt, v.URL = l.Seq, l.Hash.String(), l.ReceivedAt, sr.URL
	if l.Seq > 1 {
		ph := l.PreHash.String()
		v.PreHash = &ph
	}
	v.Extra = c.Extra
	if len(v.Extra) == 0 {
		v.Extra = jsontext.Value("{}")
	}
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
	return v
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
	k, _, err := e.resolveRefreshed(ctx, in.Host, in.RoomID, in.Refresh)
	if err != nil {
		return nil, err
	}
	limit := pageTimeline.of(in.Limit)
	reg := e.registry(k)
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
			if in.UnreadOnly && (rec.Envelope.Actor() == e.agent || !messageLike(typ, reg)) {
				return true
			}
			res.Items = append(res.Items, e.timelineItem(rec, reg, in.IncludeRecords))
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
			if sr.Unread, err = e.unreadCount(tx, k, sr.ReadSeq, reg); err != nil {
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
	reg := e.registry(k)
	err = e.store.Update(func(tx stateTx) error {
		sr, err := loadRoom(tx, k)
		if err != nil {
			return err
		}
		if in.ThroughSeq > sr.ReadSeq {
			sr.ReadSeq = min(in.ThroughSeq, sr.SyncedSeq)
			if sr.Unread, err = e.unreadCount(tx, k, sr.ReadSeq, reg); err != nil {
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
	res.Sync = e.syncOf("", k)
	return res, nil
}

// draftOf is the ADP draft of the rooms on host (hostState.draft).
func (e *Engine) draftOf(host string) adp.Draft {
	if h := e.hosts[host]; h != nil {
		return h.draft()
	}
	return adp.DefaultDraft
}
