package boltstore

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
)

// TestBoltStore: append-if-head, lookup by event, and the other
// resources survive reopening the file.
func TestBoltStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "host.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	k, _ := identity.NewKeyFromSeed(make([]byte, 32))
	now := time.Now()
	env, err := adp.NewRoomCreate(ctx, envelope.NewAuthor(k), adp.RoomCreate{Topic: "t", Visibility: adp.VisibilityPublic,
		StartTime: now.UnixMilli(), EndTime: now.Add(time.Hour).UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	r1 := adp.NewRecord("room", nil, 1, env)
	r2 := adp.NewRecord("room", r1, 2, env)
	if err := s.Append(ctx, r2); !errors.Is(err, adphost.ErrHeadMoved) {
		t.Fatalf("seq 2 into an empty log: %v", err)
	}
	if err := s.Append(ctx, r1); err != nil {
		t.Fatal(err)
	}
	forked := *r2
	forked.PreHash = envelope.Sum([]byte("x"))
	if err := s.Append(ctx, &forked); !errors.Is(err, adphost.ErrHeadMoved) {
		t.Fatalf("a fork: %v", err)
	}
	if err := s.Append(ctx, r2); err != nil {
		t.Fatal(err)
	}
	jr := &adp.JoinRequestResource{Request: adp.JoinRequest{ID: "jr_1", RoomID: "room", Applicant: k.AgentID(), Role: adp.RoleSpeaker, CreatedAt: 1, ExpiresAt: 2}, Status: adp.JoinPending}
	if err := s.PutJoinRequest(ctx, jr); err != nil {
		t.Fatal(err)
	}
	if err := s.PutStatus(ctx, &adp.AgentStatus{RoomID: "room", AgentID: k.AgentID(), State: "idle", ExpiresAt: 5}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutMaxNonce(ctx, k.AgentID(), 42, 99); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	recs, err := s.Records(ctx, "room", 0, 10)
	if err != nil || len(recs) != 2 || recs[1].Hash != r2.Hash {
		t.Fatalf("records: %v, %v", recs, err)
	}
	if rec, err := s.RecordByEvent(ctx, env.Hash()); err != nil || rec == nil || rec.Seq != 2 {
		t.Fatalf("by event: %v, %v", rec, err)
	}
	if got, err := s.JoinRequest(ctx, "room", "jr_1"); err != nil || got == nil || got.Status != adp.JoinPending {
		t.Fatalf("join request: %v, %v", got, err)
	}
	if sts, err := s.Statuses(ctx, "room"); err != nil || len(sts) != 1 {
		t.Fatalf("statuses: %v, %v", sts, err)
	}
	if n, exp, err := s.MaxNonce(ctx, k.AgentID()); err != nil || n != 42 || exp != 99 {
		t.Fatalf("nonce %d %d %v", n, exp, err)
	}
	if rooms, err := s.Rooms(ctx); err != nil || len(rooms) != 1 || rooms[0] != "room" {
		t.Fatalf("rooms: %v, %v", rooms, err)
	}
}
