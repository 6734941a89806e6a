package adphost

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/identity"
)

// Notifier is implemented by a Store that several processes share
// (adphost/pgstore): Listen reports every record appended by any of them
// as (room, seq) until ctx ends, calling lost, when not nil, whenever
// notifications may have been missed (a reconnect). The Host reads the
// records themselves from the Store.
type Notifier interface {
	Listen(ctx context.Context, notify func(roomID string, seq int64), lost func()) error
}

// roomCache is the LRU of room replicas; h.mu guards it.
type roomCache struct {
	max   int
	rooms map[string]*hostRoom
	lru   *list.List // of *hostRoom, most recently used first
}

type cacheElem = list.Element

func newRoomCache(max int) *roomCache {
	return &roomCache{max: max, rooms: map[string]*hostRoom{}, lru: list.New()}
}

// touch returns the cached room id, marking it used; nil when absent.
func (c *roomCache) touch(id string) *hostRoom {
	hr := c.rooms[id]
	if hr != nil {
		c.lru.MoveToFront(hr.elem)
	}
	return hr
}

// add caches hr and evicts the least recently used rooms beyond max,
// except rooms with live subscribers and rooms still loading.
func (c *roomCache) add(hr *hostRoom) {
	c.rooms[hr.id] = hr
	hr.elem = c.lru.PushFront(hr)
	for e := c.lru.Back(); e != nil && len(c.rooms) > c.max; {
		prev := e.Prev()
		old := e.Value.(*hostRoom)
		if old != hr && old.evictable() {
			c.remove(old)
		}
		e = prev
	}
}

func (c *roomCache) remove(hr *hostRoom) {
	if c.rooms[hr.id] == hr {
		delete(c.rooms, hr.id)
		c.lru.Remove(hr.elem)
	}
}

// evictable reports whether hr may leave the cache (Host.mu held):
// loaded, no write between its lookup and its answer (its record would
// land on a replica the cache no longer serves, while a reader loads one
// without it), and no live subscriber (their streams are fed from this
// replica).
func (hr *hostRoom) evictable() bool {
	select {
	case <-hr.loaded:
	default:
		return false
	}
	if hr.pins > 0 {
		return false
	}
	hr.subMu.Lock()
	defer hr.subMu.Unlock()
	return len(hr.subs) == 0
}

func newHostRoom(id string) *hostRoom {
	return &hostRoom{id: id, subs: map[*subscriber]struct{}{}, loaded: make(chan struct{})}
}

// lookup returns a room's replica, loading it from the Store when it is
// not cached, or room_not_found.
func (h *Host) lookup(ctx context.Context, id string) (*hostRoom, error) {
	return h.lookupRefresh(ctx, id, true, false)
}

// loadTimeout bounds a room's load. The load runs detached from the
// request that started it, since every request for the room waits for
// it: one client's disconnect must not fail the others.
const loadTimeout = 30 * time.Second

// lookupRefresh is lookup; with refresh false a cached replica of a
// shared Store is returned without the head check (a write that reads the
// head itself). With pin the room stays cached until h.unpin(hr).
func (h *Host) lookupRefresh(ctx context.Context, id string, refresh, pin bool) (*hostRoom, error) {
	h.mu.Lock()
	hr := h.cache.touch(id)
	fresh := hr == nil
	if fresh {
		hr = newHostRoom(id)
		h.cache.add(hr)
	}
	if pin {
		hr.pins++
	}
	h.mu.Unlock()
	if fresh {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), loadTimeout)
		hr.mu.Lock()
		hr.loadErr = h.load(lctx, hr)
		close(hr.loaded)
		hr.mu.Unlock()
		cancel()
		if hr.loadErr != nil {
			h.mu.Lock()
			h.cache.remove(hr)
			h.mu.Unlock()
		}
	} else {
		select {
		case <-hr.loaded:
		case <-ctx.Done():
			if pin {
				h.unpin(hr)
			}
			return nil, ctx.Err()
		}
		if hr.loadErr == nil && ((h.shared && refresh) || hr.unsure.Load()) {
			// Another process may have appended since (or this one,
			// with an append whose outcome is unknown): read your
			// writes across processes, for one head read. (A stale
			// replica would answer reads with an old state; writes are
			// judged again anyway.)
			h.refresh(ctx, hr)
		}
	}
	if hr.loadErr != nil {
		if pin {
			h.unpin(hr)
		}
		return nil, hr.loadErr
	}
	return hr, nil
}

