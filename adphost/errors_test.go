package adphost_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/packs"
)

// postRaw posts body to path and returns the error answer (nil for 2xx).
func (w *world) postRaw(path string, body []byte) error {
	w.t.Helper()
	resp, err := w.hc.Post(w.url+path, "application/json", bytes.NewReader(body))
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	return identity.ReadError(resp)
}

// rawEvent signs an event with arbitrary type and payload on base, past
// every local builder check.
func rawEvent(t testing.TB, c *adp.Client, base adp.Base, typ, payload string) *envelope.Envelope {
	t.Helper()
	room, _ := jsontext.AppendQuote(nil, base.RoomID)
	h, _ := base.Hash.MarshalText()
	ext := envelope.Fields{
		{Name: adp.FieldRoomID, Value: room},
		{Name: adp.FieldBaseSeq, Value: strconv.AppendInt(nil, base.Seq, 10)},
		{Name: adp.FieldBaseHash, Value: jsontext.Value(`"` + string(h) + `"`)},
	}
	env, err := c.Author().Sign(context.Background(), adp.Protocol, typ, jsontext.Value(payload), ext)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// headBase is the base on the room head as the client's replica sees it.
func headBase(t testing.TB, c *adp.Client, room string) adp.Base {
	t.Helper()
	if _, err := c.Sync(context.Background(), room); err != nil {
		t.Fatal(err)
	}
	b, err := c.Verified(room).BaseFor(adp.TypeMessageCreate)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// setup creates a room of alice's and lets bob join it as a speaker.
func setup(t testing.TB, w *world, vis adp.Visibility) (alice, bob *adp.Client, room string) {
	t.Helper()
	ctx := context.Background()
	alice, bob = w.client("alice"), w.client("bob")
	room = mustv(alice.CreateRoom(ctx, roomSpec(t, vis, "errors"))).RoomID
	if vis == adp.VisibilityPublic {
		mustv(bob.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker}))
		return
	}
	jr := mustv(bob.RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleSpeaker}))
	mustv(alice.ReviewJoin(ctx, room, adp.JoinReview{Request: jr.Request, Decision: adp.DecisionApprove, Role: adp.RoleSpeaker}))
	mustv(bob.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker, RequestID: jr.Request.ID}))
	return
}

// TestRace is §6.1 over HTTP: two agents sign on the same head at once;
// exactly one is accepted and the other gets room_head_mismatch carrying
// the current head and the events URL.
func TestRace(t *testing.T) {
	w := newWorld(t, &adphost.Options{RateLimits: adphost.Unlimited()})
	alice, bob, room := setup(t, w, adp.VisibilityPublic)
	ctx := ctxT(t)
	base := headBase(t, alice, room)
	if headBase(t, bob, room) != base {
		t.Fatal("replicas disagree on the head")
	}
	envs := []*envelope.Envelope{
		mustv(adp.NewMessage(ctx, alice.Author(), base, text("alice first"))),
		mustv(adp.NewMessage(ctx, bob.Author(), base, text("bob first"))),
	}
	clients := []*adp.Client{alice, bob}
	errs := make([]error, 2)
	recs := make([]*adp.Record, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() { recs[i], errs[i] = clients[i].Submit(ctx, room, envs[i]) })
	}
	wg.Wait()
	win, lose := 0, 1
	if errs[0] != nil {
		win, lose = 1, 0
	}
	if errs[win] != nil {
		t.Fatalf("no write won: %v / %v", errs[0], errs[1])
	}
	wantCode(t, errs[lose], adp.ErrRoomHeadMismatch, 409)
	var hm *adp.HeadMismatchError
	if !errors.As(errs[lose], &hm) {
		t.Fatalf("not a *HeadMismatchError: %T", errs[lose])
	}
	want := adp.HeadMismatch{BaseSeq: base.Seq, BaseHash: base.Hash, CurrentSeq: recs[win].Seq, CurrentHash: recs[win].Hash,
		EventsURL: w.url + "/v1/rooms/" + room + "/events?after_seq=" + strconv.FormatInt(base.Seq, 10)}
	if hm.Data != want {
		t.Fatalf("mismatch data %+v, want %+v", hm.Data, want)
	}
	// The loser re-reads, re-decides and wins on the new head.
	if _, err := clients[lose].SendMessage(ctx, room, text("after re-reading")); err != nil {
		t.Fatal(err)
	}
}

