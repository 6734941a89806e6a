package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentprotocols/go-sdk/connector"
)

// serverVersion is reported in initialize's serverInfo.
const serverVersion = "0.1.0"

// Server is the connector's MCP server: the 27 standard tools of package
// connector's framework-neutral table, the §4.4 resources and their update
// notifications, over any MCP transport. It is safe for concurrent use by
// many sessions.
type Server struct {
	mcp *mcp.Server
	eng *connector.Engine
	log *slog.Logger

	progressEvery time.Duration
	streamGrace   time.Duration
	replayBytes   int // the HTTP replay buffer's bound (maxReplayBytes)
	calls         *pendingCalls

	mu          sync.Mutex
	sessions    map[*mcp.ServerSession]string
	nextSession int64
	// conversations are the engine sessions of MCP 2026-07-28 over HTTP
	// (conversationSession), with their last use, so their number stays
	// bounded.
	conversations map[string]time.Time
}

// ServerOptions configures [NewServer]; nil means defaults.
type ServerOptions struct {
	// Logger receives diagnostics; nil discards them. Never stdout: over
	// stdio that is the protocol channel.
	Logger *slog.Logger
	// ProgressInterval is how often a tool call that carries a
	// progressToken gets notifications/progress while it runs (a long-poll
	// inbox_next), so clients that reset their request timeout on progress
	// keep waiting; 0 means 15 s.
	ProgressInterval time.Duration
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
	s := &Server{eng: eng, log: log, sessions: map[*mcp.ServerSession]string{}, conversations: map[string]time.Time{},
		progressEvery: opts.ProgressInterval}
	if s.progressEvery <= 0 {
		s.progressEvery = 15 * time.Second
	}
	s.streamGrace = 5 * time.Second
	s.replayBytes = maxReplayBytes
	s.calls = newPendingCalls()
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "agent-protocols-connector", Title: "Agent Protocols connector", Version: serverVersion}, &mcp.ServerOptions{
		Instructions: connector.Instructions,
		Logger:       log,
		// Only what the connector uses (R10): tools and subscribable
		// resources, whose lists never change at run time; no logging
		// (SEP-2577), no prompts, no completions.
		Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{},
			Resources: &mcp.ResourceCapabilities{Subscribe: true},
		},
		// The connector's lists and resources are per operator and change
		// at any time: never cache them, never share them (2026-07-28
		// fields; results of older versions go without them,
		// withoutCacheFields).
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) {
			c.TTLMs, c.CacheScope = 0, "private"
		},
		SubscribeHandler:   s.subscribe,
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	// The go-sdk answers some methods whatever the capabilities say; the
	// connector refuses those it does not advertise.
	s.mcp.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if unadvertised[method] {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method not found: %q is not supported", method)}
			}
			// A URI that is none of the connector's resources is "not
			// found" with data.uri in the negotiated version's code, before
			// the SDK's own message for unmatched URIs.
			if rr, ok := req.(*mcp.ReadResourceRequest); ok && method == "resources/read" && rr.Params != nil {
				if _, _, ok := connector.LookupResource(rr.Params.URI); !ok {
					return nil, resourceNotFound(rr.ProtocolVersion(), rr.Params.URI)
				}
			}
			res, err := next(ctx, method, req)
			if err != nil {
				// Never the code 0 (modelcontextprotocol/go-sdk#976).
				return res, codedError(err, jsonrpc.CodeInternalError)
			}
			if cacheableResults[method] && requestProtocolVersion(req) < statelessEra {
				return withoutCacheFields(res)
			}
			return res, nil
		}
	})
	s.addTools()
	s.addResources()
	return s, nil
}

// cacheableResults are the methods whose results the go-sdk gives
// 2026-07-28's cache fields, ttlMs and cacheScope (SEP-2549), whatever
// the session's protocol version.
var cacheableResults = map[string]bool{
	"tools/list": true, "resources/list": true, "resources/templates/list": true,
	"resources/read": true, "prompts/list": true,
}

