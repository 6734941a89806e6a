package adp_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adp/adptest"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
)

// replayAll replays w's accepted records into a fresh room the way a
// verifier does: no join-request store, only the log.
func replayAll(w *adptest.World) error {
	r := adp.NewRoom(w.Room.ID(), nil)
	for _, rec := range w.Records {
		if err := r.Apply(w.Ctx, rec); err != nil {
			return err
		}
	}
	return nil
}

// TestRulesAutoApprovedJoin: public rooms approve valid join requests
// automatically (§9.2, §11), with no room.join.review in the log; a
// room.join naming such a request is accepted by the host path and by
// replay, which still applies bans, the role policy and max_speakers.
// Restricted and private rooms keep requiring a review in the log.
func TestRulesAutoApprovedJoin(t *testing.T) {
	joinReq := func(name, id string, role adp.Role) func(w *adptest.World) (*adp.Record, error) {
		return func(w *adptest.World) (*adp.Record, error) { return joinWith(w, name, id, role) }
	}
	runRules(t, []rule{
		{"§11 a public room admits an auto-approved request", public, joinReq("alice", "jr_auto", adp.RoleSpeaker), nil},
		{"§11 a restricted room needs a review in the log", publicWith(visibility(adp.VisibilityRestricted)), joinReq("alice", "jr_auto", adp.RoleSpeaker), adp.ErrJoinRequestNotFound},
		{"§11 a private room needs a review in the log", publicWith(visibility(adp.VisibilityPrivate)), joinReq("alice", "jr_auto", adp.RoleSpeaker), adp.ErrJoinRequestNotFound},
		{"§10.5 a banned agent's request is never auto-approved", func(w *adptest.World) {
			w.PublicRoom()
			w.Must(adp.NewMemberRemove(w.Ctx, w.Author("creator"), w.Base("room.member.remove"), adp.MemberRemove{Member: w.ID("alice"), Ban: true}))
		}, joinReq("alice", "jr_auto", adp.RoleSpeaker), adp.ErrMemberBanned},
		{"§11 observer_allowed false", publicWith(policy(adp.Policy{ObserverAllowed: ptr(false)})), joinReq("alice", "jr_auto", adp.RoleObserver), adp.ErrRoleNotAllowed},
		{"§11 a moderator request needs moderator_agent_ids", public, joinReq("mod", "jr_auto", adp.RoleModerator), adp.ErrRoleNotAllowed},
		{"§11 a listed moderator's request", func(w *adptest.World) {
			w.PublicRoom(policy(adp.Policy{ModeratorAgentIDs: []identity.AgentID{w.ID("mod")}}))
		}, joinReq("mod", "jr_auto", adp.RoleModerator), nil},
		{"§10.2 max_speakers", publicWith(policy(adp.Policy{MaxSpeakers: 1})), joinReq("alice", "jr_auto", adp.RoleSpeaker), adp.ErrMaxSpeakersExceeded},
		{"§10.2 an auto-approved request is consumed once", public, func(w *adptest.World) (*adp.Record, error) {
			w.OK(joinWith(w, "alice", "jr_auto", adp.RoleSpeaker))
			w.Must(adp.NewLeave(w.Ctx, w.Author("alice"), w.Base("room.leave"), adp.Notice{}))
			return joinWith(w, "alice", "jr_auto", adp.RoleSpeaker)
		}, adp.ErrJoinRequestExpired},
		{"§10.2 a used request belongs to its first actor", public, func(w *adptest.World) (*adp.Record, error) {
			w.OK(joinWith(w, "alice", "jr_auto", adp.RoleSpeaker))
			return joinWith(w, "bob", "jr_auto", adp.RoleSpeaker)
		}, adp.ErrJoinRequestNotFound},
		{"§11 an auto-approved request is no longer pending", public, func(w *adptest.World) (*adp.Record, error) {
			w.OK(joinWith(w, "alice", "jr_auto", adp.RoleSpeaker))
			return review(w, "creator", request(w, "jr_auto", "alice", adp.RoleSpeaker), adp.DecisionReject, "")
		}, adp.ErrJoinRequestNotFound},
	})

	// The history a conformant host writes replays, and the auto-approved
	// member is there.
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", nil)
	w.PublicRoom()
	w.OK(joinWith(w, "alice", "jr_auto", adp.RoleSpeaker))
	w.OK(w.Say("alice", "hello"))
	if err := replayAll(w); err != nil {
		t.Fatalf("replay of an auto-approved join: %v", err)
	}
	if m, ok := w.Room.Member(w.ID("alice")); !ok || m.Status != adp.MemberActive || m.Role != adp.RoleSpeaker {
		t.Fatalf("member %+v", m)
	}
}

