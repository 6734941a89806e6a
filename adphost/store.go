package adphost

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
)

// ErrHeadMoved is returned by Store.Append when the log's last record is
// not the one the new record links to: another writer appended first.
var ErrHeadMoved = errors.New("adphost: the room log moved; the record does not follow its last record")

// ErrDuplicateEvent is returned by Store.Append when the record's envelope
// already has a record (in any room): the same envelope was accepted
// elsewhere first, and the write is an exact resubmission.
var ErrDuplicateEvent = errors.New("adphost: the envelope already has a record")

// Store is the host's durable state: room logs with append-if-head, the
// exact-resubmission index, the per-actor nonce cache, quota windows, join
// requests, agent statuses, room snapshots and the room index that the
// discovery lists read.
//
// A Store may be shared by several Host processes (adphost/pgstore): every
// check that must hold across them is made by the Store inside Append, in
// one transaction with the record. Implementations must be safe for
// concurrent use.
type Store interface {
	// Append adds c.Record to its room's log, atomically with the rest of
	// c, if the record's seq is one past the last record and its pre_hash
	// is that record's hash (a seq 1 record creates the log). It returns
	// ErrHeadMoved when the log moved, ErrDuplicateEvent when the envelope
	// already has a record, a nonce_not_greater error (with MaxSeenNonce)
	// when c.Nonce does not advance, and rate_limited when c.Quota is used
	// up; any error changes nothing. The room's index entry follows the
	// record: its Summary.Seq and LastActivity become the record's seq and
	// received_at whether or not c.Index replaces the rest.
	Append(ctx context.Context, c *Commit) error
	// Records returns up to limit records with seq > afterSeq, in order,
	// and stops reading at the record that brings their total size to
	// maxBytes or beyond: that record is the last one returned, so a read
	// returns a record whenever there is one. A record's size is the
	// length of its JSON (adp.Record.AppendJSON). One read then costs
	// memory in proportion to maxBytes, not to limit times the largest
	// record; and a page of fewer than limit records whose total is under
	// maxBytes ends the log.
	Records(ctx context.Context, roomID string, afterSeq int64, limit, maxBytes int) ([]*adp.Record, error)
	// Head returns the seq of a room's last record; 0 when it has none.
	Head(ctx context.Context, roomID string) (int64, error)
	// RecordByEvent finds the accepted record of an envelope hash, for the
	// exact-resubmission rule; nil when there is none.
	RecordByEvent(ctx context.Context, event envelope.Hash) (*adp.Record, error)

	// PutSnapshot stores a room snapshot (adp.Room.Snapshot) taken at
	// seq, unless a newer one is stored; one taken at the same seq is
	// replaced (the Host rewrites a snapshot that does not load). The
	// Store takes ownership of snap: the caller does not use it again,
	// so a Store may keep it without a copy.
	PutSnapshot(ctx context.Context, roomID string, seq int64, snap []byte) error
	// Snapshot returns a room's newest snapshot and its seq; seq 0 and nil
	// when there is none.
	Snapshot(ctx context.Context, roomID string) (seq int64, snap []byte, err error)

	// PublicRooms returns the index entries of every room that is not
	// private, without members.
	PublicRooms(ctx context.Context) ([]RoomIndex, error)
	// AgentRooms returns the index entries of the rooms agent created, is
	// or was a member of, is invited to, or asked to join; Members and
	// Invites hold only agent's own entry, if any.
	AgentRooms(ctx context.Context, agent identity.AgentID) ([]RoomIndex, error)

	// PutJoinRequest creates or replaces a join request.
	PutJoinRequest(ctx context.Context, jr *adp.JoinRequestResource) error
	// HoldJoinRequest stores a new signed join request (the 2026-09-24
	// draft's room.join.request, §10) and advances its applicant's nonce
	// by n, all or nothing: the request is a live write (Agent Identity
	// §6.1) that is not a record, so its nonce is checked and advanced
	// here instead of in Append. It returns nonce_not_greater (with
	// MaxSeenNonce) as Append does when n.Nonce does not advance, and
	// then stores nothing.
	HoldJoinRequest(ctx context.Context, jr *adp.JoinRequestResource, n NonceAdvance) error
	// JoinRequest returns one join request, or nil when there is none.
	JoinRequest(ctx context.Context, roomID, id string) (*adp.JoinRequestResource, error)
	// JoinRequests returns a room's join requests in creation order.
	JoinRequests(ctx context.Context, roomID string) ([]*adp.JoinRequestResource, error)

	// PutStatus replaces the status of (RoomID, AgentID).
	PutStatus(ctx context.Context, st *adp.AgentStatus) error
	// DeleteStatus removes an agent's status; absent is not an error.
	DeleteStatus(ctx context.Context, roomID string, agent identity.AgentID) error
	// Statuses returns a room's stored statuses, expired ones included,
	// by Agent ID.
	Statuses(ctx context.Context, roomID string) ([]*adp.AgentStatus, error)

	// MaxNonce returns the greatest accepted nonce of actor and when that
	// cache entry expires (Unix ms); zeros when none.
	MaxNonce(ctx context.Context, actor identity.AgentID) (nonce, expiresAt int64, err error)

	// QuotaUsed returns how many uses q.Key has in the window ending at
	// q.Now.
	QuotaUsed(ctx context.Context, q Quota) (int, error)
	// TakeQuota counts one use of q.Key, or refuses with rate_limited when
	// the window already holds q.Limit uses.
	TakeQuota(ctx context.Context, q Quota) error
}

