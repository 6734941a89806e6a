package connector

import (
	"errors"
	"net/http"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/adphosttest"
)

// TestEngineDrafts: the connector speaks the draft each host serves, from
// one table: it learns the draft from the host's discovery document at
// first contact and keeps it with the host, so a restart with the host
// down still reads the room; room_create binds the room to the host in
// the 2026-09-24 draft (§8.1); room_join files the draft's join request
// (seed §11: an HTTP request, then room.join naming it; 2026-09-24 §10:
// a signed room.join.request, whose review itself makes the agent a
// member); writes and held drafts follow the draft's freshness classes
// (seed §6.1: every non-signal write on the head exactly, so another
// message makes a held message or control write stale; 2026-09-24 §5.1:
// a message does not move the head, so neither is stale after one, and
// a control write moving the head makes both stale).
func TestEngineDrafts(t *testing.T) {
	for _, tc := range []struct {
		draft adp.Draft
		// staleAfterMessage: a message of another agent makes a write
		// based on the head before it stale (held).
		staleAfterMessage bool
	}{
		{draft: adp.Draft20260704, staleAfterMessage: true},
		{draft: adp.Draft20260924},
	} {
		t.Run(tc.draft.String(), func(t *testing.T) {
			_, srv := adphosttest.NewServer(t, &adphost.Options{Draft: tc.draft, RateLimits: adphost.Unlimited()})
			ctx := ctxT(t)
			host := srv.URL
			alice := openTest(t, t.TempDir(), testKey(t, "alice"), host)
			defer alice.Close()
			bobDir := t.TempDir()
			bob := openTest(t, bobDir, testKey(t, "bob"), host, func(o *Options) { o.NoSubscribe = true })

			lock := `{"type":"task.lock","kind":"control","title":"Lock","schema":{"type":"object"}}`
			room := must[*RoomCreateResult](t)(alice.CreateRoom(ctx, "a", RoomCreateInput{Host: host, Topic: "drafts", Visibility: "restricted",
				StartTime: t0ms(alice) - 1000, EndTime: t0ms(alice) + 3600_000, Types: []jsontext.Value{jsontext.Value(lock)}})).Room.RoomID
			if d, ok := alice.hosts[host].client.KnownDraft(); !ok || d != tc.draft {
				t.Fatalf("alice's client speaks the %v draft (%v) to a host of the %s draft", d, ok, tc.draft)
			}

			// A restricted room: a join request, reviewed by the creator
			// (as moderator, who may send control types).
			r := must[*RoomJoinResult](t)(bob.Join(ctx, "b", RoomJoinInput{Host: host, RoomID: room, Role: "moderator", Reason: "drafts"}))
			if r.Status != "approval_required" {
				t.Fatalf("join: %+v", r)
			}
			id := joinRequestID(t, r)
			l := must[*JoinRequestsListResult](t)(alice.JoinRequestsList(ctx, JoinRequestsListInput{RoomID: room}))
			if len(l.JoinRequests) != 1 {
				t.Fatalf("alice sees %d join requests", len(l.JoinRequests))
			}
			must[*RecordResult](t)(alice.Review(ctx, "a", JoinReviewInput{RoomID: room, RequestID: id, Decision: "approve", Role: "moderator"}))
			r = must[*RoomJoinResult](t)(bob.Join(ctx, "b", RoomJoinInput{Host: host, RoomID: room, Role: "moderator"}))
			if r.Status != "joined" || r.Member == nil || r.Member.Role != "moderator" {
				t.Fatalf("after the review: %+v", r)
			}
			if joinedByRecord := len(r.Record) > 0; joinedByRecord != (tc.draft == adp.Draft20260704) {
				t.Fatalf("the %s draft's join after review signed a room.join: %v", tc.draft, joinedByRecord)
			}

			// Messages both ways; bob reads alice's.
			say(t, alice, room, "hello bob")
			must[*RoomStateResult](t)(bob.RoomState(ctx, "b", RoomStateInput{RoomID: room, Refresh: true}))
			tl := must[*TimelineResult](t)(bob.Timeline(ctx, "b", TimelineInput{RoomID: room}))
			if n := len(tl.Items); n == 0 || tl.Items[n-1].Type != adp.TypeMessageCreate || tl.Items[n-1].Actor != testKey(t, "alice").AgentID().String() {
				t.Fatalf("bob's timeline: %+v", tl.Items)
			}
			if w := say(t, bob, room, "hello alice"); w.Status != StatusSent {
				t.Fatalf("bob's message: %+v", w)
			}

			// Another message after what bob saw: his message and his
			// control write are stale only in the seed.
			say(t, alice, room, "a message")
			w := must[*WriteResult](t)(bob.SendMessage(ctx, "b", SendMessageInput{RoomID: room, Content: "on what I saw"}))
			if held := w.Status == StatusHeld; held != tc.staleAfterMessage {
				t.Fatalf("a message after another agent's message: %s", w.Status)
			}
			must[*RoomStateResult](t)(bob.RoomState(ctx, "b", RoomStateInput{RoomID: room, Refresh: true}))
			say(t, alice, room, "another message")
			w = must[*WriteResult](t)(bob.SubmitEvent(ctx, "b", SubmitEventInput{RoomID: room, Type: "task.lock", Payload: []byte(`{"task":"b"}`)}))
			if held := w.Status == StatusHeld; held != tc.staleAfterMessage {
				t.Fatalf("a control write after another agent's message: %s", w.Status)
			}
			// A control write moves the head: both are stale in both drafts.
			must[*RoomStateResult](t)(bob.RoomState(ctx, "b", RoomStateInput{RoomID: room, Refresh: true}))
			must[*RoomStateResult](t)(alice.RoomState(ctx, "a", RoomStateInput{RoomID: room, Refresh: true}))
			if w := must[*WriteResult](t)(alice.SubmitEvent(ctx, "a", SubmitEventInput{RoomID: room, Type: "task.lock", Payload: []byte(`{"task":"a"}`)})); w.Status != StatusSent {
				t.Fatalf("alice's control write: %+v", w)
			}
			if w := must[*WriteResult](t)(bob.SendMessage(ctx, "b", SendMessageInput{RoomID: room, Content: "late", OnHeadMismatch: OnMismatchReject})); w.Status == StatusSent {
				t.Fatalf("a message on a head a control write moved: %s", w.Status)
			}

			// A public room: an observer joins directly (seed §10.2; the
			// 2026-09-24 draft's default open role, §9.2).
			pub := createRoom(t, alice, host)
			carol := openTest(t, t.TempDir(), testKey(t, "carol"), host, func(o *Options) { o.NoSubscribe = true })
			defer carol.Close()
			if r := must[*RoomJoinResult](t)(carol.Join(ctx, "c", RoomJoinInput{Host: host, RoomID: pub, Role: "observer"})); r.Status != "joined" || len(r.Record) == 0 {
				t.Fatalf("an observer's join of a public room: %+v", r)
			}

			// A restart with the host down: the draft is the stored one.
			bob.Close()
			down := &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, errors.New("host down") })}
			bob = openTest(t, bobDir, testKey(t, "bob"), host, func(o *Options) { o.NoSubscribe, o.HTTPClient = true, down })
			defer bob.Close()
			if d, ok := bob.hosts[host].client.KnownDraft(); !ok || d != tc.draft {
				t.Fatalf("after a restart bob's client speaks the %v draft (%v)", d, ok)
			}
			tl = must[*TimelineResult](t)(bob.Timeline(ctx, "b", TimelineInput{RoomID: room}))
			if len(tl.Items) < 4 {
				t.Fatalf("bob's timeline after a restart: %+v", tl.Items)
			}
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// t0ms is the engine's clock in Unix milliseconds.
func t0ms(e *Engine) int64 { return e.now().UnixMilli() }
