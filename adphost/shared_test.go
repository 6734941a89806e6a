package adphost_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/sse"
)

// shared is n Hosts on one Store behind one origin: a round-robin
// handler sends each request to the next host, as a reverse proxy in
// front of n processes would. pinned(i) is a client transport that always
// reaches host i.
type shared struct {
	*world
	hosts []*adphost.Host
	addrs []string
}

func newShared(t *testing.T, n int, store adphost.Store, opts *adphost.Options) *shared {
	t.Helper()
	stores := make([]adphost.Store, n)
	for i := range stores {
		stores[i] = store
	}
	return newSharedStores(t, stores, opts)
}

// newSharedStores is newShared with host i on stores[i] (views of one
// Store).
func newSharedStores(t *testing.T, stores []adphost.Store, opts *adphost.Options) *shared {
	t.Helper()
	n := len(stores)
	w := &world{t: t, clock: newClock()}
	front := httptest.NewUnstartedServer(nil)
	origin, err := identity.ParseOrigin("http://"+front.Listener.Addr().String(), &identity.OriginOptions{AllowLoopbackHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	s := &shared{world: w}
	for _, store := range stores {
		var o adphost.Options
		if opts != nil {
			o = *opts
		}
		o.Origin, o.Store, o.Now, o.Heartbeat = origin, store, w.clock.Now, -1
		h, err := adphost.New(context.Background(), &o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(h.Close)
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		s.hosts = append(s.hosts, h)
		s.addrs = append(s.addrs, srv.Listener.Addr().String())
	}
	var next atomic.Int64
	front.Config.Handler = http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		s.hosts[int(next.Add(1))%n].ServeHTTP(rw, r)
	})
	front.Start()
	t.Cleanup(front.Close)
	w.host, w.url, w.hc = s.hosts[0], front.URL, front.Client()
	return s
}

// pinned returns an HTTP client that talks to the origin but always
// reaches host i.
func (s *shared) pinned(i int) *http.Client {
	addr := s.addrs[i]
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}}}
}

// TestSharedStoreAlternating: hosts sharing a Store serve one host. With
// requests alternating between two hosts, every write is accepted: a host
// whose replica is behind catches up from the Store and judges the write
// again, instead of refusing it with room_head_mismatch.
func TestSharedStoreAlternating(t *testing.T) {
	ctx := ctxT(t)
	s := newShared(t, 2, adphost.NewMemoryStore(), &adphost.Options{RateLimits: adphost.Unlimited()})
	alice, bob := s.client("alice"), s.client("bob")
	room := mustv(alice.CreateRoom(ctx, roomSpec(t, adp.VisibilityPublic, "shared"))).RoomID
	mustv(bob.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker}))
	for i := range 20 {
		c := alice
		if i%3 == 0 {
			c = bob
		}
		env := mustv(adp.NewMessage(ctx, c.Author(), headBase(t, c, room), text("m")))
		if _, err := c.Submit(ctx, room, env); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	l := mustv(alice.Sync(ctx, room))
	if l.Seq != 22 {
		t.Fatalf("log has %d records, want 22", l.Seq)
	}
}

// TestLogReadsByBytes: reads of a room's log that the page budget cuts
// short (here every read, at one record) go on until the log's end: two
// hosts catch up on each other's writes (their notifications lost, so
// on their reads), and a new host loads the room from its snapshot and
// the records after it.
func TestLogReadsByBytes(t *testing.T) {
	ctx := ctxT(t)
	store := &notifyingStore{MemoryStore: adphost.NewMemoryStore(), drop: true}
	opts := &adphost.Options{RateLimits: adphost.Unlimited(), MaxPageBytes: 1, SnapshotEvery: 4}
	s := newShared(t, 2, store, opts)
	a, b := s.clientWith("alice", s.pinned(0)), s.clientWith("bob", s.pinned(1))
	room := mustv(a.CreateRoom(ctx, roomSpec(t, adp.VisibilityPublic, "bytes"))).RoomID
	mustv(b.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker}))
	for i := range 12 {
		c := a
		if i%4 == 3 {
			c = b // three records behind
		}
		env := mustv(adp.NewMessage(ctx, c.Author(), headBase(t, c, room), text("m")))
		if _, err := c.Submit(ctx, room, env); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	fresh := newShared(t, 1, store, opts)
	if l := mustv(fresh.client("carol").Sync(ctx, room)); l.Seq != 14 {
		t.Fatalf("a new host's room is at seq %d, want 14", l.Seq)
	}
}