// Commit is one accepted write: the record and the state that changes
// with it, applied by Store.Append all or nothing.
type Commit struct {
	// Record is the record to append.
	Record *adp.Record
	// Nonce is the actor's nonce to check and advance.
	Nonce NonceAdvance
	// Quota is the rate-limit window the write counts against; nil means
	// none (an unlimited class).
	Quota *Quota
	// Index replaces the room's index entry; nil leaves it (a seq 1
	// record must carry one). Index.Members nil leaves the members and
	// the invitations; otherwise Index.Invites replaces these.
	Index *RoomIndex
}

// NonceAdvance is the nonce rule of a write: refused when the actor's
// cache entry is live (ExpiresAt > Now) and Nonce is not greater than its
// nonce; otherwise the entry becomes max(nonce, Nonce) (just Nonce when
// it had expired) until ExpiresAt.
type NonceAdvance struct {
	Actor     identity.AgentID
	Nonce     int64
	Now       int64 // Unix ms
	ExpiresAt int64 // Unix ms
}

// Quota names one sliding rate-limit window: Key (agent and class), at
// most Limit uses within Window ms before Now (Unix ms).
type Quota struct {
	Key    string
	Limit  int
	Now    int64
	Window int64
}

// RoomIndex is what the discovery lists need of a room, kept by the Store
// so that listing rooms loads none of them.
type RoomIndex struct {
	// Summary is the room's summary; Status is the stored status before
	// the clock applies (scheduled stays scheduled past start_time), and
	// Role, MemberStatus and RequestID are unset.
	Summary adp.RoomSummary
	// Agenda is searched by the keyword filter.
	Agenda string
	// Members are the room's members (every status).
	Members []MemberIndex
	// Invites are the agents the room's policy.invites names (2026-09-24
	// draft, §8.3), by Agent ID: /v1/me/rooms lists the rooms that invite
	// the agent (§15). Stored and replaced together with Members.
	Invites []InviteIndex
}

// InviteIndex is one invitation in a RoomIndex: the agent and the role it
// may take by direct room.join.
type InviteIndex struct {
	Agent identity.AgentID `json:"agent"`
	Role  adp.Role         `json:"role"`
}

