package connector

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentprotocols/go-sdk/internal/untrusted"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/sse"
)

// Buckets of the state store.
const (
	bMeta    = "meta"
	bRooms   = "rooms"
	bRecords = "records"
	bInbox   = "inbox"
	bPending = "inbox_pending"
	bDrafts  = "drafts"
	bOutbox  = "outbox"
	bHosts   = "hosts"
	// bSnapshots holds each room's replica snapshot (storedSnapshot),
	// apart from its storedRoom, which every write reads and rewrites.
	bSnapshots = "snapshots"
)

// Engine is one connector's engine: one Agent ID, the operator's hosts, one
// state directory. It is safe for concurrent use.
type Engine struct {
	opts   Options
	now    func() time.Time
	store  stateStore
	key    *Key
	agent  identity.AgentID
	nonces *identity.NonceSource
	nstore *stagedNonces
	author *envelope.Author

	hosts     map[string]*hostState // by origin string
	hostOrder []string

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu           sync.Mutex
	rooms        map[roomKey]*roomRT
	presented    map[presKey]adp.RecordRef
	inboxWake    chan struct{}        // closed and replaced when the inbox changes
	activeAt     map[string]time.Time // a session's last call, for its claim lease
	committing   map[string]bool      // drafts a DraftCommit holds
	lastJoinPoll time.Time

	notifyMu      sync.Mutex
	notifyPending map[string]bool
	notifyKick    chan struct{}

	writeMu sync.Mutex // one signed write at a time: nonce + outbox order
	// liveSeen, when set (by tests), sees every item of the rooms' live
	// subscriptions as the engine handles it, in order.
	liveSeen atomic.Pointer[func(roomKey, sse.Item)]

	// repMu serializes making and remaking the rooms' replicas (never
	// held with mu, or within a store transaction).
	repMu   sync.Mutex
	limiter *limiter
}

type hostState struct {
	name   string // origin string
	cfg    HostConfig
	client *adp.Client // nil when disabled
	// stored is the ADP draft (an adp.Draft) the store recorded for the
	// host (its discovery document at first contact), 0 if none: the
	// client is told it, so a restart needs no discovery read to speak it.
	stored atomic.Int32
}

// draft is the ADP draft the host serves: the client's, once it knows it,
// else the one stored with the host; a store that recorded none (written
// before the connector recorded drafts) holds seed rooms.
func (h *hostState) draft() adp.Draft {
	if h.client != nil {
		if d, ok := h.client.KnownDraft(); ok {
			return d
		}
	}
	return adp.Draft(h.stored.Load()).OrDefault()
}

type roomKey struct{ host, room string }

type presKey struct {
	session string
	roomKey
}

// roomRT is a room's runtime state.
type roomRT struct {
	// rep is the room's verified state (Engine.replica), set under
	// Engine.repMu.
	rep        *adp.Replica
	subscribed bool
	stop       context.CancelFunc
	remoteSeq  int64
	// backfill is set while the first sync of the room reads its past.
	backfill bool
}

// storedRoom is the durable state of one room.
type storedRoom struct {
	Host   string `json:"host"`
	RoomID string `json:"room_id"`
	// Snapshot is where stores written before bSnapshots kept the
	// verified replica as of record SnapSeq (read, never written); the
	// records after SnapSeq are in the records bucket and are re-applied
	// on Open.
	Snapshot  jsontext.Value `json:"snapshot,omitempty"`
	SnapSeq   int64          `json:"snap_seq,omitempty"`
	HeadSeq   int64          `json:"head_seq,omitempty"`
	HeadHash  string         `json:"head_hash,omitempty"`
	SyncedSeq int64          `json:"synced_seq"`
	RemoteSeq int64          `json:"remote_seq"`
	ReadSeq   int64          `json:"read_seq"`
	Unread    int            `json:"unread"` // unread message-like records after ReadSeq
	Subscribe bool           `json:"subscribe"`
	// Join request state (§11) of this agent.
	JoinRequestID     string      `json:"join_request_id,omitempty"`
	JoinRequestStatus string      `json:"join_request_status,omitempty"`
	JoinApprovedRole  string      `json:"join_approved_role,omitempty"`
	ActiveTurn        *ActiveTurn `json:"active_turn,omitempty"`
	// URL is the room URL of the host's room resource (host text, bounded).
	URL string `json:"url,omitempty"`
}

