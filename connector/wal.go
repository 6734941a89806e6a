package connector

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json"
	bolt "go.etcd.io/bbolt"

	"github.com/agentprotocols/go-sdk/internal/opcount"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

// The state log (Dir/state.wal) is written ahead of state.db. A store
// update is one frame of the log: its puts and deletes, numbered (lsn).
// An update is visible to reads once its frame is written, and a process
// killed after that keeps it (the kernel holds the written frame).
// Update flushes the frame (fdatasync) before it returns, so a power loss
// keeps it too: one flush per update, where a bbolt commit flushes twice
// (its pages, then its meta page). UpdateDeferred leaves the flush to the
// next Update, to the background flush (within walFlushDelay) or to Close.
// The log is read back as a prefix, so a power loss can lose only deferred
// updates, only the last ones, and never part of one: every update has
// every update before it.
//
// The updates not yet in state.db are also held in memory (walMem) and
// laid over state.db by every read. When they reach walFoldFrames or
// walFoldBytes, one flushed bbolt transaction folds them into state.db with
// the last folded lsn (meta/wal_lsn), and the next frame is written at the
// start of the file again. Open folds what the log holds after wal_lsn:
// the frames from the start of the file numbered on from it, each with a
// good checksum. A frame cut short by a crash, or one left from before the
// last fold (numbered at or below wal_lsn), ends the log.
//
// A frame is the payload's length (4 bytes, big-endian), the CRC-32C of
// the length and the payload (4 bytes), and the payload: the lsn (8 bytes,
// big-endian), a flags byte (walFlushed: the update was flushed before it
// returned), then the changes, each a kind byte ('p' put, 'd' delete) and
// the bucket, the key and, for a put, the value, each as a uvarint length
// and its bytes. Values are JSON, read back strictly like every stored
// value.

// walName is the state log's file name in the state directory.
const walName = "state.wal"

const (
	// walFoldFrames and walFoldBytes bound what the log holds before it
	// is folded into state.db (and so the memory its overlay takes).
	walFoldFrames = 128
	walFoldBytes  = 1 << 20
	// walFlushDelay bounds how long a deferred update waits for a flush.
	walFlushDelay = 100 * time.Millisecond
	// walFlushed marks a frame flushed before its update returned.
	walFlushed = 1
)

var walCRC = crc32.MakeTable(crc32.Castagnoli)

// walChanges are one update's changes: bucket → key → value, nil for a
// delete.
type walChanges map[string]map[string][]byte

// walMem is the overlay of the logged updates not yet folded into
// state.db. It is never changed once published: each update publishes a
// new one, so a read sees one consistent state. Each bucket is split in
// walShards maps by key, and an update copies only the maps it changes.
type walMem struct {
	c      map[string]*walBucket
	frames int
	size   int
}

const walShards = 16

// walBucket is one bucket of the overlay: key → value, nil for a delete.
type walBucket [walShards]map[string][]byte

// walShard is key's shard: FNV-1a.
func walShard(key string) int {
	h := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		h = (h ^ uint32(key[i])) * 16777619
	}
	return int(h % walShards)
}

// get finds (bucket, key) in the overlay; ok is false when it has no
// change of it.
func (m *walMem) get(bucket, key string) (v []byte, ok bool) {
	if b := m.c[bucket]; b != nil {
		v, ok = b[walShard(key)][key]
	}
	return v, ok
}

// keys returns the overlay's keys of bucket, in no order.
func (m *walMem) keys(bucket string) []string {
	b := m.c[bucket]
	if b == nil {
		return nil
	}
	var out []string
	for _, sh := range b {
		for k := range sh {
			out = append(out, k)
		}
	}
	return out
}

