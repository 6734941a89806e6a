// Package boltstore is an [adphost.Store] in one bbolt file, so that a
// single-process ADP host survives a restart. It is the worked example of
// the Store interface: records are stored in their canonical JSON form and
// parsed strictly on the way out, because the file is not trusted more
// than a network answer.
//
// bbolt allows one process per file (a second one fails with [ErrLocked]
// after [Options].LockTimeout); a host served by several processes needs a
// shared database store.
package boltstore

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/groupcommit"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

// Store is an [adphost.Store] in one bbolt file, and an
// [adphost.JoinRequestIndex]. It is safe for concurrent use; bbolt
// serializes its writers.
//
// Layout: bucket "rooms" holds one bucket per room (key: big-endian seq,
// value: record JSON); "events" and "events-recent" map an envelope hash
// to room ID and seq (see recentEvents);
// "requests" and "statuses" hold one bucket per room of JSON values,
// keyed by request ID and Agent ID; "request-order" indexes each room's
// requests by creation (key: big-endian created_at and the ID) and
// "request-applicants" by applicant (key: Agent ID, NUL, request ID) and
// "request-pending" holds those stored as pending by expiry (key:
// big-endian expires_at and the ID), so that one request is one key
// lookup, the list needs no sort, a page starts with one seek, and
// neither an agent's requests nor a room's pending ones need a scan;
// "nonces" maps an Agent ID to its greatest nonce and expiry; "quotas"
// maps a quota key to its window (big-endian uses); "snapshots" maps a
// room to its seq and snapshot; "index" maps a room to its index entry
// (JSON, members included) as of its last lifecycle or membership record;
// "heads" maps a room to the seq, record hash and received_at of its last
// record (the head check of an append, and the index entry's seq and
// activity), so that an append parses no stored record and rewrites no
// index entry.
//
// Appends, and the Store's other updates, share bbolt transactions (group
// commit; see update), and it is an [adphost.BatchAppender]: a commit's
// two fdatasyncs serve every write that arrived while the previous one
// was under way, in every room.
type Store struct {
	db *bolt.DB

	// updates is the group commit: the updates that wait while a
	// transaction commits share the next one.
	updates groupcommit.Queue[*update]

	// recent is the event index's newest entries.
	recent recentEvents
}

var (
	_ adphost.Store            = (*Store)(nil)
	_ adphost.BatchAppender    = (*Store)(nil)
	_ adphost.WriteStateReader = (*Store)(nil)
)

var (
	bRooms    = []byte("rooms")
	bEvents   = []byte("events")
	bRequests = []byte("requests")
	bStatuses = []byte("statuses")
	bNonces   = []byte("nonces")
	bQuotas   = []byte("quotas")
	bSnaps    = []byte("snapshots")
	bIndex    = []byte("index")
	bOrder    = []byte("request-order")
	bAppl     = []byte("request-applicants")
	bPending  = []byte("request-pending")
	bHeads    = []byte("heads")
)

// Options configures Open. A nil *Options means defaults.
type Options struct {
	// LockTimeout bounds the wait for the file's lock, which a process
	// that has the file open holds; 0 means DefaultLockTimeout. Open then
	// fails with an error wrapping ErrLocked.
	LockTimeout time.Duration
}

// DefaultLockTimeout is the default Options.LockTimeout.
const DefaultLockTimeout = time.Second

// ErrLocked is wrapped by Open's error when another process (or another
// Store of this one) has the file open.
var ErrLocked = errors.New("boltstore: the file is in use by another process")

// Open opens (or creates) the store's file at path. The file is locked
// for this process while it is open; a file another process holds fails
// after opts.LockTimeout with ErrLocked, rather than waiting for it. The
// file's free-page list is not written at every commit; after a crash,
// Open rebuilds it from the pages, which costs a read of the file's page
// headers.
func Open(path string, opts *Options) (*Store, error) {
	timeout := DefaultLockTimeout
	if opts != nil && opts.LockTimeout > 0 {
		timeout = opts.LockTimeout
	}
	// The free-page list is not written at every commit (bbolt rebuilds
	// it from the pages when it opens a file that was not closed): a
	// commit writes only what it changed.
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout, NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s (its lock was not released within %v)", ErrLocked, path, timeout)
	}
	if err != nil {
		return nil, err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bRooms, bEvents, bRecent, bRequests, bStatuses, bNonces, bQuotas, bSnaps, bIndex, bHeads} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return indexRequests(tx)
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	s := &Store{db: db}
	db.View(func(tx *bolt.Tx) error { s.recent.load(tx); return nil })
	return s, nil
}

