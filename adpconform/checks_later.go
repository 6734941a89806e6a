package adpconform

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/archive"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/packs"
)

// laterChecks are the checks of the 2026-09-24 draft in report order: by
// its §22 item (1 to 11), then the recommendations.
// They speak that draft over raw HTTP (the SDK's client speaks the seed):
// signed events through the agents' authors, answers parsed as that
// draft's records and documents.
var laterChecks = []Check{
	{ID: "envelope.resubmission", Item: 1, Section: "§15, §21, §22", Level: MUST,
		Title: "an exact resubmission is answered with the original record", run: checkLaterResubmission},
	{ID: "envelope.signature", Item: 1, Section: "§5, §22", Level: MUST,
		Title: "an envelope whose signature does not verify is refused with invalid_signature", run: checkLaterSignature},
	{ID: "envelope.hash", Item: 1, Section: "§5, §22, Identity §3.1", Level: MUST,
		Title: "an envelope whose hash is not its event's is refused with invalid_event_hash", run: checkForgedHash},
	{ID: "envelope.jcs", Item: 1, Section: "§5, Identity §4", Level: MUST,
		Title: "the event hash is over the JCS form: a non-canonical spelling is accepted, a hash over its bytes is invalid_event_hash", run: checkJCS},
	{ID: "envelope.duplicate-member", Item: 1, Section: "§5, §22, Identity §4.1", Level: MUST,
		Title: "an event with a duplicate member is refused with invalid_event (strict I-JSON)", run: checkDuplicate},
	{ID: "envelope.unsafe-integer", Item: 1, Section: "§5, §22, Identity §4.1", Level: MUST,
		Title: "an event with an integer beyond 2^53-1 is refused with invalid_event (strict I-JSON)", run: checkUnsafeInteger},
	{ID: "envelope.closed", Item: 1, Section: "§5, §22", Level: MUST,
		Title: "an event with an unknown top-level member is refused with invalid_event (closed events)", run: checkClosed},
	{ID: "envelope.actor", Item: 1, Section: "§5, §22, Identity §3", Level: MUST,
		Title: "an event whose actor is no Agent ID is refused with invalid_actor", run: checkActor},
	{ID: "envelope.room-id", Item: 1, Section: "§15, §21, §22", Level: MUST,
		Title: "an event signed for one room and posted to another is refused and recorded in neither", run: checkLaterRoomID},
	{ID: "envelope.window", Item: 1, Section: "§21, §22, Identity §6.1", Level: MUST,
		Title: "an event created an hour before or after now is refused with timestamp_out_of_window", run: checkLaterWindow},
	{ID: "envelope.nonce", Item: 1, Section: "§10, §21, §22, Identity §6.1", Level: MUST,
		Title: "a write or join request whose nonce is not greater than the actor's accepted one is refused with nonce_not_greater and Max-Seen-Nonce", run: checkLaterNonce},
	{ID: "create.host-binding", Item: 2, Section: "§8.1, §19, §21", Level: MUST,
		Title: "room.create naming another host is refused with host_mismatch; naming this one creates the room", run: checkLaterHostBinding},
	{ID: "join.open-role", Item: 3, Section: "§8.3, §9.2", Level: MUST,
		Title: "room.join takes an open role directly; a role neither open nor invited is approval_required", run: checkLaterOpenRole},
	{ID: "join.invite", Item: 3, Section: "§8.3, §9.2, §15", Level: MUST,
		Title: "an invited agent reads the private room's resource and joins it with its invited role", run: checkLaterInvite},
	{ID: "join.signed-request", Item: 3, Section: "§10", Level: MUST,
		Title: "a signed room.join.request is held pending; the review embedding it makes the applicant a member; a second review is join_request_not_pending", run: checkLaterSignedJoin},
	{ID: "types.conflict", Item: 5, Section: "§12.4, §19", Level: MUST,
		Title: "a type.define changing a type's kind is refused with type_conflict", run: checkLaterTypeConflict},
	{ID: "types.schema-profile", Item: 5, Section: "§12.3.1, §19", Level: MUST,
		Title: "a type schema outside the type schema profile (a pattern that is no I-Regexp) is refused with invalid_type_schema", run: checkLaterSchemaProfile},
	{ID: "types.payload", Item: 5, Section: "§12.6, §19", Level: MUST,
		Title: "a custom payload its type's schema refuses is payload_schema_violation", run: checkLaterPayload},
	{ID: "freshness.message-on-head", Item: 6, Section: "§5.1", Level: MUST,
		Title: "two messages based on the same head are both accepted and do not move it", run: checkLaterMessagesOnHead},
	{ID: "freshness.control-first-wins", Item: 6, Section: "§5.1", Level: MUST,
		Title: "of two control writes based on the same head the first is accepted and moves it, the second is room_head_mismatch", run: checkLaterControlFirstWins},
	{ID: "freshness.anchor", Item: 6, Section: "§5.1, §19", Level: MUST,
		Title: "a write whose base names no accepted record is refused with base_record_mismatch", run: checkLaterAnchor},
	{ID: "freshness.stale-base", Item: 6, Section: "§5.1, §19, §21", Level: MUST,
		Title: "a message based before the head is room_head_mismatch; a base naming another room's record is base_record_mismatch", run: checkLaterStaleBase},
	{ID: "permissions.observer", Item: 7, Section: "§13", Level: MUST,
		Title: "an observer's message.create is refused with permission_denied", run: checkLaterObserver},
	{ID: "states.closed", Item: 8, Section: "§7, §13, §19", Level: MUST,
		Title: "a message to a closed room is refused with room_not_active", run: checkLaterClosed},
	{ID: "records.chain", Item: 9, Section: "§14, §15", Level: MUST,
		Title: "the history is an Identity list of records with accepted_at, each hash right and linked to the one before", run: checkLaterChain},
	{ID: "archive.manifest", Item: 10, Section: "§18", Level: MUST,
		Title: "an ended room's archive is a manifest committed by last_hash and a JSONL record log that verify", run: checkLaterArchive},
	{ID: "live.membership", Item: 11, Section: "§16.1", Level: MUST,
		Title: "a non-member cannot subscribe; a member's stream delivers nothing accepted after it left", run: checkLaterLive},
	{ID: "discovery.document", Section: "§15.1", Level: SHOULD,
		Title: "the discovery document is an Agent Identity document whose service is the host origin, with rooms and my_rooms", run: checkLaterDiscovery},
	{ID: "discovery.public-rooms", Section: "§17", Level: SHOULD,
		Title: "GET /v1/rooms lists public and restricted rooms as room resources, never private ones", run: checkLaterPublicRooms},
	{ID: "me.rooms", Section: "§15", Level: SHOULD,
		Title: "GET /v1/me/rooms lists the rooms that invite the agent", run: checkLaterMyRooms},
	{ID: "status.shapes", Section: "§16.4", Level: SHOULD,
		Title: "a status write answers the stored status, and the room's statuses are an Identity list", run: checkLaterStatus},
	{ID: "privacy.reads", Section: "§15, §21", Level: MUST,
		Title: "a private room's resource and history are hidden from an outsider (room_not_found); a restricted room's history is refused to a non-member", run: checkLaterPrivacy},
}

