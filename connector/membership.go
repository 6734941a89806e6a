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
)

func validRole(r string) bool {
	switch adp.Role(r) {
	case adp.RoleModerator, adp.RoleSpeaker, adp.RoleObserver:
		return true
	}
	return false
}

// CreateRoom is agent_protocols_room_create: signs a room.create, records
// it in the outbox, submits it and opens (and subscribes to) the new room.
func (e *Engine) CreateRoom(ctx context.Context, session string, in RoomCreateInput) (*RoomCreateResult, error) {
	h, err := e.host(in.Host)
	if err != nil {
		return nil, err
	}
	p := adp.RoomCreate{Topic: in.Topic, Agenda: in.Agenda, Guidance: in.Guidance, Visibility: adp.Visibility(in.Visibility),
		StartTime: in.StartTime, EndTime: in.EndTime, Tags: in.Tags, Language: in.Language}
	if len(in.Policy) > 0 {
		var pol adp.Policy
		if err := strictjson.Unmarshal(in.Policy, &pol); err != nil {
			return nil, fmt.Errorf("%w: policy: %v", ErrInvalidInput, err)
		}
		p.Policy = &pol
	}
	draft, err := h.client.Draft(ctx)
	if err != nil {
		return nil, h.err(err)
	}
	if err := e.learnDraft(h); err != nil {
		return nil, err
	}
	for _, t := range in.Types {
		d, err := draft.ParseDeclaration(t)
		if err != nil {
			return nil, err
		}
		p.Types = append(p.Types, d)
	}
	if draft != adp.Draft20260704 {
		p.Host = h.name // 2026-09-24 §8.1: the room is bound to its host
	}
	if !e.limiter.allow() {
		return nil, ErrRateLimited
	}
	e.writeMu.Lock()
	env, err := adp.NewRoomCreateIn(ctx, e.author, draft, p)
	if err != nil {
		e.writeMu.Unlock()
		return nil, err
	}
	id, err := e.recordOutbox(env, &outboxEntry{Host: h.name, Create: true, Envelope: env.AppendJSON(nil)})
	if err != nil {
		e.writeMu.Unlock()
		return nil, err
	}
	rec, err := h.client.SubmitCreate(ctx, env)
	if err != nil {
		err = e.submitFailed(h.name, id, err)
		e.writeMu.Unlock()
		return nil, err
	}
	if err := checkRoomID(rec.RoomID); err != nil {
		err = errors.Join(fmt.Errorf("connector: host %s created a room with an id the connector refuses (%v)", h.name, err), e.dropOutbox(id))
		e.writeMu.Unlock()
		return nil, err
	}
	k := roomKey{h.name, rec.RoomID}
	e.rt(k)
	_, err = e.accepted(ctx, session, k, h, id, rec)
	e.writeMu.Unlock()
	if err != nil {
		return nil, err
	}
	if _, err := e.openRoom(ctx, h, rec.RoomID, true); err != nil {
		return nil, err
	}
	view, s, err := e.roomView(k, h, false)
	if err != nil {
		return nil, err
	}
	e.present(session, k, s)
	return &RoomCreateResult{Room: *view, Envelope: env.AppendJSON(nil), Sync: s}, nil
}

