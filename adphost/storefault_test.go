package adphost_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/boltstore"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
)

var errStoreDown = errors.New("test: the database is down (connection refused)")

// downStore is a batchStore whose database can go away: while down, every
// append and every read fails; armed, the next batch append takes it down
// (and fails).
type downStore struct {
	*batchStore
	armed  atomic.Bool
	down   atomic.Bool
	killed atomic.Int64 // batches whose append took the database down
}

func (d *downStore) fail() error {
	if d.down.Load() {
		return errStoreDown
	}
	return nil
}

func (d *downStore) AppendBatch(ctx context.Context, cs []*adphost.Commit) error {
	if d.armed.Swap(false) {
		d.down.Store(true)
		d.killed.Add(int64(len(cs)))
	}
	if err := d.fail(); err != nil {
		return err
	}
	return d.batchStore.AppendBatch(ctx, cs)
}

func (d *downStore) Append(ctx context.Context, c *adphost.Commit) error {
	if err := d.fail(); err != nil {
		return err
	}
	return d.batchStore.Append(ctx, c)
}

func (d *downStore) WriteState(ctx context.Context, room string, actor identity.AgentID, ev envelope.Hash) (adphost.WriteState, error) {
	if err := d.fail(); err != nil {
		return adphost.WriteState{}, err
	}
	return d.batchStore.WriteState(ctx, room, actor, ev)
}

func (d *downStore) Snapshot(ctx context.Context, room string) (int64, []byte, error) {
	if err := d.fail(); err != nil {
		return 0, nil, err
	}
	return d.batchStore.Snapshot(ctx, room)
}

func (d *downStore) Records(ctx context.Context, room string, after int64, n, maxBytes int) ([]*adp.Record, error) {
	if err := d.fail(); err != nil {
		return nil, err
	}
	return d.batchStore.Records(ctx, room, after, n, maxBytes)
}

func (d *downStore) Head(ctx context.Context, room string) (int64, error) {
	if err := d.fail(); err != nil {
		return 0, err
	}
	return d.batchStore.Head(ctx, room)
}

