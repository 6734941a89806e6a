package connector

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/adphosttest"
)

// TestPageSizesMatchSchemas (connector §4.3): every list answers the page size
// its tool schema accepts (default and maximum as the schema states them).
func TestPageSizesMatchSchemas(t *testing.T) {
	for name, p := range map[string]page{
		"agent_protocols_rooms_search": pageRoomsSearch, "agent_protocols_rooms_list": pageRoomsList,
		"agent_protocols_room_members_list": pageMembers, "agent_protocols_room_timeline": pageTimeline,
		"agent_protocols_inbox_next": pageInbox, "agent_protocols_drafts_list": pageDrafts,
		"agent_protocols_join_requests_list": pageJoinRequests,
	} {
		tool, ok := LookupTool(name)
		if !ok {
			t.Fatalf("no tool %s", name)
		}
		var s struct {
			Properties struct {
				Limit struct {
					Maximum     int    `json:"maximum"`
					Description string `json:"description"`
				} `json:"limit"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(tool.InputSchema, &s, json.RejectUnknownMembers(false)); err != nil {
			t.Fatal(err)
		}
		l := s.Properties.Limit
		if l.Maximum != p.max || !strings.Contains(l.Description, fmt.Sprintf("default %d,", p.def)) {
			t.Errorf("%s: schema max %d %q, engine %+v", name, l.Maximum, l.Description, p)
		}
		if p.of(0) != p.def || p.of(p.max) != p.max || p.of(p.max+1) != p.max {
			t.Errorf("%s: of", name)
		}
	}
}

// TestListCursors (connector §4.3 limit/cursor, §4.2 sync on every
// room-scoped result): join_requests_list pages with
// cursor and next_cursor and carries sync; the rooms_list cursor is
// printable and pages on.
func TestListCursors(t *testing.T) {
	_, srv := testHost(t)
	ctx := ctxT(t)
	alice := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL)
	defer alice.Close()
	room := createRoomWith(t, alice, srv.URL, "restricted", "")
	for _, name := range []string{"bob", "carol", "dave"} {
		e := openTest(t, t.TempDir(), testKey(t, name), srv.URL)
		must[*RoomJoinResult](t)(e.Join(ctx, "x", RoomJoinInput{Host: srv.URL, RoomID: room, Role: "speaker"}))
		e.Close()
	}
	seen := map[string]bool{}
	cursor := ""
	for range 3 {
		l := must[*JoinRequestsListResult](t)(alice.JoinRequestsList(ctx, JoinRequestsListInput{RoomID: room, Limit: 1, Cursor: cursor}))
		if len(l.JoinRequests) != 1 || l.Sync == nil {
			t.Fatalf("page: %+v", l)
		}
		seen[string(l.JoinRequests[0])] = true
		cursor = l.NextCursor
	}
	if len(seen) != 3 || cursor != "" {
		t.Fatalf("%d distinct requests over 3 pages, last cursor %q", len(seen), cursor)
	}
	createRoom(t, alice, srv.URL)
	createRoom(t, alice, srv.URL)
	cursor = ""
	var rooms int
	for range 3 {
		l := must[*RoomsResult](t)(alice.RoomsList(ctx, RoomsListInput{Limit: 1, Cursor: cursor}))
		rooms += len(l.Rooms)
		for _, c := range l.NextCursor {
			if c < 0x21 || c > 0x7e {
				t.Fatalf("cursor %q is not printable", l.NextCursor)
			}
		}
		cursor = l.NextCursor
	}
	if rooms != 3 || cursor != "" {
		t.Fatalf("%d rooms, cursor %q", rooms, cursor)
	}
	m := must[*MarkReadResult](t)(alice.MarkRead(ctx, MarkReadInput{RoomID: room, ThroughSeq: 1}))
	if m.Sync == nil {
		t.Fatal("mark_read without sync")
	}
}

// TestRoomFiltersAmbiguous (connector §4.3): inbox_next and drafts_list with a
// room_id known on two hosts refuse to guess; host narrows them.
func TestRoomFiltersAmbiguous(t *testing.T) {
	same := func() string { return "sameroomid0000000000" }
	_, s1 := adphosttest.NewServer(t, &adphost.Options{RateLimits: adphost.Unlimited(), NewRoomID: same})
	_, s2 := adphosttest.NewServer(t, &adphost.Options{RateLimits: adphost.Unlimited(), NewRoomID: same})
	ctx := ctxT(t)
	e := openTest(t, t.TempDir(), testKey(t, "alice"), s1.URL, func(o *Options) { o.Hosts = append(o.Hosts, HostConfig{Host: s2.URL}) })
	defer e.Close()
	r := createRoom(t, e, s1.URL)
	createRoom(t, e, s2.URL)
	for _, h := range []string{s1.URL, s2.URL} {
		st := must[*RoomStateResult](t)(e.RoomState(ctx, "a", RoomStateInput{Host: h, RoomID: r}))
		must[*WriteResult](t)(e.SendMessage(ctx, "a", SendMessageInput{Host: h, RoomID: r, Content: "moved", OnHeadMismatch: OnMismatchSendAnyway}))
		w := must[*WriteResult](t)(e.SendMessage(ctx, "a", SendMessageInput{Host: h, RoomID: r, Content: "held", BaseSeq: &st.Sync.HeadSeq, BaseHash: st.Sync.HeadHash}))
		if w.Status != StatusHeld {
			t.Fatalf("hold on %s: %s", h, w.Status)
		}
	}
	if _, err := e.InboxNext(ctx, "a", InboxNextInput{RoomID: r}); !errors.Is(err, ErrAmbiguousRoom) {
		t.Fatalf("inbox_next: %v", err)
	}
	if _, err := e.DraftsList(ctx, DraftsListInput{RoomID: r}); !errors.Is(err, ErrAmbiguousRoom) {
		t.Fatalf("drafts_list: %v", err)
	}
	d := must[*DraftsListResult](t)(e.DraftsList(ctx, DraftsListInput{Host: s1.URL}))
	if len(d.Drafts) != 1 || d.Drafts[0].Host != s1.URL {
		t.Fatalf("drafts_list host: %+v", d.Drafts)
	}
	d = must[*DraftsListResult](t)(e.DraftsList(ctx, DraftsListInput{Host: s2.URL, RoomID: r}))
	if len(d.Drafts) != 1 || d.Drafts[0].Host != s2.URL || d.Sync == nil || d.Sync.Host != s2.URL {
		t.Fatalf("drafts_list host+room: %+v", d)
	}
	in := must[*InboxNextResult](t)(e.InboxNext(ctx, "a", InboxNextInput{Host: s2.URL, RoomID: r}))
	if in.Sync == nil || in.Sync.Host != s2.URL {
		t.Fatalf("inbox_next host+room: %+v", in)
	}
}