// with returns m with ch laid over it.
func (m *walMem) with(ch walChanges, size int) *walMem {
	n := &walMem{c: make(map[string]*walBucket, len(m.c)+len(ch)), frames: m.frames + 1, size: m.size + size}
	maps.Copy(n.c, m.c)
	for b, kv := range ch {
		nb := new(walBucket)
		var copied [walShards]bool
		if old := m.c[b]; old != nil {
			*nb = *old
		}
		for k, v := range kv {
			i := walShard(k)
			if !copied[i] {
				nb[i], copied[i] = maps.Clone(nb[i]), true
				if nb[i] == nil {
					nb[i] = map[string][]byte{}
				}
			}
			nb[i][k] = v
		}
		n.c[b] = nb
	}
	return n
}

// walStore is the engine's stateStore: state.db (bbolt) behind the state
// log. Its methods are safe for concurrent use; Update and UpdateDeferred
// run one at a time, View runs beside them.
type walStore struct {
	db  *bolt.DB
	f   *os.File
	mem atomic.Pointer[walMem]

	mu  sync.Mutex // one update or fold at a time
	off int64      // where the next frame goes
	lsn uint64     // the last lsn written

	flushMu  sync.Mutex
	written  uint64 // the last lsn written (as lsn, for the flusher)
	flushed  uint64 // the last lsn known flushed
	timer    *time.Timer
	closed   bool
	err      error         // a failed log write, flush or fold: the store takes no more updates
	delay    time.Duration // walFlushDelay; tests lengthen it
	onFlush  func()        // test hook: a background flush ran
	foldedAt uint64        // the lsn of the last fold
}

// openWAL opens the state log of db in dir, folds into db what the log
// holds after db's wal_lsn (and what an outbox journal left by an older
// version holds), and returns the store.
func openWAL(dir string, db *bolt.DB) (*walStore, error) {
	if err := migrateOutboxJournal(dir, db); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, walName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	s := &walStore{db: db, f: f, delay: walFlushDelay}
	s.mem.Store(&walMem{})
	folded, err := walLSN(db)
	if err != nil {
		f.Close()
		return nil, err
	}
	raw, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	s.lsn = folded
	for off := 0; ; {
		fr, n := readWALFrame(raw[off:])
		if n == 0 || fr.lsn != s.lsn+1 {
			// The log's first frame is the one after the last fold, or
			// one from before it; a later one means state.db lost a fold.
			if off == 0 && n > 0 && fr.lsn > folded+1 {
				f.Close()
				return nil, fmt.Errorf("connector: %s starts at update %d, after %d in state.db: state.db is older than its log", walName, fr.lsn, folded)
			}
			break
		}
		off += n
		s.lsn = fr.lsn
		s.mem.Store(s.mem.Load().with(fr.changes, n))
	}
	s.written, s.flushed, s.foldedAt = s.lsn, s.lsn, folded
	if err := s.fold(); err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

// walLSN reads the last lsn folded into db.
func walLSN(db *bolt.DB) (uint64, error) {
	var lsn uint64
	err := db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(bMeta))
		if b == nil {
			return nil
		}
		v := b.Get([]byte("wal_lsn"))
		if v == nil {
			return nil
		}
		var err error
		if lsn, err = strconv.ParseUint(string(v), 10, 64); err != nil {
			return fmt.Errorf("connector: stored %s/wal_lsn: %w", bMeta, err)
		}
		return nil
	})
	return lsn, err
}

// walFrame is one decoded frame.
type walFrame struct {
	lsn     uint64
	flags   byte
	changes walChanges
}