// postEnv sends a signed envelope to the room and returns the status, the
// Retry-After header and the body.
func postEnv(t *testing.T, hc *http.Client, url string, env *envelope.Envelope) (int, string, []byte) {
	t.Helper()
	resp, err := hc.Post(url, "application/json", bytes.NewReader(env.AppendJSON(nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), b
}

// TestStoreDownDuringBatch: a group-commit batch whose append fails
// because the database went away is taken back out of the replica without
// reading the Store: every write of it is answered 503
// service_unavailable with Retry-After (an outsider's refusal, judged
// before the append, keeps its answer), the host keeps serving the stored
// head, and once the database is back the same envelopes, sent again,
// are each stored once and the room takes new writes.
func TestStoreDownDuringBatch(t *testing.T) {
	ctx := ctxT(t)
	bs := &batchStore{MemoryStore: adphost.NewMemoryStore(), gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	close(bs.gate)
	store := &downStore{batchStore: bs}
	s := newShared(t, 1, store, &adphost.Options{RateLimits: adphost.Unlimited()})
	alice := s.client("alice")
	room := mustv(alice.CreateRoom(ctx, roomSpec(t, adp.VisibilityPublic, "down"))).RoomID
	mustv(alice.DefineType(ctx, room, decl(t, nudgeDecl)))
	clients := []*adp.Client{alice}
	for _, n := range []string{"bob", "carol", "dave", "erin"} {
		c := s.client(n)
		mustv(c.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker}))
		clients = append(clients, c)
	}
	clients = append(clients, s.client("mallory")) // no member
	mustv(alice.Sync(ctx, room))
	reg := alice.Verified(room).Registry()
	base := headBase(t, alice, room)
	envs := make([]*envelope.Envelope, len(clients))
	for i, c := range clients {
		envs[i] = mustv(adp.NewCustom(ctx, c.Author(), base, reg, "team.nudge", map[string]int{}))
	}
	before := mustv(store.Head(ctx, room))

	// The first write holds the room in its append; the others queue
	// behind it and form a batch, whose append meets a dead database.
	url := s.url + "/v1/rooms/" + room
	status, retry, bodies := make([]int, len(envs)), make([]string, len(envs)), make([][]byte, len(envs))
	bs.gate, bs.entered = make(chan struct{}), make(chan struct{}, 1) // entered: not the setup's appends
	var wg sync.WaitGroup
	wg.Go(func() { status[0], retry[0], bodies[0] = postEnv(t, s.hc, url, envs[0]) })
	<-bs.entered
	for i := 1; i < len(envs); i++ {
		wg.Go(func() { status[i], retry[i], bodies[i] = postEnv(t, s.hc, url, envs[i]) })
	}
	waitQueued(t, s.hosts[0], room, len(envs)-1)
	store.armed.Store(true)
	close(bs.gate)
	wg.Wait()
	if n := store.killed.Load(); n != int64(len(envs)-2) {
		t.Fatalf("the failed batch had %d writes, want the %d members' queued ones", n, len(envs)-2)
	}
	if status[0] != http.StatusOK {
		t.Fatalf("the first write, stored before the database went away: %d %s", status[0], bodies[0])
	}
	for i := 1; i < len(envs)-1; i++ {
		if status[i] != http.StatusServiceUnavailable || retry[i] != "1" || !bytes.Contains(bodies[i], []byte(`"service_unavailable"`)) {
			t.Fatalf("write %d in the failed batch: %d, Retry-After %q, %s", i, status[i], retry[i], bodies[i])
		}
		if bytes.Contains(bodies[i], []byte("connection refused")) {
			t.Fatalf("write %d: the storage error reached the wire: %s", i, bodies[i])
		}
	}
	if last := len(envs) - 1; status[last] != http.StatusForbidden {
		t.Fatalf("the outsider's write in the failed batch: %d %s, want its refusal", status[last], bodies[last])
	}
	stored := before + 1
	if got := mustv(store.batchStore.Head(ctx, room)); got != stored {
		t.Fatalf("store head %d, want %d", got, stored)
	}

	// While the database is down the replica serves what is stored.
	reader := s.client("reader")
	if res, err := reader.GetRoom(ctx, room); err != nil || res.Seq != stored {
		t.Fatalf("while the database is down: %v, %v; want seq %d", res, err, stored)
	}
	// A write while it is down is no verdict either.
	late := mustv(adp.NewCustom(ctx, clients[1].Author(), base, reg, "team.nudge", map[string]int{"late": 1}))
	if st, ra, b := postEnv(t, s.hc, url, late); st != http.StatusServiceUnavailable || ra != "1" {
		t.Fatalf("a write while the database is down: %d, Retry-After %q, %s", st, ra, b)
	}

	store.down.Store(false)
	if res := mustv(reader.GetRoom(ctx, room)); res.Seq != stored {
		t.Fatalf("the host serves head %d, the Store's log ends at %d", res.Seq, stored)
	}
	// The writers send the same envelopes again: each is stored once.
	for i, env := range append(envs[1:len(envs)-1], late) {
		if st, _, b := postEnv(t, s.hc, url, env); st != http.StatusOK {
			t.Fatalf("resent write %d: %d %s", i, st, b)
		}
	}
	want := stored + int64(len(envs)-2) + 1
	if got := mustv(store.Head(ctx, room)); got != want {
		t.Fatalf("store head %d after the resends, want %d", got, want)
	}
	frank := s.client("frank")
	mustv(frank.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker}))
	if l := mustv(s.client("gina").Sync(ctx, room)); l.Seq != want+1 || mustv(store.Head(ctx, room)) != want+1 {
		t.Fatalf("after recovery: synced to %d, store head %d, want %d", l.Seq, mustv(store.Head(ctx, room)), want+1)
	}
}

// waitQueued waits until n writes of room wait in its group commit on h.
func waitQueued(t *testing.T, h *adphost.Host, room string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second) // a "not hours" guard only
	defer cancel()
	if err := adphost.WaitQueuedWrites(ctx, h, room, n); err != nil {
		t.Fatalf("waiting for %d queued writes: %v", n, err)
	}
}

