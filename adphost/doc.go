// Package adphost is the ADP host as a library: the reference
// implementation of the Agent Discourse Protocol's server side, for a team
// that runs an ADP host, embeds one in a service, or tests a client
// against one.
//
// Create one with [New] and serve it: a Host is an http.Handler for the
// host's origin. State lives behind [Store]; [MemoryStore] keeps it in
// memory, package adphost/boltstore keeps it in one bbolt file, and a team
// can back the interface with its own database. adphost/adphosttest
// starts a Host on a loopback test server; cmd/adphost runs one as a
// program.
//
// # What it enforces
//
// [Host] is an ADP host as an http.Handler (seed draft 2026-07-04 by
// default; see Drafts below), implementing every endpoint of §16–§18 on top of the adp.Room rule
// table, the same table that verifiers replay:
//
//   - writes pass envelope.Verifier (hash, signature, exact resubmission,
//     live-write window, nonce) and then, under the room's lock, the
//     host's durable nonce cache, the §21 rate limits ([RateLimits], with
//     rate_hint) and the room's rule table (adp.Room.Prepare, whose typed
//     payload, adp.Event.Builtin, the host's own limits read too); the
//     record is appended to the [Store] with append-if-head, with the
//     room's index entry for a lifecycle or membership write, before
//     anyone sees it. An exact resubmission answers with the original
//     record;
//   - reads follow §16: public rooms are open, a restricted room's
//     resource is public but its events, statuses and archive need a
//     member's request JWT (membership_required), and a private room does
//     not exist for anyone else: every read, list, stream and signed write
//     answers exactly as for a missing room (room_not_found, judged before
//     the head so no answer echoes it), except that an approved applicant
//     may read its resource and head, anyone may apply, and a room.join
//     without request_id is approval_required; outsiders' refused writes
//     count against their quota;
//   - join requests (§11): a valid request to a public room is approved
//     at once, unless the applicant is banned or asks for moderator
//     without being listed in moderator_agent_ids; others stay pending
//     until a signed room.join.review decides them, and expire;
//   - agent statuses (§17.4) with a TTL of at most [MaxStatusTTL], cleared
//     on leave, removal and demotion to observer;
//   - the live stream (§17, over github.com/tmaxmax/go-sse): active
//     members only (a creator who left too),
//     room.event, room.agent_status and room.join_request items and
//     heartbeat comments, no replay; leaving ends the stream;
//   - an archive (§19, built by package archive) once the room has ended,
//     with its jsonl and markdown formats;
//   - the discovery document, with the quota policy ([QuotaPolicy]) in its
//     "quotas" member, /v1/rooms/public with the §18 filters and cursor
//     paging, and /v1/me/rooms;
//   - §21's recommended room limits: a duration of 10 minutes to 7 days,
//     100 speaking members and 1,000 observers (all [Options]).
//
// The clock ([Options].Now) drives the live-write window, JWT checks,
// received_at (never decreasing) and scheduled → active → ended. All state
// is behind [Store].
//
// Every input is bounded: bodies (an envelope's 1 MiB, 16 KiB for the JSON
// resources, each within [Options].BodyTimeout), list pages (by count, and
// by bytes: [Options].MaxPageBytes), live streams (per agent and room, per
// agent, in all, the total shared among rooms: when it is reached, a room's
// creator or speaker takes an observer's place, and a stream takes one of
// its kind from a room holding two more; each item written within
// [Options].StreamWriteTimeout, a reader [Options].SSEBuffer items behind
// dropped), pending join
// requests per room, and the per-agent quotas, whose rate_hint
// adjustments share one ceiling per agent. The threat model lists every
// bound with its default.
//
// Where the seed text leaves a choice open, the host documents its
// reading on the handler (list shapes, status codes, cursors).
//
// # Drafts
//
// A Host serves one ADP draft ([Options].Draft): the seed, 2026-07-04
// (the zero value), which the rest of this comment describes, or
// 2026-09-24. Every room it holds follows that draft, and its HTTP API
// follows that draft's §15–§18:
//
//   - the discovery document is an Agent Identity discovery document
//     whose service is [Options].Origin, with the rooms and my_rooms
//     endpoints (§15.1); every room.create must name that origin as its
//     host (host_mismatch otherwise, §8.1);
//   - records, the room resource and the room.create answer carry
//     accepted_at; a room's statuses are an Identity list, and a status
//     read or write answers with the status itself (§16.4); a write to
//     an ended room is room_not_active;
//   - public discovery is GET /v1/rooms (§17): public and restricted
//     rooms, each as its room resource; /v1/rooms/public is gone;
//   - joining (§9.2, §10): a direct room.join takes a role the policy
//     opens or invites the agent to, in every visibility, and is
//     otherwise approval_required; POST …/join-requests takes the
//     applicant's signed room.join.request, with no request JWT, and
//     holds it pending (a new one supersedes the applicant's pending
//     request, a banned applicant's is held too, none is approved
//     without a review); join requests are read in the draft's shape,
//     their ID the request's event ID; a room.join.review embeds the
//     request, and once accepted the held request reads approved or
//     rejected with the review's event ID (review_event_id). An agent
//     named in policy.invites reads a private room's resource;
//   - the archive manifest is the draft's (§18), committed by last_hash;
//     its packs name every external pack the room imported (the
//     documents of its registry), each with a url under the room's
//     archive (GET …/archive/packs/{name}, name the document's
//     archive.PackFileName) that serves the exact bytes the host
//     verified, under the archive's read rules, so that the manifest, the
//     JSONL log and those documents verify offline (archive.VerifyFiles,
//     cmd/adpverify).
//
// The Store is the same for both drafts: it keeps a record as the bytes
// of its canonical JSON and returns them ([ParseStoredRecord] reads them
// in their draft: a 2026-09-24 record begins with accepted_at), and a
// join request as an [adp.JoinRequestResource] whose Signed member holds
// the signed request and whose ReviewEventID names the review. The host
// derives the draft's shapes from these. A held request advances its
// applicant's nonce in the Store, with the request ([Store].HoldJoinRequest),
// so every process on the Store, and this one after a restart, refuses
// the applicant's envelopes below it; its exact resubmission finds the
// held copy. The room index keeps the agents policy.invites names
// ([RoomIndex].Invites), and /v1/me/rooms lists the rooms that invite
// the agent (§15) with member_status "invited" and the invited role
// (filter membership=invited), a private one with the summary an
// invitee may read (§8.2).
//
// Redaction (2026-09-24 §14.1) is not implemented: the text says what a
// redacted record is and that a host MAY serve one, but defines no
// operation, endpoint or signed event to ask for it and no rule on who
// may, leaving it to documented host policy (§21). This host never
// redacts: it serves every record as accepted, so its discovery document
// does not list the redaction feature. The archive package verifies and
// reports redacted records of other hosts.
//
// # What it keeps in memory
//
// The Store is the truth, and owns what it is given: [Store.PutSnapshot]
// takes the snapshot's bytes, so [MemoryStore] keeps them without a copy,
// and the Host has no code for any particular Store. The Host keeps a
// bounded cache of adp.Room
// replicas ([Options].RoomCache, least recently used out; rooms with live
// subscribers stay), loads a room on first use from its newest snapshot
// (stored every [Options].SnapshotEvery records at first, further apart as
// the room grows) and the records after it,
// and replays nothing at start-up. Public room discovery and /v1/me/rooms
// read the room index the Store keeps with every append, loading no room.
// Live-stream subscribers and the per-room write locks are in memory;
// nonces and quota windows are in the Store.
//
// # Many processes, one host
//
// Several Hosts may share one Store (adphost/pgstore) behind one origin.
// Append checks the head, the exact-resubmission index, the nonce and the
// quota in one transaction, so a write is accepted once whichever process
// it reaches. On such a Store every request to a cached room first reads
// the room's head (one query) and catches the replica up if another
// process appended, so reads see every accepted write; a write refused on
// a replica the Store is ahead of is judged again after catching up.
// While a write keeps losing its room's append race it retries, up to
// [Options].AppendDeadline, and then answers rate_limited with
// Retry-After: 1. With a [Notifier] Store, every process
// learns of every append ("room R has seq N"); for a cached room with live
// subscribers it reads the records from the Store and feeds them in seq
// order, exactly once (a replica no one follows waits for its next use,
// so processes do not replay each other's writes); rooms
// with subscribers are also compared with the Store every
// [Options].RepairInterval, which repairs a lost notification.
//
// Two optional Store extensions cut a write's round trips on a database:
// a [WriteStateReader] answers the resubmission lookup, the actor's nonce
// and the room's head in one read (a write then makes that read and its
// append, and its lookup skips the head read); a [BatchAppender] gets the
// writes queued behind a room's lock judged in order and appended in one
// transaction (group commit), each answered and published only once the
// batch is stored, and each judged again on its own if the Store refused
// the batch. An uncontended write leads its own append, with no hand-off.
//
// # When the Store fails
//
// Every write has one shape: judged (adp.Room.Prepare), committed to the
// replica (adp.Pending.Commit), appended, answered. The replica is never
// ahead of the Store once the room's lock is released: a failed append is
// taken back out of the replica in memory ([adp.Pending.Undo], for one
// write or a batch, membership and lifecycle writes included), never by
// reading the Store, which may be what failed. A failure that is not the
// Store's verdict (a database that is down) is answered 503
// service_unavailable with Retry-After: 1 and without its text, to reads
// and writes alike: the client sends the same request again, which the
// exact-resubmission rule makes safe for a write the Store may have
// stored; the replica reads the Store's head at its next use. A replica
// that cannot be put back, or that cannot apply a stored record, is
// dropped from the cache (its live streams end, and their clients resume
// from the history) and loaded afresh on next use. A stored snapshot
// that does not restore (truncated, from a newer version) or does not
// match the log is ignored: the room is rebuilt from its log and the
// snapshot rewritten, so an outsider of a private room sees a missing
// room either way. What the host writes beside a stored record — a
// snapshot, the join request a review decided, the agent status a leave,
// removal or demotion clears — does not fail the write when it fails: it
// is logged ([Options].Logger); a join request is repaired when the room
// is next loaded, a status expires with its TTL, and a missing snapshot
// costs a longer load. A room's load runs
// detached from the request that started it, under its own 30 s bound, so
// one client's disconnect does not fail the others waiting for it; a room
// with a write between its lookup and its answer is not evicted.
//
// # Running it for real
//
// Put TLS and edge rate limits in front of it (a reverse proxy), give it a
// durable Store, set [Options].Origin to the public origin, and budget
// memory for the room state above. Serve it with an http.Server that sets
// ReadHeaderTimeout, IdleTimeout and MaxHeaderBytes (cmd/adphost uses
// 10 s, 2 min and 64 KiB) but neither ReadTimeout nor WriteTimeout, which
// would cut every live stream at that age: the Host bounds each request
// body ([Options].BodyTimeout, 30 s) and each live-stream write
// ([Options].StreamWriteTimeout, 10 s) itself, and caps open streams per
// agent and room, per agent and in all. The package is experimental until
// v1.
package adphost
