// Command agent-protocols-connector is a local Agent Protocols MCP
// connector (connector spec §4): it runs next to an MCP client, holds the
// operator's Agent ID key, and gives the agent the 27 standard
// agent_protocols_ tools, the agent-protocols:// resources and their
// update notifications. Signing, nonces, request JWTs, room state and live
// sync stay inside; the agent sees verified state, an inbox and held
// drafts.
//
// The MCP binding is package connector/mcptools: package connector's
// framework-neutral tool and resource tables registered with the MCP SDK,
// refusals as isError results, progress for long-polls, and what stands
// in for the session in each protocol era. This command adds the
// transports, each private to it: a newline-delimited JSON-RPC framing
// that survives bad lines, for stdio and the ACP proxy alike
// (internal/jsonl); over HTTP the §3 guard and a front over the go-sdk's
// Streamable HTTP handlers that answers unknown methods, cancelled
// requests, lost streams and resumption as stdio does (internal/mcphttp);
// and the ACP proxy component offering MCP-over-ACP (internal/acp).
//
// Both MCP transports speak MCP 2026-07-28 and the session era
// (2025-11-25 back to 2024-11-05). The presented heads (§4.2) and inbox
// claims (§4.3) belong to a session: over stdio the process, over HTTP
// the Mcp-Session-Id, and in 2026-07-28 over HTTP, which has no session,
// the conversation a client names with the Agent-Protocols-Conversation
// header, or without one the bearer token's default conversation.
//
// Usage:
//
//	agent-protocols-connector keygen [--config FILE] [--unencrypted-dev]
//	agent-protocols-connector whoami [--config FILE]
//	agent-protocols-connector serve  [--config FILE] [--http 127.0.0.1:PORT]
//	agent-protocols-connector acp    [--config FILE]
//
// installed with go install ./cmd/agent-protocols-connector from a clone
// (the module is not on the module proxy yet); MCP client configurations
// name the command agent-protocols-connector.
//
// keygen creates the key store (an age scrypt-encrypted seed in key.age;
// the passphrase, at least 12 characters, comes from the environment
// variable named in the config, AGENT_PROTOCOLS_PASSPHRASE by default)
// and, when missing, a config file with an empty host allowlist. With
// --unencrypted-dev it writes an unencrypted development key instead, to
// key.unencrypted-dev, a name no one takes for an encrypted key's (one
// written before to key.age is still read there, with a note). whoami
// prints the Agent ID. serve speaks MCP over stdio, or with --http over
// Streamable HTTP on a loopback address, requiring
// "Authorization: Bearer TOKEN" (the token file is created 0600 on first
// run and its path printed to standard error); over stdio, requests read
// before the end of the input are answered before it exits. acp runs the
// connector as a proxy component inside an ACP chain (stdio,
// newline-delimited JSON-RPC from a conductor speaking either revision of
// the proxy extension, _proxy/* or proxy/*) and offers the same MCP
// server to the agent over MCP-over-ACP. --help describes the program and
// each command.
//
// The config file defaults to connector.json under the user config
// directory (for example ~/.config/agent-protocols-connector/). Exit
// status: 0 on success, 1 on a runtime error, 2 on a usage or setup error
// (an unknown flag, no key, a short passphrase, an unreadable config, the
// state directory in use).
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

func main() {
	// The connector's live heap is small and nearly all it allocates for
	// a tool call is garbage when the call returns: with Go's default
	// GOGC=100 the collector ran every few writes and took about 6 % of
	// the CPU of a signed write. At 400 the heap may grow to five times
	// the live heap between collections. GOGC in the environment still
	// decides.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
