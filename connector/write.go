package connector

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
	"github.com/agentprotocols/go-sdk/packs"
)

func parseHash(s string) (envelope.Hash, error) { return envelope.ParseHash(s) }

// writeReq is a room write as the agent asked for it: enough to sign it
// again on another base, and to show it as a held draft. It never holds an
// envelope or authentication material.
type writeReq struct {
	Host      string         `json:"host"`
	RoomID    string         `json:"room_id"`
	Type      string         `json:"type"`
	Payload   jsontext.Value `json:"payload"`
	Mentions  []string       `json:"mentions,omitempty"`
	DraftKind string         `json:"draft_kind"` // "message" or "event"
	Draft     jsontext.Value `json:"draft"`
	Attempts  int            `json:"attempts,omitempty"`
}

// outboxEntry is a signed write not yet acknowledged by its host.
type outboxEntry struct {
	Host      string         `json:"host"`
	RoomID    string         `json:"room_id"`
	Create    bool           `json:"create,omitempty"`
	Profile   bool           `json:"profile,omitempty"`
	Envelope  jsontext.Value `json:"envelope"`
	Req       *writeReq      `json:"req,omitempty"`
	CreatedAt int64          `json:"created_at"`
}

type storedDraft struct {
	Draft HeldDraft `json:"draft"`
	Req   writeReq  `json:"req"`
}

// kindOf classifies a type for the head-mismatch policy: "signal" writes
// are never held.
func kindOf(typ string, reg *packs.Registry) (string, error) {
	if c := adp.BuiltinCategory(typ); c != "" {
		return string(c), nil
	}
	if reg != nil {
		if d := reg.Lookup(typ); d != nil {
			return string(d.Kind), nil
		}
	}
	return "", identity.Errorf(adp.CodeTypeNotDefined, "type %q is not defined in this room", clip(typ))
}

// staleRule returns when a write of typ based on a record is stale in
// draft d, given the room head: its freshness class's rule (seed §6.1:
// every write but a signal is based on the head exactly; 2026-09-24 §5.1:
// a message or control write is based at or after the head, so a
// message arriving, which does not move the head, leaves a held message
// or control draft fresh; contract and signal writes need only an
// anchor). It is nil for a write the head never makes stale.
func staleRule(d adp.Draft, typ string, reg *packs.Registry) (func(base, head adp.RecordRef) bool, error) {
	if _, err := kindOf(typ, reg); err != nil {
		return nil, err
	}
	var def *packs.Definition
	if !d.IsBuiltin(typ) && reg != nil {
		def = reg.Lookup(typ)
	}
	class, ok := adp.ClassOf(d, typ, def)
	if !ok {
		return nil, identity.Errorf(adp.CodeTypeNotDefined, "type %q has no freshness class in the %s draft", clip(typ), d)
	}
	switch class.Rule(d).Base {
	case adp.BaseAtHead:
		return func(base, head adp.RecordRef) bool { return base != head }, nil
	case adp.BaseAtOrAfterHead:
		return func(base, head adp.RecordRef) bool { return base.Seq < head.Seq }, nil
	}
	return nil, nil
}

func parseMentions(ms []string) ([]identity.AgentID, error) {
	out := make([]identity.AgentID, 0, len(ms))
	for _, m := range ms {
		id, err := identity.ParseAgentID(m)
		if err != nil {
			return nil, fmt.Errorf("%w: mention %q: %v", ErrInvalidInput, clip(m), err)
		}
		out = append(out, id)
	}
	return out, nil
}

// sign signs req on base: a built-in payload is checked once against its
// type's kernel rules and signed as given (adp.NewEvent), a room-defined
// one against reg's schema (adp.NewCustom).
func (e *Engine) sign(ctx context.Context, req *writeReq, base adp.Base, reg *packs.Registry) (*envelope.Envelope, error) {
	ms, err := parseMentions(req.Mentions)
	if err != nil {
		return nil, err
	}
	switch {
	case req.Type == adp.TypeRoomCreate || req.Type == adp.TypeRoomJoinRequest:
		return nil, fmt.Errorf("%w: %s cannot be submitted to a room", ErrInvalidInput, clip(req.Type))
	case !adp.IsBuiltin(req.Type):
		return adp.NewCustom(ctx, e.author, base, reg, req.Type, req.Payload, ms...)
	}
	return adp.NewEvent(ctx, e.author, base, req.Type, req.Payload, ms...)
}