var later = adp.Draft20260924

// laterRoom creates an active room of the 2026-09-24 draft bound to the
// target (start now, end in an hour) and returns its creator, ID and head.
func (k *kit) laterRoom(ctx context.Context, t *T, purpose string, vis adp.Visibility, edit func(*adp.RoomCreate)) (*agent, string, adp.RecordRef) {
	a := k.creator(t)
	p := adp.RoomCreate{Host: k.origin.String(), Topic: k.topic(purpose), Visibility: vis, StartTime: k.now(), EndTime: k.now() + time.Hour.Milliseconds()}
	if edit != nil {
		edit(&p)
	}
	env, err := adp.NewRoomCreateIn(ctx, a.Author(), later, p)
	t.ok(err, "sign a room.create")
	ans := k.post(ctx, t, "", env.AppendJSON(nil))
	t.ok(ans.err(), "create a "+string(vis)+" room ("+purpose+")")
	var cr struct {
		ID   string        `json:"id"`
		Seq  int64         `json:"seq"`
		Hash envelope.Hash `json:"hash"`
	}
	if err := json.Unmarshal(ans.body, &cr, json.RejectUnknownMembers(false)); err != nil || cr.ID == "" || cr.Seq != 1 {
		t.Fatalf("the room.create answer has no id, seq 1 and hash: %s", short(ans.body))
	}
	return a, cr.ID, adp.RecordRef{Seq: cr.Seq, Hash: cr.Hash}
}

// laterSign signs an event of typ in room, based on base, as a.
func (a *agent) laterSign(ctx context.Context, t *T, typ, room string, base adp.RecordRef, payload string) *envelope.Envelope {
	return a.sign(ctx, t, typ, &adp.Base{RoomID: room, Seq: base.Seq, Hash: base.Hash}, jsontext.Value(payload))
}

// laterWrite posts env to room and requires a record of the draft back.
func (k *kit) laterWrite(ctx context.Context, t *T, room string, env *envelope.Envelope, what string) *adp.Record {
	ans := k.post(ctx, t, room, env.AppendJSON(nil))
	t.ok(ans.err(), what)
	rec, err := adp.ParseRecordIn(later, ans.body)
	if err != nil {
		t.Fatalf("%s: the answer is no 2026-09-24 record: %v", what, err)
	}
	if rec.EventHash() != env.Hash() || rec.RoomID != room {
		t.Fatalf("%s: the answer is the record of another event", what)
	}
	return rec
}

// laterRefused posts env to path and requires the refusal code.
func (k *kit) laterRefused(ctx context.Context, t *T, room string, env *envelope.Envelope, code identity.Code, what string) {
	t.refused(k.post(ctx, t, room, env.AppendJSON(nil)).err(), code, what)
}

// getJSON reads path (as s, when set) into out.
func (k *kit) getJSON(ctx context.Context, t *T, path string, s identity.Signer, out any) *answer {
	tok := ""
	if s != nil {
		tok = k.token(ctx, t, s, k.origin, nil)
	}
	ans, err := k.do(ctx, http.MethodGet, path, nil, tok, nil)
	t.ok(err, "GET "+path)
	t.ok(ans.err(), "GET "+path)
	if out != nil {
		if err := json.Unmarshal(ans.body, out, json.RejectUnknownMembers(false)); err != nil {
			t.Fatalf("GET %s: %v: %s", path, err, short(ans.body))
		}
	}
	return ans
}

