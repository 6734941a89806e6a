package adpconform

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	gosse "github.com/tmaxmax/go-sse"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/archive"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/sse"
)

// feature reports whether the discovery document declares name; a host
// without one is assumed to offer everything.
func (k *kit) feature(ctx context.Context, t *T, name string) bool {
	d, err := k.newAgent(t).Discover(ctx)
	if err != nil {
		return true
	}
	return d.HasFeature(name)
}

func checkChain(ctx context.Context, t *T) {
	a, room := t.k.room(ctx, t, "chain", adp.VisibilityPublic, withSignal)
	b := t.k.member(ctx, t, room, adp.RoleSpeaker)
	c := t.k.member(ctx, t, room, adp.RoleSpeaker)
	steps := []func() error{
		func() error { _, err := a.SendMessage(ctx, room, text("one")); return err },
		func() error { _, err := b.SendMessage(ctx, room, text("two")); return err },
		func() error { _, err := c.SendCustom(ctx, room, signalType.Type, jsontext.Value(`{}`)); return err },
		func() error { _, err := c.SendMessage(ctx, room, text("three")); return err },
		func() error { _, err := b.Leave(ctx, room, adp.Notice{}); return err },
		func() error { _, err := a.SendMessage(ctx, room, text("four")); return err },
	}
	for _, s := range steps {
		t.ok(s(), "a write")
	}
	const want = 9 // room.create, two joins, six writes
	r, err := t.k.clientPaging(t.k.newAgent(t).key, 2)
	t.ok(err, "a reader paging two records at a time")
	replay := adp.NewRoom(room, nil)
	var recs []*adp.Record
	for rec, err := range r.Events(ctx, room, 0) {
		if err != nil {
			t.Fatalf("the history does not verify after %d records: %v", len(recs), err)
		}
		if err := replay.Apply(ctx, rec); err != nil {
			t.Fatalf("record %d does not replay on adp.Room: %v", rec.Seq, err)
		}
		recs = append(recs, rec)
	}
	if len(recs) != want {
		t.Fatalf("the history holds %d records, want %d", len(recs), want)
	}
	for i, rec := range recs {
		if rec.Seq != int64(i+1) {
			t.Fatalf("record %d has seq %d", i+1, rec.Seq)
		}
		if i > 0 && rec.PreHash != recs[i-1].Hash {
			t.Fatalf("record %d's pre_hash is not record %d's hash", rec.Seq, rec.Seq-1)
		}
	}
	res, err := a.GetRoom(ctx, room)
	t.ok(err, "GET the room")
	last := recs[len(recs)-1]
	if res.Seq != last.Seq || res.Hash != last.Hash {
		t.Fatalf("the room resource names latest record seq %d %s; the chain ends at seq %d %s", res.Seq, res.Hash, last.Seq, last.Hash)
	}
	after := 0
	for rec, err := range r.Events(ctx, room, 5) {
		t.ok(err, "history after seq 5")
		if rec.Seq <= 5 {
			t.Fatalf("history after_seq=5 yielded seq %d", rec.Seq)
		}
		after++
	}
	if after != want-5 {
		t.Fatalf("history after_seq=5 yielded %d records, want %d", after, want-5)
	}
}

// closedRoom makes a room with a hostile-looking message and closes it.
func closedRoom(ctx context.Context, t *T, purpose string) (*agent, string, *adp.Record) {
	a, room := t.k.room(ctx, t, purpose, adp.VisibilityPublic, nil)
	b := t.k.member(ctx, t, room, adp.RoleSpeaker)
	_, err := b.SendMessage(ctx, room, adp.Message{ContentType: "text/markdown",
		Content: adp.TextContent("<script>alert('adpconform')</script> [click](javascript:alert(1)) <img src=x onerror=alert(1)>")})
	t.ok(err, "a message carrying markup")
	end, err := a.CloseRoom(ctx, room, adp.Notice{Reason: "conformance"})
	t.ok(err, "room.close")
	return a, room, end
}

