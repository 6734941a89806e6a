package sse

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

// The SSE event names of §17.
const (
	EventRecord      = "room.event"
	EventAgentStatus = "room.agent_status"
	EventJoinRequest = "room.join_request"
)

// Defaults for Options.
const (
	// DefaultIdleTimeout is how long a connection may stay silent (no
	// data, no heartbeat comment) before the client reconnects.
	DefaultIdleTimeout = 60 * time.Second
	// DefaultMaxEventSize bounds one SSE event: the largest record a host
	// may accept (a 256 KiB hinted payload) with room for its envelope.
	DefaultMaxEventSize = 1 << 20
	// DefaultMaxPending bounds the live records held while a gap before
	// them is filled from the history.
	DefaultMaxPending = 1024
	// DefaultMaxPendingBytes bounds the wire size of those records.
	DefaultMaxPendingBytes = 16 << 20
	// DefaultMaxFailedSyncs is how many consecutive history backfills may
	// fail verification before the subscription gives up.
	DefaultMaxFailedSyncs = 5
)

// History pages a room's accepted records with seq > afterSeq in
// ascending seq order (GET /v1/rooms/{room_id}/events?after_seq=, §16). The
// ADP HTTP client provides one; tests may serve a store directly. An error
// that is an *identity.Error with HTTP status 401, 403 or 404 ends the
// subscription; an *identity.Error without a status (the History refused
// a record it verified itself) counts as a failed verification; any other
// error is retried with backoff. The client verifies every record History
// returns, whether or not History verified it first.
type History interface {
	Records(ctx context.Context, roomID string, afterSeq int64) iter.Seq2[*adp.Record, error]
}

// HistoryFunc adapts a function to History.
type HistoryFunc func(ctx context.Context, roomID string, afterSeq int64) iter.Seq2[*adp.Record, error]

// Records calls f.
func (f HistoryFunc) Records(ctx context.Context, roomID string, afterSeq int64) iter.Seq2[*adp.Record, error] {
	return f(ctx, roomID, afterSeq)
}

// Backoff is the reconnect schedule: the delay starts at Initial, grows by
// Multiplier up to Max, and each delay is drawn uniformly within ±Jitter of
// it. A successful connection starts the schedule over. Zero fields take
// the defaults 500 ms, ×2, 30 s and 0.5.
type Backoff struct {
	Initial    time.Duration
	Max        time.Duration
	Multiplier float64
	Jitter     float64 // in (0, 1)
}

func (b Backoff) withDefaults() Backoff {
	if b.Initial <= 0 {
		b.Initial = 500 * time.Millisecond
	}
	if b.Max <= 0 {
		b.Max = 30 * time.Second
	}
	if b.Max < b.Initial {
		b.Max = b.Initial
	}
	if b.Multiplier < 1 {
		b.Multiplier = 2
	}
	if b.Jitter <= 0 || b.Jitter >= 1 {
		b.Jitter = 0.5
	}
	return b
}

// Options configures Follow. RoomID (or Replica) is required, and so are
// API, Signer and History unless Client is set.
type Options struct {
	// Client, when set, is the adp.Client of the agent that follows: the
	// fields left zero of API (its origin + "/v1"), Signer, History (its
	// verified Events), HTTPClient, Origins and Mint's clock are taken
	// from it, so the stream and its backfill use one key, one transport
	// and one clock.
	Client *adp.Client
	// API is the host API base URL, for example "https://api.al.ink/v1"
	// (discovery's endpoints.sse); the stream is API +
	// "/rooms/{room_id}/events/live".
	API string
	// RoomID is the room to follow.
	RoomID string
	// Signer is the member whose request tokens authenticate the stream; a
	// fresh token is minted for every connection attempt.
	Signer identity.Signer
	// History pages the accepted records (§17.3: history comes from HTTP).
	History History

	// Replica, when set, is the room's verified state (adp.Replica): every
	// record is admitted to it — judged by every room rule (§6–§15) and
	// persisted by its Admitted hook — before it is delivered, and the
	// records after its latest one are delivered. RoomID may then be
	// empty, and Start is ignored. With Client set it must be the client's
	// replica of the room (Client.Replica), so that the backfill and the
	// live records verify into one state; a record the client or the
	// replica already verified (a write's own record, a page another
	// reader fetched) is matched to it, not verified again.
	//
	// Without Replica the client checks what needs no room state — the
	// envelope's hash and signature, the record hash, the pre_hash link,
	// that the event was signed for this room and that room.create comes
	// first — and holds only the last record, so its memory stays flat.
	// What only the rules catch (a validly signed event from a non-member,
	// an envelope accepted twice) then goes unnoticed unless History
	// checks it (the adp.Client's history does).
	Replica *adp.Replica
	// Draft is the ADP draft of the room's records (accepted_at in the
	// 2026-09-24 draft, received_at in the seed). It is taken from
	// Replica when set, else from Client (the draft its host serves,
	// read from the host's discovery document if the client has not
	// learned it yet); a Draft set here must agree with theirs. The zero
	// Draft, with neither, is the default draft.
	Draft adp.Draft
	// Start is the last record the caller already verified, without a
	// Replica; the client delivers the records after it, checking the
	// first one's pre_hash against Start.Hash. The zero value starts at
	// seq 1.
	Start adp.RecordRef

	// HTTPClient performs the requests; its Transport is used (nil means
	// http.DefaultTransport) and its Timeout is ignored, since a stream
	// lives for as long as it is healthy: IdleTimeout bounds silence
	// instead.
	HTTPClient *http.Client
	// Origins configures the token audience computed from API; set
	// AllowLoopbackHTTP to follow a local development host.
	Origins *identity.OriginOptions
	// Mint configures the request tokens (TTL and clock); nil means
	// defaults.
	Mint *identity.MintOptions
	// IdleTimeout is how long a connection may stay silent before the
	// client reconnects; 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// Backoff is the reconnect and resync schedule.
	Backoff Backoff
	// MaxEventSize bounds one SSE event; 0 means DefaultMaxEventSize.
	MaxEventSize int
	// MaxPending bounds the live records held while a gap is filled; 0
	// means DefaultMaxPending. Records beyond it are dropped and read from
	// the history later.
	MaxPending int
	// MaxPendingBytes bounds their total wire size; 0 means
	// DefaultMaxPendingBytes. With MaxEventSize and the two batches (at
	// most 64 events or 1 MiB each, plus one event) queued between the
	// reading goroutine and the ordered stage, it bounds what a hostile
	// stream can make the subscriber hold.
	MaxPendingBytes int
	// MaxFailedSyncs is how many consecutive backfills may fail because
	// the history itself does not verify before Follow ends with the
	// verification error; 0 means DefaultMaxFailedSyncs.
	MaxFailedSyncs int
}

