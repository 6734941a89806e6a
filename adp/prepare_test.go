package adp_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adp/adptest"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/packs"
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
	p, err := twin.Prepare(w.Ctx, parsed(t, env), w.Now)
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
	stale, err := twin.Prepare(w.Ctx, parsed(t, env2), w.Now)
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

// parsed is the event ParseEvent reads from env.
func parsed(t testing.TB, env *envelope.Envelope) *adp.Event {
	t.Helper()
	ev, err := adp.ParseEvent(env)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// Prepare judges the event ParseEvent read exactly as Accept judges its
// envelope, and takes no Event that ParseEvent did not make. The typed
// payload the rule table reads is the one Event.Builtin returns.
func TestPrepareTakesParsedEvent(t *testing.T) {
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", nil)
	w.PublicRoom()
	w.Join("alice", adp.RoleSpeaker)
	twin := w.Replay(nil)
	env, err := adp.NewMessage(w.Ctx, w.Author("alice"), w.Base(adp.TypeMessageCreate), adp.Message{ContentType: "text/plain", Content: adp.TextContent("hi")})
	if err != nil {
		t.Fatal(err)
	}
	ev := parsed(t, env)
	typed, err := ev.Builtin()
	if m, ok := typed.(*adp.Message); err != nil || !ok || m.ContentType != "text/plain" {
		t.Fatalf("Builtin: %#v, %v", typed, err)
	}
	got, err := w.Room.Prepare(w.Ctx, ev, w.Now)
	if err != nil {
		t.Fatal(err)
	}
	want, err := twin.Accept(w.Ctx, env, w.Now)
	if err != nil {
		t.Fatal(err)
	}
	if got.Record.Hash != want.Hash || got.Record.Seq != want.Seq {
		t.Fatalf("Prepare: record %d %s, Accept's %d %s", got.Record.Seq, got.Record.Hash, want.Seq, want.Hash)
	}
	if again, _ := ev.Builtin(); again != typed {
		t.Fatal("the typed payload was decoded again")
	}
	if err := got.Commit(); err != nil {
		t.Fatal(err)
	}
	// The same event again is refused as Accept refuses it.
	_, gerr := w.Room.Prepare(w.Ctx, ev, w.Now)
	_, werr := twin.Accept(w.Ctx, env, w.Now)
	if werr == nil || gerr == nil || werr.Error() != gerr.Error() {
		t.Fatalf("resubmitted: Prepare %v, Accept %v", gerr, werr)
	}
	if _, err := w.Room.Prepare(w.Ctx, &adp.Event{Event: ev.Event, Hash: ev.Hash, RoomID: ev.RoomID}, w.Now); !errors.Is(err, identity.ErrInvalidEvent) {
		t.Fatalf("hand-made Event: %v, want invalid_event", err)
	}
}

// Undo takes back committed writes newest first, leaving the room exactly
// as before them (its snapshot bytes, including the index's kept lists),
// and the room then accepts other writes in their place as if the undone
// ones had never been judged. It refuses, changing nothing, a write that
// is not the latest, and one not committed.
func TestPendingUndo(t *testing.T) {
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", nil)
	w.PublicRoom()
	w.Join("alice", adp.RoleSpeaker)
	w.Join("bob", adp.RoleSpeaker)
	decl, err := packs.ParseDeclaration([]byte(`{"type":"team.nudge","kind":"signal","title":"Nudge","schema":{"type":"object"}}`))
	if err != nil {
		t.Fatal(err)
	}
	w.Must(adp.NewTypeDefine(w.Ctx, w.Author("creator"), w.Base(adp.TypeTypeDefine), decl))
	w.OK(w.Say("alice", "before"))
	if _, err := w.Room.Snapshot(); err != nil { // the index now keeps its lists as text
		t.Fatal(err)
	}
	before, _ := w.Room.Snapshot()
	twin := w.Replay(nil)

	prep := func(env *envelope.Envelope, err error) *adp.Pending {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		w.Tick(time.Millisecond)
		p, err := w.Room.Prepare(w.Ctx, parsed(t, env), w.Now)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Commit(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	decl2, _ := packs.ParseDeclaration([]byte(`{"type":"team.poke","kind":"message","title":"Poke","schema":{"type":"object"}}`))
	ps := []*adp.Pending{
		prep(adp.NewMessage(w.Ctx, w.Author("alice"), w.Base(adp.TypeMessageCreate), adp.Message{ContentType: "text/plain", Content: adp.TextContent("one")})),
		prep(adp.NewCustom(w.Ctx, w.Author("bob"), w.Base("team.nudge"), w.Room.Registry(), "team.nudge", map[string]int{})),
		prep(adp.NewTypeDefine(w.Ctx, w.Author("creator"), w.Base(adp.TypeTypeDefine), decl2)),
		prep(adp.NewCustom(w.Ctx, w.Author("alice"), w.Base("team.poke"), w.Room.Registry(), "team.poke", map[string]int{})),
	}
	if err := ps[0].Undo(); !errors.Is(err, adp.ErrCannotUndo) {
		t.Fatalf("Undo of a record that is not the latest: %v", err)
	}
	for i := len(ps) - 1; i >= 0; i-- {
		if err := ps[i].Undo(); err != nil {
			t.Fatalf("Undo of write %d: %v", i, err)
		}
	}
	if after, _ := w.Room.Snapshot(); !bytes.Equal(before, after) {
		t.Fatalf("after Undo the room is not as before:\nbefore %s\nafter  %s", before, after)
	}
	if err := ps[0].Undo(); !errors.Is(err, adp.ErrCannotUndo) {
		t.Fatalf("second Undo: %v", err)
	}
	if err := ps[0].Commit(); !errors.Is(err, adp.ErrInvalidRecord) {
		t.Fatalf("Commit after Undo: %v", err)
	}

	// The same seq goes to another write, on both the undone room and a
	// twin that never saw the undone ones; a message may not reference an
	// undone event.
	undone := ps[0].Record.Envelope.Hash()
	_, err = w.Submit(adp.NewMessage(w.Ctx, w.Author("bob"), w.Base(adp.TypeMessageCreate), adp.Message{ContentType: "text/plain", Content: adp.TextContent("ref"), References: []envelope.Hash{undone}}))
	if !errors.Is(err, identity.ErrInvalidEvent) {
		t.Fatalf("a reference to an undone event: %v", err)
	}
	env, err := adp.NewMessage(w.Ctx, w.Author("bob"), w.Base(adp.TypeMessageCreate), adp.Message{ContentType: "text/plain", Content: adp.TextContent("instead")})
	if err != nil {
		t.Fatal(err)
	}
	a, errA := w.Room.Accept(w.Ctx, env, w.Now)
	b, errB := twin.Accept(w.Ctx, env, w.Now)
	if errA != nil || errB != nil || a.Hash != b.Hash {
		t.Fatalf("after Undo: %v / %v", errA, errB)
	}
	sa, _ := w.Room.Snapshot()
	sb, _ := twin.Snapshot()
	if !bytes.Equal(sa, sb) {
		t.Fatalf("the undone room and its twin differ:\n%s\n%s", sa, sb)
	}

	// A snapshot taken between Commit and Undo has merged the record into
	// the index's kept lists: Undo drops them, and the next snapshot is
	// the same as before the write.
	prior, _ := w.Room.Snapshot()
	p1 := prep(adp.NewMessage(w.Ctx, w.Author("alice"), w.Base(adp.TypeMessageCreate), adp.Message{ContentType: "text/plain", Content: adp.TextContent("two")}))
	if _, err := w.Room.Snapshot(); err != nil {
		t.Fatal(err)
	}
	if err := p1.Undo(); err != nil {
		t.Fatal(err)
	}
	if now, _ := w.Room.Snapshot(); !bytes.Equal(prior, now) {
		t.Fatal("Undo after a snapshot left another state")
	}

	// A write not committed cannot be undone.
	w.Tick(time.Millisecond)
	join, err := adp.NewJoin(w.Ctx, w.Author("carol"), w.Base(adp.TypeRoomJoin), adp.Join{Role: adp.RoleSpeaker})
	if err != nil {
		t.Fatal(err)
	}
	p, err := w.Room.Prepare(w.Ctx, parsed(t, join), w.Now)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Undo(); !errors.Is(err, adp.ErrCannotUndo) {
		t.Fatalf("Undo before Commit: %v", err)
	}
}

// Membership and lifecycle writes, which change the room beyond their
// record, are undone in memory too: after each Commit and Undo the room
// is exactly as before (its snapshot bytes), and then accepts the same
// write as a twin that never saw it. This is what lets a host put its
// replica back when the append of such a write fails, without a
// serialized copy of the room.
func TestPendingUndoMembership(t *testing.T) {
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", nil)
	// The room.create itself, on an empty room.
	create, err := adp.NewRoomCreate(w.Ctx, w.Author("creator"), adp.RoomCreate{Topic: "undo", Visibility: adp.VisibilityPublic,
		StartTime: w.Now.UnixMilli(), EndTime: w.Now.Add(time.Hour).UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	empty, _ := w.Room.Snapshot()
	p, err := w.Room.Prepare(w.Ctx, parsed(t, create), w.Now)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := p.Undo(); err != nil {
		t.Fatalf("Undo of the room.create: %v", err)
	}
	if now, _ := w.Room.Snapshot(); !bytes.Equal(empty, now) || w.Room.Created() {
		t.Fatalf("the undone room.create left the room changed:\n%s\n%s", empty, func() []byte { b, _ := w.Room.Snapshot(); return b }())
	}
	w.OK(w.Submit(create, nil))
	w.Join("alice", adp.RoleSpeaker)
	w.Join("bob", adp.RoleSpeaker)

	writes := []func() (*envelope.Envelope, error){
		func() (*envelope.Envelope, error) {
			return adp.NewJoin(w.Ctx, w.Author("carol"), w.Base(adp.TypeRoomJoin), adp.Join{Role: adp.RoleObserver})
		},
		func() (*envelope.Envelope, error) {
			return adp.NewRoleUpdate(w.Ctx, w.Author("creator"), w.Base(adp.TypeMemberRoleUpdate), adp.RoleUpdate{Member: w.ID("alice"), Role: adp.RoleObserver})
		},
		func() (*envelope.Envelope, error) {
			return adp.NewMemberRemove(w.Ctx, w.Author("creator"), w.Base(adp.TypeMemberRemove), adp.MemberRemove{Member: w.ID("bob"), Ban: true})
		},
		func() (*envelope.Envelope, error) {
			return adp.NewLeave(w.Ctx, w.Author("alice"), w.Base(adp.TypeRoomLeave), adp.Notice{})
		},
		func() (*envelope.Envelope, error) {
			topic := "renamed"
			return adp.NewRoomUpdate(w.Ctx, w.Author("creator"), w.Base(adp.TypeRoomUpdate), adp.RoomUpdate{Topic: &topic})
		},
	}
	for i, write := range writes {
		w.Tick(time.Millisecond)
		env, err := write()
		if err != nil {
			t.Fatal(err)
		}
		twin := w.Replay(nil)
		before, _ := w.Room.Snapshot()
		p, err := w.Room.Prepare(w.Ctx, parsed(t, env), w.Now)
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		if err := p.Commit(); err != nil {
			t.Fatal(err)
		}
		if err := p.Undo(); err != nil {
			t.Fatalf("Undo of write %d (%s): %v", i, parsed(t, env).Type, err)
		}
		if now, _ := w.Room.Snapshot(); !bytes.Equal(before, now) {
			t.Fatalf("after Undo of write %d the room is not as before:\nbefore %s\nafter  %s", i, before, now)
		}
		// Both accept it now, alike; the next write builds on it.
		a, errA := w.Room.Accept(w.Ctx, env, w.Now)
		b, errB := twin.Accept(w.Ctx, env, w.Now)
		if errA != nil || errB != nil || a.Hash != b.Hash {
			t.Fatalf("write %d after Undo: %v / %v", i, errA, errB)
		}
		w.Records = append(w.Records, a)
		sa, _ := w.Room.Snapshot()
		sb, _ := twin.Snapshot()
		if !bytes.Equal(sa, sb) {
			t.Fatalf("write %d: the undone room and its twin differ:\n%s\n%s", i, sa, sb)
		}
	}
}