func checkArchive(ctx context.Context, t *T) {
	a, room, end := closedRoom(ctx, t, "archive")
	manifest, recs, err := a.Archive(ctx, room)
	t.ok(err, "GET the archive manifest and its JSONL records")
	m, err := archive.ParseManifest(manifest)
	t.ok(err, "parse the manifest")
	rep, err := archive.Verify(ctx, m, bytes.NewReader(recs), &archive.VerifyOptions{Workers: 2})
	if err != nil {
		t.Fatalf("the archive does not verify: %v", err)
	}
	if !rep.Valid {
		t.Fatalf("the archive does not verify: %+v", rep.Failure)
	}
	if rep.RoomID != room || rep.LastSeq != end.Seq || rep.LastHash != end.Hash {
		t.Fatalf("the archive of %s ends at seq %d %s; the room ended at seq %d %s", rep.RoomID, rep.LastSeq, rep.LastHash, end.Seq, end.Hash)
	}
	if rep.Status != adp.StatusEnded {
		t.Infof("the archive replays to status %q", rep.Status)
	}
	ans, err := t.k.do(ctx, http.MethodGet, "/v1/rooms/"+room+"/archive", nil, "", nil)
	if err == nil && ans.status != http.StatusOK {
		t.Infof("a public room's archive without a token: HTTP %d (the text says anyone SHOULD be able to read it)", ans.status)
	}
}

func checkMarkdown(ctx context.Context, t *T) {
	a, room, _ := closedRoom(ctx, t, "markdown")
	manifest, _, err := a.Archive(ctx, room)
	t.ok(err, "GET the archive")
	m, err := archive.ParseManifest(manifest)
	t.ok(err, "parse the manifest")
	u := m.Formats["markdown"]
	if u == "" {
		t.Skipf("the manifest advertises no Markdown archive")
	}
	if !strings.HasPrefix(u, t.k.origin.String()+"/") {
		t.Fatalf("the Markdown archive is at %q, off the host's origin", u)
	}
	ans, err := t.k.do(ctx, http.MethodGet, strings.TrimPrefix(u, t.k.origin.String()), nil, t.k.token(ctx, t, a.key, t.k.origin, nil), nil)
	t.ok(err, "GET the Markdown archive")
	t.ok(ans.err(), "GET the Markdown archive")
	md := string(ans.body)
	if !strings.Contains(md, t.k.topic("markdown")) {
		t.Fatalf("the Markdown archive lacks the room's topic")
	}
	if bad := activeMarkup(md); bad != "" {
		t.Fatalf("the Markdown archive passes %q through where a renderer acts on it", bad)
	}
	t.Infof("Markdown archive Content-Type %q", ans.header.Get("Content-Type"))
}

// open sends a GET to a live stream and returns the answer's status and
// headers, reading the body only when it is an error.
func (k *kit) open(ctx context.Context, t *T, path, token string) *answer {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.origin.String()+path, nil)
	t.ok(err, "a live request")
	req.Header.Set("Accept", "text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := k.hc.Do(req)
	t.ok(err, "GET "+path)
	defer resp.Body.Close()
	ans := &answer{status: resp.StatusCode, header: resp.Header}
	if resp.StatusCode != http.StatusOK {
		var buf bytes.Buffer
		buf.ReadFrom(io.LimitReader(resp.Body, maxBody))
		ans.body = buf.Bytes()
	}
	return ans
}

func checkLiveAuth(ctx context.Context, t *T) {
	a, room := t.k.room(ctx, t, "live auth", adp.VisibilityPublic, nil)
	_ = a
	b := t.k.member(ctx, t, room, adp.RoleSpeaker)
	path := "/v1/rooms/" + room + "/events/live"
	n0 := t.k.newAgent(t)
	other := identity.MustParseOrigin("https://other.example")
	past := t.k.opts.Now().Add(-10 * time.Minute)
	cases := []struct {
		what  string
		token string
	}{
		{"no Authorization header", ""},
		{"an expired token", t.k.token(ctx, t, b.key, t.k.origin, &identity.MintOptions{Now: func() time.Time { return past }, TTL: time.Minute})},
		{"a token for another audience", t.k.token(ctx, t, b.key, other, nil)},
		{"a token that is not a JWT", "not-a-token"},
		{"a token whose signature is another token's", forgedToken(ctx, t, b, n0)},
	}
	long := t.k.token(ctx, t, b.key, t.k.origin, &identity.MintOptions{Now: t.k.opts.Now, TTL: 1000 * time.Second})
	if t.k.open(ctx, t, path, long).err() == nil {
		t.Infof("a token living 1000 s was accepted (Identity §7: services SHOULD cap the lifetime at 300 s)")
	}
	for _, c := range cases {
		t.refused(t.k.open(ctx, t, path, c.token).err(), identity.CodeInvalidToken, "a live subscription with "+c.what)
	}
	n := t.k.newAgent(t)
	t.refusedAny(t.k.open(ctx, t, path, t.k.token(ctx, t, n.key, t.k.origin, nil)).err(), "a non-member's live subscription")
	c := t.k.member(ctx, t, room, adp.RoleSpeaker)
	_, err := c.Leave(ctx, room, adp.Notice{})
	t.ok(err, "a member leaves")
	t.refusedAny(t.k.open(ctx, t, path, t.k.token(ctx, t, c.key, t.k.origin, nil)).err(), "a former member's live subscription")
	t.ok(t.k.open(ctx, t, path, t.k.token(ctx, t, b.key, t.k.origin, nil)).err(), "a member's live subscription")
}

