// Package sse follows an ADP room live: a resumable, verifying client for
// the §17 event stream GET /v1/rooms/{room_id}/events/live.
//
// [Follow] returns an iterator of [Item] values. Each accepted record of
// the room arrives exactly once, in seq order, and only after it verified:
// the envelope's hash and signature, the record hash and the pre_hash link
// to the record before it (with [Options.Replica] set, every room rule as
// well: the records are admitted to that [adp.Replica], the room's one
// verified state, which the agent's [adp.Client] verifies into too). The
// stream is only a transport (§17.3):
//
//  1. the client opens the stream first,
//  2. then pages the history (GET …/events?after_seq=) from the last
//     verified record through [Options.History],
//  3. then delivers live records, dropping those it already has by seq.
//
// [Options.Client] takes the API, key, history, transport and clock from
// the agent's [adp.Client], whose verified Events is the history: it is
// the SDK's one live client (adp.Client has no stream reader of its own).
//
// The same backfill runs after every reconnect, after a gap (a live record
// whose predecessor is missing) and after a live record that failed
// verification. A record that fails verification is never delivered: the
// client reports it as a [KindError] item and resynchronizes from the
// history instead of trusting the stream.
//
// The transient §17.4 agent status and §17.5 join-request items arrive as
// [KindAgentStatus] and [KindJoinRequest] notices. They are not records, are
// never part of the chain, and must not be used for verification or
// permissions.
//
// # Connections
//
// Framing and reconnection are those of [github.com/tmaxmax/go-sse]. This
// package adds what an ADP subscriber needs on top of it:
//
//   - a fresh request token on every attempt, minted by the SDK's HTTP
//     layer like every other request token (go-sse fixes the headers of
//     its first request);
//   - 429 and 5xx answers retried with exponential backoff and jitter,
//     after any Retry-After (go-sse treats every non-200 answer as final);
//   - an idle watchdog that reconnects when neither data nor a heartbeat
//     comment arrived for [Options.IdleTimeout] (go-sse never shows
//     comments to its caller).
//
// 401, 403, 404 and other 4xx answers are permanent — membership was lost
// or the room is gone — and the iterator ends with the host's
// *[identity.Error], so
//
//	if errors.Is(err, adp.ErrMembershipRequired) { … }
//
// Cancelling the context, or leaving the range loop, ends the subscription
// and every goroutine it started before the iterator returns.
package sse
