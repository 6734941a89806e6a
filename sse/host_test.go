package sse_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"iter"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gosse "github.com/tmaxmax/go-sse"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/pulse"
	"github.com/agentprotocols/go-sdk/sse"
)

// testHost is a small fault-injecting ADP host for the live stream: an
// id-ordered record store built through the real host path (adp.Room
// Accept), a /v1/rooms/{id}/events/live handler that checks the request
// token and membership like §17.1 requires, and hooks to drop, stall,
// duplicate, reorder or forge what it streams.
type testHost struct {
	t      testing.TB
	ctx    context.Context
	srv    *httptest.Server
	origin identity.Origin
	roomID string

	mu      sync.Mutex
	now     time.Time
	room    *adp.Room
	records [][]byte // canonical JSON, index seq-1
	authors map[string]*envelope.Author
	subs    map[*testSub]bool
	// mutate, when set, turns one accepted record into what the stream
	// sends for it (nothing, twice, a forgery, …). Runs under mu.
	mutate func(seq int64, data []byte) [][]byte
	// failNext answers the next stream requests with these statuses.
	failNext []int
	// retryAfter is the Retry-After header of the failNext answers.
	retryAfter string
	// connectTimes are the times of the stream requests.
	connectTimes []time.Time
	// heartbeat is the comment interval (0: none).
	heartbeat time.Duration

	tokens     []string // every stream request's token
	connects   atomic.Int32
	heartbeats atomic.Int32 // heartbeat comments sent
	// history faults: fail the next n history calls; serve forged records.
	historyFail   int
	historyRefuse error
	historyHook   func()
	historyForge  func(seq int64, data []byte) []byte
	historyCalls  atomic.Int32
	historyPageSz int
}

type testSub struct {
	ch      chan [2]string // event type, data
	kill    chan struct{}
	stall   chan struct{}
	killed  bool
	stalled bool
}

// T0 is 2026-05-26T00:00:00Z, the vectors' era.
var T0 = time.UnixMilli(1779753600000)

var seeds = map[string]byte{"creator": 0x11, "alice": 0x13, "bob": 0x14, "carol": 0x15, "mallory": 0x66}