// Kind tells what an Item carries.
type Kind uint8

// The kinds of Item.
const (
	// KindRecord is a verified accepted record (room.event).
	KindRecord Kind = iota + 1
	// KindAgentStatus is a transient agent status (room.agent_status).
	KindAgentStatus
	// KindJoinRequest is a join-request notice (room.join_request).
	KindJoinRequest
	// KindError is a problem the subscription recovered from: a record
	// that failed verification and was dropped, a malformed item, a lost
	// connection being retried. Err says which.
	KindError
)

// String returns the kind's name.
func (k Kind) String() string {
	switch k {
	case KindRecord:
		return "record"
	case KindAgentStatus:
		return "agent_status"
	case KindJoinRequest:
		return "join_request"
	case KindError:
		return "error"
	}
	return "unknown"
}

// Item is one thing Follow delivers; exactly one of Record, AgentStatus,
// JoinRequest and Err is set, as Kind says. AgentStatus (§17.4) is an
// unsigned, short-lived hint from the host, never a record and never
// evidence for verification or permissions; JoinRequest (§17.5) is a
// notice to reviewers that a request was created — the authoritative list
// stays GET /v1/rooms/{room_id}/join-requests. Both are the adp types the
// host sends, parsed strictly as JSON; members the SDK does not know are
// kept in their Unknown field.
type Item struct {
	Kind        Kind
	Record      *adp.Record
	AgentStatus *adp.AgentStatus
	JoinRequest *adp.JoinRequestNotice
	Err         error
}

// ErrNotice is the cause of a KindError item for a notice that was
// malformed or carried record members (seq, pre_hash, hash, envelope),
// which §17.4 and §17.5 forbid.
var ErrNotice = errors.New("sse: malformed notice")

// recordMembers are the members a notice must not carry (§17.4, §17.5).
type recordMembers struct {
	Seq      jsontext.Value `json:"seq"`
	PreHash  jsontext.Value `json:"pre_hash"`
	Hash     jsontext.Value `json:"hash"`
	Envelope jsontext.Value `json:"envelope"`
}

func (m *recordMembers) present() bool {
	return m.Seq != nil || m.PreHash != nil || m.Hash != nil || m.Envelope != nil
}

func parseAgentStatus(roomID string, data []byte) (*adp.AgentStatus, error) {
	var v struct {
		adp.AgentStatus
		recordMembers
	}
	if err := strictjson.UnmarshalOpen(data, &v); err != nil {
		return nil, errors.Join(ErrNotice, err)
	}
	if err := checkNotice(roomID, v.RoomID, &v.recordMembers); err != nil {
		return nil, err
	}
	if v.AgentID.IsZero() || v.State == "" {
		return nil, errors.Join(ErrNotice, errors.New("room.agent_status needs agent_id and state"))
	}
	return &v.AgentStatus, nil
}

func parseJoinRequest(roomID string, data []byte) (*adp.JoinRequestNotice, error) {
	var v struct {
		adp.JoinRequestNotice
		recordMembers
	}
	if err := strictjson.UnmarshalOpen(data, &v); err != nil {
		return nil, errors.Join(ErrNotice, err)
	}
	if err := checkNotice(roomID, v.RoomID, &v.recordMembers); err != nil {
		return nil, err
	}
	if v.RequestID == "" || v.Applicant.IsZero() {
		return nil, errors.Join(ErrNotice, errors.New("room.join_request needs request_id and applicant"))
	}
	return &v.JoinRequestNotice, nil
}

func checkNotice(want, got string, m *recordMembers) error {
	if m.present() {
		return errors.Join(ErrNotice, errors.New("a notice must not carry seq, pre_hash, hash or envelope"))
	}
	if got != want {
		return errors.Join(ErrNotice, errors.New("notice room_id is not the followed room"))
	}
	return nil
}
