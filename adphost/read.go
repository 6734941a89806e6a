package adphost

import (
	"net/http"
	"slices"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/b64url"
	"github.com/agentprotocols/go-sdk/packs"
)

// discoveryDoc is the seed discovery document (§16.1).
type discoveryDoc struct {
	Protocol        string            `json:"protocol"`
	Host            string            `json:"host"`
	Features        []string          `json:"features"`
	RegisteredPacks []string          `json:"registered_packs"`
	Endpoints       map[string]string `json:"endpoints"`
	Quotas          QuotaPolicy       `json:"quotas"`
}

// discovery is GET /.well-known/agent-discourse. It lists only what the
// host implements: no profiles feature (it resolves no Agent Profiles).
// Its "quotas" member publishes the host's quota policy (§21, see
// QuotaPolicy), a member the seed text does not define.
func (h *Host) discovery(w http.ResponseWriter, r *http.Request) {
	if h.laterDraft() {
		h.laterDiscovery(w)
		return
	}
	features := []string{
		adp.FeatureRooms, adp.FeatureRestricted, adp.FeaturePrivate, adp.FeatureJoinRequest,
		adp.FeatureJoinReview, adp.FeatureSSE, adp.FeatureAgentStatus, adp.FeatureArchives,
		adp.FeatureRegistered,
	}
	if h.roomOpts.Packs != nil && h.roomOpts.Packs.Fetcher != nil {
		features = append(features, adp.FeatureExternal)
	}
	writeJSON(w, http.StatusOK, discoveryDoc{
		Protocol: adp.Protocol, Host: h.origin.Host(), Features: features,
		RegisteredPacks: packs.RegisteredPackIDs(),
		Endpoints:       map[string]string{"api": h.API(), "sse": h.API()},
		Quotas:          h.Quotas(),
	})
}

// caller returns the verified request-JWT subject when the request carries
// an Authorization header (a bad token is invalid_token even where none is
// needed) and ok false when it carries none.
func (h *Host) caller(r *http.Request) (who identity.AgentID, ok bool, err error) {
	if len(r.Header.Values("Authorization")) == 0 {
		return identity.AgentID{}, false, nil
	}
	c, err := identity.VerifyRequest(r, h.origin, &identity.TokenVerifyOptions{Now: h.now})
	if err != nil {
		return identity.AgentID{}, false, err
	}
	return c.Issuer, true, nil
}

// requireCaller is caller for endpoints that need a JWT.
func (h *Host) requireCaller(r *http.Request) (identity.AgentID, error) {
	who, ok, err := h.caller(r)
	if err == nil && !ok {
		err = identity.NewError(identity.CodeInvalidToken, "this endpoint needs Authorization: Bearer <request JWT>")
	}
	return who, err
}

// isMember reports the read right of §16: the creator or an active member.
func isMember(room *adp.Room, who identity.AgentID, ok bool) bool {
	if !ok {
		return false
	}
	if c, _ := room.Creator(); c == who {
		return true
	}
	return isActive(room, who)
}

// isActive reports whether who is an active member: what the live stream
// needs (§17.1, §22), where a creator who left no longer qualifies.
func isActive(room *adp.Room, who identity.AgentID) bool {
	m, found := room.Member(who)
	return found && m.Status == adp.MemberActive
}

// What a read needs: the room resource (metadata), or the contents
// (events, statuses, archive).
const (
	readMeta = iota
	readContents
)

// authorize applies §16's read rules for a caller already authenticated
// (ok reports a JWT). A private room is invisible (room_not_found) to
// everyone else; a restricted room's contents answer invalid_token
// without a JWT and membership_required with one.
func (h *Host) authorize(r *http.Request, hr *hostRoom, who identity.AgentID, ok bool, what int) (*adp.Room, error) {
	room := hr.current()
	vis := room.Contract().Visibility
	if vis == adp.VisibilityPublic || isMember(room, who, ok) {
		return room, nil
	}
	if vis == adp.VisibilityPrivate {
		if what == readMeta && ok && h.laterDraft() && invited(room, who) {
			return room, nil
		}
		if what == readMeta && ok && !h.laterDraft() && h.approvedApplicant(r, hr.id, who) {
			return room, nil
		}
		return nil, roomNotFound(hr.id)
	}
	if what == readMeta {
		return room, nil
	}
	if !ok {
		return nil, identity.NewError(identity.CodeInvalidToken, "a restricted room's contents need a request JWT")
	}
	return nil, identity.NewError(adp.CodeMembershipRequired, "only the creator and members read this room's contents")
}