// head reads the room resource's head.
func (k *kit) laterHead(ctx context.Context, t *T, room string, s identity.Signer) adp.RecordRef {
	var res struct {
		Head       *adp.RecordRef `json:"head"`
		AcceptedAt *int64         `json:"accepted_at"`
	}
	k.getJSON(ctx, t, "/v1/rooms/"+room, s, &res)
	if res.Head == nil || res.AcceptedAt == nil {
		t.Fatalf("the room resource has no head or no accepted_at")
	}
	return *res.Head
}

func checkLaterResubmission(ctx context.Context, t *T) {
	a, room, head := t.k.laterRoom(ctx, t, "resubmission", adp.VisibilityPublic, nil)
	env := a.laterSign(ctx, t, adp.TypeMessageCreate, room, head, `{"content_type":"text/plain","content":"once"}`)
	first := t.k.laterWrite(ctx, t, room, env, "a message")
	again := t.k.laterWrite(ctx, t, room, env, "the same message again")
	if again.Seq != first.Seq || again.Hash != first.Hash || again.ReceivedAt != first.ReceivedAt {
		t.Fatalf("the resubmission was answered with seq %d, not the original record %d", again.Seq, first.Seq)
	}
}

func checkLaterSignature(ctx context.Context, t *T) {
	a, room, head := t.k.laterRoom(ctx, t, "signature", adp.VisibilityPublic, nil)
	env := a.laterSign(ctx, t, adp.TypeMessageCreate, room, head, `{"content_type":"text/plain","content":"signed"}`)
	other := a.laterSign(ctx, t, adp.TypeMessageCreate, room, head, `{"content_type":"text/plain","content":"other"}`)
	// env's event and hash with another event's signature.
	var w map[string]jsontext.Value
	t.ok(json.Unmarshal(env.AppendJSON(nil), &w), "decode the envelope")
	var o map[string]jsontext.Value
	t.ok(json.Unmarshal(other.AppendJSON(nil), &o), "decode the envelope")
	w["signature"] = o["signature"]
	b, err := json.Marshal(w, json.Deterministic(true))
	t.ok(err, "encode the envelope")
	t.refused(t.k.post(ctx, t, room, b).err(), identity.CodeInvalidSignature, "a message whose signature is another event's")
}

func checkLaterHostBinding(ctx context.Context, t *T) {
	a := t.k.creator(t)
	p := adp.RoomCreate{Host: "https://elsewhere.invalid", Topic: t.k.topic("host binding"), Visibility: adp.VisibilityPublic,
		StartTime: t.k.now(), EndTime: t.k.now() + time.Hour.Milliseconds()}
	env, err := adp.NewRoomCreateIn(ctx, a.Author(), later, p)
	t.ok(err, "sign a room.create")
	t.refused(t.k.post(ctx, t, "", env.AppendJSON(nil)).err(), adp.CodeHostMismatch, "a room.create naming another host")
	c, room, head := t.k.laterRoom(ctx, t, "host binding", adp.VisibilityPublic, nil)
	// The creator is a member: it writes at once.
	t.k.laterWrite(ctx, t, room, c.laterSign(ctx, t, adp.TypeMessageCreate, room, head, `{"content_type":"text/plain","content":"creator"}`), "the creator's message")
}

func checkLaterOpenRole(ctx context.Context, t *T) {
	_, room, head := t.k.laterRoom(ctx, t, "open role", adp.VisibilityPublic, func(p *adp.RoomCreate) {
		p.Policy = &adp.Policy{OpenRoles: []adp.Role{adp.RoleObserver}}
	})
	a := t.k.newAgent(t)
	t.k.laterRefused(ctx, t, room, a.laterSign(ctx, t, adp.TypeRoomJoin, room, head, `{"role":"speaker"}`), adp.CodeApprovalRequired,
		"room.join as speaker, a role the policy does not open")
	t.k.laterWrite(ctx, t, room, a.laterSign(ctx, t, adp.TypeRoomJoin, room, head, `{"role":"observer"}`), "room.join as observer, an open role")
}

func checkLaterInvite(ctx context.Context, t *T) {
	guest, outsider := t.k.newAgent(t), t.k.newAgent(t)
	_, room, head := t.k.laterRoom(ctx, t, "invite", adp.VisibilityPrivate, func(p *adp.RoomCreate) {
		p.Policy = &adp.Policy{Invites: map[identity.AgentID]adp.Role{guest.AgentID(): adp.RoleSpeaker}, OpenRoles: []adp.Role{}}
	})
	k := t.k
	k.getJSON(ctx, t, "/v1/rooms/"+room, guest.key, nil)
	t.k.laterRefused(ctx, t, room, outsider.laterSign(ctx, t, adp.TypeRoomJoin, room, head, `{"role":"speaker"}`), adp.CodeApprovalRequired,
		"an outsider's room.join to a private room")
	t.k.laterRefused(ctx, t, room, guest.laterSign(ctx, t, adp.TypeRoomJoin, room, head, `{"role":"moderator"}`), adp.CodeApprovalRequired,
		"an invited agent's room.join with another role than its invitation's")
	t.k.laterWrite(ctx, t, room, guest.laterSign(ctx, t, adp.TypeRoomJoin, room, head, `{"role":"speaker"}`), "the invited agent's room.join")
}