// transient reports a transport fault: a failure after which the host may
// or may not have the envelope (no answer, a 5xx, an answer that does not
// verify). Only then does the envelope stay in the outbox, re-sent as is.
// Any other answer, a 429 rate_limited included, is the host's final word
// on that envelope: it leaves the outbox and reaches the caller.
func transient(err error) bool {
	var ie *identity.Error
	if !errors.As(err, &ie) {
		return true
	}
	return ie.HTTPStatus() >= 500 || ie.Code == adp.CodeInvalidRecord
}

// writeOpts are the per-call base and policy of a write.
type writeOpts struct {
	baseSeq  *int64
	baseHash string
	policy   string
}

// write runs the §4.3 write path for one room write.
func (e *Engine) write(ctx context.Context, session string, k roomKey, h *hostState, req *writeReq, o writeOpts) (*WriteResult, error) {
	switch o.policy {
	case "":
		o.policy = OnMismatchHold
	case OnMismatchHold, OnMismatchReject, OnMismatchSendAnyway:
	default:
		return nil, fmt.Errorf("%w: on_head_mismatch %q", ErrInvalidInput, clip(o.policy))
	}
	if !e.limiter.allow() {
		return nil, ErrRateLimited
	}
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	rep, err := e.replica(h, k.room)
	if err != nil {
		return nil, err
	}
	if rep.Latest().Seq == 0 {
		if err := e.refresh(ctx, k, h); err != nil {
			return nil, err
		}
	}
	draft := h.draft()
	stale, err := staleRule(draft, req.Type, e.registry(k))
	if err != nil {
		return nil, err
	}
	// headBound: the host checks the base against the room head.
	headBound := stale != nil
	// The base: explicit, else the presented head, else the current one.
	var base adp.RecordRef
	switch {
	case o.baseSeq != nil:
		base.Seq = *o.baseSeq
		if o.baseHash != "" {
			if base.Hash, err = parseHash(o.baseHash); err != nil {
				return nil, fmt.Errorf("%w: base_hash: %v", ErrInvalidInput, err)
			}
		} else if base.Hash, err = e.storedHash(k, base.Seq); err != nil {
			return nil, err
		}
	default:
		e.mu.Lock()
		p, ok := e.presented[presKey{session, k}]
		e.mu.Unlock()
		if ok {
			base = p
		} else {
			if err := e.refresh(ctx, k, h); err != nil {
				return nil, err
			}
			b, err := rep.BaseFor(req.Type)
			if err != nil {
				return nil, err
			}
			base = adp.RecordRef{Seq: b.Seq, Hash: b.Hash}
		}
	}
	nonceRetry := false
	for iter := 0; ; iter++ {
		if iter > 2*e.opts.MaxResign+4 {
			// A room that keeps moving under every attempt: hold, never loop.
			return e.mismatch(session, k, req, base, OnMismatchHold)
		}
		if head := rep.Head(); headBound && stale(base, head) {
			// The room moved since what the agent saw.
			if o.policy == OnMismatchSendAnyway && req.Attempts < e.opts.MaxResign {
				req.Attempts++
				base = head
				continue
			}
			return e.mismatch(session, k, req, base, o.policy)
		}
		var reg *packs.Registry
		if !adp.IsBuiltin(req.Type) {
			reg = e.registry(k)
		}
		env, err := e.sign(ctx, req, adp.Base{RoomID: k.room, Seq: base.Seq, Hash: base.Hash, Draft: draft}, reg)
		if err != nil {
			return nil, err
		}
		// Local validation against the verified room (every host rule,
		// the registry's payload schema included) before anything is sent.
		if err := rep.Check(ctx, env, e.now()); err != nil {
			if errors.Is(err, adp.ErrRoomHeadMismatch) && headBound {
				continue // the head moved between our check and now
			}
			return nil, err
		}
		id, err := e.recordOutbox(env, &outboxEntry{Host: k.host, RoomID: k.room, Envelope: env.AppendJSON(nil), Req: req})
		if err != nil {
			return nil, err
		}
		rec, err := h.client.Submit(ctx, k.room, env)
		if err != nil {
			var hm *adp.HeadMismatchError
			var ie *identity.Error
			switch {
			case transient(err):
				// The entry waits in the outbox bucket, as every entry
				// left for a replay does.
				return nil, fmt.Errorf("%w: %v", ErrPendingOutbox, err)
			case errors.As(err, &hm) && headBound:
				if derr := e.dropOutbox(id); derr != nil {
					return nil, derr
				}
				if rerr := e.refresh(ctx, k, h); rerr != nil {
					return nil, rerr
				}
				continue
			case errors.As(err, &ie) && ie.Code == identity.CodeNonceNotGreater && ie.MaxSeenNonce > 0 && !nonceRetry:
				nonceRetry = true
				if derr := e.dropOutbox(id); derr != nil {
					return nil, derr
				}
				if oerr := e.nonces.ObserveMaxSeenNonce(ctx, ie.MaxSeenNonce); oerr != nil {
					return nil, errors.Join(err, oerr)
				}
				continue
			}
			if derr := e.dropOutbox(id); derr != nil {
				return nil, errors.Join(err, derr)
			}
			return nil, h.err(err)
		}
		return e.accepted(ctx, session, k, h, id, rec)
	}
}

