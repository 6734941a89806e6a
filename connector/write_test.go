package connector

import (
	"context"
	"errors"
	"testing"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/adphosttest"
	"github.com/agentprotocols/go-sdk/identity"
)

// TestResignCap: in a room that moves before every write lands,
// send_anyway re-signs at most MaxResign (3) times, then holds the draft.
func TestResignCap(t *testing.T) {
	rh, srv := newRecordingServer(t)
	ctx := ctxT(t)
	alice, bob, room := speakerPair(t, srv.URL)
	must[*RoomStateResult](t)(bob.RoomState(ctx, "b", RoomStateInput{RoomID: room, Refresh: true}))
	bobPosts := 0
	rh.mu.Lock()
	rh.before = func(actor identity.AgentID) {
		if actor == bob.AgentID() {
			bobPosts++
			say(t, alice, room, "faster")
		}
	}
	rh.mu.Unlock()
	r := must[*WriteResult](t)(bob.SendMessage(ctx, "b", SendMessageInput{RoomID: room, Content: "slow", OnHeadMismatch: OnMismatchSendAnyway}))
	rh.mu.Lock()
	rh.before = nil
	rh.mu.Unlock()
	if r.Status != StatusHeld || r.Draft == nil || bobPosts != 4 {
		t.Fatalf("status %s after %d posts, want held after 4 (1 + 3 re-signs)", r.Status, bobPosts)
	}
	if d := must[*DraftsListResult](t)(bob.DraftsList(ctx, DraftsListInput{RoomID: room})); len(d.Drafts) != 1 {
		t.Fatalf("drafts: %+v", d)
	}
}

// TestOutboxRefusedBecomesDraft: an outbox entry the host refuses on replay
// (the room moved while the engine was down) is kept as a held draft, not
// lost.
func TestOutboxRefusedBecomesDraft(t *testing.T) {
	_, srv := testHost(t)
	ctx := ctxT(t)
	alice := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL)
	defer alice.Close()
	room := createRoom(t, alice, srv.URL)
	dir := t.TempDir()
	bob := openTest(t, dir, testKey(t, "bob"), srv.URL)
	must[*RoomJoinResult](t)(bob.Join(ctx, "b", RoomJoinInput{Host: srv.URL, RoomID: room, Role: "speaker"}))
	// Sign and record a write exactly as the write path does, then "crash"
	// before sending it.
	recordUnsent(t, bob, room, func(k roomKey) (*writeReq, error) {
		return messageReq(k, "written before the crash", "", nil, nil, nil)
	})
	bob.Close()
	say(t, alice, room, "the room moved")
	bob = openTest(t, dir, testKey(t, "bob"), srv.URL)
	defer bob.Close()
	d := must[*DraftsListResult](t)(bob.DraftsList(context.Background(), DraftsListInput{}))
	if len(d.Drafts) != 1 || d.Drafts[0].Reason != "room_head_mismatch" || d.Drafts[0].Kind != "message" {
		t.Fatalf("drafts after replay: %+v", d)
	}
	var left int
	bob.store.View(func(tx stateTx) error { return tx.Scan(bOutbox, "", func(string, []byte) error { left++; return nil }) })
	if left != 0 {
		t.Fatalf("outbox holds %d entries", left)
	}
	// The draft can still be sent once the agent has seen the room.
	waitSynced(t, bob, room, 3)
	g := must[*DraftGetResult](t)(bob.DraftGet(ctx, "b", d.Drafts[0].ID))
	if len(g.Changes) == 0 {
		t.Fatal("no changes")
	}
	r := must[*WriteResult](t)(bob.DraftCommit(ctx, "b", DraftCommitInput{DraftID: d.Drafts[0].ID, Action: ActionSendAsIs}))
	if r.Status != StatusSent {
		t.Fatalf("commit: %+v", r)
	}
}

// TestOutboxTransient: a write the host could not take (503 after the
// client's retries) stays in the outbox and is delivered once, with the
// same envelope, by ReplayOutbox.
func TestOutboxTransient(t *testing.T) {
	rh, srv := newRecordingServer(t)
	ctx := ctxT(t)
	alice := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL)
	defer alice.Close()
	room := createRoom(t, alice, srv.URL)
	rh.mu.Lock()
	rh.down = true
	rh.mu.Unlock()
	_, err := alice.SendMessage(ctx, "a", SendMessageInput{RoomID: room, Content: "through the outage"})
	if !errors.Is(err, ErrPendingOutbox) {
		t.Fatalf("send during outage: %v", err)
	}
	rh.mu.Lock()
	rh.down = false
	rh.mu.Unlock()
	if err := alice.ReplayOutbox(ctx); err != nil {
		t.Fatal(err)
	}
	if err := alice.ReplayOutbox(ctx); err != nil { // nothing left: a no-op
		t.Fatal(err)
	}
	tl := must[*TimelineResult](t)(alice.Timeline(ctx, "a", TimelineInput{RoomID: room, Refresh: true, Types: []string{adp.TypeMessageCreate}}))
	if len(tl.Items) != 1 || tl.Items[0].Summary != "through the outage" {
		t.Fatalf("timeline: %+v", tl.Items)
	}
	rh.mu.Lock()
	defer rh.mu.Unlock()
	if len(rh.reused) != 0 || rh.nonceNG != 0 {
		t.Fatalf("nonce reuse %v / nonce_not_greater %d", rh.reused, rh.nonceNG)
	}
}

