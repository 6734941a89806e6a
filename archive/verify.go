package archive

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
	"github.com/agentprotocols/go-sdk/packs"
)

// Defaults for VerifyOptions.
const (
	// DefaultMaxLineBytes bounds one JSONL line: the largest envelope
	// plus room for the record members.
	DefaultMaxLineBytes = envelope.MaxSize + 64<<10
	// maxLineLimit caps VerifyOptions.MaxLineBytes.
	maxLineLimit = 1 << 30
	// maxWorkers caps VerifyOptions.Workers.
	maxWorkers = 256
)

// Pipeline granularity: lines travel between goroutines in batches.
const (
	batchLines = 64
	batchBytes = 128 << 10
)

// VerifyOptions configures Verify. A nil *VerifyOptions means defaults.
type VerifyOptions struct {
	// Draft is the draft the archive must follow; the zero value takes
	// the manifest's (Manifest.Draft, which ParseManifestWith recognizes).
	// A manifest of another draft is refused with invalid_manifest naming
	// both.
	Draft adp.Draft
	// AllowLoopbackHTTP admits plain-HTTP loopback URLs in a 2026-09-24
	// manifest (VerifyFiles) and a loopback development host named by the
	// room's room.create, as elsewhere in the SDK; by default only HTTPS.
	AllowLoopbackHTTP bool
	// Workers is the number of goroutines parsing records and checking
	// signatures; 0 means runtime.GOMAXPROCS(0). At most 256 are used.
	Workers int
	// Packs are the archived external pack documents. They are matched by
	// digest (Pack may be empty: the digest pins the content) and each
	// must match its digest, or Verify fails with pack_unavailable. The
	// replay fetches external packs only from here, never the network.
	Packs []packs.PackDocument
	// Room is the host policy the replay applies, as in adp.NewRoom: the
	// payload limit (MaxPayloadBytes), the content-type policy, and in
	// Room.Packs the schema and cost quotas of the type registry. nil
	// means the SDK host's defaults. Set it to the limits the archived
	// room's host announced, so that offline verification judges the
	// room by its host's quotas rather than by fixed constants. Verify
	// supplies its own fetcher (the archived documents in Packs), index
	// and join-request store (none: a replay trusts the log), whatever
	// Room holds in those fields.
	Room *adp.RoomOptions
	// MaxLineBytes bounds one JSONL line; 0 means DefaultMaxLineBytes.
	// Values above 1 GiB count as 1 GiB.
	MaxLineBytes int
	// TempDir is where Verify puts the temporary file that holds records
	// arriving before an earlier seq, when there are many of them (see
	// Verify); "" means os.TempDir(). The file is removed before Verify
	// returns.
	TempDir string
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
	// Draft is the draft the archive was verified under.
	Draft adp.Draft `json:"draft"`
	// Failure is the first failure, nil when Valid.
	Failure *Failure `json:"failure,omitzero"`

	RoomID string `json:"room_id"`
	// Host is the seed manifest's host (the host's assertion, §22), or in
	// the 2026-09-24 draft the host the room's room.create names (signed
	// by its creator, §8.1).
	Host        string `json:"host,omitzero"`
	URL         string `json:"url,omitzero"` // host's assertion (§22)
	GeneratedAt int64  `json:"generated_at"` // host's assertion (§22)

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
	// Redacted lists the redacted records (2026-09-24 §14.1), in seq
	// order: the chain covers them, but their signatures, payloads and
	// permissions could not be checked, and §18 asks verifiers to report
	// them. A valid archive with redactions is valid as far as it can be
	// verified.
	Redacted []RedactedRecord `json:"redacted,omitzero"`

	// ManifestUnknown names the manifest members §19 does not define
	// (Manifest.Unknown), sorted: host assertions, not verified.
	ManifestUnknown []string `json:"manifest_unknown,omitzero"`

	// Workers is the number of parse/signature workers used.
	Workers int `json:"workers"`
}

