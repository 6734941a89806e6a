package adphost_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
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
