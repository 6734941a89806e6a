package sse_test

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/sse"
)

// §17.3: open the stream, page the history, then go live; every record
// once, in order, verified.
func TestFollowBootstrapThenLive(t *testing.T) {
	base := runtime.NumGoroutine()
	h := newTestHost(t)
	h.sayN("bob", 20)
	c := follow(t, h.options("alice"), nil)
	c.waitSeq(t, h.seq())
	h.sayN("bob", 30)
	c.waitSeq(t, h.seq())
	c.stop(t)
	c.checkExactly(t, h)
	if len(c.errors()) != 0 {
		t.Fatalf("unexpected error items: %v", c.errors())
	}
	h.close()
	checkNoLeak(t, base)
}

// §17.1: a fresh request token on every connection attempt.
func TestFollowFreshTokenPerConnect(t *testing.T) {
	h := newTestHost(t)
	opts := h.options("alice")
	// Tokens minted in the same second are identical (Ed25519 is
	// deterministic), so a clock that moves shows each one is new.
	var tick atomic.Int64
	opts.Mint = &identity.MintOptions{Now: func() time.Time { return time.Now().Add(time.Duration(tick.Add(1)) * time.Second) }}
	c := follow(t, opts, nil)
	for i := 0; i < 3; i++ {
		waitFor(t, func() bool { return h.subscribers() == 1 }, "a subscriber %v", func() any { return "" })
		h.say("bob", "hello")
		c.waitSeq(t, h.seq())
		h.dropAll()
	}
	waitFor(t, func() bool { return h.subscribers() == 1 }, "a subscriber %v", func() any { return "" })
	h.mu.Lock()
	tokens := append([]string(nil), h.tokens...)
	h.mu.Unlock()
	seen := map[string]bool{}
	for _, tok := range tokens {
		if seen[tok] {
			t.Fatalf("token reused across connections: %s", tok)
		}
		seen[tok] = true
	}
	if len(tokens) < 4 {
		t.Fatalf("%d connections, want ≥ 4", len(tokens))
	}
}

// The server drops the connection mid-stream: the client reconnects and
// backfills what it missed from the history.
func TestFollowDropMidStream(t *testing.T) {
	h := newTestHost(t)
	c := follow(t, h.options("alice"), nil)
	c.waitSeq(t, h.seq())
	for i := 0; i < 5; i++ {
		h.sayN("bob", 10)
		h.dropAll()
		h.sayN("bob", 10) // accepted while the client is away
		c.waitSeq(t, h.seq())
	}
	c.stop(t)
	c.checkExactly(t, h)
}

// The server sends a record twice: it is delivered once.
func TestFollowDuplicate(t *testing.T) {
	h := newTestHost(t)
	h.mutate = func(seq int64, d []byte) [][]byte { return [][]byte{d, d} }
	c := follow(t, h.options("alice"), nil)
	c.waitSeq(t, h.seq())
	h.sayN("bob", 20)
	c.waitSeq(t, h.seq())
	c.stop(t)
	c.checkExactly(t, h)
}

// The server sends records out of order: they are delivered in seq order.
func TestFollowOutOfOrder(t *testing.T) {
	h := newTestHost(t)
	var held []byte
	h.mutate = func(seq int64, d []byte) [][]byte {
		if held == nil { // hold this one, send it after the next
			held = d
			return nil
		}
		out := [][]byte{d, held}
		held = nil
		return out
	}
	c := follow(t, h.options("alice"), nil)
	c.waitSeq(t, h.seq()-1)
	h.sayN("bob", 21) // the last one is held back, then history fills it
	h.mu.Lock()
	h.mutate = nil
	h.mu.Unlock()
	h.say("bob", "flush")
	c.waitSeq(t, h.seq())
	c.stop(t)
	c.checkExactly(t, h)
}

