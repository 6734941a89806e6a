package adphost

import "testing"

// A snapshot carries the whole room, so its cost per write must not grow
// with the room: over a room of a million records there are few
// snapshots, the first ones every 100 records, and no gap is longer than a
// quarter of the room.
func TestSnapshotSchedule(t *testing.T) {
	const every = 100
	var (
		last, count int64
		work        int64 // records carried by all snapshots together
	)
	for seq := int64(1); seq <= 1_000_000; seq++ {
		if !snapshotDue(seq, every) {
			continue
		}
		if gap := seq - last; seq <= 16*every && gap != every {
			t.Fatalf("snapshot at %d after %d: the first ones are %d apart", seq, last, every)
		} else if seq > 16*every && gap*4 > seq {
			t.Fatalf("snapshot at %d after %d: a gap over a quarter of the room", seq, last)
		}
		last, count, work = seq, count+1, work+seq
	}
	if count > 120 {
		t.Errorf("%d snapshots over a million records", count)
	}
	// A snapshot of a room of n records costs about n: the total stays a
	// small multiple of the room, i.e. a constant per write.
	if work > 20*1_000_000 {
		t.Errorf("snapshots carried %d records in all over a million writes", work)
	}
	if snapshotDue(100, 0) || snapshotDue(100, -1) {
		t.Error("every <= 0 must mean never")
	}
}