func newTestHost(t testing.TB) *testHost {
	h := &testHost{t: t, ctx: context.Background(), roomID: "d8ftedhpqhsusbg001tg", now: T0,
		authors: map[string]*envelope.Author{}, subs: map[*testSub]bool{}, historyPageSz: 100}
	h.room = adp.NewRoom(h.roomID, nil)
	for name, b := range seeds {
		h.authors[name] = &envelope.Author{Signer: key(t, b), Nonces: identity.NewNonceSource(nil), Now: func() time.Time { return h.now }}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/rooms/{id}/events/live", h.live)
	h.srv = httptest.NewServer(mux)
	t.Cleanup(h.close)
	o, err := identity.ParseOrigin(h.srv.URL, &identity.OriginOptions{AllowLoopbackHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	h.origin = o
	// An active public room: creator, alice (the follower), bob (a writer).
	h.must(adp.NewRoomCreate(h.ctx, h.authors["creator"], adp.RoomCreate{
		Topic: "Live sync", Visibility: adp.VisibilityPublic,
		StartTime: h.now.UnixMilli(), EndTime: h.now.Add(time.Hour).UnixMilli(),
	}))
	h.join("alice", adp.RoleSpeaker)
	h.join("bob", adp.RoleSpeaker)
	return h
}

func key(t testing.TB, b byte) *identity.PrivateKey {
	k, err := identity.NewKeyFromSeed(bytes.Repeat([]byte{b}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func (h *testHost) close() {
	h.dropAll()
	h.srv.CloseClientConnections()
	h.srv.Close()
}

// accept runs one write through the host path and streams it.
func (h *testHost) accept(build func(base func(string) adp.Base) (*envelope.Envelope, error)) (*adp.Record, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	env, err := build(func(typ string) adp.Base {
		b, err := h.room.BaseFor(typ)
		if err != nil {
			h.t.Fatal(err)
		}
		return b
	})
	if err != nil {
		h.t.Fatalf("building event: %v", err)
	}
	h.now = h.now.Add(time.Millisecond)
	rec, err := h.room.Accept(h.ctx, env, h.now)
	if err != nil {
		return nil, err
	}
	data := rec.AppendJSON(nil)
	h.records = append(h.records, data)
	changed.Fire()
	out := [][]byte{data}
	if h.mutate != nil {
		out = h.mutate(rec.Seq, data)
	}
	for _, d := range out {
		h.fanout(sse.EventRecord, string(d))
	}
	return rec, nil
}

func (h *testHost) must(env *envelope.Envelope, err error) *adp.Record {
	h.t.Helper()
	rec, err := h.accept(func(func(string) adp.Base) (*envelope.Envelope, error) { return env, err })
	if err != nil {
		h.t.Fatal(err)
	}
	return rec
}

func (h *testHost) join(name string, role adp.Role) {
	h.t.Helper()
	if _, err := h.accept(func(base func(string) adp.Base) (*envelope.Envelope, error) {
		return adp.NewJoin(h.ctx, h.authors[name], base(adp.TypeRoomJoin), adp.Join{Role: role})
	}); err != nil {
		h.t.Fatal(err)
	}
}

func (h *testHost) say(name, text string) *adp.Record {
	h.t.Helper()
	rec, err := h.accept(func(base func(string) adp.Base) (*envelope.Envelope, error) {
		return adp.NewMessage(h.ctx, h.authors[name], base(adp.TypeMessageCreate),
			adp.Message{ContentType: "text/plain", Content: adp.TextContent(text)})
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return rec
}

func (h *testHost) sayN(name string, n int) {
	for i := 0; i < n; i++ {
		h.say(name, "message")
	}
}

// remove has the creator remove name, then closes name's streams the way
// a host ends a removed member's subscription.
func (h *testHost) remove(name string) {
	h.t.Helper()
	id := h.authors[name].AgentID()
	if _, err := h.accept(func(base func(string) adp.Base) (*envelope.Envelope, error) {
		return adp.NewMemberRemove(h.ctx, h.authors["creator"], base(adp.TypeMemberRemove), adp.MemberRemove{Member: id})
	}); err != nil {
		h.t.Fatal(err)
	}
	h.dropAll()
}

// fanout sends one event to every subscriber; a subscriber whose buffer
// is full is disconnected (it resyncs from the history).
func (h *testHost) fanout(typ, data string) {
	for s := range h.subs {
		select {
		case s.ch <- [2]string{typ, data}:
		default:
			h.killSub(s)
		}
	}
}

// notify streams a notice.
func (h *testHost) notify(typ, data string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fanout(typ, data)
}

func (h *testHost) killSub(s *testSub) {
	if !s.killed {
		s.killed = true
		close(s.kill)
	}
	delete(h.subs, s)
	changed.Fire()
}

// dropAll closes every open stream mid-flight.
func (h *testHost) dropAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		h.killSub(s)
	}
}

// stallAll makes every open stream go silent (no data, no heartbeat)
// without closing it.
func (h *testHost) stallAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		if !s.stalled {
			s.stalled = true
			close(s.stall)
		}
		delete(h.subs, s)
	}
	changed.Fire()
}

func (h *testHost) subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

func (h *testHost) live(w http.ResponseWriter, r *http.Request) {
	h.connects.Add(1)
	tok, err := identity.BearerToken(r)
	var claims *identity.TokenClaims
	if err == nil {
		claims, err = identity.VerifyRequestToken(tok, h.origin, nil)
	}
	if err != nil {
		identity.WriteError(w, err)
		return
	}
	h.mu.Lock()
	h.tokens = append(h.tokens, tok)
	h.connectTimes = append(h.connectTimes, time.Now())
	if len(h.failNext) > 0 {
		st := h.failNext[0]
		h.failNext = h.failNext[1:]
		h.mu.Unlock()
		code := identity.CodeInternalError
		if st == http.StatusTooManyRequests {
			code = identity.CodeRateLimited
		}
		if h.retryAfter != "" {
			w.Header().Set("Retry-After", h.retryAfter)
		}
		identity.WriteError(w, &identity.Error{Code: code, Message: "injected", Status: st})
		return
	}
	if r.PathValue("id") != h.roomID {
		h.mu.Unlock()
		writeADPError(w, adp.ErrRoomNotFound)
		return
	}
	if m, ok := h.room.Member(claims.Issuer); !ok || m.Status != adp.MemberActive {
		h.mu.Unlock()
		writeADPError(w, adp.ErrMembershipRequired)
		return
	}
	// Subscribe before the response goes out, so that nothing accepted
	// after the client sees the stream open is missed (§17.3).
	s := &testSub{ch: make(chan [2]string, 1<<14), kill: make(chan struct{}), stall: make(chan struct{})}
	h.subs[s] = true
	hb := h.heartbeat
	h.mu.Unlock()
	changed.Fire()
	defer func() {
		h.mu.Lock()
		delete(h.subs, s)
		h.mu.Unlock()
		changed.Fire()
	}()

	sess, err := gosse.Upgrade(w, r)
	if err != nil {
		return
	}
	w.Header().Set("Cache-Control", "no-cache")
	if sess.Flush() != nil {
		return
	}
	var tick <-chan time.Time
	if hb > 0 {
		t := time.NewTicker(hb)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.kill:
			return
		case <-s.stall:
			select {
			case <-r.Context().Done():
			case <-s.kill:
			}
			return
		case ev := <-s.ch:
			m := &gosse.Message{Type: gosse.Type(ev[0])}
			m.AppendData(ev[1])
			if sess.Send(m) != nil || sess.Flush() != nil {
				return
			}
		case <-tick:
			m := &gosse.Message{}
			m.AppendComment("heartbeat")
			if sess.Send(m) != nil || sess.Flush() != nil {
				return
			}
			h.heartbeats.Add(1)
			changed.Fire()
		}
	}
}

// history serves GET …/events?after_seq= from the store in pages,
// re-parsing every record from its bytes as an HTTP client would.
func (h *testHost) history() sse.History {
	return sse.HistoryFunc(func(ctx context.Context, roomID string, after int64) iter.Seq2[*adp.Record, error] {
		return func(yield func(*adp.Record, error) bool) {
			h.historyCalls.Add(1)
			h.mu.Lock()
			if h.historyFail > 0 {
				h.historyFail--
				h.mu.Unlock()
				yield(nil, &identity.Error{Code: identity.CodeInternalError, Message: "injected", Status: 503})
				return
			}
			if h.historyRefuse != nil {
				err := h.historyRefuse
				h.mu.Unlock()
				yield(nil, err)
				return
			}
			h.mu.Unlock()
			if roomID != h.roomID {
				yield(nil, &identity.Error{Code: adp.CodeRoomNotFound, Message: "no such room", Status: http.StatusNotFound})
				return
			}
			// The history is a snapshot of the store when the call starts;
			// historyHook runs after the snapshot, like a write racing the
			// read.
			h.mu.Lock()
			limit, hook := len(h.records), h.historyHook
			h.mu.Unlock()
			if hook != nil {
				hook()
			}
			for {
				h.mu.Lock()
				end := min(int(after)+h.historyPageSz, limit)
				page := h.records[min(int(after), end):end]
				forge := h.historyForge
				h.mu.Unlock()
				if len(page) == 0 || ctx.Err() != nil {
					return
				}
				for i, data := range page {
					if forge != nil {
						data = forge(after+int64(i)+1, data)
					}
					rec, err := adp.ParseRecord(data)
					if !yield(rec, err) || err != nil {
						return
					}
				}
				after += int64(len(page))
			}
		}
	})
}

func (h *testHost) options(follower string) *sse.Options {
	return &sse.Options{
		API:         h.srv.URL + "/v1",
		RoomID:      h.roomID,
		Signer:      h.authors[follower].Signer,
		History:     h.history(),
		Origins:     &identity.OriginOptions{AllowLoopbackHTTP: true},
		IdleTimeout: 2 * time.Second,
		Backoff:     sse.Backoff{Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond},
	}
}

func (h *testHost) seq() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return int64(len(h.records))
}

// collector gathers what a Follow delivers.
type collector struct {
	mu      sync.Mutex
	records []*adp.Record
	errs    []error
	notices []sse.Item
	final   error
	done    chan struct{}
	cancel  context.CancelFunc
}

// follow ranges over Follow in a goroutine. onRecord, if set, runs for each
// record in the consuming goroutine.
func follow(t testing.TB, opts *sse.Options, onRecord func(*adp.Record)) *collector {
	ctx, cancel := context.WithCancel(context.Background())
	c := &collector{done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(c.done)
		for it, err := range sse.Follow(ctx, opts) {
			c.mu.Lock()
			switch {
			case err != nil:
				c.final = err
			case it.Kind == sse.KindRecord:
				c.records = append(c.records, it.Record)
			case it.Kind == sse.KindError:
				c.errs = append(c.errs, it.Err)
			default:
				c.notices = append(c.notices, it)
			}
			c.mu.Unlock()
			changed.Fire()
			if err == nil && it.Kind == sse.KindRecord && onRecord != nil {
				onRecord(it.Record)
			}
		}
	}()
	t.Cleanup(func() { c.stop(t) })
	return c
}

func (c *collector) last() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.records) == 0 {
		return 0
	}
	return c.records[len(c.records)-1].Seq
}

