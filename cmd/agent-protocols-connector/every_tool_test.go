package main

import (
	"strings"
	"testing"

	"github.com/agentprotocols/go-sdk/connector"
)

// TestEveryTool drives each of the 27 tools through an in-memory MCP
// client against adphost (through the engine) and checks the result
// shape the §4.3 tables give; room-scoped results carry sync.
func TestEveryTool(t *testing.T) {
	h := newTestHost(t, nil)
	alice := newConnector(t, "alice", h)
	bob := newConnector(t, "bob", h)
	called := map[string]bool{}
	call := func(c *agentConn, tool string, args map[string]any) map[string]any {
		t.Helper()
		called[tool] = true
		return c.call(tool, args)
	}
	needSync := func(tool string, res map[string]any, roomID string) {
		t.Helper()
		if get(res, "sync.room_id") != roomID || get(res, "sync.head_hash") == "" {
			t.Errorf("%s: no sync for %s: %v", tool, roomID, res["sync"])
		}
	}

	id := call(alice, "identity_current", nil)
	if id["agent_id"] != alice.agentID || id["public_key"] == "" || get(id, "hosts.0.host") != h.url {
		t.Errorf("identity_current: %v", id)
	}
	if hl := call(alice, "hosts_list", nil); get(hl, "hosts.0.allowed") != true {
		t.Errorf("hosts_list: %v", hl)
	}

	called["room_create"] = true
	roomID := createRoom(t, alice, h, "public")
	if rs := call(bob, "rooms_search", map[string]any{"host": h.url, "limit": 10}); rs["rooms"] == nil {
		t.Errorf("rooms_search: %v", rs)
	}
	if rl := call(alice, "rooms_list", map[string]any{"membership": "all"}); get(rl, "rooms.0.room_id") != roomID {
		t.Errorf("rooms_list: %v", rl)
	}
	needSync("room_open", call(bob, "room_open", map[string]any{"host": h.url, "room_id": roomID}), roomID)
	if j := call(bob, "room_join", map[string]any{"room_id": roomID, "role": "speaker"}); j["status"] != "joined" {
		t.Errorf("room_join: %v", j)
	}
	st := call(alice, "room_state", map[string]any{"room_id": roomID, "refresh": true, "include_types": true})
	needSync("room_state", st, roomID)
	if get(st, "room.creator") != alice.agentID {
		t.Errorf("room_state: %v", st)
	}
	ml := call(alice, "room_members_list", map[string]any{"room_id": roomID, "status": "all"})
	needSync("room_members_list", ml, roomID)
	if ms, _ := ml["members"].([]any); len(ms) != 2 {
		t.Errorf("room_members_list: %v", ml)
	}
	mg := call(alice, "room_member_get", map[string]any{"room_id": roomID, "agent_id": bob.agentID, "include_recent_activity": true})
	if get(mg, "member.role") != "speaker" || get(mg, "member.status") != "active" {
		t.Errorf("room_member_get: %v", mg)
	}

	ss := call(alice, "agent_status_set", map[string]any{"room_id": roomID, "state": "drafting", "summary": "writing the proposal", "claim_id": "proposal"})
	if get(ss, "status.state") != "drafting" {
		t.Errorf("agent_status_set: %v", ss)
	}
	if sl := call(bob, "agent_status_list", map[string]any{"room_id": roomID}); get(sl, "statuses.0.agent_id") != alice.agentID {
		t.Errorf("agent_status_list: %v", sl)
	}
	if sg := call(bob, "agent_status_get", map[string]any{"room_id": roomID, "agent_id": alice.agentID}); get(sg, "status.claim_id") != "proposal" {
		t.Errorf("agent_status_get: %v", sg)
	}

	sent := call(alice, "room_send_message", map[string]any{"room_id": roomID, "content": "Proposal: Ed25519.", "mentions": []string{bob.agentID}})
	needSync("room_send_message", sent, roomID)
	item := waitInbox(t, bob, roomID, "room.mention")
	called["inbox_next"] = true
	tl := call(bob, "room_timeline", map[string]any{"room_id": roomID, "limit": 50})
	needSync("room_timeline", tl, roomID)
	last := num(get(tl, "sync.synced_seq"))
	if mr := call(bob, "room_mark_read", map[string]any{"room_id": roomID, "through_seq": last}); num(mr["read_seq"]) != last || num(mr["unread_count"]) != 0 {
		t.Errorf("room_mark_read: %v", mr)
	}
	// Everything pending for bob (the mention, and whatever else the
	// message produced) is acknowledged; nothing stays pending.
	ids := []string{item["id"].(string)}
	for _, it := range bob.call("inbox_next", map[string]any{"limit": 100})["items"].([]any) {
		if id := it.(map[string]any)["id"].(string); id != ids[0] {
			ids = append(ids, id)
		}
	}
	if ack := call(bob, "inbox_ack", map[string]any{"ids": ids, "action": "dismissed"}); num(ack["pending_count"]) != 0 || len(ack["acknowledged"].([]any)) != len(ids) {
		t.Errorf("inbox_ack: %v", ack)
	}
	se := call(bob, "room_submit_event", map[string]any{"room_id": roomID, "type": "message.create", "payload": map[string]any{"content_type": "text/plain", "content": "Agreed."}})
	if se["status"] != "sent" {
		t.Errorf("room_submit_event: %v", se)
	}

	// A held draft, then dropped; another resolved by staying silent.
	for _, resolve := range []string{"draft_drop", "draft_commit"} {
		held := call(alice, "room_send_message", map[string]any{"room_id": roomID, "content": "stale", "base_seq": num(get(st, "sync.head_seq")), "base_hash": get(st, "sync.head_hash")})
		if held["status"] != "held" {
			t.Fatalf("stale write: %v", held)
		}
		draftID := get(held, "draft.id").(string)
		if dl := call(alice, "drafts_list", nil); len(dl["drafts"].([]any)) != 1 {
			t.Errorf("drafts_list: %v", dl)
		}
		needSync("draft_get", call(alice, "draft_get", map[string]any{"draft_id": draftID}), roomID)
		if resolve == "draft_drop" {
			if d := call(alice, "draft_drop", map[string]any{"draft_id": draftID}); d["status"] != "dropped" {
				t.Errorf("draft_drop: %v", d)
			}
		} else if d := call(alice, "draft_commit", map[string]any{"draft_id": draftID, "action": "stay_silent"}); d["status"] != "dropped" {
			t.Errorf("draft_commit stay_silent: %v", d)
		}
	}

	// Restricted room: join request, review, completion.
	rID := createRoom(t, alice, h, "restricted")
	jr := call(bob, "room_join", map[string]any{"host": h.url, "room_id": rID, "role": "speaker", "reason": "reviewer"})
	if jr["status"] != "approval_required" {
		t.Fatalf("restricted join: %v", jr)
	}
	jl := call(alice, "join_requests_list", map[string]any{"room_id": rID})
	reqID, _ := get(jl, "join_requests.0.request.id").(string)
	if reqID == "" {
		t.Fatalf("join_requests_list: %v", jl)
	}
	rv := call(alice, "join_request_review", map[string]any{"room_id": rID, "request_id": reqID, "decision": "approve", "role": "speaker"})
	needSync("join_request_review", rv, rID)
	waitInbox(t, bob, rID, "room.join.approved")
	if j := bob.call("room_join", map[string]any{"host": h.url, "room_id": rID, "role": "speaker", "request_id": reqID}); j["status"] != "joined" {
		t.Errorf("join completion: %v", j)
	}

	lv := call(bob, "room_leave", map[string]any{"room_id": roomID, "reason": "done"})
	needSync("room_leave", lv, roomID)

	// profile_update needs a profile service; none is configured, so the
	// refusal must be an isError result with a code, not a JSON-RPC error.
	called["profile_update"] = true
	if code, _ := alice.callErr("profile_update", map[string]any{"profile_service": "https://profiles.example", "profile": map[string]any{"name": "Alice"}}); code == "" {
		t.Error("profile_update refusal without code")
	}

	for _, d := range connector.Tools() {
		if name := strings.TrimPrefix(d.Name, connector.ToolPrefix); !called[name] {
			t.Errorf("tool %s not exercised", name)
		}
	}
}
