// Package acp runs the connector as a proxy component inside an ACP
// (Agent Client Protocol) chain and offers its MCP server to the agent
// over ACP itself (MCP-over-ACP): no subprocess, no port, no token.
//
// # Chain
//
// A conductor (for example the official Rust SDK's) starts the component
// with pipes and speaks newline-delimited JSON-RPC 2.0 on them. It sends
// _proxy/initialize; the proxy forwards the inner initialize to its
// successor inside _proxy/successor and answers with the successor's
// result. Every other message from the client is forwarded the same way
// (an outer id makes it a request, no id a notification; params and their
// _meta are kept). Messages from the successor arrive wrapped in
// _proxy/successor, as the conductor sends them; those that are not for
// this component go on toward the client unwrapped.
//
// # MCP-over-ACP
//
// When the agent's InitializeResponse advertises
// agentCapabilities.mcpCapabilities.acp, each session/new, session/load,
// session/resume and session/fork gains one {"type":"acp"} server with a
// fresh serverId; otherwise the request passes unchanged and a note goes
// to the log. mcp/connect opens a connection (a new session of the same
// [mcp.Server] the stdio and HTTP transports serve, through an
// [mcp.Transport]), mcp/message carries one inner MCP message each way,
// mcp/disconnect closes it. Unknown ids and malformed messages get
// JSON-RPC errors. The agent reaches only the MCP server's tools and
// resources: nothing here reads the key, tokens or configuration.
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
// successor, as the Rust conductor cancels hop by hop.
//
// # Bounds
//
// One outer line is at most [Options.MaxMessageBytes]; open connections,
// requests in flight and messages queued per connection are bounded, and
// past a bound the request is refused with a JSON-RPC error rather than
// queued.
//
// # Revision
//
// Every wire name lives in one [Revision] table; [V1] is the one spoken.
package acp
