package adphost

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentprotocols/go-sdk/internal/groupcommit"
	"github.com/agentprotocols/go-sdk/internal/untrusted"

	"github.com/go-json-experiment/json"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/packs"
)

// Options configures a Host. A nil *Options means defaults, except that
// Origin has no default: New requires it (NewServer fills it in).
type Options struct {
	// Origin is the public origin of the host API: the audience every
	// request JWT must name, and the origin of every URL the host
	// announces (discovery, room URLs, archive formats). In the
	// 2026-09-24 draft it is the discovery document's service and the
	// host every room.create must name (§8.1, host_mismatch).
	Origin identity.Origin
	// Draft is the ADP draft the host serves, for every room and endpoint;
	// the zero Draft is the seed draft, 2026-07-04. See the package
	// documentation for what the 2026-09-24 draft changes.
	Draft adp.Draft
	// Store holds the host's state; nil means a new MemoryStore.
	Store Store
	// Now is the clock that drives the live-write window, token checks,
	// received_at and the scheduled → active → ended transitions; nil
	// means time.Now.
	Now func() time.Time
	// Window is the live-write window; 0 means envelope.DefaultWindow.
	Window time.Duration
	// StatusTTL is the longest life of an agent status (§17.4); 0 or
	// anything above MaxStatusTTL means MaxStatusTTL.
	StatusTTL time.Duration
	// JoinRequestTTL is how long a join request stays valid; 0 means one
	// hour.
	JoinRequestTTL time.Duration
	// RateLimits are the per-agent quotas (§21); nil means
	// DefaultRateLimits.
	RateLimits *RateLimits
	// Heartbeat is the interval of SSE heartbeat comments; 0 means 15 s,
	// negative means none.
	Heartbeat time.Duration
	// Packs configures every room's type registry (external pack fetcher);
	// nil refuses external packs.
	Packs *packs.Options
	// MaxPayloadBytes is the payload limit (§21); 0 means
	// adp.MaxPayloadBytes.
	MaxPayloadBytes int
	// NewRoomID returns a fresh room ID; nil means a random 20-character
	// lowercase base32 ID (the shape of an Xid, §7.1).
	NewRoomID func() string
	// MaxStreams bounds the live streams one agent may hold open on one
	// room; 0 means 4. A further subscription is refused with
	// rate_limited.
	MaxStreams int
	// MaxPendingJoinRequests bounds a room's pending join requests; 0
	// means 1000. A further request is refused with rate_limited.
	MaxPendingJoinRequests int
	// NewRequestID returns a fresh join-request ID; nil means "jr_" and 26
	// random base32 characters.
	NewRequestID func() string
	// MaxPageBytes budgets every list page (events, join requests, room
	// lists) by the bytes of its items, besides the count: a page stops
	// before the item that would pass the budget and names next_cursor
	// (it always holds one item). 0 means DefaultMaxPageBytes. A client's
	// response bound (32 MiB by default) must not be the only thing
	// between a room of large legal records and its readers. The Store
	// stops reading records at the budget too (Store.Records), so a page
	// costs the host memory in proportion to it, not to its limit; and
	// so does every other read of a log (a room's load and catch-up, the
	// archive).
	MaxPageBytes int
	// MinRoomDuration and MaxRoomDuration bound a room's schedule
	// (end_time − start_time) at room.create and room.update; 0 means the
	// §21 recommendation, DefaultMinRoomDuration (10 minutes) and
	// DefaultMaxRoomDuration (7 days), and a negative value means no
	// bound. A room outside the range is refused with invalid_event.
	MinRoomDuration, MaxRoomDuration time.Duration
	// MaxSpeakers and MaxObservers cap a room's active speaking members
	// (moderators and speakers, as policy.max_speakers counts them) and
	// observers, whatever the room's policy says; 0 means the §21
	// recommendation, DefaultMaxSpeakers (100) and DefaultMaxObservers
	// (1000), and a negative value means no cap. One more is refused with
	// max_speakers_exceeded or role_not_allowed.
	MaxSpeakers, MaxObservers int
	// BodyTimeout bounds the time a request body (a write, a join
	// request, a status) may take to arrive, from the start of the
	// handler, through http.ResponseController: a client that drips its
	// body is cut off. 0 means DefaultBodyTimeout (30 s); negative means
	// none. It runs on the wall clock, not Now. The server's own
	// ReadHeaderTimeout bounds the headers (see cmd/adphost).
	BodyTimeout time.Duration
	// StreamWriteTimeout bounds the write of each live-stream item
	// (event, notice or heartbeat); a reader that stops reading is
	// dropped when it passes, and resumes from the history. 0 means
	// DefaultStreamWriteTimeout (10 s); negative means none.
	StreamWriteTimeout time.Duration
	// MaxAgentStreams bounds the live streams one agent holds open on the
	// whole host, MaxLiveStreams those of everyone (both per process); 0
	// means DefaultMaxAgentStreams (16) and DefaultMaxLiveStreams (1000).
	// A further subscription is refused with rate_limited, except that
	// the total is shared among rooms: once it is reached, a new stream
	// takes the place of an observer's if it is a room's creator's or
	// speaker's, or else of one of its kind in a room holding two more
	// streams than its own (which ends, its client resuming from the
	// history).
	MaxAgentStreams, MaxLiveStreams int
	// SSEBuffer is how many items a live subscriber may fall behind before
	// the host drops it (the client resumes from history); 0 means 256.
	SSEBuffer int
	// RoomCache bounds the rooms whose state is kept in memory, least
	// recently used out; 0 means 1000. Rooms with live subscribers stay
	// beyond the bound. An evicted room is rebuilt on its next use from its
	// newest stored snapshot and the records after it.
	RoomCache int
	// SnapshotEvery is how many records apart a room's first snapshots
	// are stored; 0 means 100, negative means never (rooms are then
	// rebuilt from seq 1). A snapshot grows with its room, so in a room of
	// more than 16×SnapshotEvery records the distance grows with the room,
	// staying between an eighth and a quarter of its length.
	SnapshotEvery int
	// AppendDeadline bounds how long a write keeps retrying while other
	// processes sharing the Store keep winning its room's append race; 0
	// means 2 s. After it the write is refused with rate_limited and
	// Retry-After: 1.
	AppendDeadline time.Duration
	// RepairInterval is how often rooms with live subscribers are checked
	// against a shared Store (one that implements Notifier) for records a
	// lost notification did not announce; 0 means 1 s.
	RepairInterval time.Duration
	// Logger receives the failures the host answers without detail
	// (a Store that fails, a stored snapshot that does not load, a
	// replica dropped); nil discards them.
	Logger *slog.Logger
}

