package connector

import (
	"context"
	stdjson "encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
)

// keys returns the member names of v's JSON object, as encoding/json (the
// MCP SDK's encoder) and json v2 both produce it; they must agree.
func keys(t testing.TB, v any) []string {
	t.Helper()
	b1, err := stdjson.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	b2, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m1, m2 map[string]stdjson.RawMessage
	if err := stdjson.Unmarshal(b1, &m1); err != nil {
		t.Fatal(err)
	}
	if err := stdjson.Unmarshal(b2, &m2); err != nil {
		t.Fatal(err)
	}
	k1, k2 := slices.Sorted(maps.Keys(m1)), slices.Sorted(maps.Keys(m2))
	if !slices.Equal(k1, k2) {
		t.Fatalf("encoders disagree: %v vs %v", k1, k2)
	}
	return k1
}

func wantKeys(t testing.TB, what string, v any, want string) {
	t.Helper()
	w := strings.Fields(want)
	slices.Sort(w)
	if got := keys(t, v); !slices.Equal(got, w) {
		t.Errorf("%s members:\n got %v\nwant %v", what, got, w)
	}
}

// TestViewShapes: the §4.2 views carry exactly the members the spec's
// examples name (InboxItem and HeldDraft add host, since rooms are keyed
// by (host, room_id)).
func TestViewShapes(t *testing.T) {
	_, srv := testHost(t)
	ctx := ctxT(t)
	alice, bob, room := speakerPair(t, srv.URL)
	must[*RoomStateResult](t)(bob.RoomState(ctx, "b", RoomStateInput{RoomID: room}))
	m := must[*WriteResult](t)(alice.SendMessage(ctx, "a", SendMessageInput{RoomID: room, Content: "hi bob", Mentions: []string{bob.AgentID().String()}, OnHeadMismatch: OnMismatchSendAnyway}))
	wantKeys(t, "SyncState", m.Sync, "host room_id head_seq head_hash synced_seq remote_seq subscribed unread_count pending_inbox_count")
	wantKeys(t, "TimelineItem", m.Item, "room_id seq event_id type kind actor created_at received_at summary content_type content mentions references payload")
	in := waitInbox(t, bob, "b", KindMention)
	wantKeys(t, "InboxItem", in, "id kind priority host room_id seq event_id actor created_at requires_response deadline reason suggested_tools message")
	if in.CreatedAt != m.Item.ReceivedAt {
		t.Errorf("inbox created_at %d, want the record's received_at %d", in.CreatedAt, m.Item.ReceivedAt)
	}
	h := must[*WriteResult](t)(bob.SendMessage(ctx, "b", SendMessageInput{RoomID: room, Content: "late"}))
	if h.Status != StatusHeld {
		t.Fatalf("not held: %+v", h)
	}
	wantKeys(t, "HeldDraft", h.Draft, "id host room_id kind created_at base_seq base_hash current_sync draft reason options")
	var draft map[string]any
	if err := json.Unmarshal(h.Draft.Draft, &draft); err != nil {
		t.Fatal(err)
	}
	wantKeys(t, "HeldDraft.draft", draft, "room_id content content_type mentions references extra")
	wantKeys(t, "held result", h, "status draft changes sync")
	ml := must[*MembersListResult](t)(bob.MembersList(ctx, "b", MembersListInput{RoomID: room}))
	if len(ml.Members) != 2 {
		t.Fatalf("members: %+v", ml.Members)
	}
	wantKeys(t, "RoomMemberView", ml.Members[0], "agent_id role status is_creator perspective joined_seq left_seq last_event_seq profile extra")
	if !ml.Members[0].IsCreator || ml.Members[0].LeftSeq != nil {
		t.Errorf("creator view: %+v", ml.Members[0])
	}
	rs := must[*RoomStateResult](t)(bob.RoomState(ctx, "b", RoomStateInput{RoomID: room, IncludeTypes: true}))
	wantKeys(t, "RoomStateView", rs.Room, "host room_id status visibility topic agenda guidance creator created_at start_time end_time tags language policy types self_member members_count active_turn unread_count pending_inbox_count seq hash head url extra pre_hash received_at")
	rl := must[*RoomsResult](t)(bob.RoomsList(ctx, RoomsListInput{Membership: "member"}))
	if len(rl.Rooms) != 1 {
		t.Fatalf("rooms list: %+v", rl)
	}
	wantKeys(t, "RoomSummary", rl.Rooms[0], "room_id host topic status visibility start_time end_time tags language role unread_count pending_inbox_count")
	rsr := must[*RoomsResult](t)(bob.RoomsSearch(ctx, RoomsSearchInput{Host: srv.URL}))
	if len(rsr.Rooms) != 1 || rsr.Rooms[0].RoomID != room {
		t.Fatalf("rooms search: %+v", rsr)
	}
	st := must[*AgentStatusResult](t)(bob.AgentStatusSet(ctx, "b", AgentStatusSetInput{RoomID: room, State: "drafting", Summary: "reply"}))
	wantKeys(t, "AgentStatus", st.Status, "room_id agent_id state summary seen_seq seen_hash claim_id activity expires_at updated_at extra")
	if st.Status.SeenSeq != rs.Sync.HeadSeq {
		t.Errorf("seen_seq %d, want the presented head %d", st.Status.SeenSeq, rs.Sync.HeadSeq)
	}
	sl := must[*AgentStatusListResult](t)(alice.AgentStatusList(ctx, "a", AgentStatusListInput{RoomID: room}))
	if len(sl.Statuses) != 1 || sl.Statuses[0].State != "drafting" {
		t.Fatalf("status list: %+v", sl)
	}
	if err := bob.CheckHosts(ctx); err != nil {
		t.Fatal(err)
	}
	id := must[*IdentityResult](t)(bob.IdentityCurrent(ctx))
	if id.Hosts[0].LastCheckedAt == 0 || len(id.Hosts[0].Features) == 0 || !id.Hosts[0].Allowed {
		t.Errorf("host after discovery: %+v", id.Hosts[0])
	}
	wantKeys(t, "identity", id, "agent_id public_key profiles hosts")
	// No profile service is configured for the host: the member is
	// omitted, not "".
	wantKeys(t, "AgentProtocolsHost", id.Hosts[0], "host label allowed features last_checked_at")
}

