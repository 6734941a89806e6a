package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/archive"
	"github.com/agentprotocols/go-sdk/connector"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/packs"
	"github.com/agentprotocols/go-sdk/profile"
	"github.com/agentprotocols/go-sdk/profile/profiletest"
)

// result is what a run produced, for the caller and the tests.
type result struct {
	outDir string
	roomID string
	// archived are the record hashes of the host's archive, by seq - 1.
	archived []envelope.Hash
	// delivered are the records the SSE follower delivered, in delivery
	// order; they must be the archived ones, each once, in seq order.
	delivered []adp.RecordRef
	// notices counts the follower's transient items (agent status and
	// join-request notices), which are never records.
	notices int
	// held is the head-mismatch moment: the refused write, the held
	// draft and its revision.
	held   *held
	report *archive.Report
}

// agent is one participant: a key, an ADP client and a verified profile.
type agent struct {
	key    *identity.PrivateKey
	client *adp.Client
	name   string
	role   adp.Role
}

func (a *agent) id() identity.AgentID { return a.key.AgentID() }

// progress prints the numbered step lines on standard error.
type progress struct {
	w     io.Writer
	n     int
	total int
	start time.Time
}

func (p *progress) step(format string, args ...any) {
	p.n++
	if p.w == nil {
		return
	}
	fmt.Fprintf(p.w, "discussion: [%2d/%d %5.2fs] %s\n", p.n, p.total, time.Since(p.start).Seconds(), fmt.Sprintf(format, args...))
}

func (p *progress) note(format string, args ...any) {
	if p.w == nil {
		return
	}
	fmt.Fprintf(p.w, "discussion:               %s\n", fmt.Sprintf(format, args...))
}

// steps is the number of progress steps demo prints.
const steps = 12

// The three names the first agents take; further agents are numbered.
var names = []string{"Mira", "Ravi", "Sol", "Ines", "Tomas", "Yuki"}

func agentName(i int) string {
	if i < len(names) {
		return names[i]
	}
	return fmt.Sprintf("Agent%d", i+1)
}

// script is the discussion the participants hold, in turn.
var script = []string{
	"I'd start with the test stage: a failing test should stop the review before anyone reads the diff.",
	"Agreed on ordering, but the security pass finds the expensive problems. Can it run in parallel?",
	"Parallel is fine if the two stages never edit the same file. Otherwise we merge conflicting fixes.",
	"Then let the security stage only comment, never push fixes. That removes the conflict.",
	"That also keeps its findings in the record, where the archive can show them later.",
	"One more point: retries. A flaky test must not be able to starve the writer queue.",
	"Let's cap retries at three and surface the flake as a finding instead of hiding it.",
	"Fine by me. The poll should decide between two-stage and single-pass.",
}

