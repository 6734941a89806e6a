package adp

import (
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

// MemoryIndex is the default Index: about 80 bytes per record. It is not
// safe for concurrent use; the Room serializes access.
type MemoryIndex struct {
	records []envelope.Hash
	events  map[envelope.Hash]struct{}
}

// NewMemoryIndex returns an empty MemoryIndex.
func NewMemoryIndex() *MemoryIndex {
	return &MemoryIndex{events: map[envelope.Hash]struct{}{}}
}

// Add implements Index.
func (m *MemoryIndex) Add(seq int64, record, event envelope.Hash) {
	m.records = append(m.records, record)
	m.events[event] = struct{}{}
}

// HasRecord implements Index.
func (m *MemoryIndex) HasRecord(seq int64, record envelope.Hash) bool {
	return seq >= 1 && seq <= int64(len(m.records)) && m.records[seq-1] == record
}

// HasEvent implements Index.
func (m *MemoryIndex) HasEvent(event envelope.Hash) bool {
	_, ok := m.events[event]
	return ok
}
