package adphost_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/identity"
)

// dialRaw opens a TCP connection to the world's server.
func (w *world) dialRaw() net.Conn {
	w.t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(w.url, "http://"))
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { c.Close() })
	return c
}

// openStream subscribes name to room's live stream and returns the
// answer (its body open until ctx ends).
func (w *world) openStream(ctx context.Context, name, room string) *http.Response {
	w.t.Helper()
	tok := mustv(identity.MintRequestToken(ctx, key(name), w.host.Origin(), &identity.MintOptions{Now: w.clock.Now}))
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, w.url+"/v1/rooms/"+room+"/events/live", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp := mustv(w.hc.Do(req))
	w.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestSlowBodyCutOff: every wait on a client is bounded. A client that sends the headers of a write
// and then drips (here: stops) its body is answered and cut off at
// Options.BodyTimeout instead of holding the handler.
func TestSlowBodyCutOff(t *testing.T) {
	w := newWorld(t, &adphost.Options{BodyTimeout: 100 * time.Millisecond})
	c := w.dialRaw()
	fmt.Fprintf(c, "POST /v1/rooms HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
	start := time.Now()
	c.SetReadDeadline(start.Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.Contains(line, " 400 ") {
		t.Fatalf("after %v: %q, %v", time.Since(start), line, err)
	}
}

// TestStalledReaderDropped: every wait on a client is bounded. A
// live-stream reader that stops
// reading is dropped at Options.StreamWriteTimeout, which frees its slot
// (here the host's only one: MaxLiveStreams 1) for the next subscriber.
func TestStalledReaderDropped(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	w := newWorld(t, &adphost.Options{RateLimits: adphost.Unlimited(), StreamWriteTimeout: 100 * time.Millisecond,
		MaxLiveStreams: 1, SSEBuffer: 4})
	alice, _, room := setup(t, w, adp.VisibilityPublic)
	c := w.dialRaw()
	c.(*net.TCPConn).SetReadBuffer(4096)
	tok := mustv(identity.MintRequestToken(ctx, key("alice"), w.host.Origin(), &identity.MintOptions{Now: w.clock.Now}))
	fmt.Fprintf(c, "GET /v1/rooms/%s/events/live HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", room, tok)
	// The status line says the subscription holds its slot (the host
	// subscribes before it answers, §17.3); the stream itself is never read.
	if line, err := bufio.NewReaderSize(c, 16).ReadString('\n'); err != nil || !strings.HasPrefix(line, "HTTP/1.1 200") {
		t.Fatalf("the stalled reader's stream: %q %v", line, err)
	}
	if resp := w.openStream(ctx, "bob", room); resp.StatusCode != 429 {
		t.Fatalf("a second stream past MaxLiveStreams: %d", resp.StatusCode)
	}
	big := strings.Repeat("s", 60000)
	for i := range 100 { // ~6 MB: more than the socket buffers hold
		mustv(alice.SendMessage(ctx, room, text(fmt.Sprint(i, big))))
	}
	if err := adphost.WaitLiveStreams(ctx, w.host, 0); err != nil {
		t.Fatalf("the stalled reader still holds the slot: %v", err)
	}
	sctx, scancel := context.WithCancel(ctx)
	defer scancel()
	if resp := w.openStream(sctx, "bob", room); resp.StatusCode != 200 {
		t.Fatalf("the freed slot: HTTP %d", resp.StatusCode)
	}
}

// TestAgentStreamCap: one agent holds at most MaxAgentStreams live
// streams on the whole host, across rooms.
func TestAgentStreamCap(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := newWorld(t, &adphost.Options{MaxAgentStreams: 2})
	alice := w.client("alice")
	a := mustv(alice.CreateRoom(ctx, roomSpec(t, adp.VisibilityPublic, "a"))).RoomID
	b := mustv(alice.CreateRoom(ctx, roomSpec(t, adp.VisibilityPublic, "b"))).RoomID
	for _, room := range []string{a, b} {
		if resp := w.openStream(ctx, "alice", room); resp.StatusCode != 200 {
			t.Fatalf("stream on %s: %d", room, resp.StatusCode)
		}
	}
	resp := w.openStream(ctx, "alice", b)
	wantCode(t, identity.ReadError(resp), adp.ErrRateLimited, 429)
}

// TestLaggingReaderDropped: a live reader that falls more than SSEBuffer
// items behind is dropped (its stream ends; it resumes from the history)
// rather than queued for without bound, even with no write deadline.
func TestLaggingReaderDropped(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	w := newWorld(t, &adphost.Options{RateLimits: adphost.Unlimited(), StreamWriteTimeout: -1, SSEBuffer: 2})
	alice, _, room := setup(t, w, adp.VisibilityPublic)
	resp := w.openStream(ctx, "alice", room)
	big := strings.Repeat("l", 60000)
	for i := range 100 { // ~6 MB, not read meanwhile
		mustv(alice.SendMessage(ctx, room, text(fmt.Sprint(i, big))))
	}
	events := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "event: room.event") {
			events++
		}
	}
	if ctx.Err() != nil || events >= 100 {
		t.Fatalf("the lagging reader got %d of 100 records (%v): it was not dropped", events, ctx.Err())
	}
}
