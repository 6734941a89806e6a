package connector

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestClaimLease: a claim is a lease renewed by the session's calls.
// While the claiming session is active, others do not see the item; once
// it has been silent for ClaimLease (a client gone without DELETE), a new
// session sees and may claim it; EndSession releases at once.
func TestClaimLease(t *testing.T) {
	_, srv := testHost(t)
	ctx := ctxT(t)
	var mu sync.Mutex
	var skew time.Duration
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return time.Now().Add(skew) }
	advance := func(d time.Duration) { mu.Lock(); skew += d; mu.Unlock() }
	alice, bob, room := speakerPair(t, srv.URL, func(o *Options) { o.Now = clock })
	must[*WriteResult](t)(alice.SendMessage(ctx, "a", SendMessageInput{RoomID: room, Content: "hi bob",
		Mentions: []string{testKey(t, "bob").AgentID().String()}, OnHeadMismatch: OnMismatchSendAnyway}))
	got := must[*InboxNextResult](t)(bob.InboxNext(ctx, "s1", InboxNextInput{Kinds: []string{KindMention}, WaitMS: 15000, Claim: true}))
	if len(got.Items) != 1 {
		t.Fatalf("s1: %+v", got)
	}
	seen := func(session string) int {
		r := must[*InboxNextResult](t)(bob.InboxNext(ctx, session, InboxNextInput{Kinds: []string{KindMention}}))
		return len(r.Items)
	}
	if n := seen("s2"); n != 0 {
		t.Fatal("s2 sees s1's fresh claim")
	}
	// s1 keeps calling: its lease is renewed.
	for range 3 {
		advance(DefaultClaimLease / 2)
		must[*RoomStateResult](t)(bob.RoomState(ctx, "s1", RoomStateInput{RoomID: room}))
	}
	if n := seen("s2"); n != 0 {
		t.Fatal("s2 sees the claim of an active session")
	}
	// s1 goes silent (no DELETE): after the lease, s2 sees and claims it.
	advance(DefaultClaimLease)
	r := must[*InboxNextResult](t)(bob.InboxNext(ctx, "s2", InboxNextInput{Kinds: []string{KindMention}, Claim: true}))
	if len(r.Items) != 1 {
		t.Fatalf("s2 after s1's lease lapsed: %+v", r)
	}
	if n := seen("s3"); n != 0 {
		t.Fatal("s3 sees s2's claim")
	}
	bob.EndSession("s2")
	if n := seen("s3"); n != 1 {
		t.Fatal("EndSession did not release s2's claim")
	}
}

// TestInboxWaitBound (connector §4.3 inbox_next wait_ms): the long-poll
// never exceeds MaxInboxWait, below
// the 60 s request timeout of common MCP clients.
func TestInboxWaitBound(t *testing.T) {
	if MaxInboxWait >= 60*time.Second {
		t.Fatalf("MaxInboxWait %v", MaxInboxWait)
	}
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		e, err := Open(t.Context(), &Options{Dir: dir, Key: testKey(t, "alice"), NoSubscribe: true})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		start := time.Now()
		if _, err := e.InboxNext(t.Context(), "s", InboxNextInput{WaitMS: 600_000}); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != MaxInboxWait {
			t.Fatalf("waited %v", d)
		}
	})
}
