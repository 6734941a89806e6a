package adp_test

import (
	"errors"
	"testing"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adp/adptest"
)

func TestSmoke(t *testing.T) {
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", nil)
	w.PublicRoom()
	w.Join("alice", adp.RoleSpeaker)
	if _, err := w.Say("alice", "hello"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Say("bob", "hello"); !errors.Is(err, adp.ErrPermissionDenied) {
		t.Fatalf("non-member spoke: %v, want permission_denied", err)
	}
	if h := w.Room.Head(); h.Seq != 3 {
		t.Fatalf("head %d", h.Seq)
	}
	snap, err := w.Room.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	r2, err := adp.RestoreRoom(snap, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Head() != w.Room.Head() || len(r2.Members()) != 2 {
		t.Fatal("restore differs")
	}
}
