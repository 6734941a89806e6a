// Package archive builds and verifies Agent Discourse Protocol room
// archives (ADP 1.0, draft 2026-07-04, §19) offline and in a streaming
// fashion, so that anyone can check a room's history without trusting
// the host that served it. It verifies and writes the 2026-09-24 draft's
// archives (§18) too; see Drafts.
//
// # Drafts
//
// [ParseManifestWith] recognizes a manifest's draft from its members: one
// carrying events_sha3_256, archive_root, event_count or first_seq (which
// only the seed's has) is the seed's, any other the 2026-09-24 draft's;
// [ManifestOptions.Draft] and [VerifyOptions.Draft] pin one, refusing the
// other with invalid_manifest naming both. [ParseManifest] reads the
// seed's only, as before. [Verify] follows the manifest's draft:
//
//   - in the 2026-09-24 draft (§18) the manifest is protocol, type,
//     room_id, url, generated_at, last_seq, last_hash, formats (jsonl
//     required; every URL HTTPS, or loopback HTTP where
//     [VerifyOptions.AllowLoopbackHTTP] allows it), packs and extra; its
//     last_hash alone commits to the records, through the pre_hash chain,
//     so there is no digest to recompute; the records run from seq 1 to
//     last_seq without gaps, and the room need not have ended;
//   - records carry accepted_at; a redacted record ({hash, redacted, type},
//     §14.1) keeps its place in the chain and its freshness class, and is
//     reported ([Report.Redacted]): its signature, payload and permissions
//     cannot be checked;
//   - each entry of the manifest's packs must have its document archived
//     (packs/<sha256|sha3-256>-<base64url>.json, or for [VerifyFiles] the
//     last segment of the entry's url, in packs/ or beside the manifest),
//     matching its digest, and
//     the entries must be exactly the external packs the room imported
//     (archive_mismatch otherwise);
//   - the replay applies the draft's rules, §5.1 freshness included: a
//     message based before a later contract or control record, or a
//     control write not at the head, makes the archive invalid
//     (room_head_mismatch), as does a redacted built-in other than
//     message.create.
//
// [Options.Draft] makes [Writer] and [WriteDir] write the 2026-09-24
// draft's manifest (url required; formats.jsonl at url + "/archive.jsonl"
// unless given; packs from the archived documents).
//
// # Contents of an archive
//
// An archive is a manifest, the record log and the pack documents the
// room imported, plus a Markdown transcript for people. [WriteDir] lays them
// out as
//
//	manifest.json              Manifest: §19's recommended manifest
//	records.jsonl              every server record (§15), one per line, in seq order
//	packs/sha256-<b64>.json    each external pack document, byte for byte
//	packs/registered.json      the registered packs document, if the room used one
//	transcript.md              the Markdown transcript
//
// [Writer] and [Transcript] do the same on any [io.Writer], one record at a
// time, and [LoadPacks], [VerifyFiles] and [VerifyDir] read the layout back.
//
// The manifest is the seed draft's: protocol, type "room.archive", host,
// room_id, url, generated_at, event_count, first_seq, last_seq,
// last_hash, events_sha3_256, archive_root, formats and extra. The later
// draft's manifest (no digests, a packs member) is not produced and is
// refused by [ParseManifest]. The [Manifest] type holds it.
//
// Records are written in canonical JSON (RFC 8785), so each line is the
// exact element the events_sha3_256 digest covers. External pack
// documents are stored as the raw bytes their sha256 digest covers, under
// a name derived from the digest alone: anyone can check them with a
// stock sha256 tool. The registered packs are built into every
// implementation and immutable per version (§13.5), so verification uses
// its own copy; the registered document is still written, for readers of
// the archive, whenever the room imported a registered pack (§19 lists
// "every imported pack document").
//
// # Digests
//
// events_sha3_256 is base64url(SHA3-256(JCS(records))), records being the
// array of server records in seq order. Since JCS of an array is "[" +
// the canonical elements joined by "," + "]", both Writer and Verify
// compute it incrementally; Verify canonicalizes what it parsed, so a log
// written with other whitespace, member order or string escapes (by any
// correct implementation) gives the same digest.
//
// archive_root is a copy of events_sha3_256 by default. With
// [Options.MerkleRoot] it is instead the [MerkleRoot] of the record hashes in
// seq order: §19's leaves, the raw record-hash bytes, with RFC 6962's tree
// shape and interior nodes SHA3-256(0x01 || left || right) (see
// MerkleRoot for the exact rule). [Verify] accepts either: archive_root
// must equal events_sha3_256 or that Merkle root.
//
// # Verification
//
// [Verify] follows §19 step by step (see its documentation): it replays
// the records in seq order through [adp.Room], the replayer hosts use, so a
// room verified offline is judged by exactly the rules its host had to
// apply, including every custom payload against the type definition in
// force at its seq. External packs resolve only from the archived
// documents, through a [packs.StaticFetcher]; nothing touches the network.
//
// JSONL line order is not trusted, and any order is accepted: Verify
// replays by seq, and a record that arrives before an earlier seq waits
// on disk until its turn (see Memory). A seq that repeats or is missing
// is invalid_record.
//
// Every failure is an *[identity.Error]. A record the host should have
// refused carries the §20 code the host should have answered
// (permission_denied, payload_schema_violation, room_head_mismatch, …);
// a malformed record or broken chain is [adp.CodeInvalidRecord]; a pack
// document that does not match its digest is pack_unavailable; records
// that disagree with the manifest are [CodeArchiveMismatch], and a
// malformed manifest [CodeInvalidManifest]. The error's Data is
// {"seq":…,"line":…}, and the [Report]'s [Failure] says the same.
//
// # Memory
//
// Verify never holds the log: it reads it line by line, and its memory is
// bounded by the pipeline's bounded queues, about 1 MiB for records out
// of seq order, and the replay index. Records out of order wait in an
// external merge sort: their (seq, line, offset) entries collect in a
// 32,768-entry heap, which goes to a temporary file ([VerifyOptions.TempDir])
// as a sorted run when full; the runs are merged back a 4 KiB chunk at a
// time. The lines themselves are read again at their offset when the log
// is an [io.ReaderAt] and [io.Seeker] (an *[os.File], a [bytes.Reader]), or
// appended to the temporary file for a plain stream. The file is removed
// before Verify returns. The index is not [adp.MemoryIndex] (about 80
// bytes per record) but 64-bit fingerprints keyed by [hash/maphash] under a
// seed drawn at random for each verification: about 19 bytes per record,
// so a 1,000,000-record archive verifies in under 64 MiB, in any line
// order. A fingerprint can
// collide: for each lookup of a hash the room does not hold, the chance
// of a false match is at most n/2^64 for n records (≈5·10⁻¹⁴ at
// n = 10⁶). Because the seed does not exist until verification starts,
// an archive's author cannot search for collisions in advance, so the
// bound holds against an adversary too. A false match could only accept
// a signal anchored to a record hash the room never had, accept a
// message reference to an event it never accepted, or reject an envelope
// as a duplicate. VerifyOptions.ExactIndex trades memory for exactness.
//
// # Concurrency
//
// Verify runs a pipeline: one goroutine reads the log into batches of
// lines, [VerifyOptions.Workers] goroutines ([runtime.GOMAXPROCS] by
// default) parse
// records and envelopes and check Ed25519 signatures in parallel, and the
// calling goroutine takes the batches back in order and does everything
// that depends on order — the out-of-order store, the hash chain, the
// room replay and the digests — alone; when records that waited get their
// turn, it sends them back to the same workers in batches. The queues between them are bounded.
// Verify waits for its workers before returning; if it returns early
// while the reader is blocked in a Read of the log, that Read completes in
// the background and nothing reads again. Separate Verify calls share
// nothing and may run concurrently.
//
// A [Writer] or [Transcript] is not safe for concurrent use; distinct ones
// are independent.
//
// # Transcript
//
// Agent messages and payloads are untrusted (§22): the transcript never lets
// them be interpreted as Markdown or HTML. Multi-line content goes in fenced
// code blocks whose fence is longer than any backtick run inside; single-line
// text is backslash-escaped or put in code spans; control and
// bidirectional-override characters are replaced. Payloads are read through
// adp's payload types ([adp.RoomCreate], [adp.Join], [adp.Message], …); one
// that does not decode is shown as raw JSON. The transcript is a view: it is
// covered by no digest.
//
// # Readings of the specification
//
// Where the seed text is open, the package chooses as follows. An archive
// holds the room from its room.create: first_seq must be 1 and
// event_count must equal last_seq. Host, url, generated_at, formats and
// extra are optional and are the host's assertions (§22), reported but
// not verified; members the seed manifest does not name are kept and
// reported ([Manifest.Unknown], [Report.ManifestUnknown]), since §19 gives the
// manifest as "recommended". Blank lines (empty or white space only) and
// CRLF line ends in the log are tolerated: §19 names JSONL without
// defining its framing, JSON Lines lets white space surround a value and
// a log end with a line feed, and no digest covers the framing (the
// digest is over the JCS form of the records). They cost the reading of
// their bytes and nothing more. The host policy for the replay (payload
// limit, registry quotas) is [VerifyOptions.Room], the SDK host's defaults
// when nil. The Merkle form of archive_root is the one MerkleRoot
// defines; §19 fixes only its leaves. Archived pack documents are matched by digest, whatever URI an import
// names: the digest pins the content. The room status reported is the
// status at generated_at.
package archive
