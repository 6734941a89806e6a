package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentprotocols/go-sdk/connector"
)

// §4.4 resources. Each read is the local-cache answer of the matching
// tool; the room resources name a room by room_id alone, so a room_id
// known on two hosts is refused as ambiguous, as the tools do.

const jsonMIME = "application/json"

var staticResources = []struct {
	uri, name, desc string
}{
	{connector.URIIdentity, "identity", "Active local Agent ID and non-secret configuration."},
	{connector.URIHosts, "hosts", "Configured host allowlist and discovery metadata."},
	{connector.URIRooms, "rooms", "Locally known rooms and unread summaries."},
	{connector.URIInboxPending, "inbox-pending", "Pending actionable inbox items."},
	{connector.URIDraftsHeld, "drafts-held", "Local held drafts waiting for explicit agent action."},
}

// roomResources are the per-room resources: the URI suffix and description.
var roomResources = []struct {
	sub, name, desc string
}{
	{"", "room", "Local materialized room state and latest hash-chain head."},
	{"members", "room-members", "Local member directory."},
	{"timeline", "room-timeline", "Local timeline projection (latest items)."},
	{"types", "room-types", "Local materialized type registry."},
	{"agent-status", "room-agent-status", "Current unexpired transient agent status."},
}

// resourceSession is the session name resource reads use: reading a
// resource presents nothing, so it never moves a session's write base.
const resourceSession = "resource-read"

func (s *Server) addResources() {
	for _, r := range staticResources {
		s.mcp.AddResource(&mcp.Resource{URI: r.uri, Name: r.name, Description: r.desc, MIMEType: jsonMIME}, s.readResource)
	}
	for _, r := range roomResources {
		tmpl := connector.URIRooms + "/{room_id}"
		if r.sub != "" {
			tmpl += "/" + r.sub
		}
		s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: tmpl, Name: r.name, Description: r.desc, MIMEType: jsonMIME}, s.readResource)
	}
}

// parseResourceURI splits a connector URI: a static one, or a room one
// (room_id, sub). ok is false for anything else.
func parseResourceURI(uri string) (static bool, roomID, sub string, ok bool) {
	for _, r := range staticResources {
		if uri == r.uri {
			return true, "", "", true
		}
	}
	rest, found := strings.CutPrefix(uri, connector.URIRooms+"/")
	if !found || rest == "" {
		return false, "", "", false
	}
	roomID, sub, _ = strings.Cut(rest, "/")
	if roomID == "" || strings.ContainsAny(roomID, "?#%") {
		return false, "", "", false
	}
	for _, r := range roomResources {
		if r.sub == sub {
			return false, roomID, sub, true
		}
	}
	return false, "", "", false
}

func (s *Server) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	static, roomID, sub, ok := parseResourceURI(uri)
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	var (
		v   any
		err error
	)
	e := s.eng
	if static {
		switch uri {
		case connector.URIIdentity:
			v, err = e.IdentityCurrent(ctx)
		case connector.URIHosts:
			v, err = e.HostsList(ctx)
		case connector.URIRooms:
			v, err = e.RoomsList(ctx, connector.RoomsListInput{Membership: "all", Limit: 200})
		case connector.URIInboxPending:
			var items []connector.InboxItem
			items, err = e.InboxPending(ctx)
			if items == nil {
				items = []connector.InboxItem{}
			}
			v = map[string]any{"items": items, "pending_count": len(items)}
		case connector.URIDraftsHeld:
			v, err = e.DraftsList(ctx, connector.DraftsListInput{Limit: 100})
		}
	} else {
		switch sub {
		case "":
			v, err = e.RoomState(ctx, resourceSession, connector.RoomStateInput{RoomID: roomID})
		case "members":
			v, err = e.MembersList(ctx, resourceSession, connector.MembersListInput{RoomID: roomID, Status: "all", Limit: 200})
		case "timeline":
			v, err = e.Timeline(ctx, resourceSession, connector.TimelineInput{RoomID: roomID, Limit: 100})
		case "types":
			var st *connector.RoomStateResult
			st, err = e.RoomState(ctx, resourceSession, connector.RoomStateInput{RoomID: roomID, IncludeTypes: true})
			if err == nil {
				v = map[string]any{"room_id": roomID, "types": st.Room.Types, "sync": st.Sync}
			}
		case "agent-status":
			v, err = e.AgentStatusList(ctx, resourceSession, connector.AgentStatusListInput{RoomID: roomID})
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", uri, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: jsonMIME, Text: string(b)}}}, nil
}

// subscribe admits subscriptions to the connector's own URIs only.
func (s *Server) subscribe(_ context.Context, req *mcp.SubscribeRequest) error {
	if _, _, _, ok := parseResourceURI(req.Params.URI); !ok {
		return mcp.ResourceNotFoundError(req.Params.URI)
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
