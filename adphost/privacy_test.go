package adphost_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
)

// answer is one HTTP answer with the room ID blanked out, so that the
// answers for two rooms compare equal when they say the same thing.
type answer struct {
	status int
	body   string
}

// probe sends one request as name ("" for none, "bad" for a garbage
// token) and returns its answer with room replaced by ROOM.
func (w *world) probe(method, path, name string, body []byte, room string) answer {
	w.t.Helper()
	req, err := http.NewRequest(method, w.url+path, bytes.NewReader(body))
	if err != nil {
		w.t.Fatal(err)
	}
	switch name {
	case "":
	case "bad":
		req.Header.Set("Authorization", "Bearer not.a.token")
	default:
		tok, err := identity.MintRequestToken(context.Background(), key(name), w.host.Origin(), &identity.MintOptions{Now: w.clock.Now})
		if err != nil {
			w.t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := w.hc.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return answer{resp.StatusCode, strings.ReplaceAll(string(b), room, "ROOM")}
}

// TestPrivateRoomOracle is threat model promise 13 end to end: to an
// outsider, a private room answers every read, list, stream, status and
// signed write exactly as a room that does not exist (room_not_found, same
// status and body), whatever base the write names, so that neither its
// existence nor its head leaks. The two exceptions of the text stay:
// applying (§11) and approval_required for a room.join without request_id
// (§10.2). An approved applicant reads the room resource and its head and
// nothing more; a pending one sees in /v1/me/rooms only its own request.
func TestPrivateRoomOracle(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, nil) // default quotas: the outsiders' refusals count
	alice, bob, room := setup(t, w, adp.VisibilityPrivate)
	ghost := strings.Repeat("q", len(room)) // the shape of a room ID, and no room
	mustv(bob.SendMessage(ctx, room, text("a secret")))
	carol := w.client("carol")
	approved := mustv(carol.RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleSpeaker}))
	mustv(alice.ReviewJoin(ctx, room, adp.JoinReview{Request: approved.Request, Decision: adp.DecisionApprove, Role: adp.RoleSpeaker}))
	pending := mustv(w.client("dave").RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleSpeaker}))
	head := headBase(t, alice, room)

	// Reads, lists, streams and status writes, as an outsider, with a bad
	// token and with none.
	paths := []string{"", "/events", "/events?after_seq=1&limit=1", "/events/live", "/agent-status",
		"/agent-status/" + bob.AgentID().String(), "/archive", "/archive.jsonl", "/archive.md",
		"/join-requests", "/join-requests/" + approved.Request.ID, "/join-requests/" + pending.Request.ID}
	for _, who := range []string{"mallory", "bad", ""} {
		for _, p := range paths {
			got, want := w.probe("GET", "/v1/rooms/"+room+p, who, nil, room), w.probe("GET", "/v1/rooms/"+ghost+p, who, nil, ghost)
			if got != want || got.status/100 != 4 {
				t.Errorf("%s GET …%s: private room %v, no room %v", who, p, got, want)
			}
		}
		body := []byte(`{"state":"idle"}`)
		if got, want := w.probe("PUT", "/v1/rooms/"+room+"/agent-status", who, body, room), w.probe("PUT", "/v1/rooms/"+ghost+"/agent-status", who, body, ghost); got != want {
			t.Errorf("%s PUT agent-status: private room %v, no room %v", who, got, want)
		}
	}
	// Another applicant's approved request does not let mallory see more.
	if a := w.probe("GET", "/v1/rooms/"+room, "mallory", nil, room); a.status != 404 || !strings.Contains(a.body, "room_not_found") {
		t.Fatalf("outsider GET room: %v", a)
	}

	// Signed writes: two outsiders send the same sequence, one to the
	// private room (on a made-up base, on the true head, and a room.join
	// naming carol's approved request), the other to no room. The answers
	// match, each refusal counts against the quota, and the sixth message
	// is rate_limited in both.
	writes := func(name, target string, base func() adp.Base) []answer {
		a := newAuthor(name)
		a.Now = w.clock.Now
		var out []answer
		for i := range 6 {
			b := base()
			if i%2 == 1 {
				b = adp.Base{RoomID: target, Seq: 1, Hash: envelope.Sum([]byte("made up"))}
			}
			env := mustv(adp.NewMessage(ctx, a, b, text(fmt.Sprint("probe ", i))))
			out = append(out, w.probe("POST", "/v1/rooms/"+target, "", env.AppendJSON(nil), target))
		}
		b := base()
		join := mustv(adp.NewJoin(ctx, a, b, adp.Join{Role: adp.RoleSpeaker, RequestID: approved.Request.ID}))
		out = append(out, w.probe("POST", "/v1/rooms/"+target, "", join.AppendJSON(nil), target))
		return out
	}
	got := writes("mallory", room, func() adp.Base { return adp.Base{RoomID: room, Seq: head.Seq, Hash: head.Hash} })
	want := writes("mallet", ghost, func() adp.Base { return adp.Base{RoomID: ghost, Seq: head.Seq, Hash: head.Hash} })
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("write %d: private room %v, no room %v", i, got[i], want[i])
		}
		wantErr := "room_not_found"
		if i == 5 {
			wantErr = "rate_limited"
		}
		if !strings.Contains(got[i].body, wantErr) || strings.Contains(got[i].body, "current_seq") {
			t.Errorf("write %d: %v, want %s", i, got[i], wantErr)
		}
	}
	// The text's own exception: a room.join without request_id.
	trent := newAuthor("trent")
	trent.Now = w.clock.Now
	env := mustv(adp.NewJoin(ctx, trent, head, adp.Join{Role: adp.RoleSpeaker}))
	if a := w.probe("POST", "/v1/rooms/"+room, "", env.AppendJSON(nil), room); a.status != 403 || !strings.Contains(a.body, "approval_required") {
		t.Errorf("room.join without request_id: %v", a)
	}

	// Forged envelopes in bob's name (a valid hash, another signature) are
	// invalid_signature and burn none of bob's quota: his five messages of
	// the minute still go through.
	for _, target := range []string{room, ghost} {
		for range 6 {
			b := adp.Base{RoomID: target, Seq: head.Seq, Hash: head.Hash}
			env := mustv(adp.NewMessage(ctx, bob.Author(), b, text("forged")))
			other := mustv(adp.NewMessage(ctx, bob.Author(), b, text("other")))
			sig, osig := env.Signature(), other.Signature()
			forged := bytes.Replace(env.AppendJSON(nil), []byte(b64(sig[:])), []byte(b64(osig[:])), 1)
			if a := w.probe("POST", "/v1/rooms/"+target, "", forged, target); !strings.Contains(a.body, "invalid_signature") {
				t.Fatalf("forged: %v", a)
			}
		}
	}
	for i := range 4 { // bob sent one already
		mustv(bob.SendMessage(ctx, room, text(fmt.Sprint("still mine ", i))))
	}

	// The approved applicant: the resource and its head, nothing more.
	res := mustv(carol.GetRoom(ctx, room))
	if res.Head.Seq < 1 || res.Seq < 1 {
		t.Fatalf("approved applicant's resource: %+v", res)
	}
	for _, p := range []string{"/events", "/agent-status", "/archive", "/join-requests", "/join-requests/" + pending.Request.ID} {
		if a := w.probe("GET", "/v1/rooms/"+room+p, "carol", nil, room); a != w.probe("GET", "/v1/rooms/"+ghost+p, "carol", nil, ghost) {
			t.Errorf("approved applicant GET …%s: %v", p, a)
		}
	}
	if a := w.probe("GET", "/v1/rooms/"+room+"/join-requests/"+approved.Request.ID, "carol", nil, room); a.status != 200 {
		t.Errorf("applicant's own request: %v", a)
	}
	cenv := mustv(adp.NewMessage(ctx, carol.Author(), head, text("before joining")))
	_, err := carol.Submit(ctx, room, cenv)
	wantCode(t, err, adp.ErrRoomNotFound, 404)

	// The pending applicant's /v1/me/rooms entry carries its request and
	// none of the room's state.
	mine := collect(t, w.client("dave").MyRooms(ctx, adp.RoomQuery{}))
	if len(mine) != 1 || mine[0].ID != room || mine[0].RequestID != pending.Request.ID || mine[0].Seq != 0 ||
		mine[0].Topic != "" || mine[0].Members != 0 || mine[0].LastActivity != 0 || mine[0].EndTime != 0 {
		t.Errorf("pending applicant's rooms: %+v", mine)
	}
	// After joining, carol sees everything.
	mustv(carol.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker, RequestID: approved.Request.ID}))
	if recs := mustv(carol.Sync(ctx, room)); recs.Seq < 1 {
		t.Fatal("member cannot read")
	}
	if got := ids(collect(t, carol.MyRooms(ctx, adp.RoomQuery{}))); !slices.Equal(got, []string{room}) {
		t.Fatalf("member's rooms: %v", got)
	}
}