// accepted finishes a write the host accepted, whose record the client
// verified into the room's replica (its hook stored the record and removed
// the outbox entry in one transaction): the session's presented head
// follows the result's sync (§4.2: every result that carries sync
// presents it).
func (e *Engine) accepted(ctx context.Context, session string, k roomKey, h *hostState, outboxID string, rec *adp.Record) (*WriteResult, error) {
	res := &WriteResult{Status: StatusSent, Record: rec.AppendJSON(nil)}
	it := e.timelineItem(rec, e.registry(k), false)
	res.Item = &it
	// A record the replica held already (a write re-sent after a crash)
	// did not reach the hook: its entry goes here.
	var pending bool
	if err := e.store.View(func(tx stateTx) error {
		var err error
		pending = tx.Has(bOutbox, outboxID)
		res.Sync, err = e.syncState(tx, k)
		return err
	}); err != nil {
		return nil, err
	}
	if pending {
		if err := e.dropOutbox(outboxID); err != nil {
			return nil, err
		}
	}
	if session != "" {
		e.present(session, k, res.Sync)
	}
	return res, nil
}

// submitFailed is the error of a recorded write whose submission failed:
// a transient failure leaves it in the outbox to be retried; any other
// failure is final and drops it.
func (e *Engine) submitFailed(host, id string, err error) error {
	if transient(err) {
		return fmt.Errorf("%w: %v", ErrPendingOutbox, err)
	}
	if derr := e.dropOutbox(id); derr != nil {
		return errors.Join(err, derr)
	}
	return hostErr(host, err)
}

// recordOutbox persists the envelope's nonce and its outbox entry in one
// transaction; only then may it be sent.
func (e *Engine) recordOutbox(env *envelope.Envelope, ent *outboxEntry) (string, error) {
	n := env.Event().Nonce
	id := outboxID(n)
	ent.CreatedAt = e.now().UnixMilli()
	err := e.store.Update(func(tx stateTx) error {
		if err := raiseNonce(tx, n); err != nil {
			return err
		}
		return tx.Put(bOutbox, id, ent)
	})
	return id, err
}

// raiseNonce stores nonce n, which must be above the stored one: a nonce
// is persisted before anything signed with it is sent.
func raiseNonce(tx stateTx, n int64) error {
	var saved int64
	if _, err := tx.Get(bMeta, "nonce", &saved); err != nil {
		return err
	}
	if n <= saved {
		return fmt.Errorf("connector: nonce %d is not above the stored nonce %d", n, saved)
	}
	return tx.Put(bMeta, "nonce", n)
}

