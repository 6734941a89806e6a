package archive

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
	"github.com/agentprotocols/go-sdk/packs"
)

// Defaults for VerifyOptions.
const (
	// DefaultReorderWindow is how many records may wait for an earlier
	// seq that has not appeared yet.
	DefaultReorderWindow = 4096
	// DefaultMaxLineBytes bounds one JSONL line: the largest envelope
	// plus room for the record members.
	DefaultMaxLineBytes = envelope.MaxSize + 64<<10
	// maxWorkers caps VerifyOptions.Workers.
	maxWorkers = 256
	// maxPendingBytes bounds the JSONL bytes a bounded reorder window
	// holds, whatever the line sizes.
	maxPendingBytes = 64 << 20
)

// Pipeline granularity: lines travel between goroutines in batches.
const (
	batchLines = 64
	batchBytes = 128 << 10
)

// VerifyOptions configures Verify. A nil *VerifyOptions means defaults.
type VerifyOptions struct {
	// Workers is the number of goroutines parsing records and checking
	// signatures; 0 means runtime.GOMAXPROCS(0). At most 256 are used.
	Workers int
	// Packs are the archived external pack documents. They are matched by
	// digest (Pack may be empty: the digest pins the content) and each
	// must match its digest, or Verify fails with pack_unavailable. The
	// replay fetches external packs only from here, never the network.
	Packs []packs.PackDocument
	// ReorderWindow is how many records may arrive before a missing
	// earlier seq (JSONL line order is not trusted: records are replayed
	// in seq order). 0 means DefaultReorderWindow; a negative value means
	// unbounded, which holds an arbitrarily shuffled log in memory.
	ReorderWindow int
	// MaxLineBytes bounds one JSONL line; 0 means DefaultMaxLineBytes.
	MaxLineBytes int
	// MaxPayloadBytes is the payload limit the host enforced (§21); 0
	// means adp.MaxPayloadBytes.
	MaxPayloadBytes int
	// ExactIndex replays with adp.MemoryIndex (about 80 bytes per record)
	// instead of the default 64-bit fingerprint index (about 19 bytes per
	// record, false-match probability ≤ n/2^64 per lookup; see the package
	// documentation).
	ExactIndex bool
}

// Report is what Verify found. On failure it describes the archive up to
// the failing record.
type Report struct {
	// Valid is true when every check passed.
	Valid bool `json:"valid"`
	// Failure is the first failure, nil when Valid.
	Failure *Failure `json:"failure,omitzero"`

	RoomID      string `json:"room_id"`
	Host        string `json:"host,omitzero"` // host's assertion (§22)
	URL         string `json:"url,omitzero"`  // host's assertion (§22)
	GeneratedAt int64  `json:"generated_at"`  // host's assertion (§22)

	// Records is the number of records replayed successfully; they span
	// seq 1..LastSeq.
	Records  int64         `json:"records"`
	LastSeq  int64         `json:"last_seq"`
	LastHash envelope.Hash `json:"last_hash"`
	// EventsSHA3256 and ArchiveRoot are the recomputed digests (zero if
	// verification stopped before the end of the log).
	EventsSHA3256 envelope.Hash `json:"events_sha3_256"`
	ArchiveRoot   envelope.Hash `json:"archive_root"`
	// MerkleRoot is true when the manifest's archive_root is a Merkle
	// root rather than a copy of events_sha3_256.
	MerkleRoot bool `json:"merkle_root"`

	// Status is the room status at generated_at (at the last record's
	// received_at when the manifest gives no generated_at).
	Status adp.Status    `json:"status,omitzero"`
	Head   adp.RecordRef `json:"head"`
	// Members is every membership, in join order.
	Members []adp.Member `json:"members"`
	// Types counts records per event type.
	Types map[string]int64 `json:"types"`
	// Definitions is the number of room-defined types in force at the end.
	Definitions int `json:"definitions"`
	// Packs lists the external packs the room imported.
	Packs []PackRef `json:"packs,omitzero"`

	// Workers is the number of parse/signature workers used.
	Workers int `json:"workers"`
}

// PackRef names an external pack document a room imported: the URI its
// import named and the digest of its bytes.
type PackRef struct {
	Pack   string `json:"pack"`
	Digest string `json:"digest"`
}

// Failure locates the first failure: the record's seq (0 when unknown,
// as for a line that does not parse) and its 1-based line in the JSONL
// log (0 for manifest-level failures), with the error code.
type Failure struct {
	Seq     int64         `json:"seq,omitzero"`
	Line    int64         `json:"line,omitzero"`
	Code    identity.Code `json:"code"`
	Message string        `json:"message"`
}

