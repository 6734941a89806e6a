package archive

import (
	"hash/maphash"
	"math/bits"

	"github.com/agentprotocols/go-sdk/envelope"
)

// fpIndex is the compact adp.Index Verify gives the Room: 64-bit keyed
// fingerprints instead of 32-byte hashes, about 19 bytes per record (8 for
// the record hash by seq, ~11 for the event-hash set at load ≤ 0.7), so a
// 1,000,000-record archive needs about 19 MB of index.
//
// Fingerprints are maphash values under a seed drawn at random for each
// verification. An archive is fixed before the seed exists, so its author
// cannot search for collisions: for each lookup of a hash that is not in
// the index, the chance of a false match is at most n/2^64 for n indexed
// records (about 5·10⁻¹⁴ per lookup at n = 10⁶, and n²/2^64 ≈ 5·10⁻⁸ over
// a whole 10⁶-record verification). A false match could accept a signal
// anchored to a record hash the room never had, or a reference to an event
// it never accepted, or reject an envelope as a duplicate; nothing else
// depends on the index.
type fpIndex struct {
	seed    maphash.Seed
	records []uint64 // fingerprint of the record hash at seq i+1
	events  fpSet
}

func newFPIndex(expect int64) *fpIndex {
	// A manifest can claim any count: preallocate for at most 2^21.
	n := int(min(max(expect, 16), 1<<21))
	x := &fpIndex{seed: maphash.MakeSeed(), records: make([]uint64, 0, n)}
	x.events.init(n)
	return x
}

func (x *fpIndex) fp(h *envelope.Hash) uint64 {
	f := maphash.Bytes(x.seed, h[:])
	if f == 0 {
		f = 1 // 0 marks an empty slot
	}
	return f
}

// Add implements adp.Index.
func (x *fpIndex) Add(seq int64, record, event envelope.Hash) {
	x.records = append(x.records, x.fp(&record))
	x.events.add(x.fp(&event))
}

// HasRecord implements adp.Index.
func (x *fpIndex) HasRecord(seq int64, record envelope.Hash) bool {
	return seq >= 1 && seq <= int64(len(x.records)) && x.fp(&record) == x.records[seq-1]
}

// HasEvent implements adp.Index.
func (x *fpIndex) HasEvent(event envelope.Hash) bool { return x.events.has(x.fp(&event)) }

// fpSet is an open-addressing set of non-zero uint64 fingerprints with
// linear probing and load factor ≤ 0.7. Fingerprints are uniformly
// random, so the slot is their high bits scaled to the table size.
type fpSet struct {
	slots []uint64
	n     int
}

func (s *fpSet) init(expect int) {
	s.slots = make([]uint64, max(16, expect*10/7+1))
	s.n = 0
}

func (s *fpSet) pos(f uint64) int {
	hi, _ := bits.Mul64(f, uint64(len(s.slots)))
	return int(hi)
}

func (s *fpSet) add(f uint64) {
	if (s.n+1)*10 > len(s.slots)*7 {
		old := s.slots
		s.slots = make([]uint64, len(old)*2)
		s.n = 0
		for _, v := range old {
			if v != 0 {
				s.add(v)
			}
		}
	}
	for i := s.pos(f); ; {
		switch s.slots[i] {
		case 0:
			s.slots[i] = f
			s.n++
			return
		case f:
			return
		}
		if i++; i == len(s.slots) {
			i = 0
		}
	}
}

func (s *fpSet) has(f uint64) bool {
	for i := s.pos(f); ; {
		switch s.slots[i] {
		case 0:
			return false
		case f:
			return true
		}
		if i++; i == len(s.slots) {
			i = 0
		}
	}
}
