package archive_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adp/adptest"
	"github.com/agentprotocols/go-sdk/archive"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/packs"
)

func TestVerifyVectorsMainRoom(t *testing.T) {
	recs := vectorRecords(t, "main")
	dir := t.TempDir()
	m, err := archive.WriteDir(dir, recs, nil, fixedClock)
	if err != nil {
		t.Fatal(err)
	}
	if m.EventCount != 26 || m.LastSeq != 26 || m.FirstSeq != 1 || m.LastHash != recs[25].Hash || m.ArchiveRoot != m.EventsSHA3256 {
		t.Fatalf("manifest %+v", m)
	}
	// events_sha3_256 is SHA3-256 of the JCS array of the records.
	var arr []byte
	arr = append(arr, '[')
	for i, r := range recs {
		if i > 0 {
			arr = append(arr, ',')
		}
		arr = r.AppendJSON(arr)
	}
	arr = append(arr, ']')
	canon := jsontext.Value(slices.Clone(arr))
	if err := canon.Canonicalize(); err != nil || !bytes.Equal(canon, arr) {
		t.Fatalf("records are not canonical: %v", err)
	}
	if envelope.Sum(arr) != m.EventsSHA3256 {
		t.Fatal("events_sha3_256 is not SHA3-256(JCS(records))")
	}
	if _, err := os.Stat(filepath.Join(dir, archive.PacksDir, archive.RegisteredPacksFile)); err != nil {
		t.Fatalf("the registered packs document was not archived: %v", err)
	}

	for _, workers := range []int{1, 2, 5} {
		rep, err := archive.VerifyDir(context.Background(), dir, &archive.VerifyOptions{Workers: workers})
		if err != nil {
			t.Fatalf("workers=%d: %v", workers, err)
		}
		if !rep.Valid || rep.Records != 26 || rep.Status != adp.StatusEnded || rep.EventsSHA3256 != m.EventsSHA3256 || rep.LastHash != m.LastHash {
			t.Fatalf("report %+v", rep)
		}
		if len(rep.Members) != 6 || rep.Types[adp.TypeMessageCreate] == 0 || rep.Types[adp.TypeRoomClose] != 1 || rep.Head.Seq != 26 {
			t.Fatalf("report members %v types %v head %v", rep.Members, rep.Types, rep.Head)
		}
	}
	// The exact index gives the same verdict.
	if _, err := archive.VerifyDir(context.Background(), dir, &archive.VerifyOptions{ExactIndex: true}); err != nil {
		t.Fatal(err)
	}
	// The manifest round-trips through its JSON form.
	b, _ := os.ReadFile(filepath.Join(dir, archive.ManifestFile))
	m2, err := archive.ParseManifest(b)
	if err != nil {
		t.Fatal(err)
	}
	if m2.Host != "al.ink" || m2.GeneratedAt != adptest.T0.Add(3*60*60*1000*1e6).UnixMilli() || m2.EventsSHA3256 != m.EventsSHA3256 {
		t.Fatalf("manifest %+v", m2)
	}
}

