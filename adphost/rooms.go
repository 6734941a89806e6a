package adphost

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/identity"
)

// Paging of the room lists.
const (
	DefaultRoomsLimit = 20
	MaxRoomsLimit     = 100
)

// index builds a room's index entry from its replica, with its members
// and invitations (policy.invites, 2026-09-24 draft) when members is
// true. Summary.Status is the stored status, before the clock applies
// (see listed).
func (h *Host) index(room *adp.Room, members bool) RoomIndex {
	creator, _ := room.Creator()
	c := room.Contract()
	latest := room.Latest()
	ix := RoomIndex{Agenda: c.Agenda}
	n := 0
	for _, m := range room.Members() {
		if m.Status == adp.MemberActive {
			n++
		}
		if members {
			ix.Members = append(ix.Members, MemberIndex{Agent: m.ID, Role: m.Role, Status: m.Status})
		}
	}
	if members && ix.Members == nil {
		ix.Members = []MemberIndex{}
	}
	if members {
		for id, role := range c.Policy.Invites {
			ix.Invites = append(ix.Invites, InviteIndex{Agent: id, Role: role})
		}
		slices.SortFunc(ix.Invites, func(a, b InviteIndex) int { return cmp.Compare(a.Agent.String(), b.Agent.String()) })
	}
	ix.Summary = adp.RoomSummary{
		ID: room.ID(), Status: room.Status(time.UnixMilli(0)), URL: h.RoomURL(room.ID()), Creator: creator, Topic: c.Topic,
		Visibility: c.Visibility, StartTime: c.StartTime, EndTime: c.EndTime, Tags: c.Tags, Language: c.Language,
		Seq: latest.Seq, LastActivity: latest.ReceivedAt, Members: n,
	}
	return ix
}

// listed is an index entry's summary as the lists show it now: the clock
// moves a scheduled room to active at start_time and an active one to
// ended at end_time (the rule of adp.Room.Status).
func (h *Host) listed(ix RoomIndex) adp.RoomSummary {
	s := ix.Summary
	s.URL = h.RoomURL(s.ID)
	at := h.now().UnixMilli()
	if s.Status == adp.StatusScheduled && at >= s.StartTime {
		s.Status = adp.StatusActive
	}
	if s.Status == adp.StatusActive && at >= s.EndTime {
		s.Status = adp.StatusEnded
	}
	return s
}

// statusRank orders active rooms before scheduled ones (§18), then ended
// and cancelled ones.
func statusRank(s adp.Status) int {
	switch s {
	case adp.StatusActive:
		return 0
	case adp.StatusScheduled:
		return 1
	case adp.StatusEnded:
		return 2
	}
	return 3
}

// sortSummaries applies the §18 order: status rank, then the latest
// activity (most recent first), then start time, then ID for a total
// order that makes offset cursors stable while nothing changes.
func sortSummaries(list []adp.RoomSummary) {
	slices.SortFunc(list, func(a, b adp.RoomSummary) int {
		return cmp.Or(
			cmp.Compare(statusRank(a.Status), statusRank(b.Status)),
			cmp.Compare(b.LastActivity, a.LastActivity),
			cmp.Compare(a.StartTime, b.StartTime),
			cmp.Compare(a.ID, b.ID),
		)
	})
}

// page cuts one page out of a sorted list at an opaque offset cursor.
func (h *Host) page(r *http.Request, list []adp.RoomSummary) (identity.List[adp.RoomSummary], error) {
	q := r.URL.Query()
	limit, err := limitParam(q.Get("limit"), DefaultRoomsLimit, MaxRoomsLimit)
	if err != nil {
		return identity.List[adp.RoomSummary]{}, err
	}
	var off int64
	if q.Has("cursor") {
		if off, err = parseCursor(q.Get("cursor")); err != nil {
			return identity.List[adp.RoomSummary]{}, err
		}
	}
	out := identity.List[adp.RoomSummary]{Result: []adp.RoomSummary{}}
	if part, next := cut(list, off, limit, h.pageBytes); part != nil {
		out.Result, out.NextCursor = part, next
	}
	return out, nil
}

// cut returns the items of list from offset off, at most limit of them
// and at most budget bytes of their JSON (but at least one), and the
// cursor of the page after them ("" when none follows); nil when off is
// past the end.
func cut[T any](list []T, off int64, limit, budget int) ([]T, string) {
	if off >= int64(len(list)) {
		return nil, ""
	}
	end := min(int64(len(list)), off+int64(limit))
	size := 0
	for i := off; i < end; i++ {
		b, err := json.Marshal(list[i], json.Deterministic(true))
		if size += len(b) + 1; err == nil && i > off && size > budget {
			end = i
			break
		}
	}
	next := ""
	if end < int64(len(list)) {
		next = makeCursor(end)
	}
	return list[off:end], next
}

// publicRooms is GET /v1/rooms/public (§18) with the filters status, tag,
// keyword (case-insensitive, in topic, agenda and tags), creator,
// starts_after (start_time > value), ends_before (end_time < value) and
// language. Public and restricted rooms are listed (restricted metadata
// may be public "to support discovery", §16); private rooms never are.
func (h *Host) publicRooms(w http.ResponseWriter, r *http.Request) {
	list, err := h.discoverable(r)
	if err != nil {
		writeError(w, err)
		return
	}
	h.writeSummaries(w, r, list)
}

