package connector

import (
	"errors"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// waitInbox long-polls e for one item of kind.
func waitInbox(t testing.TB, e *Engine, session, kind string) InboxItem {
	t.Helper()
	r, err := e.InboxNext(ctxT(t), session, InboxNextInput{Kinds: []string{kind}, WaitMS: 15000})
	if err != nil || len(r.Items) != 1 {
		t.Fatalf("inbox %s: %+v %v", kind, r, err)
	}
	if _, err := e.InboxAck(ctxT(t), session, InboxAckInput{IDs: []string{r.Items[0].ID}, Action: AckHandled}); err != nil {
		t.Fatal(err)
	}
	return r.Items[0]
}

func submit(t testing.TB, e *Engine, room, typ, payload string) *WriteResult {
	t.Helper()
	r, err := e.SubmitEvent(ctxT(t), "a", SubmitEventInput{RoomID: room, Type: typ, Payload: jsontext.Value(payload), OnHeadMismatch: OnMismatchSendAnyway})
	if err != nil || r.Status != StatusSent {
		t.Fatalf("submit %s: %+v %v", typ, r, err)
	}
	return r
}

// TestInboxKinds drives every §4.2 inbox kind through two engines: the
// approval flow of a restricted room (join requested, join approved, role
// mismatch), turn assignment, steering, a watched custom type, role change,
// room state change and removal; then a restart keeps the same items.
func TestInboxKinds(t *testing.T) {
	_, srv := testHost(t)
	ctx := ctxT(t)
	alice := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL)
	defer alice.Close()
	bobDir := t.TempDir()
	watch := func(o *Options) { o.Watch = []string{"vote.cast"} }
	bob := openTest(t, bobDir, testKey(t, "bob"), srv.URL, watch)
	now := time.Now().UnixMilli()
	cr := must[*RoomCreateResult](t)(alice.CreateRoom(ctx, "a", RoomCreateInput{Host: srv.URL, Topic: "restricted", Visibility: "restricted",
		StartTime: now - 1000, EndTime: now + 3600_000, Types: []jsontext.Value{
			jsontext.Value(`{"type":"turn.update","kind":"control","title":"Turn","schema":{"type":"object","properties":{"turn_id":{"type":"integer"},"speaker":{"type":"string"}},"required":["turn_id","speaker"]}}`),
			jsontext.Value(`{"type":"steer.create","kind":"control","title":"Steer","schema":{"type":"object"}}`),
			jsontext.Value(`{"type":"vote.cast","kind":"signal","title":"Vote","schema":{"type":"object"}}`),
		}}))
	room := cr.Room.RoomID

	// Join with approval.
	j := must[*RoomJoinResult](t)(bob.Join(ctx, "b", RoomJoinInput{Host: srv.URL, RoomID: room, Role: "speaker", Reason: "I review specs"}))
	if j.Status != "approval_required" || len(j.JoinRequest) == 0 {
		t.Fatalf("join: %+v", j)
	}
	req := waitInbox(t, alice, "a", KindJoinRequested)
	if req.Actor != bob.AgentID().String() || !req.RequiresResponse {
		t.Fatalf("join requested: %+v", req)
	}
	jl := must[*JoinRequestsListResult](t)(alice.JoinRequestsList(ctx, JoinRequestsListInput{RoomID: room, Status: "pending"}))
	if len(jl.JoinRequests) != 1 {
		t.Fatalf("join requests: %+v", jl)
	}
	must[*RecordResult](t)(alice.Review(ctx, "a", JoinReviewInput{RoomID: room, RequestID: req.EventID, Decision: "approve", Role: "speaker"}))
	waitInbox(t, bob, "b", KindJoinApproved)
	if _, err := bob.Join(ctx, "b", RoomJoinInput{Host: srv.URL, RoomID: room, Role: "observer"}); !errors.Is(err, ErrRoleMismatch) {
		t.Fatalf("role mismatch: %v", err)
	}
	j = must[*RoomJoinResult](t)(bob.Join(ctx, "b", RoomJoinInput{Host: srv.URL, RoomID: room, Role: "speaker"}))
	if j.Status != "joined" || j.Member == nil || j.Member.Role != "speaker" {
		t.Fatalf("join completion: %+v", j)
	}
	// The review record, read after joining, adds no second approval item.
	if r := must[*InboxNextResult](t)(bob.InboxNext(ctx, "b", InboxNextInput{Kinds: []string{KindJoinApproved}})); len(r.Items) != 0 {
		t.Fatalf("second approval item: %+v", r.Items)
	}

	// Turn, steer, watched custom type.
	submit(t, alice, room, "turn.update", `{"turn_id":7,"speaker":"`+bob.AgentID().String()+`"}`)
	turn := waitInbox(t, bob, "b", KindTurnAssigned)
	if turn.Priority != "high" || !turn.RequiresResponse {
		t.Fatalf("turn: %+v", turn)
	}
	st := must[*RoomStateResult](t)(bob.RoomState(ctx, "b", RoomStateInput{RoomID: room}))
	if st.Room.ActiveTurn == nil || st.Room.ActiveTurn.Speaker != bob.AgentID().String() || st.Room.ActiveTurn.TurnID != "7" {
		t.Fatalf("active turn: %+v", st.Room.ActiveTurn)
	}
	submit(t, alice, room, "steer.create", `{"note":"focus"}`)
	waitInbox(t, bob, "b", KindSteer)
	submit(t, alice, room, "vote.cast", `{"choice":"yes"}`)
	waitInbox(t, bob, "b", KindEventCustom)

	// Role change, room state change, removal.
	submit(t, alice, room, "room.member.role.update", `{"member":"`+bob.AgentID().String()+`","role":"moderator"}`)
	waitInbox(t, bob, "b", KindRoleChanged)
	submit(t, alice, room, "room.update", `{"agenda":"new agenda"}`)
	waitInbox(t, bob, "b", KindStateChanged)
	submit(t, alice, room, "room.member.remove", `{"member":"`+bob.AgentID().String()+`"}`)
	waitInbox(t, bob, "b", KindMemberRemoved)

	// Nothing is pending twice, and a restart keeps every item once.
	pending := must[[]InboxItem](t)(bob.InboxPending(ctx))
	seen := map[string]bool{}
	for _, it := range pending {
		k := it.RoomID + it.Kind + it.EventID
		if seen[k] {
			t.Fatalf("duplicate inbox item %+v", it)
		}
		seen[k] = true
	}
	var total int
	count := func(e *Engine) (n int) {
		e.store.View(func(tx stateTx) error {
			tx.Scan(bPending, "", func(string, []byte) error { n++; return nil })
			return tx.Scan(bInbox, "", func(string, []byte) error { n++; return nil })
		})
		return n
	}
	total = count(bob)
	bob.Close()
	bob = openTest(t, bobDir, testKey(t, "bob"), srv.URL, watch)
	defer bob.Close()
	again := count(bob)
	if again != total {
		t.Fatalf("inbox items %d after restart, %d before", again, total)
	}
}

