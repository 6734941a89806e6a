package adphost_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/identity"
)

func collect[T any](t testing.TB, seq func(func(T, error) bool)) []T {
	t.Helper()
	var out []T
	for v, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

func ids(list []adp.RoomSummary) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = s.ID
	}
	return out
}

// TestPrivateRoomInvisible: §9.2 and §16 — a private room does not exist
// for anyone but its creator and members: not in discovery, not readable,
// no stream; an approved applicant may read the room resource.
func TestPrivateRoomInvisible(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, nil)
	alice, bob, room := setup(t, w, adp.VisibilityPrivate)
	mallory := w.client("mallory")

	_, err := mallory.GetRoom(ctx, room)
	wantCode(t, err, adp.ErrRoomNotFound, 404)
	_, err = mallory.Sync(ctx, room)
	wantCode(t, err, adp.ErrRoomNotFound, 404)
	_, err = mallory.AgentStatuses(ctx, room)
	wantCode(t, err, adp.ErrRoomNotFound, 404)
	err = liveError(t, w, mallory, room)
	wantCode(t, err, adp.ErrRoomNotFound, 404)
	resp := mustv(w.hc.Get(w.url + "/v1/rooms/" + room)) // anonymous
	wantCode(t, identity.ReadError(resp), adp.ErrRoomNotFound, 404)
	resp.Body.Close()
	if got := ids(collect(t, mallory.PublicRooms(ctx, adp.RoomQuery{}))); slices.Contains(got, room) {
		t.Fatal("a private room is listed publicly")
	}
	// Members see it, in /v1/me/rooms too.
	mustv(bob.GetRoom(ctx, room))
	mustv(bob.Sync(ctx, room))
	if got := ids(collect(t, alice.MyRooms(ctx, adp.RoomQuery{Membership: "creator"}))); !slices.Equal(got, []string{room}) {
		t.Fatalf("creator's rooms: %v", got)
	}
	// An approved applicant reads the resource, to build its room.join.
	jr := mustv(mallory.RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleSpeaker}))
	if got := ids(collect(t, mallory.MyRooms(ctx, adp.RoomQuery{Membership: "pending"}))); !slices.Equal(got, []string{room}) {
		t.Fatalf("pending rooms: %v", got)
	}
	_, err = mallory.GetRoom(ctx, room)
	wantCode(t, err, adp.ErrRoomNotFound, 404)
	mustv(alice.ReviewJoin(ctx, room, adp.JoinReview{Request: jr.Request, Decision: adp.DecisionApprove, Role: adp.RoleSpeaker}))
	res := mustv(mallory.GetRoom(ctx, room))
	if res.Visibility != adp.VisibilityPrivate {
		t.Fatalf("resource: %+v", res)
	}
	mustv(mallory.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker, RequestID: jr.Request.ID}))
	mustv(mallory.Sync(ctx, room))
}

// TestPublicAutoApproval: §11 — a valid request to a public room is
// approved at once with reviewed_by null, and the join naming it is
// accepted (and verifies in every replica); a moderator request from an
// agent not in moderator_agent_ids stays pending.
func TestPublicAutoApproval(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, nil)
	alice := w.client("alice")
	spec := roomSpec(t, adp.VisibilityPublic, "open")
	spec.Policy = &adp.Policy{ModeratorAgentIDs: []identity.AgentID{id("mod")}}
	room := mustv(alice.CreateRoom(ctx, spec)).RoomID

	bob := w.client("bob")
	jr := mustv(bob.RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleSpeaker, Perspective: ptr("tester")}))
	if jr.Status != adp.JoinApproved || jr.ReviewedBy != nil || jr.ApprovedRole != adp.RoleSpeaker || jr.ReviewReason == "" {
		t.Fatalf("public request: %+v", jr)
	}
	rec := mustv(bob.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker, RequestID: jr.Request.ID}))
	if m, ok := bob.Verified(room).Member(bob.AgentID()); !ok || m.Status != adp.MemberActive || m.JoinedSeq != rec.Seq {
		t.Fatalf("member: %+v", m)
	}
	mustv(w.client("carol").Sync(ctx, room)) // an outsider's replica accepts the auto-approved join

	if jr := mustv(w.client("eve").RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleModerator})); jr.Status != adp.JoinPending {
		t.Fatalf("moderator request auto-approved: %s", jr.Status)
	}
	if jr := mustv(w.client("mod").RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleModerator})); jr.Status != adp.JoinApproved {
		t.Fatalf("listed moderator's request: %s", jr.Status)
	}
}

