package adp_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/adphosttest"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/httpc"
	"github.com/agentprotocols/go-sdk/internal/raceflag"
)

// hostileWorld is the reference host (without rate limits) behind an
// optional handler wrapper, and clients for named agents.
type hostileWorld struct {
	t   *testing.T
	url string
	hc  *http.Client
}

func newHostileWorld(t *testing.T, wrap func(http.Handler) http.Handler) *hostileWorld {
	t.Helper()
	h, srv, err := adphosttest.NewUnstarted(&adphost.Options{RateLimits: adphost.Unlimited(), Heartbeat: -1})
	if err != nil {
		t.Fatal(err)
	}
	if wrap != nil {
		srv.Config.Handler = wrap(h)
	}
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(h.Close)
	return &hostileWorld{t: t, url: srv.URL, hc: srv.Client()}
}

func hostileKey(name string) *identity.PrivateKey {
	seed := sha256.Sum256([]byte("adp hostile " + name))
	k, err := identity.NewKeyFromSeed(seed[:])
	if err != nil {
		panic(err)
	}
	return k
}

func (w *hostileWorld) client(name string, o *adp.ClientOptions) *adp.Client {
	w.t.Helper()
	var opts adp.ClientOptions
	if o != nil {
		opts = *o
	}
	opts.Signer, opts.AllowLoopbackHTTP = hostileKey(name), true
	if opts.HTTPClient == nil {
		opts.HTTPClient = w.hc
	}
	opts.RetryBackoff, opts.MaxRetryWait = time.Millisecond, 20*time.Millisecond
	c, err := adp.NewClient(w.url, &opts)
	if err != nil {
		w.t.Fatal(err)
	}
	return c
}

func publicRoom(t *testing.T, c *adp.Client, topic string) string {
	t.Helper()
	now := time.Now()
	rec, err := c.CreateRoom(context.Background(), adp.RoomCreate{Topic: topic, Visibility: adp.VisibilityPublic,
		StartTime: now.UnixMilli(), EndTime: now.Add(time.Hour).UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	return rec.RoomID
}

func msg(s string) adp.Message {
	return adp.Message{ContentType: "text/plain", Content: adp.TextContent(s)}
}

// TestClientReadsBigRoom: a room of legal records is readable whatever
// the host's page size. 505 messages of 64 KiB with 32 mentions
// each (about 34 MB, over the 32 MiB response bound at the default 500
// records per page) on a host that budgets its pages by count only. The
// client halves its page after the oversized answer and reads the whole
// history, through Events and through Sync; the room keeps the smaller
// size, so a second read asks for no oversized page, and small records
// after the burst grow the page back to PageSize.
func TestClientReadsBigRoom(t *testing.T) {
	if testing.Short() || raceflag.Enabled {
		t.Skip("writes 34 MB of records; no concurrency to check")
	}
	ctx := context.Background()
	var mu sync.Mutex
	var limits []string
	w := newHostileWorld(t, func(h http.Handler) http.Handler {
		u := adphosttest.Unbudgeted(h)
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/events") {
				mu.Lock()
				limits = append(limits, r.URL.Query().Get("limit"))
				mu.Unlock()
			}
			u.ServeHTTP(rw, r)
		})
	})
	seen := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := limits
		limits = nil
		return out
	}
	alice := w.client("alice", nil)
	room := publicRoom(t, alice, "big records")
	if err := adphosttest.FillBigRoom(ctx, alice, room, 505); err != nil {
		t.Fatal(err)
	}
	carol := w.client("carol", nil)
	read := func(after int64) int64 {
		t.Helper()
		n := after
		for rec, err := range carol.Events(ctx, room, after) {
			if err != nil {
				t.Fatalf("Events after %d records: %v", n, err)
			}
			if n++; rec.Seq != n {
				t.Fatalf("record %d has seq %d", n, rec.Seq)
			}
		}
		return n
	}
	seen()
	if n := read(0); n != 506 {
		t.Fatalf("Events read %d records, want 506", n)
	}
	if got := strings.Join(seen(), " "); got != "500 250 250 250" {
		t.Fatalf("first read asked for pages of %s", got)
	}
	if n := read(0); n != 506 {
		t.Fatalf("second Events read %d records", n)
	}
	if got := strings.Join(seen(), " "); got != "250 250 250" {
		t.Fatalf("second read asked for pages of %s (an oversized page again?)", got)
	}
	for range 300 { // one full page of 250 small records, then more
		if _, err := alice.SendMessage(ctx, room, msg("small")); err != nil {
			t.Fatal(err)
		}
	}
	read(506)
	if got := seen(); got[len(got)-1] != "500" {
		t.Fatalf("after small records the pages are %v, not back at 500", got)
	}
	l, err := w.client("dave", nil).Sync(ctx, room)
	if err != nil || l.Seq != 806 {
		t.Fatalf("Sync: %d, %v", l.Seq, err)
	}
}