// storeRoom appends a public room's room.create, as another host would
// have, straight to st.
func storeRoom(t *testing.T, st adphost.Store, id string) {
	t.Helper()
	ctx := context.Background()
	a := &envelope.Author{Signer: key("creator"), Nonces: identity.NewNonceSource(nil), Now: func() time.Time { return t0 }}
	env := mustv(adp.NewRoomCreate(ctx, a, roomSpec(t, adp.VisibilityPublic, "stored")))
	ev := mustv(adp.ParseEvent(env))
	ms := t0.UnixMilli()
	err := st.Append(ctx, &adphost.Commit{Record: adp.NewRecord(id, nil, ms, env),
		Nonce: adphost.NonceAdvance{Actor: ev.Actor, Nonce: ev.Nonce, Now: ms, ExpiresAt: ms + 600_000},
		Index: &adphost.RoomIndex{Summary: adp.RoomSummary{ID: id, Status: adp.StatusActive, Creator: ev.Actor, Topic: "stored",
			Visibility: adp.VisibilityPublic, StartTime: ms, EndTime: ms + 3_600_000, Members: 1}}})
	if err != nil {
		t.Fatal(err)
	}
}

// TestOutsiderChargedOnce: an outsider's refused write is charged to its
// quota when its batch judges it, and not again when the batch loses the
// append race and the writes that passed are judged on their own.
func TestOutsiderChargedOnce(t *testing.T) {
	ctx := ctxT(t)
	store := &batchStore{MemoryStore: adphost.NewMemoryStore(), gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	close(store.gate)
	limits := adphost.Unlimited()
	limits.Control = 10
	s := newShared(t, 1, store, &adphost.Options{RateLimits: limits})
	alice := s.client("alice")
	room := mustv(alice.CreateRoom(ctx, roomSpec(t, adp.VisibilityPrivate, "charged"))).RoomID
	mustv(alice.DefineType(ctx, room, decl(t, nudgeDecl)))
	var members []*adp.Client
	for _, n := range []string{"bob", "carol"} {
		c := s.client(n)
		jr := mustv(c.RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleSpeaker}))
		mustv(alice.ReviewJoin(ctx, room, adp.JoinReview{Request: jr.Request, Decision: adp.DecisionApprove, Role: adp.RoleSpeaker}))
		mustv(c.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker, RequestID: jr.Request.ID}))
		members = append(members, c)
	}
	mustv(alice.Sync(ctx, room))
	reg := alice.Verified(room).Registry()
	base := headBase(t, alice, room)
	mallory := s.client("mallory")
	// "Another process" appends just before the batch: it loses the race.
	last := mustv(store.Records(ctx, room, mustv(store.Head(ctx, room))-1, 1, 1))[0]
	steal := mustv(adp.NewCustom(ctx, alice.Author(), base, reg, "team.nudge", map[string]int{"steal": 1}))
	store.steal = []*adp.Record{adp.NewRecord(room, last, last.ReceivedAt, steal)}
	used := func() int {
		q := adphost.Quota{Key: id("mallory").String() + "||control", Limit: 10, Now: s.clock.Now().UnixMilli(), Window: 60_000}
		return mustv(store.QuotaUsed(ctx, q))
	}

	store.gate, store.entered = make(chan struct{}), make(chan struct{}, 1) // entered: not the setup's appends
	cl := []*adp.Client{alice, members[0], mallory, members[1]}
	errs := make([]error, len(cl))
	var wg sync.WaitGroup
	first := mustv(adp.NewCustom(ctx, alice.Author(), base, reg, "team.nudge", map[string]int{"first": 1}))
	wg.Go(func() { _, errs[0] = alice.Submit(ctx, room, first) })
	<-store.entered
	for i := 1; i < len(cl); i++ {
		env := mustv(adp.NewCustom(ctx, cl[i].Author(), base, reg, "team.nudge", map[string]int{}))
		wg.Go(func() { _, errs[i] = cl[i].Submit(ctx, room, env) })
	}
	waitQueued(t, s.hosts[0], room, len(cl)-1)
	close(store.gate)
	wg.Wait()
	store.mu.Lock()
	lost := len(store.steal) == 0
	store.mu.Unlock()
	if !lost {
		t.Fatal("no batch lost the race")
	}
	if errs[0] != nil || errs[1] != nil || errs[3] != nil || !errors.Is(errs[2], adp.ErrRoomNotFound) {
		t.Fatalf("answers %v; want the members' writes accepted and the outsider's refused as room_not_found", errs)
	}
	if n := used(); n != 1 {
		t.Fatalf("one refused write was charged %d times", n)
	}
}