// MaxRoomIDLen bounds a room id; see checkRoomID.
const MaxRoomIDLen = 128

// checkRoomID refuses a room id the connector will not store or send: only
// the URL-unreserved ASCII characters A–Z a–z 0–9 - . _ ~, 1 to
// MaxRoomIDLen of them, and neither "." nor "..". Hosts issue short ids of
// this kind; the bound keeps hostile ids out of memory, storage keys and
// URL paths, and the charset (no NUL) keeps the store's keys unambiguous.
func checkRoomID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: room_id is required", ErrInvalidInput)
	}
	if len(id) > MaxRoomIDLen || id == "." || id == ".." {
		return fmt.Errorf("%w: room_id %q is not a valid room id", ErrInvalidInput, clip(id))
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return fmt.Errorf("%w: room_id %q has a character outside A-Z a-z 0-9 - . _ ~", ErrInvalidInput, clip(id))
		}
	}
	return nil
}

// Store keys of a room: the origin (which has no NUL) and the checked room
// id (which has none either) separated by NUL, so no room's keys are a
// prefix of another's.
func rkey(host, room string) string { return host + "\x00" + room + "\x00" }

func reckey(host, room string, seq int64) string { return rkey(host, room) + fmt.Sprintf("%020d", seq) }

// Open opens the state directory (failing fast with ErrLocked when another
// process holds it), replays the outbox and resumes the subscriptions of
// the known rooms from their stored verified state.
func Open(ctx context.Context, opts *Options) (*Engine, error) {
	if opts == nil || opts.Dir == "" || opts.Key == nil {
		return nil, fmt.Errorf("%w: Options.Dir and Options.Key are required", ErrInvalidInput)
	}
	e := &Engine{opts: *opts, key: opts.Key, agent: opts.Key.AgentID(), now: opts.Now,
		hosts: map[string]*hostState{}, rooms: map[roomKey]*roomRT{}, presented: map[presKey]adp.RecordRef{},
		inboxWake: make(chan struct{}), notifyKick: make(chan struct{}, 1),
		activeAt: map[string]time.Time{}, committing: map[string]bool{}}
	if e.now == nil {
		e.now = time.Now
	}
	if e.opts.Logger == nil {
		e.opts.Logger = slog.New(slog.DiscardHandler)
	}
	if e.opts.MaxResign <= 0 {
		e.opts.MaxResign = 3
	}
	if e.opts.ClaimLease <= 0 {
		e.opts.ClaimLease = DefaultClaimLease
	}
	if e.opts.BackfillWindow == 0 {
		e.opts.BackfillWindow = DefaultBackfillWindow
	}
	e.limiter = newLimiter(e.opts.WritesPerMinute, e.opts.WriteBurst, e.now)
	st, err := openStateStore(opts.Dir, opts.LockTimeout)
	if err != nil {
		return nil, err
	}
	e.store = st
	e.nstore = &stagedNonces{}
	if err := st.View(func(tx stateTx) error {
		_, err := tx.Get(bMeta, "nonce", &e.nstore.saved)
		return err
	}); err != nil {
		st.Close()
		return nil, err
	}
	e.nstore.pending = e.nstore.saved
	e.nonces = identity.NewNonceSource(&identity.NonceOptions{Store: e.nstore, Now: e.now})
	e.author = &envelope.Author{Signer: e.key.k, Nonces: e.nonces, Now: e.now}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	oo := &identity.OriginOptions{AllowLoopbackHTTP: opts.AllowLoopbackHTTP}
	for _, h := range opts.Hosts {
		o, err := identity.ParseOrigin(h.Host, oo)
		if err != nil {
			st.Close()
			return nil, fmt.Errorf("%w: host %q: %v", ErrInvalidInput, h.Host, err)
		}
		name := o.String()
		if e.hosts[name] != nil {
			continue
		}
		hs := &hostState{name: name, cfg: h}
		var sh storedHost
		if err := st.View(func(tx stateTx) error { _, err := tx.Get(bHosts, name, &sh); return err }); err != nil {
			st.Close()
			return nil, err
		}
		hs.stored.Store(int32(sh.Draft))
		if !h.Disabled {
			c, err := adp.NewClient(name, &adp.ClientOptions{Signer: e.key.k, Nonces: e.nonces, HTTPClient: hc, Draft: sh.Draft,
				Now: e.now, AllowLoopbackHTTP: opts.AllowLoopbackHTTP, PageSize: opts.PageSize, MaxResponseSize: opts.MaxResponseSize,
				// The client verifies into the engine's replicas, whose
				// hook persists.
				NewReplica: func(roomID string) (*adp.Replica, error) { return e.replica(hs, roomID) }})
			if err != nil {
				st.Close()
				return nil, err
			}
			hs.client = c
		}
		e.hosts[name] = hs
		e.hostOrder = append(e.hostOrder, name)
	}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	if e.opts.Notify != nil {
		e.wg.Add(1)
		go e.dispatchNotifications()
	}
	// Restore every known room's verified replica; nothing is downloaded.
	var rooms []storedRoom
	if err := st.View(func(tx stateTx) error {
		return tx.Scan(bRooms, "", func(_ string, raw []byte) error {
			var r storedRoom
			if err := unmarshalStored(raw, &r); err != nil {
				return err
			}
			rooms = append(rooms, r)
			return nil
		})
	}); err != nil {
		e.Close()
		return nil, err
	}
	for _, r := range rooms {
		h := e.hosts[r.Host]
		if h == nil || h.client == nil {
			continue // no longer allowlisted: left alone, never contacted
		}
		if err := checkRoomID(r.RoomID); err != nil {
			e.opts.Logger.Warn("connector: stored room skipped", "err", err)
			continue // stored by an older version: never contacted
		}
		e.mu.Lock()
		e.rooms[roomKey{r.Host, r.RoomID}] = &roomRT{remoteSeq: r.RemoteSeq}
		e.mu.Unlock()
		if r.SnapSeq > 0 || len(r.Snapshot) > 0 {
			if _, err := e.replica(h, r.RoomID); err != nil {
				e.Close()
				return nil, err
			}
		}
	}
	// Claims belong to MCP sessions, which end with the process.
	if err := e.releaseClaims(""); err != nil {
		e.Close()
		return nil, err
	}
	if err := e.ReplayOutbox(ctx); err != nil && !errors.Is(err, ErrPendingOutbox) {
		e.Close()
		return nil, err
	}
	e.wg.Add(2)
	go e.retryOutbox()
	go func() {
		defer e.wg.Done()
		ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
		defer cancel()
		if err := e.CheckHosts(ctx); err != nil {
			e.opts.Logger.Warn("connector: host discovery failed", "err", err)
		}
	}()
	for _, r := range rooms {
		if r.Subscribe && !e.opts.NoSubscribe && e.hosts[r.Host] != nil && e.hosts[r.Host].client != nil {
			e.subscribe(roomKey{r.Host, r.RoomID})
		}
	}
	return e, nil
}

