package adphost_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/storetest"
)

// TestExactResubmission: Identity §6.3 over HTTP — the same envelope sent
// again is answered with the original record (room.create with the
// original room), and nothing is appended.
func TestExactResubmission(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, &adphost.Options{RateLimits: adphost.Unlimited()})
	alice := w.client("alice")
	create, err := adp.NewRoomCreate(ctx, alice.Author(), roomSpec(t, adp.VisibilityPublic, "again"))
	if err != nil {
		t.Fatal(err)
	}
	first := mustv(alice.SubmitCreate(ctx, create))
	again := mustv(alice.SubmitCreate(ctx, create))
	if again.RoomID != first.RoomID || again.Hash != first.Hash {
		t.Fatalf("room.create resubmission made %s/%s, first %s/%s", again.RoomID, again.Hash, first.RoomID, first.Hash)
	}
	room := first.RoomID
	env := mustv(adp.NewMessage(ctx, alice.Author(), headBase(t, alice, room), text("once")))
	r1 := mustv(alice.Submit(ctx, room, env))
	w.clock.Advance(10)
	r2 := mustv(alice.Submit(ctx, room, env))
	if r1.Seq != r2.Seq || r1.Hash != r2.Hash || r1.ReceivedAt != r2.ReceivedAt {
		t.Fatalf("resubmission answered %+v, want %+v", r2, r1)
	}
	if l := mustv(alice.Sync(ctx, room)); l.Seq != 2 {
		t.Fatalf("log has %d records", l.Seq)
	}
}

// TestMemoryStoreConformance: the memory store passes the Store suite.
func TestMemoryStoreConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) adphost.Store { return adphost.NewMemoryStore() })
}

// TestEventsPaging: §16 — limit defaults to 100 and is capped at 1000;
// the cursor pages on without gaps; a bad limit or cursor is refused.
func TestEventsPaging(t *testing.T) {
	h, c := newBenchHost(t)
	br := prepare(t, h, c, "pager", 1099)
	for _, env := range br.envs {
		post(t, h, "/v1/rooms/"+br.id, env)
	}
	get := func(q string) (int, int64, string, int) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/rooms/"+br.id+"/events"+q, nil))
		if rec.Code != 200 {
			return 0, 0, "", rec.Code
		}
		var page struct {
			Result     []jsontext.Value `json:"result"`
			NextCursor string           `json:"next_cursor"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
			t.Fatal(err)
		}
		last := mustv(adp.ParseRecord(page.Result[len(page.Result)-1]))
		return len(page.Result), last.Seq, page.NextCursor, 200
	}
	if n, last, _, _ := get(""); n != 100 || last != 100 {
		t.Fatalf("default page: %d records to seq %d", n, last)
	}
	n, last, cursor, _ := get("?limit=100000")
	if n != 1000 || last != 1000 || cursor == "" {
		t.Fatalf("capped page: %d records to seq %d, cursor %q", n, last, cursor)
	}
	n, last, cursor, _ = get("?limit=1000&cursor=" + cursor)
	if n != 100 || last != 1100 || cursor != "" {
		t.Fatalf("last page: %d records to seq %d, cursor %q", n, last, cursor)
	}
	if n, last, _, _ := get("?after_seq=1095"); n != 5 || last != 1100 {
		t.Fatalf("after_seq: %d records to seq %d", n, last)
	}
	for _, q := range []string{"?limit=0", "?limit=-1", "?after_seq=x", "?cursor=bogus"} {
		if _, _, _, code := get(q); code != 400 {
			t.Fatalf("%s answered %d", q, code)
		}
	}
}

// TestJoinRequestPaging: the join-request list pages with limit and
// cursor, and the client follows it to the end.
func TestJoinRequestPaging(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, &adphost.Options{RateLimits: adphost.Unlimited()})
	alice := w.client("alice")
	room := mustv(alice.CreateRoom(ctx, roomSpec(t, adp.VisibilityRestricted, "many applicants"))).RoomID
	for i := range 120 {
		mustv(w.client("applicant"+strconv.Itoa(i)).RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleSpeaker}))
	}
	if list := mustv(alice.JoinRequests(ctx, room)); len(list) != 120 {
		t.Fatalf("%d requests listed", len(list))
	}
}

// TestPageByteBudget: a host page fits a client's response bound. A page of large legal
// records stops at Options.MaxPageBytes (8 MiB by default) with
// next_cursor, however many records the client asks for, so no page
// reaches a client's response bound; the join-request and room lists are
// budgeted the same way. Every list still reads to the end.
func TestPageByteBudget(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, &adphost.Options{RateLimits: adphost.Unlimited()})
	alice := w.client("alice")
	room := mustv(alice.CreateRoom(ctx, roomSpec(t, adp.VisibilityPublic, "big records"))).RoomID
	big := strings.Repeat("q", 60000)
	for i := range 145 { // 145 × ~61 KB > 8 MiB
		mustv(alice.SendMessage(ctx, room, text(strconv.Itoa(i)+big)))
	}
	resp := mustv(w.hc.Get(w.url + "/v1/rooms/" + room + "/events?limit=1000"))
	body := mustv(io.ReadAll(resp.Body))
	resp.Body.Close()
	var page struct {
		Result     []jsontext.Value `json:"result"`
		NextCursor string           `json:"next_cursor"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatal(err)
	}
	if len(body) > adphost.DefaultMaxPageBytes+100 || page.NextCursor == "" || len(page.Result) >= 146 {
		t.Fatalf("page of %d bytes, %d records, next_cursor %q", len(body), len(page.Result), page.NextCursor)
	}
	n := 0
	for _, err := range w.client("bob").Events(ctx, room, 0) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 146 {
		t.Fatalf("read %d of 146 records", n)
	}

	// A small budget cuts the other lists, and the client follows them.
	w = newWorld(t, &adphost.Options{RateLimits: adphost.Unlimited(), MaxPageBytes: 2048})
	alice = w.client("alice")
	room = mustv(alice.CreateRoom(ctx, roomSpec(t, adp.VisibilityRestricted, "many applicants"))).RoomID
	reason := strings.Repeat("r", 600)
	for i := range 10 {
		mustv(w.client("applicant"+strconv.Itoa(i)).RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleSpeaker, Reason: &reason}))
	}
	if list := mustv(alice.JoinRequests(ctx, room)); len(list) != 10 {
		t.Fatalf("%d requests listed", len(list))
	}
	for i := range 4 {
		spec := roomSpec(t, adp.VisibilityPublic, strings.Repeat("t", 700)+strconv.Itoa(i))
		mustv(alice.CreateRoom(ctx, spec))
	}
	if got := collect(t, alice.PublicRooms(ctx, adp.RoomQuery{})); len(got) != 5 {
		t.Fatalf("%d public rooms listed", len(got))
	}
	for _, path := range []string{"/v1/rooms/" + room + "/join-requests?limit=100", "/v1/rooms/public?limit=100"} {
		a := w.probe("GET", path, "alice", nil, room)
		if a.status != 200 || len(a.body) > 2048+1024 || !strings.Contains(a.body, `"next_cursor"`) {
			t.Fatalf("%s: a page of %d bytes: %.200s", path, len(a.body), a.body)
		}
	}
}