// Close folds the event index's newest entries into "events" (so that
// the file is whole for a version without "events-recent") and closes
// the file.
func (s *Store) Close() error {
	err := s.update(func(tx *bolt.Tx) error {
		if len(s.recent.m) == 0 {
			return nil
		}
		return s.recent.foldInto(tx)
	})
	if errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
		err = nil // closed already
	}
	return errors.Join(err, s.db.Close())
}

func seqKey(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }

// Append implements adphost.Store: every check and change of the commit
// in one transaction (shared with other updates, see update).
func (s *Store) Append(_ context.Context, c *adphost.Commit) error {
	if c.Record.Seq == 1 && c.Index == nil {
		return errors.New("boltstore: a room's first record needs its index entry")
	}
	return s.update(func(tx *bolt.Tx) error { return s.appendCommits(tx, []*adphost.Commit{c}) })
}

// AppendBatch implements adphost.BatchAppender: the records of cs, which
// follow each other in one room, in one transaction, all or none.
func (s *Store) AppendBatch(ctx context.Context, cs []*adphost.Commit) error {
	switch len(cs) {
	case 0:
		return nil
	case 1:
		return s.Append(ctx, cs[0])
	}
	for i, c := range cs {
		rec := c.Record
		if c.Index != nil || rec.Seq == 1 || rec.RoomID != cs[0].Record.RoomID ||
			(i > 0 && (rec.Seq != cs[i-1].Record.Seq+1 || rec.PreHash != cs[i-1].Record.Hash)) {
			return errors.New("boltstore: a batch is consecutive records of one room, without index entries")
		}
	}
	return s.update(func(tx *bolt.Tx) error { return s.appendCommits(tx, cs) })
}

// nonceEntry is an actor's entry in the nonce cache.
type nonceEntry struct{ nonce, exp int64 }

// appendCommits appends the records of cs, consecutive records of one
// room (one, with its index entry, or several without), with their nonces
// and quotas. Every check is made before the first change, so that a
// refusal (a moved head, a duplicate envelope, a used nonce or quota)
// leaves the transaction as it was.
func (s *Store) appendCommits(tx *bolt.Tx, cs []*adphost.Commit) error {
	first, last := cs[0].Record, cs[len(cs)-1].Record
	id := []byte(first.RoomID)
	rooms := tx.Bucket(bRooms)
	room := rooms.Bucket(id)
	seq, hash, err := head(tx, room, id)
	if err != nil {
		return err
	}
	if first.Seq != seq+1 || (seq > 0 && first.PreHash != hash) {
		return adphost.ErrHeadMoved
	}
	hashes := make([]envelope.Hash, len(cs))
	for i, c := range cs {
		hashes[i] = c.Record.Envelope.Hash()
		if s.recent.getW(tx, hashes[i]) != nil || slices.Contains(hashes[:i], hashes[i]) {
			return adphost.ErrDuplicateEvent
		}
	}
	nonces := tx.Bucket(bNonces)
	next := make(map[identity.AgentID]nonceEntry, len(cs))
	for _, c := range cs {
		e, ok := next[c.Nonce.Actor]
		if !ok {
			if v := nonces.Get([]byte(c.Nonce.Actor.String())); len(v) == 16 {
				e = nonceEntry{int64(binary.BigEndian.Uint64(v)), int64(binary.BigEndian.Uint64(v[8:]))}
			}
		}
		n, err := adphost.CheckNonce(c.Nonce, e.nonce, e.exp)
		if err != nil {
			return err
		}
		next[c.Nonce.Actor] = nonceEntry{n, c.Nonce.ExpiresAt}
	}
	var windows map[string][]int64
	for _, c := range cs {
		if q := c.Quota; q != nil {
			if windows == nil {
				windows = map[string][]int64{}
			}
			w, ok := windows[q.Key]
			if !ok {
				w = quotaWindow(tx, q.Key)
			}
			w, fits := adphost.TrimQuota(*q, w)
			if !fits {
				return adphost.QuotaError(*q)
			}
			windows[q.Key] = append(w, q.Now)
		}
	}

	// Checked: the changes.
	if room == nil {
		if room, err = rooms.CreateBucket(id); err != nil {
			return err
		}
	}
	for actor, e := range next {
		if err := nonces.Put([]byte(actor.String()), binary.BigEndian.AppendUint64(seqKey(e.nonce), uint64(e.exp))); err != nil {
			return err
		}
	}
	for key, w := range windows {
		if err := putQuotaWindow(tx, key, w); err != nil {
			return err
		}
	}
	room.FillPercent = 1 // records are appended in key order: full pages
	for i, c := range cs {
		rec := c.Record
		if err := room.Put(seqKey(rec.Seq), rec.AppendJSON(nil)); err != nil {
			return err
		}
		if err := s.recent.put(tx, hashes[i], append(seqKey(rec.Seq), rec.RoomID...)); err != nil {
			return err
		}
	}
	if err := tx.Bucket(bHeads).Put(id, headEntry(last)); err != nil {
		return err
	}
	if ix := cs[0].Index; ix != nil {
		return putIndex(tx, last, ix)
	}
	return nil
}