// The server streams a forged record (correct chain and record hash, bad
// signature): it is never delivered, it is reported, and the client
// resyncs from the history, which has the genuine one.
func TestFollowForgedRecord(t *testing.T) {
	h := newTestHost(t)
	c := follow(t, h.options("alice"), nil)
	c.waitSeq(t, h.seq())
	h.mutate = func(seq int64, d []byte) [][]byte {
		if seq%5 == 0 {
			return [][]byte{h.forge(seq, "forged")}
		}
		return [][]byte{d}
	}
	h.sayN("bob", 20)
	c.waitSeq(t, h.seq())
	c.stop(t)
	c.checkExactly(t, h)
	if !c.hasError(identity.ErrInvalidSignature) {
		t.Fatalf("no invalid_signature error item: %v", c.errors())
	}
	for _, rec := range c.records {
		if strings.Contains(string(rec.AppendJSON(nil)), "forged") {
			t.Fatalf("forged record %d delivered", rec.Seq)
		}
	}
}

// Tampered bytes (received_at changed after hashing) fail the record hash.
func TestFollowTamperedRecord(t *testing.T) {
	h := newTestHost(t)
	c := follow(t, h.options("alice"), nil)
	c.waitSeq(t, h.seq())
	h.mutate = func(seq int64, d []byte) [][]byte {
		if seq%3 == 0 {
			return [][]byte{[]byte(strings.Replace(string(d), `"received_at":1`, `"received_at":2`, 1))}
		}
		return [][]byte{d}
	}
	h.sayN("bob", 12)
	c.waitSeq(t, h.seq())
	c.stop(t)
	c.checkExactly(t, h)
	if !c.hasError(adp.ErrInvalidRecord) {
		t.Fatalf("no invalid_record error item: %v", c.errors())
	}
}

// The server stalls without heartbeats: the idle watchdog reconnects.
func TestFollowStallWithoutHeartbeats(t *testing.T) {
	h := newTestHost(t)
	opts := h.options("alice")
	opts.IdleTimeout = 200 * time.Millisecond
	c := follow(t, opts, nil)
	c.waitSeq(t, h.seq())
	h.stallAll()
	h.sayN("bob", 10) // never streamed on the stalled connection
	c.waitSeq(t, h.seq())
	c.stop(t)
	c.checkExactly(t, h)
	if !c.hasError(sse.ErrIdle) {
		t.Fatalf("no idle error item: %v", c.errors())
	}
}

// Heartbeat comments keep a quiet connection alive: no reconnect.
func TestFollowHeartbeatsKeepAlive(t *testing.T) {
	h := newTestHost(t)
	h.heartbeat = 10 * time.Millisecond
	opts := h.options("alice")
	opts.IdleTimeout = time.Second // 100 heartbeats: a wide margin on a loaded machine
	c := follow(t, opts, nil)
	c.waitSeq(t, h.seq())
	// 2.5 idle timeouts of silence but for heartbeats: 250 heartbeats of
	// a 10 ms ticker take at least 2.5 s (a late tick is dropped, never
	// doubled).
	hb0 := h.heartbeats.Load()
	waitFor(t, func() bool { return h.heartbeats.Load()-hb0 >= 250 }, "250 heartbeats (have %d)", func() any { return h.heartbeats.Load() - hb0 })
	h.say("bob", "still here")
	c.waitSeq(t, h.seq())
	c.stop(t)
	if n := h.connects.Load(); n != 1 {
		t.Fatalf("%d connections, want 1: %v", n, c.errors())
	}
}

// 503 and 429, then recovery: retried, not fatal.
func TestFollowRetriesUnavailable(t *testing.T) {
	h := newTestHost(t)
	h.failNext = []int{503, 503, 429, 502}
	h.sayN("bob", 5)
	c := follow(t, h.options("alice"), nil)
	c.waitSeq(t, h.seq())
	h.sayN("bob", 5)
	c.waitSeq(t, h.seq())
	c.stop(t)
	c.checkExactly(t, h)
	if n := h.connects.Load(); n != 5 {
		t.Fatalf("%d connection attempts, want 5", n)
	}
}

