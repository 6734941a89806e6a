package mcptools

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

// StatelessVersion is the first MCP version without sessions
// (2026-07-28): requests carry their version in _meta, results carry cache
// fields, and a resource that does not exist is -32602.
const StatelessVersion = "2026-07-28"

// serverVersion is reported in initialize's serverInfo.
const serverVersion = "0.1.0"

// Server is the connector's MCP server: the standard tools of
// [connector.Tools], the §4.4 resources of [connector.Resources] and
// their update notifications, over any MCP transport. It is safe for
// concurrent use by many sessions.
type Server struct {
	mcp *mcp.Server
	eng *connector.Engine
	log *slog.Logger

	progressEvery    time.Duration
	maxConversations int

	mu          sync.Mutex
	sessions    map[*mcp.ServerSession]string
	nextSession int64
	// conversations are the engine sessions of MCP 2026-07-28 over HTTP
	// (ConversationSession), with their last use, so their number stays
	// bounded.
	conversations map[string]time.Time
}

// Options configures [NewServer]; nil means defaults.
type Options struct {
	// Logger receives diagnostics; nil discards them. Never stdout: over
	// stdio that is the protocol channel.
	Logger *slog.Logger
	// ProgressInterval is how often a tool call that carries a
	// progressToken gets notifications/progress while it runs (a long-poll
	// inbox_next), so clients that reset their request timeout on progress
	// keep waiting; 0 means 15 s.
	ProgressInterval time.Duration
	// MaxConversations bounds the MCP 2026-07-28 HTTP conversations whose
	// presented heads and claims the engine keeps; past it the least
	// recently used one is ended. 0 means 256.
	MaxConversations int
}

// NewServer returns the MCP server over eng. Give the engine a
// [Notifier]'s Notify as its Options.Notify and run the Notifier on the
// server's MCP() for resource-updated notifications.
func NewServer(eng *connector.Engine, opts *Options) *Server {
	if opts == nil {
		opts = &Options{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{eng: eng, log: log, sessions: map[*mcp.ServerSession]string{}, conversations: map[string]time.Time{},
		progressEvery: opts.ProgressInterval, maxConversations: opts.MaxConversations}
	if s.progressEvery <= 0 {
		s.progressEvery = 15 * time.Second
	}
	if s.maxConversations <= 0 {
		s.maxConversations = 256
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "agent-protocols-connector", Title: "Agent Protocols connector", Version: serverVersion}, &mcp.ServerOptions{
		Instructions: connector.Instructions,
		Logger:       log,
		// Only what the connector uses: tools and subscribable resources,
		// whose lists never change at run time; no logging (SEP-2577), no
		// prompts, no completions.
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
				return res, internalError(err)
			}
			if requestProtocolVersion(req) < StatelessVersion {
				// From 2026-07-28 on the go-sdk adds members to a
				// result after this middleware: only the results of
				// earlier versions are final here.
				if cacheableResults[method] {
					return withoutCacheFields(res)
				}
				if tr, ok := asToolResult(res); ok && method == "tools/call" {
					return tr, nil
				}
			}
			return res, nil
		}
	})
	s.addTools()
	s.addResources()
	return s
}

// MCP returns the underlying go-sdk server, for transports.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// internalError is a handler's error as a JSON-RPC error with a code: one
// without (the go-sdk would send the code 0, which no JSON-RPC error has;
// modelcontextprotocol/go-sdk#976) becomes -32603 with its message.
func internalError(err error) error {
	var we *jsonrpc.Error
	if errors.As(err, &we) && we.Code != 0 {
		return err
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

// unadvertised are the methods the go-sdk would answer although the
// connector does not advertise their capability.
var unadvertised = map[string]bool{
	"logging/setLevel":    true,
	"prompts/list":        true,
	"prompts/get":         true,
	"completion/complete": true,
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