// reviewCrashStore loses the status update of a reviewed join request,
// as a crash between the review record and the request update would.
type reviewCrashStore struct {
	*adphost.MemoryStore
	crash atomic.Bool
}

func (s *reviewCrashStore) PutJoinRequest(ctx context.Context, jr *adp.JoinRequestResource) error {
	if s.crash.Load() && jr.Status != adp.JoinPending {
		return errors.New("crashed")
	}
	return s.MemoryStore.PutJoinRequest(ctx, jr)
}

// TestReviewReconciledOnLoad: the log is the truth for join
// requests (§11). A crash between storing a room.join.review and updating the
// request leaves it pending in the Store; the next host to load the room
// brings it in line with the log when it loads the room.
func TestReviewReconciledOnLoad(t *testing.T) {
	ctx := context.Background()
	store := &reviewCrashStore{MemoryStore: adphost.NewMemoryStore()}
	w := newWorld(t, &adphost.Options{Store: store})
	alice, bob := w.client("alice"), w.client("bob")
	room := mustv(alice.CreateRoom(ctx, roomSpec(t, adp.VisibilityRestricted, "crash"))).RoomID
	jr := mustv(bob.RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleSpeaker}))
	store.crash.Store(true)
	rec := mustv(alice.ReviewJoin(ctx, room, adp.JoinReview{Request: jr.Request, Decision: adp.DecisionApprove, Role: adp.RoleSpeaker}))
	if got := mustv(store.JoinRequest(ctx, room, jr.Request.ID)); got.Status != adp.JoinPending {
		t.Fatalf("the crash was not simulated: %s", got.Status)
	}
	store.crash.Store(false)
	h := mustv(adphost.New(ctx, &adphost.Options{Origin: w.host.Origin(), Store: store, Now: w.clock.Now}))
	defer h.Close()
	resp := httptest.NewRecorder() // loading the room is what reconciles it
	h.ServeHTTP(resp, httptest.NewRequest(http.MethodGet, "/v1/rooms/"+room, nil))
	if resp.Code != 200 {
		t.Fatalf("GET room: %d", resp.Code)
	}
	got := mustv(store.JoinRequest(ctx, room, jr.Request.ID))
	if got.Status != adp.JoinApproved || got.ApprovedRole != adp.RoleSpeaker || got.ReviewedBy == nil ||
		*got.ReviewedBy != alice.AgentID() || got.ReviewedAt != rec.ReceivedAt {
		t.Fatalf("after reload: %+v", got)
	}
}
