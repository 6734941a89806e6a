package acp

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Revision is one revision of the proxy extension and of MCP-over-ACP.
// The conductor picks it for the whole connection by the initialize it
// sends: _proxy/initialize selects [Connected], proxy/initialize
// [Stateless]. Both wrap successor messages the same way (method, params,
// _meta); they differ in the wrapper's name and in how MCP travels.
type Revision uint8

const (
	// Connected is the revision of the Rust SDK's conductor and of
	// @agentclientprotocol/sdk 1.x: _proxy/initialize, _proxy/successor,
	// and connection-based MCP-over-ACP (mcp/connect → connectionId,
	// mcp/message {connectionId}, mcp/disconnect), one MCP session per
	// connection, speaking any MCP version the server offers.
	Connected Revision = iota + 1
	// Stateless is the revision of @agentclientprotocol/sdk 2.4
	// (unstable schema): proxy/initialize, proxy/successor, and stateless
	// MCP-over-ACP, where each mcp/message request {serverId, requestId,
	// method, params} carries one MCP 2026-07-28 exchange and its answer
	// is an outcome carrier ({result} or {error}); request-scoped MCP
	// notifications travel as mcp/message notifications naming the
	// request, and a request is cancelled by cancelling the outer one.
	Stateless
)

// Method names both revisions share, and MCP's.
const (
	methodInitialize    = "initialize"
	methodCancelRequest = "$/cancel_request"
	methodMCPConnect    = "mcp/connect"
	methodMCPMessage    = "mcp/message"
	methodMCPDisconnect = "mcp/disconnect"

	mcpCancelled = "notifications/cancelled"
)

// String names the revision by its proxy methods.
func (r Revision) String() string {
	switch r {
	case Connected:
		return "the _proxy/* revision"
	case Stateless:
		return "the proxy/* revision"
	}
	return "no revision"
}

// ProxyInitialize is the revision's initialize for a component that has
// a successor.
func (r Revision) ProxyInitialize() string {
	if r == Stateless {
		return "proxy/initialize"
	}
	return "_proxy/initialize"
}

// ProxySuccessor is the revision's wrapper of one message to or from the
// successor.
func (r Revision) ProxySuccessor() string {
	if r == Stateless {
		return "proxy/successor"
	}
	return "_proxy/successor"
}

// revisionOf is the revision one of whose proxy methods m is (0: none),
// and whether m is its initialize.
func revisionOf(m string) (r Revision, initialize bool) {
	for _, r := range []Revision{Connected, Stateless} {
		switch m {
		case r.ProxyInitialize():
			return r, true
		case r.ProxySuccessor():
			return r, false
		}
	}
	return 0, false
}

// isProxyMethod reports whether m is in the proxy extension's namespace
// of either revision: such a method is never ordinary traffic to forward.
func isProxyMethod(m string) bool {
	return strings.HasPrefix(m, "_proxy/") || strings.HasPrefix(m, "proxy/")
}

// --- both revisions ----------------------------------------------------------

// successorParams is the params of _proxy/successor and proxy/successor:
// one inner message, flattened. Its _meta is the envelope's own
// (hop-local) metadata, not the inner message's.
type successorParams struct {
	Method string         `json:"method"`
	Params jsontext.Value `json:"params,omitzero"`
	Meta   jsontext.Value `json:"_meta,omitzero"`
}

// acpServer is one {"type":"acp"} entry of a session setup's mcpServers
// (both revisions).
type acpServer struct {
	Type     string `json:"type"`
	Name     string `json:"name"`
	ServerID string `json:"serverId"`
}

// sessionSetup is the part of session/new, session/load, session/resume
// and session/fork params the proxy reads and extends; every other member
// passes unchanged.
type sessionSetup struct {
	MCPServers []jsontext.Value          `json:"mcpServers"`
	Rest       map[string]jsontext.Value `json:",embed"`
}

// initializeResult is the part of the agent's InitializeResponse that
// says whether it consumes ACP-transport MCP servers.
type initializeResult struct {
	AgentCapabilities struct {
		MCPCapabilities struct {
			ACP bool `json:"acp"`
		} `json:"mcpCapabilities"`
	} `json:"agentCapabilities"`
}

// cancelParams is $/cancel_request's params.
type cancelParams struct {
	RequestID jsontext.Value            `json:"requestId"`
	Rest      map[string]jsontext.Value `json:",embed"`
}

// --- Connected ---------------------------------------------------------------

// connectParams is mcp/connect's params.
type connectParams struct {
	ServerID string `json:"serverId"`
}