// gatedLoadStore is a MemoryStore whose Snapshot, the first read of a
// room's load, waits for the gate (or its context) and counts the loads.
type gatedLoadStore struct {
	*adphost.MemoryStore
	gate  chan struct{}
	loads atomic.Int64
}

func (g *gatedLoadStore) Snapshot(ctx context.Context, room string) (int64, []byte, error) {
	g.loads.Add(1)
	select {
	case <-g.gate:
	case <-ctx.Done():
		return 0, nil, ctx.Err()
	}
	return g.MemoryStore.Snapshot(ctx, room)
}

// TestLoadOutlivesFirstRequester: a room's load serves every request
// waiting for it: when the request that started it goes away, the load
// goes on (under its own bound), and the others get the room.
func TestLoadOutlivesFirstRequester(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		const room = "loadroom000000000000"
		mem := adphost.NewMemoryStore()
		storeRoom(t, mem, room)
		store := &gatedLoadStore{MemoryStore: mem, gate: make(chan struct{})}
		origin := mustv(identity.ParseOrigin("https://host.example", nil))
		h := mustv(adphost.New(ctx, &adphost.Options{Origin: origin, Store: store, Now: newClock().Now, Heartbeat: -1}))
		defer h.Close()
		get := func(ctx context.Context) *httptest.ResponseRecorder {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodGet, "/v1/rooms/"+room, nil))
			return rec
		}
		cctx, cancel := context.WithCancel(ctx)
		go get(cctx) // starts the load, which waits for the gate
		synctest.Wait()
		second := make(chan *httptest.ResponseRecorder, 1)
		go func() { second <- get(ctx) }()
		synctest.Wait() // the second request waits for the same load
		cancel()        // the first client goes away
		synctest.Wait()
		close(store.gate)
		rec := <-second
		if rec.Code != http.StatusOK {
			t.Fatalf("the request that waited for the first one's load: %d %s", rec.Code, rec.Body)
		}
		if n := store.loads.Load(); n != 1 {
			t.Fatalf("%d loads, want the one both requests waited for", n)
		}
	})
}

// gatedAppendStore is a bbolt Store whose appends wait, when armed, for
// the gate; entered gets a value when one does.
type gatedAppendStore struct {
	*boltstore.Store
	armed   atomic.Bool
	gate    chan struct{}
	entered chan struct{}
}

func (g *gatedAppendStore) Append(ctx context.Context, c *adphost.Commit) error {
	if g.armed.Load() {
		g.entered <- struct{}{}
		<-g.gate
	}
	return g.Store.Append(ctx, c)
}

