package main

import (
	"strings"
	"testing"

	"github.com/agentprotocols/go-sdk/connector"
)

// TestPrivateRoomJoin (§10.2, §11) through tools only: room_join on a private
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

// TestJoinWithoutHost: host is only for ambiguity. With one configured
// host, an agent that follows the tools joins a restricted or private
// room with room_id and role alone — room_open is refused before
// membership, and room_join does not ask to open the room first — and
// completes the approved join the same way. With several hosts, a
// room_id known on none is an ambiguity that asks for host; a tool that
// needs the room open names the one host to open it on.
func TestJoinWithoutHost(t *testing.T) {
	h := newTestHost(t, nil)
	alice := newConnector(t, "alice", h)
	bob := newConnector(t, "bob", h)
	for _, visibility := range []string{"restricted", "private"} {
		t.Run(visibility, func(t *testing.T) {
			roomID := createRoom(t, alice, h, visibility)
			// A restricted room is refused to non-members; a private one
			// does not even exist for them (§16).
			if code, m := bob.callErr("room_open", map[string]any{"host": h.url, "room_id": roomID}); code != "membership_required" && code != "room_not_found" {
				t.Fatalf("room_open before joining: %v", m)
			}
			r := bob.call("room_join", map[string]any{"room_id": roomID, "role": "speaker"})
			reqID, _ := get(r, "join_request.request.id").(string)
			if r["status"] != "approval_required" || reqID == "" {
				t.Fatalf("room_join without host: %v", r)
			}
			alice.call("join_request_review", map[string]any{"room_id": roomID, "request_id": reqID, "decision": "approve", "role": "speaker"})
			waitInbox(t, bob, roomID, "room.join.approved")
			if j := bob.call("room_join", map[string]any{"room_id": roomID, "role": "speaker"}); j["status"] != "joined" {
				t.Fatalf("completing the approved join without host: %v", j)
			}
		})
	}

	if code, m := bob.callErr("room_state", map[string]any{"room_id": "never-opened"}); code != "room_not_open" || !strings.Contains(m["message"].(string), h.url) {
		t.Errorf("room_state of a room not open, one host: %v, want room_not_open naming %s", m, h.url)
	}

	h2 := newTestHost(t, nil)
	carol := newConnectorWith(t, "carol", &connectorOptions{hosts: []connector.HostConfig{{Host: h.url}, {Host: h2.url}}})
	roomID := createRoom(t, alice, h, "restricted")
	code, m := carol.callErr("room_join", map[string]any{"room_id": roomID, "role": "speaker"})
	if msg, _ := m["message"].(string); code != string(connector.CodeAmbiguousRoom) || !strings.Contains(msg, "pass host") || strings.Contains(msg, "open it first") {
		t.Errorf("room_join of a room known on no host, two hosts: %v, want ambiguous_room asking for host", m)
	}
	if r := carol.call("room_join", map[string]any{"host": h.url, "room_id": roomID, "role": "speaker"}); r["status"] != "approval_required" {
		t.Errorf("room_join with host: %v", r)
	}
}