// appendWALFrame appends the frame of one update to b. The changes are
// written in key order, so equal updates make equal frames.
func appendWALFrame(b []byte, lsn uint64, flags byte, ch walChanges) []byte {
	start := len(b)
	b = append(b, 0, 0, 0, 0, 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint64(b, lsn)
	b = append(b, flags)
	for _, bucket := range slices.Sorted(maps.Keys(ch)) {
		kv := ch[bucket]
		for _, k := range slices.Sorted(maps.Keys(kv)) {
			v := kv[k]
			kind := byte('p')
			if v == nil {
				kind = 'd'
			}
			b = append(b, kind)
			b = appendWALBytes(b, bucket)
			b = appendWALBytes(b, k)
			if v != nil {
				b = appendWALBytes(b, string(v))
			}
		}
	}
	l := uint32(len(b) - start - 8)
	binary.BigEndian.PutUint32(b[start:], l)
	binary.BigEndian.PutUint32(b[start+4:], crc32.Update(crc32.Checksum(b[start:start+4], walCRC), walCRC, b[start+8:]))
	return b
}

func appendWALBytes(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// readWALFrame decodes the frame at the start of b; n is 0 at the end of
// the log (no whole frame with a good checksum and well-formed payload).
// The changes' values point into b.
func readWALFrame(b []byte) (fr walFrame, n int) {
	if len(b) < 8 {
		return fr, 0
	}
	l := binary.BigEndian.Uint32(b)
	if uint64(len(b)-8) < uint64(l) || l < 9 {
		return fr, 0
	}
	p := b[8 : 8+l]
	if crc32.Update(crc32.Checksum(b[:4], walCRC), walCRC, p) != binary.BigEndian.Uint32(b[4:]) {
		return fr, 0
	}
	fr.lsn, fr.flags, p = binary.BigEndian.Uint64(p), p[8], p[9:]
	fr.changes = walChanges{}
	next := func() ([]byte, bool) {
		m, k := binary.Uvarint(p)
		// The shortest encoding only, so a frame has one reading.
		if k <= 0 || k != len(binary.AppendUvarint(nil, m)) || m > uint64(len(p)-k) {
			return nil, false
		}
		v := p[k : k+int(m) : k+int(m)]
		p = p[k+int(m):]
		return v, true
	}
	var prevBucket, prevKey []byte
	for first := true; len(p) > 0; first = false {
		kind := p[0]
		p = p[1:]
		bucket, ok1 := next()
		key, ok2 := next()
		if !ok1 || !ok2 || kind != 'p' && kind != 'd' {
			return walFrame{}, 0
		}
		// Changes come in (bucket, key) order, each key once.
		if c := bytes.Compare(bucket, prevBucket); !first && (c < 0 || c == 0 && bytes.Compare(key, prevKey) <= 0) {
			return walFrame{}, 0
		}
		prevBucket, prevKey = bucket, key
		var v []byte
		if kind == 'p' {
			var ok bool
			if v, ok = next(); !ok || len(v) == 0 {
				return walFrame{}, 0
			}
		}
		kv := fr.changes[string(bucket)]
		if kv == nil {
			kv = map[string][]byte{}
			fr.changes[string(bucket)] = kv
		}
		kv[string(key)] = v
	}
	return fr, 8 + int(l)
}

// Update runs fn in one atomic update and flushes it before it returns.
func (s *walStore) Update(fn func(stateTx) error) error { return s.update(fn, true) }

// UpdateDeferred runs fn in one atomic update whose flush is deferred
// (see the state log above): for changes the engine can learn again after
// a power loss, such as records it can download again.
func (s *walStore) UpdateDeferred(fn func(stateTx) error) error { return s.update(fn, false) }

func (s *walStore) update(fn func(stateTx) error, flush bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.failed(); err != nil {
		return err
	}
	tx := &walTx{s: s, mem: s.mem.Load(), changes: walChanges{}}
	err := fn(tx)
	tx.done()
	if err == nil {
		err = tx.err
	}
	if err != nil || tx.size == 0 {
		return err
	}
	var flags byte
	if flush {
		flags = walFlushed
	}
	lsn := s.lsn + 1
	frame := appendWALFrame(make([]byte, 0, 17+tx.size), lsn, flags, tx.changes)
	if _, err := s.f.WriteAt(frame, s.off); err != nil {
		return s.fail(err)
	}
	if flush {
		opcount.LogFlush()
		if err := fdatasync(s.f); err != nil {
			return s.fail(err)
		}
	}
	s.off += int64(len(frame))
	s.lsn = lsn
	mem := s.mem.Load().with(tx.changes, len(frame))
	s.mem.Store(mem)
	s.flushMu.Lock()
	s.written = lsn
	if flush {
		s.flushed = lsn
	} else if s.timer == nil && !s.closed {
		s.timer = time.AfterFunc(s.delay, s.flushLater)
	}
	s.flushMu.Unlock()
	if mem.frames >= walFoldFrames || mem.size >= walFoldBytes {
		return s.fold()
	}
	return nil
}

// flushLater is the background flush of deferred updates.
func (s *walStore) flushLater() {
	s.flushMu.Lock()
	s.timer = nil
	target, done, closed := s.written, s.flushed, s.closed
	s.flushMu.Unlock()
	if closed || done >= target {
		return
	}
	err := fdatasync(s.f)
	s.flushMu.Lock()
	if err != nil && s.err == nil {
		s.err = fmt.Errorf("connector: flushing the state log: %w", err)
	} else if err == nil && s.flushed < target {
		s.flushed = target
	}
	hook := s.onFlush
	s.flushMu.Unlock()
	if hook != nil {
		hook()
	}
}

// fail makes err the store's: after a log write or flush fails, what the
// file holds is unknown, so the store takes no more updates; opening it
// again reads back what the log kept.
func (s *walStore) fail(err error) error {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	if s.err == nil {
		s.err = fmt.Errorf("connector: writing the state log: %w", err)
	}
	return s.err
}

func (s *walStore) failed() error {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	return s.err
}

// fold commits the logged updates into state.db, flushed, with the last
// lsn; the log starts over. The caller holds s.mu.
func (s *walStore) fold() error {
	m := s.mem.Load()
	if m.frames == 0 {
		return nil
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		opcount.SyncedCommit()
		for _, bucket := range slices.Sorted(maps.Keys(m.c)) {
			b, err := tx.CreateBucketIfNotExists([]byte(bucket))
			if err != nil {
				return err
			}
			keys := m.keys(bucket)
			slices.Sort(keys)
			for _, k := range keys {
				if v, _ := m.get(bucket, k); v == nil {
					err = b.Delete([]byte(k))
				} else {
					err = b.Put([]byte(k), v)
				}
				if err != nil {
					return err
				}
			}
		}
		b, err := tx.CreateBucketIfNotExists([]byte(bMeta))
		if err != nil {
			return err
		}
		return b.Put([]byte("wal_lsn"), strconv.AppendUint(nil, s.lsn, 10))
	})
	if err != nil {
		return s.fail(err)
	}
	s.mem.Store(&walMem{})
	s.off = 0
	s.flushMu.Lock()
	s.foldedAt, s.flushed = s.lsn, max(s.flushed, s.lsn)
	s.flushMu.Unlock()
	return nil
}

// View runs fn on a consistent state: the overlay taken first, then
// state.db (a fold between the two only repeats in state.db what the
// overlay holds).
func (s *walStore) View(fn func(stateTx) error) error {
	mem := s.mem.Load()
	return s.db.View(func(btx *bolt.Tx) error {
		return fn(&walTx{s: s, mem: mem, btx: btx})
	})
}

// Close folds the log into state.db, empties it and closes both.
func (s *walStore) Close() error {
	s.flushMu.Lock()
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.flushMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	var ferr error
	if s.failed() == nil {
		// Folded, the log holds nothing Open would read: it is emptied,
		// so one large update does not keep the file large.
		if ferr = s.fold(); ferr == nil {
			ferr = s.f.Truncate(0)
		}
	}
	return errors.Join(ferr, s.f.Close(), s.db.Close())
}

// walTx is one transaction of a walStore: its own changes (an update),
// over the overlay, over a read transaction of state.db.
type walTx struct {
	s       *walStore
	mem     *walMem
	btx     *bolt.Tx   // state.db; an update opens one on its first read
	own     bool       // btx was opened by this update
	changes walChanges // nil in a View
	size    int        // the frame's length, at most
	err     error      // state.db could not be read
}

func (t *walTx) done() {
	if t.own {
		t.btx.Rollback()
	}
}

func (t *walTx) bolt() *bolt.Tx {
	if t.btx == nil {
		btx, err := t.s.db.Begin(false)
		if err != nil {
			t.err = err // the update fails (walStore.update)
			return nil
		}
		t.btx, t.own = btx, true
	}
	return t.btx
}

// lookup finds (bucket, key) in the update's changes or the overlay; ok
// is false when neither has it (state.db decides).
func (t *walTx) lookup(bucket, key string) (v []byte, ok bool) {
	if v, ok = t.changes[bucket][key]; ok {
		return v, true
	}
	return t.mem.get(bucket, key)
}

// raw returns the value at (bucket, key), nil when absent; it may point
// into state.db's memory map.
func (t *walTx) raw(bucket, key string) []byte {
	if v, ok := t.lookup(bucket, key); ok {
		return v
	}
	btx := t.bolt()
	if btx == nil {
		return nil
	}
	b := btx.Bucket([]byte(bucket))
	if b == nil {
		return nil
	}
	return b.Get([]byte(key))
}

// Get decodes a copy of the value: bbolt's values live in its memory
// map, which is unmapped when the file grows, and decoded records keep
// their input bytes.
func (t *walTx) Get(bucket, key string, v any) (bool, error) {
	raw := t.raw(bucket, key)
	if raw == nil {
		return false, nil
	}
	if err := strictjson.Unmarshal(bytes.Clone(raw), v); err != nil {
		return false, fmt.Errorf("connector: stored %s/%s: %w", bucket, key, err)
	}
	return true, nil
}

func (t *walTx) Has(bucket, key string) bool { return t.raw(bucket, key) != nil }

func (t *walTx) set(bucket, key string, v []byte) error {
	if t.changes == nil {
		return errors.New("connector: a change in a read-only transaction")
	}
	kv := t.changes[bucket]
	if kv == nil {
		kv = map[string][]byte{}
		t.changes[bucket] = kv
	}
	kv[key] = v
	// At most the change's length in a frame.
	t.size += 1 + len(bucket) + len(key) + len(v) + 3*binary.MaxVarintLen32
	return nil
}

func (t *walTx) Put(bucket, key string, v any) error {
	raw, err := json.Marshal(v, json.Deterministic(true))
	if err != nil {
		return err
	}
	return t.set(bucket, key, raw)
}

func (t *walTx) Delete(bucket, key string) error { return t.set(bucket, key, nil) }

func (t *walTx) Scan(bucket, prefix string, fn func(key string, raw []byte) error) error {
	return t.ScanFrom(bucket, prefix, prefix, fn)
}

// ScanFrom merges state.db's keys with the overlay's in key order, the
// overlay's value (or delete) winning.
func (t *walTx) ScanFrom(bucket, prefix, from string, fn func(key string, raw []byte) error) error {
	from = max(from, prefix)
	inRange := func(k string) bool { return k >= from && strings.HasPrefix(k, prefix) }
	var over []string
	for k := range t.changes[bucket] {
		if inRange(k) {
			over = append(over, k)
		}
	}
	for _, k := range t.mem.keys(bucket) {
		if _, mine := t.changes[bucket][k]; !mine && inRange(k) {
			over = append(over, k)
		}
	}
	slices.Sort(over)
	var c *bolt.Cursor
	if btx := t.bolt(); btx != nil {
		if b := btx.Bucket([]byte(bucket)); b != nil {
			c = b.Cursor()
		}
	}
	var ck, cv []byte
	advance := func(k, v []byte) {
		ck, cv = k, v
		if ck != nil && !bytes.HasPrefix(ck, []byte(prefix)) {
			ck, cv = nil, nil
		}
	}
	if c != nil {
		advance(c.Seek([]byte(from)))
	}
	for i := 0; i < len(over) || ck != nil; {
		var key string
		var val []byte
		if i < len(over) && (ck == nil || over[i] <= string(ck)) {
			key = over[i]
			val, _ = t.lookup(bucket, key)
			if ck != nil && over[i] == string(ck) {
				advance(c.Next())
			}
			i++
			if val == nil {
				continue // deleted
			}
		} else {
			key, val = string(ck), cv
			advance(c.Next())
		}
		if err := fn(key, bytes.Clone(val)); err != nil {
			if err == errStop {
				return nil
			}
			return err
		}
	}
	return nil
}