// A failing history is retried with backoff; the stream stays.
func TestFollowHistoryRetried(t *testing.T) {
	h := newTestHost(t)
	h.historyFail = 3
	h.sayN("bob", 5)
	c := follow(t, h.options("alice"), nil)
	c.waitSeq(t, h.seq())
	c.stop(t)
	c.checkExactly(t, h)
	if got := h.historyCalls.Load(); got < 4 {
		t.Fatalf("%d history calls, want ≥ 4", got)
	}
}

// A removed member's subscription ends with the host's typed error.
func TestFollowRemovedMember(t *testing.T) {
	base := runtime.NumGoroutine()
	h := newTestHost(t)
	c := follow(t, h.options("alice"), nil)
	c.waitSeq(t, h.seq())
	h.remove("alice")
	err := c.wait(t)
	if !errors.Is(err, adp.ErrMembershipRequired) {
		t.Fatalf("final error %v, want membership_required", err)
	}
	var ie *identity.Error
	if !errors.As(err, &ie) || ie.Status != http.StatusForbidden {
		t.Fatalf("final error %#v, want an *identity.Error with status 403", err)
	}
	h.close()
	checkNoLeak(t, base)
}

// 401 and 404 are permanent too.
func TestFollowPermanentRefusals(t *testing.T) {
	h := newTestHost(t)
	t.Run("non-member", func(t *testing.T) {
		c := follow(t, h.options("carol"), nil)
		if err := c.wait(t); !errors.Is(err, adp.ErrMembershipRequired) {
			t.Fatalf("final error %v", err)
		}
	})
	t.Run("room gone", func(t *testing.T) {
		opts := h.options("alice")
		opts.RoomID = "nosuchroom"
		c := follow(t, opts, nil)
		if err := c.wait(t); !errors.Is(err, adp.ErrRoomNotFound) {
			t.Fatalf("final error %v", err)
		}
	})
	t.Run("slash in room ID stays one segment", func(t *testing.T) {
		opts := h.options("alice")
		opts.RoomID = h.roomID + "/../" + h.roomID
		c := follow(t, opts, nil)
		if err := c.wait(t); !errors.Is(err, adp.ErrRoomNotFound) {
			t.Fatalf("final error %v", err)
		}
	})
	t.Run("history refused", func(t *testing.T) {
		h.mu.Lock()
		h.historyRefuse = &identity.Error{Code: adp.CodeMembershipRequired, Message: "no", Status: http.StatusForbidden}
		h.mu.Unlock()
		defer func() { h.mu.Lock(); h.historyRefuse = nil; h.mu.Unlock() }()
		c := follow(t, h.options("alice"), nil)
		if err := c.wait(t); !errors.Is(err, adp.ErrMembershipRequired) {
			t.Fatalf("final error %v", err)
		}
	})
	t.Run("token refused", func(t *testing.T) {
		opts := h.options("alice")
		opts.Mint = &identity.MintOptions{Now: func() time.Time { return time.Now().Add(-time.Hour) }}
		c := follow(t, opts, nil)
		if err := c.wait(t); !errors.Is(err, identity.ErrInvalidToken) {
			t.Fatalf("final error %v", err)
		}
	})
}

// A history that does not verify is never delivered; after MaxFailedSyncs
// attempts the subscription ends with the verification error.
func TestFollowForgedHistoryEnds(t *testing.T) {
	h := newTestHost(t)
	h.sayN("bob", 5)
	h.historyForge = func(seq int64, d []byte) []byte {
		if seq == 4 {
			return h.forge(seq, "forged")
		}
		return d
	}
	opts := h.options("alice")
	opts.MaxFailedSyncs = 3
	c := follow(t, opts, nil)
	err := c.wait(t)
	if !errors.Is(err, identity.ErrInvalidSignature) {
		t.Fatalf("final error %v, want invalid_signature", err)
	}
	if got := c.last(); got != 3 {
		t.Fatalf("delivered up to %d, want 3", got)
	}
}