// stream subscribes to room's live stream as a and returns the open
// answer; anything but 200 fails the check.
func (k *kit) stream(ctx context.Context, t *T, room string, a *agent) *http.Response {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.origin.String()+"/v1/rooms/"+room+"/events/live", nil)
	t.ok(err, "a live request")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+k.token(ctx, t, a.key, k.origin, nil))
	resp, err := k.hc.Do(req)
	t.ok(err, "subscribe to the live stream")
	if resp.StatusCode != http.StatusOK {
		ans := &answer{status: resp.StatusCode, header: resp.Header}
		var buf bytes.Buffer
		buf.ReadFrom(io.LimitReader(resp.Body, maxBody))
		resp.Body.Close()
		ans.body = buf.Bytes()
		t.Fatalf("a member's live subscription: %v", ans.err())
	}
	return resp
}

// readStream frames a live stream with go-sse, bounding one event.
func readStream(resp *http.Response) func(func(gosse.Event, error) bool) {
	return gosse.Read(resp.Body, &gosse.ReadConfig{MaxEventSize: envelope.MaxSize + 64<<10})
}

func checkLiveNotices(ctx context.Context, t *T) {
	a, room := t.k.room(ctx, t, "notices", adp.VisibilityRestricted, nil)
	lctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	resp := t.k.stream(lctx, t, room, a)
	defer resp.Body.Close()
	applyFor(ctx, t, t.k.newAgent(t), room, adp.RoleSpeaker)
	if t.k.feature(ctx, t, "agent-status") {
		_, err := a.PutAgentStatus(ctx, room, adp.AgentStatusInput{State: "working"})
		t.ok(err, "the creator's status")
	}
	seen := map[string]bool{}
	for ev, err := range readStream(resp) {
		if err != nil {
			break // the 3 s window closed
		}
		if ev.Type != adp.SSEJoinRequest && ev.Type != adp.SSEAgentStatus {
			continue
		}
		var m map[string]jsontext.Value
		if err := json.Unmarshal([]byte(ev.Data), &m); err != nil {
			t.Fatalf("a %s item is not a JSON object: %v", ev.Type, err)
		}
		for _, f := range []string{"seq", "pre_hash", "hash", "envelope"} {
			if _, ok := m[f]; ok {
				t.Fatalf("a %s item carries %q: it is not a record (§17.4, §17.5)", ev.Type, f)
			}
		}
		seen[ev.Type] = true
		if seen[adp.SSEJoinRequest] && seen[adp.SSEAgentStatus] {
			break
		}
	}
	if !seen[adp.SSEJoinRequest] {
		t.Infof("no room.join_request item reached the subscribed creator within 3 s (SHOULD, §17.5)")
	}
	if !seen[adp.SSEAgentStatus] {
		t.Infof("no room.agent_status item within 3 s (MAY, §17.4)")
	}
}

// forgedToken is a's request token carrying the signature of a token of
// other: well-formed, signed by nobody.
func forgedToken(ctx context.Context, t *T, a, other *agent) string {
	tok := t.k.token(ctx, t, a.key, t.k.origin, nil)
	alien := t.k.token(ctx, t, other.key, t.k.origin, nil)
	return tok[:strings.LastIndexByte(tok, '.')] + alien[strings.LastIndexByte(alien, '.'):]
}

