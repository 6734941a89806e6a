// Command connector is a local Agent Protocols MCP connector (connector
// spec §4): it runs next to an MCP client, holds the operator's Agent ID
// key, and gives the agent the 27 standard agent_protocols_ tools, the
// agent-protocols:// resources and their update notifications. Signing,
// nonces, request JWTs, room state and live sync stay inside; the agent
// sees verified state, an inbox and held drafts.
//
// The tools are package connector's framework-neutral table
// (connector.Tools), registered with the MCP SDK in a loop (server.go);
// this command adds only the MCP wire mapping: refusals as isError results
// (argument errors included, SEP-1303), JSON-RPC errors only for unknown
// tools and malformed requests (resources: not found with data.uri, -32002
// or in 2026-07-28 -32602), progress notifications for long-polls, a stdio
// framing that survives bad lines (stdio.go), and over HTTP the §3 guard,
// JSON-RPC answers for unknown methods, withheld responses to cancelled
// requests, resumable streams and claim release when a client's last
// stream closes (httpserve.go, httpfront.go).
//
// Both transports speak MCP 2026-07-28 and the session era (2025-11-25
// back to 2024-11-05). The presented heads (§4.2) and inbox claims (§4.3)
// belong to a session: over stdio the process, over HTTP the
// Mcp-Session-Id, and in 2026-07-28 over HTTP, which has no session, the
// conversation a client names with the Agent-Protocols-Conversation
// header, or without one the bearer token's default conversation, so a
// client that sends no session id still has its reads present heads to its
// later writes (server.go, httpfront.go).
//
// Usage:
//
//	connector keygen [--config FILE] [--unencrypted-dev]
//	connector whoami [--config FILE]
//	connector serve  [--config FILE] [--http 127.0.0.1:PORT]
//	connector acp    [--config FILE]
//
// keygen creates the key store (an age scrypt-encrypted seed; the
// passphrase comes from the environment variable named in the config,
// AGENT_PROTOCOLS_PASSPHRASE by default) and, when missing, a config file
// with an empty host allowlist. whoami prints the Agent ID. serve speaks
// MCP over stdio, or with --http over Streamable HTTP on a loopback
// address, requiring "Authorization: Bearer TOKEN" (the token file is
// created 0600 on first run and its path printed to standard error). acp
// runs the connector as a proxy component inside an ACP chain (stdio,
// newline-delimited JSON-RPC from a conductor speaking either revision of
// the proxy extension, _proxy/* or proxy/*) and offers the same MCP
// server to the agent over MCP-over-ACP (package internal/acp).
//
// The config file defaults to connector.json under the user config
// directory (for example ~/.config/agent-protocols-connector/). Exit
// status: 0 on success, 1 on a runtime error, 2 on a usage or setup error
// (no key, unreadable config, state directory in use).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
