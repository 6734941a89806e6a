package adphosttest

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/archive"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/fixtures"
	"github.com/agentprotocols/go-sdk/packs"
)

// CheckLaterDraft drives a Host serving the 2026-09-24 draft on store over
// HTTP, as an agent of that draft would, with no SDK client in between:
// the discovery document in the Agent Identity shape (§15.1); host
// binding (a room.create naming another host is host_mismatch, §8.1);
// direct joins by an open role and by an invitation, and
// approval_required for a role neither opens (§9.2); a signed
// room.join.request held by the host (§10), answered again on exact
// resubmission (by a second Host on the same store too, which refuses
// another request of the applicant below the held one's nonce with
// nonce_not_greater), listed for the creator, and decided by a
// room.join.review that embeds it and itself makes the applicant a
// member, after which the request reads approved with the review's event
// ID and a second review is join_request_not_pending; two messages on one
// head both accepted without moving it, and two control writes on one
// head of which the first wins and the second is room_head_mismatch
// (§5.1); records and the room resource carrying accepted_at; a
// private room read and joined by the agent it invites, to which an
// outsider's join is approval_required and any other write room_not_found,
// and which /v1/me/rooms lists for each agent its invitations name, as
// room.create and room.update set them (§15);
// public discovery at GET /v1/rooms listing the restricted room's
// resource and not the private one (§17); and the ended room's archive
// served as the draft's manifest, record log and the external pack
// document its packs name, which verify offline (§18). The store must be
// empty.
func CheckLaterDraft(t *testing.T, store adphost.Store) {
	t.Helper()
	var clock atomic.Int64
	clock.Store(time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC).UnixMilli())
	now := func() time.Time { return time.UnixMilli(clock.Load()) }
	triage := packs.PackDocument{Pack: fixtures.TriagePackURI, Digest: packs.Digest(fixtures.TriagePack), Raw: fixtures.TriagePack}
	pk := &packs.Options{Fetcher: packs.StaticFetcher{triage}}
	h, srv := NewServer(t, &adphost.Options{Store: store, Draft: adp.Draft20260924, Now: now, Heartbeat: -1, Packs: pk})
	w := &laterWire{t: t, hc: srv.Client(), base: srv.URL, origin: h.Origin(), now: now}
	d := adp.Draft20260924

	// Discovery: the Agent Identity shape, service the origin rooms name.
	var disc map[string]jsontext.Value
	w.do("GET", "/.well-known/agent-discourse", nil, nil, 200, &disc)
	doc, err := identity.ParseDiscovery(w.last, &identity.OriginOptions{AllowLoopbackHTTP: true})
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	if doc.Service != h.Origin() || doc.Endpoints["rooms"] != srv.URL+"/v1/rooms" || doc.Endpoints["my_rooms"] != srv.URL+"/v1/me/rooms" {
		t.Fatalf("discovery: service %s, endpoints %v", doc.Service, doc.Endpoints)
	}
	if _, ok := disc["host"]; ok {
		t.Fatal("discovery: the 2026-09-24 document has no host member")
	}

	creator, obs, mod, spk := w.author("creator"), w.author("observer"), w.author("moderator"), w.author("speaker")
	lock, err := d.ParseDeclaration([]byte(`{"type":"task.lock","kind":"control","title":"Lock","schema":{"type":"object"}}`))
	if err != nil {
		t.Fatal(err)
	}
	imp, err := d.ParseDeclaration([]byte(`{"pack":"` + triage.Pack + `","digest":"` + triage.Digest + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	spec := adp.RoomCreate{
		Host: "https://elsewhere.example", Topic: "later draft", Visibility: adp.VisibilityRestricted,
		StartTime: now().UnixMilli(), EndTime: now().Add(time.Hour).UnixMilli(),
		Policy: &adp.Policy{Invites: map[identity.AgentID]adp.Role{mod.AgentID(): adp.RoleModerator}, OpenRoles: []adp.Role{adp.RoleObserver}},
		Types:  []packs.Declaration{lock, imp},
	}
	// Host binding: the room.create is signed for another host.
	w.refused("POST", "/v1/rooms", w.create(creator, spec), adp.CodeHostMismatch)
	spec.Host = h.Origin().String()
	var created map[string]jsontext.Value
	w.do("POST", "/v1/rooms", w.create(creator, spec), nil, 201, &created)
	if _, ok := created["accepted_at"]; !ok || created["received_at"] != nil {
		t.Fatalf("room.create answer: %s", w.last)
	}
	var roomID string
	json.Unmarshal(created["id"], &roomID)
	room := "/v1/rooms/" + roomID
	head := w.latest(created)

	// Joins: an open role, an invitation; a role neither opens.
	last := head
	last = w.write(room, w.sign(obs, adp.TypeRoomJoin, roomID, last, `{"role":"observer"}`))
	last = w.write(room, w.sign(mod, adp.TypeRoomJoin, roomID, last, `{"role":"moderator"}`))
	w.refused("POST", room, w.sign(spk, adp.TypeRoomJoin, roomID, last, `{"role":"speaker"}`), adp.CodeApprovalRequired)

	// A signed join request, held; its exact resubmission answers it again.
	req, err := adp.NewJoinRequest(t.Context(), spk, d, roomID, adp.JoinRequestPayload{Role: adp.RoleSpeaker})
	if err != nil {
		t.Fatal(err)
	}
	var jr adp.SignedJoinRequestResource
	w.do("POST", room+"/join-requests", req.AppendJSON(nil), nil, 201, &jr)
	if jr.ID != req.Hash() || jr.Status != adp.JoinPending || jr.Request == nil || jr.Request.Hash() != req.Hash() || jr.ReviewedBy != nil {
		t.Fatalf("join request: %s", w.last)
	}
	w.do("POST", room+"/join-requests", req.AppendJSON(nil), nil, 200, &jr)
	// Another process on the same Store (or this one restarted) refuses an
	// envelope of the applicant below the held request's nonce: the
	// request's nonce is in the Store, not only in this process.
	h2, err := adphost.New(t.Context(), &adphost.Options{Store: store, Draft: d, Now: now, Heartbeat: -1, Origin: h.Origin(), Packs: pk})
	if err != nil {
		t.Fatal(err)
	}
	srv2 := httptest.NewServer(h2)
	t.Cleanup(h2.Close)
	t.Cleanup(srv2.Close)
	w2 := *w
	w2.hc, w2.base = srv2.Client(), srv2.URL
	stale := &envelope.Author{Signer: spk.Signer, Nonces: identity.NewNonceSource(nil), Now: now}
	replay, err := adp.NewJoinRequest(t.Context(), stale, d, roomID, adp.JoinRequestPayload{Role: adp.RoleObserver})
	if err != nil {
		t.Fatal(err)
	}
	if replay.Event().Nonce > req.Event().Nonce {
		t.Fatalf("the stale request's nonce %d is above the held one's %d", replay.Event().Nonce, req.Event().Nonce)
	}
	w2.refused("POST", room+"/join-requests", replay, identity.CodeNonceNotGreater)
	w2.do("POST", room+"/join-requests", req.AppendJSON(nil), nil, 200, &jr)
	var list identity.List[adp.SignedJoinRequestResource]
	w.do("GET", room+"/join-requests", nil, creator, 200, &list)
	if len(list.Result) != 1 || list.Result[0].ID != req.Hash() {
		t.Fatalf("join requests: %s", w.last)
	}
	w.refused("GET", room+"/join-requests", nil, identity.CodePermissionDenied, obs)

	// The review embeds the request and makes the applicant a member.
	review := fmt.Sprintf(`{"request":%s,"decision":"approve","role":"speaker"}`, req.AppendJSON(nil))
	reviewEnv := w.sign(creator, adp.TypeRoomJoinReview, roomID, last, review)
	last = w.write(room, reviewEnv)
	w.do("GET", room+"/join-requests/"+req.Hash().String(), nil, spk, 200, &jr)
	if jr.Status != adp.JoinApproved || jr.ReviewEventID == nil || *jr.ReviewEventID != reviewEnv.Hash() || jr.ReviewedAt == nil {
		t.Fatalf("reviewed join request: %s", w.last)
	}
	w.refused("POST", room, w.sign(mod, adp.TypeRoomJoinReview, roomID, last, review), adp.CodeJoinRequestNotPending)

	// Two messages on one head: both accepted, the head stays.
	msg := `{"content_type":"text/plain","content":"on the head"}`
	w.write(room, w.sign(creator, adp.TypeMessageCreate, roomID, head, msg))
	last = w.write(room, w.sign(spk, adp.TypeMessageCreate, roomID, head, msg))
	var res map[string]jsontext.Value
	w.do("GET", room, nil, nil, 200, &res)
	if got := w.ref(res["head"]); got != head {
		t.Fatalf("two messages moved the head from %d to %d", head.Seq, got.Seq)
	}
	if _, ok := res["accepted_at"]; !ok || res["received_at"] != nil {
		t.Fatalf("room resource: %s", w.last)
	}

	// A type of the imported external pack.
	w.write(room, w.sign(obs, "triage.label", roomID, head, `{"label":"bug"}`))

	// Two control writes on one head: the first wins, the second is late.
	first := w.write(room, w.sign(creator, "task.lock", roomID, head, `{"task":"a"}`))
	w.refused("POST", room, w.sign(mod, "task.lock", roomID, head, `{"task":"b"}`), adp.CodeRoomHeadMismatch)
	w.do("GET", room, nil, nil, 200, &res)
	if got := w.ref(res["head"]); got != first {
		t.Fatalf("the head is %d after the first control write, not %d", got.Seq, first.Seq)
	}

	// Records carry accepted_at; public discovery lists the restricted room.
	var events identity.List[jsontext.Value]
	w.do("GET", room+"/events", nil, spk, 200, &events)
	for _, b := range events.Result {
		if _, err := adp.ParseRecordIn(d, b); err != nil {
			t.Fatalf("record of the events list: %v", err)
		}
	}
	if len(events.Result) != int(first.Seq) {
		t.Fatalf("%d records listed, want %d", len(events.Result), first.Seq)
	}
	// A private room: an invited agent reads its resource and joins; an
	// outsider must apply, and learns nothing else of it.
	pspec := spec
	pspec.Visibility, pspec.Types = adp.VisibilityPrivate, nil
	pspec.Policy = &adp.Policy{Invites: map[identity.AgentID]adp.Role{obs.AgentID(): adp.RoleSpeaker}, OpenRoles: []adp.Role{}}
	w.do("POST", "/v1/rooms", w.create(creator, pspec), nil, 201, &created)
	json.Unmarshal(created["id"], &roomID)
	proom, phead := "/v1/rooms/"+roomID, w.latest(created)
	w.do("GET", proom, nil, obs, 200, nil)
	// /v1/me/rooms lists the room that invites the agent (§15), with the
	// invited role, and the summary an invitee may read (§8.2).
	var mine identity.List[adp.RoomSummary]
	w.do("GET", "/v1/me/rooms?membership=invited", nil, obs, 200, &mine)
	if len(mine.Result) != 1 || mine.Result[0].ID != roomID || mine.Result[0].Role != adp.RoleSpeaker ||
		mine.Result[0].MemberStatus != "invited" || mine.Result[0].Topic != pspec.Topic {
		t.Fatalf("the invitee's rooms: %s", w.last)
	}
	w.do("GET", "/v1/me/rooms", nil, spk, 200, &mine)
	for _, s := range mine.Result {
		if s.ID == roomID {
			t.Fatalf("an agent the room does not invite lists it: %s", w.last)
		}
	}
	w.refused("GET", proom, nil, adp.CodeRoomNotFound, spk)
	w.refused("POST", proom, w.sign(spk, adp.TypeRoomJoin, roomID, phead, `{"role":"observer"}`), adp.CodeApprovalRequired)
	w.refused("POST", proom, w.sign(spk, adp.TypeMessageCreate, roomID, phead, msg), adp.CodeRoomNotFound)
	w.refused("POST", proom, w.sign(obs, adp.TypeRoomJoin, roomID, phead, `{"role":"moderator"}`), adp.CodeApprovalRequired)
	w.write(proom, w.sign(obs, adp.TypeRoomJoin, roomID, phead, `{"role":"speaker"}`))
	w.do("GET", "/v1/me/rooms?membership=active", nil, obs, 200, &mine)
	if len(mine.Result) != 2 || !slices.ContainsFunc(mine.Result, func(s adp.RoomSummary) bool { return s.ID == roomID && s.Role == adp.RoleSpeaker }) {
		t.Fatalf("the invitee's rooms once it joined: %s", w.last)
	}
	// A room.update's invitations replace the room's: its new invitee
	// lists the room, and no longer once the invitation is withdrawn.
	listed := func(who *envelope.Author) *adp.RoomSummary {
		w.do("GET", "/v1/me/rooms", nil, who, 200, &mine)
		for i, s := range mine.Result {
			if s.ID == roomID {
				return &mine.Result[i]
			}
		}
		return nil
	}
	w.write(proom, w.sign(creator, adp.TypeRoomUpdate, roomID, phead, fmt.Sprintf(`{"policy":{"invites":{%q:"observer"},"open_roles":[]}}`, spk.AgentID())))
	if s := listed(spk); s == nil || s.MemberStatus != "invited" || s.Role != adp.RoleObserver {
		t.Fatalf("the room.update's invitee: %s", w.last)
	}
	w.write(proom, w.sign(creator, adp.TypeRoomUpdate, roomID, phead, `{"policy":{"open_roles":[]}}`))
	if s := listed(spk); s != nil {
		t.Fatalf("a withdrawn invitation still lists the room: %s", w.last)
	}

	var rooms identity.List[map[string]jsontext.Value]
	w.do("GET", "/v1/rooms", nil, nil, 200, &rooms)
	if len(rooms.Result) != 1 || rooms.Result[0]["head"] == nil || rooms.Result[0]["types"] == nil {
		t.Fatalf("GET /v1/rooms: %s", w.last)
	}
	_ = last

	// Once ended, the room's archive is the draft's and verifies (§18).
	w.refused("GET", room+"/archive", nil, identity.CodeNotFound, spk)
	clock.Add(time.Hour.Milliseconds())
	w.do("GET", room+"/archive", nil, spk, 200, nil)
	m, err := archive.ParseManifestWith(w.last, &archive.ManifestOptions{Draft: d, AllowLoopbackHTTP: true})
	if err != nil {
		t.Fatalf("manifest: %v: %s", err, w.last)
	}
	if m.LastSeq != first.Seq || m.LastHash != first.Hash {
		t.Fatalf("manifest: last %d %s, want %d %s", m.LastSeq, m.LastHash, first.Seq, first.Hash)
	}
	// The manifest commits to the imported external pack, whose url
	// serves the exact bytes the host verified: the archive verifies
	// offline from the files the host serves, as adpverify reads them.
	if len(m.Packs) != 1 || m.Packs[0].Pack != triage.Pack || m.Packs[0].Digest != triage.Digest {
		t.Fatalf("manifest packs: %s", w.last)
	}
	manifest := bytes.Clone(w.last)
	dir := t.TempDir()
	w.do("GET", room+"/archive.jsonl", nil, spk, 200, nil)
	log := bytes.Clone(w.last)
	packURL := m.Packs[0].URL
	if !strings.HasPrefix(packURL, srv.URL+room+"/") {
		t.Fatalf("pack url %s is not the room's", packURL)
	}
	w.do("GET", strings.TrimPrefix(packURL, srv.URL), nil, spk, 200, nil)
	if !bytes.Equal(w.last, triage.Raw) {
		t.Fatalf("the pack url serves %q", w.last)
	}
	packDoc := bytes.Clone(w.last)
	outsider := w.author("outsider")
	w.refused("GET", room+"/archive", nil, adp.CodeMembershipRequired, outsider)
	w.refused("GET", strings.TrimPrefix(packURL, srv.URL), nil, adp.CodeMembershipRequired, outsider)
	w.refused("GET", room+"/archive/packs/sha256-"+strings.Repeat("A", 43)+".json", nil, identity.CodeNotFound, spk)
	files := map[string][]byte{"manifest.json": manifest, "records.jsonl": log, path.Base(packURL): packDoc}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	report, err := archive.VerifyFiles(t.Context(), filepath.Join(dir, "manifest.json"), filepath.Join(dir, "records.jsonl"),
		&archive.VerifyOptions{Draft: d, AllowLoopbackHTTP: true})
	if err != nil || !report.Valid {
		t.Fatalf("archive: %v, %+v", err, report)
	}
	// Without the pack document beside it the archive does not verify.
	if err := os.Remove(filepath.Join(dir, path.Base(packURL))); err != nil {
		t.Fatal(err)
	}
	if _, err := archive.VerifyFiles(t.Context(), filepath.Join(dir, "manifest.json"), filepath.Join(dir, "records.jsonl"),
		&archive.VerifyOptions{Draft: d, AllowLoopbackHTTP: true}); err == nil {
		t.Fatal("the archive verified without its pack document")
	}
}

// laterWire is CheckLaterDraft's raw HTTP client.
type laterWire struct {
	t      *testing.T
	hc     *http.Client
	base   string
	origin identity.Origin
	now    func() time.Time
	last   []byte
}

// author returns a deterministic author on the host's clock.
func (w *laterWire) author(name string) *envelope.Author {
	seed := sha256.Sum256([]byte("adphosttest later " + name))
	k, err := identity.NewKeyFromSeed(seed[:])
	if err != nil {
		w.t.Fatal(err)
	}
	a := envelope.NewAuthor(k)
	a.Now = w.now
	return a
}

// create signs a room.create of the 2026-09-24 draft.
func (w *laterWire) create(a *envelope.Author, p adp.RoomCreate) []byte {
	w.t.Helper()
	env, err := adp.NewRoomCreateIn(w.t.Context(), a, adp.Draft20260924, p)
	if err != nil {
		w.t.Fatal(err)
	}
	return env.AppendJSON(nil)
}

// sign signs an event of typ with payload, based on base.
func (w *laterWire) sign(a *envelope.Author, typ, roomID string, base adp.RecordRef, payload string) *envelope.Envelope {
	w.t.Helper()
	room, _ := json.Marshal(roomID)
	hash, _ := json.Marshal(base.Hash)
	env, err := a.Sign(w.t.Context(), adp.Protocol, typ, jsontext.Value(payload), envelope.Fields{
		{Name: adp.FieldRoomID, Value: room},
		{Name: adp.FieldBaseSeq, Value: jsontext.Value(strconv.FormatInt(base.Seq, 10))},
		{Name: adp.FieldBaseHash, Value: hash},
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return env
}

// write posts env to the room and returns its record's seq and hash.
func (w *laterWire) write(room string, env *envelope.Envelope) adp.RecordRef {
	w.t.Helper()
	var rec map[string]jsontext.Value
	w.do("POST", room, env.AppendJSON(nil), nil, 200, &rec)
	if _, err := adp.ParseRecordIn(adp.Draft20260924, w.last); err != nil {
		w.t.Fatalf("the answer to %s is no 2026-09-24 record: %v", env.Event().Type, err)
	}
	return w.latest(rec)
}

// latest reads seq and hash out of a record or room.create answer.
func (w *laterWire) latest(m map[string]jsontext.Value) adp.RecordRef {
	var r adp.RecordRef
	json.Unmarshal(m["seq"], &r.Seq)
	json.Unmarshal(m["hash"], &r.Hash)
	return r
}

func (w *laterWire) ref(v jsontext.Value) adp.RecordRef {
	var r adp.RecordRef
	if err := json.Unmarshal(v, &r); err != nil {
		w.t.Fatalf("head %s: %v", v, err)
	}
	return r
}

// do sends a request (signed by as's request JWT when as is set) and
// decodes the answer into out, which must come with status want.
func (w *laterWire) do(method, path string, body []byte, as *envelope.Author, want int, out any) {
	w.t.Helper()
	status, b := w.send(method, path, body, as)
	if status != want {
		w.t.Fatalf("%s %s: status %d, want %d: %s", method, path, status, want, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			w.t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
}

// refused sends a request that must fail with code.
func (w *laterWire) refused(method, path string, body any, code identity.Code, as ...*envelope.Author) {
	w.t.Helper()
	var b []byte
	switch v := body.(type) {
	case []byte:
		b = v
	case *envelope.Envelope:
		b = v.AppendJSON(nil)
	}
	var a *envelope.Author
	if len(as) > 0 {
		a = as[0]
	}
	status, got := w.send(method, path, b, a)
	var e struct {
		Error struct {
			Code identity.Code `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(got, &e, json.RejectUnknownMembers(false)); err != nil || e.Error.Code != code || status < 400 {
		w.t.Fatalf("%s %s: want %s, got status %d: %s", method, path, code, status, got)
	}
}

func (w *laterWire) send(method, path string, body []byte, as *envelope.Author) (int, []byte) {
	w.t.Helper()
	req, err := http.NewRequestWithContext(w.t.Context(), method, w.base+path, bytes.NewReader(body))
	if err != nil {
		w.t.Fatal(err)
	}
	if as != nil {
		tok, err := identity.MintRequestToken(w.t.Context(), as.Signer, w.origin, &identity.MintOptions{Now: w.now})
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
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		w.t.Fatal(err)
	}
	w.last = b
	return resp.StatusCode, b
}