// unpin ends a write's pin of hr (see lookupRefresh).
func (h *Host) unpin(hr *hostRoom) {
	h.mu.Lock()
	hr.pins--
	h.mu.Unlock()
}

// drop takes hr out of the cache, whatever uses it, because it cannot be
// put in line with the Store (hr.mu held): its live streams end (their
// clients resume from the history, from the replica loaded next), and the
// writes that hold it are answered service_unavailable.
func (h *Host) drop(hr *hostRoom, cause error) {
	h.log.Error("adphost: room replica dropped; it is loaded again on next use", "room", hr.id, "err", cause)
	hr.dropped.Store(true)
	h.mu.Lock()
	h.cache.remove(hr)
	h.mu.Unlock()
	hr.subMu.Lock()
	for s := range hr.subs {
		s.close()
	}
	hr.subMu.Unlock()
}

// cached reports whether hr is the cached replica of its room.
func (h *Host) cached(hr *hostRoom) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cache.rooms[hr.id] == hr
}

// cachedRooms returns the cached rooms.
func (h *Host) cachedRooms() []*hostRoom {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*hostRoom, 0, len(h.cache.rooms))
	for _, hr := range h.cache.rooms {
		out = append(out, hr)
	}
	return out
}

// CachedRooms returns how many room replicas the host holds in memory.
func (h *Host) CachedRooms() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.cache.rooms)
}

// addRoom caches a room just created by this process (its first record is
// stored). A replica loaded meanwhile by a reader loses to it.
func (h *Host) addRoom(hr *hostRoom) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if old := h.cache.rooms[hr.id]; old != nil {
		h.cache.remove(old)
	}
	h.cache.add(hr)
}

// load is loadRoom, with every failure but room_not_found answered as
// service_unavailable (and logged): it is no verdict on the request, and
// its text is storage's.
func (h *Host) load(ctx context.Context, hr *hostRoom) error {
	err := h.loadRoom(ctx, hr)
	if err != nil && !errors.Is(err, adp.ErrRoomNotFound) {
		h.log.Error("adphost: loading a room failed", "room", hr.id, "err", err)
		return unavailable(err)
	}
	return err
}

// loadRoom builds hr.room (hr.mu held): the newest snapshot, then the
// records after it. A room without records does not exist. A snapshot is
// a shortcut, the log the truth: one that does not restore (truncated,
// written by a newer version) or is not of the log (another room, another
// record at its seq) is ignored, the room rebuilt from its first record,
// and a fresh snapshot stored in its place.
func (h *Host) loadRoom(ctx context.Context, hr *hostRoom) error {
	opts := h.roomOpts
	opts.URL = h.RoomURL(hr.id)
	seq, snap, err := h.store.Snapshot(ctx, hr.id)
	if err != nil {
		return err
	}
	var room *adp.Room
	var recs []*adp.Record
	if snap != nil {
		// The snapshot's own record comes with the records after it: it
		// checks the snapshot against the log, in the same read.
		if recs, err = h.store.Records(ctx, hr.id, max(seq-1, 0), catchUpPage, h.pageBytes); err != nil {
			return err
		}
		if room, err = adp.RestoreRoom(snap, &opts); err == nil {
			switch l := room.Latest(); {
			case room.ID() != hr.id || l.Seq != seq || seq < 1:
				err = fmt.Errorf("the snapshot is of room %q at seq %d", clip(room.ID()), l.Seq)
			case len(recs) == 0 || recs[0].Seq != seq || recs[0].Hash != l.Hash:
				err = fmt.Errorf("the snapshot's record %d is not the log's", seq)
			}
		}
		if err != nil {
			h.log.Warn("adphost: a stored room snapshot does not load; rebuilding the room from its log", "room", hr.id, "seq", seq, "err", err)
			room, recs = nil, nil
		}
	}
	rebuilt := snap != nil && room == nil
	if room == nil {
		room = adp.NewRoom(hr.id, &opts)
	}
	hr.room = room
	hr.reg = hr.room.Registry()
	hr.seq.Store(hr.room.Latest().Seq)
	if len(recs) > 0 {
		if err := h.applyStored(ctx, hr, recs[1:]); err != nil {
			return err
		}
	}
	if len(recs) == 0 || h.more(recs, catchUpPage) {
		if err := h.catchUp(ctx, hr); err != nil {
			return err
		}
	}
	if hr.room.Latest().Seq == 0 {
		return identity.Errorf(adp.CodeRoomNotFound, "room %q does not exist", clip(hr.id))
	}
	if rebuilt {
		h.snapshot(ctx, hr)
	}
	return h.reconcile(ctx, hr)
}