// retryOutbox re-sends entries left by transport failures every 30 s, so
// a write that could not reach its host is delivered without a restart.
func (e *Engine) retryOutbox() {
	defer e.wg.Done()
	t := time.NewTicker(30 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-e.ctx.Done():
			return
		case <-t.C:
		}
		n := 0
		_ = e.store.View(func(tx stateTx) error {
			return tx.Scan(bOutbox, "", func(string, []byte) error { n++; return errStop })
		})
		if n > 0 {
			if err := e.ReplayOutbox(e.ctx); err != nil {
				e.opts.Logger.Warn("connector: outbox replay failed", "err", err)
			}
		}
	}
}

// Close stops the subscriptions, waits for an in-flight write and closes
// the store. Calls made after Close fail.
func (e *Engine) Close() error {
	if e.cancel != nil {
		e.cancel()
	}
	e.wg.Wait()
	// Let an in-flight write finish its outbox bookkeeping first.
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	return e.store.Close()
}

// AgentID returns the active Agent ID.
func (e *Engine) AgentID() identity.AgentID { return e.agent }

// EndSession forgets a session's presented heads and releases its inbox
// claims at once. The MCP layer calls it when a session ends — over HTTP
// also when the session's last stream closes, since clients that go away
// send no DELETE; a session that just stops calling loses its claims
// after Options.ClaimLease anyway.
func (e *Engine) EndSession(session string) {
	e.mu.Lock()
	for k := range e.presented {
		if k.session == session {
			delete(e.presented, k)
		}
	}
	delete(e.activeAt, session)
	e.mu.Unlock()
	if session != "" && e.releaseClaims(session) == nil {
		e.wakeInbox()
	}
}

