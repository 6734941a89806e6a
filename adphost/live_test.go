package adphost_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/identity"
)

// subscribe starts c's live stream and forwards its items.
func subscribe(t *testing.T, c *adp.Client, room string) (<-chan adp.LiveItem, <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	seq, err := c.Live(ctx, room)
	if err != nil {
		t.Fatal(err)
	}
	items, done := make(chan adp.LiveItem, 64), make(chan error, 1)
	go func() {
		defer close(items)
		for it, err := range seq {
			if err != nil {
				done <- err
				return
			}
			items <- it
		}
		done <- nil
	}()
	return items, done
}

func next(t *testing.T, items <-chan adp.LiveItem) adp.LiveItem {
	t.Helper()
	select {
	case it, ok := <-items:
		if !ok {
			t.Fatal("stream ended")
		}
		return it
	case <-time.After(10 * time.Second):
		t.Fatal("no live item")
	}
	return adp.LiveItem{}
}

// TestLive: §17 — members subscribe with a JWT; accepted records arrive
// as verified room.event items, statuses as room.agent_status, new join
// requests as room.join_request (to the creator and moderators only); no
// history is replayed; leaving ends the stream.
func TestLive(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, &adphost.Options{RateLimits: adphost.Unlimited()})
	alice, bob, room := setup(t, w, adp.VisibilityRestricted)
	mustv(alice.SendMessage(ctx, room, text("before anyone subscribed")))

	aItems, _ := subscribe(t, alice, room)
	bItems, bDone := subscribe(t, bob, room)
	// Bootstrap order (§17.3): subscribed first, then history.
	mustv(bob.Sync(ctx, room))

	m := mustv(alice.SendMessage(ctx, room, text("live"), bob.AgentID()))
	for _, items := range []<-chan adp.LiveItem{aItems, bItems} {
		it := next(t, items)
		if it.Record == nil || it.Record.Hash != m.Hash {
			t.Fatalf("first item is not the new record (no replay): %+v", it)
		}
	}
	mustv(alice.PutAgentStatus(ctx, room, adp.AgentStatusInput{State: "waiting", SeenSeq: m.Seq}))
	for _, items := range []<-chan adp.LiveItem{aItems, bItems} {
		if it := next(t, items); it.Status == nil || it.Status.AgentID != alice.AgentID() || it.Status.SeenSeq != m.Seq {
			t.Fatalf("status item: %+v", it)
		}
	}
	jr := mustv(w.client("carol").RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleSpeaker}))
	if it := next(t, aItems); it.JoinRequest == nil || it.JoinRequest.RequestID != jr.Request.ID {
		t.Fatalf("join request item: %+v", it)
	}
	// Bob (a speaker) got no join-request item: his next item is the
	// next record.
	r2 := mustv(bob.SendMessage(ctx, room, text("reply")))
	if it := next(t, bItems); it.Record == nil || it.Record.Hash != r2.Hash {
		t.Fatalf("bob's next item: %+v", it)
	}
	if it := next(t, aItems); it.Record == nil || it.Record.Hash != r2.Hash {
		t.Fatalf("alice's next item: %+v", it)
	}
	// Leaving ends the stream.
	mustv(bob.Leave(ctx, room, adp.Notice{}))
	select {
	case err := <-bDone:
		if err != nil {
			t.Fatalf("stream ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream outlived the membership")
	}
	// Anonymous subscriptions are refused.
	resp := mustv(w.hc.Get(w.url + "/v1/rooms/" + room + "/events/live"))
	wantCode(t, identity.ReadError(resp), adp.ErrInvalidToken, 401)
	resp.Body.Close()
}

// TestLiveHeaders: the stream's Content-Type, Cache-Control and heartbeat
// comments.
func TestLiveHeaders(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := newWorld(t, &adphost.Options{Heartbeat: 5 * time.Millisecond})
	alice, _, room := setup(t, w, adp.VisibilityPublic)
	tok, err := identity.MintRequestToken(ctx, key("alice"), alice.Origin(), &identity.MintOptions{Now: w.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, w.url+"/v1/rooms/"+room+"/events/live", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp := mustv(w.hc.Do(req))
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" || resp.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("headers: %v", resp.Header)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, ": heartbeat") {
		t.Fatalf("first line %q, %v", line, err)
	}
}

// TestLiveBounds: one agent holds at most MaxStreams streams on a room,
// and a room at most MaxPendingJoinRequests pending requests.
func TestLiveBounds(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, &adphost.Options{MaxStreams: 2, MaxPendingJoinRequests: 2, RateLimits: adphost.Unlimited()})
	alice, _, room := setup(t, w, adp.VisibilityRestricted)
	subscribe(t, alice, room)
	subscribe(t, alice, room)
	_, err := alice.Live(ctx, room)
	wantCode(t, err, adp.ErrRateLimited, 429)
	for _, name := range []string{"p1", "p2"} {
		mustv(w.client(name).RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleSpeaker}))
	}
	_, err = w.client("p3").RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleSpeaker})
	wantCode(t, err, adp.ErrRateLimited, 429)
}

// TestLiveItemsAreNotRecords: §17.4, §17.5 — room.agent_status and
// room.join_request items carry no seq, pre_hash, hash or envelope.
func TestLiveItemsAreNotRecords(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := newWorld(t, nil)
	alice, bob, room := setup(t, w, adp.VisibilityRestricted)
	tok := mustv(identity.MintRequestToken(ctx, key("alice"), alice.Origin(), &identity.MintOptions{Now: w.clock.Now}))
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, w.url+"/v1/rooms/"+room+"/events/live", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp := mustv(w.hc.Do(req))
	defer resp.Body.Close()
	mustv(bob.PutAgentStatus(ctx, room, adp.AgentStatusInput{State: "idle", SeenSeq: 1}))
	mustv(w.client("carol").RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleSpeaker}))
	br := bufio.NewReader(resp.Body)
	seen := map[string]bool{}
	var typ string
	for len(seen) < 2 {
		line := strings.TrimRight(mustv(br.ReadString('\n')), "\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			typ = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var m map[string]jsontext.Value
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &m); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"seq", "pre_hash", "hash", "envelope"} {
				if _, ok := m[k]; ok {
					t.Fatalf("%s item carries %q", typ, k)
				}
			}
			seen[typ] = true
		}
	}
	if !seen[adp.SSEAgentStatus] || !seen[adp.SSEJoinRequest] {
		t.Fatalf("items seen: %v", seen)
	}
}
