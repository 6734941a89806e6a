package adphost_test

import (
	"context"
	"errors"
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

// batchStore is a MemoryStore with group commit (adphost.BatchAppender)
// whose appends wait while the gate is closed, and which, while steal is
// positive, lets "another process" append a record just before a batch,
// so that the batch loses the append race.
type batchStore struct {
	*adphost.MemoryStore
	gate    chan struct{} // closed: open
	entered chan struct{} // one value per append that reached the gate
	states  atomic.Int64  // write states read: writes on their way to the room's lock
	snaps   atomic.Int64  // snapshots read (room loads)
	mu      sync.Mutex
	batches []int
	steal   []*adp.Record // appended, one per batch, ahead of the batch
}

func (b *batchStore) Snapshot(ctx context.Context, room string) (int64, []byte, error) {
	b.snaps.Add(1)
	return b.MemoryStore.Snapshot(ctx, room)
}

func (b *batchStore) wait() {
	select {
	case b.entered <- struct{}{}:
	default:
	}
	<-b.gate
}

func (b *batchStore) WriteState(ctx context.Context, room string, actor identity.AgentID, ev envelope.Hash) (adphost.WriteState, error) {
	defer b.states.Add(1)
	rec, _ := b.MemoryStore.RecordByEvent(ctx, ev)
	n, exp, _ := b.MemoryStore.MaxNonce(ctx, actor)
	head, _ := b.MemoryStore.Head(ctx, room)
	return adphost.WriteState{Record: rec, Nonce: n, NonceExpiresAt: exp, Head: head}, nil
}

func (b *batchStore) Append(ctx context.Context, c *adphost.Commit) error {
	b.wait()
	return b.MemoryStore.Append(ctx, c)
}

// AppendBatch is all or nothing for the failures these tests make (a
// moved head); the records go in one by one.
func (b *batchStore) AppendBatch(ctx context.Context, cs []*adphost.Commit) error {
	b.wait()
	b.mu.Lock()
	b.batches = append(b.batches, len(cs))
	var steal *adp.Record
	if len(b.steal) > 0 {
		steal, b.steal = b.steal[0], b.steal[1:]
	}
	b.mu.Unlock()
	if steal != nil {
		if err := b.MemoryStore.Append(ctx, commitOf(steal)); err != nil {
			return err
		}
	}
	if head, _ := b.MemoryStore.Head(ctx, cs[0].Record.RoomID); head != cs[0].Record.Seq-1 {
		return adphost.ErrHeadMoved
	}
	for _, c := range cs {
		if err := b.MemoryStore.Append(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

func commitOf(rec *adp.Record) *adphost.Commit {
	ev, err := adp.ParseEvent(rec.Envelope)
	if err != nil {
		panic(err)
	}
	return &adphost.Commit{Record: rec, Nonce: adphost.NonceAdvance{Actor: ev.Actor, Nonce: ev.Nonce, Now: rec.ReceivedAt, ExpiresAt: rec.ReceivedAt + 600_000}}
}

const nudgeDecl = `{"type":"team.nudge","kind":"signal","title":"Nudge","schema":{"type":"object"}}`

// groupCommitRun queues writers' signals behind a first write that waits
// in its append, then opens the gate: the queued writes are judged and
// appended together. It returns each write's record or error, and checks
// that a live subscriber received every record of the log once, in
// order, and none before the Store had it.
func groupCommitRun(t *testing.T, steal bool) ([]*adp.Record, []error, *batchStore) {
	ctx := ctxT(t)
	store := &batchStore{MemoryStore: adphost.NewMemoryStore(), gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	close(store.gate)
	s := newShared(t, 1, store, &adphost.Options{RateLimits: adphost.Unlimited()})
	alice := s.client("alice")
	room := mustv(alice.CreateRoom(ctx, roomSpec(t, adp.VisibilityPublic, "group commit"))).RoomID
	mustv(alice.DefineType(ctx, room, decl(t, nudgeDecl)))
	names := []string{"bob", "carol", "dave", "erin", "frank", "gina"}
	clients := []*adp.Client{alice}
	for _, n := range names {
		c := s.client(n)
		mustv(c.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker}))
		clients = append(clients, c)
	}
	mallory := s.client("mallory") // no member: her signal is refused
	clients = append(clients, mallory)
	mustv(alice.Sync(ctx, room))
	reg := alice.Verified(room).Registry()
	base := headBase(t, alice, room)
	envs := make([]*envelope.Envelope, len(clients))
	for i, c := range clients {
		envs[i] = mustv(adp.NewCustom(ctx, c.Author(), base, reg, "team.nudge", map[string]int{}))
	}
	if steal {
		// Another process's record on the same head: the batch that
		// follows loses the append race to it.
		henry := s.client("henry")
		mustv(henry.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker}))
		last := mustv(store.Records(ctx, room, mustv(store.Head(ctx, room))-1, 1, 1))[0]
		env := mustv(adp.NewCustom(ctx, henry.Author(), base, reg, "team.nudge", map[string]int{}))
		store.steal = []*adp.Record{adp.NewRecord(room, last, last.ReceivedAt, env)}
	}

	// A subscriber checks that each record it receives is stored.
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var got []int64
	var early atomic.Int64
	gotAll := make(chan struct{})
	want := int64(-1)
	var wantMu sync.Mutex
	startHead := mustv(store.Head(ctx, room))
	caughtUp := make(chan struct{}) // closed when the backfill delivers startHead
	go func() {
		for it, err := range sse.Follow(fctx, &sse.Options{Client: alice, RoomID: room, HTTPClient: s.hc}) {
			if err != nil || it.Kind != sse.KindRecord {
				continue
			}
			if head, _ := store.MemoryStore.Head(ctx, room); head < it.Record.Seq {
				early.Add(1)
			}
			if it.Record.Seq == startHead {
				close(caughtUp)
			}
			wantMu.Lock()
			got = append(got, it.Record.Seq)
			if want > 0 && it.Record.Seq >= want {
				close(gotAll)
				want = 0
			}
			wantMu.Unlock()
		}
	}()
	// Follow subscribes before it backfills (§17.3): once the backfill has
	// delivered the head, the stream is up, and the writes reach it live.
	select {
	case <-caughtUp:
	case <-ctx.Done():
		t.Fatal("the subscriber never caught up")
	}

	store.gate, store.entered = make(chan struct{}), make(chan struct{}, 1) // entered: not the setup's appends
	recs, errs := make([]*adp.Record, len(envs)), make([]error, len(envs))
	var wg sync.WaitGroup
	wg.Go(func() { recs[0], errs[0] = clients[0].Submit(ctx, room, envs[0]) })
	<-store.entered // the first write holds the room, waiting in its append
	for i := 1; i < len(envs); i++ {
		wg.Go(func() { recs[i], errs[i] = clients[i].Submit(ctx, room, envs[i]) })
	}
	waitQueued(t, s.hosts[0], room, len(envs)-1)
	close(store.gate)
	wg.Wait()

	head := mustv(store.Head(ctx, room))
	wantMu.Lock()
	want = head
	if len(got) > 0 && got[len(got)-1] >= head {
		close(gotAll)
		want = 0
	}
	wantMu.Unlock()
	select {
	case <-gotAll:
	case <-time.After(10 * time.Second):
		t.Fatalf("the subscriber got %v, want up to %d", got, head)
	}
	wantMu.Lock()
	defer wantMu.Unlock()
	var wantSeqs []int64
	for seq := startHead + 1; seq <= head; seq++ {
		wantSeqs = append(wantSeqs, seq)
	}
	if i := slices.Index(got, startHead+1); i < 0 || !slices.Equal(got[i:], wantSeqs) {
		t.Fatalf("the subscriber got %v, want %v at its end", got, wantSeqs)
	}
	if early.Load() > 0 {
		t.Fatalf("%d records reached a subscriber before the Store had them", early.Load())
	}
	return recs, errs, store
}

// TestGroupCommit: writes queued behind a room's lock are judged in order
// and appended in one batch; a refused write of the batch (an outsider's)
// gets its own refusal and changes nothing for the others, each of which
// gets its own record; subscribers see each record once, in order, and
// only once it is stored.
func TestGroupCommit(t *testing.T) {
	recs, errs, store := groupCommitRun(t, false)
	checkGroupAnswers(t, recs, errs)
	store.mu.Lock()
	defer store.mu.Unlock()
	t.Logf("batch sizes %v", store.batches)
	if slices.Max(append(store.batches, 0)) < 2 {
		t.Fatalf("batches %v: the queued writes were not appended together", store.batches)
	}
}

// TestGroupCommitLosesRace: a batch that loses the append race to another
// process is undone in memory, without rebuilding the replica from the
// Store's snapshot, and each of its writes judged again after the
// catch-up: all accepted after the other record, which subscribers see
// once, in its place.
func TestGroupCommitLosesRace(t *testing.T) {
	recs, errs, store := groupCommitRun(t, true)
	checkGroupAnswers(t, recs, errs)
	store.mu.Lock()
	defer store.mu.Unlock()
	if len(store.steal) != 0 || len(store.batches) == 0 {
		t.Fatalf("no batch lost the race (batches %v)", store.batches)
	}
	if n := store.snaps.Load(); n != 0 {
		t.Fatalf("the replica was rebuilt from the Store (%d snapshot reads)", n)
	}
}

func checkGroupAnswers(t *testing.T, recs []*adp.Record, errs []error) {
	t.Helper()
	seqs := map[int64]bool{}
	for i := range len(recs) - 1 {
		if errs[i] != nil {
			t.Fatalf("write %d: %v", i, errs[i])
		}
		if seqs[recs[i].Seq] {
			t.Fatalf("two writes answered with seq %d", recs[i].Seq)
		}
		seqs[recs[i].Seq] = true
	}
	if err := errs[len(errs)-1]; err == nil || !ruleErr(err) {
		t.Fatalf("the outsider's write in the batch: %v, want a refusal", err)
	}
}

func ruleErr(err error) bool {
	var e *identity.Error
	return errors.As(err, &e)
}