// touch records a call of the session: it renews the lease of the
// session's inbox claims. Sessions idle past the lease are forgotten here.
func (e *Engine) touch(session string) {
	if session == "" {
		return
	}
	now := e.now()
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.activeAt) >= 64 {
		for s, t := range e.activeAt {
			if now.Sub(t) >= e.opts.ClaimLease {
				delete(e.activeAt, s)
			}
		}
	}
	e.activeAt[session] = now
}

// claimHeld reports whether a claim of the session is still held: the
// session made a call within the last Options.ClaimLease.
func (e *Engine) claimHeld(session string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.activeAt[session]
	return ok && e.now().Sub(t) < e.opts.ClaimLease
}

// releaseClaims releases the inbox claims of a session ("" = every session).
func (e *Engine) releaseClaims(session string) error {
	return e.store.Update(func(tx stateTx) error {
		var claimed []*storedInbox
		if err := tx.Scan(bPending, "", func(k string, raw []byte) error {
			var it storedInbox
			if err := unmarshalStored(raw, &it); err != nil {
				return err
			}
			if it.ClaimedBy != "" && (session == "" || it.ClaimedBy == session) {
				claimed = append(claimed, &it)
			}
			return nil
		}); err != nil {
			return err
		}
		for _, it := range claimed {
			it.ClaimedBy = ""
			if err := putInbox(tx, it); err != nil {
				return err
			}
		}
		return nil
	})
}

