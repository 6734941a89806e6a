package connector

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/adphosttest"
	"github.com/agentprotocols/go-sdk/identity"
)

// TestPresentedHeadFollowsHeld (MUST D2): a held result presents its sync,
// so the agent's next send without a base — after reading the changes it
// was shown — goes out, and is held again only when the room moved since.
// Signal writes, status results and stay_silent present their sync too.
func TestPresentedHeadFollowsHeld(t *testing.T) {
	_, srv := testHost(t)
	ctx := ctxT(t)
	alice, bob, room := speakerPair(t, srv.URL, func(o *Options) { o.NoSubscribe = true })
	must[*RoomStateResult](t)(bob.RoomState(ctx, "b", RoomStateInput{RoomID: room, Refresh: true}))
	say(t, alice, room, "moved")
	r1 := must[*WriteResult](t)(bob.SendMessage(ctx, "b", SendMessageInput{RoomID: room, Content: "first try"}))
	if r1.Status != StatusHeld {
		t.Fatalf("first: %+v", r1)
	}
	r2 := must[*WriteResult](t)(bob.SendMessage(ctx, "b", SendMessageInput{RoomID: room, Content: "after seeing the changes"}))
	if r2.Status != StatusSent {
		t.Fatalf("second send after a held result: %s (held again against the old head)", r2.Status)
	}
	// Held again only when the room moved since the held result.
	say(t, alice, room, "moved again")
	r3 := must[*WriteResult](t)(bob.SendMessage(ctx, "b", SendMessageInput{RoomID: room, Content: "third"}))
	if r3.Status != StatusHeld {
		t.Fatalf("third (room moved): %+v", r3.Status)
	}
	// send_as_is of the held draft after the held result: sent.
	r4 := must[*WriteResult](t)(bob.DraftCommit(ctx, "b", DraftCommitInput{DraftID: r3.Draft.ID, Action: ActionSendAsIs}))
	if r4.Status != StatusSent {
		t.Fatalf("send_as_is after the held result: %+v", r4.Status)
	}
	// A status result presents its sync.
	say(t, alice, room, "moved once more")
	must[*RoomStateResult](t)(bob.RoomState(ctx, "other", RoomStateInput{RoomID: room, Refresh: true}))
	st := must[*AgentStatusListResult](t)(bob.AgentStatusList(ctx, "b", AgentStatusListInput{RoomID: room}))
	if st.Sync == nil {
		t.Fatal("status list without sync")
	}
	if r := must[*WriteResult](t)(bob.SendMessage(ctx, "b", SendMessageInput{RoomID: room, Content: "after status"})); r.Status != StatusSent {
		t.Fatalf("send after a status result: %s", r.Status)
	}
	// stay_silent presents its sync.
	say(t, alice, room, "and again")
	r5 := must[*WriteResult](t)(bob.SendMessage(ctx, "b", SendMessageInput{RoomID: room, Content: "held", BaseSeq: &r4.Sync.HeadSeq, BaseHash: r4.Sync.HeadHash}))
	if r5.Status != StatusHeld {
		t.Fatalf("explicit stale base: %s", r5.Status)
	}
	say(t, alice, room, "moved after the hold")
	must[*RoomStateResult](t)(bob.RoomState(ctx, "other", RoomStateInput{RoomID: room, Refresh: true}))
	must[*WriteResult](t)(bob.DraftCommit(ctx, "b", DraftCommitInput{DraftID: r5.Draft.ID, Action: ActionStaySilent}))
	if r := must[*WriteResult](t)(bob.SendMessage(ctx, "b", SendMessageInput{RoomID: room, Content: "after stay_silent"})); r.Status != StatusSent {
		t.Fatalf("send after stay_silent: %s", r.Status)
	}
}