// TestHostProfileService: a host entry names its profile service when one
// is configured and omits the member otherwise.
func TestHostProfileService(t *testing.T) {
	_, srv := testHost(t)
	e := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL, func(o *Options) {
		o.Hosts = append(o.Hosts, HostConfig{Host: "https://profiles-host.example", ProfileService: "https://profiles.example"})
	})
	defer e.Close()
	hl := must[*HostsResult](t)(e.HostsList(ctxT(t)))
	if len(hl.Hosts) != 2 {
		t.Fatalf("hosts %+v", hl.Hosts)
	}
	wantKeys(t, "host without a profile service", hl.Hosts[0], "host label allowed features last_checked_at")
	wantKeys(t, "host with a profile service", hl.Hosts[1], "host label allowed features profile_service last_checked_at")
}

// TestSummaryBound: a summary of hostile room content is bounded and
// stays valid UTF-8 wherever the cut falls.
func TestSummaryBound(t *testing.T) {
	for _, s := range []string{strings.Repeat("é", 40000), strings.Repeat("a", 279) + "€€€", strings.Repeat("𝄞", 1000)} {
		got := summarize(s)
		if len(got) > 280+len("…") || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
			t.Fatalf("summary of %d bytes: %d bytes, valid %v", len(s), len(got), utf8.ValidString(got))
		}
	}
	if summarize("short") != "short" {
		t.Fatal("short text changed")
	}
}

// TestNotify: resource-updated URIs arrive for the inbox, the timeline and
// held drafts, and Notify may call back into the engine.
func TestNotify(t *testing.T) {
	_, srv := testHost(t)
	ctx := ctxT(t)
	alice := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL)
	defer alice.Close()
	room := createRoom(t, alice, srv.URL)
	got := make(chan string, 100)
	var bob *Engine
	bob = openTest(t, t.TempDir(), testKey(t, "bob"), srv.URL, func(o *Options) {
		o.Notify = func(uri string) {
			if uri == URIInboxPending {
				if _, err := bob.InboxPending(context.Background()); err != nil { // calling back in is fine
					t.Error(err)
				}
			}
			select {
			case got <- uri:
			default:
			}
		}
	})
	defer bob.Close()
	must[*RoomJoinResult](t)(bob.Join(ctx, "b", RoomJoinInput{Host: srv.URL, RoomID: room, Role: "speaker"}))
	must[*RoomStateResult](t)(bob.RoomState(ctx, "b", RoomStateInput{RoomID: room}))
	say(t, alice, room, "hello")
	waitSynced(t, bob, room, 3)
	if r := must[*WriteResult](t)(bob.SendMessage(ctx, "b", SendMessageInput{RoomID: room, Content: "held"})); r.Status != StatusHeld {
		t.Fatalf("not held: %+v", r)
	}
	want := map[string]bool{URIInboxPending: true, RoomURI(room, "timeline"): true, RoomURI(room): true, URIDraftsHeld: true}
	timeout := time.After(10 * time.Second)
	for len(want) > 0 {
		select {
		case u := <-got:
			delete(want, u)
		case <-timeout:
			t.Fatalf("never notified: %v", want)
		}
	}
}
