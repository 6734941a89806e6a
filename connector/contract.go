package connector

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/identity"
)

// This file is the engine's contract with its callers (an agent framework,
// or the MCP binding connector/mcptools): the view types of
// connector spec §4.2–§4.3 (JSON names exactly as the spec spells them), the
// tool inputs (same names as the tool input schemas, so the MCP layer can use
// them as tool input types), the options and the sentinel errors. The
// methods live on *Engine (engine.go, write.go, inbox.go, …); every method
// that reads or writes a room takes the MCP session id, because the
// presented head (§4.2) is tracked per room and session.

// Resource URIs of §4.4. Options.Notify is called with these URIs when the
// corresponding local state changes; the MCP layer turns the calls into
// notifications/resources/updated.
const (
	URIIdentity     = "agent-protocols://identity/current"
	URIHosts        = "agent-protocols://hosts"
	URIRooms        = "agent-protocols://rooms"
	URIInboxPending = "agent-protocols://inbox/pending"
	URIDraftsHeld   = "agent-protocols://drafts/held"
)

// RoomURI returns agent-protocols://rooms/{room_id}; RoomURI(id, "timeline")
// returns agent-protocols://rooms/{room_id}/timeline (also "members",
// "types", "agent-status").
func RoomURI(roomID string, sub ...string) string {
	u := URIRooms + "/" + roomID
	for _, s := range sub {
		u += "/" + s
	}
	return u
}

// Sentinel errors. Protocol errors from a host keep their
// *identity.Error (errors.Is against the adp/identity sentinels works).
var (
	// ErrLocked: another process holds the state directory.
	ErrLocked = errors.New("connector: state directory is in use by another process")
	// ErrHostNotAllowed: the host is not in the operator allowlist; nothing
	// was signed and no request was sent.
	ErrHostNotAllowed = errors.New("connector: host is not in the operator allowlist")
	// ErrAmbiguousRoom: room_id does not pick one host — it is known on
	// more than one, or (for a room that need not be known, room_join) on
	// none while several hosts are configured; pass host.
	ErrAmbiguousRoom = errors.New("connector: room_id does not pick one host; pass host")
	// ErrUnknownRoom: the room was never opened on any configured host.
	ErrUnknownRoom = errors.New("connector: unknown room; open it first")
	// ErrRateLimited: the local write rate limit refused the write.
	ErrRateLimited = errors.New("connector: write rate limit exceeded")
	// ErrRoleMismatch: a join completion named another role than the approved one.
	ErrRoleMismatch = errors.New("connector: role differs from the approved join request role")
	// ErrNotFound: an inbox item, draft or join request does not exist.
	ErrNotFound = errors.New("connector: not found")
	// ErrInvalidInput: a tool input is malformed.
	ErrInvalidInput = errors.New("connector: invalid input")
	// ErrInsecurePermissions: a state directory or key file is open to
	// other users (group- or world-writable; an unencrypted key also
	// group- or world-readable). Open and the key loaders refuse it
	// rather than trust what another local user could have replaced.
	ErrInsecurePermissions = errors.New("connector: file permissions let other users change or read it")
	// ErrPendingOutbox: the write was signed and recorded in the outbox but
	// the host could not be reached; it is re-sent (same envelope) on the
	// next Open or ReplayOutbox.
	ErrPendingOutbox = errors.New("connector: write is pending in the outbox")
)

// HostError is a refusal a host (or profile service) sent: an HTTP error
// answer. Code, Message and Data are the host's own words — untrusted text
// that a caller must show labelled as the host's, never as the connector's
// (a host may use any code, the connector's local ones included). Every
// engine method returns host refusals as a *HostError; the connector's own
// refusals are the sentinel errors above (or an *identity.Error from a
// local check) and never a *HostError.
//
// A host's refusal is final: nothing of it is queued or replayed. In
// particular a host rate_limited (HTTP 429) comes back at once with
// RetryAfter set from the answer's Retry-After header; only transport
// faults (no answer, 5xx, an answer that does not verify) leave a write in
// the outbox (ErrPendingOutbox).
//
// Unwrap yields the *identity.Error (an *adp.HeadMismatchError for
// room_head_mismatch), so errors.Is against the adp and identity
// sentinels works. The MCP layer maps it to an isError result whose code
// is the host's, with source "host", the host's origin, and
// data.retry_after_ms when RetryAfter is set.
type HostError struct {
	// Host is the origin of the host (or profile service) that answered.
	Host string
	// Code is the host's error code.
	Code identity.Code
	// Message is the host's message, clipped to 1 KiB.
	Message string
	// Data is the host's "data" member, dropped when over 4 KiB.
	Data jsontext.Value
	// Status is the HTTP status of the answer.
	Status int
	// RetryAfter is the answer's Retry-After delay; 0 when absent.
	RetryAfter time.Duration
	// Err is the underlying protocol error.
	Err error
}

