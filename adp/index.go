package adp

import (
	"bytes"
	"slices"
	"sync"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/internal/b64url"
)

// Index remembers the room history the replayer consults beyond the room
// head: the record hash at each seq (for the base_record_mismatch anchor
// check of signals) and which event hashes the room accepted (message
// references must name them, and one envelope is never accepted twice).
//
// A Room owns its Index and calls Add only when a record is committed. The
// default MemoryIndex keeps everything in memory; a host with very long
// rooms can answer from its record store instead, and a one-shot verifier
// can trade exactness for memory (see the archive package).
type Index interface {
	// Add records the record hash and event hash of the record at seq.
	// seq is always the previous seq + 1.
	Add(seq int64, record, event envelope.Hash)
	// HasRecord reports whether the record at seq has this record hash.
	HasRecord(seq int64, record envelope.Hash) bool
	// HasEvent reports whether an accepted record carries this event hash.
	HasEvent(event envelope.Hash) bool
}

// MemoryIndex is the default Index: about 80 bytes per record, and 92 more
// once the room has been snapshotted (its hash lists kept as text). It is
// not safe for concurrent use; the Room serializes access.
type MemoryIndex struct {
	records []envelope.Hash
	events  map[envelope.Hash]struct{}
	// snap keeps the two hash lists of Room.Snapshot as JSON text, so
	// that a snapshot encodes only the records and events added since the
	// previous one: records in seq order, events in byte order of their
	// hashes (merged in). It is kept from the first snapshot on (rooms
	// never snapshotted, such as a verifier's, pay nothing). Add runs
	// under the Room's write lock, so no snapshot runs meanwhile; the
	// mutex orders snapshots taken at once under its read lock.
	snap struct {
		sync.Mutex
		on      bool
		records []byte          // m.records[:len(records)/itemLen] as items
		events  []byte          // every event hash but fresh, as sorted items
		fresh   []envelope.Hash // added since events was last merged
		scratch []byte          // the fresh hashes' items, sorted
	}
}

// itemLen is the length of one hash in a snapshot list, `"<43
// base64url characters>",`.
const itemLen = 46

// NewMemoryIndex returns an empty MemoryIndex.
func NewMemoryIndex() *MemoryIndex {
	return &MemoryIndex{events: map[envelope.Hash]struct{}{}}
}

// Add implements Index.
func (m *MemoryIndex) Add(seq int64, record, event envelope.Hash) {
	m.records = append(m.records, record)
	m.events[event] = struct{}{}
	if m.snap.on {
		m.snap.fresh = append(m.snap.fresh, event)
	}
}

// undoAdd drops the record Add added last, at seq, when it is (record,
// event), and reports whether it did. The snapshot lists are kept when
// the event was not merged into them yet (no snapshot since the Add, the
// group-commit case), and otherwise rebuilt on the next snapshot.
func (m *MemoryIndex) undoAdd(seq int64, record, event envelope.Hash) bool {
	if seq != int64(len(m.records)) || m.records[seq-1] != record {
		return false
	}
	if _, ok := m.events[event]; !ok {
		return false
	}
	m.records = m.records[:seq-1]
	if seq == 1 {
		m.records = nil // as a new index's, which a snapshot leaves out
	}
	delete(m.events, event)
	s := &m.snap
	s.Lock()
	defer s.Unlock()
	if !s.on {
		return true
	}
	if n := len(s.fresh); n > 0 && s.fresh[n-1] == event && len(s.records)/itemLen < int(seq) {
		s.fresh = s.fresh[:n-1]
		return true
	}
	s.on, s.records, s.events, s.fresh = false, nil, nil, nil
	return true
}

// snapshotLists returns the record hashes (in seq order) and the event
// hashes (in byte order) as the items of JSON arrays of base64url strings,
// each followed by a comma. The slices stay valid until the next Add.
func (m *MemoryIndex) snapshotLists() (records, events []byte) {
	s := &m.snap
	s.Lock()
	defer s.Unlock()
	if !s.on {
		s.on = true
		hs := make([]envelope.Hash, 0, len(m.events))
		for h := range m.events {
			hs = append(hs, h)
		}
		slices.SortFunc(hs, compareHashes)
		s.events = appendItems(make([]byte, 0, len(hs)*itemLen), hs)
	} else if len(s.fresh) > 0 {
		s.events = mergeItems(s.events, s.fresh, &s.scratch)
		s.fresh = s.fresh[:0]
	}
	if done := len(s.records) / itemLen; done < len(m.records) {
		s.records = appendItems(s.records, m.records[done:])
	}
	return s.records, s.events
}

// appendItems appends the hashes as snapshot list items.
func appendItems(b []byte, hs []envelope.Hash) []byte {
	for i := range hs {
		b = append(b, '"')
		b = b64url.AppendEncode(b, hs[i][:])
		b = append(b, '"', ',')
	}
	return b
}

// mergeItems merges the fresh hashes (reordered) into items, a sorted
// list of snapshot items, in place from the back; scratch is reused.
func mergeItems(items []byte, fresh []envelope.Hash, scratch *[]byte) []byte {
	slices.SortFunc(fresh, compareHashes)
	f := appendItems((*scratch)[:0], fresh)
	*scratch = f
	old := len(items)
	items = slices.Grow(items, len(f))[:old+len(f)]
	i, j := old-itemLen, len(f)-itemLen
	for k := len(items) - itemLen; j >= 0; k -= itemLen {
		if i >= 0 && compareItems(items[i:i+itemLen], f[j:j+itemLen]) > 0 {
			copy(items[k:k+itemLen], items[i:i+itemLen])
			i -= itemLen
		} else {
			copy(items[k:k+itemLen], f[j:j+itemLen])
			j -= itemLen
		}
	}
	return items
}

// b64digit maps each base64url character to its value: comparing two
// encodings digit by digit orders them as their bytes (the 6-bit digits
// are the bits of the hash in order, padded alike).
var b64digit = func() (t [256]byte) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for i := range len(alphabet) {
		t[alphabet[i]] = byte(i)
	}
	return t
}()

// compareItems compares two snapshot items by the hashes they encode.
func compareItems(a, b []byte) int {
	for k := 1; k <= 43; k++ {
		if da, db := b64digit[a[k]], b64digit[b[k]]; da != db {
			return int(da) - int(db)
		}
	}
	return 0
}

// restoreSorted takes the event hashes of a snapshot as the sorted list
// when they are (strictly) sorted and are exactly the index's events.
func (m *MemoryIndex) restoreSorted(events []envelope.Hash) {
	s := &m.snap
	s.Lock()
	defer s.Unlock()
	s.on, s.records, s.events, s.fresh = false, nil, nil, nil
	if len(events) == len(m.events) && slices.IsSortedFunc(events, compareHashes) {
		s.on, s.events = true, appendItems(make([]byte, 0, len(events)*itemLen), events)
	}
}

func compareHashes(a, b envelope.Hash) int { return bytes.Compare(a[:], b[:]) }

// HasRecord implements Index.
func (m *MemoryIndex) HasRecord(seq int64, record envelope.Hash) bool {
	return seq >= 1 && seq <= int64(len(m.records)) && m.records[seq-1] == record
}

// HasEvent implements Index.
func (m *MemoryIndex) HasEvent(event envelope.Hash) bool {
	_, ok := m.events[event]
	return ok
}
