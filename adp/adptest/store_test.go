package adptest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adp/adptest"
	"github.com/agentprotocols/go-sdk/envelope"
)

// TestExactResubmission: Identity §6.3 over HTTP — the same envelope sent
// again is answered with the original record (room.create with the
// original room), and nothing is appended.
func TestExactResubmission(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, &adptest.Options{RateLimits: adptest.Unlimited()})
	alice := w.client("alice")
	create, err := adp.NewRoomCreate(ctx, alice.Author(), roomSpec(t, adp.VisibilityPublic, "again"))
	if err != nil {
		t.Fatal(err)
	}
	first := mustv(alice.SubmitCreate(ctx, create))
	again := mustv(alice.SubmitCreate(ctx, create))
	if again.RoomID != first.RoomID || again.Hash != first.Hash {
		t.Fatalf("room.create resubmission made %s/%s, first %s/%s", again.RoomID, again.Hash, first.RoomID, first.Hash)
	}
	room := first.RoomID
	env := mustv(adp.NewMessage(ctx, alice.Author(), headBase(t, alice, room), text("once")))
	r1 := mustv(alice.Submit(ctx, room, env))
	w.clock.Advance(10)
	r2 := mustv(alice.Submit(ctx, room, env))
	if r1.Seq != r2.Seq || r1.Hash != r2.Hash || r1.ReceivedAt != r2.ReceivedAt {
		t.Fatalf("resubmission answered %+v, want %+v", r2, r1)
	}
	if l := mustv(alice.Sync(ctx, room)); l.Seq != 2 {
		t.Fatalf("log has %d records", l.Seq)
	}
}

// TestMemoryStoreAppendIfHead: the store refuses a record that does not
// follow its log's last record.
func TestMemoryStoreAppendIfHead(t *testing.T) {
	ctx := context.Background()
	s := adptest.NewMemoryStore()
	env1 := mustv(adp.NewRoomCreate(ctx, newAuthor("s"), roomSpec(t, adp.VisibilityPublic, "s")))
	r1 := adp.NewRecord("room", nil, 1, env1)
	if err := s.Append(ctx, adp.NewRecord("room", r1, 2, env1)); !errors.Is(err, adptest.ErrHeadMoved) {
		t.Fatalf("seq 2 into an empty log: %v", err)
	}
	if err := s.Append(ctx, r1); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, r1); !errors.Is(err, adptest.ErrHeadMoved) {
		t.Fatalf("seq 1 twice: %v", err)
	}
	r2 := adp.NewRecord("room", r1, 2, env1)
	forked := *r2
	forked.PreHash = envelope.Sum([]byte("other"))
	if err := s.Append(ctx, &forked); !errors.Is(err, adptest.ErrHeadMoved) {
		t.Fatalf("a fork: %v", err)
	}
	if err := s.Append(ctx, r2); err != nil {
		t.Fatal(err)
	}
	recs := mustv(s.Records(ctx, "room", 1, 10))
	if len(recs) != 1 || recs[0] != r2 {
		t.Fatalf("records after 1: %v", recs)
	}
}
