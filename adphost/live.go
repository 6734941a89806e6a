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
	"github.com/agentprotocols/go-sdk/internal/pulse"
)

// subscriber is one live stream. Items are queued on ch; a subscriber that
// falls SSEBuffer items behind is dropped (done closed), and its client
// resumes from the history, as §17.3 requires anyway.
type subscriber struct {
	agent identity.AgentID
	ch    chan *item
	done  chan struct{}
	once  sync.Once
}

// item is one live-stream item: the bytes of its SSE event, rendered once
// for every subscriber (Host.render).
type item struct{ event []byte }

func (s *subscriber) close() { s.once.Do(func() { close(s.done) }) }

// send queues it, dropping the subscriber when its queue is full.
func (s *subscriber) send(it *item) {
	select {
	case s.ch <- it:
	default:
		s.close()
	}
}

// render renders m as the bytes of its SSE event, which every subscriber
// then writes as they are: an item costs one rendering, however many
// subscribers it goes to (h.rendered counts them).
func (h *Host) render(m *sse.Message) *item {
	h.rendered.Add(1)
	b, _ := m.MarshalText() // writes to a bytes.Buffer, which cannot fail
	return &item{b}
}

// heartbeat is the SSE comment sent to idle streams.
var heartbeat = func() *item {
	m := &sse.Message{}
	m.AppendComment("heartbeat")
	b, _ := m.MarshalText()
	return &item{b}
}()

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
	var room *adp.Room
	if err == nil {
		room = hr.current()
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
	sub := &subscriber{agent: who, ch: make(chan *item, h.sseBuffer), done: make(chan struct{})}
	slot := &streamSlot{agent: who, room: hr.id, speaking: speaksIn(room, who), sub: sub}
	if err := h.streams.acquire(slot); err != nil {
		writeError(w, err)
		return
	}
	defer h.streams.release(slot)
	hr.subMu.Lock()
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
		var it *item
		select {
		case <-r.Context().Done():
			return
		case <-sub.done:
			return
		case it = <-sub.ch:
		case <-tick:
			it = heartbeat
		}
		deadline()
		if _, err := w.Write(it.event); err != nil || rc.Flush() != nil {
			return
		}
	}
}

// speaksIn reports whether who speaks in the room: its creator or an
// active moderator or speaker, the members whose streams the host keeps
// before observers'.
func speaksIn(room *adp.Room, who identity.AgentID) bool {
	if c, _ := room.Creator(); c == who {
		return true
	}
	m, ok := room.Member(who)
	return ok && m.Status == adp.MemberActive && speaking(m.Role)
}

// streamSlot is one open live stream as streamCounts admits it.
type streamSlot struct {
	agent    identity.AgentID
	room     string
	speaking bool // its agent spoke in the room when it opened
	sub      *subscriber
	order    uint64 // admission order
}

type agentRoom struct {
	agent identity.AgentID
	room  string
}

// streamCounts admits live streams: at most perRoom per agent and room,
// perAgent per agent and total in all (per process). The total is shared
// among rooms, not first come, first served: when it is reached, a new
// stream of a room takes the place of another stream, chosen in order
//
//  1. an observer's stream, if the new one speaks (its agent is the
//     room's creator or an active moderator or speaker);
//  2. a stream of the same kind in a room that holds at least two more
//     streams than the new one's room;
//
// each time in the room holding the most streams, and there from the
// agent holding the most streams, newest first. Failing both it is
// refused. Streams in other rooms, of agents who joined them for nothing,
// can then take from a room only down to the share of the room that holds
// the most: a room's creator and speakers get their streams against any
// number of observers, and against speaking streams unless those are
// spread so thin that no room holds two more than this one (so many rooms
// that each holds at most one more: with the default total, a thousand
// rooms). The total stays a hard bound on the memory the streams hold,
// whatever keeps them open.
type streamCounts struct {
	perRoom, perAgent, total int

	mu      sync.Mutex
	slots   map[*streamSlot]struct{}
	agents  map[identity.AgentID]int
	rooms   map[string]int
	members map[agentRoom]int
	next    uint64
	freed   pulse.Pulse // fired when a slot is removed (tests wait on it)
}