// RedactedRecord is a redacted record a verification met.
type RedactedRecord struct {
	Seq       int64         `json:"seq"`
	Type      string        `json:"type"`
	EventHash envelope.Hash `json:"event_hash"`
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
	// CannotEvaluate reports that this verifier lacks a feature the
	// archive needs (packs.ErrSchemaUnsupported: a type schema using
	// ECMA-262 regular-expression syntax that RE2 cannot run). It is a
	// verdict about the verifier, not that the host broke the protocol.
	CannotEvaluate bool `json:"cannot_evaluate,omitzero"`
}

// item is one JSONL line after the worker stage.
type item struct {
	line  int64
	off   int64 // where the line starts in the log
	raw   []byte
	rec   *adp.Record // nil for a line that did not parse, or that a worker found far ahead
	canon []byte      // the record in canonical JSON; nil if not computed yet
	err   error       // the line did not parse
	seq   int64       // the record's seq; best effort for a line that did not parse
}

// lineRef locates one line of a batch.
type lineRef struct {
	end  int   // end offset in batch.data; -1: the line is too long
	line int64 // 1-based line number in the log
	off  int64 // offset of the line's first byte in the log
}

// batch is a run of lines, consecutive in the log or (due) consecutive
// in seq. done is closed when a worker has filled items.
type batch struct {
	data    []byte
	lines   []lineRef
	items   []item
	canon   []byte
	readErr error // the read that ended the log, if not io.EOF
	due     bool  // every line is the next seq: check every signature
	done    chan struct{}
}

