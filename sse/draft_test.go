package sse_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/adphosttest"
	"github.com/agentprotocols/go-sdk/sse"
)

// TestFollowLaterDraft: Follow delivers a 2026-09-24 room (§16.2: the
// room.event data is the draft's record, with accepted_at) from a host of
// that draft, into the client's replica of that draft: the backfill and
// the live records, another agent's messages among them, each verified
// once. An Options.Draft that disagrees with the replica's is refused.
func TestFollowLaterDraft(t *testing.T) {
	_, srv := adphosttest.NewServer(t, &adphost.Options{Draft: adp.Draft20260924, RateLimits: adphost.Unlimited(), Heartbeat: -1})
	ctx := context.Background()
	client := func(name string) *adp.Client {
		c, err := adp.NewClient(srv.URL, &adp.ClientOptions{Signer: adptestKey(name), AllowLoopbackHTTP: true})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	creator, bob, alice := client("creator"), client("bob"), client("alice")
	now := time.Now()
	rec, err := creator.CreateRoom(ctx, adp.RoomCreate{Topic: "later", Visibility: adp.VisibilityPublic,
		StartTime: now.Add(-time.Minute).UnixMilli(), EndTime: now.Add(time.Hour).UnixMilli(),
		Policy: &adp.Policy{OpenRoles: []adp.Role{adp.RoleSpeaker, adp.RoleObserver}}})
	if err != nil {
		t.Fatal(err)
	}
	room := rec.RoomID
	for _, c := range []*adp.Client{bob, alice} {
		if _, err := c.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker}); err != nil {
			t.Fatal(err)
		}
	}
	say := func(n int) {
		for range n {
			if _, err := bob.SendMessage(ctx, room, adp.Message{ContentType: "text/plain", Content: adp.TextContent("hi")}); err != nil {
				t.Fatal(err)
			}
		}
	}
	say(3)
	rep, err := alice.Replica(room)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Draft() != adp.Draft20260924 {
		t.Fatalf("the client's replica follows the %s draft", rep.Draft())
	}
	bad := &sse.Options{Client: alice, Replica: rep, Draft: adp.Draft20260704}
	for _, err := range sse.Follow(ctx, bad) {
		if err == nil || !strings.Contains(err.Error(), "2026-07-04") || !strings.Contains(err.Error(), "2026-09-24") {
			t.Fatalf("Options.Draft of another draft than the replica's: %v", err)
		}
		break
	}

	start := rep.Latest().Seq // alice's join synced the replica
	c := follow(t, &sse.Options{Client: alice, Replica: rep, Backoff: sse.Backoff{Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond}}, nil)
	c.waitSeq(t, 6) // create, two joins, three messages
	say(3)
	c.waitSeq(t, 9)
	c.stop(t)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.final != nil && c.final != context.Canceled || len(c.errs) > 0 {
		t.Fatalf("follow ended with %v, errors %v", c.final, c.errs)
	}
	for i, rec := range c.records {
		if rec.Seq != start+int64(i+1) || rec.Draft.OrDefault() != adp.Draft20260924 || !strings.Contains(string(rec.AppendJSON(nil)), `"accepted_at"`) {
			t.Fatalf("record %d: seq %d of the %s draft: %s", i, rec.Seq, rec.Draft.OrDefault(), rec.AppendJSON(nil))
		}
	}
	if n := len(c.records); int64(n) != 9-start || c.records[n-1].Envelope.Actor() != bob.AgentID() {
		t.Fatalf("%d records delivered", n)
	}
	if rep.Latest().Seq != 9 {
		t.Fatalf("the replica holds seq %d", rep.Latest().Seq)
	}
}