// TestCreatorWhoLeftLosesLive: §17.1 and §22 require an active member for
// the live stream; a creator who left may still read the history (§16)
// but is refused the stream, and the stream it held ends.
func TestCreatorWhoLeftLosesLive(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // a stream that never ends fails
	defer cancel()
	w := newWorld(t, nil)
	alice, _, room := setup(t, w, adp.VisibilityPrivate)
	tok := mustv(identity.MintRequestToken(ctx, key("alice"), w.host.Origin(), &identity.MintOptions{Now: w.clock.Now}))
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, w.url+"/v1/rooms/"+room+"/events/live", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp := mustv(w.hc.Do(req))
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("creator's stream: %d", resp.StatusCode)
	}
	mustv(alice.Leave(ctx, room, adp.Notice{}))
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatalf("the stream did not end cleanly: %v", err)
	}
	a := w.probe("GET", "/v1/rooms/"+room+"/events/live", "alice", nil, room)
	if a.status != 403 || !strings.Contains(a.body, "membership_required") {
		t.Fatalf("creator who left subscribes: %v", a)
	}
	mustv(alice.Sync(ctx, room)) // the creator still reads the history
}

// TestApplicantReadsWithoutIndex: a Store without the optional
// JoinRequestIndex (here one that hides MemoryStore's) serves the same
// applicant reads through JoinRequests.
func TestApplicantReadsWithoutIndex(t *testing.T) {
	ctx := context.Background()
	var plain struct{ adphost.Store }
	plain.Store = adphost.NewMemoryStore()
	if _, ok := adphost.Store(plain).(adphost.JoinRequestIndex); ok {
		t.Fatal("the wrapper still has the index")
	}
	w := newWorld(t, &adphost.Options{Store: plain})
	alice, _, room := setup(t, w, adp.VisibilityPrivate)
	carol, dave := w.client("carol"), w.client("dave")
	jr := mustv(carol.RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleSpeaker}))
	pending := mustv(dave.RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleSpeaker}))
	mustv(alice.ReviewJoin(ctx, room, adp.JoinReview{Request: jr.Request, Decision: adp.DecisionApprove, Role: adp.RoleSpeaker}))
	mustv(carol.GetRoom(ctx, room))
	_, err := dave.GetRoom(ctx, room)
	wantCode(t, err, adp.ErrRoomNotFound, 404)
	if mine := collect(t, dave.MyRooms(ctx, adp.RoomQuery{})); len(mine) != 1 || mine[0].RequestID != pending.Request.ID {
		t.Fatalf("pending applicant's rooms: %+v", mine)
	}
}