// headLen is the length of a heads entry: the seq, record hash and
// received_at of a room's last record.
const headLen = 8 + 32 + 8

func headEntry(rec *adp.Record) []byte {
	b := make([]byte, 0, headLen)
	b = binary.BigEndian.AppendUint64(b, uint64(rec.Seq))
	b = append(b, rec.Hash[:]...)
	return binary.BigEndian.AppendUint64(b, uint64(rec.ReceivedAt))
}

// head returns the seq and record hash of a room's last record (room is
// its bucket, nil when it has none): from its heads entry, which every
// append keeps, or, when the entry is missing or behind (a file an older
// version wrote last), from the record itself.
func head(tx *bolt.Tx, room *bolt.Bucket, id []byte) (int64, envelope.Hash, error) {
	var hash envelope.Hash
	if room == nil {
		return 0, hash, nil
	}
	k, v := room.Cursor().Last()
	if len(k) != 8 {
		return 0, hash, nil
	}
	seq := int64(binary.BigEndian.Uint64(k))
	if e := tx.Bucket(bHeads).Get(id); len(e) == headLen && int64(binary.BigEndian.Uint64(e)) == seq {
		copy(hash[:], e[8:40])
		return seq, hash, nil
	}
	last, err := adphost.ParseStoredRecord(v)
	if err != nil {
		return 0, hash, err
	}
	if last.Seq != seq {
		return 0, hash, fmt.Errorf("boltstore: room %q: the record under seq %d says seq %d", id, seq, last.Seq)
	}
	return seq, last.Hash, nil
}

// putIndex replaces a room's index entry, as of rec; ix.Members nil keeps
// the members and the invitations. The seq and activity of the records after rec are the
// heads entry's (see indexes): a message does not rewrite the entry.
func putIndex(tx *bolt.Tx, rec *adp.Record, ix *adphost.RoomIndex) error {
	b := tx.Bucket(bIndex)
	cur := indexEntry{Summary: ix.Summary, Agenda: ix.Agenda, Members: ix.Members, Invites: ix.Invites}
	if ix.Members == nil {
		if old := b.Get([]byte(rec.RoomID)); old != nil {
			var prev indexEntry
			if err := strictjson.Unmarshal(old, &prev); err != nil {
				return err
			}
			cur.Members, cur.Invites = prev.Members, prev.Invites
		}
	}
	cur.Summary.Seq, cur.Summary.LastActivity = rec.Seq, rec.ReceivedAt
	v, err := json.Marshal(cur, json.Deterministic(true))
	if err != nil {
		return err
	}
	return b.Put([]byte(rec.RoomID), v)
}

// indexEntry is the stored form of an adphost.RoomIndex.
type indexEntry struct {
	Summary adp.RoomSummary `json:"summary"`
	Agenda  string          `json:"agenda,omitzero"`
	Members []memberEntry   `json:"members,omitzero"`
	// Invites are the room's invitations (2026-09-24 draft); entries
	// written before they were indexed have none.
	Invites []adphost.InviteIndex `json:"invites,omitzero"`
}

type memberEntry = adphost.MemberIndex