// storeNonce persists nonce n, used by a signed event that has no outbox
// entry (a join request), before it is sent.
func (e *Engine) storeNonce(n int64) error {
	return e.store.Update(func(tx stateTx) error { return raiseNonce(tx, n) })
}

// outboxID is the outbox key of the write signed with nonce n.
func outboxID(n int64) string { return fmt.Sprintf("%020d", n) }

func (e *Engine) dropOutbox(id string) error {
	return e.store.Update(func(tx stateTx) error { return tx.Delete(bOutbox, id) })
}

// storedHash returns the hash of the stored record at seq.
func (e *Engine) storedHash(k roomKey, seq int64) (envelope.Hash, error) {
	var h envelope.Hash
	var found bool
	err := e.store.View(func(tx stateTx) error {
		var raw jsontext.Value
		ok, err := tx.Get(bRecords, reckey(k.host, k.room, seq), &raw)
		if err != nil || !ok {
			return err
		}
		rec, err := adp.ParseRecordIn(e.draftOf(k.host), raw)
		if err != nil {
			return err
		}
		if rec.RoomID != k.room || rec.Seq != seq {
			return fmt.Errorf("connector: stored record %d of room %s is another record", seq, clip(k.room))
		}
		h, found = rec.Hash, true
		return nil
	})
	if err == nil && !found {
		err = fmt.Errorf("%w: no verified record at base_seq %d", ErrInvalidInput, seq)
	}
	return h, err
}

// changes returns the timeline items after seq; reg is the room's
// registry (Engine.registry, read before the transaction).
func (e *Engine) changes(tx stateTx, k roomKey, after int64, reg *packs.Registry) ([]TimelineItem, error) {
	out := []TimelineItem{}
	err := e.records(tx, k, after, 0, func(rec *adp.Record) bool {
		out = append(out, e.timelineItem(rec, reg, false))
		return len(out) < 200
	})
	return out, err
}

// mismatch applies the hold / reject policy. The result shows the changes
// up to its sync, which becomes the session's presented head (§4.2): a
// send after it without a base is held again only if the room moved since.
func (e *Engine) mismatch(session string, k roomKey, req *writeReq, base adp.RecordRef, policy string) (*WriteResult, error) {
	res := &WriteResult{Status: StatusRejected}
	reg := e.registry(k)
	err := e.store.Update(func(tx stateTx) error {
		var err error
		if res.Sync, err = e.syncState(tx, k); err != nil {
			return err
		}
		if res.Changes, err = e.changes(tx, k, base.Seq, reg); err != nil {
			return err
		}
		if policy == OnMismatchReject {
			return nil
		}
		res.Status = StatusHeld
		d, err := e.holdDraft(tx, k, req, base, res.Sync, "room_head_mismatch")
		res.Draft = d
		return err
	})
	if err != nil {
		return nil, err
	}
	e.present(session, k, res.Sync)
	if res.Draft != nil {
		e.notify(URIDraftsHeld)
	}
	return res, nil
}

func (e *Engine) holdDraft(tx stateTx, k roomKey, req *writeReq, base adp.RecordRef, cur SyncState, reason string) (*HeldDraft, error) {
	var n int64
	if _, err := tx.Get(bMeta, "draftseq", &n); err != nil {
		return nil, err
	}
	n++
	if err := tx.Put(bMeta, "draftseq", n); err != nil {
		return nil, err
	}
	d := HeldDraft{ID: "draft_" + k.room + "_" + strconv.FormatInt(n, 10), Host: k.host, RoomID: k.room, Kind: req.DraftKind,
		CreatedAt: e.now().UnixMilli(), BaseSeq: base.Seq, BaseHash: base.Hash.String(), CurrentSync: cur,
		Draft: req.Draft, Reason: reason,
		Options: []string{ActionRevise, ActionSendAsIs, ActionStaySilent, ActionSendAnyway}}
	r := *req
	r.Attempts = 0
	return &d, tx.Put(bDrafts, d.ID, &storedDraft{Draft: d, Req: r})
}

