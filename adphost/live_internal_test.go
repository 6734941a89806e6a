package adphost

import (
	"bufio"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/identity"
)

// TestStreamShares: the admission rules of streamCounts once the total is
// reached. A speaking stream takes an observer's place, anywhere; a
// stream takes the place of one of its kind only in a room holding two
// more than its own, the richest room's, its busiest agent's, newest
// first; an observer never takes a speaker's place; and streams spread
// one to a room leave nothing to take. A slot taken for another is given
// back once.
func TestStreamShares(t *testing.T) {
	agent := func(n byte) identity.AgentID {
		k, err := identity.NewKeyFromSeed(append(make([]byte, 31), n))
		if err != nil {
			t.Fatal(err)
		}
		return k.AgentID()
	}
	slot := func(a byte, room string, speaking bool) *streamSlot {
		return &streamSlot{agent: agent(a), room: room, speaking: speaking, sub: &subscriber{done: make(chan struct{})}}
	}
	ended := func(s *streamSlot) bool {
		select {
		case <-s.sub.done:
			return true
		default:
			return false
		}
	}
	c := newStreamCounts(4, 16, 4)
	a1, a2, a3, b1 := slot(1, "a", false), slot(1, "a", false), slot(3, "a", false), slot(2, "b", true)
	for _, s := range []*streamSlot{a1, a2, a3, b1} {
		if err := c.acquire(s); err != nil {
			t.Fatal(err)
		}
	}
	// An observer of c: room a holds 3 ≥ 0+2, and agent 1 holds more there.
	if c.acquire(slot(4, "c", false)) != nil || !ended(a2) || ended(a1) || ended(a3) {
		t.Fatal("an observer did not take the newest stream of the richest room's busiest agent")
	}
	c.release(a2) // its handler ends: nothing more is given back
	if len(c.slots) != 4 || c.rooms["a"] != 2 || c.agents[agent(1)] != 1 {
		t.Fatalf("counts after a taken slot's release: %d slots, room a %d", len(c.slots), c.rooms["a"])
	}
	// Rooms a 2, b 1, c 1: an observer of d takes from a (2 ≥ 0+2), the
	// newer of its two agents' one stream each.
	d1 := slot(5, "d", false)
	if c.acquire(d1) != nil || !ended(a3) || ended(a1) {
		t.Fatal("an observer did not take the newer stream of room a")
	}
	// Rooms a, b, c, d hold one each: an observer of e takes nothing.
	if err := c.acquire(slot(6, "e", false)); err == nil {
		t.Fatal("an observer was admitted with no room two streams ahead")
	}
	// A speaker of e takes an observer's stream (the newest) anyway.
	if c.acquire(slot(6, "e", true)) != nil || !ended(d1) || ended(b1) {
		t.Fatal("a speaker did not take an observer's stream")
	}
	c2 := newStreamCounts(4, 16, 3)
	for i, room := range []string{"x", "y", "z"} {
		if err := c2.acquire(slot(byte(10+i), room, true)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c2.acquire(slot(20, "w", true)); err == nil {
		t.Fatal("a speaker took a stream from a room holding one")
	}
	if err := c2.acquire(slot(20, "w", false)); err == nil {
		t.Fatal("an observer took a speaker's stream")
	}
}

// TestLiveItemRenderedOnce: a record published to many subscribers is
// rendered as an SSE event once, and every subscriber receives those
// bytes.
func TestLiveItemRenderedOnce(t *testing.T) {
	ctx := t.Context()
	srv := httptest.NewUnstartedServer(nil)
	origin, err := identity.ParseOrigin("http://"+srv.Listener.Addr().String(), &identity.OriginOptions{AllowLoopbackHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(ctx, &Options{Origin: origin, RateLimits: Unlimited(), Heartbeat: -1})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = h
	srv.Start()
	defer srv.Close()
	defer h.Close()
	client := func(name string) *adp.Client {
		seed := sha256.Sum256([]byte("rendered once " + name))
		k, _ := identity.NewKeyFromSeed(seed[:])
		c, err := adp.NewClient(srv.URL, &adp.ClientOptions{Signer: k, HTTPClient: srv.Client(), AllowLoopbackHTTP: true})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	creator := client("creator")
	now := time.Now()
	room := mustOK(creator.CreateRoom(ctx, adp.RoomCreate{Topic: "fan-out", Visibility: adp.VisibilityPublic,
		StartTime: now.Add(-time.Minute).UnixMilli(), EndTime: now.Add(time.Hour).UnixMilli()})).RoomID
	const subscribers, records = 40, 20
	var streams []*bufio.Reader
	for i := range subscribers / 4 {
		c := client(fmt.Sprint("observer", i))
		mustOK(c.Join(ctx, room, adp.Join{Role: adp.RoleObserver}))
		for range 4 {
			tok, err := identity.MintRequestToken(ctx, c.Signer(), origin, nil)
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/v1/rooms/"+room+"/events/live", nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := srv.Client().Do(req)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("stream %v, %v", resp, err)
			}
			defer resp.Body.Close()
			streams = append(streams, bufio.NewReader(resp.Body))
		}
	}
	before := h.rendered.Load()
	for i := range records {
		mustOK(creator.SendMessage(ctx, room, adp.Message{ContentType: "text/plain", Content: adp.TextContent(fmt.Sprint("to all ", i))}))
	}
	for i, r := range streams {
		for n := 0; n < records; {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("stream %d after %d records: %v", i, n, err)
			}
			if line == "event: "+adp.SSERoomEvent+"\n" {
				n++
			}
		}
	}
	if n := h.rendered.Load() - before; n != records {
		t.Fatalf("%d records to %d subscribers rendered %d times", records, subscribers, n)
	}
}

func mustOK[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
