package archive_test

import (
	"bytes"
	"context"
	"crypto/sha3"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adp/adptest"
	"github.com/agentprotocols/go-sdk/archive"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/b64url"
	"github.com/agentprotocols/go-sdk/internal/fixtures"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
	"github.com/agentprotocols/go-sdk/packs"
)

const later = adp.Draft20260924

// vectorArchive is an archive of the 2026-09-24 vectors' records (or
// redacted records), as §18 describes it.
func vectorArchive(t testing.TB, redacted bool) (manifest, log []byte) {
	t.Helper()
	manifest, log, err := fixtures.LaterVectorArchive(redacted)
	if err != nil {
		t.Fatal(err)
	}
	return manifest, log
}

func verifyBytes(t testing.TB, manifest, log []byte, opts *archive.VerifyOptions) (*archive.Report, error) {
	t.Helper()
	var mo archive.ManifestOptions
	if opts != nil {
		mo.Draft, mo.AllowLoopbackHTTP = opts.Draft, opts.AllowLoopbackHTTP
	}
	m, err := archive.ParseManifestWith(manifest, &mo)
	if err != nil {
		return &archive.Report{Failure: &archive.Failure{Code: archive.CodeInvalidManifest, Message: err.Error()}}, err
	}
	return archive.Verify(context.Background(), m, bytes.NewReader(log), opts)
}

// An archive of the vectors' five records verifies, with or without the
// redacted record, and the room need not have ended (§18). The redacted
// record is reported by seq.
func TestLaterVectorArchive(t *testing.T) {
	for _, redacted := range []bool{false, true} {
		manifest, log := vectorArchive(t, redacted)
		m, err := archive.ParseManifestWith(manifest, nil)
		if err != nil {
			t.Fatal(err)
		}
		if m.Draft != later {
			t.Fatalf("manifest draft %v", m.Draft)
		}
		rep, err := archive.Verify(context.Background(), m, bytes.NewReader(log), nil)
		if err != nil {
			t.Fatalf("redacted %v: %v", redacted, err)
		}
		if !rep.Valid || rep.Draft != later || rep.Records != 5 || rep.Head.Seq != 5 || rep.Status != adp.StatusActive || rep.Host != "https://api.example.com" {
			t.Fatalf("report %+v", rep)
		}
		want := 0
		if redacted {
			want = 1
			if rep.Redacted[0].Seq != 3 || rep.Redacted[0].Type != adp.TypeMessageCreate {
				t.Fatalf("redactions %+v", rep.Redacted)
			}
		}
		if len(rep.Redacted) != want {
			t.Fatalf("%d redactions reported, want %d", len(rep.Redacted), want)
		}
		// The manifest survives its own encoding.
		b, err := m.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		m2, err := archive.ParseManifestWith(b, &archive.ManifestOptions{Draft: later})
		if err != nil || m2.LastHash != m.LastHash || m2.URL != m.URL || m2.Draft != later {
			t.Fatalf("manifest round trip: %v", err)
		}
		for _, k := range []string{"events_sha3_256", "archive_root", "event_count", "first_seq", `"host"`} {
			if bytes.Contains(b, []byte(k)) {
				t.Fatalf("a 2026-09-24 manifest carries %s:\n%s", k, b)
			}
		}
	}
}

