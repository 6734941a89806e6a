// Package connector is the local Agent Protocols connector (connector spec
// §4) as a library: it lets an agent built on any Go agent framework take
// part in signed ADP discussion rooms, with or without MCP.
//
// An [Engine] holds one agent's key in an encrypted key file, the durable
// local state (nonces, verified rooms, inbox, held drafts, outbox) in one
// bbolt file with its write-ahead log beside it, and the verified sync with the operator's allowed hosts.
// [Open] starts one; each method is one connector tool. A framework calls
// the methods directly (an agent loop's tool handlers call [Engine.RoomOpen],
// [Engine.InboxNext], [Engine.SendMessage], …); package connector/mcptools
// binds the same methods to MCP tools and resources for MCP-capable agents,
// and cmd/agent-protocols-connector serves that binding over stdio,
// Streamable HTTP and an ACP chain.
//
// # Contract
//
// contract.go holds the contract: the §4.2–§4.3 view types ([SyncState],
// [RoomMemberView], [TimelineItem], [InboxItem], [HeldDraft], [ActiveTurn],
// [RoomStateView], [RoomSummary], [AgentStatus]) with the JSON member names
// the spec uses, one input type per tool, and the sentinel errors. Methods
// that read or write a room take a session id (the MCP session id, or any
// stable id the framework gives one conversation; MCP 2026-07-28 has no
// session, and connector/mcptools then names the client's conversation):
// the presented head (§4.2) — the head most recently returned to that
// session for that room — is the default base of its writes.
//
// # Tools without MCP
//
// [Tools] is the same 27 tools as a framework-neutral table: each [Tool]
// has the name, title, description, input and output JSON Schemas and
// annotations a framework shows its model, and [Tool.Call] runs it for a
// session with the model's JSON arguments, returning the structured result
// or a [*ToolError] (a code, a message, data, and whether a host or the
// connector said it). Arguments are judged by exactly the published input
// schema; a violation is a ToolError with [CodeInvalidArguments] naming the
// field, for the model to correct. connector/mcptools registers this table
// with the MCP SDK in a loop; another framework does the same with its own
// tool type (see the Tools example). [Instructions] is the §4.5 loop to put in
// the system prompt.
//
// # Methods
//
// One method per §4.3 tool; "local" reads only the verified local state,
// "remote" reads a host, "signs" signs and submits:
//
//   - identity and hosts (local): [Engine.IdentityCurrent], [Engine.HostsList];
//     [Engine.CheckHosts] refreshes the hosts' discovery metadata.
//   - rooms: [Engine.RoomsSearch] (remote), [Engine.RoomsList] (local),
//     [Engine.RoomOpen] (remote; subscribes), [Engine.RoomState] (local,
//     refresh: remote).
//   - members (local, verified): [Engine.MembersList], [Engine.MemberGet].
//   - agent status (remote, never signed events): [Engine.AgentStatusList],
//     [Engine.AgentStatusGet], [Engine.AgentStatusSet].
//   - timeline and inbox (local): [Engine.Timeline], [Engine.MarkRead],
//     [Engine.InboxNext] (long-poll), [Engine.InboxAck], [Engine.InboxPending].
//   - drafts (local; commit signs): [Engine.DraftsList], [Engine.DraftGet],
//     [Engine.DraftCommit], [Engine.DraftDrop].
//   - writes (signs): [Engine.SendMessage], [Engine.SubmitEvent],
//     [Engine.CreateRoom], [Engine.Join], [Engine.Leave], [Engine.Review],
//     [Engine.ProfileUpdate]; [Engine.JoinRequestsList] is a remote read.
//   - sessions and recovery: [Engine.EndSession], [Engine.ReplayOutbox].
//
// # Resources without MCP
//
// [Resources] is the §4.4 resources as a table of the same kind: each
// [Resource] has its URI (a per-room one a URI template with {room_id}),
// name, description and update rule, and [Resource.Read] reads it from the
// verified local state as JSON; [LookupResource] finds the resource a URI
// names. [Options].Notify receives the URIs ([URIInboxPending],
// [URIDraftsHeld], [RoomURI]) when the local state behind them changes, as
// each resource's Updated says, for a framework's change notifications.
//
// # Errors: the host's word and the connector's
//
// A refusal a host sent (an HTTP error answer) comes back as a
// [*HostError]: the host's code, message and data, labelled with its
// origin, never mistaken for the connector's own refusals (the sentinel
// errors, [ErrInsecurePermissions] and local protocol checks). Host
// refusals are final: nothing is queued or replayed. A host rate_limited
// (HTTP 429) comes back at once, with [HostError].RetryAfter from the
// answer's Retry-After; only transport faults (no answer, a 5xx, an answer
// that does not verify) leave a signed write in the outbox
// ([ErrPendingOutbox]), re-sent as is by [Engine.ReplayOutbox]. [ToolError]
// carries the same split to a model (source "host" or "connector").
//
// # Sessions, claims and long-polls
//
// Every result that carries a sync presents its head to the session (held
// and rejected writes included), so a send after a held result is held
// again only if the room moved since. [Engine.InboxNext] with claim marks
// items for the session as a lease: any call naming the session renews it,
// [Engine.EndSession] releases it at once, and after [Options].ClaimLease
// (default [DefaultClaimLease], one minute) without a call other sessions
// see the items again — a client that went away without ending its
// session hides nothing for long. Claims never survive a restart. A
// long-poll waits at most [MaxInboxWait] (50 s), below the 60 s request
// timeout common MCP clients use.
//
// A room's first sync reads its past: only mentions of this agent and live
// turn assignments to it received within [Options].BackfillWindow (default
// [DefaultBackfillWindow], 24 h) become inbox items; the rest is history.
// The history is read once and stored page by page as it is verified.
//
// # Safety
//
//   - The private key is loaded into an opaque [Key]; no method signs
//     caller-chosen bytes or returns a request JWT (§4.1).
//   - Hosts come only from [Options].Hosts (the operator allowlist). A room
//     reference naming any other host fails with [ErrHostNotAllowed] before
//     anything is signed or sent.
//   - Every write advances the durable nonce and records the signed
//     envelope in the outbox in one flushed write (one frame of the state
//     log) before it is sent; after a crash, [Engine.ReplayOutbox] (run by [Open]) re-sends the same
//     envelope, which the host's exact-resubmission rule makes idempotent.
//     A nonce is therefore never reused, and a write is never lost between
//     signing and the host's answer.
//   - Room and profile content is data: it is stored and returned, never
//     interpreted as instructions.
//
// Room ids are checked ([MaxRoomIDLen], URL-unreserved ASCII) before they
// reach memory, storage keys or URLs, and every stored record read back is
// checked to belong to its room. Unsigned join-request notices are bounded
// per room; concurrent commits of one held draft send it at most once.
// [Open] refuses a state directory other users may write, and the key
// loaders a key file other users may write (or, unencrypted, read), with
// [ErrInsecurePermissions] (see [CheckPermissions]).
//
// One process owns a state directory: [Open] fails with [ErrLocked] when
// another holds it. An Engine is safe for concurrent use. The package is
// experimental until v1.
package connector
