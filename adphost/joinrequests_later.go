package adphost

import (
	"context"
	"net/http"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/tmaxmax/go-sse"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
)

// createSignedJoinRequest is POST /v1/rooms/{room_id}/join-requests in the
// 2026-09-24 draft (§10): the body is the applicant's signed
// room.join.request, verified as a live write (hash, signature, window,
// nonce) with no request JWT. The host holds it, pending, until a
// room.join.review embedding it decides it; a banned applicant's request
// is held too, and none is approved without a review. A new request
// supersedes the applicant's pending one in the room, which becomes
// expired. An exact resubmission answers with the held request.
//
// The request is not a record, but it is a live write: the Store holds it
// and advances the applicant's nonce in one step (Store.HoldJoinRequest),
// so that another process on the same Store, or this one after a
// restart, refuses an envelope of the applicant whose nonce is not
// greater (nonce_not_greater), while the exact same request finds its
// held copy and is answered with it.
func (h *Host) createSignedJoinRequest(w http.ResponseWriter, r *http.Request) {
	env, ev, err := h.readEnvelope(r)
	if err == nil {
		switch {
		case ev.Type != adp.TypeRoomJoinRequest:
			err = identity.Errorf(identity.CodeInvalidEvent, "POST …/join-requests takes a room.join.request, not %s", clip(ev.Type))
		case ev.RoomID != r.PathValue("room_id"):
			err = identity.Errorf(identity.CodeInvalidEvent, "event room_id %q is not the room of the path", clip(ev.RoomID))
		}
	}
	var hr *hostRoom
	if err == nil {
		hr, err = h.lookup(r.Context(), ev.RoomID)
	}
	var held *adp.JoinRequestResource
	if err == nil {
		held, err = h.store.JoinRequest(r.Context(), hr.id, env.Hash().String())
	}
	if err != nil {
		writeError(w, err)
		return
	}
	if held != nil && held.Signed != nil && env.Hash() == held.Signed.Hash() {
		writeJSON(w, http.StatusOK, signedView(h.effective(held)))
		return
	}
	var jr *adp.JoinRequestResource
	_, err = h.verifier.AcceptEnvelope(r.Context(), env, func(ctx context.Context, env *envelope.Envelope) error {
		now := h.now()
		if _, _, err := h.checkNonce(ctx, ev, now.UnixMilli()); err != nil {
			return err
		}
		// Charged once the signature verified: a forged request cannot
		// burn its claimed applicant's quota.
		if err := h.take(ctx, rateKey{agent: ev.Actor, class: "join-request"}, h.limits.JoinRequests, now); err != nil {
			return err
		}
		room := hr.current()
		p, err := room.CheckJoinRequest(ctx, env, now)
		if err != nil {
			return hiddenOr(room, hr.id, ev.Actor, err)
		}
		if err := h.checkPending(r, hr.id, now); err != nil {
			return err
		}
		if err := h.supersede(ctx, hr.id, ev.Actor); err != nil {
			return err
		}
		exp := now.Add(h.jrTTL).UnixMilli()
		if end := room.Contract().EndTime; end > now.UnixMilli() && end < exp {
			exp = end // §10: not past the room's end_time
		}
		jr = &adp.JoinRequestResource{
			Request: adp.JoinRequest{
				ID: env.Hash().String(), RoomID: hr.id, Applicant: ev.Actor, Role: p.Role, Perspective: p.Perspective,
				Reason: p.Reason, CreatedAt: now.UnixMilli(), ExpiresAt: exp, Extra: p.Extra,
			},
			Status: adp.JoinPending,
			Signed: env,
		}
		if jr.Request.Extra == nil {
			jr.Request.Extra = jsontext.Value("{}")
		}
		return h.store.HoldJoinRequest(ctx, jr, h.nonceAdvance(ev, now))
	})
	if err != nil {
		writeError(w, err)
		return
	}
	hr.mu.Lock()
	h.publishJoinRequest(hr, jr)
	hr.mu.Unlock()
	writeJSON(w, http.StatusCreated, signedView(jr))
}

// supersede marks applicant's pending requests in the room expired: a new
// request supersedes them (2026-09-24 §10).
func (h *Host) supersede(ctx context.Context, roomID string, applicant identity.AgentID) error {
	list, err := h.applicantRequests(ctx, roomID, applicant)
	if err != nil {
		return err
	}
	for _, jr := range list {
		if h.effective(jr).Status != adp.JoinPending {
			continue
		}
		c := *jr
		c.Status = adp.JoinExpired
		if err := h.store.PutJoinRequest(ctx, &c); err != nil {
			return err
		}
	}
	return nil
}

// signedView is a held 2026-09-24 request in the draft's resource shape.
func signedView(jr *adp.JoinRequestResource) *adp.SignedJoinRequestResource {
	v := &adp.SignedJoinRequestResource{
		Request: jr.Signed, Status: jr.Status, ExpiresAt: jr.Request.ExpiresAt,
		ReviewedBy: jr.ReviewedBy, ReviewEventID: jr.ReviewEventID,
	}
	if jr.Signed != nil {
		v.ID = jr.Signed.Hash()
	}
	if jr.ReviewedBy != nil {
		at := jr.ReviewedAt
		v.ReviewedAt = &at
	}
	return v
}

// joinView is jr as the host's draft shows it.
func (h *Host) joinView(jr *adp.JoinRequestResource) any {
	if h.laterDraft() {
		return signedView(jr)
	}
	return jr
}

// joinRequestNotice is the data of a room.join_request SSE item: the
// seed's has created_at, the 2026-09-24 draft's does not (§16.5), and its
// request_id is the request's event ID.
func (h *Host) joinRequestNotice(jr *adp.JoinRequestResource) *sse.Message {
	q := jr.Request
	var b []byte
	var err error
	if h.laterDraft() {
		b, err = json.Marshal(struct {
			RoomID    string           `json:"room_id"`
			RequestID string           `json:"request_id"`
			Applicant identity.AgentID `json:"applicant"`
			Role      adp.Role         `json:"role"`
			ExpiresAt int64            `json:"expires_at"`
		}{q.RoomID, q.ID, q.Applicant, q.Role, q.ExpiresAt}, json.Deterministic(true))
	} else {
		b, err = json.Marshal(adp.JoinRequestNotice{RoomID: q.RoomID, RequestID: q.ID, Applicant: q.Applicant, Role: q.Role,
			CreatedAt: q.CreatedAt, ExpiresAt: q.ExpiresAt}, json.Deterministic(true))
	}
	if err != nil {
		return nil
	}
	m := &sse.Message{Type: sse.Type(adp.SSEJoinRequest)}
	m.AppendData(string(b))
	return m
}
