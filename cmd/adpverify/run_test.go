package main

import (
	"bytes"
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
	"github.com/agentprotocols/go-sdk/internal/fixtures"
)

// mainRoom writes the "main" room of the SDK's ADP vectors as an archive
// directory.
func mainRoom(t *testing.T) (string, []*adp.Record) {
	t.Helper()
	recs := adptest.VectorRecords(t, "main")
	dir := t.TempDir()
	opts := &archive.Options{Host: "al.ink", Now: func() time.Time { return time.UnixMilli(1779770000000) }}
	if _, err := archive.WriteDir(dir, recs, nil, opts); err != nil {
		t.Fatal(err)
	}
	return dir, recs
}

func runCmd(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestArchiveValid(t *testing.T) {
	dir, _ := mainRoom(t)
	code, out, errOut := runCmd("archive", filepath.Join(dir, "manifest.json"), filepath.Join(dir, "records.jsonl"))
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"archive: valid", "records:  26 verified, seq 1–26", "status:   ended", "room.close", "(= events_sha3_256)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCmd("archive", "-json", "-workers", "1", filepath.Join(dir, "manifest.json"), filepath.Join(dir, "records.jsonl"))
	var rep struct {
		Valid   bool  `json:"valid"`
		Records int64 `json:"records"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || !rep.Valid || rep.Records != 26 {
		t.Fatalf("-json: exit %d %s", code, out)
	}
}

func TestArchiveInvalid(t *testing.T) {
	dir, _ := mainRoom(t)
	path := filepath.Join(dir, "records.jsonl")
	b, _ := os.ReadFile(path)
	ls := bytes.Split(b, []byte("\n"))
	ls[11] = bytes.Replace(ls[11], []byte(`"received_at":`), []byte(`"received_at":1`), 1)
	os.WriteFile(path, bytes.Join(ls, []byte("\n")), 0o644)
	code, out, _ := runCmd("archive", filepath.Join(dir, "manifest.json"), path)
	if code != 1 || !strings.Contains(out, "archive: INVALID") || !strings.Contains(out, "error:    invalid_record at seq 12 (line 12)") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

func TestUsageAndIOErrors(t *testing.T) {
	dir, _ := mainRoom(t)
	for _, args := range [][]string{
		{},
		{"frobnicate"},
		{"archive", "only-one"},
		{"archive", "-workers", "x", "a", "b"},
		{"archive", filepath.Join(dir, "missing.json"), filepath.Join(dir, "records.jsonl")},
		{"archive", filepath.Join(dir, "manifest.json"), filepath.Join(dir, "missing.jsonl")},
		{"envelope"},
		{"envelope", filepath.Join(dir, "missing.json")},
	} {
		if code, out, errOut := runCmd(args...); code != 2 {
			t.Errorf("%q: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	if code, out, _ := runCmd("help"); code != 0 || !strings.Contains(out, "usage") {
		t.Errorf("help: exit %d", code)
	}
	// A malformed manifest is an invalid archive, not an I/O error.
	os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(`{"protocol":"agent-discourse/1.0"}`), 0o644)
	if code, out, _ := runCmd("archive", filepath.Join(dir, "manifest.json"), filepath.Join(dir, "records.jsonl")); code != 1 || !strings.Contains(out, "invalid_manifest") {
		t.Errorf("bad manifest: exit %d\n%s", code, out)
	}
}

func TestEnvelope(t *testing.T) {
	_, recs := mainRoom(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "env.json")
	wire := recs[4].Envelope.AppendJSON(nil)
	os.WriteFile(good, wire, 0o644)
	code, out, _ := runCmd("envelope", good)
	if code != 0 || !strings.Contains(out, "envelope: valid") || !strings.Contains(out, recs[4].Envelope.Hash().String()) {
		t.Fatalf("exit %d\n%s", code, out)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, bytes.Replace(wire, []byte(`"nonce":`), []byte(`"nonce":1`), 1), 0o644)
	code, out, _ = runCmd("envelope", bad)
	if code != 1 || !strings.Contains(out, "invalid_event_hash") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

// longRoom writes, through the SDK's host path, a public room of n
// records: a room.create and n-1 messages.
func longRoom(t *testing.T, n int) string {
	t.Helper()
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg004xx", nil)
	w.PublicRoom()
	for i := 1; i < n; i++ {
		w.OK(w.Say("creator", strconv.Itoa(i)))
	}
	dir := t.TempDir()
	if _, err := archive.WriteDir(dir, w.Records, nil, nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Any line order is a legal archive (§19 step 1 sorts by seq), however
// far a line is from its place: here the log of a 4,200-record room,
// reversed.
func TestArchiveReversedLog(t *testing.T) {
	dir := longRoom(t, 4200)
	path := filepath.Join(dir, "records.jsonl")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ls := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	slices.Reverse(ls)
	os.WriteFile(path, append(bytes.Join(ls, []byte("\n")), '\n'), 0o644)
	code, out, errOut := runCmd("archive", filepath.Join(dir, "manifest.json"), path)
	if code != 0 || !strings.Contains(out, "records:  4200 verified") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
}

// cannotEvaluateDir writes the archive of a room whose type schema uses
// ECMA-262 syntax RE2 lacks (a look-ahead): it may be a valid schema,
// which this verifier cannot run.
func cannotEvaluateDir(t *testing.T) string {
	t.Helper()
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg006xx", nil)
	start := w.Now.UnixMilli()
	payload := `{"topic":"t","visibility":"public","start_time":` + strconv.FormatInt(start, 10) +
		`,"end_time":` + strconv.FormatInt(start+3600000, 10) +
		`,"types":[{"type":"x.re","kind":"message","title":"t","schema":{"properties":{"s":{"pattern":"^(?=a)"}}}}]}`
	// Signed directly: the builder, like the SDK host, refuses the schema.
	env, err := w.Author("creator").Sign(w.Ctx, adp.Protocol, adp.TypeRoomCreate, jsontext.Value(payload), nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := archive.WriteDir(dir, []*adp.Record{adp.NewRecord(w.Room.ID(), nil, start+1, env)}, nil, nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A schema that uses ECMA-262 syntax RE2 lacks (a look-ahead) may be a
// valid schema: the verifier says it cannot evaluate the archive (exit 3),
// not that the archive is invalid (exit 1).
func TestArchiveCannotEvaluate(t *testing.T) {
	dir := cannotEvaluateDir(t)
	code, out, _ := runCmd("archive", filepath.Join(dir, "manifest.json"), filepath.Join(dir, "records.jsonl"))
	if code != exitCannotEvaluate || !strings.Contains(out, "CANNOT EVALUATE") || !strings.Contains(out, "schema_unsupported") {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
}

// TestTerminalEscapes: untrusted text reaches a terminal inert. Text from
// the archive (here the host's own name in its manifest) and from errors
// reaches the terminal with its control sequences escaped.
func TestTerminalEscapes(t *testing.T) {
	dir, _ := mainRoom(t)
	m := filepath.Join(dir, "manifest.json")
	b, err := os.ReadFile(m)
	if err != nil {
		t.Fatal(err)
	}
	evil := `al.ink\u001b]0;pwned\u0007\u001b[2J`
	if err := os.WriteFile(m, bytes.Replace(b, []byte(`"al.ink"`), []byte(`"`+evil+`"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	_, out, errOut := runCmd("archive", m, filepath.Join(dir, "records.jsonl"))
	if strings.ContainsAny(out+errOut, "\x1b\a") || !strings.Contains(out+errOut, `\x1b]0;pwned\a`) {
		t.Fatalf("output %q %q", out, errOut)
	}
	_, out, errOut = runCmd("envelope", filepath.Join(dir, "no\x1b]0;such\a"))
	if strings.ContainsAny(out+errOut, "\x1b\a") {
		t.Fatalf("output %q %q", out, errOut)
	}
}

// laterVectorDir writes the 2026-09-24 vectors' redacted records as an
// archive directory, with a manifest naming their last seq and hash.
func laterVectorDir(t *testing.T) string {
	t.Helper()
	manifest, log, err := fixtures.LaterVectorArchive(true)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "records.jsonl"), log, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A 2026-09-24 archive is recognized from its manifest, verified per §18
// and its redacted record reported; what §18 refuses exits 1, manifest
// errors included; a pinned draft refuses the other one.
func TestLaterArchive(t *testing.T) {
	dir := laterVectorDir(t)
	m, r := filepath.Join(dir, "manifest.json"), filepath.Join(dir, "records.jsonl")
	code, out, errOut := runCmd("archive", m, r)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"archive: valid", "draft:    2026-09-24", "records:  5 verified, seq 1–5", "redacted: seq 3 message.create", "last_hash: jkBoa-z970wDTYKrlxGtW-fXjazFCS9iDC7V0yDJZTk"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code, out, _ := runCmd("archive", "-draft", "2026-07-04", m, r); code != 1 || !strings.Contains(out, "2026-09-24-draft manifest") {
		t.Fatalf("-draft 2026-07-04: exit %d\n%s", code, out)
	}
	if code, _, _ := runCmd("archive", "-draft", "2026-08-01", m, r); code != 2 {
		t.Fatalf("-draft of an unknown draft: exit %d", code)
	}
	// A manifest without its jsonl format.
	mb, _ := os.ReadFile(m)
	os.WriteFile(m, bytes.Replace(mb, []byte(`"formats":{"jsonl"`), []byte(`"formats":{"json"`), 1), 0o644)
	if code, out, _ := runCmd("archive", m, r); code != 1 || !strings.Contains(out, "invalid_manifest") {
		t.Fatalf("manifest without jsonl: exit %d\n%s", code, out)
	}
	os.WriteFile(m, mb, 0o644)
	// A record whose accepted_at changed breaks its hash.
	b, _ := os.ReadFile(r)
	os.WriteFile(r, bytes.Replace(b, []byte(`"accepted_at":1779753603010`), []byte(`"accepted_at":1779753603011`), 1), 0o644)
	if code, out, _ := runCmd("archive", m, r); code != 1 || !strings.Contains(out, "invalid_record at seq 4") {
		t.Fatalf("tampered accepted_at: exit %d\n%s", code, out)
	}
	// The seed's archive is refused when the 2026-09-24 draft is pinned.
	seedDir, _ := mainRoom(t)
	if code, out, _ := runCmd("archive", "-draft", "2026-09-24", filepath.Join(seedDir, "manifest.json"), filepath.Join(seedDir, "records.jsonl")); code != 1 || !strings.Contains(out, "2026-07-04-draft manifest") {
		t.Fatalf("-draft 2026-09-24 on a seed archive: exit %d\n%s", code, out)
	}
}
