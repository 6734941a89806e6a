package acp

// Revision is the one table of ACP wire names the proxy speaks: every
// method and member name it reads or writes comes from here, so following
// a later ACP revision (the unstable schema of @agentclientprotocol/sdk
// 2.4.0 already renames the proxy methods to proxy/initialize and
// proxy/successor) is a change of this table and its test.
type Revision struct {
	// Name says which texts the revision follows, for logs and docs.
	Name string

	// ProxyInitialize is the conductor's initialize for a component that
	// has a successor; ProxySuccessor wraps one inner message to or from
	// the successor; Initialize is the inner (ordinary) initialize.
	ProxyInitialize, ProxySuccessor, Initialize string
	// SessionSetup are the requests whose mcpServers list the proxy
	// extends with its own server declaration.
	SessionSetup []string
	// CancelRequest is the protocol-level cancellation notification whose
	// requestId the proxy translates across its id spaces.
	CancelRequest string
	// MCPConnect, MCPMessage and MCPDisconnect are the connection-based
	// MCP-over-ACP methods.
	MCPConnect, MCPMessage, MCPDisconnect string

	// Method, Params and Meta are the members of a _proxy/successor body
	// and of an mcp/message body that carry the inner message.
	Method, Params, Meta string
	// MCPServers is the session setup member listing MCP servers; an
	// entry of type ServerTypeACP has ServerName and ServerID members.
	MCPServers, ServerType, ServerTypeACP, ServerName, ServerID string
	// ConnectionID names one MCP-over-ACP connection.
	ConnectionID string
	// RequestID is CancelRequest's member naming the cancelled request.
	RequestID string
	// AgentCapabilities, MCPCapabilities and ACPCapability are the path
	// in the InitializeResponse by which an agent advertises that it
	// consumes ACP-transport MCP servers.
	AgentCapabilities, MCPCapabilities, ACPCapability string
}

// V1 is the revision the connector speaks: ACP protocol version 1 with
// the proxy extension of the official Rust SDK's conductor
// (_proxy/initialize, _proxy/successor) and the connection-based
// MCP-over-ACP methods (mcp/connect, mcp/message, mcp/disconnect) as
// @agentclientprotocol/sdk 1.5.0's schema defines them.
var V1 = Revision{
	Name:            "ACP v1 + proxy extension (_proxy/*) + connection-based MCP-over-ACP (@agentclientprotocol/sdk 1.5.0)",
	ProxyInitialize: "_proxy/initialize",
	ProxySuccessor:  "_proxy/successor",
	Initialize:      "initialize",
	SessionSetup:    []string{"session/new", "session/load", "session/resume", "session/fork"},
	CancelRequest:   "$/cancel_request",
	MCPConnect:      "mcp/connect",
	MCPMessage:      "mcp/message",
	MCPDisconnect:   "mcp/disconnect",

	Method:            "method",
	Params:            "params",
	Meta:              "_meta",
	MCPServers:        "mcpServers",
	ServerType:        "type",
	ServerTypeACP:     "acp",
	ServerName:        "name",
	ServerID:          "serverId",
	ConnectionID:      "connectionId",
	RequestID:         "requestId",
	AgentCapabilities: "agentCapabilities",
	MCPCapabilities:   "mcpCapabilities",
	ACPCapability:     "acp",
}

// isSessionSetup reports whether method is one of r.SessionSetup.
func (r *Revision) isSessionSetup(method string) bool {
	for _, m := range r.SessionSetup {
		if m == method {
			return true
		}
	}
	return false
}