// TestHostRateLimitIsFinal (R2, F9): the host's rate_limited answer comes
// back at once as a *HostError with the host's code and Retry-After;
// nothing stays in the outbox and nothing is replayed later.
func TestHostRateLimitIsFinal(t *testing.T) {
	_, srv := adphosttest.NewServer(t, &adphost.Options{})
	ctx := ctxT(t)
	alice := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL)
	defer alice.Close()
	room := createRoom(t, alice, srv.URL)
	for i := range 5 {
		if r := say(t, alice, room, "message"); r.Status != StatusSent {
			t.Fatalf("message %d: %s", i+1, r.Status)
		}
	}
	start := time.Now()
	_, err := alice.SendMessage(ctx, "a", SendMessageInput{RoomID: room, Content: "sixth"})
	var he *HostError
	if !errors.As(err, &he) || he.Code != identity.CodeRateLimited || !errors.Is(err, identity.ErrRateLimited) {
		t.Fatalf("sixth: %v", err)
	}
	if errors.Is(err, ErrPendingOutbox) || time.Since(start) > 5*time.Second {
		t.Fatalf("sixth was queued or waited: %v after %v", err, time.Since(start))
	}
	if he.Host != srv.URL || he.Status != 429 || he.RetryAfter != time.Minute {
		t.Fatalf("host error: %+v", he)
	}
	n := 0
	_ = alice.store.View(func(tx stateTx) error {
		return tx.Scan(bOutbox, "", func(string, []byte) error { n++; return nil })
	})
	if n != 0 {
		t.Fatalf("%d outbox entries after a host refusal", n)
	}
	if err := alice.ReplayOutbox(ctx); err != nil {
		t.Fatal(err)
	}
	tl := must[*TimelineResult](t)(alice.Timeline(ctx, "a", TimelineInput{RoomID: room, Refresh: true, Types: []string{adp.TypeMessageCreate}}))
	d := must[*DraftsListResult](t)(alice.DraftsList(ctx, DraftsListInput{}))
	if len(tl.Items) != 5 || len(d.Drafts) != 0 {
		t.Fatalf("after replay: %d messages, %d drafts", len(tl.Items), len(d.Drafts))
	}
	// A local refusal is never a HostError.
	if _, err := alice.SendMessage(ctx, "a", SendMessageInput{Host: "https://elsewhere.example", RoomID: room, Content: "x"}); errors.As(err, &he) {
		t.Fatalf("local refusal labelled as the host's: %v", err)
	}
}

// TestReplayRefusedSignalDropped (MUST D10): a signal write (room.leave)
// recorded before a crash and refused on replay is dropped, never held;
// every write request carries its draft.
func TestReplayRefusedSignalDropped(t *testing.T) {
	_, srv := testHost(t)
	ctx := ctxT(t)
	alice := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL)
	defer alice.Close()
	room := createRoom(t, alice, srv.URL)
	dir := t.TempDir()
	bob := openTest(t, dir, testKey(t, "bob"), srv.URL)
	must[*RoomJoinResult](t)(bob.Join(ctx, "b", RoomJoinInput{Host: srv.URL, RoomID: room, Role: "speaker"}))
	k, h, err := bob.resolve("", room)
	if err != nil {
		t.Fatal(err)
	}
	req, err := eventReq(k, adp.TypeRoomLeave, []byte(`{"reason":"bye"}`), nil, nil)
	if err != nil || len(req.Draft) == 0 {
		t.Fatalf("leave request without a draft: %v", err)
	}
	rm := h.client.Verified(room)
	b, _ := rm.BaseFor(adp.TypeRoomLeave)
	env, err := bob.sign(ctx, req, b, rm)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bob.recordOutbox(env, &outboxEntry{Host: k.host, RoomID: room, Envelope: env.AppendJSON(nil), Req: req}); err != nil {
		t.Fatal(err)
	}
	bob.Close()
	must[*WriteResult](t)(alice.SubmitEvent(ctx, "a", SubmitEventInput{RoomID: room, Type: adp.TypeMemberRemove,
		Payload: []byte(`{"member":"` + testKey(t, "bob").AgentID().String() + `"}`), OnHeadMismatch: OnMismatchSendAnyway}))
	bob = openTest(t, dir, testKey(t, "bob"), srv.URL)
	defer bob.Close()
	d := must[*DraftsListResult](t)(bob.DraftsList(ctx, DraftsListInput{}))
	if len(d.Drafts) != 0 {
		t.Fatalf("a refused signal write was held: %+v", d.Drafts)
	}
	var left int
	bob.store.View(func(tx stateTx) error { return tx.Scan(bOutbox, "", func(string, []byte) error { left++; return nil }) })
	if left != 0 {
		t.Fatalf("outbox holds %d entries", left)
	}
}