// TestPrivateApplicationRefusals: applying is open to anyone (§11), but
// an outsider's application that a private room would refuse (a role its
// policy does not allow, a room ended or cancelled) is answered exactly
// as one to a room that does not exist, quota included (§16: the
// outsider learns neither the room's policy nor its state). A valid
// application still gets its pending request, and a public room still
// says why it refuses.
func TestPrivateApplicationRefusals(t *testing.T) {
	ctx := ctxT(t)
	w := newWorld(t, nil) // default quotas: every application counts
	alice := w.client("alice")
	no := false
	spec := roomSpec(t, adp.VisibilityPrivate, "no observers")
	spec.Policy = &adp.Policy{ObserverAllowed: &no}
	noObservers := mustv(alice.CreateRoom(ctx, spec)).RoomID
	ended := mustv(alice.CreateRoom(ctx, roomSpec(t, adp.VisibilityPrivate, "ended"))).RoomID
	mustv(alice.CloseRoom(ctx, ended, adp.Notice{}))
	spec = roomSpec(t, adp.VisibilityPrivate, "cancelled")
	spec.StartTime, spec.EndTime = t0.Add(time.Hour).UnixMilli(), t0.Add(2*time.Hour).UnixMilli()
	cancelled := mustv(alice.CreateRoom(ctx, spec)).RoomID
	mustv(alice.CancelRoom(ctx, cancelled, adp.Notice{}))
	ghost := strings.Repeat("q", len(noObservers))

	apply := func(who, room string, role adp.Role) answer {
		return w.probe("POST", "/v1/rooms/"+room+"/join-requests", who, []byte(`{"role":"`+role+`"}`), room)
	}
	refused := []struct {
		room string
		role adp.Role
	}{{noObservers, adp.RoleObserver}, {ended, adp.RoleSpeaker}, {cancelled, adp.RoleSpeaker}}
	for i := range 11 { // the join-request quota is 10 a minute
		c := refused[i%len(refused)]
		got, want := apply("mallory", c.room, c.role), apply("mallet", ghost, c.role)
		wantErr := "room_not_found"
		if i == 10 {
			wantErr = "rate_limited"
		}
		if got != want || !strings.Contains(got.body, wantErr) {
			t.Errorf("application %d (%s): private room %v, no room %v, want %s", i, c.role, got, want, wantErr)
		}
	}

	jr := mustv(w.client("carol").RequestJoin(ctx, noObservers, adp.JoinRequestInput{Role: adp.RoleSpeaker}))
	if jr.Status != adp.JoinPending {
		t.Fatalf("a valid application: %+v", jr)
	}
	spec = roomSpec(t, adp.VisibilityPublic, "public, no observers")
	spec.Policy = &adp.Policy{ObserverAllowed: &no}
	public := mustv(alice.CreateRoom(ctx, spec)).RoomID
	_, err := w.client("carol").RequestJoin(ctx, public, adp.JoinRequestInput{Role: adp.RoleObserver})
	wantCode(t, err, adp.ErrRoleNotAllowed, 400)
}