func checkLiveNoReplay(ctx context.Context, t *T) {
	a, room := t.k.room(ctx, t, "live", adp.VisibilityPublic, nil)
	b := t.k.member(ctx, t, room, adp.RoleSpeaker)
	_, err := a.SendMessage(ctx, room, text("before the subscription"))
	t.ok(err, "a message before subscribing")
	seen, err := b.Sync(ctx, room)
	t.ok(err, "the member reads the history")
	// The stream is read raw (go-sse framing, as sse.Follow reads it):
	// sse.Follow drops records it already holds, by design, so it would
	// hide a replay; every record seen here is verified with Admit.
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp := t.k.stream(lctx, t, room, b)
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("the live stream's Content-Type is %q, want text/event-stream", ct)
	}
	if cc := resp.Header.Get("Cache-Control"); !strings.Contains(cc, "no-cache") {
		t.Infof("the live stream's Cache-Control is %q (SHOULD be no-cache)", cc)
	}
	rec, err := a.SendMessage(ctx, room, text("after the subscription"))
	t.ok(err, "a message after subscribing")
	for ev, err := range readStream(resp) {
		if err != nil {
			t.Fatalf("the live stream before the new record: %v", err)
		}
		if ev.Type != adp.SSERoomEvent {
			continue
		}
		got, err := adp.ParseRecord([]byte(ev.Data))
		t.ok(err, "a room.event's data is a server record")
		if got.Seq <= seen.Seq {
			t.Fatalf("the live stream replayed history: seq %d (the subscription began after seq %d)", got.Seq, seen.Seq)
		}
		rep, err := b.Replica(room)
		t.ok(err, "the follower's replica of the room")
		t.ok(rep.Admit(ctx, got), "verify the live record")
		if got.Seq != rec.Seq || got.Hash != rec.Hash {
			t.Fatalf("the first live record is seq %d, want the new record, seq %d", got.Seq, rec.Seq)
		}
		return
	}
	t.Fatalf("the live stream ended without the record accepted after subscribing (seq %d): %v", rec.Seq, lctx.Err())
}

func checkStatusTTL(ctx context.Context, t *T) {
	if !t.k.feature(ctx, t, "agent-status") {
		t.Skipf("the host does not declare agent-status (a MAY, §17.4)")
	}
	a, room := t.k.room(ctx, t, "status", adp.VisibilityPublic, nil)
	b := t.k.member(ctx, t, room, adp.RoleSpeaker)
	before, err := a.GetRoom(ctx, room)
	t.ok(err, "GET the room")
	now := t.k.now()
	// A month is beyond any TTL meant for "短期" hints (300 s recommended).
	day := now + 30*24*time.Hour.Milliseconds()
	st, err := b.PutAgentStatus(ctx, room, adp.AgentStatusInput{State: "drafting", ExpiresAt: day})
	t.ok(err, "a speaker's status with expires_at a month ahead")
	if st.ExpiresAt >= day || st.ExpiresAt <= now {
		t.Fatalf("expires_at a month ahead was stored as %d (now %d): the host must clamp it to its TTL", st.ExpiresAt, now)
	}
	t.Infof("the host's status TTL is about %d s", (st.ExpiresAt-now)/1000)
	st, err = b.PutAgentStatus(ctx, room, adp.AgentStatusInput{State: "reading"})
	t.ok(err, "a speaker's status without expires_at")
	if st.ExpiresAt <= now || st.ExpiresAt >= day {
		t.Fatalf("a status without expires_at was stored with expires_at %d (now %d): the host must assign its TTL", st.ExpiresAt, now)
	}
	list, err := b.AgentStatuses(ctx, room)
	t.ok(err, "list the statuses")
	n := 0
	for _, s := range list {
		if s.AgentID == b.AgentID() {
			n++
			if s.State != "reading" {
				t.Fatalf("the listed status is %q; the newer one, reading, must replace it", s.State)
			}
		}
	}
	if n != 1 {
		t.Fatalf("the speaker appears %d times in the status list, want once", n)
	}
	short := t.k.now() + 1200
	_, err = b.PutAgentStatus(ctx, room, adp.AgentStatusInput{State: "waiting", ExpiresAt: short})
	t.ok(err, "a status expiring in 1.2 s")
	select {
	case <-time.After(time.Until(time.UnixMilli(short)) + 400*time.Millisecond):
	case <-ctx.Done():
		t.Fatalf("%v", ctx.Err())
	}
	list, err = b.AgentStatuses(ctx, room)
	t.ok(err, "list the statuses after the expiry")
	if slices.ContainsFunc(list, func(s adp.AgentStatus) bool { return s.AgentID == b.AgentID() }) {
		t.Fatalf("an expired status is still listed")
	}
	_, err = b.AgentStatus(ctx, room, b.AgentID())
	if err == nil {
		t.Fatalf("an expired status is still served")
	}
	if !errors.Is(err, adp.ErrAgentStatusNotFound) {
		t.Infof("an expired status answers %v (SHOULD be agent_status_not_found)", err)
	}
	after, err := a.GetRoom(ctx, room)
	t.ok(err, "GET the room")
	if after.Seq != before.Seq || after.Head != before.Head {
		t.Fatalf("status writes moved the room from seq %d to %d", before.Seq, after.Seq)
	}
}