// demo runs the whole discussion. Progress goes to stderr unless quiet;
// the transcript (unless quiet) and the report go to stdout.
func demo(ctx context.Context, cfg *config, stdout, stderr io.Writer) (res *result, err error) {
	timeout := cfg.timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	p := &progress{w: stderr, total: steps, start: time.Now()}
	if cfg.quiet {
		p.w = nil
	}
	res = &result{outDir: cfg.out}

	// 1. The reference host on a real loopback listener.
	origin, stopHost, err := startHost(ctx)
	if err != nil {
		return res, fmt.Errorf("starting the host: %w", err)
	}
	defer stopHost()
	p.step("reference host (adphost) listening on %s", origin)

	// 2. A profile service, also in-process on loopback.
	profiles := profiletest.NewServer(nil)
	defer profiles.Close()
	p.step("profile service (profile/profiletest) listening on %s", profiles.URL)

	// 3. Agents with fresh keys and signed, verified profiles.
	httpc := &http.Client{Timeout: 15 * time.Second}
	agents := make([]*agent, cfg.agents)
	pc := profiles.NewClient(nil)
	for i := range agents {
		a, err := newAgent(ctx, origin, httpc, pc, i)
		if err != nil {
			return res, fmt.Errorf("agent %d: %w", i+1, err)
		}
		agents[i] = a
	}
	byID := map[identity.AgentID]*agent{}
	for _, a := range agents {
		byID[a.id()] = a
	}
	p.step("%d agents with fresh Ed25519 keys; each profile signed, published and read back verified", len(agents))
	for _, a := range agents {
		p.note("%-6s %s (%s)", a.name, a.id(), a.role)
	}
	mod, parts := agents[0], agents[1:]

	// 4. The moderator creates a restricted room with two registered
	// packs and a type of its own.
	create, err := mod.client.CreateRoom(ctx, roomCreate(time.Now()))
	if err != nil {
		return res, fmt.Errorf("room.create: %w", err)
	}
	room := create.RoomID
	res.roomID = room
	p.step("%s created room %s (restricted; types: adp:reactions/1.0, adp:deliberation/1.0, review.finding)", mod.name, room)

	// 5. The moderator follows the room over SSE the whole time.
	fol, err := startFollower(ctx, origin, httpc, mod.key, room)
	if err != nil {
		return res, err
	}
	defer fol.stop()
	p.step("%s follows the room over SSE (package sse), verifying every record by every room rule", mod.name)

	// 6. Join requests, reviewed by the moderator.
	for _, a := range parts {
		if err := admit(ctx, mod, a, room); err != nil {
			return res, fmt.Errorf("%s joining: %w", a.name, err)
		}
	}
	p.step("%d join requests reviewed and approved by %s; each applicant joined as speaker", len(parts), mod.name)

	// 7. The discussion: messages with mentions and references, and
	// reactions to them.
	opening, err := mod.client.SendMessage(ctx, room, text(
		"Welcome. Question for today: which review pipeline do we adopt? Findings go in review.finding; we close with a poll."),
		ids(parts)...)
	if err != nil {
		return res, fmt.Errorf("opening message: %w", err)
	}
	prev := opening
	for i := range cfg.messages {
		a, next := parts[i%len(parts)], parts[(i+1)%len(parts)]
		line := script[i%len(script)]
		if i >= len(script) {
			line = fmt.Sprintf("%s (round %d)", line, i/len(script)+1)
		}
		m := adp.Message{ContentType: "text/plain", Content: adp.TextContent(line), References: []envelope.Hash{prev.Envelope.Hash()}}
		rec, err := a.client.SendMessage(ctx, room, m, next.id())
		if err != nil {
			return res, fmt.Errorf("message %d: %w", i+1, err)
		}
		reaction := "agree"
		if i%3 == 1 {
			reaction = "important"
		}
		if _, err := next.client.SendCustom(ctx, room, "reaction.create", map[string]any{
			"event_id": rec.Envelope.Hash().String(), "reaction": reaction,
		}); err != nil {
			return res, fmt.Errorf("reaction %d: %w", i+1, err)
		}
		prev = rec
	}
	p.step("%d messages, each mentioning the next speaker and referencing the one before; each with a reaction", cfg.messages)

	// 8. A finding in the room's own type.
	finding, err := parts[0].client.SendCustom(ctx, room, "review.finding", map[string]any{
		"severity": "high", "summary": "The retry loop can starve the writer queue under a flaky test.",
		"file": "internal/queue/retry.go",
	}, mod.id())
	if err != nil {
		return res, fmt.Errorf("review.finding: %w", err)
	}
	if _, err := mod.client.SendCustom(ctx, room, "reaction.create", map[string]any{
		"event_id": finding.Envelope.Hash().String(), "reaction": "important",
	}); err != nil {
		return res, fmt.Errorf("reaction to the finding: %w", err)
	}
	p.step("%s posted a review.finding (the room's own type, validated against its schema); %s marked it important", parts[0].name, mod.name)

	// 9. Two agents write on the same head.
	hm, err := headMismatch(ctx, origin, httpc, room, parts[0], parts[1], p)
	if err != nil {
		return res, err
	}
	res.held = hm

	// 10. A poll with votes, and the close.
	poll, err := mod.client.SendCustom(ctx, room, "poll.create", map[string]any{
		"poll_id": "pipeline", "question": "Which review pipeline do we adopt?",
		"options": []map[string]string{
			{"id": "two-stage", "label": "Two-stage: tests, then security (comment-only)"},
			{"id": "single", "label": "Single pass"},
		},
		"max_choices": 1,
	}, ids(parts)...)
	if err != nil {
		return res, fmt.Errorf("poll.create: %w", err)
	}
	for i, a := range parts {
		choice := "two-stage"
		if i == len(parts)-1 && len(parts) > 2 {
			choice = "single"
		}
		if _, err := a.client.SendCustom(ctx, room, "poll.vote", map[string]any{
			"poll_event_id": poll.Envelope.Hash().String(), "option_ids": []string{choice},
		}); err != nil {
			return res, fmt.Errorf("%s voting: %w", a.name, err)
		}
	}
	closed, err := mod.client.CloseRoom(ctx, room, adp.Notice{
		Reason:     "Decided by poll: two-stage review, security comment-only, retries capped at three.",
		References: []envelope.Hash{poll.Envelope.Hash(), finding.Envelope.Hash()},
	})
	if err != nil {
		return res, fmt.Errorf("room.close: %w", err)
	}
	p.step("poll with %d votes; %s closed the room at seq %d", len(parts), mod.name, closed.Seq)

	// 11. The follower reaches the close.
	recs, notices, err := fol.wait(closed.Seq)
	res.notices = notices
	for _, r := range fol.records() {
		res.delivered = append(res.delivered, adp.RecordRef{Seq: r.Seq, Hash: r.Hash})
	}
	if err != nil {
		return res, fmt.Errorf("SSE follower: %w", err)
	}
	p.step("the SSE follower delivered %d records (and %d transient notices) up to room.close", len(recs), notices)

	// 12. Archive: fetch, write, verify offline, compare with the stream.
	if res.outDir == "" {
		if res.outDir, err = os.MkdirTemp("", "adp-discussion-"); err != nil {
			return res, err
		}
	}
	if err := writeArchive(ctx, mod.client, room, recs, res); err != nil {
		return res, err
	}
	p.step("archive fetched from the host, written to %s and verified offline (archive.Verify)", res.outDir)

	if err := checkFollowed(res); err != nil {
		return res, err
	}
	if !cfg.quiet {
		names := map[identity.AgentID]string{}
		for _, a := range agents {
			names[a.id()] = a.name
		}
		w := bufio.NewWriter(stdout)
		notes := map[int64]string{}
		if h := res.held; h != nil {
			why := ""
			if h.signals != "" {
				why = "; " + h.signals
			}
			notes[h.current] = fmt.Sprintf("%s's message %q, also signed on head #%d, was refused: room_head_mismatch, current head #%d%s. The connector held it as a draft; %s revised it.",
				parts[1].name, h.refused, h.base, h.current, why, parts[1].name)
		}
		writeTranscript(w, recs, names, notes)
		w.Flush()
	}
	w := bufio.NewWriter(stdout)
	writeReport(w, res, byID)
	fmt.Fprintf(w, "elapsed:  %.2fs\n", time.Since(p.start).Seconds())
	w.Flush()
	return res, nil
}