// Join is agent_protocols_room_join, in the draft the host serves. In the
// seed a public room is joined directly; in the 2026-09-24 draft a role
// the room's policy opens or invites the agent to (§9.2). A room that
// needs approval gets a join request (status "approval_required"; in the
// 2026-09-24 draft a signed room.join.request, see requestJoin); once it
// is approved (a room.join.approved inbox item), calling Join again signs
// room.join with the approved role in the seed, failing with
// ErrRoleMismatch when the input names another role, and in the
// 2026-09-24 draft, where the approving review made the agent a member,
// opens the room. The room
// need not be known locally: without Host, the host is the one the room
// is known on, or the only enabled host; with several candidates Join
// fails with ErrAmbiguousRoom.
func (e *Engine) Join(ctx context.Context, session string, in RoomJoinInput) (*RoomJoinResult, error) {
	if !validRole(in.Role) {
		return nil, fmt.Errorf("%w: role %q", ErrInvalidInput, clip(in.Role))
	}
	// A restricted or private room cannot be opened before joining, so
	// room_id alone is enough when it picks one host (hostFor).
	h, err := e.hostFor(in.Host, in.RoomID)
	if err != nil {
		return nil, err
	}
	k := roomKey{h.name, in.RoomID}
	// A private room's resource is invisible to a non-member (§16): its
	// refusal means "needs approval", and the join request needs no room
	// read. A room that does not exist is refused by the request itself.
	res, err := h.client.GetRoom(ctx, in.RoomID)
	if err != nil {
		if !hiddenRoom(err) {
			return nil, h.err(err)
		}
		res = nil
	}
	var sr *storedRoom
	if err := e.store.View(func(tx stateTx) error {
		var err error
		sr, err = loadRoom(tx, k)
		return err
	}); err != nil {
		return nil, err
	}
	join := adp.Join{Role: adp.Role(in.Role)}
	draft, err := h.client.Draft(ctx)
	if err != nil {
		return nil, h.err(err)
	}
	if err := e.learnDraft(h); err != nil {
		return nil, err
	}
	if draft != adp.Draft20260704 && !e.directJoin(res, adp.Role(in.Role)) {
		return e.requestJoin(ctx, session, k, h, sr, in)
	}
	// Seed §10.2: a direct room.join is for public rooms only, and as
	// moderator only for an agent listed in policy.moderator_agent_ids;
	// every other path goes through a join request (a listed moderator's
	// request is what the host may approve at once). 2026-09-24 §9.2: a
	// role the policy opens, or invites the agent to, in any visibility.
	if draft != adp.Draft20260704 || res != nil && res.Visibility == adp.VisibilityPublic && (in.Role != string(adp.RoleModerator) || isPolicyModerator(res.Policy, e)) {
		if in.Perspective != "" {
			join.Perspective = &in.Perspective
		}
	} else {
		reqID := in.RequestID
		if reqID == "" {
			reqID = sr.JoinRequestID
		}
		var jr *adp.JoinRequestResource
		if reqID != "" {
			if jr, err = h.client.JoinRequest(ctx, in.RoomID, reqID); err != nil {
				return nil, h.err(err)
			}
			// A stored request that was rejected or expired is not usable:
			// a new one is made (a request the caller named is reported).
			if in.RequestID == "" && jr.Status != adp.JoinPending && jr.Status != adp.JoinApproved {
				reqID, jr = "", nil
			}
		}
		if reqID == "" {
			ji := adp.JoinRequestInput{Role: adp.Role(in.Role), Extra: in.Extra}
			if in.Perspective != "" {
				ji.Perspective = &in.Perspective
			}
			if in.Reason != "" {
				ji.Reason = &in.Reason
			}
			if !e.limiter.allow() {
				return nil, ErrRateLimited
			}
			if jr, err = h.client.RequestJoin(ctx, in.RoomID, ji); err != nil {
				return nil, h.err(err)
			}
		}
		if out, err := e.keepJoinRequest(session, k, jr); out != nil || err != nil {
			return out, err
		}
		if res == nil {
			// An approved applicant may read the room (§11).
			if res, err = h.client.GetRoom(ctx, in.RoomID); err != nil {
				return nil, h.err(err)
			}
		}
		if string(jr.ApprovedRole) != in.Role {
			return nil, fmt.Errorf("%w: approved %q, asked %q", ErrRoleMismatch, jr.ApprovedRole, clip(in.Role))
		}
		join = adp.Join{Role: jr.ApprovedRole, RequestID: jr.Request.ID}
	}
	payload, err := json.Marshal(join)
	if err != nil {
		return nil, err
	}
	req, err := eventReq(k, adp.TypeRoomJoin, payload, nil, nil)
	if err != nil {
		return nil, err
	}
	var rec *adp.Record
	created := false
	e.verified(k, func(room *adp.Room) { created = room != nil && room.Created() })
	if !created {
		// Not readable before joining: anchor on the host's latest record.
		// (A room_open refused before joining leaves an empty replica,
		// which verifies nothing: it is not readable either.)
		rec, err = e.blindSignal(ctx, k, h, req, adp.Base{RoomID: k.room, Seq: res.Seq, Hash: res.Hash, Draft: draft})
		if err != nil {
			return nil, err
		}
	} else {
		wr, err := e.write(ctx, session, k, h, req, writeOpts{})
		if err != nil {
			return nil, err
		}
		if rec, err = adp.ParseRecordIn(h.draft(), wr.Record); err != nil {
			return nil, err
		}
	}
	if _, err := e.openRoom(ctx, h, k.room, true); err != nil {
		return nil, err
	}
	out := &RoomJoinResult{Status: "joined", Record: rec.AppendJSON(nil)}
	out.Member = e.ownMember(k)
	var s SyncState
	if err := e.store.View(func(tx stateTx) error { s, err = e.syncState(tx, k); return err }); err != nil {
		return nil, err
	}
	out.Sync = &s
	e.present(session, k, s)
	return out, nil
}