// The defaults of the host's time and stream bounds (Options).
const (
	DefaultBodyTimeout        = 30 * time.Second
	DefaultStreamWriteTimeout = 10 * time.Second
	DefaultMaxAgentStreams    = 16
	DefaultMaxLiveStreams     = 1000
)

// DefaultMaxPageBytes is the default Options.MaxPageBytes: 8 MiB, a
// quarter of the SDK client's default response bound.
const DefaultMaxPageBytes = 8 << 20

// MaxStatusTTL is the recommended maximum agent-status TTL (§17.4).
const MaxStatusTTL = 300 * time.Second

// Host is the reference ADP host (seed draft 2026-07-04, or the draft
// Options.Draft names) as an http.Handler: every endpoint of §16–§18 on top of the adp.Room rule
// table, with the live-write checks of envelope.Verifier. It is meant for
// tests, development (cmd/adphost) and hosts of many processes on one
// database (adphost/pgstore).
//
// The Store is the truth; rooms in memory are a bounded cache of replicas
// (Options.RoomCache), loaded on first use from a snapshot and the records
// after it. Writes to one room are serialized within the process; the head
// precondition, seq and received_at (never decreasing) are assigned under
// the room's lock, and the record is appended to the Store before anyone
// sees it. When the Store's log is ahead of the replica (another process
// appended), the replica catches up and the write is judged again, so a
// valid write is never refused for a race it lost. A Host is safe for
// concurrent use.
type Host struct {
	origin     identity.Origin
	store      Store
	now        func() time.Time
	window     time.Duration
	statusTTL  time.Duration
	jrTTL      time.Duration
	heartbeat  time.Duration
	sseBuffer  int
	maxPending int
	pageBytes  int
	roomLimits roomLimits
	bodyTime   time.Duration // 0: none
	writeTime  time.Duration // 0: none
	streams    streamCounts
	roomOpts   adp.RoomOptions
	draft      adp.Draft // never zero
	newID      func() string
	newReqID   func() string
	limits     RateLimits
	verifier   *envelope.Verifier
	mux        *http.ServeMux
	snapEvery  int
	deadline   time.Duration
	repair     time.Duration
	stop       context.CancelFunc
	bg         sync.WaitGroup
	shared     bool         // the Store is a Notifier: other processes append too
	rendered   atomic.Int64 // live-stream items rendered (live.go)
	log        *slog.Logger

	mu    sync.Mutex
	cache *roomCache
}