// quotaWindow reads a quota key's uses (ascending Unix ms).
func quotaWindow(tx *bolt.Tx, key string) []int64 {
	var w []int64
	for v := tx.Bucket(bQuotas).Get([]byte(key)); len(v) >= 8; v = v[8:] {
		w = append(w, int64(binary.BigEndian.Uint64(v)))
	}
	return w
}

// putQuotaWindow stores a quota key's uses.
func putQuotaWindow(tx *bolt.Tx, key string, w []int64) error {
	out := make([]byte, 0, 8*len(w))
	for _, u := range w {
		out = binary.BigEndian.AppendUint64(out, uint64(u))
	}
	return tx.Bucket(bQuotas).Put([]byte(key), out)
}

// takeQuota is the quota rule inside a transaction; a refusal changes
// nothing.
func takeQuota(tx *bolt.Tx, q adphost.Quota) error {
	w, ok := adphost.TrimQuota(q, quotaWindow(tx, q.Key))
	if !ok {
		return adphost.QuotaError(q)
	}
	return putQuotaWindow(tx, q.Key, append(w, q.Now))
}

// TakeQuota implements adphost.Store.
func (s *Store) TakeQuota(_ context.Context, q adphost.Quota) error {
	return s.update(func(tx *bolt.Tx) error { return takeQuota(tx, q) })
}

// QuotaUsed implements adphost.Store.
func (s *Store) QuotaUsed(_ context.Context, q adphost.Quota) (int, error) {
	var n int
	err := s.db.View(func(tx *bolt.Tx) error {
		w, _ := adphost.TrimQuota(q, quotaWindow(tx, q.Key))
		n = len(w)
		return nil
	})
	return n, err
}

// Head implements adphost.Store.
func (s *Store) Head(_ context.Context, roomID string) (int64, error) {
	var seq int64
	err := s.db.View(func(tx *bolt.Tx) error {
		if room := tx.Bucket(bRooms).Bucket([]byte(roomID)); room != nil {
			if k, _ := room.Cursor().Last(); len(k) == 8 {
				seq = int64(binary.BigEndian.Uint64(k))
			}
		}
		return nil
	})
	return seq, err
}

// PutSnapshot implements adphost.Store.
func (s *Store) PutSnapshot(_ context.Context, roomID string, seq int64, snap []byte) error {
	return s.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bSnaps)
		if old := b.Get([]byte(roomID)); len(old) >= 8 && int64(binary.BigEndian.Uint64(old)) > seq {
			return nil
		}
		return b.Put([]byte(roomID), append(seqKey(seq), snap...))
	})
}

// Snapshot implements adphost.Store.
func (s *Store) Snapshot(_ context.Context, roomID string) (seq int64, snap []byte, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bSnaps).Get([]byte(roomID)); len(v) >= 8 {
			seq, snap = int64(binary.BigEndian.Uint64(v)), bytes.Clone(v[8:])
		}
		return nil
	})
	return seq, snap, err
}

// indexes decodes every index entry that keep accepts.
func (s *Store) indexes(keep func(tx *bolt.Tx, id string, e *indexEntry) bool) ([]adphost.RoomIndex, error) {
	var out []adphost.RoomIndex
	err := s.db.View(func(tx *bolt.Tx) error {
		heads := tx.Bucket(bHeads)
		return tx.Bucket(bIndex).ForEach(func(k, v []byte) error {
			var e indexEntry
			if err := strictjson.Unmarshal(v, &e); err != nil {
				return err
			}
			if h := heads.Get(k); len(h) == headLen {
				if seq := int64(binary.BigEndian.Uint64(h)); seq > e.Summary.Seq {
					e.Summary.Seq, e.Summary.LastActivity = seq, int64(binary.BigEndian.Uint64(h[40:]))
				}
			}
			if keep(tx, string(k), &e) {
				out = append(out, adphost.RoomIndex{Summary: e.Summary, Agenda: e.Agenda, Members: e.Members, Invites: e.Invites})
			}
			return nil
		})
	})
	return out, err
}

// PublicRooms implements adphost.Store.
func (s *Store) PublicRooms(context.Context) ([]adphost.RoomIndex, error) {
	return s.indexes(func(_ *bolt.Tx, _ string, e *indexEntry) bool {
		e.Members, e.Invites = nil, nil
		return e.Summary.Visibility != adp.VisibilityPrivate
	})
}