// connectResult is mcp/connect's result.
type connectResult struct {
	ConnectionID string `json:"connectionId"`
}

// connectedMessage is mcp/message's params in the Connected revision
// (both directions): one inner MCP message on a connection.
type connectedMessage struct {
	ConnectionID string         `json:"connectionId"`
	Method       string         `json:"method"`
	Params       jsontext.Value `json:"params,omitzero"`
}

// disconnectParams is mcp/disconnect's params; its result is {}.
type disconnectParams struct {
	ConnectionID string `json:"connectionId"`
}

// --- Stateless ---------------------------------------------------------------

// statelessMessage is mcp/message's params in the Stateless revision: as
// a request from the agent, one inner MCP request; as a notification to
// the agent, one inner MCP notification belonging to the active request
// (serverId, requestId). The agent names its request by requestId.
type statelessMessage struct {
	ServerID  string         `json:"serverId"`
	RequestID string         `json:"requestId"`
	Method    string         `json:"method"`
	Params    jsontext.Value `json:"params,omitzero"`
	Meta      jsontext.Value `json:"_meta,omitzero"`
}

// outcome is the result of a Stateless mcp/message request: exactly one
// inner MCP result (any JSON value, null included) or inner MCP error.
// Outer JSON-RPC errors are the binding's own (bindingError).
type outcome struct {
	Result jsontext.Value `json:"result,omitzero"`
	Error  *mcpError      `json:"error,omitzero"`
}

// mcpError is an inner MCP error object.
type mcpError struct {
	Code    int64          `json:"code"`
	Message string         `json:"message"`
	Data    jsontext.Value `json:"data,omitzero"`
}

// wireError is err as a JSON-RPC error object (an error that is not one
// is an internal error).
func wireError(err error) *jsonrpc.Error {
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		we = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	return we
}

// innerError is err as an inner MCP error object.
func innerError(err error) *mcpError {
	we := wireError(err)
	return &mcpError{Code: we.Code, Message: we.Message, Data: jsontext.Value(we.Data)}
}

// Outer error codes of the Stateless binding (@agentclientprotocol/sdk
// 2.4's McpBindingErrorCode); -32602 (malformed envelope, duplicate
// active request) and -32800 (cancelled) are JSON-RPC's and ACP's.
const (
	codeCancelled             = -32800
	codeResourceLimitExceeded = -33000
	codeServerUnavailable     = -33001
	codeBackendFailed         = -33002
)

// mcpStatelessVersion is the one MCP revision Stateless MCP-over-ACP
// carries; every inner request names it in params._meta.
const mcpStatelessVersion = "2026-07-28"

// Inner MCP _meta keys of 2026-07-28 (SEP-2575).
const (
	metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"
	metaSubscriptionID  = "io.modelcontextprotocol/subscriptionId"
)

// innerMeta is the part of an inner MCP request's params the proxy reads:
// the 2026-07-28 protocol version and the progress token, which ties the
// server's progress notifications to the request.
type innerMeta struct {
	Meta struct {
		ProtocolVersion string         `json:"io.modelcontextprotocol/protocolVersion"`
		ProgressToken   jsontext.Value `json:"progressToken"`
	} `json:"_meta"`
}

// unsupportedVersion is -32022's data (MCP 2026-07-28).
type unsupportedVersion struct {
	Supported []string `json:"supported"`
	Requested string   `json:"requested"`
}

// --- decoding ----------------------------------------------------------------

// decode reads an untrusted object into v: duplicate member names,
// invalid UTF-8 and wrong types are refused (where peers might read the
// first of two members and the proxy the last); unknown members are
// ignored, as ACP asks of receivers.
func decode(raw []byte, v any) error {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' {
		return fmt.Errorf("params must be an object")
	}
	return json.Unmarshal(t, v)
}

// objectOrNull reports whether raw is absent, null or an object, as
// inner MCP params must be.
func objectOrNull(raw []byte) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || t[0] == '{' || string(t) == "null"
}

// noNull drops a null value: an absent and a null inner params are the
// same, and MCP servers take the absent one.
func noNull(raw jsontext.Value) jsontext.Value {
	if string(bytes.TrimSpace(raw)) == "null" {
		return nil
	}
	return raw
}

// encode marshals a wire struct; the proxy's own structs always encode.
func encode(v any) []byte {
	b, err := json.Marshal(v, json.Deterministic(true))
	if err != nil {
		panic("acp: encoding a wire struct: " + err.Error())
	}
	return b
}