// TestClientUnknownMembers: unknown members of a host's unsigned answers
// are ignored (§16, I-JSON with open objects). A host that adds a member to every
// unsigned answer (room resource, create response, list wrappers and
// items, status list, history page, discovery) breaks nothing, and the
// member is reachable; a history page whose next_cursor is null is the
// last. Envelopes stay strict: a member added inside a record's envelope
// is refused.
func TestClientUnknownMembers(t *testing.T) {
	ctx := context.Background()
	var tamperEnvelope atomic.Bool
	w := newHostileWorld(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			b := rec.Body.String()
			if rec.Code/100 == 2 && strings.HasPrefix(b, "{") && !strings.HasSuffix(r.URL.Path, "/live") {
				if strings.HasSuffix(r.URL.Path, "/events") {
					if tamperEnvelope.Load() {
						b = strings.Replace(b, `"envelope":{`, `"envelope":{"x_vendor":1,`, 1)
					} else if !strings.Contains(b, `"next_cursor"`) {
						b = strings.Replace(b, `{"result":`, `{"next_cursor":null,"count":1,"result":`, 1)
					}
				} else {
					b = `{"x_vendor":{"n":1},` + b[1:]
					// List items and statuses get one too.
					b = strings.ReplaceAll(b, `{"id":`, `{"x_item":true,"id":`)
					b = strings.ReplaceAll(b, `{"request":`, `{"x_item":true,"request":`)
					b = strings.ReplaceAll(b, `{"room_id":`, `{"x_item":true,"room_id":`)
				}
			}
			for k, v := range rec.Header() {
				if k != "Content-Length" {
					rw.Header()[k] = v
				}
			}
			rw.WriteHeader(rec.Code)
			rw.Write([]byte(b))
		})
	})
	alice, bob := w.client("alice", nil), w.client("bob", nil)
	room := publicRoom(t, alice, "vendor fields") // the create response has x_vendor
	res, err := alice.GetRoom(ctx, room)
	if err != nil || res.ID != room || string(res.Unknown) != `{"x_vendor":{"n":1}}` {
		t.Fatalf("GetRoom: %+v, %v", res, err)
	}
	if _, err := bob.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker}); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.SendMessage(ctx, room, msg("hello")); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.PutAgentStatus(ctx, room, adp.AgentStatusInput{State: "idle"}); err != nil {
		t.Fatal(err)
	}
	sts, err := alice.AgentStatuses(ctx, room)
	if err != nil || len(sts) != 1 || string(sts[0].Unknown) != `{"x_item":true}` {
		t.Fatalf("AgentStatuses: %+v, %v", sts, err)
	}
	if _, err := w.client("carol", nil).RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleObserver}); err != nil {
		t.Fatal(err)
	}
	if jrs, err := alice.JoinRequests(ctx, room); err != nil || len(jrs) != 1 {
		t.Fatalf("JoinRequests: %d, %v", len(jrs), err)
	}
	var listed int
	for s, err := range alice.PublicRooms(ctx, adp.RoomQuery{}) {
		if err != nil {
			t.Fatal(err)
		}
		if s.ID == room && string(s.Unknown) == `{"x_item":true}` {
			listed++
		}
	}
	if listed != 1 {
		t.Fatal("the room is not listed with its vendor member")
	}
	if l, err := w.client("dave", nil).Sync(ctx, room); err != nil || l.Seq != 3 {
		t.Fatalf("Sync: %d, %v", l.Seq, err)
	}
	if _, err := alice.Discover(ctx); err != nil {
		t.Fatalf("Discover: %v", err)
	}
	tamperEnvelope.Store(true)
	if _, err := w.client("erin", nil).Sync(ctx, room); err == nil {
		t.Fatal("a member added inside a signed envelope was accepted")
	}
}

// rawHost answers every request with handler, on a loopback server.
func rawHost(t *testing.T, handler http.HandlerFunc) string {
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	return srv.URL
}

