package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentprotocols/go-sdk/connector"
	"github.com/agentprotocols/go-sdk/internal/untrusted"
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
		return nil, resourceNotFound(req.ProtocolVersion(), uri)
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
			v, err = allRooms(ctx, e)
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
			v, err = latestTimeline(ctx, e, roomID)
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
		return nil, resourceError(req.ProtocolVersion(), uri, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: jsonMIME, Text: string(b)}}}, nil
}

// codeResourceNotFound is the resources/read error for a resource that
// does not exist in MCP 2025-11-25 and earlier (R4; agentd and clients of
// those versions expect it). 2026-07-28 makes it -32602 (Invalid Params),
// asking clients to accept -32002 too.
const codeResourceNotFound = -32002

// resourceNotFound is the not-found error for uri in the protocol
// version the request was made in: -32002 before 2026-07-28, -32602 from
// it on, both with data.uri.
func resourceNotFound(version, uri string) error {
	data, _ := json.Marshal(map[string]string{"uri": uri})
	code := int64(codeResourceNotFound)
	if version >= statelessEra {
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

// timelineWindow is how many of the newest records the timeline resource
// shows.
const timelineWindow = 100

// latestTimeline is the timeline resource: the newest records, so a
// notify-then-read client sees what the notification was about (D6).
func latestTimeline(ctx context.Context, e *connector.Engine, roomID string) (*connector.TimelineResult, error) {
	st, err := e.RoomState(ctx, resourceSession, connector.RoomStateInput{RoomID: roomID})
	if err != nil {
		return nil, err
	}
	in := connector.TimelineInput{Host: st.Sync.Host, RoomID: roomID, Limit: timelineWindow}
	if after := st.Sync.SyncedSeq - timelineWindow; after > 0 {
		in.AfterSeq = &after
	}
	return e.Timeline(ctx, resourceSession, in)
}

// maxRoomPages bounds the rooms resource's paging (200 rooms a page).
const maxRoomPages = 100

// allRooms is the rooms resource: every locally known room, page by page.
func allRooms(ctx context.Context, e *connector.Engine) (*connector.RoomsResult, error) {
	var out connector.RoomsResult
	in := connector.RoomsListInput{Membership: "all", Limit: 200}
	for range maxRoomPages {
		page, err := e.RoomsList(ctx, in)
		if err != nil {
			return nil, err
		}
		out.Rooms = append(out.Rooms, page.Rooms...)
		if page.NextCursor == "" {
			break
		}
		in.Cursor = page.NextCursor
	}
	if out.Rooms == nil {
		out.Rooms = []connector.RoomSummary{}
	}
	return &out, nil
}

// subscribe admits subscriptions to the connector's own URIs only:
// resources/subscribe before 2026-07-28, and each URI of a
// subscriptions/listen from it on.
func (s *Server) subscribe(_ context.Context, req *mcp.SubscribeRequest) error {
	if _, _, _, ok := parseResourceURI(req.Params.URI); !ok {
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