// TestRulesAutoApprovedJoinHostStore: a host honours its store's approval
// of a public room's request — same room and applicant, unexpired, the
// approved role — once; and what it accepts replays without the store.
func TestRulesAutoApprovedJoinHostStore(t *testing.T) {
	type entry = struct {
		req    adp.JoinRequest
		status adp.JoinRequestStatus
	}
	setup := func(t *testing.T, vis adp.Visibility) (*adptest.World, joinStore) {
		store := joinStore{}
		w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", &adp.RoomOptions{JoinRequests: store})
		w.Track = true
		w.PublicRoom(visibility(vis))
		req := request(w, "jr_1", "alice", adp.RoleSpeaker)
		req.Perspective = ptr("security reviewer")
		store["jr_1"] = entry{req, adp.JoinApproved}
		return w, store
	}
	cases := []struct {
		name   string
		vis    adp.Visibility
		mutate func(w *adptest.World, s joinStore)
		joiner string
		role   adp.Role
		want   error
	}{
		{"§11 an approved request admits", adp.VisibilityPublic, nil, "alice", adp.RoleSpeaker, nil},
		{"§10.2 another actor", adp.VisibilityPublic, nil, "bob", adp.RoleSpeaker, adp.ErrJoinRequestNotFound},
		{"§10.2 another room's request", adp.VisibilityPublic, func(w *adptest.World, s joinStore) {
			e := s["jr_1"]
			e.req.RoomID = "elsewhere"
			s["jr_1"] = e
		}, "alice", adp.RoleSpeaker, adp.ErrJoinRequestNotFound},
		{"§10.2 an unknown request", adp.VisibilityPublic, func(w *adptest.World, s joinStore) { delete(s, "jr_1") }, "alice", adp.RoleSpeaker, adp.ErrJoinRequestNotFound},
		{"§10.2 the approved role", adp.VisibilityPublic, nil, "alice", adp.RoleObserver, adp.ErrJoinRequestRoleMismatch},
		{"§10.2 an expired approval", adp.VisibilityPublic, func(w *adptest.World, s joinStore) {
			e := s["jr_1"]
			e.req.ExpiresAt = w.Now.Add(time.Minute).UnixMilli()
			s["jr_1"] = e
			w.Tick(2 * time.Minute)
		}, "alice", adp.RoleSpeaker, adp.ErrJoinRequestExpired},
		{"§10.2 a pending request", adp.VisibilityPublic, func(w *adptest.World, s joinStore) {
			e := s["jr_1"]
			e.status = adp.JoinPending
			s["jr_1"] = e
		}, "alice", adp.RoleSpeaker, adp.ErrJoinRequestNotApproved},
		{"§10.2 a request the store expired", adp.VisibilityPublic, func(w *adptest.World, s joinStore) {
			e := s["jr_1"]
			e.status = adp.JoinExpired
			s["jr_1"] = e
		}, "alice", adp.RoleSpeaker, adp.ErrJoinRequestExpired},
		{"§11 a restricted room approves only by review", adp.VisibilityRestricted, nil, "alice", adp.RoleSpeaker, adp.ErrJoinRequestNotApproved},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, store := setup(t, c.vis)
			if c.mutate != nil {
				c.mutate(w, store)
			}
			_, err := joinWith(w, c.joiner, "jr_1", c.role)
			if c.want != nil {
				if !errors.Is(err, c.want) {
					t.Fatalf("got %v, want %v", err, c.want)
				}
				if after, _ := w.Room.Snapshot(); string(after) != string(w.Before) {
					t.Fatal("a rejected write changed the room state")
				}
				return
			}
			if err != nil {
				t.Fatalf("rejected: %v", err)
			}
			if m, _ := w.Room.Member(w.ID("alice")); m.Perspective != "security reviewer" || m.Role != adp.RoleSpeaker {
				t.Fatalf("member %+v does not keep the request's perspective", m)
			}
			if err := replayAll(w); err != nil {
				t.Fatalf("replay without the store: %v", err)
			}
			// Consumed once: leaving and naming it again fails.
			w.Must(adp.NewLeave(w.Ctx, w.Author("alice"), w.Base("room.leave"), adp.Notice{}))
			if _, err := joinWith(w, "alice", "jr_1", adp.RoleSpeaker); !errors.Is(err, adp.ErrJoinRequestExpired) {
				t.Fatalf("a consumed approval readmitted: %v", err)
			}
		})
	}
}