// TestInboxDefer: a deferred item is hidden until defer_until, dismissed
// ones are gone, and unknown actions fail.
func TestInboxDefer(t *testing.T) {
	_, srv := testHost(t)
	ctx := ctxT(t)
	alice, bob, room := speakerPair(t, srv.URL)
	say(t, alice, room, "one")
	r := must[*InboxNextResult](t)(bob.InboxNext(ctx, "b", InboxNextInput{Kinds: []string{KindMessageNew}, WaitMS: 15000}))
	if len(r.Items) != 1 {
		t.Fatalf("inbox: %+v", r)
	}
	id := r.Items[0].ID
	// A claim hides the item from other sessions until its session ends.
	must[*InboxNextResult](t)(bob.InboxNext(ctx, "s1", InboxNextInput{Claim: true}))
	if r := must[*InboxNextResult](t)(bob.InboxNext(ctx, "s2", InboxNextInput{})); len(r.Items) != 0 {
		t.Fatalf("claimed item shown to s2: %+v", r)
	}
	bob.EndSession("s1")
	if r := must[*InboxNextResult](t)(bob.InboxNext(ctx, "s2", InboxNextInput{Claim: true})); len(r.Items) != 1 {
		t.Fatalf("released item not shown to s2: %+v", r)
	}
	must[*InboxAckResult](t)(bob.InboxAck(ctx, "b", InboxAckInput{IDs: []string{id}, Action: AckDefer, DeferUntil: time.Now().Add(time.Hour).UnixMilli()}))
	if r := must[*InboxNextResult](t)(bob.InboxNext(ctx, "b", InboxNextInput{Kinds: []string{KindMessageNew}})); len(r.Items) != 0 {
		t.Fatalf("deferred item returned: %+v", r)
	}
	must[*InboxAckResult](t)(bob.InboxAck(ctx, "b", InboxAckInput{IDs: []string{id}, Action: AckDefer, DeferUntil: time.Now().Add(-time.Second).UnixMilli()}))
	if r := must[*InboxNextResult](t)(bob.InboxNext(ctx, "b", InboxNextInput{Kinds: []string{KindMessageNew}})); len(r.Items) != 1 || r.Items[0].ID != id {
		t.Fatalf("item after its defer_until: %+v", r)
	}
	must[*InboxAckResult](t)(bob.InboxAck(ctx, "b", InboxAckInput{IDs: []string{id}, Action: AckDismissed}))
	if r := must[*InboxNextResult](t)(bob.InboxNext(ctx, "b", InboxNextInput{})); len(r.Items) != 0 || r.PendingCount != 0 {
		t.Fatalf("dismissed item returned: %+v", r)
	}
	if _, err := bob.InboxAck(ctx, "b", InboxAckInput{IDs: []string{id}, Action: "later"}); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("unknown action: %v", err)
	}
	if _, err := bob.InboxAck(ctx, "b", InboxAckInput{IDs: []string{id}, Action: AckDefer}); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("defer without defer_until: %v", err)
	}
}