// startHost serves adphost on 127.0.0.1:0 and returns its origin and a
// function that stops the host and its server.
func startHost(ctx context.Context) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	origin, err := identity.ParseOrigin("http://"+ln.Addr().String(), &identity.OriginOptions{AllowLoopbackHTTP: true})
	if err != nil {
		ln.Close()
		return "", nil, err
	}
	h, err := adphost.New(ctx, &adphost.Options{
		Origin: origin,
		// One demo writes faster than the §21 per-minute defaults
		// allow; the quotas themselves are tested in adphost.
		RateLimits: &adphost.RateLimits{Message: 1000, Signal: 1000, Control: 1000, JoinRequests: 100, StatusWrites: 100},
	})
	if err != nil {
		ln.Close()
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	stop := func() {
		h.Close() // end the live streams, which Shutdown would wait for
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}
	return origin.String(), stop, nil
}

// newAgent makes agent i: a fresh key, an ADP client, and a profile
// published through the client's Author (one nonce source per key) and
// read back verified.
func newAgent(ctx context.Context, origin string, httpc *http.Client, pc *profile.Client, i int) (*agent, error) {
	key, err := identity.GenerateKey(nil)
	if err != nil {
		return nil, err
	}
	c, err := adp.NewClient(origin, &adp.ClientOptions{Signer: key, HTTPClient: httpc, AllowLoopbackHTTP: true})
	if err != nil {
		return nil, err
	}
	a := &agent{key: key, client: c, name: agentName(i), role: adp.RoleSpeaker}
	desc := "Reviewer of Go services."
	caps := []string{"code-review"}
	if i == 0 {
		a.role = adp.RoleModerator
		desc = "Moderates review-strategy discussions."
		caps = []string{"moderation", "code-review"}
	}
	if _, err := pc.Update(ctx, c.Author(), profile.Payload{Name: a.name, Description: &desc, Capabilities: caps}); err != nil {
		return nil, fmt.Errorf("profile update: %w", err)
	}
	v, err := pc.Get(ctx, key.AgentID())
	if err != nil {
		return nil, fmt.Errorf("profile read: %w", err)
	}
	a.name = v.Document.Name // what the verified profile says
	return a, nil
}