func rawClient(t *testing.T, url string, o *adp.ClientOptions) *adp.Client {
	t.Helper()
	var opts adp.ClientOptions
	if o != nil {
		opts = *o
	}
	opts.Signer, opts.AllowLoopbackHTTP, opts.Retries = hostileKey("victim"), true, -1
	// The raw hosts answer in the seed's shapes and serve no discovery
	// document to learn it from.
	if opts.Draft == 0 {
		opts.Draft = adp.Draft20260704
	}
	c, err := adp.NewClient(url, &opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestClientCursorLoopsEnd: a listing is bounded (§16 pagination). A host
// whose cursor repeats, whose
// pages never end or do not advance ends every listing with a clear
// error, within the page and item bounds.
func TestClientCursorLoopsEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var requests atomic.Int64
	url := rawHost(t, func(w http.ResponseWriter, r *http.Request) {
		n := requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/join-requests"): // the same cursor forever
			w.Write([]byte(`{"result":[{"request":{"id":"jr_1","room_id":"r1","applicant":"` + hostileKey("x").AgentID().String() + `","role":"speaker","created_at":1,"expires_at":2},"status":"pending","reviewed_by":null}],"next_cursor":"loop"}`))
		case strings.HasSuffix(r.URL.Path, "/public"): // a new cursor forever
			w.Write([]byte(`{"result":[{"id":"r` + time.Now().String() + `"}],"next_cursor":"c` + strings.Repeat("x", int(n%7)) + time.Now().String() + `"}`))
		case strings.HasSuffix(r.URL.Path, "/me/rooms"): // an empty page that names a next one
			w.Write([]byte(`{"result":[],"next_cursor":"more"}`))
		case strings.HasSuffix(r.URL.Path, "/events"): // an empty history page that names a next one
			w.Write([]byte(`{"result":[],"next_cursor":"more"}`))
		}
	})
	c := rawClient(t, url, &adp.ClientOptions{MaxPages: 50})
	if _, err := c.JoinRequests(ctx, "r1"); !errors.Is(err, httpc.ErrCursor) || !strings.Contains(err.Error(), "repeats") {
		t.Fatalf("JoinRequests: %v", err)
	}
	requests.Store(0)
	var got int
	var last error
	for _, err := range c.PublicRooms(ctx, adp.RoomQuery{}) {
		if err != nil {
			last = err
			break
		}
		got++
	}
	if !errors.Is(last, httpc.ErrCursor) || requests.Load() != 50 || got != 50 {
		t.Fatalf("PublicRooms: %d items, %d requests, %v", got, requests.Load(), last)
	}
	for _, err := range c.MyRooms(ctx, adp.RoomQuery{}) {
		last = err
	}
	if !errors.Is(last, httpc.ErrCursor) {
		t.Fatalf("MyRooms: %v", last)
	}
	for _, err := range c.Events(ctx, "r1", 0) {
		last = err
	}
	if !errors.Is(last, adp.ErrInvalidRecord) || !strings.Contains(last.Error(), "empty") {
		t.Fatalf("Events: %v", last)
	}
	if _, err := c.Sync(ctx, "r1"); !errors.Is(err, adp.ErrInvalidRecord) {
		t.Fatalf("Sync: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("a listing ran until the deadline")
	}
}

// TestClientListBytes: a host that answers a listing with large pages
// and fresh cursors — within the response bound, the pages and the items
// — is stopped once the pages pass the listing's byte budget
// (MaxListBytes, 64 MiB by default), whether the listing collects
// (JoinRequests) or yields (PublicRooms).
func TestClientListBytes(t *testing.T) {
	// The bound checked is in bytes and pages; the deadline only ends a
	// runaway listing (64 MiB of JSON takes a minute under -race on a
	// loaded machine).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const pageBytes = 4 << 20 // 20 pages would be 80 MiB
	reason := strings.Repeat("r", pageBytes)
	joinPage := `{"result":[{"request":{"id":"jr_1","room_id":"r1","applicant":"` + hostileKey("x").AgentID().String() +
		`","role":"speaker","reason":"` + reason + `","created_at":1,"expires_at":2},"status":"pending","reviewed_by":null}]`
	roomPage := `{"result":[{"id":"r1","topic":"` + reason + `"}]`
	var pages atomic.Int64
	url := rawHost(t, func(w http.ResponseWriter, r *http.Request) {
		n := pages.Add(1)
		next := `,"next_cursor":"c` + strconv.FormatInt(n, 10) + `"}`
		if n == 20 {
			next = "}"
		}
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/join-requests") {
			w.Write([]byte(joinPage + next))
		} else {
			w.Write([]byte(roomPage + next))
		}
	})
	c := rawClient(t, url, nil)
	if _, err := c.JoinRequests(ctx, "r1"); !errors.Is(err, httpc.ErrCursor) || !strings.Contains(err.Error(), "bytes") {
		t.Fatalf("JoinRequests of 20 pages of 4 MiB: %v", err)
	}
	if n := pages.Load(); n != 16 {
		t.Fatalf("JoinRequests fetched %d pages of 4 MiB, want 16 (64 MiB)", n)
	}
	pages.Store(0)
	var last error
	for _, err := range rawClient(t, url, &adp.ClientOptions{MaxListBytes: 10 << 20}).PublicRooms(ctx, adp.RoomQuery{}) {
		last = err
	}
	if !errors.Is(last, httpc.ErrCursor) || pages.Load() != 3 {
		t.Fatalf("PublicRooms of 4 MiB pages within 10 MiB: %d pages, %v", pages.Load(), last)
	}
}