// TestErrorCodes drives every §20 code the reference host can produce
// through the client and checks the code and its HTTP status.
func TestErrorCodes(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, &adphost.Options{RateLimits: adphost.Unlimited()})
	alice, bob, room := setup(t, w, adp.VisibilityRestricted)
	carol := w.client("carol")

	t.Run("invalid_event room_id differs from the path", func(t *testing.T) {
		other := mustv(alice.CreateRoom(ctx, roomSpec(t, adp.VisibilityPublic, "other"))).RoomID
		env := mustv(adp.NewMessage(ctx, alice.Author(), headBase(t, alice, room), text("x")))
		_, err := alice.Submit(ctx, other, env)
		wantCode(t, err, adp.ErrInvalidEvent, 400)
	})
	t.Run("invalid_event_hash", func(t *testing.T) {
		env := mustv(adp.NewMessage(ctx, alice.Author(), headBase(t, alice, room), text("x")))
		b := env.AppendJSON(nil)
		h := env.Hash().String()
		other := envelope.Sum([]byte("x")).String()
		err := w.postRaw("/v1/rooms/"+room, bytes.Replace(b, []byte(h), []byte(other), 1))
		wantCode(t, err, adp.ErrInvalidEventHash, 400)
	})
	t.Run("invalid_signature", func(t *testing.T) {
		env := mustv(adp.NewMessage(ctx, alice.Author(), headBase(t, alice, room), text("x")))
		other := mustv(adp.NewMessage(ctx, alice.Author(), headBase(t, alice, room), text("y")))
		sig, osig := env.Signature(), other.Signature()
		b := bytes.Replace(env.AppendJSON(nil), []byte(b64(sig[:])), []byte(b64(osig[:])), 1)
		wantCode(t, w.postRaw("/v1/rooms/"+room, b), adp.ErrInvalidSignature, 400)
	})
	t.Run("invalid_actor", func(t *testing.T) {
		env := mustv(adp.NewMessage(ctx, alice.Author(), headBase(t, alice, room), text("x")))
		b := bytes.Replace(env.AppendJSON(nil), []byte(alice.AgentID().String()), []byte("did:agent:short"), 1)
		wantCode(t, w.postRaw("/v1/rooms/"+room, b), adp.ErrInvalidActor, 400)
	})
	t.Run("timestamp_out_of_window", func(t *testing.T) {
		late := &envelope.Author{Signer: key("alice"), Nonces: identity.NewNonceSource(nil), Now: func() time.Time { return w.clock.Now().Add(-10 * time.Minute) }}
		env := mustv(adp.NewMessage(ctx, late, headBase(t, alice, room), text("x")))
		_, err := alice.Submit(ctx, room, env)
		wantCode(t, err, adp.ErrTimestampOutOfWindow, 400)
	})
	t.Run("nonce_not_greater with Max-Seen-Nonce, and the client's resync", func(t *testing.T) {
		// A second device of bob's, with a fresh nonce source that lags.
		lag := &envelope.Author{Signer: key("bob"), Nonces: identity.NewNonceSource(nil), Now: func() time.Time { return w.clock.Now().Add(-time.Minute) }}
		mustv(bob.SendMessage(ctx, room, text("first")))
		env := mustv(adp.NewMessage(ctx, lag, headBase(t, bob, room), text("x")))
		_, err := bob.Submit(ctx, room, env)
		wantCode(t, err, adp.ErrNonceNotGreater, 409)
		var e *identity.Error
		if !errors.As(err, &e) || e.MaxSeenNonce < env.Event().Nonce {
			t.Fatalf("no Max-Seen-Nonce: %+v", e)
		}
		// A client whose nonce source lags resyncs once and succeeds.
		dev2, err := adp.NewClient(w.url, &adp.ClientOptions{Signer: key("bob"), HTTPClient: w.hc, AllowLoopbackHTTP: true,
			Now: func() time.Time { return w.clock.Now().Add(-time.Minute) }, Retries: -1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dev2.SendMessage(ctx, room, text("from the second device")); err != nil {
			t.Fatalf("resync did not recover: %v", err)
		}
		mustv(bob.SendMessage(ctx, room, text("bob's first device resyncs too")))
	})
	t.Run("room_not_found", func(t *testing.T) {
		_, err := alice.GetRoom(ctx, "nosuchroom0000000000")
		wantCode(t, err, adp.ErrRoomNotFound, 404)
		env := mustv(adp.NewMessage(ctx, alice.Author(), adp.Base{RoomID: "nosuchroom0000000000", Seq: 1, Hash: envelope.Sum(nil)}, text("x")))
		_, err = alice.Submit(ctx, "nosuchroom0000000000", env)
		wantCode(t, err, adp.ErrRoomNotFound, 404)
	})
	t.Run("base_record_mismatch", func(t *testing.T) {
		env := rawEvent(t, bob, adp.Base{RoomID: room, Seq: 1, Hash: envelope.Sum([]byte("no"))}, "reaction.create",
			`{"event_id":"`+envelope.Sum(nil).String()+`","reaction":"agree"}`)
		_, err := bob.Submit(ctx, room, env)
		wantCode(t, err, adp.ErrBaseRecordMismatch, 409)
	})
	t.Run("permission_denied", func(t *testing.T) {
		_, err := bob.CloseRoom(ctx, room, adp.Notice{})
		wantCode(t, err, adp.ErrPermissionDenied, 403)
		_, err = bob.JoinRequests(ctx, room)
		wantCode(t, err, adp.ErrPermissionDenied, 403)
	})
	t.Run("approval_required", func(t *testing.T) {
		_, err := carol.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker})
		wantCode(t, err, adp.ErrApprovalRequired, 403)
	})
	t.Run("join_request_not_found", func(t *testing.T) {
		_, err := carol.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker, RequestID: "jr_nope"})
		wantCode(t, err, adp.ErrJoinRequestNotFound, 404)
		jr := mustv(carol.RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleSpeaker}))
		_, err = w.client("dave").JoinRequest(ctx, room, jr.Request.ID) // not the applicant, creator or a moderator
		wantCode(t, err, adp.ErrJoinRequestNotFound, 404)
	})
	t.Run("join_request_not_approved", func(t *testing.T) {
		jr := mustv(w.client("erin").RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleSpeaker}))
		mustv(alice.ReviewJoin(ctx, room, adp.JoinReview{Request: jr.Request, Decision: adp.DecisionReject, Reason: "no"}))
		_, err := w.client("erin").Join(ctx, room, adp.Join{Role: adp.RoleSpeaker, RequestID: jr.Request.ID})
		wantCode(t, err, adp.ErrJoinRequestNotApproved, 400)
	})
	t.Run("join_request_role_mismatch", func(t *testing.T) {
		f := w.client("frank")
		jr := mustv(f.RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleSpeaker}))
		mustv(alice.ReviewJoin(ctx, room, adp.JoinReview{Request: jr.Request, Decision: adp.DecisionApprove, Role: adp.RoleObserver}))
		_, err := f.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker, RequestID: jr.Request.ID})
		wantCode(t, err, adp.ErrJoinRequestRoleMismatch, 400)
	})
	t.Run("join_request_expired", func(t *testing.T) {
		w := newWorld(t, &adphost.Options{JoinRequestTTL: time.Minute})
		alice := w.client("alice")
		room := mustv(alice.CreateRoom(ctx, roomSpec(t, adp.VisibilityRestricted, "expiry"))).RoomID
		g := w.client("gina")
		jr := mustv(g.RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleSpeaker}))
		mustv(alice.ReviewJoin(ctx, room, adp.JoinReview{Request: jr.Request, Decision: adp.DecisionApprove, Role: adp.RoleSpeaker}))
		w.clock.Advance(2 * time.Minute)
		_, err := g.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker, RequestID: jr.Request.ID})
		wantCode(t, err, adp.ErrJoinRequestExpired, 400)
		// A pending request past its expiry reads as expired.
		h := w.client("hank")
		jr2 := mustv(h.RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleSpeaker}))
		w.clock.Advance(2 * time.Minute)
		if got := mustv(h.JoinRequest(ctx, room, jr2.Request.ID)); got.Status != adp.JoinExpired {
			t.Fatalf("status %s, want expired", got.Status)
		}
	})
	t.Run("member_banned", func(t *testing.T) {
		w := newWorld(t, nil)
		alice, bob, room := setup(t, w, adp.VisibilityPublic)
		mustv(alice.RemoveMember(ctx, room, adp.MemberRemove{Member: bob.AgentID(), Ban: true}))
		_, err := bob.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker})
		wantCode(t, err, adp.ErrMemberBanned, 403)
		// A banned applicant is not auto-approved (§11).
		if jr := mustv(bob.RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleSpeaker})); jr.Status != adp.JoinPending {
			t.Fatalf("banned applicant auto-approved: %s", jr.Status)
		}
	})
	t.Run("role_not_allowed", func(t *testing.T) {
		spec := roomSpec(t, adp.VisibilityPublic, "no observers")
		spec.Policy = &adp.Policy{ObserverAllowed: ptr(false)}
		r2 := mustv(alice.CreateRoom(ctx, spec)).RoomID
		_, err := carol.RequestJoin(ctx, r2, adp.JoinRequestInput{Role: adp.RoleObserver})
		wantCode(t, err, adp.ErrRoleNotAllowed, 400)
		_, err = carol.Join(ctx, r2, adp.Join{Role: adp.RoleObserver})
		wantCode(t, err, adp.ErrRoleNotAllowed, 400)
	})
	t.Run("max_speakers_exceeded", func(t *testing.T) {
		spec := roomSpec(t, adp.VisibilityPublic, "one speaker")
		spec.Policy = &adp.Policy{MaxSpeakers: 1}
		r2 := mustv(alice.CreateRoom(ctx, spec)).RoomID
		_, err := carol.Join(ctx, r2, adp.Join{Role: adp.RoleSpeaker})
		wantCode(t, err, adp.ErrMaxSpeakersExceeded, 400)
	})
	t.Run("membership_required and invalid_token on restricted contents", func(t *testing.T) {
		_, err := carol.Sync(ctx, room)
		wantCode(t, err, adp.ErrMembershipRequired, 403)
		_, err = carol.AgentStatuses(ctx, room)
		wantCode(t, err, adp.ErrMembershipRequired, 403)
		err = liveError(t, w, carol, room)
		wantCode(t, err, adp.ErrMembershipRequired, 403)
		_, err = carol.PutAgentStatus(ctx, room, adp.AgentStatusInput{State: "idle"})
		wantCode(t, err, adp.ErrMembershipRequired, 403)
		resp := mustv(w.hc.Get(w.url + "/v1/rooms/" + room + "/events"))
		wantCode(t, identity.ReadError(resp), adp.ErrInvalidToken, 401)
		resp.Body.Close()
	})
	t.Run("invalid_token for another audience", func(t *testing.T) {
		u := strings.Replace(w.url, "127.0.0.1", "localhost", 1)
		other := mustv(adp.NewClient(u, &adp.ClientOptions{Signer: key("bob"), HTTPClient: w.hc, AllowLoopbackHTTP: true, Now: w.clock.Now}))
		_, err := other.AgentStatuses(ctx, room)
		wantCode(t, err, adp.ErrInvalidToken, 401)
		for _, err := range other.MyRooms(ctx, adp.RoomQuery{}) {
			wantCode(t, err, adp.ErrInvalidToken, 401)
		}
	})
	t.Run("agent_status_not_found", func(t *testing.T) {
		_, err := bob.AgentStatus(ctx, room, carol.AgentID())
		wantCode(t, err, adp.ErrAgentStatusNotFound, 404)
	})
	t.Run("observer status write is permission_denied", func(t *testing.T) {
		mustv(alice.UpdateRole(ctx, room, adp.RoleUpdate{Member: bob.AgentID(), Role: adp.RoleObserver}))
		_, err := bob.PutAgentStatus(ctx, room, adp.AgentStatusInput{State: "idle"})
		wantCode(t, err, adp.ErrPermissionDenied, 403)
		mustv(alice.UpdateRole(ctx, room, adp.RoleUpdate{Member: bob.AgentID(), Role: adp.RoleSpeaker}))
	})
	t.Run("payload_too_large", func(t *testing.T) {
		_, err := bob.SendMessage(ctx, room, text(strings.Repeat("x", 70<<10)))
		wantCode(t, err, adp.ErrPayloadTooLarge, 413)
		big := append([]byte(`{"x":"`), bytes.Repeat([]byte("x"), 2<<20)...)
		wantCode(t, w.postRaw("/v1/rooms/"+room, big), adp.ErrPayloadTooLarge, 413)
	})
	t.Run("type_not_defined", func(t *testing.T) {
		env := rawEvent(t, bob, headBase(t, bob, room), "review.resolution", `{"outcome":"ok"}`)
		_, err := bob.Submit(ctx, room, env)
		wantCode(t, err, adp.ErrTypeNotDefined, 400)
	})
	t.Run("payload_schema_violation", func(t *testing.T) {
		env := rawEvent(t, bob, headBase(t, bob, room), "review.finding", `{"severity":"catastrophic","summary":"x"}`)
		_, err := bob.Submit(ctx, room, env)
		wantCode(t, err, adp.ErrPayloadSchemaViolation, 400)
	})
	t.Run("type_disabled", func(t *testing.T) {
		mustv(alice.DefineType(ctx, room, decl(t, `{"use":"adp:moderation/1.0","overrides":{"steer.create":{"status":"disabled"}}}`)))
		env := rawEvent(t, bob, headBase(t, bob, room), "steer.create", `{"instruction":"focus"}`)
		_, err := bob.Submit(ctx, room, env)
		wantCode(t, err, adp.ErrTypeDisabled, 400)
	})
	t.Run("pack_unavailable", func(t *testing.T) {
		spec := roomSpec(t, adp.VisibilityPublic, "external")
		spec.Types = []packs.Declaration{decl(t, `{"pack":"https://packs.example.com/p.json","digest":"sha256:`+strings.Repeat("A", 43)+`"}`)}
		_, err := alice.CreateRoom(ctx, spec)
		wantCode(t, err, adp.ErrPackUnavailable, 400)
	})
	t.Run("room_not_active before start", func(t *testing.T) {
		spec := roomSpec(t, adp.VisibilityPublic, "later")
		spec.StartTime, spec.EndTime = t0.Add(time.Hour).UnixMilli(), t0.Add(2*time.Hour).UnixMilli()
		r2 := mustv(alice.CreateRoom(ctx, spec)).RoomID
		_, err := alice.SendMessage(ctx, r2, text("too early"))
		wantCode(t, err, adp.ErrRoomNotActive, 409)
		_, _, err = alice.Archive(ctx, r2)
		wantCode(t, err, adp.ErrRoomNotActive, 409)
	})
	t.Run("rate_limited", func(t *testing.T) {
		w := newWorld(t, nil) // the §21 defaults: 5 messages per agent per minute
		alice, _, room := setup(t, w, adp.VisibilityPublic)
		for i := range 5 {
			mustv(alice.SendMessage(ctx, room, text("m"+strconv.Itoa(i))))
		}
		_, err := alice.SendMessage(ctx, room, text("sixth"))
		wantCode(t, err, adp.ErrRateLimited, 429)
		w.clock.Advance(time.Minute)
		mustv(alice.SendMessage(ctx, room, text("next minute")))
	})
	t.Run("room_ended", func(t *testing.T) {
		w := newWorld(t, nil)
		alice, bob, room := setup(t, w, adp.VisibilityPublic)
		w.clock.Advance(2 * time.Hour) // past end_time: the clock ends the room
		_, err := bob.SendMessage(ctx, room, text("late"))
		wantCode(t, err, adp.ErrRoomEnded, 409)
		_, err = w.client("zed").RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleSpeaker})
		wantCode(t, err, adp.ErrRoomEnded, 409)
		_, err = bob.PutAgentStatus(ctx, room, adp.AgentStatusInput{State: "idle"})
		wantCode(t, err, adp.ErrRoomEnded, 409)
		if _, _, err := alice.Archive(ctx, room); err != nil {
			t.Fatalf("ended by the clock, the room has no archive: %v", err)
		}
	})
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