// TestJoinAfterRejection: a rejected join request is not usable; joining
// again files a new one.
func TestJoinAfterRejection(t *testing.T) {
	_, srv := testHost(t)
	ctx := ctxT(t)
	alice := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL)
	defer alice.Close()
	bob := openTest(t, t.TempDir(), testKey(t, "bob"), srv.URL)
	defer bob.Close()
	now := time.Now().UnixMilli()
	room := must[*RoomCreateResult](t)(alice.CreateRoom(ctx, "a", RoomCreateInput{Host: srv.URL, Topic: "closed", Visibility: "restricted",
		StartTime: now - 1000, EndTime: now + 3600_000})).Room.RoomID
	j1 := must[*RoomJoinResult](t)(bob.Join(ctx, "b", RoomJoinInput{Host: srv.URL, RoomID: room, Role: "speaker"}))
	req := waitInbox(t, alice, "a", KindJoinRequested)
	must[*RecordResult](t)(alice.Review(ctx, "a", JoinReviewInput{RoomID: room, RequestID: req.EventID, Decision: "reject", Reason: "full"}))
	j2 := must[*RoomJoinResult](t)(bob.Join(ctx, "b", RoomJoinInput{Host: srv.URL, RoomID: room, Role: "speaker"}))
	var r1, r2 struct {
		Request struct {
			ID string `json:"id"`
		} `json:"request"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal(j1.JoinRequest, &r1, json.RejectUnknownMembers(false)); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(j2.JoinRequest, &r2, json.RejectUnknownMembers(false)); err != nil {
		t.Fatal(err)
	}
	if j2.Status != "approval_required" || r2.Status != "pending" || r2.Request.ID == r1.Request.ID {
		t.Fatalf("second join: %s after %s", j2.JoinRequest, j1.JoinRequest)
	}
}

// TestHistoryIsNotNews: opening a room reads its past
// without turning it into inbox items, except mentions of this agent
// received within Options.BackfillWindow; what follows is news.
func TestHistoryIsNotNews(t *testing.T) {
	_, srv := testHost(t)
	ctx := ctxT(t)
	alice := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL)
	defer alice.Close()
	room := createRoom(t, alice, srv.URL)
	carol := testKey(t, "carol").AgentID().String()
	say(t, alice, room, "old, no mention")
	for range 3 {
		must[*WriteResult](t)(alice.SendMessage(ctx, "a", SendMessageInput{RoomID: room, Content: "old", Mentions: []string{carol}, OnHeadMismatch: OnMismatchSendAnyway}))
	}
	// Outside the backfill window (here: none), no past record is news.
	c0 := openTest(t, t.TempDir(), testKey(t, "carol"), srv.URL, func(o *Options) { o.BackfillWindow = -1 })
	must[*RoomOpenResult](t)(c0.RoomOpen(ctx, "c", RoomOpenInput{Host: srv.URL, RoomID: room}))
	if p := must[[]InboxItem](t)(c0.InboxPending(ctx)); len(p) != 0 {
		t.Fatalf("history outside the window became inbox items: %+v", p)
	}
	c0.Close()
	// Within it (the default), the recent mentions are news; the plain
	// message is history.
	c := openTest(t, t.TempDir(), testKey(t, "carol"), srv.URL)
	defer c.Close()
	must[*RoomOpenResult](t)(c.RoomOpen(ctx, "c", RoomOpenInput{Host: srv.URL, RoomID: room}))
	p := must[[]InboxItem](t)(c.InboxPending(ctx))
	if len(p) != 3 {
		t.Fatalf("recent mentions before the first open: %+v", p)
	}
	for _, it := range p {
		if it.Kind != KindMention {
			t.Fatalf("history became a %s item", it.Kind)
		}
	}
	mustAck(t, c, "c", p[0].ID, p[1].ID, p[2].ID)
	must[*RoomJoinResult](t)(c.Join(ctx, "c", RoomJoinInput{RoomID: room, Role: "observer"}))
	if p := must[[]InboxItem](t)(c.InboxPending(ctx)); len(p) != 0 {
		t.Fatalf("joining made inbox items: %+v", p)
	}
	must[*WriteResult](t)(alice.SendMessage(ctx, "a", SendMessageInput{RoomID: room, Content: "new", Mentions: []string{carol}, OnHeadMismatch: OnMismatchSendAnyway}))
	if it := waitInbox(t, c, "c", KindMention); it.Seq != 7 {
		t.Fatalf("new mention: %+v", it)
	}
}

// TestUnreadCursor: unread counts follow the read cursor; mark_read with a
// type filter covers only what it returned.
func TestUnreadCursor(t *testing.T) {
	_, srv := testHost(t)
	ctx := ctxT(t)
	alice, bob, room := speakerPair(t, srv.URL)
	say(t, alice, room, "a")
	say(t, alice, room, "b")
	say(t, bob, room, "mine")
	waitSynced(t, bob, room, 5)
	st := must[*RoomStateResult](t)(bob.RoomState(ctx, "b", RoomStateInput{RoomID: room}))
	if st.Sync.UnreadCount != 2 {
		t.Fatalf("unread %d, want 2 (own messages do not count)", st.Sync.UnreadCount)
	}
	tl := must[*TimelineResult](t)(bob.Timeline(ctx, "b", TimelineInput{RoomID: room, Types: []string{"room.join"}, MarkRead: true}))
	if len(tl.Items) != 1 || tl.Sync.UnreadCount != 2 {
		t.Fatalf("filtered mark_read: %d items, unread %d", len(tl.Items), tl.Sync.UnreadCount)
	}
	tl = must[*TimelineResult](t)(bob.Timeline(ctx, "b", TimelineInput{RoomID: room, UnreadOnly: true, MarkRead: true, Limit: 1}))
	if len(tl.Items) != 1 || tl.Items[0].Summary != "a" || tl.Sync.UnreadCount != 1 {
		t.Fatalf("first unread page: %+v", tl)
	}
	mr := must[*MarkReadResult](t)(bob.MarkRead(ctx, MarkReadInput{RoomID: room, ThroughSeq: 1000}))
	if mr.ReadSeq != 5 || mr.UnreadCount != 0 {
		t.Fatalf("mark read: %+v", mr)
	}
}
