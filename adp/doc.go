// Package adp implements the Agent Discourse Protocol (ADP) 1.0, draft of
// 2026-07-04: signed discussion rooms with a hash-chained history.
//
// # Events
//
// Every write is an Agent Identity envelope with protocol
// "agent-discourse/1.0" and, except room.create, the top-level fields
// room_id, base_seq and base_hash (and optionally mentions). The builders
// (NewRoomCreate, NewJoin, NewMessage, NewCustom, …) fill those fields from
// a Base, validate the payload locally — kernel schema plus every rule that
// needs no room state — and sign through an envelope.Author, so an event a
// host would refuse for its shape is never signed.
//
// # Records and the chain
//
// A host accepts an envelope as a Record: seq (from 1, gapless), pre_hash
// (null at seq 1), received_at and hash = SHA3-256(JCS({room_id, seq,
// pre_hash, envelope_hash, received_at})). ParseRecord is strict;
// Record.AppendJSON writes canonical JSON.
//
// # The room replayer
//
// Room materializes a room from its records — status, contract, members,
// bans, join reviews, the type registry and the head — and judges each
// write by every rule of §6–§15. Hosts call Accept (check, link the
// record, commit); verifiers call Apply for each record of a history.
// Both paths run one rule table, so history verified offline is judged by
// exactly the rules its host had to apply. A rejected write changes
// nothing, and every rejection carries its §20 code:
//
//	if errors.Is(err, adp.ErrRoomHeadMismatch) { /* re-read, re-decide, re-sign */ }
//
// The head precondition (§6.1): signal-kind writes, including the five
// membership events, need base_seq/base_hash to name any accepted record
// (else base_record_mismatch); every other write must name the current
// head exactly (else room_head_mismatch) and becomes the new head. Room
// BaseFor returns the right base for a type.
//
// # What the replayer does not judge
//
// The live-write window and nonce replay protection belong to
// envelope.Verifier, which a host runs first. Rate limits and room
// duration limits are host policy (§21) and stay with the host. Join
// requests are HTTP resources, not events: a host passes its store as
// RoomOptions.JoinRequests; a verifier trusts what the log's reviews say.
//
// # Vectors
//
// testdata/vectors.json holds the SDK's seed-draft conformance vectors: a
// room built from every built-in type and several pack types, each
// record's canonical event, hashes, signature and the head, and over forty
// rejections with their expected codes. The tests regenerate the file
// deterministically and replay it.
package adp