// TestClientMaxRecords: one call reads at most MaxRecords records, and a
// Sync that stopped there resumes on the next call.
func TestClientMaxRecords(t *testing.T) {
	ctx := context.Background()
	w := newHostileWorld(t, nil)
	alice := w.client("alice", nil)
	room := publicRoom(t, alice, "bounded")
	for range 6 {
		if _, err := alice.SendMessage(ctx, room, msg("m")); err != nil {
			t.Fatal(err)
		}
	}
	c := w.client("carol", &adp.ClientOptions{MaxRecords: 3})
	var n int
	var last error
	for _, err := range c.Events(ctx, room, 0) {
		if err != nil {
			last = err
			break
		}
		n++
	}
	if n != 3 || !errors.Is(last, adp.ErrInvalidRecord) || !strings.Contains(last.Error(), "MaxRecords") {
		t.Fatalf("Events: %d records, %v", n, last)
	}
	l, err := c.Sync(ctx, room) // 1-3 are held: 4-6 now
	if l.Seq != 6 || err == nil {
		t.Fatalf("Sync: %d, %v", l.Seq, err)
	}
	if l, err := c.Sync(ctx, room); l.Seq != 7 || err != nil {
		t.Fatalf("second Sync: %d, %v", l.Seq, err)
	}
}

// TestClientAttemptTimeout: every attempt is bounded in time. A host that
// sends its headers and then
// drips the body is cut off by the per-attempt timeout, not the caller's
// deadline.
func TestClientAttemptTimeout(t *testing.T) {
	url := rawHost(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		for range 100 {
			if _, err := w.Write([]byte(" ")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err := rawClient(t, url, &adp.ClientOptions{AttemptTimeout: 150 * time.Millisecond}).GetRoom(ctx, "r1")
	if !errors.Is(err, httpc.ErrAttemptTimeout) || time.Since(start) > 2*time.Second {
		t.Fatalf("GetRoom after %v: %v", time.Since(start), err)
	}
}

// TestClientDraftWithoutDiscovery: a client not told its host's draft
// reads the discovery document once; a host without one (not_found, the
// document being a SHOULD) serves the default draft, while a failed read
// (a 503) is an error the next call tries again, never a guess.
func TestClientDraftWithoutDiscovery(t *testing.T) {
	var reads atomic.Int64
	var fail atomic.Bool
	fail.Store(true)
	url := rawHost(t, func(w http.ResponseWriter, r *http.Request) {
		reads.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if fail.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"error":{"code":"service_unavailable","message":"later"}}`))
			return
		}
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"error":{"code":"not_found","message":"no document"}}`))
	})
	// Not rawClient, which tells the seed draft: this client reads it.
	c, err := adp.NewClient(url, &adp.ClientOptions{Signer: hostileKey("victim"), AllowLoopbackHTTP: true, Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Draft(context.Background()); err == nil {
		t.Fatal("a failed discovery read gave a draft")
	}
	if _, ok := c.KnownDraft(); ok {
		t.Fatal("a failed discovery read was kept")
	}
	fail.Store(false)
	d, err := c.Draft(context.Background())
	if err != nil || d != adp.Draft20260704 {
		t.Fatalf("a host without a discovery document: %v, %v", d, err)
	}
	n := reads.Load()
	if _, err := c.Draft(context.Background()); err != nil || reads.Load() != n {
		t.Fatalf("the draft was read again: %v, %d reads", err, reads.Load())
	}
}