func checkStatusWriters(ctx context.Context, t *T) {
	if !t.k.feature(ctx, t, "agent-status") {
		t.Skipf("the host does not declare agent-status (a MAY, §17.4)")
	}
	a, room := t.k.room(ctx, t, "status writers", adp.VisibilityPublic, nil)
	_, err := a.PutAgentStatus(ctx, room, adp.AgentStatusInput{State: "working"})
	t.ok(err, "the creator's (moderator's) status")
	o := t.k.member(ctx, t, room, adp.RoleObserver)
	_, err = o.PutAgentStatus(ctx, room, adp.AgentStatusInput{State: "reading"})
	t.refusedAny(err, "an observer's status write")
	_, err = t.k.newAgent(t).PutAgentStatus(ctx, room, adp.AgentStatusInput{State: "reading"})
	t.refusedAny(err, "a non-member's status write")
	ans, err := t.k.do(ctx, http.MethodPut, "/v1/rooms/"+room+"/agent-status", []byte(`{"state":"idle"}`), "", nil)
	t.ok(err, "PUT a status without a token")
	t.refused(ans.err(), identity.CodeInvalidToken, "a status write without a request JWT")
}

// listed scans the public room list (bounded) and returns the IDs in
// order.
func listed(ctx context.Context, t *T, a *agent, q adp.RoomQuery) []adp.RoomSummary {
	var out []adp.RoomSummary
	for s, err := range a.PublicRooms(ctx, q) {
		t.ok(err, "GET /v1/rooms/public")
		out = append(out, s)
		if len(out) >= 5000 {
			break
		}
	}
	return out
}

func checkPublicRooms(ctx context.Context, t *T) {
	a, pub := t.k.room(ctx, t, "listed", adp.VisibilityPublic, nil)
	_, restricted := t.k.room(ctx, t, "listed restricted", adp.VisibilityRestricted, nil)
	_, sched := t.k.room(ctx, t, "listed scheduled", adp.VisibilityPublic, func(p *adp.RoomCreate) {
		p.StartTime, p.EndTime = t.k.future(), t.k.future()+time.Hour.Milliseconds()
	})
	all := listed(ctx, t, a, adp.RoomQuery{})
	idx := func(id string) int { return slices.IndexFunc(all, func(s adp.RoomSummary) bool { return s.ID == id }) }
	if idx(pub) < 0 {
		t.Fatalf("a public room is not in GET /v1/rooms/public (%d rooms listed)", len(all))
	}
	t.Infof("a restricted room is listed: %v (MAY)", idx(restricted) >= 0)
	if i, j := idx(pub), idx(sched); i >= 0 && j >= 0 && j < i {
		t.Fatalf("the default order lists a scheduled room before an active one")
	}
	for _, s := range listed(ctx, t, a, adp.RoomQuery{Status: adp.StatusScheduled}) {
		if s.Status != adp.StatusScheduled {
			t.Fatalf("status=scheduled lists a %q room", s.Status)
		}
	}
}

// secrets are strings of a private room no outsider may see.
func secrets(ctx context.Context, t *T, a *agent, room, purpose string) []string {
	res, err := a.GetRoom(ctx, room)
	t.ok(err, "the creator reads the room")
	return []string{res.Hash.String(), res.Head.Hash.String(), t.k.topic(purpose), a.AgentID().String()}
}

// unseen requires that ans is a refusal whose body holds none of secret.
func unseen(t *T, ans *answer, what string, secret []string) {
	t.refusedAny(ans.err(), what)
	for _, s := range secret {
		if bytes.Contains(ans.body, []byte(s)) {
			t.Fatalf("%s: the refusal shows %q: %s", what, s, short(ans.body))
		}
	}
}