// AgentRooms implements adphost.Store.
func (s *Store) AgentRooms(_ context.Context, agent identity.AgentID) ([]adphost.RoomIndex, error) {
	return s.indexes(func(tx *bolt.Tx, id string, e *indexEntry) bool {
		var mine []memberEntry
		for _, m := range e.Members {
			if m.Agent == agent {
				mine = []memberEntry{m}
			}
		}
		var invited []adphost.InviteIndex
		for _, in := range e.Invites {
			if in.Agent == agent {
				invited = []adphost.InviteIndex{in}
			}
		}
		e.Members, e.Invites = mine, invited
		if mine != nil || invited != nil || e.Summary.Creator == agent {
			return true
		}
		return hasApplied(tx, []byte(id), agent)
	})
}

// Records implements adphost.Store: it copies and parses only the
// records within maxBytes.
func (s *Store) Records(_ context.Context, roomID string, after int64, limit, maxBytes int) ([]*adp.Record, error) {
	var out []*adp.Record
	err := s.db.View(func(tx *bolt.Tx) error {
		room := tx.Bucket(bRooms).Bucket([]byte(roomID))
		if room == nil {
			return nil
		}
		c := room.Cursor()
		total := 0
		for k, v := c.Seek(seqKey(after + 1)); k != nil && len(out) < limit && total < max(maxBytes, 1); k, v = c.Next() {
			// bbolt's values live only as long as the transaction, and a
			// parsed record refers to its input.
			rec, err := adphost.ParseStoredRecord(bytes.Clone(v))
			if err != nil {
				return err
			}
			out = append(out, rec)
			total += len(v)
		}
		return nil
	})
	return out, err
}

// RecordByEvent implements adphost.Store.
func (s *Store) RecordByEvent(ctx context.Context, h envelope.Hash) (*adp.Record, error) {
	ref := s.recent.lookup(h)
	if ref == nil {
		s.db.View(func(tx *bolt.Tx) error {
			ref = bytes.Clone(tx.Bucket(bEvents).Get(h[:]))
			return nil
		})
	}
	if len(ref) < 8 {
		return nil, nil
	}
	seq := int64(binary.BigEndian.Uint64(ref))
	recs, err := s.Records(ctx, string(ref[8:]), seq-1, 1, 1)
	if err != nil || len(recs) == 0 {
		return nil, err
	}
	return recs[0], nil
}

// WriteState implements adphost.WriteStateReader: the resubmission
// lookup, the actor's nonce entry and the room's head, in one read
// transaction instead of three.
func (s *Store) WriteState(_ context.Context, roomID string, actor identity.AgentID, event envelope.Hash) (adphost.WriteState, error) {
	var st adphost.WriteState
	recent := s.recent.lookup(event)
	err := s.db.View(func(tx *bolt.Tx) error {
		ref := recent
		if ref == nil {
			ref = tx.Bucket(bEvents).Get(event[:])
		}
		if len(ref) >= 8 {
			if room := tx.Bucket(bRooms).Bucket(ref[8:]); room != nil {
				if v := room.Get(ref[:8]); v != nil {
					rec, err := adphost.ParseStoredRecord(bytes.Clone(v))
					if err != nil {
						return err
					}
					st.Record = rec
				}
			}
		}
		if v := tx.Bucket(bNonces).Get([]byte(actor.String())); len(v) == 16 {
			st.Nonce, st.NonceExpiresAt = int64(binary.BigEndian.Uint64(v)), int64(binary.BigEndian.Uint64(v[8:]))
		}
		if room := tx.Bucket(bRooms).Bucket([]byte(roomID)); room != nil {
			if k, _ := room.Cursor().Last(); len(k) == 8 {
				st.Head = int64(binary.BigEndian.Uint64(k))
			}
		}
		return nil
	})
	return st, err
}

// put stores a JSON value under top/room/key.
func (s *Store) put(top []byte, room, key string, v any) error {
	b, err := json.Marshal(v, json.Deterministic(true))
	if err != nil {
		return err
	}
	return s.update(func(tx *bolt.Tx) error {
		r, err := tx.Bucket(top).CreateBucketIfNotExists([]byte(room))
		if err != nil {
			return err
		}
		return r.Put([]byte(key), b)
	})
}