// Verify checks an archive's record log against its manifest, following
// §19 step by step:
//
//  1. Records are replayed in seq order: the JSONL line order is not
//     trusted, and any order is accepted. A seq that repeats, or is
//     missing, is invalid_record.
//  2. Every envelope's hash is recomputed from its canonical event and
//     its Ed25519 signature verified strictly (invalid_event_hash,
//     invalid_signature), on a pool of worker goroutines.
//  3. The room state is replayed with [adp.Room] — the same rule table hosts
//     use, under the host policy in [VerifyOptions.Room] — at each record's
//     received_at: membership, roles, bans, the type registry, and each
//     custom payload validated against the definition in force at its
//     seq. A record the host should have refused fails with the §20 code
//     the host should have answered. External packs resolve only from
//     [VerifyOptions.Packs] (pack_unavailable otherwise).
//  4. Each record's pre_hash must be the previous record's hash, its
//     record hash must match its acceptance data (invalid_record), and
//     the last record's hash must equal last_hash (archive_mismatch).
//  5. events_sha3_256 is recomputed over the canonical (RFC 8785) form of
//     the records, so it does not depend on how the log was written, and
//     compared; so are archive_root (a copy of it, or the [MerkleRoot]),
//     room_id, first_seq, last_seq and event_count (archive_mismatch).
//
// The log is read incrementally and never held in memory. A record that
// arrives before an earlier seq waits in a temporary file (in
// [VerifyOptions.TempDir]), or, when records is an [io.ReaderAt] and
// [io.Seeker] such as an *[os.File], only its offset waits there and the line is read again
// when its turn comes. Memory is bounded by the pipeline's bounded
// queues, about 1 MiB for records out of place however many there are,
// and the replay index (about 19 bytes per record): a 1,000,000-record
// archive verifies in under 64 MiB in any line order. Records out of
// place are parsed twice; far out of place, their signature is checked
// once, in the second pass.
//
// Blank lines (empty or white space only, CR included) are skipped at the
// cost of reading their bytes.
//
// Verification stops at the first failure. The error is an
// *[identity.Error] whose Code is the failure's code, whose Data is
// {"seq":…,"line":…}, and which wraps the underlying error; the report
// describes the archive up to that point. Errors that are not
// *identity.Error (reading records, the temporary file, a cancelled ctx)
// mean the archive could not be checked, not that it is invalid.
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
	if o.MaxLineBytes <= 0 {
		o.MaxLineBytes = DefaultMaxLineBytes
	}
	o.MaxLineBytes = min(o.MaxLineBytes, maxLineLimit)
	v := &verifier{m: m, opts: o, draft: m.Draft.OrDefault(), report: &Report{
		Draft: m.Draft.OrDefault(), RoomID: m.RoomID, Host: m.Host, URL: m.URL, GeneratedAt: m.GeneratedAt,
		Types: map[string]int64{}, Workers: o.Workers, ManifestUnknown: m.UnknownMembers(),
	}}
	v.seed = v.draft == adp.Draft20260704
	if v.seed {
		v.report.MerkleRoot = m.MerkleRooted()
	}
	err := v.run(ctx, records)
	v.finishReport()
	if err != nil {
		var ie *identity.Error
		if errors.As(err, &ie) {
			v.report.Failure = &Failure{Code: ie.Code, Message: ie.Message, CannotEvaluate: errors.Is(err, packs.ErrSchemaUnsupported)}
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
	draft  adp.Draft // the manifest's, never zero
	seed   bool      // draft is the seed: the manifest's digests are checked

	room     *adp.Room
	dg       *digest
	mk       *merkle
	next     int64 // the seq to replay next
	lastHash envelope.Hash
	lastAt   int64
	cbuf     []byte

	pend *pending
	jobs chan *batch
	// free recycles batch buffers from the sequencer to the reader, so
	// that reading costs no garbage per batch.
	free chan []byte
	// nextSeq mirrors next for the workers, which skip the signature of a
	// record far ahead of it: that record will wait in pend and be parsed
	// and checked again when its turn comes.
	nextSeq atomic.Int64
	horizon int64

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
	if d := v.opts.Draft; d != 0 && d.OrDefault() != v.draft {
		return v.fail(identity.Errorf(CodeInvalidManifest, "the manifest is a %s-draft manifest; this verification expects the %s draft", v.draft, d.OrDefault()), 0, 0)
	}
	if err := v.m.check(); err != nil {
		return v.fail(err, 0, 0)
	}
	docs, err := checkPacks(v.draft, v.opts.Packs)
	if err != nil {
		return v.fail(err, 0, 0)
	}
	// §18 step 4 (2026-09-24): every pack the manifest lists is archived,
	// and matches its digest.
	for i, p := range v.m.Packs {
		if !slices.ContainsFunc(docs, func(d packs.PackDocument) bool { return d.Digest == p.Digest }) {
			return v.fail(identity.Errorf(adp.CodePackUnavailable, "manifest packs[%d] (%.80q, %s): the archive does not carry its document", i, p.Pack, p.Digest), 0, 0)
		}
	}
	var ropts adp.RoomOptions
	if v.opts.Room != nil {
		ropts = *v.opts.Room
	}
	var popts packs.Options
	if ropts.Packs != nil {
		popts = *ropts.Packs
	}
	popts.Fetcher = docs
	ropts.Packs, ropts.Index, ropts.JoinRequests = &popts, nil, nil
	ropts.Draft = v.draft
	ropts.AllowLoopbackHTTP = ropts.AllowLoopbackHTTP || v.opts.AllowLoopbackHTTP
	if !v.opts.ExactIndex {
		ropts.Index = newFPIndex(v.m.records())
	}
	v.room = adp.NewRoom(v.m.RoomID, &ropts)
	v.dg = newDigest()
	if v.m.MerkleRooted() {
		v.mk = new(merkle)
	}
	v.next = 1
	v.nextSeq.Store(1)

	// Records out of seq order are re-read from the log when it can be
	// read at an offset, else spilled to a temporary file.
	var src io.ReaderAt
	var base int64
	if ra, ok := records.(io.ReaderAt); ok {
		if sk, ok := records.(io.Seeker); ok {
			if at, err := sk.Seek(0, io.SeekCurrent); err == nil {
				src, base = ra, at
			}
		}
	}
	v.pend = newPending(src, v.opts.TempDir)
	defer v.pend.close()

	// The pipeline: one reader goroutine cuts the log into batches of
	// lines; Workers goroutines parse them and check signatures; this
	// goroutine takes the batches back in line order (order carries them
	// in the order they were read, each with its own done channel) and
	// replays records in seq order, sending the batches of records that
	// waited for their turn to the same workers. Both queues are bounded,
	// so at most about 4×Workers+3 batches are in flight.
	quit := make(chan struct{})
	v.jobs = make(chan *batch, v.opts.Workers)
	order := make(chan *batch, 2*v.opts.Workers+1)
	// A record this many seqs ahead of next cannot be replayed before it
	// has waited: fewer lines than that are in flight before it.
	v.horizon = int64(4*v.opts.Workers+4) * batchLines
	v.free = make(chan []byte, cap(order)+cap(v.jobs)+v.opts.Workers+2)
	go readBatches(records, base, v.opts.MaxLineBytes, v.jobs, order, v.free, quit)
	var wg sync.WaitGroup
	for range v.opts.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case b := <-v.jobs:
					v.work(b)
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

	for b := range order {
		select {
		case <-b.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		recycle := b.data != nil
		for i := range b.items {
			if err := v.take(ctx, &b.items[i]); err != nil {
				return err
			}
			// A parsed record may alias the line (its payload does), and
			// the room may keep what it applied: recycle only batches
			// whose records all wait, as in a log in reverse order.
			recycle = recycle && b.items[i].rec == nil
		}
		if recycle {
			select {
			case v.free <- b.data[:0]:
			default:
			}
		}
		if b.readErr != nil {
			return fmt.Errorf("archive: reading records: %w", b.readErr)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return v.finish()
}

// take handles one parsed line: replay it if it is the next seq, else
// let it wait in pend.
func (v *verifier) take(ctx context.Context, it *item) error {
	if it.err != nil {
		return v.fail(it.err, it.seq, it.line)
	}
	seq := it.seq
	switch {
	case seq > v.m.LastSeq:
		return v.fail(mismatch("record seq %d is beyond the manifest's last_seq %d", seq, v.m.LastSeq), seq, it.line)
	case seq < v.next:
		return v.fail(identity.Errorf(adp.CodeInvalidRecord, "seq %d appears twice", seq), seq, it.line)
	case seq > v.next:
		// Every seq lies in 1..last_seq and event_count spans them, so a
		// line beyond event_count repeats one: this also bounds what
		// waits on disk.
		over := v.next+v.pend.count > v.m.records()
		if err := v.pend.add(pendEntry{seq: seq, line: it.line, off: it.off, n: int32(len(it.raw))}, it.raw); err != nil {
			return err
		}
		if over {
			if err := v.duplicate(); err != nil {
				return err
			}
			return v.fail(identity.Errorf(adp.CodeInvalidRecord,
				"the log has more records than the manifest's %d: a seq appears twice", v.m.records()), 0, it.line)
		}
		return nil
	}
	if it.rec == nil {
		// A worker took the record for one that would wait, and kept
		// only its seq: parse it again.
		rec, err := adp.ParseRecordIn(v.draft, it.raw)
		if err != nil {
			return v.fail(err, seq, it.line)
		}
		it.rec = rec
	}
	if err := v.apply(ctx, it); err != nil {
		return err
	}
	return v.drain(ctx)
}

// drain replays the waiting records whose turn has come, in batches that
// the workers parse and check in parallel.
func (v *verifier) drain(ctx context.Context) error {
	if v.pend.count == 0 {
		return nil
	}
	var queue []*batch
	next := v.next
	for {
		for len(queue) <= v.opts.Workers {
			b, err := v.pend.nextBatch(&next)
			if err != nil {
				return err
			}
			if b == nil {
				break
			}
			select {
			case v.jobs <- b:
			case <-ctx.Done():
				return ctx.Err()
			}
			queue = append(queue, b)
		}
		if len(queue) == 0 {
			break
		}
		b := queue[0]
		queue = queue[1:]
		select {
		case <-b.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		for i := range b.items {
			it := &b.items[i]
			if it.err != nil {
				return v.fail(it.err, v.next, it.line)
			}
			if it.rec.Seq != v.next {
				return fmt.Errorf("archive: records line %d changed while being verified: it no longer holds seq %d", it.line, v.next)
			}
			if err := v.apply(ctx, it); err != nil {
				return err
			}
		}
	}
	if e, ok := v.pend.peek(); ok && e.seq < v.next {
		return v.fail(identity.Errorf(adp.CodeInvalidRecord, "seq %d appears twice", e.seq), e.seq, e.line)
	}
	return nil
}

// duplicate empties pend in seq order and fails on the least seq that
// appears twice, at its second line; nil if none does.
func (v *verifier) duplicate() error {
	prev := int64(0)
	for {
		e, ok := v.pend.peek()
		if !ok {
			return nil
		}
		if e.seq == prev || e.seq < v.next {
			return v.fail(identity.Errorf(adp.CodeInvalidRecord, "seq %d appears twice", e.seq), e.seq, e.line)
		}
		if err := v.pend.pop(); err != nil {
			return err
		}
		prev = e.seq
	}
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
	if v.seed {
		if it.canon == nil {
			if it.canon = rec.CanonicalInput(); it.canon == nil {
				v.cbuf = rec.AppendJSON(v.cbuf[:0])
				it.canon = v.cbuf
			}
		}
		v.dg.add(it.canon)
		if v.mk != nil {
			v.mk.add(rec.Hash)
		}
	}
	if x := rec.Redacted; x != nil {
		v.report.Redacted = append(v.report.Redacted, RedactedRecord{Seq: rec.Seq, Type: x.Type, EventHash: x.Hash})
	}
	v.report.Types[rec.Type()]++
	v.report.Records++
	v.lastHash, v.lastAt = rec.Hash, rec.ReceivedAt
	v.next++
	v.nextSeq.Store(v.next)
	return nil
}

// finish runs the checks that need the whole log.
func (v *verifier) finish() error {
	last := v.next - 1
	if v.pend.count > 0 {
		// Records wait for a seq that never came. A seq that appears
		// twice among them is reported first.
		if err := v.duplicate(); err != nil {
			return err
		}
		return v.fail(identity.Errorf(adp.CodeInvalidRecord, "seq %d is missing", v.next), v.next, 0)
	}
	switch {
	case last == 0:
		return v.fail(mismatch("the record log is empty"), 0, 0)
	case last != v.m.LastSeq:
		return v.fail(mismatch("the records end at seq %d; the manifest's last_seq is %d", last, v.m.LastSeq), last+1, 0)
	case v.lastHash != v.m.LastHash:
		return v.fail(mismatch("last_hash %s is not the hash of record %d (%s)", v.m.LastHash, last, v.lastHash), last, 0)
	}
	if !v.seed {
		return v.finishPacks()
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

// finishPacks checks a 2026-09-24 manifest's packs against the room
// (§18): one entry per external pack the room imported, with the import's
// URL and digest, and no other.
func (v *verifier) finishPacks() error {
	imported := v.room.Registry().Documents()
	for _, d := range imported {
		if !slices.ContainsFunc(v.m.Packs, func(p ArchivedPack) bool { return p.Pack == d.Pack && p.Digest == d.Digest }) {
			return v.fail(mismatch("the room imported pack %.80q (%s), which the manifest's packs does not list", d.Pack, d.Digest), 0, 0)
		}
	}
	for i, p := range v.m.Packs {
		if !slices.ContainsFunc(imported, func(d packs.PackDocument) bool { return p.Pack == d.Pack && p.Digest == d.Digest }) {
			return v.fail(mismatch("manifest packs[%d] (%.80q, %s) names a pack the room never imported", i, p.Pack, p.Digest), 0, 0)
		}
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
	if !v.seed {
		r.Host = v.room.Contract().Host
	}
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
// the workers (jobs) and, in order, to the sequencer (order), in buffers
// from free when the sequencer has returned some. Blank lines
// are skipped in bulk and never reach a batch. pos is the log's offset at
// the reader's current position. It stops after the first line that is
// too long or the first read error: either ends verification.
func readBatches(r io.Reader, pos int64, maxLine int, jobs, order chan<- *batch, free <-chan []byte, quit <-chan struct{}) {
	defer close(order) // jobs stays open: the sequencer sends to it too
	br := bufio.NewReaderSize(r, 64<<10)
	nl := int64(0) // line feeds read so far
	// A new buffer is sized by the last batch rather than by the byte
	// bound: batches usually end at batchLines, far below batchBytes, and
	// every byte of a fresh buffer is zeroed and counts towards the next
	// garbage collection. A batch that needs more grows by append.
	size := batchBytes
	for {
		var b *batch
		var err error
		for err == nil && (b == nil || len(b.lines) < batchLines && len(b.data) < batchBytes) {
			// Hand over what has arrived before blocking for more, so a
			// slow stream is verified as it comes.
			if b != nil && br.Buffered() == 0 {
				break
			}
			var lfs, n int64
			lfs, n, err = skipBlank(br, b == nil)
			nl, pos = nl+lfs, pos+n
			if err != nil || br.Buffered() == 0 {
				continue
			}
			if b == nil {
				b = &batch{done: make(chan struct{})}
				select {
				case b.data = <-free:
				default:
					b.data = make([]byte, 0, size+4<<10)
				}
			}
			start := len(b.data)
			b.data, err = readLine(br, b.data, maxLine)
			switch {
			case err == nil, err == io.EOF && len(b.data) > start:
				b.lines = append(b.lines, lineRef{end: len(b.data), line: nl + 1, off: pos})
				pos += int64(len(b.data) - start)
				if err == nil {
					nl, pos = nl+1, pos+1
				}
			case err == errLineTooLong:
				b.lines = append(b.lines, lineRef{end: -1, line: nl + 1}) // the worker reports it
			case err != io.EOF:
				b.data = b.data[:start]
			}
		}
		if err != nil && err != io.EOF && err != errLineTooLong {
			if b == nil {
				b = &batch{done: make(chan struct{})}
			}
			b.readErr = err
		}
		if b != nil {
			size = min(batchBytes, len(b.data)+len(b.data)/8)
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

// skipBlank consumes JSON white space (space, tab, CR, LF) and returns the
// line feeds and bytes it consumed. It reads more only if block is set;
// otherwise it stops at the end of what is buffered. It returns io.EOF at
// the end of the log.
func skipBlank(br *bufio.Reader, block bool) (lfs, n int64, err error) {
	for {
		k := br.Buffered()
		if k == 0 {
			if !block {
				return lfs, n, nil
			}
			if _, err := br.Peek(1); err != nil {
				return lfs, n, err
			}
			k = br.Buffered()
		}
		buf, _ := br.Peek(k)
		i := 0
		for i < len(buf) && (buf[i] == ' ' || buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t') {
			i++
		}
		lfs += int64(bytes.Count(buf[:i], []byte{'\n'}))
		n += int64(i)
		br.Discard(i)
		if i < len(buf) {
			return lfs, n, nil
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
// the digest needs. Of a record far ahead of the replay (it will wait)
// only the seq is kept, and after one such record only the seq is read:
// the record is parsed and checked when its turn comes. A line far ahead
// that is not a valid record therefore fails at its seq's turn, not at
// its line's. A
// signature that fails is not reported here: the Room re-checks it in seq
// order, after the chain checks, so errors come in the same order
// whatever the number of workers.
func (v *verifier) work(b *batch) {
	defer close(b.done)
	b.items = make([]item, len(b.lines))
	horizon := v.nextSeq.Load() + v.horizon
	start := 0
	far := false // the previous line was far ahead
	for i, l := range b.lines {
		it := &b.items[i]
		it.line, it.off = l.line, l.off
		if l.end < 0 {
			it.err = identity.NewError(adp.CodeInvalidRecord, "line is longer than the line limit")
			continue
		}
		raw := b.data[start:l.end]
		start = l.end
		it.raw = raw
		if far {
			// Among lines far ahead (a log in reverse order, say), read
			// only the seq: a line that will wait is parsed when its turn
			// comes, so the first pass costs little time and garbage.
			if seq := peekSeq(raw); seq > horizon {
				it.seq = seq
				continue
			}
		}
		rec, err := adp.ParseRecordIn(v.draft, raw)
		if err != nil {
			it.err, it.seq = err, peekSeq(raw)
			continue
		}
		it.seq = rec.Seq
		if far = !b.due && rec.Seq > horizon; far {
			// It will wait: keep nothing of the parse.
			continue
		}
		it.rec = rec
		if rec.Envelope != nil {
			_ = rec.Envelope.Verify() // remembered on success
		}
		if !v.seed {
			continue // no digest over the records to prepare
		}
		// The digest covers the canonical form: a line already in it (as
		// the SDK writes them) is hashed as it stands.
		if it.canon = rec.CanonicalInput(); it.canon != nil {
			continue
		}
		if b.canon == nil {
			b.canon = make([]byte, 0, len(b.data)+len(b.data)/16)
		}
		n := len(b.canon)
		b.canon = rec.AppendJSON(b.canon)
		it.canon = b.canon[n:len(b.canon):len(b.canon)]
	}
}

// peekSeq finds a top-level integer "seq" in a line that did not parse,
// for error reports; 0 if there is none.
func peekSeq(raw []byte) int64 {
	dec := strictjson.GetDecoder(raw)
	defer dec.Release()
	d := dec.Decoder
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

// checkPacks verifies each archived document against its digest, of an
// algorithm draft d admits. The packs.StaticFetcher it returns serves
// them by digest, so the URI an import names need not match the one a
// document was archived under.
func checkPacks(draft adp.Draft, docs []packs.PackDocument) (packs.StaticFetcher, error) {
	s := make(packs.StaticFetcher, 0, len(docs))
	for _, d := range docs {
		if err := draft.VerifyDigest(d.Raw, d.Digest); err != nil {
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

// LoadPacks reads the external pack documents of an archive directory of
// the default draft: every file in dir/packs named
// sha256-<base64url>.json (PackFileName). See LoadPacksIn.
func LoadPacks(dir string) ([]packs.PackDocument, error) { return LoadPacksIn(adp.DefaultDraft, dir) }

// LoadPacksIn reads the external pack documents of an archive directory
// of draft d: every file in dir/packs named <algorithm>-<base64url>.json
// (PackFileName) for an algorithm the draft admits (sha256; also sha3-256
// in the 2026-09-24 draft). Each file's bytes must match the digest its
// name encodes, or LoadPacksIn fails with pack_unavailable. Other files
// (such as RegisteredPacksFile) are ignored. A missing packs directory is
// no error.
func LoadPacksIn(d adp.Draft, dir string) ([]packs.PackDocument, error) {
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
		if !ok || !e.Type().IsRegular() || !admits(d, digest) {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, PacksDir, e.Name()))
		if err != nil {
			return nil, err
		}
		if err := d.VerifyDigest(raw, digest); err != nil {
			return nil, identity.Wrap(adp.CodePackUnavailable, "archived pack document "+filepath.Join(PacksDir, e.Name()), err)
		}
		out = append(out, packs.PackDocument{Digest: digest, Raw: raw})
	}
	return out, nil
}

// findListedPacks adds to docs the document of each entry of a 2026-09-24
// manifest's packs that docs lacks, found beside the manifest under the
// last segment of the entry's url (in the packs directory or next to the
// manifest itself), as an archive laid out after its URLs may keep it.
// A file is taken only if it is at most DefaultMaxPackBytes and matches
// the entry's digest; what is still missing, Verify reports.
func findListedPacks(dir string, m *Manifest, docs []packs.PackDocument) ([]packs.PackDocument, error) {
	for _, p := range m.Packs {
		if slices.ContainsFunc(docs, func(d packs.PackDocument) bool { return d.Digest == p.Digest }) {
			continue
		}
		u, err := url.Parse(p.URL)
		if err != nil {
			continue
		}
		base := path.Base(u.Path)
		if base == "/" || base == "." || base == ".." || strings.ContainsAny(base, `/\`) {
			continue
		}
		for _, name := range []string{filepath.Join(dir, PacksDir, base), filepath.Join(dir, base)} {
			raw, err := readBounded(name, packs.DefaultMaxPackBytes)
			if err != nil {
				continue
			}
			if m.Draft.VerifyDigest(raw, p.Digest) == nil {
				docs = append(docs, packs.PackDocument{Pack: p.Pack, Digest: p.Digest, Raw: raw})
				break
			}
		}
	}
	return docs, nil
}

// readBounded reads a regular file of at most max bytes.
func readBounded(name string, max int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Size() > max {
		return nil, errors.New("not a regular file within the pack size bound")
	}
	return io.ReadAll(io.LimitReader(f, max+1))
}

// VerifyFiles verifies the archive whose manifest and record log are at
// the given paths; the external pack documents are read from the packs
// directory next to the manifest (LoadPacksIn, and for a 2026-09-24
// manifest the document each packs entry's url names, in that directory
// or next to the manifest). opts.Packs, if set, adds to them. The manifest is read with ParseManifestWith: its draft is
// recognized from its members unless opts.Draft pins one.
func VerifyFiles(ctx context.Context, manifestPath, recordsPath string, opts *VerifyOptions) (*Report, error) {
	var o VerifyOptions
	if opts != nil {
		o = *opts
	}
	mb, err := os.ReadFile(manifestPath)
	if err != nil {
		return nil, err
	}
	m, err := ParseManifestWith(mb, &ManifestOptions{Draft: o.Draft, AllowLoopbackHTTP: o.AllowLoopbackHTTP})
	if err != nil {
		msg := err.Error()
		if ie := (*identity.Error)(nil); errors.As(err, &ie) {
			msg = ie.Message // the code is Failure.Code; its Error() would repeat it
		}
		rep := &Report{Draft: o.Draft.OrDefault(), Failure: &Failure{Code: CodeInvalidManifest, Message: msg}}
		if d, derr := DetectDraft(mb); derr == nil && o.Draft == 0 {
			rep.Draft = d
		}
		return rep, err
	}
	docs, err := LoadPacksIn(m.Draft, filepath.Dir(manifestPath))
	if err == nil {
		docs, err = findListedPacks(filepath.Dir(manifestPath), m, docs)
	}
	if err != nil {
		var ie *identity.Error
		if errors.As(err, &ie) {
			return &Report{Draft: m.Draft.OrDefault(), RoomID: m.RoomID, Failure: &Failure{Code: ie.Code, Message: ie.Message}}, err
		}
		return nil, err
	}
	f, err := os.Open(recordsPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	o.Packs = append(docs, o.Packs...)
	return Verify(ctx, m, f, &o)
}

// VerifyDir verifies an archive directory in the WriteDir layout.
func VerifyDir(ctx context.Context, dir string, opts *VerifyOptions) (*Report, error) {
	return VerifyFiles(ctx, filepath.Join(dir, ManifestFile), filepath.Join(dir, RecordsFile), opts)
}

// TypeNames returns the report's event types, sorted.
func (r *Report) TypeNames() []string { return slices.Sorted(maps.Keys(r.Types)) }
