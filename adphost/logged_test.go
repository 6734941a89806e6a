package adphost_test

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/logtest"
)

var errSideWrite = errors.New("test: the store refused a write beside a record")

// sideFailStore is a MemoryStore whose writes beside a record (a room
// snapshot, a reviewed join request, an agent status cleared) fail while
// armed; records themselves are stored.
type sideFailStore struct {
	*adphost.MemoryStore
	armed atomic.Bool
}

func (s *sideFailStore) PutSnapshot(ctx context.Context, room string, seq int64, snap []byte) error {
	if s.armed.Load() {
		return errSideWrite
	}
	return s.MemoryStore.PutSnapshot(ctx, room, seq, snap)
}

func (s *sideFailStore) PutJoinRequest(ctx context.Context, jr *adp.JoinRequestResource) error {
	if s.armed.Load() {
		return errSideWrite
	}
	return s.MemoryStore.PutJoinRequest(ctx, jr)
}

func (s *sideFailStore) DeleteStatus(ctx context.Context, room string, agent identity.AgentID) error {
	if s.armed.Load() {
		return errSideWrite
	}
	return s.MemoryStore.DeleteStatus(ctx, room, agent)
}

// TestSideWriteFailuresAreLogged: a write is answered once its record is
// stored; what the host writes beside it — a snapshot (a shortcut for
// rebuilding the room), the reviewed join request (repaired when the room
// is next loaded), the status of a member who left (§17.4; it expires with
// its TTL) — may fail without failing the write, and each such failure is
// logged through Options.Logger with the room and the record's seq.
func TestSideWriteFailuresAreLogged(t *testing.T) {
	log, logged := logtest.New()
	store := &sideFailStore{MemoryStore: adphost.NewMemoryStore()}
	w := newWorld(t, &adphost.Options{Store: store, Logger: log, SnapshotEvery: 1})
	ctx := ctxT(t)
	alice, bob := w.client("alice"), w.client("bob")

	restricted := mustv(alice.CreateRoom(ctx, roomSpec(t, adp.VisibilityRestricted, "review"))).RoomID
	jr := mustv(bob.RequestJoin(ctx, restricted, adp.JoinRequestInput{Role: adp.RoleSpeaker}))
	public := mustv(alice.CreateRoom(ctx, roomSpec(t, adp.VisibilityPublic, "open"))).RoomID
	mustv(bob.Join(ctx, public, adp.Join{Role: adp.RoleSpeaker}))
	mustv(bob.PutAgentStatus(ctx, public, adp.AgentStatusInput{State: "drafting", Summary: "a reply"}))
	if len(logged.Records()) != 0 {
		t.Fatalf("logged before any failure: %v", logged.Records())
	}

	store.armed.Store(true)
	review := mustv(alice.ReviewJoin(ctx, restricted, adp.JoinReview{Request: jr.Request, Decision: adp.DecisionApprove, Role: adp.RoleSpeaker}))
	leave := mustv(bob.Leave(ctx, public, adp.Notice{}))

	for _, want := range []struct {
		msg, room string
		seq       int64
	}{
		{"a room snapshot was not stored", restricted, review.Seq},
		{"a join request was not updated", restricted, review.Seq},
		{"an agent status was not cleared", public, leave.Seq},
	} {
		rec, ok := logged.Find(want.msg)
		if !ok {
			t.Errorf("not logged: %q; logged %v", want.msg, logged.Records())
			continue
		}
		if rec.String("room") != want.room || rec.String("seq") != strconv.FormatInt(want.seq, 10) || rec.String("err") != errSideWrite.Error() {
			t.Errorf("%q logged as %v", want.msg, rec)
		}
	}
}