// findingDecl declares the room's own type, review.finding.
const findingDecl = `{"type":"review.finding","kind":"message","title":"Review finding",
 "description":"A problem found while reviewing, with its severity.",
 "schema":{"type":"object","required":["severity","summary"],
  "properties":{"severity":{"type":"string","enum":["low","medium","high"]},
   "summary":{"type":"string","minLength":1,"maxLength":500},
   "file":{"type":"string","minLength":1}},
  "additionalProperties":false}}`

func roomCreate(now time.Time) adp.RoomCreate {
	decls := []packs.Declaration{}
	for _, d := range []string{`{"use":"adp:reactions/1.0"}`, `{"use":"adp:deliberation/1.0"}`, findingDecl} {
		decl, err := packs.ParseDeclaration([]byte(d))
		if err != nil {
			panic(err) // a constant of this file
		}
		decls = append(decls, decl)
	}
	return adp.RoomCreate{
		Topic:      "Which code review pipeline do we adopt?",
		Agenda:     "1. Proposals\n2. Findings\n3. Poll and decision",
		Guidance:   "Mention the agent you answer. Post problems as review.finding.",
		Visibility: adp.VisibilityRestricted,
		StartTime:  now.UnixMilli(),
		EndTime:    now.Add(time.Hour).UnixMilli(),
		Tags:       []string{"demo", "code-review"},
		Language:   "en",
		Types:      decls,
	}
}

// admit has a apply to the restricted room, the moderator approve the
// request (the room.join.review carries it verbatim), and a join.
func admit(ctx context.Context, mod, a *agent, room string) error {
	perspective := "reviewer"
	reason := "I review Go services."
	jr, err := a.client.RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleSpeaker, Perspective: &perspective, Reason: &reason})
	if err != nil {
		return fmt.Errorf("join request: %w", err)
	}
	pending, err := mod.client.JoinRequests(ctx, room)
	if err != nil {
		return fmt.Errorf("listing join requests: %w", err)
	}
	var req *adp.JoinRequestResource
	for i := range pending {
		if pending[i].Request.ID == jr.Request.ID {
			req = &pending[i]
		}
	}
	if req == nil || req.Status != adp.JoinPending {
		return fmt.Errorf("request %s is not pending for the moderator", jr.Request.ID)
	}
	if _, err := mod.client.ReviewJoin(ctx, room, adp.JoinReview{
		Request: req.Request, Decision: adp.DecisionApprove, Role: adp.RoleSpeaker, Reason: "welcome",
	}); err != nil {
		return fmt.Errorf("review: %w", err)
	}
	if _, err := a.client.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker, RequestID: jr.Request.ID}); err != nil {
		return fmt.Errorf("join: %w", err)
	}
	return nil
}

// held is what the head-mismatch moment produced.
type held struct {
	base, current int64  // the head both wrote on, and the head after a's write
	refused       string // the text of b's refused write
	signals       string // the signals among the changes, which moved no head ("" if none)
	draftID       string // the connector's held draft
	changes       int    // records the connector showed with the draft
	revised       int64  // seq of the revised message
}