// roomNotFound is the answer for a room that does not exist, and for a
// private room to anyone who may not see it: the same code and message,
// so that the two cannot be told apart.
func roomNotFound(id string) error {
	return identity.Errorf(adp.CodeRoomNotFound, "room %q does not exist", clip(id))
}

// approvedApplicant reports whether who holds an approved, unexpired join
// request for the room (§11: it must be able to read the room resource).
func (h *Host) approvedApplicant(r *http.Request, roomID string, who identity.AgentID) bool {
	list, err := h.applicantRequests(r.Context(), roomID, who)
	if err != nil {
		return false
	}
	for _, jr := range list {
		if h.approvedFor(jr, who) {
			return true
		}
	}
	return false
}

// approvedFor reports whether jr is who's approved, unexpired request.
func (h *Host) approvedFor(jr *adp.JoinRequestResource, who identity.AgentID) bool {
	return jr != nil && jr.Request.Applicant == who && jr.Status == adp.JoinApproved && jr.Request.ExpiresAt > h.now().UnixMilli()
}

// authorizedRoom authenticates the caller (a bad token is invalid_token
// whether or not the room exists), finds the path's room and authorizes
// the caller for what (readMeta or readContents), returning the room
// authorize chose to show.
func (h *Host) authorizedRoom(r *http.Request, what int) (*hostRoom, *adp.Room, error) {
	who, ok, err := h.caller(r)
	if err != nil {
		return nil, nil, err
	}
	hr, err := h.lookup(r.Context(), r.PathValue("room_id"))
	if err != nil {
		return nil, nil, err
	}
	room, err := h.authorize(r, hr, who, ok, what)
	if err != nil && h.refresh(r.Context(), hr) {
		room, err = h.authorize(r, hr, who, ok, what) // it may have joined on another process
	}
	if err != nil {
		return nil, nil, err
	}
	return hr, room, nil
}

// getRoom is GET /v1/rooms/{room_id} (§16).
func (h *Host) getRoom(w http.ResponseWriter, r *http.Request) {
	_, room, err := h.authorizedRoom(r, readMeta)
	if err != nil {
		writeError(w, err)
		return
	}
	res := h.resource(room)
	writeJSON(w, http.StatusOK, h.roomView(&res))
}

// resource builds the Room resource of §16.
func (h *Host) resource(room *adp.Room) adp.RoomResource {
	creator, created := room.Creator()
	c := room.Contract()
	latest := room.Latest()
	res := adp.RoomResource{
		ID: room.ID(), Status: room.Status(h.now()), URL: h.RoomURL(room.ID()), Creator: creator, CreatedAt: created, Contract: c,
		Types: room.Registry().Definitions(), Seq: latest.Seq, Hash: latest.Hash, ReceivedAt: latest.ReceivedAt, Head: room.Head(),
	}
	if res.Types == nil {
		res.Types = []*packs.Definition{}
	}
	if latest.Seq > 1 {
		p := latest.PreHash
		res.PreHash = &p
	}
	return res
}

// Paging of GET …/events (§16).
const (
	DefaultEventsLimit = 100
	MaxEventsLimit     = 1000
)