// createRoomWith has e create an active room of the given visibility and
// policy (JSON, may be empty).
func createRoomWith(t testing.TB, e *Engine, host, vis, policy string) string {
	t.Helper()
	now := time.Now().UnixMilli()
	in := RoomCreateInput{Host: host, Topic: "review", Visibility: vis, StartTime: now - 1000, EndTime: now + 3600_000}
	if policy != "" {
		in.Policy = []byte(policy)
	}
	res, err := e.CreateRoom(ctxT(t), "s", in)
	if err != nil {
		t.Fatal(err)
	}
	return res.Room.RoomID
}

func joinRequestID(t testing.TB, r *RoomJoinResult) string {
	t.Helper()
	var jr adp.JoinRequestResource
	if err := json.Unmarshal(r.JoinRequest, &jr, json.RejectUnknownMembers(false)); err != nil {
		t.Fatalf("join_request: %v (%s)", err, r.JoinRequest)
	}
	return jr.Request.ID
}

// TestJoinPaths (MUST D1): room_join files a join request for a private
// room (whose resource a non-member cannot read) and answers
// approval_required with the request; the approval completes the join
// with request_id. A moderator listed in policy.moderator_agent_ids joins
// a public room directly, and a restricted one through an approved
// request; an unlisted moderator of a public room goes through a request.
func TestJoinPaths(t *testing.T) {
	_, srv := testHost(t)
	ctx := ctxT(t)
	alice := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL)
	defer alice.Close()
	bob := openTest(t, t.TempDir(), testKey(t, "bob"), srv.URL)
	defer bob.Close()
	bobID := testKey(t, "bob").AgentID().String()

	// Private: a request, then the approval completes the join.
	priv := createRoomWith(t, alice, srv.URL, "private", "")
	r := must[*RoomJoinResult](t)(bob.Join(ctx, "b", RoomJoinInput{Host: srv.URL, RoomID: priv, Role: "speaker", Reason: "invited"}))
	if r.Status != "approval_required" {
		t.Fatalf("private join: %+v", r)
	}
	id := joinRequestID(t, r)
	l := must[*JoinRequestsListResult](t)(alice.JoinRequestsList(ctx, JoinRequestsListInput{RoomID: priv}))
	if len(l.JoinRequests) != 1 {
		t.Fatalf("alice sees %d join requests", len(l.JoinRequests))
	}
	// Asking again before the review files no second request.
	if r := must[*RoomJoinResult](t)(bob.Join(ctx, "b", RoomJoinInput{Host: srv.URL, RoomID: priv, Role: "speaker"})); r.Status != "approval_required" || joinRequestID(t, r) != id {
		t.Fatalf("second ask: %+v", r)
	}
	must[*RecordResult](t)(alice.Review(ctx, "a", JoinReviewInput{RoomID: priv, RequestID: id, Decision: "approve", Role: "speaker"}))
	r = must[*RoomJoinResult](t)(bob.Join(ctx, "b", RoomJoinInput{Host: srv.URL, RoomID: priv, Role: "speaker", RequestID: id}))
	if r.Status != "joined" || r.Member == nil || r.Member.Role != "speaker" {
		t.Fatalf("completion: %+v", r)
	}
	var join adp.Join
	rec := must[*adp.Record](t)(adp.ParseRecord(r.Record))
	if err := json.Unmarshal(rec.Envelope.Event().Payload, &join, json.RejectUnknownMembers(false)); err != nil || join.RequestID != id {
		t.Fatalf("room.join without request_id: %s", rec.Envelope.Event().Payload)
	}

	// Public, listed moderator: a direct join as moderator.
	pub := createRoomWith(t, alice, srv.URL, "public", `{"moderator_agent_ids":["`+bobID+`"]}`)
	r = must[*RoomJoinResult](t)(bob.Join(ctx, "b", RoomJoinInput{Host: srv.URL, RoomID: pub, Role: "moderator"}))
	if r.Status != "joined" || r.Member.Role != "moderator" {
		t.Fatalf("listed moderator, public: %+v", r)
	}
	// Public, unlisted moderator: a request awaiting review.
	carol := openTest(t, t.TempDir(), testKey(t, "carol"), srv.URL)
	defer carol.Close()
	if r := must[*RoomJoinResult](t)(carol.Join(ctx, "c", RoomJoinInput{Host: srv.URL, RoomID: pub, Role: "moderator"})); r.Status != "approval_required" {
		t.Fatalf("unlisted moderator, public: %+v", r)
	}

	// Restricted, listed moderator: a request (not a refused direct
	// join), and its approval seats bob as moderator.
	res := createRoomWith(t, alice, srv.URL, "restricted", `{"moderator_agent_ids":["`+bobID+`"]}`)
	r = must[*RoomJoinResult](t)(bob.Join(ctx, "b", RoomJoinInput{Host: srv.URL, RoomID: res, Role: "moderator"}))
	if r.Status != "approval_required" {
		t.Fatalf("listed moderator, restricted: %+v", r)
	}
	must[*RecordResult](t)(alice.Review(ctx, "a", JoinReviewInput{RoomID: res, RequestID: joinRequestID(t, r), Decision: "approve", Role: "moderator"}))
	if r := must[*RoomJoinResult](t)(bob.Join(ctx, "b", RoomJoinInput{Host: srv.URL, RoomID: res, Role: "moderator"})); r.Status != "joined" || r.Member.Role != "moderator" {
		t.Fatalf("listed moderator after approval: %+v", r)
	}

	// A room that does not exist is the host's room_not_found.
	var he *HostError
	if _, err := bob.Join(ctx, "b", RoomJoinInput{Host: srv.URL, RoomID: "nosuchroom0000000000", Role: "speaker"}); !errors.As(err, &he) || he.Code != adp.CodeRoomNotFound {
		t.Fatalf("unknown room: %v", err)
	}
}

