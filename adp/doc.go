// Package adp implements the Agent Discourse Protocol (ADP) 1.0, draft of
// 2026-07-04: signed discussion rooms with a hash-chained history. It
// also speaks the draft of 2026-09-24 (see Drafts); section numbers below
// are the 2026-07-04 text's unless marked.
//
// # Events
//
// Every write is an Agent Identity envelope with protocol
// "agent-discourse/1.0" and, except room.create, the top-level fields
// room_id, base_seq and base_hash (and optionally mentions). The builders
// ([NewRoomCreate], [NewJoin], [NewMessage], [NewCustom], …) fill those
// fields from a [Base], validate the payload locally — kernel schema plus
// every rule that needs no room state — and sign through an
// [envelope.Author], so an event a host would refuse for its shape is never
// signed.
//
// # Records and the chain
//
// A host accepts an envelope as a [Record]: seq (from 1, gapless), pre_hash
// (null at seq 1), received_at and hash = SHA3-256(JCS({room_id, seq,
// pre_hash, envelope_hash, received_at})). [ParseRecord] is strict;
// [Record.AppendJSON] writes canonical JSON. received_at never decreases
// along the chain: [Room.Apply] refuses a record dated before its
// predecessor (invalid_record), and [Room.Accept] never writes one.
//
// The record hash covers only those five members. A record may carry
// more (the kernel schema leaves it open; [Record.Extra] keeps them), and
// the archive digest events_sha3_256 (§19) covers them: it is computed
// over the records as given, each canonicalized, extra members included.
//
// # The room replayer
//
// [Room] materializes a room from its records — status, contract, members,
// bans, join reviews, the type registry and the head — and judges each
// write by every rule of §6–§15. Hosts call [Room.Accept] (check, link the
// record, commit), or, to store the record between the judgment and the
// state change, [Room.Prepare] with the event [ParseEvent] read, then
// [Pending.Commit], and [Pending.Undo] if the durable append fails (every
// write can be undone, in memory). Verifiers call [Room.Apply] for each
// record of a history. All paths run one rule table, so history verified
// offline is judged by exactly the rules its host had to apply. A rejected
// write changes nothing, and every rejection carries its §20 code:
//
//	if errors.Is(err, adp.ErrRoomHeadMismatch) { /* re-read, re-decide, re-sign */ }
//
// The head precondition (§6.1): signal-kind writes, including the five
// membership events, need base_seq/base_hash to name any accepted record
// (else base_record_mismatch); every other write must name the current
// head exactly (else room_head_mismatch) and becomes the new head.
// [Room.BaseFor] returns the right base for a type.
//
// # What the replayer does not judge
//
// The live-write window and nonce replay protection belong to
// [envelope.Verifier], which a host runs first. Rate limits and room
// duration limits are host policy (§21) and stay with the host. Join
// requests are HTTP resources, not events: a host passes its store as
// [RoomOptions.JoinRequests]; a verifier trusts what the log's reviews say.
// [Room.Apply] (a host loading a room from its log) checks a stored
// request's content but not its status, which by then shows the record's
// outcome.
// A public room approves valid requests automatically, with no
// room.join.review (§9.2, §11): replay accepts, once, a room.join naming
// a request_id that the log never reviewed, still enforcing bans, the
// role policy (a moderator request only for policy.moderator_agent_ids)
// and max_speakers; it cannot see that request's expiry or perspective,
// which the host (with its store) checks and keeps. Restricted and private
// rooms need the review in the log.
//
// # Payloads, limits and discovery
//
// [ParsePayload] decodes a built-in payload into its typed view ([RoomCreate],
// [Join], [Message], …) exactly as strictly as a host checks it; renderers
// and clients read payloads through it. [Event.Builtin] is the same view of
// a parsed event, decoded once: a host's own policy reads it before
// [Room.Prepare], and the rule table reuses it. Custom payloads are JSON objects
// (the kernel's customEvent), validated against the room's definition.
//
// The §21 payload limit applies to the canonical payload: the host's
// limit ([RoomOptions.MaxPayloadBytes], 64 KiB by default) for every type
// without a max_payload_hint, and for a type with one the hint clamped to
// the host's hinted ceiling ([RoomOptions.MaxHintedPayloadBytes], 256 KiB by
// default). A hint moves the limit within the host's bounds, never past
// them. [Room.Registry] hands out a copy: a room's types change only
// through its log.
//
// [ParseDiscovery] reads a host's discovery document in either draft's
// shape and says which ([Discovery].Draft): the seed's (§16.1), which names
// the host and its api and sse endpoints, or the 2026-09-24 draft's
// Identity-style document (§15.1), with a service origin and the rooms and
// my_rooms endpoints.
//
// # Talking to a host
//
// [Client] speaks the HTTP API of §16–§18 (2026-09-24 §15–§17) as one
// agent, in the draft its host serves ([ClientOptions].Draft, else the
// host's discovery document, read once): every endpoint, a
// context on every call, an injectable *[http.Client], clock, signer and
// nonce source, and a fresh request JWT (aud = the host's API origin) per
// request. Writes are signed through the nonce source; on
// nonce_not_greater the client applies Max-Seen-Nonce, re-signs once and
// retries, and a retried write re-sends the same envelope. A stale head
// is a *[HeadMismatchError] carrying the host's current head:
//
//	var hm *adp.HeadMismatchError
//	if errors.As(err, &hm) { /* re-read from hm.Data.CurrentSeq, re-decide */ }
//
// Every record the client returns has been verified against its own replica
// of the room, built from the host's history ([Client.Events],
// [Client.Sync]): the envelope, the record hash, the chain link and the room
// rules. A host that forges, reorders, drops or moves in a record gets an
// invalid_record error back, never data. Package
// [github.com/agentprotocols/go-sdk/adphost] is the host the client is
// tested against.
//
// The host's unsigned answers are read strictly as JSON but openly as
// schemas (§6): a member the SDK does not know is kept in the type's
// Unknown field, never fatal. Every call is bounded ([ClientOptions]): one
// attempt by AttemptTimeout (default 30 s), one body by MaxResponseSize (a
// history page over it is asked for again with fewer records, down to
// one), the records of one call by MaxRecords, and every listing by
// MaxPages, MaxListItems and MaxListBytes (its pages' bytes together); a
// repeated cursor or a page that does not advance ends a loop with an
// error. The live stream is package sse's
// Follow, given the Client in its Options.
//
// # Drafts
//
// A [Draft] names the text a room follows: [Draft20260704] (the default,
// the zero Draft) or [Draft20260924]. [RoomOptions.Draft] selects it for
// a room, [ParseRecordIn] and [ParseEventIn] read in it, a [Base] carries
// it to the builders, and [NewRoomCreateIn] and [NewJoinRequest] take it.
// Every function without a draft behaves as before the second draft
// existed. One table, draftTable (draft.go), holds what differs, one row
// per draft; the rule table (rules.go, room.go) consults it at the places
// marked "draft-dependent":
//
//   - the record's acceptance time, inside the record hash: received_at
//     (§15), accepted_at (2026-09-24 §14); and redacted records
//     ({hash, redacted: true, type}, [Redaction], 2026-09-24 §14.1), of
//     message.create and custom types only;
//   - freshness ([Class], [CheckBase], [NextBase]): in the seed every
//     write but a signal is based on the head exactly and moves it; in
//     the 2026-09-24 draft (§5.1) contract writes (room.update,
//     room.close, room.cancel, type.define) need only an anchor and move
//     the head, control writes are based on the head or later and move
//     it, messages are based on the head or later and do not, and
//     signals need only an anchor;
//   - joining: the seed's HTTP join requests and room.join with
//     request_id (§11), or in the 2026-09-24 draft direct room.join only
//     for an open role or an invitation (policy.open_roles,
//     policy.invites, §8.3, §9.2) and otherwise a signed
//     room.join.request a host holds ([Room.CheckJoinRequest]) and a
//     room.join.review embedding it ([SignedJoinReview]), which itself
//     makes the applicant a member (§10);
//   - room.create names its host in the 2026-09-24 draft and is bound to
//     it ([RoomOptions.Host]: host_mismatch, §8.1); its creator cannot
//     leave (§9.3); writing to an ended room is room_not_active there
//     (room_ended in the seed);
//   - the type system of package packs: kernel schemas, registered packs,
//     the type schema profile (invalid_type_schema) and conflict rules
//     (type_conflict).
//
// Readings where the 2026-09-24 text is open: a redacted custom-type
// record must name a type defined (and not disabled) at its seq, since
// its class depends on it, and must be allowed in the room's state at its
// accepted_at; its event ID counts as accepted. A replay cannot see a join
// request's expiry or whether the host still held it, so it accepts a
// review of a request the log has not reviewed before; a host passes its
// store ([RoomOptions.JoinRequests]), whose status must be pending
// (join_request_not_pending otherwise). An approved applicant's
// membership event is the review: its joined and last-event seqs are the
// review's. A loopback development host (http://127.0.0.1:…) may be named
// by room.create only where [RoomOptions.AllowLoopbackHTTP] allows it.
// Room duration limits stay host policy, as in the seed.
//
// # Adding a built-in event type
//
// The seed text fixes eleven built-in types (§13.2), the 2026-09-24 draft
// twelve (§12.2). A draft adding one touches every place below, for that
// draft (its row of the tables; laterChecklistBuilders holds the
// 2026-09-24 draft's builders); TestBuiltinChecklist (here) and
// TestBuiltinChecklistTranscript (in archive, which may import adp) fail
// until each is done:
//
//  1. vocab.go: the Type constant, its place in builtinTypes ([BuiltinTypes])
//     and its §13.2 category in [BuiltinCategory]; draft.go: its freshness
//     class in each draft's row of draftTable.
//  2. packs/kernel.schema.json and packs/kernel.go: the payload's kernel
//     schema and its row in the builtins table; [packs.BuiltinTypes] must
//     equal BuiltinTypes, in order.
//  3. payloads.go: the payload struct, the type's typed view.
//  4. payload_rules.go: its case in checkBuiltinPayload (strict decoding
//     plus the rules that need no room state) and its line in the
//     [ParsePayload] table.
//  5. build.go: its New… builder; then its entry in checklistBuilders
//     (checklist_test.go).
//  6. rules.go: its rule-table row — the §14 status rules in checkState
//     and the check… function holding its permission rule and its state
//     change; room.go: its case in Room.check's dispatch.
//  7. vectors_test.go: at least one accepted record of it (and its
//     rejections) in testdata/vectors.json; regenerate with
//     go test ./adp -run TestVectorsReproducible -update.
//  8. archive/transcript.go: a rendering of its own.
//  9. rules_test.go: a rule for each MUST of its section.
//
// # Vectors
//
// testdata/vectors.json holds the SDK's seed-draft conformance vectors: a
// room built from every built-in type and several pack types, each
// record's canonical event, hashes, signature and the head, and over forty
// rejections with their expected codes. The tests regenerate the file
// deterministically and replay it. A rejection marked code_choice "sdk"
// is one the text requires without naming its code: another
// implementation must refuse it, with any code.
//
// # Readings of the specification
//
// Where the seed text is open, the package chooses as follows.
//
//   - Error codes the text does not name: a write that is already
//     accepted (duplicate envelope), names another room, joins while
//     already an active member, updates the role of or removes (without
//     ban) a non-member, removes oneself, references an event the room
//     does not hold, changes a type's kind, or carries a contract change
//     §9.4 forbids is invalid_event; removing the creator is
//     permission_denied; a join request already consumed is
//     join_request_expired; one reviewed twice or after its automatic
//     approval, one used by another actor than its first, and an
//     unreviewed one in a restricted or private room are
//     join_request_not_found; room.cancel of an active room is
//     room_not_active.
//   - The creator's administrative authority (room.update, reviews, role
//     updates, removals, type.define, room.close, room.cancel) is
//     attached to its identity (§9, §10.1) and survives its own room.leave
//     and role changes. Discussion writes — message.create and custom
//     types — still need active membership, so a creator who left must
//     rejoin to speak.
//   - A review must find its request pending: expires_at, which the
//     request object carries, after the review's acceptance time
//     (else join_request_expired) and after the request's created_at
//     (else invalid_event).
//   - A host whose clock steps back keeps writing the latest received_at
//     (Room.Accept clamps), rather than backdating a record.
//   - [RestoreRoom] validates a snapshot as strictly as live input: roles,
//     statuses, decisions, the contract and every seq.
package adp
