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
	"github.com/agentprotocols/go-sdk/sse"
)

// connected is an HTTP transport that reports each live stream the host
// accepted (its 200 headers: the host subscribes before it sends them).
type connected struct {
	base http.RoundTripper
	ch   chan struct{}
}

func (c *connected) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusOK && strings.HasSuffix(r.URL.Path, "/events/live") {
		select {
		case c.ch <- struct{}{}:
		default:
		}
	}
	return resp, err
}

// liveOptions follows room as c's agent (sse.Follow, the SDK's one live
// client) from c's verified replica on, over w's transport.
func liveOptions(w *world, c *adp.Client, room string, conn *connected) *sse.Options {
	var start adp.RecordRef
	if v := c.Verified(room); v != nil {
		start = adp.RecordRef{Seq: v.Latest().Seq, Hash: v.Latest().Hash}
	}
	o := &sse.Options{Client: c, RoomID: room, Start: start,
		Backoff: sse.Backoff{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond}}
	if conn != nil {
		o.HTTPClient = &http.Client{Transport: conn}
	}
	return o
}

// subscribe follows c's live stream, waits until the host accepted it and
// forwards its items; done gets the error that ended it.
func subscribe(t *testing.T, w *world, c *adp.Client, room string) (<-chan sse.Item, <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	conn := &connected{base: w.hc.Transport, ch: make(chan struct{}, 1)}
	if conn.base == nil {
		conn.base = http.DefaultTransport
	}
	items, done := make(chan sse.Item, 64), make(chan error, 1)
	finished := make(chan struct{})
	t.Cleanup(func() { cancel(); <-finished })
	go func() {
		defer close(finished)
		defer close(items)
		for it, err := range sse.Follow(ctx, liveOptions(w, c, room, conn)) {
			if err != nil {
				done <- err
				return
			}
			select {
			case items <- it:
			case <-ctx.Done():
			}
		}
	}()
	select {
	case <-conn.ch:
	case err := <-done:
		t.Fatalf("subscription ended: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the host accepted no live stream")
	}
	return items, done
}

// liveError subscribes once and returns the first error: the refusal that
// ends the subscription, or the first reconnect's cause.
func liveError(t *testing.T, w *world, c *adp.Client, room string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for it, err := range sse.Follow(ctx, liveOptions(w, c, room, nil)) {
		if err != nil {
			return err
		}
		if it.Kind == sse.KindError {
			return it.Err
		}
	}
	return nil
}

// next returns the next record or notice, skipping recovered errors.
func next(t *testing.T, items <-chan sse.Item) sse.Item {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case it, ok := <-items:
			if !ok {
				t.Fatal("stream ended")
			}
			if it.Kind == sse.KindError {
				continue
			}
			return it
		case <-timeout:
			t.Fatal("no live item")
		}
	}
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

	mustv(bob.Sync(ctx, room))
	aItems, _ := subscribe(t, w, alice, room)
	bItems, bDone := subscribe(t, w, bob, room)

	m := mustv(alice.SendMessage(ctx, room, text("live"), bob.AgentID()))
	for _, items := range []<-chan sse.Item{aItems, bItems} {
		it := next(t, items)
		if it.Record == nil || it.Record.Hash != m.Hash {
			t.Fatalf("first item is not the new record (no replay): %+v", it)
		}
	}
	mustv(alice.PutAgentStatus(ctx, room, adp.AgentStatusInput{State: "waiting", SeenSeq: m.Seq}))
	for _, items := range []<-chan sse.Item{aItems, bItems} {
		if it := next(t, items); it.AgentStatus == nil || it.AgentStatus.AgentID != alice.AgentID() || it.AgentStatus.SeenSeq != m.Seq {
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
	// Leaving ends the stream; the reconnect is refused.
	mustv(bob.Leave(ctx, room, adp.Notice{}))
	select {
	case err := <-bDone:
		wantCode(t, err, adp.ErrMembershipRequired, 403)
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
	subscribe(t, w, alice, room)
	subscribe(t, w, alice, room)
	wantCode(t, liveError(t, w, alice, room), adp.ErrRateLimited, 429)
	for _, name := range []string{"p1", "p2"} {
		mustv(w.client(name).RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleSpeaker}))
	}
	_, err := w.client("p3").RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleSpeaker})
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