func TestVerifyCancelledRoom(t *testing.T) {
	recs := vectorRecords(t, "cancelled")
	m, log, _ := build(t, recs, nil)
	rep, err := archive.Verify(context.Background(), m, bytes.NewReader(log), nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Status != adp.StatusCancelled || rep.Records != 4 {
		t.Fatalf("report %+v", rep)
	}
}

func TestVerifyExternalPackAndRedefinition(t *testing.T) {
	recs, docs, w := externalRoom(t)
	if len(docs) != 1 || docs[0].Digest != triageDoc.Digest {
		t.Fatalf("documents %v", docs)
	}
	// §13.4: the early finding is invalid under the definition in force at
	// the end, yet the archive verifies, because each payload is judged
	// by the definition in force at its seq.
	if err := w.Room.Registry().Validate("review.finding", []byte(`{"severity":"low","summary":"<script>x</script>"}`)); !errors.Is(err, adp.ErrPayloadSchemaViolation) {
		t.Fatalf("the v1 payload is valid under v2: %v", err)
	}
	for _, merkle := range []bool{false, true} {
		dir := t.TempDir()
		opts := *fixedClock
		opts.MerkleRoot = merkle
		m, err := archive.WriteDir(dir, recs, docs, &opts)
		if err != nil {
			t.Fatal(err)
		}
		if m.MerkleRooted() != merkle {
			t.Fatalf("merkle=%v: archive_root %s events %s", merkle, m.ArchiveRoot, m.EventsSHA3256)
		}
		name, _ := archive.PackFileName(triageDoc.Digest)
		raw, err := os.ReadFile(filepath.Join(dir, archive.PacksDir, name))
		if err != nil || string(raw) != triagePack {
			t.Fatalf("pack document not archived byte for byte: %v", err)
		}
		rep, err := archive.VerifyDir(context.Background(), dir, nil)
		if err != nil {
			t.Fatalf("merkle=%v: %v", merkle, err)
		}
		if !rep.Valid || rep.MerkleRoot != merkle || len(rep.Packs) != 1 || rep.Packs[0].Pack != triageURI || rep.Definitions != 4 { // reaction.create, triage.label, triage.assign, review.finding
			t.Fatalf("report %+v", rep)
		}
		if merkle {
			hashes := make([]envelope.Hash, len(recs))
			for i, r := range recs {
				hashes[i] = r.Hash
			}
			if rep.ArchiveRoot != archive.MerkleRoot(hashes) {
				t.Fatal("archive_root is not the Merkle root")
			}
		}

		// Without the pack document the room.create cannot be replayed.
		os.Remove(filepath.Join(dir, archive.PacksDir, name))
		rep, err = archive.VerifyDir(context.Background(), dir, nil)
		wantFailure(t, rep, err, adp.CodePackUnavailable, 1)
	}
}

// An archive written by any other correct implementation verifies: the
// digest is over JCS, so whitespace, member order and string escapes in
// the JSONL do not matter.
func TestVerifyNonCanonicalEncoding(t *testing.T) {
	recs, docs, _ := externalRoom(t)
	m, log, _ := build(t, recs, nil)
	var out [][]byte
	for _, l := range lines(log) {
		s := scramble(t, l)
		if bytes.Equal(s, l) {
			t.Fatal("scramble changed nothing")
		}
		out = append(out, s)
	}
	// CRLF line ends, blank lines and no final line feed are fine too.
	re := bytes.Join(out, []byte("\r\n\n"))
	rep, err := archive.Verify(context.Background(), m, bytes.NewReader(re), &archive.VerifyOptions{Packs: docs})
	if err != nil {
		t.Fatal(err)
	}
	if rep.EventsSHA3256 != m.EventsSHA3256 {
		t.Fatal("digest differs")
	}
}

// scramble re-encodes a JSON value with reversed member order, extra
// whitespace and a needlessly escaped first letter in every string.
func scramble(t testing.TB, v []byte) []byte {
	t.Helper()
	d := jsontext.NewDecoder(bytes.NewReader(v))
	var out []byte
	var walk func() error
	walk = func() error {
		switch d.PeekKind() {
		case '{':
			d.ReadToken()
			type member struct{ name, value []byte }
			var ms []member
			for d.PeekKind() != '}' {
				nv, _ := d.ReadValue()
				name := slices.Clone(nv)
				n := len(out)
				if err := walk(); err != nil {
					return err
				}
				ms = append(ms, member{escape(name), slices.Clone(out[n:])})
				out = out[:n]
			}
			d.ReadToken()
			out = append(out, "{ "...)
			for i := len(ms) - 1; i >= 0; i-- {
				out = append(append(append(out, ms[i].name...), " : "...), ms[i].value...)
				if i > 0 {
					out = append(out, " , "...)
				}
			}
			out = append(out, " }"...)
		case '[':
			d.ReadToken()
			out = append(out, "[ "...)
			for i := 0; d.PeekKind() != ']'; i++ {
				if i > 0 {
					out = append(out, " ,\t"...)
				}
				if err := walk(); err != nil {
					return err
				}
			}
			d.ReadToken()
			out = append(out, " ]"...)
		case '"':
			s, err := d.ReadValue()
			if err != nil {
				return err
			}
			out = append(out, escape(s)...)
		default:
			s, err := d.ReadValue()
			if err != nil {
				return err
			}
			out = append(out, s...)
		}
		return nil
	}
	if err := walk(); err != nil {
		t.Fatal(err)
	}
	return append([]byte("  "), out...)
}

// escape spells the first character of a JSON string as \u00XX if it is
// an ASCII letter.
func escape(s []byte) []byte {
	if len(s) > 2 && (s[1] >= 'a' && s[1] <= 'z' || s[1] >= 'A' && s[1] <= 'Z') {
		return []byte(`"\u00` + strings.ToUpper(hex2(s[1])) + string(s[2:]))
	}
	return slices.Clone(s)
}

func hex2(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&15]})
}

