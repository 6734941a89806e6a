package connector

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// This file is the framework-neutral face of the §4.4 resources, as
// tools.go is of the §4.3 tools: each [Resource] is the public contract
// (URI or URI template, name, description, when it is updated) plus the
// engine reads behind it. connector/mcptools registers this table with the
// MCP SDK; any other framework can do the same.

// A Resource is one §4.4 resource, with no agent framework attached. Its
// fields are read-only: [Resources] shares one table among all callers.
// A Resource is safe for concurrent use; [Resource.Read] may run
// concurrently on one Engine.
type Resource struct {
	// URI is the resource's URI, or for a per-room resource its URI
	// template (RFC 6570, level 1) with the one variable {room_id}:
	// agent-protocols://rooms/{room_id}/members.
	URI string
	// Template reports whether URI is a template.
	Template bool
	// Name is a short programmatic name ("room-members").
	Name string
	// Description is what §4.4 says the resource holds.
	Description string
	// MIMEType is the type of what Read returns (application/json).
	MIMEType string
	// Updated says when the engine calls Options.Notify with this
	// resource's URI (for a per-room resource, the room's URI), so that a
	// binding can send resource-updated notifications (§4.4 SHOULD); ""
	// means never: the state behind it changes only with the operator's
	// configuration, or with every record (a client re-reads it).
	Updated string

	sub  string // a per-room resource's URI suffix ("" for the room itself)
	read func(ctx context.Context, e *Engine, roomID string) (any, error)
}

// MIMEJSON is the MIME type of every resource's contents.
const MIMEJSON = "application/json"

// Resources returns the §4.4 resources: five with fixed URIs, then five
// per-room URI templates.
func Resources() []*Resource { return append([]*Resource(nil), resourceTable()...) }

// LookupResource returns the resource uri names, and for a per-room one
// the room_id it names. ok is false for any other URI: a room URI whose
// room_id is empty or holds one of ?#% (so a URI names one room, as it
// is), or an unknown suffix.
func LookupResource(uri string) (r *Resource, roomID string, ok bool) {
	for _, r := range resourceTable() {
		if !r.Template && uri == r.URI {
			return r, "", true
		}
	}
	rest, found := strings.CutPrefix(uri, URIRooms+"/")
	if !found {
		return nil, "", false
	}
	roomID, sub, _ := strings.Cut(rest, "/")
	if roomID == "" || strings.ContainsAny(roomID, "?#%") {
		return nil, "", false
	}
	for _, r := range resourceTable() {
		if r.Template && r.sub == sub {
			return r, roomID, true
		}
	}
	return nil, "", false
}

