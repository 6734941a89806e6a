package adphost

import (
	"cmp"
	"net/http"
	"slices"
	"strings"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/identity"
)

// Paging of the room lists.
const (
	DefaultRoomsLimit = 20
	MaxRoomsLimit     = 100
)

// summary builds a room summary.
func (h *Host) summary(room *adp.Room) adp.RoomSummary {
	creator, _ := room.Creator()
	c := room.Contract()
	latest := room.Latest()
	n := 0
	for _, m := range room.Members() {
		if m.Status == adp.MemberActive {
			n++
		}
	}
	return adp.RoomSummary{
		ID: room.ID(), Status: room.Status(h.now()), URL: h.RoomURL(room.ID()), Creator: creator, Topic: c.Topic,
		Visibility: c.Visibility, StartTime: c.StartTime, EndTime: c.EndTime, Tags: c.Tags, Language: c.Language,
		Seq: latest.Seq, LastActivity: latest.ReceivedAt, Members: n,
	}
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
func page(r *http.Request, list []adp.RoomSummary) (identity.List[adp.RoomSummary], error) {
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
	if part, next := cut(list, off, limit); part != nil {
		out.Result, out.NextCursor = part, next
	}
	return out, nil
}

// cut returns the items of list from offset off, at most limit of them,
// and the cursor of the page after them ("" when none follows); nil when
// off is past the end.
func cut[T any](list []T, off int64, limit int) ([]T, string) {
	if off >= int64(len(list)) {
		return nil, ""
	}
	end := min(int64(len(list)), off+int64(limit))
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
	q := r.URL.Query()
	startsAfter, err := intParam(q.Get("starts_after"), -1) // -1: no filter
	endsBefore, err2 := intParam(q.Get("ends_before"), 0)   // 0: no filter
	if err == nil {
		err = err2
	}
	if err != nil {
		writeError(w, err)
		return
	}
	status, tag, lang := adp.Status(q.Get("status")), q.Get("tag"), q.Get("language")
	keyword := strings.ToLower(q.Get("keyword"))
	var creator identity.AgentID
	if s := q.Get("creator"); s != "" {
		if creator, err = identity.ParseAgentID(s); err != nil {
			writeError(w, identity.Wrap(identity.CodeInvalidRequest, "creator", err))
			return
		}
	}
	var list []adp.RoomSummary
	for _, hr := range h.allRooms() {
		room := hr.current()
		c := room.Contract()
		if !room.Created() || c.Visibility == adp.VisibilityPrivate {
			continue
		}
		s := h.summary(room)
		switch {
		case status != "" && s.Status != status,
			tag != "" && !slices.Contains(c.Tags, tag),
			lang != "" && c.Language != lang,
			!creator.IsZero() && s.Creator != creator,
			startsAfter >= 0 && c.StartTime <= startsAfter,
			endsBefore > 0 && c.EndTime >= endsBefore,
			keyword != "" && !matches(keyword, c):
			continue
		}
		list = append(list, s)
	}
	writeSummaries(w, r, list)
}

// writeSummaries writes the page of list, sorted, that r asks for.
func writeSummaries(w http.ResponseWriter, r *http.Request, list []adp.RoomSummary) {
	sortSummaries(list)
	out, err := page(r, list)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func matches(keyword string, c adp.Contract) bool {
	if strings.Contains(strings.ToLower(c.Topic), keyword) || strings.Contains(strings.ToLower(c.Agenda), keyword) {
		return true
	}
	for _, t := range c.Tags {
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
// was a member of, or has a pending join request for, with its role and
// member status ("pending" for a pending request). Filters: status and
// membership (a member status, "pending" or "creator").
func (h *Host) myRooms(w http.ResponseWriter, r *http.Request) {
	who, err := h.requireCaller(r)
	if err != nil {
		writeError(w, err)
		return
	}
	q := r.URL.Query()
	status, membership := adp.Status(q.Get("status")), q.Get("membership")
	var list []adp.RoomSummary
	for _, hr := range h.allRooms() {
		room := hr.current()
		if !room.Created() {
			continue
		}
		s := h.summary(room)
		creator, _ := room.Creator()
		if m, ok := room.Member(who); ok {
			s.Role, s.MemberStatus = m.Role, string(m.Status)
		} else if creator != who {
			reqs, err := h.store.JoinRequests(r.Context(), hr.id)
			if err != nil {
				writeError(w, err)
				return
			}
			for _, jr := range reqs {
				if jr.Request.Applicant == who && h.effective(jr).Status == adp.JoinPending {
					s.Role, s.MemberStatus, s.RequestID = jr.Request.Role, "pending", jr.Request.ID
				}
			}
			if s.MemberStatus == "" {
				continue
			}
		}
		if room.Contract().Visibility == adp.VisibilityPrivate && !isMember(room, who, true) {
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
	writeSummaries(w, r, list)
}
