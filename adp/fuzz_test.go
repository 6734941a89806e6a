package adp_test

import (
	"bytes"
	"strconv"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adp/adptest"
	"github.com/agentprotocols/go-sdk/envelope"
)

// FuzzRoomReplay drives a room with a random sequence of valid and invalid
// writes and checks the replayer's invariants after every step:
//
//   - a rejected write changes nothing (the snapshot is byte-identical);
//   - an accepted write gets the next seq, with pre_hash the previous hash;
//   - a signal never moves the head; any other write becomes the head;
//
// and at the end that replaying the accepted records through Apply (the
// verifier path) reproduces exactly the state the host path built.
func FuzzRoomReplay(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte{1, 1, 5, 5, 9, 200, 3, 3, 17, 40, 2, 2, 60, 7})
	f.Add(bytes.Repeat([]byte{3, 14, 9, 2}, 8))
	f.Fuzz(func(t *testing.T, program []byte) { replayProgram(t, program, nil) })
}

// replayProgram runs one FuzzRoomReplay program, checking its invariants;
// verdict, when set, is told the outcome of every write the program
// offers (nil when accepted), in order.
func replayProgram(t *testing.T, program []byte, verdict func(step int, typ string, err error)) {
	if len(program) > 48 {
		program = program[:48]
	}
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", nil)
	w.PublicRoom(withTypes(`{"use":"adp:reactions/1.0"}`, `{"use":"adp:deliberation/1.0"}`, reviewFinding),
		policy(adp.Policy{MaxSpeakers: 3}))
	names := []string{"creator", "alice", "bob", "carol"}
	roles := []adp.Role{adp.RoleSpeaker, adp.RoleObserver, adp.RoleModerator}
	var stale adp.Base
	for i, op := range program {
		who := names[int(op>>4)%len(names)]
		other := names[(int(op>>4)+1)%len(names)]
		last := w.Records[len(w.Records)-1]
		var env *envelope.Envelope
		var err error
		switch op % 16 {
		case 0:
			j := adp.Join{Role: roles[i%3]}
			if op&0x40 != 0 { // an automatically approved request, sometimes reused
				j.RequestID = "jr_" + strconv.Itoa(int(op)%3)
			}
			env, err = adp.NewJoin(w.Ctx, w.Author(who), w.Base("room.join"), j)
		case 1, 2:
			env, err = adp.NewMessage(w.Ctx, w.Author(who), w.Base("message.create"), adp.Message{ContentType: "text/plain", Content: adp.TextContent("m" + strconv.Itoa(i))})
		case 3:
			env, err = custom(w, who, "reaction.create", `{"event_id":"`+last.Envelope.Hash().String()+`","reaction":"agree"}`)
		case 4:
			env, err = adp.NewLeave(w.Ctx, w.Author(who), w.Base("room.leave"), adp.Notice{})
		case 5:
			env, err = adp.NewRoleUpdate(w.Ctx, w.Author(who), w.Base("room.member.role.update"), adp.RoleUpdate{Member: w.ID(other), Role: roles[i%3]})
		case 6:
			env, err = adp.NewMemberRemove(w.Ctx, w.Author(who), w.Base("room.member.remove"), adp.MemberRemove{Member: w.ID(other), Ban: i%2 == 0})
		case 7:
			env, err = custom(w, who, "review.finding", `{"severity":"low","summary":"s`+strconv.Itoa(i)+`"}`)
		case 8:
			env, err = custom(w, who, "review.finding", `{"severity":"none"}`) // schema violation
		case 9:
			stale = w.Base("message.create")
			continue
		case 10:
			if stale.Seq == 0 {
				continue
			}
			env, err = adp.NewMessage(w.Ctx, w.Author(who), stale, adp.Message{ContentType: "text/plain", Content: adp.TextContent("stale" + strconv.Itoa(i))})
		case 11:
			env, err = adp.NewRoomUpdate(w.Ctx, w.Author(who), w.Base("room.update"), adp.RoomUpdate{Guidance: ptr("g" + strconv.Itoa(i))})
		case 12:
			env, err = custom(w, who, "poll.create", `{"poll_id":"p`+strconv.Itoa(i)+`","question":"q","options":[{"id":"a","label":"A"}]}`)
		case 13:
			b := w.Base("reaction.create")
			b.Seq = int64(op) % (b.Seq + 2) // sometimes a real anchor, sometimes not
			if h, ok := anchorHash(w, b.Seq); ok {
				b.Hash = h
			}
			env, err = raw(w, who, "reaction.create", &b, `{"event_id":"`+last.Envelope.Hash().String()+`","reaction":"x"}`)
		case 14:
			if op&0x40 != 0 { // the host clock steps back
				w.Tick(-time.Duration(op) * time.Second)
				continue
			}
			w.Tick(time.Duration(op) * time.Minute / 8)
			continue
		case 15:
			env, err = adp.NewClose(w.Ctx, w.Author(who), w.Base("room.close"), adp.Notice{})
		}
		if err != nil {
			continue // the builder refused it locally; nothing was sent
		}
		before, _ := w.Room.Snapshot()
		head, latest := w.Room.Head(), w.Room.Latest()
		w.Tick(time.Millisecond)
		rec, err := w.Room.Accept(w.Ctx, env, w.Now)
		if verdict != nil {
			verdict(i, env.Type(), err)
		}
		if err != nil {
			if after, _ := w.Room.Snapshot(); !bytes.Equal(before, after) {
				t.Fatalf("step %d: rejected %s (%v) changed the state", i, env.Type(), err)
			}
			continue
		}
		w.Records = append(w.Records, rec)
		if rec.Seq != latest.Seq+1 || rec.PreHash != latest.Hash {
			t.Fatalf("step %d: seq %d after %d", i, rec.Seq, latest.Seq)
		}
		if rec.ReceivedAt < latest.ReceivedAt {
			t.Fatalf("step %d: received_at %d after %d", i, rec.ReceivedAt, latest.ReceivedAt)
		}
		signal := adp.BuiltinCategory(env.Type()) == adp.CategorySignal
		if def := w.Room.Registry().Lookup(env.Type()); def != nil {
			signal = def.Kind == adp.KindSignal
		}
		newHead := w.Room.Head()
		if signal && newHead != head {
			t.Fatalf("step %d: signal %s moved the head", i, env.Type())
		}
		if !signal && newHead != (adp.RecordRef{Seq: rec.Seq, Hash: rec.Hash}) {
			t.Fatalf("step %d: %s did not become the head", i, env.Type())
		}
	}
	// The verifier path reproduces the host path exactly.
	replay := adp.NewRoom(w.Room.ID(), nil)
	for _, rec := range w.Records {
		if err := replay.Apply(w.Ctx, rec); err != nil {
			t.Fatalf("replaying seq %d: %v", rec.Seq, err)
		}
	}
	a, _ := w.Room.Snapshot()
	b, _ := replay.Snapshot()
	if !bytes.Equal(a, b) {
		t.Fatal("replayed state differs from the host's state")
	}
	// Every state the rules produce passes RestoreRoom's checks.
	if _, err := adp.RestoreRoom(a, nil); err != nil {
		t.Fatalf("restoring the room's own snapshot: %v", err)
	}
}