// MemberIndex is one member in a RoomIndex.
type MemberIndex struct {
	Agent  identity.AgentID
	Role   adp.Role
	Status adp.MemberStatus
}

// NonceError is the nonce_not_greater refusal of a Commit.
func NonceError(maxNonce int64) error {
	return &identity.Error{Code: identity.CodeNonceNotGreater, Message: "nonce is not greater than the greatest accepted nonce", MaxSeenNonce: maxNonce}
}

// QuotaError is the rate_limited refusal of a used-up Quota.
func QuotaError(q Quota) error {
	return identity.Errorf(identity.CodeRateLimited, "the quota of %d per minute is used up", q.Limit)
}

// CheckNonce applies a NonceAdvance to the stored entry (nonce, exp):
// the new entry, or NonceError. Stores call it inside their transaction.
func CheckNonce(a NonceAdvance, nonce, exp int64) (int64, error) {
	if exp > a.Now && a.Nonce <= nonce {
		return 0, NonceError(nonce)
	}
	if a.Nonce > nonce || exp <= a.Now {
		nonce = a.Nonce
	}
	return nonce, nil
}

// TrimQuota drops the uses of w (ascending Unix ms) outside q's window,
// and reports whether one more use fits. Stores call it inside their
// transaction.
func TrimQuota(q Quota, w []int64) ([]int64, bool) {
	i := 0
	for i < len(w) && w[i] <= q.Now-q.Window {
		i++
	}
	w = w[i:]
	return w, len(w) < q.Limit
}

// WriteState is what a write needs of the Store before it is judged: the
// exact-resubmission lookup, the actor's nonce entry and the room's head.
type WriteState struct {
	// Record is the accepted record of the envelope (RecordByEvent); nil
	// when there is none.
	Record *adp.Record
	// Nonce and NonceExpiresAt are the actor's nonce entry (MaxNonce).
	Nonce, NonceExpiresAt int64
	// Head is the seq of the room's last record (Head); 0 when it has
	// none.
	Head int64
}

// WriteStateReader is an optional extension of a Store whose every read
// is a round trip (adphost/pgstore): WriteState answers RecordByEvent,
// MaxNonce and Head for one write in one read, which the Host makes in
// place of the three (and of the head check of the room's lookup). Its
// answers are those the three would give at one moment.
type WriteStateReader interface {
	WriteState(ctx context.Context, roomID string, actor identity.AgentID, event envelope.Hash) (WriteState, error)
}

// BatchAppender is an optional extension of a Store whose appends cost a
// durable commit each (adphost/pgstore). When writes of one room queue
// behind the room's lock, the Host judges them in order and appends them
// with one AppendBatch (group commit); a Store without it gets one Append
// each.
type BatchAppender interface {
	// AppendBatch appends the records of cs, which follow each other in
	// one room (cs[i+1].Record links to cs[i].Record) and carry no Index,
	// atomically: all of them or, with an error, none. Its errors are
	// Append's; ErrHeadMoved means the first record does not follow the
	// log's last, and any other error (a duplicate, a used nonce, a full
	// quota of one of them) does not say which commit failed.
	AppendBatch(ctx context.Context, cs []*Commit) error
}