// laterApplied creates a restricted room that opens no role and submits a
// fresh agent's signed room.join.request for speaker to it, which the host
// must take; it returns the room's creator, ID and head, the applicant,
// its request and the answer.
func (k *kit) laterApplied(ctx context.Context, t *T, purpose string) (c *agent, room string, head adp.RecordRef, app *agent, req *envelope.Envelope, ans *answer) {
	c, room, head = k.laterRoom(ctx, t, purpose, adp.VisibilityRestricted, func(p *adp.RoomCreate) {
		p.Policy = &adp.Policy{OpenRoles: []adp.Role{}}
	})
	app = k.newAgent(t)
	req, err := adp.NewJoinRequest(ctx, app.Author(), later, room, adp.JoinRequestPayload{Role: adp.RoleSpeaker})
	t.ok(err, "sign a room.join.request")
	ans = k.postJoinRequest(ctx, t, room, req)
	t.ok(ans.err(), "submit a signed room.join.request without a request JWT")
	return c, room, head, app, req, ans
}

// postJoinRequest posts env to the room's join requests, with no request
// JWT (§10).
func (k *kit) postJoinRequest(ctx context.Context, t *T, room string, env *envelope.Envelope) *answer {
	path := "/v1/rooms/" + room + "/join-requests"
	ans, err := k.do(ctx, http.MethodPost, path, env.AppendJSON(nil), "", nil)
	t.ok(err, "POST "+path)
	return ans
}

func checkLaterSignedJoin(ctx context.Context, t *T) {
	k := t.k
	c, room, head, app, req, ans := k.laterApplied(ctx, t, "signed join")
	path := "/v1/rooms/" + room + "/join-requests"
	var jr adp.SignedJoinRequestResource
	if err := json.Unmarshal(ans.body, &jr, json.RejectUnknownMembers(false)); err != nil {
		t.Fatalf("the join request resource: %v: %s", err, short(ans.body))
	}
	if jr.ID != req.Hash() || jr.Status != adp.JoinPending || jr.Request == nil || jr.Request.Hash() != req.Hash() {
		t.Fatalf("the join request is not held pending under its event ID: %s", short(ans.body))
	}
	var list identity.List[adp.SignedJoinRequestResource]
	k.getJSON(ctx, t, path, c.key, &list)
	found := false
	for _, x := range list.Result {
		found = found || x.ID == req.Hash()
	}
	if !found {
		t.Fatalf("the creator's list of join requests does not hold the request")
	}
	review := fmt.Sprintf(`{"request":%s,"decision":"approve","role":"speaker"}`, req.AppendJSON(nil))
	rec := k.laterWrite(ctx, t, room, c.laterSign(ctx, t, adp.TypeRoomJoinReview, room, head, review), "the review approving the request")
	k.getJSON(ctx, t, path+"/"+req.Hash().String(), app.key, &jr)
	if jr.Status != adp.JoinApproved || jr.ReviewEventID == nil || *jr.ReviewEventID != rec.EventHash() {
		t.Fatalf("the reviewed request does not read approved with the review's event ID")
	}
	k.laterRefused(ctx, t, room, c.laterSign(ctx, t, adp.TypeRoomJoinReview, room, head, review), adp.CodeJoinRequestNotPending, "a second review of the request")
	k.laterWrite(ctx, t, room, app.laterSign(ctx, t, adp.TypeMessageCreate, room, head, `{"content_type":"text/plain","content":"admitted"}`),
		"the approved applicant's message (the review made it a member)")
}

func checkLaterMessagesOnHead(ctx context.Context, t *T) {
	k := t.k
	c, room, head := k.laterRoom(ctx, t, "messages on one head", adp.VisibilityPublic, nil)
	for i := range 2 {
		k.laterWrite(ctx, t, room, c.laterSign(ctx, t, adp.TypeMessageCreate, room, head,
			fmt.Sprintf(`{"content_type":"text/plain","content":"on the head %d"}`, i)), "a message based on the head")
	}
	if got := k.laterHead(ctx, t, room, nil); got != head {
		t.Fatalf("two messages moved the head from %d to %d", head.Seq, got.Seq)
	}
}

// laterControl is a control type declared at room.create.
const laterControl = `{"type":"conform.lock","kind":"control","title":"Lock","schema":{"type":"object"}}`

func checkLaterControlFirstWins(ctx context.Context, t *T) {
	k := t.k
	d, err := later.ParseDeclaration([]byte(laterControl))
	t.ok(err, "declare a control type")
	c, room, head := k.laterRoom(ctx, t, "control first wins", adp.VisibilityPublic, func(p *adp.RoomCreate) { p.Types = []packs.Declaration{d} })
	first := k.laterWrite(ctx, t, room, c.laterSign(ctx, t, "conform.lock", room, head, `{"n":1}`), "the first control write on the head")
	k.laterRefused(ctx, t, room, c.laterSign(ctx, t, "conform.lock", room, head, `{"n":2}`), adp.CodeRoomHeadMismatch,
		"a second control write on the same, now former, head")
	if got := k.laterHead(ctx, t, room, nil); got.Seq != first.Seq || got.Hash != first.Hash {
		t.Fatalf("the head is %d after the first control write, not %d", got.Seq, first.Seq)
	}
}

func checkLaterAnchor(ctx context.Context, t *T) {
	c, room, _ := t.k.laterRoom(ctx, t, "anchor", adp.VisibilityPublic, nil)
	bogus := adp.RecordRef{Seq: 1, Hash: envelope.Sum([]byte("no record"))}
	t.k.laterRefused(ctx, t, room, c.laterSign(ctx, t, adp.TypeMessageCreate, room, bogus, `{"content_type":"text/plain","content":"x"}`),
		adp.CodeBaseRecordMismatch, "a message whose base_hash names no record")
	t.k.laterRefused(ctx, t, room, c.laterSign(ctx, t, adp.TypeRoomLeave, room, bogus, `{}`),
		adp.CodeBaseRecordMismatch, "a signal whose base_hash names no record")
}

