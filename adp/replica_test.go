package adp_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adp/adptest"
	"github.com/agentprotocols/go-sdk/identity"
)

// replicaWorld returns a room of five records: create, a join, three
// messages.
func replicaWorld(t *testing.T) *adptest.World {
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", nil)
	w.PublicRoom()
	w.Join("alice", adp.RoleSpeaker)
	for _, s := range []string{"one", "two", "three"} {
		w.OK(w.Say("alice", s))
	}
	return w
}

// TestReplicaAdmitted: the Admitted hook receives every newly verified
// record once, in seq order, in the batches they were admitted in, with the
// room they leave; copies of held records are matched, not handed on; a
// record beyond the next one is ErrGap.
func TestReplicaAdmitted(t *testing.T) {
	w := replicaWorld(t)
	ctx := context.Background()
	var batches [][]int64
	rep := adp.NewReplica(w.Room.ID(), &adp.ReplicaOptions{Admitted: func(_ context.Context, recs []*adp.Record, room *adp.Room) error {
		var seqs []int64
		for _, r := range recs {
			seqs = append(seqs, r.Seq)
		}
		if room.Latest().Seq != seqs[len(seqs)-1] {
			t.Errorf("the hook's room is at seq %d, its batch ends at %d", room.Latest().Seq, seqs[len(seqs)-1])
		}
		batches = append(batches, seqs)
		return nil
	}})
	if err := rep.Admit(ctx, w.Records[:2]...); err != nil {
		t.Fatal(err)
	}
	if err := rep.Admit(ctx, w.Records...); err != nil { // 1 and 2 again, then 3 to 5
		t.Fatal(err)
	}
	if err := rep.Admit(ctx, w.Records[3]); err != nil {
		t.Fatal(err)
	}
	if want := [][]int64{{1, 2}, {3, 4, 5}}; !slices.EqualFunc(batches, want, slices.Equal) {
		t.Fatalf("batches %v, want %v", batches, want)
	}
	w.OK(w.Say("alice", "four"))
	w.OK(w.Say("alice", "five"))
	if err := rep.Admit(ctx, w.Records[6]); !errors.Is(err, adp.ErrGap) {
		t.Fatalf("seq 7 on seq 5: %v", err)
	}
	if l := rep.Latest(); l.Seq != 5 || l.Hash != w.Records[4].Hash {
		t.Fatalf("latest %+v", l)
	}
	// A different record at a held seq is refused.
	other := *w.Records[4]
	other.Envelope = w.Records[3].Envelope
	other.Hash = other.ComputeHash()
	if err := rep.Admit(ctx, &other); !errors.Is(err, adp.ErrInvalidRecord) {
		t.Fatalf("another record at seq 5: %v", err)
	}
}

// TestReplicaFails: a hook error, and a batch the host spoiled after
// verified records, fail the replica: the hook never sees part of a bad
// batch, and the replica admits nothing more.
func TestReplicaFails(t *testing.T) {
	w := replicaWorld(t)
	ctx := context.Background()
	var got []int64
	hookErr := errors.New("disk full")
	fail := false
	rep := adp.NewReplica(w.Room.ID(), &adp.ReplicaOptions{Admitted: func(_ context.Context, recs []*adp.Record, _ *adp.Room) error {
		if fail {
			return hookErr
		}
		for _, r := range recs {
			got = append(got, r.Seq)
		}
		return nil
	}})
	if err := rep.Admit(ctx, w.Records[:2]...); err != nil {
		t.Fatal(err)
	}
	forged := *w.Records[3]
	forged.Envelope = w.Records[2].Envelope
	forged.Hash = forged.ComputeHash()
	if err := rep.Admit(ctx, w.Records[2], &forged); !errors.Is(err, adp.ErrInvalidRecord) {
		t.Fatalf("a batch with a forged record: %v", err)
	}
	if !slices.Equal(got, []int64{1, 2}) || !errors.Is(rep.Err(), adp.ErrReplicaFailed) {
		t.Fatalf("after a spoiled batch: hook saw %v, Err %v", got, rep.Err())
	}
	if err := rep.Admit(ctx, w.Records[3]); !errors.Is(err, adp.ErrReplicaFailed) {
		t.Fatalf("a failed replica admitted: %v", err)
	}

	fail = true
	rep2 := adp.NewReplica(w.Room.ID(), &adp.ReplicaOptions{Admitted: func(context.Context, []*adp.Record, *adp.Room) error { return hookErr }})
	if err := rep2.Admit(ctx, w.Records[0]); !errors.Is(err, adp.ErrReplicaFailed) || !errors.Is(err, hookErr) {
		t.Fatalf("a failing hook: %v", err)
	}
}

// TestReplicaSnapshot: a replica restored from its snapshot continues
// where it was, and Replay admits stored records without the hook.
func TestReplicaSnapshot(t *testing.T) {
	w := replicaWorld(t)
	ctx := context.Background()
	rep := adp.NewReplica(w.Room.ID(), nil)
	if err := rep.Admit(ctx, w.Records[:3]...); err != nil {
		t.Fatal(err)
	}
	snap, err := rep.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	hooked := 0
	back, err := adp.RestoreReplica(snap, &adp.ReplicaOptions{Admitted: func(context.Context, []*adp.Record, *adp.Room) error { hooked++; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if back.ID() != w.Room.ID() || back.Latest() != rep.Latest() || back.Head() != rep.Head() {
		t.Fatalf("restored %s at %+v, want %+v", back.ID(), back.Latest(), rep.Latest())
	}
	if err := back.Replay(ctx, w.Records[3]); err != nil || hooked != 0 {
		t.Fatalf("replay: %v, hook called %d times", err, hooked)
	}
	if err := back.Admit(ctx, w.Records[4]); err != nil || hooked != 1 {
		t.Fatalf("admit: %v, hook called %d times", err, hooked)
	}
	if _, err := adp.RestoreReplica(snap, &adp.ReplicaOptions{Room: adp.RoomOptions{Index: adp.NewMemoryIndex()}}); err == nil {
		t.Fatal("restored with an index of its own")
	}
}

// TestNewEvent: a raw built-in payload is checked against its type's
// kernel rules once and signed as given; types not written on a base, and
// room-defined ones, are refused with invalid_event.
func TestNewEvent(t *testing.T) {
	w := replicaWorld(t)
	ctx := context.Background()
	a := w.Author("alice")
	env, err := adp.NewEvent(ctx, a, w.Base(adp.TypeMessageCreate), adp.TypeMessageCreate, []byte(`{"content_type":"text/plain","content":"raw"}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(env.Event().Payload) != `{"content_type":"text/plain","content":"raw"}` {
		t.Fatalf("payload %s", env.Event().Payload)
	}
	w.OK(w.Submit(env, nil))
	for name, c := range map[string]struct {
		typ, payload string
		code         string
	}{
		"kernel rule":  {adp.TypeMessageCreate, `{"content_type":"text/plain"}`, "invalid_event"},
		"room.create":  {adp.TypeRoomCreate, `{}`, "invalid_event"},
		"join request": {adp.TypeRoomJoinRequest, `{}`, "invalid_event"},
		"custom":       {"team.note", `{}`, "invalid_event"},
	} {
		_, err := adp.NewEvent(ctx, a, w.Base(adp.TypeMessageCreate), c.typ, []byte(c.payload))
		var ie *identity.Error
		if !errors.As(err, &ie) || string(ie.Code) != c.code {
			t.Errorf("%s: %v, want %s", name, err, c.code)
		}
	}
}