// each decodes every value of top/room.
func each[T any](s *Store, top []byte, room string) ([]*T, error) {
	var out []*T
	err := s.db.View(func(tx *bolt.Tx) error {
		r := tx.Bucket(top).Bucket([]byte(room))
		if r == nil {
			return nil
		}
		return r.ForEach(func(_, v []byte) error {
			t := new(T)
			if err := strictjson.Unmarshal(v, t); err != nil {
				return err
			}
			out = append(out, t)
			return nil
		})
	})
	return out, err
}

// indexRequests builds the join-request indexes of a file from before
// them, once.
func indexRequests(tx *bolt.Tx) error {
	if tx.Bucket(bOrder) != nil && tx.Bucket(bAppl) != nil && tx.Bucket(bPending) != nil {
		return nil
	}
	for _, b := range [][]byte{bOrder, bAppl, bPending} {
		if tx.Bucket(b) != nil {
			if err := tx.DeleteBucket(b); err != nil {
				return err
			}
		}
		if _, err := tx.CreateBucket(b); err != nil {
			return err
		}
	}
	return tx.Bucket(bRequests).ForEachBucket(func(room []byte) error {
		return tx.Bucket(bRequests).Bucket(room).ForEach(func(_, v []byte) error {
			var jr adp.JoinRequestResource
			if err := strictjson.Unmarshal(v, &jr); err != nil {
				return err
			}
			if err := indexRequest(tx, &jr.Request); err != nil {
				return err
			}
			return indexPending(tx, nil, &jr)
		})
	})
}

// orderKey is a request's key in the creation-order index, applKey in the
// applicant index.
func orderKey(r *adp.JoinRequest) []byte   { return append(seqKey(r.CreatedAt), r.ID...) }
func applKey(r *adp.JoinRequest) []byte    { return append(applPrefix(r.Applicant), r.ID...) }
func applPrefix(a identity.AgentID) []byte { return append([]byte(a.String()), 0) }
func pendingKey(r *adp.JoinRequest) []byte { return append(seqKey(r.ExpiresAt), r.ID...) }

// indexRequest adds a new request to both indexes.
func indexRequest(tx *bolt.Tx, r *adp.JoinRequest) error {
	room := []byte(r.RoomID)
	order, err := tx.Bucket(bOrder).CreateBucketIfNotExists(room)
	if err != nil {
		return err
	}
	appl, err := tx.Bucket(bAppl).CreateBucketIfNotExists(room)
	if err != nil {
		return err
	}
	if err := order.Put(orderKey(r), nil); err != nil {
		return err
	}
	return appl.Put(applKey(r), nil)
}

// indexPending moves a request's entry in the pending index from what
// prev (nil for a new request) needed to what jr needs.
func indexPending(tx *bolt.Tx, prev, jr *adp.JoinRequestResource) error {
	p, err := tx.Bucket(bPending).CreateBucketIfNotExists([]byte(jr.Request.RoomID))
	if err != nil {
		return err
	}
	if prev != nil && prev.Status == adp.JoinPending {
		if err := p.Delete(pendingKey(&prev.Request)); err != nil {
			return err
		}
	}
	if jr.Status == adp.JoinPending {
		return p.Put(pendingKey(&jr.Request), nil)
	}
	return nil
}

// PutJoinRequest implements adphost.Store: the request and its index
// entries, in one transaction. The immutable request
// (applicant, created_at) must not change.
func (s *Store) PutJoinRequest(_ context.Context, jr *adp.JoinRequestResource) error {
	b, err := json.Marshal(jr, json.Deterministic(true))
	if err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error { return putRequest(tx, jr, b) })
}

// putRequest stores jr, whose JSON is b, with its index entries.
func putRequest(tx *bolt.Tx, jr *adp.JoinRequestResource, b []byte) error {
	room, id := []byte(jr.Request.RoomID), []byte(jr.Request.ID)
	r, err := tx.Bucket(bRequests).CreateBucketIfNotExists(room)
	if err != nil {
		return err
	}
	var prev *adp.JoinRequestResource
	if old := r.Get(id); old != nil {
		prev = new(adp.JoinRequestResource)
		if err := strictjson.Unmarshal(old, prev); err != nil {
			return err
		}
		if prev.Request.CreatedAt != jr.Request.CreatedAt || prev.Request.Applicant != jr.Request.Applicant {
			return errors.New("boltstore: a join request's applicant and created_at are immutable")
		}
	} else if err := indexRequest(tx, &jr.Request); err != nil {
		return err
	}
	if err := indexPending(tx, prev, jr); err != nil {
		return err
	}
	return r.Put(id, b)
}