func checkPrivate(ctx context.Context, t *T) {
	a, room := t.k.room(ctx, t, "private", adp.VisibilityPrivate, nil)
	_, err := a.SendMessage(ctx, room, text("for members only"))
	t.ok(err, "the creator's message")
	if t.k.feature(ctx, t, "agent-status") {
		_, err = a.PutAgentStatus(ctx, room, adp.AgentStatusInput{State: "working"})
		t.ok(err, "the creator's status")
	}
	secret := secrets(ctx, t, a, room, "private")
	o := t.k.newAgent(t)
	tok := func() string { return t.k.token(ctx, t, o.key, t.k.origin, nil) }
	p := "/v1/rooms/" + room
	reads := []string{p, p + "/events?after_seq=0", p + "/agent-status", p + "/agent-status/" + a.AgentID().String(), p + "/join-requests", p + "/archive"}
	for _, path := range reads {
		for _, who := range []string{"an outsider", "an anonymous reader"} {
			token := ""
			if who == "an outsider" {
				token = tok()
			}
			ans, err := t.k.do(ctx, http.MethodGet, path, nil, token, nil)
			t.ok(err, "GET "+path)
			what := strings.TrimPrefix(path, p)
			if what == "" {
				what = "the room resource"
			}
			unseen(t, ans, who+" reads "+what, secret)
		}
	}
	unseen(t, t.k.open(ctx, t, p+"/events/live", tok()), "an outsider subscribes", secret)
	for _, s := range listed(ctx, t, o, adp.RoomQuery{}) {
		if s.ID == room {
			t.Fatalf("the private room is listed in GET /v1/rooms/public")
		}
	}
	for s, err := range o.MyRooms(ctx, adp.RoomQuery{}) {
		t.ok(err, "GET /v1/me/rooms")
		if s.ID == room {
			t.Fatalf("an outsider's /v1/me/rooms lists the private room")
		}
	}
	_, err = a.CloseRoom(ctx, room, adp.Notice{})
	t.ok(err, "room.close")
	for _, path := range []string{p + "/archive", p + "/archive.jsonl", p + "/archive.md"} {
		ans, err := t.k.do(ctx, http.MethodGet, path, nil, tok(), nil)
		t.ok(err, "GET "+path)
		unseen(t, ans, "an outsider reads the ended room's "+strings.TrimPrefix(path, p+"/"), secret)
	}
}

func checkPrivateWrites(ctx context.Context, t *T) {
	a, room := t.k.room(ctx, t, "private writes", adp.VisibilityPrivate, nil)
	_, err := a.SendMessage(ctx, room, text("moves the head"))
	t.ok(err, "the creator's message")
	secret := secrets(ctx, t, a, room, "private writes")
	o := t.k.newAgent(t)
	base := adp.Base{RoomID: room, Seq: 1, Hash: envelope.Sum([]byte("unknown"))}
	env := o.sign(ctx, t, adp.TypeMessageCreate, &base, text("from outside"))
	unseen(t, t.k.post(ctx, t, room, env.AppendJSON(nil)), "an outsider's message on a guessed base", secret)
	ans := t.k.post(ctx, t, room, o.sign(ctx, t, adp.TypeRoomJoin, &base, adp.Join{Role: adp.RoleSpeaker}).AppendJSON(nil))
	unseen(t, ans, "an outsider's room.join on a guessed base", secret)
	t.refused(ans.err(), adp.CodeApprovalRequired, "an outsider's room.join without request_id on a guessed base")
}

func checkRestricted(ctx context.Context, t *T) {
	a, room := t.k.room(ctx, t, "restricted", adp.VisibilityRestricted, nil)
	_, err := a.SendMessage(ctx, room, text("for members only"))
	t.ok(err, "the creator's message")
	o := t.k.newAgent(t)
	tok := func() string { return t.k.token(ctx, t, o.key, t.k.origin, nil) }
	p := "/v1/rooms/" + room
	for _, path := range []string{p + "/events?after_seq=0", p + "/agent-status"} {
		for _, token := range []string{tok(), ""} {
			ans, err := t.k.do(ctx, http.MethodGet, path, nil, token, nil)
			t.ok(err, "GET "+path)
			t.refusedAny(ans.err(), "an outsider reads "+strings.TrimPrefix(path, p))
		}
	}
	t.refusedAny(t.k.open(ctx, t, p+"/events/live", tok()).err(), "an outsider subscribes")
	ans, err := t.k.do(ctx, http.MethodGet, p, nil, "", nil)
	t.ok(err, "GET the room resource anonymously")
	t.Infof("a restricted room's resource read anonymously: HTTP %d (MAY be public)", ans.status)
	_, err = a.CloseRoom(ctx, room, adp.Notice{})
	t.ok(err, "room.close")
	for _, path := range []string{p + "/archive", p + "/archive.jsonl"} {
		ans, err := t.k.do(ctx, http.MethodGet, path, nil, tok(), nil)
		t.ok(err, "GET "+path)
		t.refusedAny(ans.err(), "an outsider reads the ended room's "+strings.TrimPrefix(path, p+"/"))
	}
}

