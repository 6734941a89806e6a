package adp

import (
	"bytes"
	"slices"
	"sync"

	"github.com/agentprotocols/go-sdk/envelope"
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

// MemoryIndex is the default Index: about 80 bytes per record, and 32 more
// once the room has been snapshotted. It is not safe for concurrent use;
// the Room serializes access.
type MemoryIndex struct {
	records []envelope.Hash
	events  map[envelope.Hash]struct{}
	// sorted keeps the event hashes in order for Room.Snapshot, so that a
	// snapshot sorts only the events added since the previous one. It is
	// kept from the first snapshot on (rooms never snapshotted, such as a
	// verifier's, pay nothing). Add runs under the Room's write lock, so
	// no snapshot runs meanwhile; the mutex orders snapshots taken at
	// once under its read lock.
	sorted struct {
		sync.Mutex
		on     bool
		hashes []envelope.Hash // every event hash but fresh, in order
		fresh  []envelope.Hash // added since hashes was last merged
	}
}

// NewMemoryIndex returns an empty MemoryIndex.
func NewMemoryIndex() *MemoryIndex {
	return &MemoryIndex{events: map[envelope.Hash]struct{}{}}
}

// Add implements Index.
func (m *MemoryIndex) Add(seq int64, record, event envelope.Hash) {
	m.records = append(m.records, record)
	m.events[event] = struct{}{}
	if m.sorted.on {
		m.sorted.fresh = append(m.sorted.fresh, event)
	}
}

// sortedEvents returns every event hash in byte order. The slice stays
// valid until the next Add.
func (m *MemoryIndex) sortedEvents() []envelope.Hash {
	s := &m.sorted
	s.Lock()
	defer s.Unlock()
	if !s.on {
		s.on = true
		s.hashes = make([]envelope.Hash, 0, len(m.events))
		for h := range m.events {
			s.hashes = append(s.hashes, h)
		}
		slices.SortFunc(s.hashes, compareHashes)
		return s.hashes
	}
	if len(s.fresh) == 0 {
		return s.hashes
	}
	// Merge in place from the back: the fresh hashes sorted, then the
	// two runs interleaved into the grown slice.
	slices.SortFunc(s.fresh, compareHashes)
	old := len(s.hashes)
	s.hashes = slices.Grow(s.hashes, len(s.fresh))[:old+len(s.fresh)]
	i, j := old-1, len(s.fresh)-1
	for k := len(s.hashes) - 1; j >= 0; k-- {
		if i >= 0 && compareHashes(s.hashes[i], s.fresh[j]) > 0 {
			s.hashes[k] = s.hashes[i]
			i--
		} else {
			s.hashes[k] = s.fresh[j]
			j--
		}
	}
	s.fresh = s.fresh[:0]
	return s.hashes
}

// restoreSorted takes the event hashes of a snapshot as the sorted list
// when they are (strictly) sorted and are exactly the index's events.
func (m *MemoryIndex) restoreSorted(events []envelope.Hash) {
	s := &m.sorted
	s.Lock()
	defer s.Unlock()
	s.on, s.hashes, s.fresh = false, nil, nil
	if len(events) == len(m.events) && slices.IsSortedFunc(events, compareHashes) {
		s.on, s.hashes = true, slices.Clip(events)
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