// JoinRequestIndex is an optional extension of a Store that indexes join
// requests by applicant, by (created_at, id) and, for the pending ones, by
// expiry. The Host then finds one agent's requests for a room (an
// applicant's read of a private room, /v1/me/rooms), counts a room's
// pending requests (the bound a new request checks), reads them (when a
// room is loaded) and pages the reviewers' list without reading every
// request of the room, so that neither the time nor the answer of such a
// call grows with the room's history of applicants. A Store without it is
// read through JoinRequests. MemoryStore, boltstore and pgstore implement
// it.
type JoinRequestIndex interface {
	// ApplicantJoinRequests returns applicant's join requests for the
	// room, in creation order.
	ApplicantJoinRequests(ctx context.Context, roomID string, applicant identity.AgentID) ([]*adp.JoinRequestResource, error)
	// CountPendingJoinRequests returns how many of the room's join
	// requests are stored as pending and expire after now (Unix ms): the
	// length of PendingJoinRequests, without reading the requests.
	CountPendingJoinRequests(ctx context.Context, roomID string, now int64) (int, error)
	// PendingJoinRequests returns the room's join requests that are
	// stored as pending and expire after now (Unix ms), in key order.
	PendingJoinRequests(ctx context.Context, roomID string, now int64) ([]*adp.JoinRequestResource, error)
	// JoinRequestsAfter returns up to limit of the room's join requests
	// whose key follows after, in key order: one page of the list.
	JoinRequestsAfter(ctx context.Context, roomID string, after JoinRequestKey, limit int) ([]*adp.JoinRequestResource, error)
}

// JoinRequestKey orders a room's join requests: by created_at (Unix ms,
// not negative), then by ID. Both are immutable, so a list paged by key
// neither skips nor repeats a request, whatever is added meanwhile. The
// zero key precedes every request.
type JoinRequestKey struct {
	CreatedAt int64
	ID        string
}

// KeyOf returns jr's JoinRequestKey.
func KeyOf(jr *adp.JoinRequestResource) JoinRequestKey {
	return JoinRequestKey{jr.Request.CreatedAt, jr.Request.ID}
}

// Compare orders k before (-1), at (0) or after (+1) o.
func (k JoinRequestKey) Compare(o JoinRequestKey) int {
	return cmp.Or(cmp.Compare(k.CreatedAt, o.CreatedAt), strings.Compare(k.ID, o.ID))
}

// applicantRequests returns who's join requests for a room, through the
// Store's JoinRequestIndex when it has one.
func (h *Host) applicantRequests(ctx context.Context, roomID string, who identity.AgentID) ([]*adp.JoinRequestResource, error) {
	if ix, ok := h.store.(JoinRequestIndex); ok {
		return ix.ApplicantJoinRequests(ctx, roomID, who)
	}
	list, err := h.store.JoinRequests(ctx, roomID)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(list, func(jr *adp.JoinRequestResource) bool { return jr.Request.Applicant != who }), nil
}

// pendingRequests returns a room's live pending join requests, through
// the Store's JoinRequestIndex when it has one.
func (h *Host) pendingRequests(ctx context.Context, roomID string, now int64) ([]*adp.JoinRequestResource, error) {
	if ix, ok := h.store.(JoinRequestIndex); ok {
		return ix.PendingJoinRequests(ctx, roomID, now)
	}
	list, err := h.sortedRequests(ctx, roomID)
	return slices.DeleteFunc(list, func(jr *adp.JoinRequestResource) bool { return !livePending(jr, now) }), err
}

// countPending counts a room's live pending join requests, through the
// Store's JoinRequestIndex when it has one.
func (h *Host) countPending(ctx context.Context, roomID string, now int64) (int, error) {
	if ix, ok := h.store.(JoinRequestIndex); ok {
		return ix.CountPendingJoinRequests(ctx, roomID, now)
	}
	list, err := h.pendingRequests(ctx, roomID, now)
	return len(list), err
}

// requestsAfter returns one page of a room's join requests, through the
// Store's JoinRequestIndex when it has one.
func (h *Host) requestsAfter(ctx context.Context, roomID string, after JoinRequestKey, limit int) ([]*adp.JoinRequestResource, error) {
	if ix, ok := h.store.(JoinRequestIndex); ok {
		return ix.JoinRequestsAfter(ctx, roomID, after, limit)
	}
	list, err := h.sortedRequests(ctx, roomID)
	list = slices.DeleteFunc(list, func(jr *adp.JoinRequestResource) bool { return KeyOf(jr).Compare(after) <= 0 })
	return list[:min(len(list), max(limit, 0))], err
}