// TestRulesReviewPending: a review must see its request still pending
// (§11): expires_at — a member of the request object — after the review's
// acceptance time, and after the request's created_at.
func TestRulesReviewPending(t *testing.T) {
	restricted := publicWith(visibility(adp.VisibilityRestricted))
	runRules(t, []rule{
		{"§11 the request expired before the review", restricted, func(w *adptest.World) (*adp.Record, error) {
			req := request(w, "jr_1", "alice", adp.RoleSpeaker)
			req.ExpiresAt = w.Now.Add(time.Minute).UnixMilli()
			w.Tick(2 * time.Minute)
			return review(w, "creator", req, adp.DecisionApprove, adp.RoleSpeaker)
		}, adp.ErrJoinRequestExpired},
		{"§11 a rejection also needs a pending request", restricted, func(w *adptest.World) (*adp.Record, error) {
			req := request(w, "jr_1", "alice", adp.RoleSpeaker)
			req.CreatedAt, req.ExpiresAt = w.Now.Add(-time.Minute).UnixMilli(), w.Now.UnixMilli()
			return review(w, "creator", req, adp.DecisionReject, "")
		}, adp.ErrJoinRequestExpired},
		{"§11 expires_at not after created_at", restricted, func(w *adptest.World) (*adp.Record, error) {
			now := strconv.FormatInt(w.Now.UnixMilli(), 10)
			later := strconv.FormatInt(w.Now.Add(time.Hour).UnixMilli(), 10)
			return w.Submit(raw(w, "creator", "room.join.review", ptr(w.Base("room.join.review")),
				`{"request":{"id":"jr_1","room_id":"`+w.Room.ID()+`","applicant":"`+w.ID("alice").String()+
					`","role":"speaker","created_at":`+later+`,"expires_at":`+now+`},"decision":"approve","role":"speaker"}`))
		}, adp.ErrInvalidEvent},
		{"§11 a request still pending", restricted, func(w *adptest.World) (*adp.Record, error) {
			req := request(w, "jr_1", "alice", adp.RoleSpeaker)
			req.ExpiresAt = w.Now.Add(time.Minute).UnixMilli()
			return review(w, "creator", req, adp.DecisionApprove, adp.RoleSpeaker)
		}, nil},
	})
	// The builder refuses to sign what every host refuses.
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", nil)
	w.PublicRoom(visibility(adp.VisibilityRestricted))
	req := request(w, "jr_1", "alice", adp.RoleSpeaker)
	req.ExpiresAt = req.CreatedAt
	if _, err := adp.NewJoinReview(w.Ctx, w.Author("creator"), w.Base("room.join.review"), adp.JoinReview{Request: req, Decision: adp.DecisionReject}); !errors.Is(err, adp.ErrInvalidEvent) {
		t.Fatalf("builder signed an already expired request's review: %v", err)
	}
	// A host's store that says expired.
	store := joinStore{}
	w = adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", &adp.RoomOptions{JoinRequests: store})
	w.PublicRoom(visibility(adp.VisibilityRestricted))
	req = request(w, "jr_1", "alice", adp.RoleSpeaker)
	store["jr_1"] = struct {
		req    adp.JoinRequest
		status adp.JoinRequestStatus
	}{req, adp.JoinExpired}
	if _, err := review(w, "creator", req, adp.DecisionApprove, adp.RoleSpeaker); !errors.Is(err, adp.ErrJoinRequestExpired) {
		t.Fatalf("review of a request the store expired: %v", err)
	}
}