// directJoin reports whether the room resource res (nil when hidden)
// lets the agent join as role directly in the 2026-09-24 draft (§9.2):
// the role is one the policy opens, or the one it invites the agent to.
func (e *Engine) directJoin(res *adp.RoomResource, role adp.Role) bool {
	if res == nil {
		return false
	}
	return slices.Contains(res.Policy.EffectiveOpenRoles(res.Visibility), role) || res.Policy.Invites[e.agent] == role
}

// requestJoin is Join in the 2026-09-24 draft for a role that needs
// approval (§10): the agent's signed room.join.request, held by the host
// until a room.join.review that embeds it decides, and that review itself
// makes the agent a member (no room.join follows). A pending request is
// reported again (approval_required); an approved one opens the room and
// reports the membership (joined); a rejected or expired one is replaced
// by a new request unless the caller named it.
func (e *Engine) requestJoin(ctx context.Context, session string, k roomKey, h *hostState, sr *storedRoom, in RoomJoinInput) (*RoomJoinResult, error) {
	reqID := in.RequestID
	if reqID == "" {
		reqID = sr.JoinRequestID
	}
	var jr *adp.JoinRequestResource
	var err error
	if reqID != "" {
		if jr, err = h.client.JoinRequest(ctx, k.room, reqID); err != nil {
			return nil, h.err(err)
		}
		if in.RequestID == "" && jr.Status != adp.JoinPending && jr.Status != adp.JoinApproved {
			jr = nil
		}
	}
	if jr == nil {
		p := adp.JoinRequestPayload{Role: adp.Role(in.Role), Extra: in.Extra}
		if in.Perspective != "" {
			p.Perspective = &in.Perspective
		}
		if in.Reason != "" {
			p.Reason = &in.Reason
		}
		if jr, err = e.submitJoinRequest(ctx, k, h, p); err != nil {
			return nil, err
		}
	}
	if out, err := e.keepJoinRequest(session, k, jr); out != nil || err != nil {
		return out, err
	}
	// The approving review made the agent a member.
	if _, err := e.openRoom(ctx, h, k.room, true); err != nil {
		return nil, err
	}
	raw, _ := json.Marshal(jr)
	out := &RoomJoinResult{Status: "joined", JoinRequest: raw}
	out.Member = e.ownMember(k)
	out.Sync = e.syncOf(session, k)
	return out, nil
}

// ownMember is the agent's member view in the room's verified state, nil
// if it is not a member there.
func (e *Engine) ownMember(k roomKey) *RoomMemberView {
	var out *RoomMemberView
	e.verified(k, func(room *adp.Room) {
		if room == nil {
			return
		}
		if m, ok := room.Member(e.agent); ok {
			creator, _ := room.Creator()
			mv := memberView(m, creator)
			out = &mv
		}
	})
	return out
}

// keepJoinRequest stores the agent's join request of the room (its id,
// status and approved role) and, unless it is approved, returns the
// approval_required result with it.
func (e *Engine) keepJoinRequest(session string, k roomKey, jr *adp.JoinRequestResource) (*RoomJoinResult, error) {
	if err := e.store.Update(func(tx stateTx) error {
		sr, err := loadRoom(tx, k)
		if err != nil {
			return err
		}
		sr.JoinRequestID, sr.JoinRequestStatus, sr.JoinApprovedRole = jr.Request.ID, string(jr.Status), string(jr.ApprovedRole)
		return tx.Put(bRooms, rkey(k.host, k.room), sr)
	}); err != nil {
		return nil, err
	}
	e.rt(k) // known now: its join request is polled and resolvable
	if jr.Status == adp.JoinApproved {
		return nil, nil
	}
	raw, _ := json.Marshal(jr)
	out := &RoomJoinResult{Status: "approval_required", JoinRequest: raw}
	if rep := e.openReplica(k); rep != nil && rep.Latest().Seq > 0 {
		out.Sync = e.syncOf(session, k)
	}
	return out, nil
}