// hostRoom is one room's in-memory state.
type hostRoom struct {
	id string
	mu sync.Mutex // serializes writes and archive building
	// room is the replica; it is read and changed only under mu (current
	// returns it).
	room    *adp.Room
	archive *builtArchive
	// reg is the room's type registry, refreshed when a record changes it
	// (room.create, type.define): Room.Registry returns a copy, too dear
	// to take on every write for the rate class.
	reg *packs.Registry
	// ix is the room's index entry as of the replica's latest record,
	// without members; nil when it must be rebuilt. Held under mu.
	ix *RoomIndex
	// loaded is closed once room is set (or loadErr).
	loaded  chan struct{}
	loadErr error
	elem    *cacheElem
	// kicked is set while a catch-up for a notification is scheduled.
	kicked atomic.Bool
	// seq is the replica's latest seq, written under mu whenever the
	// replica changes, for the lock-free staleness check of refresh.
	seq atomic.Int64
	// unsure is set when an append failed without a verdict: the Store
	// may have stored it, so the replica may be behind, and its next use
	// reads the Store's head first, whatever the Store.
	unsure atomic.Bool
	// dropped is set when the replica left the cache because it could
	// not be put back in line with the Store; writers that held it are
	// answered service_unavailable, and the next lookup loads it afresh.
	dropped atomic.Bool
	// pins counts the writes between their lookup and their answer; a
	// pinned room is not evicted (Host.mu guards it), so that a write's
	// record never lands on a replica a newer one has replaced.
	pins int

	subMu sync.Mutex
	subs  map[*subscriber]struct{}

	// writes is the room's group commit (a BatchAppender store): the
	// writes that wait while a batch is judged and appended, each judged
	// and appended by the next.
	writes groupcommit.Queue[*roomWrite]
}