func checkQuota(ctx context.Context, t *T) {
	_, room := t.k.room(ctx, t, "quota", adp.VisibilityPublic, nil)
	b := t.k.member(ctx, t, room, adp.RoleSpeaker)
	const limit = 30
	for i := range limit {
		_, err := b.SendMessage(ctx, room, text("message "+string(rune('a'+i%26))))
		if err != nil {
			t.refused(err, identity.CodeRateLimited, "a message past the quota")
			t.Infof("the host refused message %d of one agent within a minute", i+1)
			var e *identity.Error
			if errors.As(err, &e) && e.RetryAfter > 0 {
				t.Infof("Retry-After: %s", e.RetryAfter)
			}
			return
		}
	}
	t.Fatalf("%d messages of one agent within a minute were all accepted (the §21 default is 5)", limit)
}

// activeMarkup returns the first piece of payload markup in md that a
// Markdown renderer would act on: a raw <script, <img or <iframe tag or a
// javascript: link outside code blocks and code spans, not
// backslash-escaped. It is a conservative scan for the markup the suite
// planted, not a Markdown parser.
func activeMarkup(md string) string {
	var fence string
	for line := range strings.Lines(md) {
		trim := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trim, fence) && strings.Trim(strings.TrimSpace(trim), fence[:1]) == "" {
				fence = ""
			}
			continue
		}
		if n := len(trim) - len(strings.TrimLeft(trim, "`")); n >= 3 {
			fence = trim[:n]
			continue
		}
		if n := len(trim) - len(strings.TrimLeft(trim, "~")); n >= 3 {
			fence = trim[:n]
			continue
		}
		if strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "\t") {
			continue // an indented code block
		}
		low := strings.ToLower(stripCodeSpans(line))
		for _, bad := range []string{"<script", "<img", "<iframe", "](javascript:"} {
			for i := 0; ; {
				j := strings.Index(low[i:], bad)
				if j < 0 {
					break
				}
				if at := i + j; at == 0 || low[at-1] != '\\' {
					return bad
				}
				i += j + 1
			}
		}
	}
	return ""
}

// stripCodeSpans removes `code spans` from one line.
func stripCodeSpans(line string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(line, '`')
		if i < 0 || (i > 0 && line[i-1] == '\\') {
			b.WriteString(line)
			return b.String()
		}
		n := len(line[i:]) - len(strings.TrimLeft(line[i:], "`"))
		end := strings.Index(line[i+n:], line[i:i+n])
		if end < 0 {
			b.WriteString(line)
			return b.String()
		}
		b.WriteString(line[:i])
		line = line[i+n+end+n:]
	}
}

func checkStatusCleared(ctx context.Context, t *T) {
	if !t.k.feature(ctx, t, "agent-status") {
		t.Skipf("the host does not declare agent-status (a MAY, §17.4)")
	}
	a, room := t.k.room(ctx, t, "status cleared", adp.VisibilityPublic, nil)
	for _, how := range []string{"leaves", "is removed", "becomes an observer"} {
		b := t.k.member(ctx, t, room, adp.RoleSpeaker)
		_, err := b.PutAgentStatus(ctx, room, adp.AgentStatusInput{State: "drafting"})
		t.ok(err, "a speaker's status")
		switch how {
		case "leaves":
			_, err = b.Leave(ctx, room, adp.Notice{})
		case "is removed":
			_, err = a.RemoveMember(ctx, room, adp.MemberRemove{Member: b.AgentID()})
		default:
			_, err = a.UpdateRole(ctx, room, adp.RoleUpdate{Member: b.AgentID(), Role: adp.RoleObserver})
		}
		t.ok(err, "the member "+how)
		list, err := a.AgentStatuses(ctx, room)
		t.ok(err, "list the statuses")
		if slices.ContainsFunc(list, func(s adp.AgentStatus) bool { return s.AgentID == b.AgentID() }) {
			t.Fatalf("the status of a member who %s is still listed", how)
		}
	}
}