// laterRecords reads a room's whole history as s.
func (k *kit) laterRecords(ctx context.Context, t *T, room string, s identity.Signer) ([]*adp.Record, []byte) {
	var recs []*adp.Record
	var jsonl bytes.Buffer
	path := "/v1/rooms/" + room + "/events?limit=1000"
	for range 100 {
		var page identity.List[jsontext.Value]
		k.getJSON(ctx, t, path, s, &page)
		for _, b := range page.Result {
			rec, err := adp.ParseRecordIn(later, bytes.Clone(b))
			if err != nil {
				t.Fatalf("a record of the history: %v", err)
			}
			recs = append(recs, rec)
			jsonl.Write(b)
			jsonl.WriteByte('\n')
		}
		if page.NextCursor == "" {
			return recs, jsonl.Bytes()
		}
		path = "/v1/rooms/" + room + "/events?limit=1000&cursor=" + url.QueryEscape(page.NextCursor)
	}
	t.Fatalf("the history did not end within 100 pages")
	return nil, nil
}

func checkLaterChain(ctx context.Context, t *T) {
	k := t.k
	c, room, head := k.laterRoom(ctx, t, "chain", adp.VisibilityPublic, nil)
	for i := range 3 {
		k.laterWrite(ctx, t, room, c.laterSign(ctx, t, adp.TypeMessageCreate, room, head, fmt.Sprintf(`{"content_type":"text/plain","content":"%d"}`, i)), "a message")
	}
	recs, _ := k.laterRecords(ctx, t, room, nil)
	if len(recs) != 4 {
		t.Fatalf("the history holds %d records, want 4", len(recs))
	}
	for i, rec := range recs {
		if err := rec.CheckHash(); err != nil {
			t.Fatalf("record %d: %v", rec.Seq, err)
		}
		if i > 0 {
			if err := adp.CheckLink(recs[i-1], rec); err != nil {
				t.Fatalf("record %d: %v", rec.Seq, err)
			}
		}
	}
}

func checkLaterArchive(ctx context.Context, t *T) {
	k := t.k
	c, room, head := k.laterRoom(ctx, t, "archive", adp.VisibilityPublic, nil)
	msg := k.laterWrite(ctx, t, room, c.laterSign(ctx, t, adp.TypeMessageCreate, room, head, `{"content_type":"text/plain","content":"to the archive"}`), "a message")
	closed := k.laterWrite(ctx, t, room, c.laterSign(ctx, t, adp.TypeRoomClose, room, adp.RecordRef{Seq: msg.Seq, Hash: msg.Hash}, `{}`), "room.close")
	ans := k.getJSON(ctx, t, "/v1/rooms/"+room+"/archive", nil, nil)
	m, err := archive.ParseManifestWith(ans.body, &archive.ManifestOptions{Draft: later, AllowLoopbackHTTP: k.opts.AllowLoopbackHTTP})
	if err != nil {
		t.Fatalf("the archive manifest: %v", err)
	}
	if m.LastSeq != closed.Seq || m.LastHash != closed.Hash {
		t.Fatalf("the manifest commits to seq %d, not the final record %d", m.LastSeq, closed.Seq)
	}
	jsonl, ok := m.Formats["jsonl"]
	if !ok {
		t.Fatalf("the manifest names no jsonl format")
	}
	u, err := url.Parse(jsonl)
	if err != nil || u.Scheme+"://"+u.Host != k.origin.String() {
		t.Skipf("the jsonl record log is served from another origin (%s); the kit reads only the target", short([]byte(jsonl)))
	}
	log, err := k.do(ctx, http.MethodGet, u.RequestURI(), nil, "", nil)
	t.ok(err, "GET the jsonl record log")
	t.ok(log.err(), "GET the jsonl record log")
	rep, err := archive.Verify(ctx, m, bytes.NewReader(log.body), &archive.VerifyOptions{Draft: later, AllowLoopbackHTTP: k.opts.AllowLoopbackHTTP})
	t.ok(err, "verify the archive")
	if !rep.Valid {
		t.Fatalf("the archive does not verify: %v", rep.Failure)
	}
}

func checkLaterDiscovery(ctx context.Context, t *T) {
	k := t.k
	ans, err := k.do(ctx, http.MethodGet, adp.DiscoveryPath, nil, "", nil)
	t.ok(err, "GET "+adp.DiscoveryPath)
	t.ok(ans.err(), "GET "+adp.DiscoveryPath)
	doc, err := identity.ParseDiscovery(ans.body, k.oopts)
	if err != nil {
		t.Fatalf("the discovery document: %v", err)
	}
	if doc.Protocol != adp.Protocol || doc.Service != k.origin {
		t.Fatalf("the discovery document names protocol %q and service %s, not %s and the target", doc.Protocol, doc.Service, adp.Protocol)
	}
	for _, e := range []string{"rooms", "my_rooms"} {
		if doc.Endpoints[e] == "" {
			t.Fatalf("the discovery document names no %s endpoint", e)
		}
	}
}

