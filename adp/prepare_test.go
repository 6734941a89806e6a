package adp_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adp/adptest"
	"github.com/agentprotocols/go-sdk/identity"
)

// Prepare judges a write as Accept does without changing the room; Commit
// then leaves the room exactly as Accept would have, once, and only on the
// state the judgment was made on.
func TestPrepareCommitIsAccept(t *testing.T) {
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", nil)
	w.PublicRoom()
	w.Join("alice", adp.RoleSpeaker)
	w.Join("bob", adp.RoleSpeaker)

	twin := w.Replay(nil) // the same state, reached by replay
	env, err := adp.NewMessage(w.Ctx, w.Author("alice"), w.Base(adp.TypeMessageCreate), adp.Message{ContentType: "text/plain", Content: adp.TextContent("hi")})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := twin.Snapshot()
	p, err := twin.Prepare(w.Ctx, env, w.Now)
	if err != nil {
		t.Fatal(err)
	}
	if after, _ := twin.Snapshot(); !bytes.Equal(before, after) {
		t.Fatal("Prepare changed the room")
	}
	rec, err := w.Room.Accept(w.Ctx, env, w.Now)
	if err != nil {
		t.Fatal(err)
	}
	if p.Record.Hash != rec.Hash || p.Record.Seq != rec.Seq || p.Record.ReceivedAt != rec.ReceivedAt {
		t.Fatalf("prepared record %d %s, Accept's %d %s", p.Record.Seq, p.Record.Hash, rec.Seq, rec.Hash)
	}
	if err := p.Commit(); err != nil {
		t.Fatal(err)
	}
	a, _ := w.Room.Snapshot()
	b, _ := twin.Snapshot()
	if !bytes.Equal(a, b) {
		t.Fatal("Prepare+Commit left another state than Accept")
	}
	if err := p.Commit(); !errors.Is(err, adp.ErrInvalidRecord) {
		t.Fatalf("second Commit: %v, want invalid_record", err)
	}

	// A judgment made on a state the room has left does not commit.
	base, err := twin.BaseFor(adp.TypeMessageCreate)
	if err != nil {
		t.Fatal(err)
	}
	env2, err := adp.NewMessage(w.Ctx, w.Author("bob"), base, adp.Message{ContentType: "text/plain", Content: adp.TextContent("late")})
	if err != nil {
		t.Fatal(err)
	}
	stale, err := twin.Prepare(w.Ctx, env2, w.Now)
	if err != nil {
		t.Fatal(err)
	}
	w.Room = twin
	if _, err := w.Say("alice", "first"); err != nil {
		t.Fatal(err)
	}
	moved, _ := twin.Snapshot()
	if err := stale.Commit(); !errors.Is(err, adp.ErrInvalidRecord) {
		t.Fatalf("stale Commit: %v, want invalid_record", err)
	}
	if now, _ := twin.Snapshot(); !bytes.Equal(moved, now) {
		t.Fatal("a refused Commit changed the room")
	}
}

// PrepareEvent judges the event ParseEvent read exactly as Prepare judges
// its envelope, and takes no Event that ParseEvent did not make.
func TestPrepareEvent(t *testing.T) {
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", nil)
	w.PublicRoom()
	w.Join("alice", adp.RoleSpeaker)
	env, err := adp.NewMessage(w.Ctx, w.Author("alice"), w.Base(adp.TypeMessageCreate), adp.Message{ContentType: "text/plain", Content: adp.TextContent("hi")})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := adp.ParseEvent(env)
	if err != nil {
		t.Fatal(err)
	}
	want, err := w.Room.Prepare(w.Ctx, env, w.Now)
	if err != nil {
		t.Fatal(err)
	}
	got, err := w.Room.PrepareEvent(w.Ctx, ev, w.Now)
	if err != nil {
		t.Fatal(err)
	}
	if got.Record.Hash != want.Record.Hash || got.Record.Seq != want.Record.Seq {
		t.Fatalf("PrepareEvent: record %d %s, Prepare's %d %s", got.Record.Seq, got.Record.Hash, want.Record.Seq, want.Record.Hash)
	}
	if err := got.Commit(); err != nil {
		t.Fatal(err)
	}
	// The same event again is refused as Prepare refuses it.
	_, werr := w.Room.Prepare(w.Ctx, env, w.Now)
	_, gerr := w.Room.PrepareEvent(w.Ctx, ev, w.Now)
	if werr == nil || gerr == nil || werr.Error() != gerr.Error() {
		t.Fatalf("resubmitted: PrepareEvent %v, Prepare %v", gerr, werr)
	}
	if _, err := w.Room.PrepareEvent(w.Ctx, &adp.Event{Event: ev.Event, Hash: ev.Hash, RoomID: ev.RoomID}, w.Now); !errors.Is(err, identity.ErrInvalidEvent) {
		t.Fatalf("hand-made Event: %v, want invalid_event", err)
	}
}
