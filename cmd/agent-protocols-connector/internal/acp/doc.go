// Package acp runs the connector as a proxy component inside an ACP
// (Agent Client Protocol) chain and offers its MCP server to the agent
// over ACP itself (MCP-over-ACP): no subprocess, no port, no token.
//
// # Revisions
//
// Two revisions of the proxy extension and of MCP-over-ACP are in use,
// and the proxy speaks both ([Revision]). The conductor's first message
// chooses one for the whole connection: after _proxy/initialize the proxy
// speaks [Connected] (the Rust SDK's conductor, @agentclientprotocol/sdk
// 1.x: _proxy/successor, mcp/connect, mcp/message {connectionId},
// mcp/disconnect); after proxy/initialize it speaks [Stateless]
// (@agentclientprotocol/sdk 2.4: proxy/successor, stateless mcp/message
// {serverId, requestId}). A method of the other revision, or any other
// name in the proxy namespace, is answered with -32601 and never
// forwarded; so is everything before the proxy initialize.
//
// # Chain
//
// A conductor starts the component with pipes and speaks
// newline-delimited JSON-RPC 2.0 on them. The proxy forwards the inner
// initialize of the conductor's proxy initialize to its successor inside
// the successor wrapper and answers with the successor's own result,
// protocolVersion included. Every other message from the client is
// forwarded the same way (an outer id makes it a request, no id a
// notification; params and their _meta are kept). Messages from the
// successor arrive in the wrapper, as the conductor sends them; those
// that are not for this component go on toward the client unwrapped.
//
// # MCP-over-ACP
//
// When the agent's InitializeResponse advertises
// agentCapabilities.mcpCapabilities.acp, each session/new, session/load,
// session/resume and session/fork gains exactly one
// {"type":"acp","name":…,"serverId":…} server with a fresh serverId, in
// both revisions; otherwise the request passes unchanged and a note goes
// to the log. The agent reaches only the MCP server's tools and
// resources: nothing here reads the key, tokens or configuration.
//
// In the Connected revision, mcp/connect opens a connection, which is a
// new session of the same [mcp.Server] the stdio and HTTP transports
// serve (through an in-process [mcp.Transport]); mcp/message carries one
// inner MCP message each way, and mcp/disconnect closes it. Inside a
// connection the agent speaks any MCP version the server offers.
//
// In the Stateless revision, each mcp/message request carries one MCP
// 2026-07-28 request (its params._meta naming the version and the
// client's capabilities), which the agent names by its requestId; the
// outer result is the outcome carrier {"result": …} or {"error": …}, and
// outer errors are the binding's (-32602 malformed or duplicate active
// requestId, -32800 cancelled, -33000 over a limit, -33001 unknown
// serverId, -33002 the session failed). Notifications that belong to an
// open request (a subscriptions/listen's acknowledgement and updates,
// progress) go to the agent as mcp/message notifications naming its
// serverId and requestId; the server sends no requests of its own.
//
// # The MCP session of a serverId
//
// MCP 2026-07-28 has no session, but the connector's state is per MCP
// session: the presented heads of the connector spec §4.2 (a write is
// judged against the head the session last read) and the inbox claims
// of §4.3. In the Stateless revision the serverId stands in for it: every
// request to one serverId (one per session setup) is served by one MCP
// session of the server, started by its first request, so a room read
// and the write that follows it share a presented head, and two ACP
// sessions never share one. That session ends when the proxy ends, when
// the session setup that declared the serverId fails, or, at
// [Options.MaxConnections] sessions, when it is the least recently used
// with no request open and another serverId needs room (its claims are
// released; the next write is judged against the latest verified head).
// In the Connected revision each connection is its own MCP session.
//
// # Ids and cancellation
//
// Every request the proxy passes on gets the proxy's own id on the next
// hop, and the answer is mapped back, so the two directions sharing the
// conductor connection never collide. A $/cancel_request names a request
// by its id on one hop: the proxy follows it to where that request went
// (under the id it forwarded it with), turns it into MCP's
// notifications/cancelled for an mcp/message request (answering the outer
// request with -32800 itself), and drops a tunnelled one from the
// successor, as conductors cancel hop by hop. The MCP session sees each
// request under an inner id of the proxy's, never reused, so a late
// answer to a cancelled request cannot pass for the answer to a later
// one; a subscriptions/listen's subscriptionId is rewritten to the id the
// agent knows the request by: its requestId (Stateless) or its outer
// request id (Connected).
//
// # Bounds
//
// One outer line is at most [Options.MaxMessageBytes]; open MCP sessions,
// requests in flight, requests open per session and messages queued per
// session are bounded, and past a bound the request is refused with a
// JSON-RPC error rather than queued.
package acp
