package connector

import (
	"testing"

	"github.com/agentprotocols/go-sdk/adp"
)

// TestReplayRefusedSignalDropped (connector §4.2: a held draft is a
// write prepared against a head that moved, which a signal never is): a
// signal write (room.leave)
// recorded before a crash and refused on replay is dropped, never held;
// every write request carries its draft.
func TestReplayRefusedSignalDropped(t *testing.T) {
	_, srv := testHost(t)
	ctx := ctxT(t)
	alice := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL)
	defer alice.Close()
	room := createRoom(t, alice, srv.URL)
	dir := t.TempDir()
	bob := openTest(t, dir, testKey(t, "bob"), srv.URL)
	must[*RoomJoinResult](t)(bob.Join(ctx, "b", RoomJoinInput{Host: srv.URL, RoomID: room, Role: "speaker"}))
	req := recordUnsent(t, bob, room, func(k roomKey) (*writeReq, error) {
		return eventReq(k, adp.TypeRoomLeave, []byte(`{"reason":"bye"}`), nil, nil)
	})
	if len(req.Draft) == 0 {
		t.Fatalf("leave request without a draft")
	}
	bob.Close()
	must[*WriteResult](t)(alice.SubmitEvent(ctx, "a", SubmitEventInput{RoomID: room, Type: adp.TypeMemberRemove,
		Payload: []byte(`{"member":"` + testKey(t, "bob").AgentID().String() + `"}`), OnHeadMismatch: OnMismatchSendAnyway}))
	bob = openTest(t, dir, testKey(t, "bob"), srv.URL)
	defer bob.Close()
	d := must[*DraftsListResult](t)(bob.DraftsList(ctx, DraftsListInput{}))
	if len(d.Drafts) != 0 {
		t.Fatalf("a refused signal write was held: %+v", d.Drafts)
	}
	var left int
	bob.store.View(func(tx stateTx) error { return tx.Scan(bOutbox, "", func(string, []byte) error { left++; return nil }) })
	if left != 0 {
		t.Fatalf("outbox holds %d entries", left)
	}
}