// submitJoinRequest signs a room.join.request (2026-09-24 §10) and sends
// it; its nonce is stored before it is sent, like a write's. It is not a
// record, so it has no outbox entry: a request lost in transport is
// simply asked again.
func (e *Engine) submitJoinRequest(ctx context.Context, k roomKey, h *hostState, p adp.JoinRequestPayload) (*adp.JoinRequestResource, error) {
	if !e.limiter.allow() {
		return nil, ErrRateLimited
	}
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	for retried := false; ; retried = true {
		env, err := adp.NewJoinRequest(ctx, e.author, h.draft(), k.room, p)
		if err != nil {
			return nil, err
		}
		if err := e.storeNonce(env.Event().Nonce); err != nil {
			return nil, err
		}
		jr, err := h.client.SubmitJoinRequest(ctx, k.room, env)
		var ie *identity.Error
		if !retried && errors.As(err, &ie) && ie.Code == identity.CodeNonceNotGreater && ie.MaxSeenNonce > 0 {
			if oerr := e.nonces.ObserveMaxSeenNonce(ctx, ie.MaxSeenNonce); oerr != nil {
				return nil, errors.Join(err, oerr)
			}
			continue
		}
		if err != nil {
			return nil, h.err(err)
		}
		return jr, nil
	}
}

// hiddenRoom reports a room read refused the way a private room answers a
// non-member (§16).
func hiddenRoom(err error) bool {
	return errors.Is(err, adp.ErrRoomNotFound) || errors.Is(err, adp.ErrMembershipRequired) ||
		errors.Is(err, adp.ErrPermissionDenied) || errors.Is(err, adp.ErrInvalidToken)
}

func isPolicyModerator(p adp.Policy, e *Engine) bool {
	for _, id := range p.ModeratorAgentIDs {
		if id == e.agent {
			return true
		}
	}
	return false
}