// Notices are delivered as notices, never as records; a notice carrying
// record members is refused.
func TestFollowNotices(t *testing.T) {
	h := newTestHost(t)
	c := follow(t, h.options("alice"), nil)
	c.waitSeq(t, h.seq())
	bob := h.authors["bob"].AgentID().String()
	h.notify(sse.EventAgentStatus, `{"room_id":"`+h.roomID+`","agent_id":"`+bob+`","state":"drafting","seen_seq":3,"expires_at":1779754000000}`)
	h.notify(sse.EventJoinRequest, `{"room_id":"`+h.roomID+`","request_id":"jr_1","applicant":"`+bob+`","role":"speaker","created_at":1,"expires_at":2,"x_vendor":7}`)
	h.notify(sse.EventAgentStatus, `{"room_id":"`+h.roomID+`","agent_id":"`+bob+`","state":"x","seq":9}`)
	h.notify(sse.EventJoinRequest, `{"room_id":"other","request_id":"jr_1","applicant":"`+bob+`","role":"speaker","created_at":1,"expires_at":2}`)
	h.notify("something.else", `{}`)
	h.say("bob", "after")
	c.waitSeq(t, h.seq())
	c.stop(t)
	c.checkExactly(t, h)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.notices) != 2 || c.notices[0].Kind != sse.KindAgentStatus || c.notices[1].Kind != sse.KindJoinRequest {
		t.Fatalf("notices: %+v", c.notices)
	}
	if st := c.notices[0].AgentStatus; st.State != "drafting" || st.SeenSeq != 3 || st.AgentID.String() != bob {
		t.Fatalf("agent status: %+v", st)
	}
	// A member the SDK does not know is kept, not fatal (§6).
	if jr := c.notices[1].JoinRequest; jr.RequestID != "jr_1" || jr.Role != adp.RoleSpeaker || string(jr.Unknown) != `{"x_vendor":7}` {
		t.Fatalf("join request: %+v", jr)
	}
	n := 0
	for _, err := range c.errs {
		if errors.Is(err, sse.ErrNotice) {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("%d notice errors, want 2: %v", n, c.errs)
	}
}

// With a replica the subscriber holds the verified room state, and a
// record signed validly by a non-member (which only the room rules catch)
// is never delivered.
func TestFollowReplica(t *testing.T) {
	h := newTestHost(t)
	h.sayN("bob", 5)
	room := adp.NewReplica(h.roomID, nil)
	opts := h.options("alice")
	opts.Replica = room
	c := follow(t, opts, nil)
	c.waitSeq(t, h.seq())
	h.mu.Lock()
	h.mutate = func(seq int64, d []byte) [][]byte {
		prev, _ := adp.ParseRecord(h.records[seq-2])
		env, err := adp.NewMessage(h.ctx, h.authors["mallory"], adp.Base{RoomID: h.roomID, Seq: prev.Seq, Hash: prev.Hash},
			adp.Message{ContentType: "text/plain", Content: adp.TextContent("intruder")})
		if err != nil {
			t.Fatal(err)
		}
		return [][]byte{adp.NewRecord(h.roomID, prev, h.now.UnixMilli(), env).AppendJSON(nil)}
	}
	h.mu.Unlock()
	h.say("bob", "genuine")
	c.waitSeq(t, h.seq())
	c.stop(t)
	c.checkExactly(t, h)
	if !c.hasError(adp.ErrMembershipRequired) && !c.hasError(identity.ErrPermissionDenied) {
		t.Fatalf("no rule error item: %v", c.errors())
	}
	if got, want := room.Head(), h.room.Head(); got != want {
		t.Fatalf("replayer head %+v, host head %+v", got, want)
	}
}