// TestRestrictedMetadata: a restricted room's resource is public (for
// discovery) but its contents are for members only.
func TestRestrictedMetadata(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, nil)
	_, _, room := setup(t, w, adp.VisibilityRestricted)
	out := w.client("outsider")
	if res := mustv(out.GetRoom(ctx, room)); res.Visibility != adp.VisibilityRestricted || len(res.Types) == 0 || res.Head.Seq < 1 {
		t.Fatalf("resource: %+v", res)
	}
	_, err := out.Sync(ctx, room)
	wantCode(t, err, adp.ErrMembershipRequired, 403)
	_, _, err = out.Archive(ctx, room)
	wantCode(t, err, adp.ErrMembershipRequired, 403)
}

// TestRoomLists: §18 filters and cursor paging on /v1/rooms/public, and
// /v1/me/rooms.
func TestRoomLists(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, &adphost.Options{RateLimits: adphost.Unlimited()})
	alice, bob := w.client("alice"), w.client("bob")
	mk := func(c *adp.Client, topic string, vis adp.Visibility, startIn time.Duration, tags []string, lang string) string {
		spec := roomSpec(t, vis, topic)
		spec.StartTime = t0.Add(startIn).UnixMilli()
		spec.EndTime = t0.Add(startIn + time.Hour).UnixMilli()
		spec.Tags, spec.Language = tags, lang
		return mustv(c.CreateRoom(ctx, spec)).RoomID
	}
	later := mk(alice, "Scheduled research", adp.VisibilityPublic, 2*time.Hour, []string{"research"}, "en")
	active := mk(alice, "Active code review", adp.VisibilityPublic, 0, []string{"code"}, "en")
	restricted := mk(bob, "Restricted research", adp.VisibilityRestricted, 0, []string{"research"}, "fr")
	private := mk(bob, "Private research", adp.VisibilityPrivate, 0, []string{"research"}, "en")
	var many []string
	for i := range 5 {
		many = append(many, mk(bob, "Bulk "+string(rune('a'+i)), adp.VisibilityPublic, 3*time.Hour, []string{"bulk"}, "de"))
	}

	all := ids(collect(t, alice.PublicRooms(ctx, adp.RoomQuery{Limit: 2}))) // pages of 2
	if len(all) != 8 || slices.Contains(all, private) {
		t.Fatalf("all public: %v", all)
	}
	if i, j := slices.Index(all, active), slices.Index(all, later); i > j {
		t.Fatal("an active room is not listed before a scheduled one")
	}
	q := func(q adp.RoomQuery) []string { return ids(collect(t, alice.PublicRooms(ctx, q))) }
	for name, c := range map[string]struct {
		q    adp.RoomQuery
		want []string
	}{
		"status":       {adp.RoomQuery{Status: adp.StatusScheduled, Tag: "research"}, []string{later}},
		"tag":          {adp.RoomQuery{Tag: "research"}, []string{restricted, later}},
		"keyword":      {adp.RoomQuery{Keyword: "CODE"}, []string{active}},
		"creator":      {adp.RoomQuery{Creator: alice.AgentID()}, []string{active, later}},
		"language":     {adp.RoomQuery{Language: "fr"}, []string{restricted}},
		"starts_after": {adp.RoomQuery{StartsAfter: t0.Add(time.Hour).UnixMilli(), Tag: "research"}, []string{later}},
		"ends_before":  {adp.RoomQuery{EndsBefore: t0.Add(90 * time.Minute).UnixMilli(), Creator: alice.AgentID()}, []string{active}},
	} {
		got := q(c.q)
		slices.Sort(got)
		want := slices.Clone(c.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: got %v, want %v", name, got, want)
		}
	}
	if got := q(adp.RoomQuery{Tag: "bulk", Limit: 2}); len(got) != 5 {
		t.Fatalf("paging lost rooms: %v", got)
	}
	mustv(alice.Join(ctx, many[0], adp.Join{Role: adp.RoleSpeaker}))
	mine := collect(t, alice.MyRooms(ctx, adp.RoomQuery{}))
	if len(mine) != 3 {
		t.Fatalf("alice's rooms: %v", ids(mine))
	}
	for _, s := range mine {
		if s.Role == "" || s.MemberStatus != "active" {
			t.Fatalf("summary without role: %+v", s)
		}
	}
	// An unknown cursor is refused.
	resp := mustv(w.hc.Get(w.url + "/v1/rooms/public?cursor=bogus"))
	wantCode(t, identity.ReadError(resp), identity.ErrInvalidRequest, 400)
	resp.Body.Close()
}