// headMismatch has a and b write on the same head. a writes through its
// ADP client; b writes through the MCP connector's engine
// (examples/connector/engine, in-process), which signs on the head it last
// presented to b's session. The host refuses b's write with
// room_head_mismatch and the current head; the engine re-reads, holds the
// draft and returns what changed. b reads the draft, revises it, and the
// engine signs it again on the new head.
func headMismatch(ctx context.Context, origin string, httpc *http.Client, room string, a, b *agent, p *progress) (*held, error) {
	dir, err := os.MkdirTemp("", "adp-discussion-connector-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	keyFile := filepath.Join(dir, "key.dev")
	if _, err := connector.ImportKeyFileUnencryptedDev(keyFile, b.key.Seed()); err != nil {
		return nil, err
	}
	key, err := connector.LoadKeyFileUnencryptedDev(keyFile)
	if err != nil {
		return nil, err
	}
	eng, err := connector.Open(ctx, &connector.Options{
		Dir: filepath.Join(dir, "state"), Key: key,
		Hosts:      []connector.HostConfig{{Host: origin, Label: "demo"}},
		HTTPClient: httpc, AllowLoopbackHTTP: true,
		// The engine syncs when asked; without a live subscription it
		// learns that the room moved from the host's answer.
		NoSubscribe: true,
	})
	if err != nil {
		return nil, fmt.Errorf("opening the connector engine: %w", err)
	}
	defer eng.Close()
	const session = "sol-mcp-session"
	if _, err := b.client.PutAgentStatus(ctx, room, adp.AgentStatusInput{State: "drafting", Summary: "a reply on the retry cap"}); err != nil {
		return nil, fmt.Errorf("agent status: %w", err)
	}
	// b reads the room: the engine presents the head to b's session.
	no := false
	seen, err := eng.RoomOpen(ctx, session, connector.RoomOpenInput{Host: origin, RoomID: room, Subscribe: &no})
	if err != nil {
		return nil, fmt.Errorf("connector room_open: %w", err)
	}
	h := &held{base: seen.Sync.HeadSeq, refused: "Retries: let's make it five."}
	// a writes first, on the same head.
	won, err := a.client.SendMessage(ctx, room, text("Retries: three, then a finding. Final answer from me."))
	if err != nil {
		return nil, err
	}
	h.current = won.Seq
	// b's write, signed on the presented head, is refused by the host.
	w, err := eng.SendMessage(ctx, session, connector.SendMessageInput{RoomID: room, Content: h.refused})
	if err != nil {
		return nil, fmt.Errorf("connector send_message: %w", err)
	}
	if w.Status != connector.StatusHeld || w.Draft == nil || w.Draft.Reason != string(adp.CodeRoomHeadMismatch) {
		return nil, fmt.Errorf("connector send_message on a stale head: want a held draft (room_head_mismatch), got %s", w.Status)
	}
	if w.Draft.BaseSeq != h.base || w.Draft.CurrentSync.HeadSeq != won.Seq {
		return nil, fmt.Errorf("held draft: base %d, current head %d; want %d and %d", w.Draft.BaseSeq, w.Draft.CurrentSync.HeadSeq, h.base, won.Seq)
	}
	h.draftID, h.changes, h.signals = w.Draft.ID, len(w.Changes), signals(w.Changes)
	p.step("%s and %s both wrote on head %d; %s's landed; the host refused %s's %q with room_head_mismatch (current head %d)",
		a.name, b.name, h.base, a.name, b.name, clean(h.refused), won.Seq)
	if h.signals != "" {
		p.note("the head went from %d to %d: %s", h.base, won.Seq, h.signals)
	}
	p.note("%s's connector re-read the room and held the draft %s with the %d change(s) %s had not seen: %s", b.name, h.draftID, h.changes, b.name, changeSummary(w.Changes))
	// b reads the draft (this presents the new head) and revises it.
	if _, err := eng.DraftGet(ctx, session, h.draftID); err != nil {
		return nil, fmt.Errorf("connector draft_get: %w", err)
	}
	revised := fmt.Sprintf("Saw %s's message (seq %d): three retries is fine, I withdraw five.", a.name, won.Seq)
	r, err := eng.DraftCommit(ctx, session, connector.DraftCommitInput{
		DraftID: h.draftID, Action: connector.ActionRevise, Content: &revised,
		Mentions: []string{a.id().String()}, References: []string{won.Envelope.Hash().String()},
	})
	if err != nil {
		return nil, fmt.Errorf("connector draft_commit: %w", err)
	}
	if r.Status != connector.StatusSent || r.Item == nil {
		return nil, fmt.Errorf("connector draft_commit revise: %s", r.Status)
	}
	h.revised = r.Item.Seq
	if _, err := b.client.PutAgentStatus(ctx, room, adp.AgentStatusInput{State: "idle"}); err != nil {
		return nil, fmt.Errorf("agent status: %w", err)
	}
	p.note("%s revised the draft; the connector signed it on head %d: accepted at seq %d", b.name, won.Seq, h.revised)
	return h, nil
}

// changeSummary lists the records a held draft came with: each one's seq
// and type, and a message's text.
func changeSummary(items []connector.TimelineItem) string {
	var s []string
	for _, it := range items {
		c := fmt.Sprintf("#%d %s", it.Seq, it.Type)
		if it.Type == adp.TypeMessageCreate {
			c += fmt.Sprintf(" %q", it.Summary)
		}
		s = append(s, c)
	}
	return clean(strings.Join(s, ", "))
}

// signals explains the signals among the changes of a held draft, which
// is why the head can jump by more than one: a signal (a reaction, a
// vote) needs no head and moves none (§6.1). It is "" without signals.
func signals(items []connector.TimelineItem) string {
	var s []string
	for _, it := range items {
		if it.Kind == string(adp.KindSignal) {
			s = append(s, fmt.Sprintf("#%d (%s)", it.Seq, it.Type))
		}
	}
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0] + " is a signal: it needs no head and moves none"
	}
	return strings.Join(s, ", ") + " are signals: they need no head and move none"
}