// discoverable returns the summaries of the public and restricted rooms
// that pass r's filters, unsorted: the rooms public discovery lists.
func (h *Host) discoverable(r *http.Request) ([]adp.RoomSummary, error) {
	q := r.URL.Query()
	startsAfter, err := intParam(q.Get("starts_after"), -1) // -1: no filter
	endsBefore, err2 := intParam(q.Get("ends_before"), 0)   // 0: no filter
	if err == nil {
		err = err2
	}
	if err != nil {
		return nil, err
	}
	status, tag, lang := adp.Status(q.Get("status")), q.Get("tag"), q.Get("language")
	keyword := strings.ToLower(q.Get("keyword"))
	var creator identity.AgentID
	if s := q.Get("creator"); s != "" {
		if creator, err = identity.ParseAgentID(s); err != nil {
			return nil, identity.Wrap(identity.CodeInvalidRequest, "creator", err)
		}
	}
	// The Store's index, not the rooms: listing loads none of them.
	all, err := h.store.PublicRooms(r.Context())
	if err != nil {
		return nil, err
	}
	var list []adp.RoomSummary
	for _, ix := range all {
		s := h.listed(ix)
		if s.Visibility == adp.VisibilityPrivate {
			continue
		}
		switch {
		case status != "" && s.Status != status,
			tag != "" && !slices.Contains(s.Tags, tag),
			lang != "" && s.Language != lang,
			!creator.IsZero() && s.Creator != creator,
			startsAfter >= 0 && s.StartTime <= startsAfter,
			endsBefore > 0 && s.EndTime >= endsBefore,
			keyword != "" && !matches(keyword, s, ix.Agenda):
			continue
		}
		list = append(list, s)
	}
	return list, nil
}

// writeSummaries writes the page of list, sorted, that r asks for.
func (h *Host) writeSummaries(w http.ResponseWriter, r *http.Request, list []adp.RoomSummary) {
	sortSummaries(list)
	out, err := h.page(r, list)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func matches(keyword string, s adp.RoomSummary, agenda string) bool {
	if strings.Contains(strings.ToLower(s.Topic), keyword) || strings.Contains(strings.ToLower(agenda), keyword) {
		return true
	}
	for _, t := range s.Tags {
		if strings.Contains(strings.ToLower(t), keyword) {
			return true
		}
	}
	return false
}

// withheld is the summary of a private room for a caller who may not
// read it (a pending applicant, a member who left or was removed): the
// room's ID, URL, visibility, creator and status, which the summary shape
// requires, and the caller's own role, member status and request, but
// none of the room's state (§16: seq, activity, member count, topic,
// schedule and tags are for the creator and members).
func withheld(s adp.RoomSummary) adp.RoomSummary {
	return adp.RoomSummary{
		ID: s.ID, Status: s.Status, URL: s.URL, Creator: s.Creator, Visibility: s.Visibility,
		Role: s.Role, MemberStatus: s.MemberStatus, RequestID: s.RequestID,
	}
}

// myRooms is GET /v1/me/rooms (§16): rooms the JWT subject created, is or
// was a member of, has a pending join request for, or (2026-09-24 §15)
// is invited to by policy.invites, with its role and member status
// ("pending" for a pending request, "invited" with the invited role for
// an invitation). Filters: status and membership (a member status,
// "pending", "invited" or "creator").
func (h *Host) myRooms(w http.ResponseWriter, r *http.Request) {
	who, err := h.requireCaller(r)
	if err != nil {
		writeError(w, err)
		return
	}
	q := r.URL.Query()
	status, membership := adp.Status(q.Get("status")), q.Get("membership")
	all, err := h.store.AgentRooms(r.Context(), who)
	if err != nil {
		writeError(w, err)
		return
	}
	var list []adp.RoomSummary
	for _, ix := range all {
		s := h.listed(ix)
		creator := s.Creator
		if len(ix.Members) > 0 {
			s.Role, s.MemberStatus = ix.Members[0].Role, string(ix.Members[0].Status)
		} else if creator != who {
			reqs, err := h.applicantRequests(r.Context(), s.ID, who)
			if err != nil {
				writeError(w, err)
				return
			}
			for _, jr := range reqs {
				if jr.Request.Applicant == who && h.effective(jr).Status == adp.JoinPending {
					s.Role, s.MemberStatus, s.RequestID = jr.Request.Role, "pending", jr.Request.ID
				}
			}
			if s.MemberStatus == "" && len(ix.Invites) > 0 {
				s.Role, s.MemberStatus = ix.Invites[0].Role, memberInvited
			}
			if s.MemberStatus == "" {
				continue
			}
		}
		// An invited agent reads a private room's resource (2026-09-24
		// §8.2, §9.2), and so its summary.
		readable := creator == who || len(ix.Members) > 0 && ix.Members[0].Status == adp.MemberActive || len(ix.Invites) > 0
		if s.Visibility == adp.VisibilityPrivate && !readable {
			s = withheld(s)
		}
		switch {
		case status != "" && s.Status != status,
			membership == "creator" && creator != who,
			membership != "" && membership != "creator" && s.MemberStatus != membership:
			continue
		}
		list = append(list, s)
	}
	h.writeSummaries(w, r, list)
}

// memberInvited is the member_status of /v1/me/rooms for a room whose
// policy.invites names the agent, which is not (and was not) a member and
// has no pending request there.
const memberInvited = "invited"