// messageReq builds the write request of a message.
func messageReq(k roomKey, content, contentType string, mentions, refs []string, extra jsontext.Value) (*writeReq, error) {
	if contentType == "" {
		contentType = "text/plain"
	}
	m := adp.Message{ContentType: contentType, Content: adp.TextContent(content), Extra: extra}
	for _, r := range refs {
		h, err := parseHash(r)
		if err != nil {
			return nil, fmt.Errorf("%w: reference %q: %v", ErrInvalidInput, clip(r), err)
		}
		m.References = append(m.References, h)
	}
	payload, err := json.Marshal(m, json.Deterministic(true))
	if err != nil {
		return nil, err
	}
	if extra == nil {
		extra = jsontext.Value("{}")
	}
	// The held draft's members, in the order a map's deterministic
	// encoding gives them.
	draft, err := json.Marshal(struct {
		Content     string         `json:"content"`
		ContentType string         `json:"content_type"`
		Extra       jsontext.Value `json:"extra"`
		Mentions    []string       `json:"mentions"`
		References  []string       `json:"references"`
		RoomID      string         `json:"room_id"`
	}{content, contentType, extra, nonNil(mentions), nonNil(refs), k.room}, json.Deterministic(true))
	if err != nil {
		return nil, err
	}
	return &writeReq{Host: k.host, RoomID: k.room, Type: adp.TypeMessageCreate, Payload: payload, Mentions: mentions,
		DraftKind: "message", Draft: draft}, nil
}

// eventReq builds the write request of submit_event.
func eventReq(k roomKey, typ string, payload jsontext.Value, mentions, refs []string) (*writeReq, error) {
	if typ == "" || len(payload) == 0 {
		return nil, fmt.Errorf("%w: type and payload are required", ErrInvalidInput)
	}
	if err := strictjson.Unmarshal(payload, new(map[string]jsontext.Value)); err != nil {
		return nil, fmt.Errorf("%w: payload must be a JSON object: %v", ErrInvalidInput, err)
	}
	p := payload
	if len(refs) > 0 {
		var obj map[string]jsontext.Value
		if err := strictjson.Unmarshal(payload, &obj); err != nil {
			return nil, err
		}
		if _, ok := obj["references"]; !ok {
			r, _ := json.Marshal(refs)
			obj["references"] = r
			var err error
			if p, err = json.Marshal(obj, json.Deterministic(true)); err != nil {
				return nil, err
			}
		}
	}
	draft, err := json.Marshal(map[string]any{"room_id": k.room, "type": typ, "payload": payload,
		"mentions": nonNil(mentions), "references": nonNil(refs)}, json.Deterministic(true))
	if err != nil {
		return nil, err
	}
	return &writeReq{Host: k.host, RoomID: k.room, Type: typ, Payload: p, Mentions: mentions, DraftKind: "event", Draft: draft}, nil
}

// SendMessage is agent_protocols_room_send_message: signs a message.create
// on the given base (default: the session's presented head) and submits
// it, applying on_head_mismatch (default hold) when the room moved.
func (e *Engine) SendMessage(ctx context.Context, session string, in SendMessageInput) (*WriteResult, error) {
	k, h, err := e.resolve(in.Host, in.RoomID)
	if err != nil {
		return nil, err
	}
	req, err := messageReq(k, in.Content, in.ContentType, in.Mentions, in.References, in.Extra)
	if err != nil {
		return nil, err
	}
	return e.write(ctx, session, k, h, req, writeOpts{in.BaseSeq, in.BaseHash, in.OnHeadMismatch})
}