// TestStatusLifecycle: §17.4 — the TTL is clamped, expired statuses
// disappear, and leaving or demotion clears a status.
func TestStatusLifecycle(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, &adphost.Options{RateLimits: adphost.Unlimited()})
	alice, bob, room := setup(t, w, adp.VisibilityPublic)
	far := w.clock.Now().Add(time.Hour).UnixMilli()
	st := mustv(bob.PutAgentStatus(ctx, room, adp.AgentStatusInput{State: "working", ExpiresAt: far}))
	if st.ExpiresAt != w.clock.Now().Add(300*time.Second).UnixMilli() {
		t.Fatalf("TTL not clamped: %d", st.ExpiresAt)
	}
	w.clock.Advance(301 * time.Second)
	_, err := alice.AgentStatus(ctx, room, bob.AgentID())
	wantCode(t, err, adp.ErrAgentStatusNotFound, 404)

	mustv(bob.PutAgentStatus(ctx, room, adp.AgentStatusInput{State: "working"}))
	mustv(alice.UpdateRole(ctx, room, adp.RoleUpdate{Member: bob.AgentID(), Role: adp.RoleObserver}))
	if sts := mustv(alice.AgentStatuses(ctx, room)); len(sts) != 0 {
		t.Fatalf("demotion kept the status: %+v", sts)
	}
	mustv(alice.UpdateRole(ctx, room, adp.RoleUpdate{Member: bob.AgentID(), Role: adp.RoleSpeaker}))
	mustv(bob.PutAgentStatus(ctx, room, adp.AgentStatusInput{State: "working"}))
	mustv(bob.Leave(ctx, room, adp.Notice{}))
	if sts := mustv(alice.AgentStatuses(ctx, room)); len(sts) != 0 {
		t.Fatalf("leaving kept the status: %+v", sts)
	}
	// A status write creates no record.
	if l := mustv(alice.Sync(ctx, room)); l.Seq != mustv(alice.GetRoom(ctx, room)).Seq {
		t.Fatal("replica and host disagree")
	}
}