func (c *collector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.records)
}

// waitSeq waits until the collector has delivered seq.
func (c *collector) waitSeq(t testing.TB, seq int64) {
	t.Helper()
	waitFor(t, func() bool { return c.last() >= seq }, "records up to seq "+strconv.FormatInt(seq, 10)+" (have %d)", func() any { return c.last() })
}

func (c *collector) stop(t testing.TB) {
	c.cancel()
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		t.Fatal("Follow did not end within 10 s of cancellation")
	}
}

// wait waits for Follow to end by itself and returns its final error.
func (c *collector) wait(t testing.TB) error {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(20 * time.Second):
		t.Fatal("Follow did not end")
	}
	return c.final
}

// waitFor waits until cond holds, checking it at first and after each
// change the test hosts and collectors signal (changed).
func waitFor(t testing.TB, cond func() bool, format string, arg func() any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a "not hours" guard only
	defer cancel()
	if changed.Wait(ctx, cond) != nil {
		t.Fatalf("timed out waiting for "+format, arg())
	}
}

// changed is signalled by every change a waitFor condition reads: a
// record accepted or delivered, a stream opened or closed, a heartbeat
// sent.
var changed pulse.Pulse

// checkExactly asserts the collector delivered exactly the host's records:
// seq 1..n, each once, in order, byte for byte the host's.
func (c *collector) checkExactly(t testing.TB, h *testHost) {
	t.Helper()
	h.mu.Lock()
	want := h.records
	h.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.records) != len(want) {
		t.Fatalf("delivered %d records, host has %d", len(c.records), len(want))
	}
	for i, rec := range c.records {
		if rec.Seq != int64(i+1) {
			t.Fatalf("record %d has seq %d", i, rec.Seq)
		}
		if got := rec.AppendJSON(nil); !bytes.Equal(got, want[i]) {
			t.Fatalf("record %d differs from the host's:\n got %s\nwant %s", i+1, got, want[i])
		}
	}
}