// HoldJoinRequest implements adphost.Store: the applicant's nonce entry
// and the request, in one transaction.
func (s *Store) HoldJoinRequest(_ context.Context, jr *adp.JoinRequestResource, n adphost.NonceAdvance) error {
	b, err := json.Marshal(jr, json.Deterministic(true))
	if err != nil {
		return err
	}
	return s.update(func(tx *bolt.Tx) error {
		nonces, key := tx.Bucket(bNonces), []byte(n.Actor.String())
		var e nonceEntry
		if v := nonces.Get(key); len(v) == 16 {
			e = nonceEntry{int64(binary.BigEndian.Uint64(v)), int64(binary.BigEndian.Uint64(v[8:]))}
		}
		nonce, err := adphost.CheckNonce(n, e.nonce, e.exp)
		if err != nil {
			return err
		}
		if err := nonces.Put(key, binary.BigEndian.AppendUint64(seqKey(nonce), uint64(n.ExpiresAt))); err != nil {
			return err
		}
		return putRequest(tx, jr, b)
	})
}

// JoinRequest implements adphost.Store: one key lookup.
func (s *Store) JoinRequest(_ context.Context, roomID, id string) (*adp.JoinRequestResource, error) {
	var jr *adp.JoinRequestResource
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		jr, err = getRequest(tx.Bucket(bRequests).Bucket([]byte(roomID)), []byte(id))
		return err
	})
	return jr, err
}

// getRequest decodes request id of a room's bucket r; nil when absent.
// indexedRequest is getRequest for an id an index named: the request
// must be there.
func indexedRequest(r *bolt.Bucket, id []byte) (*adp.JoinRequestResource, error) {
	jr, err := getRequest(r, id)
	if err == nil && jr == nil {
		err = errors.New("boltstore: the join-request index names a missing request")
	}
	return jr, err
}

func getRequest(r *bolt.Bucket, id []byte) (*adp.JoinRequestResource, error) {
	if r == nil {
		return nil, nil
	}
	v := r.Get(id)
	if v == nil {
		return nil, nil
	}
	jr := new(adp.JoinRequestResource)
	if err := strictjson.Unmarshal(v, jr); err != nil {
		return nil, err
	}
	return jr, nil
}

// JoinRequests implements adphost.Store, in creation order (the index's).
func (s *Store) JoinRequests(_ context.Context, roomID string) ([]*adp.JoinRequestResource, error) {
	var out []*adp.JoinRequestResource
	err := s.db.View(func(tx *bolt.Tx) error {
		r, order := tx.Bucket(bRequests).Bucket([]byte(roomID)), tx.Bucket(bOrder).Bucket([]byte(roomID))
		if r == nil || order == nil {
			return nil
		}
		return order.ForEach(func(k, _ []byte) error {
			jr, err := indexedRequest(r, k[8:])
			if err != nil {
				return err
			}
			out = append(out, jr)
			return nil
		})
	})
	return out, err
}

// ApplicantJoinRequests implements adphost.JoinRequestIndex from the
// applicant index, in creation order.
func (s *Store) ApplicantJoinRequests(_ context.Context, roomID string, applicant identity.AgentID) ([]*adp.JoinRequestResource, error) {
	var out []*adp.JoinRequestResource
	err := s.db.View(func(tx *bolt.Tx) error {
		r, appl := tx.Bucket(bRequests).Bucket([]byte(roomID)), tx.Bucket(bAppl).Bucket([]byte(roomID))
		if r == nil || appl == nil {
			return nil
		}
		p := applPrefix(applicant)
		c := appl.Cursor()
		for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = c.Next() {
			jr, err := indexedRequest(r, k[len(p):])
			if err != nil {
				return err
			}
			out = append(out, jr)
		}
		return nil
	})
	slices.SortStableFunc(out, func(a, b *adp.JoinRequestResource) int {
		return cmp.Or(cmp.Compare(a.Request.CreatedAt, b.Request.CreatedAt), strings.Compare(a.Request.ID, b.Request.ID))
	})
	return out, err
}

