// Package adptest helps test code that takes part in ADP rooms: a room
// fixture for the rule table, and a reference host for the HTTP API.
//
// # Room fixture
//
// [World] drives one room through the host path with named agents whose
// keys are fixed, and a clock the test moves. [World.Replay] applies what
// the host accepted to a fresh room, as a verifier would, and checks that
// both agree. [VectorRecords] loads a room of the SDK's ADP vectors.
//
// # Reference host
//
// [Host] is an in-memory ADP host (seed draft 2026-07-04) as an
// http.Handler, implementing every endpoint of §16–§18 on top of the
// adp.Room rule table; [NewServer] starts one on a loopback httptest
// server, and examples/host runs one as a development server. It is the
// counterpart the SDK's adp.Client is tested against:
//
//   - writes pass envelope.Verifier (hash, signature, exact resubmission,
//     live-write window, nonce) and then, under the room's lock, the
//     host's durable nonce cache, the §21 rate limits ([RateLimits], with
//     rate_hint) and adp.Room.Accept; the record is appended to the
//     [Store] with append-if-head before anyone sees it. An exact
//     resubmission answers with the original record;
//   - reads follow §16: public rooms are open, a restricted room's
//     resource is public but its events, statuses and archive need a
//     member's request JWT (membership_required), and a private room does
//     not exist for anyone else (room_not_found) except that an approved
//     applicant may read its resource;
//   - join requests (§11): a valid request to a public room is approved
//     at once, unless the applicant is banned or asks for moderator
//     without being listed in moderator_agent_ids; others stay pending
//     until a signed room.join.review decides them, and expire;
//   - agent statuses (§17.4) with a TTL of at most [MaxStatusTTL], cleared
//     on leave, removal and demotion to observer;
//   - the live stream (§17, over github.com/tmaxmax/go-sse): members only,
//     room.event, room.agent_status and room.join_request items and
//     heartbeat comments, no replay; leaving ends the stream;
//   - an archive (§19, built by package archive) once the room has ended,
//     with its jsonl and markdown formats;
//   - the discovery document, /v1/rooms/public with the §18 filters and
//     cursor paging, and /v1/me/rooms.
//
// The clock ([Options].Now) drives the live-write window, JWT checks,
// received_at (never decreasing) and scheduled → active → ended. All state
// is behind [Store]; [MemoryStore] keeps it in memory, and a production
// host would back the interface with its database.
//
// Every input is bounded: bodies (an envelope's 1 MiB, 16 KiB for the JSON
// resources), history pages (100 by default, 1000 at most), live streams
// per agent and room, pending join requests per room, and the per-agent
// quotas.
//
// Where the seed text leaves a choice open, the host documents its
// reading on the handler (list shapes, status codes, cursors).
package adptest
