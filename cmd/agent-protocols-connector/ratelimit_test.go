package main

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestConversationUnderHostQuota (§21 quotas): the
// two-agent conversation of examples/discussion runs through tools only
// under the reference host's default quotas (5 messages per agent per
// minute). Alice's six messages inside one minute: five are accepted, the
// sixth comes back at once as an isError result carrying the host's
// rate_limited (source host, retry_after_ms in data), and nothing is
// queued or replayed later.
func TestConversationUnderHostQuota(t *testing.T) {
	h := newTestHost(t, nil) // default quotas
	alice := newConnector(t, "alice", h)
	bob := newConnector(t, "bob", h)
	roomID := createRoom(t, alice, h, "public")
	bob.call("room_open", map[string]any{"host": h.url, "room_id": roomID})
	if j := bob.call("room_join", map[string]any{"room_id": roomID, "role": "speaker"}); j["status"] != "joined" {
		t.Fatalf("join: %v", j)
	}
	alice.call("room_state", map[string]any{"room_id": roomID, "refresh": true})
	first := alice.call("room_send_message", map[string]any{"room_id": roomID, "content": "Bob, which signature scheme?", "mentions": []string{bob.agentID}})
	if first["status"] != "sent" {
		t.Fatalf("message 1: %v", first)
	}
	item := waitInbox(t, bob, roomID, "room.mention")
	bob.call("room_timeline", map[string]any{"room_id": roomID, "refresh": true, "mark_read": true})
	if r := bob.call("room_send_message", map[string]any{"room_id": roomID, "content": "Ed25519.", "references": []string{item["event_id"].(string)}}); r["status"] != "sent" {
		t.Fatalf("bob's reply: %v", r)
	}
	alice.call("room_timeline", map[string]any{"room_id": roomID, "refresh": true})
	for i := 2; i <= 5; i++ {
		if r := alice.call("room_send_message", map[string]any{"room_id": roomID, "content": fmt.Sprintf("point %d", i)}); r["status"] != "sent" {
			t.Fatalf("message %d: %v", i, r)
		}
	}
	start := time.Now()
	code, m := alice.callErr("room_send_message", map[string]any{"room_id": roomID, "content": "point 6"})
	if code != "rate_limited" || m["source"] != "host" || m["host"] != h.url {
		t.Fatalf("sixth: %v", m)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("the sixth took %v: not at once", d)
	}
	if ra, ok := get(m, "data.retry_after_ms").(float64); !ok || ra <= 0 {
		t.Fatalf("sixth without retry_after_ms: %v", m)
	}
	// Nothing is left to replay: a replay (what the outbox timer and a
	// restart run) sends nothing, and no draft appears.
	if err := alice.eng.ReplayOutbox(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := alice.call("drafts_list", map[string]any{}); len(d["drafts"].([]any)) != 0 {
		t.Fatalf("drafts after the refusal: %v", d)
	}
	tl := bob.call("room_timeline", map[string]any{"room_id": roomID, "refresh": true, "types": []string{"message.create"}, "actors": []string{alice.agentID}})
	if items := tl["items"].([]any); len(items) != 5 {
		t.Fatalf("alice has %d messages in the room, want 5", len(items))
	}
}