// TestRoomIDBounds (F3, F17): room ids outside the charset or over
// MaxRoomIDLen are refused before any request; a failed first open is not
// retained; a stored record is checked to belong to the room it is read
// for.
func TestRoomIDBounds(t *testing.T) {
	_, srv := testHost(t)
	ctx := ctxT(t)
	e := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL)
	defer e.Close()
	for _, id := range []string{"", "a\x00zz", strings.Repeat("a", MaxRoomIDLen+1), "..", "a/b", "a b", "é"} {
		if _, err := e.RoomOpen(ctx, "a", RoomOpenInput{Host: srv.URL, RoomID: id}); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("room_open %q: %v", id, err)
		}
		if _, err := e.Join(ctx, "a", RoomJoinInput{Host: srv.URL, RoomID: id, Role: "speaker"}); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("room_join %q: %v", id, err)
		}
	}
	for i := range 20 {
		if _, err := e.RoomOpen(ctx, "a", RoomOpenInput{Host: srv.URL, RoomID: fmt.Sprintf("missing%03d", i)}); err == nil {
			t.Fatal("opened a missing room")
		}
	}
	e.mu.Lock()
	n := len(e.rooms)
	e.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d failed opens retained", n)
	}
	a := createRoom(t, e, srv.URL)
	b := createRoom(t, e, srv.URL)
	// A record of room b stored under room a's key is refused on reading.
	if err := e.store.Update(func(tx stateTx) error {
		var raw []byte
		if _, err := tx.Get(bRecords, reckey(srv.URL, b, 1), (*jsontext.Value)(&raw)); err != nil {
			return err
		}
		return tx.Put(bRecords, reckey(srv.URL, a, 2), jsontext.Value(raw))
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Timeline(ctx, "a", TimelineInput{RoomID: a}); err == nil {
		t.Fatal("a record of another room was read as this room's")
	}
}

// TestClaimLease (R1): a claim is a lease renewed by the session's calls.
// While the claiming session is active, others do not see the item; once
// it has been silent for ClaimLease (a client gone without DELETE), a new
// session sees and may claim it; EndSession releases at once.
func TestClaimLease(t *testing.T) {
	_, srv := testHost(t)
	ctx := ctxT(t)
	var mu sync.Mutex
	var skew time.Duration
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return time.Now().Add(skew) }
	advance := func(d time.Duration) { mu.Lock(); skew += d; mu.Unlock() }
	alice, bob, room := speakerPair(t, srv.URL, func(o *Options) { o.Now = clock })
	must[*WriteResult](t)(alice.SendMessage(ctx, "a", SendMessageInput{RoomID: room, Content: "hi bob",
		Mentions: []string{testKey(t, "bob").AgentID().String()}, OnHeadMismatch: OnMismatchSendAnyway}))
	got := must[*InboxNextResult](t)(bob.InboxNext(ctx, "s1", InboxNextInput{Kinds: []string{KindMention}, WaitMS: 15000, Claim: true}))
	if len(got.Items) != 1 {
		t.Fatalf("s1: %+v", got)
	}
	seen := func(session string) int {
		r := must[*InboxNextResult](t)(bob.InboxNext(ctx, session, InboxNextInput{Kinds: []string{KindMention}}))
		return len(r.Items)
	}
	if n := seen("s2"); n != 0 {
		t.Fatal("s2 sees s1's fresh claim")
	}
	// s1 keeps calling: its lease is renewed.
	for range 3 {
		advance(DefaultClaimLease / 2)
		must[*RoomStateResult](t)(bob.RoomState(ctx, "s1", RoomStateInput{RoomID: room}))
	}
	if n := seen("s2"); n != 0 {
		t.Fatal("s2 sees the claim of an active session")
	}
	// s1 goes silent (no DELETE): after the lease, s2 sees and claims it.
	advance(DefaultClaimLease)
	r := must[*InboxNextResult](t)(bob.InboxNext(ctx, "s2", InboxNextInput{Kinds: []string{KindMention}, Claim: true}))
	if len(r.Items) != 1 {
		t.Fatalf("s2 after s1's lease lapsed: %+v", r)
	}
	if n := seen("s3"); n != 0 {
		t.Fatal("s3 sees s2's claim")
	}
	bob.EndSession("s2")
	if n := seen("s3"); n != 1 {
		t.Fatal("EndSession did not release s2's claim")
	}
}