// FuzzRestoreRoom: RestoreRoom parses untrusted bytes. It never panics,
// and what it accepts snapshots again into a state it accepts, unchanged.
func FuzzRestoreRoom(f *testing.F) {
	w := adptest.NewWorld(f, "d8ftedhpqhsusbg001tg", nil)
	w.PublicRoom(withTypes(`{"use":"adp:reactions/1.0"}`))
	snap0, _ := w.Room.Snapshot()
	w.Join("alice", adp.RoleSpeaker)
	w.OK(joinWith(w, "bob", "jr_auto", adp.RoleObserver))
	w.OK(review(w, "creator", request(w, "jr_1", "carol", adp.RoleSpeaker), adp.DecisionApprove, adp.RoleSpeaker))
	w.Must(adp.NewMemberRemove(w.Ctx, w.Author("creator"), w.Base("room.member.remove"), adp.MemberRemove{Member: w.ID("alice"), Ban: true}))
	snap1, _ := w.Room.Snapshot()
	empty, _ := adp.NewRoom("r", nil).Snapshot()
	for _, s := range [][]byte{snap0, snap1, empty} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := adp.RestoreRoom(b, nil)
		if err != nil {
			return
		}
		s1, err := r.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		r2, err := adp.RestoreRoom(s1, nil)
		if err != nil {
			t.Fatalf("a restored room's snapshot does not restore: %v", err)
		}
		if s2, _ := r2.Snapshot(); !bytes.Equal(s1, s2) {
			t.Fatal("snapshot is not stable across restore")
		}
	})
}

func anchorHash(w *adptest.World, seq int64) (envelope.Hash, bool) {
	if seq < 1 || seq > int64(len(w.Records)) {
		return envelope.Hash{}, false
	}
	return w.Records[seq-1].Hash, true
}