// listEvents is GET /v1/rooms/{room_id}/events: records in seq order, as
// {"result":[…],"next_cursor":…} (the Identity list shape; the seed text
// defines none). The cursor is opaque and takes precedence over after_seq.
// A page holds at most limit records and at most Options.MaxPageBytes of
// them (but always one); next_cursor is present whenever later records
// exist, so a page cut short by its bytes says that more follow.
func (h *Host) listEvents(w http.ResponseWriter, r *http.Request) {
	hr, room, err := h.authorizedRoom(r, readContents)
	if err != nil {
		writeError(w, err)
		return
	}
	q := r.URL.Query()
	after, err := intParam(q.Get("after_seq"), 0)
	if err == nil && q.Has("cursor") {
		after, err = parseCursor(q.Get("cursor"))
	}
	limit, lerr := limitParam(q.Get("limit"), DefaultEventsLimit, MaxEventsLimit)
	if err == nil {
		err = lerr
	}
	if err != nil {
		writeError(w, err)
		return
	}
	// The Store stops reading at the page's budget, so that one request
	// costs memory in proportion to MaxPageBytes, whatever limit and the
	// records' sizes.
	recs, err := h.store.Records(r.Context(), hr.id, after, limit, h.pageBytes)
	if err != nil {
		writeError(w, err)
		return
	}
	b := []byte(`{"result":[`)
	budget := len(b) + h.pageBytes
	// One buffer for the page (grown record by record, a large page
	// would be copied about five times over): a record's JSON is its
	// canonical event and at most about 400 bytes more, and the page holds
	// at most one record beyond the budget before it is cut.
	size := len(b) + 64
	for _, rec := range recs {
		size += len(rec.Envelope.Canonical()) + len(rec.RoomID) + 400
	}
	b = slices.Grow(b, min(size, budget+maxBody+1024))
	for i, rec := range recs {
		n := len(b)
		if i > 0 {
			b = append(b, ',')
		}
		if b = rec.AppendJSON(b); i > 0 && len(b) > budget {
			b, recs = b[:n], recs[:i] // the rest follows on the next page
			break
		}
	}
	b = append(b, ']')
	if n := len(recs); n > 0 && recs[n-1].Seq < room.Latest().Seq {
		b = append(b, `,"next_cursor":"`...)
		b = append(b, makeCursor(recs[n-1].Seq)...)
		b = append(b, '"')
	}
	writeRaw(w, http.StatusOK, append(b, "}\n"...))
}

// intParam parses a non-negative decimal query parameter.
func intParam(s string, def int64) (int64, error) {
	if s == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > identity.MaxNonce {
		return 0, identity.Errorf(identity.CodeInvalidRequest, "query parameter %q is not a non-negative integer", clip(s))
	}
	return n, nil
}

// limitParam parses limit: 1 or more, clamped to max.
func limitParam(s string, def, max int) (int, error) {
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, identity.Errorf(identity.CodeInvalidRequest, "limit %q is not a positive integer", clip(s))
	}
	return min(n, max), nil
}

// Cursors are opaque to clients: base64url of "c:<position>".
func makeCursor(pos int64) string {
	return b64url.Encode(strconv.AppendInt([]byte("c:"), pos, 10))
}

func parseCursor(s string) (int64, error) {
	raw, err := b64url.Decode(s)
	if err == nil && len(raw) > 2 && string(raw[:2]) == "c:" {
		if n, err := strconv.ParseInt(string(raw[2:]), 10, 64); err == nil && n >= 0 {
			return n, nil
		}
	}
	return 0, identity.NewError(identity.CodeInvalidRequest, "cursor is not one this host issued")
}

// statusesOf returns the room's current statuses.
func (h *Host) statusesOf(r *http.Request, roomID string) ([]adp.AgentStatus, error) {
	list, err := h.store.Statuses(r.Context(), roomID)
	if err != nil {
		return nil, err
	}
	now := h.now().UnixMilli()
	out := []adp.AgentStatus{}
	for _, st := range list {
		if st.ExpiresAt > now {
			out = append(out, *st)
		}
	}
	return out, nil
}

// readableStatuses returns the current statuses of the path's room once
// the caller may read its contents; on error it has written the response
// and ok is false.
func (h *Host) readableStatuses(w http.ResponseWriter, r *http.Request) (list []adp.AgentStatus, ok bool) {
	hr, _, err := h.authorizedRoom(r, readContents)
	if err == nil {
		list, err = h.statusesOf(r, hr.id)
	}
	if err != nil {
		writeError(w, err)
		return nil, false
	}
	return list, true
}