// TestInboxWaitBound (R3): the long-poll never exceeds MaxInboxWait, below
// the 60 s request timeout of common MCP clients.
func TestInboxWaitBound(t *testing.T) {
	if MaxInboxWait >= 60*time.Second {
		t.Fatalf("MaxInboxWait %v", MaxInboxWait)
	}
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		e, err := Open(t.Context(), &Options{Dir: dir, Key: testKey(t, "alice"), NoSubscribe: true})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		start := time.Now()
		if _, err := e.InboxNext(t.Context(), "s", InboxNextInput{WaitMS: 600_000}); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != MaxInboxWait {
			t.Fatalf("waited %v", d)
		}
	})
}

// TestPageSizesMatchSchemas (MUST D7): every list answers the page size
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

// TestListCursors (MUST D5, D7, D13): join_requests_list pages with
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

// TestRoomFiltersAmbiguous (MUST D4): inbox_next and drafts_list with a
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

// TestStatusClear (MUST D9): expires_at at the current time clears the
// status; the host accepts it and lists the status no more.
func TestStatusClear(t *testing.T) {
	_, srv := testHost(t)
	ctx := ctxT(t)
	alice := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL)
	defer alice.Close()
	room := createRoom(t, alice, srv.URL)
	must[*AgentStatusResult](t)(alice.AgentStatusSet(ctx, "a", AgentStatusSetInput{RoomID: room, State: "working"}))
	if l := must[*AgentStatusListResult](t)(alice.AgentStatusList(ctx, "a", AgentStatusListInput{RoomID: room})); len(l.Statuses) != 1 {
		t.Fatalf("before clear: %+v", l.Statuses)
	}
	must[*AgentStatusResult](t)(alice.AgentStatusSet(ctx, "a", AgentStatusSetInput{RoomID: room, State: "idle", ExpiresAt: time.Now().UnixMilli()}))
	if l := must[*AgentStatusListResult](t)(alice.AgentStatusList(ctx, "a", AgentStatusListInput{RoomID: room})); len(l.Statuses) != 0 {
		t.Fatalf("right after clear: %+v", l.Statuses)
	}
}

// TestJoinNoticesBounded (F6): unsigned join-request notices with a
// malformed or oversized request id are dropped, and a room keeps at most
// maxJoinNotices pending review items.
func TestJoinNoticesBounded(t *testing.T) {
	_, srv := testHost(t)
	alice := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL)
	defer alice.Close()
	room := createRoomWith(t, alice, srv.URL, "restricted", "")
	k, h, err := alice.resolve("", room)
	if err != nil {
		t.Fatal(err)
	}
	bob := testKey(t, "bob").AgentID()
	for i := range 2 * maxJoinNotices {
		alice.joinRequested(k, h, &adp.JoinRequestNotice{RoomID: room, RequestID: fmt.Sprintf("jr_%d_", i) + strings.Repeat("x", 64<<10), Applicant: bob, Role: "speaker"})
		alice.joinRequested(k, h, &adp.JoinRequestNotice{RoomID: room, RequestID: fmt.Sprintf("jr_%d", i), Applicant: bob, Role: "speaker"})
	}
	items := must[[]InboxItem](t)(alice.InboxPending(ctxT(t)))
	if len(items) != maxJoinNotices {
		t.Fatalf("%d pending items", len(items))
	}
	for _, it := range items {
		if len(it.EventID) > maxRequestIDLen {
			t.Fatalf("kept an oversized request id of %d bytes", len(it.EventID))
		}
	}
}