// Resuming from a known record delivers only what follows it.
func TestFollowStart(t *testing.T) {
	h := newTestHost(t)
	h.sayN("bob", 10)
	anchor, err := adp.ParseRecord(h.records[6])
	if err != nil {
		t.Fatal(err)
	}
	opts := h.options("alice")
	opts.Start = adp.RecordRef{Seq: anchor.Seq, Hash: anchor.Hash}
	c := follow(t, opts, nil)
	c.waitSeq(t, h.seq())
	c.stop(t)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.records[0].Seq != 8 || len(c.records) != int(h.seq())-7 {
		t.Fatalf("delivered from %d, %d records", c.records[0].Seq, len(c.records))
	}
	// A wrong anchor hash: the first record does not link, nothing is
	// delivered.
	opts.Start.Hash[0] ^= 1
	opts.MaxFailedSyncs = 2
	c2 := follow(t, opts, nil)
	if err := c2.wait(t); !errors.Is(err, adp.ErrInvalidRecord) || c2.count() != 0 {
		t.Fatalf("final error %v, %d records", err, c2.count())
	}
}

// Leaving the range loop early ends everything.
func TestFollowBreakNoLeak(t *testing.T) {
	h := newTestHost(t)
	h.sayN("bob", 10)
	// The host is up (its listener runs); nothing of the subscription's
	// may outlive it — not even the stream's connection — while the host
	// keeps running.
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	base := runtime.NumGoroutine()
	n := 0
	for it, err := range sse.Follow(t.Context(), h.options("alice")) {
		if err != nil {
			t.Fatal(err)
		}
		if it.Kind == sse.KindRecord {
			if n++; n == 5 {
				break
			}
		}
	}
	checkNoLeak(t, base)
}

// Acceptance: a subscriber joins an active room after 500 records and
// survives 5 forced disconnects while another agent writes 500 more; it
// ends with all the records (500, its own join, 500), verified, in order,
// none twice.
func TestFollowAcceptance(t *testing.T) {
	base := runtime.NumGoroutine()
	h := newTestHost(t)
	h.sayN("bob", 500-int(h.seq()))
	h.join("carol", adp.RoleSpeaker) // seq 501
	c := follow(t, h.options("carol"), nil)
	writer := make(chan struct{})
	go func() {
		defer close(writer)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a "not hours" guard only
		defer cancel()
		for i := 0; i < 500; i++ {
			h.say("bob", "message")
			// The writer stays within 25 records of the follower, so the
			// drops below fall while records are still being written.
			changed.Wait(ctx, func() bool { return c.last() >= h.seq()-25 })
		}
	}()
	for i := 0; i < 5; i++ {
		waitFor(t, func() bool { return h.subscribers() == 1 }, "a subscriber %v", func() any { return "" })
		target := c.last() + 20
		waitFor(t, func() bool { return c.last() >= target || h.seq() == 1001 }, "progress %v", func() any { return c.last() })
		h.dropAll()
	}
	<-writer
	// The fifth drop may come after the last write: wait for the sixth
	// connection, then for everything.
	waitFor(t, func() bool { return h.subscribers() == 1 }, "a subscriber %v", func() any { return "" })
	c.waitSeq(t, 1001)
	c.stop(t)
	c.checkExactly(t, h)
	if n := h.connects.Load(); n < 6 {
		t.Fatalf("%d connections, want ≥ 6", n)
	}
	h.close()
	checkNoLeak(t, base)
}

// An event larger than MaxEventSize ends that connection, not the
// subscription, and costs no more than the bound: the client reconnects and
// backfills.
func TestFollowOversizedEvent(t *testing.T) {
	h := newTestHost(t)
	opts := h.options("alice")
	opts.MaxEventSize = 64 << 10
	c := follow(t, opts, nil)
	c.waitSeq(t, h.seq())
	h.notify(sse.EventAgentStatus, strings.Repeat("x", 1<<20))
	h.sayN("bob", 5)
	c.waitSeq(t, h.seq())
	c.stop(t)
	c.checkExactly(t, h)
	if n := h.connects.Load(); n < 2 {
		t.Fatalf("%d connections, want a reconnect", n)
	}
}