// New returns a Host that serves opts.Origin. It loads no room: rooms are
// loaded on first use. With a Store that implements Notifier, New starts
// the listener of other processes' appends; Close stops it.
func New(ctx context.Context, opts *Options) (*Host, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Origin.IsZero() {
		return nil, errors.New("adphost: Options.Origin is required")
	}
	if !o.Draft.OrDefault().Known() {
		return nil, fmt.Errorf("adphost: Options.Draft %d is no ADP draft", o.Draft)
	}
	h := &Host{
		origin: o.Origin, store: o.Store, now: o.Now, window: o.Window, statusTTL: o.StatusTTL,
		jrTTL: o.JoinRequestTTL, heartbeat: o.Heartbeat, sseBuffer: o.SSEBuffer, newID: o.NewRoomID,
		log: o.Logger,
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.store == nil {
		h.store = NewMemoryStore()
	}
	if h.now == nil {
		h.now = time.Now
	}
	if h.window <= 0 {
		h.window = envelope.DefaultWindow
	}
	if h.statusTTL <= 0 || h.statusTTL > MaxStatusTTL {
		h.statusTTL = MaxStatusTTL
	}
	if h.jrTTL <= 0 {
		h.jrTTL = time.Hour
	}
	if h.heartbeat == 0 {
		h.heartbeat = 15 * time.Second
	}
	if h.sseBuffer <= 0 {
		h.sseBuffer = 256
	}
	h.roomLimits = newRoomLimits(&o)
	h.bodyTime, h.writeTime = orDefault(o.BodyTimeout, DefaultBodyTimeout), orDefault(o.StreamWriteTimeout, DefaultStreamWriteTimeout)
	h.streams = newStreamCounts(cmp.Or(max(o.MaxStreams, 0), 4), cmp.Or(max(o.MaxAgentStreams, 0), DefaultMaxAgentStreams),
		cmp.Or(max(o.MaxLiveStreams, 0), DefaultMaxLiveStreams))
	h.pageBytes = cmp.Or(max(o.MaxPageBytes, 0), DefaultMaxPageBytes)
	h.maxPending = cmp.Or(max(o.MaxPendingJoinRequests, 0), 1000)
	if h.newID == nil {
		h.newID = randomRoomID
	}
	h.newReqID = o.NewRequestID
	if h.newReqID == nil {
		h.newReqID = randomRequestID
	}
	h.limits = DefaultRateLimits()
	if o.RateLimits != nil {
		h.limits = o.RateLimits.withDefaults()
	}
	h.draft = o.Draft.OrDefault()
	h.roomOpts = adp.RoomOptions{Packs: o.Packs, JoinRequests: joinRequests{h}, MaxPayloadBytes: o.MaxPayloadBytes, Draft: h.draft}
	if h.laterDraft() {
		// room.create is bound to this host (2026-09-24 §8.1); a loopback
		// development origin is the host's own, so it may be named.
		h.roomOpts.Host = h.origin.String()
		h.roomOpts.AllowLoopbackHTTP = h.origin.Scheme() == "http"
	}
	h.verifier = envelope.NewVerifier(&envelope.VerifierOptions{Window: h.window, History: history{h.store}, Now: h.now})
	h.snapEvery, h.deadline, h.repair = cmp.Or(o.SnapshotEvery, 100), cmp.Or(o.AppendDeadline, 2*time.Second), cmp.Or(o.RepairInterval, time.Second)
	h.cache = newRoomCache(cmp.Or(max(o.RoomCache, 0), 1000))
	h.routes()
	h.startListening()
	return h, nil
}

// orDefault is d for 0, none (0) for a negative value, else v.
func orDefault(v, d time.Duration) time.Duration {
	switch {
	case v == 0:
		return d
	case v < 0:
		return 0
	}
	return v
}

// Draft returns the ADP draft the host serves.
func (h *Host) Draft() adp.Draft { return h.draft }

// laterDraft reports whether the host serves a draft with signed join
// requests, policy joins and the Identity-shaped documents (2026-09-24).
func (h *Host) laterDraft() bool { return h.draft != adp.Draft20260704 }

// Origin returns the origin the host announces and requires as JWT aud.
func (h *Host) Origin() identity.Origin { return h.origin }

// API returns the API base URL, origin + "/v1".
func (h *Host) API() string { return h.origin.String() + "/v1" }

// RoomURL returns the canonical URL of a room (§7.2).
func (h *Host) RoomURL(id string) string { return h.API() + "/rooms/" + id }

// ServeHTTP implements http.Handler.
func (h *Host) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header()["X-Content-Type-Options"] = hdrNosniff // canonical: Set's work is not needed
	if h.bodyTime > 0 && r.Method != http.MethodGet && r.Method != http.MethodHead && canDeadline(w) {
		// Where the server supports it (not a test recorder); a body
		// read past the deadline fails, and readBody says so.
		http.NewResponseController(w).SetReadDeadline(time.Now().Add(h.bodyTime))
	}
	h.mux.ServeHTTP(w, r)
}

// canDeadline reports whether http.ResponseController can set w's read
// deadline: w has the method or wraps a writer (which may). For any other
// writer (a test recorder) the controller would only build an
// ErrNotSupported error, on every write.
func canDeadline(w http.ResponseWriter) bool {
	switch w.(type) {
	case interface{ SetReadDeadline(time.Time) error }, interface{ Unwrap() http.ResponseWriter }:
		return true
	}
	return false
}

func (h *Host) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET "+adp.DiscoveryPathADP, h.discovery)
	m.HandleFunc("POST /v1/rooms", h.createRoom)
	m.HandleFunc("POST /v1/rooms/{room_id}", func(w http.ResponseWriter, r *http.Request) { h.postEvent(w, r, r.PathValue("room_id")) })
	m.HandleFunc("POST /v1/rooms/{room_id}/join-requests", h.createJoinRequest)
	m.HandleFunc("GET /v1/rooms/{room_id}/join-requests", h.listJoinRequests)
	m.HandleFunc("GET /v1/rooms/{room_id}/join-requests/{request_id}", h.getJoinRequest)
	if h.laterDraft() {
		m.HandleFunc("GET /v1/rooms", h.laterRooms) // public discovery (2026-09-24 §17)
	} else {
		m.HandleFunc("GET /v1/rooms/public", h.publicRooms)
	}
	m.HandleFunc("GET /v1/rooms/{room_id}", h.getRoom)
	m.HandleFunc("GET /v1/rooms/{room_id}/events", h.listEvents)
	m.HandleFunc("GET /v1/rooms/{room_id}/events/live", h.live)
	m.HandleFunc("GET /v1/rooms/{room_id}/agent-status", h.listStatuses)
	m.HandleFunc("GET /v1/rooms/{room_id}/agent-status/{agent_id}", h.getStatus)
	m.HandleFunc("PUT /v1/rooms/{room_id}/agent-status", h.putStatus)
	m.HandleFunc("GET /v1/rooms/{room_id}/archive", h.getArchive)
	m.HandleFunc("GET /v1/rooms/{room_id}/archive.jsonl", h.getArchiveJSONL)
	m.HandleFunc("GET /v1/rooms/{room_id}/archive.md", h.getArchiveMarkdown)
	if h.laterDraft() {
		m.HandleFunc("GET /v1/rooms/{room_id}/archive/packs/{name}", h.getArchivePack)
	}
	m.HandleFunc("GET /v1/me/rooms", h.myRooms)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, identity.NewError(identity.CodeNotFound, "no such endpoint"))
	})
	h.mux = m
}

