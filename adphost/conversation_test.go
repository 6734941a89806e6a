package adphost_test

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/archive"
	"github.com/agentprotocols/go-sdk/envelope"
)

// TestConversation: three agents hold a
// restricted-room discussion through the client against the reference
// host — create, join with review, messages with mentions, reactions, a
// poll with votes, a custom type, agent status, close — ending in an
// archive that verifies.
func TestConversation(t *testing.T) {
	w := newWorld(t, nil)
	ctx := ctxT(t)
	alice, bob, carol := w.client("alice"), w.client("bob"), w.client("carol")

	// Discovery.
	d := mustv(alice.Discover(ctx))
	if d.Protocol != adp.Protocol || !d.HasFeature(adp.FeatureJoinReview) || d.Endpoints == nil || d.Endpoints.API != w.url+"/v1" {
		t.Fatalf("discovery: %+v", d)
	}

	create := mustv(alice.CreateRoom(ctx, roomSpec(t, adp.VisibilityRestricted, "Code review strategy")))
	room := create.RoomID

	// Bob and Carol apply; the requests stay pending in a restricted room.
	var joined []*adp.Record
	for _, c := range []*adp.Client{bob, carol} {
		jr := mustv(c.RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleSpeaker, Reason: ptr("I review Go")}))
		if jr.Status != adp.JoinPending {
			t.Fatalf("restricted room request is %s, want pending", jr.Status)
		}
		if _, err := c.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker, RequestID: jr.Request.ID}); !errors.Is(err, adp.ErrJoinRequestNotApproved) {
			t.Fatalf("join before review: %v", err)
		}
		list := mustv(alice.JoinRequests(ctx, room))
		i := slices.IndexFunc(list, func(x adp.JoinRequestResource) bool { return x.Request.ID == jr.Request.ID })
		if i < 0 {
			t.Fatal("the creator does not see the pending request")
		}
		mustv(alice.ReviewJoin(ctx, room, adp.JoinReview{Request: list[i].Request, Decision: adp.DecisionApprove, Role: adp.RoleSpeaker, Reason: "welcome"}))
		got := mustv(c.JoinRequest(ctx, room, jr.Request.ID))
		if got.Status != adp.JoinApproved || got.ReviewedBy == nil || *got.ReviewedBy != alice.AgentID() {
			t.Fatalf("after review: %+v", got)
		}
		joined = append(joined, mustv(c.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker, RequestID: jr.Request.ID})))
	}

	// Messages with mentions.
	m1 := mustv(alice.SendMessage(ctx, room, text("Which review pipeline should we adopt?"), bob.AgentID(), carol.AgentID()))
	m2 := mustv(bob.SendMessage(ctx, room, text("Two-stage: tests first, then security."), alice.AgentID()))
	// Reactions (a signal on any accepted record).
	mustv(carol.SendCustom(ctx, room, "reaction.create", raw(`{"event_id":"`+m2.Envelope.Hash().String()+`","reaction":"agree"}`)))
	mustv(alice.SendCustom(ctx, room, "reaction.create", raw(`{"event_id":"`+m1.Envelope.Hash().String()+`","reaction":"important"}`)))
	// A poll with votes.
	poll := mustv(alice.SendCustom(ctx, room, "poll.create", raw(`{"poll_id":"p1","question":"Which pipeline?","options":[{"id":"a","label":"Two-stage"},{"id":"b","label":"Single pass"}]}`)))
	for _, c := range []*adp.Client{bob, carol} {
		mustv(c.SendCustom(ctx, room, "poll.vote", raw(`{"poll_event_id":"`+poll.Envelope.Hash().String()+`","option_ids":["a"]}`)))
	}
	// A custom type.
	mustv(carol.SendCustom(ctx, room, "review.finding", raw(`{"severity":"high","summary":"The retry loop can starve the writer."}`)))
	// Agent status.
	st := mustv(bob.PutAgentStatus(ctx, room, adp.AgentStatusInput{State: "drafting", Summary: "summary of the poll"}))
	if st.ExpiresAt != w.clock.Now().Add(adphost.MaxStatusTTL).UnixMilli() {
		t.Fatalf("status TTL not applied: %d", st.ExpiresAt)
	}
	if sts := mustv(carol.AgentStatuses(ctx, room)); len(sts) != 1 || sts[0].AgentID != bob.AgentID() {
		t.Fatalf("statuses: %+v", sts)
	}
	// Every client's verified replica agrees with the host's head.
	res := mustv(carol.GetRoom(ctx, room))
	for _, c := range []*adp.Client{alice, bob, carol} {
		latest := mustv(c.Sync(ctx, room))
		if latest.Seq != res.Seq || latest.Hash != res.Hash {
			t.Fatalf("replica %d/%s, host %d/%s", latest.Seq, latest.Hash, res.Seq, res.Hash)
		}
	}
	// Close; the archive appears and verifies.
	w.clock.Advance(time.Second)
	closed := mustv(alice.CloseRoom(ctx, room, adp.Notice{Reason: "decided"}))
	manifest, records, err := alice.Archive(ctx, room)
	if err != nil {
		t.Fatal(err)
	}
	m, err := archive.ParseManifest(manifest)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := archive.Verify(ctx, m, bytes.NewReader(records), nil)
	if err != nil {
		t.Fatalf("archive does not verify: %v", err)
	}
	if m.LastSeq != closed.Seq || m.LastHash != closed.Hash || rep == nil {
		t.Fatalf("manifest %d/%s, close record %d/%s", m.LastSeq, m.LastHash, closed.Seq, closed.Hash)
	}
	if m.Formats["markdown"] != w.url+"/v1/rooms/"+room+"/archive.md" {
		t.Fatalf("formats: %v", m.Formats)
	}
	// The room is read-only now.
	if _, err := bob.SendMessage(ctx, room, text("late")); !errors.Is(err, adp.ErrRoomEnded) {
		t.Fatalf("write after close: %v", err)
	}
	_ = joined
	_ = envelope.Hash{}
}

func ptr[T any](v T) *T { return &v }
