package adphost

import (
	"bytes"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/b64url"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

// strictUnmarshal decodes one strict JSON object, refusing unknown members.
func strictUnmarshal(b []byte, v any) error {
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return errors.New("body is not a JSON object")
	}
	return strictjson.Unmarshal(b, v)
}

// callerRoom authenticates the caller (a request JWT is required) and
// finds the path's room.
func (h *Host) callerRoom(r *http.Request) (identity.AgentID, *hostRoom, error) {
	who, err := h.requireCaller(r)
	if err != nil {
		return who, nil, err
	}
	hr, err := h.lookup(r.Context(), r.PathValue("room_id"))
	return who, hr, err
}

// callerRoomInput authenticates the caller, finds the path's room and
// strictly decodes a body of at most 16 KiB into in (what names it in the
// error); on error it has written the response and ok is false.
func (h *Host) callerRoomInput(w http.ResponseWriter, r *http.Request, what string, in any) (who identity.AgentID, hr *hostRoom, ok bool) {
	who, hr, err := h.callerRoom(r)
	if err == nil {
		err = readInput(r, what, in)
	}
	if err != nil {
		writeError(w, err)
		return identity.AgentID{}, nil, false
	}
	return who, hr, true
}

// createJoinRequest is POST /v1/rooms/{room_id}/join-requests (§11). A
// valid request to a public room is approved at once (reviewed_by null),
// except a banned applicant's or a moderator request from an agent not in
// moderator_agent_ids; every other request stays pending until a signed
// room.join.review decides it.
//
// The applicant's quota is taken before anything is read, so that an
// applicant over it costs one quota check; and the request is judged on
// the replica as it is, without the room's lock, so that applicants never
// hold up the room's writes (the pending bound may then be passed by the
// requests judged at the same moment).
func (h *Host) createJoinRequest(w http.ResponseWriter, r *http.Request) {
	if h.laterDraft() {
		h.createSignedJoinRequest(w, r)
		return
	}
	now := h.now()
	who, err := h.requireCaller(r)
	if err == nil {
		err = h.take(r.Context(), rateKey{agent: who, class: "join-request"}, h.limits.JoinRequests, now)
	}
	var hr *hostRoom
	if err == nil {
		hr, err = h.lookup(r.Context(), r.PathValue("room_id"))
	}
	var in adp.JoinRequestInput
	if err == nil {
		err = readInput(r, "join request", &in)
	}
	var room *adp.Room
	if err == nil {
		room = hr.current()
		err = h.judgeJoinRequest(r, room, hr.id, who, &in, now)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	c := room.Contract()
	ms := now.UnixMilli()
	jr := &adp.JoinRequestResource{
		Request: adp.JoinRequest{
			ID: h.newReqID(), RoomID: hr.id, Applicant: who, Role: in.Role, Perspective: in.Perspective,
			Reason: in.Reason, CreatedAt: ms, ExpiresAt: now.Add(h.jrTTL).UnixMilli(), Extra: in.Extra,
		},
		Status: adp.JoinPending,
	}
	if jr.Request.Extra == nil {
		jr.Request.Extra = jsontext.Value("{}")
	}
	if c.Visibility == adp.VisibilityPublic && !room.Banned(who) &&
		(in.Role != adp.RoleModerator || slices.Contains(c.Policy.ModeratorAgentIDs, who)) {
		jr.Status, jr.ApprovedRole, jr.ReviewReason, jr.ReviewedAt = adp.JoinApproved, in.Role, "public room auto-approval", ms
	}
	if err := h.store.PutJoinRequest(r.Context(), jr); err != nil {
		writeError(w, err)
		return
	}
	hr.mu.Lock()
	h.publishJoinRequest(hr, jr)
	hr.mu.Unlock()
	writeJSON(w, http.StatusCreated, jr)
}

// judgeJoinRequest refuses a join request the room would not take. An
// outsider of a private room learns nothing of the room's policy or state
// from it (§16): what its policy or status refuses is answered as for a
// missing room, and only the input's shape and the pending bound are
// judged otherwise.
func (h *Host) judgeJoinRequest(r *http.Request, room *adp.Room, roomID string, who identity.AgentID, in *adp.JoinRequestInput, now time.Time) error {
	c := room.Contract()
	m, isMemberNow := room.Member(who)
	var err error
	switch {
	case in.Role != adp.RoleModerator && in.Role != adp.RoleSpeaker && in.Role != adp.RoleObserver:
		return identity.Errorf(identity.CodeInvalidRequest, "role %q is not moderator, speaker or observer", clip(string(in.Role)))
	case len(in.Extra) > 0 && in.Extra.Kind() != '{':
		return identity.NewError(identity.CodeInvalidRequest, "extra is not a JSON object")
	case in.Role == adp.RoleObserver && c.Policy.ObserverAllowed != nil && !*c.Policy.ObserverAllowed:
		err = identity.NewError(adp.CodeRoleNotAllowed, "the room policy does not allow observers")
	case isMemberNow && m.Status == adp.MemberActive:
		err = identity.NewError(identity.CodeInvalidRequest, "the applicant is already an active member")
	default:
		err = h.writable(room.Status(now))
	}
	if err != nil {
		return hiddenOr(room, roomID, who, err)
	}
	return h.checkPending(r, roomID, now)
}

// readInput strictly decodes a body of at most 16 KiB into in (what names
// it in the error).
func readInput(r *http.Request, what string, in any) error {
	b, err := readBody(r, 16<<10)
	if err != nil {
		return err
	}
	if err := strictUnmarshal(b, in); err != nil {
		return identity.Wrap(identity.CodeInvalidRequest, what, err)
	}
	return nil
}

// checkPending bounds a room's pending requests, so that the list the
// reviewers read stays bounded whatever applicants do. It counts the
// requests stored as pending that have not expired, through the Store's
// index: requests a public room approved at once, and decided or expired
// ones, cost it nothing.
func (h *Host) checkPending(r *http.Request, roomID string, now time.Time) error {
	n, err := h.countPending(r.Context(), roomID, now.UnixMilli())
	if err != nil {
		return err
	}
	if n >= h.maxPending {
		// No count in the answer: applying is open to outsiders of a
		// private room, who must learn nothing of its state.
		return identity.NewError(identity.CodeRateLimited, "the room has too many pending join requests")
	}
	return nil
}

// hiddenOr is err, except that a private room answers room_not_found to a
// caller who may not read it (§16): an outsider learns nothing from the
// join-request list or from another applicant's request.
func hiddenOr(room *adp.Room, roomID string, who identity.AgentID, err error) error {
	if room.Contract().Visibility == adp.VisibilityPrivate && !isMember(room, who, true) {
		return roomNotFound(roomID)
	}
	return err
}

// canReview reports whether who may list and review the room's join
// requests: the creator or an active moderator (§11).
func canReview(room *adp.Room, who identity.AgentID) bool {
	if c, _ := room.Creator(); c == who {
		return true
	}
	m, ok := room.Member(who)
	return ok && m.Status == adp.MemberActive && m.Role == adp.RoleModerator
}

// listJoinRequests is GET /v1/rooms/{room_id}/join-requests: the
// authoritative list, for the creator and moderators only, as an Identity
// list in key order (created_at, then ID), paged by limit (default 100,
// at most 1000), Options.MaxPageBytes and an opaque cursor naming the last
// request of the page before. The page is read from the Store by key, so
// that a page costs the same in a room of a hundred applicants and of a
// hundred thousand.
func (h *Host) listJoinRequests(w http.ResponseWriter, r *http.Request) {
	who, hr, err := h.callerRoom(r)
	if err == nil {
		if room := hr.current(); !canReview(room, who) {
			err = hiddenOr(room, hr.id, who, identity.NewError(identity.CodePermissionDenied, "only the creator and moderators list join requests"))
		}
	}
	q := r.URL.Query()
	var limit int
	var after JoinRequestKey
	if err == nil {
		limit, err = limitParam(q.Get("limit"), DefaultEventsLimit, MaxEventsLimit)
	}
	if err == nil && q.Has("cursor") {
		after, err = parseKeyCursor(q.Get("cursor"))
	}
	var list []*adp.JoinRequestResource
	if err == nil {
		list, err = h.requestsAfter(r.Context(), hr.id, after, limit+1) // one more: does a next page exist?
	}
	if err != nil {
		writeError(w, err)
		return
	}
	for i, jr := range list {
		list[i] = h.effective(jr)
	}
	views := make([]any, len(list))
	for i, jr := range list {
		views[i] = h.joinView(jr)
	}
	out := identity.List[any]{Result: []any{}}
	if part, next := cut(views, 0, limit, h.pageBytes); part != nil {
		out.Result = part
		if next != "" {
			out.NextCursor = makeKeyCursor(KeyOf(list[len(part)-1]))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// Join-request cursors are opaque to clients: base64url of
// "k:<created_at>:<id>", the key of the last request of the page before.
func makeKeyCursor(k JoinRequestKey) string {
	b := strconv.AppendInt([]byte("k:"), k.CreatedAt, 10)
	return b64url.Encode(append(append(b, ':'), k.ID...))
}

func parseKeyCursor(s string) (JoinRequestKey, error) {
	raw, err := b64url.Decode(s)
	if err == nil && len(raw) > 2 && string(raw[:2]) == "k:" {
		at, id, ok := strings.Cut(string(raw[2:]), ":")
		if n, err := strconv.ParseInt(at, 10, 64); ok && err == nil && n >= 0 {
			return JoinRequestKey{CreatedAt: n, ID: id}, nil
		}
	}
	return JoinRequestKey{}, identity.NewError(identity.CodeInvalidRequest, "cursor is not one this host issued")
}

// getJoinRequest is GET /v1/rooms/{room_id}/join-requests/{request_id}:
// visible to the applicant, the creator and moderators; to anyone else it
// does not exist.
func (h *Host) getJoinRequest(w http.ResponseWriter, r *http.Request) {
	who, hr, err := h.callerRoom(r)
	var jr *adp.JoinRequestResource
	if err == nil {
		jr, err = h.store.JoinRequest(r.Context(), hr.id, r.PathValue("request_id"))
	}
	if err == nil && (jr == nil || (jr.Request.Applicant != who && !canReview(hr.current(), who))) {
		err = hiddenOr(hr.current(), hr.id, who, identity.NewError(adp.CodeJoinRequestNotFound, "the join request does not exist or is not visible"))
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, h.joinView(h.effective(jr)))
}
