package adphost_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
)

// FuzzHostBodies throws hostile bodies at every endpoint that takes one:
// the host answers with an error body (never 5xx, never a panic) or
// accepts.
func FuzzHostBodies(f *testing.F) { fuzzHostBodies(f, adp.Draft20260704) }

// FuzzHostBodiesLater is FuzzHostBodies on a host of the 2026-09-24
// draft, whose join-requests endpoint takes a signed room.join.request.
func FuzzHostBodiesLater(f *testing.F) { fuzzHostBodies(f, adp.Draft20260924) }

func fuzzHostBodies(f *testing.F, d adp.Draft) {
	c := newClock()
	origin := identity.MustParseOrigin("https://fuzz.example")
	h, err := adphost.New(context.Background(), &adphost.Options{Origin: origin, Draft: d, Now: c.Now, RateLimits: adphost.Unlimited(), Heartbeat: -1})
	if err != nil {
		f.Fatal(err)
	}
	ctx := context.Background()
	author := key("fuzz")
	a := &envelope.Author{Signer: author, Nonces: identity.NewNonceSource(&identity.NonceOptions{Now: c.Now}), Now: c.Now}
	spec := roomSpec(f, adp.VisibilityPublic, "fuzz")
	if d == adp.Draft20260924 {
		spec.Host, spec.Types = origin.String(), nil
	}
	create, err := adp.NewRoomCreateIn(ctx, a, d, spec)
	if err != nil {
		f.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/rooms", bytes.NewReader(create.AppendJSON(nil))))
	var cr adp.CreateResponse
	if rec.Code != http.StatusCreated || json.Unmarshal(rec.Body.Bytes(), &cr) != nil {
		f.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	msg, err := adp.NewMessage(ctx, a, adp.Base{RoomID: cr.ID, Seq: 1, Hash: cr.Hash, Draft: d}, text("hi"))
	if err != nil {
		f.Fatal(err)
	}
	if d == adp.Draft20260924 {
		other := &envelope.Author{Signer: key("applicant"), Nonces: identity.NewNonceSource(&identity.NonceOptions{Now: c.Now}), Now: c.Now}
		req, err := adp.NewJoinRequest(ctx, other, d, cr.ID, adp.JoinRequestPayload{Role: adp.RoleSpeaker})
		if err != nil {
			f.Fatal(err)
		}
		review, err := adp.NewSignedJoinReview(ctx, a, adp.Base{RoomID: cr.ID, Seq: 1, Hash: cr.Hash, Draft: d},
			adp.SignedJoinReview{Request: req, Decision: adp.DecisionApprove, Role: adp.RoleSpeaker})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(2), req.AppendJSON(nil))
		f.Add(uint8(1), review.AppendJSON(nil))
	}
	f.Add(uint8(0), create.AppendJSON(nil))
	f.Add(uint8(1), msg.AppendJSON(nil))
	f.Add(uint8(2), []byte(`{"role":"speaker","reason":"r","extra":{}}`))
	f.Add(uint8(3), []byte(`{"state":"idle","expires_at":1}`))
	f.Add(uint8(1), []byte(`{"hash":1}`))
	paths := []struct{ method, path string }{
		{http.MethodPost, "/v1/rooms"},
		{http.MethodPost, "/v1/rooms/" + cr.ID},
		{http.MethodPost, "/v1/rooms/" + cr.ID + "/join-requests"},
		{http.MethodPut, "/v1/rooms/" + cr.ID + "/agent-status"},
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		p := paths[int(which)%len(paths)]
		req := httptest.NewRequest(p.method, p.path, bytes.NewReader(body))
		tok, err := identity.MintRequestToken(ctx, author, origin, &identity.MintOptions{Now: c.Now})
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s answered %d: %s", p.method, p.path, rec.Code, rec.Body)
		}
		if rec.Code >= 400 && identity.ReadError(rec.Result()) == nil {
			t.Fatalf("error answer without an error: %d", rec.Code)
		}
	})
}
