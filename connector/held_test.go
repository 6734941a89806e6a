package connector

import (
	"errors"
	"sync"
	"testing"

	"github.com/agentprotocols/go-sdk/adp"
)

// TestPresentedHeadFollowsHeld (connector §4.2: a write without a base
// defaults to the presented head): a held result presents its sync,
// so the agent's next send without a base — after reading the changes it
// was shown — goes out, and is held again only when the room moved since.
// Signal writes, status results and stay_silent present their sync too.
func TestPresentedHeadFollowsHeld(t *testing.T) {
	_, srv := testHost(t)
	ctx := ctxT(t)
	alice, bob, room := speakerPair(t, srv.URL, func(o *Options) { o.NoSubscribe = true })
	must[*RoomStateResult](t)(bob.RoomState(ctx, "b", RoomStateInput{RoomID: room, Refresh: true}))
	say(t, alice, room, "moved")
	r1 := must[*WriteResult](t)(bob.SendMessage(ctx, "b", SendMessageInput{RoomID: room, Content: "first try"}))
	if r1.Status != StatusHeld {
		t.Fatalf("first: %+v", r1)
	}
	r2 := must[*WriteResult](t)(bob.SendMessage(ctx, "b", SendMessageInput{RoomID: room, Content: "after seeing the changes"}))
	if r2.Status != StatusSent {
		t.Fatalf("second send after a held result: %s (held again against the old head)", r2.Status)
	}
	// Held again only when the room moved since the held result.
	say(t, alice, room, "moved again")
	r3 := must[*WriteResult](t)(bob.SendMessage(ctx, "b", SendMessageInput{RoomID: room, Content: "third"}))
	if r3.Status != StatusHeld {
		t.Fatalf("third (room moved): %+v", r3.Status)
	}
	// send_as_is of the held draft after the held result: sent.
	r4 := must[*WriteResult](t)(bob.DraftCommit(ctx, "b", DraftCommitInput{DraftID: r3.Draft.ID, Action: ActionSendAsIs}))
	if r4.Status != StatusSent {
		t.Fatalf("send_as_is after the held result: %+v", r4.Status)
	}
	// A status result presents its sync.
	say(t, alice, room, "moved once more")
	must[*RoomStateResult](t)(bob.RoomState(ctx, "other", RoomStateInput{RoomID: room, Refresh: true}))
	st := must[*AgentStatusListResult](t)(bob.AgentStatusList(ctx, "b", AgentStatusListInput{RoomID: room}))
	if st.Sync == nil {
		t.Fatal("status list without sync")
	}
	if r := must[*WriteResult](t)(bob.SendMessage(ctx, "b", SendMessageInput{RoomID: room, Content: "after status"})); r.Status != StatusSent {
		t.Fatalf("send after a status result: %s", r.Status)
	}
	// stay_silent presents its sync.
	say(t, alice, room, "and again")
	r5 := must[*WriteResult](t)(bob.SendMessage(ctx, "b", SendMessageInput{RoomID: room, Content: "held", BaseSeq: &r4.Sync.HeadSeq, BaseHash: r4.Sync.HeadHash}))
	if r5.Status != StatusHeld {
		t.Fatalf("explicit stale base: %s", r5.Status)
	}
	say(t, alice, room, "moved after the hold")
	must[*RoomStateResult](t)(bob.RoomState(ctx, "other", RoomStateInput{RoomID: room, Refresh: true}))
	must[*WriteResult](t)(bob.DraftCommit(ctx, "b", DraftCommitInput{DraftID: r5.Draft.ID, Action: ActionStaySilent}))
	if r := must[*WriteResult](t)(bob.SendMessage(ctx, "b", SendMessageInput{RoomID: room, Content: "after stay_silent"})); r.Status != StatusSent {
		t.Fatalf("send after stay_silent: %s", r.Status)
	}
}

// TestDraftCommitOnce (connector §4.2 held drafts): concurrent
// draft_commit calls of one held
// draft send it at most once; the others get ErrNotFound.
func TestDraftCommitOnce(t *testing.T) {
	_, srv := testHost(t)
	ctx := ctxT(t)
	alice := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL)
	defer alice.Close()
	room := createRoom(t, alice, srv.URL)
	st := must[*RoomStateResult](t)(alice.RoomState(ctx, "a", RoomStateInput{RoomID: room}))
	say(t, alice, room, "moved")
	held := must[*WriteResult](t)(alice.SendMessage(ctx, "a", SendMessageInput{RoomID: room, Content: "one message", BaseSeq: &st.Sync.HeadSeq, BaseHash: st.Sync.HeadHash}))
	if held.Status != StatusHeld {
		t.Fatalf("not held: %s", held.Status)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	sent, notFound := 0, 0
	for range 8 {
		wg.Go(func() {
			r, err := alice.DraftCommit(ctx, "a", DraftCommitInput{DraftID: held.Draft.ID, Action: ActionSendAnyway})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && r.Status == StatusSent:
				sent++
			case errors.Is(err, ErrNotFound):
				notFound++
			default:
				t.Errorf("commit: %+v %v", r, err)
			}
		})
	}
	wg.Wait()
	tl := must[*TimelineResult](t)(alice.Timeline(ctx, "a", TimelineInput{RoomID: room, Refresh: true, Types: []string{adp.TypeMessageCreate}}))
	copies := 0
	for _, it := range tl.Items {
		if it.Summary == "one message" {
			copies++
		}
	}
	if sent != 1 || notFound != 7 || copies != 1 {
		t.Fatalf("sent %d, not found %d, copies in the room %d", sent, notFound, copies)
	}
}
