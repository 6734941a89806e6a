package adphost

import (
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

// Store is the host's durable state: room logs with append-if-head, join
// requests, agent statuses and the per-actor nonce cache. The Host keeps
// its rules in memory and the facts here, so a production host backs the
// interface with its own database (examples/host uses bbolt) and a
// restarted host replays the logs. Implementations must be safe for
// concurrent use; the Host serializes writes per room.
type Store interface {
	// Append adds rec to its room's log if rec.Seq is one past the last
	// record and rec.PreHash is its hash (a seq 1 record creates the
	// log); otherwise it returns ErrHeadMoved and changes nothing.
	Append(ctx context.Context, rec *adp.Record) error
	// Records returns up to limit records with seq > afterSeq, in order.
	Records(ctx context.Context, roomID string, afterSeq int64, limit int) ([]*adp.Record, error)
	// RecordByEvent finds the accepted record of an envelope hash, for the
	// exact-resubmission rule; nil when there is none.
	RecordByEvent(ctx context.Context, event envelope.Hash) (*adp.Record, error)
	// Rooms lists every room ID with a log.
	Rooms(ctx context.Context) ([]string, error)

	// PutJoinRequest creates or replaces a join request.
	PutJoinRequest(ctx context.Context, jr *adp.JoinRequestResource) error
	// JoinRequest returns one join request, or nil when there is none.
	JoinRequest(ctx context.Context, roomID, id string) (*adp.JoinRequestResource, error)
	// JoinRequests returns a room's join requests in creation order.
	JoinRequests(ctx context.Context, roomID string) ([]*adp.JoinRequestResource, error)

	// PutStatus replaces the status of (RoomID, AgentID).
	PutStatus(ctx context.Context, st *adp.AgentStatus) error
	// DeleteStatus removes an agent's status; absent is not an error.
	DeleteStatus(ctx context.Context, roomID string, agent identity.AgentID) error
	// Statuses returns a room's stored statuses, expired ones included.
	Statuses(ctx context.Context, roomID string) ([]*adp.AgentStatus, error)

	// MaxNonce returns the greatest accepted nonce of actor and when that
	// cache entry expires (Unix ms); zeros when none.
	MaxNonce(ctx context.Context, actor identity.AgentID) (nonce, expiresAt int64, err error)
	// PutMaxNonce records an actor's greatest accepted nonce.
	PutMaxNonce(ctx context.Context, actor identity.AgentID, nonce, expiresAt int64) error
}

// MemoryStore is the in-memory Store. It is safe for concurrent use.
type MemoryStore struct {
	mu       sync.RWMutex
	logs     map[string][]*adp.Record
	events   map[envelope.Hash]*adp.Record
	requests map[string][]*adp.JoinRequestResource // by room, creation order
	statuses map[string]map[identity.AgentID]*adp.AgentStatus
	nonces   map[identity.AgentID][2]int64
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{
		logs:     map[string][]*adp.Record{},
		events:   map[envelope.Hash]*adp.Record{},
		requests: map[string][]*adp.JoinRequestResource{},
		statuses: map[string]map[identity.AgentID]*adp.AgentStatus{},
		nonces:   map[identity.AgentID][2]int64{},
	}
}

// Append implements Store.
func (m *MemoryStore) Append(_ context.Context, rec *adp.Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	log := m.logs[rec.RoomID]
	if int64(len(log)) != rec.Seq-1 || (rec.Seq > 1 && log[len(log)-1].Hash != rec.PreHash) {
		return ErrHeadMoved
	}
	m.logs[rec.RoomID] = append(log, rec)
	m.events[rec.Envelope.Hash()] = rec
	return nil
}

// Records implements Store.
func (m *MemoryStore) Records(_ context.Context, roomID string, afterSeq int64, limit int) ([]*adp.Record, error) {
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
	return slices.Clone(log[afterSeq:end]), nil
}

// RecordByEvent implements Store.
func (m *MemoryStore) RecordByEvent(_ context.Context, h envelope.Hash) (*adp.Record, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.events[h], nil
}

// Rooms implements Store.
func (m *MemoryStore) Rooms(context.Context) ([]string, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]string, 0, len(m.logs))
	for id := range m.logs {
		out = append(out, id)
	}
	slices.Sort(out)
	return out, nil
}

// PutJoinRequest implements Store.
func (m *MemoryStore) PutJoinRequest(_ context.Context, jr *adp.JoinRequestResource) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := *jr
	list := m.requests[jr.Request.RoomID]
	for i, old := range list {
		if old.Request.ID == jr.Request.ID {
			list[i] = &c
			return nil
		}
	}
	m.requests[jr.Request.RoomID] = append(list, &c)
	return nil
}

// JoinRequest implements Store.
func (m *MemoryStore) JoinRequest(_ context.Context, roomID, id string) (*adp.JoinRequestResource, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, jr := range m.requests[roomID] {
		if jr.Request.ID == id {
			c := *jr
			return &c, nil
		}
	}
	return nil, nil
}

// JoinRequests implements Store.
func (m *MemoryStore) JoinRequests(_ context.Context, roomID string) ([]*adp.JoinRequestResource, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*adp.JoinRequestResource, 0, len(m.requests[roomID]))
	for _, jr := range m.requests[roomID] {
		c := *jr
		out = append(out, &c)
	}
	return out, nil
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

// PutMaxNonce implements Store.
func (m *MemoryStore) PutMaxNonce(_ context.Context, actor identity.AgentID, nonce, expiresAt int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nonces[actor] = [2]int64{nonce, expiresAt}
	return nil
}
