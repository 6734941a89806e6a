package archive

import (
	"bufio"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/b64url"
	"github.com/agentprotocols/go-sdk/packs"
)

// The directory layout WriteDir writes and VerifyDir reads.
const (
	ManifestFile   = "manifest.json"
	RecordsFile    = "records.jsonl"
	TranscriptFile = "transcript.md"
	// PacksDir holds one file per external pack document, named by
	// PackFileName and holding the document's bytes exactly as fetched,
	// so that anyone can check it against the digest its import names.
	PacksDir = "packs"
	// RegisteredPacksFile (inside PacksDir) is the registered packs
	// document (packs.RegisteredDocument), written when the room imported
	// a registered pack. It is informational: registered packs are
	// immutable per version and verifiers use their own copy.
	RegisteredPacksFile = "registered.json"
)

// Options configures a Writer and WriteDir. A nil *Options means
// defaults: no host, URL or formats, extra {}, the system clock, and
// archive_root equal to events_sha3_256.
type Options struct {
	// Host is the manifest's host, such as "al.ink".
	Host string
	// URL is the room URL (§7.2).
	URL string
	// Formats lists where the formats are served, such as
	// {"jsonl": "https://…/archive.jsonl", "markdown": "https://…/archive.md"}.
	Formats map[string]string
	// Extra is the manifest's extra object; nil means {}.
	Extra jsontext.Value
	// Now is the clock for generated_at; nil means time.Now.
	Now func() time.Time
	// MerkleRoot makes archive_root the MerkleRoot of the record hashes
	// instead of a copy of events_sha3_256.
	MerkleRoot bool
}

// Writer writes an archive incrementally: each record goes to the JSONL
// log (canonical JSON, one record per line) and, optionally, to a Markdown
// transcript as it is added; the digests are computed on the way, so a
// room of any length is archived in constant memory. Close returns the
// manifest.
//
// Add checks that each record links to the previous one (room, seq,
// pre_hash) and that its record hash is right; it does not verify
// signatures or room rules, which the host enforced when it accepted the
// records (Verify checks everything).
//
// A Writer is not safe for concurrent use.
type Writer struct {
	opts       Options
	out        *bufio.Writer
	tr         *Transcript
	prev       *adp.Record
	dg         *digest
	mk         *merkle
	buf        []byte
	registered map[string]bool
	err        error
	closed     bool
}

// NewWriter returns a Writer that writes the record log to records and,
// when transcript is not nil, the Markdown transcript to it.
func NewWriter(records, transcript io.Writer, opts *Options) *Writer {
	w := &Writer{out: bufio.NewWriterSize(records, 64<<10), dg: newDigest(), registered: map[string]bool{}}
	if opts != nil {
		w.opts = *opts
	}
	if transcript != nil {
		w.tr = NewTranscript(transcript)
	}
	if w.opts.MerkleRoot {
		w.mk = new(merkle)
	}
	return w
}

// Add appends the next record; records must come in seq order from seq
// 1. Failures to link are invalid_record; write errors are returned as
// they are and stick.
func (w *Writer) Add(rec *adp.Record) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errors.New("archive: Add after Close")
	}
	if rec == nil || rec.Envelope == nil {
		return identity.NewError(adp.CodeInvalidRecord, "record has no envelope")
	}
	if err := adp.CheckLink(w.prev, rec); err != nil {
		return err
	}
	if err := rec.CheckHash(); err != nil {
		return err
	}
	w.buf = rec.AppendJSON(w.buf[:0])
	w.dg.add(w.buf)
	if w.mk != nil {
		w.mk.add(rec.Hash)
	}
	w.buf = append(w.buf, '\n')
	if _, err := w.out.Write(w.buf); err != nil {
		w.err = err
		return err
	}
	if w.tr != nil {
		if err := w.tr.Add(rec); err != nil {
			w.err = err
			return err
		}
	}
	w.notePacks(rec)
	w.prev = rec
	return nil
}

// notePacks remembers registered packs imported by room.create and
// type.define.
func (w *Writer) notePacks(rec *adp.Record) {
	ev := rec.Envelope.Event()
	var uses []struct {
		Use string `json:"use"`
	}
	switch ev.Type {
	case adp.TypeRoomCreate:
		var p struct {
			Types jsontext.Value `json:"types"`
		}
		if json.Unmarshal(ev.Payload, &p) == nil && p.Types != nil {
			_ = json.Unmarshal(p.Types, &uses)
		}
	case adp.TypeTypeDefine:
		uses = make([]struct {
			Use string `json:"use"`
		}, 1)
		_ = json.Unmarshal(ev.Payload, &uses[0])
	}
	for _, u := range uses {
		if u.Use != "" {
			w.registered[u.Use] = true
		}
	}
}