// TestReceivedAtNeverDecreases: replay refuses a record dated before its
// predecessor (§15), and the host path never writes one, even when its
// clock steps back — so a host cannot backdate a join to make an expired
// request count.
func TestReceivedAtNeverDecreases(t *testing.T) {
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", nil)
	w.PublicRoom(visibility(adp.VisibilityRestricted))
	req := request(w, "jr_1", "alice", adp.RoleSpeaker)
	req.ExpiresAt = w.Now.Add(time.Minute).UnixMilli()
	w.OK(review(w, "creator", req, adp.DecisionApprove, adp.RoleSpeaker))
	w.Tick(2 * time.Minute)
	w.OK(w.Say("creator", "the request has expired by now"))
	last := w.Room.Latest().ReceivedAt

	// The host clock steps back an hour: writes are judged, and dated, at
	// the latest received_at.
	w.Tick(-time.Hour)
	if err := w.Room.Check(w.Ctx, mustEnv(adp.NewJoin(w.Ctx, w.Author("alice"), w.Base("room.join"), adp.Join{Role: adp.RoleSpeaker, RequestID: "jr_1"})), w.Now); !errors.Is(err, adp.ErrJoinRequestExpired) {
		t.Fatalf("Check at a stepped-back clock: %v", err)
	}
	if _, err := joinWith(w, "alice", "jr_1", adp.RoleSpeaker); !errors.Is(err, adp.ErrJoinRequestExpired) {
		t.Fatalf("Accept backdated a join to an unexpired time: %v", err)
	}
	rec := w.OK(w.Say("creator", "written while the clock was behind"))
	if rec.ReceivedAt != last {
		t.Fatalf("received_at %d after %d", rec.ReceivedAt, last)
	}
	if err := replayAll(w); err != nil {
		t.Fatal(err)
	}

	// Replay refuses a decreasing received_at, also before room.create's.
	good := w.Records
	backdate := func(i int, at int64) error {
		recs := append([]*adp.Record(nil), good[:i+1]...)
		c := *recs[i]
		c.ReceivedAt = at
		c.Hash = c.ComputeHash()
		recs[i] = &c
		r := adp.NewRoom(w.Room.ID(), nil)
		for _, rec := range recs {
			if err := r.Apply(w.Ctx, rec); err != nil {
				return err
			}
		}
		return nil
	}
	for i, at := range map[int]int64{1: good[0].ReceivedAt - 1, 3: good[2].ReceivedAt - 1, 2: good[1].ReceivedAt - 60_000} {
		if err := backdate(i, at); !errors.Is(err, adp.ErrInvalidRecord) {
			t.Errorf("record %d backdated to %d: %v", good[i].Seq, at, err)
		}
	}
	if err := backdate(1, good[0].ReceivedAt); err != nil {
		t.Errorf("an equal received_at: %v", err)
	}
}