// currentRoom returns hr.room under hr.mu (it changes only on reload).
func (hr *hostRoom) current() *adp.Room {
	hr.mu.Lock()
	defer hr.mu.Unlock()
	return hr.room
}

// history answers the Verifier's exact-resubmission lookups.
type history struct{ s Store }

// Accepted implements envelope.History.
func (h history) Accepted(ctx context.Context, hash envelope.Hash) (bool, error) {
	rec, err := h.s.RecordByEvent(ctx, hash)
	return rec != nil, err
}

// prefetch is one write's WriteState: the Verifier's resubmission lookup
// for that write (its per-call envelope.History) reads it, with the
// actor's nonce entry and the room's head, and accept and commit use it
// in place of their own reads. ok reports that st was read.
type prefetch struct {
	r     WriteStateReader
	room  string
	actor identity.AgentID
	st    WriteState
	ok    bool
}

// Accepted implements envelope.History for one write.
func (pf *prefetch) Accepted(ctx context.Context, hash envelope.Hash) (bool, error) {
	st, err := pf.r.WriteState(ctx, pf.room, pf.actor, hash)
	if err != nil {
		return false, err
	}
	pf.st, pf.ok = st, true
	return st.Record != nil, nil
}

// newPrefetch returns a prefetch for a write of ev in room when the Store
// reads write states; nil otherwise.
func (h *Host) newPrefetch(room string, ev *adp.Event) *prefetch {
	r, ok := h.store.(WriteStateReader)
	if !ok {
		return nil
	}
	return &prefetch{r: r, room: room, actor: ev.Actor}
}

// joinRequests is the adp.JoinRequestStore view of the Store.
type joinRequests struct{ h *Host }

// Lookup implements adp.JoinRequestStore.
func (j joinRequests) Lookup(ctx context.Context, roomID, id string) (adp.JoinRequest, adp.JoinRequestStatus, error) {
	jr, err := j.h.store.JoinRequest(ctx, roomID, id)
	if err != nil {
		return adp.JoinRequest{}, "", err
	}
	if jr == nil {
		return adp.JoinRequest{}, "", identity.Errorf(adp.CodeJoinRequestNotFound, "join request %q does not exist", clip(id))
	}
	return jr.Request, j.h.effective(jr).Status, nil
}

// effective returns jr with a pending request past expires_at shown as
// expired.
func (h *Host) effective(jr *adp.JoinRequestResource) *adp.JoinRequestResource {
	if jr.Status == adp.JoinPending && h.now().UnixMilli() >= jr.Request.ExpiresAt {
		c := *jr
		c.Status = adp.JoinExpired
		return &c
	}
	return jr
}

// maxBody bounds a write body: an envelope is at most envelope.MaxSize.
const maxBody = envelope.MaxSize

// readBody reads at most limit bytes, or fails with payload_too_large.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	// A body that gives its length is read into one buffer of that size
	// (io.ReadAll grows one from 512 bytes), up to presizeBody: beyond
	// it, bytes must arrive before memory is spent on them.
	n := int64(512)
	if r.ContentLength > 0 {
		n = min(r.ContentLength, limit, presizeBody) + 1
	}
	b := make([]byte, 0, n)
	lr := io.LimitedReader{R: r.Body, N: limit + 1}
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := lr.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, identity.Wrap(identity.CodeInvalidRequest, "reading the body", err)
		}
	}
	if int64(len(b)) > limit {
		return nil, identity.Errorf(identity.CodePayloadTooLarge, "body exceeds %d bytes", limit)
	}
	return b, nil
}