func (c *collector) errors() []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]error(nil), c.errs...)
}

func (c *collector) hasError(target error) bool {
	for _, err := range c.errors() {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// forge returns a record at seq that links correctly into the host's chain
// (right pre_hash, right record hash) holding a message bob never signed:
// the envelope carries a well-formed signature by another key. Call under
// h.mu (from mutate).
func (h *testHost) forge(seq int64, text string) []byte {
	prev, err := adp.ParseRecord(h.records[seq-2])
	if err != nil {
		h.t.Fatal(err)
	}
	env, err := adp.NewMessage(h.ctx, h.authors["bob"], adp.Base{RoomID: h.roomID, Seq: prev.Seq, Hash: prev.Hash},
		adp.Message{ContentType: "text/plain", Content: adp.TextContent(text)})
	if err != nil {
		h.t.Fatal(err)
	}
	hash := env.Hash()
	good, bad := env.Signature(), ed25519.Sign(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{0x77}, 32)), hash[:])
	b := bytes.Replace(env.AppendJSON(nil), []byte(b64(good[:])), []byte(b64(bad)), 1)
	forged, err := envelope.Parse(b)
	if err != nil {
		h.t.Fatal(err)
	}
	return adp.NewRecord(h.roomID, prev, h.now.UnixMilli(), forged).AppendJSON(nil)
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// goroutines waits for the goroutine count to settle back to at most
// base; a leak check without third-party helpers.
func checkNoLeak(t testing.TB, base int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Fatalf("goroutines: %d, want ≤ %d\n%s", runtime.NumGoroutine(), base, filterStacks(string(buf[:n])))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// filterStacks keeps the stacks that mention this SDK or go-sse.
func filterStacks(s string) string {
	var keep []string
	for _, g := range strings.Split(s, "\n\n") {
		if strings.Contains(g, "go-sdk/sse") || strings.Contains(g, "go-sse") {
			keep = append(keep, g)
		}
	}
	return strings.Join(keep, "\n\n")
}

// writeADPError answers with an ADP code and its status (adp.DefaultStatus).
func writeADPError(w http.ResponseWriter, e *identity.Error) {
	e2 := *e
	e2.Status = adp.DefaultStatus(e.Code)
	identity.WriteError(w, &e2)
}