// listStatuses is GET /v1/rooms/{room_id}/agent-status (§17.4).
func (h *Host) listStatuses(w http.ResponseWriter, r *http.Request) {
	if list, ok := h.readableStatuses(w, r); ok {
		writeJSON(w, http.StatusOK, h.statusListView(list))
	}
}

// getStatus is GET /v1/rooms/{room_id}/agent-status/{agent_id}.
func (h *Host) getStatus(w http.ResponseWriter, r *http.Request) {
	list, ok := h.readableStatuses(w, r)
	if !ok {
		return
	}
	for _, st := range list {
		if st.AgentID.String() == r.PathValue("agent_id") {
			writeJSON(w, http.StatusOK, h.statusView(st))
			return
		}
	}
	writeError(w, identity.NewError(adp.CodeAgentStatusNotFound, "the agent has no current status in this room"))
}

// putStatus is PUT /v1/rooms/{room_id}/agent-status: the JWT subject's own
// status, only while it is an active moderator or speaker. It creates no
// event and no seq.
func (h *Host) putStatus(w http.ResponseWriter, r *http.Request) {
	var in adp.AgentStatusInput
	who, hr, ok := h.callerRoomInput(w, r, "agent status", &in)
	if !ok {
		return
	}
	if in.State == "" {
		writeError(w, identity.NewError(identity.CodeInvalidRequest, "agent status needs a non-empty state"))
		return
	}
	var err error
	// The role check and the store write run under the room's lock, like
	// the writes that clear statuses (leave, removal, demotion): a status
	// never outlives the role that allowed it.
	hr.mu.Lock()
	defer hr.mu.Unlock()
	room := hr.room
	m, found := room.Member(who)
	switch {
	case !found || m.Status != adp.MemberActive:
		err = membersOnly(room, hr.id, who, "only active members write an agent status")
	case m.Role == adp.RoleObserver:
		err = identity.NewError(identity.CodePermissionDenied, "observers must not write an agent status")
	}
	now := h.now()
	if err == nil {
		err = h.writable(room.Status(now))
	}
	exp := now.Add(h.statusTTL).UnixMilli()
	if in.ExpiresAt > 0 && in.ExpiresAt < exp {
		exp = in.ExpiresAt
	}
	// An expires_at at or before now clears the status (connector spec
	// §4.3): it is stored already expired, so no read lists it.
	if err == nil {
		err = h.take(r.Context(), rateKey{agent: who, room: hr.id, class: "agent-status"}, h.limits.StatusWrites, now)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	st := adp.AgentStatus{
		RoomID: hr.id, AgentID: who, State: in.State, Summary: in.Summary, SeenSeq: in.SeenSeq, SeenHash: in.SeenHash,
		ClaimID: in.ClaimID, Activity: in.Activity, ExpiresAt: exp, UpdatedAt: now.UnixMilli(), Extra: in.Extra,
	}
	if err := h.store.PutStatus(r.Context(), &st); err != nil {
		writeError(w, err)
		return
	}
	h.publishStatus(hr, &st)
	writeJSON(w, http.StatusOK, h.statusView(st))
}

// writable refuses writes to ended and cancelled rooms (§8): room_ended
// in the seed, room_not_active in the 2026-09-24 draft, which has no
// room_ended (§19).
func (h *Host) writable(s adp.Status) error {
	switch s {
	case adp.StatusEnded:
		if h.laterDraft() {
			return identity.NewError(adp.CodeRoomNotActive, "the room has ended and is read-only")
		}
		return identity.NewError(adp.CodeRoomEnded, "the room has ended and is read-only")
	case adp.StatusCancelled:
		return identity.NewError(adp.CodeRoomNotActive, "the room was cancelled and is read-only")
	}
	return nil
}

var _ = envelope.Hash{}
var _ jsontext.Value