// SubmitEvent is agent_protocols_room_submit_event: custom types and the
// built-ins without a dedicated tool (room.update, room.close,
// room.cancel, room.member.role.update, room.member.remove, type.define).
func (e *Engine) SubmitEvent(ctx context.Context, session string, in SubmitEventInput) (*WriteResult, error) {
	k, h, err := e.resolve(in.Host, in.RoomID)
	if err != nil {
		return nil, err
	}
	switch in.Type {
	case adp.TypeRoomCreate, adp.TypeRoomJoin, adp.TypeRoomJoinReview:
		return nil, fmt.Errorf("%w: use the dedicated tool for %s", ErrInvalidInput, in.Type)
	}
	req, err := eventReq(k, in.Type, in.Payload, in.Mentions, in.References)
	if err != nil {
		return nil, err
	}
	return e.write(ctx, session, k, h, req, writeOpts{in.BaseSeq, in.BaseHash, in.OnHeadMismatch})
}

// DraftsList is agent_protocols_drafts_list (local state).
func (e *Engine) DraftsList(ctx context.Context, in DraftsListInput) (*DraftsListResult, error) {
	res := &DraftsListResult{Drafts: []HeldDraft{}}
	limit := pageDrafts.of(in.Limit)
	host, room, err := e.filterRoom(in.Host, in.RoomID)
	if err != nil {
		return nil, err
	}
	err = e.store.View(func(tx stateTx) error {
		return tx.Scan(bDrafts, "", func(key string, raw []byte) error {
			if in.Cursor != "" && key <= in.Cursor {
				return nil
			}
			var d storedDraft
			if err := unmarshalStored(raw, &d); err != nil {
				return err
			}
			if room != "" && d.Draft.RoomID != room || host != "" && d.Draft.Host != host {
				return nil
			}
			if len(res.Drafts) == limit {
				res.NextCursor = res.Drafts[len(res.Drafts)-1].ID
				return errStop
			}
			res.Drafts = append(res.Drafts, d.Draft)
			return nil
		})
	})
	if err == nil && room != "" && host != "" {
		if _, known := e.knownRoom(roomKey{host, room}); known {
			res.Sync = e.syncOf("", roomKey{host, room})
		}
	}
	return res, err
}

func (e *Engine) loadDraft(id string) (*storedDraft, error) {
	var d storedDraft
	var ok bool
	err := e.store.View(func(tx stateTx) error {
		var err error
		ok, err = tx.Get(bDrafts, id, &d)
		return err
	})
	if err == nil && !ok {
		err = fmt.Errorf("%w: draft %q", ErrNotFound, clip(id))
	}
	return &d, err
}

// DraftGet is agent_protocols_draft_get (local state): the draft, the
// changes since its base, and the current sync, which becomes the
// session's presented head.
func (e *Engine) DraftGet(ctx context.Context, session, draftID string) (*DraftGetResult, error) {
	d, err := e.loadDraft(draftID)
	if err != nil {
		return nil, err
	}
	k := roomKey{d.Draft.Host, d.Draft.RoomID}
	res := &DraftGetResult{Draft: d.Draft}
	reg := e.registry(k)
	if err := e.store.View(func(tx stateTx) error {
		var err error
		if res.Sync, err = e.syncState(tx, k); err != nil {
			return err
		}
		res.Changes, err = e.changes(tx, k, d.Draft.BaseSeq, reg)
		return err
	}); err != nil {
		return nil, err
	}
	res.Draft.CurrentSync = res.Sync
	e.present(session, k, res.Sync)
	return res, nil
}

