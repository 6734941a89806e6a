package adphost

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
)

// createRoom is POST /v1/rooms (§9).
func (h *Host) createRoom(w http.ResponseWriter, r *http.Request) {
	env, ev, err := h.readEnvelope(r)
	if err != nil {
		writeError(w, err)
		return
	}
	if ev.Type != adp.TypeRoomCreate {
		writeError(w, identity.Errorf(identity.CodeInvalidEvent, "POST /v1/rooms takes a room.create, not %s", clip(ev.Type)))
		return
	}
	hr := newHostRoom(h.newID())
	close(hr.loaded)
	opts := h.roomOpts
	opts.URL = h.RoomURL(hr.id)
	hr.room = adp.NewRoom(hr.id, &opts)
	hr.reg = hr.room.Registry()
	rec, fresh, err := h.accept(r.Context(), hr, env, ev)
	if err != nil {
		writeError(w, err)
		return
	}
	status := http.StatusOK
	if fresh {
		status = http.StatusCreated
	}
	if hr, err = h.lookup(r.Context(), rec.RoomID); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, status, h.createView(&adp.CreateResponse{
		ID: rec.RoomID, Status: hr.current().Status(h.now()), URL: h.RoomURL(rec.RoomID),
		Seq: rec.Seq, Hash: rec.Hash, ReceivedAt: rec.ReceivedAt,
	}))
}

