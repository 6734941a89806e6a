// Package adpconform is a wire-level conformance suite for ADP hosts
// (Agent Discourse 1.0, the 2026-07-04 draft): any team runs it against its
// own host, written in any language, to learn whether the host does what the
// text requires.
//
// A host that serves the 2026-09-24 draft (its discovery document is an
// Agent Identity document, or [Options].Draft says so) is checked against
// that draft's §22 instead ([ChecksFor]): item 1's envelope verification
// with forged hashes and signatures, non-canonical spellings, duplicate
// members, unsafe integers, unknown members and bad actors, an event
// posted to another room than its own, the live-write window, and nonces
// with Max-Seen-Nonce (a held join request's included); host binding, open
// roles and invitations, the signed join request and its review, the type
// conflict rules and the type schema profile, the §5.1 freshness classes
// (messages on one head, control writes first-wins, anchors, stale and
// foreign bases), the record chain with accepted_at, the archive committed
// by last_hash, live streams that end with membership, the discovery
// document, /v1/me/rooms listing a room that invites the agent, the status
// shapes, and the privacy of private and restricted rooms' reads. §22
// names no quota, so that suite checks none (the seed's quota check is a
// recommendation of its own §24); its privacy and status checks are
// thinner than the seed's. The rest of this comment describes the seed's
// suite.
//
// # What it checks
//
// Every check names the §24 checklist item (1–11) it belongs to, or marks
// itself as one of §24's recommendations, and the sections that state the
// rule; [Checks] lists them. Together they cover envelope and JCS
// verification with forged hashes and signatures, non-canonical spellings,
// duplicate members, unsafe integers and unknown members (each refused with
// its §20 code); the live-write window, nonces with Max-Seen-Nonce and exact
// resubmission; room.create and room.update; public joins, join requests with
// their signed review and request_id, removal and bans; message.create with
// mentions; type.define and schema validation of custom payloads; base_seq /
// base_hash anchoring, the head precondition and a race of two writers on one
// head; kind and role permissions; the room state machine; the record chain
// (every page re-verified with [adp.Room]); the archive (verified with
// [archive.Verify], and its Markdown form for safety); the live SSE stream's
// authentication, its refusal to replay history (read raw, since [sse.Follow]
// drops replayed records by design) and [sse.Follow] against it; agent-status TTLs; public
// discovery; the privacy of private and restricted rooms; and quotas.
//
// # Wire level only
//
// The suite needs nothing from the host but its public HTTP API: it makes
// fresh agents (new Ed25519 keys) and its own rooms, and judges only what
// comes back. Valid writes go through [adp.Client], which verifies every
// record the host returns; hostile inputs are signed with
// [envelope.Author.Sign] and [envelope.Sign] or assembled byte by byte, so
// that the host, not the SDK, has to refuse them. A host that lets only some
// agents create rooms gives the suite one with [Options.Moderator].
//
// The target is not trusted either: every answer the suite reads itself is
// bounded to 8 MiB, and every listing it follows to 8 MiB across its pages
// (history pages go through [adp.Client], 32 MiB each); each check has a
// timeout ([Options.Timeout]); and redirects are followed only within the
// target's origin, so that a host cannot make the suite send its signed
// envelopes or request JWTs elsewhere.
//
// # Verdicts, levels and readings
//
// A check passes, fails (with evidence) or is skipped (with the reason: a
// feature the host does not offer, or a check not selected). MUST checks are
// what the text requires; [Report.OK] is true when none of them failed.
// SHOULD checks test recommendations and are reported without failing the
// suite. What the text leaves to the host — HTTP statuses, room_not_found
// where §20 also allows membership_required, the codes of refusals the text
// gives none for, the limits a host chose — is recorded as a reading
// ([Result.Info]) and never fails a check.
//
// Where the text fixes no JSON shape the suite reads the host as this SDK's
// client does — lists as Agent Identity's {"result", "next_cursor"}, the
// status list as the seed-era schema's {"statuses"} — so a host that chose
// another shape fails the checks that read it; the README lists these
// readings.
//
// # Running it
//
// The command github.com/agentprotocols/go-sdk/cmd/adpconform runs the suite
// against a URL and prints a table (or JSON with --json); its exit status says
// whether any MUST check failed. Go host teams run it inside go test with
// package adpconform/adpconformtest. [Run] is the library entry point.
//
// # Time and quotas
//
// The checks run in parallel, each in its own rooms, and the whole suite takes
// a few seconds against a local host: the longest waits are a room scheduled
// two seconds ahead and a status expiring after 1.2 s. It stays inside the
// §21 default quotas (5 messages, 60 signals and 10 control events per agent
// per minute) by spreading its writes over fresh agents: no agent sends more
// than five messages, except the quota check, which sends up to 30 on purpose.
// The host's clock must agree with the suite's within the live-write window.
package adpconform
