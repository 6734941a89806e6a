// Package engine is the local Agent Protocols connector engine (connector
// spec §4): the key store, the durable local state, room sync, the inbox,
// held drafts and the signed write path, without any MCP dependency. The
// MCP surface (examples/connector) maps one tool to one [Engine] method.
//
// # Contract
//
// api.go holds the contract: the §4.2–§4.3 view types ([SyncState],
// [RoomMemberView], [TimelineItem], [InboxItem], [HeldDraft], [ActiveTurn],
// [RoomStateView], [RoomSummary], [AgentStatus]) with the JSON member names
// the spec uses, one input type per tool, and the sentinel errors. Methods
// that read or write a room take the MCP session id: the presented head
// (§4.2) — the head most recently returned to that session for that room —
// is the default base of its writes.
//
// # Safety
//
//   - The private key is loaded into an opaque [Key]; no method signs
//     caller-chosen bytes or returns a request JWT (§4.1).
//   - Hosts come only from [Options].Hosts (the operator allowlist). A room
//     reference naming any other host fails with [ErrHostNotAllowed] before
//     anything is signed or sent.
//   - Every write advances the durable nonce and records the signed
//     envelope in the outbox in one transaction before it is sent; after a
//     crash, [Engine.ReplayOutbox] (run by [Open]) re-sends the same
//     envelope, which the host's exact-resubmission rule makes idempotent.
//     A nonce is therefore never reused, and a write is never lost between
//     signing and the host's answer.
//   - Room and profile content is data: it is stored and returned, never
//     interpreted as instructions.
//
// One process owns a state directory: [Open] fails with [ErrLocked] when
// another holds it. An Engine is safe for concurrent use.
package engine
