package boltstore

import (
	"bytes"
	"encoding/binary"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/agentprotocols/go-sdk/envelope"
)

// The event index maps an envelope hash to the room ID and seq of its
// record (value: big-endian seq, then the room ID). Its keys are hashes,
// so in bucket "events" every new entry lands on a page of its own: a
// transaction of n writes would rewrite n of its pages. New entries go to
// bucket "events-recent" instead, keyed by arrival (big-endian count), so
// that a transaction's entries share its last page; the Store holds them
// in memory too, by hash, for lookups. Once there are maxRecent of them,
// the transaction that adds more first folds them into "events" (one
// rewrite of each of its pages for thousands of entries), and Close folds
// what is left, so that a closed file has them all in "events".

// maxRecent bounds the entries in "events-recent" (and in memory: about
// 150 bytes each); a variable for the tests.
var maxRecent = 4096

var bRecent = []byte("events-recent")

// recentEvents is the Store's copy of "events-recent", and the entries
// the write transaction under way adds to it. The write transaction's
// fields (tx, fold, next, reload) belong to the goroutine that runs it
// (bbolt runs one at a time); m is read by any.
type recentEvents struct {
	mu sync.RWMutex
	m  map[envelope.Hash][]byte // committed entries, by hash

	next   uint64                   // key of the next entry of "events-recent"
	tx     map[envelope.Hash][]byte // the transaction's entries
	txNext uint64                   // next, as of the transaction's entries
	fold   bool                     // the transaction folds m into "events"
	reload bool                     // a commit failed: m is reread from the file
}

// load reads "events-recent" into memory.
func (r *recentEvents) load(tx *bolt.Tx) {
	m := map[envelope.Hash][]byte{}
	var next uint64
	c := tx.Bucket(bRecent).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if len(k) != 8 || len(v) < 32+8 {
			continue
		}
		m[envelope.Hash(v[:32])] = bytes.Clone(v[32:])
		next = binary.BigEndian.Uint64(k) + 1
	}
	r.mu.Lock()
	r.m, r.next, r.reload = m, next, false
	r.mu.Unlock()
}

// lookup returns a committed entry held in memory; nil when there is
// none. A reader looks here before it begins its read transaction, then
// in "events": an entry leaves memory only once a commit put it there.
func (r *recentEvents) lookup(h envelope.Hash) []byte {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.m[h]
}

// getW returns an entry in the write transaction tx, its own included.
func (r *recentEvents) getW(tx *bolt.Tx, h envelope.Hash) []byte {
	if ref, ok := r.tx[h]; ok {
		return ref
	}
	if ref := r.lookup(h); ref != nil {
		return ref
	}
	return tx.Bucket(bEvents).Get(h[:])
}

// put adds an entry in the write transaction tx, first folding the
// committed entries into "events" when there are maxRecent of them.
func (r *recentEvents) put(tx *bolt.Tx, h envelope.Hash, ref []byte) error {
	if !r.fold && len(r.m)+len(r.tx) >= maxRecent {
		if err := r.foldInto(tx); err != nil {
			return err
		}
	}
	v := make([]byte, 0, 32+len(ref))
	if err := tx.Bucket(bRecent).Put(seqKey(int64(r.txNext)), append(append(v, h[:]...), ref...)); err != nil {
		return err
	}
	if r.tx == nil {
		r.tx = map[envelope.Hash][]byte{}
	}
	r.tx[h] = ref
	r.txNext++
	return nil
}

// foldInto moves every entry of "events-recent" (those of tx included)
// into "events", in tx.
func (r *recentEvents) foldInto(tx *bolt.Tx) error {
	events := tx.Bucket(bEvents)
	c := tx.Bucket(bRecent).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if len(v) < 32+8 {
			continue
		}
		if err := events.Put(v[:32], v[32:]); err != nil {
			return err
		}
	}
	if err := tx.DeleteBucket(bRecent); err != nil {
		return err
	}
	if _, err := tx.CreateBucket(bRecent); err != nil {
		return err
	}
	// The transaction's entries so far are in "events" now; those after
	// go to the emptied bucket.
	r.fold, r.txNext = true, 0
	clear(r.tx)
	return nil
}

// write runs fn in a write transaction and keeps the memory copy in step
// with what it committed.
func (r *recentEvents) write(db *bolt.DB, fn func(*bolt.Tx) error) error {
	var fnErr error
	err := db.Update(func(tx *bolt.Tx) error {
		if r.reload {
			r.load(tx)
		}
		r.tx, r.txNext, r.fold = nil, r.next, false
		fnErr = fn(tx)
		return fnErr
	})
	switch {
	case err == nil:
		r.mu.Lock()
		if r.fold {
			r.m = map[envelope.Hash][]byte{}
		}
		for h, ref := range r.tx {
			r.m[h] = ref
		}
		r.next = r.txNext
		r.mu.Unlock()
	case err != fnErr:
		// The commit failed: what the file holds is not known here.
		r.reload = true
	}
	r.tx = nil
	return err
}