// TestRetrySameEnvelope: a write whose answer is lost (503 after the host
// accepted it) is retried with the same envelope; the host answers with
// the original record and the log holds it once.
func TestRetrySameEnvelope(t *testing.T) {
	ctx := context.Background()
	var fail atomic.Int32
	wrap := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && fail.Add(-1) >= 0 {
				next.ServeHTTP(httptest.NewRecorder(), r) // accepted, answer lost
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	w := newWrappedWorld(t, &adphost.Options{RateLimits: adphost.Unlimited()}, wrap)
	alice, _, room := setup(t, w, adp.VisibilityPublic)
	before := mustv(alice.Sync(ctx, room)).Seq
	fail.Store(2)
	rec := mustv(alice.SendMessage(ctx, room, text("once")))
	if rec.Seq != before+1 {
		t.Fatalf("seq %d after %d", rec.Seq, before)
	}
	if l := mustv(w.client("carol").Sync(ctx, room)); l.Seq != rec.Seq {
		t.Fatalf("the log holds %d records, want %d", l.Seq, rec.Seq)
	}
	// Out of retries, the 503 is returned.
	fail.Store(10)
	_, err := alice.SendMessage(ctx, room, text("never answered"))
	var e *identity.Error
	if !errors.As(err, &e) || e.Status != http.StatusServiceUnavailable {
		t.Fatalf("want the 503, got %v", err)
	}
}

// TestScheduledActiveEnded: the injectable clock drives §8.
func TestScheduledActiveEnded(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, &adphost.Options{RateLimits: adphost.Unlimited()})
	alice := w.client("alice")
	spec := roomSpec(t, adp.VisibilityPublic, "timed")
	spec.StartTime, spec.EndTime = t0.Add(time.Minute).UnixMilli(), t0.Add(20*time.Minute).UnixMilli()
	room := mustv(alice.CreateRoom(ctx, spec)).RoomID
	status := func() adp.Status { return mustv(alice.GetRoom(ctx, room)).Status }
	if s := status(); s != adp.StatusScheduled {
		t.Fatalf("status %s", s)
	}
	w.clock.Advance(time.Minute)
	if s := status(); s != adp.StatusActive {
		t.Fatalf("status %s", s)
	}
	mustv(alice.SendMessage(ctx, room, text("now")))
	w.clock.Advance(20 * time.Minute)
	if s := status(); s != adp.StatusEnded {
		t.Fatalf("status %s", s)
	}
	if _, _, err := alice.Archive(ctx, room); err != nil {
		t.Fatal(err)
	}
	// The manifest's markdown format is served too (a public room: no JWT).
	resp := mustv(w.hc.Get(w.url + "/v1/rooms/" + room + "/archive.md"))
	defer resp.Body.Close()
	body := mustv(io.ReadAll(resp.Body))
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/markdown") || !strings.Contains(string(body), "timed") {
		t.Fatalf("archive.md: %d %s %.200s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
}

// TestRateHint: §21 — a type's rate_hint replaces its kind's quota (here
// lower than the signal default of 60), within the host's cap.
func TestRateHint(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, nil)
	alice, bob, room := setup(t, w, adp.VisibilityPublic)
	mustv(alice.DefineType(ctx, room, decl(t, `{"type":"team.nudge","kind":"signal","title":"Nudge","rate_hint":2,"schema":{"type":"object"}}`)))
	for range 2 {
		mustv(bob.SendCustom(ctx, room, "team.nudge", raw(`{}`)))
	}
	_, err := bob.SendCustom(ctx, room, "team.nudge", raw(`{}`))
	wantCode(t, err, adp.ErrRateLimited, 429)
	// Other signal types keep the kind's quota.
	mustv(bob.SendCustom(ctx, room, "reaction.create", raw(`{"event_id":"`+mustv(alice.SendMessage(ctx, room, text("x"))).Envelope.Hash().String()+`","reaction":"agree"}`)))
	w.clock.Advance(time.Minute)
	mustv(bob.SendCustom(ctx, room, "team.nudge", raw(`{}`)))
}

// TestHintedTypesShareOneCeiling: §21 lets a rate_hint adjust a
// default only within the host's limits, so one agent's hinted types, in
// all rooms, share the MaxHinted ceiling instead of each having its own.
func TestHintedTypesShareOneCeiling(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, &adphost.Options{RateLimits: &adphost.RateLimits{MaxHinted: 10}})
	alice, bob, room := setup(t, w, adp.VisibilityPublic)
	for _, typ := range []string{"a", "b", "c"} {
		mustv(alice.DefineType(ctx, room, decl(t, `{"type":"team.`+typ+`","kind":"message","title":"T","rate_hint":100000,"schema":{"type":"object"}}`)))
	}
	sent := 0
	for range 6 {
		for _, typ := range []string{"a", "b", "c"} {
			if _, err := bob.SendCustom(ctx, room, "team."+typ, raw(`{}`)); err == nil {
				sent++
			} else if !errors.Is(err, adp.ErrRateLimited) {
				t.Fatal(err)
			}
		}
	}
	if sent != 10 {
		t.Fatalf("%d hinted events accepted in one minute, want the ceiling of 10", sent)
	}
	w.clock.Advance(time.Minute)
	mustv(bob.SendCustom(ctx, room, "team.a", raw(`{}`)))
}

// TestStatusClearedOnRemoval: §17.4 — removing a member clears its status.
func TestStatusClearedOnRemoval(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, nil)
	alice, bob, room := setup(t, w, adp.VisibilityPublic)
	mustv(bob.PutAgentStatus(ctx, room, adp.AgentStatusInput{State: "working"}))
	mustv(alice.RemoveMember(ctx, room, adp.MemberRemove{Member: bob.AgentID()}))
	_, err := alice.AgentStatus(ctx, room, bob.AgentID())
	wantCode(t, err, adp.ErrAgentStatusNotFound, 404)
}