// JoinRequestsAfter implements adphost.JoinRequestIndex: one seek in the
// creation-order index, whose keys are the requests' keys.
func (s *Store) JoinRequestsAfter(_ context.Context, roomID string, after adphost.JoinRequestKey, limit int) ([]*adp.JoinRequestResource, error) {
	var out []*adp.JoinRequestResource
	err := s.db.View(func(tx *bolt.Tx) error {
		r, order := tx.Bucket(bRequests).Bucket([]byte(roomID)), tx.Bucket(bOrder).Bucket([]byte(roomID))
		if r == nil || order == nil {
			return nil
		}
		from := append(seqKey(after.CreatedAt), after.ID...)
		c := order.Cursor()
		k, _ := c.Seek(from)
		if bytes.Equal(k, from) {
			k, _ = c.Next()
		}
		for ; k != nil && len(out) < limit; k, _ = c.Next() {
			jr, err := indexedRequest(r, k[8:])
			if err != nil {
				return err
			}
			out = append(out, jr)
		}
		return nil
	})
	return out, err
}

// pending calls f with the key of each of the room's requests stored as
// pending that expire after now, from the pending index.
func (s *Store) pending(roomID string, now int64, f func(tx *bolt.Tx, id []byte) error) error {
	return s.db.View(func(tx *bolt.Tx) error {
		p := tx.Bucket(bPending).Bucket([]byte(roomID))
		if p == nil {
			return nil
		}
		c := p.Cursor()
		for k, _ := c.Seek(seqKey(max(now, -1) + 1)); k != nil; k, _ = c.Next() {
			if err := f(tx, k[8:]); err != nil {
				return err
			}
		}
		return nil
	})
}

// CountPendingJoinRequests implements adphost.JoinRequestIndex: the keys
// of the pending index past now, no request read.
func (s *Store) CountPendingJoinRequests(_ context.Context, roomID string, now int64) (int, error) {
	n := 0
	err := s.pending(roomID, now, func(*bolt.Tx, []byte) error { n++; return nil })
	return n, err
}

// PendingJoinRequests implements adphost.JoinRequestIndex from the pending
// index.
func (s *Store) PendingJoinRequests(_ context.Context, roomID string, now int64) ([]*adp.JoinRequestResource, error) {
	var out []*adp.JoinRequestResource
	err := s.pending(roomID, now, func(tx *bolt.Tx, id []byte) error {
		jr, err := indexedRequest(tx.Bucket(bRequests).Bucket([]byte(roomID)), id)
		out = append(out, jr)
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b *adp.JoinRequestResource) int { return adphost.KeyOf(a).Compare(adphost.KeyOf(b)) })
	return out, nil
}

// hasApplied reports whether agent has a join request for room, from the
// applicant index.
func hasApplied(tx *bolt.Tx, room []byte, agent identity.AgentID) bool {
	appl := tx.Bucket(bAppl).Bucket(room)
	if appl == nil {
		return false
	}
	p := applPrefix(agent)
	k, _ := appl.Cursor().Seek(p)
	return k != nil && bytes.HasPrefix(k, p)
}

// PutStatus implements adphost.Store.
func (s *Store) PutStatus(_ context.Context, st *adp.AgentStatus) error {
	return s.put(bStatuses, st.RoomID, st.AgentID.String(), st)
}

// DeleteStatus implements adphost.Store.
func (s *Store) DeleteStatus(_ context.Context, roomID string, agent identity.AgentID) error {
	return s.update(func(tx *bolt.Tx) error {
		if r := tx.Bucket(bStatuses).Bucket([]byte(roomID)); r != nil {
			return r.Delete([]byte(agent.String()))
		}
		return nil
	})
}

// Statuses implements adphost.Store.
func (s *Store) Statuses(_ context.Context, roomID string) ([]*adp.AgentStatus, error) {
	return each[adp.AgentStatus](s, bStatuses, roomID)
}

// MaxNonce implements adphost.Store.
func (s *Store) MaxNonce(_ context.Context, actor identity.AgentID) (n, exp int64, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bNonces).Get([]byte(actor.String())); len(v) == 16 {
			n, exp = int64(binary.BigEndian.Uint64(v)), int64(binary.BigEndian.Uint64(v[8:]))
		}
		return nil
	})
	return n, exp, err
}
