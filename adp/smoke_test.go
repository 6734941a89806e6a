package adp_test

import (
	"errors"
	"testing"

	"github.com/agentprotocols/go-sdk/adp"
)

func TestSmoke(t *testing.T) {
	w := newWorld(t, nil)
	w.publicRoom()
	w.join("alice", adp.RoleSpeaker)
	if _, err := w.say("alice", "hello"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.say("bob", "hello"); !errors.Is(err, adp.ErrPermissionDenied) {
		t.Fatalf("non-member spoke: %v, want permission_denied", err)
	}
	if h := w.room.Head(); h.Seq != 3 {
		t.Fatalf("head %d", h.Seq)
	}
	snap, err := w.room.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	r2, err := adp.RestoreRoom(snap, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Head() != w.room.Head() || len(r2.Members()) != 2 {
		t.Fatal("restore differs")
	}
}