// Error formats the error as "host <origin>: code: message" (the clipped
// message).
func (e *HostError) Error() string {
	s := "host " + e.Host + ": " + string(e.Code)
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Unwrap returns the underlying protocol error.
func (e *HostError) Unwrap() error { return e.Err }

// HostConfig is one operator-configured host (the allowlist). Only
// configuration creates hosts; no engine method adds one.
type HostConfig struct {
	// Host is the API origin, e.g. "https://api.al.ink".
	Host string `json:"host"`
	// Label is a short operator name.
	Label string `json:"label,omitempty"`
	// ProfileService is the profile service URL used with this host.
	ProfileService string `json:"profile_service,omitempty"`
	// Disabled keeps the host listed with allowed=false: nothing is signed for it.
	Disabled bool `json:"disabled,omitempty"`
}

// Options configures Open. Dir, Key and Hosts are required.
type Options struct {
	// Dir is the state directory: the bbolt file Dir/state.db and its
	// write-ahead log Dir/state.wal, which Close folds into state.db (an
	// earlier version opening the directory after a crash would miss what
	// the log holds: open it with this version first).
	Dir string
	// Key is the agent's key, loaded from the key store (LoadKeyFile).
	Key *Key
	// Hosts is the operator allowlist.
	Hosts []HostConfig
	// Profiles are the profile service URLs of the active Agent ID.
	Profiles []string
	// HTTPClient sends every request; nil means a default client.
	HTTPClient *http.Client
	// PageSize is the history page size of the host clients; 0 means
	// adp.DefaultPageSize. A page over MaxResponseSize is asked for again
	// with fewer records (down to one), so large records never make a
	// room unreadable.
	PageSize int
	// MaxResponseSize bounds one host answer; 0 means 32 MiB.
	MaxResponseSize int64
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// AllowLoopbackHTTP accepts http://127.0.0.1 hosts (development, tests).
	AllowLoopbackHTTP bool
	// LockTimeout bounds the wait for the state file lock; 0 means 1 s.
	LockTimeout time.Duration
	// WritesPerMinute limits signed writes; 0 means 60, negative none.
	WritesPerMinute int
	// WriteBurst is the burst of the write limiter; 0 means 10.
	WriteBurst int
	// MaxResign caps automatic send_anyway re-signs; 0 means 3.
	MaxResign int
	// Watch lists custom event types that create room.event.custom items.
	Watch []string
	// Notify is called with a §4.4 resource URI whenever that local state
	// changed, from one dispatcher goroutine (calls are serialized, repeats
	// coalesced), never under an engine lock: it may call the engine.
	// nil means no notifications.
	Notify func(uri string)
	// Logger receives background errors (subscriptions, discovery, the
	// outbox replay); nil discards them. Never log to the MCP stdio
	// channel.
	Logger *slog.Logger
	// SnapshotEvery is how many records may follow the stored replica
	// snapshot before a new one is written; 0 means 256. The records after
	// it are re-verified locally on Open.
	SnapshotEvery int
	// NoSubscribe disables live SSE subscriptions (rooms sync on demand).
	NoSubscribe bool
	// ClaimLease is how long an inbox claim outlives its session's last
	// call (any engine call naming the session renews it; EndSession
	// releases it at once); 0 means DefaultClaimLease. Claims never
	// survive a restart.
	ClaimLease time.Duration
	// BackfillWindow bounds which of a room's past records become inbox
	// items when the room is first synced (room_open, room_join, a fresh
	// state directory): mentions of this agent, and turns assigned to it
	// that have not expired, received within this window before the sync
	// do (§4.3 asks for mention items whatever their age; a bound keeps a
	// long history from flooding the inbox). Everything else in the past
	// — messages, state changes, older mentions — is history, not news.
	// 0 means DefaultBackfillWindow; negative means none.
	BackfillWindow time.Duration
}

// DefaultBackfillWindow is the default Options.BackfillWindow.
const DefaultBackfillWindow = 24 * time.Hour

// DefaultClaimLease is the default Options.ClaimLease: an inbox item
// claimed by a client that went away without ending its session (no
// DELETE, a crash, a reconnect) is visible to other sessions again after
// at most this long.
const DefaultClaimLease = time.Minute

// MaxInboxWait is the longest long-poll of InboxNext (wait_ms is clamped
// to it): below the 60 s request timeout common MCP clients use.
const MaxInboxWait = 50 * time.Second

// SyncState is §4.2's sync object: the room head marker of a result.
type SyncState struct {
	Host              string `json:"host"`
	RoomID            string `json:"room_id"`
	HeadSeq           int64  `json:"head_seq"`
	HeadHash          string `json:"head_hash"`
	SyncedSeq         int64  `json:"synced_seq"`
	RemoteSeq         int64  `json:"remote_seq"`
	Subscribed        bool   `json:"subscribed"`
	UnreadCount       int    `json:"unread_count"`
	PendingInboxCount int    `json:"pending_inbox_count"`
}

// MemberProfile is the descriptive profile of a RoomMemberView.
type MemberProfile struct {
	Name        string  `json:"name"`
	Description string  `json:"description"`
	AvatarURL   *string `json:"avatar_url"`
}

// RoomMemberView is §4.2's member projection over replayed records.
type RoomMemberView struct {
	AgentID      string         `json:"agent_id"`
	Role         string         `json:"role"`
	Status       string         `json:"status"`
	IsCreator    bool           `json:"is_creator"`
	Perspective  string         `json:"perspective"`
	JoinedSeq    int64          `json:"joined_seq"`
	LeftSeq      *int64         `json:"left_seq"`
	LastEventSeq int64          `json:"last_event_seq"`
	Profile      *MemberProfile `json:"profile"`
	Extra        jsontext.Value `json:"extra"`
}

// TimelineItem is §4.2's simplified event view. Content, Mentions and
// References are set for message.create; Record only with include_records.
type TimelineItem struct {
	RoomID      string         `json:"room_id"`
	Seq         int64          `json:"seq"`
	EventID     string         `json:"event_id"`
	Type        string         `json:"type"`
	Kind        string         `json:"kind"`
	Actor       string         `json:"actor"`
	CreatedAt   int64          `json:"created_at"`
	ReceivedAt  int64          `json:"received_at"`
	Summary     string         `json:"summary"`
	ContentType string         `json:"content_type,omitzero"`
	Content     jsontext.Value `json:"content,omitzero"`
	Mentions    []string       `json:"mentions,omitzero"`
	References  []string       `json:"references,omitzero"`
	Payload     jsontext.Value `json:"payload"`
	Extra       jsontext.Value `json:"extra,omitzero"`
	Record      jsontext.Value `json:"record,omitzero"`
}

// InboxMessage is an InboxItem's message preview (untrusted room content).
type InboxMessage struct {
	Summary string `json:"summary"`
}

// Inbox item kinds (§4.2 table).
const (
	KindMessageNew    = "room.message.new"
	KindMention       = "room.mention"
	KindTurnAssigned  = "room.turn.assigned"
	KindSteer         = "room.steer"
	KindJoinRequested = "room.join.requested"
	KindJoinApproved  = "room.join.approved"
	KindRoleChanged   = "room.role.changed"
	KindMemberRemoved = "room.member.removed"
	KindStateChanged  = "room.state.changed"
	KindEventCustom   = "room.event.custom"
)

// InboxItem is §4.2's wake-up item. Host is the engine's addition: rooms
// are keyed by (host, room_id).
type InboxItem struct {
	ID               string        `json:"id"`
	Kind             string        `json:"kind"`
	Priority         string        `json:"priority"`
	Host             string        `json:"host"`
	RoomID           string        `json:"room_id"`
	Seq              int64         `json:"seq"`
	EventID          string        `json:"event_id"`
	Actor            string        `json:"actor"`
	CreatedAt        int64         `json:"created_at"`
	RequiresResponse bool          `json:"requires_response"`
	Deadline         *int64        `json:"deadline"`
	Reason           string        `json:"reason"`
	SuggestedTools   []string      `json:"suggested_tools"`
	Message          *InboxMessage `json:"message,omitzero"`
}

// HeldDraft is §4.2's held draft: local state only, never an envelope.
type HeldDraft struct {
	ID          string         `json:"id"`
	Host        string         `json:"host"`
	RoomID      string         `json:"room_id"`
	Kind        string         `json:"kind"`
	CreatedAt   int64          `json:"created_at"`
	BaseSeq     int64          `json:"base_seq"`
	BaseHash    string         `json:"base_hash"`
	CurrentSync SyncState      `json:"current_sync"`
	Draft       jsontext.Value `json:"draft"`
	Reason      string         `json:"reason"`
	Options     []string       `json:"options"`
}

// ActiveTurn is §4.3's current floor assignment (from turn.update).
type ActiveTurn struct {
	TurnID        string `json:"turn_id"`
	Speaker       string `json:"speaker"`
	AssignedSeq   int64  `json:"assigned_seq"`
	ExpiresAt     *int64 `json:"expires_at"`
	Instruction   string `json:"instruction"`
	SourceEventID string `json:"source_event_id"`
}

// RoomSummary is §4.3's room list entry.
type RoomSummary struct {
	RoomID            string   `json:"room_id"`
	Host              string   `json:"host"`
	Topic             string   `json:"topic"`
	Status            string   `json:"status"`
	Visibility        string   `json:"visibility"`
	StartTime         int64    `json:"start_time"`
	EndTime           int64    `json:"end_time"`
	Tags              []string `json:"tags"`
	Language          string   `json:"language"`
	Role              string   `json:"role"`
	UnreadCount       int      `json:"unread_count"`
	PendingInboxCount int      `json:"pending_inbox_count"`
}

// RoomStateView is §4.3's room state: the verified contract plus local
// projections.
type RoomStateView struct {
	Host              string          `json:"host"`
	RoomID            string          `json:"room_id"`
	Status            string          `json:"status"`
	Visibility        string          `json:"visibility"`
	Topic             string          `json:"topic"`
	Agenda            string          `json:"agenda"`
	Guidance          string          `json:"guidance"`
	Creator           string          `json:"creator"`
	CreatedAt         int64           `json:"created_at"`
	StartTime         int64           `json:"start_time"`
	EndTime           int64           `json:"end_time"`
	Tags              []string        `json:"tags"`
	Language          string          `json:"language"`
	Policy            jsontext.Value  `json:"policy"`
	Types             jsontext.Value  `json:"types,omitzero"`
	SelfMember        *RoomMemberView `json:"self_member"`
	MembersCount      int             `json:"members_count"`
	ActiveTurn        *ActiveTurn     `json:"active_turn"`
	UnreadCount       int             `json:"unread_count"`
	PendingInboxCount int             `json:"pending_inbox_count"`
	Seq               int64           `json:"seq"`
	Hash              string          `json:"hash"`
	Head              RecordRefView   `json:"head"`
	// URL is the room URL the host's room resource last named ("" until
	// read; host text).
	URL string `json:"url"`
	// Extra is the room's application data from the verified contract.
	Extra jsontext.Value `json:"extra"`
	// PreHash and ReceivedAt are the latest record's (pre_hash null at
	// seq 1), as in the ADP room resource.
	PreHash    *string `json:"pre_hash"`
	ReceivedAt int64   `json:"received_at"`
}

// RecordRefView names a record (seq, hash).
type RecordRefView struct {
	Seq  int64  `json:"seq"`
	Hash string `json:"hash"`
}

// AgentStatus is §4.3's transient status view.
type AgentStatus struct {
	RoomID    string         `json:"room_id"`
	AgentID   string         `json:"agent_id"`
	State     string         `json:"state"`
	Summary   string         `json:"summary"`
	SeenSeq   int64          `json:"seen_seq"`
	SeenHash  string         `json:"seen_hash"`
	ClaimID   string         `json:"claim_id"`
	Activity  string         `json:"activity"`
	ExpiresAt int64          `json:"expires_at"`
	UpdatedAt int64          `json:"updated_at"`
	Extra     jsontext.Value `json:"extra"`
}

// AgentProtocolsHost is §4.3's host entry.
type AgentProtocolsHost struct {
	Host           string   `json:"host"`
	Label          string   `json:"label"`
	Allowed        bool     `json:"allowed"`
	Features       []string `json:"features"`
	ProfileService string   `json:"profile_service,omitempty"` // absent when none is configured
	LastCheckedAt  int64    `json:"last_checked_at"`
}

// IdentityResult is agent_protocols_identity_current's result.
type IdentityResult struct {
	AgentID   string               `json:"agent_id"`
	PublicKey string               `json:"public_key"`
	Profiles  []string             `json:"profiles"`
	Hosts     []AgentProtocolsHost `json:"hosts"`
}

// HostsResult is agent_protocols_hosts_list's result.
type HostsResult struct {
	Hosts []AgentProtocolsHost `json:"hosts"`
}

// ----- inputs and results, tool by tool -----

// RoomsSearchInput is agent_protocols_rooms_search's input.
type RoomsSearchInput struct {
	Host        string `json:"host"`
	Status      string `json:"status,omitempty"`
	Tag         string `json:"tag,omitempty"`
	Keyword     string `json:"keyword,omitempty"`
	Creator     string `json:"creator,omitempty"`
	StartsAfter int64  `json:"starts_after,omitempty"`
	EndsBefore  int64  `json:"ends_before,omitempty"`
	Language    string `json:"language,omitempty"`
	Limit       int    `json:"limit,omitempty"`
	Cursor      string `json:"cursor,omitempty"`
}

// RoomsListInput is agent_protocols_rooms_list's input.
type RoomsListInput struct {
	Status     string `json:"status,omitempty"`
	Membership string `json:"membership,omitempty"`
	Limit      int    `json:"limit,omitempty"`
	Cursor     string `json:"cursor,omitempty"`
}

// RoomsResult is the result of rooms_search and rooms_list.
type RoomsResult struct {
	Rooms      []RoomSummary `json:"rooms"`
	NextCursor string        `json:"next_cursor,omitzero"`
}

// RoomOpenInput is agent_protocols_room_open's input.
type RoomOpenInput struct {
	Host      string `json:"host"`
	RoomID    string `json:"room_id"`
	Subscribe *bool  `json:"subscribe,omitempty"`
	Refresh   bool   `json:"refresh,omitempty"`
}

// RoomOpenResult is agent_protocols_room_open's result.
type RoomOpenResult struct {
	Room       RoomStateView `json:"room"`
	Sync       SyncState     `json:"sync"`
	ActiveTurn *ActiveTurn   `json:"active_turn,omitzero"`
}

// RoomStateInput is agent_protocols_room_state's input.
type RoomStateInput struct {
	Host         string `json:"host,omitempty"`
	RoomID       string `json:"room_id"`
	Refresh      bool   `json:"refresh,omitempty"`
	IncludeTypes bool   `json:"include_types,omitempty"`
}

// RoomStateResult is agent_protocols_room_state's result.
type RoomStateResult struct {
	Room RoomStateView `json:"room"`
	Sync SyncState     `json:"sync"`
}

// MembersListInput is agent_protocols_room_members_list's input.
type MembersListInput struct {
	Host            string `json:"host,omitempty"`
	RoomID          string `json:"room_id"`
	Status          string `json:"status,omitempty"`
	Role            string `json:"role,omitempty"`
	IncludeProfiles bool   `json:"include_profiles,omitempty"`
	Limit           int    `json:"limit,omitempty"`
	Cursor          string `json:"cursor,omitempty"`
}

// MembersListResult is agent_protocols_room_members_list's result.
type MembersListResult struct {
	Members    []RoomMemberView `json:"members"`
	NextCursor string           `json:"next_cursor,omitzero"`
	Sync       SyncState        `json:"sync"`
}

// MemberGetInput is agent_protocols_room_member_get's input.
type MemberGetInput struct {
	Host                  string `json:"host,omitempty"`
	RoomID                string `json:"room_id"`
	AgentID               string `json:"agent_id"`
	IncludeProfile        bool   `json:"include_profile,omitempty"`
	IncludeRecentActivity bool   `json:"include_recent_activity,omitempty"`
}

// MemberGetResult is agent_protocols_room_member_get's result.
type MemberGetResult struct {
	Member RoomMemberView `json:"member"`
	Recent []TimelineItem `json:"recent,omitzero"`
	Sync   SyncState      `json:"sync"`
}

// AgentStatusListInput is agent_protocols_agent_status_list's input.
type AgentStatusListInput struct {
	Host    string `json:"host,omitempty"`
	RoomID  string `json:"room_id"`
	Refresh bool   `json:"refresh,omitempty"`
}

// AgentStatusListResult is agent_protocols_agent_status_list's result.
type AgentStatusListResult struct {
	Statuses []AgentStatus `json:"statuses"`
	Sync     *SyncState    `json:"sync,omitzero"`
}

// AgentStatusGetInput is agent_protocols_agent_status_get's input.
type AgentStatusGetInput struct {
	Host    string `json:"host,omitempty"`
	RoomID  string `json:"room_id"`
	AgentID string `json:"agent_id"`
	Refresh bool   `json:"refresh,omitempty"`
}

// AgentStatusResult is the result of agent_status_get and agent_status_set.
type AgentStatusResult struct {
	Status *AgentStatus `json:"status,omitzero"`
	Sync   *SyncState   `json:"sync,omitzero"`
}

// AgentStatusSetInput is agent_protocols_agent_status_set's input.
type AgentStatusSetInput struct {
	Host      string         `json:"host,omitempty"`
	RoomID    string         `json:"room_id"`
	State     string         `json:"state"`
	Summary   string         `json:"summary,omitempty"`
	SeenSeq   *int64         `json:"seen_seq,omitempty"`
	SeenHash  string         `json:"seen_hash,omitempty"`
	ClaimID   string         `json:"claim_id,omitempty"`
	Activity  string         `json:"activity,omitempty"`
	ExpiresAt int64          `json:"expires_at,omitempty"`
	Extra     jsontext.Value `json:"extra,omitempty"`
}

// TimelineInput is agent_protocols_room_timeline's input.
type TimelineInput struct {
	Host           string   `json:"host,omitempty"`
	RoomID         string   `json:"room_id"`
	AfterSeq       *int64   `json:"after_seq,omitempty"`
	BeforeSeq      *int64   `json:"before_seq,omitempty"`
	Limit          int      `json:"limit,omitempty"`
	Types          []string `json:"types,omitempty"`
	Actors         []string `json:"actors,omitempty"`
	UnreadOnly     bool     `json:"unread_only,omitempty"`
	MarkRead       bool     `json:"mark_read,omitempty"`
	Refresh        bool     `json:"refresh,omitempty"`
	IncludeRecords bool     `json:"include_records,omitempty"`
}

// TimelineResult is agent_protocols_room_timeline's result.
type TimelineResult struct {
	Items        []TimelineItem `json:"items"`
	Sync         SyncState      `json:"sync"`
	NextAfterSeq *int64         `json:"next_after_seq,omitzero"`
}

// MarkReadInput is agent_protocols_room_mark_read's input.
type MarkReadInput struct {
	Host       string `json:"host,omitempty"`
	RoomID     string `json:"room_id"`
	ThroughSeq int64  `json:"through_seq"`
}

// MarkReadResult is agent_protocols_room_mark_read's result.
type MarkReadResult struct {
	RoomID      string     `json:"room_id"`
	ReadSeq     int64      `json:"read_seq"`
	UnreadCount int        `json:"unread_count"`
	Sync        *SyncState `json:"sync,omitzero"`
}

// InboxNextInput is agent_protocols_inbox_next's input.
type InboxNextInput struct {
	Host   string   `json:"host,omitempty"`
	RoomID string   `json:"room_id,omitempty"`
	Kinds  []string `json:"kinds,omitempty"`
	Limit  int      `json:"limit,omitempty"`
	WaitMS int64    `json:"wait_ms,omitempty"`
	Claim  bool     `json:"claim,omitempty"`
}

// InboxNextResult is agent_protocols_inbox_next's result.
type InboxNextResult struct {
	Items        []InboxItem `json:"items"`
	PendingCount int         `json:"pending_count"`
	// Sync is the room's, when room_id filtered the items (§4.2 SHOULD).
	Sync *SyncState `json:"sync,omitzero"`
}

// Inbox ack actions.
const (
	AckHandled   = "handled"
	AckDismissed = "dismissed"
	AckDefer     = "defer"
)

// InboxAckInput is agent_protocols_inbox_ack's input.
type InboxAckInput struct {
	IDs        []string `json:"ids"`
	Action     string   `json:"action"`
	DeferUntil int64    `json:"defer_until,omitempty"`
}

// InboxAckResult is agent_protocols_inbox_ack's result.
type InboxAckResult struct {
	Acknowledged []string `json:"acknowledged"`
	PendingCount int      `json:"pending_count"`
}

// DraftsListInput is agent_protocols_drafts_list's input.
type DraftsListInput struct {
	Host   string `json:"host,omitempty"`
	RoomID string `json:"room_id,omitempty"`
	Limit  int    `json:"limit,omitempty"`
	Cursor string `json:"cursor,omitempty"`
}

// DraftsListResult is agent_protocols_drafts_list's result.
type DraftsListResult struct {
	Drafts     []HeldDraft `json:"drafts"`
	NextCursor string      `json:"next_cursor,omitzero"`
	// Sync is the room's, when room_id filtered the drafts (§4.2 SHOULD).
	Sync *SyncState `json:"sync,omitzero"`
}

// DraftGetResult is agent_protocols_draft_get's result.
type DraftGetResult struct {
	Draft   HeldDraft      `json:"draft"`
	Changes []TimelineItem `json:"changes"`
	Sync    SyncState      `json:"sync"`
}

// Draft commit actions and head-mismatch policies.
const (
	ActionRevise     = "revise"
	ActionSendAsIs   = "send_as_is"
	ActionStaySilent = "stay_silent"
	ActionSendAnyway = "send_anyway"

	OnMismatchHold       = "hold"
	OnMismatchReject     = "reject"
	OnMismatchSendAnyway = "send_anyway"
)

// DraftCommitInput is agent_protocols_draft_commit's input. For revise,
// the set fields replace the draft's.
type DraftCommitInput struct {
	DraftID        string         `json:"draft_id"`
	Action         string         `json:"action"`
	Content        *string        `json:"content,omitempty"`
	ContentType    string         `json:"content_type,omitempty"`
	Mentions       []string       `json:"mentions,omitempty"`
	References     []string       `json:"references,omitempty"`
	Extra          jsontext.Value `json:"extra,omitempty"`
	Type           string         `json:"type,omitempty"`
	Payload        jsontext.Value `json:"payload,omitempty"`
	BaseSeq        *int64         `json:"base_seq,omitempty"`
	BaseHash       string         `json:"base_hash,omitempty"`
	OnHeadMismatch string         `json:"on_head_mismatch,omitempty"`
}

// DraftDropResult is agent_protocols_draft_drop's result (also the
// stay_silent answer of DraftCommit, as WriteResult.Status "dropped").
type DraftDropResult struct {
	Status       string `json:"status"`
	DraftID      string `json:"draft_id"`
	PendingCount int    `json:"pending_count"`
}

// SendMessageInput is agent_protocols_room_send_message's input.
type SendMessageInput struct {
	Host           string         `json:"host,omitempty"`
	RoomID         string         `json:"room_id"`
	Content        string         `json:"content"`
	ContentType    string         `json:"content_type,omitempty"`
	Mentions       []string       `json:"mentions,omitempty"`
	References     []string       `json:"references,omitempty"`
	Extra          jsontext.Value `json:"extra,omitempty"`
	BaseSeq        *int64         `json:"base_seq,omitempty"`
	BaseHash       string         `json:"base_hash,omitempty"`
	OnHeadMismatch string         `json:"on_head_mismatch,omitempty"`
}

// SubmitEventInput is agent_protocols_room_submit_event's input.
type SubmitEventInput struct {
	Host           string         `json:"host,omitempty"`
	RoomID         string         `json:"room_id"`
	Type           string         `json:"type"`
	Payload        jsontext.Value `json:"payload"`
	Mentions       []string       `json:"mentions,omitempty"`
	References     []string       `json:"references,omitempty"`
	BaseSeq        *int64         `json:"base_seq,omitempty"`
	BaseHash       string         `json:"base_hash,omitempty"`
	OnHeadMismatch string         `json:"on_head_mismatch,omitempty"`
}

// Write statuses.
const (
	StatusSent     = "sent"
	StatusHeld     = "held"
	StatusRejected = "rejected"
	StatusDropped  = "dropped"
)

// WriteResult is the result of send_message, submit_event and
// draft_commit. Record is the accepted server record.
type WriteResult struct {
	Status  string         `json:"status"`
	Record  jsontext.Value `json:"record,omitzero"`
	Item    *TimelineItem  `json:"item,omitzero"`
	Draft   *HeldDraft     `json:"draft,omitzero"`
	Changes []TimelineItem `json:"changes,omitzero"`
	Sync    SyncState      `json:"sync"`
}

// ProfileUpdateInput is agent_protocols_profile_update's input.
type ProfileUpdateInput struct {
	ProfileService string         `json:"profile_service"`
	Profile        jsontext.Value `json:"profile"`
}

// ProfileUpdateResult is agent_protocols_profile_update's result.
type ProfileUpdateResult struct {
	Profile  jsontext.Value `json:"profile"`
	Envelope jsontext.Value `json:"envelope"`
}

// RoomCreateInput is agent_protocols_room_create's input.
type RoomCreateInput struct {
	Host       string           `json:"host"`
	Topic      string           `json:"topic"`
	Visibility string           `json:"visibility"`
	StartTime  int64            `json:"start_time"`
	EndTime    int64            `json:"end_time"`
	Agenda     string           `json:"agenda,omitempty"`
	Guidance   string           `json:"guidance,omitempty"`
	Tags       []string         `json:"tags,omitempty"`
	Language   string           `json:"language,omitempty"`
	Policy     jsontext.Value   `json:"policy,omitempty"`
	Types      []jsontext.Value `json:"types,omitempty"`
}

// RoomCreateResult is agent_protocols_room_create's result.
type RoomCreateResult struct {
	Room     RoomStateView  `json:"room"`
	Envelope jsontext.Value `json:"envelope"`
	Sync     SyncState      `json:"sync"`
}

// RoomJoinInput is agent_protocols_room_join's input.
type RoomJoinInput struct {
	Host        string         `json:"host,omitempty"`
	RoomID      string         `json:"room_id"`
	Role        string         `json:"role"`
	Perspective string         `json:"perspective,omitempty"`
	Reason      string         `json:"reason,omitempty"`
	RequestID   string         `json:"request_id,omitempty"`
	Extra       jsontext.Value `json:"extra,omitempty"`
}

// RoomJoinResult is agent_protocols_room_join's result.
type RoomJoinResult struct {
	Status      string          `json:"status"`
	Record      jsontext.Value  `json:"record,omitzero"`
	Member      *RoomMemberView `json:"member,omitzero"`
	JoinRequest jsontext.Value  `json:"join_request,omitzero"`
	Sync        *SyncState      `json:"sync,omitzero"`
}

// RoomLeaveInput is agent_protocols_room_leave's input.
type RoomLeaveInput struct {
	Host   string `json:"host,omitempty"`
	RoomID string `json:"room_id"`
	Reason string `json:"reason,omitempty"`
}

// RecordResult is the result of room_leave and join_request_review.
type RecordResult struct {
	Record jsontext.Value `json:"record"`
	Sync   SyncState      `json:"sync"`
}

// JoinRequestsListInput is agent_protocols_join_requests_list's input.
type JoinRequestsListInput struct {
	Host   string `json:"host,omitempty"`
	RoomID string `json:"room_id"`
	Status string `json:"status,omitempty"`
	Limit  int    `json:"limit,omitempty"`
	Cursor string `json:"cursor,omitempty"`
}

// JoinRequestsListResult is agent_protocols_join_requests_list's result.
type JoinRequestsListResult struct {
	JoinRequests []jsontext.Value `json:"join_requests"`
	NextCursor   string           `json:"next_cursor,omitzero"`
	Sync         *SyncState       `json:"sync,omitzero"`
}

// JoinReviewInput is agent_protocols_join_request_review's input.
type JoinReviewInput struct {
	Host      string `json:"host,omitempty"`
	RoomID    string `json:"room_id"`
	RequestID string `json:"request_id"`
	Decision  string `json:"decision"`
	Role      string `json:"role,omitempty"`
	Reason    string `json:"reason,omitempty"`
}
