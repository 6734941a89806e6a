package adphost

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	sse "github.com/tmaxmax/go-sse"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/identity"
)

// subscriber is one live stream. Items are queued on ch; a subscriber that
// falls SSEBuffer items behind is dropped (done closed), and its client
// resumes from the history, as §17.3 requires anyway.
type subscriber struct {
	agent identity.AgentID
	ch    chan *sse.Message
	done  chan struct{}
	once  sync.Once
}

func (s *subscriber) close() { s.once.Do(func() { close(s.done) }) }

// send queues m, dropping the subscriber when its queue is full.
func (s *subscriber) send(m *sse.Message) {
	select {
	case s.ch <- m:
	default:
		s.close()
	}
}

// membersOnly refuses a caller that is not an active member: hiddenOr of
// membership_required with msg.
func membersOnly(room *adp.Room, roomID string, who identity.AgentID, msg string) error {
	return hiddenOr(room, roomID, who, identity.NewError(adp.CodeMembershipRequired, msg))
}

// live is GET /v1/rooms/{room_id}/events/live (§17): members only, the
// JWT in the Authorization header, no replay. The subscription exists
// before the response headers are sent, so a client that subscribes and
// then reads the history misses nothing.
func (h *Host) live(w http.ResponseWriter, r *http.Request) {
	who, hr, err := h.callerRoom(r)
	if err == nil {
		room := hr.current()
		if !isActive(room, who) && h.refresh(r.Context(), hr) {
			room = hr.current() // it may have joined on another process
		}
		if !isActive(room, who) { // §17.1, §22: a creator who left is no active member
			err = membersOnly(room, hr.id, who, "only active members subscribe to the live stream")
		}
	}
	if err != nil {
		writeError(w, err)
		return
	}
	sess, err := sse.Upgrade(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	if err := h.streams.acquire(who); err != nil {
		writeError(w, err)
		return
	}
	defer h.streams.release(who)
	sub := &subscriber{agent: who, ch: make(chan *sse.Message, h.sseBuffer), done: make(chan struct{})}
	hr.subMu.Lock()
	n := 0
	for s := range hr.subs {
		if s.agent == who {
			n++
		}
	}
	if n >= h.maxStreams {
		hr.subMu.Unlock()
		writeError(w, identity.Errorf(identity.CodeRateLimited, "at most %d live streams per agent and room", h.maxStreams))
		return
	}
	hr.subs[sub] = struct{}{}
	hr.subMu.Unlock()
	defer func() {
		hr.subMu.Lock()
		delete(hr.subs, sub)
		hr.subMu.Unlock()
	}()
	if !h.cached(hr) {
		// The replica left the cache between the lookup and the
		// subscription (a room with a subscriber stays): its successor
		// would not feed this stream.
		writeError(w, &busyError{identity.NewError(identity.CodeRateLimited, "the room was reloaded; subscribe again")})
		return
	}
	w.Header().Set("Cache-Control", "no-cache")
	rc := http.NewResponseController(w)
	// Every item gets its own write deadline: a reader that stops reading
	// is dropped (its client resumes from the history), and it never
	// holds the handler, the slot or the queued items for longer.
	deadline := func() {
		if h.writeTime > 0 {
			rc.SetWriteDeadline(time.Now().Add(h.writeTime))
		}
	}
	deadline()
	if sess.Flush() != nil {
		return
	}
	var tick <-chan time.Time
	if h.heartbeat > 0 {
		t := time.NewTicker(h.heartbeat)
		defer t.Stop()
		tick = t.C
	}
	for {
		var m *sse.Message
		select {
		case <-r.Context().Done():
			return
		case <-sub.done:
			return
		case m = <-sub.ch:
		case <-tick:
			m = &sse.Message{}
			m.AppendComment("heartbeat")
		}
		deadline()
		if sess.Send(m) != nil || sess.Flush() != nil {
			return
		}
	}
}

// streamCounts bounds the open live streams per agent (host-wide) and in
// all.
type streamCounts struct {
	perAgent, total int
	mu              sync.Mutex
	open            map[identity.AgentID]int
	n               int
}

// acquire takes a stream slot for who, or refuses with rate_limited.
func (c *streamCounts) acquire(who identity.AgentID) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.n >= c.total:
		return identity.Errorf(identity.CodeRateLimited, "the host serves at most %d live streams", c.total)
	case c.open[who] >= c.perAgent:
		return identity.Errorf(identity.CodeRateLimited, "at most %d live streams per agent", c.perAgent)
	}
	c.open[who]++
	c.n++
	return nil
}

// release gives back who's slot.
func (c *streamCounts) release(who identity.AgentID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n--
	if c.open[who]--; c.open[who] <= 0 {
		delete(c.open, who)
	}
}

// broadcast queues an item for the subscribers want accepts, and drops
// subscribers who are no longer active members (a leave or removal ends
// the stream, the creator's too).
func (h *Host) broadcast(hr *hostRoom, m *sse.Message, want func(*adp.Room, identity.AgentID) bool) {
	room := hr.room // callers hold hr.mu or just changed it under hr.mu
	hr.subMu.Lock()
	defer hr.subMu.Unlock()
	for s := range hr.subs {
		if !isActive(room, s.agent) {
			s.close()
			continue
		}
		if want == nil || want(room, s.agent) {
			s.send(m)
		}
	}
}

// publishRecord sends a room.event item; hr.mu is held. Its SSE id is the
// record's seq, the resume cursor of §17.2 (the host never replays from
// it: a client resumes through the history endpoint).
func (h *Host) publishRecord(hr *hostRoom, rec *adp.Record) {
	hr.subMu.Lock()
	idle := len(hr.subs) == 0
	hr.subMu.Unlock()
	if idle {
		return
	}
	m := &sse.Message{ID: sse.ID(strconv.FormatInt(rec.Seq, 10)), Type: sse.Type(adp.SSERoomEvent)}
	m.AppendData(string(rec.AppendJSON(nil)))
	h.broadcast(hr, m, nil)
}

// publishStatus sends a room.agent_status item (not a record: no seq,
// hashes or envelope); hr.mu is held.
func (h *Host) publishStatus(hr *hostRoom, st *adp.AgentStatus) {
	b, err := json.Marshal(st, json.Deterministic(true))
	if err != nil {
		return
	}
	m := &sse.Message{Type: sse.Type(adp.SSEAgentStatus)}
	m.AppendData(string(b))
	h.broadcast(hr, m, nil)
}

// publishJoinRequest sends a room.join_request item to subscribed creators
// and moderators (§17.5); hr.mu is held.
func (h *Host) publishJoinRequest(hr *hostRoom, jr *adp.JoinRequestResource) {
	q := jr.Request
	b, err := json.Marshal(adp.JoinRequestNotice{RoomID: q.RoomID, RequestID: q.ID, Applicant: q.Applicant, Role: q.Role,
		CreatedAt: q.CreatedAt, ExpiresAt: q.ExpiresAt}, json.Deterministic(true))
	if err != nil {
		return
	}
	m := &sse.Message{Type: sse.Type(adp.SSEJoinRequest)}
	m.AppendData(string(b))
	h.broadcast(hr, m, canReview)
}