func TestWriterRefusesBrokenChains(t *testing.T) {
	recs := vectorRecords(t, "main")
	var log bytes.Buffer
	w := archive.NewWriter(&log, nil, nil)
	if err := w.Add(recs[1]); !errors.Is(err, adp.ErrInvalidRecord) {
		t.Fatalf("starting at seq 2: %v", err)
	}
	w = archive.NewWriter(&log, nil, nil)
	w.Add(recs[0])
	if err := w.Add(recs[2]); !errors.Is(err, adp.ErrInvalidRecord) {
		t.Fatalf("skipping seq 2: %v", err)
	}
	w = archive.NewWriter(&log, nil, nil)
	if _, err := w.Close(); !errors.Is(err, adp.ErrInvalidRecord) {
		t.Fatalf("empty archive: %v", err)
	}
	bad := *recs[0]
	bad.ReceivedAt++
	w = archive.NewWriter(&log, nil, nil)
	if err := w.Add(&bad); !errors.Is(err, adp.ErrInvalidRecord) {
		t.Fatalf("wrong record hash: %v", err)
	}
}

func TestParseManifest(t *testing.T) {
	m, _, _ := build(t, vectorRecords(t, "main"), fixedClock)
	good, err := m.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := archive.ParseManifest(good); err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	json.Unmarshal(good, &obj)
	mutate := func(f func(map[string]any)) []byte {
		c := map[string]any{}
		for k, v := range obj {
			c[k] = v
		}
		f(c)
		b, _ := json.Marshal(c)
		return b
	}
	for name, b := range map[string][]byte{
		"later-draft manifest": mutate(func(c map[string]any) {
			for _, k := range []string{"host", "event_count", "first_seq", "events_sha3_256", "archive_root"} {
				delete(c, k)
			}
			c["packs"] = []any{}
		}),
		"no events_sha3_256":  mutate(func(c map[string]any) { delete(c, "events_sha3_256") }),
		"wrong type":          mutate(func(c map[string]any) { c["type"] = "room.export" }),
		"wrong protocol":      mutate(func(c map[string]any) { c["protocol"] = "agent-discourse/2.0" }),
		"padded hash":         mutate(func(c map[string]any) { c["last_hash"] = c["last_hash"].(string) + "=" }),
		"unsafe integer":      mutate(func(c map[string]any) { c["event_count"] = 1e17 }),
		"extra not an object": mutate(func(c map[string]any) { c["extra"] = []any{} }),
		"duplicate member":    append([]byte(`{"room_id":"x",`), good[1:]...),
		"not JSON":            []byte("manifest"),
	} {
		if _, err := archive.ParseManifest(b); !errors.Is(err, archive.ErrInvalidManifest) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// host, url, generated_at, formats and extra are optional.
	min := mutate(func(c map[string]any) {
		for _, k := range []string{"host", "url", "generated_at", "formats", "extra"} {
			delete(c, k)
		}
	})
	if _, err := archive.ParseManifest(min); err != nil {
		t.Fatal(err)
	}
}

// §19 gives the manifest as "recommended": members it does not name are
// kept and reported, not refused.
func TestParseManifestKeepsUnknownMembers(t *testing.T) {
	recs := vectorRecords(t, "main")
	m, log, _ := build(t, recs, fixedClock)
	good, err := m.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	b := append([]byte(`{"witness":{"log":"https://w.example","n":1},"packs":[],`), good[1:]...)
	m2, err := archive.ParseManifest(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := m2.UnknownMembers(); !slices.Equal(got, []string{"packs", "witness"}) {
		t.Fatalf("unknown members %q", got)
	}
	if string(m2.Unknown["witness"]) != `{"log":"https://w.example","n":1}` {
		t.Fatalf("witness kept as %s", m2.Unknown["witness"])
	}
	// They survive a round trip through MarshalJSON.
	again, err := m2.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	m3, err := archive.ParseManifest(again)
	if err != nil || !slices.Equal(m3.UnknownMembers(), []string{"packs", "witness"}) {
		t.Fatalf("round trip: %v %v", err, m3)
	}
	// Verify reports them and still verifies the archive.
	rep, err := archive.Verify(context.Background(), m2, bytes.NewReader(log), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.ManifestUnknown, []string{"packs", "witness"}) {
		t.Fatalf("report lists %q", rep.ManifestUnknown)
	}
	// Known members keep their types.
	wrong := bytes.Replace(b, []byte(`"host": "al.ink"`), []byte(`"host": 5`), 1)
	if bytes.Equal(wrong, b) {
		t.Fatal("no host member to change")
	}
	if _, err := archive.ParseManifest(wrong); !errors.Is(err, archive.ErrInvalidManifest) {
		t.Fatal("a known member of the wrong type was accepted")
	}
}

func TestPackFileName(t *testing.T) {
	name, err := archive.PackFileName(triageDoc.Digest)
	if err != nil || !strings.HasPrefix(name, "sha256-") || !strings.HasSuffix(name, ".json") || strings.ContainsAny(name, "/\\:") {
		t.Fatalf("%q %v", name, err)
	}
	for _, d := range []string{"sha512:abc", "sha256:../../etc/passwd", "sha256:"} {
		if _, err := archive.PackFileName(d); !errors.Is(err, packs.ErrPackUnavailable) {
			t.Errorf("%s: %v", d, err)
		}
	}
}

// Offline verification judges the room by the host policy the caller
// passes in VerifyOptions.Room, not by fixed constants; Verify keeps its
// own fetcher (the archived documents).
func TestVerifyRoomOptions(t *testing.T) {
	recs, docs, _ := externalRoom(t)
	m, log, _ := build(t, recs, nil)
	verify := func(room *adp.RoomOptions) (*archive.Report, error) {
		return archive.Verify(context.Background(), m, bytes.NewReader(log), &archive.VerifyOptions{Packs: docs, Room: room})
	}
	// The host's defaults accept the room.
	if _, err := verify(&adp.RoomOptions{}); err != nil {
		t.Fatal(err)
	}
	// A host whose payload limit is 40 bytes would have refused the
	// room.create (633 bytes).
	rep, err := verify(&adp.RoomOptions{MaxPayloadBytes: 40})
	wantFailure(t, rep, err, identity.CodePayloadTooLarge, 1)
	// A host that serves only text/plain would have refused it too.
	rep, err = verify(&adp.RoomOptions{AcceptContentType: func(ct string) bool { return ct == "text/plain" }})
	wantFailure(t, rep, err, identity.CodeInvalidEvent, 5)
	// The caller's fetcher is not used: packs come from the archive only.
	rep, err = verify(&adp.RoomOptions{Packs: &packs.Options{Fetcher: packs.StaticFetcher{}}})
	if err != nil || !rep.Valid {
		t.Fatalf("the caller's fetcher replaced the archived documents: %v", err)
	}
}