// TestPresentedHeadPerSession: the default base is the head presented to
// that session; a session that was shown nothing writes on the current
// verified head.
func TestPresentedHeadPerSession(t *testing.T) {
	_, srv := testHost(t)
	ctx := ctxT(t)
	alice := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL)
	defer alice.Close()
	room := createRoom(t, alice, srv.URL)
	bob := openTest(t, t.TempDir(), testKey(t, "bob"), srv.URL)
	defer bob.Close()
	must[*RoomJoinResult](t)(bob.Join(ctx, "s1", RoomJoinInput{Host: srv.URL, RoomID: room, Role: "speaker"}))
	seen := must[*TimelineResult](t)(bob.Timeline(ctx, "s1", TimelineInput{RoomID: room}))
	say(t, alice, room, "moved")
	waitSynced(t, bob, room, seen.Sync.SyncedSeq+1)
	if r := must[*WriteResult](t)(bob.SendMessage(ctx, "s2", SendMessageInput{RoomID: room, Content: "fresh session"})); r.Status != StatusSent {
		t.Fatalf("session without a presented head: %+v", r)
	}
	if r := must[*WriteResult](t)(bob.SendMessage(ctx, "s1", SendMessageInput{RoomID: room, Content: "stale session"})); r.Status != StatusHeld || r.Draft.BaseSeq != seen.Sync.HeadSeq {
		t.Fatalf("session with a stale presented head: %+v", r)
	}
	// An explicit base overrides the presented one.
	cur := must[*RoomStateResult](t)(bob.RoomState(ctx, "s3", RoomStateInput{RoomID: room}))
	if r := must[*WriteResult](t)(bob.SendMessage(ctx, "s1", SendMessageInput{RoomID: room, Content: "explicit", BaseSeq: &cur.Sync.HeadSeq, BaseHash: cur.Sync.HeadHash})); r.Status != StatusSent {
		t.Fatalf("explicit base: %+v", r)
	}
}

// TestHostHeadMismatch: when the local replica has not seen the move yet,
// the host's room_head_mismatch answer leads to the same held draft.
func TestHostHeadMismatch(t *testing.T) {
	_, srv := testHost(t)
	ctx := ctxT(t)
	alice, bob, room := speakerPair(t, srv.URL, func(o *Options) { o.NoSubscribe = true })
	must[*RoomStateResult](t)(bob.RoomState(ctx, "b", RoomStateInput{RoomID: room}))
	say(t, alice, room, "unseen move")
	r := must[*WriteResult](t)(bob.SendMessage(ctx, "b", SendMessageInput{RoomID: room, Content: "late"}))
	if r.Status != StatusHeld || len(r.Changes) == 0 || r.Changes[len(r.Changes)-1].Summary != "unseen move" {
		t.Fatalf("host mismatch: %+v", r)
	}
}

// TestAmbiguousRoom: the same room_id on two hosts needs host.
func TestAmbiguousRoom(t *testing.T) {
	same := func() string { return "sameroomid0000000000" }
	_, s1 := adphosttest.NewServer(t, &adphost.Options{RateLimits: adphost.Unlimited(), NewRoomID: same})
	_, s2 := adphosttest.NewServer(t, &adphost.Options{RateLimits: adphost.Unlimited(), NewRoomID: same})
	e := openTest(t, t.TempDir(), testKey(t, "alice"), s1.URL, func(o *Options) { o.Hosts = append(o.Hosts, HostConfig{Host: s2.URL}) })
	defer e.Close()
	r1 := createRoom(t, e, s1.URL)
	r2 := createRoom(t, e, s2.URL)
	if r1 != r2 {
		t.Fatal("room ids differ")
	}
	if _, err := e.RoomState(ctxT(t), "a", RoomStateInput{RoomID: r1}); !errors.Is(err, ErrAmbiguousRoom) {
		t.Fatalf("ambiguous: %v", err)
	}
	if _, err := e.SendMessage(ctxT(t), "a", SendMessageInput{RoomID: r1, Content: "x"}); !errors.Is(err, ErrAmbiguousRoom) {
		t.Fatalf("ambiguous write: %v", err)
	}
	st := must[*RoomStateResult](t)(e.RoomState(ctxT(t), "a", RoomStateInput{Host: s2.URL, RoomID: r1}))
	if st.Sync.Host != s2.URL {
		t.Fatalf("host: %+v", st.Sync)
	}
}

// recordUnsent signs the write that req builds on the room's current base
// and records it in the outbox, exactly as the write path does, without
// sending it: the state a crash between the two leaves. It returns the
// recorded request.
func recordUnsent(t *testing.T, e *Engine, room string, req func(roomKey) (*writeReq, error)) *writeReq {
	t.Helper()
	k, h, err := e.resolve("", room)
	if err != nil {
		t.Fatal(err)
	}
	r, err := req(k)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := e.replica(h, room)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := rep.BaseFor(r.Type)
	env, err := e.sign(context.Background(), r, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.recordOutbox(env, &outboxEntry{Host: k.host, RoomID: room, Envelope: env.AppendJSON(nil), Req: r}); err != nil {
		t.Fatal(err)
	}
	return r
}