// postEvent is POST /v1/rooms/{room_id}: every write but room.create.
func (h *Host) postEvent(w http.ResponseWriter, r *http.Request, id string) {
	env, ev, err := h.readEnvelope(r)
	if err != nil {
		writeError(w, err)
		return
	}
	switch {
	case ev.Type == adp.TypeRoomCreate:
		err = identity.NewError(identity.CodeInvalidEvent, "room.create goes to POST /v1/rooms")
	case ev.Type == adp.TypeRoomJoinRequest && h.laterDraft():
		err = identity.NewError(identity.CodeInvalidEvent, "room.join.request goes to POST /v1/rooms/{room_id}/join-requests")
	case ev.RoomID != id:
		err = identity.Errorf(identity.CodeInvalidEvent, "event room_id %q is not the room of the path", clip(ev.RoomID))
	}
	if err != nil {
		writeError(w, err)
		return
	}
	// A Store that reads write states returns the room's head with the
	// write's other reads (commit catches up on it): the lookup's own
	// head read would be a second round trip.
	_, prefetches := h.store.(WriteStateReader)
	hr, err := h.lookupRefresh(r.Context(), id, !prefetches, true)
	if err == nil {
		defer h.unpin(hr)
	}
	if err != nil && errors.Is(err, adp.ErrRoomNotFound) {
		// A room that does not exist answers exactly as a private room
		// does to an outsider: after the envelope checks, with the quota
		// charged (see outsider), so the two cannot be told apart.
		_, err = h.verifier.AcceptEnvelope(r.Context(), env, func(ctx context.Context, _ *envelope.Envelope) error {
			if _, _, err := h.checkNonce(ctx, ev, h.now().UnixMilli()); err != nil {
				return err
			}
			return h.outsider(ctx, ev, h.now(), roomNotFound(id))
		})
		writeError(w, err)
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	rec, _, err := h.accept(r.Context(), hr, env, ev)
	if err != nil {
		writeError(w, err)
		return
	}
	// The answer is written from a pooled buffer: Write does not retain
	// it (io.Writer), and a write's answer is as large as its body.
	bp := answerBuffers.Get().(*[]byte)
	b := append(rec.AppendJSON((*bp)[:0]), '\n')
	writeRaw(w, http.StatusOK, b)
	if cap(b) <= maxPooledAnswer {
		*bp = b
		answerBuffers.Put(bp)
	}
}

// answerBuffers holds the buffers of write answers; one larger than
// maxPooledAnswer (a record near the envelope bound) is left to the
// collector rather than kept.
var answerBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledAnswer = 16 << 10

// readEnvelope reads and strictly parses a write body, an event of the
// host's draft.
func (h *Host) readEnvelope(r *http.Request) (*envelope.Envelope, *adp.Event, error) {
	b, err := readBody(r, maxBody)
	if err != nil {
		return nil, nil, err
	}
	env, err := envelope.Parse(b)
	if err != nil {
		return nil, nil, err
	}
	ev, err := adp.ParseEventIn(h.draft, env)
	if err != nil {
		return nil, nil, err
	}
	return env, ev, nil
}

// accept runs the live-write order: envelope.Verifier (hash, signature,
// exact resubmission, window, nonce) and, under the actor's and then the
// room's lock, the host's nonce cache, rate limits and the room's rule
// table; the record is appended to the Store before it is announced.
// fresh is false for an exact resubmission, which returns the original
// record and changes nothing.
func (h *Host) accept(ctx context.Context, hr *hostRoom, env *envelope.Envelope, ev *adp.Event) (rec *adp.Record, fresh bool, err error) {
	pf := h.newPrefetch(hr.id, ev)
	var lookup envelope.History // nil: the Verifier's, history
	if pf != nil {
		lookup = pf
	}
	out, err := h.verifier.AcceptEnvelopeWith(ctx, env, lookup, func(ctx context.Context, env *envelope.Envelope) error {
		var err error
		rec, err = h.commit(ctx, hr, env, ev, pf)
		return err
	})
	if errors.Is(err, ErrDuplicateEvent) {
		out, err = envelope.Resubmission, nil // another process accepted it first
		pf = nil                              // the prefetched lookup found none
	}
	if err != nil {
		return nil, false, err
	}
	if out == envelope.Resubmission {
		if pf != nil && pf.ok && pf.st.Record != nil {
			rec = pf.st.Record
		} else if rec, err = h.store.RecordByEvent(ctx, env.Hash()); err != nil {
			return nil, false, err
		}
		if rec == nil || (ev.Type != adp.TypeRoomCreate && rec.RoomID != hr.id) {
			return nil, false, identity.NewError(identity.CodeInvalidEvent, "the envelope was accepted in another room")
		}
		return rec, false, nil
	}
	return rec, true, nil
}

// commit is the room-serialized part of accept: judge the write against
// the replica, append it to the Store with its nonce and quota, and when
// the Store's log is ahead (another process appended), catch the replica
// up and judge again, until h.deadline.
func (h *Host) commit(ctx context.Context, hr *hostRoom, env *envelope.Envelope, ev *adp.Event, pf *prefetch) (*adp.Record, error) {
	// The nonce is checked before the room's lock (it needs no room
	// state, and the read would lengthen the room's serial path), so that
	// a replay is told nonce_not_greater first; Append checks it again
	// atomically. A prefetch read it with the resubmission lookup.
	ms := h.now().UnixMilli()
	var err error
	if pf != nil && pf.ok {
		err = nonceCheck(ev, ms, pf.st.Nonce, pf.st.NonceExpiresAt)
	} else {
		_, _, err = h.checkNonce(ctx, ev, ms)
	}
	if err != nil {
		return nil, h.orDuplicate(ctx, env, err)
	}
	if _, ok := h.store.(BatchAppender); ok {
		rec, err := h.commitGrouped(ctx, hr, &roomWrite{env: env, ev: ev, pf: pf})
		return rec, h.orDuplicate(ctx, env, err)
	}
	hr.mu.Lock()
	defer hr.mu.Unlock()
	if hr.dropped.Load() {
		return nil, errDropped
	}
	return h.commitLocked(ctx, hr, env, ev, pf)
}

// commitLocked is commit's loop under the room's lock: judge, append, and
// on a lost append race catch up and judge again.
func (h *Host) commitLocked(ctx context.Context, hr *hostRoom, env *envelope.Envelope, ev *adp.Event, pf *prefetch) (*adp.Record, error) {
	if pf != nil && pf.ok && pf.st.Head > hr.room.Latest().Seq {
		// Another process appended: judge on its records (the head
		// read of the room's lookup, folded into the prefetch).
		if err := h.catchUp(ctx, hr); err != nil {
			return nil, err
		}
	}
	start := time.Now() // the wall clock: h.now may be a test's frozen clock
	for attempt := 1; ; attempt++ {
		rec, err := h.tryCommit(ctx, hr, env, ev)
		if !errors.Is(err, ErrHeadMoved) {
			return rec, h.orDuplicate(ctx, env, err)
		}
		seq := hr.room.Latest().Seq
		if err := h.catchUp(ctx, hr); err != nil {
			return nil, err
		}
		if hr.room.Latest().Seq == seq && !hr.dropped.Load() {
			// The log moved, yet holds nothing past the replica: the
			// replica is not on the Store's history.
			h.drop(hr, errors.New("an append found the head moved, and the Store has no record past the replica's latest"))
		}
		if hr.dropped.Load() {
			return nil, errDropped
		}
		if prior, err := h.store.RecordByEvent(ctx, env.Hash()); err != nil {
			return nil, err
		} else if prior != nil {
			return nil, ErrDuplicateEvent
		}
		if time.Since(start) > h.deadline {
			return nil, &busyError{identity.Errorf(identity.CodeRateLimited,
				"room %s is busy: %d appends lost to other writers; retry", clip(hr.id), attempt)}
		}
	}
}

// orDuplicate turns a nonce_not_greater refusal of env into
// ErrDuplicateEvent when env itself is what advanced the nonce: the same
// envelope, sent to two processes sharing a Store at once, passes both
// Verifiers' resubmission lookups before either appends, and the one that
// loses the nonce race must answer as for an exact resubmission. So with
// an invalid_event refusal: the loser's replica may have caught up with
// the winner's append before judging env, and the room then finds env
// already accepted.
func (h *Host) orDuplicate(ctx context.Context, env *envelope.Envelope, err error) error {
	if !errors.Is(err, identity.ErrNonceNotGreater) && !errors.Is(err, identity.ErrInvalidEvent) {
		return err
	}
	if prior, lerr := h.store.RecordByEvent(ctx, env.Hash()); lerr == nil && prior != nil {
		return ErrDuplicateEvent
	}
	return err
}

// judged returns a refusal of the replica's rules, or ErrHeadMoved when
// the Store's log is ahead of the replica: the write (a base on a record
// another process appended, a join made there) is then judged again after
// the replica catches up.
func (h *Host) judged(ctx context.Context, hr *hostRoom, err error) error {
	if ruleRefusal(err) && h.behind(ctx, hr) {
		return ErrHeadMoved
	}
	return err
}

// busyError is a write that kept losing its room's append race: a
// retryable rate_limited answered with Retry-After: 1.
type busyError struct{ err *identity.Error }

func (e *busyError) Error() string { return e.err.Error() }
func (e *busyError) Unwrap() error { return e.err }

// tryCommit is one attempt of commit (hr.mu held).
func (h *Host) tryCommit(ctx context.Context, hr *hostRoom, env *envelope.Envelope, ev *adp.Event) (*adp.Record, error) {
	now := h.now()
	c, hint, err := h.precheck(ctx, hr, ev, now)
	if err != nil {
		return nil, err
	}
	// Judged once (ev is env's, read once): Prepare builds the record
	// (received_at never decreases, even if the clock steps back), Commit
	// applies it to the replica, and an append that fails takes it back
	// out in memory (Pending.Undo), as a failed batch does. hr.mu is held
	// from the judgment to the append.
	p, err := hr.room.Prepare(ctx, ev, now)
	if err != nil {
		return nil, h.judged(ctx, hr, err)
	}
	if err := p.Commit(); err != nil {
		h.drop(hr, err) // nothing moved the replica under hr.mu: not reached
		return nil, errDropped
	}
	c.Record = p.Record
	var ix *RoomIndex
	if !batchable(ev) {
		// A lifecycle or membership write changes the room's index entry,
		// which goes into the Store with the record.
		e := h.index(hr.room, true)
		ix, c.Index = &e, &e
	}
	if err := h.store.Append(ctx, c); err != nil {
		if uerr := p.Undo(); uerr != nil {
			h.drop(hr, uerr)
			return nil, errDropped
		}
		return nil, h.appendFailed(hr, err)
	}
	if ix != nil {
		ix.Members = nil
		hr.ix = ix
	}
	hr.seq.Store(hr.room.Latest().Seq)
	h.stored(ctx, hr, ev, c.Record, hint, now)
	if snapshotDue(c.Record.Seq, int64(h.snapEvery)) {
		h.snapshot(ctx, hr)
	}
	h.afterAccept(ctx, hr, ev, c.Record)
	return c.Record, nil
}

// appendFailed is the answer to an Append that failed (hr.mu held): the
// Store's verdict as it is; any other failure leaves it unknown whether
// the record was stored (a connection lost at commit), so the replica
// reads the Store's head at its next use, and the writer is told to send
// the write again.
func (h *Host) appendFailed(hr *hostRoom, err error) error {
	if storeVerdict(err) {
		return err
	}
	hr.unsure.Store(true)
	return unavailable(err)
}

// hintedUse is the hinted ceiling a write counts against once stored.
type hintedUse struct {
	key   rateKey
	limit int
	ok    bool
}

// precheck is the part of a write's judgment before the room's rules
// (hr.mu held): the private gate, the room's limits and the quotas. It
// returns the Commit without its record.
func (h *Host) precheck(ctx context.Context, hr *hostRoom, ev *adp.Event, now time.Time) (*Commit, hintedUse, error) {
	ms := now.UnixMilli()
	if refusal, err := h.privateGate(ctx, hr.room, ev); err != nil {
		return nil, hintedUse{}, err
	} else if refusal != nil {
		if h.behind(ctx, hr) {
			return nil, hintedUse{}, ErrHeadMoved // the actor may have joined elsewhere
		}
		return nil, hintedUse{}, h.outsider(ctx, ev, now, refusal)
	}
	if err := h.checkRoomLimits(hr.room, ev); err != nil {
		return nil, hintedUse{}, err
	}
	q, limit := h.rateClass(hr, ev)
	var quota *Quota
	if limit >= 0 {
		quota = &Quota{Key: q.String(), Limit: limit, Now: ms, Window: rateWindow}
		// Checked before the rules, so that an agent over its quota is
		// told so first; Append checks it again atomically.
		if used, err := h.store.QuotaUsed(ctx, *quota); err != nil {
			return nil, hintedUse{}, err
		} else if used >= limit {
			return nil, hintedUse{}, QuotaError(*quota)
		}
	}
	// A hinted type's events also share the agent's one hinted ceiling.
	// The append takes the type's own window atomically; the ceiling is
	// checked here and counted after the append, so concurrent writers in
	// other rooms (or processes) may pass it by at most one each.
	var hint hintedUse
	hint.key, hint.limit, hint.ok = h.hintedCeiling(q, ev)
	if hint.ok {
		cq := Quota{Key: hint.key.String(), Limit: hint.limit, Now: ms, Window: rateWindow}
		if used, err := h.store.QuotaUsed(ctx, cq); err != nil {
			return nil, hintedUse{}, err
		} else if used >= hint.limit {
			return nil, hintedUse{}, QuotaError(cq)
		}
	}
	return &Commit{
		// The durable nonce cache, checked and advanced atomically with
		// the append: the Verifier's is per process and lost on restart.
		Nonce: h.nonceAdvance(ev, now),
		Quota: quota,
	}, hint, nil
}

// stored is the bookkeeping of a record the Store has (hr.mu held): the
// hinted ceiling and, for a room's first record, the cache.
func (h *Host) stored(ctx context.Context, hr *hostRoom, ev *adp.Event, rec *adp.Record, hint hintedUse, now time.Time) {
	if hint.ok {
		// The record is stored: a refusal here (a racing writer took the
		// last use first) is the overshoot allowed above, not an error.
		h.take(ctx, hint.key, hint.limit, now)
	}
	if rec.Seq == 1 {
		h.addRoom(hr)
	}
}

// snapshot stores a snapshot of hr's replica (hr.mu held). A snapshot is
// a shortcut for rebuilding the replica; a failure to store one costs a
// longer rebuild, not the write, and is logged. The Store takes the
// snapshot's bytes (Store.PutSnapshot), fresh and held by nobody else.
func (h *Host) snapshot(ctx context.Context, hr *hostRoom) {
	seq := hr.room.Latest().Seq
	snap, err := hr.room.Snapshot()
	if err == nil {
		err = h.store.PutSnapshot(ctx, hr.id, seq, snap)
	}
	if err != nil {
		h.log.Warn("adphost: a room snapshot was not stored; the room is rebuilt from an older one or its log", "room", hr.id, "seq", seq, "err", err)
	}
}

// snapshotDue reports whether the record at seq is followed by a stored
// snapshot. The first snapshots are every records apart. A snapshot costs
// time and bytes in proportion to the room (it carries every accepted
// event hash), so past 8×every records the distance doubles whenever the
// room doubles, staying between an eighth and a quarter of the room's
// length: a snapshot then costs each write a constant share however long
// the room grows, and a rebuild replays at most a quarter of the room.
// every <= 0 means never.
func snapshotDue(seq, every int64) bool {
	if every <= 0 || seq <= 0 {
		return false
	}
	interval := every
	for interval*16 <= seq {
		interval *= 2
	}
	return seq%interval == 0
}

// checkNonce is the durable nonce cache: the Verifier's is in memory and
// lost on a restart; this one survives it with the Store. It returns the
// actor's cache entry.
func (h *Host) checkNonce(ctx context.Context, ev *adp.Event, ms int64) (maxNonce, exp int64, err error) {
	maxNonce, exp, err = h.store.MaxNonce(ctx, ev.Actor)
	if err != nil {
		return 0, 0, err
	}
	if err := nonceCheck(ev, ms, maxNonce, exp); err != nil {
		return 0, 0, err
	}
	return maxNonce, exp, nil
}

// nonceAdvance is the Store's nonce rule for ev's live write accepted at
// now: its entry lives two windows (Agent Identity §6.1), past any
// created_at the window still admits.
func (h *Host) nonceAdvance(ev *adp.Event, now time.Time) NonceAdvance {
	return NonceAdvance{Actor: ev.Actor, Nonce: ev.Nonce, Now: now.UnixMilli(), ExpiresAt: now.Add(2 * h.window).UnixMilli()}
}

// nonceCheck is checkNonce's rule on the actor's entry (maxNonce, exp).
func nonceCheck(ev *adp.Event, ms, maxNonce, exp int64) error {
	if exp > ms && ev.Nonce <= maxNonce {
		return &identity.Error{Code: identity.CodeNonceNotGreater, Message: "nonce is not greater than the greatest accepted nonce", MaxSeenNonce: maxNonce}
	}
	return nil
}

// privateGate keeps a private room's state from its outsiders (§16,
// threat model promise 13): a write from anyone but the creator and the
// active members is refused before the rule table could judge its base
// against the head (a room_head_mismatch would echo the head). The only
// exception is a room.join naming the actor's approved, unexpired join
// request. A room.join without request_id is approval_required, as §10.2
// says, and one naming the actor's own request that is not (or no longer)
// approved is join_request_not_approved or join_request_expired: neither
// tells an outsider who knows the ID more than applying and reading its
// own request do.
//
// refusal is the answer for a write the gate stops; err is a Store
// failure, which is no verdict on the write.
func (h *Host) privateGate(ctx context.Context, room *adp.Room, ev *adp.Event) (refusal, err error) {
	if room.Contract().Visibility != adp.VisibilityPrivate || isMember(room, ev.Actor, true) {
		return nil, nil
	}
	if h.laterDraft() {
		return h.policyGate(room, ev), nil
	}
	if ev.Type == adp.TypeRoomJoin {
		if p, ok := builtin[*adp.Join](ev); ok {
			if p.RequestID == "" {
				return identity.NewError(adp.CodeApprovalRequired, "this room requires an approved join request"), nil
			}
			jr, err := h.store.JoinRequest(ctx, room.ID(), p.RequestID)
			if err != nil {
				return nil, err
			}
			if jr != nil && jr.Request.Applicant == ev.Actor {
				// The applicant's own request: its status is what GET
				// tells the applicant anyway, so the refusal may say it.
				switch h.effective(jr).Status {
				case adp.JoinApproved:
					if h.approvedFor(jr, ev.Actor) {
						return nil, nil
					}
					return identity.NewError(adp.CodeJoinRequestExpired, "the join request has expired"), nil
				case adp.JoinExpired:
					return identity.NewError(adp.CodeJoinRequestExpired, "the join request has expired"), nil
				default:
					return identity.NewError(adp.CodeJoinRequestNotApproved, "the join request is not approved"), nil
				}
			}
		}
	}
	return roomNotFound(room.ID()), nil
}

// policyGate is privateGate in the 2026-09-24 draft (§9.2, §10): an
// outsider of a private room joins directly only with a role the policy
// opens or invites it to, which the rule table then judges; any other
// room.join is approval_required (it must apply), and every other write
// is answered as for a missing room.
func (h *Host) policyGate(room *adp.Room, ev *adp.Event) error {
	if ev.Type != adp.TypeRoomJoin {
		return roomNotFound(room.ID())
	}
	if p, ok := builtin[*adp.Join](ev); ok && eligible(room, ev.Actor, p.Role) {
		return nil
	}
	return identity.NewError(adp.CodeApprovalRequired, "this room requires an approved join request")
}

// eligible reports whether who may take role by direct room.join: the
// role is open, or who is invited to it (2026-09-24 §8.3).
func eligible(room *adp.Room, who identity.AgentID, role adp.Role) bool {
	c := room.Contract()
	return slices.Contains(c.Policy.EffectiveOpenRoles(c.Visibility), role) || c.Policy.Invites[who] == role
}

// invited reports whether who is named in the room's policy.invites
// (2026-09-24 §15: it may read the room resource and head).
func invited(room *adp.Room, who identity.AgentID) bool {
	_, ok := room.Contract().Policy.Invites[who]
	return ok
}

// outsider charges a refused write whose signature verified (from an
// outsider of a private room, or to a room that does not exist) to the
// actor's quota and returns refusal, or rate_limited once that quota is
// used up. Forged envelopes never get here, so they cannot burn a
// victim's quota. The quota is the kind's of a built-in type and the
// control quota for any other, whatever the room's registry says: the
// answer must not depend on the room.
func (h *Host) outsider(ctx context.Context, ev *adp.Event, now time.Time, refusal error) error {
	key, limit := rateKey{agent: ev.Actor, class: "control"}, h.limits.Control
	switch adp.BuiltinCategory(ev.Type) {
	case adp.CategoryMessage:
		key.class, limit = "message", h.limits.Message
	case adp.CategorySignal:
		key.class, limit = "signal", h.limits.Signal
	}
	if err := h.take(ctx, key, limit, now); err != nil {
		return err
	}
	return refusal
}

// applyReview records a room.join.review's decision on the stored join
// request. The record is already in the log, which is the truth: a
// failure here (a crash, a Store error) is repaired when the room is
// next loaded (see reconcile), so it is not the write's error. A request
// that already agrees is not written again.
func (h *Host) applyReview(ctx context.Context, roomID string, ev *adp.Event, rec *adp.Record) error {
	var id string
	var decision adp.Decision
	var role adp.Role
	var reason string
	var reviewID *envelope.Hash
	if h.laterDraft() {
		// The review embeds the signed request, whose event ID names it
		// (2026-09-24 §10); the review's own event ID is recorded.
		p, ok := builtin[*adp.SignedJoinReview](ev)
		if !ok || p.Request == nil {
			return nil
		}
		hash := rec.EventHash()
		id, decision, role, reason, reviewID = p.Request.Hash().String(), p.Decision, p.Role, p.Reason, &hash
	} else {
		p, ok := builtin[*adp.JoinReview](ev)
		if !ok {
			return nil
		}
		id, decision, role, reason = p.Request.ID, p.Decision, p.Role, p.Reason
	}
	jr, err := h.store.JoinRequest(ctx, roomID, id)
	if err != nil || jr == nil {
		return err
	}
	status := adp.JoinRejected
	if decision == adp.DecisionApprove {
		status = adp.JoinApproved
	} else {
		role = ""
	}
	if jr.Status == status && jr.ReviewedAt == rec.ReceivedAt && jr.ReviewedBy != nil && *jr.ReviewedBy == ev.Actor {
		return nil
	}
	actor := ev.Actor
	jr.Status, jr.ApprovedRole = status, role
	jr.ReviewReason, jr.ReviewedBy, jr.ReviewedAt, jr.ReviewEventID = reason, &actor, rec.ReceivedAt, reviewID
	return h.store.PutJoinRequest(ctx, jr)
}

// afterAccept applies a record's side effects on host resources: join
// request reviews, agent statuses cleared on leave, removal and demotion
// (§17.4), and the live stream.
func (h *Host) afterAccept(ctx context.Context, hr *hostRoom, ev *adp.Event, rec *adp.Record) {
	switch ev.Type {
	case adp.TypeRoomCreate, adp.TypeTypeDefine:
		hr.reg = hr.room.Registry()
	case adp.TypeRoomJoinReview:
		if err := h.applyReview(ctx, hr.id, ev, rec); err != nil {
			// Repaired when the room is next loaded (reconcile).
			h.log.Error("adphost: a join request was not updated after its review record; it is repaired when the room is next loaded",
				"room", hr.id, "seq", rec.Seq, "err", err)
		}
	case adp.TypeRoomLeave:
		h.clearStatus(ctx, hr, rec, ev.Actor)
	case adp.TypeMemberRemove:
		if p, ok := builtin[*adp.MemberRemove](ev); ok {
			h.clearStatus(ctx, hr, rec, p.Member)
		}
	case adp.TypeMemberRoleUpdate:
		if p, ok := builtin[*adp.RoleUpdate](ev); ok && p.Role == adp.RoleObserver {
			h.clearStatus(ctx, hr, rec, p.Member)
		}
	}
	h.publishRecord(hr, rec)
}

// clearStatus removes the agent status of a member who left, was removed
// or can no longer speak (§17.4). The record stands whatever happens
// here; a status left behind expires with its TTL.
func (h *Host) clearStatus(ctx context.Context, hr *hostRoom, rec *adp.Record, agent identity.AgentID) {
	if err := h.store.DeleteStatus(ctx, hr.id, agent); err != nil {
		h.log.Error("adphost: an agent status was not cleared after its record; it lasts until its TTL",
			"room", hr.id, "seq", rec.Seq, "agent", agent, "err", err)
	}
}

// builtin returns ev's typed payload as a T, decoded once (adp.Event.Builtin,
// which the rule table shares): ok is false when the payload is not one.
func builtin[T any](ev *adp.Event) (T, bool) {
	p, err := ev.Builtin()
	t, ok := p.(T)
	return t, ok && err == nil
}