// laterRoom is a 2026-09-24 room built through the SDK's host path: host
// binding, open and invited roles, a signed join request reviewed, an
// external pack pinned by a sha3-256 digest, a registered pack, messages
// on one head, a control write and a contract write. It has not ended.
func laterRoom(t testing.TB) (*adptest.World, []packs.PackDocument) {
	t.Helper()
	sum := sha3.Sum256(fixtures.TriagePack)
	triage := packs.PackDocument{Pack: fixtures.TriagePackURI, Digest: "sha3-256:" + b64url.Encode(sum[:]), Raw: fixtures.TriagePack}
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg004xx", &adp.RoomOptions{
		Draft: later, Host: adptest.Host, Packs: &packs.Options{Fetcher: packs.StaticFetcher{triage}},
	})
	decl := func(s string) packs.Declaration {
		d, err := later.ParseDeclaration([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	w.PublicRoom(func(p *adp.RoomCreate) {
		p.Visibility = adp.VisibilityRestricted
		p.Policy = &adp.Policy{OpenRoles: []adp.Role{adp.RoleObserver}, Invites: map[identity.AgentID]adp.Role{w.ID("alice"): adp.RoleSpeaker}}
		p.Types = []packs.Declaration{decl(`{"use":"adp:moderation/1.0"}`), decl(`{"pack":"` + triage.Pack + `","digest":"` + triage.Digest + `"}`)}
	})
	w.Join("alice", adp.RoleSpeaker)
	w.Join("carol", adp.RoleObserver)
	req, err := adp.NewJoinRequest(w.Ctx, w.Author("bob"), later, w.Room.ID(), adp.JoinRequestPayload{Role: adp.RoleSpeaker, Reason: ptrTo("I review retries")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Room.CheckJoinRequest(w.Ctx, req, w.Now); err != nil {
		t.Fatal(err)
	}
	w.Must(adp.NewSignedJoinReview(w.Ctx, w.Author("creator"), w.Base(adp.TypeRoomJoinReview), adp.SignedJoinReview{Request: req, Decision: adp.DecisionApprove, Role: adp.RoleSpeaker}))
	head := w.Base(adp.TypeMessageCreate)
	m1 := w.Must(adp.NewMessage(w.Ctx, w.Author("alice"), head, adp.Message{ContentType: "text/plain", Content: adp.TextContent("first")}))
	w.Must(adp.NewMessage(w.Ctx, w.Author("bob"), head, adp.Message{ContentType: "text/plain", Content: adp.TextContent("second, same head")}))
	w.OK(w.Custom("carol", "triage.label", `{"label":"bug"}`))
	w.OK(w.Custom("creator", "claim.update", `{"claim_id":"c1","owner":"`+w.ID("alice").String()+`","state":"claimed"}`))
	w.Must(adp.NewRoomUpdate(w.Ctx, w.Author("creator"), w.Base(adp.TypeRoomUpdate), adp.RoomUpdate{Guidance: ptrTo("cite sources")}))
	w.Must(adp.NewMessage(w.Ctx, w.Author("alice"), w.Base(adp.TypeMessageCreate),
		adp.Message{ContentType: "text/plain", Content: adp.TextContent("third"), References: []envelope.Hash{m1.Envelope.Hash()}}))
	return w, w.Room.Registry().Documents()
}

func ptrTo[T any](v T) *T { return &v }

var laterOpts = &archive.Options{Draft: later, URL: "https://api.example.com/v1/rooms/d8ftedhpqhsusbg004xx", Now: func() time.Time { return adptest.T0.Add(time.Minute) }}

// Interop: a 2026-09-24 room built and archived by the SDK verifies
// again from its files, after its records and manifest went through JSON,
// with the external pack beside the manifest and listed in its packs.
func TestLaterRoundTrip(t *testing.T) {
	w, docs := laterRoom(t)
	dir := t.TempDir()
	m, err := archive.WriteDir(dir, w.Records, docs, laterOpts)
	if err != nil {
		t.Fatal(err)
	}
	if m.Draft != later || len(m.Packs) != 1 || !strings.HasPrefix(m.Packs[0].Digest, "sha3-256:") {
		t.Fatalf("manifest %+v", m)
	}
	rep, err := archive.VerifyDir(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Valid || rep.Draft != later || rep.Records != int64(len(w.Records)) || rep.Head != w.Room.Head() || len(rep.Packs) != 1 {
		t.Fatalf("report %+v", rep)
	}
	// Two messages based on one head; the head moved only with the
	// claim and the update.
	if rep.Head.Seq != int64(len(w.Records))-1 {
		t.Fatalf("head %d of %d records", rep.Head.Seq, len(w.Records))
	}
	if m, ok := memberOf(rep, w.ID("bob")); !ok || m.Role != adp.RoleSpeaker || m.Status != adp.MemberActive {
		t.Fatalf("bob %+v", m)
	}
	md, err := os.ReadFile(filepath.Join(dir, archive.TranscriptFile))
	if err != nil || !bytes.Contains(md, []byte("Join request of")) {
		t.Fatalf("transcript: %v\n%s", err, md)
	}
	// Laid out after its URLs instead (packs/1.json, the manifest's url
	// for it), the pack document is still found, by that url and its
	// digest; under a name matching neither, it is missing.
	name, _ := archive.PackFileName(m.Packs[0].Digest)
	if err := os.Rename(filepath.Join(dir, archive.PacksDir, name), filepath.Join(dir, archive.PacksDir, "1.json")); err != nil {
		t.Fatal(err)
	}
	m.Packs[0].URL = laterOpts.URL + "/archive/packs/1.json"
	mb, _ := m.MarshalJSON()
	if err := os.WriteFile(filepath.Join(dir, archive.ManifestFile), mb, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := archive.VerifyDir(context.Background(), dir, nil); err != nil {
		t.Fatalf("pack named after its url: %v", err)
	}
	if err := os.Rename(filepath.Join(dir, archive.PacksDir, "1.json"), filepath.Join(dir, archive.PacksDir, "2.json")); err != nil {
		t.Fatal(err)
	}
	if rep, err := archive.VerifyDir(context.Background(), dir, nil); !errors.Is(err, adp.ErrPackUnavailable) || rep.Valid {
		t.Fatalf("pack under another name: %v", err)
	}
	os.Rename(filepath.Join(dir, archive.PacksDir, "2.json"), filepath.Join(dir, archive.PacksDir, "1.json"))
	// The same archive pinned to the seed is refused, naming the drafts.
	rep, err = archive.VerifyDir(context.Background(), dir, &archive.VerifyOptions{Draft: adp.Draft20260704})
	if !errors.Is(err, archive.ErrInvalidManifest) || !strings.Contains(err.Error(), "2026-09-24") || !strings.Contains(err.Error(), "2026-07-04") || rep.Failure == nil {
		t.Fatalf("seed mode on a 2026-09-24 archive: %v", err)
	}
}

func memberOf(rep *archive.Report, id identity.AgentID) (adp.Member, bool) {
	i := slices.IndexFunc(rep.Members, func(m adp.Member) bool { return m.ID == id })
	if i < 0 {
		return adp.Member{}, false
	}
	return rep.Members[i], true
}

// The reverse: a seed archive verified in 2026-09-24 mode is refused with
// an error naming both drafts, and so are seed records under a 2026-09-24
// manifest.
func TestLaterRefusesSeedArchive(t *testing.T) {
	recs, docs, _ := externalRoom(t)
	dir := t.TempDir()
	if _, err := archive.WriteDir(dir, recs, docs, fixedClock); err != nil {
		t.Fatal(err)
	}
	if _, err := archive.VerifyDir(context.Background(), dir, nil); err != nil {
		t.Fatalf("the seed archive: %v", err)
	}
	_, err := archive.VerifyDir(context.Background(), dir, &archive.VerifyOptions{Draft: later})
	if !errors.Is(err, archive.ErrInvalidManifest) || !strings.Contains(err.Error(), "2026-07-04") || !strings.Contains(err.Error(), "2026-09-24") {
		t.Fatalf("2026-09-24 mode on a seed archive: %v", err)
	}
	// Seed records under a 2026-09-24 manifest: refused at seq 1.
	_, log, _ := build(t, recs, fixedClock)
	m := &archive.Manifest{Draft: later, Protocol: adp.Protocol, Type: archive.ManifestType, RoomID: recs[0].RoomID,
		URL: "https://h.example/r", LastSeq: int64(len(recs)), LastHash: recs[len(recs)-1].Hash, Formats: map[string]string{"jsonl": "https://h.example/r.jsonl"}}
	rep, err := archive.Verify(context.Background(), m, bytes.NewReader(log), nil)
	wantFailure(t, rep, err, adp.CodeInvalidRecord, 1)
	if !strings.Contains(err.Error(), "2026-07-04-draft record") {
		t.Fatalf("the error does not name the draft: %v", err)
	}
}

// What §18 refuses, the verifier refuses: each tamper of a valid
// 2026-09-24 archive fails with its code (exit 1 from the CLI).
func TestLaterTamper(t *testing.T) {
	w, docs := laterRoom(t)
	m, log, _ := build(t, w.Records, &archive.Options{Draft: later, URL: laterOpts.URL, Now: laterOpts.Now, Packs: []archive.ArchivedPack{{
		Pack: docs[0].Pack, Digest: docs[0].Digest, URL: laterOpts.URL + "/archive/packs/1.json"}}})
	manifest, err := m.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	vopts := &archive.VerifyOptions{Packs: docs}
	if rep, err := verifyBytes(t, manifest, log, vopts); err != nil || !rep.Valid {
		t.Fatalf("the untampered archive: %v", err)
	}
	ls := lines(log)
	replace := func(i int, old, new string) []byte {
		c := slices.Clone(ls)
		c[i] = bytes.Replace(c[i], []byte(old), []byte(new), 1)
		if bytes.Equal(c[i], ls[i]) {
			t.Fatalf("line %d has no %q", i+1, old)
		}
		return join(c)
	}
	mut := func(f func(map[string]any)) []byte {
		var o map[string]any
		if err := strictjson.UnmarshalOpen(manifest, &o); err != nil {
			t.Fatal(err)
		}
		f(o)
		b, err := json.Marshal(o, json.Deterministic(true))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	at := func(i int) string { return `"accepted_at":` + strconv.FormatInt(w.Records[i].ReceivedAt, 10) }
	last := len(ls) - 1
	cases := []struct {
		name     string
		manifest []byte
		log      []byte
		opts     *archive.VerifyOptions
		code     identity.Code
		seq      int64
	}{
		{"a gap in seq", manifest, join(slices.Delete(slices.Clone(ls), 4, 5)), vopts, adp.CodeInvalidRecord, 5},
		{"accepted_at changed", manifest, replace(3, at(3), `"accepted_at":1`), vopts, adp.CodeInvalidRecord, 4},
		{"a broken signature", manifest, replace(2, `"signature":"`, `"signature":"A`), vopts, identity.CodeInvalidSignature, 3},
		{"last_hash of another record", mut(func(o map[string]any) { o["last_hash"] = w.Records[2].Hash.String() }), log, vopts, archive.CodeArchiveMismatch, int64(last + 1)},
		{"last_seq beyond the log", mut(func(o map[string]any) { o["last_seq"] = float64(last + 2) }), log, vopts, archive.CodeArchiveMismatch, int64(last + 2)},
		{"records beyond last_seq", mut(func(o map[string]any) { o["last_seq"] = float64(last) }), log, vopts, archive.CodeArchiveMismatch, int64(last + 1)},
		{"the archived pack document is missing", manifest, log, nil, adp.CodePackUnavailable, 0},
		{"the archived pack document is altered", manifest, log, &archive.VerifyOptions{Packs: []packs.PackDocument{{Digest: docs[0].Digest, Raw: append(slices.Clone(docs[0].Raw), ' ')}}}, adp.CodePackUnavailable, 0},
		{"packs does not list an imported pack", mut(func(o map[string]any) { delete(o, "packs") }), log, vopts, archive.CodeArchiveMismatch, 0},
		{"packs lists a pack the room never imported", mut(func(o map[string]any) {
			o["packs"] = append(o["packs"].([]any), map[string]any{"pack": "https://x.example/p.json", "digest": packs.Digest([]byte("{}")), "url": "https://x.example/p"})
		}), log, &archive.VerifyOptions{Packs: append(slices.Clone(docs), packs.PackDocument{Digest: packs.Digest([]byte("{}")), Raw: []byte("{}")})}, archive.CodeArchiveMismatch, 0},
		{"no url", mut(func(o map[string]any) { delete(o, "url") }), log, vopts, archive.CodeInvalidManifest, 0},
		{"no jsonl format", mut(func(o map[string]any) { o["formats"] = map[string]any{"markdown": "https://h.example/a.md"} }), log, vopts, archive.CodeInvalidManifest, 0},
		{"an http url", mut(func(o map[string]any) { o["url"] = "http://api.example.com/v1/rooms/x" }), log, vopts, archive.CodeInvalidManifest, 0},
		{"a loopback url where loopback is not allowed", mut(func(o map[string]any) { o["url"] = "http://127.0.0.1:8080/v1/rooms/x" }), log, vopts, archive.CodeInvalidManifest, 0},
		{"a room id that is not one", mut(func(o map[string]any) { o["room_id"] = "room/1" }), log, vopts, archive.CodeInvalidManifest, 0},
		{"a pack digest of another algorithm", mut(func(o map[string]any) {
			o["packs"].([]any)[0].(map[string]any)["digest"] = "sha512:" + strings.Repeat("A", 43)
		}), log, vopts, archive.CodeInvalidManifest, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := verifyBytes(t, tc.manifest, tc.log, tc.opts)
			if rep.Failure != nil && tc.code == archive.CodeInvalidManifest {
				if !errors.Is(err, archive.ErrInvalidManifest) {
					t.Fatalf("got %v", err)
				}
				return
			}
			wantFailure(t, rep, err, tc.code, tc.seq)
		})
	}
	// A loopback URL is admitted where the caller allows loopback HTTP.
	lb := mut(func(o map[string]any) { o["url"] = "http://127.0.0.1:8080/v1/rooms/x" })
	if _, err := verifyBytes(t, lb, log, &archive.VerifyOptions{Packs: docs, AllowLoopbackHTTP: true}); err != nil {
		t.Fatalf("loopback allowed: %v", err)
	}
}

// Replaying an archive includes the §5.1 base rules: a message based
// before a later contract record, or a control write not at the head,
// makes the archive invalid — records no host following the draft would
// have accepted, linked into a valid chain by hand.
func TestLaterReplayFreshness(t *testing.T) {
	for _, tc := range []struct {
		name string
		last func(w *adptest.World, stale adp.Base) *envelope.Envelope
	}{
		{"a message based before a contract write", func(w *adptest.World, stale adp.Base) *envelope.Envelope {
			env, err := adp.NewMessage(w.Ctx, w.Author("creator"), stale, adp.Message{ContentType: "text/plain", Content: adp.TextContent("late")})
			if err != nil {
				t.Fatal(err)
			}
			return env
		}},
		{"a control write not at the head", func(w *adptest.World, stale adp.Base) *envelope.Envelope {
			env, err := adp.NewCustom(w.Ctx, w.Author("creator"), stale, w.Room.Registry(), "claim.update",
				jsontext.Value(`{"claim_id":"c2","owner":"`+w.ID("creator").String()+`","state":"claimed"}`))
			if err != nil {
				t.Fatal(err)
			}
			return env
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := adptest.NewWorld(t, "d8ftedhpqhsusbg005xx", &adp.RoomOptions{Draft: later, Host: adptest.Host})
			w.PublicRoom(func(p *adp.RoomCreate) {
				d, _ := later.ParseDeclaration([]byte(`{"use":"adp:moderation/1.0"}`))
				p.Types = []packs.Declaration{d}
			})
			stale := w.Base(adp.TypeMessageCreate)
			w.Must(adp.NewRoomUpdate(w.Ctx, w.Author("creator"), w.Base(adp.TypeRoomUpdate), adp.RoomUpdate{Guidance: ptrTo("g")}))
			env := tc.last(w, stale)
			if err := w.Room.Check(w.Ctx, env, w.Now); !errors.Is(err, adp.ErrRoomHeadMismatch) {
				t.Fatalf("the host would have accepted it: %v", err)
			}
			prev := w.Records[len(w.Records)-1]
			recs := append(slices.Clone(w.Records), adp.NewRecordIn(later, prev.RoomID, prev, prev.ReceivedAt+1, env))
			m, log, _ := build(t, recs, &archive.Options{Draft: later, URL: "https://api.example.com/v1/rooms/r", Now: laterOpts.Now})
			rep, err := archive.Verify(context.Background(), m, bytes.NewReader(log), nil)
			wantFailure(t, rep, err, adp.CodeRoomHeadMismatch, int64(len(recs)))
		})
	}
}

// A redacted built-in record other than message.create makes the
// archive invalid; a redacted custom record of a type not defined at its
// seq does too.
func TestLaterRedactedArchive(t *testing.T) {
	w, docs := laterRoom(t)
	recs := slices.Clone(w.Records)
	var redacted []int64
	for i, r := range recs {
		if r.Type() == adp.TypeMessageCreate || r.Type() == "claim.update" {
			x, err := r.Redact()
			if err != nil {
				t.Fatal(err)
			}
			recs[i] = x
			redacted = append(redacted, r.Seq)
		}
	}
	o := *laterOpts
	o.Packs = []archive.ArchivedPack{{Pack: docs[0].Pack, Digest: docs[0].Digest, URL: o.URL + "/p.json"}}
	m, log, md := build(t, recs, &o)
	rep, err := archive.Verify(context.Background(), m, bytes.NewReader(log), &archive.VerifyOptions{Packs: docs})
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, x := range rep.Redacted {
		got = append(got, x.Seq)
	}
	if !slices.Equal(got, redacted) || rep.Head != w.Room.Head() {
		t.Fatalf("redactions %v, want %v; head %v", got, redacted, rep.Head)
	}
	if !bytes.Contains(md, []byte("Redacted by the host")) {
		t.Fatal("the transcript does not show the redaction")
	}
	// A redacted room.join line, forged into the log.
	ls := lines(log)
	joinLine := slices.IndexFunc(recs, func(r *adp.Record) bool { return r.Type() == adp.TypeRoomJoin })
	j := recs[joinLine]
	forged := bytes.Replace(ls[joinLine], j.Envelope.AppendJSON(nil), []byte(`{"hash":"`+j.Envelope.Hash().String()+`","redacted":true,"type":"room.join"}`), 1)
	ls[joinLine] = forged
	rep, err = archive.Verify(context.Background(), m, bytes.NewReader(join(ls)), &archive.VerifyOptions{Packs: docs})
	wantFailure(t, rep, err, adp.CodeInvalidRecord, j.Seq)
}

// FuzzParseManifestLater: reading a manifest of either draft never
// panics, fails only with invalid_manifest, recognizes the draft it
// parses, and a 2026-09-24 manifest re-encodes to one that parses the
// same.
func FuzzParseManifestLater(f *testing.F) {
	manifest, _ := vectorArchive(f, false)
	f.Add(manifest)
	f.Add([]byte(`{"protocol":"agent-discourse/1.0","type":"room.archive","room_id":"r","url":"https://h.example/r","generated_at":1,"last_seq":1,"last_hash":"` + strings.Repeat("A", 43) +
		`","formats":{"jsonl":"https://h.example/r.jsonl","markdown":"https://h.example/r.md"},"packs":[{"pack":"https://p.example/p.json","digest":"sha3-256:` + strings.Repeat("A", 43) + `","url":"https://h.example/p"}],"extra":{},"witness":[1]}`))
	f.Add([]byte(`{"protocol":"agent-discourse/1.0","type":"room.archive","room_id":"r","event_count":1,"first_seq":1,"last_seq":1,"last_hash":"` + strings.Repeat("A", 43) + `","events_sha3_256":"` + strings.Repeat("A", 43) + `","archive_root":"` + strings.Repeat("A", 43) + `"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := archive.ParseManifestWith(b, nil)
		if err != nil {
			if !errors.Is(err, archive.ErrInvalidManifest) {
				t.Fatalf("code: %v", err)
			}
			return
		}
		d, err := archive.DetectDraft(b)
		if err != nil || d != m.Draft.OrDefault() {
			t.Fatalf("parsed as %v, detected %v (%v)", m.Draft, d, err)
		}
		out, err := m.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		again, err := archive.ParseManifestWith(out, &archive.ManifestOptions{Draft: m.Draft})
		if err != nil {
			t.Fatalf("re-encoded manifest refused: %v\n%s", err, out)
		}
		if again.LastHash != m.LastHash || again.LastSeq != m.LastSeq || again.RoomID != m.RoomID || !slices.Equal(again.Packs, m.Packs) {
			t.Fatal("re-encoding changed the manifest")
		}
	})
}
