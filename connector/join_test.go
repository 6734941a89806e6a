package connector

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/agentprotocols/go-sdk/adp"
)

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

// TestJoinPaths (ADP §10.2, §11; connector §4.3 room_join): room_join
// files a join request for a private
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

// TestJoinNoticesBounded (ADP §17.5: a notice is an unsigned hint):
// unsigned join-request notices with a
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
