package connector

import (
	"testing"
)

// TestSnapshotApartFromRoom: the replica snapshot is stored apart from the
// room's record (which every write reads and rewrites), and a store that
// kept it inside the room's record, as older versions did, still opens
// from it without reading the history again.
func TestSnapshotApartFromRoom(t *testing.T) {
	_, srv := testHost(t)
	dir := t.TempDir()
	alice := openTest(t, dir, testKey(t, "alice"), srv.URL)
	room := createRoom(t, alice, srv.URL)
	say(t, alice, room, "one")
	k := roomKey{alice.hosts[srvOrigin(t, alice)].name, room}
	if err := alice.store.Update(func(tx stateTx) error {
		sr, err := loadRoom(tx, k)
		if err != nil {
			return err
		}
		var snap storedSnapshot
		ok, err := tx.Get(bSnapshots, rkey(k.host, k.room), &snap)
		if err != nil {
			return err
		}
		if !ok || len(snap.Snapshot) == 0 || len(sr.Snapshot) != 0 || snap.Seq != sr.SnapSeq {
			t.Fatalf("snapshot at seq %d in its bucket (%v), %d bytes in the room record at seq %d", snap.Seq, ok, len(sr.Snapshot), sr.SnapSeq)
		}
		// The layout of older stores.
		sr.Snapshot = snap.Snapshot
		if err := tx.Put(bRooms, rkey(k.host, k.room), sr); err != nil {
			return err
		}
		return tx.Delete(bSnapshots, rkey(k.host, k.room))
	}); err != nil {
		t.Fatal(err)
	}
	alice.Close()
	alice = openTest(t, dir, testKey(t, "alice"), srv.URL, func(o *Options) { o.NoSubscribe = true })
	defer alice.Close()
	rs, err := alice.RoomState(ctxT(t), "a", RoomStateInput{RoomID: room})
	if err != nil || rs.Sync.SyncedSeq != 2 {
		t.Fatalf("reopened from an older layout: %+v %v", rs, err)
	}
	say(t, alice, room, "two")
}

// srvOrigin returns the one host e is configured with.
func srvOrigin(t *testing.T, e *Engine) string {
	t.Helper()
	if len(e.hostOrder) != 1 {
		t.Fatalf("%d hosts", len(e.hostOrder))
	}
	return e.hostOrder[0]
}
