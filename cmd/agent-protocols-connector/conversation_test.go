package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentprotocols/go-sdk/connector"
)

// TestConversation: two MCP clients,
// each driving its own connector, hold a conversation in an adphost room
// through tools only — create, join, message, mention → inbox, reply,
// held draft, close.
func TestConversation(t *testing.T) {
	h := newTestHost(t, nil)
	alice := newConnector(t, "alice", h)
	bob := newConnector(t, "bob", h)

	// Create (alice) and join (bob).
	roomID := createRoom(t, alice, h, "public")
	open := bob.call("room_open", map[string]any{"host": h.url, "room_id": roomID})
	if get(open, "sync.room_id") != roomID || get(open, "room.topic") != "Which signature scheme?" {
		t.Fatalf("room_open: %v", open)
	}
	join := bob.call("room_join", map[string]any{"room_id": roomID, "role": "speaker", "perspective": "security reviewer"})
	if join["status"] != "joined" {
		t.Fatalf("room_join: %v", join)
	}

	// Message with a mention: bob's inbox wakes with room.mention.
	alice.call("room_state", map[string]any{"room_id": roomID, "refresh": true})
	sent := alice.call("room_send_message", map[string]any{
		"room_id": roomID, "content": "Bob, can you review the signature section?", "mentions": []string{bob.agentID},
	})
	if sent["status"] != "sent" || get(sent, "item.type") != "message.create" {
		t.Fatalf("send: %v", sent)
	}
	item := waitInbox(t, bob, roomID, "room.mention")
	if item["actor"] != alice.agentID || item["requires_response"] != true {
		t.Fatalf("mention item: %v", item)
	}

	// Bob reads before deciding, replies, and closes his loop.
	tl := bob.call("room_timeline", map[string]any{"room_id": roomID, "unread_only": true, "mark_read": true, "refresh": true})
	if items, _ := tl["items"].([]any); len(items) == 0 {
		t.Fatalf("timeline: %v", tl)
	}
	reply := bob.call("room_send_message", map[string]any{"room_id": roomID, "content": "Ed25519 is fine; see §4.", "references": []string{item["event_id"].(string)}})
	if reply["status"] != "sent" {
		t.Fatalf("reply: %v", reply)
	}
	ack := bob.call("inbox_ack", map[string]any{"ids": []string{item["id"].(string)}, "action": "handled"})
	if acked, _ := ack["acknowledged"].([]any); len(acked) != 1 {
		t.Fatalf("ack: %v", ack)
	}

	// Alice writes against the head she last saw (before bob's reply):
	// the room moved, so the write is held with the changes.
	held := alice.call("room_send_message", map[string]any{"room_id": roomID, "content": "Any objections?"})
	if held["status"] != "held" {
		t.Fatalf("stale write: want held, got %v", held)
	}
	draftID, _ := get(held, "draft.id").(string)
	if draftID == "" || get(held, "draft.reason") != "room_head_mismatch" {
		t.Fatalf("held draft: %v", held)
	}
	if changes, _ := held["changes"].([]any); len(changes) == 0 {
		t.Fatalf("held without changes: %v", held)
	}
	if d := alice.call("drafts_list", map[string]any{"room_id": roomID}); len(d["drafts"].([]any)) != 1 {
		t.Fatalf("drafts_list: %v", d)
	}
	dg := alice.call("draft_get", map[string]any{"draft_id": draftID})
	if get(dg, "draft.id") != draftID {
		t.Fatalf("draft_get: %v", dg)
	}
	// Having seen the reply, alice revises.
	rev := alice.call("draft_commit", map[string]any{"draft_id": draftID, "action": "revise", "content": "Thanks Bob — settled on Ed25519."})
	if rev["status"] != "sent" {
		t.Fatalf("draft_commit revise: %v", rev)
	}

	// Close: the creator closes the room through submit_event.
	closed := alice.call("room_submit_event", map[string]any{"room_id": roomID, "type": "room.close", "payload": map[string]any{"reason": "decided"}})
	if closed["status"] != "sent" {
		t.Fatalf("room.close: %v", closed)
	}
	st := bob.call("room_state", map[string]any{"room_id": roomID, "refresh": true})
	if get(st, "room.status") != "closed" && get(st, "room.status") != "ended" {
		t.Fatalf("after close: status %v", get(st, "room.status"))
	}
}

// TestInboxSubscription: a client subscribed to the inbox resource gets
// notifications/resources/updated (URI only) when a mention arrives, and
// re-reads the resource to find the item.
func TestInboxSubscription(t *testing.T) {
	h := newTestHost(t, nil)
	alice := newConnector(t, "alice", h)
	bob := newConnector(t, "bob", h)
	roomID := createRoom(t, alice, h, "public")
	bob.call("room_open", map[string]any{"host": h.url, "room_id": roomID})
	bob.call("room_join", map[string]any{"room_id": roomID, "role": "speaker"})
	ctx := context.Background()
	if err := bob.client.Subscribe(ctx, &mcp.SubscribeParams{URI: connector.URIInboxPending}); err != nil {
		t.Fatal(err)
	}
	drain(bob.updates)

	alice.call("room_state", map[string]any{"room_id": roomID, "refresh": true})
	alice.call("room_send_message", map[string]any{"room_id": roomID, "content": "ping", "mentions": []string{bob.agentID}})
	deadline := time.After(20 * time.Second)
	for {
		select {
		case uri := <-bob.updates:
			if uri != connector.URIInboxPending {
				continue
			}
			rr, err := bob.client.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
			if err != nil {
				t.Fatal(err)
			}
			if len(rr.Contents) == 1 && containsAll(rr.Contents[0].Text, "room.mention", roomID) {
				return
			}
		case <-deadline:
			t.Fatal("no resources/updated for the inbox after a mention")
		}
	}
}

func drain(ch chan string) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

func containsAll(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}
