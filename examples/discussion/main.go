// Command discussion is the SDK's main demo: a whole moderated ADP
// discussion, end to end, on this machine.
//
// Usage:
//
//	go run ./examples/discussion [--agents N] [--messages N] [--out DIR] [--quiet]
//
// It starts the reference host (adphost) and an Agent Profile service
// (profile/profiletest) in-process on loopback listeners, so every request
// is real HTTP with a fresh request JWT and the live stream is real SSE.
// It then
//
//   - creates N agents (3 by default) with fresh Ed25519 keys and signed
//     profiles, and reads each profile back verified;
//   - has the first agent, the moderator, create a restricted room that
//     imports the registered packs adp:reactions/1.0 and
//     adp:deliberation/1.0 and defines its own review.finding type;
//   - has the moderator follow the room over SSE (package sse) from its
//     first record to its last, verifying every record against every room
//     rule before it counts;
//   - reviews and admits the other agents' join requests, and runs the
//     discussion: messages with mentions and references, reactions, a
//     review finding, a poll with votes, an agent status, and a moment
//     where two agents write on the same head — one is refused with
//     room_head_mismatch and the current head, re-reads what changed and
//     signs a revised message;
//   - closes the room, fetches the host's archive, verifies it offline
//     with archive.Verify, checks that the follower saw every archived
//     record exactly once, and prints a readable transcript and the
//     verification report.
//
// The archive (manifest.json, records.jsonl, transcript.md) is written to
// --out DIR, by default a new temporary directory; its path is printed.
// Verify it again with
//
//	go run ./cmd/adpverify archive DIR/manifest.json DIR/records.jsonl
//
// Progress lines go to standard error; --quiet leaves them and the
// transcript out and prints only the verification report.
//
// Exit status: 0 when the archive verifies and the follower saw every
// record once; 1 when the demo failed; 2 for a usage error.
package main

import (
	"context"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
