package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentprotocols/go-sdk/connector"
	"github.com/agentprotocols/go-sdk/internal/untrusted"
)

// §4.4 resources: package connector's table (connector.Resources), each
// read the local-cache answer of the matching tool. The room resources
// name a room by room_id alone, so a room_id known on two hosts is
// refused as ambiguous, as the tools do.

func (s *Server) addResources() {
	for _, r := range connector.Resources() {
		if r.Template {
			s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: r.URI, Name: r.Name, Description: r.Description, MIMEType: r.MIMEType}, s.readResource)
		} else {
			s.mcp.AddResource(&mcp.Resource{URI: r.URI, Name: r.Name, Description: r.Description, MIMEType: r.MIMEType}, s.readResource)
		}
	}
}

func (s *Server) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	r, _, ok := connector.LookupResource(uri)
	if !ok {
		return nil, resourceNotFound(req.ProtocolVersion(), uri)
	}
	b, err := r.Read(ctx, s.eng, uri)
	if err != nil {
		return nil, resourceError(req.ProtocolVersion(), uri, err)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: r.MIMEType, Text: string(b)}}}, nil
}

// codeResourceNotFound is the resources/read error for a resource that
// does not exist in MCP 2025-11-25 and earlier (what agentd and the
// clients of those versions expect). 2026-07-28 makes it -32602 (Invalid Params),
// asking clients to accept -32002 too.
const codeResourceNotFound = -32002

// resourceNotFound is the not-found error for uri in the protocol
// version the request was made in: -32002 before 2026-07-28, -32602 from
// it on, both with data.uri.
func resourceNotFound(version, uri string) error {
	data, _ := json.Marshal(map[string]string{"uri": uri})
	code := int64(codeResourceNotFound)
	if version >= StatelessVersion {
		code = jsonrpc.CodeInvalidParams
	}
	return &jsonrpc.Error{Code: code, Message: "Resource not found: " + untrusted.Clip(uri, 256), Data: data}
}

// resourceError maps an engine error for uri: a room that is not open
// (or an unknown item) is not found with data.uri (resourceNotFound); a
// room_id known on two hosts is invalid params (data.uri too: the URI
// cannot name a host); anything else an internal error, never the SDK's
// code 0.
func resourceError(version, uri string, err error) error {
	data, _ := json.Marshal(map[string]string{"uri": uri})
	switch {
	case errors.Is(err, connector.ErrUnknownRoom), errors.Is(err, connector.ErrNotFound):
		return resourceNotFound(version, uri)
	case errors.Is(err, connector.ErrAmbiguousRoom):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: untrusted.Clip(err.Error(), 1024), Data: data}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: untrusted.Clip(fmt.Sprintf("%s: %v", uri, err), 1024), Data: data}
}

// subscribe admits subscriptions to the connector's own URIs only:
// resources/subscribe before 2026-07-28, and each URI of a
// subscriptions/listen from it on.
func (s *Server) subscribe(_ context.Context, req *mcp.SubscribeRequest) error {
	if _, _, ok := connector.LookupResource(req.Params.URI); !ok {
		return resourceNotFound(req.ProtocolVersion(), req.Params.URI)
	}
	return nil
}

// Notifier turns the engine's state-change calls into
// notifications/resources/updated (URI only: clients re-read). The
// engine calls Notify from its own goroutines; Notify never blocks:
// URIs are coalesced in a set and sent by one goroutine, so a burst of
// records costs one notification per URI, and memory is bounded by the
// number of distinct URIs.
type Notifier struct {
	mu      sync.Mutex
	pending map[string]struct{}
	order   []string
	wake    chan struct{}
}

// NewNotifier returns a Notifier; [Notifier.Run] delivers.
func NewNotifier() *Notifier {
	return &Notifier{pending: map[string]struct{}{}, wake: make(chan struct{}, 1)}
}

// Notify queues uri; it is the engine's Options.Notify.
func (n *Notifier) Notify(uri string) {
	n.mu.Lock()
	if _, dup := n.pending[uri]; !dup {
		n.pending[uri] = struct{}{}
		n.order = append(n.order, uri)
	}
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// Run delivers queued URIs to srv's subscribed sessions until ctx ends.
func (n *Notifier) Run(ctx context.Context, srv *mcp.Server) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.wake:
		}
		n.mu.Lock()
		batch := n.order
		n.order = nil
		clear(n.pending)
		n.mu.Unlock()
		for _, uri := range batch {
			_ = srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
		}
	}
}