// TestSharedStoreRace: two head-checked writes on one head, sent at once
// to two hosts: one record and one clean room_head_mismatch. The same
// envelope sent to both at once: one record, and the other answer is the
// exact-resubmission answer with it.
func TestSharedStoreRace(t *testing.T) {
	ctx := ctxT(t)
	s := newShared(t, 2, adphost.NewMemoryStore(), &adphost.Options{RateLimits: adphost.Unlimited()})
	alice := s.client("alice")
	room := mustv(alice.CreateRoom(ctx, roomSpec(t, adp.VisibilityPublic, "race"))).RoomID
	bob := s.client("bob")
	mustv(bob.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker}))
	// Two authors: one author's racing envelopes could also lose on the
	// nonce rule, rightly.
	a := s.clientWith("alice", s.pinned(0))
	b := s.clientWith("bob", s.pinned(1))
	for round := range 5 {
		base := headBase(t, alice, room)
		e1 := mustv(adp.NewMessage(ctx, alice.Author(), base, text("one")))
		e2 := mustv(adp.NewMessage(ctx, bob.Author(), base, text("two")))
		var wg sync.WaitGroup
		var err1, err2 error
		wg.Go(func() { _, err1 = a.Submit(ctx, room, e1) })
		wg.Go(func() { _, err2 = b.Submit(ctx, room, e2) })
		wg.Wait()
		if (err1 == nil) == (err2 == nil) {
			t.Fatalf("round %d: errors %v and %v, want exactly one", round, err1, err2)
		}
		if err := cmpOr(err1, err2); !isCode(err, adp.CodeRoomHeadMismatch) {
			t.Fatalf("round %d: the loser got %v", round, err)
		}
	}
	env := mustv(adp.NewMessage(ctx, alice.Author(), headBase(t, alice, room), text("same")))
	var wg sync.WaitGroup
	var r1, r2 *adp.Record
	var err1, err2 error
	wg.Go(func() { r1, err1 = a.Submit(ctx, room, env) })
	wg.Go(func() { r2, err2 = b.Submit(ctx, room, env) })
	wg.Wait()
	if err1 != nil || err2 != nil {
		t.Fatalf("the same envelope twice: %v, %v", err1, err2)
	}
	if r1.Seq != r2.Seq || r1.Hash != r2.Hash {
		t.Fatalf("two records for one envelope: %d and %d", r1.Seq, r2.Seq)
	}
	if l := mustv(alice.Sync(ctx, room)); l.Seq != 8 {
		t.Fatalf("log has %d records, want 8", l.Seq)
	}
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func isCode(err error, code identity.Code) bool {
	var e *identity.Error
	return errors.As(err, &e) && e.Code == code
}

// countingStore records where the host starts reading each room's log.
type countingStore struct {
	adphost.Store
	mu    sync.Mutex
	first map[string]int64 // the afterSeq of a room's first Records call
}

func (c *countingStore) Records(ctx context.Context, room string, after int64, limit, maxBytes int) ([]*adp.Record, error) {
	c.mu.Lock()
	if _, ok := c.first[room]; !ok {
		c.first[room] = after
	}
	c.mu.Unlock()
	return c.Store.Records(ctx, room, after, limit, maxBytes)
}

