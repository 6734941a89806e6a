package adp_test

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adp/adptest"
)

// Room.Snapshot writes the index by hand and keeps the event hashes
// sorted between snapshots; its bytes must stay those of the whole
// snapshot struct through json.Marshal with the events sorted afresh: on
// an empty room, after each of a run of writes (snapshots taken at
// irregular distances, so each merges a different number of new events
// into the sorted list), and on rooms restored from a snapshot and
// written on.
func TestSnapshotEncoding(t *testing.T) {
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", nil)
	same := func(r *adp.Room, when string) []byte {
		t.Helper()
		want, err := adp.SnapshotReflect(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: Snapshot\n%s\nwant\n%s", when, got, want)
		}
		return got
	}
	same(w.Room, "empty room")
	w.PublicRoom()
	same(w.Room, "room.create")
	w.Join("alice", adp.RoleSpeaker)
	var snap []byte
	for i := range 40 {
		w.OK(w.Say("alice", fmt.Sprint("message ", i)))
		if i%7 == 0 || i%11 == 0 {
			snap = same(w.Room, fmt.Sprint("after message ", i))
		}
	}
	same(w.Room, "twice at the same seq")
	// Restored from the last snapshot (sorted events: kept as the sorted
	// list) and from one whose events are out of order (sorted afresh).
	for _, events := range []string{"sorted", "reversed"} {
		b := snap
		if events == "reversed" {
			b = reverseEvents(t, snap)
		}
		r, err := adp.RestoreRoom(b, nil)
		if err != nil {
			t.Fatal(err)
		}
		same(r, events+" restore")
		w.Room = r
		w.Records = nil
		for i := range 5 {
			w.OK(w.Say("alice", fmt.Sprint(events, " after restore ", i)))
			same(r, fmt.Sprint(events, " restore, message ", i))
		}
	}
}

// reverseEvents returns snap with its events member's array reversed.
func reverseEvents(t *testing.T, snap []byte) []byte {
	t.Helper()
	i := bytes.Index(snap, []byte(`"events":[`))
	if i < 0 {
		t.Fatal("snapshot without events")
	}
	start := i + len(`"events":[`)
	end := start + bytes.IndexByte(snap[start:], ']')
	items := bytes.Split(snap[start:end], []byte(","))
	for a, b := 0, len(items)-1; a < b; a, b = a+1, b-1 {
		items[a], items[b] = items[b], items[a]
	}
	out := append([]byte{}, snap[:start]...)
	out = append(out, bytes.Join(items, []byte(","))...)
	return append(out, snap[end:]...)
}

// Snapshots taken at once, while the room takes writes, all see one
// state each and merge the sorted event list safely (run with -race).
func TestSnapshotConcurrent(t *testing.T) {
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", nil)
	w.PublicRoom()
	w.Join("alice", adp.RoleSpeaker)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 20 {
				if _, err := w.Room.Snapshot(); err != nil {
					t.Error(err)
				}
			}
		})
	}
	for i := range 20 {
		w.OK(w.Say("alice", fmt.Sprint("message ", i)))
	}
	wg.Wait()
	want, _ := adp.SnapshotReflect(w.Room)
	if got, _ := w.Room.Snapshot(); !bytes.Equal(got, want) {
		t.Fatal("Snapshot after concurrent snapshots differs from the reflected encoding")
	}
}