// sortedRequests is JoinRequests in key order.
func (h *Host) sortedRequests(ctx context.Context, roomID string) ([]*adp.JoinRequestResource, error) {
	list, err := h.store.JoinRequests(ctx, roomID)
	slices.SortStableFunc(list, compareRequests)
	return list, err
}

func compareRequests(a, b *adp.JoinRequestResource) int { return KeyOf(a).Compare(KeyOf(b)) }

// livePending reports whether jr is stored as pending and expires after
// now (Unix ms).
func livePending(jr *adp.JoinRequestResource, now int64) bool {
	return jr.Status == adp.JoinPending && jr.Request.ExpiresAt > now
}

// MemoryStore is the in-memory Store. It is safe for concurrent use.
type MemoryStore struct {
	mu        sync.RWMutex
	logs      map[string][]*adp.Record
	sizes     map[string][]int // by room, the JSON size of each record of logs
	events    map[envelope.Hash]*adp.Record
	requests  map[string]*memRequests // by room
	statuses  map[string]map[identity.AgentID]*adp.AgentStatus
	nonces    map[identity.AgentID][2]int64
	quotas    map[string][]int64
	snapshots map[string]memSnapshot
	index     map[string]*RoomIndex
	swept     int64 // when idle quota windows were last dropped (Unix ms)
}

// memRequests are one room's join requests: in key order, by ID, and the
// expiry of those stored as pending.
type memRequests struct {
	order   []*adp.JoinRequestResource
	byID    map[string]*adp.JoinRequestResource
	pending map[string]int64
}

type memSnapshot struct {
	seq  int64
	snap []byte
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{
		logs:      map[string][]*adp.Record{},
		sizes:     map[string][]int{},
		events:    map[envelope.Hash]*adp.Record{},
		requests:  map[string]*memRequests{},
		statuses:  map[string]map[identity.AgentID]*adp.AgentStatus{},
		nonces:    map[identity.AgentID][2]int64{},
		quotas:    map[string][]int64{},
		snapshots: map[string]memSnapshot{},
		index:     map[string]*RoomIndex{},
	}
}

// Append implements Store.
func (m *MemoryStore) Append(_ context.Context, c *Commit) error {
	rec := c.Record
	m.mu.Lock()
	defer m.mu.Unlock()
	log := m.logs[rec.RoomID]
	if int64(len(log)) != rec.Seq-1 || (rec.Seq > 1 && log[len(log)-1].Hash != rec.PreHash) {
		return ErrHeadMoved
	}
	if _, dup := m.events[rec.Envelope.Hash()]; dup {
		return ErrDuplicateEvent
	}
	nv := m.nonces[c.Nonce.Actor]
	nonce, err := CheckNonce(c.Nonce, nv[0], nv[1])
	if err != nil {
		return err
	}
	var window []int64
	if c.Quota != nil {
		var ok bool
		if window, ok = TrimQuota(*c.Quota, m.quotas[c.Quota.Key]); !ok {
			return QuotaError(*c.Quota)
		}
	}
	m.logs[rec.RoomID] = append(log, rec)
	m.sizes[rec.RoomID] = append(m.sizes[rec.RoomID], recordSize(rec))
	m.events[rec.Envelope.Hash()] = rec
	m.nonces[c.Nonce.Actor] = [2]int64{nonce, c.Nonce.ExpiresAt}
	if c.Quota != nil {
		m.quotas[c.Quota.Key] = append(slices.Clip(window), c.Quota.Now)
		m.sweep(*c.Quota)
	}
	old := m.index[rec.RoomID]
	if c.Index != nil {
		ix := *c.Index
		if ix.Members == nil && old != nil {
			ix.Members, ix.Invites = old.Members, old.Invites
		}
		ix.Members, ix.Invites = slices.Clone(ix.Members), slices.Clone(ix.Invites)
		ix.Summary.Tags = slices.Clone(ix.Summary.Tags)
		old = &ix
		m.index[rec.RoomID] = old
	}
	if old != nil {
		old.Summary.Seq, old.Summary.LastActivity = rec.Seq, rec.ReceivedAt
	}
	return nil
}