// TestRestoreRoomValidates: a snapshot is checked as strictly as live
// input; RestoreRoom refuses state no history could produce.
func TestRestoreRoomValidates(t *testing.T) {
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", nil)
	w.PublicRoom()
	w.Join("alice", adp.RoleSpeaker)
	w.OK(review(w, "creator", request(w, "jr_1", "bob", adp.RoleObserver), adp.DecisionApprove, adp.RoleObserver))
	w.Must(adp.NewMemberRemove(w.Ctx, w.Author("creator"), w.Base("room.member.remove"), adp.MemberRemove{Member: w.ID("carol"), Ban: true}))
	w.Must(adp.NewMemberRemove(w.Ctx, w.Author("creator"), w.Base("room.member.remove"), adp.MemberRemove{Member: w.ID("alice"), Ban: true}))
	snap, err := w.Room.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := adp.RestoreRoom(snap, nil); err != nil {
		t.Fatalf("a valid snapshot: %v", err)
	}
	alice, carol := w.ID("alice").String(), w.ID("carol").String()
	creator := w.ID("creator").String()
	type obj = map[string]any
	cases := []struct {
		name string
		edit func(s obj)
	}{
		{"unknown member role", func(s obj) { snapMember(s, creator)["role"] = "overlord" }},
		{"empty member role", func(s obj) { snapMember(s, creator)["role"] = "" }},
		{"unknown member status", func(s obj) { snapMember(s, creator)["status"] = "ghost" }},
		{"member keyed under another id", func(s obj) { snapMember(s, creator)["id"] = alice }},
		{"joined_seq beyond the log", func(s obj) { snapMember(s, creator)["joined_seq"] = 99 }},
		{"joined_seq 0", func(s obj) { snapMember(s, alice)["joined_seq"] = 0 }},
		{"a second member of seq 1", func(s obj) { snapMember(s, alice)["joined_seq"] = 1 }},
		{"active member with left_seq", func(s obj) { snapMember(s, creator)["left_seq"] = 2 }},
		{"banned member without left_seq", func(s obj) { delete(snapMember(s, alice), "left_seq") }},
		{"banned status without a ban", func(s obj) { delete(snapState(s)["bans"].(obj), alice) }},
		{"a ban entry that is false", func(s obj) { snapState(s)["bans"].(obj)[carol] = false }},
		{"unknown room status", func(s obj) { snapState(s)["status"] = "paused" }},
		{"unknown visibility", func(s obj) { snapState(s)["contract"].(obj)["visibility"] = "secret" }},
		{"blank topic", func(s obj) { snapState(s)["contract"].(obj)["topic"] = " " }},
		{"start_time not before end_time", func(s obj) {
			k := snapState(s)["contract"].(obj)
			k["start_time"] = k["end_time"]
		}},
		{"max_speakers 0 in policy", func(s obj) { snapState(s)["contract"].(obj)["policy"] = obj{"max_speakers": -1} }},
		{"unknown review decision", func(s obj) { snapReview(s, "jr_1")["decision"] = "maybe" }},
		{"unknown approved role", func(s obj) { snapReview(s, "jr_1")["role"] = "overlord" }},
		{"review seq beyond the log", func(s obj) { snapReview(s, "jr_1")["seq"] = 99 }},
		{"consumed rejection", func(s obj) {
			snapReview(s, "jr_1")["decision"] = "reject"
			snapReview(s, "jr_1")["consumed"] = true
		}},
		{"head beyond latest", func(s obj) { snapState(s)["head"].(obj)["seq"] = 99 }},
		{"head 0", func(s obj) { snapState(s)["head"].(obj)["seq"] = 0 }},
		{"creator not a member", func(s obj) { snapState(s)["creator"] = carol }},
		{"negative latest received_at", func(s obj) { snapState(s)["latest"].(obj)["received_at"] = -1 }},
		{"empty room id", func(s obj) { s["id"] = "" }},
		{"state without room.create", func(s obj) { snapState(s)["created"] = false }},
		{"index not matching the head", func(s obj) {
			recs := s["records"].([]any)
			recs[0], recs[1] = recs[1], recs[0]
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var s obj
			if err := json.Unmarshal(snap, &s); err != nil {
				t.Fatal(err)
			}
			c.edit(s)
			b, err := json.Marshal(s, json.Deterministic(true))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := adp.RestoreRoom(b, nil); !errors.Is(err, identity.ErrInvalidRequest) {
				t.Fatalf("restored a doctored snapshot: %v", err)
			}
		})
	}
}

