// Package agentprotocols is the root of the Go SDK for Agent Protocols:
// Agent Identity 1.0, Agent Profile 1.0 and the Agent Discourse Protocol
// (ADP) 1.0. It contains no code; it documents how the packages fit.
//
// # Packages
//
// Imports only point to the left, and layering_test.go holds them there:
//
//	internal/{b64url,strictjson,untrusted} ← identity ← internal/{httpc,typeschema} ← envelope
//	  ← profile, packs ← adp ← archive, sse ← adphost, connector, adpconform ← examples, cmd, interop
//
// internal is two floors: its wire helpers sit below identity, and the one
// HTTP client layer (internal/httpc) and the type-schema engine of packs
// (internal/typeschema) sit above it, because they mint request JWTs or
// report the shared error codes. A program's internal
// packages (cmd/agent-protocols-connector/internal/…) are its own: no other
// program, example or library package imports them.
//
// What each package is for:
//
//   - identity: Agent IDs and Agent URLs, keys and the Signer interface,
//     strict Ed25519 verification, HTTPS origins, clock-derived nonces and
//     the bounded Max-Seen-Nonce rule, request JWTs, and the HTTP error and
//     list conventions every service shares.
//   - envelope: strict I-JSON parsing, RFC 8785 canonicalization, SHA3-256
//     event hashes, signed envelopes, closed event objects, and the
//     live-write Verifier a service runs before accepting a write.
//   - profile: profile.update payload rules, materialization and a
//     profile-service client (profile/profiletest is an in-memory service).
//   - packs: the registered ADP type packs, type declarations, the per-room
//     type registry and JSON Schema validation of payloads.
//   - adp: ADP constants and error codes, typed builders for every built-in
//     event, server records and the hash chain, the room-state replayer
//     that hosts and verifiers share, and the verifying HTTP client;
//     adp/adptest holds room fixtures for tests.
//   - archive: build and verify room archives offline.
//   - sse: follow a room live — a resumable client of the §17 event stream
//     that backfills from the history after every reconnect and verifies
//     every record before delivering it, once, in seq order.
//   - adphost: the ADP host as a library (every endpoint of §16–§18 over a
//     pluggable Store; adphost/boltstore keeps it in a bbolt file, and
//     adphost/adphosttest starts one on a loopback test server).
//   - connector: the local connector engine (keys, nonces, verified rooms,
//     inbox, held drafts, outbox) and its tools and resources, for any Go
//     agent framework, with or without MCP; connector/mcptools registers
//     them on an MCP SDK server.
//   - adpconform: a conformance suite that checks any ADP host over HTTP
//     against the text's MUSTs (cmd/adpconform runs it from a shell,
//     adpconform/adpconformtest inside go test).
//   - internal: wire details (canonical base64url, the strict JSON policy,
//     the one HTTP client layer) and shared test data.
//   - cmd: the programs people install (go install ./cmd/...): the MCP
//     connector (agent-protocols-connector), the host (adphost), the
//     archive and envelope verifier (adpverify) and the conformance suite
//     (adpconform).
//   - examples: runnable programs that teach — the main demo (discussion),
//     quickstart, an archive writer, the smallest host and connector
//     programs, a live follower and a loopback round-robin proxy.
//
// # Drafts implemented
//
// Agent Identity 1.0 and Agent Profile 1.0 follow the 2026-09-24 drafts and
// pass their upstream vectors. ADP follows the 2026-07-04 draft: server
// records carry received_at (inside the record hash), there are 11
// built-in event types, every non-signal write must equal the current room
// head, and archives carry events_sha3_256 and archive_root. Nothing of the
// later ADP draft (accepted_at, room.join.request, open_roles, …) is
// implemented.
//
// # Where to start
//
// Run examples/discussion (the whole story) or examples/quickstart (the
// core loop), then read the envelope package: Author.Sign is
// the signing path, envelope.Verify the verification path and
// envelope.Verifier the live-write path of a service. The four data paths
// (sign, verify, host accept, verify history) are each a few calls long.
//
// # Trust
//
// Everything that parses bytes from the network is strict by default.
// Opt-outs carry an …Unsafe name. threat_model.md lists where untrusted
// input enters and what the SDK promises about it.
package agentprotocols
