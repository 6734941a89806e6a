package archive_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/archive"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/packs"
)

// world drives a room through the host path (Room.Accept) with named
// agents, deterministic keys and a controllable clock.
type world struct {
	t       testing.TB
	ctx     context.Context
	now     time.Time
	room    *adp.Room
	authors map[string]*envelope.Author
	records []*adp.Record
}

// T0 is 2026-05-26T00:00:00Z, the vectors' era.
var T0 = time.UnixMilli(1779753600000)

var seeds = map[string]byte{"creator": 0x11, "mod": 0x12, "alice": 0x13, "bob": 0x14, "carol": 0x15, "dave": 0x16}

func newWorld(t testing.TB, roomID string, opts *adp.RoomOptions) *world {
	w := &world{t: t, ctx: context.Background(), now: T0, authors: map[string]*envelope.Author{}}
	w.room = adp.NewRoom(roomID, opts)
	for name, b := range seeds {
		key, err := identity.NewKeyFromSeed(bytes.Repeat([]byte{b}, 32))
		if err != nil {
			t.Fatal(err)
		}
		w.authors[name] = &envelope.Author{Signer: key, Nonces: identity.NewNonceSource(nil), Now: func() time.Time { return w.now }}
	}
	return w
}

func (w *world) a(name string) *envelope.Author { return w.authors[name] }

func (w *world) id(name string) identity.AgentID { return w.authors[name].AgentID() }

func (w *world) base(typ string) adp.Base {
	w.t.Helper()
	b, err := w.room.BaseFor(typ)
	if err != nil {
		w.t.Fatal(err)
	}
	return b
}

// must accepts env one millisecond later and fails the test on rejection.
func (w *world) must(env *envelope.Envelope, err error) *adp.Record {
	w.t.Helper()
	if err != nil {
		w.t.Fatalf("building event: %v", err)
	}
	w.now = w.now.Add(time.Millisecond)
	rec, err := w.room.Accept(w.ctx, env, w.now)
	if err != nil {
		w.t.Fatalf("rejected: %v", err)
	}
	w.records = append(w.records, rec)
	return rec
}

func (w *world) say(name, text string) *adp.Record {
	w.t.Helper()
	return w.must(adp.NewMessage(w.ctx, w.a(name), w.base(adp.TypeMessageCreate),
		adp.Message{ContentType: "text/markdown", Content: adp.TextContent(text)}))
}

func (w *world) custom(name, typ, payload string) *adp.Record {
	w.t.Helper()
	return w.must(adp.NewCustom(w.ctx, w.a(name), w.base(typ), w.room.Registry(), typ, jsontext.Value(payload)))
}

func (w *world) join(name string, role adp.Role, perspective string) *adp.Record {
	w.t.Helper()
	j := adp.Join{Role: role}
	if perspective != "" {
		j.Perspective = &perspective
	}
	return w.must(adp.NewJoin(w.ctx, w.a(name), w.base(adp.TypeRoomJoin), j))
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
const triagePack = `{
  "protocol": "agent-discourse/1.0",
  "description": "An external pack for archive tests.",
  "packs": [
    {
      "id": "example:triage/1.0",
      "title": "Triage",
      "types": [
        {
          "type": "triage.label",
          "kind": "signal",
          "title": "Label",
          "schema": {"type": "object", "required": ["label"], "properties": {"label": {"type": "string", "enum": ["bug", "question"]}}, "additionalProperties": false}
        }
      ]
    }
  ]
}
`

const triageURI = "https://packs.example.com/triage-1.0.json"

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
func externalRoom(t testing.TB) ([]*adp.Record, []packs.PackDocument, *world) {
	t.Helper()
	w := newWorld(t, "d8ftedhpqhsusbg003xx", &adp.RoomOptions{Packs: &packs.Options{Fetcher: packs.StaticFetcher{triageDoc}}})
	create := adp.RoomCreate{
		Topic: hostileTopic, Visibility: adp.VisibilityPublic,
		Agenda:    "Triage the incoming reports.\n```\n<b>not bold</b>",
		StartTime: w.now.UnixMilli(), EndTime: w.now.Add(2 * time.Hour).UnixMilli(),
		Types: []packs.Declaration{
			decl(t, `{"use":"adp:reactions/1.0"}`),
			decl(t, `{"pack":"`+triageURI+`","digest":"`+triageDoc.Digest+`"}`),
			decl(t, findingV1),
		},
	}
	w.must(adp.NewRoomCreate(w.ctx, w.a("creator"), create))
	w.join("alice", adp.RoleSpeaker, "](javascript:alert(1)) <i>reviewer</i>")
	w.join("bob", adp.RoleSpeaker, "")
	w.join("carol", adp.RoleObserver, "")
	m1 := w.say("alice", hostileMessage)
	w.custom("bob", "reaction.create", `{"event_id":"`+m1.Envelope.Hash().String()+`","reaction":"agree"}`)
	w.custom("carol", "triage.label", `{"label":"bug"}`)
	w.custom("alice", "review.finding", `{"severity":"low","summary":"<script>x</script>"}`)
	w.must(adp.NewTypeDefine(w.ctx, w.a("creator"), w.base(adp.TypeTypeDefine), decl(t, findingV2)))
	w.custom("bob", "review.finding", `{"severity":"high","summary":"The retry loop starves the writer."}`)
	w.must(adp.NewMessage(w.ctx, w.a("bob"), w.base(adp.TypeMessageCreate),
		adp.Message{ContentType: "application/json", Content: jsontext.Value(`{"note":"<b>x</b>","n":1}`), References: []envelope.Hash{m1.Envelope.Hash()}}))
	w.must(adp.NewClose(w.ctx, w.a("creator"), w.base(adp.TypeRoomClose), adp.Notice{Reason: "done # [x](y)"}))
	return w.records, w.room.Registry().Documents(), w
}

// vectorRecords loads a room of adp/testdata/vectors.json.
func vectorRecords(t testing.TB, name string) []*adp.Record {
	t.Helper()
	b, err := os.ReadFile("../adp/testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vf struct {
		Rooms []struct {
			Name    string `json:"name"`
			Records []struct {
				Record jsontext.Value `json:"record"`
			} `json:"records"`
		} `json:"rooms"`
	}
	if err := json.Unmarshal(b, &vf); err != nil {
		t.Fatal(err)
	}
	for _, r := range vf.Rooms {
		if r.Name != name {
			continue
		}
		var out []*adp.Record
		for _, v := range r.Records {
			rec, err := adp.ParseRecord(v.Record)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, rec)
		}
		return out
	}
	t.Fatalf("no room %q in the vectors", name)
	return nil
}

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

var fixedClock = &archive.Options{Host: "al.ink", URL: "https://api.al.ink/v1/rooms/x", Now: func() time.Time { return T0.Add(3 * time.Hour) }}

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