// reconcile brings the room's stored join requests in line with its log
// whenever the room is loaded (§11: the log is the truth): the review record and the request's
// new status are two Store writes, and a crash (or a Store error) between
// them must not leave a reviewed request pending forever. The log wins,
// as it does for the room's own rules. hr.mu is held.
//
// Only the pending requests that have not expired are read (through the
// Store's index), so that a load does not grow with the room's history of
// applicants: a request reviewed before it expired and left pending by a
// crash shows as expired once it has, which is no less than it can
// still be used for (§11: an approval ends with the request).
func (h *Host) reconcile(ctx context.Context, hr *hostRoom) error {
	list, err := h.pendingRequests(ctx, hr.id, h.now().UnixMilli())
	if err != nil {
		return err
	}
	for _, jr := range list {
		seq, ok := hr.room.ReviewSeq(jr.Request.ID)
		if !ok {
			continue
		}
		recs, err := h.store.Records(ctx, hr.id, seq-1, 1, 1)
		if err != nil {
			return err
		}
		if len(recs) != 1 || recs[0].Seq != seq {
			return fmt.Errorf("adphost: the review of join request %q (seq %d) is not in the log", clip(jr.Request.ID), seq)
		}
		ev, err := adp.ParseEventIn(h.draft, recs[0].Envelope)
		if err != nil {
			return err
		}
		if err := h.applyReview(ctx, hr.id, ev, recs[0]); err != nil {
			return err
		}
	}
	return nil
}

// catchUp applies the Store's records after the replica's latest (hr.mu
// held) and announces each to the room's live subscribers, in seq order:
// the replica's latest seq is the dedupe cursor of every stream. A Store
// that cannot be read leaves the replica as far as it got; a stored
// record the replica cannot apply means the replica left the Store's
// history, and it is dropped. Either is service_unavailable to the
// caller, never a verdict on its request.
func (h *Host) catchUp(ctx context.Context, hr *hostRoom) error {
	for {
		recs, err := h.store.Records(ctx, hr.id, hr.room.Latest().Seq, catchUpPage, h.pageBytes)
		if err != nil {
			return unavailable(err)
		}
		if err := h.applyStored(ctx, hr, recs); err != nil {
			return err
		}
		if !h.more(recs, catchUpPage) {
			hr.unsure.Store(false)
			return nil
		}
	}
}

// catchUpPage is how many records a catch-up reads at a time.
const catchUpPage = 500

// more reports whether records may follow recs, a page that
// Store.Records read with limit and the page budget: it holds limit
// records, or their total reaches the budget.
func (h *Host) more(recs []*adp.Record, limit int) bool {
	if len(recs) >= limit {
		return true
	}
	total := 0
	for _, rec := range recs {
		total += recordSize(rec)
	}
	return total >= h.pageBytes
}

// applyStored applies stored records to hr's replica and announces each
// (hr.mu held); see catchUp.
func (h *Host) applyStored(ctx context.Context, hr *hostRoom, recs []*adp.Record) error {
	for _, rec := range recs {
		ev, err := adp.ParseEventIn(h.draft, rec.Envelope)
		if err == nil {
			err = hr.room.Apply(ctx, rec) // checks stored join requests by content, not status
		}
		if err != nil {
			if !hr.dropped.Load() {
				select {
				case <-hr.loaded:
					h.drop(hr, err)
				default: // a load: its error removes it
				}
			}
			return unavailable(err)
		}
		hr.seq.Store(rec.Seq)
		hr.ix = nil
		if ev.Type == adp.TypeRoomCreate || ev.Type == adp.TypeTypeDefine {
			hr.reg = hr.room.Registry()
		}
		h.publishRecord(hr, rec)
	}
	return nil
}