func checkPayloadLimit(ctx context.Context, t *T) {
	a, room := t.k.room(ctx, t, "payload limit", adp.VisibilityPublic, nil)
	big := strings.Repeat("x", 65<<10)
	base := a.base(ctx, t, room, adp.TypeMessageCreate)
	_, err := a.Submit(ctx, room, a.sign(ctx, t, adp.TypeMessageCreate, &base, text(big)))
	t.refused(err, identity.CodePayloadTooLarge, "a 65 KiB message")
}

func checkMeRoomsAuth(ctx context.Context, t *T) {
	for _, c := range []struct{ what, token string }{
		{"no Authorization header", ""},
		{"a token that is not a JWT", "not-a-token"},
		{"a forged token", forgedToken(ctx, t, t.k.newAgent(t), t.k.newAgent(t))},
	} {
		ans, err := t.k.do(ctx, http.MethodGet, "/v1/me/rooms", nil, c.token, nil)
		t.ok(err, "GET /v1/me/rooms")
		t.refusedAny(ans.err(), "GET /v1/me/rooms with "+c.what)
	}
}

func checkMeRooms(ctx context.Context, t *T) {
	_, joined := t.k.room(ctx, t, "me joined", adp.VisibilityPublic, nil)
	_, pending := t.k.room(ctx, t, "me pending", adp.VisibilityRestricted, nil)
	a := t.k.newAgent(t)
	created, err := a.CreateRoom(ctx, t.k.createPayload("me created"))
	t.ok(err, "room.create")
	_, err = a.Join(ctx, joined, adp.Join{Role: adp.RoleSpeaker})
	t.ok(err, "join a public room")
	applyFor(ctx, t, a, pending, adp.RoleSpeaker)
	got := map[string]adp.RoomSummary{}
	for s, err := range a.MyRooms(ctx, adp.RoomQuery{}) {
		t.ok(err, "GET /v1/me/rooms")
		got[s.ID] = s
		if len(got) > 1000 {
			break
		}
	}
	for _, c := range []struct{ what, id string }{{"created", created.RoomID}, {"joined", joined}, {"has a pending join request for", pending}} {
		if _, ok := got[c.id]; !ok {
			t.Fatalf("/v1/me/rooms lacks the room the agent %s", c.what)
		}
	}
	if s := got[joined]; s.Role != adp.RoleSpeaker {
		t.Infof("/v1/me/rooms gives the agent's role in the joined room as %q", s.Role)
	}
}

func checkFollow(ctx context.Context, t *T) {
	a, room := t.k.room(ctx, t, "follow", adp.VisibilityPublic, nil)
	b := t.k.member(ctx, t, room, adp.RoleSpeaker)
	_, err := a.SendMessage(ctx, room, text("before following"))
	t.ok(err, "a message")
	// A client of b that has read nothing yet, so the follower delivers
	// the history from seq 1, then the live records; its one replica
	// takes both, so live records are judged by every room rule too.
	fb := t.k.agentFor(t, b.key)
	rep, err := fb.Replica(room)
	t.ok(err, "the follower's replica of the room")
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	items := sse.Follow(fctx, &sse.Options{Client: fb.Client, Replica: rep,
		Origins: &identity.OriginOptions{AllowLoopbackHTTP: t.k.opts.AllowLoopbackHTTP}})
	var last *adp.Record
	wrote := false
	for item, err := range items {
		if err != nil {
			t.Fatalf("following the room after seq %d: %v", seqOf(last), err)
		}
		if item.Kind == sse.KindError {
			t.Infof("the follower recovered from: %v", item.Err)
			continue
		}
		if item.Record == nil {
			continue
		}
		if item.Record.Seq != seqOf(last)+1 {
			t.Fatalf("the follower delivered seq %d after seq %d", item.Record.Seq, seqOf(last))
		}
		last = item.Record
		if last.Seq == 3 && !wrote {
			// Caught up with the history: what follows is live.
			wrote = true
			for i := range 3 {
				who := a
				if i%2 == 1 {
					who = b
				}
				_, err := who.SendMessage(ctx, room, text("while followed"))
				t.ok(err, "a message while followed")
			}
		}
		if last.Seq == 6 {
			return
		}
	}
	t.Fatalf("the follower stopped at seq %d", seqOf(last))
}

func seqOf(r *adp.Record) int64 {
	if r == nil {
		return 0
	}
	return r.Seq
}