// TestNoEvictionDuringWrite: with a one-room cache on a single-process
// Store, a room whose write is in its append is not evicted by a read of
// another room, so a reader of the written room meanwhile loads no second
// replica without the record: once the write is answered, every read
// serves it.
func TestNoEvictionDuringWrite(t *testing.T) {
	ctx := ctxT(t)
	bolt, err := boltstore.Open(filepath.Join(t.TempDir(), "host.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bolt.Close() })
	store := &gatedAppendStore{Store: bolt, gate: make(chan struct{}), entered: make(chan struct{})}
	w := newWorld(t, &adphost.Options{Store: store, RoomCache: 1, RateLimits: adphost.Unlimited()})
	alice, reader := w.client("alice"), w.client("reader")
	a := mustv(alice.CreateRoom(ctx, roomSpec(t, adp.VisibilityPublic, "A"))).RoomID
	b := mustv(alice.CreateRoom(ctx, roomSpec(t, adp.VisibilityPublic, "B"))).RoomID
	mustv(reader.GetRoom(ctx, a))

	store.armed.Store(true)
	done := make(chan error, 1)
	go func() {
		_, err := alice.SendMessage(ctx, a, text("during"))
		done <- err
	}()
	<-store.entered // the write to A holds its room, in its append
	store.armed.Store(false)
	mustv(reader.GetRoom(ctx, b)) // loads B into the one-room cache
	read := make(chan int64, 1)
	go func() { read <- mustv(reader.GetRoom(ctx, a)).Seq }()
	close(store.gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	head := mustv(bolt.Head(ctx, a))
	if seq := <-read; seq != head && seq != head-1 {
		t.Fatalf("a read during the write served seq %d; the store's head is %d", seq, head)
	}
	if seq := mustv(reader.GetRoom(ctx, a)).Seq; seq != head {
		t.Fatalf("after the write the host serves seq %d; the store's head is %d", seq, head)
	}
}

// TestSnapshotThatDoesNotLoad: a stored snapshot that does not restore
// (truncated, a version this code does not read) or is not of the log (a
// seq it was not taken at) is ignored: the room is rebuilt from its log
// and a fresh snapshot stored in its place. An outsider asking for the
// private room meanwhile gets exactly a missing room's answer, and no
// answer carries the snapshot's error.
func TestSnapshotThatDoesNotLoad(t *testing.T) {
	ctx := ctxT(t)
	store := adphost.NewMemoryStore()
	w := newWorld(t, &adphost.Options{Store: store, SnapshotEvery: 10, RateLimits: adphost.Unlimited()})
	alice := w.client("alice")
	room := mustv(alice.CreateRoom(ctx, roomSpec(t, adp.VisibilityPrivate, "snapshots"))).RoomID
	for i := range 12 {
		mustv(alice.SendMessage(ctx, room, text(fmt.Sprint("message ", i))))
	}
	at, good := mustv2(store.Snapshot(ctx, room))
	if at != 10 {
		t.Fatalf("snapshot at %d, want 10", at)
	}
	missing := "nosuchroom0000000000"
	for name, bad := range map[string][]byte{
		"truncated":   good[:len(good)/2],
		"version 2":   bytes.Replace(good, []byte(`"version":1`), []byte(`"version":2`), 1),
		"another seq": good, // taken at 10, stored as of the head
	} {
		t.Run(name, func(t *testing.T) {
			latest := mustv(store.Head(ctx, room))
			if err := store.PutSnapshot(ctx, room, latest, bad); err != nil {
				t.Fatal(err)
			}
			// A fresh host: nothing cached.
			fresh := newWorld(t, &adphost.Options{Store: store, SnapshotEvery: 10, RateLimits: adphost.Unlimited()})
			get := func(path string) (int, string) {
				resp := mustv(fresh.hc.Get(fresh.url + path))
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(b)
			}
			for _, path := range []string{"/v1/rooms/%s", "/v1/rooms/%s/events"} {
				st, body := get(fmt.Sprintf(path, room))
				mst, mbody := get(fmt.Sprintf(path, missing))
				if st != mst || strings.ReplaceAll(body, room, missing) != mbody {
					t.Fatalf("an outsider's GET %s: %d %s; a missing room's: %d %s", fmt.Sprintf(path, room), st, body, mst, mbody)
				}
			}
			if _, err := fresh.client("mallory").GetRoom(ctx, room); !errors.Is(err, adp.ErrRoomNotFound) {
				t.Fatalf("an outsider with a token: %v", err)
			}
			res, err := fresh.client("alice").GetRoom(ctx, room)
			if err != nil || res.Seq != latest {
				t.Fatalf("the creator: %v, %v; want the room at seq %d", res, err, latest)
			}
			seq, snap := mustv2(store.Snapshot(ctx, room))
			restored, err := adp.RestoreRoom(snap, nil)
			if seq != latest || err != nil || restored.Latest().Seq != latest {
				t.Fatalf("the stored snapshot after the rebuild: seq %d, %v", seq, err)
			}
			rec := mustv(fresh.client("alice").SendMessage(ctx, room, text("after")))
			if rec.Seq != latest+1 {
				t.Fatalf("a write after the rebuild got seq %d", rec.Seq)
			}
		})
	}
}

func mustv2[A, B any](a A, b B, err error) (A, B) {
	if err != nil {
		panic(err)
	}
	return a, b
}

// divergedStore is a MemoryStore that, while armed, says the head moved
// on the next append and then serves, after the replica's latest record,
// one that does not link to it: the replica is off the Store's history.
type divergedStore struct {
	*adphost.MemoryStore
	armed  atomic.Bool
	forged *adp.Record
	served atomic.Bool
}

func (d *divergedStore) Append(ctx context.Context, c *adphost.Commit) error {
	if d.armed.Load() {
		return adphost.ErrHeadMoved
	}
	return d.MemoryStore.Append(ctx, c)
}

func (d *divergedStore) Records(ctx context.Context, room string, after int64, limit, maxBytes int) ([]*adp.Record, error) {
	if d.armed.Load() && after == d.forged.Seq-1 {
		d.armed.Store(false)
		d.served.Store(true)
		return []*adp.Record{d.forged}, nil
	}
	return d.MemoryStore.Records(ctx, room, after, limit, maxBytes)
}

// TestDivergedReplicaIsDropped: a replica that cannot apply the Store's
// next record is not on the Store's history: it is dropped (its live
// streams end, the write is answered service_unavailable, never
// invalid_record), and the next request loads the room afresh, with no
// restart.
func TestDivergedReplicaIsDropped(t *testing.T) {
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	store := &divergedStore{MemoryStore: adphost.NewMemoryStore()}
	w := newWorld(t, &adphost.Options{Store: store, RateLimits: adphost.Unlimited()})
	alice := w.client("alice")
	room := mustv(alice.CreateRoom(ctx, roomSpec(t, adp.VisibilityPublic, "diverged"))).RoomID
	mustv(alice.SendMessage(ctx, room, text("one")))
	last := mustv(store.MemoryStore.Records(ctx, room, 1, 1, 1<<20))[0]
	other := *last
	other.Hash[0] ^= 1 // a record the replica does not have
	env := mustv(adp.NewMessage(ctx, alice.Author(), adp.Base{RoomID: room, Seq: last.Seq, Hash: last.Hash}, text("forged")))
	store.forged = adp.NewRecord(room, &other, last.ReceivedAt, env)

	// A live stream of the replica.
	tok := mustv(identity.MintRequestToken(ctx, key("alice"), alice.Origin(), &identity.MintOptions{Now: w.clock.Now}))
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, w.url+"/v1/rooms/"+room+"/events/live", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp := mustv(w.hc.Do(req))
	defer resp.Body.Close()
	ended := make(chan struct{})
	go func() {
		io.Copy(io.Discard, resp.Body)
		close(ended)
	}()

	store.armed.Store(true)
	write := mustv(adp.NewMessage(ctx, alice.Author(), adp.Base{RoomID: room, Seq: last.Seq, Hash: last.Hash}, text("two")))
	url := w.url + "/v1/rooms/" + room
	if st, ra, b := postEnv(t, w.hc, url, write); st != http.StatusServiceUnavailable || ra != "1" {
		t.Fatalf("a write on the diverged replica: %d, Retry-After %q, %s", st, ra, b)
	}
	if !store.served.Load() {
		t.Fatal("the replica did not read the diverging record")
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the dropped replica's live stream did not end")
	}
	// The same write again: the room is loaded afresh and takes it.
	if st, _, b := postEnv(t, w.hc, url, write); st != http.StatusOK {
		t.Fatalf("the write after the drop: %d %s", st, b)
	}
	if l := mustv(w.client("bob").Sync(ctx, room)); l.Seq != 3 {
		t.Fatalf("synced to %d, want 3", l.Seq)
	}
}