// TestRoomCache: the host keeps at most RoomCache replicas; start-up loads
// no room; an evicted room is rebuilt from its newest snapshot (taken
// every SnapshotEvery records) and the records after it, not from seq 1;
// the lists are served from the Store's index without loading rooms.
func TestRoomCache(t *testing.T) {
	ctx := ctxT(t)
	store := adphost.NewMemoryStore()
	opts := &adphost.Options{RateLimits: adphost.Unlimited(), RoomCache: 2, SnapshotEvery: 4}
	s := newShared(t, 1, store, opts)
	alice := s.client("alice")
	var rooms []string
	for i := range 5 {
		room := mustv(alice.CreateRoom(ctx, roomSpec(t, adp.VisibilityPublic, "cache"))).RoomID
		rooms = append(rooms, room)
		for range 5 + i {
			env := mustv(adp.NewMessage(ctx, alice.Author(), headBase(t, alice, room), text("m")))
			mustv(alice.Submit(ctx, room, env))
		}
		if n := s.host.CachedRooms(); n > 2 {
			t.Fatalf("%d rooms cached, bound 2", n)
		}
	}
	if seq, _, _ := store.Snapshot(ctx, rooms[0]); seq != 4 {
		t.Fatalf("room 0 (6 records) has its snapshot at %d, want 4", seq)
	}

	// A new host on the same store: nothing loaded until used.
	cs := &countingStore{Store: store, first: map[string]int64{}}
	s2 := newShared(t, 1, cs, opts)
	if n := s2.host.CachedRooms(); n != 0 {
		t.Fatalf("start-up loaded %d rooms", n)
	}
	bob := s2.client("bob")
	n := 0
	for r, err := range bob.PublicRooms(ctx, adp.RoomQuery{}) {
		if err != nil {
			t.Fatal(err)
		}
		if r.Seq < 6 || r.Status != adp.StatusActive {
			t.Fatalf("listed %+v", r)
		}
		n++
	}
	if n != 5 || s2.host.CachedRooms() != 0 {
		t.Fatalf("public rooms: %d listed, %d rooms loaded", n, s2.host.CachedRooms())
	}
	l := mustv(bob.Sync(ctx, rooms[4])) // 10 records: snapshot at 8
	if l.Seq != 10 {
		t.Fatalf("room 4 synced to %d", l.Seq)
	}
	cs.mu.Lock()
	after := cs.first[rooms[4]]
	cs.mu.Unlock()
	// Its first read starts at the snapshot's own record (seq 8), which
	// checks the snapshot against the log, and goes on with the ones
	// after it.
	if after != 7 {
		t.Fatalf("room 4 was rebuilt reading from seq %d, want from its snapshot's record, 8", after+1)
	}
	env := mustv(adp.NewMessage(ctx, alice.Author(), headBase(t, bob, rooms[4]), text("after a rebuild")))
	if _, err := s2.clientWith("alice", nil).Submit(ctx, rooms[4], env); err != nil {
		t.Fatal(err)
	}
}

// headMovedStore always loses the append race: "another process"
// appends a message of its author's just before every append.
type headMovedStore struct {
	*adphost.MemoryStore
	other *envelope.Author
}

func (s headMovedStore) Append(ctx context.Context, c *adphost.Commit) error {
	room := c.Record.RoomID
	last := mustv(s.Records(ctx, room, mustv(s.Head(ctx, room))-1, 1, 1))[0]
	env := mustv(adp.NewMessage(ctx, s.other, adp.Base{RoomID: room, Seq: last.Seq, Hash: last.Hash}, text("first")))
	if err := s.MemoryStore.Append(ctx, commitOf(adp.NewRecord(room, last, last.ReceivedAt, env))); err != nil {
		return err
	}
	return adphost.ErrHeadMoved
}