// TestDraftCommitOnce (F7): concurrent draft_commit calls of one held
// draft send it at most once; the others get ErrNotFound.
func TestDraftCommitOnce(t *testing.T) {
	_, srv := testHost(t)
	ctx := ctxT(t)
	alice := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL)
	defer alice.Close()
	room := createRoom(t, alice, srv.URL)
	st := must[*RoomStateResult](t)(alice.RoomState(ctx, "a", RoomStateInput{RoomID: room}))
	say(t, alice, room, "moved")
	held := must[*WriteResult](t)(alice.SendMessage(ctx, "a", SendMessageInput{RoomID: room, Content: "one message", BaseSeq: &st.Sync.HeadSeq, BaseHash: st.Sync.HeadHash}))
	if held.Status != StatusHeld {
		t.Fatalf("not held: %s", held.Status)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	sent, notFound := 0, 0
	for range 8 {
		wg.Go(func() {
			r, err := alice.DraftCommit(ctx, "a", DraftCommitInput{DraftID: held.Draft.ID, Action: ActionSendAnyway})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && r.Status == StatusSent:
				sent++
			case errors.Is(err, ErrNotFound):
				notFound++
			default:
				t.Errorf("commit: %+v %v", r, err)
			}
		})
	}
	wg.Wait()
	tl := must[*TimelineResult](t)(alice.Timeline(ctx, "a", TimelineInput{RoomID: room, Refresh: true, Types: []string{adp.TypeMessageCreate}}))
	copies := 0
	for _, it := range tl.Items {
		if it.Summary == "one message" {
			copies++
		}
	}
	if sent != 1 || notFound != 7 || copies != 1 {
		t.Fatalf("sent %d, not found %d, copies in the room %d", sent, notFound, copies)
	}
}

// TestPermissionsChecked (F19): a group/world-writable state directory and
// key file, and a group/world-readable unencrypted key, are refused.
func TestPermissionsChecked(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("modes do not describe access on Windows")
	}
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctxT(t), &Options{Dir: dir, Key: testKey(t, "alice")}); !errors.Is(err, ErrInsecurePermissions) {
		t.Fatalf("state dir 0777: %v", err)
	}
	key := filepath.Join(t.TempDir(), "key")
	if _, err := GenerateKeyFileUnencryptedDev(key); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKeyFileUnencryptedDev(key); err != nil {
		t.Fatal(err)
	}
	os.Chmod(key, 0o644)
	if _, err := LoadKeyFileUnencryptedDev(key); !errors.Is(err, ErrInsecurePermissions) {
		t.Fatalf("dev key 0644: %v", err)
	}
	os.Chmod(key, 0o622)
	if _, err := LoadKeyFile(key, func() ([]byte, error) { return []byte("x"), nil }); !errors.Is(err, ErrInsecurePermissions) {
		t.Fatalf("key 0622: %v", err)
	}
}

// failingEvents fails every history read while fail is set.
type failingEvents struct {
	mu   sync.Mutex
	fail bool
}

