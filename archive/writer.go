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
	// Draft is the draft of the records and the manifest; the zero value
	// is the default draft. A 2026-09-24 manifest (§18) needs URL, and
	// names the jsonl format at URL + "/archive.jsonl" unless Formats
	// names one.
	Draft adp.Draft
	// Host is the seed manifest's host, such as "al.ink" (the 2026-09-24
	// manifest has none: room.create names the host).
	Host string
	// URL is the room URL (§7.2).
	URL string
	// Packs are a 2026-09-24 manifest's packs: one entry per external
	// pack the room imported (WriteDir fills it from its documents).
	Packs []ArchivedPack
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
	if rec == nil || rec.Envelope == nil && rec.Redacted == nil {
		return identity.NewError(adp.CodeInvalidRecord, "record has no envelope")
	}
	if err := adp.CheckLink(w.prev, rec); err != nil {
		return err
	}
	if d := w.opts.Draft.OrDefault(); rec.Draft.OrDefault() != d {
		return identity.Errorf(adp.CodeInvalidRecord, "record %d follows the %s draft; the archive the %s draft", rec.Seq, rec.Draft.OrDefault(), d)
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
	if rec.Envelope == nil {
		return // redacted: never a declaration
	}
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
	var m *Manifest
	if d := w.opts.Draft.OrDefault(); d != adp.Draft20260704 {
		// §18 of the 2026-09-24 draft: last_hash is the commitment.
		if w.opts.URL == "" {
			w.err = errors.New("archive: a " + d.String() + " manifest needs the room URL (Options.URL)")
			return nil, w.err
		}
		m = &Manifest{
			Draft: d, Protocol: adp.Protocol, Type: ManifestType, RoomID: w.prev.RoomID, URL: w.opts.URL,
			GeneratedAt: now().UnixMilli(), LastSeq: w.prev.Seq, LastHash: w.prev.Hash,
			Formats: maps.Clone(w.opts.Formats), Packs: slices.Clone(w.opts.Packs), Extra: w.opts.Extra,
		}
		if m.Formats == nil {
			m.Formats = map[string]string{}
		}
		if _, ok := m.Formats["jsonl"]; !ok {
			m.Formats["jsonl"] = w.opts.URL + "/archive.jsonl"
		}
	} else {
		m = &Manifest{
			Protocol: adp.Protocol, Type: ManifestType, Host: w.opts.Host, RoomID: w.prev.RoomID, URL: w.opts.URL,
			GeneratedAt: now().UnixMilli(), EventCount: w.prev.Seq, FirstSeq: 1, LastSeq: w.prev.Seq,
			LastHash: w.prev.Hash, EventsSHA3256: w.dg.sum(), Formats: maps.Clone(w.opts.Formats), Extra: w.opts.Extra,
		}
		m.ArchiveRoot = m.EventsSHA3256
		if w.mk != nil {
			m.ArchiveRoot = w.mk.root()
		}
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

// digestAlgorithms are the pack digest algorithms some draft admits, each
// a prefix of file names in PacksDir.
var digestAlgorithms = [...]string{"sha256", "sha3-256"}

// PackFileName returns the file name an external pack document with the
// given digest is stored under in PacksDir: "sha256-<base64url>.json"
// (or "sha3-256-<base64url>.json" for a 2026-09-24 sha3-256 digest). The
// name is derived only from the digest, whose base64url alphabet is safe
// in file names on every system.
func PackFileName(digest string) (string, error) {
	alg, rest, _ := strings.Cut(digest, ":")
	var sum [32]byte
	if !slices.Contains(digestAlgorithms[:], alg) || b64url.DecodeFixed(sum[:], rest) != nil {
		return "", identity.Errorf(adp.CodePackUnavailable, "pack digest %.80q is not sha256:<base64url> or sha3-256:<base64url>", digest)
	}
	return alg + "-" + rest + ".json", nil
}

// digestFromFileName inverts PackFileName.
func digestFromFileName(name string) (string, bool) {
	for _, alg := range digestAlgorithms {
		rest, ok := strings.CutPrefix(name, alg+"-")
		if !ok {
			continue
		}
		rest, ok = strings.CutSuffix(rest, ".json")
		var sum [32]byte
		if !ok || b64url.DecodeFixed(sum[:], rest) != nil {
			return "", false
		}
		return alg + ":" + rest, true
	}
	return "", false
}

// admits reports whether draft d admits digest's algorithm.
func admits(d adp.Draft, digest string) bool {
	alg, _, _ := strings.Cut(digest, ":")
	return slices.Contains(d.DigestAlgorithms(), alg)
}

// PackURL is where an archive of the room at roomURL serves the external
// pack document stored under name (PackFileName) in the 2026-09-24 draft:
// roomURL + "/archive/packs/" + name, beside the archive's other formats
// (§18: each packs entry's url serves the exact bytes the host verified).
// Its last segment is the file name VerifyFiles looks for.
func PackURL(roomURL, name string) string {
	return roomURL + "/archive/" + PacksDir + "/" + name
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
// room.Registry().Documents(); each is checked against its digest. In the
// 2026-09-24 draft they are also the manifest's packs (unless opts.Packs
// lists them), each served at PackURL(URL, its file name).
// Existing files are replaced.
func WriteDir(dir string, records []*adp.Record, docs []packs.PackDocument, opts *Options) (*Manifest, error) {
	if err := os.MkdirAll(filepath.Join(dir, PacksDir), 0o755); err != nil {
		return nil, err
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	d := o.Draft.OrDefault()
	fill := d != adp.Draft20260704 && o.Packs == nil
	for _, doc := range docs {
		name, err := PackFileName(doc.Digest)
		if err != nil {
			return nil, err
		}
		if err := d.VerifyDigest(doc.Raw, doc.Digest); err != nil {
			return nil, err
		}
		if fill {
			o.Packs = append(o.Packs, ArchivedPack{Pack: doc.Pack, Digest: doc.Digest, URL: PackURL(o.URL, name)})
		}
		if err := os.WriteFile(filepath.Join(dir, PacksDir, name), doc.Raw, 0o644); err != nil {
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
	w := NewWriter(rf, tf, &o)
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
		if err := os.WriteFile(filepath.Join(dir, PacksDir, RegisteredPacksFile), d.RegisteredDocument(), 0o644); err != nil {
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