// TestAppendDeadline: a write that keeps losing its room's append race is
// refused, after AppendDeadline, with a retryable rate_limited and
// Retry-After: 1.
func TestAppendDeadline(t *testing.T) {
	ctx := ctxT(t)
	store := adphost.NewMemoryStore()
	s := newShared(t, 1, store, &adphost.Options{RateLimits: adphost.Unlimited()})
	alice := s.client("alice")
	room := mustv(alice.CreateRoom(ctx, roomSpec(t, adp.VisibilityPublic, "busy"))).RoomID
	mustv(alice.DefineType(ctx, room, decl(t, nudgeDecl)))
	base := headBase(t, alice, room)
	busy := newShared(t, 1, headMovedStore{store, alice.Author()}, &adphost.Options{RateLimits: adphost.Unlimited(), AppendDeadline: 20 * time.Millisecond})
	// A signal: anchored, not head-checked, so the other process's
	// records do not refuse it; it only keeps losing the race.
	env := mustv(adp.NewCustom(ctx, alice.Author(), base, alice.Verified(room).Registry(), "team.nudge", map[string]int{}))
	start := time.Now()
	resp, err := busy.hc.Post(busy.url+"/v1/rooms/"+room, "application/json", bytes.NewReader(env.AppendJSON(nil)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("HTTP %d, Retry-After %q; want 429 and 1", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the refusal took %v", d)
	}
}

// notifyingStore is a MemoryStore shared in one process that tells its
// listeners of every append, like pgstore's LISTEN/NOTIFY; with drop set,
// every notification is lost.
type notifyingStore struct {
	*adphost.MemoryStore
	drop bool
	mu   sync.Mutex
	subs []func(string, int64)
}

func (n *notifyingStore) Append(ctx context.Context, c *adphost.Commit) error {
	if err := n.MemoryStore.Append(ctx, c); err != nil {
		return err
	}
	n.mu.Lock()
	subs := slices.Clone(n.subs)
	n.mu.Unlock()
	if !n.drop {
		for _, f := range subs {
			f(c.Record.RoomID, c.Record.Seq)
		}
	}
	return nil
}

func (n *notifyingStore) Listen(ctx context.Context, notify func(string, int64), _ func()) error {
	n.mu.Lock()
	n.subs = append(n.subs, notify)
	n.mu.Unlock()
	<-ctx.Done()
	return ctx.Err()
}

// TestSharedStoreLive: a subscriber on one host receives every record
// accepted by another host on the same Store, in order and once each —
// through the notifications, and, when every notification is lost,
// through the periodic repair.
func TestSharedStoreLive(t *testing.T) {
	for _, drop := range []bool{false, true} {
		t.Run(fmt.Sprintf("lost=%v", drop), func(t *testing.T) {
			ctx := ctxT(t)
			store := &notifyingStore{MemoryStore: adphost.NewMemoryStore(), drop: drop}
			s := newShared(t, 2, store, &adphost.Options{RateLimits: adphost.Unlimited(), RepairInterval: 20 * time.Millisecond})
			a := s.clientWith("alice", s.pinned(0))
			room := mustv(a.CreateRoom(ctx, roomSpec(t, adp.VisibilityPublic, "live"))).RoomID
			follower := s.clientWith("alice", s.pinned(1))
			fctx, cancel := context.WithCancel(ctx)
			defer cancel()
			got := make(chan int64, 64)
			go func() {
				for it, err := range sse.Follow(fctx, &sse.Options{Client: follower, RoomID: room, HTTPClient: s.pinned(1)}) {
					if err == nil && it.Kind == sse.KindRecord {
						got <- it.Record.Seq
					}
				}
			}()
			if seq := <-got; seq != 1 {
				t.Fatalf("first record %d", seq)
			}
			for i := range 10 {
				env := mustv(adp.NewMessage(ctx, a.Author(), headBase(t, a, room), text("m")))
				mustv(a.Submit(ctx, room, env))
				select {
				case seq := <-got:
					if seq != int64(i+2) {
						t.Fatalf("record %d arrived as seq %d", i+2, seq)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("record %d never reached the other host's subscriber", i+2)
				}
			}
		})
	}
}

// lateIndexStore answers the next hide exact-resubmission lookups with
// nothing, as a Store does for a host that looked before another process's
// append of the same envelope landed.
type lateIndexStore struct {
	*adphost.MemoryStore
	hide atomic.Int32
}

func (s *lateIndexStore) RecordByEvent(ctx context.Context, h envelope.Hash) (*adp.Record, error) {
	if s.hide.Add(-1) >= 0 {
		return nil, nil
	}
	return s.MemoryStore.RecordByEvent(ctx, h)
}

// TestSharedStoreSameEnvelopeLosesNonceRace: one envelope reaches two
// hosts at once; the second looked for it before the first appended, so
// it passes the resubmission check and then finds its nonce used. Its
// answer must be the exact-resubmission answer with the first host's
// record, not nonce_not_greater.
func TestSharedStoreSameEnvelopeLosesNonceRace(t *testing.T) {
	ctx := ctxT(t)
	store := &lateIndexStore{MemoryStore: adphost.NewMemoryStore()}
	s := newShared(t, 2, store, &adphost.Options{RateLimits: adphost.Unlimited()})
	alice := s.client("alice")
	room := mustv(alice.CreateRoom(ctx, roomSpec(t, adp.VisibilityPublic, "late index"))).RoomID
	env := mustv(adp.NewMessage(ctx, alice.Author(), headBase(t, alice, room), text("same")))
	first := mustv(s.clientWith("alice", s.pinned(0)).Submit(ctx, room, env))
	store.hide.Store(1)
	second, err := s.clientWith("alice", s.pinned(1)).Submit(ctx, room, env)
	if err != nil {
		t.Fatalf("the same envelope on the second host: %v", err)
	}
	if second.Seq != first.Seq || second.Hash != first.Hash {
		t.Fatalf("two records for one envelope: %d and %d", first.Seq, second.Seq)
	}
	if store.hide.Load() >= 0 {
		t.Fatal("the second host never looked the envelope up")
	}
}

// lateStateStore also answers the next hideNonce nonce lookups with none:
// the lookups of a host that read before another process's append of
// the same envelope landed, whose replica caught up from that append
// before it judged the write.
type lateStateStore struct {
	lateIndexStore
	hideNonce atomic.Int32
}

func (s *lateStateStore) MaxNonce(ctx context.Context, actor identity.AgentID) (int64, int64, error) {
	if s.hideNonce.Add(-1) >= 0 {
		return 0, 0, nil
	}
	return s.MemoryStore.MaxNonce(ctx, actor)
}

// TestSharedStoreSameEnvelopeReplicaCaughtUp: as above, but the second
// host's lookups (resubmission and nonce) both ran before the first
// host's append, and its replica caught up with that append (here through
// another agent's write) before it judged the envelope, so the room itself finds the
// envelope already accepted. The answer must still be the
// exact-resubmission answer, not invalid_event (TestManyProcessesOneHost
// met it over PostgreSQL, where a notification caught the replica up).
func TestSharedStoreSameEnvelopeReplicaCaughtUp(t *testing.T) {
	ctx := ctxT(t)
	store := &lateStateStore{lateIndexStore: lateIndexStore{MemoryStore: adphost.NewMemoryStore()}}
	s := newShared(t, 2, store, &adphost.Options{RateLimits: adphost.Unlimited()})
	alice := s.client("alice")
	room := mustv(alice.CreateRoom(ctx, roomSpec(t, adp.VisibilityPublic, "caught up"))).RoomID
	env := mustv(adp.NewMessage(ctx, alice.Author(), headBase(t, alice, room), text("same")))
	first := mustv(s.clientWith("alice", s.pinned(0)).Submit(ctx, room, env))
	// bob's join through the second host makes its replica catch up
	// past alice's record.
	mustv(s.clientWith("bob", s.pinned(1)).Join(ctx, room, adp.Join{Role: adp.RoleSpeaker}))
	second := s.clientWith("alice", s.pinned(1))
	store.hide.Store(1)
	store.hideNonce.Store(1)
	rec, err := second.Submit(ctx, room, env)
	if err != nil {
		t.Fatalf("the same envelope on the second host: %v", err)
	}
	if rec.Seq != first.Seq || rec.Hash != first.Hash {
		t.Fatalf("two records for one envelope: %d and %d", first.Seq, rec.Seq)
	}
	if store.hide.Load() > 0 || store.hideNonce.Load() > 0 {
		t.Fatal("the second host never looked the envelope or its nonce up")
	}
}

// recordsCounting is a view of a notifyingStore that counts its reads of
// rooms' logs.
type recordsCounting struct {
	*notifyingStore
	reads atomic.Int64
}

func (c *recordsCounting) Records(ctx context.Context, room string, after int64, limit, maxBytes int) ([]*adp.Record, error) {
	c.reads.Add(1)
	return c.notifyingStore.Records(ctx, room, after, limit, maxBytes)
}

// TestSharedStoreIdleReplicaWaits: a host whose cached replica no one
// follows does not replay another host's writes as their notifications
// arrive (that would make every process replay every other's writes); it
// catches up when the room is next used, and answers with the Store's
// state then.
func TestSharedStoreIdleReplicaWaits(t *testing.T) {
	ctx := ctxT(t)
	shared := &notifyingStore{MemoryStore: adphost.NewMemoryStore()}
	store := &recordsCounting{notifyingStore: shared} // host 1's view
	s := newSharedStores(t, []adphost.Store{shared, store}, &adphost.Options{RateLimits: adphost.Unlimited(), RepairInterval: time.Hour})
	a := s.clientWith("alice", s.pinned(0))
	room := mustv(a.CreateRoom(ctx, roomSpec(t, adp.VisibilityPublic, "idle"))).RoomID
	b := s.clientWith("alice", s.pinned(1))
	mustv(b.Sync(ctx, room)) // host 1 caches the room
	before := store.reads.Load()
	for range 10 {
		env := mustv(adp.NewMessage(ctx, a.Author(), headBase(t, a, room), text("m")))
		mustv(a.Submit(ctx, room, env))
	}
	time.Sleep(50 * time.Millisecond) // time for any background catch-up
	if n := store.reads.Load() - before; n != 0 {
		t.Fatalf("host 1 read the log %d times for a replica no one follows", n)
	}
	if l := mustv(b.Sync(ctx, room)); l.Seq != 11 {
		t.Fatalf("host 1 answered seq %d, want 11", l.Seq)
	}
}
