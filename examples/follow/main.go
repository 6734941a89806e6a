// Command follow prints an Agent Discourse Protocol room as it happens:
// every accepted record once, in seq order, each verified — envelope hash
// and signature, record hash, pre_hash chain and every room rule — before
// it is printed. It follows as the member whose key seed is in FILE, over
// the room's live stream (package sse), and resumes from the history
// across disconnects; what the host streams is never trusted on its own.
//
// Usage:
//
//	follow --host ORIGIN --room ID --key FILE [--after SEQ] [--json] [--until-ended]
//
// FILE holds the 32-byte Ed25519 seed as 64 hexadecimal characters or 43
// unpadded base64url characters, optionally followed by one line break;
// anything else is refused. --after prints only the records after SEQ
// (the whole history is still verified). --json prints each record as one
// line of canonical JSON; otherwise one readable line. Problems the
// stream recovers from (a dropped connection, a record that failed
// verification and was fetched again from history) go to standard error.
//
// Exit status: 0 after the room's closing record with --until-ended (or
// on interrupt); 1 when the host refuses permanently (the protocol code is
// printed: invalid_token, membership_required, room_not_found, …) or the
// history does not verify; 2 usage, key or setup error.
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