func checkLaterPublicRooms(ctx context.Context, t *T) {
	k := t.k
	_, restricted, _ := k.laterRoom(ctx, t, "listed restricted", adp.VisibilityRestricted, nil)
	_, private, _ := k.laterRoom(ctx, t, "listed private", adp.VisibilityPrivate, nil)
	var list identity.List[map[string]jsontext.Value]
	k.getJSON(ctx, t, "/v1/rooms?limit=100&keyword="+url.QueryEscape(k.tag), nil, &list)
	seen := map[string]bool{}
	for _, r := range list.Result {
		var id string
		json.Unmarshal(r["id"], &id)
		seen[id] = true
		if id == restricted && (r["head"] == nil || r["policy"] == nil) {
			t.Fatalf("the restricted room is listed without its room resource's head and policy")
		}
	}
	switch {
	case seen[private]:
		t.Fatalf("GET /v1/rooms lists a private room")
	case !seen[restricted]:
		t.Fatalf("GET /v1/rooms does not list a restricted room")
	}
}

// laterTyped creates a room declaring the control type conform.lock and
// returns its creator, ID and head.
func (k *kit) laterTyped(ctx context.Context, t *T, purpose string) (*agent, string, adp.RecordRef) {
	d, err := later.ParseDeclaration([]byte(laterControl))
	t.ok(err, "declare a control type")
	return k.laterRoom(ctx, t, purpose, adp.VisibilityPublic, func(p *adp.RoomCreate) { p.Types = []packs.Declaration{d} })
}

func checkLaterTypeConflict(ctx context.Context, t *T) {
	c, room, head := t.k.laterTyped(ctx, t, "type conflict")
	t.k.laterRefused(ctx, t, room, c.laterSign(ctx, t, adp.TypeTypeDefine, room, head,
		`{"type":"conform.lock","kind":"message","title":"Lock","schema":{"type":"object"}}`), adp.CodeTypeConflict, "a type.define changing conform.lock's kind")
}

func checkLaterSchemaProfile(ctx context.Context, t *T) {
	c, room, head := t.k.laterRoom(ctx, t, "schema profile", adp.VisibilityPublic, nil)
	t.k.laterRefused(ctx, t, room, c.laterSign(ctx, t, adp.TypeTypeDefine, room, head,
		`{"type":"conform.tag","kind":"signal","title":"Tag","schema":{"type":"object","properties":{"t":{"type":"string","pattern":"\\d+"}}}}`),
		adp.CodeInvalidTypeSchema, `a type.define whose schema has the pattern \d+`)
}

func checkLaterPayload(ctx context.Context, t *T) {
	c, room, head := t.k.laterTyped(ctx, t, "payload")
	def := c.laterSign(ctx, t, adp.TypeTypeDefine, room, head,
		`{"type":"conform.score","kind":"signal","title":"Score","schema":{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}}}`)
	rec := t.k.laterWrite(ctx, t, room, def, "a type.define")
	at := adp.RecordRef{Seq: rec.Seq, Hash: rec.Hash}
	t.k.laterRefused(ctx, t, room, c.laterSign(ctx, t, "conform.score", room, at, `{"n":"high"}`), adp.CodePayloadSchemaViolation,
		"a conform.score whose n is a string")
	t.k.laterWrite(ctx, t, room, c.laterSign(ctx, t, "conform.score", room, at, `{"n":3}`), "a conform.score its schema admits")
}

func checkLaterObserver(ctx context.Context, t *T) {
	_, room, head := t.k.laterRoom(ctx, t, "observer", adp.VisibilityPublic, func(p *adp.RoomCreate) {
		p.Policy = &adp.Policy{OpenRoles: []adp.Role{adp.RoleObserver}}
	})
	o := t.k.newAgent(t)
	t.k.laterWrite(ctx, t, room, o.laterSign(ctx, t, adp.TypeRoomJoin, room, head, `{"role":"observer"}`), "room.join as observer")
	t.k.laterRefused(ctx, t, room, o.laterSign(ctx, t, adp.TypeMessageCreate, room, head, `{"content_type":"text/plain","content":"x"}`),
		identity.CodePermissionDenied, "an observer's message")
}

func checkLaterClosed(ctx context.Context, t *T) {
	c, room, head := t.k.laterRoom(ctx, t, "closed", adp.VisibilityPublic, nil)
	closed := t.k.laterWrite(ctx, t, room, c.laterSign(ctx, t, adp.TypeRoomClose, room, head, `{}`), "room.close")
	t.k.laterRefused(ctx, t, room, c.laterSign(ctx, t, adp.TypeMessageCreate, room, adp.RecordRef{Seq: closed.Seq, Hash: closed.Hash},
		`{"content_type":"text/plain","content":"late"}`), adp.CodeRoomNotActive, "a message to the closed room")
}