// DraftCommit is agent_protocols_draft_commit: revise, send_as_is,
// stay_silent or send_anyway. The draft is consumed by every action; a
// write that is held again returns a new draft.
//
// Concurrent commits of one draft send at most once: a commit claims the
// draft before reading it, and a second one meanwhile (or after it
// consumed the draft) gets ErrNotFound.
func (e *Engine) DraftCommit(ctx context.Context, session string, in DraftCommitInput) (*WriteResult, error) {
	e.mu.Lock()
	busy := e.committing[in.DraftID]
	if !busy {
		e.committing[in.DraftID] = true
	}
	e.mu.Unlock()
	if busy {
		return nil, fmt.Errorf("%w: draft %q is being committed", ErrNotFound, clip(in.DraftID))
	}
	defer func() {
		e.mu.Lock()
		delete(e.committing, in.DraftID)
		e.mu.Unlock()
	}()
	d, err := e.loadDraft(in.DraftID)
	if err != nil {
		return nil, err
	}
	k := roomKey{d.Draft.Host, d.Draft.RoomID}
	h, err := e.host(k.host)
	if err != nil {
		return nil, err
	}
	req := d.Req
	o := writeOpts{in.BaseSeq, in.BaseHash, in.OnHeadMismatch}
	switch in.Action {
	case ActionStaySilent:
		dr, err := e.DraftDrop(ctx, in.DraftID)
		if err != nil {
			return nil, err
		}
		res := &WriteResult{Status: StatusDropped}
		err = e.store.View(func(tx stateTx) error {
			var err error
			res.Sync, err = e.syncState(tx, k)
			return err
		})
		_ = dr
		if err != nil {
			return nil, err
		}
		e.present(session, k, res.Sync)
		return res, nil
	case ActionSendAsIs:
	case ActionSendAnyway:
		o = writeOpts{policy: OnMismatchSendAnyway}
		if err := e.refresh(ctx, k, h); err != nil {
			return nil, err
		}
		rep, err := e.replica(h, k.room)
		if err != nil {
			return nil, err
		}
		head := rep.Head()
		o.baseSeq, o.baseHash = &head.Seq, head.Hash.String()
	case ActionRevise:
		var nreq *writeReq
		if req.DraftKind == "message" {
			var m struct {
				RoomID      string         `json:"room_id"`
				Content     string         `json:"content"`
				ContentType string         `json:"content_type"`
				Mentions    []string       `json:"mentions"`
				References  []string       `json:"references"`
				Extra       jsontext.Value `json:"extra"`
			}
			if err := strictjson.Unmarshal(req.Draft, &m); err != nil {
				return nil, err
			}
			if in.Content != nil {
				m.Content = *in.Content
			}
			if in.ContentType != "" {
				m.ContentType = in.ContentType
			}
			if in.Mentions != nil {
				m.Mentions = in.Mentions
			}
			if in.References != nil {
				m.References = in.References
			}
			if in.Extra != nil {
				m.Extra = in.Extra
			}
			nreq, err = messageReq(k, m.Content, m.ContentType, m.Mentions, m.References, m.Extra)
		} else {
			var ev struct {
				RoomID     string         `json:"room_id"`
				Type       string         `json:"type"`
				Payload    jsontext.Value `json:"payload"`
				Mentions   []string       `json:"mentions"`
				References []string       `json:"references"`
			}
			if err := strictjson.Unmarshal(req.Draft, &ev); err != nil {
				return nil, err
			}
			if in.Type != "" {
				ev.Type = in.Type
			}
			if in.Payload != nil {
				ev.Payload = in.Payload
			}
			if in.Mentions != nil {
				ev.Mentions = in.Mentions
			}
			if in.References != nil {
				ev.References = in.References
			}
			nreq, err = eventReq(k, ev.Type, ev.Payload, ev.Mentions, ev.References)
		}
		if err != nil {
			return nil, err
		}
		req = *nreq
	default:
		return nil, fmt.Errorf("%w: action %q", ErrInvalidInput, clip(in.Action))
	}
	res, err := e.write(ctx, session, k, h, &req, o)
	if err != nil && !errors.Is(err, ErrPendingOutbox) {
		return nil, err
	}
	if _, derr := e.DraftDrop(ctx, in.DraftID); derr != nil {
		return nil, derr
	}
	return res, err
}

// DraftDrop is agent_protocols_draft_drop (local state; nothing is sent).
func (e *Engine) DraftDrop(ctx context.Context, draftID string) (*DraftDropResult, error) {
	res := &DraftDropResult{Status: "dropped", DraftID: draftID}
	err := e.store.Update(func(tx stateTx) error {
		if err := tx.Delete(bDrafts, draftID); err != nil {
			return err
		}
		return tx.Scan(bDrafts, "", func(string, []byte) error { res.PendingCount++; return nil })
	})
	if err != nil {
		return nil, err
	}
	e.notify(URIDraftsHeld)
	return res, nil
}

