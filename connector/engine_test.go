package connector

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adp/adptest"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/adphosttest"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/pulse"
)

func testKey(t testing.TB, name string) *Key {
	k, err := identity.NewKeyFromSeed(adptest.Seed(name))
	if err != nil {
		t.Fatal(err)
	}
	return &Key{k: k}
}

func testHost(t testing.TB) (*adphost.Host, *httptest.Server) {
	return adphosttest.NewServer(t, &adphost.Options{RateLimits: adphost.Unlimited()})
}

func openTest(t testing.TB, dir string, key *Key, host string, mut ...func(*Options)) *Engine {
	t.Helper()
	// Every engine of the tests counts the records the host's history
	// carries to it: each crosses the network once per engine.
	ht := newHistoryTransport()
	o := &Options{Dir: dir, Key: key, Hosts: []HostConfig{{Host: host, Label: "test"}}, AllowLoopbackHTTP: true,
		WritesPerMinute: -1, LockTimeout: 200 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(t.Output(), nil)),
		HTTPClient: &http.Client{Transport: ht, Timeout: 30 * time.Second}}
	for _, m := range mut {
		m(o)
	}
	if o.HTTPClient != nil && o.HTTPClient.Transport == ht {
		t.Cleanup(func() { ht.assertFetchedOnce(t) })
	}
	// Every engine of the tests signals its local state changes, so a
	// test waits for a change instead of polling on a timer.
	p := new(pulse.Pulse)
	own := o.Notify
	o.Notify = func(uri string) {
		p.Fire()
		if own != nil {
			own(uri)
		}
	}
	e, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	changes.Store(e, p)
	return e
}

// changes holds the pulse of each engine openTest opened.
var changes sync.Map // *Engine → *pulse.Pulse