// A 200 answer that is not an event stream is a permanent refusal; so is a
// redirect (the stream must come from the host asked).
func TestFollowNotAStream(t *testing.T) {
	for name, handler := range map[string]http.HandlerFunc{
		"json": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte("{}"))
		},
		"redirect": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "https://elsewhere.example/", http.StatusFound)
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(handler)
			defer srv.Close()
			h := newTestHost(t)
			opts := h.options("alice")
			opts.API = srv.URL + "/v1"
			c := follow(t, opts, nil)
			if err := c.wait(t); err == nil || c.count() != 0 {
				t.Fatalf("final error %v, %d records", err, c.count())
			}
		})
	}
}

// Options the subscription cannot work with fail at once, before any
// connection attempt.
func TestFollowBadOptions(t *testing.T) {
	h := newTestHost(t)
	for name, mutate := range map[string]func(*sse.Options){
		"http origin":  func(o *sse.Options) { o.API = "http://api.example/v1"; o.Origins = nil },
		"relative API": func(o *sse.Options) { o.API = "/v1" },
		"no room":      func(o *sse.Options) { o.RoomID = "" },
		"dot-dot room": func(o *sse.Options) { o.RoomID = ".." },
		"API query":    func(o *sse.Options) { o.API += "?x=1" },
		"no signer":    func(o *sse.Options) { o.Signer = nil },
		"no history":   func(o *sse.Options) { o.History = nil },
		"other room":   func(o *sse.Options) { o.Replica = adp.NewReplica("other", nil) },
	} {
		opts := h.options("alice")
		mutate(opts)
		n := 0
		for _, err := range sse.Follow(t.Context(), opts) {
			if n++; err == nil {
				t.Errorf("%s: an item instead of an error", name)
			}
		}
		if n != 1 {
			t.Errorf("%s: %d values, want one error", name, n)
		}
	}
	if n := h.connects.Load(); n != 0 {
		t.Fatalf("%d connection attempts", n)
	}
}

// §17.3: the stream is open before the history is read, so a record
// accepted while the history is being read — after its snapshot — still
// arrives, on the stream. (Reading history first and subscribing second
// would lose it.)
func TestFollowBootstrapOrder(t *testing.T) {
	h := newTestHost(t)
	h.sayN("bob", 5)
	var streamOpen atomic.Bool
	var once sync.Once
	h.historyHook = func() {
		once.Do(func() {
			streamOpen.Store(h.subscribers() == 1)
			h.say("bob", "accepted during the history read")
		})
	}
	want := h.seq() + 1 // and the record the hook adds
	c := follow(t, h.options("alice"), nil)
	c.waitSeq(t, want)
	c.stop(t)
	c.checkExactly(t, h)
	if !streamOpen.Load() {
		t.Fatal("the history was read before the stream was open")
	}
}

// Cancelling the context ends the subscription even while the history
// call hangs, and the final value says why.
func TestFollowCancelDuringHistory(t *testing.T) {
	h := newTestHost(t)
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	base := runtime.NumGoroutine()
	entered := make(chan struct{})
	opts := h.options("alice")
	opts.History = sse.HistoryFunc(func(ctx context.Context, _ string, _ int64) iter.Seq2[*adp.Record, error] {
		return func(yield func(*adp.Record, error) bool) {
			close(entered)
			<-ctx.Done() // a host that never answers
			yield(nil, ctx.Err())
		}
	})
	c := follow(t, opts, nil)
	<-entered
	c.cancel()
	if err := c.wait(t); !errors.Is(err, context.Canceled) {
		t.Fatalf("final error %v, want context.Canceled", err)
	}
	checkNoLeak(t, base)
}