// item is one JSONL line after the worker stage.
type item struct {
	line  int64
	rec   *adp.Record
	canon []byte // the record in canonical JSON
	err   error  // the line did not parse
	seq   int64  // best-effort seq of a line that did not parse
	size  int    // bytes of the line
	skip  bool   // blank line
}

// batch is a run of consecutive lines. done is closed when the worker
// has filled items.
type batch struct {
	first   int64 // line number of the first line
	data    []byte
	ends    []int // end offsets of the lines in data
	items   []item
	canon   []byte
	readErr error // the read that ended the log, if not io.EOF
	done    chan struct{}
}

// Verify checks an archive's record log against its manifest, following
// §19 step by step:
//
//  1. Records are replayed in seq order: the JSONL line order is not
//     trusted. A record may appear up to ReorderWindow records after a
//     later seq; a seq that repeats, or is missing, is invalid_record.
//  2. Every envelope's hash is recomputed from its canonical event and
//     its Ed25519 signature verified strictly (invalid_event_hash,
//     invalid_signature), on a pool of worker goroutines.
//  3. The room state is replayed with adp.Room — the same rule table hosts
//     use — at each record's received_at: membership, roles, bans, the
//     type registry, and each custom payload validated against the
//     definition in force at its seq. A record the host should have
//     refused fails with the §20 code the host should have answered.
//     External packs resolve only from opts.Packs (pack_unavailable
//     otherwise).
//  4. Each record's pre_hash must be the previous record's hash, its
//     record hash must match its acceptance data (invalid_record), and
//     the last record's hash must equal last_hash (archive_mismatch).
//  5. events_sha3_256 is recomputed over the canonical (RFC 8785) form of
//     the records, so it does not depend on how the log was written, and
//     compared; so are archive_root (a copy of it, or the MerkleRoot),
//     room_id, first_seq, last_seq and event_count (archive_mismatch).
//
// The log is read incrementally and never held in memory: memory is
// bounded by the reorder window, the pipeline's bounded queues, and the
// replay index (about 19 bytes per record).
//
// Verification stops at the first failure. The error is an
// *identity.Error whose Code is the failure's code, whose Data is
// {"seq":…,"line":…}, and which wraps the underlying error; the report
// describes the archive up to that point. Errors that are not
// *identity.Error (reading records, a cancelled ctx) mean the archive
// could not be checked, not that it is invalid.
func Verify(ctx context.Context, m *Manifest, records io.Reader, opts *VerifyOptions) (*Report, error) {
	if m == nil {
		err := identity.NewError(CodeInvalidManifest, "no manifest")
		return &Report{Failure: &Failure{Code: err.Code, Message: err.Message}}, err
	}
	var o VerifyOptions
	if opts != nil {
		o = *opts
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	o.Workers = min(o.Workers, maxWorkers)
	if o.ReorderWindow == 0 {
		o.ReorderWindow = DefaultReorderWindow
	}
	if o.MaxLineBytes <= 0 {
		o.MaxLineBytes = DefaultMaxLineBytes
	}
	v := &verifier{m: m, opts: o, report: &Report{
		RoomID: m.RoomID, Host: m.Host, URL: m.URL, GeneratedAt: m.GeneratedAt,
		MerkleRoot: m.MerkleRooted(), Types: map[string]int64{}, Workers: o.Workers,
	}}
	err := v.run(ctx, records)
	v.finishReport()
	if err != nil {
		var ie *identity.Error
		if errors.As(err, &ie) {
			v.report.Failure = &Failure{Code: ie.Code, Message: ie.Message}
			v.report.Failure.Seq, v.report.Failure.Line = v.failSeq, v.failLine
		}
		return v.report, err
	}
	v.report.Valid = true
	return v.report, nil
}

type verifier struct {
	m      *Manifest
	opts   VerifyOptions
	report *Report

	room     *adp.Room
	dg       *digest
	mk       *merkle
	next     int64 // the seq to replay next
	lastHash envelope.Hash
	lastAt   int64

	pendingBytes int // JSONL bytes held for reordering

	failSeq, failLine int64
}

// fail records where verification stopped and builds the error.
func (v *verifier) fail(cause error, seq, line int64) error {
	v.failSeq, v.failLine = seq, line
	return failure(cause, seq, line)
}

func (v *verifier) run(ctx context.Context, records io.Reader) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := v.m.check(); err != nil {
		return v.fail(err, 0, 0)
	}
	docs, err := checkPacks(v.opts.Packs)
	if err != nil {
		return v.fail(err, 0, 0)
	}
	ropts := &adp.RoomOptions{
		Packs:           &packs.Options{Fetcher: docs},
		MaxPayloadBytes: v.opts.MaxPayloadBytes,
	}
	if !v.opts.ExactIndex {
		ropts.Index = newFPIndex(v.m.EventCount)
	}
	v.room = adp.NewRoom(v.m.RoomID, ropts)
	v.dg = newDigest()
	if v.m.MerkleRooted() {
		v.mk = new(merkle)
	}
	v.next = 1

	// The pipeline: one reader goroutine cuts the log into batches of
	// lines; Workers goroutines parse them and check signatures; this
	// goroutine takes the batches back in line order (order carries them
	// in the order they were read, each with its own done channel) and
	// replays records in seq order. Both queues are bounded, so at most
	// about 3×Workers+2 batches are in flight.
	quit := make(chan struct{})
	jobs := make(chan *batch, v.opts.Workers)
	order := make(chan *batch, 2*v.opts.Workers+1)
	go readBatches(records, v.opts.MaxLineBytes, jobs, order, quit)
	var wg sync.WaitGroup
	for range v.opts.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case b, ok := <-jobs:
					if !ok {
						return
					}
					work(b)
				case <-quit:
					return
				}
			}
		}()
	}
	// On return, stop the reader and the workers. The reader may still be
	// inside a Read of records; it exits when that Read returns and never
	// reads again.
	defer wg.Wait()
	defer close(quit)

	pending := map[int64]*item{}
	for b := range order {
		select {
		case <-b.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		for i := range b.items {
			it := &b.items[i]
			if it.skip {
				continue
			}
			if err := v.take(ctx, it, pending); err != nil {
				return err
			}
		}
		if b.readErr != nil {
			return fmt.Errorf("archive: reading records: %w", b.readErr)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return v.finish(pending)
}

// take handles one parsed line: replay it if it is the next seq, else
// hold it in the reorder window.
func (v *verifier) take(ctx context.Context, it *item, pending map[int64]*item) error {
	if it.err != nil {
		return v.fail(it.err, it.seq, it.line)
	}
	seq := it.rec.Seq
	switch {
	case seq > v.m.LastSeq:
		return v.fail(mismatch("record seq %d is beyond the manifest's last_seq %d", seq, v.m.LastSeq), seq, it.line)
	case seq < v.next:
		return v.fail(identity.Errorf(adp.CodeInvalidRecord, "seq %d appears twice", seq), seq, it.line)
	case seq > v.next:
		if p := pending[seq]; p != nil {
			return v.fail(identity.Errorf(adp.CodeInvalidRecord, "seq %d appears twice (also line %d)", seq, p.line), seq, it.line)
		}
		pending[seq] = it
		v.pendingBytes += it.size
		if w := v.opts.ReorderWindow; w >= 0 && (len(pending) > w || v.pendingBytes > maxPendingBytes) {
			return v.fail(identity.Errorf(adp.CodeInvalidRecord,
				"seq %d is missing (or more than %d records out of place; raise VerifyOptions.ReorderWindow for a shuffled log)", v.next, w), v.next, 0)
		}
		return nil
	}
	if err := v.apply(ctx, it); err != nil {
		return err
	}
	for len(pending) > 0 {
		p := pending[v.next]
		if p == nil {
			break
		}
		delete(pending, v.next)
		v.pendingBytes -= p.size
		if err := v.apply(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// apply replays the record at v.next and absorbs it into the digests.
func (v *verifier) apply(ctx context.Context, it *item) error {
	rec := it.rec
	if rec.Seq == 1 && rec.RoomID != v.m.RoomID {
		return v.fail(mismatch("the records belong to room %.64q, the manifest names %.64q", rec.RoomID, v.m.RoomID), 1, it.line)
	}
	if err := v.room.Apply(ctx, rec); err != nil {
		return v.fail(err, rec.Seq, it.line)
	}
	v.dg.add(it.canon)
	if v.mk != nil {
		v.mk.add(rec.Hash)
	}
	v.report.Types[rec.Envelope.Type()]++
	v.report.Records++
	v.lastHash, v.lastAt = rec.Hash, rec.ReceivedAt
	v.next++
	return nil
}

// finish runs the checks that need the whole log.
func (v *verifier) finish(pending map[int64]*item) error {
	last := v.next - 1
	switch {
	case len(pending) > 0:
		return v.fail(identity.Errorf(adp.CodeInvalidRecord, "seq %d is missing", v.next), v.next, 0)
	case last == 0:
		return v.fail(mismatch("the record log is empty"), 0, 0)
	case last != v.m.LastSeq:
		return v.fail(mismatch("the records end at seq %d; the manifest's last_seq is %d", last, v.m.LastSeq), last+1, 0)
	case v.lastHash != v.m.LastHash:
		return v.fail(mismatch("last_hash %s is not the hash of record %d (%s)", v.m.LastHash, last, v.lastHash), last, 0)
	}
	v.report.EventsSHA3256 = v.dg.sum()
	v.report.ArchiveRoot = v.report.EventsSHA3256
	if v.mk != nil {
		v.report.ArchiveRoot = v.mk.root()
	}
	switch {
	case v.report.EventsSHA3256 != v.m.EventsSHA3256:
		return v.fail(mismatch("events_sha3_256 is %s; the records give %s", v.m.EventsSHA3256, v.report.EventsSHA3256), 0, 0)
	case v.report.ArchiveRoot != v.m.ArchiveRoot:
		return v.fail(mismatch("archive_root %s is neither events_sha3_256 nor the Merkle root of the record hashes (%s)", v.m.ArchiveRoot, v.report.ArchiveRoot), 0, 0)
	}
	return nil
}

func (v *verifier) finishReport() {
	r := v.report
	if v.room == nil {
		return
	}
	r.LastSeq, r.LastHash = v.next-1, v.lastHash
	r.Head = v.room.Head()
	r.Members = v.room.Members()
	at := v.m.GeneratedAt
	if at == 0 {
		at = v.lastAt
	}
	if v.room.Created() {
		r.Status = v.room.Status(time.UnixMilli(at))
	}
	reg := v.room.Registry()
	r.Definitions = reg.Len()
	for _, d := range reg.Documents() {
		r.Packs = append(r.Packs, PackRef{Pack: d.Pack, Digest: d.Digest})
	}
}

// readBatches cuts the log into batches of whole lines and hands each to
// the workers (jobs) and, in order, to the sequencer (order). It stops
// after the first line that is too long or the first read error: either
// ends verification.
func readBatches(r io.Reader, maxLine int, jobs, order chan<- *batch, quit <-chan struct{}) {
	defer close(order)
	defer close(jobs)
	br := bufio.NewReaderSize(r, 64<<10)
	line := int64(0)
	for {
		b := &batch{first: line + 1, done: make(chan struct{}), data: make([]byte, 0, batchBytes+4<<10)}
		var err error
		for err == nil && len(b.ends) < batchLines && len(b.data) < batchBytes {
			// Hand over what has arrived before blocking for more, so a
			// slow stream is verified as it comes.
			if len(b.ends) > 0 && br.Buffered() == 0 {
				break
			}
			start := len(b.data)
			b.data, err = readLine(br, b.data, maxLine)
			switch {
			case err == nil, err == io.EOF && len(b.data) > start:
				b.ends = append(b.ends, len(b.data))
				line++
			case err == errLineTooLong:
				b.ends = append(b.ends, -1) // the worker reports it
				line++
			case err != io.EOF:
				b.data = b.data[:start]
				b.readErr = err
			}
		}
		if len(b.ends) > 0 || b.readErr != nil {
			select {
			case order <- b:
			case <-quit:
				return
			}
			select {
			case jobs <- b:
			case <-quit:
				return
			}
		}
		if err != nil {
			return
		}
	}
}

var errLineTooLong = errors.New("line too long")

// readLine appends the next line (without its line feed) to dst. It
// returns io.EOF at the end of the log (with the last line, if it has no
// line feed), and errLineTooLong, having appended nothing, for a line
// longer than max bytes.
func readLine(br *bufio.Reader, dst []byte, max int) ([]byte, error) {
	start := len(dst)
	for {
		chunk, err := br.ReadSlice('\n')
		if len(dst)-start+len(chunk) > max+1 {
			return dst[:start], errLineTooLong
		}
		dst = append(dst, chunk...)
		switch err {
		case nil:
			return dst[:len(dst)-1], nil
		case bufio.ErrBufferFull:
			continue
		}
		return dst, err
	}
}

// work parses a batch: the strict record and envelope parse (canonical
// event, event hash), the signature check, and the canonical re-encoding
// the digest needs. A signature that fails is not reported here: the
// Room re-checks it in seq order, after the chain checks, so errors come
// in the same order whatever the number of workers.
func work(b *batch) {
	defer close(b.done)
	b.items = make([]item, len(b.ends))
	b.canon = make([]byte, 0, len(b.data)+len(b.data)/16)
	start := 0
	for i, end := range b.ends {
		it := &b.items[i]
		it.line = b.first + int64(i)
		if end < 0 {
			it.err = identity.NewError(adp.CodeInvalidRecord, "line is longer than the line limit")
			continue
		}
		raw := b.data[start:end]
		start = end
		it.size = len(raw)
		if len(bytes.TrimSpace(raw)) == 0 {
			it.skip = true
			continue
		}
		rec, err := adp.ParseRecord(raw)
		if err != nil {
			it.err, it.seq = err, peekSeq(raw)
			continue
		}
		_ = rec.Envelope.Verify() // remembered on success
		it.rec = rec
		n := len(b.canon)
		b.canon = rec.AppendJSON(b.canon)
		it.canon = b.canon[n:len(b.canon):len(b.canon)]
	}
}

// peekSeq finds a top-level integer "seq" in a line that did not parse,
// for error reports; 0 if there is none.
func peekSeq(raw []byte) int64 {
	d := strictjson.NewDecoder(raw)
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return 0
	}
	for d.PeekKind() == '"' {
		tok, err := d.ReadToken()
		if err != nil {
			return 0
		}
		name := tok.String()
		val, err := d.ReadValue()
		if err != nil {
			return 0
		}
		if name == "seq" && val.Kind() == '0' {
			n, err := strictjson.ParseInt(val)
			if err != nil || n < 1 {
				return 0
			}
			return n
		}
	}
	return 0
}

// checkPacks verifies each archived document against its digest. The
// packs.StaticFetcher it returns serves them by digest, so the URI an
// import names need not match the one a document was archived under.
func checkPacks(docs []packs.PackDocument) (packs.StaticFetcher, error) {
	s := make(packs.StaticFetcher, 0, len(docs))
	for _, d := range docs {
		if err := packs.VerifyDigest(d.Raw, d.Digest); err != nil {
			name := d.Pack
			if name == "" {
				name, _ = PackFileName(d.Digest)
			}
			return nil, identity.Wrap(adp.CodePackUnavailable, fmt.Sprintf("archived pack document %.80q", name), err)
		}
		s = append(s, d)
	}
	return s, nil
}

// LoadPacks reads the external pack documents of an archive directory:
// every file in dir/packs named sha256-<base64url>.json (PackFileName).
// Each file's bytes must match the digest its name encodes, or LoadPacks
// fails with pack_unavailable. Other files (such as RegisteredPacksFile)
// are ignored. A missing packs directory is no error.
func LoadPacks(dir string) ([]packs.PackDocument, error) {
	entries, err := os.ReadDir(filepath.Join(dir, PacksDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []packs.PackDocument
	for _, e := range entries {
		digest, ok := digestFromFileName(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, PacksDir, e.Name()))
		if err != nil {
			return nil, err
		}
		if err := packs.VerifyDigest(raw, digest); err != nil {
			return nil, identity.Wrap(adp.CodePackUnavailable, "archived pack document "+filepath.Join(PacksDir, e.Name()), err)
		}
		out = append(out, packs.PackDocument{Digest: digest, Raw: raw})
	}
	return out, nil
}

// VerifyFiles verifies the archive whose manifest and record log are at
// the given paths; the external pack documents are read from the packs
// directory next to the manifest (LoadPacks). opts.Packs, if set, adds to
// them.
func VerifyFiles(ctx context.Context, manifestPath, recordsPath string, opts *VerifyOptions) (*Report, error) {
	mb, err := os.ReadFile(manifestPath)
	if err != nil {
		return nil, err
	}
	m, err := ParseManifest(mb)
	if err != nil {
		return &Report{Failure: &Failure{Code: CodeInvalidManifest, Message: err.Error()}}, err
	}
	docs, err := LoadPacks(filepath.Dir(manifestPath))
	if err != nil {
		var ie *identity.Error
		if errors.As(err, &ie) {
			return &Report{RoomID: m.RoomID, Failure: &Failure{Code: ie.Code, Message: ie.Message}}, err
		}
		return nil, err
	}
	f, err := os.Open(recordsPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var o VerifyOptions
	if opts != nil {
		o = *opts
	}
	o.Packs = append(docs, o.Packs...)
	return Verify(ctx, m, f, &o)
}

// VerifyDir verifies an archive directory in the WriteDir layout.
func VerifyDir(ctx context.Context, dir string, opts *VerifyOptions) (*Report, error) {
	return VerifyFiles(ctx, filepath.Join(dir, ManifestFile), filepath.Join(dir, RecordsFile), opts)
}

// TypeNames returns the report's event types, sorted.
func (r *Report) TypeNames() []string { return slices.Sorted(maps.Keys(r.Types)) }