func mustEnv(env *envelope.Envelope, err error) *envelope.Envelope {
	if err != nil {
		panic(err)
	}
	return env
}

func snapState(s map[string]any) map[string]any { return s["state"].(map[string]any) }

func snapMember(s map[string]any, id string) map[string]any {
	return snapState(s)["members"].(map[string]any)[id].(map[string]any)
}

func snapReview(s map[string]any, id string) map[string]any {
	return snapState(s)["reviews"].(map[string]any)[id].(map[string]any)
}

// TestRulesCreatorAfterLeaving pins the SDK's reading of an open choice
// (see the package documentation): the creator's administrative authority
// is attached to its identity (§9, §10.1) and survives its room.leave,
// while discussion writes still need active membership.
func TestRulesCreatorAfterLeaving(t *testing.T) {
	left := func(w *adptest.World) {
		w.PublicRoom()
		w.Join("alice", adp.RoleSpeaker)
		w.Must(adp.NewLeave(w.Ctx, w.Author("creator"), w.Base("room.leave"), adp.Notice{}))
	}
	runRules(t, []rule{
		{"creator choice: room.update after leaving", left, func(w *adptest.World) (*adp.Record, error) {
			return update(w, "creator", adp.RoomUpdate{Guidance: ptr("still in charge")})
		}, nil},
		{"creator choice: role update after leaving", left, func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(adp.NewRoleUpdate(w.Ctx, w.Author("creator"), w.Base("room.member.role.update"), adp.RoleUpdate{Member: w.ID("alice"), Role: adp.RoleObserver}))
		}, nil},
		{"creator choice: room.close after leaving", left, func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(adp.NewClose(w.Ctx, w.Author("creator"), w.Base("room.close"), adp.Notice{}))
		}, nil},
		{"creator choice: no message after leaving", left, func(w *adptest.World) (*adp.Record, error) {
			return w.Say("creator", "I left")
		}, adp.ErrPermissionDenied},
		{"creator choice: no custom event after leaving", func(w *adptest.World) {
			w.PublicRoom(withTypes(`{"use":"adp:reactions/1.0"}`))
			w.Must(adp.NewLeave(w.Ctx, w.Author("creator"), w.Base("room.leave"), adp.Notice{}))
		}, func(w *adptest.World) (*adp.Record, error) {
			return w.Submit(custom(w, "creator", "reaction.create", `{"event_id":"`+w.Records[0].Envelope.Hash().String()+`","reaction":"agree"}`))
		}, adp.ErrPermissionDenied},
	})
}

// failingStore is a join-request store that cannot answer.
type failingStore struct{ err error }

func (s failingStore) Lookup(context.Context, string, string) (adp.JoinRequest, adp.JoinRequestStatus, error) {
	return adp.JoinRequest{}, "", s.err
}

// TestAutoApprovedJoinStoreFailure: a store that fails gives no verdict —
// its error reaches the host instead of a join_request_not_found it would
// send the agent.
func TestAutoApprovedJoinStoreFailure(t *testing.T) {
	outage := errors.New("join-request store unavailable")
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", &adp.RoomOptions{JoinRequests: failingStore{outage}})
	w.PublicRoom()
	_, err := joinWith(w, "alice", "jr_1", adp.RoleSpeaker)
	if !errors.Is(err, outage) || errors.Is(err, adp.ErrJoinRequestNotFound) {
		t.Fatalf("got %v, want the store's error", err)
	}
}