// RegisteredPacks returns the registered pack ids the records added so
// far imported, sorted.
func (w *Writer) RegisteredPacks() []string {
	return slices.Sorted(maps.Keys(w.registered))
}

// Close finishes the log and the transcript and returns the manifest. An
// archive holds at least the room.create record.
func (w *Writer) Close() (*Manifest, error) {
	if w.err != nil {
		return nil, w.err
	}
	if w.closed {
		return nil, errors.New("archive: Close called twice")
	}
	w.closed = true
	if w.prev == nil {
		w.err = identity.NewError(adp.CodeInvalidRecord, "an archive needs at least the room.create record")
		return nil, w.err
	}
	if err := w.out.Flush(); err != nil {
		w.err = err
		return nil, err
	}
	now := time.Now
	if w.opts.Now != nil {
		now = w.opts.Now
	}
	m := &Manifest{
		Protocol: adp.Protocol, Type: ManifestType, Host: w.opts.Host, RoomID: w.prev.RoomID, URL: w.opts.URL,
		GeneratedAt: now().UnixMilli(), EventCount: w.prev.Seq, FirstSeq: 1, LastSeq: w.prev.Seq,
		LastHash: w.prev.Hash, EventsSHA3256: w.dg.sum(), Formats: maps.Clone(w.opts.Formats), Extra: w.opts.Extra,
	}
	m.ArchiveRoot = m.EventsSHA3256
	if w.mk != nil {
		m.ArchiveRoot = w.mk.root()
	}
	if m.Extra == nil {
		m.Extra = jsontext.Value("{}")
	}
	if w.tr != nil {
		if err := w.tr.Close(m); err != nil {
			w.err = err
			return nil, err
		}
	}
	return m, nil
}

// PackFileName returns the file name an external pack document with the
// given digest is stored under in PacksDir: "sha256-<base64url>.json".
// The name is derived only from the digest, whose base64url alphabet is
// safe in file names on every system.
func PackFileName(digest string) (string, error) {
	rest, ok := strings.CutPrefix(digest, "sha256:")
	var sum [32]byte
	if !ok || b64url.DecodeFixed(sum[:], rest) != nil {
		return "", identity.Errorf(adp.CodePackUnavailable, "pack digest %.80q is not sha256:<base64url>", digest)
	}
	return "sha256-" + rest + ".json", nil
}

// digestFromFileName inverts PackFileName.
func digestFromFileName(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "sha256-")
	if !ok {
		return "", false
	}
	rest, ok = strings.CutSuffix(rest, ".json")
	var sum [32]byte
	if !ok || b64url.DecodeFixed(sum[:], rest) != nil {
		return "", false
	}
	return "sha256:" + rest, true
}

// WriteDir writes a complete archive of records (in seq order, from seq 1)
// into dir, creating it if needed:
//
//	dir/manifest.json              the manifest (written last)
//	dir/records.jsonl              one canonical record per line
//	dir/transcript.md              the Markdown transcript
//	dir/packs/sha256-<b64>.json    each external pack document, raw bytes
//	dir/packs/registered.json      the registered packs, if any were used
//
// docs are the external pack documents the room imported, such as
// room.Registry().Documents(); each is checked against its digest.
// Existing files are replaced.
func WriteDir(dir string, records []*adp.Record, docs []packs.PackDocument, opts *Options) (*Manifest, error) {
	if err := os.MkdirAll(filepath.Join(dir, PacksDir), 0o755); err != nil {
		return nil, err
	}
	for _, d := range docs {
		name, err := PackFileName(d.Digest)
		if err != nil {
			return nil, err
		}
		if err := packs.VerifyDigest(d.Raw, d.Digest); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, PacksDir, name), d.Raw, 0o644); err != nil {
			return nil, err
		}
	}
	rf, err := os.Create(filepath.Join(dir, RecordsFile))
	if err != nil {
		return nil, err
	}
	defer rf.Close()
	tf, err := os.Create(filepath.Join(dir, TranscriptFile))
	if err != nil {
		return nil, err
	}
	defer tf.Close()
	w := NewWriter(rf, tf, opts)
	for _, rec := range records {
		if err := w.Add(rec); err != nil {
			return nil, err
		}
	}
	m, err := w.Close()
	if err != nil {
		return nil, err
	}
	if len(w.registered) > 0 {
		if err := os.WriteFile(filepath.Join(dir, PacksDir, RegisteredPacksFile), packs.RegisteredDocument(), 0o644); err != nil {
			return nil, err
		}
	}
	if err := errors.Join(rf.Close(), tf.Close()); err != nil {
		return nil, err
	}
	b, err := m.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return m, os.WriteFile(filepath.Join(dir, ManifestFile), b, 0o644)
}