func newStreamCounts(perRoom, perAgent, total int) streamCounts {
	return streamCounts{perRoom: perRoom, perAgent: perAgent, total: total, slots: map[*streamSlot]struct{}{},
		agents: map[identity.AgentID]int{}, rooms: map[string]int{}, members: map[agentRoom]int{}}
}

// acquire admits s, ending another stream to make room for it if it must,
// or refuses it with rate_limited.
func (c *streamCounts) acquire(s *streamSlot) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.members[agentRoom{s.agent, s.room}] >= c.perRoom:
		return identity.Errorf(identity.CodeRateLimited, "at most %d live streams per agent and room", c.perRoom)
	case c.agents[s.agent] >= c.perAgent:
		return identity.Errorf(identity.CodeRateLimited, "at most %d live streams per agent", c.perAgent)
	case len(c.slots) >= c.total:
		v := c.victim(s)
		if v == nil {
			return identity.Errorf(identity.CodeRateLimited, "the host serves at most %d live streams", c.total)
		}
		c.remove(v)
		v.sub.close() // its client resumes from the history, and may subscribe again
	}
	c.next++
	s.order = c.next
	c.slots[s] = struct{}{}
	c.agents[s.agent]++
	c.rooms[s.room]++
	c.members[agentRoom{s.agent, s.room}]++
	return nil
}

// victim picks the stream s takes the place of, or nil (c.mu held).
func (c *streamCounts) victim(s *streamSlot) *streamSlot {
	var observer, richer *streamSlot // rule 1, rule 2
	for v := range c.slots {
		switch {
		case s.speaking && !v.speaking:
			observer = c.before(v, observer)
		case v.speaking == s.speaking && v.room != s.room && c.rooms[v.room] >= c.rooms[s.room]+2:
			richer = c.before(v, richer)
		}
	}
	if observer != nil {
		return observer
	}
	return richer
}

// before returns whichever of v and w (nil: none) goes first: the one in
// the room with more streams, of the agent with more, the newer (c.mu
// held).
func (c *streamCounts) before(v, w *streamSlot) *streamSlot {
	switch {
	case w == nil:
		return v
	case c.rooms[v.room] != c.rooms[w.room]:
		return pick(c.rooms[v.room] > c.rooms[w.room], v, w)
	case c.agents[v.agent] != c.agents[w.agent]:
		return pick(c.agents[v.agent] > c.agents[w.agent], v, w)
	}
	return pick(v.order > w.order, v, w)
}

func pick[T any](first bool, a, b T) T {
	if first {
		return a
	}
	return b
}

// release gives back s's slot, unless it was taken for another stream.
func (c *streamCounts) release(s *streamSlot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.slots[s]; ok {
		c.remove(s)
	}
}

// remove forgets s (c.mu held).
func (c *streamCounts) remove(s *streamSlot) {
	delete(c.slots, s)
	dec(c.agents, s.agent)
	dec(c.rooms, s.room)
	dec(c.members, agentRoom{s.agent, s.room})
	c.freed.Fire()
}

// dec counts one less of k, forgetting it at zero.
func dec[K comparable](m map[K]int, k K) {
	if m[k]--; m[k] <= 0 {
		delete(m, k)
	}
}

// broadcast queues an item for the subscribers want accepts, and drops
// subscribers who are no longer active members (a leave or removal ends
// the stream, the creator's too).
func (h *Host) broadcast(hr *hostRoom, m *sse.Message, want func(*adp.Room, identity.AgentID) bool) {
	room := hr.room // callers hold hr.mu or just changed it under hr.mu
	hr.subMu.Lock()
	defer hr.subMu.Unlock()
	var it *item
	for s := range hr.subs {
		if !isActive(room, s.agent) {
			s.close()
			continue
		}
		if want == nil || want(room, s.agent) {
			if it == nil {
				it = h.render(m)
			}
			s.send(it)
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
	if m := h.joinRequestNotice(jr); m != nil {
		h.broadcast(hr, m, canReview)
	}
}