func checkLaterLive(ctx context.Context, t *T) {
	k := t.k
	c, room, head := k.laterRoom(ctx, t, "live membership", adp.VisibilityPublic, func(p *adp.RoomCreate) {
		p.Policy = &adp.Policy{OpenRoles: []adp.Role{adp.RoleSpeaker}}
	})
	path := "/v1/rooms/" + room + "/events/live"
	outsider := k.newAgent(t)
	t.refusedAny(k.open(ctx, t, path, k.token(ctx, t, outsider.key, k.origin, nil)).err(), "a non-member's live subscription to a public room")
	m := k.newAgent(t)
	k.laterWrite(ctx, t, room, m.laterSign(ctx, t, adp.TypeRoomJoin, room, head, `{"role":"speaker"}`), "room.join as speaker")
	lctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	resp := k.stream(lctx, t, room, m)
	defer resp.Body.Close()
	k.laterWrite(ctx, t, room, m.laterSign(ctx, t, adp.TypeRoomLeave, room, head, `{}`), "room.leave")
	after := k.laterWrite(ctx, t, room, c.laterSign(ctx, t, adp.TypeMessageCreate, room, head, `{"content_type":"text/plain","content":"after"}`),
		"a message after the member left")
	for ev, err := range readStream(resp) {
		if err != nil {
			break // the stream ended, or the window closed
		}
		if ev.Type != adp.SSERoomEvent {
			continue
		}
		rec, err := adp.ParseRecordIn(later, []byte(ev.Data))
		if err != nil {
			t.Fatalf("a room.event item is no 2026-09-24 record: %v", err)
		}
		if rec.Seq >= after.Seq {
			t.Fatalf("the stream delivered record %d, accepted after its subscriber left", rec.Seq)
		}
	}
}

func checkLaterStatus(ctx context.Context, t *T) {
	k := t.k
	c, room, _ := k.laterRoom(ctx, t, "status", adp.VisibilityPublic, nil)
	if !k.laterFeature(ctx, t, "agent-status") {
		t.Skipf("the host does not list the agent-status feature")
	}
	ans, err := k.do(ctx, http.MethodPut, "/v1/rooms/"+room+"/agent-status", []byte(`{"state":"working"}`), k.token(ctx, t, c.key, k.origin, nil), nil)
	t.ok(err, "PUT the creator's status")
	t.ok(ans.err(), "PUT the creator's status")
	var st struct {
		State   string           `json:"state"`
		AgentID identity.AgentID `json:"agent_id"`
	}
	if err := json.Unmarshal(ans.body, &st, json.RejectUnknownMembers(false)); err != nil || st.State != "working" || st.AgentID != c.AgentID() {
		t.Fatalf("the PUT answer is not the stored status: %s", short(ans.body))
	}
	var list identity.List[map[string]jsontext.Value]
	k.getJSON(ctx, t, "/v1/rooms/"+room+"/agent-status", nil, &list)
	if len(list.Result) != 1 {
		t.Fatalf("the room's statuses are not an Identity list of one status: %s", short(k.getJSON(ctx, t, "/v1/rooms/"+room+"/agent-status", nil, nil).body))
	}
}

// laterFeature reports whether the discovery document lists feature.
func (k *kit) laterFeature(ctx context.Context, t *T, feature string) bool {
	ans, err := k.do(ctx, http.MethodGet, adp.DiscoveryPath, nil, "", nil)
	t.ok(err, "GET "+adp.DiscoveryPath)
	doc, err := identity.ParseDiscovery(ans.body, k.oopts)
	if err != nil {
		return false
	}
	for _, f := range doc.Features {
		if f == feature {
			return true
		}
	}
	return false
}

func checkLaterPrivacy(ctx context.Context, t *T) {
	k := t.k
	_, private, _ := k.laterRoom(ctx, t, "private reads", adp.VisibilityPrivate, nil)
	_, restricted, _ := k.laterRoom(ctx, t, "restricted reads", adp.VisibilityRestricted, nil)
	o := k.newAgent(t)
	tok := k.token(ctx, t, o.key, k.origin, nil)
	for _, read := range []struct{ what, path string }{
		{"resource", "/v1/rooms/" + private},
		{"history", "/v1/rooms/" + private + "/events"},
	} {
		ans, err := k.do(ctx, http.MethodGet, read.path, nil, tok, nil)
		t.ok(err, "GET "+read.path)
		t.refused(ans.err(), adp.CodeRoomNotFound, "an outsider's read of a private room's "+read.what)
	}
	ans, err := k.do(ctx, http.MethodGet, "/v1/rooms/"+restricted+"/events", nil, tok, nil)
	t.ok(err, "GET a restricted room's history")
	t.refusedAny(ans.err(), "a non-member's GET of a restricted room's history")
}

// laterText is a text message.create payload of the 2026-09-24 draft.
func laterText(s string) string {
	q, _ := jsontext.AppendQuote(nil, s)
	return `{"content_type":"text/plain","content":` + string(q) + `}`
}

func checkLaterRoomID(ctx context.Context, t *T) {
	k := t.k
	c, roomA, headA := k.laterRoom(ctx, t, "room id A", adp.VisibilityPublic, nil)
	b, roomB, _ := k.laterRoom(ctx, t, "room id B", adp.VisibilityPublic, nil)
	env := c.laterSign(ctx, t, adp.TypeMessageCreate, roomA, headA, laterText("signed for room A"))
	t.refusedAny(k.post(ctx, t, roomB, env.AppendJSON(nil)).err(), "a message signed for room A posted to room B")
	for _, r := range []struct {
		a    *agent
		room string
	}{{c, roomA}, {b, roomB}} {
		recs, _ := k.laterRecords(ctx, t, r.room, r.a.key)
		for _, rec := range recs {
			if rec.EventHash() == env.Hash() {
				t.Fatalf("room %s holds the refused envelope at seq %d", r.room, rec.Seq)
			}
		}
	}
}