// A 429 or 503 with Retry-After holds the next attempt that long, capped at
// Backoff.Max.
func TestFollowRetryAfter(t *testing.T) {
	h := newTestHost(t)
	h.failNext = []int{http.StatusTooManyRequests}
	h.retryAfter = "1"
	opts := h.options("alice")
	opts.Backoff.Max = 5 * time.Second
	c := follow(t, opts, nil)
	c.waitSeq(t, h.seq())
	c.stop(t)
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.connectTimes) < 2 {
		t.Fatalf("%d stream requests", len(h.connectTimes))
	}
	if gap := h.connectTimes[1].Sub(h.connectTimes[0]); gap < 900*time.Millisecond {
		t.Fatalf("retried after %v, Retry-After asked for 1 s", gap)
	}
}

// A record that links correctly and carries a valid signature, but whose
// event was signed for another room (a replay across rooms), is refused.
func TestFollowEventFromAnotherRoom(t *testing.T) {
	h := newTestHost(t)
	c := follow(t, h.options("alice"), nil)
	c.waitSeq(t, h.seq())
	h.mu.Lock()
	h.mutate = func(seq int64, d []byte) [][]byte {
		prev, err := adp.ParseRecord(h.records[seq-2])
		if err != nil {
			t.Error(err)
			return nil
		}
		env, err := adp.NewMessage(h.ctx, h.authors["bob"], adp.Base{RoomID: "anotherroom000000000", Seq: prev.Seq, Hash: prev.Hash},
			adp.Message{ContentType: "text/plain", Content: adp.TextContent("meant elsewhere")})
		if err != nil {
			t.Error(err)
			return nil
		}
		return [][]byte{adp.NewRecord(h.roomID, prev, h.now.UnixMilli(), env).AppendJSON(nil)}
	}
	h.mu.Unlock()
	h.sayN("bob", 3)
	c.waitSeq(t, h.seq())
	c.stop(t)
	c.checkExactly(t, h)
	if !c.hasError(identity.ErrInvalidEvent) {
		t.Fatalf("no invalid_event item: %v", c.errors())
	}
}

// A record whose pre_hash does not link to the previous record (its own
// record hash recomputed, its signature valid) is refused: the chain is
// checked, not only the record.
func TestFollowBrokenChain(t *testing.T) {
	h := newTestHost(t)
	c := follow(t, h.options("alice"), nil)
	c.waitSeq(t, h.seq())
	h.mu.Lock()
	h.mutate = func(seq int64, d []byte) [][]byte {
		rec, err := adp.ParseRecord(d)
		if err != nil {
			t.Error(err)
			return nil
		}
		bad := *rec
		bad.PreHash[0] ^= 1
		bad.Hash = bad.ComputeHash()
		return [][]byte{bad.AppendJSON(nil)}
	}
	h.mu.Unlock()
	h.sayN("bob", 3)
	c.waitSeq(t, h.seq())
	c.stop(t)
	c.checkExactly(t, h)
	if !c.hasError(adp.ErrInvalidRecord) {
		t.Fatalf("no invalid_record item: %v", c.errors())
	}
}

// TestFollowNeverRedelivers: a record is delivered once (§17.3, dedupe by
// seq). A stream that repeats records the subscriber already holds,
// out of order (seqs 5, 3, 3, 3, 4 after 1…5), delivers none of them
// again. The SDK's only live client is Follow (adp.Client.Live, which
// yielded [5 3 3 3 4], is gone).
func TestFollowNeverRedelivers(t *testing.T) {
	h := newTestHost(t)
	h.sayN("bob", 4)
	c := follow(t, h.options("alice"), nil)
	c.waitSeq(t, 5)
	waitFor(t, func() bool { return h.subscribers() == 1 }, "a subscriber (have %d)", func() any { return h.subscribers() })
	h.mu.Lock()
	recs := h.records
	h.mu.Unlock()
	for _, seq := range []int{5, 3, 3, 3, 4} {
		h.notify(sse.EventRecord, string(recs[seq-1]))
	}
	h.say("bob", "after the repeats")
	c.waitSeq(t, h.seq())
	c.stop(t)
	c.checkExactly(t, h)
}