// ReplayOutbox re-sends every signed, unacknowledged envelope exactly as
// signed (Open runs it; only transport faults leave entries behind). An
// envelope the host accepted before a crash is answered with its original
// record (exact resubmission). A refused message, control or lifecycle
// write becomes a held draft, so no write is lost; a refused signal write
// (join, leave, review, …) is never held (§4.2): it is dropped and the
// refusal logged. A nonce_not_greater refusal means a later write was
// accepted first and this one never arrived: its draft's reason is
// "not_delivered". Entries for hosts no longer allowlisted stay untouched
// and are never sent.
func (e *Engine) ReplayOutbox(ctx context.Context) error {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	type item struct {
		id  string
		ent outboxEntry
	}
	var items []item
	if err := e.store.View(func(tx stateTx) error {
		return tx.Scan(bOutbox, "", func(k string, raw []byte) error {
			var ent outboxEntry
			if err := unmarshalStored(raw, &ent); err != nil {
				return err
			}
			items = append(items, item{k, ent})
			return nil
		})
	}); err != nil {
		return err
	}
	var pending error
	for _, it := range items {
		env, err := envelope.Parse(it.ent.Envelope)
		if err != nil {
			return err
		}
		if it.ent.Profile {
			c, err := e.profileService(it.ent.Host)
			if err != nil {
				continue // no longer configured: never sent
			}
			if _, err = c.Publish(ctx, env); err != nil && transient(err) {
				pending = fmt.Errorf("%w: %v", ErrPendingOutbox, err)
				continue
			}
			// Accepted, or refused for good (a profile update is whole
			// and can be re-issued); either way it leaves the outbox.
			if err := e.dropOutbox(it.id); err != nil {
				return err
			}
			continue
		}
		h, err := e.host(it.ent.Host)
		if err != nil {
			continue
		}
		k := roomKey{h.name, it.ent.RoomID}
		var rec *adp.Record
		if it.ent.Create {
			rec, err = h.client.SubmitCreate(ctx, env)
			if err == nil {
				k.room = rec.RoomID
			}
		} else {
			rec, err = h.client.Submit(ctx, it.ent.RoomID, env)
		}
		switch {
		case err == nil:
			e.rt(k)
			if _, err := e.accepted(ctx, "", k, h, it.id, rec); err != nil {
				return err
			}
		case transient(err):
			pending = fmt.Errorf("%w: %v", ErrPendingOutbox, err)
		default:
			// Refused: keep the write as a held draft, never lose it —
			// unless it is a signal write, which is never held.
			held := it.ent.Req != nil
			if held {
				if kind, kerr := kindOf(it.ent.Req.Type, e.registry(k)); kerr != nil || kind == string(adp.CategorySignal) {
					held = false
					e.opts.Logger.Warn("connector: outbox write refused on replay, dropped", "type", it.ent.Req.Type, "room", k.room, "err", err)
				}
			}
			err2 := e.store.Update(func(tx stateTx) error {
				if held {
					ev, _ := adp.ParseEvent(env)
					var base adp.RecordRef
					if ev != nil {
						base = adp.RecordRef{Seq: ev.BaseSeq, Hash: ev.BaseHash}
					}
					cur, _ := e.syncState(tx, k)
					reason := "room_head_mismatch"
					var ie *identity.Error
					switch {
					case errors.As(err, &ie) && ie.Code == identity.CodeNonceNotGreater:
						reason = "not_delivered"
					case errors.As(err, &ie) && ie.Code != adp.CodeRoomHeadMismatch:
						reason = string(ie.Code)
					}
					if _, err := e.holdDraft(tx, k, it.ent.Req, base, cur, reason); err != nil {
						return err
					}
				}
				return tx.Delete(bOutbox, it.id)
			})
			if err2 != nil {
				return err2
			}
			if held {
				e.notify(URIDraftsHeld)
			}
		}
	}
	return pending
}