func publicKeyText(id identity.AgentID) string {
	b := id.Bytes()
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// host returns an allowlisted, enabled host by its origin (as configured
// or normalized); anything else is ErrHostNotAllowed, before any signing.
func (e *Engine) host(name string) (*hostState, error) {
	if h := e.hosts[name]; h != nil && h.client != nil {
		return h, nil
	}
	o, err := identity.ParseOrigin(name, &identity.OriginOptions{AllowLoopbackHTTP: e.opts.AllowLoopbackHTTP})
	if err == nil {
		if h := e.hosts[o.String()]; h != nil && h.client != nil {
			return h, nil
		}
	}
	return nil, fmt.Errorf("%w: %q", ErrHostNotAllowed, clip(name))
}

// resolve finds a known room by (host, room_id): host may be empty when
// room_id is known on exactly one host.
func (e *Engine) resolve(host, roomID string) (roomKey, *hostState, error) {
	if err := checkRoomID(roomID); err != nil {
		return roomKey{}, nil, err
	}
	if host != "" {
		h, err := e.host(host)
		if err != nil {
			return roomKey{}, nil, err
		}
		k := roomKey{h.name, roomID}
		e.mu.Lock()
		_, ok := e.rooms[k]
		e.mu.Unlock()
		if !ok {
			return k, h, fmt.Errorf("%w: %s on %s", ErrUnknownRoom, clip(roomID), h.name)
		}
		return k, h, nil
	}
	e.mu.Lock()
	var found []roomKey
	for k := range e.rooms {
		if k.room == roomID {
			found = append(found, k)
		}
	}
	e.mu.Unlock()
	switch len(found) {
	case 0:
		if h := e.onlyHost(); h != nil {
			return roomKey{}, nil, fmt.Errorf("%w: %s on %s", ErrUnknownRoom, clip(roomID), h.name)
		}
		return roomKey{}, nil, fmt.Errorf("%w: %s", ErrUnknownRoom, clip(roomID))
	case 1:
		return found[0], e.hosts[found[0].host], nil
	}
	return roomKey{}, nil, fmt.Errorf("%w: %s is known on %d hosts", ErrAmbiguousRoom, clip(roomID), len(found))
}

// hostFor picks the host of a room that need not be known locally (a
// restricted or private room is joined before it can be opened): the
// given host; else the host room_id is known on; else, for a room known
// on none, the only enabled host. Several candidates are
// ErrAmbiguousRoom, which asks for host.
func (e *Engine) hostFor(host, roomID string) (*hostState, error) {
	if err := checkRoomID(roomID); err != nil {
		return nil, err
	}
	if host != "" {
		return e.host(host)
	}
	_, h, err := e.resolve("", roomID)
	if !errors.Is(err, ErrUnknownRoom) {
		return h, err
	}
	if h := e.onlyHost(); h != nil {
		return h, nil
	}
	n := 0
	for _, name := range e.hostOrder {
		if e.hosts[name].client != nil {
			n++
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: no configured host is enabled", ErrHostNotAllowed)
	}
	return nil, fmt.Errorf("%w: %s is not known locally, and %d hosts are configured", ErrAmbiguousRoom, clip(roomID), n)
}

// onlyHost is the one enabled host, or nil when there are none or several.
func (e *Engine) onlyHost() *hostState {
	var only *hostState
	for _, name := range e.hostOrder {
		if h := e.hosts[name]; h.client != nil {
			if only != nil {
				return nil
			}
			only = h
		}
	}
	return only
}

// Bounds of the host text a HostError carries.
const (
	maxHostMessage = 1 << 10
	maxHostData    = 4 << 10
)

// hostErr labels a refusal the named host sent (an *identity.Error that
// came with an HTTP status) as a *HostError; other errors pass unchanged.
func hostErr(host string, err error) error {
	var ie *identity.Error
	var he *HostError
	if err == nil || errors.As(err, &he) || !errors.As(err, &ie) || ie.Status == 0 {
		return err
	}
	out := &HostError{Host: host, Code: ie.Code, Message: untrusted.Clip(ie.Message, maxHostMessage), Status: ie.Status,
		RetryAfter: ie.RetryAfter, Err: err}
	if len(ie.Data) <= maxHostData {
		out.Data = ie.Data
	}
	return out
}

// err labels a refusal of this host (hostErr).
func (h *hostState) err(err error) error { return hostErr(h.name, err) }

// clip bounds untrusted text quoted in an error message.
func clip(s string) string { return untrusted.Clip(s, 80) }

// notify queues resource-updated URIs for Options.Notify. It never blocks
// and never calls Notify itself: a dispatcher goroutine does, coalescing
// repeats, so Notify runs under no engine lock and may call back in.
func (e *Engine) notify(uris ...string) {
	if e.opts.Notify == nil || len(uris) == 0 {
		return
	}
	e.notifyMu.Lock()
	if e.notifyPending == nil {
		e.notifyPending = map[string]bool{}
	}
	for _, u := range uris {
		e.notifyPending[u] = true
	}
	e.notifyMu.Unlock()
	select {
	case e.notifyKick <- struct{}{}:
	default:
	}
}

// dispatchNotifications delivers queued URIs until Close.
func (e *Engine) dispatchNotifications() {
	defer e.wg.Done()
	for {
		select {
		case <-e.ctx.Done():
			return
		case <-e.notifyKick:
		}
		e.notifyMu.Lock()
		batch := e.notifyPending
		e.notifyPending = nil
		e.notifyMu.Unlock()
		for _, u := range slices.Sorted(maps.Keys(batch)) {
			e.opts.Notify(u)
		}
	}
}

// wakeInbox wakes long-polling InboxNext calls.
func (e *Engine) wakeInbox() {
	e.mu.Lock()
	close(e.inboxWake)
	e.inboxWake = make(chan struct{})
	e.mu.Unlock()
}

// stagedNonces is the NonceSource's store: Save only stages the nonce in
// memory; the write path persists it in the same transaction as the
// outbox entry of the envelope that carries it, before sending. A nonce
// staged but never persisted was never sent, so issuing it again after a
// crash reuses nothing any host has seen.
type stagedNonces struct {
	mu      sync.Mutex
	saved   int64
	pending int64
}

func (s *stagedNonces) Load(context.Context) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pending, nil
}

func (s *stagedNonces) Save(_ context.Context, n int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n > s.pending {
		s.pending = n
	}
	return nil
}

// limiter is a token bucket for signed writes.
type limiter struct {
	mu     sync.Mutex
	rate   float64 // tokens per second; 0 = unlimited
	burst  float64
	tokens float64
	last   time.Time
	now    func() time.Time
}

func newLimiter(perMinute, burst int, now func() time.Time) *limiter {
	if perMinute == 0 {
		perMinute = 60
	}
	if burst <= 0 {
		burst = 10
	}
	l := &limiter{burst: float64(burst), tokens: float64(burst), now: now}
	if perMinute > 0 {
		l.rate = float64(perMinute) / 60
	}
	return l
}

func (l *limiter) allow() bool {
	if l.rate == 0 {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.now()
	if !l.last.IsZero() {
		l.tokens = min(l.burst, l.tokens+t.Sub(l.last).Seconds()*l.rate)
	}
	l.last = t
	if l.tokens < 1 {
		return false
	}
	l.tokens--
	return true
}
