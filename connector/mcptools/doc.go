// Package mcptools binds the connector engine to MCP with the official Go
// MCP SDK (github.com/modelcontextprotocol/go-sdk): [NewServer] returns an
// *mcp.Server that serves package connector's framework-neutral tables,
// the 27 tools of [connector.Tools] and the §4.4 resources of
// [connector.Resources], over any MCP transport. A program adds only a
// transport: mcp.StdioTransport, the SDK's Streamable HTTP handler, or its
// own (cmd/agent-protocols-connector has all three).
//
// # The wire mapping
//
//   - A tool result is structuredContent plus the same JSON as the one text
//     item (connector spec §5). Every refusal, including arguments that do
//     not fit the input schema (SEP-1303), is an isError result carrying
//     the [connector.ToolError], so the model sees it and can correct
//     itself; only a request that is not a well-formed tools/call
//     (arguments not an object) and an unknown tool are JSON-RPC errors.
//   - A long-poll (inbox_next with wait_ms) that carries a progressToken
//     gets notifications/progress every [Options].ProgressInterval, so a
//     client that resets its request timeout on progress keeps waiting.
//   - A resource that does not exist, or a room that is not open, is
//     "not found" with data.uri: -32002 up to MCP 2025-11-25, -32602 from
//     2026-07-28 on ([StatelessVersion]), as each version asks.
//   - [Notifier] turns the engine's Options.Notify calls into
//     notifications/resources/updated (the URI only; clients re-read), for
//     resources/subscribe and, from 2026-07-28, subscriptions/listen.
//   - Capabilities are tools and subscribable resources only, neither list
//     changing at run time. Methods the SDK would answer although the
//     connector does not offer them (logging/setLevel, prompts,
//     completion/complete) are -32601, no error carries the code 0
//     (modelcontextprotocol/go-sdk#976), and results of the session era
//     carry none of 2026-07-28's cache fields (ttlMs, cacheScope), which
//     the SDK sets on every list and read.
//
// # Sessions
//
// The engine keeps the presented head of each room (§4.2) and inbox claims
// (§4.3) per session; this package names the session a request belongs to:
//
//   - over stdio, an in-memory or any other connection without a session
//     id, the connection, in either protocol era;
//   - over Streamable HTTP in the session era (2025-11-25 and earlier),
//     the Mcp-Session-Id ([HTTPSessionName]);
//   - over Streamable HTTP in MCP 2026-07-28, which has no session, the
//     conversation the client names with the [ConversationHeader], or
//     without one the bearer token's default conversation
//     ([ConversationSession]); at most [Options].MaxConversations are
//     kept, the least recently used ended first.
//
// A connection's session ends with it; an HTTP transport that sees a
// client go away ends its session with [Server.EndSession], releasing its
// claims.
package mcptools
