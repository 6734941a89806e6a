package main

import "testing"

// TestPrivateRoomJoin (MUST D1) through tools only: room_join on a private
// room files a join request and answers approval_required with it (not
// room_not_found); the moderator sees and approves it; the applicant's
// inbox wakes with room.join.approved, and room_join with the request id
// completes the membership.
func TestPrivateRoomJoin(t *testing.T) {
	h := newTestHost(t, nil)
	alice := newConnector(t, "alice", h)
	bob := newConnector(t, "bob", h)
	roomID := createRoom(t, alice, h, "private")
	r := bob.call("room_join", map[string]any{"host": h.url, "room_id": roomID, "role": "speaker", "reason": "invited"})
	reqID, _ := get(r, "join_request.request.id").(string)
	if r["status"] != "approval_required" || reqID == "" {
		t.Fatalf("room_join: %v", r)
	}
	l := alice.call("join_requests_list", map[string]any{"room_id": roomID, "status": "pending"})
	if jrs, _ := l["join_requests"].([]any); len(jrs) != 1 {
		t.Fatalf("join_requests_list: %v", l)
	}
	alice.call("join_request_review", map[string]any{"room_id": roomID, "request_id": reqID, "decision": "approve", "role": "speaker"})
	waitInbox(t, bob, roomID, "room.join.approved")
	j := bob.call("room_join", map[string]any{"room_id": roomID, "role": "speaker", "request_id": reqID})
	if j["status"] != "joined" || get(j, "member.role") != "speaker" {
		t.Fatalf("completion: %v", j)
	}
}