// requestProtocolVersion is the protocol version req was made in: its
// _meta version from 2026-07-28 on, else its session's.
func requestProtocolVersion(req mcp.Request) string {
	if r, ok := req.(interface{ ProtocolVersion() string }); ok {
		return r.ProtocolVersion()
	}
	return ""
}

// withoutCacheFields is res as the session era defines it: without the
// 2026-07-28 cache fields, which 2025-11-25 and earlier do not have.
func withoutCacheFields(res mcp.Result) (mcp.Result, error) {
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	b, err = dropMembers(b, "ttlMs", "cacheScope")
	if err != nil {
		return nil, err
	}
	return &encodedResult{json: b}, nil
}

// encodedResult is a result already encoded as JSON.
type encodedResult struct {
	mcp.ResultBase
	json []byte
}

// MarshalJSON returns the encoded result.
func (r *encodedResult) MarshalJSON() ([]byte, error) { return r.json, nil }

// dropMembers copies a JSON object without the named top-level members,
// keeping the order of the others.
func dropMembers(obj []byte, names ...string) ([]byte, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(obj))
	var out bytes.Buffer
	enc := jsontext.NewEncoder(&out)
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, err
	}
	if tok.Kind() != '{' {
		return nil, fmt.Errorf("not a JSON object: %v", tok.Kind())
	}
	if err := enc.WriteToken(tok); err != nil {
		return nil, err
	}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, err
		}
		name := tok.String()
		val, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		if slices.Contains(names, name) {
			continue
		}
		if err := enc.WriteToken(jsontext.String(name)); err != nil {
			return nil, err
		}
		if err := enc.WriteValue(val); err != nil {
			return nil, err
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	if err := enc.WriteToken(jsontext.EndObject); err != nil {
		return nil, err
	}
	return bytes.TrimSpace(out.Bytes()), nil
}

// unadvertised are the methods the go-sdk would answer although the
// connector does not advertise their capability.
var unadvertised = map[string]bool{
	"logging/setLevel":    true,
	"prompts/list":        true,
	"prompts/get":         true,
	"completion/complete": true,
}

// MCP returns the underlying go-sdk server, for transports.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// addTools registers the framework-neutral tool table of package connector
// ([connector.Tools]): the MCP layer adds only the wire mapping.
func (s *Server) addTools() {
	for _, t := range connector.Tools() {
		a := t.Annotations
		s.mcp.AddTool(&mcp.Tool{
			Name:         t.Name,
			Title:        t.Title,
			Description:  t.Description,
			InputSchema:  t.InputSchema,
			OutputSchema: t.OutputSchema,
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: a.ReadOnlyHint, IdempotentHint: a.IdempotentHint,
				DestructiveHint: a.DestructiveHint, OpenWorldHint: a.OpenWorldHint},
		}, s.toolHandler(t))
	}
}

// toolHandler maps one tool to MCP 2025-11-25: a result is
// structuredContent plus the same JSON as the one text item (§5); every
// refusal, including arguments that do not fit the input schema
// (SEP-1303), is an isError result carrying the [connector.ToolError], so
// the model sees it and can correct itself. Only a request that is not a
// well-formed tools/call (arguments not an object) is a JSON-RPC error,
// as is an unknown tool (the SDK's -32602).
func (s *Server) toolHandler(t *connector.Tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := req.Params.Arguments
		if !isObjectOrAbsent(args) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: t.Name + ": arguments must be a JSON object"}
		}
		if req.Extra != nil && req.Extra.Header != nil {
			if key := req.Extra.Header.Get(callHeader); key != "" {
				var end func()
				ctx, end = s.calls.start(ctx, key)
				defer end()
			}
		}
		stop := s.keepAlive(ctx, req)
		out, err := t.Call(ctx, s.eng, s.sessionFor(req.Session, req.Extra), args)
		stop()
		if err != nil {
			return toolResultError(err)
		}
		return &mcp.CallToolResult{
			StructuredContent: out,
			Content:           []mcp.Content{&mcp.TextContent{Text: string(out)}},
		}, nil
	}
}