func checkLaterWindow(ctx context.Context, t *T) {
	c, room, head := t.k.laterRoom(ctx, t, "window", adp.VisibilityPublic, nil)
	base := &adp.Base{RoomID: room, Seq: head.Seq, Hash: head.Hash}
	for _, d := range []time.Duration{-time.Hour, time.Hour} {
		at := t.k.opts.Now().Add(d).UnixMilli()
		n, err := c.Author().Nonces.Next(ctx, t.k.opts.Now())
		t.ok(err, "take a nonce")
		env := c.signEvent(ctx, t, adp.TypeMessageCreate, base, jsontext.Value(laterText("window")), at, n)
		t.k.laterRefused(ctx, t, room, env, identity.CodeTimestampOutOfWindow, "a message with created_at "+d.String()+" from now")
	}
}

// laterNonceRefused requires nonce_not_greater with a Max-Seen-Nonce of
// at least accepted.
func laterNonceRefused(t *T, err error, accepted int64, what string) {
	t.refused(err, identity.CodeNonceNotGreater, what)
	var e *identity.Error
	errors.As(err, &e)
	if e.MaxSeenNonce < accepted {
		t.Fatalf("%s: Max-Seen-Nonce %d is below the accepted nonce %d", what, e.MaxSeenNonce, accepted)
	}
}

func checkLaterNonce(ctx context.Context, t *T) {
	k := t.k
	c, room, head := k.laterRoom(ctx, t, "nonce", adp.VisibilityPublic, nil)
	base := &adp.Base{RoomID: room, Seq: head.Seq, Hash: head.Hash}
	n, err := c.Author().Nonces.Next(ctx, k.opts.Now())
	t.ok(err, "take a nonce")
	k.laterWrite(ctx, t, room, c.signEvent(ctx, t, adp.TypeMessageCreate, base, jsontext.Value(laterText("nonce 1")), k.now(), n), "a message with a fresh nonce")
	for _, nonce := range []int64{n, n - 1} {
		env := c.signEvent(ctx, t, adp.TypeMessageCreate, base, jsontext.Value(laterText("nonce again")), k.now(), nonce)
		laterNonceRefused(t, k.post(ctx, t, room, env.AppendJSON(nil)).err(), n,
			"another message with nonce "+strconv.FormatInt(nonce-n, 10)+" from the accepted one")
	}
	// A held join request is a live write too (§10): its nonce counts.
	_, room2, _, app, req, _ := k.laterApplied(ctx, t, "nonce join request")
	roomField, _ := jsontext.AppendQuote(nil, room2)
	again, err := envelope.Sign(ctx, app.key, envelope.Event{
		Protocol: adp.Protocol, Type: adp.TypeRoomJoinRequest, Actor: app.AgentID(), CreatedAt: k.now(), Nonce: req.Event().Nonce,
		Payload: jsontext.Value(`{"role":"observer"}`), Ext: envelope.Fields{{Name: adp.FieldRoomID, Value: roomField}},
	})
	t.ok(err, "sign a room.join.request")
	laterNonceRefused(t, k.postJoinRequest(ctx, t, room2, again).err(), req.Event().Nonce, "another room.join.request with the held request's nonce")
}

func checkLaterStaleBase(ctx context.Context, t *T) {
	k := t.k
	d, err := later.ParseDeclaration([]byte(laterControl))
	t.ok(err, "declare a control type")
	c, room, head := k.laterRoom(ctx, t, "stale base", adp.VisibilityPublic, func(p *adp.RoomCreate) { p.Types = []packs.Declaration{d} })
	k.laterWrite(ctx, t, room, c.laterSign(ctx, t, "conform.lock", room, head, `{"n":1}`), "a control write on the head")
	k.laterRefused(ctx, t, room, c.laterSign(ctx, t, adp.TypeMessageCreate, room, head, laterText("stale")), adp.CodeRoomHeadMismatch,
		"a message based on the record before the head")
	_, _, otherHead := k.laterRoom(ctx, t, "foreign base", adp.VisibilityPublic, nil)
	k.laterRefused(ctx, t, room, c.laterSign(ctx, t, adp.TypeMessageCreate, room, otherHead, laterText("foreign")), adp.CodeBaseRecordMismatch,
		"a message whose base is another room's record")
	k.laterRefused(ctx, t, room, c.laterSign(ctx, t, adp.TypeRoomUpdate, room, otherHead, `{"topic":"foreign"}`), adp.CodeBaseRecordMismatch,
		"a room.update whose base is another room's record")
}

func checkLaterMyRooms(ctx context.Context, t *T) {
	k := t.k
	guest := k.newAgent(t)
	_, room, _ := k.laterRoom(ctx, t, "my rooms", adp.VisibilityPrivate, func(p *adp.RoomCreate) {
		p.Policy = &adp.Policy{Invites: map[identity.AgentID]adp.Role{guest.AgentID(): adp.RoleSpeaker}, OpenRoles: []adp.Role{}}
	})
	var list identity.List[map[string]jsontext.Value]
	k.getJSON(ctx, t, "/v1/me/rooms", guest.key, &list)
	for _, r := range list.Result {
		var id string
		if json.Unmarshal(r["id"], &id) == nil && id == room {
			t.Infof("the invited agent's entry: %s", short(r["member_status"]))
			return
		}
	}
	t.Fatalf("the agent's rooms do not list the private room that invites it: %s", short(mustJSON(list)))
}

// mustJSON encodes v for evidence.
func mustJSON(v any) []byte {
	b, _ := json.Marshal(v, json.Deterministic(true))
	return b
}
