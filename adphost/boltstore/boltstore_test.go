package boltstore

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/storetest"
)

// TestConformance: the bbolt store passes the Store suite.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) adphost.Store {
		s, err := Open(filepath.Join(t.TempDir(), "host.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// TestReopen: everything survives closing and reopening the file.
func TestReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "host.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	a := storetest.Author("creator")
	env, err := adp.NewRoomCreate(ctx, a, adp.RoomCreate{Topic: "t", Visibility: adp.VisibilityPublic,
		StartTime: storetest.T0.UnixMilli(), EndTime: storetest.T0.Add(time.Hour).UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	r1 := adp.NewRecord("room", nil, 1, env)
	if err := s.Append(ctx, storetest.Commit(r1)); err != nil {
		t.Fatal(err)
	}
	jr := &adp.JoinRequestResource{Request: adp.JoinRequest{ID: "jr_1", RoomID: "room", Applicant: a.AgentID(), Role: adp.RoleSpeaker, CreatedAt: 1, ExpiresAt: 2}, Status: adp.JoinPending}
	if err := s.PutJoinRequest(ctx, jr); err != nil {
		t.Fatal(err)
	}
	if err := s.PutStatus(ctx, &adp.AgentStatus{RoomID: "room", AgentID: a.AgentID(), State: "idle", ExpiresAt: 5}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutSnapshot(ctx, "room", 1, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if rec, err := s.RecordByEvent(ctx, env.Hash()); err != nil || rec == nil || rec.Seq != 1 || rec.Hash != r1.Hash {
		t.Fatalf("by event: %v, %v", rec, err)
	}
	if got, err := s.JoinRequest(ctx, "room", "jr_1"); err != nil || got == nil || got.Status != adp.JoinPending {
		t.Fatalf("join request: %v, %v", got, err)
	}
	if sts, err := s.Statuses(ctx, "room"); err != nil || len(sts) != 1 {
		t.Fatalf("statuses: %v, %v", sts, err)
	}
	if n, _, err := s.MaxNonce(ctx, a.AgentID()); err != nil || n == 0 {
		t.Fatalf("nonce %d %v", n, err)
	}
	if seq, snap, err := s.Snapshot(ctx, "room"); err != nil || seq != 1 || string(snap) != "{}" {
		t.Fatalf("snapshot %d %q %v", seq, snap, err)
	}
	if list, err := s.PublicRooms(ctx); err != nil || len(list) != 1 || list[0].Summary.ID != "room" {
		t.Fatalf("public rooms %+v %v", list, err)
	}
}