// blindSignal signs and submits a signal write to a room the agent cannot
// replay yet (a join), with the same nonce + outbox discipline.
func (e *Engine) blindSignal(ctx context.Context, k roomKey, h *hostState, req *writeReq, base adp.Base) (*adp.Record, error) {
	if !e.limiter.allow() {
		return nil, ErrRateLimited
	}
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	var j adp.Join
	if err := strictjson.Unmarshal(req.Payload, &j); err != nil {
		return nil, err
	}
	env, err := adp.NewJoin(ctx, e.author, base, j)
	if err != nil {
		return nil, err
	}
	id, err := e.recordOutbox(env, &outboxEntry{Host: k.host, RoomID: k.room, Envelope: env.AppendJSON(nil), Req: req})
	if err != nil {
		return nil, err
	}
	rec, err := h.client.Submit(ctx, k.room, env)
	if err != nil {
		return nil, e.submitFailed(h.name, id, err)
	}
	if _, err := e.accepted(ctx, "", k, h, id, rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// Leave is agent_protocols_room_leave.
func (e *Engine) Leave(ctx context.Context, session string, in RoomLeaveInput) (*RecordResult, error) {
	k, h, err := e.resolve(in.Host, in.RoomID)
	if err != nil {
		return nil, err
	}
	payload, err := json.Marshal(adp.Notice{Reason: in.Reason})
	if err != nil {
		return nil, err
	}
	req, err := eventReq(k, adp.TypeRoomLeave, payload, nil, nil)
	if err != nil {
		return nil, err
	}
	wr, err := e.write(ctx, session, k, h, req, writeOpts{})
	if err != nil {
		return nil, err
	}
	return &RecordResult{Record: wr.Record, Sync: wr.Sync}, nil
}

// Review is agent_protocols_join_request_review: reads the join request
// from the host and signs room.join.review carrying it verbatim.
func (e *Engine) Review(ctx context.Context, session string, in JoinReviewInput) (*RecordResult, error) {
	k, h, err := e.resolve(in.Host, in.RoomID)
	if err != nil {
		return nil, err
	}
	switch adp.Decision(in.Decision) {
	case adp.DecisionApprove:
		if !validRole(in.Role) {
			return nil, fmt.Errorf("%w: approving needs a role", ErrInvalidInput)
		}
	case adp.DecisionReject:
	default:
		return nil, fmt.Errorf("%w: decision %q", ErrInvalidInput, clip(in.Decision))
	}
	jr, err := h.client.JoinRequest(ctx, k.room, in.RequestID)
	if err != nil {
		return nil, h.err(err)
	}
	var rv any = adp.JoinReview{Request: jr.Request, Decision: adp.Decision(in.Decision), Role: adp.Role(in.Role), Reason: in.Reason}
	if jr.Signed != nil {
		// 2026-09-24 §10: the review embeds the signed request.
		rv = adp.SignedJoinReview{Request: jr.Signed, Decision: adp.Decision(in.Decision), Role: adp.Role(in.Role), Reason: in.Reason}
	}
	payload, err := json.Marshal(rv)
	if err != nil {
		return nil, err
	}
	req, err := eventReq(k, adp.TypeRoomJoinReview, payload, nil, nil)
	if err != nil {
		return nil, err
	}
	wr, err := e.write(ctx, session, k, h, req, writeOpts{})
	if err != nil {
		return nil, err
	}
	// The review is handled: its inbox item goes.
	_ = e.store.Update(func(tx stateTx) error {
		id := inboxID(k.host, k.room, KindJoinRequested, 0, in.RequestID)
		it, ok, err := getInbox(tx, id)
		if err != nil || !ok {
			return err
		}
		it.State = AckHandled
		return putInbox(tx, it)
	})
	return &RecordResult{Record: wr.Record, Sync: wr.Sync}, nil
}

// pollJoinRequests checks this agent's pending join requests (a local
// transition: the applicant cannot read the room's log before joining) and
// creates room.join.approved items. Throttled by the caller.
func (e *Engine) pollJoinRequests(ctx context.Context) {
	var pending []storedRoom
	var known []roomKey
	_ = e.store.View(func(tx stateTx) error {
		return tx.Scan(bRooms, "", func(_ string, raw []byte) error {
			var sr storedRoom
			if err := unmarshalStored(raw, &sr); err != nil {
				return nil
			}
			if sr.JoinRequestID != "" && sr.JoinRequestStatus == string(adp.JoinPending) {
				pending = append(pending, sr)
			}
			if h := e.hosts[sr.Host]; h != nil && h.client != nil {
				known = append(known, roomKey{sr.Host, sr.RoomID})
			}
			return nil
		})
	})
	var reviewing []roomKey
	for _, k := range known {
		e.verified(k, func(room *adp.Room) {
			if room != nil && e.reviews(room) {
				reviewing = append(reviewing, k)
			}
		})
	}
	// Reviewers: the live join-request notice is only a hint (missed while
	// disconnected), so the pending list is read too.
	for _, k := range reviewing {
		h := e.hosts[k.host]
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		jrs, err := h.client.JoinRequests(ctx, k.room)
		cancel()
		if err != nil {
			continue
		}
		for _, jr := range jrs {
			if jr.Status == adp.JoinPending {
				e.joinRequested(k, h, &adp.JoinRequestNotice{RoomID: k.room, RequestID: jr.Request.ID, Applicant: jr.Request.Applicant, Role: jr.Request.Role})
			}
		}
	}
	for _, sr := range pending {
		h, err := e.host(sr.Host)
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		jr, err := h.client.JoinRequest(ctx, sr.RoomID, sr.JoinRequestID)
		cancel()
		if err != nil || jr.Status == adp.JoinPending {
			continue
		}
		k := roomKey{sr.Host, sr.RoomID}
		var added bool
		_ = e.store.Update(func(tx stateTx) error {
			cur, err := loadRoom(tx, k)
			if err != nil {
				return err
			}
			cur.JoinRequestStatus, cur.JoinApprovedRole = string(jr.Status), string(jr.ApprovedRole)
			if err := tx.Put(bRooms, rkey(k.host, k.room), cur); err != nil {
				return err
			}
			if jr.Status != adp.JoinApproved {
				return nil
			}
			added, err = addInbox(tx, InboxItem{Kind: KindJoinApproved, Priority: "high", Host: k.host, RoomID: k.room,
				EventID: jr.Request.ID, Actor: e.agent.String(), CreatedAt: e.now().UnixMilli(), RequiresResponse: true,
				Reason: "join_approved", SuggestedTools: []string{"agent_protocols_room_join"}})
			return err
		})
		if added {
			e.notify(URIInboxPending)
			e.wakeInbox()
		}
	}
}

// JoinRequestsList is agent_protocols_join_requests_list (remote read).
func (e *Engine) JoinRequestsList(ctx context.Context, in JoinRequestsListInput) (*JoinRequestsListResult, error) {
	k, h, err := e.resolve(in.Host, in.RoomID)
	if err != nil {
		return nil, err
	}
	jrs, err := h.client.JoinRequests(ctx, k.room)
	if err != nil {
		return nil, h.err(err)
	}
	skip, err := offsetCursor(in.Cursor)
	if err != nil {
		return nil, err
	}
	res := &JoinRequestsListResult{JoinRequests: []jsontext.Value{}, Sync: e.syncOf("", k)}
	limit := pageJoinRequests.of(in.Limit)
	i := 0
	for _, jr := range jrs {
		if in.Status != "" && string(jr.Status) != in.Status {
			continue
		}
		if i++; i <= skip {
			continue
		}
		if len(res.JoinRequests) == limit {
			res.NextCursor = strconv.Itoa(skip + limit)
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