// Records implements Store.
func (m *MemoryStore) Records(_ context.Context, roomID string, afterSeq int64, limit, maxBytes int) ([]*adp.Record, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	log := m.logs[roomID]
	if afterSeq < 0 {
		afterSeq = 0
	}
	if afterSeq >= int64(len(log)) || limit <= 0 {
		return nil, nil
	}
	end := min(int64(len(log)), afterSeq+int64(limit))
	total := 0
	for i, n := range m.sizes[roomID][afterSeq:end] {
		if total += n; total >= maxBytes {
			end = afterSeq + int64(i) + 1
			break
		}
	}
	return slices.Clone(log[afterSeq:end]), nil
}

// recordSize is the length of rec's JSON: the size Store.Records budgets.
func recordSize(rec *adp.Record) int {
	if w := rec.CanonicalInput(); w != nil {
		return len(w)
	}
	return len(rec.AppendJSON(nil))
}

// Head implements Store.
func (m *MemoryStore) Head(_ context.Context, roomID string) (int64, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return int64(len(m.logs[roomID])), nil
}

// RecordByEvent implements Store.
func (m *MemoryStore) RecordByEvent(_ context.Context, h envelope.Hash) (*adp.Record, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.events[h], nil
}

// PutSnapshot implements Store. It keeps snap, whose ownership it
// takes, without a copy.
func (m *MemoryStore) PutSnapshot(_ context.Context, roomID string, seq int64, snap []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.snapshots[roomID].seq <= seq {
		m.snapshots[roomID] = memSnapshot{seq, snap}
	}
	return nil
}

// Snapshot implements Store.
func (m *MemoryStore) Snapshot(_ context.Context, roomID string) (int64, []byte, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	s := m.snapshots[roomID]
	return s.seq, s.snap, nil
}

// PublicRooms implements Store.
func (m *MemoryStore) PublicRooms(context.Context) ([]RoomIndex, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []RoomIndex
	for _, ix := range m.index {
		if ix.Summary.Visibility != adp.VisibilityPrivate {
			c := *ix
			c.Members, c.Invites = nil, nil
			out = append(out, c)
		}
	}
	SortIndex(out)
	return out, nil
}

// AgentRooms implements Store.
func (m *MemoryStore) AgentRooms(_ context.Context, agent identity.AgentID) ([]RoomIndex, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []RoomIndex
	for id, ix := range m.index {
		c := *ix
		c.Members, c.Invites = nil, nil
		for _, mi := range ix.Members {
			if mi.Agent == agent {
				c.Members = []MemberIndex{mi}
			}
		}
		for _, in := range ix.Invites {
			if in.Agent == agent {
				c.Invites = []InviteIndex{in}
			}
		}
		var applied bool
		if rs := m.requests[id]; rs != nil {
			applied = slices.ContainsFunc(rs.order, func(jr *adp.JoinRequestResource) bool { return jr.Request.Applicant == agent })
		}
		if c.Members != nil || c.Invites != nil || ix.Summary.Creator == agent || applied {
			out = append(out, c)
		}
	}
	SortIndex(out)
	return out, nil
}

// SortIndex orders index entries by room ID, the order stores return.
func SortIndex(list []RoomIndex) {
	slices.SortFunc(list, func(a, b RoomIndex) int { return cmp.Compare(a.Summary.ID, b.Summary.ID) })
}

// PutJoinRequest implements Store.
func (m *MemoryStore) PutJoinRequest(_ context.Context, jr *adp.JoinRequestResource) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.putJoinRequest(jr)
	return nil
}

