package adphost_test

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/archive"
	"github.com/agentprotocols/go-sdk/packs"
)

// TestClientSpeaksHostDraft: adp.Client learns the draft a host serves
// from its discovery document and speaks it end to end against the
// reference host of each draft, from one table: the room.create bound to
// the host (2026-09-24 §8.1), records in the draft's shape, joining
// through the draft's join request (seed §11: an HTTP request, reviewed,
// then a room.join naming it; 2026-09-24 §10: a signed
// room.join.request whose review itself makes the applicant a member),
// bases per freshness class (two messages on one base: both accepted
// without moving the head in the 2026-09-24 draft, the second late in
// the seed; two control writes on one base: the first wins in both),
// the room resource, the public and own room lists, agent statuses and
// the archive, which verifies in the draft. A client told the other
// draft refuses the host's discovery document, naming both drafts.
func TestClientSpeaksHostDraft(t *testing.T) {
	for _, tc := range []struct {
		draft adp.Draft
		// messagesShareBase: two messages based on one record are both
		// accepted (2026-09-24 §5.1); the seed's second is
		// room_head_mismatch (§6.1).
		messagesShareBase bool
		// joinAfterReview: the approved applicant still posts a
		// room.join naming the request (seed §11).
		joinAfterReview bool
	}{
		{draft: adp.Draft20260704, joinAfterReview: true},
		{draft: adp.Draft20260924, messagesShareBase: true},
	} {
		t.Run(tc.draft.String(), func(t *testing.T) {
			d := tc.draft
			w := newWorld(t, &adphost.Options{Draft: d, RateLimits: adphost.Unlimited()})
			ctx := ctxT(t)
			alice, bob := w.client("alice"), w.client("bob")
			if got := mustv(alice.Draft(ctx)); got != d {
				t.Fatalf("the client learned the %s draft from a host of the %s draft", got, d)
			}
			other := adp.Draft20260924
			if d == other {
				other = adp.Draft20260704
			}
			wrong := w.clientIn("carol", nil, other)
			if _, err := wrong.Discover(ctx); !errors.Is(err, adp.ErrDraftMismatch) ||
				!strings.Contains(err.Error(), d.String()) || !strings.Contains(err.Error(), other.String()) {
				t.Fatalf("a client of the %s draft read the discovery document of a %s host: %v", other, d, err)
			}

			lock := `{"type":"task.lock","kind":"control","title":"Lock","schema":{"type":"object"}}`
			decl, err := d.ParseDeclaration([]byte(lock))
			if err != nil {
				t.Fatal(err)
			}
			spec := adp.RoomCreate{Topic: "drafts", Visibility: adp.VisibilityRestricted, StartTime: t0.UnixMilli(),
				EndTime: t0.Add(time.Hour).UnixMilli(), Types: []packs.Declaration{decl}}
			if d == adp.Draft20260924 {
				bad := spec
				bad.Host = "https://elsewhere.example"
				if _, err := alice.CreateRoom(ctx, bad); !errors.Is(err, adp.ErrHostMismatch) {
					t.Fatalf("room.create for another host: %v", err)
				}
			}
			create := mustv(alice.CreateRoom(ctx, spec))
			room := create.RoomID
			if create.Draft.OrDefault() != d {
				t.Fatalf("room.create record of the %s draft", create.Draft.OrDefault())
			}
			res := mustv(alice.GetRoom(ctx, room))
			if res.ReceivedAt != create.ReceivedAt || res.Head.Seq != 1 {
				t.Fatalf("room resource: acceptance time %d (want %d), head %d", res.ReceivedAt, create.ReceivedAt, res.Head.Seq)
			}

			// Bob asks to join; the creator approves.
			jr := mustv(bob.RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleSpeaker, Reason: ptr("drafts")}))
			if jr.Status != adp.JoinPending || jr.Request.Applicant != bob.AgentID() || (jr.Signed != nil) != !tc.joinAfterReview {
				t.Fatalf("join request: %+v", jr)
			}
			list := mustv(alice.JoinRequests(ctx, room))
			if i := slices.IndexFunc(list, func(x adp.JoinRequestResource) bool { return x.Request.ID == jr.Request.ID }); i < 0 {
				t.Fatalf("the creator does not see the request: %+v", list)
			}
			review := mustv(alice.ReviewJoin(ctx, room, adp.JoinReview{Request: jr.Request, Decision: adp.DecisionApprove, Role: adp.RoleSpeaker}))
			got := mustv(bob.JoinRequest(ctx, room, jr.Request.ID))
			if got.Status != adp.JoinApproved {
				t.Fatalf("reviewed request: %+v", got)
			}
			if tc.joinAfterReview {
				mustv(bob.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker, RequestID: jr.Request.ID}))
			} else if got.ReviewEventID == nil || *got.ReviewEventID != review.EventHash() {
				t.Fatalf("the request names review %v, not %s", got.ReviewEventID, review.EventHash())
			}
			mustv(bob.Sync(ctx, room))
			rep := mustv(bob.Replica(room))
			var member adp.Member
			rep.Read(func(r *adp.Room) { member, _ = r.Member(bob.AgentID()) })
			if member.Status != adp.MemberActive || member.Role != adp.RoleSpeaker {
				t.Fatalf("bob after the review: %+v", member)
			}

			// Two messages on one base.
			w.clock.Advance(time.Second)
			arep := mustv(alice.Replica(room))
			mustv(alice.Sync(ctx, room))
			base := mustv(arep.BaseFor(adp.TypeMessageCreate))
			head := arep.Head()
			m1 := mustv(adp.NewMessage(ctx, alice.Author(), base, text("one")))
			m2 := mustv(adp.NewMessage(ctx, bob.Author(), base, text("two")))
			mustv(alice.Submit(ctx, room, m1))
			_, err = bob.Submit(ctx, room, m2)
			var hm *adp.HeadMismatchError
			switch {
			case tc.messagesShareBase && err != nil:
				t.Fatalf("a second message on the same base: %v", err)
			case !tc.messagesShareBase && !errors.As(err, &hm):
				t.Fatalf("a second message on the same head: %v, want room_head_mismatch", err)
			}
			mustv(alice.Sync(ctx, room))
			if moved := arep.Head() != head; moved == tc.messagesShareBase {
				t.Fatalf("messages moved the head from %d to %d", head.Seq, arep.Head().Seq)
			}
			// The client's own base for the next message is fresh, and
			// another agent's message is verified into bob's replica.
			mustv(bob.SendMessage(ctx, room, text("three"), alice.AgentID()))
			var texts []string
			for rec, err := range alice.Events(ctx, room, 0) {
				if err != nil {
					t.Fatal(err)
				}
				if rec.Type() == adp.TypeMessageCreate {
					texts = append(texts, rec.Envelope.Actor().String())
				}
				if wire := string(rec.AppendJSON(nil)); strings.Contains(wire, `"accepted_at"`) != (d == adp.Draft20260924) {
					t.Fatalf("record %d of the %s draft: %s", rec.Seq, d, wire)
				}
			}
			if len(texts) < 2 || texts[len(texts)-1] != bob.AgentID().String() {
				t.Fatalf("messages by %v", texts)
			}

			// Two control writes on one base: the first wins.
			mustv(alice.Sync(ctx, room))
			cbase := mustv(arep.BaseFor("task.lock"))
			var reg *packs.Registry
			arep.Read(func(r *adp.Room) { reg = r.Registry() })
			c1 := mustv(adp.NewCustom(ctx, alice.Author(), cbase, reg, "task.lock", map[string]string{"task": "a"}))
			c2 := mustv(adp.NewCustom(ctx, bob.Author(), cbase, reg, "task.lock", map[string]string{"task": "b"}))
			mustv(alice.Submit(ctx, room, c1))
			if _, err := bob.Submit(ctx, room, c2); !errors.As(err, &hm) {
				t.Fatalf("a second control write on the same head: %v", err)
			}

			// Lists and statuses in the draft's shapes.
			if rooms := collect(t, bob.MyRooms(ctx, adp.RoomQuery{})); !slices.ContainsFunc(rooms, func(s adp.RoomSummary) bool { return s.ID == room }) {
				t.Fatalf("my rooms: %+v", rooms)
			}
			public := collect(t, bob.PublicRooms(ctx, adp.RoomQuery{}))
			if !slices.ContainsFunc(public, func(s adp.RoomSummary) bool { return s.ID == room && s.Topic == "drafts" && s.LastActivity > 0 }) {
				t.Fatalf("public rooms: %+v", public)
			}
			st := mustv(bob.PutAgentStatus(ctx, room, adp.AgentStatusInput{State: "idle"}))
			if st.State != "idle" || st.AgentID != bob.AgentID() {
				t.Fatalf("status written: %+v", st)
			}
			if st := mustv(alice.AgentStatus(ctx, room, bob.AgentID())); st.State != "idle" {
				t.Fatalf("status read: %+v", st)
			}
			if all := mustv(alice.AgentStatuses(ctx, room)); len(all) != 1 || all[0].AgentID != bob.AgentID() {
				t.Fatalf("statuses: %+v", all)
			}

			// The ended room's archive verifies in the draft.
			mustv(alice.CloseRoom(ctx, room, adp.Notice{Reason: "done"}))
			manifest, records := mustv2(alice.Archive(ctx, room))
			m, err := archive.ParseManifestWith(manifest, &archive.ManifestOptions{Draft: d, AllowLoopbackHTTP: true})
			if err != nil {
				t.Fatal(err)
			}
			report, err := archive.Verify(ctx, m, bytes.NewReader(records), &archive.VerifyOptions{Draft: d, AllowLoopbackHTTP: true})
			if err != nil || !report.Valid {
				t.Fatalf("archive: %v %+v", err, report)
			}
		})
	}
}

// TestClientDraftOption: a client told its host's draft knows it before
// any request; one that is not learns it from the discovery document at
// its first need of it, a replica included.
func TestClientDraftOption(t *testing.T) {
	w := newWorld(t, &adphost.Options{Draft: adp.Draft20260924})
	ctx := ctxT(t)
	told := w.clientIn("alice", nil, adp.Draft20260924)
	if d, ok := told.KnownDraft(); !ok || d != adp.Draft20260924 || mustv(told.Draft(ctx)) != d {
		t.Fatalf("a client told the draft knows %v, %v", d, ok)
	}
	c := w.client("bob")
	if _, ok := c.KnownDraft(); ok {
		t.Fatal("a client knows its host's draft before reading anything")
	}
	mustv(c.Replica("r1"))
	if d, ok := c.KnownDraft(); !ok || d != adp.Draft20260924 {
		t.Fatalf("after the first replica the client knows %v, %v", d, ok)
	}
}