// unavailableError is a failure to reach a verdict: the Store failed (a
// database that is down, a file that cannot be read) or the room's
// replica was dropped. It has no Unwrap: its cause (an error text from
// storage, perhaps an identity error about stored bytes) is never a
// verdict on the request, and never reaches the wire.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string { return "adphost: storage unavailable: " + e.err.Error() }

// unavailable wraps err, a Store's failure, as an unavailableError (once).
func unavailable(err error) error {
	if _, ok := err.(*unavailableError); ok {
		return err
	}
	return &unavailableError{err}
}

// errDropped answers the writes that held a replica when it was dropped.
var errDropped = unavailable(errors.New("the room's replica was dropped; it is loaded again on next use"))

// errUnavailable is the answer to every failure that is not a verdict.
var errUnavailable = &identity.Error{Code: identity.CodeServiceUnavailable, Status: http.StatusServiceUnavailable,
	Message: "the host cannot serve this request now; send it again"}

// writeError writes err with the ADP status of its code. An error that is
// no verdict on the request (any error without an identity code, and an
// invalid_record, which only a host's storage can produce) is answered
// 503 service_unavailable with Retry-After: 1 and without its text: a
// client sends the same request again, which the exact-resubmission rule
// makes safe for a write the host may have stored.
func writeError(w http.ResponseWriter, err error) {
	var busy *busyError
	if errors.As(err, &busy) {
		// Retryable at once: the room is contended, not the agent over
		// its quota.
		w.Header().Set("Retry-After", "1")
		c := *busy.err
		c.Status = adp.DefaultStatus(c.Code)
		identity.WriteError(w, &c)
		return
	}
	var e *identity.Error
	var un *unavailableError
	if errors.As(err, &un) || !errors.As(err, &e) || e == nil || e.Code == adp.CodeInvalidRecord {
		w.Header().Set("Retry-After", "1")
		identity.WriteError(w, errUnavailable)
		return
	}
	if e.Status == 0 {
		c := *e
		c.Status = adp.DefaultStatus(c.Code)
		if c.Code == identity.CodeRateLimited {
			w.Header().Set("Retry-After", "60")
		}
		err = &c
	}
	identity.WriteError(w, err)
}

// writeJSON writes v as deterministic JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v, json.Deterministic(true))
	if err != nil {
		writeError(w, err)
		return
	}
	writeRaw(w, status, append(b, '\n'))
}

// presizeBody bounds the buffer readBody allocates on a body's word.
const presizeBody = 64 << 10

// The header values every answer carries, shared rather than allocated
// per answer: net/http only reads them, and their capacity is their
// length, so an Add to one copies it.
var (
	hdrNosniff = []string{"nosniff"}[:1:1]
	hdrJSON    = []string{"application/json"}[:1:1]
	hdrNoStore = []string{"no-store"}[:1:1]
)

func writeRaw(w http.ResponseWriter, status int, b []byte) {
	// Assigned, not Set: the keys are canonical already.
	hd := w.Header()
	hd["Content-Type"] = hdrJSON
	hd["Cache-Control"] = hdrNoStore
	w.WriteHeader(status)
	w.Write(b)
}

var roomIDEncoding = base32.NewEncoding("0123456789abcdefghijklmnopqrstuv").WithPadding(base32.NoPadding)

// randomRoomID returns 12 random bytes as 20 lowercase base32 characters:
// the shape of an Xid (§7.1), without its guessable structure.
func randomRoomID() string {
	var b [12]byte
	rand.Read(b[:])
	return roomIDEncoding.EncodeToString(b[:])
}

// randomRequestID returns "jr_" and 26 random base32 characters.
func randomRequestID() string {
	var b [16]byte
	rand.Read(b[:])
	return "jr_" + strings.ToUpper(roomIDEncoding.EncodeToString(b[:]))
}

// clip bounds untrusted text quoted in an error message.
func clip(s string) string { return untrusted.Clip(s, 64) }

// Close ends every live stream, so that a server shutting down does not
// wait for subscribers, and stops the Notifier listener. The Host keeps
// serving other requests.
func (h *Host) Close() {
	h.stop()
	h.bg.Wait()
	for _, hr := range h.cachedRooms() {
		hr.subMu.Lock()
		for s := range hr.subs {
			s.close()
		}
		hr.subMu.Unlock()
	}
}