// HoldJoinRequest implements Store.
func (m *MemoryStore) HoldJoinRequest(_ context.Context, jr *adp.JoinRequestResource, n NonceAdvance) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	nv := m.nonces[n.Actor]
	nonce, err := CheckNonce(n, nv[0], nv[1])
	if err != nil {
		return err
	}
	m.nonces[n.Actor] = [2]int64{nonce, n.ExpiresAt}
	m.putJoinRequest(jr)
	return nil
}

// putJoinRequest stores a copy of jr (m.mu held).
func (m *MemoryStore) putJoinRequest(jr *adp.JoinRequestResource) {
	c := *jr
	rs := m.requests[jr.Request.RoomID]
	if rs == nil {
		rs = &memRequests{byID: map[string]*adp.JoinRequestResource{}, pending: map[string]int64{}}
		m.requests[jr.Request.RoomID] = rs
	}
	if old := rs.byID[c.Request.ID]; old != nil {
		i, _ := slices.BinarySearchFunc(rs.order, KeyOf(old), func(e *adp.JoinRequestResource, k JoinRequestKey) int { return KeyOf(e).Compare(k) })
		rs.order = slices.Delete(rs.order, i, i+1)
	}
	i, _ := slices.BinarySearchFunc(rs.order, KeyOf(&c), func(e *adp.JoinRequestResource, k JoinRequestKey) int { return KeyOf(e).Compare(k) })
	rs.order = slices.Insert(rs.order, i, &c)
	rs.byID[c.Request.ID] = &c
	delete(rs.pending, c.Request.ID)
	if c.Status == adp.JoinPending {
		rs.pending[c.Request.ID] = c.Request.ExpiresAt
	}
}

// JoinRequest implements Store.
func (m *MemoryStore) JoinRequest(_ context.Context, roomID, id string) (*adp.JoinRequestResource, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if rs := m.requests[roomID]; rs != nil && rs.byID[id] != nil {
		c := *rs.byID[id]
		return &c, nil
	}
	return nil, nil
}

// copies returns copies of the room's join requests keep accepts, in key
// order (m.mu held).
func (m *MemoryStore) copies(roomID string, keep func(*adp.JoinRequestResource) bool) []*adp.JoinRequestResource {
	rs := m.requests[roomID]
	if rs == nil {
		return nil
	}
	var out []*adp.JoinRequestResource
	for _, jr := range rs.order {
		if keep(jr) {
			c := *jr
			out = append(out, &c)
		}
	}
	return out
}

// ApplicantJoinRequests implements JoinRequestIndex.
func (m *MemoryStore) ApplicantJoinRequests(_ context.Context, roomID string, applicant identity.AgentID) ([]*adp.JoinRequestResource, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.copies(roomID, func(jr *adp.JoinRequestResource) bool { return jr.Request.Applicant == applicant }), nil
}

// CountPendingJoinRequests implements JoinRequestIndex, from the room's
// pending requests alone.
func (m *MemoryStore) CountPendingJoinRequests(_ context.Context, roomID string, now int64) (int, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n := 0
	if rs := m.requests[roomID]; rs != nil {
		for _, exp := range rs.pending {
			if exp > now {
				n++
			}
		}
	}
	return n, nil
}

// PendingJoinRequests implements JoinRequestIndex, from the room's pending
// requests alone.
func (m *MemoryStore) PendingJoinRequests(_ context.Context, roomID string, now int64) ([]*adp.JoinRequestResource, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	rs := m.requests[roomID]
	if rs == nil {
		return nil, nil
	}
	var out []*adp.JoinRequestResource
	for id, exp := range rs.pending {
		if exp > now {
			c := *rs.byID[id]
			out = append(out, &c)
		}
	}
	slices.SortFunc(out, compareRequests)
	return out, nil
}