// writeArchive fetches the host's archive of the ended room, writes it
// with a transcript to res.outDir, and verifies the written files.
func writeArchive(ctx context.Context, c *adp.Client, room string, followed []*adp.Record, res *result) error {
	manifest, records, err := c.Archive(ctx, room)
	if err != nil {
		return fmt.Errorf("fetching the archive: %w", err)
	}
	m, err := archive.ParseManifest(manifest)
	if err != nil {
		return fmt.Errorf("the host's manifest: %w", err)
	}
	mpath := filepath.Join(res.outDir, archive.ManifestFile)
	rpath := filepath.Join(res.outDir, archive.RecordsFile)
	if err := os.WriteFile(rpath, records, 0o644); err != nil {
		return err
	}
	// The transcript is rendered from the records the follower verified.
	var md bytes.Buffer
	t := archive.NewTranscript(&md)
	for _, r := range followed {
		if err := t.Add(r); err != nil {
			return fmt.Errorf("transcript: %w", err)
		}
	}
	if err := t.Close(m); err != nil {
		return fmt.Errorf("transcript: %w", err)
	}
	if err := os.WriteFile(filepath.Join(res.outDir, archive.TranscriptFile), md.Bytes(), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(mpath, manifest, 0o644); err != nil { // last, as archive.WriteDir does
		return err
	}
	rep, err := archive.VerifyFiles(ctx, mpath, rpath, nil)
	res.report = rep
	if err != nil {
		return fmt.Errorf("the archive does not verify: %w", err)
	}
	// The archived record hashes, in seq order, for the comparison with
	// what the follower saw.
	for line := range bytes.SplitSeq(records, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		r, err := adp.ParseRecord(line)
		if err != nil {
			return fmt.Errorf("reading records.jsonl: %w", err)
		}
		if r.Seq != int64(len(res.archived))+1 {
			return fmt.Errorf("records.jsonl: seq %d on line %d", r.Seq, len(res.archived)+1)
		}
		res.archived = append(res.archived, r.Hash)
	}
	return nil
}

// checkFollowed requires the follower to have delivered every archived
// record exactly once, in seq order, and no other.
func checkFollowed(res *result) error {
	seen := map[int64]int{}
	for i, d := range res.delivered {
		if seen[d.Seq]++; seen[d.Seq] > 1 {
			return fmt.Errorf("the SSE follower delivered seq %d more than once", d.Seq)
		}
		if d.Seq < 1 || d.Seq > int64(len(res.archived)) {
			return fmt.Errorf("the SSE follower delivered seq %d, which the archive does not hold", d.Seq)
		}
		if d.Hash != res.archived[d.Seq-1] {
			return fmt.Errorf("the SSE follower delivered another record at seq %d than the archive holds", d.Seq)
		}
		if d.Seq != int64(i+1) {
			return fmt.Errorf("the SSE follower delivered seq %d in position %d", d.Seq, i+1)
		}
	}
	if len(res.delivered) != len(res.archived) {
		return fmt.Errorf("the SSE follower delivered %d of the %d archived records", len(res.delivered), len(res.archived))
	}
	return nil
}

func text(s string) adp.Message {
	return adp.Message{ContentType: "text/plain", Content: adp.TextContent(s)}
}

func ids(as []*agent) []identity.AgentID {
	out := make([]identity.AgentID, len(as))
	for i, a := range as {
		out[i] = a.id()
	}
	return out
}

// short abbreviates a hash for progress lines.
func short(h envelope.Hash) string { return h.String()[:10] + "…" }

// compact is a payload's canonical JSON, for types the transcript does not
// know.
func compact(v jsontext.Value) string {
	c := v.Clone()
	if err := c.Canonicalize(); err != nil {
		return string(v)
	}
	return strings.TrimSpace(string(c))
}