// Read reads the resource at uri — r's URI, or for a template r's URI
// with a room_id — from e's local state, as JSON. Reading presents
// nothing (§4.2): it never moves a session's write base. A room that
// was never opened is [ErrUnknownRoom], a room_id known on two hosts
// [ErrAmbiguousRoom] (a resource URI cannot name the host), and a URI
// that is not r's [ErrNotFound].
func (r *Resource) Read(ctx context.Context, e *Engine, uri string) (json.RawMessage, error) {
	got, roomID, ok := LookupResource(uri)
	if !ok || got != r {
		return nil, fmt.Errorf("%w: %q is not the resource %s", ErrNotFound, uri, r.URI)
	}
	v, err := r.read(ctx, e, roomID)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// resourceSession is the session resource reads use: a read presents
// nothing, so it never moves a session's write base.
const resourceSession = "resource-read"

var resourceTable = sync.OnceValue(func() []*Resource {
	static := func(uri, name, desc, updated string, read func(context.Context, *Engine) (any, error)) *Resource {
		return &Resource{URI: uri, Name: name, Description: desc, MIMEType: MIMEJSON, Updated: updated,
			read: func(ctx context.Context, e *Engine, _ string) (any, error) { return read(ctx, e) }}
	}
	room := func(sub, name, desc, updated string, read func(context.Context, *Engine, string) (any, error)) *Resource {
		uri := URIRooms + "/{room_id}"
		if sub != "" {
			uri += "/" + sub
		}
		return &Resource{URI: uri, Template: true, Name: name, Description: desc, MIMEType: MIMEJSON, Updated: updated, sub: sub, read: read}
	}
	return []*Resource{
		static(URIIdentity, "identity", "Active local Agent ID and non-secret configuration.", "",
			func(ctx context.Context, e *Engine) (any, error) { return e.IdentityCurrent(ctx) }),
		static(URIHosts, "hosts", "Configured host allowlist and discovery metadata.",
			"when the hosts' discovery documents were read again (CheckHosts, which Open runs)",
			func(ctx context.Context, e *Engine) (any, error) { return e.HostsList(ctx) }),
		static(URIRooms, "rooms", "Locally known rooms and unread summaries.", "", allRooms),
		static(URIInboxPending, "inbox-pending", "Pending actionable inbox items.",
			"when an inbox item arrives (a mention, a turn, a join request or its review, a lost membership) or is acknowledged",
			func(ctx context.Context, e *Engine) (any, error) {
				items, err := e.InboxPending(ctx)
				if items == nil {
					items = []InboxItem{}
				}
				return map[string]any{"items": items, "pending_count": len(items)}, err
			}),
		static(URIDraftsHeld, "drafts-held", "Local held drafts waiting for explicit agent action.",
			"when a write is held as a draft (also one replayed from the outbox), and when a held draft is dropped",
			func(ctx context.Context, e *Engine) (any, error) {
				return e.DraftsList(ctx, DraftsListInput{Limit: 100})
			}),
		room("", "room", "Local materialized room state and latest hash-chain head.",
			"when verified records of the room are stored",
			func(ctx context.Context, e *Engine, roomID string) (any, error) {
				return e.RoomState(ctx, resourceSession, RoomStateInput{RoomID: roomID})
			}),
		room("members", "room-members", "Local member directory.",
			"when stored records change the room's members, roles or state",
			func(ctx context.Context, e *Engine, roomID string) (any, error) {
				return e.MembersList(ctx, resourceSession, MembersListInput{RoomID: roomID, Status: "all", Limit: 200})
			}),
		room("timeline", "room-timeline", "Local timeline projection (latest items).",
			"when verified records of the room are stored",
			latestTimeline),
		room("types", "room-types", "Local materialized type registry.",
			"when stored records change the room's members, roles or state (type definitions included)",
			func(ctx context.Context, e *Engine, roomID string) (any, error) {
				st, err := e.RoomState(ctx, resourceSession, RoomStateInput{RoomID: roomID, IncludeTypes: true})
				if err != nil {
					return nil, err
				}
				return map[string]any{"room_id": roomID, "types": st.Room.Types, "sync": st.Sync}, nil
			}),
		room("agent-status", "room-agent-status", "Current unexpired transient agent status.",
			"when this agent sets its status, and when the room's live stream reports a status change",
			func(ctx context.Context, e *Engine, roomID string) (any, error) {
				return e.AgentStatusList(ctx, resourceSession, AgentStatusListInput{RoomID: roomID})
			}),
	}
})

// timelineWindow is how many of the newest records the timeline resource
// shows.
const timelineWindow = 100

// latestTimeline is the timeline resource: the newest records, so a
// client that re-reads on a notification sees what it was about.
func latestTimeline(ctx context.Context, e *Engine, roomID string) (any, error) {
	st, err := e.RoomState(ctx, resourceSession, RoomStateInput{RoomID: roomID})
	if err != nil {
		return nil, err
	}
	in := TimelineInput{Host: st.Sync.Host, RoomID: roomID, Limit: timelineWindow}
	if after := st.Sync.SyncedSeq - timelineWindow; after > 0 {
		in.AfterSeq = &after
	}
	return e.Timeline(ctx, resourceSession, in)
}

// maxRoomPages bounds the rooms resource's paging (200 rooms a page).
const maxRoomPages = 100

// allRooms is the rooms resource: every locally known room, page by page.
func allRooms(ctx context.Context, e *Engine) (any, error) {
	var out RoomsResult
	in := RoomsListInput{Membership: "all", Limit: 200}
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
		out.Rooms = []RoomSummary{}
	}
	return &out, nil
}
