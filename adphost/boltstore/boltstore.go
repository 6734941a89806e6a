// Package boltstore is an [adphost.Store] in one bbolt file, so that a
// single-process ADP host survives a restart. It is the worked example of
// the Store interface: records are stored in their canonical JSON form and
// parsed strictly on the way out, because the file is not trusted more
// than a network answer.
//
// bbolt allows one process per file; a host served by several processes
// needs a shared database store.
package boltstore

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"slices"

	"github.com/go-json-experiment/json"
	bolt "go.etcd.io/bbolt"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

// Store is an [adphost.Store] in one bbolt file. It is safe for
// concurrent use; bbolt serializes its writers.
//
// Layout: bucket "rooms" holds one bucket per room (key: big-endian seq,
// value: record JSON); "events" maps an envelope hash to room ID and seq;
// "requests" and "statuses" hold one bucket per room of JSON values;
// "nonces" maps an Agent ID to its greatest nonce and expiry.
type Store struct{ db *bolt.DB }

var (
	bRooms    = []byte("rooms")
	bEvents   = []byte("events")
	bRequests = []byte("requests")
	bStatuses = []byte("statuses")
	bNonces   = []byte("nonces")
)

// Open opens (or creates) the store's file at path. The file is locked
// for this process while it is open.
func Open(path string) (*Store, error) {
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		return nil, err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bRooms, bEvents, bRequests, bStatuses, bNonces} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	return &Store{db: db}, nil
}

// Close closes the file.
func (s *Store) Close() error { return s.db.Close() }

func seqKey(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }

// Append implements adphost.Store: append-if-head in one transaction.
func (s *Store) Append(_ context.Context, rec *adp.Record) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		room, err := tx.Bucket(bRooms).CreateBucketIfNotExists([]byte(rec.RoomID))
		if err != nil {
			return err
		}
		k, v := room.Cursor().Last()
		switch {
		case k == nil && rec.Seq != 1:
			return adphost.ErrHeadMoved
		case k != nil:
			last, err := adp.ParseRecord(v)
			if err != nil {
				return err
			}
			if last.Seq != rec.Seq-1 || last.Hash != rec.PreHash {
				return adphost.ErrHeadMoved
			}
		}
		if err := room.Put(seqKey(rec.Seq), rec.AppendJSON(nil)); err != nil {
			return err
		}
		h := rec.Envelope.Hash()
		return tx.Bucket(bEvents).Put(h[:], append(seqKey(rec.Seq), rec.RoomID...))
	})
}

// Records implements adphost.Store.
func (s *Store) Records(_ context.Context, roomID string, after int64, limit int) ([]*adp.Record, error) {
	var out []*adp.Record
	err := s.db.View(func(tx *bolt.Tx) error {
		room := tx.Bucket(bRooms).Bucket([]byte(roomID))
		if room == nil {
			return nil
		}
		c := room.Cursor()
		for k, v := c.Seek(seqKey(after + 1)); k != nil && len(out) < limit; k, v = c.Next() {
			rec, err := adp.ParseRecord(v)
			if err != nil {
				return err
			}
			out = append(out, rec)
		}
		return nil
	})
	return out, err
}

// RecordByEvent implements adphost.Store.
func (s *Store) RecordByEvent(ctx context.Context, h envelope.Hash) (*adp.Record, error) {
	var ref []byte
	s.db.View(func(tx *bolt.Tx) error {
		ref = bytes.Clone(tx.Bucket(bEvents).Get(h[:]))
		return nil
	})
	if len(ref) < 8 {
		return nil, nil
	}
	seq := int64(binary.BigEndian.Uint64(ref))
	recs, err := s.Records(ctx, string(ref[8:]), seq-1, 1)
	if err != nil || len(recs) == 0 {
		return nil, err
	}
	return recs[0], nil
}

// Rooms implements adphost.Store.
func (s *Store) Rooms(context.Context) ([]string, error) {
	var out []string
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bRooms).ForEachBucket(func(k []byte) error {
			out = append(out, string(k))
			return nil
		})
	})
	return out, err
}

// put stores a JSON value under top/room/key.
func (s *Store) put(top []byte, room, key string, v any) error {
	b, err := json.Marshal(v, json.Deterministic(true))
	if err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
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

// PutJoinRequest implements adphost.Store.
func (s *Store) PutJoinRequest(_ context.Context, jr *adp.JoinRequestResource) error {
	return s.put(bRequests, jr.Request.RoomID, jr.Request.ID, jr)
}

// JoinRequest implements adphost.Store.
func (s *Store) JoinRequest(ctx context.Context, roomID, id string) (*adp.JoinRequestResource, error) {
	list, err := s.JoinRequests(ctx, roomID)
	for _, jr := range list {
		if jr.Request.ID == id {
			return jr, nil
		}
	}
	return nil, err
}

// JoinRequests implements adphost.Store, in creation order.
func (s *Store) JoinRequests(_ context.Context, roomID string) ([]*adp.JoinRequestResource, error) {
	list, err := each[adp.JoinRequestResource](s, bRequests, roomID)
	slices.SortStableFunc(list, func(a, b *adp.JoinRequestResource) int {
		return cmp.Or(cmp.Compare(a.Request.CreatedAt, b.Request.CreatedAt), cmp.Compare(a.Request.ID, b.Request.ID))
	})
	return list, err
}

// PutStatus implements adphost.Store.
func (s *Store) PutStatus(_ context.Context, st *adp.AgentStatus) error {
	return s.put(bStatuses, st.RoomID, st.AgentID.String(), st)
}

// DeleteStatus implements adphost.Store.
func (s *Store) DeleteStatus(_ context.Context, roomID string, agent identity.AgentID) error {
	return s.db.Update(func(tx *bolt.Tx) error {
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

// PutMaxNonce implements adphost.Store.
func (s *Store) PutMaxNonce(_ context.Context, actor identity.AgentID, n, exp int64) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bNonces).Put([]byte(actor.String()), binary.BigEndian.AppendUint64(seqKey(n), uint64(exp)))
	})
}
