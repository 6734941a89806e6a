package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/agentprotocols/go-sdk/internal/untrusted"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentprotocols/go-sdk/connector"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

// serverVersion is reported in initialize's serverInfo.
const serverVersion = "0.1.0"

// handler runs one tool call whose arguments already passed the schema.
// A returned error is mapped by [toolResultError]: a protocol rejection
// becomes an isError result, a [malformedError] a JSON-RPC error.
type handler func(ctx context.Context, c *call) (any, error)

// call is one tools/call as a handler sees it.
type call struct {
	srv  *Server
	sess *mcp.ServerSession
	args json.RawMessage
}

// decode decodes the validated arguments strictly into v.
func (c *call) decode(v any) error {
	args := c.args
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	if err := strictjson.Unmarshal(args, v); err != nil {
		return malformedf("arguments: %v", err)
	}
	return nil
}

// malformedError marks a call the connector cannot even attempt: it is
// answered with a JSON-RPC invalid-params error, never an isError result.
type malformedError struct{ msg string }

func (e *malformedError) Error() string { return e.msg }

func malformedf(format string, a ...any) error {
	return &malformedError{msg: fmt.Sprintf(format, a...)}
}

// Server is the connector's MCP server: the 27 standard tools, the §4.4
// resources and their update notifications, over any MCP transport. It is
// safe for concurrent use by many sessions.
type Server struct {
	mcp *mcp.Server
	eng *connector.Engine
	log *slog.Logger

	mu          sync.Mutex
	sessions    map[*mcp.ServerSession]string
	nextSession int64
}

// ServerOptions configures [NewServer]; nil means defaults.
type ServerOptions struct {
	// Logger receives diagnostics; nil discards them. Never stdout: over
	// stdio that is the protocol channel.
	Logger *slog.Logger
}

// NewServer returns the MCP server over eng.
func NewServer(eng *connector.Engine, opts *ServerOptions) (*Server, error) {
	if opts == nil {
		opts = &ServerOptions{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{eng: eng, log: log, sessions: map[*mcp.ServerSession]string{}}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "agent-protocols-connector", Title: "Agent Protocols connector", Version: serverVersion}, &mcp.ServerOptions{
		Instructions: instructions,
		Logger:       log,
		// No logging capability (SEP-2577); tools and resources are
		// inferred from what is registered below.
		Capabilities:       &mcp.ServerCapabilities{},
		SubscribeHandler:   s.subscribe,
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	// The go-sdk answers logging/setLevel even without the capability;
	// the connector exposes no Logging (SEP-2577), so it refuses it.
	s.mcp.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "logging/setLevel" {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "logging is not supported"}
			}
			return next(ctx, method, req)
		}
	})
	for _, d := range toolDefs() {
		if err := s.addTool(d); err != nil {
			return nil, err
		}
	}
	s.addResources()
	return s, nil
}

// MCP returns the underlying go-sdk server, for transports.
func (s *Server) MCP() *mcp.Server { return s.mcp }

func (s *Server) addTool(d toolDef) error {
	name := toolPrefix + d.name
	cs, err := compileSchema(name, d.input)
	if err != nil {
		return fmt.Errorf("tool %s: input schema: %w", name, err)
	}
	t := &mcp.Tool{
		Name:        name,
		Description: d.desc,
		InputSchema: cs.raw,
		Annotations: d.hints.annotations(),
	}
	h := d.handle
	s.mcp.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := req.Params.Arguments
		if err := cs.validate(args); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: name + ": " + err.Error()}
		}
		out, err := h(ctx, &call{srv: s, sess: req.Session, args: args})
		if err != nil {
			return toolResultError(name, classify(err))
		}
		return toolResult(out)
	})
	return nil
}

// toolResult is a success: the JSON object as structuredContent and the
// same JSON as the one text item (§5).
func toolResult(out any) (*mcp.CallToolResult, error) {
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encoding result: %w", err)
	}
	return &mcp.CallToolResult{
		StructuredContent: json.RawMessage(b),
		Content:           []mcp.Content{&mcp.TextContent{Text: string(b)}},
	}, nil
}

// ToolError is the structured content of an isError result (§5): the
// protocol error code and data, preserved.
type ToolError struct {
	Code    string         `json:"code"`
	Message string         `json:"message,omitempty"`
	Data    jsontext.Value `json:"data,omitempty"`
}

// Connector error codes for rejections that do not come from a host.
const (
	CodeAmbiguousRoom  identity.Code = "ambiguous_room"
	CodeHostNotAllowed identity.Code = "host_not_allowed"
	CodeUnknownRoom    identity.Code = "room_not_open"
	CodeNotFound       identity.Code = "not_found"
	CodeRoleMismatch   identity.Code = "role_mismatch"
	CodeConnector      identity.Code = "connector_error"
)

// toolResultError maps a handler's error: a malformed call is a JSON-RPC
// error; anything the connector or a host rejected is an isError result
// carrying the protocol code and data; a context end is the call's own.
func toolResultError(name string, err error) (*mcp.CallToolResult, error) {
	var me *malformedError
	if errors.As(err, &me) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: name + ": " + me.msg}
	}
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return nil, je
	}
	te := ToolError{Code: string(CodeConnector), Message: clip(err.Error())}
	var ie *identity.Error
	if errors.As(err, &ie) {
		te.Code = string(ie.Code)
		te.Message = clip(ie.Message)
		if te.Message == "" {
			te.Message = clip(err.Error())
		}
		if len(ie.Data) > 0 {
			te.Data = ie.Data
		}
	}
	b, merr := json.Marshal(te)
	if merr != nil {
		return nil, merr
	}
	return &mcp.CallToolResult{
		IsError:           true,
		StructuredContent: json.RawMessage(b),
		Content:           []mcp.Content{&mcp.TextContent{Text: string(b)}},
	}, nil
}

// clip bounds a message an untrusted host may have chosen.
func clip(s string) string { return untrusted.Clip(s, 1024) }

// sessionID names sess for the engine, which tracks the presented head
// and inbox claims per session (§4.2, §4.3). go-sdk sessions over stdio
// and in-memory transports have no ID of their own, so the connector
// assigns one; when the session ends, the engine forgets it (its claimed
// inbox items become available to other sessions again).
func (s *Server) sessionID(sess *mcp.ServerSession) string {
	if sess == nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.sessions[sess]; ok {
		return id
	}
	s.nextSession++
	id := fmt.Sprintf("mcp-%d", s.nextSession)
	s.sessions[sess] = id
	go func() {
		_ = sess.Wait()
		s.mu.Lock()
		delete(s.sessions, sess)
		s.mu.Unlock()
		s.eng.EndSession(id)
	}()
	return id
}
