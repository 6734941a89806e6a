package archive_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adp/adptest"
	"github.com/agentprotocols/go-sdk/archive"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/fixtures"
	"github.com/agentprotocols/go-sdk/packs"
)

// say, custom and join are the archive tests' shorthands on the shared
// room fixture: each write must be accepted.
func say(w *adptest.World, name, text string) *adp.Record {
	w.TB.Helper()
	return w.Must(adp.NewMessage(w.Ctx, w.Author(name), w.Base(adp.TypeMessageCreate),
		adp.Message{ContentType: "text/markdown", Content: adp.TextContent(text)}))
}

func custom(w *adptest.World, name, typ, payload string) *adp.Record {
	w.TB.Helper()
	return w.OK(w.Custom(name, typ, payload))
}

func joinAs(w *adptest.World, name string, role adp.Role, perspective string) *adp.Record {
	w.TB.Helper()
	j := adp.Join{Role: role}
	if perspective != "" {
		j.Perspective = &perspective
	}
	return w.JoinWith(name, j)
}

func decl(t testing.TB, s string) packs.Declaration {
	t.Helper()
	d, err := packs.ParseDeclaration([]byte(s))
	if err != nil {
		t.Fatalf("ParseDeclaration(%s): %v", s, err)
	}
	return d
}

// triagePack is an external pack document, served to the host by a
// StaticFetcher and archived under packs/.
var triagePack = string(fixtures.TriagePack)

const triageURI = fixtures.TriagePackURI

var triageDoc = packs.PackDocument{Pack: triageURI, Digest: packs.Digest([]byte(triagePack)), Raw: []byte(triagePack)}

const findingV1 = `{"type":"review.finding","kind":"message","title":"Review finding","schema":{"type":"object","required":["severity","summary"],"properties":{"severity":{"enum":["low","medium","high"]},"summary":{"type":"string","minLength":1}},"additionalProperties":false}}`

// findingV2 narrows severity: a v1 "low" finding is invalid under it.
const findingV2 = `{"type":"review.finding","kind":"message","title":"Review finding","schema":{"type":"object","required":["severity","summary"],"properties":{"severity":{"enum":["high"]},"summary":{"type":"string","minLength":1}},"additionalProperties":false}}`

// Hostile agent content for the transcript.
const (
	hostileTopic   = "<img src=x onerror=alert(1)> # Topic & [link](javascript:alert(1)) `code`"
	hostileMessage = "<script>alert('x')</script>\n# heading\n[click](javascript:alert(1))\n````\n```\nstill inside\n&amp; &lt;b&gt; <b>bold</b>\n    indented\n> quote\n\u202eevil"
)

// externalRoom is a room that imports a registered pack, an external pack
// (served by a StaticFetcher) and an inline type that it redefines
// mid-room, with hostile content, closed at the end. It returns the
// records and the pack documents to archive.
func externalRoom(t testing.TB) ([]*adp.Record, []packs.PackDocument, *adptest.World) {
	t.Helper()
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg003xx", &adp.RoomOptions{Packs: &packs.Options{Fetcher: packs.StaticFetcher{triageDoc}}})
	create := adp.RoomCreate{
		Topic: hostileTopic, Visibility: adp.VisibilityPublic,
		Agenda:    "Triage the incoming reports.\n```\n<b>not bold</b>",
		StartTime: w.Now.UnixMilli(), EndTime: w.Now.Add(2 * time.Hour).UnixMilli(),
		Types: []packs.Declaration{
			decl(t, `{"use":"adp:reactions/1.0"}`),
			decl(t, `{"pack":"`+triageURI+`","digest":"`+triageDoc.Digest+`"}`),
			decl(t, findingV1),
		},
	}
	w.Must(adp.NewRoomCreate(w.Ctx, w.Author("creator"), create))
	joinAs(w, "alice", adp.RoleSpeaker, "](javascript:alert(1)) <i>reviewer</i>")
	joinAs(w, "bob", adp.RoleSpeaker, "")
	joinAs(w, "carol", adp.RoleObserver, "")
	m1 := say(w, "alice", hostileMessage)
	custom(w, "bob", "reaction.create", `{"event_id":"`+m1.Envelope.Hash().String()+`","reaction":"agree"}`)
	custom(w, "carol", "triage.label", `{"label":"bug"}`)
	custom(w, "alice", "review.finding", `{"severity":"low","summary":"<script>x</script>"}`)
	w.Must(adp.NewTypeDefine(w.Ctx, w.Author("creator"), w.Base(adp.TypeTypeDefine), decl(t, findingV2)))
	custom(w, "bob", "review.finding", `{"severity":"high","summary":"The retry loop starves the writer."}`)
	w.Must(adp.NewMessage(w.Ctx, w.Author("bob"), w.Base(adp.TypeMessageCreate),
		adp.Message{ContentType: "application/json", Content: jsontext.Value(`{"note":"<b>x</b>","n":1}`), References: []envelope.Hash{m1.Envelope.Hash()}}))
	w.Must(adp.NewClose(w.Ctx, w.Author("creator"), w.Base(adp.TypeRoomClose), adp.Notice{Reason: "done # [x](y)"}))
	return w.Records, w.Room.Registry().Documents(), w
}

// vectorRecords loads a room of adp/testdata/vectors.json.
func vectorRecords(tb testing.TB, name string) []*adp.Record { return adptest.VectorRecords(tb, name) }

// build writes an archive in memory.
func build(t testing.TB, recs []*adp.Record, opts *archive.Options) (*archive.Manifest, []byte, []byte) {
	t.Helper()
	var log, md bytes.Buffer
	w := archive.NewWriter(&log, &md, opts)
	for _, r := range recs {
		if err := w.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	m, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	return m, log.Bytes(), md.Bytes()
}

var fixedClock = &archive.Options{Host: "al.ink", URL: "https://api.al.ink/v1/rooms/x", Now: func() time.Time { return adptest.T0.Add(3 * time.Hour) }}

// wantFailure checks the error's code, its seq and the report.
func wantFailure(t testing.TB, rep *archive.Report, err error, code identity.Code, seq int64) {
	t.Helper()
	var ie *identity.Error
	if !errors.As(err, &ie) {
		t.Fatalf("got %v (%T), want an *identity.Error %s", err, err, code)
	}
	if ie.Code != code || !errors.Is(err, identity.NewError(code, "")) {
		t.Fatalf("got code %s (%v), want %s", ie.Code, err, code)
	}
	if rep == nil || rep.Valid || rep.Failure == nil {
		t.Fatalf("report %+v does not record the failure", rep)
	}
	if rep.Failure.Code != code || rep.Failure.Seq != seq {
		t.Fatalf("failure %+v, want code %s at seq %d (%v)", rep.Failure, code, seq, err)
	}
	if seq > 0 && !bytes.Contains(ie.Data, []byte(`"seq":`)) {
		t.Fatalf("error data %s carries no seq", ie.Data)
	}
}

func lines(b []byte) [][]byte {
	return bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
}

func join(ls [][]byte) []byte {
	return append(bytes.Join(ls, []byte("\n")), '\n')
}