func (f *failingEvents) RoundTrip(r *http.Request) (*http.Response, error) {
	f.mu.Lock()
	fail := f.fail
	f.mu.Unlock()
	if fail && strings.Contains(r.URL.Path, "/events") && !strings.HasSuffix(r.URL.Path, "/live") {
		return nil, errors.New("history unavailable")
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestOpenReadsHistoryOnce (F5): room_open reads the history once, page by
// page as it stores it (never a download to verify and a second one to
// store), in transactions of at most ingestBatch records.
func TestOpenReadsHistoryOnce(t *testing.T) {
	_, srv := testHost(t)
	ctx := ctxT(t)
	alice := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL)
	defer alice.Close()
	room := createRoom(t, alice, srv.URL)
	for range 20 {
		say(t, alice, room, "x")
	}
	ct := &countingTransport{}
	bob := openTest(t, t.TempDir(), testKey(t, "bob"), srv.URL, func(o *Options) { o.HTTPClient = &http.Client{Transport: ct}; o.NoSubscribe = true })
	defer bob.Close()
	r := must[*RoomOpenResult](t)(bob.RoomOpen(ctx, "b", RoomOpenInput{Host: srv.URL, RoomID: room}))
	if r.Sync.SyncedSeq != 21 {
		t.Fatalf("synced %d", r.Sync.SyncedSeq)
	}
	if n := ct.count("after_seq=0&"); n != 1 {
		t.Fatalf("the history was read %d times: %v", n, ct.urls)
	}
}

// TestRemoteSeqHint (MUST D12, D14): reconciliation reads the room
// resource, so remote_seq shows the host's latest record while the
// history could not be read; the room view carries the resource fields
// url, extra, pre_hash and received_at.
func TestRemoteSeqHint(t *testing.T) {
	_, srv := testHost(t)
	ctx := ctxT(t)
	alice := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL)
	defer alice.Close()
	room := createRoom(t, alice, srv.URL)
	fe := &failingEvents{}
	bob := openTest(t, t.TempDir(), testKey(t, "bob"), srv.URL, func(o *Options) { o.HTTPClient = &http.Client{Transport: fe}; o.NoSubscribe = true })
	defer bob.Close()
	st := must[*RoomOpenResult](t)(bob.RoomOpen(ctx, "b", RoomOpenInput{Host: srv.URL, RoomID: room}))
	v := st.Room
	if v.URL == "" || string(v.Extra) != "{}" || v.PreHash != nil || v.ReceivedAt == 0 {
		t.Fatalf("room view: url %q extra %s pre_hash %v received_at %d", v.URL, v.Extra, v.PreHash, v.ReceivedAt)
	}
	say(t, alice, room, "one")
	say(t, alice, room, "two")
	fe.mu.Lock()
	fe.fail = true
	fe.mu.Unlock()
	if _, err := bob.RoomState(ctx, "b", RoomStateInput{RoomID: room, Refresh: true}); err == nil {
		t.Fatal("refresh without history succeeded")
	}
	s := must[*RoomStateResult](t)(bob.RoomState(ctx, "b", RoomStateInput{RoomID: room}))
	if s.Sync.SyncedSeq != 1 || s.Sync.RemoteSeq != 3 {
		t.Fatalf("sync: synced %d remote %d", s.Sync.SyncedSeq, s.Sync.RemoteSeq)
	}
	if s.Room.PreHash != nil {
		t.Fatal("pre_hash at seq 1")
	}
}

// TestRoomIDSchema (F3, F17): the tool schemas bound room_id too, so a
// model is told which field to fix before the engine sees it.
func TestRoomIDSchema(t *testing.T) {
	_, srv := testHost(t)
	e := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL)
	defer e.Close()
	tool, _ := LookupTool("agent_protocols_room_open")
	for _, id := range []string{"a\x00zz", strings.Repeat("a", MaxRoomIDLen+1), "a/b"} {
		args, _ := json.Marshal(map[string]string{"host": srv.URL, "room_id": id})
		_, err := tool.Call(ctxT(t), e, "s", args)
		var te *ToolError
		if !errors.As(err, &te) || te.Code != CodeInvalidArguments || !strings.Contains(string(te.Data), "room_id") {
			t.Errorf("room_id %q: %v", clip(id), err)
		}
	}
}

// TestHostErrBounds (F9): host text reaching a caller is bounded (message
// 1 KiB, data dropped over 4 KiB) and only answers a host sent are
// labelled as the host's.
func TestHostErrBounds(t *testing.T) {
	big := &identity.Error{Code: "host_not_allowed", Message: strings.Repeat("m", 5000), Status: 403,
		Data: jsontext.Value(`{"x":"` + strings.Repeat("d", 5000) + `"}`)}
	var he *HostError
	if err := hostErr("https://h.example", big); !errors.As(err, &he) || len(he.Message) > maxHostMessage+len("…") || he.Data != nil || he.Host != "https://h.example" {
		t.Fatalf("bounded: message %d bytes, data %d bytes, host %q", len(he.Message), len(he.Data), he.Host)
	}
	if !errors.Is(hostErr("https://h.example", big), identity.NewError("host_not_allowed", "")) {
		t.Fatal("errors.Is lost the code")
	}
	local := identity.NewError(identity.CodeInvalidRequest, "local check")
	if err := hostErr("https://h.example", local); errors.As(err, &he) {
		t.Fatal("a local error labelled as the host's")
	}
}