// startListening starts, for a Notifier store, the listener and the
// periodic repair of subscribed rooms.
func (h *Host) startListening() {
	ctx, cancel := context.WithCancel(context.Background())
	h.stop = cancel
	n, ok := h.store.(Notifier)
	if !ok {
		return
	}
	h.shared = true
	h.bg.Add(2)
	go func() {
		defer h.bg.Done()
		n.Listen(ctx, h.kick, func() { h.repairAll(ctx) })
	}()
	go func() {
		defer h.bg.Done()
		t := time.NewTicker(h.repair)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				h.repairAll(ctx)
			}
		}
	}()
}

// kick is a notification: room id has a record seq. A cached replica that
// is behind and has live subscribers catches up in the background; one
// without catches up when next used, and an uncached room is loaded fresh
// then.
func (h *Host) kick(id string, seq int64) {
	h.mu.Lock()
	hr := h.cache.rooms[id]
	h.mu.Unlock()
	// A replica that has seq already (this process's own appends come
	// back too) costs no goroutine and no wait on the room's lock.
	if hr == nil || hr.seq.Load() >= seq {
		return
	}
	// Only live subscribers need the record pushed: a read or a write
	// brings the replica up to the Store's head before it uses it
	// (lookup's refresh, the write's prefetched head), so a replica no one
	// follows here waits for its next use. Otherwise every process would
	// replay every other process's writes to the rooms it has cached.
	hr.subMu.Lock()
	idle := len(hr.subs) == 0
	hr.subMu.Unlock()
	if idle || hr.kicked.Swap(true) {
		return
	}
	h.bg.Add(1)
	go func() {
		defer h.bg.Done()
		// Cleared before the catch-up reads the Store, so that a
		// notification arriving meanwhile schedules another.
		hr.kicked.Store(false)
		select {
		case <-hr.loaded:
		default:
			return // its load reads the Store anyway
		}
		hr.mu.Lock()
		defer hr.mu.Unlock()
		if hr.loadErr == nil && !hr.dropped.Load() && hr.room.Latest().Seq < seq {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			h.catchUp(ctx, hr)
		}
	}()
}

// repairAll compares every cached room that has live subscribers with the
// Store's head, and catches up those behind: the repair of a lost
// notification.
func (h *Host) repairAll(ctx context.Context) {
	for _, hr := range h.cachedRooms() {
		hr.subMu.Lock()
		idle := len(hr.subs) == 0
		hr.subMu.Unlock()
		select {
		case <-hr.loaded:
		default:
			continue
		}
		if idle || hr.loadErr != nil {
			continue
		}
		head, err := h.store.Head(ctx, hr.id)
		if err != nil {
			continue
		}
		hr.mu.Lock()
		if !hr.dropped.Load() && hr.room.Latest().Seq < head {
			h.catchUp(ctx, hr)
		}
		hr.mu.Unlock()
	}
}

// behind reports whether the Store's log is ahead of hr's replica (hr.mu
// held): a refusal judged on the replica is then no verdict, since another
// process appended what the write (or read) may rely on.
func (h *Host) behind(ctx context.Context, hr *hostRoom) bool {
	head, err := h.store.Head(ctx, hr.id)
	return err == nil && head > hr.room.Latest().Seq
}

// refresh catches hr's replica up when the Store's log is ahead of it,
// and reports whether it did: a read refused on the replica is judged
// again after it.
func (h *Host) refresh(ctx context.Context, hr *hostRoom) bool {
	// The head is read without the room's lock, which a write holds for
	// its whole append: readers queued behind it must not each add a
	// round trip to the room's serial path.
	unsure := hr.unsure.Load()
	head, err := h.store.Head(ctx, hr.id)
	if err != nil {
		return false
	}
	if hr.seq.Load() >= head && !unsure {
		return false
	}
	hr.mu.Lock()
	defer hr.mu.Unlock()
	if hr.dropped.Load() {
		return false
	}
	if unsure {
		// Cleared only by a head read made under the lock that the
		// failed appends hold when they set it.
		if head, err = h.store.Head(ctx, hr.id); err != nil {
			return false
		}
		if hr.room.Latest().Seq >= head {
			hr.unsure.Store(false)
			return false
		}
	}
	return hr.room.Latest().Seq < head && h.catchUp(ctx, hr) == nil
}

// ruleRefusal reports whether err is a verdict (an identity.Error) rather
// than a failure to reach one.
func ruleRefusal(err error) bool {
	var e *identity.Error
	return errors.As(err, &e)
}