// JoinRequestsAfter implements JoinRequestIndex: a binary search for the
// page's start.
func (m *MemoryStore) JoinRequestsAfter(_ context.Context, roomID string, after JoinRequestKey, limit int) ([]*adp.JoinRequestResource, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	rs := m.requests[roomID]
	if rs == nil {
		return nil, nil
	}
	i, found := slices.BinarySearchFunc(rs.order, after, func(e *adp.JoinRequestResource, k JoinRequestKey) int { return KeyOf(e).Compare(k) })
	if found {
		i++
	}
	out := make([]*adp.JoinRequestResource, 0, min(max(limit, 0), len(rs.order)-i))
	for _, jr := range rs.order[i:min(len(rs.order), i+max(limit, 0))] {
		c := *jr
		out = append(out, &c)
	}
	return out, nil
}

// JoinRequests implements Store, in key order.
func (m *MemoryStore) JoinRequests(_ context.Context, roomID string) ([]*adp.JoinRequestResource, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.copies(roomID, func(*adp.JoinRequestResource) bool { return true }), nil
}

// PutStatus implements Store.
func (m *MemoryStore) PutStatus(_ context.Context, st *adp.AgentStatus) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	room := m.statuses[st.RoomID]
	if room == nil {
		room = map[identity.AgentID]*adp.AgentStatus{}
		m.statuses[st.RoomID] = room
	}
	c := *st
	room[st.AgentID] = &c
	return nil
}

// DeleteStatus implements Store.
func (m *MemoryStore) DeleteStatus(_ context.Context, roomID string, agent identity.AgentID) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.statuses[roomID], agent)
	return nil
}

// Statuses implements Store.
func (m *MemoryStore) Statuses(_ context.Context, roomID string) ([]*adp.AgentStatus, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*adp.AgentStatus, 0, len(m.statuses[roomID]))
	for _, st := range m.statuses[roomID] {
		c := *st
		out = append(out, &c)
	}
	slices.SortFunc(out, func(a, b *adp.AgentStatus) int { return strings.Compare(a.AgentID.String(), b.AgentID.String()) })
	return out, nil
}

// MaxNonce implements Store.
func (m *MemoryStore) MaxNonce(_ context.Context, actor identity.AgentID) (int64, int64, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	v := m.nonces[actor]
	return v[0], v[1], nil
}

// QuotaUsed implements Store.
func (m *MemoryStore) QuotaUsed(_ context.Context, q Quota) (int, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	w, _ := TrimQuota(q, m.quotas[q.Key])
	return len(w), nil
}

// TakeQuota implements Store.
func (m *MemoryStore) TakeQuota(_ context.Context, q Quota) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, ok := TrimQuota(q, m.quotas[q.Key])
	if !ok {
		return QuotaError(q)
	}
	if len(w) == 0 {
		w = nil // let an idle key's old backing array go
	}
	m.quotas[q.Key] = append(slices.Clip(w), q.Now)
	m.sweep(q)
	return nil
}

// sweep drops, once per window, the quota windows whose uses all left
// it, so that memory follows the agents active within the last window
// (m.mu held).
func (m *MemoryStore) sweep(q Quota) {
	if q.Now-m.swept < q.Window {
		return
	}
	m.swept = q.Now
	for k, w := range m.quotas {
		if len(w) == 0 || w[len(w)-1] <= q.Now-q.Window {
			delete(m.quotas, k)
		}
	}
}

// ParseStoredRecord parses a record a Store kept as the bytes of its
// canonical JSON (adp.Record.AppendJSON), in the draft those bytes are
// of: a record of the 2026-09-24 draft begins with its accepted_at member
// (canonical order puts it first), one of the seed does not (its
// received_at comes after the envelope). A Store is the same for both
// drafts; it keeps and returns what the Host gives it.
func ParseStoredRecord(b []byte) (*adp.Record, error) {
	if bytes.HasPrefix(b, acceptedFirst) {
		return adp.ParseRecordIn(adp.Draft20260924, b)
	}
	return adp.ParseRecord(b)
}

var acceptedFirst = []byte(`{"accepted_at":`)