// isObjectOrAbsent reports whether raw tool arguments are a JSON object,
// null or absent: CallToolRequest's arguments member is an object.
func isObjectOrAbsent(args json.RawMessage) bool {
	t := bytes.TrimSpace(args)
	return len(t) == 0 || t[0] == '{' || string(t) == "null"
}

// toolResultError is the isError result for a tool's refusal: the
// [connector.ToolError] as structuredContent and as the one text item.
func toolResultError(err error) (*mcp.CallToolResult, error) {
	var te *connector.ToolError
	if !errors.As(err, &te) {
		te = &connector.ToolError{Code: connector.CodeConnector, Message: err.Error(), Source: connector.SourceConnector, Err: err}
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

// keepAlive sends notifications/progress every progressEvery while a call
// that carries a progressToken runs, so a client that resets its request
// timeout on progress (the TypeScript SDK's resetTimeoutOnProgress) keeps
// waiting on a long-poll. stop ends it before the result is sent.
func (s *Server) keepAlive(ctx context.Context, req *mcp.CallToolRequest) (stop func()) {
	tok := req.Params.GetProgressToken()
	if tok == nil || req.Session == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(s.progressEvery)
		defer tick.Stop()
		for n := 1; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(n), Message: "waiting"})
		}
	}()
	return func() { cancel(); <-done }
}

// sessionFor names the engine session a request belongs to: the engine
// tracks the presented head and inbox claims per session (§4.2, §4.3).
//
//   - A Streamable HTTP session of MCP 2025-11-25 and earlier is named by
//     its Mcp-Session-Id.
//   - MCP 2026-07-28 over HTTP has no session: a request belongs to the
//     conversation its client names with the Agent-Protocols-Conversation
//     header, or, without one, to the one default conversation of the
//     bearer token (conversationSession).
//   - Over stdio and in-memory transports the connection is the session
//     (one client per process), in either protocol era; the connector
//     names it.
//
// When a connection-scoped session ends, the engine forgets it (its
// claimed inbox items become available to other sessions again).
func (s *Server) sessionFor(sess *mcp.ServerSession, extra *mcp.RequestExtra) string {
	if sess == nil {
		return ""
	}
	if sess.ID() == "" && extra != nil && extra.Header != nil {
		// The front refused a malformed conversation header already.
		name, _ := conversationSession(extra.Header)
		s.useConversation(name)
		return name
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.sessions[sess]; ok {
		return id
	}
	var id string
	if hid := sess.ID(); hid != "" {
		id = httpSessionName(hid)
	} else {
		s.nextSession++
		id = fmt.Sprintf("mcp-%d", s.nextSession)
	}
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

// maxConversations bounds the MCP 2026-07-28 HTTP conversations the
// engine keeps presented heads for; past it, the least recently used one
// is ended (its claims released, its heads forgotten).
const maxConversations = 256

// useConversation records a use of an HTTP conversation.
func (s *Server) useConversation(name string) {
	now := time.Now()
	s.mu.Lock()
	s.conversations[name] = now
	var evict string
	if len(s.conversations) > maxConversations {
		oldest := now
		for n, t := range s.conversations {
			if n != name && !t.After(oldest) {
				evict, oldest = n, t
			}
		}
		delete(s.conversations, evict)
	}
	s.mu.Unlock()
	if evict != "" {
		s.eng.EndSession(evict)
	}
}

// endSession ends an engine session whose client went away (its last
// stream closed): its claims are released at once, and its presented
// heads forgotten (a client that comes back re-reads before writing, or
// its writes are judged against the latest verified head).
func (s *Server) endSession(name string) {
	s.mu.Lock()
	delete(s.conversations, name)
	s.mu.Unlock()
	s.eng.EndSession(name)
}

// httpSessionName is the engine's name for an HTTP session (MCP
// 2025-11-25 and earlier).
func httpSessionName(mcpSessionID string) string { return "http-" + mcpSessionID }