// waitChange waits until cond holds, checking it at first and after each
// change of e's local state (Options.Notify), for at most 20 s.
func waitChange(t testing.TB, e *Engine, cond func() bool, format string, args ...any) {
	t.Helper()
	v, ok := changes.Load(e)
	if !ok {
		t.Fatal("waitChange: an engine openTest did not open")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a "not hours" guard only
	defer cancel()
	if v.(*pulse.Pulse).Wait(ctx, cond) != nil {
		t.Fatalf("timed out waiting for "+format, args...)
	}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func must[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// speakerPair opens alice and bob on host: alice creates a public room and
// bob (with bobOpts) joins it as a speaker in session "b". Both engines
// close when the test ends.
func speakerPair(t testing.TB, host string, bobOpts ...func(*Options)) (alice, bob *Engine, room string) {
	t.Helper()
	alice = openTest(t, t.TempDir(), testKey(t, "alice"), host)
	t.Cleanup(func() { alice.Close() })
	room = createRoom(t, alice, host)
	bob = openTest(t, t.TempDir(), testKey(t, "bob"), host, bobOpts...)
	t.Cleanup(func() { bob.Close() })
	must[*RoomJoinResult](t)(bob.Join(ctxT(t), "b", RoomJoinInput{Host: host, RoomID: room, Role: "speaker"}))
	return alice, bob, room
}

// createRoom has e create a public active room.
func createRoom(t testing.TB, e *Engine, host string) string {
	t.Helper()
	now := time.Now().UnixMilli()
	res, err := e.CreateRoom(ctxT(t), "s", RoomCreateInput{Host: host, Topic: "review", Visibility: "public",
		StartTime: now - 1000, EndTime: now + 3600_000})
	if err != nil {
		t.Fatal(err)
	}
	if res.Room.RoomID == "" || res.Sync.HeadSeq != 1 {
		t.Fatalf("create: %+v", res.Sync)
	}
	return res.Room.RoomID
}

// waitSynced waits until e holds seq of the room.
func waitSynced(t testing.TB, e *Engine, room string, seq int64) {
	t.Helper()
	waitChange(t, e, func() bool {
		r, err := e.RoomState(ctxT(t), "probe", RoomStateInput{RoomID: room})
		return err == nil && r.Sync.SyncedSeq >= seq
	}, "seq %d of room %s", seq, room)
}

// TestInteractionLoop runs the §4.5 loop for two engines in one room: wake
// on mention, read, write against the presented head, a held draft when
// the room moved, and each of revise / send_as_is / stay_silent /
// send_anyway.
func TestInteractionLoop(t *testing.T) {
	_, srv := testHost(t)
	ctx := ctxT(t)
	alice := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL)
	defer alice.Close()
	bob := openTest(t, t.TempDir(), testKey(t, "bob"), srv.URL)
	defer bob.Close()
	room := createRoom(t, alice, srv.URL)

	j := must[*RoomJoinResult](t)(bob.Join(ctx, "b", RoomJoinInput{Host: srv.URL, RoomID: room, Role: "speaker", Perspective: "reviewer"}))
	if j.Status != "joined" || j.Member == nil || j.Member.Role != "speaker" || j.Member.Perspective != "reviewer" {
		t.Fatalf("join: %+v", j)
	}

	// 1. Wake up on demand: alice mentions bob; bob's long poll wakes.
	done := make(chan *InboxNextResult, 1)
	waiting := inboxWaiting(t, bob)
	go func() {
		r, err := bob.InboxNext(ctx, "b", InboxNextInput{Kinds: []string{KindMention}, WaitMS: 20000, Claim: true})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	<-waiting // the poll found nothing and waits
	waitSynced(t, alice, room, 2)
	sent := must[*WriteResult](t)(alice.SendMessage(ctx, "a", SendMessageInput{RoomID: room, Content: "Bob, can you review §6?",
		Mentions: []string{bob.AgentID().String()}}))
	if sent.Status != StatusSent || sent.Item == nil || sent.Item.Seq != 3 {
		t.Fatalf("send: %+v", sent)
	}
	in := <-done
	if in == nil || len(in.Items) != 1 || in.Items[0].Kind != KindMention || in.Items[0].Seq != 3 ||
		in.Items[0].Priority != "high" || !in.Items[0].RequiresResponse || in.Items[0].Message.Summary != "Bob, can you review §6?" {
		t.Fatalf("inbox: %+v", in)
	}
	// The claim hides the item from another session, not from this one.
	other := must[*InboxNextResult](t)(bob.InboxNext(ctx, "other", InboxNextInput{Kinds: []string{KindMention}}))
	if len(other.Items) != 0 {
		t.Fatalf("claimed item handed to another session: %+v", other.Items)
	}

	// 2. Read before deciding: the unread timeline presents head 3.
	tl := must[*TimelineResult](t)(bob.Timeline(ctx, "b", TimelineInput{RoomID: room, UnreadOnly: true, MarkRead: true}))
	if len(tl.Items) != 1 || tl.Items[0].Content == nil || tl.Items[0].ContentType != "text/plain" ||
		!slices.Equal(tl.Items[0].Mentions, []string{bob.AgentID().String()}) || tl.Sync.HeadSeq != 3 || tl.Sync.UnreadCount != 0 {
		t.Fatalf("timeline: %+v", tl)
	}

	// 3. Decide whether to speak: nobody else claimed the work.
	if sl := must[*AgentStatusListResult](t)(bob.AgentStatusList(ctx, "b", AgentStatusListInput{RoomID: room})); len(sl.Statuses) != 0 {
		t.Fatalf("statuses: %+v", sl.Statuses)
	}
	// 4. Announce long work; peers see it; seen_seq is the presented head.
	as := must[*AgentStatusResult](t)(bob.AgentStatusSet(ctx, "b", AgentStatusSetInput{RoomID: room, State: "drafting", ClaimID: "review-6"}))
	if as.Status.SeenSeq != tl.Sync.HeadSeq || as.Status.SeenHash != tl.Sync.HeadHash {
		t.Fatalf("status: %+v", as.Status)
	}
	if sl := must[*AgentStatusListResult](t)(alice.AgentStatusList(ctx, "a", AgentStatusListInput{RoomID: room})); len(sl.Statuses) != 1 || sl.Statuses[0].ClaimID != "review-6" {
		t.Fatalf("alice sees: %+v", sl.Statuses)
	}

	// 5. Write against what was seen: the default base is the presented head.
	w := must[*WriteResult](t)(bob.SendMessage(ctx, "b", SendMessageInput{RoomID: room, Content: "Looking now."}))
	if w.Status != StatusSent || w.Sync.HeadSeq != 4 {
		t.Fatalf("reply: %+v", w)
	}
	// 7. Close the loop: ack, and clear the status.
	mustAck(t, bob, "b", in.Items[0].ID)
	must[*AgentStatusResult](t)(bob.AgentStatusSet(ctx, "b", AgentStatusSetInput{RoomID: room, State: "idle", ExpiresAt: time.Now().UnixMilli()}))
	// A status whose expires_at is now is cleared by the host at once
	// (§17.4); the list is a remote read.
	if sl := must[*AgentStatusListResult](t)(alice.AgentStatusList(ctx, "a", AgentStatusListInput{RoomID: room})); len(sl.Statuses) != 0 {
		t.Fatalf("status not cleared: %+v", sl.Statuses)
	}

	// 6. The room moves while bob reasons: his next write is held.
	hold := func(content string) *WriteResult {
		t.Helper()
		seen := must[*RoomStateResult](t)(bob.RoomState(ctx, "b", RoomStateInput{RoomID: room}))
		say(t, alice, room, "new point")
		waitSynced(t, bob, room, seen.Sync.SyncedSeq+1)
		r := must[*WriteResult](t)(bob.SendMessage(ctx, "b", SendMessageInput{RoomID: room, Content: content}))
		if r.Status != StatusHeld || r.Draft == nil || r.Draft.BaseSeq != seen.Sync.HeadSeq || r.Draft.Reason != "room_head_mismatch" ||
			len(r.Changes) != 1 || r.Changes[0].Summary != "new point" || r.Draft.CurrentSync.HeadSeq != seen.Sync.HeadSeq+1 ||
			!slices.Equal(r.Draft.Options, []string{"revise", "send_as_is", "stay_silent", "send_anyway"}) {
			t.Fatalf("held: %+v", r)
		}
		return r
	}
	// revise: read the draft (presents the current head), then send new content.
	h := hold("option B")
	g := must[*DraftGetResult](t)(bob.DraftGet(ctx, "b", h.Draft.ID))
	if len(g.Changes) != 1 {
		t.Fatalf("draft get: %+v", g)
	}
	revised := "option B, given the new point"
	r := must[*WriteResult](t)(bob.DraftCommit(ctx, "b", DraftCommitInput{DraftID: h.Draft.ID, Action: ActionRevise, Content: &revised}))
	if r.Status != StatusSent || r.Item.Summary != revised {
		t.Fatalf("revise: %+v", r)
	}
	// send_as_is after reading.
	h = hold("as is")
	must[*DraftGetResult](t)(bob.DraftGet(ctx, "b", h.Draft.ID))
	r = must[*WriteResult](t)(bob.DraftCommit(ctx, "b", DraftCommitInput{DraftID: h.Draft.ID, Action: ActionSendAsIs}))
	if r.Status != StatusSent || r.Item.Summary != "as is" {
		t.Fatalf("send_as_is: %+v", r)
	}
	// stay_silent: nothing is sent.
	h = hold("never sent")
	before := must[*RoomStateResult](t)(bob.RoomState(ctx, "b", RoomStateInput{RoomID: room, Refresh: true})).Sync.SyncedSeq
	r = must[*WriteResult](t)(bob.DraftCommit(ctx, "b", DraftCommitInput{DraftID: h.Draft.ID, Action: ActionStaySilent}))
	if r.Status != StatusDropped || r.Sync.SyncedSeq != before {
		t.Fatalf("stay_silent: %+v", r)
	}
	if _, err := bob.DraftGet(ctx, "b", h.Draft.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("dropped draft still there: %v", err)
	}
	// send_anyway: re-signed on the latest head without reading.
	h = hold("anyway")
	r = must[*WriteResult](t)(bob.DraftCommit(ctx, "b", DraftCommitInput{DraftID: h.Draft.ID, Action: ActionSendAnyway}))
	if r.Status != StatusSent || r.Item.Summary != "anyway" {
		t.Fatalf("send_anyway: %+v", r)
	}
	// on_head_mismatch: reject returns the changes and keeps no draft.
	seen := must[*RoomStateResult](t)(bob.RoomState(ctx, "b", RoomStateInput{RoomID: room}))
	say(t, alice, room, "moved again")
	waitSynced(t, bob, room, seen.Sync.SyncedSeq+1)
	r = must[*WriteResult](t)(bob.SendMessage(ctx, "b", SendMessageInput{RoomID: room, Content: "x", OnHeadMismatch: OnMismatchReject}))
	if r.Status != StatusRejected || r.Draft != nil || len(r.Changes) != 1 {
		t.Fatalf("reject: %+v", r)
	}
	// A signal-kind write (leave) is never held, whatever the base.
	lv := must[*RecordResult](t)(bob.Leave(ctx, "b", RoomLeaveInput{RoomID: room}))
	if len(lv.Record) == 0 {
		t.Fatal("leave: no record")
	}
	if d := must[*DraftsListResult](t)(bob.DraftsList(ctx, DraftsListInput{})); len(d.Drafts) != 0 {
		t.Fatalf("drafts left: %+v", d.Drafts)
	}
	// The verified member view of alice's engine shows bob left.
	waitSynced(t, alice, room, lv.Sync.SyncedSeq)
	st := must[*RoomStateResult](t)(alice.RoomState(ctx, "a", RoomStateInput{RoomID: room}))
	if st.Room.MembersCount != 1 || st.Room.SelfMember == nil || !st.Room.SelfMember.IsCreator {
		t.Fatalf("room state: %+v", st.Room)
	}
}

// say has e post a message on the latest head (send_anyway).
func say(t testing.TB, e *Engine, room, text string) *WriteResult {
	t.Helper()
	r, err := e.SendMessage(ctxT(t), "a", SendMessageInput{RoomID: room, Content: text, OnHeadMismatch: OnMismatchSendAnyway})
	if err != nil || r.Status != StatusSent {
		t.Fatalf("say: %+v %v", r, err)
	}
	return r
}

func mustAck(t testing.TB, e *Engine, session string, ids ...string) {
	t.Helper()
	r, err := e.InboxAck(ctxT(t), session, InboxAckInput{IDs: ids, Action: AckHandled})
	if err != nil || len(r.Acknowledged) != len(ids) {
		t.Fatalf("ack: %+v %v", r, err)
	}
}

var _ = adp.TypeMessageCreate

// inboxWaiting returns a channel closed when an InboxNext long-poll of e
// has found nothing and waits. It serves one poll at a time.
func inboxWaiting(t testing.TB, e *Engine) <-chan struct{} {
	t.Helper()
	c := make(chan struct{})
	var once sync.Once
	hook := func(w *Engine) {
		if w == e {
			once.Do(func() { close(c) })
		}
	}
	testHookInboxWait.Store(&hook)
	t.Cleanup(func() { testHookInboxWait.Store(nil) })
	return c
}
